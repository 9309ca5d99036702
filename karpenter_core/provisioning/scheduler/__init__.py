"""Karpenter's provisioning scheduler: where do pending pods go, and what must launch.

``schedule(snapshot, pods, nodepools, instance_types)`` runs one solve the way upstream's
provisioner does (pools by weight, existing capacity first, topology, preferences relaxed
one at a time, limits, reserved capacity, minValues) and returns :class:`Results`.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping, Sequence
from typing import Any

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


def order_nodepools(nodepools: Sequence[Any]) -> list[Any]:
    """Heaviest weight first, ties by name descending (upstream ``nodepoolutils.OrderByWeight``)."""
    from karpenter_core.provisioning.scheduler.nodeclaimtemplate import nodepool_dict

    def key(np: Any) -> tuple[int, str]:
        d = nodepool_dict(np)
        return (
            int((d.get("spec") or {}).get("weight") or 0),
            str((d.get("metadata") or {}).get("name") or ""),
        )

    return sorted(nodepools, key=key, reverse=True)


def build_topology(
    snapshot: Any,
    state_nodes: Sequence[Any],
    nodepools: Sequence[Any],
    instance_types: Mapping[str, Sequence[Any]],
    pods: Sequence[Any],
    options: SchedulerOptions,
) -> Any | None:
    """The topology of this solve, or None while the topology module is unavailable."""
    try:
        from karpenter_core.provisioning.scheduler.topology import Topology
    except ImportError:  # pragma: no cover - topology is developed separately
        return None
    return Topology(
        snapshot,
        state_nodes,
        nodepools,
        instance_types,
        pods,
        preference_policy=options.preference_policy,
    )


def volume_requirements(snapshot: Any, pods: Sequence[Any]) -> dict[str, Any]:
    try:
        from karpenter_core.provisioning.scheduler.volumetopology import (
            volume_requirements_by_pod,
        )
    except ImportError:  # pragma: no cover - volume topology is developed separately
        return {}
    return dict(volume_requirements_by_pod(snapshot, pods))


def schedule(
    snapshot: Any,
    pods: Sequence[Any],
    nodepools: Sequence[Any],
    instance_types: Mapping[str, Sequence[Any]],
    options: SchedulerOptions = DEFAULT_OPTIONS,
) -> Results:
    """Solve where ``pods`` go given the cluster ``snapshot``.

    ``instance_types`` is keyed by NodePool name. Existing capacity is the snapshot's active
    (not deleting) nodes and NodeClaims; DaemonSets in the snapshot add their overhead.
    """
    # The solve allocates many small, short-lived objects and creates no garbage cycles worth
    # collecting mid-solve; pausing the cyclic collector saves a sizeable share of the time.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _schedule(snapshot, pods, nodepools, instance_types, options)
    finally:
        if was_enabled:
            gc.enable()


def _schedule(
    snapshot: Any,
    pods: Sequence[Any],
    nodepools: Sequence[Any],
    instance_types: Mapping[str, Sequence[Any]],
    options: SchedulerOptions,
) -> Results:
    pools = order_nodepools(nodepools)
    state_nodes = list(snapshot.active_state_nodes()) if snapshot is not None else []
    daemon_pods = list(snapshot.daemonset_pods()) if snapshot is not None else []
    topology = build_topology(snapshot, state_nodes, pools, instance_types, pods, options)
    scheduler = Scheduler(
        pools,
        instance_types,
        state_nodes=state_nodes,
        daemon_pods=daemon_pods,
        topology=topology,
        options=options,
        volume_requirements=volume_requirements(snapshot, pods) if snapshot is not None else {},
        pod_volumes=snapshot.pod_volumes if snapshot is not None else None,
    )
    results = scheduler.solve(pods)
    results.truncate_instance_types(
        options.max_instance_types, options.min_values_policy == MIN_VALUES_POLICY_STRICT
    )
    return results


__all__ = [
    "DEFAULT_OPTIONS",
    "MIN_VALUES_POLICY_BEST_EFFORT",
    "MIN_VALUES_POLICY_STRICT",
    "PREFERENCE_POLICY_IGNORE",
    "PREFERENCE_POLICY_RESPECT",
    "Results",
    "Scheduler",
    "SchedulerOptions",
    "schedule",
]
