"""EC2 instance types as Karpenter sees them: requirements, capacity and overhead.

:func:`describe_catalogue` reads what EC2 sells in the region (``DescribeInstanceTypes``,
``DescribeInstanceTypeOfferings``, ``DescribeAvailabilityZones``);
:func:`build_instance_type` turns one ``InstanceTypeInfo`` (boto3's dict, unchanged) into
an :class:`InstanceType` for one NodeClass's settings, following upstream
``pkg/providers/instancetype/types.go``; :class:`InstanceTypeProvider` caches both and
attaches offerings (zones x capacity types, priced, ICE-aware) on every call.

What the numbers mean (spec §1.3), for an ``m5.large`` with AL2023:

- memory: 8192 MiB less the VM overhead (7.5 %, rounded up) = 7577 Mi; arm64 loses a
  further 64 MiB of CMA memory first;
- pods: ENI-limited, ``ENIs x (IPv4 per ENI - 1) + 2`` = 3 x 9 + 2 = 29 (Windows: 110);
- kube-reserved: memory ``11 x pods + 255`` MiB = 574 Mi, CPU 6 % of the first core,
  1 % of the second, 0.5 % of the next two, 0.25 % beyond = 70m; ephemeral 1Gi;
- eviction threshold: 100Mi memory, 10 % of ephemeral storage;
- allocatable: 1930m CPU and 6903 Mi memory.

Data upstream takes from generated tables is taken from ``DescribeInstanceTypes`` where
EC2 reports it and left out where it does not: the network-bandwidth label is the sum of
the network cards' ``BaselineBandwidthInGbps`` (in Mbit/s, as upstream's table) and is
absent when EC2 gives no baseline; ``vpc.amazonaws.com/pod-eni`` (ENI trunking, known
only from the VPC resource controller's table) comes from :mod:`karpenter_aws.network`;
``vpc.amazonaws.com/PrivateIPv4Address`` on Windows is ``Ipv4AddressesPerInterface - 1``,
which is what that table holds.
"""

from __future__ import annotations

import builtins
import functools
import logging
import math
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import attrs
from attrs import field, frozen

from karpenter_aws import labels as aws_labels
from karpenter_aws import network
from karpenter_aws.amifamily import AMIFamily, get_family
from karpenter_aws.capacityreservation import CapacityReservation, CapacityReservationProvider
from karpenter_aws.clients import AWSClients
from karpenter_aws.metrics import record_instance_type
from karpenter_aws.nodeclass import EC2NodeClass
from karpenter_aws.offerings import PriceSource, build_offerings, compatible_with_ami_family
from karpenter_aws.placementgroup import PlacementGroup, PlacementGroupProvider, supports_strategy
from karpenter_aws.pricing import describe_error
from karpenter_aws.settings import AWSSettings
from karpenter_core.plugin_api import (
    DOES_NOT_EXIST,
    IN,
    Clock,
    InstanceType,
    InstanceTypeOverhead,
    Offerings,
    QuantityError,
    Requirement,
    Requirements,
    UnavailableOfferings,
    parse_quantity,
)
from karpenter_core.plugin_api import labels as core_labels
from karpenter_core.plugin_api import resources as res

__all__ = [
    "CATALOGUE_TTL",
    "DEFAULT_PODS",
    "DISCOVERED_CAPACITY_TTL",
    "INSTANCE_TYPES_TTL",
    "MEMORY_AVAILABLE",
    "NODEFS_AVAILABLE",
    "BlockDeviceMappingLike",
    "Catalogue",
    "CatalogueError",
    "InstanceTypeError",
    "InstanceTypeProvider",
    "KubeletLike",
    "NetworkInterfaceLike",
    "build_instance_type",
    "describe_catalogue",
    "eni_limited_pods",
]

log = logging.getLogger("karpenter.aws.instancetypes")

_MI = 1024 * 1024
_GI = 1024 * _MI
_MILLI = 1000

# `m5.large` -> ("m", "5"); `u-6tb1.metal` -> ("u", "1"); `m7i-flex.large` -> ("m", "7")
_INSTANCE_TYPE_SCHEME = re.compile(r"(^[a-z]+)(-[0-9]+tb)?([0-9]+).*\.")

_ARCHITECTURES = {"x86_64": "amd64", "arm64": "arm64"}

_RESOURCE_NVIDIA_GPU = "nvidia.com/gpu"
_RESOURCE_AMD_GPU = "amd.com/gpu"
_RESOURCE_HABANA_GAUDI = "habana.ai/gaudi"
_RESOURCE_NEURON = "aws.amazon.com/neuron"
_RESOURCE_NEURON_CORE = "aws.amazon.com/neuroncore"
_RESOURCE_EFA = "vpc.amazonaws.com/efa"
_RESOURCE_PRIVATE_IPV4 = "vpc.amazonaws.com/PrivateIPv4Address"

_GPU_RESOURCES = {
    "NVIDIA": _RESOURCE_NVIDIA_GPU,
    "AMD": _RESOURCE_AMD_GPU,
    "Habana": _RESOURCE_HABANA_GAUDI,
}

MEMORY_AVAILABLE = "memory.available"
NODEFS_AVAILABLE = "nodefs.available"

DEFAULT_PODS = 110
INSTANCE_STORE_POLICY_RAID0 = "RAID0"


class CatalogueError(RuntimeError):
    """EC2's catalogue could not be read, or a NodeClass has nothing to build types for."""


class InstanceTypeError(CatalogueError, ValueError):
    """An instance type cannot be built for a NodeClass (a bad kubelet value, say).

    A :class:`CatalogueError` too: for callers, the NodeClass's types cannot be listed."""


def _ephemeral_default_size(family: AMIFamily) -> int:
    """Bytes of the family's default ephemeral volume (upstream ``DefaultEBS``, 20Gi, when
    the family defines none, as Custom)."""
    for bdm in family.default_block_device_mappings:
        if bdm.device_name == family.ephemeral_device and bdm.volume_size is not None:
            return bdm.volume_size
    return 20 * _GI


def _eni_limited_memory_overhead(family: AMIFamily) -> bool:
    """Whether kube-reserved memory follows ENI-limited pods rather than max-pods.

    Upstream's default feature flags (AL2, AL2023, Custom) say yes; Bottlerocket and
    Windows size it from the pods they actually run (spec §1.3). The family says which.
    """
    return family.eni_limited_memory_overhead


# --- NodeClass views (the EC2NodeClass model provides these attributes) ---------------------


class KubeletLike(Protocol):
    """The scheduling-relevant part of ``spec.kubelet``."""

    @property
    def max_pods(self) -> int | None: ...
    @property
    def pods_per_core(self) -> int | None: ...
    @property
    def kube_reserved(self) -> Mapping[str, str]: ...
    @property
    def system_reserved(self) -> Mapping[str, str]: ...
    @property
    def eviction_hard(self) -> Mapping[str, str]: ...


class BlockDeviceMappingLike(Protocol):
    """One ``spec.blockDeviceMappings`` entry; ``volume_size`` in bytes."""

    @property
    def device_name(self) -> str | None: ...
    @property
    def root_volume(self) -> bool: ...
    @property
    def volume_size(self) -> int | None: ...


class NetworkInterfaceLike(Protocol):
    """One ``spec.networkInterfaces`` entry."""

    @property
    def network_card_index(self) -> int: ...
    @property
    def interface_type(self) -> str: ...


# --- the catalogue ---------------------------------------------------------------------------


def _freeze_zones(value: Mapping[str, Iterable[str]]) -> dict[str, frozenset[str]]:
    return {k: frozenset(v) for k, v in value.items()}


@frozen
class Catalogue:
    """What EC2 sells in the region: type infos by name, their zones, zone names -> ids."""

    region: str
    infos: Mapping[str, Mapping[str, Any]]
    zones_by_type: Mapping[str, frozenset[str]] = field(converter=_freeze_zones)
    zone_ids: Mapping[str, str]

    all_zones: frozenset[str] = field(init=False)
    """Every zone some instance type is offered in."""

    def __attrs_post_init__(self) -> None:
        zones: frozenset[str] = frozenset().union(*self.zones_by_type.values())
        object.__setattr__(self, "all_zones", zones)

    def fingerprint(self) -> tuple[Any, ...]:
        """Changes when the set of types or their zones changes (cached types are then stale)."""
        return (
            tuple(sorted(self.infos)),
            tuple(sorted((k, tuple(sorted(v))) for k, v in self.zones_by_type.items())),
        )


_DESCRIBE_FILTERS = [
    {"Name": "supported-virtualization-type", "Values": ["hvm"]},
    {"Name": "processor-info.supported-architecture", "Values": ["x86_64", "arm64"]},
]


def describe_catalogue(
    clients: AWSClients, instance_types: Sequence[str] | None = None
) -> Catalogue:
    """Read the region's instance types (hvm, x86_64/arm64), their zones and zone ids;
    only ``instance_types`` when given (a catalogue restricted to a known set).

    Raises :class:`CatalogueError` naming the call that failed.
    """
    ec2 = clients.ec2
    infos: dict[str, Mapping[str, Any]] = {}
    try:
        if instance_types is None:
            pages = ec2.get_paginator("describe_instance_types").paginate(
                Filters=_DESCRIBE_FILTERS, PaginationConfig={"PageSize": 100}
            )
        else:
            names = sorted(set(instance_types))
            pages = (  # EC2 takes at most 100 names per call
                ec2.describe_instance_types(
                    InstanceTypes=names[i : i + 100], Filters=_DESCRIBE_FILTERS
                )
                for i in range(0, len(names), 100)
            )
        for page in pages:
            for info in page.get("InstanceTypes", []):
                infos[info["InstanceType"]] = info
    except Exception as err:  # boto3 raises many kinds; all mean "no catalogue"
        raise CatalogueError(f"describing instance types: {describe_error(err)}") from err
    zones_by_type: dict[str, set[str]] = {}
    try:
        pages = ec2.get_paginator("describe_instance_type_offerings").paginate(
            LocationType="availability-zone", PaginationConfig={"PageSize": 1000}
        )
        for page in pages:
            for offering in page.get("InstanceTypeOfferings", []):
                if offering["InstanceType"] in infos:
                    zones_by_type.setdefault(offering["InstanceType"], set()).add(
                        offering["Location"]
                    )
    except Exception as err:
        raise CatalogueError(f"describing instance type offerings: {describe_error(err)}") from err
    try:
        zones = ec2.describe_availability_zones().get("AvailabilityZones", [])
    except Exception as err:
        raise CatalogueError(f"describing availability zones: {describe_error(err)}") from err
    zone_ids = {z["ZoneName"]: z["ZoneId"] for z in zones if z.get("ZoneName") and z.get("ZoneId")}
    if not infos:
        raise CatalogueError("describing instance types: EC2 returned none")
    return Catalogue(
        region=clients.region, infos=infos, zones_by_type=zones_by_type, zone_ids=zone_ids
    )


# --- reading one InstanceTypeInfo --------------------------------------------------------------


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else ()


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _kebab(text: str) -> str:
    return text.replace(" ", "-").lower()


def _architecture(info: Mapping[str, Any]) -> str:
    archs = _list(_dict(info.get("ProcessorInfo")).get("SupportedArchitectures"))
    for arch in archs:
        if arch in _ARCHITECTURES:
            return _ARCHITECTURES[arch]
    return str(list(archs))  # unrecognised: nothing will select it, but it reads clearly


def _vcpus(info: Mapping[str, Any]) -> int:
    return _int(_dict(info.get("VCpuInfo")).get("DefaultVCpus"))


def _memory_mib(info: Mapping[str, Any]) -> int:
    return _int(_dict(info.get("MemoryInfo")).get("SizeInMiB"))


def _default_card(info: Mapping[str, Any]) -> Mapping[str, Any]:
    network = _dict(info.get("NetworkInfo"))
    cards = _list(network.get("NetworkCards"))
    index = _int(network.get("DefaultNetworkCardIndex"))
    for card in cards:
        if _dict(card).get("NetworkCardIndex") == index:
            return _dict(card)
    return _dict(cards[index]) if index < len(cards) else {}


def eni_limited_pods(
    info: Mapping[str, Any],
    reserved_enis: int = 0,
    network_interfaces: Sequence[NetworkInterfaceLike] | None = None,
) -> int:
    """Pods the VPC CNI can address: usable ENIs x (IPv4 per ENI - 1) + 2.

    Only the default network card's ENIs count; reserved ENIs and EFA-only interfaces on
    card 0 take theirs away.
    """
    network = _dict(info.get("NetworkInfo"))
    enis = _int(_default_card(info).get("MaximumNetworkInterfaces")) or _int(
        network.get("MaximumNetworkInterfaces")
    )
    efa_only = sum(
        1
        for nic in network_interfaces or ()
        if nic.network_card_index == 0 and nic.interface_type == "efa-only"
    )
    usable = max(enis - reserved_enis - efa_only, 0)
    if usable == 0:
        return 0
    per_eni = _int(network.get("Ipv4AddressesPerInterface"))
    return max(usable * (per_eni - 1) + 2, 0)


def _memory_capacity(info: Mapping[str, Any], overhead_percent: float) -> int:
    """Milli-bytes of memory a node of this type reports."""
    mib = _memory_mib(info)
    archs = _list(_dict(info.get("ProcessorInfo")).get("SupportedArchitectures"))
    if archs and archs[0] == "arm64":
        mib -= 64  # Graviton reserves CMA memory the kernel cannot hand out
    mib -= math.ceil(mib * overhead_percent)
    return max(mib, 0) * _MI * _MILLI


def _pods(
    info: Mapping[str, Any],
    traits: AMIFamily,
    max_pods: int | None,
    pods_per_core: int | None,
    reserved_enis: int,
    network_interfaces: Sequence[NetworkInterfaceLike] | None,
) -> int:
    if max_pods is not None:
        count = max_pods
    elif traits.eni_limited_pods:
        count = eni_limited_pods(info, reserved_enis, network_interfaces)
    else:
        count = DEFAULT_PODS
    if pods_per_core and pods_per_core > 0 and traits.pods_per_core:
        count = min(pods_per_core * _vcpus(info), count)
    return count


def _ephemeral_storage(
    info: Mapping[str, Any],
    traits: AMIFamily,
    block_device_mappings: Sequence[BlockDeviceMappingLike],
    instance_store_policy: str | None,
) -> int:
    """Milli-bytes of ephemeral storage: RAID0 instance store, else the volume pods use."""
    if instance_store_policy == INSTANCE_STORE_POLICY_RAID0:
        total_gb = _dict(info.get("InstanceStorageInfo")).get("TotalSizeInGB")
        if isinstance(total_gb, int):
            return total_gb * 10**9 * _MILLI
    if block_device_mappings:
        for bdm in block_device_mappings:
            if bdm.root_volume and bdm.volume_size is not None:
                return bdm.volume_size * _MILLI
        if traits.ephemeral_device is None:
            # Custom AMIs: which volume pods use is unknown; the last one is the best guess.
            last = block_device_mappings[-1].volume_size
            return (last if last is not None else _ephemeral_default_size(traits)) * _MILLI
        for bdm in block_device_mappings:
            if bdm.device_name == traits.ephemeral_device and bdm.volume_size is not None:
                return bdm.volume_size * _MILLI
    return _ephemeral_default_size(traits) * _MILLI


def _cpu_reserved(vcpus: int) -> int:
    """Milli-CPU kube-reserved: a falling share of each core (Bottlerocket's and EKS's table)."""
    milli = vcpus * _MILLI
    total = 0
    for start, end, share in (
        (0, 1000, 0.06),
        (1000, 2000, 0.01),
        (2000, 4000, 0.005),
        (4000, 1 << 31, 0.0025),
    ):
        if milli >= start:
            span = min(milli, end) - start
            total += int(span * share)
    return total


def _quantities(values: Mapping[str, str] | None, where: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, raw in (values or {}).items():
        try:
            out[name] = parse_quantity(raw)
        except QuantityError as err:
            raise InstanceTypeError(f"{where}.{name}: {err}") from None
    return out


def _eviction_signal(capacity: int, value: str, where: str) -> int:
    """Milli-units an eviction signal holds back: a percentage of capacity or a quantity."""
    if isinstance(value, str) and value.endswith("%"):
        try:
            percent = float(value[:-1])
        except ValueError:
            raise InstanceTypeError(f"{where}: {value!r} is not a percentage") from None
        if not 0 <= percent <= 100:
            raise InstanceTypeError(f"{where}: {value!r} is not between 0% and 100%")
        if percent == 100:  # kubelet reads 100% as "threshold disabled"
            percent = 0
        return math.ceil(capacity / _MILLI / 100 * percent) * _MILLI
    try:
        return parse_quantity(value)
    except QuantityError as err:
        raise InstanceTypeError(f"{where}: {err}") from None


def _eviction_threshold(
    memory: int, storage: int, eviction_hard: Mapping[str, str] | None
) -> dict[str, int]:
    out = {
        res.MEMORY: 100 * _MI * _MILLI,
        res.EPHEMERAL_STORAGE: math.ceil(storage / _MILLI / 100 * 10) * _MILLI,
    }
    hard = eviction_hard or {}
    # Only evictionHard holds capacity back; evictionSoft is a warning threshold.
    if MEMORY_AVAILABLE in hard:
        out[res.MEMORY] = _eviction_signal(
            memory, hard[MEMORY_AVAILABLE], f"spec.kubelet.evictionHard.{MEMORY_AVAILABLE}"
        )
    if NODEFS_AVAILABLE in hard:
        out[res.EPHEMERAL_STORAGE] = _eviction_signal(
            storage, hard[NODEFS_AVAILABLE], f"spec.kubelet.evictionHard.{NODEFS_AVAILABLE}"
        )
    return out


def _extended_resources(
    info: Mapping[str, Any], network_interfaces: Sequence[NetworkInterfaceLike] | None
) -> dict[str, int]:
    counts: dict[str, int] = {}
    for gpu in _list(_dict(info.get("GpuInfo")).get("Gpus")):
        resource = _GPU_RESOURCES.get(str(_dict(gpu).get("Manufacturer")))
        if resource:
            counts[resource] = counts.get(resource, 0) + _int(_dict(gpu).get("Count"))
    devices = _list(_dict(info.get("NeuronInfo")).get("NeuronDevices"))
    if devices:
        counts[_RESOURCE_NEURON] = sum(_int(_dict(d).get("Count")) for d in devices)
        first = _dict(devices[0])
        counts[_RESOURCE_NEURON_CORE] = _int(first.get("Count")) * _int(
            _dict(first.get("CoreInfo")).get("Count")
        )
    if network_interfaces is not None:
        counts[_RESOURCE_EFA] = sum(
            1 for nic in network_interfaces if nic.interface_type == "efa-only"
        )
    else:
        counts[_RESOURCE_EFA] = _int(
            _dict(_dict(info.get("NetworkInfo")).get("EfaInfo")).get("MaximumEfaInterfaces")
        )
    return {k: v * _MILLI for k, v in counts.items() if v > 0}


def _go_bool(value: Any) -> str:
    return "true" if value is True else "false"


def _network_bandwidth_mbps(info: Mapping[str, Any]) -> int | None:
    cards = [_dict(c) for c in _list(_dict(info.get("NetworkInfo")).get("NetworkCards"))]
    baselines: list[float] = [
        float(c["BaselineBandwidthInGbps"])
        for c in cards
        if isinstance(c.get("BaselineBandwidthInGbps"), int | float)
    ]
    if not baselines:
        return None
    return math.floor(sum(baselines) * 1000 + 0.5)


_OPTIONAL_KEYS = (
    aws_labels.LABEL_INSTANCE_CPU_MANUFACTURER,
    aws_labels.LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ,
    aws_labels.LABEL_INSTANCE_EBS_BANDWIDTH,
    aws_labels.LABEL_INSTANCE_NETWORK_BANDWIDTH,
    aws_labels.LABEL_INSTANCE_CATEGORY,
    aws_labels.LABEL_INSTANCE_CAPABILITY_FLEX,
    aws_labels.LABEL_INSTANCE_FAMILY,
    aws_labels.LABEL_INSTANCE_GENERATION,
    aws_labels.LABEL_INSTANCE_LOCAL_NVME,
    aws_labels.LABEL_INSTANCE_SIZE,
    aws_labels.LABEL_INSTANCE_GPU_NAME,
    aws_labels.LABEL_INSTANCE_GPU_MANUFACTURER,
    aws_labels.LABEL_INSTANCE_GPU_COUNT,
    aws_labels.LABEL_INSTANCE_GPU_MEMORY,
    aws_labels.LABEL_INSTANCE_ACCELERATOR_NAME,
    aws_labels.LABEL_INSTANCE_ACCELERATOR_MANUFACTURER,
    aws_labels.LABEL_INSTANCE_ACCELERATOR_COUNT,
    aws_labels.LABEL_WINDOWS_BUILD,
    aws_labels.LABEL_CAPACITY_RESERVATION_ID,
    aws_labels.LABEL_CAPACITY_RESERVATION_TYPE,
    aws_labels.LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE,
)


def _requirements(
    info: Mapping[str, Any],
    *,
    region: str,
    zones: frozenset[str],
    zone_ids: Mapping[str, str],
    traits: AMIFamily,
) -> Requirements:
    name = str(info.get("InstanceType", ""))
    arch = _architecture(info)
    capacity_types = [
        uc
        for uc in _list(info.get("SupportedUsageClasses"))
        if uc in (core_labels.CAPACITY_TYPE_ON_DEMAND, core_labels.CAPACITY_TYPE_SPOT)
    ]
    # Windows AMIs exist for amd64 only: an arm64 type gets no OS at all, so nothing selects it.
    os_values = ["linux"] if traits.os != "windows" else (["windows"] if arch == "amd64" else [])
    processor = _dict(info.get("ProcessorInfo"))
    network = _dict(info.get("NetworkInfo"))
    values: dict[str, list[str]] = {
        core_labels.LABEL_INSTANCE_TYPE: [name],
        core_labels.LABEL_ARCH: [arch],
        core_labels.LABEL_OS: os_values,
        core_labels.LABEL_TOPOLOGY_ZONE: sorted(zones),
        core_labels.LABEL_TOPOLOGY_REGION: [region],
        core_labels.CAPACITY_TYPE_LABEL_KEY: capacity_types,
        aws_labels.LABEL_INSTANCE_CPU: [str(_vcpus(info))],
        aws_labels.LABEL_INSTANCE_MEMORY: [str(_memory_mib(info))],
        aws_labels.LABEL_INSTANCE_HYPERVISOR: [str(info.get("Hypervisor") or "")],
        aws_labels.LABEL_INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED: [
            _go_bool(network.get("EncryptionInTransitSupported"))
        ],
        aws_labels.LABEL_INSTANCE_NITRO_ENCLAVES_SUPPORTED: [
            _go_bool(info.get("NitroEnclavesSupport") == "supported")
        ],
        aws_labels.LABEL_INSTANCE_TENANCY: ["default", "dedicated"],
    }
    ids = sorted({zone_ids[z] for z in zones if zone_ids.get(z)})
    if ids:
        # Absent when the NodeClass's subnets carry no zone ids yet.
        values[aws_labels.LABEL_TOPOLOGY_ZONE_ID] = ids

    def put(key: str, value: Any) -> None:
        values[key] = [str(value)]

    match = _INSTANCE_TYPE_SCHEME.match(name)
    if match:
        put(aws_labels.LABEL_INSTANCE_CATEGORY, match.group(1))
        put(aws_labels.LABEL_INSTANCE_GENERATION, match.group(3))
    parts = name.split(".")
    if len(parts) == 2:
        put(aws_labels.LABEL_INSTANCE_FAMILY, parts[0])
        put(aws_labels.LABEL_INSTANCE_SIZE, parts[1])
    put(aws_labels.LABEL_INSTANCE_CAPABILITY_FLEX, _go_bool("-flex" in parts[0]))
    storage = _dict(info.get("InstanceStorageInfo"))
    if storage.get("NvmeSupport") not in (None, "unsupported") and isinstance(
        storage.get("TotalSizeInGB"), int
    ):
        put(aws_labels.LABEL_INSTANCE_LOCAL_NVME, storage["TotalSizeInGB"])
    bandwidth = _network_bandwidth_mbps(info)
    if bandwidth is not None:
        put(aws_labels.LABEL_INSTANCE_NETWORK_BANDWIDTH, bandwidth)
    gpus = _list(_dict(info.get("GpuInfo")).get("Gpus"))
    if len(gpus) == 1:
        gpu = _dict(gpus[0])
        put(aws_labels.LABEL_INSTANCE_GPU_NAME, _kebab(str(gpu.get("Name", ""))))
        put(aws_labels.LABEL_INSTANCE_GPU_MANUFACTURER, _kebab(str(gpu.get("Manufacturer", ""))))
        put(aws_labels.LABEL_INSTANCE_GPU_COUNT, _int(gpu.get("Count")))
        put(
            aws_labels.LABEL_INSTANCE_GPU_MEMORY,
            _int(_dict(gpu.get("MemoryInfo")).get("SizeInMiB")),
        )
    neuron = _list(_dict(info.get("NeuronInfo")).get("NeuronDevices"))
    accelerators = _list(_dict(info.get("InferenceAcceleratorInfo")).get("Accelerators"))
    if len(accelerators) == 1 and not info.get("NeuronInfo"):
        acc = _dict(accelerators[0])
        put(aws_labels.LABEL_INSTANCE_ACCELERATOR_NAME, _kebab(str(acc.get("Name", ""))))
        put(
            aws_labels.LABEL_INSTANCE_ACCELERATOR_MANUFACTURER,
            _kebab(str(acc.get("Manufacturer", ""))),
        )
        put(aws_labels.LABEL_INSTANCE_ACCELERATOR_COUNT, _int(acc.get("Count")))
    if len(neuron) == 1:
        device = _dict(neuron[0])
        put(aws_labels.LABEL_INSTANCE_ACCELERATOR_NAME, _kebab(str(device.get("Name", ""))))
        put(aws_labels.LABEL_INSTANCE_ACCELERATOR_MANUFACTURER, "aws")
        put(aws_labels.LABEL_INSTANCE_ACCELERATOR_COUNT, _int(device.get("Count")))
    if traits.windows_build is not None:
        put(aws_labels.LABEL_WINDOWS_BUILD, traits.windows_build)
    if processor.get("Manufacturer"):
        put(aws_labels.LABEL_INSTANCE_CPU_MANUFACTURER, _kebab(str(processor["Manufacturer"])))
    clock = processor.get("SustainedClockSpeedInGhz")
    if isinstance(clock, int | float) and not isinstance(clock, bool):
        put(aws_labels.LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ, math.floor(clock * 1000 + 0.5))
    ebs = _dict(info.get("EbsInfo"))
    optimized = _dict(ebs.get("EbsOptimizedInfo"))
    if ebs.get("EbsOptimizedSupport") == "default" and "MaximumBandwidthInMbps" in optimized:
        put(aws_labels.LABEL_INSTANCE_EBS_BANDWIDTH, _int(optimized["MaximumBandwidthInMbps"]))

    reqs = Requirements()
    for key, absent in _ABSENT.items():
        if key not in values:
            reqs.add(absent)
    for key, vals in values.items():
        reqs.add(_requirement_in(key, tuple(vals)))
    return reqs


_ABSENT = {key: Requirement.new(key, DOES_NOT_EXIST) for key in _OPTIONAL_KEYS}


@functools.lru_cache(maxsize=65536)
def _requirement_in(key: str, values: tuple[str, ...]) -> Requirement:
    # Requirements are immutable; most values (region, zones, sizes) repeat across types.
    return Requirement.new(key, IN, values)


def build_instance_type(
    info: Mapping[str, Any],
    *,
    region: str,
    zones: frozenset[str],
    zone_ids: Mapping[str, str],
    ami_family: str,
    kubelet: KubeletLike | None,
    block_device_mappings: Sequence[BlockDeviceMappingLike] = (),
    settings: AWSSettings,
    offerings: Offerings | None = None,
    offering_zones: frozenset[str] | None = None,
    instance_store_policy: str | None = None,
    network_interfaces: Sequence[NetworkInterfaceLike] | None = None,
) -> InstanceType:
    """One EC2 ``InstanceTypeInfo`` as an :class:`InstanceType` for a NodeClass.

    ``zones``/``zone_ids`` are the NodeClass's subnet zones (and their ids);
    ``offering_zones`` the zones EC2 offers the type in (all of ``zones`` when None). The
    type's zone requirement is their intersection. Raises :class:`InstanceTypeError`
    naming the field when a kubelet value cannot be used.
    """
    name = str(info.get("InstanceType", ""))
    if not name:
        raise InstanceTypeError("instance type info without an InstanceType name")
    traits = get_family(ami_family)
    available_zones = zones if offering_zones is None else zones & offering_zones
    requirements = _requirements(
        info, region=region, zones=available_zones, zone_ids=zone_ids, traits=traits
    )
    max_pods = kubelet.max_pods if kubelet is not None else None
    pods_per_core = kubelet.pods_per_core if kubelet is not None else None
    pods = _pods(info, traits, max_pods, pods_per_core, settings.reserved_enis, network_interfaces)
    memory = _memory_capacity(info, settings.vm_memory_overhead_percent)
    storage = _ephemeral_storage(info, traits, block_device_mappings or (), instance_store_policy)
    capacity = {
        res.CPU: _vcpus(info) * _MILLI,
        res.MEMORY: memory,
        res.EPHEMERAL_STORAGE: storage,
        res.PODS: pods * _MILLI,
        **_extended_resources(info, network_interfaces),
        **network.capacity(name),
    }
    if traits.os == "windows" and requirements.get(core_labels.LABEL_OS).has("windows"):
        per_eni = _int(_dict(info.get("NetworkInfo")).get("Ipv4AddressesPerInterface"))
        if per_eni > 1:
            capacity[_RESOURCE_PRIVATE_IPV4] = (per_eni - 1) * _MILLI

    reserved_pods = (
        eni_limited_pods(info, 0, network_interfaces)
        if _eni_limited_memory_overhead(traits)
        else pods
    )
    kube_reserved = {
        res.CPU: _cpu_reserved(_vcpus(info)),
        res.MEMORY: (11 * reserved_pods + 255) * _MI * _MILLI,
        res.EPHEMERAL_STORAGE: _GI * _MILLI,
    }
    if kubelet is not None:
        kube_reserved.update(_quantities(kubelet.kube_reserved, "spec.kubelet.kubeReserved"))
        system_reserved = _quantities(kubelet.system_reserved, "spec.kubelet.systemReserved")
        eviction_hard = kubelet.eviction_hard
    else:
        system_reserved, eviction_hard = {}, {}
    overhead = InstanceTypeOverhead(
        kube_reserved=kube_reserved,
        system_reserved=system_reserved,
        eviction_threshold=_eviction_threshold(memory, storage, eviction_hard),
    )
    return InstanceType(
        name=name,
        requirements=requirements,
        offerings=offerings if offerings is not None else Offerings(),
        capacity=capacity,
        overhead=overhead,
    )


# --- the provider ------------------------------------------------------------------------------

CATALOGUE_TTL = 12 * 60 * 60.0
"""Seconds before :meth:`InstanceTypeProvider.list` re-reads EC2's catalogue (upstream
refreshes instance types and their zones every 12 h)."""
BUNDLED_RETRY = 5 * 60.0
"""Seconds before EC2 is asked again after the bundled catalogue stood in for it."""
DISCOVERED_CAPACITY_TTL = 60 * 24 * 60 * 60.0
"""Seconds a node's observed memory capacity replaces the estimate (upstream: 60 days)."""
INSTANCE_TYPES_TTL = 5 * 60.0
"""Seconds built types stay cached per NodeClass settings (upstream: 5 min)."""


def _pricing_version(pricing: PriceSource) -> int:
    version = getattr(pricing, "version", 0)
    return version if isinstance(version, int) else 0


def _kubelet_key(kubelet: KubeletLike) -> tuple[Any, ...]:
    """What of ``spec.kubelet`` changes instance types, in a hashable, order-free form."""
    return (
        kubelet.max_pods,
        kubelet.pods_per_core,
        tuple(sorted(kubelet.kube_reserved.items())),
        tuple(sorted(kubelet.system_reserved.items())),
        tuple(sorted(kubelet.eviction_hard.items())),
    )


def _ami_key(nodeclass: EC2NodeClass) -> tuple[str, ...]:
    return tuple(sorted(a.id for a in nodeclass.amis))


def _ami_for(nodeclass: EC2NodeClass, node_labels: Mapping[str, str]) -> str | None:
    """The AMI the NodeClass launches a node with these labels from: the first (status
    order) whose requirements the labels meet, as upstream's ``MapToInstanceTypes``."""
    reqs = Requirements.from_labels(node_labels)
    for ami in nodeclass.amis:
        if reqs.is_compatible(ami.requirements, allow_undefined=core_labels.WELL_KNOWN_LABELS):
            return ami.id
    return None


@frozen
class _Built:
    """Instance types built for one NodeClass key, and when they were built."""

    at: float
    types: tuple[InstanceType, ...]


@frozen
class _Offered:
    """A type with offerings attached, valid while ICE seq and price version hold."""

    at: float
    seq: Any  # the ICE seq, with the reservation counts' version for reserved types
    prices: int
    instance_type: InstanceType


def _with_placement_group(it: InstanceType, group: PlacementGroup) -> InstanceType:
    """``it`` in ``group`` (upstream): its requirements carry the group id, and a
    partition group's partitions, so NodePools and pods can select on them and topology
    spread over partitions finds its domains."""
    reqs = it.requirements.copy()
    reqs[aws_labels.LABEL_PLACEMENT_GROUP_ID] = Requirement.new(
        aws_labels.LABEL_PLACEMENT_GROUP_ID, IN, [group.id]
    )
    if group.partitions():
        reqs[aws_labels.LABEL_PLACEMENT_GROUP_PARTITION] = Requirement.new(
            aws_labels.LABEL_PLACEMENT_GROUP_PARTITION, IN, group.partitions()
        )
    return attrs.evolve(it, requirements=reqs)


def _with_reservations(
    it: InstanceType, reservations: Sequence[CapacityReservation]
) -> InstanceType:
    """``it`` with reserved offerings: its capacity types also allow ``reserved`` and the
    reservation labels take its reservations' values instead of "does not exist" (as
    upstream), so a NodeClaim pinned to one of them still matches the type."""
    key = core_labels.CAPACITY_TYPE_LABEL_KEY
    reqs = it.requirements.copy()
    reqs[key] = Requirement.new(
        key, IN, sorted({*it.requirements.get(key).values, core_labels.CAPACITY_TYPE_RESERVED})
    )
    for label, values in (
        (aws_labels.LABEL_CAPACITY_RESERVATION_ID, {r.id for r in reservations}),
        (aws_labels.LABEL_CAPACITY_RESERVATION_TYPE, {r.reservation_type for r in reservations}),
        (
            aws_labels.LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE,
            {str(r.interruptible).lower() for r in reservations},
        ),
    ):
        reqs[label] = Requirement.new(label, IN, sorted(values))
    return attrs.evolve(it, requirements=reqs)


class InstanceTypeProvider:
    """The instance types a NodeClass can launch, with current offerings.

    The catalogue is read lazily (first :meth:`list`) and again after
    :data:`CATALOGUE_TTL` or on :meth:`refresh`; types built for a NodeClass are cached
    for :data:`INSTANCE_TYPES_TTL` keyed by everything that changes them (zones and zone
    ids, AMI family and AMIs, kubelet, block devices, instance-store policy). Offerings
    are attached on every call and rebuilt when the type's ICE sequence number or the
    prices change, so an ICE mark shows at the next :meth:`list`. Thread-safe.
    """

    def __init__(
        self,
        clients: AWSClients,
        settings: AWSSettings,
        pricing: PriceSource,
        unavailable: UnavailableOfferings,
        clock: Clock,
        *,
        catalogue: Catalogue | None = None,
        catalogue_ttl: float = CATALOGUE_TTL,
        cache_ttl: float = INSTANCE_TYPES_TTL,
        reservations: CapacityReservationProvider | None = None,
        placement_groups: PlacementGroupProvider | None = None,
    ) -> None:
        """``reservations`` gives the available counts of reserved offerings (none
        without it: every reserved offering is then unavailable); ``placement_groups``
        resolves the classes' ``placementGroupSelector`` (none: selectors are ignored)."""
        self._clients = clients
        self.reservations = reservations
        self.placement_groups = placement_groups
        self._settings = settings
        self._pricing = pricing
        self._unavailable = unavailable
        self._clock = clock
        self._catalogue_ttl = catalogue_ttl
        self._cache_ttl = cache_ttl
        self._lock = threading.RLock()
        self._catalogue = catalogue
        self._catalogue_at = clock.monotonic() if catalogue is not None else 0.0
        self._generation = 0  # bumped when the catalogue changes: every cache is stale
        self._built: dict[tuple[Any, ...], _Built] = {}
        self._offered: dict[tuple[Any, ...], _Offered] = {}
        self._missing_price_reported: set[tuple[str, str]] = set()
        # (type, AMI ids) -> (observed memory in milli-bytes, when it expires)
        self._discovered: dict[tuple[str, tuple[str, ...]], tuple[int, float]] = {}
        self._discovered_version = 0

    # --- catalogue ---------------------------------------------------------------------

    def refresh(self) -> Catalogue:
        """Re-read EC2's catalogue now; caches are flushed when it changed.

        Raises :class:`CatalogueError` (keeping the previous catalogue) when EC2 fails.
        A provider without AWS access reads the bundled catalogue instead
        (:mod:`karpenter_aws.catalogue`; a ValueError naming the bundled regions when the
        region has none).
        """
        from karpenter_aws import catalogue as bundled

        if bundled.is_offline(self._clients):
            fresh = bundled.load_catalogue(self._clients.region)
        else:
            fresh = describe_catalogue(self._clients)
        with self._lock:
            old = self._catalogue
            if old is None or old.fingerprint() != fresh.fingerprint():
                self._generation += 1
                self._built.clear()
                self._offered.clear()
                log.info(
                    "discovered %d instance types in %d zones",
                    len(fresh.infos),
                    len(fresh.all_zones),
                )
            self._catalogue = fresh
            self._catalogue_at = self._clock.monotonic()
        return fresh

    def catalogue(self) -> Catalogue:
        """The current catalogue, read from EC2 first when missing or older than its TTL."""
        with self._lock:
            catalogue = self._catalogue
            stale = (
                catalogue is None
                or self._clock.monotonic() - self._catalogue_at >= self._catalogue_ttl
            )
        if catalogue is None:
            try:
                return self.refresh()
            except CatalogueError as err:
                return self._bundled_instead(err)
        if stale:
            try:
                return self.refresh()
            except CatalogueError as err:
                log.warning("instance type refresh failed, keeping the previous catalogue: %s", err)
        return catalogue

    def _bundled_instead(self, err: CatalogueError) -> Catalogue:
        """EC2's catalogue could not be read at start-up: serve the bundled one of the
        region (when there is one) until a refresh succeeds; else ``err``."""
        from karpenter_aws import catalogue as bundled

        region = self._clients.region
        if region not in bundled.REGIONS:
            raise err
        log.warning(
            "describing instance types failed (%s); using the bundled %s catalogue until a "
            "refresh succeeds",
            err,
            region,
        )
        fallback = bundled.load_catalogue(region)
        with self._lock:
            self._catalogue = fallback
            # stale in BUNDLED_RETRY seconds: a listing then tries EC2 again
            self._catalogue_at = (
                self._clock.monotonic()
                - self._catalogue_ttl
                + min(BUNDLED_RETRY, self._catalogue_ttl)
            )
        return fallback

    def info(self, name: str) -> Mapping[str, Any] | None:
        """EC2's ``InstanceTypeInfo`` for ``name`` (e.g. for ENI limits at launch)."""
        return self.catalogue().infos.get(name)

    # --- listing -----------------------------------------------------------------------

    def list(self, nodeclass: EC2NodeClass) -> list[InstanceType]:
        """Every instance type of the region as ``nodeclass`` would launch it.

        Raises :class:`CatalogueError` when the catalogue cannot be read or the NodeClass
        has no resolved subnets, and :class:`InstanceTypeError` when its kubelet settings
        cannot be applied.
        """
        catalogue = self.catalogue()
        if not nodeclass.subnets:
            raise CatalogueError(f"EC2NodeClass {nodeclass.name!r} has no resolved subnets")
        zones = nodeclass.zones()
        zone_ids = {z: catalogue.zone_ids[z] for z in zones if catalogue.zone_ids.get(z)}
        subnet_ids: dict[str, list[str]] = {}
        for subnet in nodeclass.subnets:
            if subnet.zone_id:
                zone_ids[subnet.zone] = subnet.zone_id
            subnet_ids.setdefault(subnet.zone, []).append(subnet.id)
        key = self._key(nodeclass, zone_ids)
        group = (
            self.placement_groups.get(nodeclass.placement_group_selector)
            if self.placement_groups is not None
            else None
        )
        now = self._clock.monotonic()
        with self._lock:
            built = self._built.get(key)
            if built is None or now - built.at >= self._cache_ttl:
                self._prune(now)
                built = _Built(now, self._build_all(catalogue, nodeclass, zones, zone_ids))
                self._built[key] = built
            compatible = {
                it.name: compatible_with_ami_family(it.name, nodeclass.ami_family)
                and network.compatible_with_nodeclass(catalogue.infos[it.name], nodeclass)
                and supports_strategy(catalogue.infos[it.name], group)
                for it in built.types
            }
            missing: builtins.list[tuple[str, str]] = []
            result = [
                self._with_offerings(
                    key,
                    it,
                    now,
                    catalogue,
                    zone_ids,
                    subnet_ids,
                    compatible[it.name],
                    missing,
                    nodeclass.capacity_reservations,
                    group,
                )
                for it in built.types
            ]
            self._report_missing_prices(missing)
        return result

    def get(self, nodeclass: EC2NodeClass, name: str) -> InstanceType | None:
        """One type from :meth:`list` (None when the region has no such type)."""
        for it in self.list(nodeclass):
            if it.name == name:
                return it
        return None

    def update_capacity_from_node(
        self,
        nodeclass: EC2NodeClass,
        node_labels: Mapping[str, str],
        image_id: str,
        memory: int,
    ) -> bool:
        """Remember the memory a registered node of a type really reports (milli-bytes).

        The estimate (SizeInMiB less the VM overhead) is only that; once a node launched
        from the AMI the NodeClass would pick for its type reports its capacity, that
        figure replaces the estimate for the type and the NodeClass's AMIs, for
        :data:`DISCOVERED_CAPACITY_TTL` (upstream: 60 days). Only lower figures are
        kept, as upstream. Returns True when the remembered value changed.
        """
        name = node_labels.get(core_labels.LABEL_INSTANCE_TYPE, "")
        if not name or memory <= 0 or _ami_for(nodeclass, node_labels) != image_id:
            return False
        key = (name, _ami_key(nodeclass))
        now = self._clock.monotonic()
        with self._lock:
            known = self._discovered.get(key)
            if known is not None and known[1] > now and known[0] <= memory:
                if known[0] == memory:  # seen again: keep it for another TTL
                    self._discovered[key] = (memory, now + DISCOVERED_CAPACITY_TTL)
                return False
            self._discovered[key] = (memory, now + DISCOVERED_CAPACITY_TTL)
            self._discovered_version += 1
        log.info("discovered memory capacity of %s: %d bytes", name, memory // 1000)
        return True

    def _prune(self, now: float) -> None:
        """Forget entries past their TTL (NodeClasses that changed or went away)."""
        for k in [k for k, b in self._built.items() if now - b.at >= self._cache_ttl]:
            del self._built[k]
        for k in [k for k, o in self._offered.items() if now - o.at >= self._cache_ttl]:
            del self._offered[k]

    def _key(self, nodeclass: EC2NodeClass, zone_ids: Mapping[str, str]) -> tuple[Any, ...]:
        return (
            self._generation,
            self._discovered_version,
            tuple(sorted((z, zone_ids.get(z, "")) for z in nodeclass.zones())),
            tuple(sorted(sorted(s.id for s in nodeclass.subnets))),
            nodeclass.ami_family,
            tuple(sorted(a.id for a in nodeclass.amis)),
            _kubelet_key(nodeclass.kubelet),
            repr(nodeclass.block_device_mappings),
            nodeclass.instance_store_policy,
            nodeclass.network_interfaces,
            nodeclass.nested_virtualization,
            nodeclass.connection_tracking is not None,
        )

    def _build_all(
        self,
        catalogue: Catalogue,
        nodeclass: EC2NodeClass,
        zones: frozenset[str],
        zone_ids: Mapping[str, str],
    ) -> tuple[InstanceType, ...]:
        out = []
        amis = _ami_key(nodeclass)
        now = self._clock.monotonic()
        for name in sorted(catalogue.infos):
            it = build_instance_type(
                catalogue.infos[name],
                region=catalogue.region,
                zones=zones,
                zone_ids=zone_ids,
                ami_family=nodeclass.ami_family,
                kubelet=nodeclass.kubelet,
                block_device_mappings=nodeclass.block_device_mappings,
                settings=self._settings,
                offering_zones=catalogue.zones_by_type.get(name, frozenset()),
                instance_store_policy=nodeclass.instance_store_policy,
                network_interfaces=nodeclass.network_interfaces,
            )
            info = catalogue.infos[name]
            record_instance_type(name, _vcpus(info), _memory_mib(info))
            discovered = self._discovered.get((name, amis))
            if discovered is not None and discovered[1] > now:
                it = attrs.evolve(it, capacity={**it.capacity, res.MEMORY: discovered[0]})
            out.append(it)
        return tuple(out)

    def _with_offerings(
        self,
        key: tuple[Any, ...],
        it: InstanceType,
        now: float,
        catalogue: Catalogue,
        zone_ids: Mapping[str, str],
        subnet_ids: Mapping[str, Sequence[str]],
        compatible: bool,
        missing: builtins.list[tuple[str, str]],
        reservations: Sequence[CapacityReservation] = (),
        group: PlacementGroup | None = None,
    ) -> InstanceType:
        seq: Any = self._unavailable.seq(it.name)
        prices = _pricing_version(self._pricing)
        mine = tuple(r for r in reservations if r.instance_type == it.name)
        counts = self.reservations
        if mine:
            # reserved offerings change with the reservations and their counts
            seq = (seq, counts.version if counts is not None else 0)
        offered_key = (key, it.name, mine, group, compatible)
        cached = self._offered.get(offered_key)
        if (
            cached is not None
            and cached.seq == seq
            and cached.prices == prices
            and now - cached.at < self._cache_ttl
        ):
            return cached.instance_type
        offerings = build_offerings(
            it,
            all_zones=catalogue.all_zones,
            zone_ids=zone_ids,
            subnet_ids=subnet_ids,
            pricing=self._pricing,
            unavailable=self._unavailable,
            compatible=compatible,
            on_missing_price=lambda name, ct: missing.append((name, ct)),
            reservations=mine,
            available_count=counts.available if counts is not None else (lambda _id: 0),
            placement_group_id=group.id if group is not None else "",
            partitions=group.partitions() if group is not None else (),
        )
        offered = it.with_offerings(offerings)
        if mine:
            offered = _with_reservations(offered, mine)
        if group is not None:
            offered = _with_placement_group(offered, group)
        self._offered[offered_key] = _Offered(now, seq, prices, offered)
        return offered

    def _report_missing_prices(self, missing: Iterable[tuple[str, str]]) -> None:
        """Say once per type and capacity type why its offerings are unavailable."""
        new = sorted(set(missing) - self._missing_price_reported)
        if not new:
            return
        self._missing_price_reported.update(new)
        by_capacity_type: dict[str, list[str]] = {}
        for name, capacity_type in new:
            by_capacity_type.setdefault(capacity_type, []).append(name)
        for capacity_type, names in sorted(by_capacity_type.items()):
            shown = ", ".join(names[:10]) + (
                f" and {len(names) - 10} more" if len(names) > 10 else ""
            )
            log.warning(
                "%d instance types have no %s price (in some or all zones), so those "
                "offerings are unavailable: %s (set price-list-file, or allow pricing:GetProducts)",
                len(names),
                capacity_type,
                shown,
            )
