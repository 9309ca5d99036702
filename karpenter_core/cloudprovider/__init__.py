"""The cloud-provider contract: the protocol a provider implements, the instance-type and
offering values it returns, and the errors it raises.

``from karpenter_core.cloudprovider import CloudProvider, InstanceType, Offering`` is all a
provider plugin needs.
"""

from __future__ import annotations

from karpenter_core.cloudprovider.errors import (
    CloudProviderError,
    CreateError,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
    UnevaluatedNodePoolError,
    ignore_nodeclaim_not_found,
    is_create_error,
    is_insufficient_capacity,
    is_node_class_not_ready,
    is_nodeclaim_not_found,
    is_unevaluated_nodepool,
)
from karpenter_core.cloudprovider.protocol import (
    CloudProvider,
    DriftReason,
    NodeClassKind,
    NodeLifecycleHook,
    NodeLifecycleHookResult,
    RepairPolicy,
)
from karpenter_core.cloudprovider.types import (
    AllocatableOfferings,
    InstanceType,
    InstanceTypeOverhead,
    MinValuesError,
    Offering,
    Offerings,
    adjusted_price,
    compatible,
    fits,
    order_by_price,
    register_reservation_labels,
    satisfies_min_values,
    truncate,
    worst_launch_price,
)

__all__ = [
    "AllocatableOfferings",
    "CloudProvider",
    "CloudProviderError",
    "CreateError",
    "DriftReason",
    "InstanceType",
    "InstanceTypeOverhead",
    "InsufficientCapacityError",
    "MinValuesError",
    "NodeClaimNotFoundError",
    "NodeClassKind",
    "NodeClassNotReadyError",
    "NodeLifecycleHook",
    "NodeLifecycleHookResult",
    "Offering",
    "Offerings",
    "RepairPolicy",
    "UnevaluatedNodePoolError",
    "adjusted_price",
    "compatible",
    "fits",
    "ignore_nodeclaim_not_found",
    "is_create_error",
    "is_insufficient_capacity",
    "is_node_class_not_ready",
    "is_nodeclaim_not_found",
    "is_unevaluated_nodepool",
    "order_by_price",
    "register_reservation_labels",
    "satisfies_min_values",
    "truncate",
    "worst_launch_price",
]
