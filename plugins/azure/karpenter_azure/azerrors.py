"""Azure error classification: which ARM errors mean "no capacity here", and what to mark.

A VM create can fail for lack of capacity in several ways, each saying something different
about *where* capacity is missing (upstream ``pkg/providers/instance/offerings/`` with the
matchers of ``azure-sdk-for-go-extensions/pkg/errors``). The launch marks the offerings
the error rules out in the unavailable-offerings cache, so the next scheduling pass picks
another zone, capacity type or size, and raises ``InsufficientCapacityError`` so the core
deletes the NodeClaim and provisions again. In upstream's order:

============================================  ===============================================
ARM error                                     offerings marked
============================================  ===============================================
``OperationNotAllowed`` "LowPriorityCores"    all spot (the subscription's spot quota is spent)
``OperationNotAllowed`` "Family Cores quota"  the size in every zone, for the capacity type
``SkuNotAvailable``                           the size for the capacity type in every zone of
                                              the attempted placement (zonal or regional)
``ZonalAllocationFailed``                     the size in the zone, spot and on-demand
``AllocationFailed``                          the size in every zone of the attempted
                                              placement, spot and on-demand
``OverconstrainedZonalAllocationRequest``     the size in the zone, for the capacity type
``OverconstrainedAllocationRequest``          the size for the capacity type in every zone
                                              of the attempted placement
``OperationNotAllowed`` "exceeding approved   nothing: no other size helps (regional quota)
Total Regional Cores quota"
``SubnetIsFull`` / ``InsufficientSubnetSize`` the subnet (no addresses for the NIC)
============================================  ===============================================

As upstream's cache does, marking a size also blocks the larger sizes of its VM family in
the same zone and capacity type (``family`` members with at least as many vCPUs): if a
D16 cannot be allocated, neither can a D32.

Differences from upstream: the core cache has one TTL, so upstream's longer TTLs (1 h for
allocation failures and empty quota, 23 h for on-demand SkuNotAvailable, 10 min for low
quota) are not reproduced; the subnet mark is ours (upstream leaves a full subnet to the
generic error path).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from attrs import frozen

from karpenter_core.plugin_api import CreateError, InsufficientCapacityError

__all__ = [
    "ALLOCATION_FAILURE",
    "OVERCONSTRAINED_ALLOCATION_FAILURE",
    "OVERCONSTRAINED_ZONAL_ALLOCATION_FAILURE",
    "REGIONAL_QUOTA_REACHED",
    "SKU_NOT_AVAILABLE",
    "SUBNET_FULL",
    "SUBSCRIPTION_QUOTA_REACHED",
    "ZONAL_ALLOCATION_FAILURE",
    "AzureCapacityError",
    "FamilyMember",
    "Marker",
    "OfferingRef",
    "Target",
    "classify_create_error",
    "create_error",
    "describe",
    "error_code",
    "error_message",
    "is_missing_backend_pool",
    "is_not_found",
    "is_regional_zone",
    "one_line",
]

SUBSCRIPTION_QUOTA_REACHED = "SubscriptionQuotaReached"
ALLOCATION_FAILURE = "AllocationFailure"
ZONAL_ALLOCATION_FAILURE = "ZonalAllocationFailure"
OVERCONSTRAINED_ZONAL_ALLOCATION_FAILURE = "OverconstrainedZonalAllocationFailure"
OVERCONSTRAINED_ALLOCATION_FAILURE = "OverconstrainedAllocationFailure"
SKU_NOT_AVAILABLE = "SKUNotAvailable"
REGIONAL_QUOTA_REACHED = "RegionalQuotaReached"
SUBNET_FULL = "SubnetFull"

SPOT = "spot"
ON_DEMAND = "on-demand"

# ARM codes and message terms (azure-sdk-for-go-extensions pkg/errors/consts.go).
_OPERATION_NOT_ALLOWED = "OperationNotAllowed"
_LOW_PRIORITY_TERM = "LowPriorityCores"
_FAMILY_QUOTA_TERM = "Family Cores quota"
_REGIONAL_QUOTA_TERM = "exceeding approved Total Regional Cores quota"
_SUBNET_FULL_CODES = frozenset({"SubnetIsFull", "InsufficientSubnetSize"})


class Marker(Protocol):
    """The part of ``UnavailableOfferings`` a failed launch writes to."""

    def mark(self, instance_type: str, zone: str, capacity_type: str, reason: str = "") -> None: ...

    def mark_capacity_type(self, capacity_type: str) -> None: ...

    def mark_subnet(self, subnet_id: str) -> None: ...


@frozen
class OfferingRef:
    """One offering of the attempted size: its zone label ("" or "0" when regional) and
    capacity type."""

    zone: str
    capacity_type: str


@frozen
class FamilyMember:
    """Another size of the attempted size's VM family, with its vCPU count."""

    name: str
    vcpus: int


@frozen
class Target:
    """What was attempted: the size, its zone label ("" or "0" = regional) and capacity
    type, the size's offerings (to mark every zone of a placement), and its family."""

    sku: str
    zone: str
    capacity_type: str
    offerings: tuple[OfferingRef, ...] = ()
    vcpus: int = 0
    family: tuple[FamilyMember, ...] = ()
    subnet_id: str = ""


class AzureCapacityError(InsufficientCapacityError):
    """An ``InsufficientCapacityError`` carrying upstream's condition reason (e.g.
    ``ZonalAllocationFailure``) and the ARM error code it came from."""

    def __init__(self, cause: BaseException | str, reason: str, arm_code: str = "") -> None:
        self.reason = reason
        self.arm_code = arm_code
        super().__init__(cause)


def one_line(text: str, limit: int = 600) -> str:
    """``text`` with its whitespace collapsed, cut at ``limit`` characters (ARM messages
    span lines and embed JSON; conditions and logs want one line)."""
    flat = re.sub(r"\s+", " ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def error_code(err: BaseException) -> str:
    """The ARM error code of an SDK error (``HttpResponseError.error.code``), else ""."""
    odata = getattr(err, "error", None)
    code = getattr(odata, "code", None)
    return str(code) if code else ""


def error_message(err: BaseException) -> str:
    """The ARM error message (falls back to the exception text)."""
    odata = getattr(err, "error", None)
    message = getattr(odata, "message", None)
    return str(message) if message else str(getattr(err, "message", "") or err)


def _status(err: BaseException) -> int | None:
    status = getattr(err, "status_code", None)
    return status if isinstance(status, int) else None


def is_not_found(err: BaseException) -> bool:
    """True for an ARM 404 (the resource, or its parent, does not exist)."""
    from azure.core.exceptions import ResourceNotFoundError

    return isinstance(err, ResourceNotFoundError) or _status(err) == 404


def is_regional_zone(zone: str) -> bool:
    """A regional (non-zonal) placement: no zone, or AKS's fault-domain label "0"."""
    return zone in ("", "0")


def _zones(target: Target, capacity_types: Iterable[str]) -> list[tuple[str, str]]:
    """(zone, capacity type) of every offering of ``target`` in its placement scope with
    one of ``capacity_types``; the attempted one always included."""
    wanted = set(capacity_types)
    regional = is_regional_zone(target.zone)
    out = [
        (o.zone, o.capacity_type)
        for o in target.offerings
        if o.capacity_type in wanted and is_regional_zone(o.zone) == regional
    ]
    out.extend((target.zone, ct) for ct in sorted(wanted))
    return sorted(set(out))


def _all_zones(target: Target, capacity_type: str) -> list[tuple[str, str]]:
    out = {(o.zone, o.capacity_type) for o in target.offerings if o.capacity_type == capacity_type}
    out.add((target.zone, capacity_type))
    return sorted(out)


def _mark(marker: Marker, target: Target, pairs: Sequence[tuple[str, str]], reason: str) -> None:
    """Mark the size, and the family's sizes at or above its vCPUs, in each pair."""
    larger = [m.name for m in target.family if target.vcpus and m.vcpus >= target.vcpus]
    for zone, capacity_type in pairs:
        marker.mark(target.sku, zone, capacity_type, reason)
        for name in larger:
            if name != target.sku:
                marker.mark(name, zone, capacity_type, reason)


def _zone_text(zone: str) -> str:
    return "(regional)" if is_regional_zone(zone) else zone


def classify_create_error(
    err: BaseException, target: Target, marker: Marker
) -> InsufficientCapacityError | None:
    """Mark what ``err`` rules out and return the capacity error to raise, or None when
    ``err`` is not about capacity (the caller raises a ``CreateError``)."""
    code = error_code(err)
    text = f"{error_message(err)} {err}"
    t = target
    if code == _OPERATION_NOT_ALLOWED and _LOW_PRIORITY_TERM in text:
        marker.mark_capacity_type(SPOT)
        msg = (
            "this subscription has reached the regional vCPU quota for spot (LowPriorityQuota); "
            "see https://docs.microsoft.com/en-us/azure/azure-portal/supportability/low-priority-quota"
        )
        return AzureCapacityError(msg, SUBSCRIPTION_QUOTA_REACHED, code)
    if code == _OPERATION_NOT_ALLOWED and _FAMILY_QUOTA_TERM in text:
        _mark(marker, t, _all_zones(t, t.capacity_type), SUBSCRIPTION_QUOTA_REACHED)
        msg = (
            f"subscription level {t.capacity_type} vCPU quota for {t.sku} has been reached "
            "(may try provision an alternative instance type)"
        )
        return AzureCapacityError(msg, SUBSCRIPTION_QUOTA_REACHED, code)
    if code == "SkuNotAvailable":
        _mark(marker, t, _zones(t, [t.capacity_type]), SKU_NOT_AVAILABLE)
        msg = (
            f"the requested SKU is unavailable for instance type {t.sku} in zone "
            f"{_zone_text(t.zone)} with capacity type {t.capacity_type}, for more details "
            "please visit: https://aka.ms/azureskunotavailable"
        )
        return AzureCapacityError(msg, SKU_NOT_AVAILABLE, code)
    if code == "ZonalAllocationFailed":
        _mark(marker, t, [(t.zone, ON_DEMAND), (t.zone, SPOT)], ZONAL_ALLOCATION_FAILURE)
        msg = (
            f"unable to allocate resources in the selected zone ({_zone_text(t.zone)}). "
            "(will try a different zone to fulfill your request)"
        )
        return AzureCapacityError(msg, ZONAL_ALLOCATION_FAILURE, code)
    if code == "AllocationFailed":
        _mark(marker, t, _zones(t, [ON_DEMAND, SPOT]), ALLOCATION_FAILURE)
        msg = (
            f"unable to allocate resources with selected VM size ({t.sku}). "
            "(will try a different VM size to fulfill your request)"
        )
        return AzureCapacityError(msg, ALLOCATION_FAILURE, code)
    if code == "OverconstrainedZonalAllocationRequest":
        _mark(marker, t, [(t.zone, t.capacity_type)], OVERCONSTRAINED_ZONAL_ALLOCATION_FAILURE)
        msg = (
            f"unable to allocate resources in the selected zone ({_zone_text(t.zone)}) with "
            f"{t.capacity_type} capacity type and {t.sku} VM size. (will try a different zone, "
            "capacity type or VM size to fulfill your request)"
        )
        return AzureCapacityError(msg, OVERCONSTRAINED_ZONAL_ALLOCATION_FAILURE, code)
    if code == "OverconstrainedAllocationRequest":
        _mark(marker, t, _zones(t, [t.capacity_type]), OVERCONSTRAINED_ALLOCATION_FAILURE)
        msg = (
            f"unable to allocate resources in all zones with {t.capacity_type} capacity type "
            f"and {t.sku} VM size. (will try a different capacity type or VM size to fulfill "
            "your request)"
        )
        return AzureCapacityError(msg, OVERCONSTRAINED_ALLOCATION_FAILURE, code)
    if code == _OPERATION_NOT_ALLOWED and _REGIONAL_QUOTA_TERM in text:
        msg = (
            f"regional {t.capacity_type} vCPU quota limit for subscription has been reached. "
            "To scale beyond this limit, please review the quota increase process here: "
            "https://learn.microsoft.com/en-us/azure/quotas/regional-quota-requests"
        )
        return AzureCapacityError(msg, REGIONAL_QUOTA_REACHED, code)
    if code in _SUBNET_FULL_CODES:
        if t.subnet_id:
            marker.mark_subnet(t.subnet_id)
        msg = f"subnet {t.subnet_id or '(unknown)'} has no free IP address for the node's NIC"
        return AzureCapacityError(msg, SUBNET_FULL, code)
    return None


def is_missing_backend_pool(err: BaseException, pool_ids: Iterable[str]) -> bool:
    """True when a NIC create failed with ``InvalidResourceReference`` naming one of the
    load-balancer backend pools it was given (upstream ``lberrors.go``): the pool list is
    stale and worth refreshing, unlike a missing subnet or NSG, which a retry cannot fix."""
    if error_code(err).lower() != "invalidresourcereference":
        return False
    text = f"{error_message(err)} {err}".lower()
    return any(pool and pool.lower() in text for pool in pool_ids)


def create_error(what: str, err: BaseException) -> CreateError:
    """A one-line ``CreateError`` for a non-capacity ARM failure, its condition reason
    the ARM code (``LaunchFailed`` when there is none)."""
    code = error_code(err) or ""
    detail = one_line(error_message(err))
    message = f"{what}: {code + ': ' if code else ''}{detail}"
    reason = code or "LaunchFailed"
    return CreateError(message, reason, one_line(message, 300))


def describe(err: Any) -> str:
    """``(Code) message`` of an SDK error in one line, for logs."""
    code = error_code(err)
    return one_line(f"({code}) {error_message(err)}" if code else error_message(err))
