"""ClusterSnapshot: everything the scheduler reads about a cluster, at one instant.

The live controller builds one from its informer caches, ``karpenter schedule`` from files,
tests by hand. It is immutable apart from lazily built indexes; :meth:`state_nodes` hands out
fresh, independently mutable :class:`StateNode` copies, merged exactly as upstream cluster
state merges them (``pkg/controllers/state/cluster.go``):

* a NodeClaim becomes capacity only once launched (``status.providerID`` set);
* a Node joins the NodeClaim with the same provider id; an unmanaged Node without a provider
  id is keyed by its name; a managed one (``karpenter.sh/nodepool`` label) without a provider
  id, or not yet initialised and without an instance-type label, is skipped until it is;
* non-terminal pods bound to a known node count against it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast

import attrs
from attrs import field, frozen

from karpenter_core.apis.labels import (
    LABEL_INSTANCE_TYPE,
    NODE_INITIALIZED_LABEL_KEY,
    NODEPOOL_LABEL_KEY,
)
from karpenter_core.apis.objects import (
    Controller,
    CSINode,
    DaemonSet,
    Namespace,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    Service,
    StorageClass,
)
from karpenter_core.apis.v1 import NodeClaim
from karpenter_core.scheduling.volumes import IN_TREE_TO_CSI
from karpenter_core.state.statenode import NODES_RESOURCE, NodeClaimView, StateNode

__all__ = ["IN_TREE_TO_CSI", "ClusterSnapshot"]


T = TypeVar("T")
K = TypeVar("K", Pod, PersistentVolumeClaim)


def _tuple(items: Iterable[Any]) -> tuple[Any, ...]:
    # Any, not a TypeVar: attrs' mypy plugin types __init__ from the converter's argument
    return tuple(items)


def _by_key(items: Iterable[K]) -> dict[str, K]:
    return {i.key: i for i in items}


@frozen(eq=False)
class PodFacts:
    """What topology reads from every pod of a snapshot, kept up to date by cluster state
    as pods change, so a solve need not walk 150,000 pods for it: the namespaces pods are
    in, in the order their keys first reach each (keys sort as ``namespace/name``), the
    pods holding a required pod anti-affinity (bound or not), in key order, and the pods
    not bound to a node. Valid for ``pods`` only (the very tuple): a snapshot whose pods
    were replaced walks them."""

    pods: tuple[Pod, ...]
    namespaces: tuple[str, ...]
    anti_affinity: tuple[Pod, ...]
    unbound: tuple[Pod, ...] = ()
    """The pods with no node, in key order (a disruption pass's pending pods are among
    them)."""


def pod_facts_for(snapshot: Any, pods: Sequence[Pod]) -> PodFacts | None:
    """The facts ``snapshot`` carries when they describe these very ``pods`` (the tuple
    cluster state built them for), else None: the caller then reads the pods."""
    facts = getattr(snapshot, "pod_facts", None)
    return facts if facts is not None and facts.pods is pods else None


def namespace_order(namespace: str) -> str:
    """The sort key putting namespaces in the order their pods' keys first reach them."""
    return namespace + "/"


@frozen
class ClusterSnapshot:
    """Cluster objects (parsed views; NodeClaims are the typed API model)."""

    nodes: tuple[Node, ...] = field(default=(), converter=_tuple)
    nodeclaims: tuple[NodeClaim, ...] = field(default=(), converter=_tuple)
    pods: tuple[Pod, ...] = field(default=(), converter=_tuple)
    daemonsets: tuple[DaemonSet, ...] = field(default=(), converter=_tuple)
    pdbs: tuple[PodDisruptionBudget, ...] = field(default=(), converter=_tuple)
    pvcs: tuple[PersistentVolumeClaim, ...] = field(default=(), converter=_tuple)
    pvs: tuple[PersistentVolume, ...] = field(default=(), converter=_tuple)
    storage_classes: tuple[StorageClass, ...] = field(default=(), converter=_tuple)
    csinodes: tuple[CSINode, ...] = field(default=(), converter=_tuple)
    namespaces: tuple[Namespace, ...] = field(default=(), converter=_tuple)
    """Namespaces with their labels, for pod (anti-)affinity ``namespaceSelector``;
    a namespace not listed is known by name only."""
    services: tuple[Service, ...] = field(default=(), converter=_tuple)
    controllers: tuple[Controller, ...] = field(default=(), converter=_tuple)
    """ReplicaSets, StatefulSets and ReplicationControllers: with ``services``, where
    default topology spreads (``--scheduler-config``) deduce each pod's selector."""
    prebuilt_state_nodes: tuple[StateNode, ...] | None = field(default=None, kw_only=True)
    """Existing capacity already merged by live cluster state (with its deletion marks and
    nominations); when given, it is used instead of merging ``nodes`` and ``nodeclaims``."""
    pod_facts: PodFacts | None = field(default=None, kw_only=True, eq=False)
    """What cluster state kept of ``pods`` (namespaces, anti-affinity holders, unbound
    pods); None for a snapshot built by hand."""
    _cache: dict[str, object] = field(factory=dict, init=False, repr=False, eq=False)

    def _index(self, name: str, build: Callable[[], T]) -> T:
        """``build()``, once per snapshot (lazily built indexes)."""
        v = self._cache.get(name)
        if v is None:
            v = self._cache[name] = build()
        return cast(T, v)

    # -- lookups --

    def pod(self, namespace: str, name: str) -> Pod | None:
        idx: dict[str, Pod] = self._index("pods", lambda: _by_key(self.pods))
        return idx.get(f"{namespace}/{name}")

    def pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        idx: dict[str, PersistentVolumeClaim] = self._index("pvcs", lambda: _by_key(self.pvcs))
        return idx.get(f"{namespace}/{name}")

    def pv(self, name: str) -> PersistentVolume | None:
        idx: dict[str, PersistentVolume] = self._index("pvs", lambda: {p.name: p for p in self.pvs})
        return idx.get(name)

    def storage_class(self, name: str) -> StorageClass | None:
        idx: dict[str, StorageClass] = self._index(
            "scs", lambda: {s.name: s for s in self.storage_classes}
        )
        return idx.get(name)

    def default_storage_class(self) -> StorageClass | None:
        """The class a PVC without ``storageClassName`` gets (admission picks the default;
        with several, the newest wins upstream — we take the last listed)."""
        defaults = [s for s in self.storage_classes if s.is_default]
        return defaults[-1] if defaults else None

    def csinode(self, name: str) -> CSINode | None:
        idx: dict[str, CSINode] = self._index(
            "csinodes", lambda: {c.name: c for c in self.csinodes}
        )
        return idx.get(name)

    def node(self, name: str) -> Node | None:
        idx: dict[str, Node] = self._index("nodes", lambda: {n.name: n for n in self.nodes})
        return idx.get(name)

    # -- pods --

    def pods_by_node(self) -> Mapping[str, tuple[Pod, ...]]:
        """Non-terminal pods bound to each node name."""

        def build() -> dict[str, tuple[Pod, ...]]:
            out: dict[str, list[Pod]] = {}
            for p in self.pods:
                if p.node_name and not p.is_terminal():
                    out.setdefault(p.node_name, []).append(p)
            return {k: tuple(v) for k, v in out.items()}

        result: Mapping[str, tuple[Pod, ...]] = self._index("pods_by_node", build)
        return result

    def pending_pods(self) -> list[Pod]:
        """Pods waiting for capacity: unbound, active, not gated, not daemon/mirror pods."""
        return [p for p in self.pods if p.is_pending()]

    def daemonset_pods(self) -> list[Pod]:
        """One pod per DaemonSet, as the scheduler uses them for daemon overhead.

        The newest existing pod the DaemonSet controls wins (it reflects admission-time
        mutations such as LimitRange defaults); otherwise the template. Either way the
        required node affinity is the template's, because the DaemonSet controller rewrites
        each pod's affinity to pin it to its node."""
        if not self.daemonsets:
            return []  # nothing to look for among the pods (150,000 of them at scale)
        by_owner: dict[tuple[str, str], list[Pod]] = {}
        for p in self.pods:
            for o in p.owner_references:
                if o.controller and o.kind == "DaemonSet":
                    by_owner.setdefault((p.namespace, o.name), []).append(p)
        out: list[Pod] = []
        for ds in self.daemonsets:
            owned = by_owner.get((ds.namespace, ds.name), [])
            if not owned:
                out.append(ds.template_pod)
                continue
            newest = max(owned, key=lambda p: p.creation_timestamp)
            t_aff = ds.template_pod.affinity or {}
            t_req = (t_aff.get("nodeAffinity") or {}).get(
                "requiredDuringSchedulingIgnoredDuringExecution"
            )
            if t_req is not None:
                aff = dict(newest.affinity or {})
                na = dict(aff.get("nodeAffinity") or {})
                na["requiredDuringSchedulingIgnoredDuringExecution"] = t_req
                aff["nodeAffinity"] = na
                newest = attrs.evolve(newest, affinity=aff)
            out.append(newest)
        return out

    # -- volumes --

    def resolve_driver(self, pvc: PersistentVolumeClaim) -> str:
        """CSI driver of a PVC for volume limits: the bound PV's CSI driver (or EBS in-tree),
        else the StorageClass provisioner (in-tree names translated); "" when unknown."""
        if pvc.volume_name:
            pv = self.pv(pvc.volume_name)
            if pv is None:
                return ""
            if pv.csi_driver:
                return pv.csi_driver
            if pv.aws_elastic_block_store:
                return IN_TREE_TO_CSI["kubernetes.io/aws-ebs"]
            return ""
        if not pvc.storage_class:
            return ""
        sc = self.storage_class(pvc.storage_class)
        if sc is None:
            return ""
        return IN_TREE_TO_CSI.get(sc.provisioner, sc.provisioner)

    def pod_volumes(self, pod: Pod) -> dict[str, frozenset[str]]:
        """The pod's PVCs per CSI driver (``{driver: {"ns/pvc", ...}}``); PVCs that are
        missing or whose driver is unknown are ignored, as upstream does for limits."""
        if not pod.pvc_names:
            return {}  # most pods: asked for each pod of every solve
        out: dict[str, set[str]] = {}
        for claim in pod.pvc_names:
            pvc = self.pvc(pod.namespace, claim)
            if pvc is None:
                continue
            driver = self.resolve_driver(pvc)
            if driver:
                out.setdefault(driver, set()).add(pvc.key)
        return {k: frozenset(v) for k, v in out.items()}

    # -- existing capacity --

    def _build_state_nodes(self) -> list[StateNode]:
        if self.prebuilt_state_nodes is not None:
            return list(self.prebuilt_state_nodes)
        claims: dict[str, NodeClaimView] = {}  # by provider id
        nodes: dict[str, Node] = {}
        order: dict[str, None] = {}  # provider ids, first seen first
        for nc in self.nodeclaims:
            view = NodeClaimView.of(nc)  # also for unlaunched ones: an unreadable one raises
            if not view.provider_id:
                continue  # not launched yet: not capacity
            order[view.provider_id] = None
            claims[view.provider_id] = view
        for node in self.nodes:
            managed = bool(node.labels.get(NODEPOOL_LABEL_KEY))
            initialized = bool(node.labels.get(NODE_INITIALIZED_LABEL_KEY))
            pid = node.provider_id
            if not pid:
                if managed:
                    continue
                pid = node.name
            if managed and not node.labels.get(LABEL_INSTANCE_TYPE) and not initialized:
                continue
            order[pid] = None
            nodes[pid] = node
        pods_by_node = self.pods_by_node()
        out = []
        for pid in order:
            merged = nodes.get(pid)
            pods: Sequence[Pod] = ()
            limits: Mapping[str, int] = {}
            if merged is not None:
                pods = pods_by_node.get(merged.name, ())
                csinode = self.csinode(merged.name)
                if csinode is not None:
                    limits = csinode.driver_limits
            out.append(
                StateNode(
                    merged,
                    claims.get(pid),
                    pods=pods,
                    volume_limits=limits,
                    pod_volumes={p.key: self.pod_volumes(p) for p in pods if p.pvc_names},
                )
            )
        return out

    def state_nodes(self) -> list[StateNode]:
        """Fresh copies of every existing node (including deleting ones; filter with
        ``marked_for_deletion``), in a stable order."""
        built: list[StateNode] = self._index("state_nodes", self._build_state_nodes)
        return [n.copy() for n in built]

    def deleting_nodes(self) -> list[Node]:
        """The Nodes of the state nodes marked for deletion, without copying any state."""
        return [
            n.node
            for n in self._index("state_nodes", self._build_state_nodes)
            if n.marked_for_deletion and n.node is not None
        ]

    def active_state_nodes(self) -> list[StateNode]:
        return [n for n in self.state_nodes() if not n.marked_for_deletion]

    def nodepool_resources(self, nodepool: str) -> dict[str, int]:
        """Capacity (incl. ``nodes``) of a NodePool's non-deleting nodes, for limits."""
        total: dict[str, int] = {}
        for n in self._index("state_nodes", self._build_state_nodes):
            if n.nodepool_name() != nodepool or n.marked_for_deletion:
                continue
            for k, v in n.capacity().items():
                total[k] = total.get(k, 0) + v
        total.setdefault(NODES_RESOURCE, 0)
        return total
