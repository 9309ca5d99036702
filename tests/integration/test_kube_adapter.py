"""The KubeClient adapter and informers on a real kube-apiserver (plus what needs no server).

The shared API semantics live in ``tests/contract`` (run on both backends); this file covers
what only the adapter has: configuration loading, transport errors, paging, rate limiting,
CRDs, informers (resume, relist on 410, indexes), and the Manager running on it unchanged.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import controlplane
from karpenter_core.kube import adapter as adapter_module
from karpenter_core.kube.adapter import (
    KubernetesClient,
    RateLimiter,
    RestWatch,
    retry_on_conflict,
)
from karpenter_core.kube.client import (
    ADDED,
    DELETED,
    MODIFIED,
    ApiError,
    Conflict,
    Gone,
    resource_for,
)
from karpenter_core.kube.config import KubeConfigError, load_config
from karpenter_core.kube.informer import POD_NODE_NAME_INDEX, Informer
from karpenter_core.runtime.clock import VirtualClock, WallClock
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import ObjectKey, Result, Watch
from karpenter_core.sim.apiserver import InMemoryApiServer

real = pytest.mark.controlplane


def _configmap(name: str, namespace: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": dict(data),
    }


def _pod(name: str, namespace: str, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def _wait(check: Callable[[], bool], timeout: float = 30.0) -> bool:
    """Poll ``check`` until true (a real server is asynchronous); False after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


# ---------------------------------------------------------------- no server needed


def test_rate_limiter_allows_a_burst_then_paces_at_qps() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    limiter = RateLimiter(10, 3, clock=lambda: now[0], sleep=sleep)
    waits = [limiter.acquire() for _ in range(5)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert waits[3] == pytest.approx(0.1)
    assert waits[4] == pytest.approx(0.1)


def test_rate_limiter_refills_while_idle() -> None:
    now = [0.0]
    limiter = RateLimiter(2, 2, clock=lambda: now[0], sleep=lambda s: None)
    limiter.acquire()
    limiter.acquire()
    now[0] += 1.0  # two tokens back
    assert [limiter.acquire(), limiter.acquire()] == [0.0, 0.0]


def test_rate_limiter_with_zero_qps_never_waits() -> None:
    limiter = RateLimiter(0, 1, clock=lambda: 0.0, sleep=lambda s: None)
    assert all(limiter.acquire() == 0.0 for _ in range(100))


def test_a_missing_kubeconfig_is_one_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(KubeConfigError, match=f"kubeconfig {missing}: no such file"):
        load_config(str(missing))


def test_a_kubeconfig_without_the_context_names_it(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(
        "apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: []\ncurrent-context: ''\n"
    )
    with pytest.raises(KubeConfigError, match=str(path)):
        load_config(str(path), context="elsewhere")


def test_an_unreachable_server_is_an_api_error_naming_it(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nothing listens
    path = tmp_path / "config"
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:{port}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
    )
    client = KubernetesClient.from_kubeconfig(str(path))
    with pytest.raises(ApiError) as err:
        client.get("configmaps", "a", "default")
    assert err.value.code == 503
    assert f"127.0.0.1:{port}" in str(err.value)


def test_retry_on_conflict_runs_again_until_the_write_wins() -> None:
    attempts: list[int] = []

    def write() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise Conflict("stale")
        return "done"

    assert retry_on_conflict(write) == "done"
    assert len(attempts) == 3


def test_retry_on_conflict_gives_up_after_its_attempts() -> None:
    def write() -> None:
        raise Conflict("always stale")

    with pytest.raises(Conflict):
        retry_on_conflict(write, attempts=2)


class _FakeResponse:
    """A streaming HTTP response carrying newline-delimited watch events."""

    def __init__(self, *lines: dict[str, Any]) -> None:
        self.body = b"".join(json.dumps(line).encode() + b"\n" for line in lines)

    def stream(self, amt: int, decode_content: bool = True) -> Iterator[bytes]:
        # split mid-line on purpose: the reader must reassemble events across chunks
        for i in range(0, len(self.body), 7):
            yield self.body[i : i + 7]

    def release_conn(self) -> None:
        pass

    def close(self) -> None:
        pass


def _cm_event(kind: str, name: str, rv: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": "ns", "resourceVersion": rv}
    return {"type": kind, "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}}


def test_rest_watch_reassembles_events_split_across_chunks() -> None:
    watch = RestWatch(_FakeResponse(_cm_event(ADDED, "a", "5"), _cm_event(DELETED, "a", "6")), "t")
    events = list(watch)
    assert [(e.type, e.object["metadata"]["resourceVersion"]) for e in events] == [
        (ADDED, "5"),
        (DELETED, "6"),
    ]


def test_rest_watch_raises_gone_for_an_expired_error_event() -> None:
    expired = {
        "type": "ERROR",
        "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"},
    }
    watch = RestWatch(_FakeResponse(_cm_event(ADDED, "a", "5"), expired), "t")
    seen = []
    with pytest.raises(Gone, match="too old"):
        for event in watch:
            seen.append(event.type)
    assert seen == [ADDED]
    assert watch.stopped


def test_rest_watch_poll_returns_nothing_after_the_stream_ends() -> None:
    watch = RestWatch(_FakeResponse(_cm_event(ADDED, "a", "5")), "t")
    assert [e.type for e in watch.poll(5)] == [ADDED]
    assert watch.poll(1) == []
    assert watch.stopped


def _memory() -> InMemoryApiServer:
    server = InMemoryApiServer(VirtualClock(), seed=1)
    server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    return server


def test_informer_feeds_a_manager_watch_spec_on_the_in_memory_server() -> None:
    server = _memory()
    keys: list[Any] = []
    informer = Informer(server, "configmaps", "ns")
    informer.feed(
        Watch("configmaps", predicate=lambda t, o: o["metadata"]["name"] != "skip"), keys.append
    )
    informer.pump()
    server.create(_configmap("a", "ns"))
    server.create(_configmap("skip", "ns"))
    informer.pump()
    assert keys == [ObjectKey("ns", "a")]


def test_informer_pump_relists_after_gone_on_the_in_memory_server() -> None:
    server = InMemoryApiServer(VirtualClock(), seed=1, watch_history=2)
    server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    events: list[tuple[str, str]] = []
    informer = Informer(server, "configmaps", "ns")
    informer.pump()
    informer.add_handler(lambda t, o: events.append((t, o["metadata"]["name"])))
    assert informer._stream is not None
    informer._stream.stop()
    for i in range(5):  # more writes than the server's history holds
        server.create(_configmap(f"c{i}", "ns"))
    server.delete("configmaps", "c0", "ns")
    informer.pump()
    assert informer.relists == 2
    assert sorted(informer.keys()) == [f"ns/c{i}" for i in range(1, 5)]
    assert (ADDED, "c4") in events and (ADDED, "c0") not in events


def test_informer_handler_errors_do_not_stop_the_cache() -> None:
    server = _memory()
    informer = Informer(server, "configmaps", "ns")

    def broken(event_type: str, obj: dict[str, Any]) -> None:
        raise RuntimeError("bug in a handler")

    informer.add_handler(broken)
    informer.pump()
    server.create(_configmap("a", "ns"))
    informer.pump()
    assert informer.get("ns/a") is not None


# ---------------------------------------------------------------- the real server


@real
def test_the_server_reports_the_pinned_kubernetes_version(kube: KubernetesClient) -> None:
    assert kube.server_version()["gitVersion"] == controlplane.versions()["kubernetes"]


@real
def test_a_wrong_token_is_refused_with_401(
    control_plane: controlplane.ControlPlane, tmp_path: Path
) -> None:
    config = control_plane.kubeconfig.read_text().replace(control_plane.token, "wrong")
    path = tmp_path / "config"
    path.write_text(config)
    client = KubernetesClient.from_kubeconfig(str(path))
    with pytest.raises(ApiError) as err:
        client.list("namespaces")
    assert err.value.code == 401


@real
def test_the_karpenter_crds_are_served(kube: KubernetesClient) -> None:
    for kind in ("NodePool", "NodeClaim", "NodeOverlay", "CapacityBuffer"):
        assert kube.has_resource(resource_for(kind)), kind


@real
def test_list_pages_through_everything_with_one_resource_version(
    kube: KubernetesClient, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(5):
        kube.create(_configmap(f"c{i}", namespace))
    monkeypatch.setattr(adapter_module, "LIST_PAGE_SIZE", 2)
    listed = kube.list("configmaps", namespace)
    names = sorted(o["metadata"]["name"] for o in listed if o["metadata"]["name"].startswith("c"))
    assert names == [f"c{i}" for i in range(5)]
    assert listed.resource_version


@real
def test_watch_with_a_timeout_ends_its_iteration(kube: KubernetesClient, namespace: str) -> None:
    start = kube.list("configmaps", namespace).resource_version
    stream = kube.watch("configmaps", namespace, resource_version=start, timeout_seconds=1)
    assert list(stream) == []


@real
def test_stopping_a_watch_unblocks_a_thread_reading_it(
    kube: KubernetesClient, namespace: str
) -> None:
    stream = kube.watch("configmaps", namespace, resource_version="0")
    got: list[Any] = []
    reader = threading.Thread(target=lambda: got.extend(stream), daemon=True)
    reader.start()
    stream.stop()
    reader.join(30)
    assert not reader.is_alive()
    assert stream.stopped


@real
def test_events_k8s_io_events_can_be_created(kube: KubernetesClient, namespace: str) -> None:
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e1", "namespace": namespace},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "karpenter.sh/test",
        "reportingInstance": "test-0",
        "action": "Testing",
        "reason": "Tested",
        "type": "Normal",
        "note": "hello",
        "regarding": {"kind": "ConfigMap", "namespace": namespace, "name": "x"},
    }
    created = kube.create(event)
    got = kube.get(("events.k8s.io/v1", "Event"), "e1", namespace)
    assert got["note"] == "hello"
    assert created["metadata"]["uid"] == got["metadata"]["uid"]


@real
def test_retry_on_conflict_settles_concurrent_status_writers(
    kube: KubernetesClient, namespace: str
) -> None:
    kube.create(_pod("p", namespace))

    def add_condition(kind: str) -> None:
        def attempt() -> None:
            current = kube.get("pods", "p", namespace)
            status = current.setdefault("status", {})
            status.setdefault("conditions", []).append({"type": kind, "status": "True"})
            kube.update_status(current)

        retry_on_conflict(attempt, attempts=20)

    threads = [
        threading.Thread(target=add_condition, args=(f"example.com/c{i}",)) for i in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    types = {c["type"] for c in kube.get("pods", "p", namespace)["status"]["conditions"]}
    assert {f"example.com/c{i}" for i in range(4)} <= types


# ---------------------------------------------------------------- informers


@real
def test_informer_lists_then_watches_and_indexes_pods_by_node(
    kube: KubernetesClient, namespace: str
) -> None:
    kube.create(_pod("a", namespace, node="n1"))
    informer = Informer(kube, "pods", namespace).start()
    try:
        assert informer.wait_for_sync(30)
        kube.create(_pod("b", namespace, node="n1"))
        kube.create(_pod("c", namespace, node="n2"))
        kube.create(_pod("pending", namespace))
        assert _wait(lambda: len(informer) == 4)
        on_n1 = sorted(p["metadata"]["name"] for p in informer.by_index(POD_NODE_NAME_INDEX, "n1"))
        assert on_n1 == ["a", "b"]
        assert [p["metadata"]["name"] for p in informer.by_index(POD_NODE_NAME_INDEX, "n2")] == [
            "c"
        ]
        kube.delete("pods", "c", namespace, grace_period_seconds=0)
        assert _wait(lambda: informer.by_index(POD_NODE_NAME_INDEX, "n2") == [])
    finally:
        informer.stop()


@real
def test_informer_handlers_see_every_change_in_order(
    kube: KubernetesClient, namespace: str
) -> None:
    seen: list[tuple[str, str]] = []
    informer = Informer(kube, "configmaps", namespace)
    informer.add_handler(lambda t, o: seen.append((t, o["metadata"]["name"])))
    informer.start()
    try:
        assert informer.wait_for_sync(30)
        seen.clear()  # the namespace's kube-root-ca.crt may or may not be there
        created = kube.create(_configmap("x", namespace))
        kube.update(dict(created, data={"k": "v"}))
        kube.delete("configmaps", "x", namespace)
        assert _wait(lambda: len([s for s in seen if s[1] == "x"]) == 3)
    finally:
        informer.stop()
    assert [s for s in seen if s[1] == "x"] == [(ADDED, "x"), (MODIFIED, "x"), (DELETED, "x")]


@real
def test_informer_resumes_from_its_resource_version_without_relisting(
    kube: KubernetesClient, namespace: str
) -> None:
    informer = Informer(kube, "configmaps", namespace)
    informer.pump()
    assert informer.relists == 1
    kube.create(_configmap("a", namespace))
    assert _wait(lambda: informer.pump(0.2) > 0 or informer.get(f"{namespace}/a") is not None)
    assert informer._stream is not None
    informer._stream.stop()  # the connection drops
    kube.create(_configmap("b", namespace))
    assert _wait(lambda: informer.pump(0.2) >= 0 and informer.get(f"{namespace}/b") is not None)
    assert informer.relists == 1


def _nodepool(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.kwok.sh",
                        "kind": "KWOKNodeClass",
                        "name": "default",
                    },
                    "requirements": [],
                }
            }
        },
    }


@real
def test_informer_relists_after_410_and_reports_what_it_missed(
    kube: KubernetesClient, unique: Callable[[str], str]
) -> None:
    stays, goes, new = unique("stays"), unique("goes"), unique("new")
    kube.create(_nodepool(stays))
    kube.create(_nodepool(goes))
    events: list[tuple[str, str]] = []
    informer = Informer(kube, "nodepools")
    try:
        informer.pump()
        informer.add_handler(lambda t, o: events.append((t, o["metadata"]["name"])), replay=False)
        # away long enough for its version to leave the server's history: a custom
        # resource's watch cache starts when its CRD is installed, so "1" is older than that
        kube.delete("nodepools", goes)
        kube.create(_nodepool(new))
        assert informer._stream is not None
        informer._stream.stop()
        informer.resource_version = "1"
        informer.pump(1)
        assert informer.relists == 2
        assert (DELETED, goes) in events
        assert (ADDED, new) in events
        assert informer.get(stays) is not None
        assert informer.get(goes) is None
    finally:
        for name in (stays, new):
            kube.delete("nodepools", name)


# ---------------------------------------------------------------- the manager on the adapter


@real
def test_the_manager_runs_controllers_on_the_adapter_unchanged(
    kube: KubernetesClient, namespace: str
) -> None:
    reconciled: list[ObjectKey] = []
    seen = threading.Event()

    class Recorder:
        def reconcile(self, key: ObjectKey) -> Result:
            reconciled.append(key)
            if key.name == "later":
                seen.set()
            return Result()

    kube.create(_configmap("before", namespace))
    manager = Manager(WallClock(), kube)
    manager.add_controller(
        "recorder", Recorder(), watches=[Watch("configmaps", namespace=namespace)]
    )
    with manager:
        kube.create(_configmap("later", namespace))
        assert seen.wait(30)
    assert ObjectKey(namespace, "before") in reconciled
    assert ObjectKey(namespace, "later") in reconciled
