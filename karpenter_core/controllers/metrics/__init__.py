"""Observability controllers: ``metrics.pod``, ``metrics.node`` and ``metrics.nodepool``.

They only publish gauges and histograms about the cluster as Karpenter sees it; nothing
else depends on them, so ``--disable-cluster-state-observability``
(``DISABLE_CLUSTER_STATE_OBSERVABILITY``) leaves them out, as upstream does.
"""

from __future__ import annotations

from karpenter_core.controllers.metrics import node, nodepool, pod
from karpenter_core.controllers.metrics.node import NodeMetrics
from karpenter_core.controllers.metrics.nodepool import NodePoolMetrics
from karpenter_core.controllers.metrics.pod import PodMetrics
from karpenter_core.controllers.metrics.store import MetricStore, StoreMetric
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import Watch

__all__ = [
    "NAMES",
    "MetricStore",
    "NodeMetrics",
    "NodePoolMetrics",
    "PodMetrics",
    "StoreMetric",
    "register",
]

NAMES = (pod.NAME, node.NAME, nodepool.NAME)


def register(manager: Manager, ctx: ControllerContext) -> None:
    """Add the three metrics controllers (none when cluster-state observability is off)."""
    if ctx.options.disable_cluster_state_observability:
        return
    pods = PodMetrics(ctx)
    manager.add_controller(pod.NAME, pods, watches=pods.watches(), workers=10)
    manager.add_singleton(node.NAME, NodeMetrics(ctx))
    manager.add_controller(
        nodepool.NAME, NodePoolMetrics(ctx), watches=[Watch("nodepools")], workers=10
    )
