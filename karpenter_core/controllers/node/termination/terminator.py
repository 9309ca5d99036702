"""Tainting and draining a node (upstream ``terminator/terminator.go``).

The drain never evicts by itself: it decides *which* pods go next and hands them to the
:class:`~karpenter_core.controllers.node.termination.eviction.EvictionQueue`. It goes in
the order of the kubelet's graceful node shutdown — non-critical pods before critical
ones, and within each, workload pods before DaemonSet pods (so daemons such as log
shippers outlive what they serve) — and only moves to the next tier once every pod of the
current one is gone. Pods past their force-delete point are queued at once whatever their
tier, so a PDB on an early tier can never hold a pod past the node's deadline.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from attrs import frozen

from karpenter_core.apis.taints import DISRUPTED_NO_SCHEDULE_TAINT, Taint
from karpenter_core.controllers.node.termination import pods as podutil
from karpenter_core.controllers.node.termination.eviction import EvictionQueue
from karpenter_core.kube.client import KubeClient, shared_list
from karpenter_core.runtime.clock import Clock
from karpenter_core.runtime.events import EventRecorder

__all__ = [
    "EXCLUDE_FROM_LOAD_BALANCERS_LABEL",
    "NodeDrainError",
    "Terminator",
    "drain_tiers",
    "tainted",
]

log = logging.getLogger("karpenter.termination")

EXCLUDE_FROM_LOAD_BALANCERS_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"
"""Set to ``karpenter`` while a node drains, so load balancers stop sending it traffic
before its pods go (instead of failing health checks afterwards)."""


@frozen
class NodeDrainError:
    """The drain is not finished: pods are still waiting to leave the node."""

    waiting: int

    def __str__(self) -> str:
        return f"{self.waiting} pods are waiting to be evicted"


def drain_tiers(pods: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """Pods in drain order: non-critical workloads, non-critical daemons, critical
    workloads, critical daemons (critical = ``system-cluster-critical`` or
    ``system-node-critical`` priority class)."""
    tiers: list[list[Mapping[str, Any]]] = [[], [], [], []]
    for pod in pods:
        index = (2 if podutil.is_critical(pod) else 0) + (
            1 if podutil.is_owned_by_daemonset(pod) else 0
        )
        tiers[index].append(pod)
    return tiers


def tainted(node: Mapping[str, Any], taint: Taint) -> dict[str, Any] | None:
    """The merge patch that taints ``node`` with ``taint`` and marks it excluded from load
    balancers, or None when both are already in place.

    A taint with the same key and effect counts as present; one with the same key but
    another effect is replaced. The patch carries the node's resourceVersion: the taint
    list is replaced whole, so a concurrent change must make the write fail, not vanish.
    """
    meta = node.get("metadata") or {}
    taints = [t for t in (node.get("spec") or {}).get("taints") or [] if isinstance(t, Mapping)]
    present = any(t.get("key") == taint.key and t.get("effect") == taint.effect for t in taints)
    labels = meta.get("labels") or {}
    labelled = labels.get(EXCLUDE_FROM_LOAD_BALANCERS_LABEL) == "karpenter"
    if present and labelled:
        return None
    patch: dict[str, Any] = {
        "metadata": {"resourceVersion": meta.get("resourceVersion")},
    }
    if not present:
        kept = [dict(t) for t in taints if t.get("key") != taint.key]
        kept.append(taint.to_dict())
        patch["spec"] = {"taints": kept}
    if not labelled:
        patch["metadata"]["labels"] = {EXCLUDE_FROM_LOAD_BALANCERS_LABEL: "karpenter"}
    return patch


class Terminator:
    """Taints a node and drives its drain through the eviction queue."""

    def __init__(
        self, kube: KubeClient, clock: Clock, queue: EvictionQueue, recorder: EventRecorder
    ) -> None:
        self.kube = kube
        self.clock = clock
        self.queue = queue
        self.recorder = recorder

    def taint(
        self, node: dict[str, Any], taint: Taint = DISRUPTED_NO_SCHEDULE_TAINT
    ) -> dict[str, Any]:
        """Taint the node (idempotent) and return it as stored; raises Conflict when the
        node changed since it was read."""
        patch = tainted(node, taint)
        if patch is None:
            return node
        name = str((node.get("metadata") or {}).get("name") or "")
        updated = self.kube.patch("nodes", name, patch)
        log.info("tainted node %s with %s", name, taint)
        return updated

    def pods_on(self, node_name: str) -> list[dict[str, Any]]:
        """The pods bound to ``node_name``, to read: uncopied where the client can share
        them (drain reads every pod of a draining node at each of its reconciles)."""
        if not node_name:
            return []
        read = shared_list(self.kube)
        return read("pods", field_selector=f"spec.nodeName={node_name}").items

    def drain(self, node: Mapping[str, Any], deadline: datetime | None) -> NodeDrainError | None:
        """Queue the next pods to leave; None once nothing is left to wait for."""
        now = self.clock.now()
        name = str((node.get("metadata") or {}).get("name") or "")
        waiting = [p for p in self.pods_on(name) if podutil.is_waiting_eviction(p, now)]
        forced = [p for p in waiting if podutil.needs_force_delete(p, deadline, now)]
        graceful = [p for p in waiting if not podutil.needs_force_delete(p, deadline, now)]
        if forced:
            self.queue.add(deadline, forced)
        for tier in drain_tiers(graceful):
            if tier:
                self.queue.add(deadline, tier)
                return NodeDrainError(len(waiting))
        if forced:
            return NodeDrainError(len(waiting))
        return None
