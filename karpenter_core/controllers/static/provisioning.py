"""``static.provisioning``: launch NodeClaims until a static NodePool has ``spec.replicas``
nodes (upstream ``pkg/controllers/static/provisioning``; spec operator-and-lifecycle §3.9).

A static NodePool is not driven by pending pods: it asks for a node count, and this
controller tops the pool up to it. Each NodeClaim is the bare NodePool template -- no
instance-type or capacity-type narrowing -- so the cloud provider picks what to launch.

Counting uses cluster state's per-NodePool counters (:class:`~karpenter_core.state.cluster.
NodePoolState`), never an API list, and launches are reserved against ``spec.limits.nodes``
before they are made: two workers (or static drift) reconciling the same pool at once can
never launch past the limit. A reservation is given back after each create attempt, success
or not; a created NodeClaim is counted as active by then, a failed one frees its slot for the
next pass.

The controller waits for cluster state to have synced once: counting nodes from a partial
view after a restart would launch a second copy of capacity that already exists. Shrinking
is ``static.deprovisioning``'s job.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from attrs import frozen

from karpenter_core.apis.conditions import is_true
from karpenter_core.apis.v1 import CONDITION_READY, APIError
from karpenter_core.controllers.nodepool.common import managed_nodepool
from karpenter_core.controllers.provisioning.provisioner import CreateError, Provisioner
from karpenter_core.disruption.replacements import TemplateReplacement, node_limit
from karpenter_core.kube.client import ApiError
from karpenter_core.provisioning.nodepools import parse_nodepool
from karpenter_core.provisioning.scheduler.nodeclaimtemplate import TemplateError
from karpenter_core.runtime.clock import Clock
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import ObjectKey, Result
from karpenter_core.state.cluster import Cluster, NodePoolCounts, cluster_of

__all__ = [
    "LIMIT_REACHED_REQUEUE",
    "NAME",
    "RESYNC",
    "STATE_LAG_LIMIT",
    "UNSYNCED_REQUEUE",
    "DeletionsSeen",
    "StaticPool",
    "StaticProvisioner",
    "launch_count",
    "static_pool",
]

log = logging.getLogger("karpenter.static")

NAME = "static.provisioning"
RESYNC = 60.0
"""Seconds until a pool is looked at again after a pass (events wake it sooner)."""
LIMIT_REACHED_REQUEUE = 30.0
UNSYNCED_REQUEUE = 1.0
STATE_LAG_LIMIT = 10.0
"""Seconds a pass waits at most for cluster state to apply a NodeClaim deletion the watch
already reported (after that the count is trusted as it is)."""


class DeletionsSeen:
    """NodeClaim deletions the watch reported, per NodePool, until cluster state has
    applied them.

    The watch event that wakes ``static.provisioning`` and the one that updates cluster
    state arrive independently; counting before state has caught up would find the pool
    still full and wait a whole resync to replace the node. A pass that finds state behind
    looks again a second later instead."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._seen: dict[str, dict[str, tuple[bool, float]]] = {}

    def record(self, nodepool: str, nodeclaim: str, *, gone: bool) -> None:
        """``gone``: the NodeClaim was removed; otherwise its deletion started."""
        with self._lock:
            self._seen.setdefault(nodepool, {})[nodeclaim] = (gone, self.clock.monotonic())

    def forget(self, nodepool: str) -> None:
        """Drop what was recorded for a pool this controller does not provision (dynamic,
        gone, not Ready, deleting): every NodeClaim deletion is recorded, and only a pass
        over a static pool would otherwise clear them."""
        with self._lock:
            self._seen.pop(nodepool, None)

    def state_behind(self, nodepool: str, cluster: Cluster) -> bool:
        """Whether cluster state still counts one of the pool's reported deletions as
        active (entries state has applied, or older than :data:`STATE_LAG_LIMIT`, are
        forgotten)."""
        now = self.clock.monotonic()
        with self._lock:
            entries = dict(self._seen.get(nodepool, {}))
        behind = False
        done: list[str] = []
        for name, (gone, since) in entries.items():
            if now - since > STATE_LAG_LIMIT:
                done.append(name)
                continue
            if gone:
                lagging = cluster.nodeclaim_exists(name)
            else:
                sn = cluster.state_node_for_nodeclaim(name)
                lagging = sn is not None and not sn.marked_for_deletion
            if lagging:
                behind = True
            else:
                done.append(name)
        with self._lock:
            pool = self._seen.get(nodepool)
            for name in done:
                if pool is not None and pool.get(name) == entries[name]:
                    del pool[name]
            if pool is not None and not pool:
                del self._seen[nodepool]
        return behind


@frozen
class StaticPool:
    """What the static controllers read from a NodePool."""

    name: str
    replicas: int
    node_limit: int
    ready: bool
    deleting: bool


def _ready(nodepool: Mapping[str, Any]) -> bool:
    return is_true(nodepool, CONDITION_READY)


def static_pool(nodepool: Mapping[str, Any]) -> StaticPool | str | None:
    """The NodePool as a static pool; None when it is not static (no ``spec.replicas``);
    a message naming the problem when ``spec.replicas`` is not a non-negative integer (the
    API server's schema rejects that, so only a hand-made object gets here)."""
    meta = nodepool.get("metadata") or {}
    spec = nodepool.get("spec") or {}
    name = str(meta.get("name") or "")
    replicas = spec.get("replicas")
    if replicas is None:
        return None
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
        return f"nodepool {name!r}: spec.replicas must be a non-negative integer, got {replicas!r}"
    try:
        model = parse_nodepool(nodepool)
    except (APIError, ValueError, TypeError) as e:
        return f"nodepool {name!r}: {e}"
    return StaticPool(
        name=name,
        replicas=replicas,
        node_limit=node_limit(model),
        ready=_ready(nodepool),
        deleting=bool(meta.get("deletionTimestamp")),
    )


def launch_count(pool: StaticPool, counts: NodePoolCounts) -> int:
    """How many NodeClaims the pool still lacks, before the node limit is applied.

    NodeClaims pending disruption (static drift is replacing them) count as present:
    their replacements are already on the way. Zero when nothing is missing."""
    if counts.active + counts.pending_disruption >= pool.replicas:
        return 0
    return pool.replicas - counts.active


class StaticProvisioner:
    """The ``static.provisioning`` reconciler (keyed by NodePool)."""

    def __init__(
        self,
        ctx: ControllerContext,
        provisioner: Provisioner | None = None,
        deletions: DeletionsSeen | None = None,
    ) -> None:
        self.ctx = ctx
        self.cluster: Cluster = cluster_of(ctx)
        self.deletions = deletions if deletions is not None else DeletionsSeen(ctx.clock)
        # As upstream: a provisioner of its own, used only for its create path (limits
        # check, state update, metrics), never for its pod-driven loop.
        self.provisioner = provisioner if provisioner is not None else Provisioner(ctx)
        self._invalid: dict[str, str] = {}

    def reconcile(self, key: ObjectKey) -> Result:
        np = managed_nodepool(self.ctx, key.name)
        if np is None:
            self.deletions.forget(key.name)
            return Result()
        pool = static_pool(np)
        if isinstance(pool, str):
            self.deletions.forget(key.name)
            if self._invalid.get(key.name) != pool:  # once per distinct problem
                self._invalid[key.name] = pool
                log.warning("%s", pool)
            return Result()
        self._invalid.pop(key.name, None)
        if pool is None or not pool.ready or pool.deleting:
            self.deletions.forget(key.name)
            return Result()
        if not self.cluster.has_synced() and not self.cluster.synced():
            return Result.after(UNSYNCED_REQUEUE)
        if self.deletions.state_behind(pool.name, self.cluster):
            return Result.after(UNSYNCED_REQUEUE)
        state = self.cluster.nodepool_state
        counts = state.node_counts(pool.name)
        wanted = launch_count(pool, counts)
        if wanted <= 0:
            return Result.after(RESYNC)
        granted = state.reserve_node_count(pool.name, pool.node_limit, wanted)
        if granted <= 0:
            log.info("nodepool %s: node limit reached (%d)", pool.name, pool.node_limit)
            return Result.after(LIMIT_REACHED_REQUEUE)
        log.info(
            "nodepool %s: provisioning %d nodeclaim(s) to satisfy replica count "
            "(current %d, desired %d)",
            pool.name,
            granted,
            counts.active,
            pool.replicas,
        )
        errors = self._create(np, pool.name, granted)
        if errors:
            log.warning(
                "nodepool %s: creating %d of %d nodeclaim(s) failed: %s",
                pool.name,
                len(errors),
                granted,
                "; ".join(errors),
            )
            return Result(requeue=True)
        return Result.after(RESYNC)

    def _create(self, np: Mapping[str, Any], pool: str, count: int) -> list[str]:
        """Create ``count`` bare-template NodeClaims; every attempt gives one reserved count
        back whatever its outcome. Returns the failures."""
        errors: list[str] = []
        for _ in range(count):
            try:
                self.provisioner.create(TemplateReplacement(parse_nodepool(np)))
            except (CreateError, ApiError, APIError, TemplateError) as e:
                errors.append(str(e))
            finally:
                self.cluster.nodepool_state.release_node_count(pool, 1)
        return errors
