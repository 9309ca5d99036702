"""What the ``karpenter serve --cloud-provider X`` end-to-end harnesses share, whatever the
fake cloud: Azure (``azure_harness``) and Google Cloud (``gcp_harness``) build on it.

- :class:`ScrubbedServe`: serve_harness's :class:`Serve` whose subprocess environment holds
  none of the developer's own settings for the cloud (:attr:`ScrubbedServe.foreign_vars`),
  so the official SDKs in it must take the fake's endpoints and credentials.
- :func:`kubelet_node`: the Node a machine's kubelet registers, from its NodeClaim (labels,
  taints, capacity: what Karpenter puts in the machine's bootstrap) and what the cloud
  node manager reads from the machine (instance type, zone, region).
- :class:`NodeJoiner`: the kubelets of Karpenter's machines. A subclass says how to list
  the fake's machines, which have booted, the provider id of one and its Node.
- :class:`CloudWorld`: the cluster, the fake, the node joiner and the ``karpenter serve``
  processes of one test: the CRDs as users install them, ``serve()``, a ``wait()`` that
  gives up when serve exits, the NodePool and Deployment manifests the tests apply, and
  the teardown report. A subclass gives the provider's name, NodeClass kind, settings and
  inventory. :func:`running` is the body of a world's fixture.
- Test helpers: :func:`condition`, :func:`is_true`, :func:`node_gone`,
  :func:`claims_by_machine`, :func:`launched_nodeclaim`.

Waits poll with generous deadlines and assert on state, never on how long something took.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
from collections.abc import Callable, Hashable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import yaml
from click.testing import CliRunner
from serve_harness import APP_NS, WAIT, Cluster, Serve, wait_for

from karpenter_core.cli import main as cli_main
from karpenter_core.kube.client import AlreadyExists, ApiError, NotFound, create_with_status
from karpenter_core.plugins import cloud_providers, get_plugin_manager

log = logging.getLogger("cloud_harness")

NODECLAIM = ("karpenter.sh/v1", "NodeClaim")
NODEPOOL_LABEL = "karpenter.sh/nodepool"
UNREGISTERED_TAINT = "karpenter.sh/unregistered"


def can_launch(provider: str) -> bool:
    """Whether the installed plugin of ``provider`` says it can launch (its
    CloudProviderSpec)."""
    spec = cloud_providers(get_plugin_manager()).get(provider)
    return bool(spec is not None and spec.can_launch)


# --------------------------------------------------------------------------- test helpers


def condition(obj: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return None


def is_true(obj: Mapping[str, Any], kind: str) -> bool:
    c = condition(obj, kind)
    return c is not None and c.get("status") == "True"


def node_gone(cluster: Cluster, node: str) -> bool:
    try:
        cluster.kube.get("nodes", node)
    except NotFound:
        return True
    return False


def claims_by_machine(
    cluster: Cluster, key: Callable[[str], str] = lambda pid: pid.rsplit("/", 1)[-1]
) -> dict[str, dict[str, Any]]:
    """Launched NodeClaims by ``key`` of their provider id (by default its last segment,
    the machine's name)."""
    return {
        key(str(c["status"]["providerID"])): c
        for c in cluster.nodeclaims()
        if (c.get("status") or {}).get("providerID")
    }


def launches_settled(
    cluster: Cluster,
    claims: Mapping[str, Mapping[str, Any]],
    machines: Mapping[str, Mapping[str, Any]],
    booted: Callable[[Mapping[str, Any]], bool],
) -> bool:
    """Every NodeClaim launched, none being deleted, each on a machine that has
    ``booted``, and no other Karpenter machine. ``claims``: launched NodeClaims by machine
    name (:func:`claims_by_machine`); ``machines``: Karpenter's machines by name."""
    return (
        bool(claims)
        and all(
            not c["metadata"].get("deletionTimestamp")
            and name in machines
            and booted(machines[name])
            for name, c in claims.items()
        )
        and set(machines) == set(claims)
        and all((c.get("status") or {}).get("providerID") for c in cluster.nodeclaims())
    )


def launched_nodeclaim(
    name: str,
    nodeclass_ref: Mapping[str, str],
    instance_type: str,
    status: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """A NodeClaim as Karpenter writes it for pool ``default`` with a ``team=payments``
    label, a taint and a startup taint; ``status`` (provider id, capacity, allocatable) is
    the provider's create's, absent until it launched."""
    claim: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": name, "labels": {NODEPOOL_LABEL: "default", "team": "payments"}},
        "spec": {
            "nodeClassRef": dict(nodeclass_ref),
            "requirements": [
                {
                    "key": "node.kubernetes.io/instance-type",
                    "operator": "In",
                    "values": [instance_type],
                }
            ],
            "taints": [{"key": "dedicated", "value": "payments", "effect": "NoSchedule"}],
            "startupTaints": [{"key": "cni.example/not-ready", "effect": "NoSchedule"}],
        },
    }
    if status is not None:
        claim["status"] = dict(status)
    return claim


# --------------------------------------------------------------------------- node joiner


def kubelet_node(
    name: str,
    provider_id: str,
    nodeclaim: Mapping[str, Any],
    *,
    instance_type: str,
    zone: str,
    region: str,
    pool: str | None,
    machine_id: str,
    kubelet_version: str,
    os_image: str = "",
) -> dict[str, Any]:
    """The Node a machine's kubelet registers.

    Labels: the NodeClaim's (``--node-labels`` in the bootstrap), the kubelet's own (arch,
    os, hostname) and the cloud node manager's (instance type, zone, region, and the
    NodePool from the machine's tag or label when it has one). Taints:
    ``karpenter.sh/unregistered`` and the NodeClaim's taints and startup taints
    (``--register-with-taints``). Capacity and allocatable: the NodeClaim's status, what
    the instance type it was launched as reports.
    """
    meta = nodeclaim.get("metadata") or {}
    spec = nodeclaim.get("spec") or {}
    status = nodeclaim.get("status") or {}
    labels = dict(meta.get("labels") or {})
    arch = labels.get("kubernetes.io/arch", "amd64")
    labels.update(
        {
            "kubernetes.io/arch": arch,
            "kubernetes.io/os": "linux",
            "kubernetes.io/hostname": name,
            "node.kubernetes.io/instance-type": instance_type,
            "topology.kubernetes.io/zone": zone,
            "topology.kubernetes.io/region": region,
        }
    )
    if pool:
        labels[NODEPOOL_LABEL] = pool
    taints = [{"key": UNREGISTERED_TAINT, "effect": "NoExecute"}]
    taints += [dict(t) for t in spec.get("taints") or []]
    taints += [dict(t) for t in spec.get("startupTaints") or []]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"providerID": provider_id, "taints": taints},
        "status": {
            "capacity": dict(status.get("capacity") or {}),
            "allocatable": dict(status.get("allocatable") or status.get("capacity") or {}),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                }
            ],
            "addresses": [{"type": "Hostname", "address": name}],
            "nodeInfo": {
                "architecture": arch,
                "operatingSystem": "linux",
                "kubeletVersion": kubelet_version,
                "machineID": machine_id,
                "systemUUID": machine_id,
                "bootID": machine_id,
                "kernelVersion": "",
                "osImage": os_image,
                "containerRuntimeVersion": "",
                "kubeProxyVersion": "",
            },
        },
    }


class NodeJoiner:
    """Plays the kubelets of Karpenter's machines in a fake cloud.

    Each machine joins at most once: a kubelet registers when its machine boots, and a
    Node Karpenter deleted while deleting the machine must not come back. A machine joins
    once it has booted (:meth:`booted`: one whose create failed never boots) and its
    NodeClaim names it; until then it waits for the next poll. A joined machine that is
    gone from the cloud takes its Node with it (the cloud node lifecycle controller's
    part).

    A subclass gives :meth:`machines` (Karpenter's machines in the fake, copies, by a key),
    :meth:`booted`, :meth:`provider_id` and :meth:`node_for`; :meth:`claim_key` normalises
    provider ids when the cloud's comparison is not exact.
    """

    thread_name: ClassVar[str] = "node-joiner"

    def __init__(self, kube: Any, interval: float = 0.25) -> None:
        self.kube = kube
        self.interval = interval
        self.joined: dict[Hashable, str] = {}  # machine key -> Node name
        self.removed: set[Hashable] = set()  # machine keys whose Node went with the machine
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def machines(self) -> dict[Hashable, dict[str, Any]]:
        raise NotImplementedError

    def booted(self, machine: Mapping[str, Any]) -> bool:
        raise NotImplementedError

    def provider_id(self, machine: Mapping[str, Any]) -> str:
        raise NotImplementedError

    def node_for(self, machine: Mapping[str, Any], nodeclaim: Mapping[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def claim_key(self, provider_id: str) -> str:
        return provider_id

    def step(self) -> list[str]:
        """One poll: register the Nodes of booted machines whose NodeClaim names them,
        delete the Nodes of joined machines that are gone; the names of the Nodes created."""
        machines = self.machines()
        claims = {
            self.claim_key(str((c.get("status") or {}).get("providerID"))): c
            for c in self.kube.list(NODECLAIM).items
            if (c.get("status") or {}).get("providerID")
        }
        created = []
        for key, machine in sorted(machines.items()):
            if key in self.joined or not self.booted(machine):
                continue
            claim = claims.get(self.claim_key(self.provider_id(machine)))
            if claim is None or claim["metadata"].get("deletionTimestamp"):
                continue
            node = self.node_for(machine, claim)
            with contextlib.suppress(AlreadyExists):
                create_with_status(self.kube, node)
                created.append(node["metadata"]["name"])
            self.joined[key] = node["metadata"]["name"]
        for key, node_name in self.joined.items():
            if key in machines or key in self.removed:
                continue
            with contextlib.suppress(NotFound):
                self.kube.delete("nodes", node_name)
            self.removed.add(key)
        return created

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.step()
            except Exception as e:  # keep joining: one failed poll is retried on the next
                self.errors.append(f"{type(e).__name__}: {e}")
                log.warning("node joiner: %s", e)

    def start(self) -> NodeJoiner:
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)


# --------------------------------------------------------------------------- serve


class ScrubbedServe(Serve):
    """A ``karpenter serve`` subprocess whose environment holds none of
    :attr:`foreign_vars` (the developer's own settings for the cloud)."""

    foreign_vars: ClassVar[tuple[str, ...]] = ()

    def launch(self) -> ScrubbedServe:
        saved = {k: os.environ.pop(k) for k in self.foreign_vars if k in os.environ}
        try:
            super().launch()
        finally:
            os.environ.update(saved)
        return self


# --------------------------------------------------------------------------- the world


class CloudWorld:
    """The cluster, the fake cloud, the node joiner and the ``karpenter serve`` processes
    of one test. A subclass sets the class attributes, :meth:`env` and :meth:`report_cloud`
    and creates :attr:`joiner`."""

    provider: ClassVar[str] = ""
    """``--cloud-provider``."""
    nodeclass_crd: ClassVar[str] = ""
    """The NodeClass CRD's name, which ``karpenter crds`` must print."""
    nodeclass_api: ClassVar[tuple[str, str]] = ("", "")
    """(apiVersion, kind) of the NodeClass."""
    serve_class: ClassVar[type[Serve]] = ScrubbedServe
    allowed_types: ClassVar[tuple[str, ...]] = ()
    """The default instance types of :meth:`apply_nodepool`."""
    log_note: ClassVar[str] = ""
    """What the report says of the serve logs' tails it prints (after "last lines")."""

    joiner: NodeJoiner

    def __init__(self, cluster: Cluster, workdir: Path) -> None:
        self.cluster = cluster
        self.kube = cluster.kube
        self.workdir = workdir
        self.started: list[Serve] = []

    def install_crds(self) -> None:
        """The CRDs as users install them: ``karpenter crds --cloud-provider <provider>``."""
        result = CliRunner().invoke(cli_main, ["crds", "--cloud-provider", self.provider])
        assert result.exit_code == 0, result.output
        crds = [d for d in yaml.safe_load_all(result.stdout) if d]
        assert self.nodeclass_crd in {c["metadata"]["name"] for c in crds}
        for crd in crds:
            with contextlib.suppress(AlreadyExists):
                self.kube.create(crd)
        for crd in crds:
            name = crd["metadata"]["name"]
            wait_for(functools.partial(self.cluster._established, name), f"the CRD {name}")

    def env(self) -> dict[str, str]:
        """The settings upstream requires, and the fake's endpoints."""
        raise NotImplementedError

    def serve(self, name: str = "a", *extra: str, env: Mapping[str, str] | None = None) -> Serve:
        """``karpenter serve --cloud-provider <provider>`` against the fake; ``env`` adds
        settings."""
        s = self.serve_class(
            self.cluster,
            self.workdir,
            name,
            "--cloud-provider",
            self.provider,
            *extra,
            env={**self.env(), **(env or {})},
        ).start()
        self.started.append(s)
        return s

    def tail(self, s: Serve, n: int) -> str:
        """The last ``n`` lines of a serve log, as failures show them."""
        return s.log_tail(n)

    def wait(self, predicate: Callable[[], Any], what: str, deadline: float = WAIT) -> Any:
        """:func:`wait_for` that gives up at once, with the log, when a ``karpenter serve``
        this test started has exited (nothing it waits for can happen then)."""

        def check() -> Any:
            for s in self.started:
                if s.exited():
                    raise AssertionError(
                        f"karpenter serve exited while waiting for {what}; log:\n{self.tail(s, 30)}"
                    )
            return predicate()

        return wait_for(check, what, deadline)

    # -- objects

    def apply_nodepool(
        self,
        name: str,
        nodeclass: str,
        *,
        types: tuple[str, ...] | None = None,
        zones: tuple[str, ...] | None = None,
        consolidation: str = "WhenEmpty",
    ) -> None:
        """An on-demand NodePool of ``types`` (:attr:`allowed_types` by default; in
        ``zones`` when given). It consolidates at once under ``consolidation`` (by default
        only empty nodes, so a test's snapshot of nodes and machines is not raced by a
        replacement), any number of nodes at a time."""
        requirements: list[dict[str, Any]] = [
            {
                "key": "node.kubernetes.io/instance-type",
                "operator": "In",
                "values": list(self.allowed_types if types is None else types),
            },
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        ]
        if zones is not None:
            requirements.append(
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": list(zones)}
            )
        api_version, kind = self.nodeclass_api
        self.kube.create(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "metadata": {"name": name},
                "spec": {
                    "template": {
                        "spec": {
                            "nodeClassRef": {
                                "group": api_version.split("/", 1)[0],
                                "kind": kind,
                                "name": nodeclass,
                            },
                            "requirements": requirements,
                        }
                    },
                    "disruption": {
                        "consolidationPolicy": consolidation,
                        "consolidateAfter": "0s",
                        "budgets": [{"nodes": "100%"}],
                    },
                    "limits": {"cpu": "1000"},
                },
            }
        )

    def apply_deployment(self, name: str, replicas: int, *, cpu: str = "500m") -> None:
        """Pause pods labelled ``app=<name>`` requesting ``cpu`` and 256Mi."""
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

    def nodeclass(self, name: str) -> dict[str, Any]:
        return self.kube.get(self.nodeclass_api, name)

    # -- teardown

    def report_cloud(self) -> None:
        """The fake's inventory, printed at teardown."""

    def report(self) -> None:
        """Printed at teardown (pytest shows it when the test failed)."""
        for s in self.started:
            print(f"--- {s.log.name} (last lines{self.log_note})\n{self.tail(s, 80)}")
        if self.joiner.errors:
            print("--- node joiner errors:", self.joiner.errors[-10:])
        with contextlib.suppress(ApiError, OSError):
            print(
                "--- nodeclaims:",
                [
                    (c["metadata"]["name"], (c.get("status") or {}).get("providerID"))
                    for c in self.cluster.nodeclaims()
                ],
            )
        kind = self.nodeclass_api[1]
        with contextlib.suppress(ApiError, OSError):
            for nc in self.kube.list(self.nodeclass_api).items:
                print(f"--- {kind} {nc['metadata']['name']} status:", nc.get("status"))
        self.report_cloud()


World = TypeVar("World", bound=CloudWorld)


def running(world: World) -> Iterator[World]:
    """A world's fixture body: the CRDs installed and the node joiner running; at teardown
    the joiner stopped, every serve still running killed, and the report printed."""
    world.install_crds()
    world.joiner.start()
    try:
        yield world
    finally:
        world.joiner.stop()
        for s in world.started:
            if not s.exited():
                s.kill9()
        world.report()
