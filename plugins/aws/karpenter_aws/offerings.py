"""Offerings of an EC2 instance type: every zone x capacity type, priced, ICE-aware.

Upstream ``instancetype/offering/base_resolver.go``: a type gets one offering per zone in
the region (not only the NodeClass's zones) and per capacity type it supports (on-demand,
spot). An offering is *available* only when all of these hold:

- the type is compatible with the NodeClass (``a1`` types cannot run AL2023);
- it is not in the ICE cache (offering, capacity type, or all of the zone's subnets);
- it has a price (on-demand, or spot in that zone);
- its zone is one the NodeClass has subnets in and EC2 offers the type in.

Unavailable offerings stay in the list so the scheduler can tell "no capacity" from
"no such thing".

Reserved offerings (upstream ``reserved_capacity_resolver.go``): one per capacity
reservation in the NodeClass status for the type, in the reservation's zone, carrying the
reservation id, type (``default`` / ``capacity-block``) and interruptible labels; priced at
the on-demand price / 10,000,000, so the scheduler always prefers them to buying; their
reservation capacity is the reservation's available count, and they are available while
that count is above zero, the type runs in that zone with the NodeClass, and the
reservation is not an expiring capacity block. Every other offering says the reservation
labels do not exist, so a NodeClaim pinned to a reservation matches only it.

Placement groups (upstream ``placement_group_resolver.go`` and the placement-group scope
of the ICE cache): with a group, ICE marks are read in the group's scope (a capacity error
inside the group does not take the type and zone away from launches outside it, nor the
reverse), and a ``partition`` group turns each on-demand and spot offering into one per
partition carrying ``karpenter.k8s.aws/placement-group-partition``, each also unavailable
while a mark scoped to its partition lasts. Reserved offerings are not split (EC2
reservations do not reserve capacity inside partition groups).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from karpenter_aws import labels as aws_labels
from karpenter_aws.capacityreservation import STATE_EXPIRING, CapacityReservation
from karpenter_core.plugin_api import (
    DOES_NOT_EXIST,
    IN,
    InstanceType,
    Offering,
    Offerings,
    Requirement,
    Requirements,
    UnavailableOfferings,
)
from karpenter_core.plugin_api import labels as core_labels

__all__ = [
    "RESERVED_PRICE_DIVISOR",
    "PriceSource",
    "build_offerings",
    "compatible_with_ami_family",
    "reserved_offerings",
]

RESERVED_PRICE_DIVISOR = 10_000_000.0
"""A reserved offering costs the on-demand price divided by this: already paid for, but
still ordered by size among reservations."""


class PriceSource(Protocol):
    """Where offerings get their prices (:class:`karpenter_aws.pricing.PricingProvider`)."""

    def on_demand(self, instance_type: str) -> float | None: ...
    def spot(self, instance_type: str, zone: str) -> float | None: ...


_RESERVATION_KEYS = (
    aws_labels.LABEL_CAPACITY_RESERVATION_ID,
    aws_labels.LABEL_CAPACITY_RESERVATION_TYPE,
    aws_labels.LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE,
)


def compatible_with_ami_family(instance_type: str, ami_family: str) -> bool:
    """False for combinations EC2 accepts but that cannot boot: AL2023 does not support the
    first-generation Graviton ``a1`` types."""
    return not (ami_family == "AL2023" and instance_type.startswith("a1."))


@functools.lru_cache(maxsize=4096)
def _in(key: str, value: str) -> Requirement:
    # Requirements are immutable: offerings share them (11,000 offerings per listing).
    return Requirement.new(key, IN, (value,))


_NO_RESERVATION = tuple(Requirement.new(key, DOES_NOT_EXIST) for key in _RESERVATION_KEYS)


def _offering_requirements(capacity_type: str, zone: str, zone_id: str | None) -> Requirements:
    reqs = Requirements(
        _in(core_labels.CAPACITY_TYPE_LABEL_KEY, capacity_type),
        _in(core_labels.LABEL_TOPOLOGY_ZONE, zone),
        *_NO_RESERVATION,
    )
    if zone_id:
        reqs.add(_in(aws_labels.LABEL_TOPOLOGY_ZONE_ID, zone_id))
    return reqs


def build_offerings(
    instance_type: InstanceType,
    *,
    all_zones: Iterable[str],
    zone_ids: Mapping[str, str],
    subnet_ids: Mapping[str, Sequence[str]],
    pricing: PriceSource,
    unavailable: UnavailableOfferings,
    compatible: bool = True,
    on_missing_price: Callable[[str, str], None] | None = None,
    reservations: Sequence[CapacityReservation] = (),
    available_count: Callable[[str], int] = lambda _id: 0,
    placement_group_id: str = "",
    partitions: Sequence[str] = (),
) -> Offerings:
    """The base offerings of ``instance_type`` (whose requirements give its zones and
    capacity types).

    ``all_zones`` are the region's zones; ``zone_ids`` and ``subnet_ids`` describe the
    NodeClass's zones (an offering in a zone the NodeClass has no subnet in carries no
    zone id and is unavailable). ``on_missing_price(type, capacity_type)`` is told about
    each capacity type left without a price, so the caller can say so once.
    ``reservations`` (the NodeClass status) add reserved offerings, whose capacity
    ``available_count(reservation_id)`` gives. ``placement_group_id`` scopes the ICE
    marks read; ``partitions`` (of a partition group) split each offering per partition.
    """
    name = instance_type.name
    type_zones = instance_type.requirements.get(core_labels.LABEL_TOPOLOGY_ZONE)
    capacity_types = sorted(
        ct
        for ct in instance_type.requirements.get(core_labels.CAPACITY_TYPE_LABEL_KEY).values
        if ct != core_labels.CAPACITY_TYPE_RESERVED
    )
    missing: set[str] = set()
    out: list[Offering] = []
    for zone in sorted(all_zones):
        zone_subnets = subnet_ids.get(zone, ())
        for capacity_type in capacity_types:
            price = (
                pricing.on_demand(name)
                if capacity_type == core_labels.CAPACITY_TYPE_ON_DEMAND
                else pricing.spot(name, zone)
            )
            if price is None:
                missing.add(capacity_type)
            available = (
                compatible
                and price is not None
                and type_zones.has(zone)
                and not unavailable.is_unavailable(
                    name,
                    zone,
                    capacity_type,
                    subnet_ids=zone_subnets,
                    placement_group_id=placement_group_id,
                )
            )
            reqs = _offering_requirements(capacity_type, zone, zone_ids.get(zone))
            if not partitions:
                out.append(
                    Offering(
                        requirements=reqs,
                        price=price if price is not None else 0.0,
                        available=available,
                    )
                )
                continue
            for partition in partitions:
                part_reqs = reqs.copy()
                part_reqs.add(_in(aws_labels.LABEL_PLACEMENT_GROUP_PARTITION, partition))
                out.append(
                    Offering(
                        requirements=part_reqs,
                        price=price if price is not None else 0.0,
                        available=available
                        and not unavailable.is_unavailable(
                            name,
                            zone,
                            capacity_type,
                            placement_group_id=placement_group_id,
                            placement_group_partition=partition,
                        ),
                    )
                )
    if on_missing_price is not None:
        for capacity_type in sorted(missing):
            on_missing_price(name, capacity_type)
    out.extend(
        reserved_offerings(
            instance_type,
            reservations,
            zone_ids=zone_ids,
            pricing=pricing,
            available_count=available_count,
            compatible=compatible,
        )
    )
    return Offerings(out)


def reserved_offerings(
    instance_type: InstanceType,
    reservations: Sequence[CapacityReservation],
    *,
    zone_ids: Mapping[str, str],
    pricing: PriceSource,
    available_count: Callable[[str], int],
    compatible: bool = True,
) -> list[Offering]:
    """The reserved offerings of ``instance_type``: one per reservation of it."""
    name = instance_type.name
    type_zones = instance_type.requirements.get(core_labels.LABEL_TOPOLOGY_ZONE)
    out: list[Offering] = []
    for r in reservations:
        if r.instance_type != name:
            continue
        od = pricing.on_demand(name)
        count = available_count(r.id)
        reqs = Requirements(
            _in(core_labels.CAPACITY_TYPE_LABEL_KEY, core_labels.CAPACITY_TYPE_RESERVED),
            _in(core_labels.LABEL_TOPOLOGY_ZONE, r.zone),
            _in(aws_labels.LABEL_CAPACITY_RESERVATION_ID, r.id),
            _in(aws_labels.LABEL_CAPACITY_RESERVATION_TYPE, r.reservation_type),
            _in(aws_labels.LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE, str(r.interruptible).lower()),
        )
        if zone_ids.get(r.zone):
            reqs.add(_in(aws_labels.LABEL_TOPOLOGY_ZONE_ID, zone_ids[r.zone]))
        out.append(
            Offering(
                requirements=reqs,
                price=(od or 0.0) / RESERVED_PRICE_DIVISOR,
                available=compatible
                and count > 0
                and type_zones.has(r.zone)
                and r.state != STATE_EXPIRING,
                reservation_capacity=count,
            )
        )
    return out
