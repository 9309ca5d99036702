"""``karpenter serve``: flags, start-up errors, probes, leader election and shutdown.

The operator runs here on the in-memory API server (a thread-safe KubeClient) with wall
clocks; the real API server is exercised by tests/integration/test_serve_e2e.py. Waits
poll with a generous deadline and assert on state, never on how long something took.
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from karpenter_core.kube.client import ApiError, KubeClient
from karpenter_core.operator.serve import Operator, ServeConfig, ServeError
from karpenter_core.runtime.leaderelection import LEASE
from karpenter_core.runtime.options import Options
from karpenter_core.sim.apiserver import InMemoryApiServer

NS = "karpenter"


def wait_for(predicate: Callable[[], bool], what: str, deadline: float = 30.0) -> None:
    end = time.monotonic() + deadline
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def options(**kw: Any) -> Options:
    base: dict[str, Any] = {
        "metrics_port": 0,
        "health_probe_port": 0,
        "leader_election_namespace": NS,
    }
    base.update(kw)
    return Options(**base)


class Running:
    def __init__(self, operator: Operator) -> None:
        self.operator = operator
        self.stop = threading.Event()
        self.code: int | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.code = self.operator.run(self.stop)
        except BaseException as e:
            self.error = e

    def start(self) -> Running:
        self.thread.start()
        wait_for(
            lambda: self.operator.health_server is not None or not self.thread.is_alive(),
            "the probe server",
        )
        return self

    def finish(self) -> int | None:
        self.stop.set()
        self.operator.wake()
        self.thread.join(30)
        assert not self.thread.is_alive()
        if self.error is not None:
            raise self.error
        return self.code


@pytest.fixture
def server() -> InMemoryApiServer:
    s = InMemoryApiServer()
    s.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    return s


def operator(client: KubeClient, identity: str = "a", **opts: Any) -> Operator:
    return Operator(
        ServeConfig(options=options(**opts), cloud_provider="kwok", identity=identity),
        client=client,
        environ={},
        configure_logs=False,
        host="127.0.0.1",
    )


@pytest.fixture
def running(server: InMemoryApiServer) -> Iterator[Running]:
    r = Running(operator(server)).start()
    yield r
    if r.thread.is_alive():
        r.finish()


def test_ready_once_caches_sync_and_crds_resolve(running: Running) -> None:
    port = running.operator.health_server.port
    wait_for(lambda: get(port, "/readyz")[0] == 200, "readiness")
    status, body = get(port, "/readyz?verbose")
    assert status == 200
    assert "[+]informer-sync ok" in body
    assert "[+]crds ok" in body
    assert get(port, "/healthz") == (200, "ok")


def test_the_servers_listen_on_the_bind_address_options(server: InMemoryApiServer) -> None:
    op = Operator(
        ServeConfig(
            options=options(
                metrics_bind_address="127.0.0.1", health_probe_bind_address="127.0.0.1"
            ),
            cloud_provider="kwok",
            identity="a",
        ),
        client=server,
        environ={},
        configure_logs=False,
    )
    r = Running(op).start()
    try:
        assert op.metrics_server.address == op.health_server.address == "127.0.0.1"
    finally:
        r.finish()


def test_metrics_endpoint_exposes_upstream_metric_names(running: Running) -> None:
    status, body = get(running.operator.metrics_server.port, "/metrics")
    assert status == 200
    assert "karpenter_build_info{" in body
    assert "# TYPE karpenter_nodeclaims_created_total counter" in body


def test_the_leader_runs_controllers_and_releases_the_lease_on_stop(
    running: Running, server: InMemoryApiServer
) -> None:
    op = running.operator
    wait_for(op.controllers_started.is_set, "controllers to start")
    assert "provisioner" in op.registration.controllers
    assert server.get(LEASE, "karpenter-leader-election", NS)["spec"]["holderIdentity"] == "a"
    assert running.finish() == 0
    spec = server.get(LEASE, "karpenter-leader-election", NS)["spec"]
    assert not spec.get("holderIdentity")
    assert op.health_server is None and op.metrics_server is None


def test_a_standby_serves_probes_but_runs_no_controllers_until_the_leader_stops(
    server: InMemoryApiServer,
) -> None:
    leader = Running(operator(server, "a")).start()
    wait_for(leader.operator.controllers_started.is_set, "the leader's controllers")
    standby = Running(operator(server, "b")).start()
    try:
        port = standby.operator.health_server.port
        wait_for(lambda: get(port, "/readyz")[0] == 200, "standby readiness")
        wait_for(lambda: standby.operator.elector.leader == "a", "the standby to see the leader")
        assert not standby.operator.controllers_started.is_set()
        assert leader.finish() == 0
        wait_for(standby.operator.controllers_started.is_set, "the standby to take over")
        spec = server.get(LEASE, "karpenter-leader-election", NS)["spec"]
        assert spec["holderIdentity"] == "b"
        assert spec["leaseTransitions"] == 1
    finally:
        if leader.thread.is_alive():
            leader.finish()
        assert standby.finish() == 0


def test_without_leader_election_controllers_start_and_no_lease_is_written(
    server: InMemoryApiServer,
) -> None:
    r = Running(operator(server, disable_leader_election=True)).start()
    try:
        wait_for(r.operator.controllers_started.is_set, "controllers")
        assert not server.list(LEASE, NS).items
    finally:
        assert r.finish() == 0


class Broken:
    """A KubeClient wrapper: unreachable, or without some CRDs."""

    def __init__(
        self, inner: InMemoryApiServer, *, down: bool = False, missing: tuple[str, ...] = ()
    ) -> None:
        self.inner = inner
        self.down = down
        self.missing = missing
        self.host = "https://127.0.0.1:6443"

    def server_version(self) -> dict[str, Any]:
        if self.down:
            raise ApiError("connection refused", code=503)
        return {"gitVersion": "v1.31.0"}

    def has_resource(self, rt: Any) -> bool:
        return rt.plural not in self.missing

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_an_unreachable_api_server_is_one_error_naming_it(server: InMemoryApiServer) -> None:
    op = operator(Broken(server, down=True))  # type: ignore[arg-type]
    with pytest.raises(
        ServeError, match=r"cannot reach the Kubernetes API server at https://127\.0\.0\.1:6443"
    ):
        op.run(threading.Event())


@pytest.mark.parametrize(
    ("missing", "message"),
    [
        ("nodeclaims", "CRD nodeclaims.karpenter.sh .* is not installed.*karpenter crds"),
        ("nodepools", "CRD nodepools.karpenter.sh"),
        ("kwoknodeclasses", "CRD kwoknodeclasses.karpenter.kwok.sh .*NodeClass CRD"),
    ],
)
def test_a_missing_crd_is_one_error_naming_it(
    server: InMemoryApiServer, missing: str, message: str
) -> None:
    op = operator(Broken(server, missing=(missing,)))  # type: ignore[arg-type]
    with pytest.raises(ServeError, match=message):
        op.run(threading.Event())
    assert op.health_server is None


def test_leader_election_without_a_namespace_outside_a_pod_is_an_error(
    server: InMemoryApiServer,
) -> None:
    op = operator(server, leader_election_namespace="")
    with pytest.raises(ServeError, match="set --leader-election-namespace"):
        op.run(threading.Event())


def test_an_unknown_cloud_provider_lists_the_installed_ones(server: InMemoryApiServer) -> None:
    op = Operator(
        ServeConfig(options=options(), cloud_provider="nimbus"),
        client=server,
        environ={},
        configure_logs=False,
    )
    with pytest.raises(
        ServeError,
        match=r"--cloud-provider nimbus: unknown cloud provider 'nimbus' \(installed: .*kwok",
    ):
        op.run(threading.Event())


class Partition:
    """The operator's main client over ``server``; ``down`` fails its lists and watches."""

    def __init__(self, server: InMemoryApiServer) -> None:
        self.server = server
        self.down = False

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.server, name)
        if name not in ("list", "watch"):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            if self.down:
                raise ApiError("cannot reach the API server: connection refused", code=503)
            return attr(*args, **kwargs)

        return call


def test_readiness_fails_while_a_cache_cannot_be_kept_current_and_recovers(
    server: InMemoryApiServer,
) -> None:
    client = Partition(server)
    op = Operator(
        ServeConfig(options=options(), cloud_provider="kwok", identity="a"),
        client=client,  # type: ignore[arg-type]
        lease_client=server,
        environ={},
        configure_logs=False,
        host="127.0.0.1",
    )
    r = Running(op).start()
    try:
        port = op.health_server.port
        wait_for(lambda: get(port, "/readyz")[0] == 200, "readiness")
        client.down = True
        for inf in op.informers.all():  # the watches break
            if inf._stream is not None:
                inf._stream.stop()
        # Other checks that call the API server (the CRDs') may fail first: wait for the
        # informers' own check to notice the broken watches, which takes a relist attempt.
        wait_for(
            lambda: "[-]informer-fresh failed" in get(port, "/readyz")[1],
            "the informer check to fail",
        )
        status, body = get(port, "/readyz")
        assert status == 500
        assert "[-]informer-fresh failed: caches may be stale" in body
        assert "connection refused" in body
        assert get(port, "/healthz")[0] == 200  # an outage is no reason to restart
        client.down = False
        wait_for(lambda: get(port, "/readyz")[0] == 200, "readiness to return")
    finally:
        r.finish()


def test_liveness_fails_when_an_informer_loop_is_wedged_or_gone(
    running: Running, server: InMemoryApiServer
) -> None:
    op = running.operator
    port = op.health_server.port
    wait_for(lambda: get(port, "/readyz")[0] == 200, "readiness")
    status, body = get(port, "/healthz?verbose")
    assert status == 200 and "[+]informers ok" in body
    pods = next(inf for inf in op.informers.all() if str(inf.resource) == "pods")
    # wedge the pods loop: a handler that never returns, so the loop stops beating
    entered, release = threading.Event(), threading.Event()

    def stuck(event_type: str, obj: dict[str, Any]) -> None:
        entered.set()
        release.wait(60)

    pods.add_handler(stuck, replay=False)
    try:
        server.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "wedge", "namespace": NS},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            }
        )
        assert entered.wait(30)
        with pods._lock:  # its last heartbeat an hour ago, as a wedged loop's would be
            pods._heartbeat -= 3600
        status, body = get(port, "/healthz")
        assert status == 500
        assert "pods (no progress for" in body
    finally:
        release.set()
    nodes = next(inf for inf in op.informers.all() if str(inf.resource) == "nodes")
    nodes.stop()
    assert "nodes (its loop has exited)" in get(port, "/healthz")[1]
