"""Existing capacity: registered nodes and launched-but-uninitialised NodeClaims (§8.5).

Placing a pod on an existing node uses *strict* label compatibility (no allowance for
undefined well-known labels: a real node already has every label it will ever have), and
the node's remaining resources after the DaemonSet pods that will still arrive on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from karpenter_core.apis.labels import LABEL_HOSTNAME
from karpenter_core.apis.taints import tolerates
from karpenter_core.provisioning.scheduler import resourcelist as rl
from karpenter_core.provisioning.scheduler.errors import PodError
from karpenter_core.provisioning.scheduler.nodeclaim import Placement
from karpenter_core.provisioning.scheduler.podinfo import PodData
from karpenter_core.provisioning.scheduler.topologyadapter import TopologyAdapter
from karpenter_core.scheduling.dynamicresources import AllocationError
from karpenter_core.scheduling.requirements import IN, Requirement, Requirements

if TYPE_CHECKING:
    from karpenter_core.apis.resource import ResourceClaim
    from karpenter_core.provisioning.scheduler.dra import DRASimulation

EXCEEDS_NODE_RESOURCES = PodError("exceeds node resources")


class SolveScope:
    """The solve an :class:`ExistingNode` currently takes part in: its topology and DRA
    simulation. Nodes prepared once for many solves (:mod:`.existingcapacity`) share one
    scope, which each solve points at itself, instead of being rebuilt per solve."""

    __slots__ = ("dra", "topology")

    def __init__(self, topology: TopologyAdapter | None, dra: DRASimulation | None) -> None:
        self.topology = topology
        self.dra = dra


class ExistingNode:
    """A node (or launched NodeClaim) that pods may be placed on during one solve.

    A *shared* node is prepared once for many solves and never changed: the solve that
    first places a pod on it works on a :meth:`clone` instead (copy-on-write)."""

    # one per node of the cluster at every disruption pass: no per-instance dict
    __slots__ = (
        "_initialized",
        "_tolerates_cache",
        "hostname",
        "name",
        "pods",
        "remaining",
        "requirements",
        "scope",
        "shared",
        "state_node",
        "taints",
        "under_consolidate_after",
    )

    def __init__(
        self,
        state_node: Any,
        topology: TopologyAdapter | None,
        taints: Sequence[Any],
        daemon_requests: Mapping[str, int],
        dra: DRASimulation | None = None,
        *,
        scope: SolveScope | None = None,
        requirements: Requirements | None = None,
    ) -> None:
        """``scope`` shares the solve's topology and DRA with other nodes (``topology`` and
        ``dra`` are then ignored and the hostname is not registered: the solve does it);
        ``requirements`` are the node's label requirements when already built."""
        self.state_node = state_node
        self.scope = scope if scope is not None else SolveScope(topology, dra)
        self.name: str = state_node.name()
        self.taints = tuple(taints)
        # Daemons that will still land here: compatible daemon requests minus those already
        # running, never negative.
        pending_daemons = rl.subtract(daemon_requests, state_node.daemonset_requests())
        pending_daemons = {k: max(0, v) for k, v in pending_daemons.items()}
        self.remaining = rl.subtract(state_node.available(), pending_daemons)
        self.requirements = (
            requirements if requirements is not None else state_node.label_requirements()
        ).copy()
        hostname = state_node.hostname()
        self.requirements.add(Requirement.new(LABEL_HOSTNAME, IN, [hostname]))
        self.hostname = hostname
        if scope is None and topology is not None:
            topology.register(LABEL_HOSTNAME, hostname)
        self.pods: list[Any] = []
        self._initialized = bool(state_node.initialized())
        # Consolidation simulations only: the node changed too recently to receive pods
        # moved off other nodes (set by the Scheduler).
        self.under_consolidate_after = False
        self.shared = False
        self._tolerates_cache: dict[Any, object | None] = {}

    @property
    def topology(self) -> TopologyAdapter:
        topology = self.scope.topology
        assert topology is not None, "an existing node used outside a solve"
        return topology

    @property
    def dra(self) -> DRASimulation | None:
        return self.scope.dra

    def clone(self) -> ExistingNode:
        """A private copy for one solve: its own remaining resources, pods and state node
        (placing a pod records host ports and volumes on it); the label requirements and
        the taint answers are shared, as neither changes in place."""
        return self._derived(
            self.state_node.copy(),
            self.scope,
            dict(self.remaining),
            list(self.pods),
            shared=False,
            under_consolidate_after=self.under_consolidate_after,
        )

    def rebased(self, state_node: Any, scope: SolveScope) -> ExistingNode:
        """This prepared node for another cluster state whose copy of the node
        (``state_node``) has the same Node, NodeClaim and pods: what was derived from those
        (remaining resources, label requirements, taints and the answers about them) is
        shared, as a shared node never changes it. Reached through
        :class:`~.existingcapacity.ExistingCapacity`, which knows when that holds."""
        return self._derived(
            state_node, scope, self.remaining, [], shared=True, under_consolidate_after=False
        )

    def _derived(
        self,
        state_node: Any,
        scope: SolveScope,
        remaining: dict[str, int],
        pods: list[Any],
        *,
        shared: bool,
        under_consolidate_after: bool,
    ) -> ExistingNode:
        n = ExistingNode.__new__(ExistingNode)
        n.state_node = state_node
        n.scope = scope
        n.name = self.name
        n.taints = self.taints
        n.remaining = remaining
        n.requirements = self.requirements
        n.hostname = self.hostname
        n.pods = pods
        n._initialized = self._initialized
        n.under_consolidate_after = under_consolidate_after
        n.shared = shared
        n._tolerates_cache = self._tolerates_cache
        return n

    def initialized(self) -> bool:
        return self._initialized

    def can_add(
        self,
        pod: Any,
        data: PodData,
        pod_volumes: Mapping[str, frozenset[str]] | None = None,
        claims: Sequence[ResourceClaim] = (),
    ) -> Placement | object:
        key = tuple(pod.tolerations)
        if key in self._tolerates_cache:
            terr = self._tolerates_cache[key]
        else:
            terr = tolerates(self.taints, key)
            self._tolerates_cache[key] = terr
        if terr is not None:
            return terr
        if pod_volumes:
            limits = self.state_node.volume_limits()
            verr = self.state_node.volume_usage().exceeds_limits(pod_volumes, limits)
            if verr is not None:
                return PodError("checking volume usage", verr)
        if pod.host_ports:
            perr = self.state_node.host_port_usage().conflicts(pod.key, list(pod.host_ports))
            if perr is not None:
                return PodError("checking host port usage", perr)
        if not rl.fits(data.requests, self.remaining):
            return EXCEEDS_NODE_RESOURCES
        rerr = self.requirements.compatible(data.requirements)
        if rerr is not None:
            return rerr
        base = self.requirements.copy()
        base.add(*data.requirements.values())
        last: object = EXCEEDS_NODE_RESOURCES
        for volume_reqs in data.volume_alternatives():
            reqs = base.copy()
            if volume_reqs is not None:
                verr2 = reqs.compatible(volume_reqs)
                if verr2 is not None:
                    last = PodError("incompatible volume requirements", verr2)
                    continue
                reqs.add(*volume_reqs.values())
            topo = self.topology.add_requirements(
                pod, self.taints, data.strict_requirements, reqs, None
            )
            if not isinstance(topo, Requirements):
                last = topo
                continue
            if topo is not reqs:
                cerr = reqs.compatible(topo)
                if cerr is not None:
                    last = cerr
                    continue
                reqs.add(*topo.values())
            if claims and self.dra is not None:
                # The node's requirements are what they are: the allocation only has to
                # succeed (the allocator checks the claims' topology against the node).
                result = self.dra.allocate_on_node(self.state_node, self.requirements, claims)
                if isinstance(result, AllocationError):
                    last = PodError("allocating dynamic resources", result)
                    continue
                return Placement(reqs, allocation=result)
            return Placement(reqs)
        return last

    def add(
        self,
        pod: Any,
        data: PodData,
        placement: Placement,
        pod_volumes: Mapping[str, frozenset[str]] | None = None,
    ) -> None:
        self.pods.append(pod)
        result = placement.allocation
        if result is not None and result.allocation is not None:
            result.allocation.commit()
        for k, v in data.requests.items():
            self.remaining[k] = self.remaining.get(k, 0) - v
        self.requirements = placement.requirements
        self.topology.record(pod, self.taints, placement.requirements, None)
        self.state_node.reserve(pod.key, pod.host_ports, pod_volumes or None)
