"""Node termination: the Node finalizer, the drain and the eviction queue (upstream
``pkg/controllers/node/termination``).

:func:`register` adds two controllers, as upstream has them:

* ``eviction-queue`` — evicts (or, past the node's deadline, deletes) the pods the drain
  queued, retrying PDB refusals (429) with back-off from 100 ms to 10 s;
* ``node.termination`` — the ``karpenter.sh/termination`` finalizer on managed Nodes:
  taint, drain in tiers, wait for volumes, wait for the instance, then let the Node go.

The eviction queue is also published as ``ctx.eviction_queue``.
"""

from __future__ import annotations

from karpenter_core.controllers.node.termination.controller import (
    MIN_DRAIN_TIME,
    NodeTerminationController,
    TerminationError,
    is_managed,
)
from karpenter_core.controllers.node.termination.eviction import EvictionQueue, QueueKey
from karpenter_core.controllers.node.termination.terminator import NodeDrainError, Terminator
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import Watch
from karpenter_core.runtime.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
)

__all__ = [
    "MIN_DRAIN_TIME",
    "EvictionQueue",
    "NodeDrainError",
    "NodeTerminationController",
    "QueueKey",
    "TerminationError",
    "Terminator",
    "is_managed",
    "register",
]

# Upstream scales these with CPUs (100 to 5000 workers); the bucket sizes below are its
# values at one CPU. Worker counts are kept small: Python threads buy little for API calls
# against one server, and on a virtual clock workers do not matter at all.
_TERMINATION_QPS, _TERMINATION_BURST = 10.0, 100
_EVICTION_QPS, _EVICTION_BURST = 100.0, 1000
_WORKERS = 10


def register(manager: Manager, ctx: ControllerContext) -> None:
    """Add ``eviction-queue`` and ``node.termination`` to ``manager``."""
    queue = EvictionQueue(ctx.kube, ctx.clock, ctx.recorder)
    queue_controller = manager.add_controller(
        EvictionQueue.name,
        queue,
        workers=_WORKERS,
        rate_limiter=MaxOfRateLimiter(
            ItemExponentialFailureRateLimiter(0.1, 10.0),
            BucketRateLimiter(ctx.clock, _EVICTION_QPS, _EVICTION_BURST),
        ),
    )
    queue.bind(queue_controller.enqueue)
    terminator = Terminator(ctx.kube, ctx.clock, queue, ctx.recorder)
    controller = NodeTerminationController(ctx, terminator)
    manager.add_controller(
        NodeTerminationController.name,
        controller,
        watches=[Watch("nodes", predicate=lambda _type, node: controller.managed(node))],
        workers=_WORKERS,
        rate_limiter=MaxOfRateLimiter(
            ItemExponentialFailureRateLimiter(0.1, 10.0),
            BucketRateLimiter(ctx.clock, _TERMINATION_QPS, _TERMINATION_BURST),
        ),
    )
    ctx.eviction_queue = queue
