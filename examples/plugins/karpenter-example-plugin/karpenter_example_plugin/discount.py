"""The ``negotiated-discount`` instance-type overlay.

A NodePool annotated ``plugin.example.com/discount: m=25`` sees every offering of the
``m`` family 25% cheaper. Prices are what the scheduler ranks instance types by, so a
discounted family wins where it was the runner-up: ``karpenter schedule`` lists it first
and provisioning launches it. The family is read from the instance type's
``*/instance-family`` requirement (``karpenter.kwok.sh/instance-family``,
``karpenter.k8s.aws/instance-family``...), so the overlay works with any provider.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from karpenter_example_plugin.policy import discounts

if TYPE_CHECKING:
    from karpenter_core.plugin_api import InstanceType, NodePool

__all__ = ["NAME", "WEIGHT", "apply_discount", "instance_family"]

NAME = "negotiated-discount"
WEIGHT = 100
"""Below the built-in NodeOverlay overlay (``WEIGHT_NODEOVERLAY``), so a cluster's
NodeOverlay objects still have the last word on prices."""

_FAMILY_SUFFIX = "/instance-family"

# Overlaid copies, remembered per original instance type and rate: the scheduler keys its
# caches by instance type identity, so handing out the same copy every pass keeps them warm.
_copies: weakref.WeakKeyDictionary[InstanceType, dict[float, InstanceType]] = (
    weakref.WeakKeyDictionary()
)


def instance_family(instance_type: InstanceType) -> str | None:
    """The type's family, from its single-valued ``*/instance-family`` requirement."""
    for key, requirement in instance_type.requirements.items():
        if key.endswith(_FAMILY_SUFFIX) and len(requirement.values) == 1:
            return next(iter(requirement.values))
    return None


def _discounted(instance_type: InstanceType, rate: float) -> InstanceType:
    per_type = _copies.setdefault(instance_type, {})
    copy = per_type.get(rate)
    if copy is None:
        copy = instance_type.with_offerings(
            attrs.evolve(o, price=o.price * rate) for o in instance_type.offerings
        )
        per_type[rate] = copy
    return copy


def apply_discount(
    nodepool: NodePool, instance_types: Sequence[InstanceType]
) -> Sequence[InstanceType]:
    """The NodePool's instance types with its negotiated discounts applied (inputs are
    shared between NodePools and never modified). An unreadable annotation raises
    :class:`~karpenter_example_plugin.policy.PolicyError`; the core then logs it and
    leaves the prices as they were."""
    rates = discounts(nodepool.metadata.annotations)
    if not rates:
        return instance_types
    out = []
    for it in instance_types:
        rate = rates.get(instance_family(it) or "")
        out.append(it if rate is None or rate == 1.0 else _discounted(it, rate))
    return out
