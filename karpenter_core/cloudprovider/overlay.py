"""A CloudProvider wrapper that hands out instance types with overlays applied.

Upstream's ``overlay.Decorate`` overrides only ``GetInstanceTypes``: it asks the wrapped
provider, then applies what the NodeOverlay controller recorded in its instance-type store.
Here every overlay is an :class:`~karpenter_core.hookspecs.InstanceTypeOverlaySpec`
registered through the ``karpenter_instance_type_overlays`` hook -- the NodeOverlay support
too (:mod:`karpenter_core.builtins`, at
:data:`~karpenter_core.hookspecs.WEIGHT_NODEOVERLAY`) -- bound once to the running operator
(:func:`bind_overlays`) and applied in ascending weight, so the heaviest has the final word:
with only the built-in one installed, the behaviour is exactly upstream's. A NodePool the
NodeOverlay controller has not evaluated yet raises
:class:`~karpenter_core.cloudprovider.errors.UnevaluatedNodePoolError`, which provisioning
and disruption read as "skip this pool for this pass" rather than schedule against prices
that are about to change.

The price maths (:func:`adjusted_price`, upstream ``cloudprovider.AdjustedPrice``) lives
with :class:`~karpenter_core.cloudprovider.types.Offering` and is re-exported here.

Wrapping order follows upstream's main: ``metrics(overlay(provider))``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from attrs import frozen

from karpenter_core.cloudprovider.errors import UnevaluatedNodePoolError
from karpenter_core.cloudprovider.types import adjusted_price

if TYPE_CHECKING:
    from karpenter_core.apis.v1 import NodeClaim, NodePool
    from karpenter_core.cloudprovider.protocol import (
        CloudProvider,
        DriftReason,
        NodeClassKind,
        RepairPolicy,
    )
    from karpenter_core.cloudprovider.types import InstanceType
    from karpenter_core.hookspecs import InstanceTypeOverlayFn, InstanceTypeOverlaySpec
    from karpenter_core.runtime.context import ControllerContext

__all__ = [
    "BoundOverlay",
    "OverlayDecorator",
    "adjusted_price",
    "apply_overlays",
    "bind_overlays",
    "decorate",
    "install_overlays",
]

log = logging.getLogger("karpenter.cloudprovider")


@frozen
class BoundOverlay:
    """An overlay ready to apply: its spec's ``apply``, or what its ``bind`` returned."""

    name: str
    weight: int
    apply: InstanceTypeOverlayFn

    @property
    def order(self) -> tuple[int, str]:
        return (self.weight, self.name)


def bind_overlays(
    specs: Sequence[InstanceTypeOverlaySpec], ctx: ControllerContext | None
) -> list[BoundOverlay]:
    """The overlays active for ``ctx``, in application order. A ``bind`` that returns
    None (not active here) is left out; one that raises is left out with a warning
    naming it; without a context (no running operator) binding overlays are left out."""
    out: list[BoundOverlay] = []
    for spec in specs:
        fn = spec.apply
        if fn is None and spec.bind is not None and ctx is not None:
            try:
                fn = spec.bind(ctx)
            except Exception as e:
                log.warning(
                    "instance type overlay %s could not be bound, skipped: %s: %s",
                    spec.name,
                    type(e).__name__,
                    e,
                )
                continue
        if fn is not None:
            out.append(BoundOverlay(spec.name, spec.weight, fn))
    return sorted(out, key=lambda o: o.order)


def apply_overlays(
    overlays: Sequence[BoundOverlay],
    nodepool: NodePool,
    instance_types: Sequence[InstanceType],
) -> list[InstanceType]:
    """Run ``overlays`` in ascending weight (ties by name): the heaviest has the last
    word. :class:`UnevaluatedNodePoolError` goes to the caller (the pool is skipped this
    pass); an overlay that fails otherwise or returns something other than a list of
    instance types is skipped with a warning naming it: one broken plugin must not stop
    provisioning."""
    out = list(instance_types)
    for overlay in sorted(overlays, key=lambda o: o.order):
        try:
            result = list(overlay.apply(nodepool, tuple(out)))
        except UnevaluatedNodePoolError:
            raise
        except Exception as e:
            log.warning(
                "instance type overlay %s failed for nodepool %s, skipped: %s: %s",
                overlay.name,
                nodepool.name,
                type(e).__name__,
                e,
            )
            continue
        if not all(hasattr(it, "offerings") and hasattr(it, "name") for it in result):
            log.warning(
                "instance type overlay %s returned something other than instance types for "
                "nodepool %s, skipped",
                overlay.name,
                nodepool.name,
            )
            continue
        out = result
    return out


class OverlayDecorator:
    """Delegates to ``inner``; ``get_instance_types`` applies ``overlays`` per NodePool.

    Attributes the protocol does not name pass straight through.
    """

    def __init__(self, inner: CloudProvider, overlays: Sequence[BoundOverlay] = ()) -> None:
        self._inner = inner
        self._overlays = tuple(sorted(overlays, key=lambda o: o.order))

    @property
    def inner(self) -> CloudProvider:
        """The wrapped provider."""
        return self._inner

    @property
    def overlays(self) -> tuple[BoundOverlay, ...]:
        """The overlays applied, in order."""
        return self._overlays

    @property
    def name(self) -> str:
        return self._inner.name

    def get_instance_types(self, nodepool: NodePool | None) -> Sequence[InstanceType]:
        its = self._inner.get_instance_types(nodepool)
        if nodepool is None or not self._overlays:
            # Overlays are per NodePool; a pool-less listing (``karpenter instance-types``)
            # shows what the provider offers.
            return its
        return apply_overlays(self._overlays, nodepool, its)

    def create(self, nodeclaim: NodeClaim) -> NodeClaim:
        return self._inner.create(nodeclaim)

    def delete(self, nodeclaim: NodeClaim) -> None:
        self._inner.delete(nodeclaim)

    def get(self, provider_id: str) -> NodeClaim:
        return self._inner.get(provider_id)

    def list(self) -> Sequence[NodeClaim]:
        return self._inner.list()

    def is_drifted(self, nodeclaim: NodeClaim) -> DriftReason:
        return self._inner.is_drifted(nodeclaim)

    def repair_policies(self) -> Sequence[RepairPolicy]:
        return self._inner.repair_policies()

    def supported_node_classes(self) -> Sequence[NodeClassKind]:
        return self._inner.supported_node_classes()

    def __getattr__(self, attr: str) -> Any:
        # Only reached for attributes not defined here: provider-specific extras.
        if attr.startswith("__") or attr in ("_inner", "_overlays"):
            raise AttributeError(attr)
        return getattr(self._inner, attr)

    def __repr__(self) -> str:
        return f"OverlayDecorator({self._inner!r})"


def decorate(provider: CloudProvider, overlays: Sequence[BoundOverlay]) -> CloudProvider:
    """``provider`` with ``overlays`` applied to its instance types, keeping upstream's
    order ``metrics(overlay(provider))``: a metrics-wrapped provider is unwrapped,
    decorated and wrapped again, so the ``GetInstanceTypes`` duration still covers the
    whole call. With no overlays the provider is returned unchanged.

    An already overlay-decorated provider is returned as is (decorating twice would apply
    overlays twice)."""
    from karpenter_core.cloudprovider import metrics

    if not overlays:
        return provider
    if isinstance(provider, metrics.MetricsDecorator):
        inner = provider.inner
        if isinstance(inner, OverlayDecorator):
            return provider
        return metrics.decorate(OverlayDecorator(inner, overlays))
    if isinstance(provider, OverlayDecorator):
        return provider
    return OverlayDecorator(provider, overlays)


def install_overlays(ctx: ControllerContext) -> CloudProvider:
    """Put the overlay step on ``ctx.cloud_provider`` before any controller captures it
    (once per context): every registered overlay bound to ``ctx`` (plugin overlays and the
    built-in NodeOverlay one when its gate is on), so provisioning, disruption and drift
    all read the same instance types. Returns the provider as seen below the NodeOverlay
    overlay, the view its controller evaluates NodeOverlay objects against."""
    from karpenter_core.hookspecs import WEIGHT_NODEOVERLAY

    if ctx.below_nodeoverlays is not None:
        return ctx.below_nodeoverlays
    bound = bind_overlays(ctx.plugins.instance_type_overlays, ctx)
    base = ctx.cloud_provider
    nodeoverlay_at = (WEIGHT_NODEOVERLAY, "nodeoverlay")
    below = decorate(base, [o for o in bound if o.order < nodeoverlay_at])
    ctx.cloud_provider = decorate(base, bound)
    ctx.below_nodeoverlays = below
    return below
