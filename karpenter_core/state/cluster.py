"""Cluster: Karpenter's in-memory view of the cluster, kept current by the state informers
(:mod:`karpenter_core.controllers.state`).

Mirrors upstream ``pkg/controllers/state/cluster.go`` (spec operator-and-lifecycle §4). The
provisioner, the NodeClaim lifecycle, termination and disruption all read it instead of
listing the API server, so it answers questions the API cannot answer cheaply:

* existing capacity: Nodes and NodeClaims merged by provider id into :class:`StateNode`\\ s,
  with the requests, host ports and volumes of the pods bound to them;
* what Karpenter itself intends: deletion marks (disruption in progress) and nominations
  (a pending pod was planned onto a node, so it must not be disrupted meanwhile);
* per-NodePool totals for limits (``nodepool_resources``) and node-count reservations
  (:class:`NodePoolState`);
* whether the view is complete enough to act on (:meth:`Cluster.synced`);
* a timestamp that moves whenever consolidation might find something new.

One re-entrant lock guards everything: in ``serve`` informer threads and controllers call in
concurrently; in ``simulate`` everything runs on one thread and the lock is uncontended.
Listeners registered with :meth:`Cluster.on_change` run after the lock is released.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import frozen

from karpenter_core import metrics
from karpenter_core.apis.accessors import meta_of, spec_of
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
    ObjectError,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    Service,
    StorageClass,
)
from karpenter_core.apis.parsecache import VersionedParser
from karpenter_core.apis.parsedpods import parsed_pod
from karpenter_core.apis.v1 import NodeClaim
from karpenter_core.kube.client import NotFound, api_reader, shared_list
from karpenter_core.runtime.logthrottle import LogThrottle, held_back
from karpenter_core.scheduling.volumes import limits_from_csinode, pod_volumes
from karpenter_core.state.podorder import KeyOrdered
from karpenter_core.state.snapshot import ClusterSnapshot, PodFacts, namespace_order
from karpenter_core.state.statenode import NODES_RESOURCE, NodeClaimView, StateNode

if TYPE_CHECKING:
    from karpenter_core.cloudprovider.protocol import CloudProvider
    from karpenter_core.kube.client import KubeClient
    from karpenter_core.runtime.clock import Clock
    from karpenter_core.runtime.context import ControllerContext

__all__ = [
    "CONSOLIDATION_STATE_TTL",
    "UNSYNCED_LOG_AFTER",
    "UNSYNCED_LOG_EVERY",
    "Cluster",
    "NodeNotFoundError",
    "NodePoolCounts",
    "NodePoolState",
    "cluster_of",
    "is_managed_nodeclaim",
    "is_managed_nodepool",
    "nomination_window",
    "parse_nodeclaim",
]

log = logging.getLogger("karpenter.state")
_CONFIRM_FAILURES = LogThrottle(30.0)

CONSOLIDATION_STATE_TTL = timedelta(minutes=5)
"""``consolidation_state()`` re-stamps itself when older than this, so disruption re-checks
now and then for changes state cannot see (say, an instance type becoming available)."""

# Resources by (apiVersion, kind): resolved by a dict lookup, not a registry scan.
PODS = ("v1", "Pod")
NODES = ("v1", "Node")
NODECLAIMS = ("karpenter.sh/v1", "NodeClaim")
NODEPOOLS = ("karpenter.sh/v1", "NodePool")
DAEMONSETS = ("apps/v1", "DaemonSet")
CSINODES = ("storage.k8s.io/v1", "CSINode")
PVCS = ("v1", "PersistentVolumeClaim")
PVS = ("v1", "PersistentVolume")
STORAGECLASSES = ("storage.k8s.io/v1", "StorageClass")
PDBS = ("policy/v1", "PodDisruptionBudget")
NAMESPACES = ("v1", "Namespace")
SERVICES = ("v1", "Service")
# Pod controllers kube-scheduler consults for default topology spreads.
POD_CONTROLLERS = (
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "StatefulSet"),
    ("v1", "ReplicationController"),
)

MAX_TOMBSTONES = 10_000
"""Recently deleted pods remembered so a concurrent node rebuild does not count them."""

UNSYNCED_LOG_AFTER = 30.0
UNSYNCED_LOG_EVERY = 10.0

Listener = Callable[[str, str], None]
T = TypeVar("T")


def nomination_window(batch_max_duration: float) -> float:
    """How long a nomination protects a node: twice the batch window, at least 10 s."""
    return max(2 * batch_max_duration, 10.0)


class NodeNotFoundError(LookupError):
    """A pod is bound to a node cluster state does not know yet; retry once it arrives."""

    def __init__(self, pod_key: str, node_name: str) -> None:
        super().__init__(f"pod {pod_key} is bound to node {node_name!r}, not yet in cluster state")
        self.pod_key = pod_key
        self.node_name = node_name


def is_managed_nodeclaim(
    nodeclaim: Mapping[str, Any], cloud_provider: CloudProvider | None
) -> bool:
    """A NodeClaim is this operator's when its ``spec.nodeClassRef`` names a NodeClass kind the
    cloud provider supports (every NodeClaim counts when no provider is configured)."""
    if cloud_provider is None:
        return True
    ref = spec_of(nodeclaim).get("nodeClassRef") or {}
    try:
        kinds = cloud_provider.supported_node_classes()
    except Exception:  # a provider that cannot say manages nothing in particular
        return True
    if not kinds:
        return True
    return any(ref.get("group") == k.group and ref.get("kind") == k.kind for k in kinds)


def is_managed_nodepool(nodepool: Mapping[str, Any], cloud_provider: CloudProvider | None) -> bool:
    """A NodePool is this operator's when its template's NodeClass kind is supported."""
    template = spec_of(nodepool).get("template")
    ref = spec_of(template).get("nodeClassRef") if isinstance(template, Mapping) else None
    return is_managed_nodeclaim({"spec": {"nodeClassRef": ref or {}}}, cloud_provider)


# --- NodePoolState ------------------------------------------------------------------------


@frozen
class NodePoolCounts:
    active: int
    deleting: int
    pending_disruption: int

    @property
    def total(self) -> int:
        return self.active + self.deleting + self.pending_disruption


class _PoolClaims:
    __slots__ = ("active", "deleting", "pending_disruption", "reserved")

    def __init__(self) -> None:
        self.active: set[str] = set()
        self.deleting: set[str] = set()
        self.pending_disruption: set[str] = set()
        self.reserved = 0


class NodePoolState:
    """Per NodePool, which NodeClaims are active, pending disruption or deleting, plus node
    counts reserved by in-flight launches — what node-count limits (static capacity,
    disruption budgets) are checked against without racing each other."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._pools: dict[str, _PoolClaims] = {}
        self._nodeclaim_pool: dict[str, str] = {}

    def _pool(self, nodepool: str) -> _PoolClaims:
        p = self._pools.get(nodepool)
        if p is None:
            p = self._pools[nodepool] = _PoolClaims()
        return p

    def set_nodeclaim_mapping(self, nodepool: str, nodeclaim: str) -> None:
        if not nodepool or not nodeclaim:
            return
        with self._lock:
            self._pool(nodepool)
            self._nodeclaim_pool[nodeclaim] = nodepool

    def _move(self, nodepool: str, nodeclaim: str, to: str) -> None:
        with self._lock:
            p = self._pool(nodepool)
            for name in ("active", "deleting", "pending_disruption"):
                s: set[str] = getattr(p, name)
                if name == to:
                    s.add(nodeclaim)
                else:
                    s.discard(nodeclaim)

    def mark_active(self, nodepool: str, nodeclaim: str) -> None:
        self._move(nodepool, nodeclaim, "active")

    def mark_deleting(self, nodepool: str, nodeclaim: str) -> None:
        self._move(nodepool, nodeclaim, "deleting")

    def mark_pending_disruption(self, nodepool: str, nodeclaim: str) -> None:
        self._move(nodepool, nodeclaim, "pending_disruption")

    def update_nodeclaim(self, nodepool: str, nodeclaim: str, marked_for_deletion: bool) -> None:
        if not nodepool:
            return
        self.set_nodeclaim_mapping(nodepool, nodeclaim)
        if marked_for_deletion:
            self.mark_deleting(nodepool, nodeclaim)
        else:
            self.mark_active(nodepool, nodeclaim)

    def cleanup(self, nodeclaim: str) -> None:
        """Forget a NodeClaim; a pool with no active or deleting claims left is dropped
        (with its reservations)."""
        with self._lock:
            nodepool = self._nodeclaim_pool.pop(nodeclaim, None)
            p = self._pools.get(nodepool) if nodepool is not None else None
            if p is None:
                return
            p.active.discard(nodeclaim)
            p.deleting.discard(nodeclaim)
            p.pending_disruption.discard(nodeclaim)
            if not p.active and not p.deleting:
                del self._pools[nodepool]  # type: ignore[arg-type]

    def node_counts(self, nodepool: str) -> NodePoolCounts:
        with self._lock:
            p = self._pools.get(nodepool)
            if p is None:
                return NodePoolCounts(0, 0, 0)
            return NodePoolCounts(len(p.active), len(p.deleting), len(p.pending_disruption))

    def reserved(self, nodepool: str) -> int:
        with self._lock:
            p = self._pools.get(nodepool)
            return p.reserved if p is not None else 0

    def reserve_node_count(self, nodepool: str, limit: int, wanted: int) -> int:
        """Grant up to ``wanted`` nodes under ``limit`` counting existing claims and earlier
        reservations; returns how many were granted (0 when the limit is already reached)."""
        with self._lock:
            p = self._pool(nodepool)
            used = len(p.active) + len(p.deleting) + len(p.pending_disruption)
            remaining = limit - used - p.reserved
            if remaining < 0:
                return 0
            granted = min(wanted, remaining)
            p.reserved += granted
            return granted

    def release_node_count(self, nodepool: str, count: int) -> None:
        with self._lock:
            p = self._pools.get(nodepool)
            if p is not None:
                p.reserved = max(0, p.reserved - count)

    def reset(self) -> None:
        with self._lock:
            self._pools.clear()
            self._nodeclaim_pool.clear()


# --- Cluster ------------------------------------------------------------------------------


class _Facts:
    """What a StateNode contributed before a change, to diff NodePool totals and decide
    whether consolidation should look again."""

    __slots__ = ("initialized", "marked", "nodepool", "resources")

    def __init__(self, sn: StateNode | None) -> None:
        if sn is None:
            self.nodepool = ""
            self.resources: dict[str, int] = {}
            self.initialized = False
            self.marked = False
            return
        self.nodepool = sn.nodepool_name()
        self.marked = sn.marked_for_deletion
        self.initialized = sn.initialized()
        self.resources = {} if self.marked else sn.capacity()
        if self.resources:
            self.resources[NODES_RESOURCE] = 1000


def _parse_node(obj: Node | Mapping[str, Any]) -> Node:
    return obj if isinstance(obj, Node) else Node.from_dict(obj)


parse_nodeclaim: VersionedParser[NodeClaim] = VersionedParser(
    NodeClaim.from_dict, reparse=NodeClaim.from_dict_reusing
)
"""The typed NodeClaim of a stored object, parsed once per stored version (uid and
resourceVersion, confirmed by content); raises
:class:`~karpenter_core.apis.v1.APIError` naming the bad field."""


def _rv(obj: Pod) -> str:
    return str(meta_of(obj.raw).get("resourceVersion") or "")


def _rv_int(obj: Pod) -> int:
    """Resource versions are opaque to clients, but both our servers use integers; an
    unparseable one compares as oldest, which only ever keeps a listed pod."""
    try:
        return int(_rv(obj))
    except ValueError:
        return -1


class Cluster:
    """In-memory cluster state (see the module docstring)."""

    def __init__(
        self,
        kube: KubeClient,
        clock: Clock,
        cloud_provider: CloudProvider | None = None,
        *,
        nomination_seconds: float = nomination_window(10.0),
    ) -> None:
        self.kube = kube
        self.clock = clock
        self.cloud_provider = cloud_provider
        self.nomination_seconds = nomination_seconds
        self.nodepool_state = NodePoolState()
        self._lock = threading.RLock()
        self._listeners: list[Listener] = []
        self._reset_locked()

    @classmethod
    def from_context(cls, ctx: ControllerContext) -> Cluster:
        """A Cluster for a ``ControllerContext`` (kube, clock, cloud provider, batch window)."""
        return cls(
            ctx.kube,
            ctx.clock,
            ctx.cloud_provider,
            nomination_seconds=nomination_window(ctx.options.batch_max_duration),
        )

    def _reset_locked(self) -> None:
        self._nodes: dict[str, StateNode] = {}  # provider id -> state node
        self._node_name_to_pid: dict[str, str] = {}
        self._nodeclaim_name_to_pid: dict[str, str] = {}  # "" = not launched yet
        self._bindings: dict[str, str] = {}  # pod key -> node name
        self._nodepool_resources: dict[str, dict[str, int]] = {}
        self._pods: KeyOrdered[Pod] = KeyOrdered()  # every pod seen, in key order for snapshots
        self._tombstones: OrderedDict[str, str] = OrderedDict()  # deleted pod key -> uid
        self._anti_affinity_pods: dict[str, Pod] = {}
        self._pod_namespaces: dict[str, int] = {}  # namespace -> pods tracked in it
        self._unbound: KeyOrdered[Pod] = KeyOrdered()  # pods with no node, in key order
        self._daemonsets: dict[str, DaemonSet] = {}
        self._daemonset_pods: dict[str, Pod] = {}
        self._pod_acks: dict[str, datetime] = {}
        self._pod_decisions: dict[str, datetime] = {}
        self._pod_schedulable: dict[str, datetime] = {}
        self._pod_healthy_scheduled: dict[str, datetime] = {}
        self._pod_to_nodeclaim: dict[str, str] = {}
        self._buffer_pod_counts: dict[str, int] = {}
        self._consolidation_state: datetime = self.clock.now()
        self._has_synced = False
        # a NodeClaim create whose answer was lost (see confirm_with_api_server)
        self._confirm_with_api = False
        self._unsynced_since: float | None = None
        self._last_unsynced_log: float | None = None
        self._pending: list[tuple[str, str]] = []

    def reset(self) -> None:
        """Forget everything (tests, and a restart of the informers)."""
        with self._lock:
            self._reset_locked()
            self.nodepool_state.reset()

    # ------------------------------------------------------------------ listeners

    def on_change(self, listener: Listener) -> None:
        """Call ``listener(kind, name)`` after each change (kind: node, nodeclaim, pod,
        daemonset, mark); it runs outside the state lock and must not raise."""
        with self._lock:
            self._listeners.append(listener)

    def _notify(self, kind: str, name: str) -> None:
        self._pending.append((kind, name))

    def _flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
            listeners = list(self._listeners)
        if not listeners:
            return
        for kind, name in pending:
            for fn in listeners:
                try:
                    fn(kind, name)
                except Exception:
                    log.exception("cluster state listener failed on %s %s", kind, name)

    # ------------------------------------------------------------------ reads

    def state_nodes(self) -> list[StateNode]:
        """Independent copies of every StateNode (including deleting ones), ordered by
        provider id, for the scheduler and disruption simulations."""
        with self._lock:
            return [self._nodes[pid].copy() for pid in sorted(self._nodes)]

    @contextmanager
    def state_nodes_view(self) -> Iterator[list[StateNode]]:
        """The StateNodes themselves (no copies), ordered by provider id, for a block that
        only reads them; the state lock is held for the block (upstream's
        ``ForEachNode``), so keep it short and make no API calls in it. Controllers that
        scan every node on a timer (node metrics, disruption's cleanup) copied each one
        with :meth:`state_nodes` only to read a few fields."""
        with self._lock:
            yield [self._nodes[pid] for pid in sorted(self._nodes)]

    def active_state_nodes(self) -> list[StateNode]:
        return [n for n in self.state_nodes() if not n.marked_for_deletion]

    def deleting_state_nodes(self) -> list[StateNode]:
        return [n for n in self.state_nodes() if n.marked_for_deletion]

    def state_node(self, provider_id: str) -> StateNode | None:
        """A copy of one StateNode, or None."""
        with self._lock:
            sn = self._nodes.get(provider_id)
            return sn.copy() if sn is not None else None

    def state_node_for_node(self, node_name: str) -> StateNode | None:
        with self._lock:
            pid = self._node_name_to_pid.get(node_name)
            sn = self._nodes.get(pid) if pid is not None else None
            return sn.copy() if sn is not None else None

    def node_labels(self, node_name: str) -> Mapping[str, str] | None:
        """The labels of the Node named ``node_name`` as state last saw it, or None; no
        copy of its StateNode (a parsed Node is replaced, never changed, on update), for
        readers as frequent as one per pod."""
        with self._lock:
            pid = self._node_name_to_pid.get(node_name)
            sn = self._nodes.get(pid) if pid is not None else None
            return sn.node.labels if sn is not None and sn.node is not None else None

    def state_node_for_nodeclaim(self, nodeclaim_name: str) -> StateNode | None:
        with self._lock:
            pid = self._nodeclaim_name_to_pid.get(nodeclaim_name)
            sn = self._nodes.get(pid) if pid else None
            return sn.copy() if sn is not None else None

    def nodes_for_nodepool(self, nodepool: str) -> list[StateNode]:
        """Copies of the StateNodes whose ``karpenter.sh/nodepool`` label names ``nodepool``."""
        return [n for n in self.state_nodes() if n.nodepool_name() == nodepool]

    def node_count(self) -> int:
        with self._lock:
            return len(self._nodes)

    def provider_id_for_node(self, node_name: str) -> str | None:
        with self._lock:
            return self._node_name_to_pid.get(node_name)

    def nodeclaim_exists(self, name: str) -> bool:
        with self._lock:
            return name in self._nodeclaim_name_to_pid

    def unlaunched_nodeclaim_exists(self, name: str) -> bool:
        with self._lock:
            return self._nodeclaim_name_to_pid.get(name) == ""

    def pods(self) -> list[Pod]:
        """Every pod the pod informer has seen (bound and pending), ordered by key."""
        with self._lock:
            return list(self._sorted_pods_locked())

    def _sorted_pods_locked(self) -> tuple[Pod, ...]:
        """Every pod, ordered by key (kept in order as pods change: :class:`KeyOrdered`)."""
        return self._pods.values()

    def pod(self, key: str) -> Pod | None:
        with self._lock:
            return self._pods.get(key)

    def binding(self, pod_key: str) -> str | None:
        """The node a tracked pod is counted against, if any."""
        with self._lock:
            return self._bindings.get(pod_key)

    def nodepool_resources(self, nodepool: str) -> dict[str, int]:
        """Capacity (with ``nodes``) of the NodePool's StateNodes not marked for deletion."""
        with self._lock:
            return dict(self._nodepool_resources.get(nodepool, {}))

    def nodepool_node_count(self, nodepool: str) -> int:
        """How many of the NodePool's StateNodes are not marked for deletion."""
        with self._lock:
            return self._nodepool_resources.get(nodepool, {}).get(NODES_RESOURCE, 0) // 1000

    def for_pods_with_anti_affinity(self, fn: Callable[[Pod, Node], bool]) -> None:
        """Call ``fn(pod, node)`` for each bound pod with required anti-affinity until it
        returns False (topology needs them to keep new pods off those domains)."""
        with self._lock:
            pairs = []
            for key in sorted(self._anti_affinity_pods):
                node_name = self._bindings.get(key)
                if node_name is None:
                    continue
                sn = self._nodes.get(self._node_name_to_pid.get(node_name, ""))
                if sn is None or sn.node is None:
                    continue
                pairs.append((self._anti_affinity_pods[key], sn.node))
        for pod, node in pairs:
            if not fn(pod, node):
                return

    # ------------------------------------------------------------------ snapshot

    def snapshot(self, state_nodes: Sequence[StateNode] | None = None) -> ClusterSnapshot:
        """A :class:`ClusterSnapshot` for ``schedule(...)``: the StateNodes as cluster state
        merged them (marks and nominations included), every known pod, the cached
        DaemonSets, and the volume, PDB, namespace, Service and pod-controller objects (for
        namespaceSelector and default topology spreads) listed fresh from the API.

        ``state_nodes``: copies of the StateNodes the caller already took (a disruption
        pass's, in provider-id order), used instead of copying every node again; the
        snapshot's nodes and NodeClaims are theirs."""
        with self._lock:
            if state_nodes is None:
                pids = sorted(self._nodes)
                state_nodes = tuple(self._nodes[pid].copy() for pid in pids)
            else:
                state_nodes = tuple(state_nodes)
            pods = self._sorted_pods_locked()
            facts = PodFacts(
                pods,
                tuple(sorted(self._pod_namespaces, key=namespace_order)),
                tuple(self._anti_affinity_pods[k] for k in sorted(self._anti_affinity_pods)),
                self._unbound.values(),
            )
            daemonsets = tuple(self._daemonsets[k] for k in sorted(self._daemonsets))
        nodes = tuple(sn.node for sn in state_nodes if sn.node is not None)
        nodeclaims = tuple(sn.nodeclaim for sn in state_nodes if sn.nodeclaim is not None)
        return ClusterSnapshot(
            nodes=nodes,
            nodeclaims=nodeclaims,
            pods=pods,
            daemonsets=daemonsets,
            pdbs=self._list(PDBS, PodDisruptionBudget.from_dict),
            pvcs=self._list(PVCS, PersistentVolumeClaim.from_dict),
            pvs=self._list(PVS, PersistentVolume.from_dict),
            storage_classes=self._list(STORAGECLASSES, StorageClass.from_dict),
            csinodes=self._list(CSINODES, CSINode.from_dict),
            namespaces=self._list(NAMESPACES, Namespace.from_dict),
            services=self._list(SERVICES, Service.from_dict),
            controllers=[c for rt in POD_CONTROLLERS for c in self._list(rt, Controller.from_dict)],
            prebuilt_state_nodes=state_nodes,
            pod_facts=facts,
        )

    def _list(self, resource: tuple[str, str], parse: Callable[[Mapping[str, Any]], T]) -> list[T]:
        out = []
        for obj in self.kube.list(resource).items:
            try:
                out.append(parse(obj))
            except ObjectError as e:
                meta = meta_of(obj)
                log.warning(
                    "ignoring %s %s/%s: %s",
                    resource,
                    meta.get("namespace", ""),
                    meta.get("name", ""),
                    e,
                )
        return out

    # ------------------------------------------------------------------ synced

    def has_synced(self) -> bool:
        with self._lock:
            return self._has_synced

    def set_synced(self, synced: bool) -> None:
        """Force the latch (tests)."""
        with self._lock:
            self._has_synced = synced

    def confirm_with_api_server(self) -> None:
        """A NodeClaim create failed in a way that may have created it (its answer was lost:
        the connection broke, the API server restarted), and the watch that would bring it
        may be broken too: until the API server's NodeClaims are all in state, :meth:`synced`
        is False, so provisioning waits instead of creating a second NodeClaim for the same
        pods. Checked against the API server itself, not the informer cache."""
        with self._lock:
            self._confirm_with_api = True

    def synced(self) -> bool:
        """True when state holds every NodeClaim and Node the API server has, and no tracked
        NodeClaim is still waiting for its launch to resolve a provider id.

        Provisioning, disruption and the NodePool counters wait for this: acting on a partial
        view would launch capacity that already exists. After the first success the API is
        no longer listed; state is then kept consistent by the informers."""
        result = self._synced()
        now = self.clock.monotonic()
        with self._lock:
            if result:
                self._unsynced_since = None
                self._last_unsynced_log = None
                unsynced_for = 0.0
            else:
                if self._unsynced_since is None:
                    self._unsynced_since = now
                unsynced_for = now - self._unsynced_since
                if unsynced_for > UNSYNCED_LOG_AFTER and (
                    self._last_unsynced_log is None
                    or now - self._last_unsynced_log > UNSYNCED_LOG_EVERY
                ):
                    self._last_unsynced_log = now
                    log.error(
                        "cluster is waiting on sync for extended duration (%ds)", int(unsynced_for)
                    )
        metrics.CLUSTER_STATE_SYNCED.set(1.0 if result else 0.0)
        metrics.CLUSTER_STATE_UNSYNCED_TIME_SECONDS.set(unsynced_for)
        return result

    def _synced(self) -> bool:
        with self._lock:
            if self._has_synced and not self._confirm_with_api:
                return all(self._nodeclaim_name_to_pid.values())
            confirming = self._has_synced
        if confirming:
            return self._confirmed()
        # read-only: the cached objects themselves, not a copy of every Node and NodeClaim
        # at each of the many calls made while the first sync is pending
        list_objects = shared_list(self.kube)
        try:
            nodeclaims = [
                nc
                for nc in list_objects(NODECLAIMS).items
                if is_managed_nodeclaim(nc, self.cloud_provider)
            ]
            nodes = list_objects(NODES).items
        except Exception as e:
            log.error("failed checking cluster state sync: %s", e)
            return False
        with self._lock:
            if not all(self._nodeclaim_name_to_pid.values()):
                return False
            state_nc = self._nodeclaim_name_to_pid.keys()
            state_nodes = self._node_name_to_pid.keys()
            ok = all(meta_of(nc).get("name") in state_nc for nc in nodeclaims) and all(
                meta_of(n).get("name") in state_nodes for n in nodes
            )
            if ok:
                self._has_synced = True
            return ok

    def _confirmed(self) -> bool:
        """:meth:`_synced` after :meth:`confirm_with_api_server`: every NodeClaim the API
        server lists is in state (then the check is over)."""
        try:
            listed = api_reader(self.kube).list(NODECLAIMS).items
        except Exception as e:
            # asked at every provisioning and disruption pass, and failing for as long
            # as an outage lasts: one line per interval
            held = _CONFIRM_FAILURES.admit(type(e).__name__)
            if held is not None:
                log.warning(
                    "cannot check cluster state against the API server yet: %s%s",
                    e,
                    held_back(held),
                )
            return False
        names = {
            meta_of(nc).get("name")
            for nc in listed
            if is_managed_nodeclaim(nc, self.cloud_provider)
        }
        with self._lock:
            if not names <= self._nodeclaim_name_to_pid.keys():
                return False
            self._confirm_with_api = False
            return all(self._nodeclaim_name_to_pid.values())

    # ------------------------------------------------------------------ NodePool totals

    def _apply_resources(self, old: _Facts, new: _Facts) -> None:
        totals = self._nodepool_resources
        if new.nodepool and new.nodepool not in totals:
            totals[new.nodepool] = {}
        if old.nodepool:
            bucket = totals.setdefault(old.nodepool, {})
            for k, v in old.resources.items():
                bucket[k] = bucket.get(k, 0) - v
        if new.nodepool:
            bucket = totals[new.nodepool]
            for k, v in new.resources.items():
                bucket[k] = bucket.get(k, 0) + v
        for name in {old.nodepool, new.nodepool}:
            if name in totals and not any(totals[name].values()):
                del totals[name]

    def _changed(self, old: _Facts | None, new_sn: StateNode) -> None:
        """Book a StateNode change (``old`` None: it is new): NodePool totals, and the
        consolidation stamp when something consolidation cares about moved."""
        new = _Facts(new_sn)
        self._apply_resources(old or _Facts(None), new)
        if old is None or old.initialized != new.initialized or old.marked != new.marked:
            self._mark_unconsolidated_locked()

    def _update_count_gauge(self) -> None:
        metrics.CLUSTER_STATE_NODE_COUNT.set(float(len(self._nodes)))

    # ------------------------------------------------------------------ NodeClaims

    def update_nodeclaim(self, nodeclaim: NodeClaim | Mapping[str, Any]) -> None:
        """Track a NodeClaim (typed, or its stored JSON, parsed once per version); once
        launched (provider id set) it joins (or becomes) the StateNode for its provider id,
        keeping that node's usage, mark and nomination. An unreadable one raises
        :class:`~karpenter_core.apis.v1.APIError` or
        :class:`~karpenter_core.apis.objects.ObjectError` before state changes."""
        nc = nodeclaim if isinstance(nodeclaim, NodeClaim) else parse_nodeclaim(nodeclaim)
        name = nc.name
        pid = nc.provider_id
        # only capacity needs its facts (an unlaunched claim is tracked by name alone)
        view = NodeClaimView.of(nc) if pid else None
        with self._lock:
            known = self._nodeclaim_name_to_pid.get(name)
            if known and known != pid:
                # Its provider id changed, or (its deletion unseen) a new, unlaunched
                # NodeClaim took the name: the old capacity entry goes first.
                self._cleanup_nodeclaim(name)
            if view is not None:
                sn = self._nodes.get(pid)
                old = _Facts(sn) if sn is not None else None
                if sn is None:
                    sn = self._nodes[pid] = StateNode(None, view)
                else:
                    sn.nodeclaim_view = view
                self._changed(old, sn)
            marked = self._nodes[pid].marked_for_deletion if pid in self._nodes else False
            self.nodepool_state.update_nodeclaim(nc.nodepool_name or "", name, marked)
            self._nodeclaim_name_to_pid[name] = pid
            self._update_count_gauge()
            self._notify("nodeclaim", name)
        self._flush()

    def delete_nodeclaim(self, name: str) -> None:
        with self._lock:
            self._cleanup_nodeclaim(name)
            self._update_count_gauge()
            self._notify("nodeclaim", name)
        self._flush()

    def _cleanup_nodeclaim(self, name: str) -> None:
        pid = self._nodeclaim_name_to_pid.get(name)
        if pid:
            sn = self._nodes.get(pid)
            if sn is not None:
                model = sn.nodeclaim
                if model is not None and model.metadata.uid:
                    parse_nodeclaim.forget(model.metadata.uid)
                old = _Facts(sn)
                if sn.node is None:
                    del self._nodes[pid]
                    self._apply_resources(old, _Facts(None))
                else:
                    sn.nodeclaim_view = None
                    self._apply_resources(old, _Facts(sn))
            self._mark_unconsolidated_locked()
        self._nodeclaim_name_to_pid.pop(name, None)
        self.nodepool_state.cleanup(name)

    # ------------------------------------------------------------------ Nodes

    def update_node(self, node: Node | Mapping[str, Any]) -> None:
        """Track a Node, merged with its NodeClaim by provider id (unmanaged nodes without
        one are keyed by name). A managed node without a provider id, or still uninitialised
        and without an instance-type label, is ignored until it has them."""
        n = _parse_node(node)
        managed = bool(n.labels.get(NODEPOOL_LABEL_KEY))
        initialized = bool(n.labels.get(NODE_INITIALIZED_LABEL_KEY))
        pid = n.provider_id
        if not pid:
            if managed:
                return
            pid = n.name
        if managed and not n.labels.get(LABEL_INSTANCE_TYPE) and not initialized:
            return
        limits = self._volume_limits(n.name)
        with self._lock:
            sn = self._nodes.get(pid)
            reuse = self._can_reuse(sn, n, limits)
            if reuse:
                self._install_node(pid, n, sn, None, limits)
        if not reuse:
            # List the node's pods without holding the lock; installing re-checks for pods
            # that went away meanwhile (and pods bound meanwhile retry on their own).
            rebuilt = self._build_usage(n, limits)
            with self._lock:
                self._install_node(pid, n, self._nodes.get(pid), rebuilt, limits)
        self._flush()

    def _can_reuse(self, sn: StateNode | None, n: Node, limits: Mapping[str, int]) -> bool:
        """Keep the usage already booked when the same node is re-seen with the same volume
        limits: every pod event since it joined state has been applied to it."""
        return (
            sn is not None
            and sn.node is not None
            and sn.node.name == n.name
            and dict(sn.volume_limits()) == dict(limits)
        )

    def _install_node(
        self,
        pid: str,
        n: Node,
        sn: StateNode | None,
        rebuilt: StateNode | None,
        limits: Mapping[str, int],
    ) -> None:
        known = self._node_name_to_pid.get(n.name)
        if known is not None and known != pid:
            self._cleanup_node(n.name)
            sn = self._nodes.get(pid)
        old = _Facts(sn) if sn is not None else None
        if sn is not None and rebuilt is None and self._can_reuse(sn, n, limits):
            sn.node = n
        else:
            if rebuilt is None:  # state kept changing under us: list while holding the lock
                rebuilt = self._build_usage(n, limits)
            if sn is not None:
                rebuilt.nodeclaim_view = sn.nodeclaim_view
                rebuilt.inherit_intent(sn)
            for p in list(rebuilt.pods):
                if self._stale(p, n.name):
                    rebuilt.remove_pod(p.key)
                else:
                    self._rebind(p.key, n.name)
            sn = rebuilt
        self._nodes[pid] = sn
        self._node_name_to_pid[n.name] = pid
        self._changed(old, sn)
        self._update_count_gauge()
        self._notify("node", n.name)

    def _build_usage(self, node: Node, limits: Mapping[str, int]) -> StateNode:
        """A StateNode for ``node`` counting the non-terminal pods bound to it (listed from the
        API; pods the pod informer already parsed at the same version are reused)."""
        # the cached pods themselves where the reader can share them (read-only here)
        list_pods = shared_list(self.kube)
        items = list_pods(PODS, field_selector=f"spec.nodeName={node.name}").items
        pods: list[Pod] = []
        for obj in items:
            meta = meta_of(obj)
            rv = str(meta.get("resourceVersion") or "")
            key = f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"
            with self._lock:
                cached = self._pods.get(key)
            if cached is not None and rv and _rv(cached) == rv:
                pod = cached
            else:
                try:
                    pod = Pod.from_dict(obj)
                except ObjectError as e:
                    log.warning("ignoring pod %s on node %s: %s", key, node.name, e)
                    continue
            if pod.is_terminal():
                continue
            pods.append(pod)
        vols = {p.key: self._pod_volumes(p) for p in pods if p.pvc_names}
        return StateNode(node, None, pods=pods, volume_limits=limits, pod_volumes=vols)

    def _stale(self, listed: Pod, node_name: str) -> bool:
        """The pod informer has already seen this listed pod go away (deleted, finished or
        moved) — possible when a node is rebuilt while pod events are processed concurrently."""
        tomb = self._tombstones.get(listed.key)
        if tomb is not None and tomb in ("", listed.uid):
            return True
        cached = self._pods.get(listed.key)
        if cached is None or cached.uid != listed.uid:
            return False
        return _rv_int(cached) > _rv_int(listed) and (
            cached.is_terminal() or cached.node_name != node_name
        )

    def _volume_limits(self, node_name: str) -> dict[str, int]:
        try:
            csinode = self.kube.get(CSINODES, node_name)
        except NotFound:
            return {}
        return limits_from_csinode(csinode)

    def _pod_volumes(self, pod: Pod) -> dict[str, frozenset[str]]:
        def get(resource: tuple[str, str], name: str, namespace: str | None = None) -> Any:
            try:
                return self.kube.get(resource, name, namespace)
            except NotFound:
                return None

        return pod_volumes(
            pod.namespace,
            pod.pvc_names,
            lambda ns, name: get(PVCS, name, ns),
            lambda name: get(PVS, name),
            lambda name: get(STORAGECLASSES, name),
        )

    def delete_node(self, name: str) -> None:
        with self._lock:
            self._cleanup_node(name)
            self._update_count_gauge()
            self._notify("node", name)
        self._flush()

    def _cleanup_node(self, name: str) -> None:
        pid = self._node_name_to_pid.pop(name, None)
        if not pid:
            return
        sn = self._nodes.get(pid)
        if sn is not None:
            old = _Facts(sn)
            # The node's pods went with it: forget their bindings so they are counted afresh
            # wherever they show up again.
            for p in sn.pods:
                if self._bindings.get(p.key) == name:
                    del self._bindings[p.key]
            if sn.nodeclaim_view is None:
                del self._nodes[pid]
                self._apply_resources(old, _Facts(None))
            else:
                remaining = StateNode(None, sn.nodeclaim_view)
                remaining.inherit_intent(sn)
                self._nodes[pid] = remaining
                self._apply_resources(old, _Facts(remaining))
        self._mark_unconsolidated_locked()

    # ------------------------------------------------------------------ Pods

    def update_pod(self, pod: Pod | Mapping[str, Any]) -> None:
        """Track a pod: a terminal pod releases its node's usage; a bound one is counted on
        its node (raising :class:`NodeNotFoundError` while that node is unknown, so the
        informer retries)."""
        if isinstance(pod, Pod):
            p = pod
        else:
            if self._unchanged_pod(pod):
                return
            p = self._refreshed_pod(pod)
        try:
            with self._lock:
                previous = self._pods.set(p.key, p)
                if previous is None:
                    self._pod_namespaces[p.namespace] = self._pod_namespaces.get(p.namespace, 0) + 1
                self._tombstones.pop(p.key, None)
                if p.has_required_pod_anti_affinity():
                    self._anti_affinity_pods[p.key] = p
                else:
                    self._anti_affinity_pods.pop(p.key, None)
                if p.node_name:
                    self._unbound.pop(p.key)
                else:
                    self._unbound.set(p.key, p)
                self._update_daemonset_pod(p)
                if previous is not None and previous.uid != p.uid:
                    # A new pod under an old name whose deletion was never seen on its own:
                    # the old one's usage goes first.
                    self._release(p.key)
                if p.is_terminal() or not p.node_name:
                    self._release(p.key)  # finished, or (recreated and) not bound anywhere
                else:
                    self._bind(p)
                self._notify("pod", p.key)
        finally:
            self._flush()

    def _refreshed_pod(self, obj: Mapping[str, Any]) -> Pod:
        """The parsed pod, reusing the parse of its tracked version (a bind or a status
        change then reads only what changed)."""
        meta = meta_of(obj)
        with self._lock:
            known = self._pods.get(f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}")
        return parsed_pod(obj, known)

    def _unchanged_pod(self, obj: Mapping[str, Any]) -> bool:
        """The same version of a pod whose usage is already booked (the periodic re-read of
        thousands of pods then costs no parsing)."""
        meta = meta_of(obj)
        rv = str(meta.get("resourceVersion") or "")
        if not rv:
            return False
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"
        with self._lock:
            cached = self._pods.get(key)
            if cached is None or _rv(cached) != rv:
                return False
            return (
                cached.is_terminal()
                or not cached.node_name
                or self._bindings.get(key) == cached.node_name
            )

    def _bind(self, pod: Pod) -> None:
        sn = self._nodes.get(self._node_name_to_pid.get(pod.node_name, ""))
        if sn is None or sn.node is None:
            raise NodeNotFoundError(pod.key, pod.node_name)
        known = self._bindings.get(pod.key)
        if known == pod.node_name and sn.has_pod(pod.key):
            cached = next((q for q in sn.pods if q.key == pod.key), None)
            if (
                cached is not None
                and cached.requests == pod.requests
                and (cached.host_ports == pod.host_ports and cached.pvc_names == pod.pvc_names)
            ):
                return  # nothing that usage depends on changed
        vols = self._pod_volumes(pod) if pod.pvc_names else {}
        sn.add_pod(pod, vols)
        self._rebind(pod.key, pod.node_name)

    def _rebind(self, pod_key: str, node_name: str) -> None:
        old = self._bindings.get(pod_key)
        if old == node_name:
            return
        if old is not None:
            old_sn = self._nodes.get(self._node_name_to_pid.get(old, ""))
            if old_sn is not None:
                old_sn.remove_pod(pod_key)
        self._bindings[pod_key] = node_name
        self._mark_unconsolidated_locked()

    def _release(self, pod_key: str) -> None:
        node_name = self._bindings.pop(pod_key, None)
        if node_name is None:
            return
        sn = self._nodes.get(self._node_name_to_pid.get(node_name, ""))
        if sn is not None:
            sn.remove_pod(pod_key)

    def delete_pod(self, key: str) -> None:
        """Forget a pod (``namespace/name``): free its usage and its scheduling bookkeeping."""
        with self._lock:
            gone = self._pods.pop(key)
            if gone is not None:
                left = self._pod_namespaces.get(gone.namespace, 0) - 1
                if left > 0:
                    self._pod_namespaces[gone.namespace] = left
                else:
                    self._pod_namespaces.pop(gone.namespace, None)
            self._tombstones[key] = gone.uid if gone is not None else ""
            self._tombstones.move_to_end(key)
            while len(self._tombstones) > MAX_TOMBSTONES:
                self._tombstones.popitem(last=False)
            self._anti_affinity_pods.pop(key, None)
            self._unbound.pop(key)
            self._release(key)
            self._clear_pod_scheduling(key)
            self._mark_unconsolidated_locked()
            self._notify("pod", key)
        self._flush()

    # ------------------------------------------------------------------ marks, nominations

    def mark_for_deletion(self, *provider_ids: str) -> None:
        """Mark nodes Karpenter intends to delete: they stop counting toward NodePool totals
        and the scheduler stops placing pods on them."""
        self._set_marks(provider_ids, True)

    def unmark_for_deletion(self, *provider_ids: str) -> None:
        self._set_marks(provider_ids, False)

    def _set_marks(self, provider_ids: Iterable[str], marked: bool) -> None:
        with self._lock:
            for pid in provider_ids:
                sn = self._nodes.get(pid)
                if sn is None:
                    continue
                old = _Facts(sn)
                sn.mark_for_deletion(marked)
                self._changed(old, sn)
                view = sn.nodeclaim_view
                if view is not None:
                    nodepool = view.labels.get(NODEPOOL_LABEL_KEY, "")
                    if marked:
                        self.nodepool_state.mark_deleting(nodepool, view.name)
                    elif not view.deleting:
                        self.nodepool_state.mark_active(nodepool, view.name)
                self._notify("mark", pid)
        self._flush()

    def nominate_node_for_pod(self, provider_id: str) -> None:
        """A pending pod was planned onto this node: protect it from disruption for the
        nomination window (extended by each nomination)."""
        with self._lock:
            sn = self._nodes.get(provider_id)
            if sn is not None:
                sn.nominate(self.clock.monotonic(), self.nomination_seconds)

    def is_node_nominated(self, provider_id: str) -> bool:
        with self._lock:
            sn = self._nodes.get(provider_id)
            return sn is not None and sn.nominated(self.clock.monotonic())

    # ------------------------------------------------------------------ CapacityBuffer pods

    def update_buffer_pod_counts(self, counts: Mapping[str, int]) -> None:
        """Replace, after a provisioning pass, how many virtual CapacityBuffer pods it placed
        on each existing node (by provider id); emptiness must not remove those nodes."""
        with self._lock:
            self._buffer_pod_counts = {k: v for k, v in counts.items() if v}

    def buffer_pod_count(self, provider_id: str) -> int:
        with self._lock:
            return self._buffer_pod_counts.get(provider_id, 0)

    def has_buffer_pods(self, provider_id: str) -> bool:
        return self.buffer_pod_count(provider_id) > 0

    # ------------------------------------------------------------------ consolidation state

    def _mark_unconsolidated_locked(self) -> datetime:
        self._consolidation_state = self.clock.now()
        return self._consolidation_state

    def mark_unconsolidated(self) -> datetime:
        """Something changed that might let consolidation act: stamp now."""
        with self._lock:
            return self._mark_unconsolidated_locked()

    def consolidation_state(self) -> datetime:
        """When state last changed in a way consolidation cares about; re-stamped when five
        minutes old so consolidation periodically looks again anyway."""
        with self._lock:
            if self.clock.now() - self._consolidation_state < CONSOLIDATION_STATE_TTL:
                return self._consolidation_state
            return self._mark_unconsolidated_locked()

    # ------------------------------------------------------------------ scheduling bookkeeping

    def ack_pods(self, pods: Iterable[Pod | str]) -> None:
        """Record when the provisioner first saw each pod pending (kept on later calls)."""
        now = self.clock.now()
        with self._lock:
            for p in pods:
                self._pod_acks.setdefault(p if isinstance(p, str) else p.key, now)

    def pod_ack_time(self, key: str) -> datetime | None:
        with self._lock:
            return self._pod_acks.get(key)

    def mark_pod_scheduling_decisions(
        self,
        pod_errors: Iterable[Pod],
        nodepool_pods: Mapping[str, Sequence[Pod]],
        nodeclaim_pods: Mapping[str, Sequence[Pod]] | None = None,
        healthy_nodepools: Iterable[str] = (),
    ) -> list[float]:
        """Record a scheduling pass: pods that failed lose their "placeable" times; pods
        placed (on a NodePool, or on existing capacity under "") get a first-placeable time,
        and a "placed on a NodePool with NodeRegistrationHealthy=True" time when their pool is
        in ``healthy_nodepools``. Returns the ack-to-first-decision durations (seconds) of
        pods decided for the first time, for ``pods_scheduling_decision_duration_seconds``."""
        now = self.clock.now()
        healthy = set(healthy_nodepools)
        durations: list[float] = []
        with self._lock:

            def first_decision(key: str) -> None:
                if key in self._pod_decisions:
                    return
                self._pod_decisions[key] = now
                ack = self._pod_acks.get(key)
                if ack is not None:
                    durations.append((now - ack).total_seconds())

            for p in pod_errors:
                self._pod_schedulable.pop(p.key, None)
                first_decision(p.key)
                self._pod_healthy_scheduled.pop(p.key, None)
                self._pod_to_nodeclaim.pop(p.key, None)
            for nodepool, pods in nodepool_pods.items():
                for p in pods:
                    if p.is_scheduled():
                        continue
                    self._pod_schedulable.setdefault(p.key, now)
                    first_decision(p.key)
                    if nodepool and nodepool in healthy:
                        self._pod_healthy_scheduled.setdefault(p.key, now)
                    else:
                        self._pod_healthy_scheduled.pop(p.key, None)
            self._map_pods_to_nodeclaims(nodeclaim_pods or {})
        return durations

    def update_pod_to_nodeclaim_mapping(self, nodeclaim_pods: Mapping[str, Sequence[Pod]]) -> None:
        """Remember which NodeClaim each pod was planned onto (for pod metrics)."""
        with self._lock:
            self._map_pods_to_nodeclaims(nodeclaim_pods)

    def _map_pods_to_nodeclaims(self, nodeclaim_pods: Mapping[str, Sequence[Pod]]) -> None:
        for nc_name, pods in nodeclaim_pods.items():
            for p in pods:
                self._pod_to_nodeclaim[p.key] = nc_name

    def pod_scheduling_decision(self, key: str) -> datetime | None:
        """When Karpenter first decided whether the pod could schedule."""
        with self._lock:
            return self._pod_decisions.get(key)

    def pod_scheduling_success(self, key: str) -> datetime | None:
        """When Karpenter first found a place for the pod (cleared by a later failure)."""
        with self._lock:
            return self._pod_schedulable.get(key)

    def pod_scheduling_success_healthy(self, key: str) -> datetime | None:
        with self._lock:
            return self._pod_healthy_scheduled.get(key)

    def pod_nodeclaim(self, key: str) -> str:
        with self._lock:
            return self._pod_to_nodeclaim.get(key, "")

    def _clear_pod_scheduling(self, key: str) -> None:
        self._pod_acks.pop(key, None)
        self._pod_decisions.pop(key, None)
        self._pod_schedulable.pop(key, None)
        self._pod_healthy_scheduled.pop(key, None)
        self._pod_to_nodeclaim.pop(key, None)

    def clear_pod_scheduling(self, key: str) -> None:
        with self._lock:
            self._clear_pod_scheduling(key)

    # ------------------------------------------------------------------ DaemonSets

    def update_daemonset(self, daemonset: DaemonSet | Mapping[str, Any]) -> None:
        """Cache a DaemonSet and its newest pod (which carries admission-time mutations the
        template lacks) for daemon overhead on new nodes."""
        ds = daemonset if isinstance(daemonset, DaemonSet) else DaemonSet.from_dict(daemonset)
        with self._lock:
            self._daemonsets[ds.key] = ds
            newest: Pod | None = None
            for p in self._pods.values():
                if (
                    p.namespace == ds.namespace
                    and _controlled_by(p, ds)
                    and (newest is None or p.creation_timestamp > newest.creation_timestamp)
                ):
                    newest = p
            if newest is not None:
                self._daemonset_pods[ds.key] = newest
            self._notify("daemonset", ds.key)
        self._flush()

    def _update_daemonset_pod(self, pod: Pod) -> None:
        for o in pod.owner_references:
            if o.controller and o.kind == "DaemonSet":
                key = f"{pod.namespace}/{o.name}"
                ds = self._daemonsets.get(key)
                if ds is None or not _controlled_by(pod, ds):
                    return
                cur = self._daemonset_pods.get(key)
                if (
                    cur is None
                    or cur.key == pod.key
                    or (pod.creation_timestamp > cur.creation_timestamp)
                ):
                    self._daemonset_pods[key] = pod
                return

    def delete_daemonset(self, key: str) -> None:
        with self._lock:
            self._daemonsets.pop(key, None)
            self._daemonset_pods.pop(key, None)
            self._notify("daemonset", key)
        self._flush()

    def daemonset_pod(self, key: str) -> Pod | None:
        """The newest pod of the DaemonSet ``namespace/name``, if one was seen."""
        with self._lock:
            return self._daemonset_pods.get(key)

    def daemonsets(self) -> list[DaemonSet]:
        with self._lock:
            return [self._daemonsets[k] for k in sorted(self._daemonsets)]

    def daemonset_pods(self) -> list[Pod]:
        """One pod per cached DaemonSet for daemon overhead (newest pod, else the template),
        computed exactly as :meth:`ClusterSnapshot.daemonset_pods`."""
        with self._lock:
            daemonsets = tuple(self._daemonsets[k] for k in sorted(self._daemonsets))
            pods = tuple(self._daemonset_pods[k] for k in sorted(self._daemonset_pods))
        return ClusterSnapshot(daemonsets=daemonsets, pods=pods).daemonset_pods()

    # ------------------------------------------------------------------ iteration

    def __iter__(self) -> Iterator[StateNode]:
        return iter(self.state_nodes())


def cluster_of(ctx: ControllerContext) -> Cluster:
    """The context's Cluster (``ctx.cluster``), created on first use: the state
    controllers feed it, and every controller reading cluster state shares it."""
    if ctx.cluster is None:
        ctx.cluster = Cluster.from_context(ctx)
    cluster: Cluster = ctx.cluster
    return cluster


def _controlled_by(pod: Pod, ds: DaemonSet) -> bool:
    for o in pod.owner_references:
        if o.controller and o.kind == "DaemonSet" and o.name == ds.name:
            return not o.uid or not ds.uid or o.uid == ds.uid
    return False
