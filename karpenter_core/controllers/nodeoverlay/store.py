"""The NodeOverlay evaluation (a pure function) and the instance-type store it fills.

:func:`evaluate` is upstream's reconcile core without the I/O: given the overlays (already
runtime-validated) and every NodePool's instance types, it decides which overlays apply
where and which conflict, and returns an immutable :class:`StoreSnapshot`. The
:class:`InstanceTypeStore` holds the current snapshot; the controller swaps a new one in
after each evaluation, and the overlay decorator reads it on every ``get_instance_types``.

Rules (spec apis §4, upstream ``controllers/nodeoverlay``):

* Overlays are taken heaviest first; equal weights by name, descending.
* An overlay selects, per (NodePool, instance type), the offerings compatible with its
  requirements -- provided the instance type's requirements plus
  ``karpenter.sh/nodepool In [pool]`` plus the pool's template labels are compatible with
  them at all.
* Price: the first overlay to price an offering (keyed by the offering's requirements)
  wins. Another overlay is a *conflict* when the overlay that last touched that offering
  has the same weight.
* Capacity: keys merge per instance type, earlier overlays winning per key. An overlay is a
  conflict when the overlay that last recorded capacity for that instance type has the same
  weight and names one of the same resources.
* A conflicting overlay is applied nowhere: every NodePool is checked before anything is
  recorded.

"Last touched" is upstream's bookkeeping, kept deliberately: with three equal-weight
capacity overlays A{foo}, B{bar}, C{foo} on one type, C is compared with B only and is not
a conflict (foo stays A's).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from attrs import define, field, frozen

from karpenter_core.apis.labels import NODEPOOL_LABEL_KEY
from karpenter_core.cloudprovider.errors import UnevaluatedNodePoolError
from karpenter_core.cloudprovider.types import InstanceType, Offering
from karpenter_core.scheduling.requirements import IN, Requirement, Requirements

if TYPE_CHECKING:
    from karpenter_core.apis.v1 import NodePool

__all__ = [
    "CapacityUpdate",
    "Evaluation",
    "InstanceTypeStore",
    "InstanceTypeUpdate",
    "NodePoolInstanceTypes",
    "Overlay",
    "PriceUpdate",
    "StoreSnapshot",
    "apply_update",
    "evaluate",
    "order_overlays",
]


def _frozen_resources(value: Mapping[str, int]) -> Mapping[str, int]:
    return dict(value)


def _instance_types(items: Iterable[InstanceType]) -> tuple[InstanceType, ...]:
    return tuple(items)


@frozen
class Overlay:
    """A runtime-valid NodeOverlay, reduced to what the evaluation reads.

    ``price`` is the ``price`` or ``priceAdjustment`` string (the CRD makes them mutually
    exclusive), None when the overlay does not touch prices. ``capacity`` is in
    milli-units, as instance-type capacity is.
    """

    name: str
    weight: int
    requirements: Requirements = field(eq=False)
    price: str | None = None
    capacity: Mapping[str, int] = field(factory=dict, converter=_frozen_resources)

    @classmethod
    def from_model(cls, overlay: Any) -> Overlay:
        """From a :class:`~karpenter_core.apis.v1alpha1.NodeOverlay`. Raises ``ValueError``
        naming the field when a requirement or quantity cannot be read."""
        from karpenter_core.apis.resources import parse_resource_list

        spec = overlay.spec
        requirements = Requirements.from_node_selector_requirements(spec.requirements)
        price = spec.price if spec.price is not None else spec.price_adjustment
        try:
            capacity = parse_resource_list(spec.capacity or None)
        except ValueError as e:
            raise ValueError(f"spec.capacity: {e}") from None
        return cls(
            name=overlay.name,
            weight=overlay.weight,
            requirements=requirements,
            price=price,
            capacity=capacity,
        )


@frozen
class NodePoolInstanceTypes:
    """One evaluated NodePool: its name, template labels and the provider's instance types
    for it (as the controller got them, before any NodeOverlay)."""

    name: str
    labels: Mapping[str, str]
    instance_types: tuple[InstanceType, ...] = field(converter=_instance_types)


@frozen
class PriceUpdate:
    """The price change recorded for one offering, and the weight of the overlay that
    last touched it (upstream compares the next overlay with that one)."""

    change: str
    last_weight: int


@frozen
class CapacityUpdate:
    """Capacity merged for one instance type, plus the resources and weight of the overlay
    that last recorded capacity there (for the conflict check)."""

    resources: Mapping[str, int] = field(factory=dict, converter=_frozen_resources)
    last_resources: frozenset[str] = frozenset()
    last_weight: int = 0


@frozen
class InstanceTypeUpdate:
    """Everything recorded for one (NodePool, instance type)."""

    prices: Mapping[str, PriceUpdate] = field(factory=dict)
    """By the offering's requirements string."""
    capacity: CapacityUpdate = field(factory=CapacityUpdate)


@frozen
class StoreSnapshot:
    """One evaluation's outcome: updates by NodePool then instance-type name, and the
    NodePools that were evaluated (only those can be served)."""

    updates: Mapping[str, Mapping[str, InstanceTypeUpdate]] = field(factory=dict)
    evaluated: frozenset[str] = frozenset()


@frozen
class Evaluation:
    """What :func:`evaluate` decided."""

    snapshot: StoreSnapshot
    applied: tuple[str, ...] = ()
    """Overlays recorded (they may still select nothing)."""
    conflicts: tuple[str, ...] = ()
    """Overlays in conflict with a heavier-or-equal one already recorded: applied nowhere."""


def order_overlays(overlays: Sequence[Overlay]) -> list[Overlay]:
    """Heaviest first; equal weights by name, descending (upstream's ``OrderByWeight``)."""
    return sorted(overlays, key=lambda o: (o.weight, o.name), reverse=True)


def offering_key(offering: Offering) -> str:
    """How an offering is recognised across evaluations: its requirements as text."""
    return str(offering.requirements)


# --- evaluation -------------------------------------------------------------------------------


@define
class _Builder:
    """The mutable records of one evaluation (upstream's internal store)."""

    prices: dict[tuple[str, str], dict[str, PriceUpdate]] = field(factory=dict)
    capacity: dict[tuple[str, str], CapacityUpdate] = field(factory=dict)

    def price_conflict(
        self, key: tuple[str, str], offerings: Sequence[Offering], o: Overlay
    ) -> bool:
        if o.price is None:
            return False
        recorded = self.prices.get(key)
        if not recorded:
            return False
        for of in offerings:
            update = recorded.get(offering_key(of))
            if update is not None and update.last_weight == o.weight:
                return True
        return False

    def capacity_conflict(self, key: tuple[str, str], o: Overlay) -> bool:
        if not o.capacity:
            return False
        update = self.capacity.get(key)
        if update is None or update.last_weight != o.weight:
            return False
        return any(name in update.last_resources for name in o.capacity)

    def record(self, key: tuple[str, str], offerings: Sequence[Offering], o: Overlay) -> None:
        if o.price is not None:
            recorded = self.prices.setdefault(key, {})
            for of in offerings:
                k = offering_key(of)
                previous = recorded.get(k)
                # the first (heaviest) overlay keeps the price; later ones only move the
                # weight the next overlay is compared with
                change = previous.change if previous is not None else o.price
                recorded[k] = PriceUpdate(change, o.weight)
        if o.capacity:
            previous_cap = self.capacity.get(key)
            merged = dict(previous_cap.resources) if previous_cap is not None else {}
            for name, qty in o.capacity.items():
                merged.setdefault(name, qty)
            self.capacity[key] = CapacityUpdate(merged, frozenset(o.capacity), o.weight)

    def snapshot(self, evaluated: frozenset[str]) -> StoreSnapshot:
        updates: dict[str, dict[str, InstanceTypeUpdate]] = {}
        for key in {*self.prices, *self.capacity}:
            pool, it = key
            updates.setdefault(pool, {})[it] = InstanceTypeUpdate(
                prices=dict(self.prices.get(key, {})),
                capacity=self.capacity.get(key, CapacityUpdate()),
            )
        return StoreSnapshot(updates, evaluated)


def _base_requirements(pool: NodePoolInstanceTypes, it: InstanceType) -> Requirements:
    # What scheduling adds to every instance type of the pool: the pool's name and
    # template labels are always allowed with them.
    reqs = Requirements(Requirement.new(NODEPOOL_LABEL_KEY, IN, (pool.name,)))
    reqs.add(*Requirements.from_labels(pool.labels).values())
    reqs.add(*it.requirements.values())
    return reqs


def _selected(base: Requirements, it: InstanceType, overlay: Overlay) -> tuple[Offering, ...]:
    """The offerings of ``it`` the overlay applies to (empty: it does not select ``it``)."""
    if not base.is_compatible(overlay.requirements):
        return ()
    return tuple(it.offerings.compatible(overlay.requirements))


def evaluate(overlays: Sequence[Overlay], nodepools: Sequence[NodePoolInstanceTypes]) -> Evaluation:
    """Decide where every overlay applies; see the module docstring for the rules.

    ``nodepools`` are the pools whose instance types could be read; they make up the
    snapshot's evaluated set, whatever the overlays do.
    """
    builder = _Builder()
    bases = [
        [(it, _base_requirements(pool, it)) for it in pool.instance_types] for pool in nodepools
    ]
    applied: list[str] = []
    conflicts: list[str] = []
    for overlay in order_overlays(overlays):
        hits: list[tuple[tuple[str, str], tuple[Offering, ...]]] = []
        conflict = False
        for pool, types in zip(nodepools, bases, strict=True):
            for it, base in types:
                offerings = _selected(base, it, overlay)
                if not offerings:
                    continue
                key = (pool.name, it.name)
                if builder.price_conflict(key, offerings, overlay) or builder.capacity_conflict(
                    key, overlay
                ):
                    conflict = True
                    break
                hits.append((key, offerings))
            if conflict:
                break
        if conflict:
            conflicts.append(overlay.name)
            continue
        for key, offerings in hits:
            builder.record(key, offerings, overlay)
        applied.append(overlay.name)
    evaluated = frozenset(pool.name for pool in nodepools)
    return Evaluation(builder.snapshot(evaluated), tuple(applied), tuple(conflicts))


# --- applying ---------------------------------------------------------------------------------


def apply_update(it: InstanceType, update: InstanceTypeUpdate) -> InstanceType:
    """A copy of ``it`` with ``update`` applied; ``it`` itself is never changed.

    Requirements and overhead stay shared; capacity is merged into a new mapping; only
    repriced offerings are copied (the others are shared). Unlike upstream, a repriced
    offering keeps its capacity and overhead overrides: a price overlay should not change
    what fits on the node.
    """
    out = it
    if update.capacity.resources:
        out = out.with_capacity_overlay(update.capacity.resources)
    if update.prices:
        prices = update.prices
        changed = False
        offerings: list[Offering] = []
        for of in it.offerings:
            price = prices.get(offering_key(of))
            if price is None:
                offerings.append(of)
            else:
                offerings.append(of.with_price_overlay(price.change))
                changed = True
        if changed:
            out = out.with_offerings(offerings)
    return out


class InstanceTypeStore:
    """The current :class:`StoreSnapshot`, swapped whole (readers never see half of an
    evaluation). Until the first evaluation no NodePool is evaluated, so every
    :meth:`apply_all` raises :class:`UnevaluatedNodePoolError`.

    Overlaid copies are remembered per snapshot and per provider instance type (weakly):
    a provider that returns the same objects on every call gets the same copies back, so
    the scheduler's per-type caches (allocatable groups) survive from one pass to the next
    instead of being rebuilt for every overlaid type on every call.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snapshot = StoreSnapshot()
        self._copies: dict[str, weakref.WeakKeyDictionary[InstanceType, InstanceType]] = {}

    @property
    def snapshot(self) -> StoreSnapshot:
        return self._snapshot

    def update(self, snapshot: StoreSnapshot) -> None:
        """Swap in a new evaluation."""
        with self._lock:
            self._snapshot = snapshot
            self._copies = {}

    def reset(self) -> None:
        """Forget everything, as at start-up."""
        self.update(StoreSnapshot())

    def is_evaluated(self, nodepool_name: str) -> bool:
        return nodepool_name in self._snapshot.evaluated

    def overlay(
        self, nodepool: NodePool, instance_types: Sequence[InstanceType]
    ) -> list[InstanceType]:
        """The store as an instance-type overlay (the built-in NodeOverlay overlay's
        ``apply``): :meth:`apply_all` for the NodePool."""
        return self.apply_all(nodepool.name, instance_types)

    def apply_all(
        self, nodepool_name: str, instance_types: Sequence[InstanceType]
    ) -> list[InstanceType]:
        """``instance_types`` with the overlays recorded for ``nodepool_name`` applied.
        Raises :class:`UnevaluatedNodePoolError` when that pool was not evaluated."""
        with self._lock:
            snapshot = self._snapshot
            copies = self._copies.get(nodepool_name)
            if copies is None:
                copies = weakref.WeakKeyDictionary()
                self._copies[nodepool_name] = copies
        if nodepool_name not in snapshot.evaluated:
            raise UnevaluatedNodePoolError(nodepool_name)
        updates = snapshot.updates.get(nodepool_name)
        if not updates:
            return list(instance_types)
        out: list[InstanceType] = []
        for it in instance_types:
            update = updates.get(it.name)
            if update is None:
                out.append(it)
                continue
            with self._lock:
                applied = copies.get(it)
            if applied is None:
                applied = apply_update(it, update)
                with self._lock:
                    applied = copies.setdefault(it, applied)
            out.append(applied)
        return out

    def apply(self, nodepool_name: str, instance_type: InstanceType) -> InstanceType:
        """One instance type; see :meth:`apply_all`."""
        return self.apply_all(nodepool_name, (instance_type,))[0]
