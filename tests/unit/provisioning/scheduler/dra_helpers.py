"""Builders for the scheduler's DRA tests, after upstream's ``pkg/test/dra.go`` and
``pkg/cloudprovider/fake`` helpers (GPUInstanceType, ClusterWideSlice, ZonedSlice,
NodeLocalSlice, AllocatedClusterWideClaim, ...), written over the typed models, plus a
one-call solve with DRA simulated and what a claim got."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from karpenter_core.apis import labels as wk
from karpenter_core.apis.objects import Node, Pod
from karpenter_core.apis.resource import (
    Device,
    DeviceAttribute,
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from karpenter_core.apis.v1 import NodeClaim, NodePool
from karpenter_core.cloudprovider.types import InstanceType
from karpenter_core.provisioning.scheduler import (
    DEFAULT_OPTIONS,
    DRAInputs,
    Results,
    SchedulerOptions,
    schedule,
)
from karpenter_core.scheduling.dynamicresources import (
    AttributeBinding,
    DynamicResources,
    ResourceSliceTemplate,
)
from karpenter_core.state.snapshot import ClusterSnapshot
from karpenter_core.testing.fakecatalog import instance_type

GPU = "gpu.example.com"
NIC = "nic.example.com"
ZONE = wk.LABEL_TOPOLOGY_ZONE
DRA_OPTIONS = attrs.evolve(DEFAULT_OPTIONS, ignore_dra_requests=False)

_ids = itertools.count()


# --- instance types ----------------------------------------------------------------------------


def with_templates(
    it: InstanceType,
    *templates: ResourceSliceTemplate,
    bindings: Sequence[AttributeBinding] = (),
) -> InstanceType:
    return attrs.evolve(it, dynamic_resources=DynamicResources(templates, tuple(bindings)))


def device(name: str, attributes: Mapping[str, int | bool | str] | None = None) -> Device:
    return Device(
        name=name, attributes={k: DeviceAttribute.of(v) for k, v in (attributes or {}).items()}
    )


def template(driver: str, pool: str, *devices: str | Device) -> ResourceSliceTemplate:
    return ResourceSliceTemplate(
        driver, pool, tuple(device(d) if isinstance(d, str) else d for d in devices)
    )


def gpu_type(name: str, count: int, **kw: Any) -> InstanceType:
    """Upstream's ``fake.GPUInstanceType``: ``count`` GPUs in pool ``<name>-pool``."""
    return with_templates(
        instance_type(name, **kw),
        template(GPU, f"{name}-pool", *(f"{name}-gpu-{i}" for i in range(count))),
    )


def gpu_and_nic_type(name: str) -> InstanceType:
    """Upstream's ``fake.GPUAndNICInstanceType``: a GPU and a NIC, each its own driver."""
    return with_templates(
        instance_type(name),
        template(GPU, f"{name}-gpu-pool", f"{name}-gpu-0"),
        template(NIC, f"{name}-nic-pool", f"{name}-nic-0"),
    )


def plain_type(name: str, **kw: Any) -> InstanceType:
    return instance_type(name, **kw)


# --- API objects ---------------------------------------------------------------------------------


def device_class(name: str, driver: str) -> DeviceClass:
    """Upstream's ``test.DeviceClassWithSelector``."""
    return DeviceClass.from_dict(
        {
            "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
        }
    )


CLASSES = (device_class("gpu", GPU), device_class("nic", NIC))


def exact(name: str, cls: str = "gpu", count: int = 1, *selectors: str) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": cls, "count": count}
    if selectors:
        body["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": body}


def all_devices(name: str, cls: str = "gpu") -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": cls, "allocationMode": "All"}}


def first_available(name: str, *subs: tuple[str, str, int]) -> dict[str, Any]:
    return {
        "name": name,
        "firstAvailable": [
            {"name": n, "deviceClassName": cls, "count": count} for n, cls, count in subs
        ],
    }


def claim_spec(
    *requests: Mapping[str, Any], constraints: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    return {"devices": {"requests": list(requests), "constraints": list(constraints)}}


def claim(
    name: str,
    *requests: Mapping[str, Any],
    namespace: str = "default",
    constraints: Sequence[Mapping[str, Any]] = (),
    status: Mapping[str, Any] | None = None,
    owner_uid: str | None = None,
) -> ResourceClaim:
    """Upstream's ``test.ResourceClaimForRequests``."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owner_uid is not None:
        meta["ownerReferences"] = [{"kind": "Pod", "name": "owner", "uid": owner_uid}]
    body: dict[str, Any] = {
        "metadata": meta,
        "spec": claim_spec(*requests, constraints=constraints),
    }
    if status is not None:
        body["status"] = dict(status)
    return ResourceClaim.from_dict(body)


def claim_template(name: str, *requests: Mapping[str, Any]) -> ResourceClaimTemplate:
    return ResourceClaimTemplate.from_dict(
        {
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"spec": claim_spec(*requests)},
        }
    )


def pod_consumer(p: Pod) -> dict[str, Any]:
    """Upstream's ``test.PodConsumer``: a reservedFor entry for the pod."""
    return {"resource": "pods", "name": p.name, "uid": p.uid}


def allocated_claim(
    name: str,
    pool: str,
    driver: str,
    device_name: str,
    *consumers: Mapping[str, Any],
    node: str | None = None,
    zone: str | None = None,
) -> ResourceClaim:
    """A claim allocated in the cluster (upstream's ``test.AllocatedClusterWideClaim``):
    one device, reserved for ``consumers``; pinned to ``node`` (matchFields, as
    kube-scheduler pins node-local devices) or ``zone`` when given."""
    allocation: dict[str, Any] = {
        "devices": {
            "results": [{"request": "req", "driver": driver, "pool": pool, "device": device_name}]
        }
    }
    if node is not None:
        allocation["nodeSelector"] = {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
            ]
        }
    elif zone is not None:
        allocation["nodeSelector"] = {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}
            ]
        }
    return claim(
        name,
        exact("req"),
        status={"allocation": allocation, "reservedFor": list(consumers)},
    )


def _slice(name: str, driver: str, pool: str, devices: Iterable[str], **spec: Any) -> ResourceSlice:
    return ResourceSlice.from_dict(
        {
            "metadata": dict(spec.pop("metadata", {}), name=name),
            "spec": {
                "driver": driver,
                "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": d} for d in devices],
                **spec,
            },
        }
    )


def cluster_wide_slice(pool: str, driver: str, *devices: str) -> ResourceSlice:
    """Upstream's ``test.ClusterWideSlice``: devices every node can use."""
    return _slice(pool, driver, pool, devices, allNodes=True)


def zoned_slice(pool: str, driver: str, zone: str, *devices: str) -> ResourceSlice:
    """Upstream's ``test.ZonedSlice``: devices the nodes of one zone can use."""
    selector = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}
        ]
    }
    return _slice(pool, driver, pool, devices, nodeSelector=selector)


def node_local_pool(driver: str, node: str) -> str:
    """Upstream's ``test.NodeLocalPoolName``."""
    return f"{driver}-{node}"


def node_local_slice(node: str, driver: str, *devices: str) -> ResourceSlice:
    """Upstream's ``test.NodeLocalSlice``: pinned to the node by name, owned by it."""
    return _slice(
        f"{node}-{driver}",
        driver,
        node_local_pool(driver, node),
        devices,
        nodeName=node,
        metadata={"ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node}]},
    )


# --- pods and nodes ------------------------------------------------------------------------------


def dra_pod(
    *claims: tuple[str, str],
    templates: Sequence[tuple[str, str]] = (),
    statuses: Sequence[Mapping[str, Any]] = (),
    cpu: str = "1",
    node_selector: Mapping[str, str] | None = None,
    node_name: str | None = None,
    uid: str | None = None,
    name: str | None = None,
) -> Pod:
    """A pending pod referencing claims by name (``(entry, claim)``) and from templates
    (``(entry, template)``), each used by its container (upstream's ``draPodForClaims``)."""
    n = next(_ids)
    pod_name = name or f"dra-pod-{n:04d}"
    entries = [{"name": e, "resourceClaimName": c} for e, c in claims]
    entries += [{"name": e, "resourceClaimTemplateName": t} for e, t in templates]
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "c",
                "image": "pause",
                "resources": {
                    "requests": {"cpu": cpu},
                    "claims": [{"name": e["name"]} for e in entries],
                },
            }
        ],
        "resourceClaims": entries,
    }
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    status: dict[str, Any] = {"phase": "Pending"}
    if node_name is not None:
        spec["nodeName"] = node_name
        status = {"phase": "Running"}
    if statuses:
        status["resourceClaimStatuses"] = [dict(s) for s in statuses]
    return Pod.from_dict(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": pod_name,
                "namespace": "default",
                "uid": uid or f"dra-uid-{n:04d}",
                "creationTimestamp": "2024-01-01T00:00:00Z",
            },
            "spec": spec,
            "status": status,
        }
    )


def existing_node(
    name: str, it: str, *, initialized: bool, pool: str = "default", cpu: str = "4"
) -> tuple[Node, NodeClaim]:
    """A managed node of instance type ``it`` (upstream's ``existingNode`` helper)."""
    labels = {
        wk.NODEPOOL_LABEL_KEY: pool,
        wk.LABEL_INSTANCE_TYPE: it,
        wk.LABEL_HOSTNAME: name,
        ZONE: "test-zone-1",
        wk.LABEL_ARCH: "amd64",
        wk.LABEL_OS: "linux",
        wk.CAPACITY_TYPE_LABEL_KEY: "on-demand",
        wk.NODE_REGISTERED_LABEL_KEY: "true",
    }
    if initialized:
        labels[wk.NODE_INITIALIZED_LABEL_KEY] = "true"
    capacity = {"cpu": cpu, "memory": "4Gi", "pods": "10"}
    node = Node.from_dict(
        {
            "metadata": {"name": name, "labels": labels},
            "spec": {"providerID": f"fake://{name}"},
            "status": {"capacity": capacity, "allocatable": capacity},
        }
    )
    nodeclaim = NodeClaim.from_dict(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.test.sh",
                    "kind": "TestNodeClass",
                    "name": "default",
                },
                "requirements": [],
            },
            "status": {
                "providerID": f"fake://{name}",
                "nodeName": name,
                "capacity": capacity,
                "allocatable": capacity,
            },
        }
    )
    return node, nodeclaim


def nodepool(name: str = "default") -> NodePool:
    return NodePool.from_dict(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": name},
            "spec": {
                "template": {
                    "spec": {
                        "nodeClassRef": {
                            "group": "karpenter.test.sh",
                            "kind": "TestNodeClass",
                            "name": "default",
                        },
                        "requirements": [],
                    }
                }
            },
        }
    )


# --- solving ---------------------------------------------------------------------------------


def solve(
    pods: Sequence[Pod],
    instance_types: Sequence[InstanceType],
    *,
    classes: Iterable[DeviceClass] = CLASSES,
    claims: Iterable[ResourceClaim] = (),
    templates: Iterable[ResourceClaimTemplate] = (),
    slices: Iterable[ResourceSlice] = (),
    nodes: Sequence[tuple[Node, NodeClaim]] = (),
    running: Sequence[Pod] = (),
    deleting_pod_uids: Iterable[str] = (),
    options: SchedulerOptions = DRA_OPTIONS,
    dra: bool = True,
) -> Results:
    """One solve with DRA simulated over these objects (``dra=False``: no inputs at all)."""
    snapshot = ClusterSnapshot(
        nodes=[n for n, _ in nodes],
        nodeclaims=[c for _, c in nodes],
        pods=[*pods, *running],
    )
    inputs = DRAInputs.of(classes, claims, templates, slices, deleting_pod_uids) if dra else None
    pool = nodepool()
    return schedule(snapshot, pods, [pool], {pool.name: list(instance_types)}, options, dra=inputs)


def placed_on(results: Results, p: Pod) -> str | None:
    """Where the pod went: ``new:<index>`` for a new NodeClaim, the node's name, or None."""
    for i, nc in enumerate(results.new_nodeclaims):
        if any(q.key == p.key for q in nc.pods):
            return f"new:{i}"
    for node in results.existing_nodes:
        if any(q.key == p.key for q in node.pods):
            return node.name
    return None


def allocated(results: Results, name: str, namespace: str = "default") -> list[str]:
    """The ``pool/device`` names a claim got, on the instance type its NodeClaim would
    launch (the cheapest it allocated on), as upstream's ``ExpectResourceClaimAllocated``
    reads them after binding."""
    meta = results.dra_claim_allocations.get((namespace, name))
    assert meta is not None, f"claim {namespace}/{name} was not allocated"
    by_it = meta.devices
    for nc in results.new_nodeclaims:
        if nc.hostname == meta.nodeclaim:
            for info in nc.instance_types_by_price():
                if info.name in by_it:
                    return [f"{d.device.pool}/{d.device.device}" for d in by_it[info.name]]
    [devices] = by_it.values()  # an existing node: its one instance type
    return [f"{d.device.pool}/{d.device.device}" for d in devices]


def request_refs(results: Results, name: str) -> list[str]:
    """The request each allocated device answers (``req/sub`` for a firstAvailable one)."""
    meta = results.dra_claim_allocations[("default", name)]
    return [str(d.request) for devices in meta.devices.values() for d in devices]


def nodeclaim_requirement(results: Results, index: int, key: str) -> set[str]:
    return set(results.new_nodeclaims[index].launch_requirements().get(key).values)
