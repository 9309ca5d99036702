"""Informers that cannot die or lie: resync on relist, survival of any error, health.

On the in-memory API server (the same protocol the real adapter speaks); the transport's
own faults (cut bodies, silent watches) are in ``test_adapter_faults.py``.
"""

from __future__ import annotations

from typing import Any

from karpenter_core.kube.client import ADDED, MODIFIED
from karpenter_core.kube.informer import Informer
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer


def _server(**kwargs: Any) -> InMemoryApiServer:
    server = InMemoryApiServer(VirtualClock(), seed=1, **kwargs)
    server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    return server


def _cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}}


def test_a_relist_tells_handlers_of_every_object_changed_or_not() -> None:
    server = _server()
    server.create(_cm("same"))
    informer = Informer(server, "configmaps", "ns")
    informer.pump()
    events: list[tuple[str, str]] = []
    informer.add_handler(lambda t, o: events.append((t, o["metadata"]["name"])), replay=False)
    informer.resource_version = None  # what a 410 does
    informer.pump()
    assert events == [(MODIFIED, "same")]
    assert informer.resyncs == 1


def test_the_first_listing_is_no_resync() -> None:
    server = _server()
    server.create(_cm("a"))
    informer = Informer(server, "configmaps", "ns")
    events: list[tuple[str, str]] = []
    informer.add_handler(lambda t, o: events.append((t, o["metadata"]["name"])))
    informer.pump()
    assert events == [(ADDED, "a")]
    assert informer.resyncs == 0


def test_an_own_write_is_not_stranded_when_the_watch_breaks_before_its_event() -> None:
    """The stall found by killing kube-apiserver: the operator remembered the NodeClaim it
    created, the watch broke before delivering it, and the relist found the same version in
    the cache, so no controller was ever told."""
    server = _server(watch_history=2)
    informer = Informer(server, "configmaps", "ns")
    informer.pump()
    heard: list[tuple[str, str]] = []
    informer.add_handler(lambda t, o: heard.append((t, o["metadata"]["name"])))
    assert informer._stream is not None
    informer._stream.stop()  # the watch breaks...
    created = server.create(_cm("mine"))
    assert informer.remember(created)  # ...after this process stored its own write
    for i in range(3):  # and the server's history moves past the informer's version
        server.create(_cm(f"other-{i}"))
    informer.pump()
    assert informer.relists == 2
    assert "mine" in {name for _, name in heard}, heard


def test_a_loop_not_yet_started_counts_as_running() -> None:
    informer = Informer(_server(), "configmaps", "ns")
    assert informer.health().running
    assert not informer.health().synced


def test_the_heartbeat_ages_while_the_loop_does_nothing() -> None:
    informer = Informer(_server(), "configmaps", "ns")
    now = [1000.0]
    informer._monotonic = lambda: now[0]
    informer.pump()
    assert informer.health().since_heartbeat == 0.0
    now[0] += 500.0
    assert informer.health().since_heartbeat == 500.0
