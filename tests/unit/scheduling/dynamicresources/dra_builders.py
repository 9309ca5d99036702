"""Builders for the DRA allocator tests: API slices, templates, claims and NodeClaims in a line.

They mirror the helpers of upstream's ``pkg/scheduling/dynamicresources`` tests (makeAPISlice,
makeTemplate, makeClaim, exactRequest, ...), written as Python over the typed models.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from karpenter_core.apis import labels as wk
from karpenter_core.apis.resource import (
    Device,
    DeviceAttribute,
    DeviceCapacity,
    DeviceClass,
    ResourceClaim,
    ResourceSlice,
)
from karpenter_core.scheduling.dynamicresources import (
    Allocator,
    AttributeBindings,
    NodeClaimDevices,
    ResourceSliceTemplate,
)
from karpenter_core.scheduling.requirements import IN, Requirement, Requirements

GPU_DRIVER = "gpu.example.com"
ZONE = wk.LABEL_TOPOLOGY_ZONE

Attr = int | bool | str


def device(
    name: str,
    attrs: Mapping[str, Attr] | None = None,
    *,
    capacity: Mapping[str, str] | None = None,
    **extra: Any,
) -> Device:
    """A device with typed attributes (bools, ints, strings) and capacities."""
    return Device(
        name=name,
        attributes={k: DeviceAttribute.of(v) for k, v in (attrs or {}).items()},
        capacity={k: DeviceCapacity.of(v) for k, v in (capacity or {}).items()},
        **extra,
    )


def _devices(items: Iterable[str | Device]) -> list[dict[str, Any]]:
    return [(device(d) if isinstance(d, str) else d).to_dict() for d in items]


def api_slice(
    name: str,
    driver: str = GPU_DRIVER,
    pool: str = "pool-a",
    devices: Iterable[str | Device] = (),
    *,
    all_nodes: bool = False,
    zone: Sequence[str] = (),
    node_name: str | None = None,
    generation: int = 1,
    count: int = 1,
    shared_counters: Sequence[dict[str, Any]] = (),
) -> ResourceSlice:
    """A published ResourceSlice (upstream's makeAPISlice with its with* options)."""
    spec: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
        "devices": _devices(devices),
    }
    if all_nodes:
        spec["allNodes"] = True
    if zone:
        spec["nodeSelector"] = {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": ZONE, "operator": "In", "values": list(zone)}]}
            ]
        }
    if node_name is not None:
        spec["nodeName"] = node_name
    if shared_counters:
        spec["sharedCounters"] = list(shared_counters)
    return ResourceSlice.from_dict({"metadata": {"name": name}, "spec": spec})


def template(
    driver: str = GPU_DRIVER, pool: str = "pool-a", *devices: str | Device
) -> ResourceSliceTemplate:
    """A cloud provider template slice (upstream's makeTemplate / makeTemplateWithAttrs)."""
    return ResourceSliceTemplate(
        driver, pool, tuple(device(d) if isinstance(d, str) else d for d in devices)
    )


def device_class(name: str = "gpu", *expressions: str) -> DeviceClass:
    exprs = expressions or (f'device.driver == "{GPU_DRIVER}"',)
    return DeviceClass.from_dict(
        {
            "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": e}} for e in exprs]},
        }
    )


GPU_CLASS = device_class()
CLASSES = {"gpu": GPU_CLASS}


def exact(
    name: str, cls: str = "gpu", count: int = 1, *selectors: str, **extra: Any
) -> dict[str, Any]:
    """An ``exactly`` request (upstream's exactRequest / exactRequestWithSelector)."""
    body: dict[str, Any] = {"deviceClassName": cls, "count": count, **extra}
    if selectors:
        body["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": body}


def all_of(name: str, cls: str = "gpu", *selectors: str) -> dict[str, Any]:
    """An ``All``-mode request (upstream's allRequest)."""
    body: dict[str, Any] = {"deviceClassName": cls, "allocationMode": "All"}
    if selectors:
        body["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": body}


def sub(
    name: str, cls: str = "gpu", count: int = 1, *selectors: str, mode: str = "ExactCount"
) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "deviceClassName": cls, "allocationMode": mode}
    if mode == "ExactCount":
        body["count"] = count
    if selectors:
        body["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return body


def first_available(name: str, *subs: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": list(subs)}


def match(attribute: str, *requests: str) -> dict[str, Any]:
    out: dict[str, Any] = {"matchAttribute": attribute}
    if requests:
        out["requests"] = list(requests)
    return out


def claim(
    name: str,
    *requests: dict[str, Any],
    constraints: Sequence[dict[str, Any]] = (),
    namespace: str = "default",
    status: dict[str, Any] | None = None,
) -> ResourceClaim:
    """A ResourceClaim (upstream's makeClaim / makeClaimWithConstraints)."""
    body: dict[str, Any] = {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": list(requests), "constraints": list(constraints)}},
    }
    if status is not None:
        body["status"] = status
    return ResourceClaim.from_dict(body)


def zone_selector(*zones: str) -> dict[str, Any]:
    return {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": ZONE, "operator": "In", "values": list(zones)}]}
        ]
    }


def allocated_claim(
    name: str,
    zones: Sequence[str] = (),
    *,
    reserved_for: Sequence[dict[str, Any]] = (),
    results: Sequence[dict[str, Any]] = (),
) -> ResourceClaim:
    """A claim allocated in the cluster (upstream's makeAllocatedClaim)."""
    allocation: dict[str, Any] = {"devices": {"results": list(results)}}
    if zones:
        allocation["nodeSelector"] = zone_selector(*zones)
    return claim(name, status={"allocation": allocation, "reservedFor": list(reserved_for)})


def zone_reqs(*zones: str) -> Requirements:
    return Requirements(Requirement.new(ZONE, IN, zones))


def nodeclaim(
    *instance_types: str,
    id: str = "test-nc",
    templates: Mapping[str, Sequence[ResourceSliceTemplate]] | None = None,
    requirements: Requirements | None = None,
    node_name: str = "",
    nodepool: str = "test-np",
) -> NodeClaimDevices:
    """A NodeClaim view (upstream's makeNodeClaim / makeMultiITNodeClaim / fakeNodeClaim)."""
    its = instance_types or tuple(templates or ())
    return NodeClaimDevices(
        id=id,
        instance_types=its,
        resource_slices=dict(templates or {}),
        requirements=requirements if requirements is not None else Requirements(),
        node_name=node_name,
        nodepool=nodepool,
    )


def with_templates(
    *templates: ResourceSliceTemplate, id: str = "test-nc", instance_type: str = "it-1"
) -> NodeClaimDevices:
    """Upstream's makeNodeClaimWithTemplates(AndID): one instance type with these templates."""
    return nodeclaim(instance_type, id=id, templates={instance_type: list(templates)})


def allocator(
    slices: Sequence[ResourceSlice] = (),
    allocated: Iterable[Any] = (),
    bindings: AttributeBindings | None = None,
    classes: Mapping[str, DeviceClass] | None = None,
    deleting: Iterable[str] = (),
    **kw: Any,
) -> Allocator:
    return Allocator(
        slices,
        allocated,
        bindings,
        CLASSES if classes is None else classes,
        frozenset(deleting),
        **kw,
    )
