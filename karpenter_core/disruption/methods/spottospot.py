"""Spot-to-spot consolidation: when a spot node may be replaced by another spot node.

Spec: disruption §9 "spot→spot". Replacing spot with spot is behind the
``SpotToSpotConsolidation`` feature gate. The danger it guards against is churn: a spot
launch picks among the offered types by availability *and* price, so it may not land on
the cheapest one. If a single node were replaced by "anything cheaper than me", the new
node could itself have cheaper alternatives, and consolidation would walk down the price
list one replacement at a time. So single-node spot→spot only acts when at least
:data:`MIN_INSTANCE_TYPES_FOR_SPOT_TO_SPOT` types are cheaper than the candidate (the
candidate is then not among the cheapest 15), and it launches with just the cheapest 15
(or as many as the NodePool's minValues need): whatever the launch picks is then in a set
the next pass will not try to undercut. Multi-node spot→spot has no such rule: removing
several nodes is worth it on its own.

These functions are pure: they take instance types already sorted by price and already
filtered to the ones cheaper than the candidates, and return what to launch or a sentence
saying why not.
"""

from __future__ import annotations

from collections.abc import Sequence

from attrs import frozen

from karpenter_core.apis.labels import CAPACITY_TYPE_LABEL_KEY, CAPACITY_TYPE_SPOT
from karpenter_core.cloudprovider.types import InstanceType, satisfies_min_values
from karpenter_core.scheduling.requirements import IN, Requirement, Requirements

__all__ = [
    "MIN_INSTANCE_TYPES_FOR_SPOT_TO_SPOT",
    "SPOT_TO_SPOT_FEATURE_GATE",
    "SpotToSpotOptions",
    "disabled_message",
    "spot_only",
    "spot_to_spot_options",
    "too_few_message",
]

MIN_INSTANCE_TYPES_FOR_SPOT_TO_SPOT = 15
"""Single-node spot→spot needs this many cheaper types, and launches with the cheapest this many."""

SPOT_TO_SPOT_FEATURE_GATE = "SpotToSpotConsolidation"


def disabled_message() -> str:
    """The Unconsolidatable event text when the feature gate is off."""
    return f"{SPOT_TO_SPOT_FEATURE_GATE} is disabled, can't replace a spot node with a spot node"


def too_few_message(cheaper: int) -> str:
    """The Unconsolidatable event text when fewer than 15 cheaper types exist."""
    return (
        f"{SPOT_TO_SPOT_FEATURE_GATE} requires {MIN_INSTANCE_TYPES_FOR_SPOT_TO_SPOT} cheaper "
        f"instance type options than the current candidate to consolidate, got {cheaper}"
    )


def spot_only(requirements: Requirements) -> Requirements:
    """A copy of ``requirements`` narrowed to ``capacity-type In [spot]``.

    A spot candidate is only worth replacing by spot: the price filter assumed spot
    prices, so an on-demand fallback would cost more than the node it replaces.
    """
    out = requirements.copy()
    out.add(Requirement.new(CAPACITY_TYPE_LABEL_KEY, IN, [CAPACITY_TYPE_SPOT]))
    return out


@frozen
class SpotToSpotOptions:
    """What a spot→spot replacement launches with, or why there is none.

    ``rejection`` is empty when ``instance_types`` is the launch set.
    """

    instance_types: tuple[InstanceType, ...] = ()
    rejection: str = ""


def spot_to_spot_options(
    cheaper: Sequence[InstanceType], requirements: Requirements, single_node: bool
) -> SpotToSpotOptions:
    """The launch set for a spot→spot replacement.

    ``cheaper`` are the replacement's types that are cheaper than the candidates, sorted
    cheapest first, compatible with spot; ``requirements`` are the replacement's
    (spot-only) requirements. Multi-node keeps them all. Single-node needs at least 15 and
    keeps the cheapest ``max(15, n)``, where ``n`` is how many leading types minValues
    needs: truncating below that would make the launch unsatisfiable.
    """
    if not single_node:
        return SpotToSpotOptions(tuple(cheaper))
    if len(cheaper) < MIN_INSTANCE_TYPES_FOR_SPOT_TO_SPOT:
        return SpotToSpotOptions(rejection=too_few_message(len(cheaper)))
    keep = MIN_INSTANCE_TYPES_FOR_SPOT_TO_SPOT
    if requirements.has_min_values():
        needed, _ = satisfies_min_values(cheaper, requirements)
        keep = max(keep, needed)
    return SpotToSpotOptions(tuple(cheaper[:keep]))
