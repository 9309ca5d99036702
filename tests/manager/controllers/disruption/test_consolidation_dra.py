"""Consolidation and drift simulate DRA pods (issue 11 item 5): ported from upstream's
``pkg/controllers/disruption/consolidation_dra_test.go`` ("Consolidation/DRA"), which drives
the scheduling simulation with consolidation candidates. Two behaviours:

* (A) the ResourceSlices of a candidate node are no capacity for its pods;
* (B) the devices of the candidates' pods are free, and their claims allocated again where
  the pods go — so a node whose DRA pods cannot be placed elsewhere is not consolidated.

Each docstring names the upstream ``It``."""

from __future__ import annotations

from typing import Any

import attrs
from disruption_harness import World

from karpenter_core.apis.resource import Device
from karpenter_core.disruption.methods.drift import Drift
from karpenter_core.disruption.methods.singlenode import SingleNodeConsolidation
from karpenter_core.disruption.types import CLASS_EVENTUAL, CLASS_GRACEFUL, Candidate
from karpenter_core.provisioning.scheduler import Results
from karpenter_core.runtime.options import Options
from karpenter_core.scheduling.dynamicresources import DynamicResources, ResourceSliceTemplate
from karpenter_core.testing import builders as b
from karpenter_core.testing import fakecatalog

GPU = "gpu.example.com"
API = "resource.k8s.io/v1"


def gpu_type(name: str, count: int, cpu: int = 16) -> Any:
    """Upstream's ``fake.GPUInstanceType``."""
    it = fakecatalog.instance_type(name, cpu=cpu, memory_gi=32, pods=100)
    devices = tuple(Device(name=f"{name}-gpu-{i}") for i in range(count))
    return attrs.evolve(
        it,
        dynamic_resources=DynamicResources((ResourceSliceTemplate(GPU, f"{name}-pool", devices),)),
    )


def plain_type(name: str) -> Any:
    return fakecatalog.instance_type(name, cpu=16, memory_gi=32, pods=100)


def world(*its: Any, ignore_dra_requests: bool = False) -> World:
    w = World(list(its), options=Options(ignore_dra_requests=ignore_dra_requests))
    w.nodepool()
    w.create(
        {
            "apiVersion": API,
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU}"'}}]},
        }
    )
    return w


def node_local_slice(w: World, node: str, device: str) -> str:
    """Upstream's ``test.NodeLocalSlice``; returns its pool name."""
    pool = f"{GPU}-{node}"
    w.create(
        {
            "apiVersion": API,
            "kind": "ResourceSlice",
            "metadata": {
                "name": f"{node}-gpu",
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node}
                ],
            },
            "spec": {
                "driver": GPU,
                "nodeName": node,
                "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": device}],
            },
        }
    )
    return pool


def cluster_wide_slice(w: World, pool: str, *devices: str) -> None:
    """Upstream's ``test.ClusterWideSlice``."""
    w.create(
        {
            "apiVersion": API,
            "kind": "ResourceSlice",
            "metadata": {"name": pool},
            "spec": {
                "driver": GPU,
                "allNodes": True,
                "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": d} for d in devices],
            },
        }
    )


def allocated_claim(w: World, name: str, pool: str, device: str, holder: dict[str, Any]) -> None:
    """Upstream's ``test.AllocatedClusterWideClaim``: allocated, reserved for ``holder``."""
    claim = w.create(
        {
            "apiVersion": API,
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "devices": {"requests": [{"name": "req", "exactly": {"deviceClassName": "gpu"}}]}
            },
        }
    )
    meta = holder["metadata"]
    w.set_status(
        claim,
        {
            "allocation": {
                "devices": {
                    "results": [{"request": "req", "driver": GPU, "pool": pool, "device": device}]
                }
            },
            "reservedFor": [{"resource": "pods", "name": meta["name"], "uid": meta["uid"]}],
        },
    )


def gpu_pod(w: World, name: str, node: str, claim: str) -> dict[str, Any]:
    """Upstream's ``gpuPodOnNode``: a ReplicaSet pod bound to ``node`` using ``claim``."""
    created = w.create(
        b.pod(
            name,
            owner=b.owner_reference("ReplicaSet", "rs", uid="u-rs"),
            node_name=node,
            ready=True,
            start_time=b.START,
            spec={
                "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
                "containers": [
                    {
                        "name": "c",
                        "image": "pause",
                        "resources": {"requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]},
                    }
                ],
            },
        )
    )
    w.cluster.update_pod(created)
    return created


def candidates(w: World, *names: str, cls: str = CLASS_GRACEFUL) -> list[Candidate]:
    found = {c.name(): c for c in w.candidates(cls)}
    return [found[n] for n in names]


def simulate(w: World, *names: str) -> Results:
    return w.simulate(candidates(w, *names), consolidation=True)


def existing_targets(results: Results) -> list[str]:
    return [e.name for e in results.existing_nodes if e.pods]


def test_a_candidate_pods_device_moves_to_a_replacement() -> None:
    """Consolidation/DRA / re-allocates a candidate pod's device onto a replacement (B,
    positive)."""
    w = world(gpu_type("gpu-it", 1))
    w.node("n1", instance_type="gpu-it")
    pool = node_local_slice(w, "n1", "incluster-gpu-0")
    pod = gpu_pod(w, "p", "n1", "gpu-claim")
    allocated_claim(w, "gpu-claim", pool, "incluster-gpu-0", pod)
    results = simulate(w, "n1")
    assert results.pod_errors == {}
    assert results.all_non_pending_pods_scheduled()
    [nc] = results.new_nodeclaims
    assert [p.name for p in nc.pods] == ["p"]
    meta = results.dra_claim_allocations[("default", "gpu-claim")]
    assert meta.nodeclaim == nc.hostname, "the claim is allocated again on the replacement"
    assert nc.annotations["karpenter.sh/requested-dra-drivers"] == GPU


def test_a_candidates_published_device_is_no_target() -> None:
    """Consolidation/DRA / does not target a candidate node's published device (A,
    positive)."""
    w = world(gpu_type("gpu-it", 1))
    w.node("n1", instance_type="gpu-it")
    pool = node_local_slice(w, "n1", "incluster-gpu-0")
    pod = gpu_pod(w, "p", "n1", "gpu-claim")
    allocated_claim(w, "gpu-claim", pool, "incluster-gpu-0", pod)
    results = simulate(w, "n1")
    assert len(results.new_nodeclaims) == 1
    assert "n1" not in existing_targets(results)
    meta = results.dra_claim_allocations[("default", "gpu-claim")]
    assert all(d.device.template for ds in meta.devices.values() for d in ds)


def test_no_consolidation_when_the_claim_fits_nowhere_else() -> None:
    """Consolidation/DRA / does not consolidate when the candidate's claim cannot be
    satisfied elsewhere (B, negative)."""
    w = world(plain_type("no-gpu-it"))
    w.node("n1", instance_type="gpu-it")
    pool = node_local_slice(w, "n1", "incluster-gpu-0")
    pod = gpu_pod(w, "p", "n1", "gpu-claim")
    allocated_claim(w, "gpu-claim", pool, "incluster-gpu-0", pod)
    results = simulate(w, "n1")
    assert results.new_nodeclaims == []
    assert not results.all_non_pending_pods_scheduled()
    assert 'claim "gpu-claim" request "req"' in results.non_pending_pod_scheduling_errors()


def test_a_device_held_by_a_live_pod_elsewhere_is_not_freed() -> None:
    """Consolidation/DRA / does not free a device held by a live pod on a non-candidate
    node (A, negative)."""
    w = world(plain_type("no-gpu-it"))
    cluster_wide_slice(w, "shared-gpu-pool", "shared-gpu-0")
    w.node("live-node", instance_type="no-gpu-it")
    live = w.pod("live", "live-node")
    allocated_claim(w, "held-claim", "shared-gpu-pool", "shared-gpu-0", live)
    w.node("candidate", instance_type="no-gpu-it")
    pod = gpu_pod(w, "p", "candidate", "candidate-claim")
    allocated_claim(w, "candidate-claim", "shared-gpu-pool", "shared-gpu-0", pod)
    results = simulate(w, "candidate")
    assert results.new_nodeclaims == []
    assert not results.all_non_pending_pods_scheduled()


def test_devices_of_several_candidates_move_to_one_replacement() -> None:
    """Consolidation/DRA / re-allocates devices from multiple candidate nodes onto one
    replacement (B, multi-candidate)."""
    w = world(gpu_type("gpu-it", 2))
    claims: list[str] = []
    for node in ("n1", "n2"):
        w.node(node, instance_type="gpu-it")
        pool = node_local_slice(w, node, "incluster-gpu-0")
        pod = gpu_pod(w, f"p-{node}", node, f"claim-{node}")
        allocated_claim(w, f"claim-{node}", pool, "incluster-gpu-0", pod)
        claims.append(f"claim-{node}")
    results = simulate(w, "n1", "n2")
    assert results.pod_errors == {}
    assert results.all_non_pending_pods_scheduled()
    [nc] = results.new_nodeclaims
    assert sorted(p.name for p in nc.pods) == ["p-n1", "p-n2"]
    assert not {"n1", "n2"} & set(existing_targets(results))
    for claim in claims:
        assert results.dra_claim_allocations[("default", claim)].nodeclaim == nc.hostname


# Consolidation/DRA / reclaims only the candidate's share of a shared device, leaving the
# live pod's share (B, partial): consumable capacity is out of scope (docs/dra.md); a
# claim that needs it is an error naming the claim and request.


def test_a_remaining_nodes_free_device_takes_the_candidates_pod() -> None:
    """Beyond upstream's file: the pod goes to a node that stays and has a free published
    device, so the candidate is deleted without a replacement."""
    w = world(gpu_type("gpu-it", 1))
    w.node("stays", instance_type="gpu-it")
    node_local_slice(w, "stays", "gpu-0")
    w.node("n1", instance_type="gpu-it")
    pool = node_local_slice(w, "n1", "gpu-0")
    pod = gpu_pod(w, "p", "n1", "gpu-claim")
    allocated_claim(w, "gpu-claim", pool, "gpu-0", pod)
    results = simulate(w, "n1")
    assert results.new_nodeclaims == []
    assert existing_targets(results) == ["stays"]


def test_single_node_consolidation_leaves_a_node_whose_dra_pod_cannot_move() -> None:
    """Issue 11: a node whose DRA pods cannot be placed elsewhere is not consolidated, end
    to end through the single-node consolidation method."""
    w = world(plain_type("no-gpu-it"))
    w.node("n1", instance_type="gpu-it")
    pool = node_local_slice(w, "n1", "incluster-gpu-0")
    pod = gpu_pod(w, "p", "n1", "gpu-claim")
    allocated_claim(w, "gpu-claim", pool, "incluster-gpu-0", pod)
    assert w.compute(w.method(SingleNodeConsolidation), {"default": 100}) == []


def test_drift_replaces_a_dra_node_with_one_that_has_the_devices() -> None:
    """Drift simulates DRA pods too: the replacement of a drifted node hosting a GPU pod is
    a NodeClaim of a type with GPUs."""
    w = world(gpu_type("gpu-it", 1), plain_type("no-gpu-it"))
    w.node("n1", instance_type="gpu-it", drifted=True)
    pool = node_local_slice(w, "n1", "incluster-gpu-0")
    pod = gpu_pod(w, "p", "n1", "gpu-claim")
    allocated_claim(w, "gpu-claim", pool, "incluster-gpu-0", pod)
    results = w.simulate(candidates(w, "n1", cls=CLASS_EVENTUAL))
    [nc] = results.new_nodeclaims
    assert [i.name for i in nc.instance_types_by_price()] == ["gpu-it"]
    [command] = w.compute(w.method(Drift), {"default": 100})
    [replacement] = command.replacements
    assert [i.name for i in replacement.instance_types_by_price()] == ["gpu-it"]
