"""The snapshot one disruption pass decides on.

The disruption controller takes one :class:`DisruptionSnapshot` at the start of each pass
(and a fresh one when it validates a held command): the only moment it lists from the API
server, asks the cloud provider for instance types or reads cluster state. Candidates,
budgets, every method and the scheduling simulation are then functions of that value, so
a decision can be computed in a unit test from a snapshot built by hand.

The scheduling simulation needs more than deciding who is a candidate — the pods, the
volume, Service and controller objects, the NodePools that may launch and their instance
types, the scheduler's options. Those are :class:`SimulationInputs`; the controller adds
them (:meth:`DisruptionSnapshot.with_simulation`) only once a method has candidates to
decide on, so a pass that finds no candidate lists none of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from types import MappingProxyType

import attrs
from attrs import field, frozen

from karpenter_core.apis.objects import Pod
from karpenter_core.apis.v1 import NodePool
from karpenter_core.cloudprovider.types import InstanceType
from karpenter_core.provisioning.scheduler import DRAInputs, SchedulerOptions
from karpenter_core.state.snapshot import ClusterSnapshot
from karpenter_core.state.statenode import StateNode
from karpenter_core.utils.pod import PdbLimits

__all__ = ["DisruptionSnapshot", "SimulationInputs"]

_EMPTY: Mapping[str, int] = MappingProxyType({})


def _defaults_by_name(nodepools: Sequence[NodePool]) -> Mapping[str, NodePool]:
    # the API server's defaults (consolidateAfter), which the in-memory one omits
    return MappingProxyType({np.name: np.with_defaults() for np in nodepools})


@frozen(eq=False)
class SimulationInputs:
    """What the scheduling simulation reads besides the snapshot's nodes.

    ``cluster`` holds the pods, DaemonSets and listed objects (PDBs, volumes, namespaces,
    Services, pod controllers) with the snapshot's state nodes as its existing capacity;
    ``nodepools`` are the NodePools that may launch (managed, Ready, dynamic) and
    ``instance_types`` theirs; ``options`` the provisioner's scheduler options;
    ``virtual_pods`` the CapacityBuffers' pods (scheduled as pending pods);
    ``controller`` the metrics label of the solve; ``dra`` the cluster's DRA objects
    (DeviceClasses, claims, claim templates, ResourceSlices) while DRA requests are
    simulated, else None."""

    cluster: ClusterSnapshot
    nodepools: tuple[NodePool, ...]
    instance_types: Mapping[str, Sequence[InstanceType]]
    options: SchedulerOptions
    virtual_pods: tuple[Pod, ...] = ()
    controller: str = ""
    dra: DRAInputs | None = None
    defaulted_nodepools: Mapping[str, NodePool] = field(init=False)
    """``nodepools`` with the API server's defaults, by name (``consolidateAfter``)."""
    pass_state: dict[bool, object] = field(init=False, factory=dict, repr=False)
    """What the pass's simulations share, built by the first one (see
    :class:`karpenter_core.disruption.simulation.PassState`), by consolidation flag."""

    @defaulted_nodepools.default
    def _defaulted(self) -> Mapping[str, NodePool]:
        return _defaults_by_name(self.nodepools)


@frozen(eq=False)
class DisruptionSnapshot:
    """Everything one disruption pass decides on, at one instant.

    * ``now`` / ``monotonic`` — the controller's clock (``monotonic`` for nominations);
    * ``nodepools`` — the managed NodePools that could be read, typed, with the API
      server's defaults, by name;
    * ``instance_types`` — by NodePool, the instance types of those whose provider call
      succeeded with at least one type, by name;
    * ``pdbs`` — the cluster's PodDisruptionBudgets;
    * ``state_nodes`` — copies of every cluster-state node (deleting ones included),
      ordered by provider id;
    * ``queued`` — provider ids the orchestration queue is disrupting now;
    * ``consolidation_state`` — when cluster state last changed in a way consolidation
      cares about (the consolidation methods' memo compares it);
    * ``buffer_pods`` — provider ids of nodes holding CapacityBuffer pods;
    * ``nodepool_costs`` — the cost tracker's figure per NodePool, None without a tracker;
    * ``static_nodes`` — per static NodePool, its active NodeClaims plus those pending
      disruption (what its replicas are compared with);
    * ``simulation`` — the simulation's inputs, once the controller has added them.

    Budgets are computed from it (:func:`karpenter_core.disruption.budgets.budget_mapping`).
    """

    now: datetime
    monotonic: float
    nodepools: Mapping[str, NodePool]
    instance_types: Mapping[str, Mapping[str, InstanceType]]
    pdbs: PdbLimits
    state_nodes: tuple[StateNode, ...]
    queued: frozenset[str] = frozenset()
    consolidation_state: datetime | None = None
    buffer_pods: frozenset[str] = frozenset()
    nodepool_costs: Mapping[str, float] | None = None
    static_nodes: Mapping[str, int] = _EMPTY
    simulation: SimulationInputs | None = None
    candidate_sets: dict[str, object] = field(init=False, factory=dict, repr=False)
    """The candidates of each disruption class, built by the first to ask (see
    :func:`karpenter_core.disruption.candidates.get_candidates`): a pass and the validation
    whose snapshot it continues on ask for the same ones."""

    def is_queued(self, provider_id: str) -> bool:
        """The orchestration queue is disrupting the node now."""
        return provider_id in self.queued

    def nodepool_cost(self, nodepool: str) -> float:
        """The tracked cost of ``nodepool`` (0 when unknown or untracked)."""
        costs = self.nodepool_costs
        return costs.get(nodepool, 0.0) if costs is not None else 0.0

    def with_simulation(self, simulation: SimulationInputs) -> DisruptionSnapshot:
        """This snapshot with the simulation's inputs."""
        return attrs.evolve(self, simulation=simulation)
