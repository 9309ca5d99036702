"""Azure VM sizes as Karpenter instance types (upstream ``pkg/providers/instancetype``).

Two steps, as upstream:

1. :func:`supported_skus` keeps the region's Resource SKUs AKS can run: virtual machines
   whose size name parses, not on AKS's or Karpenter's restricted lists, not restricted
   for the subscription in the region, with at least 2 vCPUs and 3.5 GiB, no
   constrained vCPUs (``M8-2ms``), not confidential (``DC*``/``EC*``), and GPU sizes only
   when AKS supports their GPU.
2. :func:`build_instance_types` turns each into an :class:`InstanceType` for one
   AKSNodeClass, dropping those the NodeClass cannot use (a GPU size its image family
   has no driver for, sizes without encryption at host or Trusted Launch when the
   NodeClass asks for them, arm64 with artifact streaming, small sizes with local DNS).

What a type carries, for ``Standard_D4s_v3`` (4 vCPUs, 16 GiB) with the defaults
(Azure CNI overlay, 128 GB OS disk, 7.5 % VM memory overhead):

- labels: ``karpenter.azure.com/sku-name=Standard_D4s_v3``, ``sku-family=D``,
  ``sku-series=Ds_v3``, ``sku-version=3``, ``sku-cpu=4``, ``sku-memory=16384`` (MiB, also
  as ``kubernetes.azure.com/sku-cpu``/``sku-memory``), ``sku-networking-accelerated``,
  ``sku-storage-premium-capable``, ``sku-storage-ephemeralos-maxsize`` (GB of the
  largest disk an ephemeral OS disk fits: NVMe, else cache, else temp disk),
  ``sku-storage-ultra-ssd`` (per offering), ``sku-hyperv-generation``, ``sku-gpu-*``
  for GPU sizes, ``kubernetes.azure.com/os-sku``, ``mode``, ``scalesetpriority``,
  ``priority``, ``cluster`` (the node resource group) and ``fips_enabled`` for FIPS;
- capacity: 4 CPUs; memory ``floor(GiB)`` GiB less ``ceil(7.5 %)`` = 15891378995 bytes;
  ephemeral storage = the OS disk size in GB (10^9); pods = ``maxPods`` or the network
  plugin's default (overlay 250, node subnet 30, none 250, kubenet/other 110);
  ``nvidia.com/gpu``/``amd.com/gpu`` = the GPUs of supported GPU sizes;
- overhead: kube-reserved CPU 6 % of the first core, 4 % of the second, 2 % of the next
  two, 1 % beyond (= 140m); memory 25 % of the first 4 GiB, 20 % of the next 4, 10 % of
  the next 8, 6 % up to 128 GiB, 2 % beyond (= 2.6 GiB = 2662Mi); system-reserved 0;
  eviction threshold ``memory.available`` 750Mi;
- offerings: per zone the SKU is unrestricted in (``<region>-<n>``, zonal placement)
  plus the regional zone ``0`` (regional placement; the only one for SKUs without
  zones), each on-demand and spot. Spot is available only when the SKU is
  ``LowPriorityCapable``; either is unavailable while the ICE cache marks it. Prices
  come from the pricing provider; a size without a price, or one not among the known
  VM sizes, costs :data:`karpenter_azure.pricing.MISSING_PRICE` so it is chosen last.

Left out (upstream has them): the per-family vCPU quota check on on-demand offerings,
and the node-observed memory capacity.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from attrs import frozen

from karpenter_azure import catalogue
from karpenter_azure import labels as az
from karpenter_azure.nodeclass import AKSNodeClass
from karpenter_azure.pricing import MISSING_PRICE
from karpenter_azure.skus import RESOURCE_TYPE_VIRTUAL_MACHINES, Sku, VMSize
from karpenter_core.plugin_api import (
    DOES_NOT_EXIST,
    IN,
    Clock,
    InstanceType,
    InstanceTypeOverhead,
    Offering,
    Offerings,
    Requirement,
    Requirements,
    UnavailableOfferings,
)
from karpenter_core.plugin_api import labels as core_labels
from karpenter_core.plugin_api import resources as res

__all__ = [
    "AKS_RESTRICTED_VM_SIZES",
    "DEFAULT_VM_MEMORY_OVERHEAD_PERCENT",
    "INSTANCE_TYPES_TTL",
    "KARPENTER_RESTRICTED_VM_SIZES",
    "REGIONAL_ZONE",
    "InstanceTypeParams",
    "InstanceTypeProvider",
    "PriceSource",
    "build_instance_type",
    "build_instance_types",
    "default_max_pods",
    "ephemeral_os_disk_max_gb",
    "gpu_manufacturer",
    "instance_type_zones",
    "kube_reserved",
    "memory_without_overhead",
    "supported_skus",
]

log = logging.getLogger("karpenter.azure.instancetypes")

_MILLI = 1000
_MI = 1024 * 1024
_GI = 1024 * _MI

REGIONAL_ZONE = "0"
"""The zone label AKS gives nodes placed without an availability zone."""
PLACEMENT_ZONAL = "zonal"
PLACEMENT_REGIONAL = "regional"

DEFAULT_VM_MEMORY_OVERHEAD_PERCENT = 0.075
"""Upstream's ``VM_MEMORY_OVERHEAD_PERCENT`` default."""
DEFAULT_OS_DISK_SIZE_GB = 128
EVICTION_MEMORY_AVAILABLE = 750 * _MI
"""kubelet's hard eviction threshold on AKS (``memory.available<750Mi``)."""

INSTANCE_TYPES_TTL = 23 * 60 * 60.0
"""Seconds built types stay cached per NodeClass parameters (upstream: 23 h)."""

AKS_RESTRICTED_VM_SIZES: frozenset[str] = frozenset(
    {
        "Standard_A0",
        "Standard_A1",
        "Standard_A1_v2",
        "Standard_B1s",
        "Standard_B1ms",
        "Standard_F1",
        "Standard_F1s",
        "Basic_A0",
        "Basic_A1",
        "Basic_A2",
        "Basic_A3",
        "Basic_A4",
    }
)
"""Sizes AKS refuses for node pools (too small)."""

KARPENTER_RESTRICTED_VM_SIZES: frozenset[str] = frozenset({"Standard_E64i_v3", "Standard_E64is_v3"})
"""Sizes known not to work with Karpenter on AKS."""

_ARCHITECTURES = {"x64": "amd64", "Arm64": "arm64"}
_UBUNTU_FAMILIES = frozenset({"Ubuntu", "Ubuntu2204", "Ubuntu2404"})
_OS_SKU = {
    "Ubuntu": "Ubuntu",
    "Ubuntu2204": "Ubuntu",
    "Ubuntu2404": "Ubuntu",
    "AzureLinux": "AzureLinux",
}
_RESOURCE_NVIDIA_GPU = "nvidia.com/gpu"
_RESOURCE_AMD_GPU = "amd.com/gpu"


class PriceSource(Protocol):
    """Where offerings get prices (:class:`karpenter_azure.pricing.PricingProvider`)."""

    def on_demand(self, sku: str) -> float | None: ...
    def spot(self, sku: str) -> float | None: ...


# --- GPU sizes ---------------------------------------------------------------------------------


def _normalize_size(name: str) -> str:
    name = name.lower()
    return name[: -len("_promo")] if name.endswith("_promo") else name


def gpu_manufacturer(name: str) -> str:
    """``nvidia`` or ``amd`` for a GPU size AKS supports, ``""`` otherwise."""
    info = catalogue.gpu_skus().get(_normalize_size(name))
    return info[0] if info else ""


def _gpu_supported_on(name: str, os_name: str) -> bool:
    info = catalogue.gpu_skus().get(_normalize_size(name))
    return info is not None and os_name in info[1]


# --- the parameters a NodeClass contributes ----------------------------------------------------


def default_max_pods(network_plugin: str, network_plugin_mode: str) -> int:
    """Pods per node when the NodeClass sets no ``maxPods``: 250 with no CNI or Azure CNI
    overlay, 30 with Azure CNI node subnet, 110 (Kubernetes' default) otherwise."""
    if network_plugin == "none":
        return 250
    if network_plugin == "azure" and network_plugin_mode == "overlay":
        return 250
    if network_plugin == "azure" and network_plugin_mode == "":
        return 30
    return 110


@frozen
class InstanceTypeParams:
    """What of an AKSNodeClass (and the cluster's settings) changes instance types; the
    cache key of :class:`InstanceTypeProvider`."""

    image_family: str = "Ubuntu"
    os_disk_size_gb: int = DEFAULT_OS_DISK_SIZE_GB
    max_pods: int = 250
    encryption_at_host: bool = False
    trusted_launch: bool = False
    gpu_mode: str = "Driver"
    artifact_streaming: bool = False
    fips: bool = False
    local_dns: bool = False

    @classmethod
    def of(
        cls,
        nodeclass: AKSNodeClass | None,
        *,
        network_plugin: str = "azure",
        network_plugin_mode: str = "overlay",
        local_dns: bool | None = None,
        max_pods_default: int | None = None,
    ) -> InstanceTypeParams:
        """The parameters of ``nodeclass`` (upstream's defaults when None). Pods are the
        NodeClass's ``maxPods``, else ``max_pods_default``, else the network plugin's
        default. Local DNS is on when the NodeClass requires it (``localDNS.mode:
        Required``) unless ``local_dns`` says otherwise (``Preferred`` depends on the
        cluster's version, which the caller resolves)."""
        pods = (
            max_pods_default
            if max_pods_default is not None
            else default_max_pods(network_plugin, network_plugin_mode)
        )
        if nodeclass is None:
            return cls(max_pods=pods, local_dns=bool(local_dns))
        if local_dns is None:
            mode = (nodeclass.spec.get("localDNS") or {}).get("mode")
            local_dns = mode == "Required"
        return cls(
            image_family=nodeclass.image_family,
            os_disk_size_gb=nodeclass.os_disk_size_gb,
            max_pods=nodeclass.max_pods if nodeclass.max_pods is not None else pods,
            encryption_at_host=nodeclass.encryption_at_host,
            trusted_launch=nodeclass.trusted_launch,
            gpu_mode=nodeclass.gpu_mode,
            artifact_streaming=nodeclass.artifact_streaming,
            fips=nodeclass.fips,
            local_dns=local_dns,
        )


# --- SKU filtering ---------------------------------------------------------------------------


def _confidential(size: str) -> bool:
    return size.startswith(("DC", "EC"))


def _supported_by_aks(sku: Sku, vm_size: VMSize) -> bool:
    vcpus = sku.vcpus
    memory = sku.memory_gib
    gpus = sku.gpus
    return (
        vcpus is not None
        and vcpus >= 2
        and memory is not None
        and memory >= 3.5
        and sku.name not in AKS_RESTRICTED_VM_SIZES
        and not (gpus is not None and gpus > 0 and not gpu_manufacturer(sku.name))
        and vm_size.cpus_constrained is None
        and not _confidential(sku.size)
    )


def supported_skus(skus: Iterable[Sku], region: str) -> list[Sku]:
    """The virtual-machine SKUs of ``region`` AKS can run (see the module docstring),
    sorted by name; duplicate names keep the first."""
    out: dict[str, Sku] = {}
    for sku in skus:
        if sku.resource_type.lower() != RESOURCE_TYPE_VIRTUAL_MACHINES.lower():
            continue
        if sku.name in AKS_RESTRICTED_VM_SIZES or sku.name in KARPENTER_RESTRICTED_VM_SIZES:
            continue
        vm_size = sku.vm_size()
        if vm_size is None:
            log.debug("skipping SKU %s: size %r does not parse", sku.name, sku.size)
            continue
        if sku.has_location_restriction(region) or not _supported_by_aks(sku, vm_size):
            continue
        out.setdefault(sku.name, sku)
    return [out[name] for name in sorted(out)]


def _supported_by_nodeclass(sku: Sku, arch: str, params: InstanceTypeParams) -> bool:
    name = sku.name
    is_gpu = bool(gpu_manufacturer(name))
    if is_gpu:
        if params.image_family in _UBUNTU_FAMILIES:
            if not _gpu_supported_on(name, "ubuntu"):
                return False
        elif params.image_family == "AzureLinux":
            if not (
                _gpu_supported_on(name, "azurelinux") or _gpu_supported_on(name, "azurelinux3")
            ):
                return False
        else:
            return False
        # Driver mode installs NVIDIA's driver; AMD sizes have no driver install yet.
        if params.gpu_mode == "Driver" and gpu_manufacturer(name) != "nvidia":
            return False
    if params.encryption_at_host and not sku.encryption_at_host_supported:
        return False
    if params.local_dns:
        vcpus = sku.vcpus or 0
        if vcpus < 4 or _memory_mib(sku) < 244:
            return False
    if params.artifact_streaming and arch == "arm64":
        return False
    return not (params.trusted_launch and not sku.trusted_launch_supported)


# --- numbers ---------------------------------------------------------------------------------


def _memory_mib(sku: Sku) -> int:
    return int((sku.memory_gib or 0.0) * 1024)


def memory_without_overhead(memory_gib: float, overhead_percent: float) -> int:
    """Bytes of memory a node reports: whole GiB of the size, less the hypervisor's share
    (``ceil(bytes x overhead_percent)``)."""
    total = int(memory_gib) * _GI
    return total - math.ceil(total * overhead_percent)


def _bracketed(amount: float, brackets: Sequence[tuple[float, float]]) -> float:
    tax, lower = 0.0, 0.0
    for upper, rate in brackets:
        if lower > amount:
            break
        tax += (min(upper, amount) - lower) * rate
        lower = upper
    return tax


_CPU_BRACKETS = ((1.0, 0.06), (2.0, 0.04), (4.0, 0.02), (math.inf, 0.01))
_MEMORY_BRACKETS = ((4.0, 0.25), (8.0, 0.20), (16.0, 0.10), (128.0, 0.06), (math.inf, 0.02))


def kube_reserved(vcpus: int, memory_gib: float) -> dict[str, int]:
    """kube-reserved CPU and memory (milli-units) by AKS's brackets: 4 vCPUs and 7 GiB
    reserve 140m and 1638Mi."""
    cpu_milli = int(1000 * _bracketed(float(vcpus), _CPU_BRACKETS))
    memory_mi = int(1024 * _bracketed(memory_gib, _MEMORY_BRACKETS))
    return {res.CPU: cpu_milli, res.MEMORY: memory_mi * _MI * _MILLI}


def ephemeral_os_disk_max_gb(sku: Sku) -> tuple[int, str | None]:
    """(GB, placement) of the largest ephemeral OS disk the size takes: its NVMe disk
    when it may hold the OS, else its cache disk, else its temp (resource) disk; (0,
    None) when it supports no ephemeral OS disk."""
    if not sku.ephemeral_os_disk_supported:
        return 0, None
    nvme = sku.nvme_disk_size_mib or 0
    if nvme > 0 and sku.nvme_ephemeral_os_disk:
        return nvme * _MI // 10**9, "NvmeDisk"
    cache = sku.max_cached_disk_bytes or 0
    if cache > 0:
        return cache // 10**9, "CacheDisk"
    resource = sku.max_resource_volume_mib or 0
    if resource > 0:
        return resource * _MI // 10**9, "ResourceDisk"
    return 0, None


def instance_type_zones(sku: Sku, region: str) -> list[str]:
    """Zone labels the size can be offered in: ``<region>-<n>`` for each unrestricted
    zone plus the regional ``0``; only ``0`` when it has no zones."""
    zones = sorted(f"{region.lower()}-{z}" for z in sku.availability_zones(region))
    return [*zones, REGIONAL_ZONE]


def _ultra_ssd_values(sku: Sku, zone: str) -> tuple[str, ...]:
    if zone == REGIONAL_ZONE:
        supported = sku.ultra_ssd_without_zone()
    else:
        supported = sku.ultra_ssd_in_zone(zone[-1:])
    return ("true", "false") if supported else ("false",)


@functools.lru_cache(maxsize=8192)
def _req(key: str, values: tuple[str, ...]) -> Requirement:
    # Requirements are immutable; offerings and types share them.
    return Requirement.new(key, IN, values)


def _normalize_cluster_label(resource_group: str) -> str:
    """The node resource group as a label value (parentheses to dashes, at most 63
    characters, never ending in ``-``/``_``/``.``)."""
    value = resource_group.replace("(", "-").replace(")", "-")[:63]
    if value.endswith(("-", "_", ".")):
        return value[:-1] + "z" if len(value) > 62 else value + "z"
    return value


def _offerings(
    sku: Sku,
    region: str,
    pricing: PriceSource,
    unavailable: UnavailableOfferings | None,
    known: bool,
) -> list[Offering]:
    name = sku.name
    on_demand = pricing.on_demand(name) if known else None
    spot = pricing.spot(name) if known else None
    out: list[Offering] = []
    for zone in instance_type_zones(sku, region):
        scope = PLACEMENT_REGIONAL if zone == REGIONAL_ZONE else PLACEMENT_ZONAL
        ultra = _ultra_ssd_values(sku, zone)
        for capacity_type, priority, price, capable in (
            (core_labels.CAPACITY_TYPE_ON_DEMAND, "regular", on_demand, True),
            (core_labels.CAPACITY_TYPE_SPOT, "spot", spot, sku.low_priority_capable),
        ):
            available = capable and not (
                unavailable is not None and unavailable.is_unavailable(name, zone, capacity_type)
            )
            out.append(
                Offering(
                    requirements=Requirements(
                        _req(core_labels.CAPACITY_TYPE_LABEL_KEY, (capacity_type,)),
                        _req(az.AKS_LABEL_SCALE_SET_PRIORITY, (priority,)),
                        _req(az.AKS_LABEL_PRIORITY, (priority,)),
                        _req(core_labels.LABEL_TOPOLOGY_ZONE, (zone,)),
                        _req(az.LABEL_PLACEMENT_SCOPE, (scope,)),
                        _req(az.LABEL_SKU_STORAGE_ULTRA_SSD, ultra),
                    ),
                    price=price if price is not None else MISSING_PRICE,
                    available=available,
                )
            )
    return out


def _available_values(offerings: Sequence[Offering], key: str) -> tuple[str, ...]:
    values: set[str] = set()
    for o in offerings:
        if o.available:
            values.update(o.requirements.get(key).values)
    return tuple(sorted(values))


def _requirements(
    sku: Sku,
    vm_size: VMSize,
    arch: str,
    offerings: Sequence[Offering],
    region: str,
    params: InstanceTypeParams,
    cluster: str,
) -> Requirements:
    vcpus = str(sku.vcpus or 0)
    memory = str(_memory_mib(sku))
    manufacturer = gpu_manufacturer(sku.name)
    gpu_count = str(sku.gpus or 0) if manufacturer else "0"
    values: dict[str, tuple[str, ...]] = {
        core_labels.LABEL_INSTANCE_TYPE: (sku.name,),
        core_labels.LABEL_ARCH: (arch,),
        core_labels.LABEL_OS: ("linux",),
        core_labels.LABEL_TOPOLOGY_ZONE: _available_values(
            offerings, core_labels.LABEL_TOPOLOGY_ZONE
        ),
        core_labels.LABEL_TOPOLOGY_REGION: (region,),
        core_labels.CAPACITY_TYPE_LABEL_KEY: _available_values(
            offerings, core_labels.CAPACITY_TYPE_LABEL_KEY
        ),
        az.LABEL_PLACEMENT_SCOPE: _available_values(offerings, az.LABEL_PLACEMENT_SCOPE),
        az.LABEL_SKU_STORAGE_ULTRA_SSD: _available_values(
            offerings, az.LABEL_SKU_STORAGE_ULTRA_SSD
        ),
        az.LABEL_SKU_CPU: (vcpus,),
        az.LABEL_SKU_MEMORY: (memory,),
        az.AKS_LABEL_CPU: (vcpus,),
        az.AKS_LABEL_MEMORY: (memory,),
        az.LABEL_SKU_GPU_COUNT: (gpu_count,),
        az.AKS_LABEL_CLUSTER: (_normalize_cluster_label(cluster),),
        az.AKS_LABEL_MODE: ("system", "user"),
        az.AKS_LABEL_SCALE_SET_PRIORITY: ("regular", "spot"),
        az.AKS_LABEL_PRIORITY: ("regular", "spot"),
        az.AKS_LABEL_OS_SKU: (_OS_SKU.get(params.image_family or "Ubuntu", params.image_family),),
        az.LABEL_SKU_NAME: (sku.name,),
        az.LABEL_SKU_FAMILY: (vm_size.family,),
        az.LABEL_SKU_SERIES: (vm_size.series,),
        az.LABEL_SKU_STORAGE_PREMIUM_CAPABLE: ("true" if sku.premium_io else "false",),
        az.LABEL_SKU_ACCELERATED_NETWORKING: ("true" if sku.accelerated_networking else "false",),
    }
    version = vm_size.version_number
    if version:
        values[az.LABEL_SKU_VERSION] = (version,)
    max_gb, _ = ephemeral_os_disk_max_gb(sku)
    if max_gb > 0:
        values[az.LABEL_SKU_STORAGE_EPHEMERAL_OS_MAX_SIZE] = (str(max_gb),)
    generations = tuple(g for g, ok in (("1", sku.hyperv_gen1), ("2", sku.hyperv_gen2)) if ok)
    if generations:
        values[az.LABEL_SKU_HYPERV_GENERATION] = generations
    if manufacturer in ("nvidia", "amd"):
        values[az.LABEL_SKU_GPU_MANUFACTURER] = (manufacturer,)
        if vm_size.accelerator_type:
            values[az.LABEL_SKU_GPU_NAME] = (vm_size.accelerator_type,)
    if params.fips:
        values[az.AKS_LABEL_FIPS_ENABLED] = ("true",)
    reqs = Requirements()
    for key in _OPTIONAL_KEYS:
        if key not in values:
            reqs.add(Requirement.new(key, DOES_NOT_EXIST))
    for key, vals in values.items():
        reqs.add(_req(key, vals))
    return reqs


_OPTIONAL_KEYS = (
    az.LABEL_SKU_VERSION,
    az.LABEL_SKU_STORAGE_EPHEMERAL_OS_MAX_SIZE,
    az.LABEL_SKU_HYPERV_GENERATION,
    az.LABEL_SKU_GPU_MANUFACTURER,
    az.LABEL_SKU_GPU_NAME,
    az.AKS_LABEL_FIPS_ENABLED,
)


def build_instance_type(
    sku: Sku,
    pricing: PriceSource,
    *,
    region: str,
    params: InstanceTypeParams,
    vm_memory_overhead_percent: float = DEFAULT_VM_MEMORY_OVERHEAD_PERCENT,
    unavailable: UnavailableOfferings | None = None,
    node_resource_group: str = "",
) -> InstanceType | None:
    """One SKU as an instance type for ``params``; None when the NodeClass cannot use it
    or its size or architecture cannot be read. The SKU is assumed to have passed
    :func:`supported_skus`."""
    vm_size = sku.vm_size()
    raw_arch = sku.architecture
    if vm_size is None or raw_arch is None:
        return None
    arch = _ARCHITECTURES.get(raw_arch, raw_arch)
    if not _supported_by_nodeclass(sku, arch, params):
        return None
    known = sku.name in catalogue.known_skus()
    offerings = _offerings(sku, region, pricing, unavailable, known)
    vcpus = sku.vcpus or 0
    memory_gib = sku.memory_gib or 0.0
    manufacturer = gpu_manufacturer(sku.name)
    gpus = sku.gpus or 0
    capacity = {
        res.CPU: vcpus * _MILLI,
        res.MEMORY: memory_without_overhead(memory_gib, vm_memory_overhead_percent) * _MILLI,
        res.EPHEMERAL_STORAGE: params.os_disk_size_gb * 10**9 * _MILLI,
        res.PODS: params.max_pods * _MILLI,
        _RESOURCE_NVIDIA_GPU: (gpus if manufacturer == "nvidia" else 0) * _MILLI,
        _RESOURCE_AMD_GPU: (gpus if manufacturer == "amd" else 0) * _MILLI,
    }
    return InstanceType(
        name=sku.name,
        requirements=_requirements(
            sku, vm_size, arch, offerings, region, params, node_resource_group
        ),
        offerings=Offerings(offerings),
        capacity=capacity,
        overhead=InstanceTypeOverhead(
            kube_reserved=kube_reserved(vcpus, memory_gib),
            system_reserved={res.CPU: 0, res.MEMORY: 0},
            eviction_threshold={res.MEMORY: EVICTION_MEMORY_AVAILABLE * _MILLI},
        ),
    )


def build_instance_types(
    skus: Iterable[Sku],
    pricing: PriceSource,
    *,
    region: str,
    nodeclass: AKSNodeClass | None = None,
    network_plugin: str = "azure",
    network_plugin_mode: str = "overlay",
    vm_memory_overhead_percent: float = DEFAULT_VM_MEMORY_OVERHEAD_PERCENT,
    unavailable: UnavailableOfferings | None = None,
    node_resource_group: str = "",
    local_dns: bool | None = None,
    max_pods_default: int | None = None,
) -> list[InstanceType]:
    """Every SKU of ``region`` AKS and ``nodeclass`` can use, as instance types (sorted by
    name). ``skus`` may be the raw Resource SKU list: :func:`supported_skus` is applied.
    ``node_resource_group`` is the cluster's node resource group (the
    ``kubernetes.azure.com/cluster`` label)."""
    params = InstanceTypeParams.of(
        nodeclass,
        network_plugin=network_plugin,
        network_plugin_mode=network_plugin_mode,
        local_dns=local_dns,
        max_pods_default=max_pods_default,
    )
    out: list[InstanceType] = []
    for sku in supported_skus(skus, region):
        it = build_instance_type(
            sku,
            pricing,
            region=region,
            params=params,
            vm_memory_overhead_percent=vm_memory_overhead_percent,
            unavailable=unavailable,
            node_resource_group=node_resource_group,
        )
        if it is not None:
            out.append(it)
    return out


# --- the provider ------------------------------------------------------------------------------


def _pricing_version(pricing: PriceSource) -> int:
    version = getattr(pricing, "version", 0)
    return version if isinstance(version, int) else 0


@frozen
class _Built:
    at: float
    seq: int
    prices: int
    instance_type: InstanceType | None


class InstanceTypeProvider:
    """Instance types per NodeClass over a SKU list that can be replaced.

    Built types are cached per (NodeClass parameters, SKU) for :data:`INSTANCE_TYPES_TTL`
    and rebuilt when the ICE cache's sequence number for the SKU or the price version
    changes, so an ICE mark or a price refresh shows at the next :meth:`list` (a type's
    zone and capacity-type labels follow its available offerings, as upstream's).
    Thread-safe.
    """

    def __init__(
        self,
        region: str,
        pricing: PriceSource,
        *,
        clock: Clock,
        skus: Iterable[Sku] = (),
        unavailable: UnavailableOfferings | None = None,
        network_plugin: str = "azure",
        network_plugin_mode: str = "overlay",
        vm_memory_overhead_percent: float = DEFAULT_VM_MEMORY_OVERHEAD_PERCENT,
        node_resource_group: str = "",
        max_pods_default: int | None = None,
        cache_ttl: float = INSTANCE_TYPES_TTL,
    ) -> None:
        self.region = region
        self._pricing = pricing
        self._clock = clock
        self._unavailable = unavailable
        self._network_plugin = network_plugin
        self._network_plugin_mode = network_plugin_mode
        self._overhead = vm_memory_overhead_percent
        self._cluster = node_resource_group
        self._max_pods_default = max_pods_default
        self._ttl = cache_ttl
        self._lock = threading.RLock()
        self._skus: tuple[Sku, ...] = ()
        self._by_name: dict[str, Sku] = {}
        self._generation = 0
        self._cache: dict[tuple[Any, ...], _Built] = {}
        self.update_skus(skus)

    def update_skus(self, skus: Iterable[Sku]) -> bool:
        """Replace the SKU list (filtered by :func:`supported_skus`); True when it changed
        (every cached type is then dropped)."""
        supported = tuple(supported_skus(skus, self.region))
        with self._lock:
            if supported == self._skus:
                return False
            self._skus = supported
            self._by_name = {s.name: s for s in supported}
            self._generation += 1
            self._cache.clear()
        unknown = sorted({s.family for s in supported if s.name not in catalogue.known_skus()})
        if unknown:
            log.info("VM size families not among the known sizes (priced last): %s", unknown)
        return True

    @property
    def skus(self) -> tuple[Sku, ...]:
        return self._skus

    def get(self, name: str) -> Sku | None:
        """The supported SKU named ``name`` (for launching), None when unknown."""
        return self._by_name.get(name)

    def list(
        self, nodeclass: AKSNodeClass | None = None, *, local_dns: bool | None = None
    ) -> list[InstanceType]:
        """Every instance type ``nodeclass`` can launch, with current offerings."""
        params = InstanceTypeParams.of(
            nodeclass,
            network_plugin=self._network_plugin,
            network_plugin_mode=self._network_plugin_mode,
            local_dns=local_dns,
            max_pods_default=self._max_pods_default,
        )
        now = self._clock.monotonic()
        prices = _pricing_version(self._pricing)
        out: list[InstanceType] = []
        with self._lock:
            if len(self._cache) > 4 * max(len(self._skus), 1) * 8:
                self._cache = {k: b for k, b in self._cache.items() if now - b.at < self._ttl}
            for sku in self._skus:
                seq = self._unavailable.seq(sku.name) if self._unavailable is not None else 0
                key = (self._generation, params, sku.name)
                built = self._cache.get(key)
                if (
                    built is None
                    or built.seq != seq
                    or built.prices != prices
                    or now - built.at >= self._ttl
                ):
                    built = _Built(
                        now,
                        seq,
                        prices,
                        build_instance_type(
                            sku,
                            self._pricing,
                            region=self.region,
                            params=params,
                            vm_memory_overhead_percent=self._overhead,
                            unavailable=self._unavailable,
                            node_resource_group=self._cluster,
                        ),
                    )
                    self._cache[key] = built
                if built.instance_type is not None:
                    out.append(built.instance_type)
        return out
