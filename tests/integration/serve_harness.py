"""Shared harness for ``karpenter serve`` end-to-end tests on a real control plane.

etcd + kube-apiserver + kube-controller-manager (deployment, replicaset, disruption,
garbage-collector, namespace and resourceclaim controllers) + kube-scheduler, built from the pinned upstream modules (see
``controlplane.py``). Karpenter runs as real ``karpenter serve --cloud-provider kwok``
subprocesses against it (:class:`Serve`).

KWOK nodes have no kubelet. Their part is played by the *equivalent fake kubelet*:
``karpenter_core.sim.kubelet`` (the simulator's KWOK-style kubelet) running in the test
process over the real API client on a wall clock: it marks Karpenter's Nodes Ready and the
pods the real kube-scheduler binds to them Running, and removes pods that are deleted or
evicted, as the KWOK controller would; next to it :class:`NotReadyTaintRemover` lifts the
API server's ``node.kubernetes.io/not-ready`` taint from Ready nodes (the node-lifecycle
controller's job).

Each test gets its own control plane (the ``cluster`` fixture) — unlike ``conftest.py``'s
shared one — because these tests watch cluster-wide objects (Nodes, NodeClaims, NodePools)
that another test's Karpenter would act on. Test modules use the fixtures by importing
them: ``from serve_harness import cluster_fixture, serve_fixture``.

Waits poll the API server with generous deadlines and assert on state, never on how long
something took.
"""

from __future__ import annotations

import contextlib
import functools
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
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
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

NS = "karpenter"
APP_NS = "default"
LEASE = ("coordination.k8s.io/v1", "Lease")
NODEPOOL_LABEL = "karpenter.sh/nodepool"
NODEPOOL = ("karpenter.sh/v1", "NodePool")
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
# The disruption controller keeps each PodDisruptionBudget's status (disruptionsAllowed)
# current, which the eviction API enforces: without it a PDB's status stays empty and every
# eviction of a pod it covers is refused.
CONTROLLERS = (
    "deployment-controller",
    "replicaset-controller",
    "disruption-controller",
    "garbage-collector-controller",
    "namespace-controller",
    # a pod's ResourceClaims from its ResourceClaimTemplates (DRA)
    "resourceclaim-controller",
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
        self.kubelet: Any = None  # karpenter_core.sim.kubelet.Kubelet once started

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
            wait_for(functools.partial(self._established, name), f"the CRD {name}")
        with contextlib.suppress(AlreadyExists):
            self.kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        from karpenter_core.sim import kubelet

        clock = WallClock()
        self.kubelet_manager = Manager(clock, self.kube)
        ctx = types.SimpleNamespace(kube=self.kube, clock=clock)
        self.kubelet = kubelet.register(self.kubelet_manager, ctx)  # type: ignore[arg-type]
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

    def set_pod_start_delay(self, seconds: float) -> None:
        """From now on the fake kubelet starts (and readies) a pod ``seconds`` after it is
        bound, as a real container's start-up would take."""
        self.kubelet.options = attrs.evolve(self.kubelet.options, pod_start_delay=seconds)

    def stop(self) -> None:
        if self.kubelet_manager is not None:
            self.kubelet_manager.stop()
        self.kube.close()

    # -- objects

    def apply_nodepool(
        self, name: str, *, disruption: dict[str, Any] | None = None, **spec_overrides: Any
    ) -> None:
        """A NodePool of 4-vCPU on-demand Linux KWOK nodes; ``spec_overrides`` replace fields
        of ``spec.template.spec``, ``disruption`` is ``spec.disruption`` (API defaults when
        None: consolidate when empty or underutilized, at once, 10% of nodes at a time)."""
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
        spec: dict[str, Any] = {"template": {"spec": template_spec}, "limits": {"cpu": "1000"}}
        if disruption is not None:
            spec["disruption"] = disruption
        self.kube.create(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "metadata": {"name": name},
                "spec": spec,
            }
        )

    def patch_nodepool(self, name: str, spec: dict[str, Any]) -> None:
        """Merge-patch ``spec`` into the NodePool's spec (what ``kubectl patch`` does)."""
        self.kube.patch(NODEPOOL, name, {"spec": spec})

    def nodepool(self, name: str) -> dict[str, Any]:
        return self.kube.get(NODEPOOL, name)

    def apply_deployment(
        self,
        name: str,
        replicas: int,
        *,
        cpu: str = "1",
        annotations: dict[str, str] | None = None,
    ) -> None:
        """A Deployment of pause pods labelled ``app=<name>`` requesting ``cpu`` and 256Mi;
        ``annotations`` go on the pod template."""
        self.kube.create(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "namespace": APP_NS},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": name}},
                    "template": {
                        "metadata": {"labels": {"app": name}, "annotations": annotations or {}},
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

    def all_running_on_karpenter_nodes(self, app: str, replicas: int) -> bool:
        """Exactly ``replicas`` pods of ``app``, none terminating, each Running on a
        Karpenter Node that exists and is not being deleted."""
        pods = self.pods(app)
        nodes = {
            n["metadata"]["name"]
            for n in self.karpenter_nodes()
            if not n["metadata"].get("deletionTimestamp")
        }
        return len(pods) == replicas and all(
            not p["metadata"].get("deletionTimestamp")
            and (p.get("spec") or {}).get("nodeName") in nodes
            and (p.get("status") or {}).get("phase") == "Running"
            for p in pods
        )

    def pending_pods(self) -> list[str]:
        """Names of the application pods no node runs yet."""
        return [
            p["metadata"]["name"]
            for p in self.kube.list("pods", APP_NS).items
            if not (p.get("spec") or {}).get("nodeName")
        ]

    def events(self, reason: str, kind: str, name: str) -> list[dict[str, Any]]:
        """``events.k8s.io/v1`` Events with ``reason`` about the object ``kind``/``name``."""
        return [
            e
            for e in self.kube.list(("events.k8s.io/v1", "Event")).items
            if e.get("reason") == reason
            and (e.get("regarding") or {}).get("kind") == kind
            and (e.get("regarding") or {}).get("name") == name
        ]

    def lease_holder(self) -> str:
        try:
            lease = self.kube.get(LEASE, "karpenter-leader-election", NS)
        except ApiError:
            return ""
        return str((lease.get("spec") or {}).get("holderIdentity") or "")


class Serve:
    """One ``karpenter serve`` subprocess."""

    def __init__(
        self,
        cluster: Cluster,
        log_dir: Path,
        name: str,
        *extra: str,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """``extra``: more flags (a later ``--cloud-provider`` overrides kwok);
        ``env``: variables added to the inherited environment (a provider's settings)."""
        self.env = dict(env or {})
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

    def launch(self) -> Serve:
        """Start the process (again, after it exited) without waiting for it."""
        env = dict(os.environ)
        env.pop("KUBECONFIG", None)
        env.update(self.env)
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT, env=env)
        return self

    def start(self) -> Serve:
        self.launch()
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


@contextlib.contextmanager
def running_cluster(**control_plane: Any) -> Iterator[Cluster]:
    """A fresh control plane (``control_plane``: more :class:`controlplane.ControlPlane`
    arguments) with the CRDs and the fake kubelet; skips or fails the test as the
    ``cluster`` fixture does."""
    if controlplane.skip_requested():
        pytest.skip(f"{controlplane.SKIP_ENV} is set: real-control-plane tests skipped")
    try:
        binaries = controlplane.ensure_binaries(log=lambda m: print(m, file=sys.stderr))
        cp = controlplane.ControlPlane(
            binaries, controllers=CONTROLLERS, scheduler=True, **control_plane
        ).start()
    except controlplane.ControlPlaneError as e:
        controlplane.unavailable(e)
    try:
        c = Cluster(cp).start()
        try:
            yield c
        finally:
            c.stop()
    finally:
        cp.stop()


@pytest.fixture(name="cluster")
def cluster_fixture() -> Iterator[Cluster]:
    """A fresh control plane with the CRDs and the fake kubelet (see the module docstring)."""
    with running_cluster() as c:
        yield c


@pytest.fixture(name="serve")
def serve_fixture(cluster: Cluster, tmp_path: Path) -> Iterator[Callable[..., Serve]]:
    """``serve(name, *extra_args)`` starts a ``karpenter serve`` replica; all are killed at
    teardown, and their logs' tails and the cluster's pods and NodeClaims are printed (pytest
    shows them when the test failed)."""
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
