"""GCE machine types: the region's list as Karpenter needs it, live or from JSON.

Upstream (``pkg/providers/instancetype``) reads the region's machine types with one
``machineTypes.aggregatedList`` call filtered to the region's zones
(``zone eq .*<region>-.*``) and keeps, per machine type name, the zones that list it:
a type is offered only in those zones. :func:`list_machine_types` does the same with
the official client (``google.cloud.compute_v1.MachineTypesClient``) and merges the
per-zone records into one :class:`MachineType` per name.

:func:`machine_types_from_json` reads the same facts from JSON: the snapshot format
(:meth:`MachineType.to_dict`, one record per name with a ``zones`` list), the output of
``gcloud compute machine-types list --format=json`` (one record per zone, ``zone`` a name
or URL), or a saved ``aggregatedList`` response (``{"items": {"zones/<z>":
{"machineTypes": [...]}}}``).

:func:`local_ssd_gib` turns a type's bundled local SSD partitions into GiB with upstream's
table (375 GiB partitions, 3000 GiB for Z3, and per-type totals where the API's partition
count is wrong).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from attrs import evolve, field, frozen

__all__ = [
    "ARCH_ARM64",
    "ARCH_X86_64",
    "DEFAULT_LOCAL_SSD_PARTITION_GIB",
    "Accelerator",
    "MachineType",
    "MachineTypeError",
    "list_machine_types",
    "local_ssd_gib",
    "machine_type_from_proto",
    "machine_types_from_json",
    "region_filter",
    "zone_name",
]

log = logging.getLogger("karpenter.gcp.machinetypes")

ARCH_X86_64 = "X86_64"
ARCH_ARM64 = "ARM64"

DEFAULT_LOCAL_SSD_PARTITION_GIB = 375
"""Size of one bundled NVMe local SSD partition for most families."""
_PARTITION_GIB_BY_FAMILY = {"z3": 3000}
_LOCAL_SSD_TOTAL_GIB = {
    # Types whose API partition count does not give their capacity (upstream's table).
    "c4d-highmem-8-lssd": 2250,
    "c4d-highmem-16-lssd": 3000,
    "c4-highmem-288-lssd-metal": 18000,
    "c4-standard-288-lssd-metal": 18000,
    "z3-highmem-192-highlssd-metal": 72000,
}


class MachineTypeError(ValueError):
    """Machine types could not be listed or read (the message says where and why)."""


def zone_name(zone: str) -> str:
    """``us-central1-a`` from a zone name or a zone URL."""
    return zone.rstrip("/").rsplit("/", 1)[-1]


def region_filter(region: str) -> str:
    """The ``aggregatedList`` filter upstream uses to keep one region's zones."""
    return f"(zone eq .*{region}-.*)"


def local_ssd_gib(name: str, partitions: int) -> int:
    """GiB of bundled local SSD of machine type ``name`` with ``partitions`` partitions."""
    total = _LOCAL_SSD_TOTAL_GIB.get(name)
    if total:
        return total
    if partitions <= 0:
        return 0
    family = name.split("-", 1)[0]
    return partitions * _PARTITION_GIB_BY_FAMILY.get(family, DEFAULT_LOCAL_SSD_PARTITION_GIB)


@frozen
class Accelerator:
    """GPUs a machine type comes with (``guestAcceleratorType``, e.g. ``nvidia-l4``)."""

    type: str
    count: int


def _sorted_zones(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted({zone_name(z) for z in value if z}))


@frozen
class MachineType:
    """One machine type of a region: its shape and the zones that offer it."""

    name: str
    guest_cpus: int
    memory_mb: int
    zones: tuple[str, ...] = field(converter=_sorted_zones, default=())
    accelerators: tuple[Accelerator, ...] = field(converter=tuple, default=())
    local_ssd_partitions: int = 0
    architecture: str = ""
    """``X86_64``/``ARM64`` as the API reports it; empty when it does not."""
    is_shared_cpu: bool = False
    deprecated: str = ""
    """The deprecation state (``DEPRECATED``/``OBSOLETE``/``DELETED``), empty when active."""

    @property
    def family(self) -> str:
        """``n2`` of ``n2-standard-4``."""
        return self.name.split("-", 1)[0]

    @property
    def gpu_count(self) -> int:
        return sum(a.count for a in self.accelerators)

    @property
    def local_ssd_gib(self) -> int:
        return local_ssd_gib(self.name, self.local_ssd_partitions)

    def to_dict(self) -> dict[str, Any]:
        """The REST field names (``gcloud ... --format=json``) plus a ``zones`` list."""
        out: dict[str, Any] = {
            "name": self.name,
            "guestCpus": self.guest_cpus,
            "memoryMb": self.memory_mb,
            "isSharedCpu": self.is_shared_cpu,
            "zones": list(self.zones),
        }
        if self.architecture:
            out["architecture"] = self.architecture
        if self.accelerators:
            out["accelerators"] = [
                {"guestAcceleratorType": a.type, "guestAcceleratorCount": a.count}
                for a in self.accelerators
            ]
        if self.local_ssd_partitions:
            out["bundledLocalSsds"] = {"partitionCount": self.local_ssd_partitions}
        if self.deprecated:
            out["deprecated"] = {"state": self.deprecated}
        return out


def _int(value: Any, where: str, key: str) -> int:
    if isinstance(value, bool):
        raise MachineTypeError(f"{where}: {key} is not a number")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise MachineTypeError(f"{where}: {key} is not a number: {value!r}") from None


def _from_record(record: Mapping[str, Any], where: str) -> MachineType | None:
    name = record.get("name")
    if not isinstance(name, str) or not name:
        raise MachineTypeError(f"{where}: a machine type without a name")
    if record.get("guestCpus") is None or record.get("memoryMb") is None:
        # Upstream skips types the API returns without a shape.
        return None
    zones: list[str] = [str(z) for z in record.get("zones") or ()]
    if isinstance(record.get("zone"), str):
        zones.append(record["zone"])
    accelerators = [
        Accelerator(
            str(a.get("guestAcceleratorType", "")),
            _int(a.get("guestAcceleratorCount", 0), where, "guestAcceleratorCount"),
        )
        for a in record.get("accelerators") or ()
        if isinstance(a, Mapping)
    ]
    ssds = record.get("bundledLocalSsds")
    partitions = (
        _int(ssds.get("partitionCount", 0) or 0, where, "partitionCount")
        if isinstance(ssds, Mapping)
        else 0
    )
    deprecated = record.get("deprecated")
    return MachineType(
        name=name,
        guest_cpus=_int(record.get("guestCpus"), where, "guestCpus"),
        memory_mb=_int(record.get("memoryMb"), where, "memoryMb"),
        zones=zones,
        accelerators=accelerators,
        local_ssd_partitions=partitions,
        architecture=str(record.get("architecture") or ""),
        is_shared_cpu=bool(record.get("isSharedCpu", False)),
        deprecated=str(deprecated.get("state") or "") if isinstance(deprecated, Mapping) else "",
    )


def _merge(types: Iterable[MachineType]) -> list[MachineType]:
    """One record per name, zones united (the first record's shape wins), sorted."""
    merged: dict[str, MachineType] = {}
    for mt in types:
        known = merged.get(mt.name)
        if known is None:
            merged[mt.name] = mt
        else:
            merged[mt.name] = evolve(
                known,
                zones=(*known.zones, *mt.zones),
                architecture=known.architecture or mt.architecture,
            )
    return [merged[n] for n in sorted(merged)]


def machine_types_from_json(data: Any) -> list[MachineType]:
    """Machine types (one per name, sorted) from a JSON list of records or a saved
    ``aggregatedList`` response; see the module docstring. Raises
    :class:`MachineTypeError` on anything else."""
    records: list[tuple[Mapping[str, Any], str]] = []
    if isinstance(data, Mapping) and isinstance(data.get("items"), Mapping):
        for scope, scoped in data["items"].items():
            if not isinstance(scoped, Mapping):
                continue
            for r in scoped.get("machineTypes") or ():
                if not isinstance(r, Mapping):
                    raise MachineTypeError(f"{scope}: a machine type is not an object")
                zone = r.get("zone") or (scope if str(scope).startswith("zones/") else None)
                records.append(({**r, "zone": zone} if zone else r, str(scope)))
    elif isinstance(data, list):
        for i, r in enumerate(data):
            if not isinstance(r, Mapping):
                raise MachineTypeError(f"machine type {i + 1} is not an object")
            records.append((r, f"machine type {i + 1}"))
    else:
        raise MachineTypeError("not a list of machine types nor an aggregatedList response")
    out = (_from_record(r, where) for r, where in records)
    return _merge(mt for mt in out if mt is not None)


def machine_type_from_proto(mt: Any) -> MachineType | None:
    """A ``compute_v1.MachineType`` message as a :class:`MachineType` (None when it has
    no name, vCPUs or memory, which upstream skips)."""
    if not mt.name or "guest_cpus" not in mt or "memory_mb" not in mt:
        return None
    partitions = 0
    if "bundled_local_ssds" in mt and "partition_count" in mt.bundled_local_ssds:
        partitions = int(mt.bundled_local_ssds.partition_count)
    deprecated = ""
    if "deprecated" in mt and "state" in mt.deprecated:
        deprecated = str(mt.deprecated.state)
    return MachineType(
        name=mt.name,
        guest_cpus=int(mt.guest_cpus),
        memory_mb=int(mt.memory_mb),
        zones=[mt.zone] if mt.zone else [],
        accelerators=[
            Accelerator(a.guest_accelerator_type, int(a.guest_accelerator_count))
            for a in mt.accelerators
        ],
        local_ssd_partitions=partitions,
        architecture=str(mt.architecture) if "architecture" in mt else "",
        is_shared_cpu=bool(mt.is_shared_cpu),
        deprecated=deprecated,
    )


def list_machine_types(client: Any, project: str, region: str) -> list[MachineType]:
    """Every machine type of ``region``'s zones through ``client``
    (``compute_v1.MachineTypesClient``), one per name with the zones that list it.
    Raises :class:`MachineTypeError` when the call fails or finds none."""
    try:
        pager = client.aggregated_list(
            request={"project": project, "filter": region_filter(region)}
        )
        found: list[MachineType] = []
        for scope, scoped in pager:
            for proto in scoped.machine_types:
                mt = machine_type_from_proto(proto)
                if mt is None:
                    continue
                if not mt.zones and str(scope).startswith("zones/"):
                    mt = evolve(mt, zones=[scope])
                found.append(mt)
    except MachineTypeError:
        raise
    except Exception as err:
        raise MachineTypeError(
            f"listing machine types of {region} in project {project}: {type(err).__name__}: {err}"
        ) from err
    # The server-side filter is a regular expression; keep exactly the region's zones.
    prefix = f"{region}-"
    kept = []
    for mt in _merge(found):
        zones = tuple(z for z in mt.zones if z.startswith(prefix))
        if zones:
            kept.append(mt if zones == mt.zones else evolve(mt, zones=zones))
    if not kept:
        raise MachineTypeError(f"no machine types in {region} for project {project}")
    return kept
