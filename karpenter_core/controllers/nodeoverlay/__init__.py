"""NodeOverlay support (feature gate ``NodeOverlay``, default off): the
``nodeoverlay.controller`` and the instance-type store it fills.

The store is applied by the built-in ``nodeoverlay`` instance-type overlay
(:mod:`karpenter_core.builtins`), bound to the context like any plugin overlay by
:func:`~karpenter_core.cloudprovider.overlay.install_overlays`, so every controller that
reads instance types through the context -- provisioning, disruption, drift -- sees
overlaid prices and capacity, and a NodePool the controller has not evaluated yet raises
``UnevaluatedNodePoolError`` (those callers skip the pool for the pass). The controller
itself reads the provider as seen below the NodeOverlay overlay (plugin overlays
included).

``register(manager, ctx)`` is called by the operator's registry only when the gate is on.
"""

from __future__ import annotations

from karpenter_core.cloudprovider.overlay import install_overlays
from karpenter_core.controllers.nodeoverlay.controller import (
    NAME,
    NODEOVERLAYS,
    NODEPOOLS,
    GenerationChanged,
    NodeOverlayController,
    to_reconcile_key,
)
from karpenter_core.controllers.nodeoverlay.store import InstanceTypeStore
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import Watch

__all__ = [
    "NAME",
    "InstanceTypeStore",
    "NodeOverlayController",
    "register",
    "store_of",
]


def store_of(ctx: ControllerContext) -> InstanceTypeStore:
    """The process's NodeOverlay store, created on first use."""
    if ctx.overlay_store is None:
        ctx.overlay_store = InstanceTypeStore()
    return ctx.overlay_store


def _nodeclass_watches(ctx: ControllerContext) -> list[Watch]:
    from karpenter_core.controllers.nodepool.common import nodeclass_resource

    try:
        kinds = list(ctx.cloud_provider.supported_node_classes())
    except Exception:
        return []
    watches = []
    for kind in kinds:
        rt = nodeclass_resource(kind)
        if rt is not None:
            watches.append(Watch(rt, mapper=to_reconcile_key, predicate=GenerationChanged()))
    return watches


def register(manager: Manager, ctx: ControllerContext) -> None:
    """Add ``nodeoverlay.controller`` (one worker), installing the overlay step first if
    the registry has not."""
    below = install_overlays(ctx)
    manager.add_controller(
        NAME,
        NodeOverlayController(ctx, below, store_of(ctx)),
        watches=[
            Watch(NODEOVERLAYS, mapper=to_reconcile_key, predicate=GenerationChanged()),
            Watch(NODEPOOLS, mapper=to_reconcile_key, predicate=GenerationChanged()),
            *_nodeclass_watches(ctx),
        ],
        workers=1,
    )
