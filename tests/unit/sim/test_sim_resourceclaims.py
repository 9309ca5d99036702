"""resource.k8s.io/v1 on the in-memory API server, and the simulated resource-claim
controller (issue 11): a pod's claims made from its templates, reservations dropped with
their pods, claims deallocated and deleted as kube-controller-manager does."""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.kube.client import Invalid, NotFound
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.sim.controllermanager import CLAIM_FINALIZER, POD_CLAIM_ANNOTATION
from karpenter_core.testing import builders as b


@pytest.fixture
def server() -> InMemoryApiServer:
    return InMemoryApiServer(VirtualClock())


def gpu_pod(name: str = "web", template: str = "gpu", **kw: Any) -> dict[str, Any]:
    return b.pod(name, spec={"resourceClaims": [b.pod_claim("gpu", template=template)]}, **kw)


def claims(server: InMemoryApiServer) -> list[dict[str, Any]]:
    return server.list("resourceclaims").items


def allocate(server: InMemoryApiServer, claim: dict[str, Any], pod: dict[str, Any]) -> None:
    """What kube-scheduler writes when it binds the pod: finalizer, allocation, reservation."""
    claim["metadata"]["finalizers"] = [CLAIM_FINALIZER]
    claim = server.update(claim)
    claim["status"] = {
        "allocation": {"devices": {"results": []}},
        "reservedFor": [
            {"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}
        ],
    }
    server.update_status(claim)


# ------------------------------------------------------------------ the kinds


def test_dra_kinds_are_scoped_as_upstream(server: InMemoryApiServer) -> None:
    server.create(b.device_class("gpu", driver="gpu.example.com"))
    server.create(b.resource_slice("s", node_name="n1", devices=["gpu-0"]))
    server.create(b.resource_claim_template("t"))
    server.create(b.resource_claim("c"))
    assert "namespace" not in server.get("deviceclasses", "gpu")["metadata"]
    assert "namespace" not in server.get("resourceslices", "s")["metadata"]
    assert (
        server.get("resourceclaimtemplates", "t", "default")["metadata"]["namespace"] == "default"
    )
    assert server.get("resourceclaims", "c", "default")["metadata"]["namespace"] == "default"


def test_slices_count_spec_generations_and_select_by_node_and_driver(
    server: InMemoryApiServer,
) -> None:
    s = server.create(b.resource_slice("s", node_name="n1", devices=["gpu-0"]))
    server.create(b.resource_slice("other", node_name="n2", driver="nic.example.com"))
    assert s["metadata"]["generation"] == 1
    s["spec"]["devices"].append(b.device("gpu-1"))
    assert server.update(s)["metadata"]["generation"] == 2
    listed = server.list("resourceslices", field_selector="spec.nodeName=n1").items
    assert [x["metadata"]["name"] for x in listed] == ["s"]
    listed = server.list("resourceslices", field_selector="spec.driver=nic.example.com").items
    assert [x["metadata"]["name"] for x in listed] == ["other"]


def test_a_slice_selects_nodes_exactly_one_way(server: InMemoryApiServer) -> None:
    bad = b.resource_slice("s", node_name="n1")
    bad["spec"]["allNodes"] = True
    with pytest.raises(Invalid, match="exactly one of `nodeName`"):
        server.create(bad)


def test_a_slices_node_is_fixed(server: InMemoryApiServer) -> None:
    s = server.create(b.resource_slice("s", node_name="n1"))
    s["spec"]["nodeName"] = "n2"
    with pytest.raises(Invalid, match=r"spec\.nodeName"):
        server.update(s)


def test_a_claims_spec_is_immutable_and_its_status_is_a_subresource(
    server: InMemoryApiServer,
) -> None:
    claim = b.resource_claim("c")
    claim["status"] = {"allocation": {"devices": {"results": []}}}
    created = server.create(claim)
    assert "status" not in created
    created["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
    with pytest.raises(Invalid, match="immutable"):
        server.update(created)


def test_an_allocation_can_be_removed_but_not_changed(server: InMemoryApiServer) -> None:
    claim = server.create(b.resource_claim("c"))
    claim["status"] = {"allocation": {"devices": {"results": []}}}
    claim = server.update_status(claim)
    claim["status"]["allocation"]["devices"]["results"] = [
        {"request": "devices", "driver": "d", "pool": "p", "device": "x"}
    ]
    with pytest.raises(Invalid, match=r"status\.allocation"):
        server.update_status(claim)
    claim = server.get("resourceclaims", "c", "default")
    claim["status"] = {}
    assert "allocation" not in (server.update_status(claim).get("status") or {})


# ------------------------------------------------------------------ claims from templates


def test_a_pod_gets_its_own_claim_made_from_the_template(server: InMemoryApiServer) -> None:
    template = b.resource_claim_template("gpu", count=2)
    template["spec"]["metadata"] = {"labels": {"team": "ml"}, "annotations": {"a": "b"}}
    server.create(template)
    pod = server.create(gpu_pod())
    [claim] = claims(server)
    meta = claim["metadata"]
    assert meta["name"].startswith("web-gpu-")
    assert meta["labels"] == {"team": "ml"}
    assert meta["annotations"] == {"a": "b", POD_CLAIM_ANNOTATION: "gpu"}
    [owner] = meta["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("Pod", "web", pod["metadata"]["uid"])
    assert owner["controller"] and owner["blockOwnerDeletion"]
    assert claim["spec"] == template["spec"]["spec"]
    status = server.get("pods", "web", "default")["status"]
    assert status["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": meta["name"]}]


def test_a_pod_waits_for_its_template(server: InMemoryApiServer) -> None:
    server.create(gpu_pod())
    assert claims(server) == []
    assert "resourceClaimStatuses" not in server.get("pods", "web", "default")["status"]
    server.create(b.resource_claim_template("gpu"))
    [claim] = claims(server)
    assert server.get("pods", "web", "default")["status"]["resourceClaimStatuses"] == [
        {"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}
    ]


def test_claims_named_by_the_pod_are_not_made(server: InMemoryApiServer) -> None:
    server.create(b.pod("web", spec={"resourceClaims": [b.pod_claim("gpu", claim="shared")]}))
    assert claims(server) == []


def test_long_names_are_shortened_as_the_controller_does(server: InMemoryApiServer) -> None:
    server.create(b.resource_claim_template("gpu"))
    long_pod = "p" * 60
    server.create(b.pod(long_pod, spec={"resourceClaims": [b.pod_claim("c" * 20, template="gpu")]}))
    [claim] = claims(server)
    name = claim["metadata"]["name"]
    assert len(name) <= 63 and name[:55] == "p" * 41 + "-" + "c" * 13


def test_the_claim_goes_with_its_pod(server: InMemoryApiServer) -> None:
    server.create(b.resource_claim_template("gpu"))
    server.create(gpu_pod())
    server.delete("pods", "web", "default")
    assert claims(server) == []


# ------------------------------------------------------------------ reservations


def test_a_deleted_pods_allocated_claim_is_deallocated_and_goes(
    server: InMemoryApiServer,
) -> None:
    server.create(b.resource_claim_template("gpu"))
    pod = server.create(gpu_pod())
    [claim] = claims(server)
    allocate(server, claim, pod)
    server.delete("pods", "web", "default")
    assert claims(server) == []


def test_a_finished_pods_reservation_is_dropped_and_its_claim_deleted(
    server: InMemoryApiServer,
) -> None:
    server.create(b.resource_claim_template("gpu"))
    pod = server.create(gpu_pod())
    [claim] = claims(server)
    allocate(server, claim, pod)
    pod = server.get("pods", "web", "default")
    pod["status"]["phase"] = "Succeeded"
    server.update_status(pod)
    assert claims(server) == []


def test_a_shared_claim_is_deallocated_when_its_last_consumer_goes(
    server: InMemoryApiServer,
) -> None:
    server.create(b.resource_claim("shared"))
    pods = [
        server.create(b.pod(n, spec={"resourceClaims": [b.pod_claim("gpu", claim="shared")]}))
        for n in ("a", "b")
    ]
    claim = server.get("resourceclaims", "shared", "default")
    allocate(server, claim, pods[0])
    claim = server.get("resourceclaims", "shared", "default")
    claim["status"]["reservedFor"].append(
        {"resource": "pods", "name": "b", "uid": pods[1]["metadata"]["uid"]}
    )
    server.update_status(claim)
    server.delete("pods", "a", "default")
    claim = server.get("resourceclaims", "shared", "default")
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["b"]
    assert claim["status"]["allocation"] is not None
    server.delete("pods", "b", "default")
    claim = server.get("resourceclaims", "shared", "default")
    assert "allocation" not in (claim.get("status") or {})
    assert CLAIM_FINALIZER not in (claim["metadata"].get("finalizers") or [])


def test_a_bound_pod_is_added_to_its_allocated_claims_consumers(
    server: InMemoryApiServer,
) -> None:
    claim = server.create(b.resource_claim("shared"))
    claim["status"] = {"allocation": {"devices": {"results": []}}}
    server.update_status(claim)
    pod = server.create(b.pod("a", spec={"resourceClaims": [b.pod_claim("gpu", claim="shared")]}))
    server.bind("a", "default", "n1")
    claim = server.get("resourceclaims", "shared", "default")
    assert claim["status"]["reservedFor"] == [
        {"resource": "pods", "name": "a", "uid": pod["metadata"]["uid"]}
    ]


def test_a_claim_of_a_deleted_namespace_goes(server: InMemoryApiServer) -> None:
    server.create(b.namespace("ml"))
    server.create(b.resource_claim_template("gpu", namespace="ml"))
    server.create(gpu_pod(namespace="ml"))
    server.delete("namespaces", "ml")
    with pytest.raises(NotFound):
        server.get("namespaces", "ml")
