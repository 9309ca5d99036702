"""The simulated kube-scheduler's DynamicResources plugin (karpenter_core.sim.dra): the
PreFilter messages, the per-node Filter reasons, and the claim writes of Reserve/PreBind,
worded as kube-scheduler 1.34 words them."""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.sim.dra import (
    CLAIM_FINALIZER,
    REASON_CANNOT_ALLOCATE,
    REASON_NOT_AVAILABLE,
    DynamicResources,
    PodClaims,
    write_claims,
)
from karpenter_core.testing import builders as b

DRIVER = "gpu.example.com"


def node(name: str, **labels: str) -> dict[str, Any]:
    return b.node(name, labels=labels)


def claim_for(pod: dict[str, Any], name: str = "web-gpu", count: int = 1) -> dict[str, Any]:
    """The claim the resource-claim controller made for ``pod`` (and recorded in it)."""
    claim = b.resource_claim(name, count=count)
    claim["metadata"]["uid"] = f"{name}-uid"
    claim["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": pod["metadata"]["name"],
            "uid": pod["metadata"]["uid"],
            "controller": True,
        }
    ]
    pod["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": name}]
    return claim


def gpu_pod(name: str = "web") -> dict[str, Any]:
    pod = b.pod(name, spec={"resourceClaims": [b.pod_claim("gpu", template="gpu")]})
    pod["metadata"]["uid"] = f"{name}-uid"
    return pod


def node_slice(node_name: str, *devices: str) -> dict[str, Any]:
    return b.resource_slice(f"{node_name}-gpus", node_name=node_name, devices=devices)


CLASSES = [b.device_class("gpu", driver=DRIVER)]


def claims_of(dra: DynamicResources, pod: dict[str, Any]) -> PodClaims:
    claims = dra.prefilter(pod)
    assert isinstance(claims, PodClaims), claims
    return claims


# ------------------------------------------------------------------ PreFilter


def test_a_pod_without_claims_has_nothing_to_check() -> None:
    assert claims_of(DynamicResources(), b.pod("web")).empty


def test_a_claim_not_created_yet_fails_the_pod_everywhere() -> None:
    assert DynamicResources().prefilter(gpu_pod()) == (
        'pod "default/web": ResourceClaim not created yet'
    )


def test_a_missing_claim_is_not_found() -> None:
    pod = gpu_pod()
    pod["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "gone"}]
    assert DynamicResources().prefilter(pod) == ('resourceclaim.resource.k8s.io "gone" not found')


def test_a_generated_claim_must_be_the_pods() -> None:
    pod = gpu_pod()
    claim = claim_for(pod)
    claim["metadata"]["ownerReferences"][0]["uid"] = "someone-else"
    assert DynamicResources(claims=[claim]).prefilter(pod) == (
        "ResourceClaim default/web-gpu was not created for pod default/web (pod is not owner)"
    )


def test_a_deleting_claim_fails_the_pod() -> None:
    pod = gpu_pod()
    claim = claim_for(pod)
    claim["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert DynamicResources(claims=[claim]).prefilter(pod) == (
        'resourceclaim "web-gpu" is being deleted'
    )


def test_a_missing_device_class_fails_the_pod() -> None:
    pod = gpu_pod()
    assert DynamicResources(claims=[claim_for(pod)]).prefilter(pod) == (
        "request devices: device class gpu does not exist"
    )


# ------------------------------------------------------------------ Filter


def test_a_node_with_a_free_device_fits() -> None:
    pod = gpu_pod()
    dra = DynamicResources([node_slice("n1", "gpu-0")], [claim_for(pod)], CLASSES)
    claims = claims_of(dra, pod)
    assert dra.filter(claims, node("n1")) == ""
    assert dra.filter(claims, node("n2")) == REASON_CANNOT_ALLOCATE


def test_devices_allocated_to_other_claims_are_taken() -> None:
    pod = gpu_pod()
    other = b.resource_claim("other")
    other["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "devices", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}
                ]
            }
        }
    }
    dra = DynamicResources([node_slice("n1", "gpu-0")], [claim_for(pod), other], CLASSES)
    assert dra.filter(claims_of(dra, pod), node("n1")) == REASON_CANNOT_ALLOCATE


def test_an_allocated_claim_only_fits_the_nodes_it_selects() -> None:
    pod = gpu_pod()
    claim = claim_for(pod)
    claim["status"] = {
        "allocation": {
            "devices": {"results": []},
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                ]
            },
        }
    }
    dra = DynamicResources([], [claim], CLASSES)
    claims = claims_of(dra, pod)
    assert dra.filter(claims, node("n1")) == ""
    assert dra.filter(claims, node("n2")) == REASON_NOT_AVAILABLE


def test_slices_selecting_nodes_by_label_reach_those_nodes() -> None:
    pod = gpu_pod()
    selector = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu"]}]}
        ]
    }
    s = b.resource_slice("shared", node_selector=selector, devices=["gpu-0"], pool="rack")
    dra = DynamicResources([s], [claim_for(pod)], CLASSES)
    claims = claims_of(dra, pod)
    assert dra.filter(claims, node("n1", pool="gpu")) == ""
    assert dra.filter(claims, node("n2", pool="cpu")) == REASON_CANNOT_ALLOCATE


# ------------------------------------------------------------------ Reserve and PreBind


def test_reserving_writes_the_allocation_pinned_to_the_node() -> None:
    pod = gpu_pod()
    dra = DynamicResources([node_slice("n1", "gpu-0", "gpu-1")], [claim_for(pod)], CLASSES)
    claims = claims_of(dra, pod)
    assert dra.filter(claims, node("n1")) == ""
    [write] = dra.reserve(claims, node("n1"))
    assert write.allocation == {
        "devices": {
            "results": [{"request": "devices", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]
        },
        "nodeSelector": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
            ]
        },
    }
    assert write.consumer == {"resource": "pods", "name": "web", "uid": "web-uid"}


def test_devices_a_pod_took_are_taken_for_the_rest_of_the_pass() -> None:
    first, second = gpu_pod("a"), gpu_pod("b")
    dra = DynamicResources(
        [node_slice("n1", "gpu-0")],
        [claim_for(first, "a-gpu"), claim_for(second, "b-gpu")],
        CLASSES,
    )
    claims = claims_of(dra, first)
    assert dra.filter(claims, node("n1")) == ""
    dra.reserve(claims, node("n1"))
    assert dra.filter(claims_of(dra, second), node("n1")) == REASON_CANNOT_ALLOCATE


def test_a_shared_claim_is_allocated_once_and_then_binds_its_consumers_to_the_node() -> None:
    pods = [b.pod(n, spec={"resourceClaims": [b.pod_claim("gpu", claim="shared")]}) for n in "ab"]
    for p in pods:
        p["metadata"]["uid"] = p["metadata"]["name"]
    dra = DynamicResources(
        [node_slice("n1", "gpu-0"), node_slice("n2", "gpu-0")],
        [b.resource_claim("shared")],
        CLASSES,
    )
    claims = claims_of(dra, pods[0])
    assert dra.filter(claims, node("n1")) == ""
    dra.reserve(claims, node("n1"))
    later = claims_of(dra, pods[1])
    assert later.pending == () and len(later.allocated) == 1
    assert dra.filter(later, node("n2")) == REASON_NOT_AVAILABLE
    assert dra.filter(later, node("n1")) == ""
    [write] = dra.reserve(later, node("n1"))
    assert write.allocation is None and write.consumer["name"] == "b"


def test_reserving_an_unfiltered_node_is_a_bug() -> None:
    pod = gpu_pod()
    dra = DynamicResources([node_slice("n1", "gpu-0")], [claim_for(pod)], CLASSES)
    with pytest.raises(ValueError, match="not filtered"):
        dra.reserve(claims_of(dra, pod), node("n1"))


def test_the_writes_add_the_finalizer_allocation_and_reservation() -> None:
    server = InMemoryApiServer(VirtualClock())
    server.create(b.resource_claim_template("gpu"))
    server.create(CLASSES[0])
    server.create(node_slice("n1", "gpu-0"))
    pod = server.create(gpu_pod())
    pod = server.get("pods", "web", "default")
    dra = DynamicResources(
        server.list("resourceslices").items,
        server.list("resourceclaims").items,
        server.list("deviceclasses").items,
    )
    claims = claims_of(dra, pod)
    assert dra.filter(claims, node("n1")) == ""
    write_claims(server, dra.reserve(claims, node("n1")))
    [claim] = server.list("resourceclaims").items
    assert claim["metadata"]["finalizers"] == [CLAIM_FINALIZER]
    assert claim["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
    assert claim["status"]["reservedFor"] == [
        {"resource": "pods", "name": "web", "uid": pod["metadata"]["uid"]}
    ]
