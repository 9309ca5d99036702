"""The plugin karpenter-core registers for itself, before any installed plugin.

The core's extension-shaped features register through the same hooks a third party uses
(datasette's and conda's built-in plugins are the model), so a plugin can do everything a
built-in does:

- ``karpenter_disruption_methods``: emptiness, static drift, drift, multi-node and
  single-node consolidation, at upstream's positions (Balanced and spot-to-spot
  consolidation are decisions inside the consolidation methods, as upstream). A plugin
  method with one of these names replaces it.
- ``karpenter_instance_type_overlays``: the NodeOverlay CRD support (feature gate
  ``NodeOverlay``), at :data:`~karpenter_core.hookspecs.WEIGHT_NODEOVERLAY` so the
  cluster's NodeOverlay objects have the last word over plugin overlays.
- ``karpenter_instance_type_scorers``: ``price`` (the default, upstream's order),
  ``least-waste`` and ``priority`` (:mod:`karpenter_core.scoring`). A plugin scorer with
  one of these names replaces it.

Each factory imports its implementation when it is called, so building the plugin manager
(``karpenter plugins``) does not import the disruption or NodeOverlay packages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpenter_core.hookspecs import (
    ORDER_DRIFT,
    ORDER_EMPTINESS,
    ORDER_MULTI_NODE_CONSOLIDATION,
    ORDER_SINGLE_NODE_CONSOLIDATION,
    ORDER_STATIC_DRIFT,
    WEIGHT_NODEOVERLAY,
    DisruptionMethodSpec,
    InstanceTypeOverlayFn,
    InstanceTypeOverlaySpec,
    InstanceTypeScorerSpec,
)
from karpenter_core.plugins import hookimpl

if TYPE_CHECKING:
    from karpenter_core.controllers.disruption.context import DisruptionContext
    from karpenter_core.disruption.types import Method
    from karpenter_core.runtime.context import ControllerContext

__all__ = [
    "DISRUPTION_METHOD_NAMES",
    "NODEOVERLAY_OVERLAY",
    "karpenter_disruption_methods",
    "karpenter_instance_type_overlays",
    "karpenter_instance_type_scorers",
]

NODEOVERLAY_OVERLAY = "nodeoverlay"
"""The built-in overlay's name (a plugin overlay of this name replaces it)."""


def _emptiness(dctx: DisruptionContext) -> Method:
    from karpenter_core.disruption.methods.emptiness import Emptiness

    return Emptiness()


def _static_drift(dctx: DisruptionContext) -> Method:
    from karpenter_core.disruption.methods.staticdrift import StaticDrift

    return StaticDrift()


def _drift(dctx: DisruptionContext) -> Method:
    from karpenter_core.disruption.methods.drift import Drift

    return Drift()


def _spot_to_spot(dctx: DisruptionContext) -> bool:
    from karpenter_core.disruption.methods.spottospot import SPOT_TO_SPOT_FEATURE_GATE

    return dctx.options.gate(SPOT_TO_SPOT_FEATURE_GATE)


def _multi_node_consolidation(dctx: DisruptionContext) -> Method:
    from karpenter_core.disruption.methods.multinode import MultiNodeConsolidation

    return MultiNodeConsolidation(dctx.clock, spot_to_spot=_spot_to_spot(dctx))


def _single_node_consolidation(dctx: DisruptionContext) -> Method:
    from karpenter_core.disruption.methods.singlenode import SingleNodeConsolidation

    return SingleNodeConsolidation(dctx.clock, spot_to_spot=_spot_to_spot(dctx))


_METHODS = (
    DisruptionMethodSpec("emptiness", ORDER_EMPTINESS, _emptiness),
    DisruptionMethodSpec("static-drift", ORDER_STATIC_DRIFT, _static_drift),
    DisruptionMethodSpec("drift", ORDER_DRIFT, _drift),
    DisruptionMethodSpec(
        "multi-node-consolidation", ORDER_MULTI_NODE_CONSOLIDATION, _multi_node_consolidation
    ),
    DisruptionMethodSpec(
        "single-node-consolidation", ORDER_SINGLE_NODE_CONSOLIDATION, _single_node_consolidation
    ),
)

DISRUPTION_METHOD_NAMES = tuple(spec.name for spec in _METHODS)
"""The built-in methods' names, in upstream order."""


@hookimpl
def karpenter_disruption_methods() -> list[DisruptionMethodSpec]:
    return list(_METHODS)


def _bind_nodeoverlay(ctx: ControllerContext) -> InstanceTypeOverlayFn | None:
    """With the NodeOverlay gate on, the instance types the NodeOverlay controller
    evaluated for each NodePool (its store); a pool not evaluated yet raises
    ``UnevaluatedNodePoolError`` and is skipped for the pass."""
    if not ctx.options.gate("NodeOverlay"):
        return None
    from karpenter_core.controllers.nodeoverlay import store_of

    return store_of(ctx).overlay


@hookimpl
def karpenter_instance_type_overlays() -> list[InstanceTypeOverlaySpec]:
    return [
        InstanceTypeOverlaySpec(NODEOVERLAY_OVERLAY, WEIGHT_NODEOVERLAY, bind=_bind_nodeoverlay)
    ]


@hookimpl
def karpenter_instance_type_scorers() -> list[InstanceTypeScorerSpec]:
    from karpenter_core.scoring import BUILTIN_SCORERS

    return list(BUILTIN_SCORERS)
