"""The scheduling simulation behind every disruption decision (upstream ``helpers.go``
``SimulateScheduling``; spec disruption §5).

"If these candidates went away, where would their pods go, and what would have to launch?"
It is the provisioner's solve over a changed cluster: the candidates are taken out of the
existing capacity and their pods are scheduled together with the pods that are pending
anyway and the pods of nodes already being deleted — so a decision never counts twice on
capacity another decision (or a pending pod) is about to use.

It is a function of the pass's
:class:`~karpenter_core.disruption.snapshot.DisruptionSnapshot` (its state nodes and
:class:`~karpenter_core.disruption.snapshot.SimulationInputs`): every simulation of a pass
sees the same cluster, and nothing is listed while a method decides.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol

import attrs

from karpenter_core import metrics
from karpenter_core.apis.objects import Pod
from karpenter_core.disruption.candidates import (
    consolidate_after_reference,
    consolidate_after_seconds,
)
from karpenter_core.disruption.notices import EventSink, Notice
from karpenter_core.disruption.snapshot import DisruptionSnapshot, SimulationInputs
from karpenter_core.disruption.types import Candidate
from karpenter_core.provisioning import validate_pod
from karpenter_core.provisioning.scheduler import (
    MIN_VALUES_POLICY_STRICT,
    DRAInputs,
    Results,
    Scheduler,
    SchedulerOptions,
    apply_default_spreads,
    build_topology,
    order_nodepools,
)
from karpenter_core.provisioning.scheduler.dra import DRASimulation
from karpenter_core.provisioning.scheduler.errors import PodError
from karpenter_core.provisioning.scheduler.existingcapacity import ExistingCapacity
from karpenter_core.provisioning.scheduler.scheduler import pod_identity
from karpenter_core.provisioning.scheduler.templates import NodePoolTemplates
from karpenter_core.provisioning.scheduler.topology import TopologyBase
from karpenter_core.provisioning.scheduler.volumetopology import volume_requirements_by_pod
from karpenter_core.state.snapshot import ClusterSnapshot, pod_facts_for
from karpenter_core.state.statenode import StateNode
from karpenter_core.utils.pod import PdbLimits

__all__ = [
    "REUSE_PASS_STATE",
    "CandidateDeletingError",
    "PassState",
    "SimulationError",
    "SnapshotSource",
    "simulate_scheduling",
    "uninitialized_node_error",
]


REUSE_PASS_STATE = True
"""Whether :func:`simulate_scheduling` reuses a :class:`PassState` by default (tests that
compare with the rebuilding reference switch it off)."""


class SimulationError(Exception):
    """The simulation could not be run (the message says why)."""


class CandidateDeletingError(SimulationError):
    """A candidate is deleting in the snapshot simulated on (upstream
    ``errCandidateDeleting``; a held command's candidate that started deleting during the
    wait): the decision is moot, try again next pass."""

    def __init__(self, names: Sequence[str]) -> None:
        super().__init__(f"candidate is deleting: {', '.join(names)}")
        self.names = tuple(names)


class SnapshotSource(Protocol):
    """Something holding the current pass's snapshot: a method written before snapshots
    passes its ``DisruptionContext``."""

    @property
    def snapshot(self) -> DisruptionSnapshot | None: ...


def uninitialized_node_error(sn: StateNode) -> PodError:
    """A pod would land on a node that has not initialised: the decision would rest on
    capacity that may never become usable."""
    info = []
    if sn.nodeclaim_view is not None:
        info.append(f"nodeclaim/{sn.nodeclaim_view.name}")
    if sn.node is not None:
        info.append(f"node/{sn.node.name}")
    return PodError(f"would schedule against uninitialized {', '.join(info)}")


def _inputs(
    source: DisruptionSnapshot | SnapshotSource,
) -> tuple[DisruptionSnapshot, SimulationInputs]:
    snapshot = source if isinstance(source, DisruptionSnapshot) else source.snapshot
    if snapshot is None:
        raise SimulationError("no disruption pass is running: there is no snapshot to simulate")
    if snapshot.simulation is None:
        raise SimulationError("the snapshot was taken without the simulation's inputs")
    return snapshot, snapshot.simulation


def _pending_pods(cluster: ClusterSnapshot) -> list[Pod]:
    """Provisionable pods the provisioner would schedule (same validation, no events:
    the provisioner already reports the invalid ones)."""
    # asked at each pass, when nearly every pod is bound: the unbound ones as cluster state
    # keeps them when the snapshot has them for its pods, else every pod, field test inline
    facts = pod_facts_for(cluster, cluster.pods)
    pods = facts.unbound if facts is not None else cluster.pods
    return [
        p
        for p in pods
        if not p.node_name and p.is_provisionable() and validate_pod(p, cluster) is None
    ]


def simulate_scheduling(
    snapshot: DisruptionSnapshot | SnapshotSource,
    candidates: Sequence[Candidate],
    *,
    consolidation: bool = False,
    notices: list[Notice] | None = None,
    reuse: bool | None = None,
) -> Results:
    """Simulate removing ``candidates`` from the snapshot's cluster: their currently
    reschedulable pods, the pending pods and the pods of nodes already deleting are
    scheduled onto the remaining active nodes and new NodeClaims.

    Returns the scheduler's :class:`Results`: ``new_nodeclaims`` (the replacements a
    command would launch), ``existing_nodes`` (placements on remaining nodes) and
    ``pod_errors``; ``results.all_non_pending_pods_scheduled()`` says whether every pod
    that runs today found a place (pods already pending may stay pending). A pod that
    would only fit on a node that has not initialised gets an error (unless it comes from
    a node already being deleted), so decisions never rest on capacity that may not come.

    ``consolidation`` is upstream's ``IsConsolidationSimulation``: pods that run today are
    not placed on nodes still inside their NodePool's ``consolidateAfter`` window (except
    pods leaving deleting nodes). Drift passes False.

    Pods held by ``do-not-disrupt`` or by a PDB that never allows an eviction are not
    given capacity: they will not move until their node's terminationGracePeriod forces
    them, and capacity launched for them would sit idle meanwhile. The events the pod
    checks produce are appended to ``notices`` when given.

    ``snapshot`` is the pass's snapshot with its simulation inputs (a method written
    before snapshots may pass its ``DisruptionContext``). Raises
    :class:`CandidateDeletingError` when a candidate is deleting in it, and
    :class:`SimulationError` when it has no simulation inputs.

    ``reuse`` (default :data:`REUSE_PASS_STATE`) builds what every simulation of the pass
    shares once per snapshot — the existing nodes as the solver sees them, the topology's
    counts, the pending pods (:class:`PassState`) — so a simulation costs the same on a
    small cluster as on a large one; False rebuilds it all per simulation, the reference
    the differential tests compare with. Both decide the same.
    """
    snap, inputs = _inputs(snapshot)
    if reuse if reuse is not None else REUSE_PASS_STATE:
        return _simulate_reusing(snap, inputs, candidates, consolidation, notices)
    names = {c.name() for c in candidates}
    cluster = inputs.cluster
    all_nodes = cluster.state_nodes()
    deleting = [n for n in all_nodes if n.marked_for_deletion]
    _check_not_deleting(deleting, names)
    active = [n for n in all_nodes if not n.marked_for_deletion and n.name() not in names]
    batch = _Batch.of(snap, inputs, _pending_pods(cluster), candidates, deleting, notices)
    options = _options(inputs)
    gate = _consolidation_gate(snap, inputs) if consolidation else None
    solve_snapshot = attrs.evolve(cluster, prebuilt_state_nodes=tuple(active))

    def solve() -> Results:
        pools = order_nodepools(inputs.nodepools)
        spread = apply_default_spreads(solve_snapshot, batch.pods, options)
        state_nodes = solve_snapshot.active_state_nodes()
        topology = build_topology(
            solve_snapshot, state_nodes, pools, inputs.instance_types, spread, options
        )
        scheduler = Scheduler(
            pools,
            inputs.instance_types,
            state_nodes=state_nodes,
            daemon_pods=solve_snapshot.daemonset_pods(),
            topology=topology,
            options=options,
            volume_requirements=volume_requirements_by_pod(solve_snapshot, spread),
            pod_volumes=solve_snapshot.pod_volumes,
            under_consolidate_after=gate,
            deleting_node_names=batch.deleting_names if consolidation else (),
            controller=inputs.controller,
            dra=_dra(inputs, options, batch, state_nodes),
        )
        return scheduler.solve(spread)

    return _finish(_timed(inputs.controller, solve), options, batch)


class PassState:
    """What every scheduling simulation of one pass shares, built once per snapshot (and
    consolidation flag): the state nodes, the pending pods, the NodePools in order, the
    DaemonSet pods, the NodePools' templates (:class:`NodePoolTemplates`), the topology's
    counts (:class:`TopologyBase`) and the existing nodes as the solver sees them
    (:class:`ExistingCapacity`). A simulation then only takes its
    candidates out, so its cost does not grow with the cluster."""

    def __init__(
        self, snapshot: DisruptionSnapshot, inputs: SimulationInputs, consolidation: bool
    ) -> None:
        cluster = inputs.cluster
        options = _options(inputs)
        all_nodes = cluster.state_nodes()
        self.deleting = [n for n in all_nodes if n.marked_for_deletion]
        self.active = [n for n in all_nodes if not n.marked_for_deletion]
        self.pending = _pending_pods(cluster)
        self.pools = order_nodepools(inputs.nodepools)
        daemon_pods = cluster.daemonset_pods()
        if options.ignore_dra_requests:
            daemon_pods = [p for p in daemon_pods if not p.has_dra_requirements]
        self.daemon_pods = daemon_pods
        self.templates = NodePoolTemplates(self.pools, inputs.instance_types, options, daemon_pods)
        self.topology = TopologyBase(cluster, self.active, self.pools, inputs.instance_types)
        gate = _consolidation_gate(snapshot, inputs) if consolidation else None
        self.capacity = ExistingCapacity(self.active, daemon_pods, gate)

    @classmethod
    def of(
        cls, snapshot: DisruptionSnapshot, inputs: SimulationInputs, consolidation: bool
    ) -> PassState:
        """The pass state of ``inputs`` (built on first use, then kept with them)."""
        found = inputs.pass_state.get(consolidation)
        if not isinstance(found, PassState):
            was_enabled = gc.isenabled()
            gc.disable()  # many small objects, no cycles: as for a solve
            try:
                found = inputs.pass_state[consolidation] = cls(snapshot, inputs, consolidation)
            finally:
                if was_enabled:
                    gc.enable()
        return found


def _simulate_reusing(
    snap: DisruptionSnapshot,
    inputs: SimulationInputs,
    candidates: Sequence[Candidate],
    consolidation: bool,
    notices: list[Notice] | None,
) -> Results:
    state = PassState.of(snap, inputs, consolidation)
    names = {c.name() for c in candidates}
    _check_not_deleting(state.deleting, names)
    cluster = inputs.cluster
    batch = _Batch.of(snap, inputs, state.pending, candidates, state.deleting, notices)
    options = _options(inputs)

    def solve() -> Results:
        spread = apply_default_spreads(cluster, batch.pods, options)
        topology = state.topology.topology(
            spread, names, preference_policy=options.preference_policy
        )
        dra = None
        if not options.ignore_dra_requests:
            dra = _dra(inputs, options, batch, [n for n in state.active if n.name() not in names])
        scheduler = Scheduler(
            state.pools,
            inputs.instance_types,
            daemon_pods=state.daemon_pods,
            topology=topology,
            options=options,
            volume_requirements=volume_requirements_by_pod(cluster, spread),
            pod_volumes=cluster.pod_volumes,
            deleting_node_names=batch.deleting_names if consolidation else (),
            controller=inputs.controller,
            dra=dra,
            existing=state.capacity,
            excluded_nodes=names,
            pools=state.templates,
        )
        return scheduler.solve(spread)

    return _finish(_timed(inputs.controller, solve), options, batch)


def _check_not_deleting(deleting: Sequence[StateNode], names: set[str]) -> None:
    moot = sorted(n.name() for n in deleting if n.name() in names)
    if moot:
        raise CandidateDeletingError(moot)


def _options(inputs: SimulationInputs) -> SchedulerOptions:
    # Disruption may fall back from an exhausted reservation (upstream only disables the
    # fallback for provisioning).
    return attrs.evolve(inputs.options, strict_reserved_offerings=False)


def _consolidation_gate(
    snap: DisruptionSnapshot, inputs: SimulationInputs
) -> Callable[[StateNode], bool]:
    windows = {
        name: consolidate_after_seconds(model) for name, model in inputs.defaulted_nodepools.items()
    }
    now = snap.now

    def under_consolidate_after(sn: StateNode) -> bool:
        # is_under_consolidate_after, with the node's NodePool and window start kept with
        # the node while its Node and NodeClaim are the same objects (asked of every node
        # at every pass)
        slot: list[tuple[Any, Any, str, datetime | None] | None] = sn.from_pods(
            _GATE, _new_gate_slot
        )
        node, view = sn.node, sn.nodeclaim_view
        hit = slot[0]
        if hit is None or hit[0] is not node or hit[1] is not view:
            hit = slot[0] = (
                node,
                view,
                sn.nodepool_name(),
                consolidate_after_reference(sn.nodeclaim),
            )
        window = windows.get(hit[2])
        ref = hit[3]
        return window is not None and ref is not None and window - (now - ref).total_seconds() > 0

    return under_consolidate_after


_GATE = "disruption.consolidate-after"
"""The :meth:`StateNode.from_pods` key of a node's NodePool and window start (one slot)."""


def _new_gate_slot(pods: Sequence[Pod]) -> list[tuple[Any, Any, str, datetime | None] | None]:
    return [None]


@attrs.define
class _Batch:
    """The pods one simulation schedules: the pending ones, the CapacityBuffers' virtual
    pods, and those that would leave the candidates and the deleting nodes."""

    pods: list[Pod]
    moving_uids: set[str]
    deleting_names: set[str]
    deleting_keys: set[str]

    @classmethod
    def of(
        cls,
        snap: DisruptionSnapshot,
        inputs: SimulationInputs,
        pending: Sequence[Pod],
        candidates: Sequence[Candidate],
        deleting: Sequence[StateNode],
        notices: list[Notice] | None,
    ) -> _Batch:
        now = snap.now
        pdbs = PdbLimits(inputs.cluster.pdbs)
        sink = EventSink(notices) if notices is not None else None
        pods: list[Pod] = []
        seen: set[str] = set()

        def add(pod: Pod) -> None:
            if pod.key not in seen:
                seen.add(pod.key)
                pods.append(pod)

        for p in pending:
            add(p)
        # CapacityBuffers' virtual pods count as pending, as upstream's GetPendingPods has
        # them: a replacement keeps room for them, and they may stay pending like any
        # pending pod
        for p in inputs.virtual_pods:
            add(p)
        # Pods that would leave their node: the candidates' and those of deleting nodes.
        # Their claims' devices are free in the simulation, and their claims allocated again
        # where the pods go (design "Disruption / Consolidation Re-allocation Semantics").
        moving_uids: set[str] = set()
        for c in candidates:
            for p in c.reschedulable_pods:
                if pdbs.is_currently_reschedulable(p, now, sink):
                    add(p)
                    moving_uids.add(p.uid)
        deleting_keys: set[str] = set()
        for n in deleting:
            for p in n.pods:
                if pdbs.is_currently_reschedulable(p, now, sink):
                    deleting_keys.add(p.key)
                    add(p)
                    moving_uids.add(p.uid)
        return cls(pods, moving_uids, {n.name() for n in deleting}, deleting_keys)


def _dra(
    inputs: SimulationInputs,
    options: SchedulerOptions,
    batch: _Batch,
    state_nodes: Sequence[StateNode],
) -> DRASimulation | None:
    """The solve's DRA simulation, over ``state_nodes`` (the candidates are not among
    them: their ResourceSlices are no capacity)."""
    if options.ignore_dra_requests:
        return None
    return DRASimulation(
        (inputs.dra or DRAInputs()).with_deleting_pods(batch.moving_uids),
        state_nodes,
        inputs.instance_types,
    )


def _timed(controller: str, solve: Callable[[], Results]) -> Results:
    """``solve()`` with the cyclic collector paused, timed in the scheduling histogram."""
    start = time.perf_counter()
    was_enabled = gc.isenabled()
    gc.disable()  # the solve makes many short-lived objects and no cycles worth collecting
    try:
        return solve()
    finally:
        if was_enabled:
            gc.enable()
        metrics.SCHEDULER_SCHEDULING_DURATION_SECONDS.labels(controller=controller).observe(
            max(0.0, time.perf_counter() - start)
        )


def _finish(results: Results, options: SchedulerOptions, batch: _Batch) -> Results:
    results.truncate_instance_types(
        options.max_instance_types,
        options.min_values_policy == MIN_VALUES_POLICY_STRICT,
        options.scoring,
    )
    for existing in results.existing_nodes:
        if not existing.pods or existing.initialized():
            continue
        err = uninitialized_node_error(existing.state_node)
        for p in existing.pods:
            if p.key not in batch.deleting_keys:
                results.pod_errors[pod_identity(p)] = err
    return results
