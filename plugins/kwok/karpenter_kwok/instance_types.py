"""Turn KWOK catalogue entries (upstream's JSON format) into :class:`InstanceType` s.

The format is a JSON list of::

    {"name": "c-1x-amd64-linux", "architecture": "amd64", "operatingSystems": ["linux"],
     "resources": {"cpu": "1", "memory": "2Gi", "pods": "16", "ephemeral-storage": "20Gi"},
     "offerings": [{"Price": 0.019, "Available": true, "ReservationCapacity": 0,
                    "Requirements": [{"key": "karpenter.sh/capacity-type",
                                      "operator": "In", "values": ["spot"]}, ...]}]}

Offering keys are capitalised because upstream embeds a Go struct without JSON tags; like
Go's decoder we match every key case-insensitively. Loading follows upstream:

- ``pods`` defaults to 110 when missing; every offering is forced available;
- the type's requirements are its name, arch and OS, the union of its offerings' zones and
  capacity types, and the four ``karpenter.kwok.sh/instance-*`` labels (size parsed from an
  AWS-style ``family.size`` name, else the CPU count; family = text before the first ``.``
  or ``-``, else the first character; CPU and memory in canonical quantity form);
- every key an offering requirement uses becomes well-known;
- overhead is 100m CPU and 10Mi memory (kube-reserved).

Where upstream silently builds nonsense we stop with an error naming the file, the entry
and the field: missing name/architecture/cpu/memory, an offering without a zone or
capacity type (e.g. upstream's older ``{"zone", "capacityType", "price"}`` example shape),
a bad quantity or operator, a duplicate name. ``CapacityOverride``/``OverheadOverride``
fields (present when the embedded Go struct grew them) are accepted and, as upstream,
ignored.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from karpenter_core.plugin_api import (
    IN,
    InstanceType,
    InstanceTypeOverhead,
    ManifestError,
    Offering,
    QuantityError,
    Requirement,
    Requirements,
    format_quantity,
    parse_json,
    parse_quantity_format,
    read_text,
)
from karpenter_core.plugin_api import labels as core_labels
from karpenter_kwok.generate import generate_instance_type_options
from karpenter_kwok.labels import (
    INSTANCE_CPU_LABEL_KEY,
    INSTANCE_FAMILY_LABEL_KEY,
    INSTANCE_MEMORY_LABEL_KEY,
    INSTANCE_SIZE_LABEL_KEY,
)

__all__ = [
    "BUILTIN_SOURCE",
    "DEFAULT_PODS",
    "KWOK_OVERHEAD",
    "InstanceTypesFileError",
    "default_instance_types",
    "instance_family",
    "instance_size",
    "load_instance_types",
    "load_instance_types_file",
    "parse_instance_types",
]

BUILTIN_SOURCE = "built-in KWOK catalogue"
DEFAULT_PODS = "110"
"""Kubernetes' default pod limit per node, used when an entry does not say."""
KWOK_OVERHEAD = InstanceTypeOverhead(
    kube_reserved={"cpu": 100, "memory": 10 * 1024 * 1024 * 1000}  # 100m, 10Mi
)

_AWS_NAME = re.compile(r"^\w+\.(nano|micro|small|medium|large|\d*xlarge|metal)$")
_FAMILY_DELIMITER = re.compile(r"[.-]")

_ENTRY_FIELDS = ("name", "offerings", "architecture", "operatingSystems", "resources")
_OFFERING_FIELDS = (
    "Price",
    "Available",
    "ReservationCapacity",
    "Requirements",
    "CapacityOverride",
    "OverheadOverride",
)
_REQUIREMENT_FIELDS = ("key", "operator", "values")


class InstanceTypesFileError(ValueError):
    """A KWOK instance-types file (or entry) that cannot be loaded; says where and why."""


def instance_size(name: str, cpu: str) -> str:
    """``large`` for an AWS-style ``m5.large``; otherwise the CPU count (GCP, Azure, generic)."""
    match = _AWS_NAME.match(name)
    return match.group(1) if match else cpu


def instance_family(name: str) -> str:
    """Text before the first ``.`` or ``-`` (``m5``, ``n2``, ``c``), else the first character."""
    if not name:
        return ""
    parts = _FAMILY_DELIMITER.split(name, maxsplit=1)
    return parts[0] if len(parts) == 2 else name[0]


class _Context:
    """Where in the input we are, for error messages."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.entry = ""

    def error(self, where: str, message: str) -> InstanceTypesFileError:
        location = f"{self.source}: {self.entry}" if self.entry else self.source
        if where:
            location = f"{location}: {where}"
        return InstanceTypesFileError(f"{location}: {message}")


def _fields(obj: Any, allowed: Sequence[str], ctx: _Context, where: str) -> dict[str, Any]:
    """Match ``obj``'s keys to ``allowed`` case-insensitively, as Go's JSON decoder does."""
    if not isinstance(obj, Mapping):
        raise ctx.error(where, f"must be an object, got {_describe(obj)}")
    canonical = {name.lower(): name for name in allowed}
    out: dict[str, Any] = {}
    for key, value in obj.items():
        name = canonical.get(str(key).lower())
        if name is None:
            hint = ""
            if str(key).lower() in {"zone", "capacitytype"}:
                hint = (
                    " (this is the older example shape; put zone and capacity type in the"
                    " offering's Requirements)"
                )
            raise ctx.error(
                where,
                f"unknown field {key!r}{hint}; expected one of {', '.join(allowed)}",
            )
        if name in out:
            raise ctx.error(where, f"field {name!r} is given twice (keys are case-insensitive)")
        out[name] = value
    return out


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _string(value: Any, ctx: _Context, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ctx.error(where, f"must be a non-empty string, got {_describe(value)}")
    return value


def _string_list(value: Any, ctx: _Context, where: str) -> list[str]:
    if not isinstance(value, list):
        raise ctx.error(where, f"must be a list of strings, got {_describe(value)}")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise ctx.error(f"{where}[{i}]", f"must be a string, got {_describe(item)}")
    return value


def _resources(value: Any, ctx: _Context) -> tuple[dict[str, int], dict[str, str]]:
    """Parsed resources (milli-units) and their canonical spellings, pods defaulted."""
    if not isinstance(value, Mapping):
        raise ctx.error("resources", f"must be an object of quantities, got {_describe(value)}")
    raw: dict[str, Any] = {"pods": DEFAULT_PODS, **value}
    parsed: dict[str, int] = {}
    canonical: dict[str, str] = {}
    for name, quantity in raw.items():
        if isinstance(quantity, bool) or not isinstance(quantity, str | int | float):
            raise ctx.error(f"resources.{name}", f"must be a quantity, got {_describe(quantity)}")
        try:
            milli, fmt = parse_quantity_format(quantity)
        except QuantityError as exc:
            raise ctx.error(f"resources.{name}", str(exc)) from None
        if milli < 0:
            raise ctx.error(f"resources.{name}", f"must not be negative, got {quantity!r}")
        parsed[name] = milli
        canonical[name] = format_quantity(milli, fmt)
    for required in ("cpu", "memory"):
        if required not in parsed:
            raise ctx.error("resources", f"{required!r} is required")
    return parsed, canonical


def _requirement(obj: Any, ctx: _Context, where: str) -> Requirement:
    fields = _fields(obj, _REQUIREMENT_FIELDS, ctx, where)
    key = _string(fields.get("key"), ctx, f"{where}.key")
    operator = _string(fields.get("operator"), ctx, f"{where}.operator")
    values = _string_list(fields.get("values") or [], ctx, f"{where}.values")
    try:
        return Requirement.new(key, operator, values)
    except ValueError as exc:
        raise ctx.error(where, str(exc)) from None


def _offering(obj: Any, ctx: _Context, where: str) -> Offering:
    fields = _fields(obj, _OFFERING_FIELDS, ctx, where)
    price = fields.get("Price")
    if isinstance(price, bool) or not isinstance(price, int | float):
        raise ctx.error(f"{where}.Price", f"must be a number, got {_describe(price)}")
    if not math.isfinite(price):
        raise ctx.error(f"{where}.Price", f"must be a finite number, got {price!r}")
    if price < 0:
        raise ctx.error(f"{where}.Price", f"must not be negative, got {price!r}")
    available = fields.get("Available", True)
    if not isinstance(available, bool):
        raise ctx.error(f"{where}.Available", f"must be a boolean, got {_describe(available)}")
    reservation_capacity = fields.get("ReservationCapacity", 0) or 0
    if isinstance(reservation_capacity, bool) or not isinstance(reservation_capacity, int):
        raise ctx.error(
            f"{where}.ReservationCapacity",
            f"must be an integer, got {_describe(reservation_capacity)}",
        )
    if reservation_capacity < 0:
        raise ctx.error(
            f"{where}.ReservationCapacity", f"must not be negative, got {reservation_capacity}"
        )
    raw_reqs = fields.get("Requirements")
    if not isinstance(raw_reqs, list):
        raise ctx.error(
            f"{where}.Requirements", f"must be a list of requirements, got {_describe(raw_reqs)}"
        )
    requirements = Requirements()
    for i, raw in enumerate(raw_reqs):
        requirements.add(_requirement(raw, ctx, f"{where}.Requirements[{i}]"))
    for key in (core_labels.LABEL_TOPOLOGY_ZONE, core_labels.CAPACITY_TYPE_LABEL_KEY):
        req = requirements.get(key)
        if not requirements.has(key) or req.complement or not req.values:
            raise ctx.error(f"{where}.Requirements", f'needs "{key}" In [<value>]')
    # Upstream forces every offering available: the catalogue describes what exists, and
    # availability is only ever learnt at launch.
    return Offering(
        requirements=requirements,
        price=float(price),
        available=True,
        reservation_capacity=reservation_capacity,
    )


def _union(offerings: Sequence[Offering], key: str) -> list[str]:
    seen: dict[str, None] = {}
    for o in offerings:
        for value in sorted(o.requirements.get(key).values):
            seen.setdefault(value)
    return list(seen)


def _instance_type(obj: Any, ctx: _Context) -> InstanceType:
    fields = _fields(obj, _ENTRY_FIELDS, ctx, "")
    name = _string(fields.get("name"), ctx, "name")
    ctx.entry = f'{ctx.entry} "{name}"'
    arch = _string(fields.get("architecture"), ctx, "architecture")
    os_names = _string_list(fields.get("operatingSystems"), ctx, "operatingSystems")
    if not os_names:
        raise ctx.error("operatingSystems", "must name at least one operating system")
    capacity, canonical = _resources(fields.get("resources"), ctx)
    raw_offerings = fields.get("offerings") or []
    if not isinstance(raw_offerings, list):
        raise ctx.error("offerings", f"must be a list, got {_describe(raw_offerings)}")
    offerings = [_offering(o, ctx, f"offerings[{i}]") for i, o in enumerate(raw_offerings)]

    cpu, memory = canonical["cpu"], canonical["memory"]
    requirements = Requirements(
        Requirement.new(core_labels.LABEL_INSTANCE_TYPE, IN, [name]),
        Requirement.new(core_labels.LABEL_ARCH, IN, [arch]),
        Requirement.new(core_labels.LABEL_OS, IN, os_names),
        Requirement.new(
            core_labels.LABEL_TOPOLOGY_ZONE, IN, _union(offerings, core_labels.LABEL_TOPOLOGY_ZONE)
        ),
        Requirement.new(
            core_labels.CAPACITY_TYPE_LABEL_KEY,
            IN,
            _union(offerings, core_labels.CAPACITY_TYPE_LABEL_KEY),
        ),
        Requirement.new(INSTANCE_SIZE_LABEL_KEY, IN, [instance_size(name, cpu)]),
        Requirement.new(INSTANCE_FAMILY_LABEL_KEY, IN, [instance_family(name)]),
        Requirement.new(INSTANCE_CPU_LABEL_KEY, IN, [cpu]),
        Requirement.new(INSTANCE_MEMORY_LABEL_KEY, IN, [memory]),
    )
    return InstanceType(
        name=name,
        requirements=requirements,
        offerings=offerings,
        capacity=capacity,
        overhead=KWOK_OVERHEAD,
    )


def parse_instance_types(data: Any, source: str = "instance types") -> list[InstanceType]:
    """Build instance types from decoded KWOK JSON (a list of entries).

    ``source`` names the input in errors (the file path). Registers every offering
    requirement key as well-known, as upstream does, so NodePools may select on it.
    """
    ctx = _Context(source)
    if not isinstance(data, list):
        raise ctx.error("", f"must be a JSON list of instance types, got {_describe(data)}")
    out: list[InstanceType] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(data):
        ctx.entry = f"entry {index}"
        it = _instance_type(entry, ctx)
        if it.name in seen:
            raise ctx.error("name", f"duplicates entry {seen[it.name]}")
        seen[it.name] = index
        out.append(it)
    ctx.entry = ""
    core_labels.register_well_known_labels(
        {key for it in out for o in it.offerings for key in o.requirements}
    )
    return out


def load_instance_types_file(path: str) -> list[InstanceType]:
    """Read and parse a KWOK instance-types JSON file; errors name the file.

    The file is read by karpenter-core's loader, with its limits (a regular file of bounded
    size; bounded nesting and integers), so a device, a FIFO or a hostile file is one line."""
    try:
        text = read_text(path)
    except ManifestError as exc:
        reason = str(exc).removeprefix(f"{path}: ")
        raise InstanceTypesFileError(
            f"{path}: could not read instance types file: {reason}"
        ) from None
    try:
        data = parse_json(text, path)
    except ManifestError as exc:
        raise InstanceTypesFileError(str(exc)) from None
    return parse_instance_types(data, source=path)


@functools.cache
def _builtin() -> tuple[InstanceType, ...]:
    return tuple(parse_instance_types(generate_instance_type_options(), source=BUILTIN_SOURCE))


def default_instance_types() -> list[InstanceType]:
    """The 144-type built-in catalogue (parsed once; the values are immutable)."""
    return list(_builtin())


def load_instance_types(path: str | None = None) -> list[InstanceType]:
    """The file at ``path`` when given (and non-empty), else the built-in catalogue."""
    return load_instance_types_file(path) if path else default_instance_types()
