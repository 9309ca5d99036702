"""The solve's DRA plumbing, ported from upstream's internal tests:
``pkg/controllers/provisioning/dra_internal_test.go`` ("DRA Provisioner Internals") and
``pkg/controllers/provisioning/scheduling/dra_internal_test.go`` ("DRA Scheduling
Internals"). Each docstring names the upstream ``Describe / It``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from dra_helpers import (
    GPU,
    claim,
    dra_pod,
    exact,
    existing_node,
    gpu_type,
    node_local_slice,
    plain_type,
)
from scheduler_helpers import fake_labels  # noqa: F401 (fixture)

from karpenter_core.apis.resource import (
    ResourceClaim,
    ResourceSlice,
    pod_claim_names,
)
from karpenter_core.provisioning.scheduler.dra import (
    DRAInputs,
    DRASimulation,
    in_cluster_slices,
    node_owner_name,
)
from karpenter_core.scheduling.dynamicresources import (
    AllocationResult,
    allocated_devices,
    claim_reserved_only_by,
)
from karpenter_core.scheduling.requirements import Requirements
from karpenter_core.state.statenode import StateNode


def owned_slice(*owners: tuple[str, str]) -> ResourceSlice:
    return ResourceSlice.from_dict(
        {
            "metadata": {
                "name": "s",
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": kind, "name": name} for kind, name in owners
                ],
            },
            "spec": {"driver": GPU, "pool": {"name": "p"}, "allNodes": True},
        }
    )


# --- DRA Provisioner Internals / nodeOwnerName ---------------------------------------------------


def test_node_owner_name_is_the_node_owner_reference() -> None:
    """DRA Provisioner Internals / nodeOwnerName / should return the Node owner reference
    name."""
    assert node_owner_name(owned_slice(("Node", "node-a"))) == "node-a"


def test_no_owner_references_means_no_node_owner() -> None:
    """DRA Provisioner Internals / nodeOwnerName / should report no owner when there are no
    owner references."""
    assert node_owner_name(owned_slice()) is None


def test_owners_of_other_kinds_are_not_node_owners() -> None:
    """DRA Provisioner Internals / nodeOwnerName / should report no owner when no owner
    reference is a Node."""
    assert node_owner_name(owned_slice(("Pod", "pod-a"))) is None


def test_the_node_owner_is_found_among_others() -> None:
    """DRA Provisioner Internals / nodeOwnerName / should find the Node owner reference
    among others."""
    assert node_owner_name(owned_slice(("Pod", "pod-a"), ("Node", "node-b"))) == "node-b"


# --- DRA Provisioner Internals / allConsumersDeleting --------------------------------------------


def reserved(*uids: str) -> ResourceClaim:
    return claim(
        "c",
        exact("r"),
        status={
            "allocation": {
                "devices": {
                    "results": [{"request": "r", "driver": GPU, "pool": "p", "device": "d"}]
                }
            },
            "reservedFor": [{"resource": "pods", "name": u, "uid": u} for u in uids],
        },
    )


@pytest.mark.parametrize(
    ("consumers", "expected", "upstream"),
    [
        (("a", "b"), True, "should be true when all consumers are deleting"),
        (("a",), True, "should be true when consumers are a subset of deleting pods"),
        (("a", "c"), False, "should be false when any consumer is not deleting"),
        (("c",), False, "should be false when no consumer is deleting"),
    ],
)
def test_all_consumers_deleting(consumers: Sequence[str], expected: bool, upstream: str) -> None:
    """DRA Provisioner Internals / allConsumersDeleting / (the four cases, by name in
    ``upstream``): a claim's devices are free, and the claim is allocated again, only when
    every consumer is a deleting pod."""
    deleting = frozenset({"a", "b"})
    c = reserved(*consumers)
    assert claim_reserved_only_by(c, deleting) is expected
    assert (allocated_devices([c], deleting) == set()) is expected


# DRA Provisioner Internals / effectiveConsumedCapacity (five cases): consumable capacity is
# out of scope (docs/dra.md, "Out of scope"); a claim that needs it is an error instead.


# --- DRA Provisioner Internals: gatherResourceSlices ---------------------------------------------


def test_slices_of_uninitialized_or_absent_nodes_do_not_count() -> None:
    """provisioning/dra.go ``gatherResourceSlices``: a slice owned by a node counts only when
    the node is in the solve's state nodes and initialized; unowned slices always count."""
    ready_node, ready_claim = existing_node("ready", "gpu-it", initialized=True)
    new_node, new_claim = existing_node("new", "gpu-it", initialized=False)
    state = [StateNode(ready_node, ready_claim), StateNode(new_node, new_claim)]
    slices = [
        node_local_slice("ready", GPU, "g"),
        node_local_slice("new", GPU, "g"),
        node_local_slice("gone", GPU, "g"),
        owned_slice(),
    ]
    kept = in_cluster_slices(slices, state)
    assert [node_owner_name(s) for s in kept] == ["ready", None]


# --- DRA Scheduling Internals / resourceClaimName ------------------------------------------------


def _pod(entry: dict[str, Any], statuses: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "spec": {"resourceClaims": [entry]},
        "status": {"resourceClaimStatuses": statuses or []},
    }


def test_a_direct_claim_name_is_used() -> None:
    """DRA Scheduling Internals / resourceClaimName / should use a direct ResourceClaimName."""
    [pc] = pod_claim_names(_pod({"name": "ref", "resourceClaimName": "claim-a"}))
    assert pc.claim_name == "claim-a"


def test_a_templates_generated_name_comes_from_the_pod_status() -> None:
    """DRA Scheduling Internals / resourceClaimName / should resolve a template's generated
    name from pod status."""
    [pc] = pod_claim_names(
        _pod(
            {"name": "ref", "resourceClaimTemplateName": "t"},
            [{"name": "ref", "resourceClaimName": "generated-a"}],
        )
    )
    assert pc.claim_name == "generated-a"


def test_a_template_whose_generated_name_is_null_needs_no_claim() -> None:
    """DRA Scheduling Internals / resourceClaimName / should skip a template whose generated
    name is nil."""
    p = dra_pod(templates=[("gpu", "t")], statuses=[{"name": "gpu", "resourceClaimName": None}])
    sim = DRASimulation(DRAInputs(), [], {})
    assert sim.claims(p, "p") == ()


def test_a_template_without_a_status_entry_is_its_template_not_a_skip() -> None:
    """DRA Scheduling Internals / resourceClaimName / should skip when no matching status
    entry exists: here the claim the template would give is simulated instead (docs/dra.md:
    a pod must not land where its devices are not), and a missing template is an error."""
    from dra_helpers import claim_template

    p = dra_pod(templates=[("gpu", "t")])
    sim = DRASimulation(DRAInputs.of(claim_templates=[claim_template("t", exact("r"))]), [], {})
    claims = sim.claims(p, "p")
    assert isinstance(claims, tuple)
    [c] = claims
    assert c.spec.devices.requests[0].name == "r"
    assert c.metadata.owner_references[0].uid == p.uid
    missing = DRASimulation(DRAInputs(), [], {}).claims(p, "p")
    assert 'resourceclaimtemplate "default/t" not found' in str(missing)


# --- DRA Scheduling Internals / draNodeClaim and draExistingNode adapters -----------------------


class Spy:
    """Records the NodeClaim views the allocator is handed."""

    def __init__(self, sim: DRASimulation) -> None:
        self.views: list[Any] = []
        real = sim.allocator.allocate

        def allocate(view: Any, claims: Sequence[ResourceClaim]) -> Any:
            self.views.append(view)
            return real(view, claims)

        sim.allocator.allocate = allocate  # type: ignore[method-assign]


def simulation(*its: Any) -> tuple[DRASimulation, Spy]:
    sim = DRASimulation(DRAInputs.of(), [], {"np-a": list(its)})
    return sim, Spy(sim)


def test_a_nodeclaims_identity_nodepool_and_instance_types() -> None:
    """DRA Scheduling Internals / draNodeClaim adapter / should map identity, nodepool, and
    instance types."""
    sim, spy = simulation(gpu_type("it-1", 1), plain_type("it-2"))
    sim.allocate_on_nodeclaim("hostname-1", "np-a", Requirements(), ["it-1", "it-2"], [])
    [view] = spy.views
    assert (view.id, view.nodepool, list(view.instance_types)) == (
        "hostname-1",
        "np-a",
        ["it-1", "it-2"],
    )
    assert view.node_name == "", "an in-flight NodeClaim has no node"


def test_a_nodeclaim_exposes_template_slices_per_instance_type() -> None:
    """DRA Scheduling Internals / draNodeClaim adapter / should expose template slices per
    instance type."""
    sim, spy = simulation(gpu_type("it-1", 1), plain_type("it-2"))
    sim.allocate_on_nodeclaim("hostname-1", "np-a", Requirements(), ["it-1", "it-2"], [])
    [view] = spy.views
    assert len(view.resource_slices["it-1"]) == 1
    assert view.resource_slices.get("it-2", ()) == ()


def _node(initialized: bool, it: str = "it-1") -> StateNode:
    node, nodeclaim = existing_node("node-a", it, initialized=initialized, pool="np-a")
    return StateNode(node, nodeclaim)


def test_an_initialized_node_has_no_template_slices() -> None:
    """DRA Scheduling Internals / draExistingNode adapter / should return no template slices
    for an initialized node."""
    sim, spy = simulation(gpu_type("it-1", 1))
    sim.allocate_on_node(_node(True), Requirements(), [])
    [view] = spy.views
    assert dict(view.resource_slices) == {}
    assert (view.node_name, list(view.instance_types)) == ("node-a", ["it-1"])


def test_a_pre_initialized_node_has_its_full_template_set() -> None:
    """DRA Scheduling Internals / draExistingNode adapter / should return the full template
    set for a pre-initialized node."""
    sim, spy = simulation(gpu_type("it-1", 1))
    sim.allocate_on_node(_node(False), Requirements(), [])
    [view] = spy.views
    assert len(view.resource_slices["it-1"]) == 1


def test_a_pre_initialized_node_of_an_unknown_type_has_no_template_slices() -> None:
    """DRA Scheduling Internals / draExistingNode adapter / should return no template slices
    for a pre-initialized node with an unresolved instance type."""
    sim, spy = simulation(gpu_type("it-1", 1))
    sim.allocate_on_node(_node(False, it="not-offered"), Requirements(), [])
    [view] = spy.views
    assert dict(view.resource_slices) == {}


def test_an_existing_nodes_published_device_is_allocated() -> None:
    """The existing-node view reaches the slices pinned to the node by name."""
    from dra_helpers import CLASSES

    sim = DRASimulation(
        DRAInputs.of(CLASSES, resource_slices=[node_local_slice("node-a", GPU, "g0")]),
        [_node(True)],
        {"np-a": [plain_type("it-1")]},
    )
    result = sim.allocate_on_node(_node(True), Requirements(), [claim("c", exact("r"))])
    assert isinstance(result, AllocationResult)
    assert result.allocation is not None
    [devices] = result.allocation.devices_by_instance_type.values()
    assert [d.device for d in devices] == ["g0"]
