"""Template devices: what a node of an instance type *would* publish through its DRA drivers.

The DRA allocator (:mod:`karpenter_core.scheduling.dynamicresources`) simulates claims on
NodeClaims that do not exist yet from each instance type's
:class:`~karpenter_core.scheduling.dynamicresources.DynamicResources` (upstream's
``InstanceType.DynamicResources``). Two sources fill it:

* the cloud provider itself, setting ``InstanceType.dynamic_resources`` (upstream's only
  source; attribute bindings can only come from here);
* every installed DRA driver (``karpenter_dra_drivers`` -> ``DRADriverSpec``), whose
  ``describe_devices(instance_type, nodepool)`` returns the ResourceSlices (``spec`` shape:
  ``{"driver", "pool": {"name"}, "devices": [...], "sharedCounters": [...]}``) a node of
  the type would publish in that NodePool.

:class:`DeviceTemplates` asks the drivers when a NodePool's instance types are resolved and
returns the instance types with the drivers' templates appended to the provider's. Answers
are cached per NodePool version (name, uid, generation) and instance type (name and
capacity), so a driver is asked again only when either changes; an instance type that gains
no templates is returned as it is (the same object), so a cluster without drivers schedules
exactly as before. A driver that raises, or answers with something that is not a list of
ResourceSlice specs for itself, is logged once per driver and NodePool version and treated
as describing no devices: one broken plugin never stops provisioning.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from karpenter_core.apis.base import APIError
from karpenter_core.apis.resource import ResourceSliceSpec
from karpenter_core.scheduling.dynamicresources.devices import (
    AttributeBinding,
    DynamicResources,
    ResourceSliceTemplate,
)

if TYPE_CHECKING:
    from karpenter_core.apis.v1 import NodePool
    from karpenter_core.cloudprovider.types import InstanceType
    from karpenter_core.hookspecs import DRADriverSpec

__all__ = [
    "DeviceTemplates",
    "DriverError",
    "attribute_bindings_of",
    "describe",
    "dynamic_resources_of",
    "parse_template",
    "template_drivers",
    "templates_of",
]

log = logging.getLogger("karpenter.dra")

_NONE = DynamicResources()


class DriverError(ValueError):
    """A DRA driver's answer cannot be used; the message names the driver and the field."""


def dynamic_resources_of(instance_type: Any) -> DynamicResources:
    """The instance type's DRA metadata (empty when it has none)."""
    value = getattr(instance_type, "dynamic_resources", None)
    return value if isinstance(value, DynamicResources) else _NONE


def templates_of(instance_type: Any) -> tuple[ResourceSliceTemplate, ...]:
    """The template slices a node of ``instance_type`` would publish."""
    return dynamic_resources_of(instance_type).resource_slice_templates


def attribute_bindings_of(instance_type: Any) -> tuple[AttributeBinding, ...]:
    """The instance type's attribute bindings (the cloud provider's; drivers declare none)."""
    return dynamic_resources_of(instance_type).attribute_bindings


def template_drivers(instance_type: Any) -> frozenset[str]:
    """The drivers that publish devices on nodes of ``instance_type``."""
    return frozenset(t.driver for t in templates_of(instance_type) if t.devices)


def parse_template(driver: str, raw: Any, path: str = "") -> ResourceSliceTemplate:
    """One ResourceSlice spec from ``driver``'s ``describe_devices`` as a template.

    The ``driver`` field may be left out (it is the driver's own name) but may not name
    another driver; ``pool.name`` is required; node selection fields are ignored (a
    template is always local to its node). Raises :class:`DriverError`."""
    if not isinstance(raw, Mapping):
        raise DriverError(f"{path}: expected a ResourceSlice spec (a mapping)")
    if isinstance(raw.get("spec"), Mapping):  # a whole ResourceSlice object
        raw = raw["spec"]
        path = f"{path}.spec"
    try:
        spec = ResourceSliceSpec.from_dict(raw, path=path)
    except APIError as e:
        raise DriverError(str(e)) from None
    if spec.driver and spec.driver != driver:
        raise DriverError(f"{path}.driver: {spec.driver!r} is not this driver ({driver!r})")
    if not spec.pool.name:
        raise DriverError(f"{path}.pool.name: required")
    names = [d.name for d in spec.devices]
    for i, name in enumerate(names):
        if not name:
            raise DriverError(f"{path}.devices[{i}].name: required")
        if name in names[:i]:
            raise DriverError(f"{path}.devices[{i}].name: duplicate device {name!r}")
    return ResourceSliceTemplate(driver, spec.pool.name, spec.devices, spec.shared_counters)


def describe(
    spec: DRADriverSpec, instance_type: InstanceType, nodepool: NodePool
) -> tuple[ResourceSliceTemplate, ...]:
    """``spec.describe_devices(instance_type, nodepool)`` as templates; raises
    :class:`DriverError` for an answer that cannot be used (and lets the driver's own
    exceptions through)."""
    answer = spec.describe_devices(instance_type, nodepool)
    if answer is None:
        return ()
    if isinstance(answer, Mapping | str | bytes) or not isinstance(answer, Iterable):
        raise DriverError("expected a list of ResourceSlice specs")
    return tuple(parse_template(spec.name, raw, f"[{i}]") for i, raw in enumerate(answer))


def _nodepool_version(nodepool: NodePool) -> tuple[str, str, int]:
    meta = nodepool.metadata
    return (nodepool.name, meta.uid or "", meta.generation or 0)


def _capacity_key(instance_type: InstanceType) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(instance_type.capacity.items()))


class DeviceTemplates:
    """The installed drivers' template devices, attached to instance types (see the module
    docstring). One per operator (the provisioner holds it); not thread-safe."""

    def __init__(self, drivers: Sequence[DRADriverSpec]) -> None:
        self.drivers = tuple(drivers)
        # (nodepool version, type name, capacity) -> the drivers' templates for the type
        self._described: dict[tuple[Any, ...], tuple[ResourceSliceTemplate, ...]] = {}
        # (nodepool version, type name) -> (the type as resolved, the type with templates)
        self._attached: dict[tuple[Any, ...], tuple[InstanceType, InstanceType]] = {}
        self._versions: dict[str, tuple[str, str, int]] = {}
        self._reported: set[tuple[str, tuple[str, str, int]]] = set()
        self.calls = 0
        """Driver calls made (tests and diagnostics)."""

    def attach(
        self, nodepool: NodePool, instance_types: Sequence[InstanceType]
    ) -> list[InstanceType]:
        """``instance_types`` of ``nodepool`` with every driver's templates added to their
        ``dynamic_resources``; a type no driver gives devices is returned unchanged."""
        if not self.drivers:
            return list(instance_types)
        version = _nodepool_version(nodepool)
        if self._versions.get(nodepool.name) != version:
            self._forget(nodepool.name)
            self._versions[nodepool.name] = version
        out: list[InstanceType] = []
        for it in instance_types:
            key = (version, it.name)
            hit = self._attached.get(key)
            if hit is not None and hit[0] is it:
                out.append(hit[1])
                continue
            added = self._templates(version, nodepool, it)
            attached = it
            if added:
                base = dynamic_resources_of(it)
                merged = attrs.evolve(
                    base, resource_slice_templates=base.resource_slice_templates + added
                )
                attached = attrs.evolve(it, dynamic_resources=merged)
            self._attached[key] = (it, attached)
            out.append(attached)
        return out

    def _forget(self, nodepool_name: str) -> None:
        """Drop what was cached for an older version of the NodePool."""
        for cache in (self._described, self._attached):
            for key in [k for k in cache if k[0][0] == nodepool_name]:
                del cache[key]

    def _templates(
        self, version: tuple[str, str, int], nodepool: NodePool, it: InstanceType
    ) -> tuple[ResourceSliceTemplate, ...]:
        key = (version, it.name, _capacity_key(it))
        cached = self._described.get(key)
        if cached is not None:
            return cached
        found: list[ResourceSliceTemplate] = []
        for spec in self.drivers:
            self.calls += 1
            try:
                found.extend(describe(spec, it, nodepool))
            except Exception as e:
                self._report(spec.name, version, it.name, e)
        result = tuple(found)
        self._described[key] = result
        return result

    def _report(
        self, driver: str, version: tuple[str, str, int], type_name: str, error: Exception
    ) -> None:
        if (driver, version) in self._reported:
            return
        self._reported.add((driver, version))
        detail = (
            str(error) if isinstance(error, DriverError) else f"{type(error).__name__}: {error}"
        )
        log.error(
            "DRA driver %s could not describe the devices of instance type %s for nodepool %s "
            "(treated as no devices; later failures of this driver for this nodepool are not "
            "logged): %s",
            driver,
            type_name,
            version[0],
            detail,
        )
