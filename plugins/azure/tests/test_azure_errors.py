"""Error classification (azerrors): each ARM capacity error marks the offerings upstream's
handlers mark, and nothing else. The errors are real SDK exceptions, produced by the
fake ARM server answering a real VM PUT."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fakearm import RESOURCE_GROUP, FakeARM
from karpenter_azure.azerrors import (
    AzureCapacityError,
    FamilyMember,
    OfferingRef,
    Target,
    classify_create_error,
    create_error,
    error_code,
    is_not_found,
    one_line,
)
from karpenter_azure.clients import AzureClients

from karpenter_core.plugin_api import UnavailableOfferings, VirtualClock

ZONES = ("westus2-1", "westus2-2", "westus2-3")
SKU = "Standard_D8s_v5"
OFFERINGS = tuple(OfferingRef(z, ct) for z in (*ZONES, "") for ct in ("on-demand", "spot"))

ArmError = Callable[[str, str], Exception]


@pytest.fixture
def arm_error(arm_env: FakeARM, azure_clients: AzureClients) -> ArmError:
    """The SDK exception a VM PUT raises when ARM answers ``code``/``message``."""

    def make(code: str, message: str) -> Exception:
        arm_env.fail_next_vm_create(code, message)
        body = {"location": "westus2", "properties": {"hardwareProfile": {"vmSize": SKU}}}
        try:
            azure_clients.compute.virtual_machines.begin_create_or_update(
                RESOURCE_GROUP, "aks-x", body, polling_interval=0
            ).result()
        except Exception as e:
            return e
        raise AssertionError("the fake accepted a VM it was told to refuse")

    return make


def marked(cache: UnavailableOfferings, sku: str = SKU) -> set[tuple[str, str]]:
    return {
        (z, ct)
        for z in (*ZONES, "")
        for ct in ("on-demand", "spot")
        if cache.is_unavailable(sku, z, ct)
    }


def classify(
    err: Exception, **kw: object
) -> tuple[AzureCapacityError | None, UnavailableOfferings]:
    cache = UnavailableOfferings(VirtualClock())
    args: dict[str, object] = {
        "sku": SKU,
        "zone": "westus2-2",
        "capacity_type": "on-demand",
        "offerings": OFFERINGS,
    }
    args.update(kw)
    out = classify_create_error(err, Target(**args), cache)  # type: ignore[arg-type]
    assert out is None or isinstance(out, AzureCapacityError)
    return out, cache


ALL_ZONAL_OD = {(z, "on-demand") for z in ZONES}
ALL_ZONAL_SPOT = {(z, "spot") for z in ZONES}


@pytest.mark.parametrize(
    ("code", "message", "capacity_type", "reason", "expected"),
    [
        (
            "ZonalAllocationFailed",
            "Allocation failed in zone",
            "on-demand",
            "ZonalAllocationFailure",
            {("westus2-2", "on-demand"), ("westus2-2", "spot")},
        ),
        (
            "AllocationFailed",
            "Allocation failed",
            "spot",
            "AllocationFailure",
            ALL_ZONAL_OD | ALL_ZONAL_SPOT,
        ),
        (
            "OverconstrainedZonalAllocationRequest",
            "constraints",
            "spot",
            "OverconstrainedZonalAllocationFailure",
            {("westus2-2", "spot")},
        ),
        (
            "OverconstrainedAllocationRequest",
            "constraints",
            "on-demand",
            "OverconstrainedAllocationFailure",
            ALL_ZONAL_OD,
        ),
        ("SkuNotAvailable", "not available", "spot", "SKUNotAvailable", ALL_ZONAL_SPOT),
        (
            "OperationNotAllowed",
            "Operation could not be completed as it results in exceeding approved "
            "standardDSv5Family Cores quota. Current Limit: 0",
            "on-demand",
            "SubscriptionQuotaReached",
            ALL_ZONAL_OD | {("", "on-demand")},
        ),
    ],
)
def test_capacity_errors_mark_what_upstream_marks(
    arm_error: ArmError,
    code: str,
    message: str,
    capacity_type: str,
    reason: str,
    expected: set[tuple[str, str]],
) -> None:
    err = arm_error(code, message)
    assert error_code(err) == code
    out, cache = classify(err, capacity_type=capacity_type)
    assert out is not None
    assert out.reason == reason
    assert out.arm_code == code
    assert marked(cache) == expected


def test_regional_placement_failures_leave_zonal_offerings(arm_error: ArmError) -> None:
    out, cache = classify(arm_error("AllocationFailed", "Allocation failed"), zone="")
    assert out is not None
    assert marked(cache) == {("", "on-demand"), ("", "spot")}
    out, cache = classify(arm_error("SkuNotAvailable", "no"), zone="", capacity_type="spot")
    assert marked(cache) == {("", "spot")}


def test_family_sizes_at_or_above_the_vcpus_are_marked_too(arm_error: ArmError) -> None:
    family = (
        FamilyMember("Standard_D4s_v5", 4),
        FamilyMember("Standard_D8s_v5", 8),
        FamilyMember("Standard_D16s_v5", 16),
    )
    out, cache = classify(arm_error("ZonalAllocationFailed", "no"), vcpus=8, family=family)
    assert out is not None
    assert marked(cache, "Standard_D16s_v5") == {("westus2-2", "on-demand"), ("westus2-2", "spot")}
    assert marked(cache, "Standard_D4s_v5") == set()


def test_low_priority_quota_marks_all_spot(arm_error: ArmError) -> None:
    err = arm_error(
        "OperationNotAllowed",
        "Operation results in exceeding approved LowPriorityCores quota. Current Limit: 3",
    )
    out, cache = classify(err, capacity_type="spot")
    assert out is not None and out.reason == "SubscriptionQuotaReached"
    assert cache.is_unavailable("Standard_NC6", "eastus-1", "spot")
    assert not cache.is_unavailable("Standard_NC6", "eastus-1", "on-demand")


def test_regional_quota_is_capacity_without_marks(arm_error: ArmError) -> None:
    err = arm_error(
        "OperationNotAllowed",
        "Operation results in exceeding approved Total Regional Cores quota. Limit: 10",
    )
    out, cache = classify(err)
    assert out is not None and out.reason == "RegionalQuotaReached"
    assert len(cache) == 0 and marked(cache) == set()


def test_subnet_full_marks_the_subnet(arm_error: ArmError) -> None:
    out, cache = classify(arm_error("SubnetIsFull", "no room"), subnet_id="/subnets/a")
    assert out is not None and out.reason == "SubnetFull"
    assert cache.is_unavailable(SKU, "westus2-1", "on-demand", subnet_ids=["/subnets/a"])
    assert not cache.is_unavailable(SKU, "westus2-1", "on-demand", subnet_ids=["/subnets/b"])


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("OperationNotAllowed", "The operation is not allowed for another reason."),
        ("InvalidParameter", "Required parameter 'adminPassword' is missing"),
        ("AuthorizationFailed", "The client does not have authorization"),
    ],
)
def test_other_errors_are_not_capacity(arm_error: ArmError, code: str, message: str) -> None:
    err = arm_error(code, message)
    out, cache = classify(err)
    assert out is None
    assert len(cache) == 0
    ce = create_error("creating VM aks-x", err)
    assert ce.condition_reason == code
    assert message.split()[0] in str(ce)
    assert "\n" not in str(ce)


def test_not_found_and_one_line(arm_env: FakeARM, azure_clients: AzureClients) -> None:
    try:
        azure_clients.compute.virtual_machines.get(RESOURCE_GROUP, "nope")
    except Exception as e:
        assert is_not_found(e)
    else:
        raise AssertionError("GET of a missing VM succeeded")
    assert one_line("a\n  b\tc ") == "a b c"
    assert len(one_line("x" * 1000, limit=50)) == 50
