"""Instance types (karpenter_gcp.instancetypes): GKE's reservations, capacity from the
machine type and the NodeClass, upstream's labels, offerings per listed zone and capacity
type, and the provider's cache following ICE marks, prices and new machine types."""

from __future__ import annotations

import math

import pytest
from karpenter_gcp import labels as gcp
from karpenter_gcp.instancetypes import (
    DEFAULT_MAX_PODS,
    RESOURCE_NVIDIA_GPU,
    InstanceTypeProvider,
    build_instance_type,
    memory_capacity,
    reserved_cpu_millis,
    reserved_ephemeral_storage_gib,
    reserved_memory_mib,
)
from karpenter_gcp.machinetypes import Accelerator, MachineType

from karpenter_core.plugin_api import (
    DOES_NOT_EXIST,
    InstanceType,
    UnavailableOfferings,
    VirtualClock,
    labels,
    resources,
)

MI = 1024 * 1024
GI = 1024 * MI
ZONES = ("us-central1-a", "us-central1-b", "us-central1-c")


class Prices:
    """A price source the tests set (the provider only needs the two lookups)."""

    def __init__(self, on_demand: dict[str, float], spot: dict[str, float] | None = None) -> None:
        self.on_demand_prices = dict(on_demand)
        self.spot_prices = dict(spot or {})
        self.version = 0

    def on_demand(self, machine_type: str) -> float | None:
        return self.on_demand_prices.get(machine_type)

    def spot(self, machine_type: str) -> float | None:
        return self.spot_prices.get(machine_type)

    def set(self, name: str, on_demand: float) -> None:
        self.on_demand_prices[name] = on_demand
        self.version += 1


def n2(
    name: str = "n2-standard-4", cpus: int = 4, memory_mb: int = 16384, **kw: object
) -> MachineType:
    return MachineType(name, cpus, memory_mb, zones=kw.pop("zones", ZONES), **kw)  # type: ignore[arg-type]


def values(it: InstanceType, key: str) -> set[str]:
    req = it.requirements.get(key)
    return set(req.values)


def build(mt: MachineType, prices: Prices | None = None, **kw: object) -> InstanceType:
    prices = prices or Prices({mt.name: 0.2}, {mt.name: 0.05})
    it = build_instance_type(mt, prices, region="us-central1", **kw)  # type: ignore[arg-type]
    assert it is not None
    return it


# --- reservations ---------------------------------------------------------------------------


def test_cpu_reservation_follows_gkes_brackets() -> None:
    # 6 % of the first core, 1 % of the second, 0.5 % of cores 3-4, 0.25 % beyond.
    assert reserved_cpu_millis("n2-standard-1", 1) == 60
    assert reserved_cpu_millis("n2-standard-2", 2) == 60 + 10
    assert reserved_cpu_millis("n2-standard-4", 4) == 60 + 10 + 10
    assert reserved_cpu_millis("n2-standard-32", 32) == 60 + 10 + 10 + 70
    assert reserved_cpu_millis("e2-medium", 2) == 1060  # shared-core E2


def test_memory_reservation_follows_gkes_brackets() -> None:
    assert reserved_memory_mib(614) == 255  # below 1 GiB
    assert reserved_memory_mib(4096) == 1024
    assert reserved_memory_mib(8192) == 1024 + 819
    assert reserved_memory_mib(16384) == 1024 + 819 + 819
    assert reserved_memory_mib(262144) == 1024 + 819 + 819 + 6881 + 2621


def test_ephemeral_storage_reservation() -> None:
    assert reserved_ephemeral_storage_gib(100, 0, 0) == (10, 41)  # 35 % + 6 < 50 % < 100
    assert reserved_ephemeral_storage_gib(10, 0, 0) == (1, 5)  # 50 %
    assert reserved_ephemeral_storage_gib(500, 0, 0) == (50, 100)  # capped
    assert reserved_ephemeral_storage_gib(100, 375, 1) == (37, 50)
    assert reserved_ephemeral_storage_gib(100, 750, 2) == (75, 75)
    assert reserved_ephemeral_storage_gib(100, 3000, 8) == (300, 100)


# --- one type ---------------------------------------------------------------------------------


def test_capacity_and_overhead_without_a_nodeclass() -> None:
    it = build(n2(), vm_memory_overhead_percent=0.07)
    total = 16384 * MI
    assert it.capacity[resources.CPU] == 4000
    assert it.capacity[resources.MEMORY] == (total - int(total * 0.07)) * 1000
    assert it.capacity[resources.MEMORY] == memory_capacity(16384, 0.07) * 1000
    assert it.capacity[resources.PODS] == DEFAULT_MAX_PODS * 1000
    assert it.capacity[resources.EPHEMERAL_STORAGE] == 100 * GI * 1000
    assert it.capacity[RESOURCE_NVIDIA_GPU] == 0
    assert it.overhead.kube_reserved[resources.CPU] == reserved_cpu_millis(it.name, 4)
    assert it.overhead.kube_reserved[resources.MEMORY] == reserved_memory_mib(16384) * MI * 1000
    assert it.overhead.kube_reserved[resources.EPHEMERAL_STORAGE] == 41 * GI * 1000
    assert it.overhead.system_reserved[resources.CPU] == 100
    assert it.overhead.eviction_threshold[resources.MEMORY] == 100 * MI * 1000
    assert it.overhead.eviction_threshold[resources.EPHEMERAL_STORAGE] == 10 * GI * 1000


def test_labels_follow_upstream() -> None:
    it = build(n2())
    assert values(it, labels.LABEL_INSTANCE_TYPE) == {"n2-standard-4"}
    assert values(it, labels.LABEL_ARCH) == {"amd64"}
    assert values(it, labels.LABEL_OS) == {"linux"}
    assert values(it, labels.LABEL_TOPOLOGY_REGION) == {"us-central1"}
    assert values(it, labels.LABEL_TOPOLOGY_ZONE) == set(ZONES)
    assert values(it, gcp.LABEL_TOPOLOGY_ZONE_ID) == set(ZONES)
    assert values(it, labels.CAPACITY_TYPE_LABEL_KEY) == {"on-demand", "spot"}
    assert values(it, gcp.LABEL_INSTANCE_CPU) == {"4"}
    assert values(it, gcp.LABEL_INSTANCE_MEMORY) == {"16384"}
    assert values(it, gcp.LABEL_INSTANCE_FAMILY) == {"n2"}
    assert values(it, gcp.LABEL_INSTANCE_SHAPE) == {"standard"}
    assert values(it, gcp.LABEL_INSTANCE_GENERATION) == {"2"}
    assert values(it, gcp.LABEL_INSTANCE_SIZE) == {"4"}
    assert it.requirements.get(gcp.LABEL_INSTANCE_GPU_NAME).operator() == DOES_NOT_EXIST
    assert it.requirements.get(labels.LABEL_WINDOWS_BUILD).operator() == DOES_NOT_EXIST
    # N2 takes pd-balanced but not hyperdisk-ml (the PD CSI compatibility table).
    assert values(it, gcp.DISK_TYPE_LABEL_PREFIX + "pd-balanced") == {"true"}
    assert (
        it.requirements.get(gcp.DISK_TYPE_LABEL_PREFIX + "hyperdisk-ml").operator()
        == DOES_NOT_EXIST
    )


@pytest.mark.parametrize(
    ("name", "family", "shape", "generation", "size"),
    [
        ("e2-medium", "e2", "medium", "2", "medium"),
        ("n2d-highmem-8", "n2d", "highmem", "2", "8"),
        ("c3-standard-4-lssd", "c3", "standard", "3", "4"),
        ("c4a-highcpu-16", "c4a", "highcpu", "4", "16"),
    ],
)
def test_name_parts_become_labels(
    name: str, family: str, shape: str, generation: str, size: str
) -> None:
    it = build(n2(name))
    assert values(it, gcp.LABEL_INSTANCE_FAMILY) == {family}
    assert values(it, gcp.LABEL_INSTANCE_SHAPE) == {shape}
    assert values(it, gcp.LABEL_INSTANCE_GENERATION) == {generation}
    assert values(it, gcp.LABEL_INSTANCE_SIZE) == {size}


def test_arm_and_gpu_types() -> None:
    arm = build(n2("c4a-standard-4", architecture="ARM64"))
    assert values(arm, labels.LABEL_ARCH) == {"arm64"}
    gpu = build(
        n2("a2-highgpu-2g", 24, 174080, accelerators=(Accelerator("nvidia-tesla-a100", 2),))
    )
    assert gpu.capacity[RESOURCE_NVIDIA_GPU] == 2000
    assert values(gpu, gcp.LABEL_INSTANCE_GPU_NAME) == {"nvidia-tesla-a100"}
    assert values(gpu, gcp.LABEL_INSTANCE_GPU_COUNT) == {"2"}
    assert values(gpu, gcp.LABEL_GKE_ACCELERATOR) == {"nvidia-tesla-a100"}


def test_bundled_local_ssds_back_ephemeral_storage() -> None:
    it = build(n2("c3-standard-8-lssd", 8, 32768, local_ssd_partitions=2))
    assert it.capacity[resources.EPHEMERAL_STORAGE] == 750 * GI * 1000
    assert it.overhead.kube_reserved[resources.EPHEMERAL_STORAGE] == 75 * GI * 1000
    assert it.overhead.eviction_threshold[resources.EPHEMERAL_STORAGE] == 75 * GI * 1000


def test_the_nodeclass_sets_disks_pods_and_reservations() -> None:
    from karpenter_gcp.instancetypes import InstanceTypeParams

    nodeclass = {
        "spec": {
            "disks": [
                {"boot": True, "sizeGiB": 200, "category": "pd-balanced"},
                {"category": "local-ssd", "sizeGiB": 375},
            ],
            "kubeletConfiguration": {
                "maxPods": 64,
                "podsPerCore": 10,
                "kubeReserved": {"cpu": "250m"},
                "systemReserved": {"cpu": "50m", "memory": "100Mi"},
                "evictionHard": {"memory.available": "5%", "nodefs.available": "20Gi"},
            },
        }
    }
    params = InstanceTypeParams.of(nodeclass)
    # The NodeClass lists disks: its local SSD replaces the type's bundled ones.
    it = build(n2("c3-standard-4-lssd", local_ssd_partitions=4), params=params)
    assert it.capacity[resources.EPHEMERAL_STORAGE] == 375 * GI * 1000
    assert it.capacity[resources.PODS] == 40 * 1000  # podsPerCore x 4 vCPUs < 64
    assert it.overhead.kube_reserved[resources.CPU] == 250
    assert it.overhead.kube_reserved[resources.MEMORY] == reserved_memory_mib(16384) * MI * 1000
    assert it.overhead.system_reserved == {resources.CPU: 150, resources.MEMORY: 100 * MI * 1000}
    memory_bytes = it.capacity[resources.MEMORY] // 1000
    assert it.overhead.eviction_threshold[resources.MEMORY] == (
        math.ceil(memory_bytes * 5 / 100) * 1000
    )
    assert it.overhead.eviction_threshold[resources.EPHEMERAL_STORAGE] == 20 * GI * 1000
    big = build(n2("n2-standard-16", 16, 65536), params=params)
    assert big.capacity[resources.PODS] == 64 * 1000
    # An object with a spec mapping reads the same.
    holder = type("NodeClass", (), {"spec": nodeclass["spec"]})()
    assert InstanceTypeParams.of(holder) == params


# --- offerings ---------------------------------------------------------------------------------


def test_offerings_are_the_listed_zones_among_the_clusters_with_known_prices() -> None:
    mt = n2(zones=("us-central1-a", "us-central1-b"))
    prices = Prices({mt.name: 0.2}, {mt.name: 0.05})
    it = build_instance_type(
        mt, prices, region="us-central1", zones=("us-central1-b", "us-central1-c")
    )
    assert it is not None
    got = {
        (
            o.requirements.get(labels.LABEL_TOPOLOGY_ZONE).any(),
            o.requirements.get(labels.CAPACITY_TYPE_LABEL_KEY).any(),
            o.price,
        )
        for o in it.offerings
    }
    assert got == {("us-central1-b", "on-demand", 0.2), ("us-central1-b", "spot", 0.05)}
    on_demand_only = build_instance_type(mt, Prices({mt.name: 0.2}), region="us-central1")
    assert on_demand_only is not None
    assert values(on_demand_only, labels.CAPACITY_TYPE_LABEL_KEY) == {"on-demand"}
    assert build_instance_type(mt, Prices({}), region="us-central1") is None
    assert build_instance_type(mt, prices, region="us-central1", zones=("us-central1-f",)) is None


def test_the_provider_follows_ice_marks_prices_and_new_machine_types() -> None:
    clock = VirtualClock()
    unavailable = UnavailableOfferings(clock)
    prices = Prices({"n2-standard-4": 0.2, "n2-standard-8": 0.4}, {"n2-standard-4": 0.05})
    provider = InstanceTypeProvider(
        "us-central1", prices, clock=clock, unavailable=unavailable, machine_types=[n2()]
    )
    (it,) = provider.list(None)
    assert provider.list(None)[0] is it  # cached
    assert provider.zones == ZONES

    unavailable.mark("n2-standard-4", "us-central1-a", "spot", "ZONE_RESOURCE_POOL_EXHAUSTED")
    (marked,) = provider.list(None)
    spot_a = [
        o
        for o in marked.offerings
        if o.requirements.get(labels.LABEL_TOPOLOGY_ZONE).any() == "us-central1-a"
        and o.requirements.get(labels.CAPACITY_TYPE_LABEL_KEY).any() == "spot"
    ]
    assert [o.available for o in spot_a] == [False]
    assert values(marked, labels.LABEL_TOPOLOGY_ZONE) == set(ZONES)  # on-demand still there

    prices.set("n2-standard-4", 0.3)
    (repriced,) = provider.list(None)
    assert {
        o.price
        for o in repriced.offerings
        if o.requirements.get(labels.CAPACITY_TYPE_LABEL_KEY).any() == "on-demand"
    } == {0.3}

    assert provider.update_machine_types([n2(), n2("n2-standard-8", 8, 32768)]) is True
    assert provider.update_machine_types([n2("n2-standard-8", 8, 32768), n2()]) is False
    assert [t.name for t in provider.list(None)] == ["n2-standard-4", "n2-standard-8"]
    assert provider.get("n2-standard-8") is not None and provider.get("nope") is None

    assert provider.update_zones(["us-central1-b"]) is True
    assert {z for t in provider.list(None) for z in values(t, labels.LABEL_TOPOLOGY_ZONE)} == {
        "us-central1-b"
    }


def test_the_provider_caches_per_nodeclass_parameters() -> None:
    clock = VirtualClock()
    provider = InstanceTypeProvider(
        "us-central1", Prices({"n2-standard-4": 0.2}), clock=clock, machine_types=[n2()]
    )
    default = provider.list(None)[0]
    pods = provider.list({"spec": {"kubeletConfiguration": {"maxPods": 30}}})[0]
    assert default.capacity[resources.PODS] == DEFAULT_MAX_PODS * 1000
    assert pods.capacity[resources.PODS] == 30 * 1000
    assert provider.list(None)[0] is default


def test_a_parsed_gcenodeclass_is_read_through_its_spec() -> None:
    from karpenter_gcp.instancetypes import InstanceTypeParams
    from karpenter_gcp.nodeclass import GCENodeClass

    nodeclass = GCENodeClass.from_dict(
        {
            "apiVersion": "karpenter.k8s.gcp/v1alpha1",
            "kind": "GCENodeClass",
            "metadata": {"name": "default"},
            "spec": {
                "imageSelectorTerms": [{"alias": "ContainerOptimizedOS@latest"}],
                "disks": [{"boot": True, "sizeGiB": 50, "category": "pd-balanced"}],
                "kubeletConfiguration": {"maxPods": 32},
            },
        }
    )
    params = InstanceTypeParams.of(nodeclass)
    assert (params.boot_disk_gib, params.max_pods, params.disks_configured) == (50, 32, True)
    it = build(n2(), params=params)
    assert it.capacity[resources.EPHEMERAL_STORAGE] == 50 * GI * 1000
    assert it.capacity[resources.PODS] == 32 * 1000
