"""state.nodeclaimgc: drop unlaunched NodeClaims that vanished before state saw them go
(upstream ``pkg/controllers/state/nodeclaimgc``, spec §4.11).

The provisioner seeds cluster state with each NodeClaim it creates. If that NodeClaim is
deleted before the informer ever observed it, no delete reaches state, and the unlaunched
entry would hold :meth:`Cluster.synced` false for good — pausing provisioning. So each
NodeClaim creation is checked again a grace period later.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterable
from typing import Any

from karpenter_core.kube.client import NotFound
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.manager import Controller, Manager
from karpenter_core.runtime.reconciler import ObjectKey, Result, Watch, key_of
from karpenter_core.state.cluster import NODECLAIMS, Cluster, cluster_of

__all__ = ["GRACE_PERIOD", "NodeClaimGC", "register"]

log = logging.getLogger("karpenter.state")

GRACE_PERIOD = 15.0
"""Seconds after a NodeClaim's creation event before it is checked."""


class NodeClaimGC:
    def __init__(self, ctx: ControllerContext, cluster: Cluster) -> None:
        self.ctx = ctx
        self.cluster = cluster

    def reconcile(self, key: ObjectKey) -> Result:
        try:
            self.ctx.kube.get(NODECLAIMS, key.name)
        except NotFound:
            if self.cluster.unlaunched_nodeclaim_exists(key.name):
                log.info("garbage collecting stale unlaunched nodeclaim %s from cluster state", key)
                self.cluster.delete_nodeclaim(key.name)
        return Result()


def register(manager: Manager, ctx: ControllerContext) -> None:
    """Add ``state.nodeclaimgc``: every NodeClaim creation is looked at again after
    :data:`GRACE_PERIOD` seconds."""
    holder: list[Controller] = []

    def delayed(event_type: str, obj: dict[str, Any]) -> Iterable[Hashable]:
        if event_type == "ADDED" and holder:
            holder[0].queue.add_after(key_of(obj), GRACE_PERIOD)
        return ()

    holder.append(
        manager.add_controller(
            "state.nodeclaimgc",
            NodeClaimGC(ctx, cluster_of(ctx)),
            watches=[Watch(NODECLAIMS, mapper=delayed)],
        )
    )
