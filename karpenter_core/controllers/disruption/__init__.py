"""Voluntary disruption: the ``disruption`` singleton and the ``disruption.queue``
orchestration queue (upstream ``pkg/controllers/disruption``; spec disruption §3-§12).

``register(manager, ctx)`` adds both controllers. The methods are the
:class:`~karpenter_core.hookspecs.DisruptionMethodSpec` registrations in
``ctx.plugins.disruption_methods``: the built-ins (emptiness, static drift, drift,
multi-node and single-node consolidation, from :mod:`karpenter_core.builtins`) and any
plugin's, run in ``order``. Methods are written against
:mod:`karpenter_core.disruption.types` (see that module for the contract); what they decide
on and with is :mod:`karpenter_core.disruption`, computed from the snapshot this package
takes. This package is the part that talks to the API server: it takes the snapshot,
publishes what the decisions say, and carries the commands out.

The controller and the queue are published as ``ctx.disruption`` and
``ctx.disruption_queue``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from karpenter_core.controllers.disruption.context import DisruptionContext
from karpenter_core.controllers.disruption.controller import NAME, DisruptionController
from karpenter_core.controllers.disruption.legacy import adapt
from karpenter_core.controllers.disruption.queue import NAME as QUEUE_NAME
from karpenter_core.controllers.disruption.queue import Queue
from karpenter_core.controllers.provisioning import provisioner_of
from karpenter_core.disruption.types import Method
from karpenter_core.hookspecs import DisruptionMethodSpec
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.manager import Manager
from karpenter_core.state.cluster import cluster_of

__all__ = [
    "NAME",
    "QUEUE_NAME",
    "DisruptionContext",
    "DisruptionController",
    "Queue",
    "build_methods",
    "register",
]

log = logging.getLogger("karpenter.disruption")

QUEUE_WORKERS = 10


def build_methods(dctx: DisruptionContext, specs: Iterable[DisruptionMethodSpec]) -> list[Method]:
    """Instantiate ``specs`` in ``(order, name)`` order (a later spec with an earlier one's
    name replaces it); a method written before snapshots is adapted (:mod:`.legacy`). A
    factory that fails is logged and skipped: one broken plugin must not stop disruption."""
    by_name = {s.name: s for s in specs}
    out: list[Method] = []
    for spec in sorted(by_name.values(), key=lambda s: (s.order, s.name)):
        try:
            method = spec.factory(dctx)
        except Exception as e:
            log.error(
                "disruption method %s could not be created: %s: %s", spec.name, type(e).__name__, e
            )
            continue
        out.append(adapt(method, dctx))
    return out


def register(manager: Manager, ctx: ControllerContext) -> None:
    """Add the ``disruption`` singleton and the ``disruption.queue`` controller."""
    cluster = cluster_of(ctx)
    provisioner = provisioner_of(ctx)
    queue = Queue(ctx, cluster, provisioner)
    queue_controller = manager.add_controller(QUEUE_NAME, queue, workers=QUEUE_WORKERS)
    queue.bind(queue_controller.enqueue)
    dctx = DisruptionContext(ctx, cluster, queue, provisioner)
    methods = build_methods(dctx, ctx.plugins.disruption_methods)
    controller = DisruptionController(dctx, queue, methods)
    manager.add_singleton(NAME, controller)
    ctx.disruption = controller
    ctx.disruption_queue = queue
