"""Instance types from Resource SKUs (karpenter_azure.instancetypes), checked against the
recorded southcentralus SKUs bundled with the plugin and upstream's expectations
(pkg/providers/instancetype/suite_test.go)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from fakearm_catalog import sku_json
from karpenter_azure import catalogue
from karpenter_azure import labels as az
from karpenter_azure.instancetypes import (
    InstanceTypeProvider,
    build_instance_types,
    ephemeral_os_disk_max_gb,
    kube_reserved,
    memory_without_overhead,
)
from karpenter_azure.nodeclass import AKSNodeClass
from karpenter_azure.pricing import MISSING_PRICE
from karpenter_azure.skus import Sku

from karpenter_core.plugin_api import InstanceType, UnavailableOfferings, VirtualClock
from karpenter_core.plugin_api import labels as core_labels
from karpenter_core.plugin_api import resources as res

REGION = "southcentralus"
MI = 1024 * 1024
GI = 1024 * MI


class Prices:
    """A price source with fixed tables (the provider's interface, nothing more)."""

    def __init__(self, on_demand: Mapping[str, float], spot: Mapping[str, float]) -> None:
        self._on_demand = dict(on_demand)
        self._spot = dict(spot)
        self.version = 0

    def on_demand(self, sku: str) -> float | None:
        return self._on_demand.get(sku)

    def spot(self, sku: str) -> float | None:
        return self._spot.get(sku)


def _skus() -> tuple[Sku, ...]:
    return catalogue.load_snapshot(REGION).skus


def _sku(name: str) -> Sku:
    return next(s for s in _skus() if s.name == name)


def _prices() -> Prices:
    snap = catalogue.load_snapshot(REGION)
    return Prices(snap.on_demand, {k: v / 4 for k, v in snap.on_demand.items()})


def _nodeclass(**spec: Any) -> AKSNodeClass:
    return AKSNodeClass.from_dict({"metadata": {"name": "default"}, "spec": spec})


def _types(
    nodeclass: AKSNodeClass | None = None, skus: Sequence[Sku] | None = None, **kw: Any
) -> dict[str, InstanceType]:
    types = build_instance_types(
        _skus() if skus is None else skus, _prices(), region=REGION, nodeclass=nodeclass, **kw
    )
    return {t.name: t for t in types}


def _values(it: InstanceType, key: str) -> set[str]:
    return set(it.requirements.get(key).values)


# --- labels ----------------------------------------------------------------------------------


def test_labels_propagate_from_the_sku() -> None:
    """upstream: "should propagate all values to requirements from skewer"."""
    types = _types(node_resource_group="MC_rg_cluster_southcentralus")
    d2, gpu = types["Standard_D2_v2"], types["Standard_NC24ads_A100_v4"]
    assert _values(d2, az.LABEL_SKU_NAME) == {"Standard_D2_v2"}
    assert _values(d2, az.LABEL_SKU_HYPERV_GENERATION) == {"1"}
    assert _values(gpu, az.LABEL_SKU_HYPERV_GENERATION) == {"2"}
    assert _values(d2, az.LABEL_SKU_VERSION) == {"2"}
    assert _values(gpu, az.LABEL_SKU_VERSION) == {"4"}
    assert _values(d2, az.LABEL_SKU_CPU) == _values(d2, az.AKS_LABEL_CPU) == {"2"}
    assert _values(gpu, az.LABEL_SKU_CPU) == {"24"}
    assert _values(d2, az.LABEL_SKU_MEMORY) == _values(d2, az.AKS_LABEL_MEMORY) == {str(7 * 1024)}
    assert _values(gpu, az.LABEL_SKU_MEMORY) == {str(220 * 1024)}
    assert _values(gpu, az.LABEL_SKU_GPU_MANUFACTURER) == {"nvidia"}
    assert _values(gpu, az.LABEL_SKU_GPU_NAME) == {"A100"}
    assert _values(gpu, az.LABEL_SKU_GPU_COUNT) == {"1"}
    assert _values(d2, az.LABEL_SKU_GPU_COUNT) == {"0"}
    assert not d2.requirements.get(az.LABEL_SKU_GPU_NAME).values
    assert _values(d2, az.AKS_LABEL_CLUSTER) == {"MC_rg_cluster_southcentralus"}


def test_family_series_architecture_and_storage_labels() -> None:
    arm = _types()["Standard_D16plds_v5"]
    assert _values(arm, az.LABEL_SKU_FAMILY) == {"D"}
    assert _values(arm, az.LABEL_SKU_SERIES) == {"Dplds_v5"}
    assert _values(arm, core_labels.LABEL_ARCH) == {"arm64"}
    assert _values(arm, az.LABEL_SKU_STORAGE_EPHEMERAL_OS_MAX_SIZE) == {"429"}
    sku = _sku("Standard_D16plds_v5")
    assert _values(arm, az.LABEL_SKU_STORAGE_PREMIUM_CAPABLE) == {str(sku.premium_io).lower()}
    assert _values(arm, az.LABEL_SKU_ACCELERATED_NETWORKING) == {
        str(sku.accelerated_networking).lower()
    }
    amd64 = _types()["Standard_D2s_v3"]
    assert _values(amd64, core_labels.LABEL_ARCH) == {"amd64"}
    assert _values(amd64, core_labels.LABEL_OS) == {"linux"}
    assert _values(amd64, core_labels.LABEL_TOPOLOGY_REGION) == {REGION}


def test_every_type_defines_every_well_known_label() -> None:
    """upstream: "should have all the requirements on every sku"; boolean labels have
    exactly one of true/false."""
    types = _types()
    assert types
    for it in types.values():
        for key in az.WELL_KNOWN_LABELS | {az.LABEL_SKU_HYPERV_GENERATION}:
            assert it.requirements.has(key), (it.name, key)
        for key in (az.LABEL_SKU_STORAGE_PREMIUM_CAPABLE, az.LABEL_SKU_ACCELERATED_NETWORKING):
            assert len(_values(it, key)) == 1 and _values(it, key) <= {"true", "false"}
        assert _values(it, az.LABEL_SKU_STORAGE_ULTRA_SSD) <= {"true", "false"}


def test_image_family_and_fips_set_the_os_sku_and_fips_labels() -> None:
    default = _types()["Standard_D2s_v3"]
    assert _values(default, az.AKS_LABEL_OS_SKU) == {"Ubuntu"}
    assert not default.requirements.get(az.AKS_LABEL_FIPS_ENABLED).values
    azl = _types(_nodeclass(imageFamily="AzureLinux", fipsMode="FIPS"))["Standard_D2s_v3"]
    assert _values(azl, az.AKS_LABEL_OS_SKU) == {"AzureLinux"}
    assert _values(azl, az.AKS_LABEL_FIPS_ENABLED) == {"true"}


@pytest.mark.parametrize(
    ("name", "size_gb", "placement"),
    [
        ("Standard_B20ms", 32, "CacheDisk"),
        ("Standard_D128ds_v6", 7559, "NvmeDisk"),
        ("Standard_D16plds_v5", 429, "CacheDisk"),
        ("Standard_D2as_v6", 0, None),
        ("Standard_NC24ads_A100_v4", 274, "CacheDisk"),
        ("Standard_D64s_v3", 1717, "CacheDisk"),
        ("Standard_A0", 0, None),
        ("Standard_D2_v2", 0, None),
    ],
)
def test_ephemeral_os_disk_max_size(name: str, size_gb: int, placement: str | None) -> None:
    """upstream: "should return the max ephemeral disk size in GB for a given instance type"."""
    assert ephemeral_os_disk_max_gb(_sku(name)) == (size_gb, placement)


# --- capacity and overhead ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("vcpus", "memory_gib", "cpu_milli", "memory_mi"),
    [(4, 7.0, 140, 1638), (2, 8.0, 100, 1843), (3, 64.0, 120, 5611)],
)
def test_kube_reserved_brackets(
    vcpus: int, memory_gib: float, cpu_milli: int, memory_mi: int
) -> None:
    """upstream: Describe("Tax Calculator")."""
    reserved = kube_reserved(vcpus, memory_gib)
    assert reserved[res.CPU] == cpu_milli
    assert reserved[res.MEMORY] == memory_mi * MI * 1000


def test_capacity_and_overhead_of_a_type() -> None:
    """upstream: with VM memory overhead 0, Standard_D2_v2 has 2 CPUs and 7 GiB and
    Standard_NC24ads_A100_v4 24 CPUs, 220 GiB and one NVIDIA GPU."""
    types = _types(vm_memory_overhead_percent=0.0)
    d2, gpu = types["Standard_D2_v2"], types["Standard_NC24ads_A100_v4"]
    assert d2.capacity[res.CPU] == 2000
    assert d2.capacity[res.MEMORY] == 7 * GI * 1000
    assert gpu.capacity[res.CPU] == 24000
    assert gpu.capacity[res.MEMORY] == 220 * GI * 1000
    assert gpu.capacity["nvidia.com/gpu"] == 1000
    assert d2.capacity["nvidia.com/gpu"] == 0
    assert d2.capacity[res.EPHEMERAL_STORAGE] == 128 * 10**9 * 1000
    assert d2.overhead.kube_reserved == kube_reserved(2, 7.0)
    assert d2.overhead.system_reserved == {res.CPU: 0, res.MEMORY: 0}
    assert d2.overhead.eviction_threshold == {res.MEMORY: 750 * MI * 1000}


def test_vm_memory_overhead_takes_its_share_of_whole_gib() -> None:
    d4 = _types()["Standard_D4s_v3"]
    assert d4.capacity[res.MEMORY] == memory_without_overhead(16.0, 0.075) * 1000
    # 16 GiB less ceil(7.5 % of 17179869184 bytes = 1288490188.8)
    assert memory_without_overhead(16.0, 0.075) == 15891378995
    assert memory_without_overhead(3.5, 0.0) == 3 * GI  # fractional GiB are dropped


def test_os_disk_size_sets_ephemeral_storage() -> None:
    d2 = _types(_nodeclass(osDiskSizeGB=64))["Standard_D2s_v3"]
    assert d2.capacity[res.EPHEMERAL_STORAGE] == 64 * 10**9 * 1000


@pytest.mark.parametrize(
    ("plugin", "mode", "pods"),
    [("azure", "overlay", 250), ("azure", "", 30), ("none", "", 250), ("kubenet", "", 110)],
)
def test_max_pods_default_follows_the_network_plugin(plugin: str, mode: str, pods: int) -> None:
    """upstream: Context("MaxPods")."""
    types = _types(network_plugin=plugin, network_plugin_mode=mode)
    assert {t.capacity[res.PODS] for t in types.values()} == {pods * 1000}


def test_max_pods_of_the_nodeclass_wins_then_the_configured_default() -> None:
    types = _types(_nodeclass(maxPods=150), network_plugin="azure", network_plugin_mode="")
    assert {t.capacity[res.PODS] for t in types.values()} == {150 * 1000}
    types = _types(_nodeclass(maxPods=150), max_pods_default=60)
    assert {t.capacity[res.PODS] for t in types.values()} == {150 * 1000}
    types = _types(_nodeclass(), max_pods_default=60)
    assert {t.capacity[res.PODS] for t in types.values()} == {60 * 1000}


# --- filtering ---------------------------------------------------------------------------------


def test_restricted_constrained_confidential_and_small_skus_are_left_out() -> None:
    """upstream: Context("Filtering in InstanceType")."""
    names = set(_types())
    assert "Standard_D2_v2" in names
    assert "Standard_M8-2ms" not in names  # constrained vCPUs
    assert "Standard_DC8s_v3" not in names  # confidential
    assert "Standard_A0" not in names and "Standard_B1s" not in names  # AKS-restricted, small
    restricted = Sku.from_dict(
        sku_json(
            "Standard_D4s_v9",
            location=REGION,
            vcpus=4,
            restrictions=[{"type": "Location", "values": [REGION], "restrictionInfo": {}}],
        )
    )
    unrestricted = Sku.from_dict(sku_json("Standard_D8s_v9", location=REGION, vcpus=8))
    assert set(_types(skus=[restricted, unrestricted])) == {"Standard_D8s_v9"}


def test_gpu_skus_follow_the_image_family() -> None:
    """upstream: Context("Filtering GPU SKUs AzureLinux"): an unsupported GPU size is out,
    and Azure Linux keeps only GPU sizes it has drivers for."""
    unknown_gpu = Sku.from_dict(
        sku_json("Standard_NC4x_v9", location=REGION, vcpus=4, extra={"GPUs": "1"})
    )
    assert set(_types(skus=[unknown_gpu])) == set()
    azl = _types(_nodeclass(imageFamily="AzureLinux"))
    assert {"Standard_NC16as_T4_v3", "Standard_NC24ads_A100_v4"} <= set(azl)
    ubuntu_only = Sku.from_dict(
        sku_json(
            "Standard_NC12s_v2", location=REGION, vcpus=12, memory_gib=224, extra={"GPUs": "2"}
        )
    )
    assert set(_types(skus=[ubuntu_only])) == {"Standard_NC12s_v2"}
    assert set(_types(_nodeclass(imageFamily="AzureLinux"), skus=[ubuntu_only])) == set()


def test_encryption_at_host_keeps_only_sizes_supporting_it() -> None:
    """upstream: Context("Filtering by Encryption at Host")."""
    on = set(_types(_nodeclass(security={"encryptionAtHost": True})))
    assert "Standard_D2_v2" not in on
    assert {"Standard_D2s_v3", "Standard_D2_v5"} <= on
    assert "Standard_D2_v2" in set(_types())


def test_artifact_streaming_leaves_out_arm64_and_trusted_launch_generation_1() -> None:
    streaming = _types(_nodeclass(artifactStreaming={"enabled": True}))
    assert "Standard_D16plds_v5" not in streaming
    assert "Standard_D16plds_v5" in _types()
    trusted = _types(_nodeclass(security={"trustedLaunch": {"vtpm": True}}))
    assert "Standard_D2_v2" not in trusted
    assert "Standard_D2s_v3" in trusted


def test_local_dns_needs_four_vcpus() -> None:
    required = _types(local_dns=True)
    assert required and all(
        int(next(iter(_values(t, az.LABEL_SKU_CPU)))) >= 4 for t in required.values()
    )
    assert "Standard_D2s_v3" not in required and "Standard_D2s_v3" in _types()


# --- offerings -----------------------------------------------------------------------------------


def test_zones_are_the_unrestricted_zones_and_the_regional_zone() -> None:
    types = _types()
    d2as = types["Standard_D2as_v6"]  # recorded in zones 2 and 3 only
    assert {o.zone for o in d2as.offerings} == {f"{REGION}-2", f"{REGION}-3", "0"}
    assert _values(d2as, core_labels.LABEL_TOPOLOGY_ZONE) == {f"{REGION}-2", f"{REGION}-3", "0"}
    regional = types["Standard_NC6s_v3"]  # recorded without zones
    assert {o.zone for o in regional.offerings} == {"0"}
    assert _values(regional, az.LABEL_PLACEMENT_SCOPE) == {"regional"}
    for o in d2as.offerings:
        scope = "regional" if o.zone == "0" else "zonal"
        assert o.requirements.get(az.LABEL_PLACEMENT_SCOPE).values == {scope}


def test_spot_is_offered_only_for_low_priority_capable_skus() -> None:
    """upstream: "should not have spot offerings available for SKUs with
    LowPriorityCapable=False" (Standard_B20ms)."""
    types = _types()
    b20 = types["Standard_B20ms"]
    assert not _sku("Standard_B20ms").low_priority_capable
    assert [o for o in b20.offerings.available() if o.capacity_type == "on-demand"]
    assert not [o for o in b20.offerings.available() if o.capacity_type == "spot"]
    assert _values(b20, core_labels.CAPACITY_TYPE_LABEL_KEY) == {"on-demand"}
    d2 = types["Standard_D2s_v3"]
    assert _values(d2, core_labels.CAPACITY_TYPE_LABEL_KEY) == {"on-demand", "spot"}
    for o in d2.offerings:
        priority = "spot" if o.capacity_type == "spot" else "regular"
        assert o.requirements.get(az.AKS_LABEL_PRIORITY).values == {priority}
        assert o.requirements.get(az.AKS_LABEL_SCALE_SET_PRIORITY).values == {priority}


def test_offerings_are_priced_and_unknown_or_unpriced_sizes_cost_the_missing_price() -> None:
    prices = _prices()
    d2 = _types()["Standard_D2s_v3"]
    for o in d2.offerings:
        expected = (
            prices.on_demand("Standard_D2s_v3")
            if o.capacity_type == "on-demand"
            else prices.spot("Standard_D2s_v3")
        )
        assert o.price == expected
    unknown = Sku.from_dict(sku_json("Standard_D2ts_v6", location=REGION))  # not a known size
    assert "Standard_D2ts_v6" not in catalogue.known_skus()
    it = build_instance_types([unknown], Prices({"Standard_D2ts_v6": 0.1}, {}), region=REGION)[0]
    assert {o.price for o in it.offerings} == {MISSING_PRICE}
    assert it.offerings.available()  # priced last, still launchable
    unpriced = build_instance_types([_sku("Standard_D2s_v3")], Prices({}, {}), region=REGION)[0]
    assert {o.price for o in unpriced.offerings} == {MISSING_PRICE}


def test_ice_marks_make_offerings_unavailable_and_the_provider_rebuilds() -> None:
    clock = VirtualClock()
    unavailable = UnavailableOfferings(clock)
    provider = InstanceTypeProvider(
        REGION, _prices(), clock=clock, skus=_skus(), unavailable=unavailable
    )
    before = {t.name: t for t in provider.list()}["Standard_D2s_v3"]
    assert {t.name: t for t in provider.list()}["Standard_D2s_v3"] is before  # cached
    for zone in {o.zone for o in before.offerings}:
        unavailable.mark("Standard_D2s_v3", zone, "spot", "test")
    unavailable.mark("Standard_D2s_v3", f"{REGION}-1", "on-demand", "test")
    after = {t.name: t for t in provider.list()}["Standard_D2s_v3"]
    assert after is not before
    assert _values(after, core_labels.CAPACITY_TYPE_LABEL_KEY) == {"on-demand"}
    assert f"{REGION}-1" not in _values(after, core_labels.LABEL_TOPOLOGY_ZONE)
    assert not [o for o in after.offerings.available() if o.capacity_type == "spot"]
    other = {t.name: t for t in provider.list()}["Standard_D4s_v3"]
    assert _values(other, core_labels.CAPACITY_TYPE_LABEL_KEY) == {"on-demand", "spot"}


def test_provider_caches_per_nodeclass_and_replaces_skus() -> None:
    clock = VirtualClock()
    provider = InstanceTypeProvider(REGION, _prices(), clock=clock, skus=_skus())
    first = provider.list(_nodeclass(maxPods=40))
    assert provider.list(_nodeclass(maxPods=40))[0] is first[0]
    other = provider.list(_nodeclass(maxPods=50))
    assert other[0].capacity[res.PODS] == 50 * 1000
    assert provider.get("Standard_D2s_v3") is not None
    assert provider.get("Standard_A0") is None  # filtered out
    assert provider.update_skus([_sku("Standard_D2s_v3")])
    assert [t.name for t in provider.list(_nodeclass(maxPods=40))] == ["Standard_D2s_v3"]
    assert not provider.update_skus([_sku("Standard_D2s_v3")])
