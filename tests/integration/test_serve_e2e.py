"""``karpenter serve`` end to end on a real control plane.

etcd + kube-apiserver + kube-controller-manager (deployment, replicaset, garbage-collector
and namespace controllers) + kube-scheduler, built from the pinned upstream modules (see
``controlplane.py``). Karpenter runs as real ``karpenter serve --cloud-provider kwok``
subprocesses against it.

KWOK nodes have no kubelet. Their part is played by the *equivalent fake kubelet*:
``karpenter_core.sim.kubelet`` (the simulator's KWOK-style kubelet) running in this test
process over the real API client on a wall clock: it marks Karpenter's Nodes Ready and the
pods the real kube-scheduler binds to them Running, as the KWOK controller would; next to it
:class:`NotReadyTaintRemover` lifts the API server's ``node.kubernetes.io/not-ready`` taint
from Ready nodes (the node-lifecycle controller's job).

Waits poll the API server with generous deadlines and assert on state, never on how long
something took.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
import types
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

import controlplane
from karpenter_core.cli import main as cli_main
from karpenter_core.kube.adapter import KubernetesClient
from karpenter_core.kube.client import AlreadyExists, ApiError, Conflict, NotFound
from karpenter_core.runtime.clock import WallClock
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import ObjectKey, Result, Watch

pytestmark = pytest.mark.controlplane

NS = "karpenter"
APP_NS = "default"
LEASE = ("coordination.k8s.io/v1", "Lease")
NODEPOOL_LABEL = "karpenter.sh/nodepool"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
CONTROLLERS = (
    "deployment-controller",
    "replicaset-controller",
    "garbage-collector-controller",
    "namespace-controller",
)
WAIT = 180.0


def wait_for(predicate: Callable[[], Any], what: str, deadline: float = WAIT) -> Any:
    end = time.monotonic() + deadline
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.25)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


def metric(body: str, name: str, /, **labels: str) -> float | None:
    """The value of ``name`` (summed over series matching ``labels``), or None."""
    total = None
    for line in body.splitlines():
        if not line.startswith(name):
            continue
        m = re.match(rf"^{re.escape(name)}(\{{(.*)\}})? (\S+)$", line)
        if m is None:
            continue
        found = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        if all(found.get(k) == v for k, v in labels.items()):
            total = (total or 0.0) + float(m.group(3))
    return total


# --------------------------------------------------------------------------- the cluster


class NotReadyTaintRemover:
    """The node-lifecycle controller's part that matters here: a Ready node loses the
    ``node.kubernetes.io/not-ready`` taint the API server put on it at creation.

    The real controller is not run: without kubelet heartbeats it would soon call every
    node unreachable. Level-triggered like the real one, so a writer that puts the taint
    back from a stale copy of the node is corrected on the next event.
    """

    def __init__(self, kube: KubernetesClient) -> None:
        self.kube = kube

    def reconcile(self, key: ObjectKey) -> Result:
        try:
            node = self.kube.get("nodes", key.name)
        except NotFound:
            return Result()
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (node.get("status") or {}).get("conditions") or []
        )
        taints = (node.get("spec") or {}).get("taints") or []
        if not ready or not any(t.get("key") == NOT_READY_TAINT for t in taints):
            return Result()
        node["spec"]["taints"] = [t for t in taints if t.get("key") != NOT_READY_TAINT]
        try:
            self.kube.update(node)  # resourceVersion precondition: never clobbers a newer write
        except Conflict:
            return Result(requeue=True)
        return Result()


class Cluster:
    """A control plane with the Karpenter and KWOK CRDs, and the fake kubelet."""

    def __init__(self, cp: controlplane.ControlPlane) -> None:
        self.cp = cp
        self.kube = KubernetesClient.from_kubeconfig(str(cp.kubeconfig), qps=0)
        self.kubelet_manager: Manager | None = None

    def start(self) -> Cluster:
        # the CRDs as users install them: `karpenter crds --cloud-provider kwok | kubectl apply -f -`
        result = CliRunner().invoke(cli_main, ["crds", "--cloud-provider", "kwok"])
        assert result.exit_code == 0, result.output
        crds = [d for d in yaml.safe_load_all(result.stdout) if d]
        assert "kwoknodeclasses.karpenter.kwok.sh" in {c["metadata"]["name"] for c in crds}
        for crd in crds:
            with contextlib.suppress(AlreadyExists):
                self.kube.create(crd)
        for crd in crds:
            name = crd["metadata"]["name"]
            wait_for(lambda name=name: self._established(name), f"the CRD {name}")
        with contextlib.suppress(AlreadyExists):
            self.kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        from karpenter_core.sim import kubelet

        clock = WallClock()
        self.kubelet_manager = Manager(clock, self.kube)
        ctx = types.SimpleNamespace(kube=self.kube, clock=clock)
        kubelet.register(self.kubelet_manager, ctx)  # type: ignore[arg-type]
        self.kubelet_manager.add_controller(
            "node-lifecycle.not-ready-taint",
            NotReadyTaintRemover(self.kube),
            watches=[Watch("nodes")],
        )
        self.kubelet_manager.start()
        return self

    def _established(self, name: str) -> bool:
        got = self.kube.get(("apiextensions.k8s.io/v1", "CustomResourceDefinition"), name)
        return any(
            c.get("type") == "Established" and c.get("status") == "True"
            for c in (got.get("status") or {}).get("conditions") or []
        )

    def stop(self) -> None:
        if self.kubelet_manager is not None:
            self.kubelet_manager.stop()
        self.kube.close()

    # -- objects

    def apply_nodepool(self, name: str, **spec_overrides: Any) -> None:
        with contextlib.suppress(AlreadyExists):
            self.kube.create(
                {
                    "apiVersion": "karpenter.kwok.sh/v1alpha1",
                    "kind": "KWOKNodeClass",
                    "metadata": {"name": "default"},
                }
            )
        template_spec: dict[str, Any] = {
            "nodeClassRef": {
                "group": "karpenter.kwok.sh",
                "kind": "KWOKNodeClass",
                "name": "default",
            },
            "requirements": [
                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                # 4-vCPU types: twenty 1-vCPU pods need several nodes.
                {"key": "karpenter.kwok.sh/instance-cpu", "operator": "In", "values": ["4"]},
            ],
        }
        template_spec.update(spec_overrides)
        self.kube.create(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "metadata": {"name": name},
                "spec": {"template": {"spec": template_spec}, "limits": {"cpu": "1000"}},
            }
        )

    def apply_deployment(self, name: str, replicas: int, *, cpu: str = "1") -> None:
        self.kube.create(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "namespace": APP_NS},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": name}},
                    "template": {
                        "metadata": {"labels": {"app": name}},
                        "spec": {
                            "terminationGracePeriodSeconds": 0,
                            "containers": [
                                {
                                    "name": "app",
                                    "image": "registry.k8s.io/pause:3.10",
                                    "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}},
                                }
                            ],
                        },
                    },
                },
            }
        )

    def scale(self, name: str, replicas: int) -> None:
        self.kube.patch(("apps/v1", "Deployment"), name, {"spec": {"replicas": replicas}}, APP_NS)

    def pods(self, app: str) -> list[dict[str, Any]]:
        return self.kube.list("pods", APP_NS, label_selector=f"app={app}").items

    def nodeclaims(self) -> list[dict[str, Any]]:
        return self.kube.list(("karpenter.sh/v1", "NodeClaim")).items

    def karpenter_nodes(self) -> list[dict[str, Any]]:
        return self.kube.list("nodes", label_selector=NODEPOOL_LABEL).items

    def all_bound_to_karpenter_nodes(self, app: str, replicas: int) -> bool:
        pods = self.pods(app)
        nodes = {n["metadata"]["name"] for n in self.karpenter_nodes()}
        return len(pods) == replicas and all(
            (p.get("spec") or {}).get("nodeName") in nodes for p in pods
        )

    def lease_holder(self) -> str:
        try:
            lease = self.kube.get(LEASE, "karpenter-leader-election", NS)
        except ApiError:
            return ""
        return str((lease.get("spec") or {}).get("holderIdentity") or "")


class Serve:
    """One ``karpenter serve`` subprocess."""

    def __init__(self, cluster: Cluster, log_dir: Path, name: str, *extra: str) -> None:
        self.metrics_port = free_port()
        self.health_port = free_port()
        self.log = log_dir / f"serve-{name}.log"
        exe = Path(sys.executable).parent / "karpenter"
        cmd = (
            [str(exe)]
            if exe.exists()
            else [
                sys.executable,
                "-c",
                "import sys; from karpenter_core.cli import main; sys.exit(main())",
            ]
        )
        self.args = [
            *cmd,
            "serve",
            "--cloud-provider",
            "kwok",
            "--kubeconfig",
            str(cluster.cp.kubeconfig),
            "--leader-election-namespace",
            NS,
            f"--metrics-port={self.metrics_port}",
            f"--health-probe-port={self.health_port}",
            "--batch-idle-duration=1s",
            "--batch-max-duration=10s",
            *extra,
        ]
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Serve:
        env = dict(os.environ)
        env.pop("KUBECONFIG", None)
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT, env=env)
        wait_for(lambda: self.ready() or self.exited(), "karpenter serve to become ready")
        assert not self.exited(), f"karpenter serve exited; log:\n{self.log_tail()}"
        return self

    def exited(self) -> bool:
        return self.proc is not None and self.proc.poll() is not None

    def ready(self) -> bool:
        return http_get(self.health_port, "/readyz")[0] == 200

    def metrics(self) -> str:
        return http_get(self.metrics_port, "/metrics")[1]

    def leading(self) -> bool:
        return metric(self.metrics(), "leader_election_master_status") == 1.0

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(30)

    def terminate(self) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(60)

    def log_tail(self, n: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    if controlplane.skip_requested():
        pytest.skip(f"{controlplane.SKIP_ENV} is set: real-control-plane tests skipped")
    try:
        binaries = controlplane.ensure_binaries(log=lambda m: print(m, file=sys.stderr))
        cp = controlplane.ControlPlane(binaries, controllers=CONTROLLERS, scheduler=True).start()
    except controlplane.ControlPlaneError as e:
        pytest.fail(f"the real control plane is unavailable: {e}", pytrace=False)
    try:
        c = Cluster(cp).start()
        try:
            yield c
        finally:
            c.stop()
    finally:
        cp.stop()


@pytest.fixture
def serve(cluster: Cluster, tmp_path: Path) -> Iterator[Callable[..., Serve]]:
    started: list[Serve] = []

    def start(name: str = "a", *extra: str) -> Serve:
        s = Serve(cluster, tmp_path, name, *extra).start()
        started.append(s)
        return s

    yield start
    for s in started:
        if not s.exited():
            s.kill9()
        print(f"--- {s.log.name} (last lines)\n{s.log_tail(60)}")  # shown when a test fails
    pods = cluster.kube.list("pods", APP_NS).items
    print("--- pods:", [(p["metadata"]["name"], p["spec"].get("nodeName")) for p in pods])
    print("--- nodeclaims:", [c["metadata"]["name"] for c in cluster.nodeclaims()])


# --------------------------------------------------------------------------- tests


def test_every_pod_of_a_deployment_ends_up_on_a_karpenter_launched_node(
    cluster: Cluster, serve: Callable[..., Serve]
) -> None:
    serve()
    cluster.apply_nodepool("default")
    cluster.apply_deployment("web", 20)
    wait_for(lambda: cluster.all_bound_to_karpenter_nodes("web", 20), "20 pods bound")
    claims = cluster.nodeclaims()
    nodes = cluster.karpenter_nodes()
    assert len(claims) >= 5  # twenty 1-vCPU pods on 4-vCPU nodes
    assert {n["spec"]["providerID"] for n in nodes} == {c["status"]["providerID"] for c in claims}
    assert all(n["metadata"]["labels"][NODEPOOL_LABEL] == "default" for n in nodes)


def test_metrics_expose_upstream_metric_names(
    cluster: Cluster, serve: Callable[..., Serve]
) -> None:
    op = serve()
    cluster.apply_nodepool("default")
    cluster.apply_deployment("web", 4)
    wait_for(lambda: cluster.all_bound_to_karpenter_nodes("web", 4), "4 pods bound")
    body = wait_for(
        lambda: (
            (b := op.metrics())
            and (metric(b, "karpenter_nodeclaims_created_total", nodepool="default") or 0) > 0
            and b
        ),
        "nodeclaims_created_total to count the launches",
    )
    assert metric(body, "karpenter_build_info") == 1.0
    assert metric(body, "karpenter_cluster_state_synced") == 1.0
    assert (metric(body, "karpenter_cluster_state_node_count") or 0) >= 1
    assert (metric(body, "karpenter_scheduler_scheduling_duration_seconds_count") or 0) >= 1
    assert (
        metric(body, "karpenter_cloudprovider_duration_seconds_count", method="Create") or 0
    ) >= 1
    assert metric(body, "leader_election_master_status", name="karpenter-leader-election") == 1.0
    for family in (
        "karpenter_nodeclaims_created_total",
        "karpenter_nodeclaims_terminated_total",
        "karpenter_nodes_created_total",
        "karpenter_pods_state",
        "karpenter_nodepools_usage",
        "karpenter_nodepools_limit",
    ):
        assert f"# TYPE {family.removesuffix('_total')}" in body, family


def test_kill_9_and_restart_launches_no_duplicate_nodeclaims_and_leaks_no_nodes(
    cluster: Cluster, serve: Callable[..., Serve]
) -> None:
    first = serve("first")
    cluster.apply_nodepool("default")
    cluster.apply_deployment("web", 20)
    wait_for(lambda: cluster.nodeclaims(), "the first NodeClaims")
    first.kill9()  # mid-provisioning: some claims launched, some pods not yet bound
    second = serve("second")
    wait_for(second.leading, "the restarted replica to lead")
    wait_for(lambda: cluster.all_bound_to_karpenter_nodes("web", 20), "20 pods bound")
    # Let the restarted operator run full provisioning passes over the settled cluster.
    wait_for(
        lambda: metric(second.metrics(), "karpenter_cluster_state_synced") == 1.0,
        "cluster state to sync",
    )
    before = {c["metadata"]["name"] for c in cluster.nodeclaims()}
    cluster.scale("web", 21)  # one more pod: forces a fresh provisioning pass
    wait_for(lambda: cluster.all_bound_to_karpenter_nodes("web", 21), "21 pods bound")
    claims = cluster.nodeclaims()
    nodes = cluster.karpenter_nodes()
    # No leaked nodes: every Karpenter node belongs to a NodeClaim and vice versa.
    assert sorted(n["spec"]["providerID"] for n in nodes) == sorted(
        c["status"]["providerID"] for c in claims
    )
    # No duplicates: every NodeClaim's node runs some of the pods it was launched for.
    used = {p["spec"]["nodeName"] for p in cluster.pods("web")}
    idle = [c["metadata"]["name"] for c in claims if c["status"].get("nodeName") not in used]
    assert idle == []
    assert before <= {c["metadata"]["name"] for c in claims}


def test_two_replicas_only_the_leader_acts_and_the_standby_takes_over(
    cluster: Cluster, serve: Callable[..., Serve]
) -> None:
    a = serve("a")
    wait_for(a.leading, "the first replica to lead")
    b = serve("b")
    assert b.ready()  # a standby is ready: caches synced, CRDs resolve
    cluster.apply_nodepool("default")
    cluster.apply_deployment("web", 8)
    wait_for(lambda: cluster.all_bound_to_karpenter_nodes("web", 8), "8 pods bound")
    assert not b.leading()
    assert (metric(a.metrics(), "karpenter_nodeclaims_created_total") or 0) > 0
    assert not metric(b.metrics(), "karpenter_nodeclaims_created_total")
    holder = cluster.lease_holder()
    a.kill9()
    wait_for(b.leading, "the standby to take over", deadline=WAIT)
    assert cluster.lease_holder() not in ("", holder)
    cluster.scale("web", 16)
    wait_for(lambda: cluster.all_bound_to_karpenter_nodes("web", 16), "16 pods bound")
    assert (metric(b.metrics(), "karpenter_nodeclaims_created_total") or 0) > 0


def test_sigterm_releases_the_lease_and_exits_zero(
    cluster: Cluster, serve: Callable[..., Serve]
) -> None:
    op = serve()
    wait_for(op.leading, "leadership")
    assert cluster.lease_holder()
    assert op.terminate() == 0
    assert cluster.lease_holder() == ""


def test_an_invalid_nodepool_is_reported_while_valid_ones_keep_working(
    cluster: Cluster, serve: Callable[..., Serve]
) -> None:
    serve()
    cluster.apply_nodepool(
        "broken",
        taints=[{"key": "example.com/team", "value": "a", "effect": "NoSchedule"}] * 2,
    )
    cluster.apply_nodepool("default")
    cluster.apply_deployment("web", 6)
    wait_for(lambda: cluster.all_bound_to_karpenter_nodes("web", 6), "6 pods bound")

    def broken_condition() -> dict[str, Any] | None:
        np = cluster.kube.get(("karpenter.sh/v1", "NodePool"), "broken")
        for c in (np.get("status") or {}).get("conditions") or []:
            if c["type"] == "ValidationSucceeded" and c["status"] == "False":
                return dict(c)
        return None

    condition = wait_for(broken_condition, "the invalid NodePool's condition")
    assert condition["reason"] == "NodePoolValidationFailed"
    events = wait_for(
        lambda: [
            e
            for e in cluster.kube.list(("events.k8s.io/v1", "Event")).items
            if e.get("reason") == "NodePoolValidationFailed"
            and (e.get("regarding") or {}).get("name") == "broken"
        ],
        "a NodePoolValidationFailed event",
    )
    assert events[0]["type"] == "Warning"
    pools = {n["metadata"]["labels"][NODEPOOL_LABEL] for n in cluster.karpenter_nodes()}
    assert pools == {"default"}
