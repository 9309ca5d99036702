"""``nodepool.counter``: ``status.resources`` and ``status.nodes`` from cluster state.

The totals are the capacity of the pool's nodes that are not being deleted, as cluster
state counts them (what limits are checked against). Run when a pool appears and then every
5 s; while cluster state is not synced, every second (a partial count would be wrong).
"""

from __future__ import annotations

import copy

from karpenter_core.apis.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, format_resource_list
from karpenter_core.controllers.nodepool.common import managed_nodepool, patch_status
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import ObjectKey, Result
from karpenter_core.state.cluster import cluster_of
from karpenter_core.state.statenode import NODES_RESOURCE

__all__ = ["BASE_RESOURCES", "NAME", "RESYNC_SECONDS", "Counter"]

NAME = "nodepool.counter"
RESYNC_SECONDS = 5.0
UNSYNCED_RETRY_SECONDS = 1.0
BASE_RESOURCES = {CPU: 0, MEMORY: 0, PODS: 0, EPHEMERAL_STORAGE: 0, NODES_RESOURCE: 0}


class Counter:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.cluster = cluster_of(ctx)

    def reconcile(self, key: ObjectKey) -> Result:
        stored = managed_nodepool(self.ctx, key.name)
        if stored is None:
            return Result()
        if not self.cluster.synced():
            return Result.after(UNSYNCED_RETRY_SECONDS)
        totals = {**BASE_RESOURCES, **self.cluster.nodepool_resources(key.name)}
        np = copy.deepcopy(stored)
        status = np.setdefault("status", {})
        status["resources"] = format_resource_list(totals)
        status["nodes"] = totals.get(NODES_RESOURCE, 0) // 1000
        patch_status(self.ctx.kube, stored, np, optimistic=False)
        return Result.after(RESYNC_SECONDS)
