"""``metrics.nodepool``: ``nodepools_limit`` and ``nodepools_usage`` per resource, and
``nodepools_cost_total`` (the cluster cost tracker's figure for the pool, 0 when it
tracks none of its NodeClaims).

Usage is the NodePool's ``status.resources`` (kept by ``nodepool.counter``), limits its
``spec.limits``; both in whole units (cpu in cores). Refreshed every 10 s and on every
change of a NodePool this operator manages; a deleted NodePool's series go.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from karpenter_core import metrics
from karpenter_core.apis.quantity import QuantityError
from karpenter_core.apis.resources import parse_resource_list
from karpenter_core.controllers.metrics.node import unit_value
from karpenter_core.controllers.metrics.store import MetricStore, StoreMetric
from karpenter_core.kube.client import NotFound
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import ObjectKey, Result
from karpenter_core.state.cluster import is_managed_nodepool
from karpenter_core.state.cost import cluster_cost_of

__all__ = ["NAME", "REQUEUE_SECONDS", "NodePoolMetrics"]

log = logging.getLogger("karpenter.metrics")

NAME = "metrics.nodepool"
REQUEUE_SECONDS = 10.0


def _resources(value: Any, what: str, pool: str) -> dict[str, int]:
    if not isinstance(value, Mapping):
        return {}
    try:
        return dict(parse_resource_list(value))
    except (QuantityError, ValueError, TypeError) as e:
        log.warning("nodepool %s: %s not reported: %s", pool, what, e)
        return {}


class NodePoolMetrics:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.store = MetricStore()
        self.cost = cluster_cost_of(ctx)

    def reconcile(self, key: ObjectKey) -> Result:
        try:
            np = self.ctx.kube.get("nodepools", key.name)
        except NotFound:
            self.store.delete(key.name)
            return Result()
        if not is_managed_nodepool(np, self.ctx.cloud_provider):
            return Result()
        name = key.name
        spec = np.get("spec") or {}
        status = np.get("status") or {}
        series = [
            StoreMetric(
                metrics.NODEPOOLS_COST_TOTAL,
                {metrics.LABEL_NODEPOOL: name},
                self.cost.nodepool_cost(name),
            )
        ]
        for gauge, resources in (
            (metrics.NODEPOOLS_USAGE, _resources(status.get("resources"), "usage", name)),
            (metrics.NODEPOOLS_LIMIT, _resources(spec.get("limits"), "limits", name)),
        ):
            for resource, milli in sorted(resources.items()):
                labels = {
                    metrics.LABEL_RESOURCE_TYPE: metrics.resource_type_label(resource),
                    metrics.LABEL_NODEPOOL: name,
                }
                series.append(StoreMetric(gauge, labels, unit_value(resource, milli)))
        self.store.update(name, series)
        return Result.after(REQUEUE_SECONDS)
