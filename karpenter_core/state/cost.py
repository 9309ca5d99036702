"""What each NodePool costs right now, from Karpenter's point of view (upstream
``pkg/state/cost``, spec operator-and-lifecycle §4.12).

:class:`ClusterCost` keeps, per NodePool, how many NodeClaims run on each offering
(zone, capacity type, instance type) and that offering's price, so a NodePool's cost is
``sum(count * price)``. The ``state.nodeclaim`` informer feeds it NodeClaims, the
``state.nodepool`` informer drops deleted NodePools, and the hourly ``state.pricing``
singleton re-prices the offerings it tracks (so a provider's price change or a NodeOverlay
shows up). Balanced consolidation reads a pool's cost from here and ``metrics.nodepool``
publishes it as ``karpenter_nodepools_cost_total``.

Prices are whatever the cloud provider the controllers share reports (NodeOverlays
included); the figure is an estimate for decisions and dashboards, not billing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from attrs import frozen

from karpenter_core import metrics
from karpenter_core.apis.accessors import labels_of, name_of
from karpenter_core.apis.labels import (
    CAPACITY_TYPE_LABEL_KEY,
    LABEL_INSTANCE_TYPE,
    LABEL_TOPOLOGY_ZONE,
    NODEPOOL_LABEL_KEY,
)
from karpenter_core.apis.v1 import APIError, NodePool
from karpenter_core.kube.client import NotFound
from karpenter_core.state.cluster import NODEPOOLS

if TYPE_CHECKING:
    from karpenter_core.cloudprovider.protocol import CloudProvider
    from karpenter_core.cloudprovider.types import InstanceType
    from karpenter_core.kube.client import KubeClient
    from karpenter_core.runtime.context import ControllerContext

__all__ = [
    "NECESSARY_LABELS",
    "ClusterCost",
    "OfferingCount",
    "OfferingKey",
    "cluster_cost_of",
    "existing_cluster_cost",
]

log = logging.getLogger("karpenter.state.cost")

NECESSARY_LABELS = (
    LABEL_INSTANCE_TYPE,
    CAPACITY_TYPE_LABEL_KEY,
    LABEL_TOPOLOGY_ZONE,
    NODEPOOL_LABEL_KEY,
)
"""A NodeClaim is counted only once it carries all of these (they arrive at launch)."""


@frozen
class OfferingKey:
    """Where a NodeClaim's instance was bought: one offering of one instance type."""

    zone: str
    capacity_type: str
    instance_type: str


@frozen
class OfferingCount:
    """How many tracked NodeClaims run on an offering, and its price per instance."""

    count: int
    price: float


@frozen
class _Tracked:
    nodepool: str
    offering: OfferingKey


def _find_price(instance_types: Iterable[InstanceType], key: OfferingKey) -> float | None:
    for it in instance_types:
        if it is None or it.name != key.instance_type:
            continue
        return it.offering_price(key.zone, key.capacity_type)
    return None


def _pool_cost(offerings: Mapping[OfferingKey, OfferingCount]) -> float:
    # Summed afresh on every change (a pool has few offerings) rather than kept as a
    # running total, so adds and removes cannot leave rounding residue behind.
    return sum(oc.count * oc.price for oc in offerings.values())


class ClusterCost:
    """Per-NodePool offering counts and prices; safe to share between controller threads.

    A NodeClaim is counted once, under the NodePool, zone, capacity type and instance
    type its labels name when it is first seen with all of them; later label changes do
    not move it. An offering's price is looked up (NodePool read from the API, then the
    provider's instance types for it) the first time a pool uses it, and kept until
    :meth:`update_offerings` re-prices it or its last NodeClaim goes. An unknown price
    counts as 0 and is logged as an error: the pool is under-counted until the next
    re-pricing finds it.
    """

    def __init__(self, kube: KubeClient, cloud_provider: CloudProvider) -> None:
        self.kube = kube
        self.cloud_provider = cloud_provider
        self._lock = threading.Lock()
        self._pools: dict[str, dict[OfferingKey, OfferingCount]] = {}
        self._costs: dict[str, float] = {}
        self._nodeclaims: dict[str, _Tracked] = {}

    # ------------------------------------------------------------------ reads

    def nodepool_cost(self, nodepool: str) -> float:
        """The pool's current cost (0 when it tracks no NodeClaim)."""
        with self._lock:
            return self._costs.get(nodepool, 0.0)

    def cluster_cost(self) -> float:
        """The sum over every NodePool."""
        with self._lock:
            return sum(self._costs.values())

    def offerings(self, nodepool: str) -> dict[OfferingKey, OfferingCount]:
        """A copy of the pool's offering table (empty when untracked)."""
        with self._lock:
            return dict(self._pools.get(nodepool, {}))

    def nodepools(self) -> list[str]:
        """The NodePools with at least one tracked NodeClaim, sorted."""
        with self._lock:
            return sorted(self._pools)

    def is_tracked(self, nodeclaim_name: str) -> bool:
        with self._lock:
            return nodeclaim_name in self._nodeclaims

    # ------------------------------------------------------------------ writes

    def update_nodeclaim(self, nodeclaim: Mapping[str, Any]) -> str | None:
        """Count ``nodeclaim`` if it is new and carries every :data:`NECESSARY_LABELS`.

        Returns None when done (or nothing to do: already counted, labels not there
        yet), else why it could not be counted (its NodePool is not in the API, the
        provider's instance types could not be read); that also increments
        ``karpenter_nodepools_cost_tracker_errors_total`` and the caller should retry.
        """
        name = name_of(nodeclaim)
        labels = labels_of(nodeclaim)
        if not name or any(not isinstance(labels.get(k), str) for k in NECESSARY_LABELS):
            return None  # the labels come at launch; the next update will carry them
        pool = str(labels[NODEPOOL_LABEL_KEY])
        key = OfferingKey(
            zone=str(labels[LABEL_TOPOLOGY_ZONE]),
            capacity_type=str(labels[CAPACITY_TYPE_LABEL_KEY]),
            instance_type=str(labels[LABEL_INSTANCE_TYPE]),
        )
        with self._lock:
            if name in self._nodeclaims:
                return None
            error = self._add_offering(pool, key)
            if error is None:
                self._nodeclaims[name] = _Tracked(pool, key)
        if error is not None:
            metrics.NODEPOOLS_COST_TRACKER_ERRORS_TOTAL.labels(nodepool=pool).inc()
            return f"nodeclaim {name} (nodepool {pool}): {error}"
        return None

    def delete_nodeclaim(self, name: str) -> str | None:
        """Stop counting ``name`` (a no-op when it was not counted); an offering with no
        NodeClaim left is dropped, and so is a NodePool with no offering left. Returns
        why that was impossible (tracking was inconsistent), counted as an error."""
        with self._lock:
            tracked = self._nodeclaims.get(name)
            if tracked is None:
                return None
            error = self._remove_offering(tracked.nodepool, tracked.offering)
            if error is None:
                del self._nodeclaims[name]
        if error is not None:
            metrics.NODEPOOLS_COST_TRACKER_ERRORS_TOTAL.labels(nodepool=tracked.nodepool).inc()
            return f"nodeclaim {name}: {error}"
        return None

    def delete_nodepool(self, nodepool: str) -> None:
        """Forget a deleted NodePool and every NodeClaim counted under it."""
        with self._lock:
            self._nodeclaims = {n: t for n, t in self._nodeclaims.items() if t.nodepool != nodepool}
            self._pools.pop(nodepool, None)
            self._costs.pop(nodepool, None)

    def update_offerings(self, nodepool: str, instance_types: Iterable[InstanceType]) -> None:
        """Re-price the pool's tracked offerings from ``instance_types`` (the provider's
        current view for that NodePool) and recompute its cost. Offerings the new list
        does not mention keep their last price; untracked pools are left alone."""
        prices: dict[OfferingKey, float] = {}
        for it in instance_types:
            if it is None:
                continue
            for o in it.offerings:
                prices[OfferingKey(o.zone, o.capacity_type, it.name)] = float(o.price)
        with self._lock:
            offerings = self._pools.get(nodepool)
            if offerings is None:
                return
            for key, oc in list(offerings.items()):
                price = prices.get(key)
                if price is not None and price != oc.price:
                    offerings[key] = OfferingCount(oc.count, price)
            self._costs[nodepool] = _pool_cost(offerings)

    def reset(self) -> None:
        """Forget everything (tests; a fresh start)."""
        with self._lock:
            self._pools.clear()
            self._costs.clear()
            self._nodeclaims.clear()

    # ------------------------------------------------------------------ internals (locked)

    def _add_offering(self, pool: str, key: OfferingKey) -> str | None:
        offerings = self._pools.get(pool, {})
        oc = offerings.get(key)
        if oc is None:
            price, error = self._look_up_price(pool, key)
            if error is not None:
                return error
            oc = OfferingCount(0, price)
        offerings[key] = OfferingCount(oc.count + 1, oc.price)
        self._pools[pool] = offerings
        self._costs[pool] = _pool_cost(offerings)
        return None

    def _remove_offering(self, pool: str, key: OfferingKey) -> str | None:
        offerings = self._pools.get(pool)
        if offerings is None:
            return f"nodepool {pool} is not tracked (offering {_describe(key)})"
        oc = offerings.get(key)
        if oc is None:
            return f"offering {_describe(key)} is not tracked in nodepool {pool}"
        if oc.count <= 1:
            del offerings[key]
        else:
            offerings[key] = OfferingCount(oc.count - 1, oc.price)
        if not offerings:
            del self._pools[pool]
            self._costs.pop(pool, None)
        else:
            self._costs[pool] = _pool_cost(offerings)
        return None

    def _look_up_price(self, pool: str, key: OfferingKey) -> tuple[float, str | None]:
        try:
            raw = self.kube.get(NODEPOOLS, pool)
        except NotFound:
            return 0.0, f"nodepool {pool} not found"
        except Exception as e:  # an API failure is retried by the caller, not raised
            return 0.0, f"reading nodepool {pool}: {type(e).__name__}: {e}"
        try:
            model = NodePool.from_dict(raw)
        except APIError as e:
            return 0.0, f"nodepool {pool} is invalid: {e}"
        try:
            instance_types = list(self.cloud_provider.get_instance_types(model))
        except Exception as e:  # a provider failure must not break the informer
            return 0.0, (
                f"getting instance types for nodepool {pool} to price "
                f"{key.instance_type}: {type(e).__name__}: {e}"
            )
        price = _find_price(instance_types, key)
        if price is None:
            log.error(
                "nodepool %s: no price for offering %s; counted at 0 until prices are next "
                "refreshed",
                pool,
                _describe(key),
            )
            return 0.0, None
        return float(price), None


def _describe(key: OfferingKey) -> str:
    return (
        f"(instance type {key.instance_type}, zone {key.zone}, capacity type {key.capacity_type})"
    )


def existing_cluster_cost(ctx: ControllerContext) -> ClusterCost | None:
    """The context's ClusterCost if the state controllers created one, else None (e.g.
    a test that builds cluster state by hand: readers then fall back to other figures)."""
    return ctx.cost


def cluster_cost_of(ctx: ControllerContext) -> ClusterCost:
    """The context's ClusterCost, created on first use over ``ctx.kube`` and the
    provider the controllers share (call it after overlays are installed, as the state
    package's registration does, so prices include NodeOverlays)."""
    found = existing_cluster_cost(ctx)
    if found is None:
        found = ClusterCost(ctx.kube, ctx.cloud_provider)
        ctx.cost = found
    return found
