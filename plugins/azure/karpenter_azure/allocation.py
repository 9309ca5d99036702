"""Which instance type, zone and capacity type one NodeClaim launches as.

Azure creates one VM per NodeClaim (there is no fleet API that picks among many types), so
the provider itself chooses, as upstream's allocation strategy does: keep the instance
types the NodeClaim's requirements allow that fit its requests, keep their available
offerings compatible with the requirements, and take the cheapest offering; at equal
price spot before on-demand, then zonal before regional, then the type's name, and among a type's
equally ranked zones a random one (so a burst spreads over zones rather than piling into
the first).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from attrs import frozen

from karpenter_core.plugin_api import (
    InstanceType,
    InsufficientCapacityError,
    Offering,
    Requirements,
    describe_requested,
    fits,
    preference_rank,
)
from karpenter_core.plugin_api import labels as wk

__all__ = ["Selection", "launchable", "requested", "select"]


@frozen
class Selection:
    """The chosen offering: what the VM will be."""

    instance_type: InstanceType
    offering: Offering

    @property
    def zone(self) -> str:
        return self.offering.zone

    @property
    def capacity_type(self) -> str:
        return self.offering.capacity_type


def launchable(
    instance_types: Sequence[InstanceType], reqs: Requirements, requests: Mapping[str, int]
) -> list[InstanceType]:
    """The types ``reqs`` allow that fit ``requests`` through an available, compatible
    offering (upstream's ``resolveInstanceTypes`` filter)."""
    return [
        it
        for it in instance_types
        if it.requirements.intersects(reqs) is None
        and it.offerings.available().has_compatible(reqs)
        and fits(it, requests, reqs)[0]
    ]


def requested(reqs: Requirements, shown: int = 10) -> str:
    """The instance types, zones and capacity types a NodeClaim allows, in a few words
    (the core's :func:`~karpenter_core.plugin_api.describe_requested`)."""
    return describe_requested(reqs, shown)


def _rank(offering: Offering) -> tuple[float, int, int]:
    capacity = {wk.CAPACITY_TYPE_SPOT: 0, wk.CAPACITY_TYPE_ON_DEMAND: 1}.get(
        offering.capacity_type, 2
    )
    # Azure's regional (non-zonal) placement is labelled zone "0" (upstream's label)
    zonal = 1 if offering.zone in ("", "0") else 0
    return (offering.price, capacity, zonal)


def select(
    instance_types: Sequence[InstanceType],
    reqs: Requirements,
    requests: Mapping[str, int],
    rng: random.Random | None = None,
    preference: Mapping[str, int] | None = None,
) -> Selection:
    """The cheapest available offering of a launchable type; with a ``preference`` (the
    NodeClaim's launch order, from an instance-type scorer) the best-ranked type's
    cheapest offering. ``InsufficientCapacityError`` naming what was asked for when there
    is none."""
    rng = rng or random.Random()
    best: tuple[tuple[int, float, int, int], str, float, InstanceType, Offering] | None = None
    for it in launchable(instance_types, reqs, requests):
        first = preference_rank(preference or {}, it.name)
        for offering in it.offerings.available().compatible(reqs):
            key = ((first, *_rank(offering)), it.name, rng.random(), it, offering)
            if best is None or key[:3] < best[:3]:
                best = key
    if best is None:
        raise InsufficientCapacityError(
            "no instance type available: every offering the NodeClaim allows is unavailable "
            f"or too small ({requested(reqs)}; {len(instance_types)} types considered)"
        )
    return Selection(best[3], best[4])
