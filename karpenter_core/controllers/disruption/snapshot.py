"""Taking the snapshot a disruption pass decides on: the one place disruption lists from
the API server, asks the cloud provider for instance types and reads cluster state (the
decisions themselves are :mod:`karpenter_core.disruption`'s functions of it)."""

from __future__ import annotations

import logging

from karpenter_core.apis.v1 import APIError, NodePool
from karpenter_core.cloudprovider.errors import is_unevaluated_nodepool
from karpenter_core.cloudprovider.types import InstanceType
from karpenter_core.controllers.disruption.context import DisruptionContext
from karpenter_core.disruption.snapshot import DisruptionSnapshot, SimulationInputs
from karpenter_core.runtime.scope import current_controller
from karpenter_core.state.cluster import is_managed_nodepool
from karpenter_core.state.cost import existing_cluster_cost
from karpenter_core.utils.pod import PdbLimits

__all__ = ["read_nodepools", "take_snapshot", "with_simulation"]

log = logging.getLogger("karpenter.disruption")

NODEPOOLS = "nodepools"
PDBS = ("policy/v1", "PodDisruptionBudget")


def read_nodepools(
    dctx: DisruptionContext,
) -> tuple[dict[str, NodePool], dict[str, dict[str, InstanceType]]]:
    """The managed NodePools (typed, with the API server's defaults) and, for each whose
    provider call succeeded with at least one type, its instance types by name. A pool
    that cannot be read, or whose provider call fails or returns nothing, yields no
    candidates this pass (logged), never an error."""
    nodepools: dict[str, NodePool] = {}
    its: dict[str, dict[str, InstanceType]] = {}
    for obj in dctx.kube.list(NODEPOOLS).items:
        name = str((obj.get("metadata") or {}).get("name") or "")
        if not name or not is_managed_nodepool(obj, dctx.cloud_provider):
            continue
        try:
            model = NodePool.from_dict(obj, defaults=True)
        except (APIError, ValueError, TypeError) as e:
            log.error("disruption: ignoring nodepool %s: %s", name, e)
            continue
        nodepools[name] = model
        try:
            types = list(dctx.cloud_provider.get_instance_types(model))
        except Exception as e:
            if is_unevaluated_nodepool(e):
                log.debug("disruption: skipping nodepool %s: node overlays not applied yet", name)
            else:
                log.error("disruption: listing instance types for nodepool %s: %s", name, e)
            continue
        if types:
            its[name] = {it.name: it for it in types}
    return nodepools, its


def take_snapshot(dctx: DisruptionContext, *, simulation: bool = False) -> DisruptionSnapshot:
    """The snapshot of one pass (see :class:`DisruptionSnapshot`); with ``simulation``, its
    simulation inputs too. Raises the client's ``ApiError`` when listing fails."""
    clock = dctx.clock
    now = clock.now()
    monotonic = clock.monotonic()
    nodepools, instance_types = read_nodepools(dctx)
    pdbs = PdbLimits.from_dicts(dctx.kube.list(PDBS).items)
    cluster = dctx.cluster
    state_nodes = tuple(cluster.state_nodes())
    tracker = existing_cluster_cost(dctx.ctx)
    costs = (
        {name: tracker.nodepool_cost(name) for name in nodepools} if tracker is not None else None
    )
    static_nodes = {}
    for name, np in nodepools.items():
        if np.is_static:
            counts = cluster.nodepool_state.node_counts(name)
            static_nodes[name] = counts.active + counts.pending_disruption
    snapshot = DisruptionSnapshot(
        now=now,
        monotonic=monotonic,
        nodepools=nodepools,
        instance_types=instance_types,
        pdbs=pdbs,
        state_nodes=state_nodes,
        queued=frozenset(dctx.queue.provider_ids()),
        consolidation_state=cluster.consolidation_state(),
        buffer_pods=frozenset(
            pid for sn in state_nodes if cluster.has_buffer_pods(pid := sn.provider_id())
        ),
        nodepool_costs=costs,
        static_nodes=static_nodes,
    )
    return with_simulation(dctx, snapshot) if simulation else snapshot


def with_simulation(dctx: DisruptionContext, snapshot: DisruptionSnapshot) -> DisruptionSnapshot:
    """``snapshot`` with the simulation's inputs: the cluster's pods and DaemonSets and the
    objects listed for the solve (PDBs, volumes, namespaces, Services, pod controllers),
    over the snapshot's own state nodes; the NodePools that may launch and their instance
    types; the provisioner's scheduler options; the CapacityBuffers' virtual pods; the
    cluster's DRA objects while DRA requests are simulated."""
    if snapshot.simulation is not None:
        return snapshot
    # over the snapshot's own copies of the state nodes (not copied a second time)
    cluster = dctx.cluster.snapshot(snapshot.state_nodes)
    provisioner = dctx.provisioner
    nodepools = provisioner.dynamic_nodepools()
    inputs = SimulationInputs(
        cluster=cluster,
        nodepools=tuple(nodepools),
        instance_types=provisioner.instance_types(nodepools),
        options=provisioner.scheduler_options(),
        virtual_pods=tuple(provisioner.virtual_pods()),
        controller=current_controller(),
        dra=provisioner.dra_inputs(),
    )
    return snapshot.with_simulation(inputs)
