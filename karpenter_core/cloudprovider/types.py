"""Instance types and offerings: what a cloud provider can launch, where, and at what price.

An :class:`InstanceType` is a shape of machine (capacity, overhead, labels it would carry)
and its :class:`Offering` s are the places it can be bought: a zone and a capacity type
(spot, on-demand, reserved), each with a price and an availability flag. The scheduler
asks three questions of them, many thousands of times per pass:

- do the NodeClaim's requirements intersect the type's (``requirements.intersects``)?
- do the pod requests fit its allocatable (computed once per type, then cached)?
- is there an available offering compatible with the requirements?

so these objects are immutable after construction, keep offerings as a tuple, and
precompute what is read in loops (an offering's zone and capacity type, a type's
allocatable groups). ``Requirements`` objects held here are shared: never mutate them,
``copy()`` first.

Resource lists are ``Mapping[str, int]`` in milli-units, as in
:mod:`karpenter_core.apis.resources`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
from attrs import field, frozen

from karpenter_core.apis import labels
from karpenter_core.apis import resources as res
from karpenter_core.scheduling.requirements import IN, Requirement, Requirements

__all__ = [
    "MIN_VALUES_POLICY_BEST_EFFORT",
    "MIN_VALUES_POLICY_STRICT",
    "AllocatableOfferings",
    "InstanceType",
    "InstanceTypeOverhead",
    "MinValuesError",
    "Offering",
    "Offerings",
    "adjusted_price",
    "capacity_type_requirements",
    "compatible",
    "fits",
    "order_by_price",
    "register_reservation_labels",
    "reservation_id_label",
    "reserved_capacity_labels",
    "satisfies_min_values",
    "truncate",
    "worst_launch_price",
]

MIN_VALUES_POLICY_STRICT = "Strict"
MIN_VALUES_POLICY_BEST_EFFORT = "BestEffort"

# --- Reservation labels (provider-global, like upstream's package variables) -------------

_reservation_id_label: str = ""
_reserved_capacity_labels: set[str] = set()


def register_reservation_labels(id_label: str, extra_labels: Iterable[str] = ()) -> None:
    """Declare the label that identifies a capacity reservation on reserved offerings.

    Upstream providers set ``cloudprovider.ReservationIDLabel`` at start-up; ours call this
    (once) from their plugin. Reserved offerings carry ``id_label In [<id>]`` and every
    other offering should say ``DoesNotExist`` for it. ``extra_labels`` are further labels
    associated with reserved offerings only. A later call replaces an earlier one.
    """
    global _reservation_id_label
    _reservation_id_label = id_label
    # a declaration replaces the previous one: one provider runs per process, and a
    # provider's extra labels must not linger once another declared its own
    _reserved_capacity_labels.clear()
    _reserved_capacity_labels.update(extra_labels)


def reservation_id_label() -> str:
    """The reservation-id label key, or ``""`` when no provider declared one."""
    return _reservation_id_label


def reserved_capacity_labels() -> frozenset[str]:
    """Labels only reserved offerings define (beyond the reservation id)."""
    return frozenset(_reserved_capacity_labels)


# --- Overhead ---------------------------------------------------------------------------


def _resource_dict(value: Mapping[str, int] | None) -> dict[str, int]:
    return dict(value) if value else {}


@frozen
class InstanceTypeOverhead:
    """Resources a node reserves for itself before pods get any.

    ``total()`` sums kube-reserved, system-reserved and the eviction threshold, which is
    what kubelet subtracts from capacity to report allocatable.
    """

    kube_reserved: Mapping[str, int] = field(factory=dict, converter=_resource_dict)
    system_reserved: Mapping[str, int] = field(factory=dict, converter=_resource_dict)
    eviction_threshold: Mapping[str, int] = field(factory=dict, converter=_resource_dict)

    def total(self) -> dict[str, int]:
        """All three reservations summed per resource."""
        return res.add(self.kube_reserved, self.system_reserved, self.eviction_threshold)

    def _key(self) -> tuple[tuple[tuple[str, int], ...], ...]:
        return (
            tuple(sorted(self.kube_reserved.items())),
            tuple(sorted(self.system_reserved.items())),
            tuple(sorted(self.eviction_threshold.items())),
        )

    def to_dict(self) -> dict[str, dict[str, str]]:
        """Kubernetes-style quantities per reservation, empty ones omitted."""
        out: dict[str, dict[str, str]] = {}
        for name, rl in (
            ("kubeReserved", self.kube_reserved),
            ("systemReserved", self.system_reserved),
            ("evictionThreshold", self.eviction_threshold),
        ):
            if rl:
                out[name] = res.format_resource_list(rl)
        return out


# --- Offerings ---------------------------------------------------------------------------


def _single_value(requirements: Requirements, key: str) -> str:
    """The value an offering pins ``key`` to (its smallest when several), else ``""``."""
    if not requirements.has(key):
        return ""
    req = requirements.get(key)
    if req.complement or not req.values:
        return ""
    return min(req.values) if len(req.values) > 1 else next(iter(req.values))


def _optional_resource_dict(value: Mapping[str, int] | None) -> dict[str, int] | None:
    return dict(value) if value is not None else None


@frozen(eq=False)
class Offering:
    """One way to buy an instance type: its zone / capacity type (as requirements), price
    and availability.

    ``requirements`` must define ``topology.kubernetes.io/zone`` and
    ``karpenter.sh/capacity-type``; reserved offerings also define the reservation-id
    label. ``reservation_capacity`` is how many more instances the reservation takes.
    ``capacity_override`` / ``overhead_override`` change the instance type's resources for
    this offering only (their keys win over the type's). Offerings compare by identity:
    two separately built offerings are different places to buy from.
    """

    requirements: Requirements
    price: float
    available: bool = True
    reservation_capacity: int = 0
    capacity_override: Mapping[str, int] | None = field(
        default=None, converter=_optional_resource_dict
    )
    overhead_override: InstanceTypeOverhead | None = None
    price_overlay_applied: bool = False
    capacity_type: str = field(init=False)
    """The offering's capacity type (``spot``, ``on-demand``, ``reserved``), precomputed."""
    zone: str = field(init=False)
    """The offering's zone, precomputed."""

    def __attrs_post_init__(self) -> None:
        object.__setattr__(
            self, "capacity_type", _single_value(self.requirements, labels.CAPACITY_TYPE_LABEL_KEY)
        )
        object.__setattr__(
            self, "zone", _single_value(self.requirements, labels.LABEL_TOPOLOGY_ZONE)
        )

    @property
    def reservation_id(self) -> str:
        """The reservation this offering draws from, ``""`` for non-reserved offerings."""
        key = _reservation_id_label
        return _single_value(self.requirements, key) if key else ""

    @property
    def has_overrides(self) -> bool:
        """True when this offering changes the instance type's capacity or overhead."""
        return bool(self.capacity_override) or self.overhead_override is not None

    def is_price_overlaid(self) -> bool:
        """True once a NodeOverlay has changed this offering's price."""
        return self.price_overlay_applied

    def with_price_overlay(self, change: str) -> Offering:
        """A copy priced by a NodeOverlay ``price``/``priceAdjustment`` (see :func:`adjusted_price`)."""
        return attrs.evolve(
            self, price=adjusted_price(self.price, change), price_overlay_applied=True
        )

    def _override_key(self) -> tuple[Any, ...]:
        capacity = tuple(sorted(self.capacity_override.items())) if self.capacity_override else ()
        overhead = self.overhead_override._key() if self.overhead_override is not None else None
        return (capacity, overhead)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly view for ``karpenter instance-types -o json``."""
        out: dict[str, Any] = {
            "price": self.price,
            "available": self.available,
            "zone": self.zone,
            "capacityType": self.capacity_type,
        }
        if self.reservation_id:
            out["reservationID"] = self.reservation_id
            out["reservationCapacity"] = self.reservation_capacity
        if self.capacity_override:
            out["capacityOverride"] = res.format_resource_list(self.capacity_override)
        if self.overhead_override is not None:
            out["overheadOverride"] = self.overhead_override.to_dict()
        out["requirements"] = self.requirements.to_node_selector_requirements()
        return out


def adjusted_price(price: float, change: str) -> float:
    """Apply a NodeOverlay price change to ``price``.

    ``""`` keeps the price; a bare number (``"80.0"``) replaces it; ``+x``/``-x`` adds or
    subtracts; ``+x%``/``-x%`` scales. Adjusted results never go below zero (a replacement
    is taken as given). The CRD's validation guarantees the number parses; a malformed one
    raises ``ValueError`` naming it.
    """
    if change == "":
        return price
    try:
        if not change.startswith(("+", "-")):
            return float(change)
        if change.endswith("%"):
            adjusted = price * (1 + float(change[:-1]) / 100)
        else:
            adjusted = price + float(change)
    except ValueError:
        raise ValueError(f"invalid price adjustment {change!r}") from None
    return adjusted if adjusted >= 0 else 0.0


def _offering_compatible(reqs: Requirements, offering: Offering) -> bool:
    # Offerings only define well-known keys the NodeClaim may leave open, hence the allowance.
    return reqs.is_compatible(offering.requirements, allow_undefined=labels.WELL_KNOWN_LABELS)


class Offerings(tuple[Offering, ...]):
    """An instance type's offerings, with the filters the scheduler chains."""

    __slots__ = ()

    def available(self) -> Offerings:
        """Only the offerings that can be launched now."""
        return Offerings(o for o in self if o.available)

    def compatible(self, reqs: Requirements) -> Offerings:
        """Offerings whose zone/capacity type/... the requirements allow."""
        return Offerings(o for o in self if _offering_compatible(reqs, o))

    def has_compatible(self, reqs: Requirements) -> bool:
        """True when some offering is compatible with ``reqs`` (stops at the first)."""
        return any(_offering_compatible(reqs, o) for o in self)

    def cheapest(self) -> Offering | None:
        """The lowest-priced offering (the first of equals), None when empty."""
        return min(self, key=_price_of) if self else None

    def most_expensive(self) -> Offering | None:
        """The highest-priced offering (the first of equals), None when empty."""
        return max(self, key=_price_of) if self else None

    def worst_launch_price(self, reqs: Requirements) -> float:
        """See :func:`worst_launch_price`."""
        return worst_launch_price(self, reqs)


def _price_of(offering: Offering) -> float:
    return offering.price


_CAPACITY_TYPE_REQUIREMENTS: dict[str, Requirements] = {}


def capacity_type_requirements(capacity_type: str) -> Requirements:
    """``karpenter.sh/capacity-type In [capacity_type]`` (shared; do not mutate)."""
    reqs = _CAPACITY_TYPE_REQUIREMENTS.get(capacity_type)
    if reqs is None:
        reqs = Requirements(Requirement.new(labels.CAPACITY_TYPE_LABEL_KEY, IN, [capacity_type]))
        _CAPACITY_TYPE_REQUIREMENTS[capacity_type] = reqs
    return reqs


def worst_launch_price(offerings: Iterable[Offering], reqs: Requirements) -> float:
    """The most we could pay launching with ``reqs``: consolidation's price bound.

    Launch prefers reserved capacity, then spot, then on-demand, so only offerings of the
    first of those capacity types with a compatible offering count; the most expensive of
    them is returned. ``math.inf`` when nothing is compatible.
    """
    candidates = Offerings(offerings).compatible(reqs)
    for capacity_type in labels.CAPACITY_TYPES:
        of_type = candidates.compatible(capacity_type_requirements(capacity_type))
        if of_type:
            return max(o.price for o in of_type)
    return math.inf


# --- Instance types ------------------------------------------------------------------------


@frozen
class AllocatableOfferings:
    """Offerings that share one allocatable (the same capacity/overhead overrides)."""

    allocatable: Mapping[str, int]
    offerings: Offerings


def _to_offerings(value: Iterable[Offering]) -> Offerings:
    return value if isinstance(value, Offerings) else Offerings(value)


@frozen(eq=False)
class InstanceType:
    """A machine shape a provider can launch, and the offerings it can be bought through.

    ``name`` equals the ``node.kubernetes.io/instance-type`` value; ``requirements`` must
    define every well-known label (In the values a node of this type would carry);
    offerings must be unique. ``capacity`` is the machine's full capacity; allocatable
    (capacity minus overhead, minus hugepages from memory) is computed on first use and
    cached. Instance types compare by identity: the scheduler keys maps by them.
    """

    name: str
    requirements: Requirements
    offerings: Offerings = field(factory=Offerings, converter=_to_offerings)
    capacity: Mapping[str, int] = field(factory=dict, converter=_resource_dict)
    overhead: InstanceTypeOverhead = field(factory=InstanceTypeOverhead)
    dynamic_resources: Any = None
    """DRA devices a node of this type publishes (none for most providers)."""
    capacity_overlay_applied: bool = False
    _groups: tuple[AllocatableOfferings, ...] | None = field(default=None, init=False, repr=False)

    def allocatable_offerings_list(self) -> tuple[AllocatableOfferings, ...]:
        """Available offerings grouped by allocatable; the first group is the base one.

        Offerings with the same capacity/overhead overrides share a group whose
        allocatable is computed with those overrides merged over the type's own values
        (override keys win). Unavailable offerings are in no group.
        """
        groups = self._groups
        if groups is None:
            groups = self._compute_groups()
            object.__setattr__(self, "_groups", groups)
        return groups

    def allocatable(self) -> Mapping[str, int]:
        """The base allocatable (no offering overrides): capacity minus overhead."""
        return self.allocatable_offerings_list()[0].allocatable

    def _compute_groups(self) -> tuple[AllocatableOfferings, ...]:
        if not any(o.has_overrides for o in self.offerings):
            return (
                AllocatableOfferings(
                    self._compute_allocatable(None, None), self.offerings.available()
                ),
            )
        base: list[Offering] = []
        by_key: dict[tuple[Any, ...], list[Offering]] = {}
        for o in self.offerings:
            if not o.available:
                continue
            if not o.has_overrides:
                base.append(o)
            else:
                by_key.setdefault(o._override_key(), []).append(o)
        out = [AllocatableOfferings(self._compute_allocatable(None, None), Offerings(base))]
        for members in by_key.values():
            first = members[0]
            out.append(
                AllocatableOfferings(
                    self._compute_allocatable(first.capacity_override, first.overhead_override),
                    Offerings(members),
                )
            )
        return tuple(out)

    def _compute_allocatable(
        self,
        capacity_override: Mapping[str, int] | None,
        overhead_override: InstanceTypeOverhead | None,
    ) -> dict[str, int]:
        capacity: Mapping[str, int] = self.capacity
        if capacity_override:
            capacity = res.merge_over(self.capacity, capacity_override)
        overhead = self.overhead.total()
        if overhead_override is not None:
            overhead = res.merge_over(overhead, overhead_override.total())
        # Allocatable reports exactly the capacity's resources: overhead on a resource the
        # machine lacks is ignored rather than producing a negative entry.
        allocatable = res.subtract(capacity, overhead)
        for name, qty in capacity.items():
            if name.startswith(res.HUGEPAGES_PREFIX):
                allocatable[res.MEMORY] = max(0, allocatable.get(res.MEMORY, 0) - qty)
        return allocatable

    def offering_price(self, zone: str, capacity_type: str) -> float | None:
        """The price of the offering in ``zone`` with ``capacity_type``, None if none."""
        for o in self.offerings:
            if o.zone == zone and o.capacity_type == capacity_type:
                return o.price
        return None

    def is_pricing_overlay_applied(self) -> bool:
        """True when some offering's price came from a NodeOverlay."""
        return any(o.price_overlay_applied for o in self.offerings)

    def is_capacity_overlay_applied(self) -> bool:
        """True when a NodeOverlay changed this type's capacity."""
        return self.capacity_overlay_applied

    def with_capacity_overlay(self, updated: Mapping[str, int]) -> InstanceType:
        """A copy whose capacity has ``updated`` merged in (its keys win); allocatable is
        recomputed for the copy."""
        return attrs.evolve(
            self, capacity={**self.capacity, **updated}, capacity_overlay_applied=True
        )

    def with_offerings(self, offerings: Iterable[Offering]) -> InstanceType:
        """A copy with different offerings (e.g. price-overlaid); caches start empty."""
        return attrs.evolve(self, offerings=Offerings(offerings))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly view: name, requirements, capacity, allocatable, overhead, offerings."""
        return {
            "name": self.name,
            "requirements": self.requirements.to_node_selector_requirements(),
            "capacity": res.format_resource_list(self.capacity),
            "allocatable": res.format_resource_list(self.allocatable()),
            "overhead": self.overhead.to_dict(),
            "offerings": [o.to_dict() for o in self.offerings],
        }


def fits(
    instance_type: InstanceType, requests: Mapping[str, int], reqs: Requirements
) -> tuple[bool, bool]:
    """Whether ``requests`` fit ``instance_type`` through an offering ``reqs`` allow.

    Returns ``(fits, has_offering)``. For each allocatable group, the first offering
    compatible with ``reqs`` decides: it sets ``has_offering``, and if the requests fit
    that group's allocatable the answer is ``(True, True)``. Keeping ``has_offering``
    separate lets the scheduler explain *why* nothing fits.
    """
    has_offering = False
    for group in instance_type.allocatable_offerings_list():
        for offering in group.offerings:
            if _offering_compatible(reqs, offering):
                has_offering = True
                if res.fits(requests, group.allocatable):
                    return True, True
                break
    return False, has_offering


def _cheapest_compatible_price(instance_type: InstanceType, reqs: Requirements) -> float:
    best = math.inf
    for o in instance_type.offerings:
        if o.available and o.price < best and _offering_compatible(reqs, o):
            best = o.price
    return best


def order_by_price(
    instance_types: Iterable[InstanceType], reqs: Requirements
) -> list[InstanceType]:
    """Instance types sorted by their cheapest available, ``reqs``-compatible offering.

    Types with no such offering sort last. Returns a new list; the sort is stable, which is
    one of the orders upstream's unstable sort may produce.
    """
    return sorted(instance_types, key=lambda it: _cheapest_compatible_price(it, reqs))


def compatible(instance_types: Iterable[InstanceType], reqs: Requirements) -> list[InstanceType]:
    """Instance types with an available offering compatible with ``reqs``."""
    return [
        it
        for it in instance_types
        if any(o.available and _offering_compatible(reqs, o) for o in it.offerings)
    ]


@frozen
class MinValuesError:
    """Instance types that cannot satisfy the requirements' ``minValues``.

    ``unsatisfied`` maps each deficient key to the number of distinct values reached.
    """

    unsatisfied: Mapping[str, int]
    context: str = ""

    def __str__(self) -> str:
        keys = " ".join(sorted(self.unsatisfied))
        msg = f"minValues requirement is not met for label(s) (label(s)=[{keys}])"
        return f"{self.context}{msg}"


def satisfies_min_values(
    instance_types: Sequence[InstanceType], reqs: Requirements
) -> tuple[int, MinValuesError | None]:
    """How many leading instance types are needed to satisfy ``reqs``' minValues.

    Walks the list in order, collecting the distinct values each minValues key takes over
    the types seen so far; returns ``(n, None)`` at the first prefix that satisfies every
    key, else ``(len(instance_types), error)``. The count depends on the order, so callers
    sort first. Without minValues the answer is ``(0, None)``; an empty list is not an
    error (there is nothing that violates anything), as upstream.
    """
    min_keys = {key: req.min_values for key, req in reqs.items() if req.min_values is not None}
    if not min_keys:
        return 0, None
    seen: dict[str, set[str]] = {key: set() for key in min_keys}
    unsatisfied: dict[str, int] = {}
    for index, it in enumerate(instance_types):
        for key, values in seen.items():
            values.update(it.requirements.get(key).values)
        unsatisfied = {
            key: len(values) for key, values in seen.items() if len(values) < min_keys[key]
        }
        if not unsatisfied:
            return index + 1, None
    if unsatisfied:
        return len(instance_types), MinValuesError(unsatisfied)
    return len(instance_types), None


def truncate(
    instance_types: Iterable[InstanceType],
    reqs: Requirements,
    max_items: int,
    min_values_policy: str = MIN_VALUES_POLICY_STRICT,
) -> tuple[list[InstanceType], MinValuesError | None]:
    """The ``max_items`` cheapest types (by :func:`order_by_price`).

    When ``reqs`` has minValues and the policy is not BestEffort, the truncated list must
    still satisfy them; otherwise the *untruncated* (sorted) list is returned with an
    error, so the caller can report which keys broke.
    """
    ordered = order_by_price(instance_types, reqs)
    kept = ordered[: max(max_items, 0)]
    if min_values_policy != MIN_VALUES_POLICY_BEST_EFFORT and reqs.has_min_values():
        _, err = satisfies_min_values(kept, reqs)
        if err is not None:
            return ordered, attrs.evolve(err, context="validating minValues, ")
    return kept, None
