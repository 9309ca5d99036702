"""``static.deprovisioning``: delete NodeClaims while a static NodePool has more active
ones than ``spec.replicas`` (upstream ``pkg/controllers/static/deprovisioning``; spec
operator-and-lifecycle §3.9).

Which NodeClaims go, cheapest loss first:

1. NodeClaims not launched yet (no provider id, not deleting): nothing runs on them;
2. empty nodes: no pods, or only DaemonSet pods none of which has an active
   ``karpenter.sh/do-not-disrupt``;
3. the rest, nodes with active do-not-disrupt pods last, otherwise by rescheduling cost
   times the fraction of their lifetime left (a node about to expire is cheaper to lose).

Deleting the NodeClaim starts the usual termination (drain, then the instance). The
NodeClaim is marked deleting in cluster state's NodePool counters at once, so the next pass
does not count it again before its watch event arrives.

Unlike provisioning this does not wait for cluster state to sync: state can only know of
fewer NodeClaims than exist, so a partial view under-counts and never deletes too many.
Only active NodeClaims are counted (not those pending disruption): static drift's
replacements temporarily add one node per drifted node, which must not be mistaken for a
surplus.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import frozen

from karpenter_core.apis.labels import NODEPOOL_LABEL_KEY
from karpenter_core.apis.objects import Pod
from karpenter_core.controllers.nodepool.common import managed_nodepool
from karpenter_core.controllers.static.provisioning import RESYNC, static_pool
from karpenter_core.disruption.candidates import lifetime_remaining, rescheduling_cost
from karpenter_core.kube.client import ApiError, NotFound
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import ObjectKey, Result
from karpenter_core.state.cluster import Cluster, cluster_of, is_managed_nodeclaim
from karpenter_core.state.statenode import StateNode
from karpenter_core.utils.pod import is_do_not_disrupt_active

__all__ = [
    "DELETE_ATTEMPTS",
    "NAME",
    "TERMINATION_REASON",
    "LaunchedNode",
    "StaticDeprovisioner",
    "excess",
    "select_victims",
]

log = logging.getLogger("karpenter.static")

NAME = "static.deprovisioning"
TERMINATION_REASON = "overprovisioned"
DELETE_ATTEMPTS = 3
"""Tries per NodeClaim delete before the reconcile backs off (NotFound ends them: gone is
what was wanted)."""


@frozen
class LaunchedNode:
    """A launched NodeClaim of the pool, as victim selection sees it."""

    nodeclaim: str
    empty: bool
    """No pods, or only DaemonSet pods and none of them with active do-not-disrupt."""
    do_not_disrupt: bool
    """Some pod on it has an active ``karpenter.sh/do-not-disrupt``."""
    cost: float
    """Rescheduling cost of its pods times the fraction of its lifetime remaining."""


def excess(active: int, replicas: int) -> int:
    """How many NodeClaims to delete (0 when the pool is not over its replicas)."""
    return max(0, active - replicas)


def select_victims(
    unlaunched: Sequence[str], launched: Sequence[LaunchedNode], count: int
) -> list[str]:
    """The NodeClaims to delete, in order: unlaunched ones, then empty nodes, then the
    others with do-not-disrupt nodes last and by ascending cost. Ties keep input order."""
    if count <= 0:
        return []
    out = list(unlaunched[:count])
    empty = [n.nodeclaim for n in launched if n.empty]
    out.extend(empty[: count - len(out)])
    rest = sorted((n for n in launched if not n.empty), key=lambda n: (n.do_not_disrupt, n.cost))
    out.extend(n.nodeclaim for n in rest[: count - len(out)])
    return out


def _is_empty(pods: Sequence[Pod], protected: Sequence[bool]) -> bool:
    return all(p.is_owned_by_daemonset() for p in pods) and not any(protected)


class StaticDeprovisioner:
    """The ``static.deprovisioning`` reconciler (keyed by NodePool)."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.cluster: Cluster = cluster_of(ctx)

    def reconcile(self, key: ObjectKey) -> Result:
        np = managed_nodepool(self.ctx, key.name)
        if np is None:
            return Result()
        pool = static_pool(np)
        if pool is None or isinstance(pool, str) or pool.deleting:
            return Result()  # static.provisioning reports an invalid replicas value
        state = self.cluster.nodepool_state
        active = state.node_counts(pool.name).active
        count = excess(active, pool.replicas)
        if count <= 0:
            return Result.after(RESYNC)
        log.info(
            "nodepool %s: deprovisioning %d nodeclaim(s) to satisfy replica count "
            "(current %d, desired %d)",
            pool.name,
            count,
            active,
            pool.replicas,
        )
        victims = select_victims(self._unlaunched(pool.name), self._launched(pool.name), count)
        failures: list[str] = []
        for name in victims:
            problem = self._delete(name)
            if problem is not None:
                failures.append(problem)
                continue
            log.debug(
                "nodepool %s: deleting nodeclaim %s (%s)", pool.name, name, TERMINATION_REASON
            )
            state.mark_deleting(pool.name, name)
        if failures:
            raise ApiError(
                f"nodepool {pool.name}: deprovisioning nodeclaims failed: {'; '.join(failures)}"
            )
        return Result.after(RESYNC)

    # ------------------------------------------------------------------ candidates

    def _unlaunched(self, pool: str) -> list[str]:
        """NodeClaims of the pool with no provider id that are not being deleted, from the
        API (state may not hold a NodeClaim whose launch failed)."""
        try:
            items: Iterable[Mapping[str, Any]] = self.ctx.kube.list(
                "nodeclaims", label_selector=f"{NODEPOOL_LABEL_KEY}={pool}"
            ).items
        except ApiError as e:
            log.error("nodepool %s: listing nodeclaims failed: %s", pool, e)
            return []
        out = []
        for nc in items:
            meta = nc.get("metadata") or {}
            status = nc.get("status") or {}
            if (meta.get("labels") or {}).get(NODEPOOL_LABEL_KEY) != pool:
                continue
            if not is_managed_nodeclaim(nc, self.ctx.cloud_provider):
                continue
            if status.get("providerID") or meta.get("deletionTimestamp"):
                continue
            out.append(str(meta.get("name") or ""))
        return sorted(out)

    def _launched(self, pool: str) -> list[LaunchedNode]:
        now = self.ctx.clock.now()
        out = []
        for sn in self.cluster.state_nodes():
            if sn.nodepool_name() != pool or sn.nodeclaim is None or sn.marked_for_deletion:
                continue
            out.append(self._describe(sn, now))
        return out

    def _describe(self, sn: StateNode, now: Any) -> LaunchedNode:
        nodeclaim = sn.nodeclaim
        assert nodeclaim is not None
        pods = list(sn.pods)
        protected = [is_do_not_disrupt_active(p, now, self.ctx.recorder) for p in pods]
        return LaunchedNode(
            nodeclaim=nodeclaim.name,
            empty=_is_empty(pods, protected),
            do_not_disrupt=any(protected),
            cost=rescheduling_cost(pods) * lifetime_remaining(now, nodeclaim),
        )

    def _delete(self, name: str) -> str | None:
        """Delete the NodeClaim; None when it is gone or going, else why not."""
        last: ApiError | None = None
        for _ in range(DELETE_ATTEMPTS):
            try:
                self.ctx.kube.delete("nodeclaims", name)
                return None
            except NotFound:
                return None
            except ApiError as e:
                last = e
        return f"deleting nodeclaim {name}: {last}"
