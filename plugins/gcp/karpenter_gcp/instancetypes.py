"""GCE machine types as Karpenter instance types (upstream ``pkg/providers/instancetype``).

What a type carries, for ``n2-standard-4`` (4 vCPUs, 16384 MB) with no NodeClass (100 GiB
boot disk, 110 pods, 7 % VM memory overhead):

- labels: ``node.kubernetes.io/instance-type``, ``kubernetes.io/arch`` (``arm64`` when the
  API says ``ARM64``, else ``amd64``), ``kubernetes.io/os=linux``, ``topology.kubernetes.io/
  region``, the zones and capacity types of its available offerings (also as
  ``topology.k8s.gcp/zone-id``), ``karpenter.k8s.gcp/instance-cpu=4``,
  ``instance-memory=16384`` (MB as the API reports it), ``instance-family=n2``,
  ``instance-shape=standard``, ``instance-generation=2``, ``instance-size=4`` (upstream's
  reading of the name: the last part, or the one before it for names of more than three
  parts such as ``c3-standard-4-lssd``), GPU types ``instance-gpu-name``,
  ``instance-gpu-count`` and ``cloud.google.com/gke-accelerator`` (the accelerator type,
  which NVIDIA's device plugin selects on), and ``disk-type.gke.io/<type>=true`` for each
  persistent-disk type the family supports (the PD CSI driver's compatibility table);
  labels a type has no value for are ``DoesNotExist``;
- capacity: 4 CPUs; memory = MB x MiB less ``int(7 %)``; pods = the NodeClass's
  ``kubeletConfiguration.maxPods`` (110 by default), capped at ``podsPerCore x vCPUs``;
  ephemeral storage = the local SSDs (the NodeClass's ``local-ssd`` disks, else the type's
  bundled ones) or else the boot disk, in GiB; ``nvidia.com/gpu`` = the type's GPUs;
- overhead, as GKE reserves (``plan-node-sizes``): kube-reserved CPU 6 % of the first
  core, 1 % of the second, 0.5 % of the next two, 0.25 % beyond (1060m on shared-core
  e2-micro/small/medium); memory 255 MiB below 1 GiB, else 25 % of the first 4 GiB, 20 %
  of the next 4, 10 % of the next 8, 6 % up to 128 GiB, 2 % beyond; ephemeral storage
  reserved 50/75/100 GiB for 1/2/3+ local SSDs, else min(50 %, 35 % + 6 GiB, 100 GiB) of
  the boot disk; system-reserved 100m CPU (the kube-proxy mirror pod GKE starts on every
  node); eviction 100 MiB memory and 10 % of the ephemeral storage. A NodeClass's
  ``kubeReserved`` replaces computed keys, its ``systemReserved`` adds to them, and its
  ``evictionHard`` ``memory.available``/``nodefs.available`` (a quantity or a percentage of
  capacity) replace the computed thresholds;
- offerings: one per zone the type is listed in (among the cluster's zones) and capacity
  type: on-demand when it has an on-demand price, spot when it has a spot price (GCE
  offers spot in every zone a type runs in); either is unavailable while the ICE cache
  marks it. A type with no offering is not listed.

Differences from upstream: ``nvidia.com/gpu`` counts the GPUs (upstream counts the
accelerator entries, 1 for ``a2-highgpu-8g``); ``instance-gpu-count`` likewise.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from attrs import frozen

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
    parse_quantity,
)
from karpenter_core.plugin_api import labels as core_labels
from karpenter_core.plugin_api import resources as res
from karpenter_gcp import catalogue
from karpenter_gcp import labels as gcp
from karpenter_gcp.machinetypes import ARCH_ARM64, MachineType

__all__ = [
    "DEFAULT_BOOT_DISK_GIB",
    "DEFAULT_MAX_PODS",
    "DEFAULT_VM_MEMORY_OVERHEAD_PERCENT",
    "INSTANCE_TYPES_TTL",
    "RESOURCE_NVIDIA_GPU",
    "InstanceTypeParams",
    "InstanceTypeProvider",
    "PriceSource",
    "build_instance_type",
    "build_instance_types",
    "memory_capacity",
    "reserved_cpu_millis",
    "reserved_ephemeral_storage_gib",
    "reserved_memory_mib",
]

log = logging.getLogger("karpenter.gcp.instancetypes")

_MILLI = 1000
_MI = 1024 * 1024
_GI = 1024 * _MI

DEFAULT_VM_MEMORY_OVERHEAD_PERCENT = 0.07
"""Upstream's ``VM_MEMORY_OVERHEAD_PERCENT`` default."""
DEFAULT_BOOT_DISK_GIB = 100
DEFAULT_MAX_PODS = 110
"""Upstream's ``KubeletMaxPods``."""
EVICTION_MEMORY_MIB = 100
KUBE_PROXY_CPU_MILLIS = 100
"""CPU request of the kube-proxy mirror pod GKE runs on each node (system-reserved)."""
SHARED_CORE_E2_CPU_MILLIS = 1060
INSTANCE_TYPES_TTL = 30 * 60 * 60.0
"""Seconds built types stay cached per NodeClass parameters (upstream: 30 h)."""
RESOURCE_NVIDIA_GPU = "nvidia.com/gpu"

_SHARED_CORE_E2 = frozenset({"e2-micro", "e2-small", "e2-medium"})
_ARCH = {ARCH_ARM64: core_labels.ARCHITECTURE_ARM64}


class PriceSource(Protocol):
    """Where offerings get prices (:class:`karpenter_gcp.pricing.PricingProvider`)."""

    def on_demand(self, machine_type: str) -> float | None: ...
    def spot(self, machine_type: str) -> float | None: ...


# --- the parameters a NodeClass contributes ----------------------------------------------------


def _spec_of(nodeclass: Any) -> Mapping[str, Any]:
    if nodeclass is None:
        return {}
    spec = getattr(nodeclass, "spec", None)
    if spec is None and isinstance(nodeclass, Mapping):
        spec = nodeclass.get("spec", nodeclass)
    return spec if isinstance(spec, Mapping) else {}


def _quantities(value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, Mapping):
        return ()
    return tuple(sorted((str(k), str(v)) for k, v in value.items()))


@frozen
class InstanceTypeParams:
    """What of a GCENodeClass changes instance types (its kubelet configuration and
    disks); the cache key of :class:`InstanceTypeProvider`."""

    boot_disk_gib: int = DEFAULT_BOOT_DISK_GIB
    disks_configured: bool = False
    """The NodeClass lists disks: its local SSDs replace the types' bundled ones."""
    local_ssd_gib: int = 0
    local_ssd_count: int = 0
    max_pods: int = DEFAULT_MAX_PODS
    pods_per_core: int | None = None
    kube_reserved: tuple[tuple[str, str], ...] = ()
    system_reserved: tuple[tuple[str, str], ...] = ()
    eviction_hard: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, nodeclass: Any) -> InstanceTypeParams:
        """The parameters of ``nodeclass`` (a GCENodeClass object with a ``spec``
        mapping, or the object / its spec as a mapping); upstream's defaults for None."""
        spec = _spec_of(nodeclass)
        kubelet = spec.get("kubeletConfiguration") or {}
        if not isinstance(kubelet, Mapping):
            kubelet = {}
        boot, ssd_gib, ssd_count = DEFAULT_BOOT_DISK_GIB, 0, 0
        disks = [d for d in spec.get("disks") or () if isinstance(d, Mapping)]
        for disk in disks:
            size = int(disk.get("sizeGiB") or 0)
            if disk.get("boot"):
                boot = size
            elif disk.get("category") == "local-ssd":
                ssd_gib += size
                ssd_count += 1
        max_pods = kubelet.get("maxPods")
        per_core = kubelet.get("podsPerCore")
        return cls(
            boot_disk_gib=boot,
            disks_configured=bool(disks),
            local_ssd_gib=ssd_gib,
            local_ssd_count=ssd_count,
            max_pods=int(max_pods) if max_pods is not None else DEFAULT_MAX_PODS,
            pods_per_core=int(per_core) if per_core else None,
            kube_reserved=_quantities(kubelet.get("kubeReserved")),
            system_reserved=_quantities(kubelet.get("systemReserved")),
            eviction_hard=_quantities(kubelet.get("evictionHard")),
        )


# --- numbers ---------------------------------------------------------------------------------


def _bracketed(amount: float, brackets: Sequence[tuple[float, float]]) -> float:
    total, lower = 0.0, 0.0
    for upper, rate in brackets:
        if amount <= lower:
            break
        total += int((min(upper, amount) - lower) * rate)
        lower = upper
    return total


_CPU_BRACKETS = ((1000.0, 0.06), (2000.0, 0.01), (4000.0, 0.005), (math.inf, 0.0025))
_MEMORY_BRACKETS = (
    (4096.0, 0.25),
    (8192.0, 0.20),
    (16384.0, 0.10),
    (131072.0, 0.06),
    (math.inf, 0.02),
)


def reserved_cpu_millis(name: str, guest_cpus: int) -> int:
    """kube-reserved CPU (millicores) GKE keeps on a node of this type: 80m for 4 vCPUs."""
    if name in _SHARED_CORE_E2:
        return SHARED_CORE_E2_CPU_MILLIS
    return int(_bracketed(guest_cpus * 1000.0, _CPU_BRACKETS))


def reserved_memory_mib(memory_mb: int) -> int:
    """kube-reserved memory (MiB) GKE keeps: 255 below 1 GiB, else by brackets
    (16384 MiB reserve 2662)."""
    if memory_mb <= 1024:
        return 255
    return int(_bracketed(float(memory_mb), _MEMORY_BRACKETS))


def reserved_ephemeral_storage_gib(
    boot_disk_gib: int, local_ssd_gib: int, local_ssd_count: int
) -> tuple[int, int]:
    """(eviction threshold, system reservation) GiB of ephemeral storage: on local SSDs
    10 % and 50/75/100 GiB for 1/2/3+ SSDs; on the boot disk 10 % and
    min(50 %, 35 % + 6 GiB, 100 GiB)."""
    if local_ssd_count > 0 and local_ssd_gib > 0:
        reserved = {1: 50, 2: 75}.get(local_ssd_count, 100)
        return int(local_ssd_gib * 0.10), reserved
    half = round(boot_disk_gib * 0.50)
    third = round(boot_disk_gib * 0.35 + 6)
    return int(boot_disk_gib * 0.10), min(half, third, 100)


def memory_capacity(memory_mb: int, overhead_percent: float) -> int:
    """Bytes of memory a node reports: the type's MB as MiB less the hypervisor's share
    (``int(bytes x overhead_percent)``)."""
    total = memory_mb * _MI
    return total - int(total * overhead_percent)


def _disk_config(mt: MachineType, params: InstanceTypeParams) -> tuple[int, int, int]:
    """(boot GiB, local SSD GiB, local SSD count): the NodeClass's disks when it lists
    any, else the default boot disk and the type's bundled local SSDs."""
    if params.disks_configured:
        return params.boot_disk_gib, params.local_ssd_gib, params.local_ssd_count
    return params.boot_disk_gib, mt.local_ssd_gib, mt.local_ssd_partitions


def _eviction_signal(capacity: int, value: str) -> int:
    """A hard eviction threshold in milli-units: a percentage of ``capacity`` (milli)
    rounded up to whole units, or a quantity."""
    if value.endswith("%"):
        try:
            pct = float(value[:-1])
        except ValueError:
            return 0
        return math.ceil(capacity / _MILLI * pct / 100.0) * _MILLI
    return parse_quantity(value)


def _overhead(
    mt: MachineType,
    params: InstanceTypeParams,
    memory: int,
    storage: int,
    disks: tuple[int, int, int],
) -> InstanceTypeOverhead:
    boot, ssd_gib, ssd_count = disks
    eviction_gib, system_gib = reserved_ephemeral_storage_gib(boot, ssd_gib, ssd_count)
    kube: dict[str, int] = {
        res.CPU: reserved_cpu_millis(mt.name, mt.guest_cpus),
        res.MEMORY: reserved_memory_mib(mt.memory_mb) * _MI * _MILLI,
        res.EPHEMERAL_STORAGE: system_gib * _GI * _MILLI,
    }
    for key, value in params.kube_reserved:
        kube[key] = parse_quantity(value)
    system: dict[str, int] = {res.CPU: KUBE_PROXY_CPU_MILLIS}
    for key, value in params.system_reserved:
        system[key] = system.get(key, 0) + parse_quantity(value)
    eviction: dict[str, int] = {
        res.MEMORY: EVICTION_MEMORY_MIB * _MI * _MILLI,
        res.EPHEMERAL_STORAGE: eviction_gib * _GI * _MILLI,
    }
    hard = dict(params.eviction_hard)
    if "memory.available" in hard:
        eviction[res.MEMORY] = _eviction_signal(memory, hard["memory.available"])
    if "nodefs.available" in hard:
        eviction[res.EPHEMERAL_STORAGE] = _eviction_signal(storage, hard["nodefs.available"])
    return InstanceTypeOverhead(
        kube_reserved=kube, system_reserved=system, eviction_threshold=eviction
    )


# --- labels ----------------------------------------------------------------------------------


def _generation(family: str) -> str:
    """``2`` of ``n2``, ``n2d`` and ``c4a`` (upstream: the digit of a family's name)."""
    return family[-2] if len(family) == 3 else family[-1]


@functools.lru_cache(maxsize=8192)
def _req(key: str, values: tuple[str, ...]) -> Requirement:
    # Requirements are immutable; offerings and types share them.
    return Requirement.new(key, IN, values)


_OPTIONAL_KEYS = (
    core_labels.LABEL_ARCH,
    core_labels.LABEL_WINDOWS_BUILD,
    gcp.LABEL_INSTANCE_FAMILY,
    gcp.LABEL_INSTANCE_SHAPE,
    gcp.LABEL_INSTANCE_GENERATION,
    gcp.LABEL_INSTANCE_SIZE,
    gcp.LABEL_INSTANCE_GPU_NAME,
    gcp.LABEL_INSTANCE_GPU_MANUFACTURER,
    gcp.LABEL_INSTANCE_GPU_COUNT,
    gcp.LABEL_INSTANCE_GPU_MEMORY,
    gcp.LABEL_GKE_ACCELERATOR,
    *(gcp.DISK_TYPE_LABEL_PREFIX + t for t in gcp.DISK_TYPES),
)


def _available_values(offerings: Sequence[Offering], key: str) -> tuple[str, ...]:
    values: set[str] = set()
    for o in offerings:
        if o.available:
            values.update(o.requirements.get(key).values)
    return tuple(sorted(values))


def _requirements(mt: MachineType, offerings: Sequence[Offering], region: str) -> Requirements:
    zones = _available_values(offerings, core_labels.LABEL_TOPOLOGY_ZONE)
    values: dict[str, tuple[str, ...]] = {
        core_labels.LABEL_INSTANCE_TYPE: (mt.name,),
        core_labels.LABEL_OS: ("linux",),
        core_labels.LABEL_TOPOLOGY_ZONE: zones,
        core_labels.LABEL_TOPOLOGY_REGION: (region,),
        core_labels.CAPACITY_TYPE_LABEL_KEY: _available_values(
            offerings, core_labels.CAPACITY_TYPE_LABEL_KEY
        ),
        gcp.LABEL_INSTANCE_CPU: (str(mt.guest_cpus),),
        gcp.LABEL_INSTANCE_MEMORY: (str(mt.memory_mb),),
    }
    if zones:
        values[gcp.LABEL_TOPOLOGY_ZONE_ID] = zones
    if mt.accelerators:
        gpu = mt.accelerators[0].type
        values[gcp.LABEL_INSTANCE_GPU_NAME] = (gpu,)
        values[gcp.LABEL_INSTANCE_GPU_COUNT] = (str(mt.gpu_count),)
        values[gcp.LABEL_GKE_ACCELERATOR] = (gpu,)
    parts = mt.name.split("-")
    if len(parts) >= 2:
        size = parts[-2] if len(parts) > 3 else parts[-1]
        values[gcp.LABEL_INSTANCE_SIZE] = (size,)
        values[gcp.LABEL_INSTANCE_GENERATION] = (_generation(parts[0]),)
        values[gcp.LABEL_INSTANCE_FAMILY] = (parts[0],)
        values[gcp.LABEL_INSTANCE_SHAPE] = (parts[1],)
        values[core_labels.LABEL_ARCH] = (
            _ARCH.get(mt.architecture, core_labels.ARCHITECTURE_AMD64),
        )
    for disk in catalogue.disk_types(mt.family) or ():
        values[gcp.DISK_TYPE_LABEL_PREFIX + disk] = ("true",)
    reqs = Requirements()
    for key in _OPTIONAL_KEYS:
        if key not in values:
            reqs.add(Requirement.new(key, DOES_NOT_EXIST))
    for key, vals in values.items():
        reqs.add(_req(key, vals))
    return reqs


# --- building --------------------------------------------------------------------------------


def _offerings(
    mt: MachineType,
    zones: Iterable[str],
    pricing: PriceSource,
    unavailable: UnavailableOfferings | None,
) -> list[Offering]:
    on_demand = pricing.on_demand(mt.name)
    spot = pricing.spot(mt.name)
    offered = set(mt.zones)
    out: list[Offering] = []
    for zone in zones:
        if zone not in offered:
            continue
        for capacity_type, price in (
            (core_labels.CAPACITY_TYPE_ON_DEMAND, on_demand),
            (core_labels.CAPACITY_TYPE_SPOT, spot),
        ):
            if price is None:
                continue
            available = not (
                unavailable is not None and unavailable.is_unavailable(mt.name, zone, capacity_type)
            )
            out.append(
                Offering(
                    requirements=Requirements(
                        _req(core_labels.CAPACITY_TYPE_LABEL_KEY, (capacity_type,)),
                        _req(core_labels.LABEL_TOPOLOGY_ZONE, (zone,)),
                        _req(gcp.LABEL_TOPOLOGY_ZONE_ID, (zone,)),
                    ),
                    price=price,
                    available=available,
                )
            )
    return out


def build_instance_type(
    mt: MachineType,
    pricing: PriceSource,
    *,
    region: str,
    zones: Iterable[str] | None = None,
    params: InstanceTypeParams | None = None,
    vm_memory_overhead_percent: float = DEFAULT_VM_MEMORY_OVERHEAD_PERCENT,
    unavailable: UnavailableOfferings | None = None,
) -> InstanceType | None:
    """``mt`` as an instance type for ``params`` (upstream's defaults when None), offered
    in ``zones`` (the cluster's; every zone ``mt`` is listed in when None); None when it
    has no offering (no price, or none of the zones)."""
    params = params or InstanceTypeParams()
    offerings = _offerings(mt, mt.zones if zones is None else zones, pricing, unavailable)
    if not offerings:
        return None
    disks = _disk_config(mt, params)
    boot, ssd_gib, _ = disks
    storage = (ssd_gib or boot) * _GI * _MILLI
    memory = memory_capacity(mt.memory_mb, vm_memory_overhead_percent) * _MILLI
    pods = params.max_pods
    if params.pods_per_core and params.pods_per_core > 0:
        pods = min(pods, params.pods_per_core * mt.guest_cpus)
    capacity = {
        res.CPU: mt.guest_cpus * _MILLI,
        res.MEMORY: memory,
        res.PODS: pods * _MILLI,
        res.EPHEMERAL_STORAGE: storage,
        RESOURCE_NVIDIA_GPU: mt.gpu_count * _MILLI,
    }
    return InstanceType(
        name=mt.name,
        requirements=_requirements(mt, offerings, region),
        offerings=Offerings(offerings),
        capacity=capacity,
        overhead=_overhead(mt, params, memory, storage, disks),
    )


def build_instance_types(
    machine_types: Iterable[MachineType],
    pricing: PriceSource,
    *,
    region: str,
    nodeclass: Any = None,
    zones: Iterable[str] | None = None,
    vm_memory_overhead_percent: float = DEFAULT_VM_MEMORY_OVERHEAD_PERCENT,
    unavailable: UnavailableOfferings | None = None,
) -> list[InstanceType]:
    """Every machine type with an offering, as instance types for ``nodeclass``."""
    params = InstanceTypeParams.of(nodeclass)
    zone_list = None if zones is None else tuple(zones)
    out: list[InstanceType] = []
    for mt in machine_types:
        it = build_instance_type(
            mt,
            pricing,
            region=region,
            zones=zone_list,
            params=params,
            vm_memory_overhead_percent=vm_memory_overhead_percent,
            unavailable=unavailable,
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
    """Instance types per NodeClass over a machine-type list that can be replaced.

    Built types are cached per (NodeClass parameters, machine type) for
    :data:`INSTANCE_TYPES_TTL` and rebuilt when the machine types are replaced by
    different ones, when the ICE cache's sequence number for the type changes or when
    prices change, so an ICE mark or a price refresh shows at the next :meth:`list` (a
    type's zone and capacity-type labels follow its available offerings, as upstream's).
    ``zones`` are the cluster's zones (upstream resolves them from the GKE cluster);
    None offers each type in every zone it is listed in. Thread-safe.
    """

    def __init__(
        self,
        region: str,
        pricing: PriceSource,
        *,
        clock: Clock,
        machine_types: Iterable[MachineType] = (),
        zones: Iterable[str] | None = None,
        unavailable: UnavailableOfferings | None = None,
        vm_memory_overhead_percent: float = DEFAULT_VM_MEMORY_OVERHEAD_PERCENT,
        cache_ttl: float = INSTANCE_TYPES_TTL,
    ) -> None:
        self.region = region
        self._pricing = pricing
        self._clock = clock
        self._unavailable = unavailable
        self._overhead = vm_memory_overhead_percent
        self._ttl = cache_ttl
        self._lock = threading.RLock()
        self._types: tuple[MachineType, ...] = ()
        self._by_name: dict[str, MachineType] = {}
        self._zones: tuple[str, ...] | None = None if zones is None else tuple(sorted(set(zones)))
        self._generation = 0
        self._cache: dict[tuple[Any, ...], _Built] = {}
        self.update_machine_types(machine_types)

    def update_machine_types(self, machine_types: Iterable[MachineType]) -> bool:
        """Replace the machine-type list; True when it changed (every cached type is then
        dropped, as upstream's sequence number does)."""
        types = tuple(sorted(machine_types, key=lambda mt: mt.name))
        with self._lock:
            if types == self._types:
                return False
            self._types = types
            self._by_name = {mt.name: mt for mt in types}
            self._generation += 1
            self._cache.clear()
        return True

    def update_zones(self, zones: Iterable[str] | None) -> bool:
        """Replace the cluster's zones; True when they changed."""
        new = None if zones is None else tuple(sorted(set(zones)))
        with self._lock:
            if new == self._zones:
                return False
            self._zones = new
            self._generation += 1
            self._cache.clear()
        return True

    @property
    def machine_types(self) -> tuple[MachineType, ...]:
        return self._types

    @property
    def zones(self) -> tuple[str, ...]:
        """The zones types are offered in (the cluster's, else every listed zone)."""
        if self._zones is not None:
            return self._zones
        return tuple(sorted({z for mt in self._types for z in mt.zones}))

    def get(self, name: str) -> MachineType | None:
        """The machine type named ``name`` (for launching), None when unknown."""
        return self._by_name.get(name)

    def list(self, nodeclass: Any = None) -> list[InstanceType]:
        """Every instance type ``nodeclass`` (None: upstream's defaults) can launch, with
        current offerings."""
        params = InstanceTypeParams.of(nodeclass)
        now = self._clock.monotonic()
        prices = _pricing_version(self._pricing)
        out: list[InstanceType] = []
        with self._lock:
            if len(self._cache) > 8 * max(len(self._types), 1):
                self._cache = {k: b for k, b in self._cache.items() if now - b.at < self._ttl}
            zones = self._zones
            for mt in self._types:
                seq = self._unavailable.seq(mt.name) if self._unavailable is not None else 0
                key = (self._generation, params, mt.name)
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
                            mt,
                            self._pricing,
                            region=self.region,
                            zones=zones,
                            params=params,
                            vm_memory_overhead_percent=self._overhead,
                            unavailable=self._unavailable,
                        ),
                    )
                    self._cache[key] = built
                if built.instance_type is not None:
                    out.append(built.instance_type)
        return out
