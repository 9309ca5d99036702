"""``karpenter.sh/v1alpha1``: NodeOverlay, which adjusts instance-type price and capacity.

Same conventions as :mod:`karpenter_core.apis.v1`: frozen attrs values, lossless
``from_dict``/``to_dict``, validation in :mod:`karpenter_core.apis.validation`.
"""

from __future__ import annotations

from collections.abc import Sequence

from attrs import field, frozen

from karpenter_core.apis.base import Condition, F, Model, ObjectMeta, ObjectModel, object_fields
from karpenter_core.apis.v1 import CONDITION_READY, NodeSelectorRequirementWithMinValues

GROUP = "karpenter.sh"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

CONDITION_VALIDATION_SUCCEEDED = "ValidationSucceeded"
NODEOVERLAY_READY_DEPENDENTS = (CONDITION_VALIDATION_SUCCEEDED,)


@frozen
class NodeSelectorRequirement(Model):
    """A requirement without ``minValues`` (NodeOverlay does not support it)."""

    key: str = ""
    operator: str = ""
    values: tuple[str, ...] = ()

    FIELDS = (
        F("key", "key", "str"),
        F("operator", "operator", "str"),
        F("values", "values", "strs"),
    )

    def with_min_values(self) -> NodeSelectorRequirementWithMinValues:
        """As the v1 type, so runtime ``validate_requirement`` applies unchanged."""
        return NodeSelectorRequirementWithMinValues(
            key=self.key, operator=self.operator, values=self.values
        )


@frozen
class NodeOverlaySpec(Model):
    requirements: tuple[NodeSelectorRequirement, ...] = ()
    price_adjustment: str | None = None
    price: str | None = None
    capacity: dict[str, str | int | float] = field(factory=dict)
    weight: int | None = None

    FIELDS = (
        F("requirements", "requirements", "objs", NodeSelectorRequirement),
        F("priceAdjustment", "price_adjustment", "str"),
        F("price", "price", "str"),
        F("capacity", "capacity", "quantities"),
        F("weight", "weight", "int"),
    )


@frozen
class NodeOverlayStatus(Model):
    conditions: tuple[Condition, ...] = ()

    FIELDS = (F("conditions", "conditions", "objs", Condition),)


@frozen
class NodeOverlay(ObjectModel):
    """A ``karpenter.sh/v1alpha1`` NodeOverlay."""

    metadata: ObjectMeta = field(factory=ObjectMeta)
    spec: NodeOverlaySpec = field(factory=NodeOverlaySpec)
    status: NodeOverlayStatus | None = None
    api_version: str = API_VERSION
    kind: str = "NodeOverlay"

    FIELDS = object_fields(NodeOverlaySpec, NodeOverlayStatus)

    @property
    def weight(self) -> int:
        return self.spec.weight or 0

    def ready(self) -> bool:
        c = self.condition(CONDITION_READY) or self.condition(CONDITION_VALIDATION_SUCCEEDED)
        return c is not None and c.is_true


def order_by_weight(overlays: Sequence[NodeOverlay]) -> list[NodeOverlay]:
    """Highest weight first; equal weights by name, **descending** (upstream's tie-break)."""
    return sorted(overlays, key=lambda o: (o.weight, o.name), reverse=True)


__all__ = [
    "API_VERSION",
    "NodeOverlay",
    "NodeOverlaySpec",
    "NodeOverlayStatus",
    "NodeSelectorRequirement",
    "order_by_weight",
]
