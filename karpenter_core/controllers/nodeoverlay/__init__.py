"""NodeOverlay support (feature gate ``NodeOverlay``, default off): the
``nodeoverlay.controller`` and the instance-type store it fills.

``register(manager, ctx)`` is called by the operator's registry only when the gate is on.
It installs the overlay step on ``ctx.cloud_provider`` (:func:`install`), so every
controller that reads instance types through the context -- provisioning, disruption,
drift -- sees overlaid prices and capacity, and a NodePool the controller has not evaluated
yet raises ``UnevaluatedNodePoolError`` (those callers skip the pool for the pass). The
controller itself reads the provider without the NodeOverlay step.

Shared through ``ctx.extras``: the store under ``"nodeoverlay.store"``, the provider the
controller reads under ``"nodeoverlay.undecorated_provider"``. Plugin overlays
(``karpenter_instance_type_overlays``) are taken from ``ctx.extras["instance_type_overlays"]``
when the operator put them there; they apply beneath NodeOverlays (see
:mod:`karpenter_core.cloudprovider.overlay`).
"""

from __future__ import annotations

from typing import Any

from karpenter_core.cloudprovider.overlay import OverlayDecorator, decorate
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
    "PLUGIN_OVERLAYS_KEY",
    "STORE_KEY",
    "UNDECORATED_PROVIDER_KEY",
    "InstanceTypeStore",
    "NodeOverlayController",
    "install",
    "register",
]

STORE_KEY = "nodeoverlay.store"
UNDECORATED_PROVIDER_KEY = "nodeoverlay.undecorated_provider"
PLUGIN_OVERLAYS_KEY = "instance_type_overlays"


def install(ctx: ControllerContext) -> tuple[InstanceTypeStore, Any]:
    """Decorate ``ctx.cloud_provider`` with the NodeOverlay step, once per context.

    Returns the store and the provider the controller should read (the original one, plus
    plugin overlays when there are any). Calling it again returns the same pair, so an
    operator may install before ``register_all`` to have controllers that capture the
    provider at registration see the decorated one.
    """
    store = ctx.extras.get(STORE_KEY)
    if isinstance(store, InstanceTypeStore):
        return store, ctx.extras[UNDECORATED_PROVIDER_KEY]
    store = InstanceTypeStore()
    plugin_overlays = tuple(ctx.extras.get(PLUGIN_OVERLAYS_KEY) or ())
    original = ctx.cloud_provider
    undecorated: Any = original
    if plugin_overlays:
        undecorated = OverlayDecorator(original, None, plugin_overlays=plugin_overlays)
    ctx.cloud_provider = decorate(original, store, plugin_overlays=plugin_overlays)
    ctx.extras[STORE_KEY] = store
    ctx.extras[UNDECORATED_PROVIDER_KEY] = undecorated
    return store, undecorated


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
    """Install the overlay step and add ``nodeoverlay.controller`` (one worker)."""
    store, undecorated = install(ctx)
    manager.add_controller(
        NAME,
        NodeOverlayController(ctx, undecorated, store),
        watches=[
            Watch(NODEOVERLAYS, mapper=to_reconcile_key, predicate=GenerationChanged()),
            Watch(NODEPOOLS, mapper=to_reconcile_key, predicate=GenerationChanged()),
            *_nodeclass_watches(ctx),
        ],
        workers=1,
    )
