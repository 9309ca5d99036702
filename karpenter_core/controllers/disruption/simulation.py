"""The scheduling simulation behind every disruption decision (upstream ``helpers.go``
``SimulateScheduling``; spec disruption §5).

"If these candidates went away, where would their pods go, and what would have to launch?"
It is the provisioner's solve over a changed cluster: the candidates are taken out of the
existing capacity and their pods are scheduled together with the pods that are pending
anyway and the pods of nodes already being deleted — so a decision never counts twice on
capacity another decision (or a pending pod) is about to use.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import attrs

from karpenter_core import metrics
from karpenter_core.apis.objects import Pod
from karpenter_core.apis.v1 import NodePool
from karpenter_core.controllers.disruption.candidates import is_under_consolidate_after
from karpenter_core.controllers.disruption.types import Candidate, DisruptionContext
from karpenter_core.provisioning import validate_pod
from karpenter_core.provisioning.scheduler import (
    MIN_VALUES_POLICY_STRICT,
    Results,
    Scheduler,
    apply_default_spreads,
    build_topology,
    order_nodepools,
)
from karpenter_core.provisioning.scheduler.errors import PodError
from karpenter_core.provisioning.scheduler.scheduler import pod_identity
from karpenter_core.provisioning.scheduler.volumetopology import volume_requirements_by_pod
from karpenter_core.runtime.scope import current_controller
from karpenter_core.state.snapshot import ClusterSnapshot
from karpenter_core.state.statenode import StateNode
from karpenter_core.utils.pod import PdbLimits

__all__ = [
    "LISTED_TTL",
    "CandidateDeletingError",
    "SimulationError",
    "cluster_snapshot",
    "pass_scope",
    "simulate_scheduling",
    "uninitialized_node_error",
]

LISTED_TTL = 2.0
"""Within a pass, how long (seconds) API-listed objects (PDBs, volumes, namespaces,
Services, controllers) are reused by later simulations."""


class SimulationError(Exception):
    """The simulation could not be run (the message says why)."""


class CandidateDeletingError(SimulationError):
    """A candidate started deleting since candidates were computed (upstream
    ``errCandidateDeleting``): the decision is moot, try again next pass."""

    def __init__(self, names: Sequence[str]) -> None:
        super().__init__(f"candidate is deleting: {', '.join(names)}")
        self.names = tuple(names)


def uninitialized_node_error(sn: StateNode) -> PodError:
    """A pod would land on a node that has not initialised: the decision would rest on
    capacity that may never become usable."""
    info = []
    if sn.nodeclaim_view is not None:
        info.append(f"nodeclaim/{sn.nodeclaim_view.name}")
    if sn.node is not None:
        info.append(f"node/{sn.node.name}")
    return PodError(f"would schedule against uninitialized {', '.join(info)}")


@contextmanager
def pass_scope(dctx: DisruptionContext) -> Iterator[None]:
    """Within this block, simulations share the objects listed from the API (for at most
    :data:`LISTED_TTL` seconds). Consolidation simulates many subsets of candidates in
    one pass; listing PDBs, volumes, Services... for each would cost an API round trip
    per kind per simulation against a real API server. Cluster state (nodes, pods) is
    always read afresh."""
    cache = dctx.snapshot_cache
    cache.clear()
    cache["scope"] = True
    try:
        yield
    finally:
        cache.clear()


def cluster_snapshot(dctx: DisruptionContext) -> ClusterSnapshot:
    """``cluster.snapshot()``; inside :func:`pass_scope`, the listed objects of a recent
    snapshot are reused with fresh nodes and pods (nodes copied before pods are read, as
    the provisioner does, so capacity seen is never less than reality)."""
    cache = dctx.snapshot_cache
    if not cache.get("scope"):
        return dctx.cluster.snapshot()
    now = dctx.clock.monotonic()
    listed = cache.get("listed")
    if listed is None or now - listed[0] > LISTED_TTL:
        snapshot = dctx.cluster.snapshot()
        cache["listed"] = (now, snapshot)
        return snapshot
    state_nodes = tuple(dctx.cluster.state_nodes())
    pods = tuple(dctx.cluster.pods())
    daemonsets = tuple(dctx.cluster.daemonsets())
    base: ClusterSnapshot = listed[1]
    return attrs.evolve(
        base,
        nodes=tuple(sn.node for sn in state_nodes if sn.node is not None),
        nodeclaims=tuple(sn.nodeclaim for sn in state_nodes if sn.nodeclaim is not None),
        pods=pods,
        daemonsets=daemonsets,
        prebuilt_state_nodes=state_nodes,
    )


def _pending_pods(snapshot: ClusterSnapshot) -> list[Pod]:
    """Provisionable pods the provisioner would schedule (same validation, no events:
    the provisioner already reports the invalid ones)."""
    return [p for p in snapshot.pods if p.is_provisionable() and validate_pod(p, snapshot) is None]


def _consolidate_after_gate(dctx: DisruptionContext, nodepools: Sequence[NodePool]) -> Any:
    # with the API server's defaults (consolidateAfter), which the in-memory one omits
    models = {np.name: np.with_defaults() for np in nodepools}
    now = dctx.clock.now()

    def gate(sn: StateNode) -> bool:
        model = models.get(sn.nodepool_name())
        return is_under_consolidate_after(model, sn.nodeclaim, now)

    return gate


def simulate_scheduling(
    dctx: DisruptionContext,
    candidates: Sequence[Candidate],
    *,
    consolidation: bool = False,
) -> Results:
    """Simulate removing ``candidates``: their currently reschedulable pods, the pending
    pods and the pods of nodes already deleting are scheduled onto the remaining active
    nodes and new NodeClaims.

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
    them, and capacity launched for them would sit idle meanwhile.

    Raises :class:`CandidateDeletingError` when a candidate is deleting now.
    """
    names = {c.name() for c in candidates}
    snapshot = cluster_snapshot(dctx)
    all_nodes = snapshot.state_nodes()
    deleting = [n for n in all_nodes if n.marked_for_deletion]
    moot = sorted(n.name() for n in deleting if n.name() in names)
    if moot:
        raise CandidateDeletingError(moot)
    active = [n for n in all_nodes if not n.marked_for_deletion and n.name() not in names]

    now = dctx.clock.now()
    pdbs = PdbLimits(snapshot.pdbs)
    recorder = dctx.recorder
    pods: list[Pod] = []
    seen: set[str] = set()

    def add(pod: Pod) -> None:
        if pod.key not in seen:
            seen.add(pod.key)
            pods.append(pod)

    for p in _pending_pods(snapshot):
        add(p)
    # CapacityBuffers' virtual pods count as pending, as upstream's GetPendingPods has them:
    # a replacement keeps room for them, and they may stay pending like any pending pod
    for p in dctx.provisioner.virtual_pods():
        add(p)
    for c in candidates:
        for p in c.reschedulable_pods:
            if pdbs.is_currently_reschedulable(p, now, recorder):
                add(p)
    deleting_names = {n.name() for n in deleting}
    deleting_keys: set[str] = set()
    for n in deleting:
        for p in n.pods:
            if pdbs.is_currently_reschedulable(p, now, recorder):
                deleting_keys.add(p.key)
                add(p)

    provisioner = dctx.provisioner
    nodepools = provisioner.dynamic_nodepools()
    instance_types = provisioner.instance_types(nodepools)
    # Disruption may fall back from an exhausted reservation (upstream only disables the
    # fallback for provisioning).
    options = attrs.evolve(provisioner.scheduler_options(), strict_reserved_offerings=False)
    gate = _consolidate_after_gate(dctx, nodepools) if consolidation else None

    solve_snapshot = attrs.evolve(snapshot, prebuilt_state_nodes=tuple(active))
    controller = current_controller()
    start = time.perf_counter()
    was_enabled = gc.isenabled()
    gc.disable()  # the solve makes many short-lived objects and no cycles worth collecting
    try:
        pools = order_nodepools(nodepools)
        spread = apply_default_spreads(solve_snapshot, pods, options)
        state_nodes = solve_snapshot.active_state_nodes()
        topology = build_topology(
            solve_snapshot, state_nodes, pools, instance_types, spread, options
        )
        scheduler = Scheduler(
            pools,
            instance_types,
            state_nodes=state_nodes,
            daemon_pods=solve_snapshot.daemonset_pods(),
            topology=topology,
            options=options,
            volume_requirements=volume_requirements_by_pod(solve_snapshot, spread),
            pod_volumes=solve_snapshot.pod_volumes,
            under_consolidate_after=gate,
            deleting_node_names=deleting_names if consolidation else (),
            controller=controller,
        )
        results = scheduler.solve(spread)
        results.truncate_instance_types(
            options.max_instance_types, options.min_values_policy == MIN_VALUES_POLICY_STRICT
        )
    finally:
        if was_enabled:
            gc.enable()
        metrics.SCHEDULER_SCHEDULING_DURATION_SECONDS.labels(controller=controller).observe(
            max(0.0, time.perf_counter() - start)
        )
    for existing in results.existing_nodes:
        if existing.initialized():
            continue
        err = uninitialized_node_error(existing.state_node)
        for p in existing.pods:
            if p.key not in deleting_keys:
                results.pod_errors[pod_identity(p)] = err
    return results
