"""A CloudProvider wrapper that hands out instance types with overlays applied.

Upstream's ``overlay.Decorate`` overrides only ``GetInstanceTypes``: it asks the wrapped
provider, then applies what the NodeOverlay controller recorded in its instance-type store
(:class:`karpenter_core.controllers.nodeoverlay.store.InstanceTypeStore`). A NodePool the
controller has not evaluated yet raises
:class:`~karpenter_core.cloudprovider.errors.UnevaluatedNodePoolError`, which provisioning
and disruption read as "skip this pool for this pass" rather than schedule against prices
that are about to change.

Plugin overlays (``karpenter_instance_type_overlays``) compose *beneath* NodeOverlays:
they run first, in ascending weight, as part of what the provider offers; the NodeOverlay
controller evaluates its objects against that same adjusted view, and NodeOverlays -- the
cluster's own objects -- have the final word. With no plugin overlays installed the
behaviour is exactly upstream's.

The price maths (:func:`adjusted_price`, upstream ``cloudprovider.AdjustedPrice``) lives
with :class:`~karpenter_core.cloudprovider.types.Offering` and is re-exported here.

Wrapping order follows upstream's main: ``metrics(overlay(provider))``. Only the
NodeOverlay controller reads the provider without the NodeOverlay step.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

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
    from karpenter_core.hookspecs import InstanceTypeOverlaySpec

__all__ = [
    "InstanceTypeSource",
    "OverlayDecorator",
    "adjusted_price",
    "apply_plugin_overlays",
    "decorate",
]

log = logging.getLogger("karpenter.cloudprovider")


class InstanceTypeSource(Protocol):
    """What the decorator needs from the NodeOverlay store: ``apply_all``."""

    def apply_all(
        self, nodepool_name: str, instance_types: Sequence[InstanceType]
    ) -> list[InstanceType]: ...


def apply_plugin_overlays(
    overlays: Sequence[InstanceTypeOverlaySpec],
    nodepool: NodePool,
    instance_types: Sequence[InstanceType],
) -> list[InstanceType]:
    """Run plugin overlays in ascending weight (ties by name): the heaviest has the last
    word. A plugin overlay that fails or returns something other than a list of instance
    types is skipped with a warning naming it: one broken plugin must not stop
    provisioning."""
    out = list(instance_types)
    for spec in sorted(overlays, key=lambda s: (s.weight, s.name)):
        try:
            result = list(spec.apply(nodepool, tuple(out)))
        except Exception as e:
            log.warning(
                "instance type overlay %s failed for nodepool %s, skipped: %s: %s",
                spec.name,
                nodepool.name,
                type(e).__name__,
                e,
            )
            continue
        if not all(hasattr(it, "offerings") and hasattr(it, "name") for it in result):
            log.warning(
                "instance type overlay %s returned something other than instance types for "
                "nodepool %s, skipped",
                spec.name,
                nodepool.name,
            )
            continue
        out = result
    return out


class OverlayDecorator:
    """Delegates to ``inner``; ``get_instance_types`` adds plugin overlays and then, when
    a ``store`` is given, the NodeOverlays recorded for the NodePool.

    ``store=None`` gives the view the NodeOverlay controller evaluates against (plugin
    overlays only). Attributes the protocol does not name pass straight through.
    """

    def __init__(
        self,
        inner: CloudProvider,
        store: InstanceTypeSource | None,
        *,
        plugin_overlays: Sequence[InstanceTypeOverlaySpec] = (),
    ) -> None:
        self._inner = inner
        self._store = store
        self._plugin_overlays = tuple(plugin_overlays)

    @property
    def inner(self) -> CloudProvider:
        """The wrapped provider."""
        return self._inner

    @property
    def store(self) -> InstanceTypeSource | None:
        return self._store

    @property
    def name(self) -> str:
        return self._inner.name

    def get_instance_types(self, nodepool: NodePool | None) -> Sequence[InstanceType]:
        its = self._inner.get_instance_types(nodepool)
        if nodepool is None:
            # Overlays are per NodePool; a pool-less listing (``karpenter instance-types``)
            # shows what the provider offers.
            return its
        if self._plugin_overlays:
            its = apply_plugin_overlays(self._plugin_overlays, nodepool, its)
        if self._store is None:
            return its
        return self._store.apply_all(nodepool.name, its)

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
        if attr.startswith("__") or attr in ("_inner", "_store", "_plugin_overlays"):
            raise AttributeError(attr)
        return getattr(self._inner, attr)

    def __repr__(self) -> str:
        return f"OverlayDecorator({self._inner!r})"


def decorate(
    provider: CloudProvider,
    store: InstanceTypeSource | None,
    *,
    plugin_overlays: Sequence[InstanceTypeOverlaySpec] = (),
) -> CloudProvider:
    """``provider`` with overlays applied to its instance types, keeping upstream's order
    ``metrics(overlay(provider))``: a metrics-wrapped provider is unwrapped, decorated and
    wrapped again, so the ``GetInstanceTypes`` duration still covers the whole call.

    An already overlay-decorated provider is returned as is (decorating twice would apply
    plugin overlays twice)."""
    from karpenter_core.cloudprovider import metrics

    if isinstance(provider, metrics.MetricsDecorator):
        inner = provider.inner
        if isinstance(inner, OverlayDecorator):
            return provider
        return metrics.decorate(OverlayDecorator(inner, store, plugin_overlays=plugin_overlays))
    if isinstance(provider, OverlayDecorator):
        return provider
    return OverlayDecorator(provider, store, plugin_overlays=plugin_overlays)
