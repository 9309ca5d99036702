"""The NodeClaim controllers (upstream ``pkg/controllers/nodeclaim``).

``register(manager, ctx)`` adds:

* ``nodeclaim.lifecycle`` — launch, registration, initialization, liveness, finalization;
* ``nodeclaim.garbagecollection`` — NodeClaims whose instance vanished, instances no
  NodeClaim accounts for (every 2 minutes);
* ``nodeclaim.consistency`` — the node-shape check behind ``ConsistentStateFound``;
* ``nodeclaim.podevents`` — ``status.lastPodEventTime``;
* ``nodeclaim.expiration`` — delete NodeClaims older than ``expireAfter``;
* ``nodeclaim.disruption`` — the ``Drifted`` and ``Consolidatable`` markers;
* ``nodeclaim.hydration`` / ``node.hydration`` — the NodeClass label on NodeClaims and
  their Nodes.

Registration hooks are the plugins' ``karpenter_node_lifecycle_hooks`` registrations
(``ctx.plugins.node_lifecycle_hooks``) that apply to the selected cloud provider; the
NodePool registration-health record is shared through ``ctx.nodepool_health``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

from karpenter_core.controllers.nodeclaim import (
    consistency,
    disruption,
    expiration,
    garbagecollection,
    hydration,
    lifecycle,
    nodehydration,
    podevents,
)
from karpenter_core.controllers.nodeclaim.nodepoolhealth import shared as shared_nodepool_health
from karpenter_core.controllers.nodeclaim.utils import NodeIndex, is_managed, provider_id
from karpenter_core.kube.client import ApiError, UnknownResourceError, resource_for
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import Watch
from karpenter_core.runtime.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
)

__all__ = ["register"]

LIFECYCLE_WORKERS = 20
WORKERS = 10


def _slice_mapper(ctx: ControllerContext, index: NodeIndex) -> Any:
    def mapper(event_type: str, obj: dict[str, Any]) -> Iterable[Hashable]:
        spec = obj.get("spec") or {}
        node_name = spec.get("nodeName") or next(
            (
                o.get("name")
                for o in (obj.get("metadata") or {}).get("ownerReferences") or ()
                if o.get("kind") == "Node"
            ),
            None,
        )
        if not node_name:
            return ()
        try:
            node = ctx.kube.get("nodes", str(node_name))
        except ApiError:
            return ()
        return index.keys_for(provider_id(node))

    return mapper


def register(manager: Manager, ctx: ControllerContext) -> None:
    """Add the NodeClaim controllers to ``manager``."""
    health = shared_nodepool_health(ctx)
    provider = str(getattr(ctx.base_cloud_provider, "name", "") or "")
    hooks = tuple(
        h
        for h in ctx.plugins.node_lifecycle_hooks
        if h.cloud_provider is None or h.cloud_provider == provider
    )

    def managed(event_type: str, obj: dict[str, Any]) -> bool:
        return is_managed(obj, ctx.cloud_provider)

    reconciler = lifecycle.NodeClaimLifecycle(ctx, health, hooks)
    watches = reconciler.watches()
    if not ctx.options.ignore_dra_requests:
        try:
            resource_for("resourceslices")
        except UnknownResourceError:
            pass
        else:
            watches.append(Watch("resourceslices", mapper=_slice_mapper(ctx, reconciler.index)))
    manager.add_controller(
        lifecycle.NAME,
        reconciler,
        watches=watches,
        workers=LIFECYCLE_WORKERS,
        rate_limiter=MaxOfRateLimiter(
            ItemExponentialFailureRateLimiter(1.0, 60.0),
            BucketRateLimiter(ctx.clock, qps=100.0, burst=1000),
        ),
    )
    manager.add_singleton(garbagecollection.NAME, garbagecollection.GarbageCollection(ctx))
    checker = consistency.Consistency(ctx)
    manager.add_controller(
        consistency.NAME,
        checker,
        watches=[
            Watch("nodeclaims", mapper=checker.index.nodeclaim_mapper, predicate=managed),
            Watch("nodes", mapper=checker.index.node_mapper),
        ],
        workers=WORKERS,
    )
    pod_index = NodeIndex()

    def index_only(event_type: str, obj: dict[str, Any]) -> Iterable[Hashable]:
        pod_index.observe(event_type, obj)
        return ()

    manager.add_controller(
        podevents.NAME,
        podevents.PodEvents(ctx, pod_index),
        watches=[
            Watch("nodeclaims", mapper=index_only),
            Watch("pods", mapper=podevents.PodTransitions()),
        ],
        workers=WORKERS,
    )
    manager.add_controller(
        expiration.NAME,
        expiration.Expiration(ctx),
        watches=[Watch("nodeclaims", predicate=managed)],
        workers=WORKERS,
    )
    markers = disruption.Disruption(ctx)
    manager.add_controller(disruption.NAME, markers, watches=markers.watches(), workers=WORKERS)
    manager.add_controller(
        hydration.NAME,
        hydration.Hydration(ctx),
        watches=[Watch("nodeclaims", predicate=managed)],
        workers=WORKERS,
    )
    node_hydration = nodehydration.NodeHydration(ctx)
    manager.add_controller(
        nodehydration.NAME,
        node_hydration,
        watches=[
            Watch("nodeclaims", mapper=node_hydration.nodeclaim_mapper),
            Watch("nodes", mapper=node_hydration.node_mapper),
        ],
        workers=WORKERS,
    )
