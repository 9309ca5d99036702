"""Small shared pieces of the NodeClaim controllers: which NodeClaims are ours, which Nodes
belong to a NodeClaim, and how watch events on Nodes and Pods map to NodeClaims.

Nodes are matched to NodeClaims by ``spec.providerID`` (a real API server has no field
selector for it, so Nodes are listed and filtered; :class:`NodeIndex` keeps that cheap for
the watch mappers).
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from karpenter_core.apis import labels as wk
from karpenter_core.apis.accessors import meta_of, name_of
from karpenter_core.apis.conditions import condition_of
from karpenter_core.apis.durations import parse_go_duration
from karpenter_core.apis.quantity import QuantityError, parse_quantity
from karpenter_core.cloudprovider.protocol import CloudProvider
from karpenter_core.kube.client import KubeClient, NotFound
from karpenter_core.runtime.reconciler import ObjectKey

__all__ = [
    "DuplicateNodeError",
    "NodeIndex",
    "NodeNotFoundError",
    "all_nodes_for_nodeclaim",
    "deletion_timestamp",
    "is_managed",
    "managed_group_kinds",
    "node_for_nodeclaim",
    "node_ready_status",
    "provider_id",
    "termination_mode",
]

NODECLAIMS = "nodeclaims"
NODES = "nodes"
PODS = "pods"


class NodeNotFoundError(LookupError):
    """No Node carries the NodeClaim's provider id (yet)."""

    def __init__(self, provider_id: str) -> None:
        super().__init__(f"no nodes found for provider id '{provider_id}'")
        self.provider_id = provider_id


class DuplicateNodeError(LookupError):
    """More than one Node carries the NodeClaim's provider id (an invariant violation)."""

    def __init__(self, provider_id: str) -> None:
        super().__init__(f"multiple found for provider id '{provider_id}'")
        self.provider_id = provider_id


def deletion_timestamp(obj: Mapping[str, Any]) -> str:
    return str(meta_of(obj).get("deletionTimestamp") or "")


def provider_id(obj: Mapping[str, Any]) -> str:
    """``status.providerID`` of a NodeClaim, or ``spec.providerID`` of a Node."""
    if obj.get("kind") == "Node":
        spec = obj.get("spec")
        return str(spec.get("providerID") or "") if isinstance(spec, Mapping) else ""
    status = obj.get("status")
    return str(status.get("providerID") or "") if isinstance(status, Mapping) else ""


def milli_or_zero(value: Any) -> int:
    """A resource quantity in milli-units; a malformed one (a Node or NodeClaim status the
    controllers do not own) counts as zero instead of failing the reconcile."""
    try:
        return parse_quantity(value)
    except (QuantityError, ValueError, TypeError):
        return 0


def managed_group_kinds(cloud_provider: CloudProvider) -> frozenset[tuple[str, str]]:
    return frozenset((k.group, k.kind) for k in cloud_provider.supported_node_classes())


def is_managed(nodeclaim: Mapping[str, Any], cloud_provider: CloudProvider) -> bool:
    """Whether the NodeClaim's nodeClassRef names a NodeClass kind this provider manages."""
    spec = nodeclaim.get("spec")
    ref = spec.get("nodeClassRef") if isinstance(spec, Mapping) else None
    if not isinstance(ref, Mapping):
        return False
    return (str(ref.get("group") or ""), str(ref.get("kind") or "")) in managed_group_kinds(
        cloud_provider
    )


def termination_mode(nodeclaim: Mapping[str, Any]) -> str:
    """The ``termination_mode`` metric label: graceful without a terminationGracePeriod,
    forceful when it is zero or less, eventual otherwise."""
    spec = nodeclaim.get("spec")
    tgp = spec.get("terminationGracePeriod") if isinstance(spec, Mapping) else None
    if tgp is None or tgp == "":
        return "graceful"
    try:
        nanos = parse_go_duration(str(tgp))
    except ValueError:
        return "graceful"
    return "forceful" if nanos <= 0 else "eventual"


def node_ready_status(node: Mapping[str, Any]) -> str:
    """The status of the Node's ``Ready`` condition, ``Unknown`` when absent."""
    return str((condition_of(node, "Ready") or {}).get("status") or "Unknown")


def all_nodes_for_nodeclaim(
    kube: KubeClient, nodeclaim: Mapping[str, Any], index: NodeIndex | None = None
) -> list[dict[str, Any]]:
    """Every Node whose providerID is the NodeClaim's (none when it has no providerID yet).

    With an ``index`` (kept by a Node watch) only the indexed Nodes are read, fresh from
    the server; without one every Node is listed.
    """
    pid = provider_id(nodeclaim)
    if not pid:
        return []
    if index is None:
        return [n for n in kube.list(NODES) if provider_id(n) == pid]
    out = []
    for name in index.node_names_for(pid):
        try:
            node = kube.get(NODES, name)
        except NotFound:
            continue
        if provider_id(node) == pid:
            out.append(node)
    return out


def node_for_nodeclaim(
    kube: KubeClient, nodeclaim: Mapping[str, Any], index: NodeIndex | None = None
) -> dict[str, Any]:
    """The one Node of the NodeClaim; raises NodeNotFoundError / DuplicateNodeError."""
    nodes = all_nodes_for_nodeclaim(kube, nodeclaim, index)
    if len(nodes) > 1:
        raise DuplicateNodeError(provider_id(nodeclaim))
    if not nodes:
        raise NodeNotFoundError(provider_id(nodeclaim))
    return nodes[0]


class NodeIndex:
    """providerID -> NodeClaim keys and providerID -> Node names, fed by watch mappers.

    Node and Pod events must be mapped to NodeClaims, and NodeClaims to their Nodes,
    without listing every object per event: the mappers of the controller's NodeClaim and
    Node watches keep this current (watch events are mapped before the keys they produce
    are reconciled, and a change the index has not seen yet arrives as an event of its own).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_pid: dict[str, set[ObjectKey]] = {}
        self._pid_of: dict[ObjectKey, str] = {}
        self._nodes_by_pid: dict[str, set[str]] = {}
        self._pid_of_node: dict[str, str] = {}

    @staticmethod
    def _move(forward: dict[str, set[Any]], backward: dict[Any, str], item: Any, pid: str) -> None:
        old = backward.pop(item, "")
        if old:
            items = forward.get(old)
            if items is not None:
                items.discard(item)
                if not items:
                    del forward[old]
        if pid:
            backward[item] = pid
            forward.setdefault(pid, set()).add(item)

    def observe(self, event_type: str, nodeclaim: Mapping[str, Any]) -> bool:
        """Index the NodeClaim; whether this taught the index its (non-empty) providerID
        and a Node with that providerID is already known: the NodeClaim's Node events
        came first, so they woke nothing, and it must be woken now."""
        key = ObjectKey("", name_of(nodeclaim))
        pid = "" if event_type == "DELETED" else provider_id(nodeclaim)
        with self._lock:
            learned = bool(pid) and self._pid_of.get(key, "") != pid
            self._move(self._by_pid, self._pid_of, key, pid)
            return learned and bool(self._nodes_by_pid.get(pid))

    def observe_node(self, event_type: str, node: Mapping[str, Any]) -> None:
        name = name_of(node)
        pid = "" if event_type == "DELETED" else provider_id(node)
        with self._lock:
            self._move(self._nodes_by_pid, self._pid_of_node, name, pid)

    def keys_for(self, pid: str) -> list[ObjectKey]:
        if not pid:
            return []
        with self._lock:
            return sorted(self._by_pid.get(pid, ()))

    def node_names_for(self, pid: str) -> list[str]:
        if not pid:
            return []
        with self._lock:
            return sorted(self._nodes_by_pid.get(pid, ()))

    def nodeclaim_mapper(self, event_type: str, obj: dict[str, Any]) -> Iterable[Hashable]:
        """Mapper for the NodeClaim watch: index it, and enqueue it."""
        self.observe(event_type, obj)
        return (ObjectKey("", name_of(obj)),)

    def node_mapper(self, event_type: str, obj: dict[str, Any]) -> Iterable[Hashable]:
        """Mapper for a Node watch: index it; enqueue the NodeClaims with its providerID."""
        self.observe_node(event_type, obj)
        return self.keys_for(provider_id(obj))


def nodeclaim_of_node(
    kube: KubeClient, cloud_provider: CloudProvider, index: NodeIndex, node_name: str
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The Node ``node_name`` and its NodeClaim, fresh from the server, or None.

    Node-keyed controllers (``node.hydration``, ``nodeclaim.podevents``) act only on an
    unambiguous pair: a Node that is gone, no or several NodeClaims with its providerID,
    a NodeClaim whose providerID has moved on, or one another provider manages, all mean
    there is nothing to do.
    """
    try:
        node = kube.get(NODES, node_name)
    except NotFound:
        return None
    keys = index.keys_for(provider_id(node))
    if len(keys) != 1:
        return None
    nodeclaim = managed_nodeclaim(kube, cloud_provider, keys[0].name)
    if nodeclaim is None or provider_id(nodeclaim) != provider_id(node):
        return None
    return node, nodeclaim


def managed_nodeclaim(
    kube: KubeClient, cloud_provider: CloudProvider, name: str
) -> dict[str, Any] | None:
    """The NodeClaim ``name`` fresh from the server when it exists and this provider manages
    it; None otherwise (the NodeClaim-keyed controllers then have nothing to do)."""
    try:
        nodeclaim = kube.get(NODECLAIMS, name)
    except NotFound:
        return None
    return nodeclaim if is_managed(nodeclaim, cloud_provider) else None


TERMINATION_FINALIZER = wk.TERMINATION_FINALIZER


def merge_patch(old: Any, new: Any) -> Any:
    """The RFC 7386 merge patch turning ``old`` into ``new`` (lists are replaced whole).

    Returns ``None`` for "no change" at the top level is not possible (``None`` deletes), so
    callers compare ``old == new`` first; for two dicts the result is a dict, possibly empty.
    """
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return new
    patch: dict[str, Any] = {}
    for key in old:
        if key not in new:
            patch[key] = None
    for key, value in new.items():
        if key not in old:
            patch[key] = value
        elif old[key] != value:
            if isinstance(old[key], Mapping) and isinstance(value, Mapping):
                patch[key] = merge_patch(old[key], value)
            else:
                patch[key] = value
    return patch


def status_patch(stored: Mapping[str, Any], updated: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch writing ``updated``'s status over ``stored``'s, conditional on the
    resourceVersion read (optimistic locking, upstream's ``MergeFromWithOptimisticLock``):
    condition lists are replaced whole, so a concurrent writer must make this write fail
    (Conflict) rather than be overwritten."""
    return {
        "metadata": {"resourceVersion": meta_of(stored).get("resourceVersion")},
        "status": merge_patch(stored.get("status") or {}, updated.get("status") or {}),
    }


def instance_matches(instance: Any, nodeclaim: Mapping[str, Any]) -> bool:
    """Whether a provider instance (a NodeClaim from ``CloudProvider.list()``) is the one
    launched for ``nodeclaim``.

    Providers report their instances as NodeClaims; an instance belongs to a NodeClaim when
    it has the NodeClaim's providerID, or carries its identity: the same UID or name, or a
    ``kubernetes.io/hostname`` label naming it (the KWOK provider names nodes after
    NodeClaims). Identity matters for the launch that was cut short before its providerID
    was written: the instance exists, the NodeClaim does not know it yet.
    """
    meta = getattr(instance, "metadata", None)
    status = getattr(instance, "status", None)
    inst_pid = str(getattr(status, "provider_id", "") or "")
    pid = provider_id(nodeclaim)
    if pid and inst_pid == pid:
        return True
    nc_meta = meta_of(nodeclaim)
    name = str(nc_meta.get("name") or "")
    uid = str(nc_meta.get("uid") or "")
    if meta is None:
        return False
    if uid and str(getattr(meta, "uid", "") or "") == uid:
        return True
    if name and str(getattr(meta, "name", "") or "") == name:
        return True
    inst_labels = getattr(meta, "labels", None) or {}
    return bool(name) and inst_labels.get(wk.LABEL_HOSTNAME) == name


class OwnWrites:
    """resourceVersions this controller wrote, so their watch events do not wake it again.

    A reconcile already acted on everything its own write contains; waking up for the echo
    would only rerun it — and when a write records a failure whose message changes every
    time, the echo would defeat the back-off altogether (upstream sleeps a second after
    each write for the same reason). Other writers' changes still come through.
    """

    def __init__(self, limit: int = 10_000) -> None:
        self._lock = threading.Lock()
        self._rvs: set[str] = set()
        self._limit = limit

    def record(self, obj: Mapping[str, Any] | None) -> None:
        rv = str(meta_of(obj or {}).get("resourceVersion") or "")
        if not rv:
            return
        with self._lock:
            if len(self._rvs) >= self._limit:
                self._rvs.clear()
            self._rvs.add(rv)

    def consume(self, obj: Mapping[str, Any]) -> bool:
        """True (once) when ``obj`` is at a resourceVersion we wrote."""
        rv = str(meta_of(obj).get("resourceVersion") or "")
        with self._lock:
            if rv in self._rvs:
                self._rvs.discard(rv)
                return True
        return False
