"""Dynamic Resource Allocation (DRA) simulation: which devices a NodeClaim would give a pod's
ResourceClaims (``designs/dra-scheduling.md`` upstream; docs/dra.md here).

Pure: typed values in (:mod:`karpenter_core.apis.resource`), decisions and errors out; no
client, no threads. The scheduler builds one :class:`Allocator` per pass, calls
:meth:`Allocator.allocate` for a pod on a NodeClaim, commits the result when it places the
pod and releases instance types it prunes.
"""

from karpenter_core.scheduling.dynamicresources.allocationtracker import AllocationTracker
from karpenter_core.scheduling.dynamicresources.allocator import (
    Allocation,
    AllocationResult,
    Allocator,
    DeviceAllocation,
    ResourceClaimAllocationMetadata,
    allocated_devices,
    claim_reserved_only_by,
)
from karpenter_core.scheduling.dynamicresources.cel import CELError, device_matches
from karpenter_core.scheduling.dynamicresources.constraint import (
    AttributeBindings,
    MatchAttribute,
    build_attribute_bindings,
    lookup_attribute,
)
from karpenter_core.scheduling.dynamicresources.devices import (
    AttributeBinding,
    DeviceID,
    DeviceWithID,
    DynamicResources,
    NodeClaimDevices,
    NodeClaimView,
    PoolKey,
    RequestName,
    ResourceSliceTemplate,
)
from karpenter_core.scheduling.dynamicresources.pool import Pool, filter_pools, gather_pools
from karpenter_core.scheduling.dynamicresources.request import (
    AllocationError,
    ClaimData,
    RequestData,
    validate_claim_request,
)

__all__ = [
    "Allocation",
    "AllocationError",
    "AllocationResult",
    "AllocationTracker",
    "Allocator",
    "AttributeBinding",
    "AttributeBindings",
    "CELError",
    "ClaimData",
    "DeviceAllocation",
    "DeviceID",
    "DeviceWithID",
    "DynamicResources",
    "MatchAttribute",
    "NodeClaimDevices",
    "NodeClaimView",
    "Pool",
    "PoolKey",
    "RequestData",
    "RequestName",
    "ResourceClaimAllocationMetadata",
    "ResourceSliceTemplate",
    "allocated_devices",
    "build_attribute_bindings",
    "claim_reserved_only_by",
    "device_matches",
    "filter_pools",
    "gather_pools",
    "lookup_attribute",
    "validate_claim_request",
]
