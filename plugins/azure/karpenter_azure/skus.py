"""Azure Resource SKUs (``Microsoft.Compute/skus``) as typed values.

The Resource SKUs API is Azure's catalogue: one entry per VM size and region with its
capabilities as name/value strings (``vCPUs``, ``MemoryGB``, ``LowPriorityCapable``...),
its zones (``locationInfo``) and what the subscription may not use (``restrictions``).
Upstream reads it through the ``skewer`` library; :class:`Sku` answers the same questions
(same capability names, same case rules, same zone arithmetic) so instance types built
here match upstream's.

A :class:`Sku` is built from the REST JSON shape (camelCase keys, as ``az vm list-skus -o
json`` prints and as the bundled snapshot stores it) by :meth:`Sku.from_dict`, and
:meth:`Sku.to_dict` writes that shape back. :func:`list_skus` reads a region's SKUs through
the official SDK (``azure-mgmt-compute``'s ``resource_skus.list``, which follows
``nextLink`` paging).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import field, frozen

__all__ = [
    "RESOURCE_TYPE_VIRTUAL_MACHINES",
    "LocationInfo",
    "Restriction",
    "Sku",
    "SkuError",
    "VMSize",
    "ZoneDetail",
    "by_name",
    "list_skus",
    "location_equals",
    "parse_vm_size",
    "skus_from_json",
]

RESOURCE_TYPE_VIRTUAL_MACHINES = "virtualMachines"
RESTRICTION_LOCATION = "Location"
RESTRICTION_ZONE = "Zone"


class SkuError(RuntimeError):
    """The Resource SKUs could not be read or parsed (the message says which and why)."""


def _normalize(value: str) -> str:
    """Lower case without white space: how skewer compares locations and list values."""
    return "".join(c for c in value if not c.isspace()).lower()


def location_equals(a: str, b: str) -> bool:
    """``"West Central US"`` and ``"westcentralus"`` name the same location."""
    return _normalize(a) == _normalize(b)


# --- VM size names ------------------------------------------------------------------------

# Azure's VM naming convention (learn.microsoft.com "vm-naming-conventions"):
# family, sub-family, vCPUs, -constrained vCPUs, additive features, accelerator, version.
_VM_SIZE = re.compile(
    r"^([A-Z])([A-Z]?)([A-Z]?)([0-9]+)-?((?:[0-9]+)?)((?:[abcdeilmtspPr]+|C+|NP)?)_?"
    r"(?:([A-Z][0-9]+)_?)?(_cc_)?(_[0-9]+_)?(_MI300X_)?(_H100_)?((?:[vV][1-9])?)?(_Promo)?$"
)


@frozen
class VMSize:
    """The parts of a VM size name (``D16plds_v5``: family D, 16 vCPUs, features
    ``plds``, version ``v5``, series ``Dplds_v5``)."""

    family: str
    subfamily: str
    cpus: str
    cpus_constrained: str | None
    additive_features: str
    accelerator_type: str | None
    version: str
    promo: bool

    @property
    def series(self) -> str:
        """Family, sub-family, features and version: ``Dplds_v5``."""
        version = f"_{self.version}" if self.version else ""
        return f"{self.family}{self.subfamily}{self.additive_features}{version}"

    @property
    def version_number(self) -> str:
        """The version without its ``v`` (``"5"``), ``"1"`` when the name has none, ``""``
        when it is malformed (then nothing can select by version)."""
        if not self.version:
            return "1"
        if self.version[0] not in "vV":
            return ""
        return self.version[1:]


# Names the convention's pattern cannot take apart, spelled out (as skewer does).
_IRREGULAR_SIZES = {
    "M416s_8_v2": VMSize(
        family="M",
        subfamily="",
        cpus="416",
        cpus_constrained=None,
        additive_features="s",
        accelerator_type=None,
        version="v2",
        promo=False,
    ),
}


def parse_vm_size(size: str) -> VMSize | None:
    """The parts of a VM size (the SKU's ``size``, without ``Standard_``); None when the
    name does not follow the convention (upstream skips such SKUs)."""
    match = _VM_SIZE.match(size)
    if match is None:
        return _IRREGULAR_SIZES.get(size)
    g = match.groups(default="")
    return VMSize(
        family=g[0],
        subfamily=g[1] + g[2] if g[1] else "",
        cpus=g[3],
        cpus_constrained=g[4] or None,
        additive_features=g[5],
        accelerator_type=g[6] or None,
        version=g[11],
        promo=g[12] == "_Promo",
    )


# --- the SKU -------------------------------------------------------------------------------


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _strs(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        return ()
    return tuple(v for v in value if isinstance(v, str))


def _caps(value: Any) -> tuple[tuple[str, str | None], ...]:
    out: list[tuple[str, str | None]] = []
    for cap in value if isinstance(value, list | tuple) else ():
        if isinstance(cap, Mapping) and isinstance(cap.get("name"), str):
            raw = cap.get("value")
            out.append((cap["name"], raw if isinstance(raw, str) else None))
    return tuple(out)


def _pick(d: Mapping[str, Any], *keys: str) -> Any:
    """The first key present: REST JSON is camelCase, the SDK's ``as_dict`` snake_case."""
    for key in keys:
        if key in d:
            return d[key]
    return None


@frozen
class Restriction:
    """Why the subscription may not use the SKU somewhere: ``Location`` (the whole
    region) or ``Zone`` (the listed zones)."""

    type: str
    values: tuple[str, ...]
    locations: tuple[str, ...] = ()
    zones: tuple[str, ...] = ()
    reason_code: str = ""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Restriction:
        info = _pick(d, "restrictionInfo", "restriction_info") or {}
        return cls(
            type=_str(d.get("type")),
            values=_strs(d.get("values")),
            locations=_strs(info.get("locations")) if isinstance(info, Mapping) else (),
            zones=_strs(info.get("zones")) if isinstance(info, Mapping) else (),
            reason_code=_str(_pick(d, "reasonCode", "reason_code")),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "values": list(self.values),
            "restrictionInfo": {"locations": list(self.locations), "zones": list(self.zones)},
            "reasonCode": self.reason_code,
        }


@frozen
class ZoneDetail:
    """Capabilities that hold only in some zones (``UltraSSDAvailable`` in practice)."""

    names: tuple[str, ...]
    capabilities: tuple[tuple[str, str | None], ...]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ZoneDetail:
        return cls(names=_strs(d.get("name")), capabilities=_caps(d.get("capabilities")))

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": list(self.names),
            "capabilities": [{"name": n, "value": v} for n, v in self.capabilities],
        }


@frozen
class LocationInfo:
    """Where the SKU is offered: a location, its zones, and per-zone capabilities."""

    location: str
    zones: tuple[str, ...] = ()
    zone_details: tuple[ZoneDetail, ...] = ()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LocationInfo:
        details = _pick(d, "zoneDetails", "zone_details")
        return cls(
            location=_str(d.get("location")),
            zones=_strs(d.get("zones")),
            zone_details=tuple(
                ZoneDetail.from_dict(z)
                for z in (details if isinstance(details, list) else ())
                if isinstance(z, Mapping)
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "location": self.location,
            "zones": list(self.zones),
            "zoneDetails": [z.to_dict() for z in self.zone_details],
        }


def _is_true(value: str | None) -> bool:
    return value is not None and value.lower() == "true"


@frozen
class Sku:
    """One Resource SKU. Capability names are looked up as skewer does: numbers and
    strings by exact name, flags (``...Supported``, ``...Enabled``) case-insensitively."""

    name: str
    resource_type: str = RESOURCE_TYPE_VIRTUAL_MACHINES
    tier: str = ""
    size: str = ""
    family: str = ""
    locations: tuple[str, ...] = ()
    location_info: tuple[LocationInfo, ...] = ()
    capabilities: tuple[tuple[str, str | None], ...] = ()
    restrictions: tuple[Restriction, ...] = ()
    _by_name: Mapping[str, str | None] = field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        by_name: dict[str, str | None] = {}
        for name, value in self.capabilities:
            by_name.setdefault(name, value)  # the first one wins, as skewer's loop
        object.__setattr__(self, "_by_name", by_name)

    # --- JSON --------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Sku:
        """A SKU from its REST JSON (camelCase) or the SDK's ``as_dict()`` (snake_case)."""
        infos = _pick(d, "locationInfo", "location_info")
        restrictions = d.get("restrictions")
        return cls(
            name=_str(d.get("name")),
            resource_type=_str(_pick(d, "resourceType", "resource_type")),
            tier=_str(d.get("tier")),
            size=_str(d.get("size")),
            family=_str(d.get("family")),
            locations=_strs(d.get("locations")),
            location_info=tuple(
                LocationInfo.from_dict(i)
                for i in (infos if isinstance(infos, list) else ())
                if isinstance(i, Mapping)
            ),
            capabilities=_caps(d.get("capabilities")),
            restrictions=tuple(
                Restriction.from_dict(r)
                for r in (restrictions if isinstance(restrictions, list) else ())
                if isinstance(r, Mapping)
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        """The REST JSON shape (what :meth:`from_dict` reads back unchanged)."""
        return {
            "name": self.name,
            "resourceType": self.resource_type,
            "tier": self.tier,
            "size": self.size,
            "family": self.family,
            "locations": list(self.locations),
            "locationInfo": [i.to_dict() for i in self.location_info],
            "capabilities": [{"name": n, "value": v} for n, v in self.capabilities],
            "restrictions": [r.to_dict() for r in self.restrictions],
        }

    # --- capabilities ------------------------------------------------------------------

    def capability_map(self) -> dict[str, str]:
        """Capabilities as name -> value (the first of repeated names; valueless ones
        left out), for code that reads them by name (the launch template's disk
        placement)."""
        return {k: v for k, v in self._by_name.items() if v is not None}

    def capability(self, name: str) -> str | None:
        """The capability's value (exact name), None when absent."""
        return self._by_name.get(name)

    def _int(self, name: str) -> int | None:
        value = self.capability(name)
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None

    def _float(self, name: str) -> float | None:
        value = self.capability(name)
        try:
            return float(value) if value is not None else None
        except ValueError:
            return None

    def has_capability(self, name: str) -> bool:
        """A flag capability is ``True`` (names and values compared case-insensitively;
        the first entry of that name decides)."""
        for cap, value in self.capabilities:
            if cap.lower() == name.lower():
                return _is_true(value)
        return False

    def capability_contains(self, name: str, value: str) -> bool:
        """A list capability (``HyperVGenerations: "V1,V2"``) contains ``value``
        (substring, case- and space-insensitive, as skewer)."""
        for cap, raw in self.capabilities:
            if cap.lower() == name.lower():
                return raw is not None and _normalize(value) in _normalize(raw)
        return False

    @property
    def vcpus(self) -> int | None:
        return self._int("vCPUs")

    @property
    def memory_gib(self) -> float | None:
        """``MemoryGB``, which despite its name is in GiB."""
        return self._float("MemoryGB")

    @property
    def gpus(self) -> int | None:
        return self._int("GPUs")

    @property
    def architecture(self) -> str | None:
        """``CpuArchitectureType``: ``x64`` or ``Arm64``."""
        return self.capability("CpuArchitectureType")

    @property
    def max_cached_disk_bytes(self) -> int | None:
        return self._int("CachedDiskBytes")

    @property
    def max_resource_volume_mib(self) -> int | None:
        """``MaxResourceVolumeMB``, which is in MiB."""
        return self._int("MaxResourceVolumeMB")

    @property
    def nvme_disk_size_mib(self) -> int | None:
        return self._int("NvmeDiskSizeInMiB")

    @property
    def low_priority_capable(self) -> bool:
        """Whether Azure sells the SKU as spot here (there are no spot restrictions:
        a spot-restricted SKU says ``LowPriorityCapable: False``)."""
        return self.has_capability("LowPriorityCapable")

    @property
    def premium_io(self) -> bool:
        return self.has_capability("PremiumIO")

    @property
    def accelerated_networking(self) -> bool:
        return self.has_capability("AcceleratedNetworkingEnabled")

    @property
    def ephemeral_os_disk_supported(self) -> bool:
        return self.has_capability("EphemeralOSDiskSupported")

    @property
    def encryption_at_host_supported(self) -> bool:
        return self.has_capability("EncryptionAtHostSupported")

    @property
    def hyperv_gen1(self) -> bool:
        return self.capability_contains("HyperVGenerations", "V1")

    @property
    def hyperv_gen2(self) -> bool:
        return self.capability_contains("HyperVGenerations", "V2")

    @property
    def trusted_launch_supported(self) -> bool:
        """Generation 2 and not ``TrustedLaunchDisabled: True`` (Azure's documented rule)."""
        return self.hyperv_gen2 and not self.capability_contains("TrustedLaunchDisabled", "True")

    @property
    def nvme_ephemeral_os_disk(self) -> bool:
        return self.capability_contains("SupportedEphemeralOSDiskPlacements", "NvmeDisk")

    def ultra_ssd_without_zone(self) -> bool:
        """Ultra disks on a VM placed without a zone (the SKU-level capability)."""
        return self.has_capability("UltraSSDAvailable")

    def ultra_ssd_in_zone(self, zone: str) -> bool:
        """Ultra disks in the ARM zone ``zone`` ("1"), from the per-zone details."""
        for info in self.location_info:
            for detail in info.zone_details:
                if not any(zone.lower() == n.lower() for n in detail.names):
                    continue
                for cap, value in detail.capabilities:
                    if cap.lower() == "ultrassdavailable" and _is_true(value):
                        return True
        return False

    def vm_size(self) -> VMSize | None:
        """The parsed ``size``; None when it does not follow the naming convention."""
        return parse_vm_size(self.size)

    # --- where it can run --------------------------------------------------------------

    def has_location_restriction(self, location: str) -> bool:
        """The subscription may not use the SKU anywhere in ``location``."""
        return any(
            r.type == RESTRICTION_LOCATION and any(location_equals(v, location) for v in r.values)
            for r in self.restrictions
        )

    def availability_zones(self, location: str) -> frozenset[str]:
        """ARM zones ("1", "2", "3") of ``location`` the SKU may be used in: its
        ``locationInfo`` zones less zone restrictions; none when the location is restricted
        or the SKU is regional only."""
        zones: set[str] = set()
        restricted: set[str] = set()
        for info in self.location_info:
            if not location_equals(info.location, location):
                continue
            zones.update(info.zones)
            for r in self.restrictions:
                if not any(location_equals(v, location) for v in r.values):
                    continue
                if r.type == RESTRICTION_LOCATION:
                    return frozenset()
                restricted.update(r.zones)
        return frozenset(zones - restricted)


def skus_from_json(data: Any) -> list[Sku]:
    """SKUs from a Resource SKUs JSON document: a list (``az vm list-skus -o json``) or a
    page (``{"value": [...]}``). Raises :class:`SkuError` for anything else."""
    items = data.get("value") if isinstance(data, Mapping) else data
    if not isinstance(items, list):
        raise SkuError("expected a JSON list of Resource SKUs or an object with a 'value' list")
    return [Sku.from_dict(item) for item in items if isinstance(item, Mapping)]


def list_skus(compute_client: Any, location: str) -> list[Sku]:
    """The virtual-machine SKUs of ``location`` (every page) through
    ``azure.mgmt.compute.ComputeManagementClient.resource_skus``.

    The location filter is ARM's (``location eq '<location>'``), as upstream's; other
    resource types (disks, availability sets) are dropped here. Raises :class:`SkuError`
    naming the location when ARM fails.
    """
    out: list[Sku] = []
    try:
        pages: Iterable[Any] = compute_client.resource_skus.list(filter=f"location eq '{location}'")
        for item in pages:
            # azure-mgmt-compute's models are mappings of the REST (camelCase) fields
            raw = item.as_dict() if hasattr(item, "as_dict") else item
            sku = Sku.from_dict(raw if isinstance(raw, Mapping) else {})
            if sku.resource_type.lower() == RESOURCE_TYPE_VIRTUAL_MACHINES.lower():
                out.append(sku)
    except SkuError:
        raise
    except Exception as err:  # the SDK raises HttpResponseError, ServiceRequestError, ...
        message = " ".join(str(err).split())[:300] or type(err).__name__
        raise SkuError(f"listing Resource SKUs in {location}: {message}") from err
    return out


def by_name(skus: Sequence[Sku]) -> dict[str, Sku]:
    """SKUs keyed by name (the first of duplicate names wins)."""
    out: dict[str, Sku] = {}
    for sku in skus:
        out.setdefault(sku.name, sku)
    return out
