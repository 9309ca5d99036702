"""Resource SKUs as typed values (karpenter_azure.skus): capabilities, VM size names,
zones and restrictions, and listing them through the real SDK against the fake ARM."""

from __future__ import annotations

import pytest
from fakearm import FakeARM
from fakearm_catalog import catalog_routes, sku_json
from karpenter_azure import catalogue
from karpenter_azure.clients import AzureClients
from karpenter_azure.skus import Sku, SkuError, list_skus, parse_vm_size, skus_from_json

SUBSCRIPTION = "00000000-0000-0000-0000-00000000cafe"


def _bundled(name: str, region: str = "southcentralus") -> Sku:
    for sku in catalogue.load_snapshot(region).skus:
        if sku.name == name:
            return sku
    raise AssertionError(f"{name} is not in the bundled {region} snapshot")


# --- VM size names -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "family", "series", "version", "constrained", "accelerator"),
    [
        ("D16plds_v5", "D", "Dplds_v5", "5", None, None),
        ("D2_v2", "D", "D_v2", "2", None, None),
        ("DS2_v2", "D", "DS_v2", "2", None, None),
        ("NC24ads_A100_v4", "N", "NCads_v4", "4", None, "A100"),
        ("NC16as_T4_v3", "N", "NCas_v3", "3", None, "T4"),
        ("M8-2ms", "M", "Mms", "1", "2", None),
        ("A0", "A", "A", "1", None, None),
        ("M416s_8_v2", "M", "Ms_v2", "2", None, None),
    ],
)
def test_vm_size_names_parse_into_the_naming_conventions_parts(
    size: str,
    family: str,
    series: str,
    version: str,
    constrained: str | None,
    accelerator: str | None,
) -> None:
    parsed = parse_vm_size(size)
    assert parsed is not None
    assert (parsed.family, parsed.series, parsed.version_number) == (family, series, version)
    assert parsed.cpus_constrained == constrained
    assert parsed.accelerator_type == accelerator


def test_a_size_outside_the_naming_convention_does_not_parse() -> None:
    assert parse_vm_size("not-a-size") is None
    assert parse_vm_size("") is None


# --- capabilities of recorded SKUs ---------------------------------------------------------------


def test_capabilities_of_a_recorded_sku() -> None:
    sku = _bundled("Standard_NC24ads_A100_v4")
    assert (sku.vcpus, sku.memory_gib, sku.gpus) == (24, 220.0, 1)
    assert sku.architecture == "x64"
    assert sku.hyperv_gen2 and not sku.hyperv_gen1
    d2 = _bundled("Standard_D2_v2")
    assert d2.hyperv_gen1 and not d2.hyperv_gen2
    assert not d2.trusted_launch_supported
    assert d2.gpus is None


def test_flag_capabilities_compare_names_and_values_without_case() -> None:
    sku = Sku.from_dict(
        sku_json("Standard_X2_v1", extra={"encryptionathostsupported": "TRUE", "PremiumIO": "no"})
    )
    assert sku.encryption_at_host_supported
    assert sku.premium_io is False  # anything but "true" is false
    assert (
        Sku.from_dict(sku_json("Standard_X2_v1", low_priority=False)).low_priority_capable is False
    )


def test_trusted_launch_needs_generation_2_and_no_trusted_launch_disabled() -> None:
    gen2 = Sku.from_dict(sku_json("Standard_X2_v1"))
    disabled = Sku.from_dict(sku_json("Standard_X2_v1", extra={"TrustedLaunchDisabled": "True"}))
    gen1 = Sku.from_dict(sku_json("Standard_X2_v1", extra={"HyperVGenerations": "V1"}))
    assert gen2.trusted_launch_supported
    assert not disabled.trusted_launch_supported
    assert not gen1.hyperv_gen2
    assert not gen1.trusted_launch_supported


def test_capability_map_keeps_the_first_of_repeated_names() -> None:
    raw = sku_json("Standard_X2_v1")
    raw["capabilities"].append({"name": "vCPUs", "value": "64"})
    raw["capabilities"].append({"name": "Nothing", "value": None})
    caps = Sku.from_dict(raw).capability_map()
    assert caps["vCPUs"] == "2"
    assert "Nothing" not in caps
    assert caps["CpuArchitectureType"] == "x64"


def test_json_round_trips_through_to_dict() -> None:
    sku = _bundled("Standard_D2as_v6")
    assert Sku.from_dict(sku.to_dict()) == sku
    assert skus_from_json({"value": [sku.to_dict()]}) == [sku]
    with pytest.raises(SkuError):
        skus_from_json({"skus": []})


# --- zones and restrictions ---------------------------------------------------------------------


def test_zones_come_from_location_info_less_zone_restrictions() -> None:
    restricted = {
        "type": "Zone",
        "values": ["westus2"],
        "restrictionInfo": {"locations": ["westus2"], "zones": ["2"]},
        "reasonCode": "NotAvailableForSubscription",
    }
    sku = Sku.from_dict(sku_json("Standard_X2_v1", restrictions=[restricted]))
    assert sku.availability_zones("westus2") == {"1", "3"}
    assert sku.availability_zones("West US 2") == {"1", "3"}
    assert not sku.has_location_restriction("westus2")
    assert sku.availability_zones("eastus") == frozenset()


def test_a_location_restriction_removes_every_zone() -> None:
    sku = _bundled("Standard_A0", "westcentralus")
    assert sku.has_location_restriction("westcentralus")
    whole = Sku.from_dict(
        sku_json(
            "Standard_X2_v1",
            restrictions=[
                {
                    "type": "Location",
                    "values": ["westus2"],
                    "restrictionInfo": {"locations": ["westus2"], "zones": []},
                }
            ],
        )
    )
    assert whole.availability_zones("westus2") == frozenset()
    assert whole.has_location_restriction("westus2")


def test_ultra_ssd_per_zone_comes_from_zone_details() -> None:
    sku = Sku.from_dict(
        sku_json(
            "Standard_X2_v1",
            zone_details=[
                {"name": ["2"], "capabilities": [{"name": "UltraSSDAvailable", "value": "True"}]}
            ],
        )
    )
    assert sku.ultra_ssd_in_zone("2")
    assert not sku.ultra_ssd_in_zone("1")
    assert not sku.ultra_ssd_without_zone()


# --- listing through the SDK ----------------------------------------------------------------------


def test_list_skus_follows_next_links_and_keeps_virtual_machines(arm_env: FakeARM) -> None:
    routes = catalog_routes(arm_env)
    routes.skus.extend(sku_json(f"Standard_D{n}s_v9", vcpus=n) for n in (2, 4, 8, 16, 32))
    routes.skus.append(sku_json("Premium_LRS", resource_type="disks"))
    routes.skus.append(sku_json("Standard_D2s_v9", location="eastus"))
    routes.sku_page_size = 2
    clients = AzureClients.create(SUBSCRIPTION)

    skus = list_skus(clients.compute, "westus2")

    assert [s.name for s in skus] == [f"Standard_D{n}s_v9" for n in (2, 4, 8, 16, 32)]
    assert [s.vcpus for s in skus] == [2, 4, 8, 16, 32]
    assert routes.sku_filters == ["location eq 'westus2'"]
    pages = arm_env.requests_to(
        "GET", rf"/subscriptions/{SUBSCRIPTION}/providers/Microsoft\.Compute/skus"
    )
    assert len(pages) == 3  # 5 VM SKUs and a disk SKU, two per page


def test_list_skus_names_the_location_when_arm_refuses(arm_env: FakeARM) -> None:
    catalog_routes(arm_env)
    arm_env.fail_next(
        "GET",
        r"/subscriptions/[^/]+/providers/Microsoft\.Compute/skus",
        status=403,
        code="AuthorizationFailed",
        message="no read permission on Microsoft.Compute/skus",
    )
    clients = AzureClients.create(SUBSCRIPTION)
    with pytest.raises(SkuError, match=r"westus2.*(AuthorizationFailed|no read permission)"):
        list_skus(clients.compute, "westus2")
