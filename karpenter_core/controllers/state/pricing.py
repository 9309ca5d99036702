"""``state.pricing``: the hourly singleton that re-prices tracked offerings (upstream
``pkg/controllers/state/informer/pricing.go``, spec operator-and-lifecycle §4.12).

Providers publish prices by being polled (``get_instance_types``), not by pushing
changes, so :class:`~karpenter_core.state.cost.ClusterCost` would otherwise keep the
price each offering had when a NodePool first used it. Once an hour (and at start) this
reads every managed NodePool's instance types and hands them to
:meth:`ClusterCost.update_offerings`, which recomputes each pool's cost.
"""

from __future__ import annotations

import logging

from karpenter_core.apis.accessors import name_of
from karpenter_core.apis.v1 import APIError
from karpenter_core.provisioning.nodepools import parse_nodepool
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import Result
from karpenter_core.state.cluster import NODEPOOLS, is_managed_nodepool
from karpenter_core.state.cost import ClusterCost, cluster_cost_of

__all__ = ["NAME", "REFRESH_SECONDS", "PricingController"]

log = logging.getLogger("karpenter.state.pricing")

NAME = "state.pricing"
REFRESH_SECONDS = 3600.0
"""Upstream's period: provider prices move slowly; an hour bounds how stale a cost is."""


class PricingController:
    """Refreshes the prices of every offering ``cost`` tracks, NodePool by NodePool.

    NodePools of other providers are skipped (their NodeClaims are never counted). One
    NodePool failing (invalid, or the provider cannot list its instance types) does not
    stop the others; the pass then retries with back-off instead of waiting an hour.
    """

    def __init__(self, ctx: ControllerContext, cost: ClusterCost | None = None) -> None:
        self.ctx = ctx
        self.cost = cost if cost is not None else cluster_cost_of(ctx)

    def reconcile(self) -> Result:
        provider = self.cost.cloud_provider
        try:
            items = list(self.ctx.kube.list(NODEPOOLS).items)
        except Exception as e:  # the API being unreachable is retried, never raised
            log.warning("refreshing prices: listing nodepools failed: %s", e)
            return Result(requeue=True)
        failures: list[str] = []
        for raw in items:
            name = name_of(raw)
            if not name or not is_managed_nodepool(raw, provider):
                continue
            try:
                model = parse_nodepool(raw)
            except APIError as e:
                failures.append(f"nodepool {name} is invalid: {e}")
                continue
            try:
                instance_types = list(provider.get_instance_types(model))
            except Exception as e:  # a provider failure must not stop the other pools
                failures.append(f"nodepool {name}: getting instance types: {e}")
                continue
            self.cost.update_offerings(name, instance_types)
        if failures:
            log.warning("refreshing prices: %s", "; ".join(failures))
            return Result(requeue=True)
        return Result.after(REFRESH_SECONDS)
