"""Voluntary disruption: the ``disruption`` singleton and the ``disruption.queue``
orchestration queue (upstream ``pkg/controllers/disruption``; spec disruption §3-§12).

``register(manager, ctx)`` adds both controllers. The methods run in upstream order —
emptiness, static drift, drift, multi-node and single-node consolidation — followed or
interleaved by plugin methods: :class:`~karpenter_core.hookspecs.DisruptionMethodSpec`
objects listed in ``ctx.extras["disruption.methods"]`` take their place by ``order``.
Methods are written against :mod:`.types`; see that module for the contract.

The controller and the queue are published as ``ctx.extras["disruption"]`` and
``ctx.extras["disruption.queue"]``.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable
from typing import Any

from karpenter_core.controllers.disruption.controller import NAME, DisruptionController
from karpenter_core.controllers.disruption.drift import Drift
from karpenter_core.controllers.disruption.emptiness import Emptiness
from karpenter_core.controllers.disruption.queue import NAME as QUEUE_NAME
from karpenter_core.controllers.disruption.queue import Queue
from karpenter_core.controllers.disruption.staticdrift import StaticDrift
from karpenter_core.controllers.disruption.types import DisruptionContext, Method
from karpenter_core.controllers.provisioning import provisioner_of
from karpenter_core.hookspecs import (
    ORDER_DRIFT,
    ORDER_EMPTINESS,
    ORDER_MULTI_NODE_CONSOLIDATION,
    ORDER_SINGLE_NODE_CONSOLIDATION,
    ORDER_STATIC_DRIFT,
    DisruptionMethodSpec,
)
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.manager import Manager
from karpenter_core.state.informers import cluster_of

__all__ = [
    "EXTRAS_METHODS",
    "NAME",
    "QUEUE_NAME",
    "DisruptionController",
    "Queue",
    "build_methods",
    "builtin_method_specs",
    "register",
]

log = logging.getLogger("karpenter.disruption")

EXTRAS_METHODS = "disruption.methods"
QUEUE_WORKERS = 10

_CONSOLIDATION = (
    (
        "multi-node-consolidation",
        ORDER_MULTI_NODE_CONSOLIDATION,
        "karpenter_core.controllers.disruption.multinode",
        "MultiNodeConsolidation",
    ),
    (
        "single-node-consolidation",
        ORDER_SINGLE_NODE_CONSOLIDATION,
        "karpenter_core.controllers.disruption.singlenode",
        "SingleNodeConsolidation",
    ),
)


def builtin_method_specs() -> list[DisruptionMethodSpec]:
    """The built-in methods in upstream order. Consolidation is included when its modules
    import; otherwise it is left out with a debug log (the rest still runs)."""
    specs = [
        DisruptionMethodSpec("emptiness", ORDER_EMPTINESS, Emptiness),
        DisruptionMethodSpec("static-drift", ORDER_STATIC_DRIFT, StaticDrift),
        DisruptionMethodSpec("drift", ORDER_DRIFT, Drift),
    ]
    for name, order, module, attr in _CONSOLIDATION:
        try:
            factory = getattr(importlib.import_module(module), attr)
        except Exception as e:  # not built yet, or broken: run without it
            log.debug("disruption method %s not available: %s: %s", name, type(e).__name__, e)
            continue
        specs.append(DisruptionMethodSpec(name, order, factory))
    return specs


def build_methods(
    dctx: DisruptionContext, extra: Iterable[DisruptionMethodSpec] = ()
) -> list[Method]:
    """Instantiate the built-in and extra methods, sorted by ``(order, name)``; an extra
    spec with a built-in's name replaces it. A factory that fails is logged and skipped."""
    by_name = {s.name: s for s in builtin_method_specs()}
    for spec in extra:
        by_name[spec.name] = spec
    out: list[Method] = []
    for spec in sorted(by_name.values(), key=lambda s: (s.order, s.name)):
        try:
            method: Any = spec.factory(dctx)
        except Exception as e:
            log.error(
                "disruption method %s could not be created: %s: %s", spec.name, type(e).__name__, e
            )
            continue
        out.append(method)
    return out


def register(manager: Manager, ctx: ControllerContext) -> None:
    """Add the ``disruption`` singleton and the ``disruption.queue`` controller."""
    cluster = cluster_of(ctx)
    provisioner = provisioner_of(ctx)
    queue = Queue(ctx, cluster, provisioner)
    queue_controller = manager.add_controller(QUEUE_NAME, queue, workers=QUEUE_WORKERS)
    queue.bind(queue_controller.enqueue)
    dctx = DisruptionContext(ctx, cluster, queue, provisioner)
    methods = build_methods(dctx, ctx.extras.get(EXTRAS_METHODS, ()))
    controller = DisruptionController(dctx, queue, methods)
    manager.add_singleton(NAME, controller)
    ctx.extras[NAME] = controller
    ctx.extras[QUEUE_NAME] = queue
