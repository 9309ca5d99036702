"""Karpenter's provisioning scheduler: where do pending pods go, and what must launch.

``schedule(snapshot, pods, nodepools, instance_types)`` runs one solve the way upstream's
provisioner does (pools by weight, existing capacity first, topology, preferences relaxed
one at a time, limits, reserved capacity, minValues) and returns :class:`Results`.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Mapping, Sequence

from karpenter_core import metrics
from karpenter_core.apis.objects import Pod
from karpenter_core.apis.v1 import NodePool
from karpenter_core.cloudprovider.types import InstanceType
from karpenter_core.provisioning.scheduler.dra import DRAInputs, DRASimulation
from karpenter_core.provisioning.scheduler.existingcapacity import ExistingCapacity
from karpenter_core.provisioning.scheduler.results import Results
from karpenter_core.provisioning.scheduler.scheduler import (
    DEFAULT_OPTIONS,
    MIN_VALUES_POLICY_BEST_EFFORT,
    MIN_VALUES_POLICY_STRICT,
    PREFERENCE_POLICY_IGNORE,
    PREFERENCE_POLICY_RESPECT,
    Scheduler,
    SchedulerOptions,
)
from karpenter_core.provisioning.scheduler.topology import (
    DefaultTopologySpreadInjector,
    Topology,
)
from karpenter_core.provisioning.scheduler.volumetopology import volume_requirements_by_pod
from karpenter_core.runtime.scope import current_controller
from karpenter_core.scheduling.requirements import Requirements
from karpenter_core.state.snapshot import ClusterSnapshot
from karpenter_core.state.statenode import StateNode

PREPARED_EXISTING_NODES = True
"""Whether :func:`schedule` takes the existing nodes from their prepared views
(:class:`ExistingCapacity`); tests that compare with the plain constructor switch it off.
Both decide the same."""


def order_nodepools(nodepools: Sequence[NodePool]) -> list[NodePool]:
    """Heaviest weight first, ties by name descending (upstream ``nodepoolutils.OrderByWeight``)."""
    return sorted(nodepools, key=lambda np: (np.weight, np.name), reverse=True)


def build_topology(
    snapshot: ClusterSnapshot | None,
    state_nodes: Sequence[StateNode],
    nodepools: Sequence[NodePool],
    instance_types: Mapping[str, Sequence[InstanceType]],
    pods: Sequence[Pod],
    options: SchedulerOptions,
) -> Topology:
    """The topology of this solve (groups are created as pods are seen)."""
    return Topology(
        snapshot,
        state_nodes,
        nodepools,
        instance_types,
        pods,
        preference_policy=options.preference_policy,
    )


def apply_default_spreads(
    snapshot: ClusterSnapshot | None, pods: Sequence[Pod], options: SchedulerOptions
) -> list[Pod]:
    """``pods`` with the ``--scheduler-config`` default spread constraints stamped on those
    that declare none, each with the selector deduced from the snapshot's Services and the
    pod's controller (spec §10.7). Without a config (or a snapshot) the pods are unchanged."""
    defaults = options.default_spread_constraints()
    if not defaults or snapshot is None:
        return list(pods)
    injector = DefaultTopologySpreadInjector(
        defaults,
        services=[s.raw for s in snapshot.services],
        controllers=[c.raw for c in snapshot.controllers],
    )
    injected: list[Pod] = injector.inject(pods)
    return injected


def schedule(
    snapshot: ClusterSnapshot | None,
    pods: Sequence[Pod],
    nodepools: Sequence[NodePool],
    instance_types: Mapping[str, Sequence[InstanceType]],
    options: SchedulerOptions = DEFAULT_OPTIONS,
    controller: str | None = None,
    dra: DRAInputs | None = None,
) -> Results:
    """Solve where ``pods`` go given the cluster ``snapshot``.

    ``instance_types`` is keyed by NodePool name. Existing capacity is the snapshot's active
    (not deleting) nodes and NodeClaims; DaemonSets in the snapshot add their overhead.
    Raises ``ValueError`` naming the NodePool for a NodePool the scheduler cannot read.

    Every solve is timed in ``karpenter_scheduler_scheduling_duration_seconds`` under
    ``controller`` (by default the controller whose reconcile is running), so provisioning
    and disruption simulations are measured alike.

    With ``options.ignore_dra_requests`` off, pods' ResourceClaims are simulated against
    ``dra`` (the cluster's DeviceClasses, claims, claim templates and ResourceSlices; none
    when omitted) and the instance types' template devices (:mod:`.dra`).
    """
    name = current_controller() if controller is None else controller
    start = time.perf_counter()
    try:
        return _schedule_without_gc(snapshot, pods, nodepools, instance_types, options, name, dra)
    finally:
        metrics.SCHEDULER_SCHEDULING_DURATION_SECONDS.labels(controller=name).observe(
            max(0.0, time.perf_counter() - start)
        )


def _schedule_without_gc(
    snapshot: ClusterSnapshot | None,
    pods: Sequence[Pod],
    nodepools: Sequence[NodePool],
    instance_types: Mapping[str, Sequence[InstanceType]],
    options: SchedulerOptions,
    controller: str,
    dra: DRAInputs | None = None,
) -> Results:
    # The solve allocates many small, short-lived objects and creates no garbage cycles worth
    # collecting mid-solve; pausing the cyclic collector saves a sizeable share of the time.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _schedule(snapshot, pods, nodepools, instance_types, options, controller, dra)
    finally:
        if was_enabled:
            gc.enable()


def _schedule(
    snapshot: ClusterSnapshot | None,
    pods: Sequence[Pod],
    nodepools: Sequence[NodePool],
    instance_types: Mapping[str, Sequence[InstanceType]],
    options: SchedulerOptions,
    controller: str,
    dra: DRAInputs | None = None,
) -> Results:
    pools = order_nodepools(nodepools)
    pods = apply_default_spreads(snapshot, pods, options)
    state_nodes: list[StateNode] = []
    daemon_pods: list[Pod] = []
    volume_reqs: dict[str, list[Requirements]] = {}
    if snapshot is not None:
        state_nodes = snapshot.active_state_nodes()
        daemon_pods = snapshot.daemonset_pods()
        volume_reqs = volume_requirements_by_pod(snapshot, pods)
    topology = build_topology(snapshot, state_nodes, pools, instance_types, pods, options)
    simulation = (
        DRASimulation(dra or DRAInputs(), state_nodes, instance_types)
        if not options.ignore_dra_requests
        else None
    )
    # The existing nodes as the solver sees them, from each node's prepared view (kept with
    # the node while its Node, NodeClaim and pods are unchanged, shared with disruption's
    # passes): building them afresh was about a second per solve at 5,000 nodes.
    existing: ExistingCapacity | None = None
    if PREPARED_EXISTING_NODES:
        existing_daemons = daemon_pods
        if options.ignore_dra_requests:  # as the NodePool templates take them
            existing_daemons = [
                p for p in daemon_pods if not getattr(p, "has_dra_requirements", False)
            ]
        existing = ExistingCapacity(state_nodes, existing_daemons)
    scheduler = Scheduler(
        pools,
        instance_types,
        state_nodes=state_nodes if existing is None else (),
        daemon_pods=daemon_pods,
        topology=topology,
        options=options,
        volume_requirements=volume_reqs,
        pod_volumes=snapshot.pod_volumes if snapshot is not None else None,
        controller=controller,
        dra=simulation,
        existing=existing,
    )
    results = scheduler.solve(pods)
    results.truncate_instance_types(
        options.max_instance_types,
        options.min_values_policy == MIN_VALUES_POLICY_STRICT,
        options.scoring,
    )
    return results


__all__ = [
    "DEFAULT_OPTIONS",
    "MIN_VALUES_POLICY_BEST_EFFORT",
    "MIN_VALUES_POLICY_STRICT",
    "PREFERENCE_POLICY_IGNORE",
    "PREFERENCE_POLICY_RESPECT",
    "DRAInputs",
    "Results",
    "Scheduler",
    "SchedulerOptions",
    "apply_default_spreads",
    "build_topology",
    "order_nodepools",
    "schedule",
]
