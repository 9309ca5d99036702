"""The state informers: controllers that keep :class:`~karpenter_core.state.cluster.Cluster`
current from watches (upstream ``pkg/controllers/state/informer``, spec §4.10).

Each reconcile reads the object fresh from the KubeClient: present means update, NotFound
means delete. Against a real API server, Nodes, NodeClaims and pods are re-read every minute
as a safety net (see :func:`resync_seconds`); DaemonSets always poll every minute, because
only their creation is watched.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from karpenter_core.apis.accessors import meta_of
from karpenter_core.apis.objects import ObjectError
from karpenter_core.apis.v1 import APIError
from karpenter_core.controllers.state import pricing
from karpenter_core.kube.client import NotFound, shared_get
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import ObjectKey, Result, Watch
from karpenter_core.state.cluster import (
    DAEMONSETS,
    NODECLAIMS,
    NODEPOOLS,
    NODES,
    PODS,
    NodeNotFoundError,
    cluster_of,
    is_managed_nodeclaim,
    is_managed_nodepool,
    parse_nodeclaim,
)
from karpenter_core.state.cost import cluster_cost_of

__all__ = [
    "RESYNC_SECONDS",
    "DaemonSetInformer",
    "NodeClaimInformer",
    "NodeInformer",
    "NodePoolInformer",
    "PodInformer",
    "register",
    "resync_seconds",
]

log = logging.getLogger("karpenter.state")

RESYNC_SECONDS = 60.0
"""Upstream's state retry period: tracked objects are re-read this often."""


WORKERS = 10


def resync_seconds(ctx: ControllerContext) -> float | None:
    """How often tracked Nodes, NodeClaims and pods are re-read: upstream's minute against a
    real API server, where a watch can silently miss an event; never on a virtual clock, whose
    in-memory watches cannot (re-reading thousands of pods every simulated minute would
    dominate a long simulation). ``ctx.state_resync_seconds`` overrides both (0: never)."""
    if ctx.state_resync_seconds is not None:
        return float(ctx.state_resync_seconds) or None
    return None if isinstance(ctx.clock, VirtualClock) else RESYNC_SECONDS


def _resync(ctx: ControllerContext) -> Result:
    seconds = resync_seconds(ctx)
    return Result.after(seconds) if seconds else Result()


def _describe(kind: str, key: ObjectKey, err: Exception) -> str:
    return f"ignoring {kind} {key}: {err}"


class NodeInformer:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.cluster = cluster_of(ctx)

    def reconcile(self, key: ObjectKey) -> Result:
        try:
            node = self.ctx.kube.get(NODES, key.name)
        except NotFound:
            self.cluster.delete_node(key.name)
            return Result()
        try:
            self.cluster.update_node(node)
        except ObjectError as e:
            log.warning(_describe("node", key, e))
            return Result()
        return _resync(self.ctx)


class NodeClaimInformer:
    """Cluster state and the cluster cost tracker both follow managed NodeClaims; each
    stored version is parsed into the typed NodeClaim once, here where it enters state."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.cluster = cluster_of(ctx)
        self.cost = cluster_cost_of(ctx)

    def reconcile(self, key: ObjectKey) -> Result:
        try:
            nc = self.ctx.kube.get(NODECLAIMS, key.name)
        except NotFound:
            self.cluster.delete_nodeclaim(key.name)
            error = self.cost.delete_nodeclaim(key.name)
            if error is not None:  # the table was inconsistent: a retry would fail the same
                log.warning("cost tracking: %s", error)
            return Result()
        if not is_managed_nodeclaim(nc, self.ctx.cloud_provider):
            return Result()
        try:
            self.cluster.update_nodeclaim(parse_nodeclaim(nc))
        except (APIError, ObjectError, ValueError) as e:
            log.warning(_describe("nodeclaim", key, e))
            return Result()
        error = self.cost.update_nodeclaim(nc)
        if error is not None:  # e.g. its NodePool is not readable yet: try again
            log.warning("cost tracking: %s", error)
            return Result(requeue=True)
        return _resync(self.ctx)


class PodInformer:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.cluster = cluster_of(ctx)

    def reconcile(self, key: ObjectKey) -> Result:
        # the cached pod itself where the reader can share it: cluster state keeps every
        # pod, read-only, and a private copy of each would double the pods' memory
        read = shared_get(self.ctx.kube)
        try:
            pod = read(PODS, key.name, key.namespace)
        except NotFound:
            self.cluster.delete_pod(str(key))
            return Result()
        try:
            self.cluster.update_pod(pod)
        except NodeNotFoundError:
            return Result(requeue=True)  # the node's informer has not caught up yet
        except ObjectError as e:
            log.warning(_describe("pod", key, e))
            return Result()
        return _resync(self.ctx)


class DaemonSetInformer:
    """Only creations are watched; after that each DaemonSet polls itself every minute."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.cluster = cluster_of(ctx)

    def reconcile(self, key: ObjectKey) -> Result:
        try:
            ds = self.ctx.kube.get(DAEMONSETS, key.name, key.namespace)
        except NotFound:
            self.cluster.delete_daemonset(str(key))
            return Result()
        try:
            self.cluster.update_daemonset(ds)
        except ObjectError as e:
            log.warning(_describe("daemonset", key, e))
            return Result()
        return Result.after(RESYNC_SECONDS)


class NodePoolInformer:
    """A managed NodePool's spec changed (or it appeared): consolidation should look again.
    A deleted NodePool leaves the cost tracker."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.cluster = cluster_of(ctx)
        self.cost = cluster_cost_of(ctx)

    def reconcile(self, key: ObjectKey) -> Result:
        try:
            np = self.ctx.kube.get(NODEPOOLS, key.name)
        except NotFound:
            self.cost.delete_nodepool(key.name)
            return Result()
        if is_managed_nodepool(np, self.ctx.cloud_provider):
            self.cluster.mark_unconsolidated()
        return Result()


class _GenerationChanged:
    """Watch predicate: creations, deletions, and updates that moved ``metadata.generation``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, Any] = {}

    def __call__(self, event_type: str, obj: dict[str, Any]) -> bool:
        meta = meta_of(obj)
        name = str(meta.get("name") or "")
        gen = meta.get("generation")
        with self._lock:
            if event_type == "DELETED":
                self._seen.pop(name, None)
                return True
            previous = self._seen.get(name)
            self._seen[name] = gen
            return event_type == "ADDED" or previous != gen


def _added(event_type: str, obj: dict[str, Any]) -> bool:
    return event_type == "ADDED"


def register(manager: Manager, ctx: ControllerContext) -> None:
    """Add the state.node / state.nodeclaim / state.pod / state.daemonset / state.nodepool
    controllers feeding ``ctx.cluster`` (created if absent), and the state.pricing
    singleton re-pricing the cluster cost tracker (``ctx.cost``)."""
    cluster_of(ctx)
    cost = cluster_cost_of(ctx)
    resync_seconds(ctx)  # a bad setting fails here, not in every reconcile
    provider = ctx.cloud_provider

    def managed(event_type: str, obj: dict[str, Any]) -> bool:
        return is_managed_nodeclaim(obj, provider)

    def managed_pool(event_type: str, obj: dict[str, Any]) -> bool:
        return is_managed_nodepool(obj, provider)

    generation_changed = _GenerationChanged()

    def nodepool_predicate(event_type: str, obj: dict[str, Any]) -> bool:
        return generation_changed(event_type, obj) and managed_pool(event_type, obj)

    manager.add_controller("state.node", NodeInformer(ctx), watches=[Watch(NODES)], workers=WORKERS)
    manager.add_controller(
        "state.nodeclaim",
        NodeClaimInformer(ctx),
        watches=[Watch(NODECLAIMS, predicate=managed)],
        workers=WORKERS,
    )
    manager.add_controller("state.pod", PodInformer(ctx), watches=[Watch(PODS)], workers=WORKERS)
    manager.add_controller(
        "state.daemonset",
        DaemonSetInformer(ctx),
        watches=[Watch(DAEMONSETS, predicate=_added)],
        workers=WORKERS,
    )
    manager.add_controller(
        "state.nodepool",
        NodePoolInformer(ctx),
        watches=[Watch(NODEPOOLS, predicate=nodepool_predicate)],
        workers=WORKERS,
    )
    manager.add_singleton(pricing.NAME, pricing.PricingController(ctx, cost))
