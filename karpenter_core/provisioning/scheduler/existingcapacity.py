"""Existing capacity prepared once for many solves over the same cluster.

A disruption pass asks the scheduler the same question once per candidate: "without these
nodes, where would their pods go?". Every one of those solves starts from the same
existing nodes, less a few. Building the solver's view of each node (its label
requirements, the DaemonSet pods still to come, what is left of it) costs the same for
every node, so doing it per solve made the cost of one candidate grow with the cluster.
:class:`ExistingCapacity` builds those views once; a :class:`~.scheduler.Scheduler` given
one uses them shared and copies a node only when it places a pod on it, and finds the
nodes a pod's CPU and memory could fit on from a per-pass index instead of asking every
node. The decisions are the plain constructor's (a differential test checks it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import is_, itemgetter
from typing import Any

from attrs import frozen

from karpenter_core.apis.objects import Pod
from karpenter_core.apis.taints import tolerates
from karpenter_core.provisioning.scheduler import resourcelist as rl
from karpenter_core.provisioning.scheduler.existingnode import ExistingNode, SolveScope
from karpenter_core.scheduling.requirements import Requirements, strict_pod_requirements

__all__ = ["ExistingCapacity", "daemon_requests_for", "existing_node_order"]

_CPU = "cpu"
_MEMORY = "memory"


def daemon_requests_for(
    taints: Sequence[Any], labels: Requirements, daemon_pods: Iterable[Pod]
) -> dict[str, int]:
    """What the DaemonSet pods that would run on a node with ``taints`` and ``labels``
    request in all (those that tolerate it and whose strict node affinity it meets)."""
    return rl.total(
        p.scheduling_requests
        for p in daemon_pods
        if tolerates(taints, p.tolerations) is None
        and labels.is_compatible(strict_pod_requirements(p.node_selector, p.affinity))
    )


def existing_node_order(node: ExistingNode) -> tuple[bool, str]:
    """The order the scheduler tries existing nodes in: initialised first, then by name."""
    return (not node.initialized(), node.name)


_ORDER = itemgetter(0)

_PREPARED = "scheduler.existing-node"
"""The :meth:`StateNode.from_pods` key of a node's prepared view (see :func:`_prepared`)."""


@frozen(eq=False)
class _Prepared:
    """What the solver's view of one node is built from, and that view (never changed)."""

    node_object: Any
    view: Any
    daemon_pods: tuple[Pod, ...]
    node: ExistingNode
    nodepool: str
    capacity: Mapping[str, int]
    order: tuple[bool, str]
    """:func:`existing_node_order` of ``node``."""
    cpu: int
    """The CPU ``node`` has left, -1 when it fits nothing (any quantity left is negative)."""
    memory: int
    """The memory ``node`` has left, -1 when it fits nothing."""


def _new_slot(pods: Sequence[Pod]) -> list[_Prepared | None]:
    return [None]


def _prepared(sn: Any, daemon_pods: tuple[Pod, ...]) -> _Prepared:
    """The solver's view of ``sn`` as a shared node, built once for as long as its Node,
    NodeClaim, pods and the cluster's DaemonSet pods stay the same objects.

    A disruption pass builds this for every node of the cluster; from one pass to the next
    nearly all of them are unchanged (the snapshot's copies share the node's objects), so
    the view is kept with the node's pods (:meth:`StateNode.from_pods`, one slot: the latest
    Node and NodeClaim objects) and only rebased onto the new pass's copy."""
    slot: list[_Prepared | None] = sn.from_pods(_PREPARED, _new_slot)
    node_object, view = sn.node, sn.nodeclaim_view
    hit = slot[0]
    if (
        hit is not None
        and hit.node_object is node_object
        and hit.view is view
        and len(hit.daemon_pods) == len(daemon_pods)
        and all(map(is_, hit.daemon_pods, daemon_pods))
    ):
        return hit
    taints = sn.taints()
    labels = sn.label_requirements()
    node = ExistingNode(
        sn,
        None,
        taints,
        daemon_requests_for(taints, labels, daemon_pods),
        scope=SolveScope(None, None),
        requirements=labels,
    )
    node.shared = True
    left = node.remaining
    over = any(v < 0 for v in left.values())
    prepared = _Prepared(
        node_object,
        view,
        daemon_pods,
        node,
        sn.nodepool_name(),
        sn.capacity(),
        existing_node_order(node),
        -1 if over else left.get(_CPU, 0),
        -1 if over else left.get(_MEMORY, 0),
    )
    slot[0] = prepared
    return prepared


class ExistingCapacity:
    """The existing nodes of one cluster state, ready for many solves (module docstring).

    ``state_nodes`` are every node a solve may use (solves leave some out by name);
    ``daemon_pods`` the DaemonSet pods as the scheduler takes them;
    ``under_consolidate_after`` marks the nodes consolidation must not move pods onto.
    Nothing here may change while solves use it: build one per cluster state.
    """

    def __init__(
        self,
        state_nodes: Sequence[Any],
        daemon_pods: Sequence[Pod],
        under_consolidate_after: Callable[[Any], bool] | None = None,
    ) -> None:
        self.scope = SolveScope(None, None)
        scope = self.scope
        gate = under_consolidate_after
        daemons = tuple(daemon_pods)
        # one loop per node and pass (5,000 nodes, passes every few seconds): what does not
        # change while the node's objects do not is kept with its prepared view
        entries: list[tuple[tuple[bool, str], ExistingNode, _Prepared]] = []
        for sn in state_nodes:
            prepared = _prepared(sn, daemons)
            node = prepared.node.rebased(sn, scope)
            if gate is not None and gate(sn):
                node.under_consolidate_after = True
            entries.append((prepared.order, node, prepared))
        entries.sort(key=_ORDER)  # stable: as sorting the nodes by existing_node_order
        nodes = [e[1] for e in entries]
        self.nodes: tuple[ExistingNode, ...] = tuple(nodes)
        capacity: dict[str, dict[str, int]] = {}
        capacity_of: dict[str, tuple[str, Mapping[str, int]]] = {}
        hostnames: dict[str, int] = {}
        for _, node, prepared in entries:
            capacity_of[node.name] = (prepared.nodepool, prepared.capacity)
            rl.add_into(capacity.setdefault(prepared.nodepool, {}), prepared.capacity)
            hostnames[node.hostname] = hostnames.get(node.hostname, 0) + 1
        self._capacity_of = capacity_of
        self._capacity = capacity
        self._hostnames = hostnames
        self._all_hostnames = frozenset(hostnames)
        self._by_name = {n.name: n for n in nodes}
        self._index = {n.name: i for i, n in enumerate(nodes)}
        # What each node has left of CPU and memory, in solve order; -1 for a node that
        # fits nothing (a negative quantity anywhere).
        self._cpu: list[int] = [e[2].cpu for e in entries]
        self._memory: list[int] = [e[2].memory for e in entries]
        self._fit_cache: dict[tuple[int | None, int | None], tuple[int, ...]] = {}

    def may_fit(self, requests: Mapping[str, int]) -> tuple[int, ...]:
        """Indexes into :attr:`nodes`, in order, of the nodes whose CPU and memory left
        (before this solve placed anything) cover ``requests``: every node a pod with
        these requests can be placed on is among them (placing pods only takes room)."""
        cpu, memory = requests.get(_CPU), requests.get(_MEMORY)
        key = (cpu, memory)
        hit = self._fit_cache.get(key)
        if hit is not None:
            return hit
        c = cpu if cpu is not None else 0
        m = memory if memory is not None else 0
        found = tuple(
            i
            for i, (have_c, have_m) in enumerate(zip(self._cpu, self._memory, strict=True))
            if have_c >= c and have_m >= m
        )
        self._fit_cache[key] = found
        return found

    def without(self, excluded: Iterable[str]) -> list[ExistingNode]:
        """:attr:`nodes` in order, less those named in ``excluded``."""
        out = list(self.nodes)
        for i in sorted((self._index[n] for n in excluded if n in self._index), reverse=True):
            del out[i]
        return out

    def hostnames(self, excluded: Iterable[str] = ()) -> frozenset[str]:
        """The hostnames of the nodes left once those named in ``excluded`` are."""
        gone: dict[str, int] = {}
        for name in excluded:
            node = self._by_name.get(name)
            if node is not None:
                gone[node.hostname] = gone.get(node.hostname, 0) + 1
        if not gone:
            return self._all_hostnames
        return self._all_hostnames - {h for h, k in gone.items() if self._hostnames[h] == k}

    def nodepool_capacity(self, nodepool: str, excluded: Iterable[str] = ()) -> dict[str, int]:
        """The summed capacity of ``nodepool``'s nodes, less those named in ``excluded``."""
        total = dict(self._capacity.get(nodepool, {}))
        for name in excluded:
            entry = self._capacity_of.get(name)
            if entry is not None and entry[0] == nodepool:
                for k, v in entry[1].items():
                    total[k] = total.get(k, 0) - v
        return total
