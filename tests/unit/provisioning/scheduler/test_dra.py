"""The provisioning scheduler with DRA simulated (``IGNORE_DRA_REQUESTS=false``): ported
from upstream's ``pkg/controllers/provisioning/dra_test.go`` ("Dynamic Resource
Allocation"). Each docstring names the upstream ``Context / It``.

Upstream provisions, binds and lets its test harness write the claims' allocations; here one
solve's :class:`~karpenter_core.provisioning.scheduler.Results` say the same: where each pod
went, ``dra_claim_allocations`` (upstream's ``DRAClaimAllocationMetadata``) which devices each
claim got, and a later run is the next solve over the cluster the first one left (claims
allocated, nodes launched and initialized)."""

from __future__ import annotations

import pytest
from dra_helpers import (
    DRA_OPTIONS,
    GPU,
    NIC,
    ZONE,
    all_devices,
    allocated,
    allocated_claim,
    claim,
    claim_template,
    cluster_wide_slice,
    device,
    dra_pod,
    exact,
    existing_node,
    first_available,
    gpu_and_nic_type,
    gpu_type,
    node_local_pool,
    node_local_slice,
    nodeclaim_requirement,
    placed_on,
    plain_type,
    pod_consumer,
    request_refs,
    solve,
    template,
    with_templates,
    zoned_slice,
)
from scheduler_helpers import fake_labels  # noqa: F401 (fixture)

from karpenter_core.apis.labels import REQUESTED_DRA_DRIVERS_ANNOTATION_KEY
from karpenter_core.provisioning.scheduler import DEFAULT_OPTIONS
from karpenter_core.provisioning.scheduler.scheduler import DRA_ERROR
from karpenter_core.testing.fakecatalog import instance_type

# --- Single unallocated claim (A) ---------------------------------------------------------------


def test_a1_provisions_allocates_and_annotates_the_drivers() -> None:
    """Single unallocated claim (A) / should provision a new NodeClaim, allocate the claim,
    and annotate the drivers (A1)."""
    p = dra_pod(("gpu", "gpu-claim"))
    results = solve(
        [p], [gpu_type("gpu-it", 2)], claims=[claim("gpu-claim", exact("req", "gpu", 1))]
    )
    assert results.pod_errors == {}
    [nc] = results.new_nodeclaims
    assert [i.name for i in nc.instance_types_by_price()] == ["gpu-it"]
    assert nc.annotations[REQUESTED_DRA_DRIVERS_ANNOTATION_KEY] == GPU
    assert allocated(results, "gpu-claim") == ["gpu-it-pool/gpu-it-gpu-0"]


def test_a2_restricts_instance_types_to_those_providing_the_device() -> None:
    """Single unallocated claim (A) / should restrict instance types to those providing the
    requested device (A2)."""
    p = dra_pod(("gpu", "gpu-claim"))
    results = solve(
        [p],
        [gpu_type("gpu-it", 1), plain_type("no-gpu-it")],
        claims=[claim("gpu-claim", exact("req"))],
    )
    [nc] = results.new_nodeclaims
    assert [i.name for i in nc.instance_types_by_price()] == ["gpu-it"]


def test_a3_a_pod_without_claims_is_neither_annotated_nor_allocated() -> None:
    """Single unallocated claim (A) / should not annotate or allocate for a non-DRA pod (A3)."""
    from scheduler_helpers import pod

    results = solve([pod(cpu="1")], [gpu_type("gpu-it", 1)])
    [nc] = results.new_nodeclaims
    assert REQUESTED_DRA_DRIVERS_ANNOTATION_KEY not in nc.annotations
    assert results.dra_claim_allocations == {}


def test_a4_a_claim_generated_from_a_template_is_allocated() -> None:
    """Single unallocated claim (A) / should resolve and allocate a claim generated from a
    ResourceClaimTemplate (A4)."""
    p = dra_pod(
        templates=[("gpu", "gpu-template")],
        statuses=[{"name": "gpu", "resourceClaimName": "generated-gpu"}],
    )
    generated = claim("generated-gpu", exact("req"), owner_uid=p.uid)
    results = solve([p], [gpu_type("gpu-it", 1)], claims=[generated])
    [nc] = results.new_nodeclaims
    assert nc.annotations[REQUESTED_DRA_DRIVERS_ANNOTATION_KEY] == GPU
    assert allocated(results, "generated-gpu") == ["gpu-it-pool/gpu-it-gpu-0"]


def test_a_template_claim_not_created_yet_is_simulated_from_its_template() -> None:
    """Departure from upstream (its scheduling internals "should skip when no matching
    status entry exists" schedule the pod as if it asked for nothing): the claim the
    template would give is simulated, so the pod does not land where its devices are not."""
    p = dra_pod(templates=[("gpu", "gpu-template")])
    results = solve(
        [p],
        [gpu_type("gpu-it", 1), plain_type("no-gpu-it")],
        templates=[claim_template("gpu-template", exact("req"))],
    )
    [nc] = results.new_nodeclaims
    assert [i.name for i in nc.instance_types_by_price()] == ["gpu-it"]
    [(key, meta)] = results.dra_claim_allocations.items()
    assert key[1] == f"{p.name}-gpu (from template gpu-template)"
    assert meta.nodeclaim == nc.hostname


def test_a_generated_claim_of_another_pod_is_refused() -> None:
    """kube-scheduler refuses a generated claim the pod does not own; so does the solve."""
    p = dra_pod(
        templates=[("gpu", "gpu-template")],
        statuses=[{"name": "gpu", "resourceClaimName": "someone-elses"}],
    )
    results = solve(
        [p], [gpu_type("gpu-it", 1)], claims=[claim("someone-elses", exact("req"), owner_uid="x")]
    )
    assert "was not created for pod" in str(results.pod_errors[p.key])


# --- Template (in-flight) device allocation (B) ------------------------------------------------


def test_b1_packs_pods_on_one_nodeclaim_with_distinct_devices() -> None:
    """Template (in-flight) device allocation (B) / should pack multiple pods onto one
    NodeClaim using distinct devices (B1)."""
    a, b = dra_pod(("gpu", "claim-a")), dra_pod(("gpu", "claim-b"))
    results = solve(
        [a, b],
        [gpu_type("gpu-it", 2)],
        claims=[claim("claim-a", exact("req")), claim("claim-b", exact("req"))],
    )
    assert placed_on(results, a) == placed_on(results, b) == "new:0"
    assert len(results.new_nodeclaims) == 1
    assert set(allocated(results, "claim-a")).isdisjoint(allocated(results, "claim-b"))


def test_b2_a_second_nodeclaim_when_the_devices_run_out() -> None:
    """Template (in-flight) device allocation (B) / should create a second NodeClaim when
    per-node device capacity is exhausted (B2)."""
    a, b = dra_pod(("gpu", "claim-a")), dra_pod(("gpu", "claim-b"))
    results = solve(
        [a, b],
        [gpu_type("gpu-it", 1)],
        claims=[claim("claim-a", exact("req")), claim("claim-b", exact("req"))],
    )
    assert placed_on(results, a) != placed_on(results, b)
    assert len(results.new_nodeclaims) == 2


# --- Allocation modes & constraints (F) --------------------------------------------------------


def test_f1_all_mode_takes_every_matching_device() -> None:
    """Allocation modes & constraints (F) / should allocate every matching device in All
    mode (F1)."""
    p = dra_pod(("gpu", "gpu-claim"))
    results = solve([p], [gpu_type("gpu-it", 3)], claims=[claim("gpu-claim", all_devices("req"))])
    assert results.pod_errors == {}
    assert len(allocated(results, "gpu-claim")) == 3


def test_f2_match_attribute_across_two_requests() -> None:
    """Allocation modes & constraints (F) / should satisfy a MatchAttribute constraint
    across two requests (F2)."""
    root = f"{GPU}/pcieRoot"
    it = with_templates(
        instance_type("gpu-it"),
        template(
            GPU,
            "gpu-it-pool",
            device("gpu-0", {root: "root-a"}),
            device("gpu-1", {root: "root-a"}),
        ),
    )
    p = dra_pod(("gpu", "gpu-claim"))
    c = claim(
        "gpu-claim",
        exact("req-a"),
        exact("req-b"),
        constraints=[{"matchAttribute": root}],
    )
    results = solve([p], [it], claims=[c])
    assert results.pod_errors == {}
    assert len(allocated(results, "gpu-claim")) == 2


# --- Prioritized alternatives / FirstAvailable (H) ---------------------------------------------


def test_h1_falls_back_to_the_sub_request_that_fits() -> None:
    """Prioritized alternatives / FirstAvailable (H) / should bind the selected sub-request
    with a qualified reference when falling back (H1)."""
    p = dra_pod(("gpu", "gpu-claim"))
    c = claim("gpu-claim", first_available("req", ("prefer-4", "gpu", 4), ("fallback-2", "gpu", 2)))
    results = solve([p], [gpu_type("gpu-it", 2)], claims=[c])
    assert len(allocated(results, "gpu-claim")) == 2
    assert set(request_refs(results, "gpu-claim")) == {"req/fallback-2"}


def test_h2_takes_the_preferred_sub_request_when_it_fits() -> None:
    """Prioritized alternatives / FirstAvailable (H) / should bind the preferred
    sub-request with a qualified reference when it fits (H2)."""
    p = dra_pod(("gpu", "gpu-claim"))
    c = claim("gpu-claim", first_available("req", ("prefer-4", "gpu", 4), ("fallback-2", "gpu", 2)))
    results = solve([p], [gpu_type("gpu-it", 4)], claims=[c])
    assert len(allocated(results, "gpu-claim")) == 4
    assert set(request_refs(results, "gpu-claim")) == {"req/prefer-4"}


# --- requested-dra-drivers annotation (G) ------------------------------------------------------


def test_g1_every_driver_allocated_from_is_listed() -> None:
    """requested-dra-drivers annotation (G) / should list every driver whose devices were
    allocated (G1)."""
    p = dra_pod(("gpu", "gpu-claim"), ("nic", "nic-claim"))
    results = solve(
        [p],
        [gpu_and_nic_type("multi-it")],
        claims=[claim("gpu-claim", exact("req", "gpu")), claim("nic-claim", exact("req", "nic"))],
    )
    [nc] = results.new_nodeclaims
    assert nc.annotations[REQUESTED_DRA_DRIVERS_ANNOTATION_KEY] == f"{GPU},{NIC}"
    assert (
        nc.to_nodeclaim_dict()["metadata"]["annotations"][REQUESTED_DRA_DRIVERS_ANNOTATION_KEY]
        == f"{GPU},{NIC}"
    )


# --- Multiple provisioner runs (H) ---------------------------------------------------------------


def test_h1_runs_do_not_allocate_one_device_twice() -> None:
    """Multiple provisioner runs (H) / should not double-allocate a device across runs (H1)."""
    its = [gpu_type("gpu-it", 1)]
    a = dra_pod(("gpu", "claim-a"))
    run1 = solve([a], its, claims=[claim("claim-a", exact("req"))])
    [device_a] = allocated(run1, "claim-a")
    # Run 1's node launched and initialized: its GPU is published and claim-a holds it.
    node = existing_node("node-a", "gpu-it", initialized=True)
    running_a = dra_pod(("gpu", "claim-a"), node_name="node-a", uid=a.uid, name=a.name)
    published = node_local_slice("node-a", GPU, "gpu-it-gpu-0")
    held = allocated_claim(
        "claim-a",
        node_local_pool(GPU, "node-a"),
        GPU,
        "gpu-it-gpu-0",
        pod_consumer(a),
        node="node-a",
    )
    b = dra_pod(("gpu", "claim-b"))
    run2 = solve(
        [b],
        its,
        claims=[held, claim("claim-b", exact("req"))],
        slices=[published],
        nodes=[node],
        running=[running_a],
    )
    assert placed_on(run2, b) == "new:0", "node-a's only device is taken"
    assert allocated(run2, "claim-b") == [device_a], "a new node's own first GPU"


def test_h2_a_claim_allocated_in_a_prior_run_is_already_allocated() -> None:
    """Multiple provisioner runs (H) / should treat a claim allocated in a prior run as
    already-allocated (H2): a second pod sharing it goes where its device is, and no new
    allocation happens."""
    node = existing_node("node-a", "gpu-it", initialized=True)
    a = dra_pod(("gpu", "shared-claim"), node_name="node-a")
    shared = allocated_claim(
        "shared-claim",
        node_local_pool(GPU, "node-a"),
        GPU,
        "gpu-0",
        pod_consumer(a),
        node="node-a",
    )
    b = dra_pod(("gpu", "shared-claim"))
    results = solve(
        [b],
        [gpu_type("gpu-it", 2)],
        claims=[shared],
        slices=[node_local_slice("node-a", GPU, "gpu-0", "gpu-1")],
        nodes=[node],
        running=[a],
    )
    assert placed_on(results, b) == "node-a"
    assert results.dra_claim_allocations == {}, "nothing allocated again"


def test_h3_a_pod_schedules_once_its_missing_claim_exists() -> None:
    """Multiple provisioner runs (H) / should schedule on a later run once a missing claim
    is created (H3)."""
    p = dra_pod(("gpu", "late-claim"))
    run1 = solve([p], [gpu_type("gpu-it", 1)])
    assert run1.new_nodeclaims == []
    assert str(run1.pod_errors[p.key]) == 'resourceclaim "default/late-claim" not found'
    run2 = solve([p], [gpu_type("gpu-it", 1)], claims=[claim("late-claim", exact("req"))])
    assert placed_on(run2, p) == "new:0"


# --- Enablement gating (N) -----------------------------------------------------------------------


def test_n1_ignore_dra_requests_rejects_dra_pods() -> None:
    """Enablement gating (N) / should reject DRA pods with a DRAError when
    IgnoreDRARequests is enabled (N1)."""
    p = dra_pod(("gpu", "gpu-claim"))
    results = solve(
        [p],
        [gpu_type("gpu-it", 1)],
        claims=[claim("gpu-claim", exact("req"))],
        options=DEFAULT_OPTIONS,
    )
    assert results.new_nodeclaims == []
    assert results.pod_errors[p.key] is DRA_ERROR


# --- Unsatisfiable / deferred (U) ----------------------------------------------------------------


def test_u1_a_pod_whose_claim_does_not_exist_is_deferred() -> None:
    """Unsatisfiable / deferred (U) / should defer a pod whose ResourceClaim does not exist
    yet (U1)."""
    p = dra_pod(("gpu", "missing-claim"))
    results = solve([p], [gpu_type("gpu-it", 1)])
    assert results.new_nodeclaims == []
    assert "missing-claim" in str(results.pod_errors[p.key])


def test_u2_no_instance_type_provides_the_device() -> None:
    """Unsatisfiable / deferred (U) / should fail to schedule when no instance type provides
    the requested device (U2); the error names the claim and the request."""
    p = dra_pod(("gpu", "gpu-claim"))
    results = solve(
        [p], [plain_type("no-gpu-it")], claims=[claim("gpu-claim", exact("gpus", "gpu", 2))]
    )
    assert results.new_nodeclaims == []
    message = str(results.pod_errors[p.key])
    assert message.startswith('incompatible with nodepool "default", allocating dynamic resources')
    assert 'claim "gpu-claim" request "gpus"' in message
    assert "needs 2 device(s), at most 0" in message


def test_u3_a_missing_device_class() -> None:
    """Unsatisfiable / deferred (U) / should fail to schedule when the DeviceClass is
    missing (U3)."""
    p = dra_pod(("gpu", "gpu-claim"))
    results = solve(
        [p], [gpu_type("gpu-it", 1)], classes=(), claims=[claim("gpu-claim", exact("req"))]
    )
    assert results.new_nodeclaims == []
    assert 'claim "gpu-claim" request "req": DeviceClass "gpu" not found' in str(
        results.pod_errors[p.key]
    )


def test_u4_a_template_entry_that_needs_no_claim_is_skipped() -> None:
    """Unsatisfiable / deferred (U) / should skip a claim-template reference whose generated
    name is nil (U4)."""
    p = dra_pod(
        templates=[("gpu", "gpu-template")],
        statuses=[{"name": "gpu", "resourceClaimName": None}],
    )
    results = solve([p], [gpu_type("gpu-it", 1)])
    [nc] = results.new_nodeclaims
    assert REQUESTED_DRA_DRIVERS_ANNOTATION_KEY not in nc.annotations


# --- Conflicts & contention (X) ------------------------------------------------------------------


def test_x1_two_claims_needing_different_zones() -> None:
    """Conflicts & contention (X) / should fail to schedule a pod whose two claims require
    incompatible zones (X1)."""
    p = dra_pod(("gpu", "gpu-claim"), ("nic", "nic-claim"))
    results = solve(
        [p],
        [plain_type("plain-it")],
        claims=[claim("gpu-claim", exact("req", "gpu")), claim("nic-claim", exact("req", "nic"))],
        slices=[
            zoned_slice("zoned-gpu-pool", GPU, "test-zone-1", "zoned-gpu-0"),
            zoned_slice("zoned-nic-pool", NIC, "test-zone-2", "zoned-nic-0"),
        ],
    )
    assert results.new_nodeclaims == []
    assert p.key in results.pod_errors


def test_x3_dra_prunes_every_instance_type_that_otherwise_fits() -> None:
    """Conflicts & contention (X) / should fail when DRA prunes all instance types that
    otherwise fit (X3)."""
    arm = with_templates(
        instance_type("arm-gpu-it", arch="arm64"), template(GPU, "arm-gpu-pool", "arm-gpu-0")
    )
    p = dra_pod(("gpu", "gpu-claim"), node_selector={"kubernetes.io/arch": "amd64"})
    results = solve(
        [p], [arm, instance_type("amd-no-gpu-it")], claims=[claim("gpu-claim", exact("req"))]
    )
    assert results.new_nodeclaims == []
    assert p.key in results.pod_errors


# --- Cross-cutting / regression (R) --------------------------------------------------------------


def test_r1_a_mixed_batch_of_dra_and_plain_pods() -> None:
    """Cross-cutting / regression (R) / should handle a mixed batch of DRA and non-DRA pods
    (R1)."""
    from scheduler_helpers import pod

    d, plain = dra_pod(("gpu", "gpu-claim")), pod(cpu="1")
    results = solve([d, plain], [gpu_type("gpu-it", 1)], claims=[claim("gpu-claim", exact("req"))])
    assert results.pod_errors == {}
    assert placed_on(results, d) is not None and placed_on(results, plain) is not None
    assert allocated(results, "gpu-claim")


def test_r2_allocation_metadata_is_keyed_by_claim() -> None:
    """Cross-cutting / regression (R) / should surface DRA allocation metadata keyed by
    claim namespaced name (R2)."""
    p = dra_pod(("gpu", "gpu-claim"))
    results = solve([p], [gpu_type("gpu-it", 1)], claims=[claim("gpu-claim", exact("req"))])
    assert ("default", "gpu-claim") in results.dra_claim_allocations


# --- In-cluster device allocation against existing nodes (C) ----------------------------------


def test_c1_an_existing_nodes_published_device_takes_the_pod() -> None:
    """In-cluster device allocation against existing nodes (C) / should bind to an existing
    initialized node whose published device satisfies the claim (C1)."""
    node = existing_node("node-a", "gpu-it", initialized=True)
    p = dra_pod(("gpu", "gpu-claim"))
    results = solve(
        [p],
        [gpu_type("gpu-it", 1)],
        claims=[claim("gpu-claim", exact("req"))],
        slices=[node_local_slice("node-a", GPU, "incluster-gpu-0")],
        nodes=[node],
    )
    assert placed_on(results, p) == "node-a"
    assert results.new_nodeclaims == []
    assert allocated(results, "gpu-claim") == [f"{node_local_pool(GPU, 'node-a')}/incluster-gpu-0"]


def test_c2_an_existing_device_wins_over_a_new_node() -> None:
    """In-cluster device allocation against existing nodes (C) / should prefer an existing
    node's published device over launching a new node (C2); and a node without a free
    device is passed over."""
    node = existing_node("node-a", "gpu-it", initialized=True)
    p = dra_pod(("gpu", "gpu-claim"))
    results = solve(
        [p],
        [gpu_type("gpu-it", 1)],
        claims=[claim("gpu-claim", exact("req"))],
        slices=[node_local_slice("node-a", GPU, "incluster-gpu-0")],
        nodes=[node],
    )
    assert placed_on(results, p) == "node-a"
    bare = existing_node("node-b", "gpu-it", initialized=True)
    results = solve(
        [p], [gpu_type("gpu-it", 1)], claims=[claim("gpu-claim", exact("req"))], nodes=[bare]
    )
    assert placed_on(results, p) == "new:0", "node-b publishes no device"


# --- Topology propagation from node-local devices (D) -----------------------------------------


def test_d1_a_zoned_device_narrows_the_nodeclaim_to_its_zone() -> None:
    """Topology propagation from node-local devices (D) / should tighten a new NodeClaim to
    the zone of a zoned in-cluster device (D1)."""
    p = dra_pod(("gpu", "gpu-claim"))
    results = solve(
        [p],
        [gpu_type("gpu-it", 1)],
        claims=[claim("gpu-claim", exact("req"))],
        slices=[zoned_slice("zoned-gpu-pool", GPU, "test-zone-2", "zoned-gpu-0")],
    )
    assert nodeclaim_requirement(results, 0, ZONE) == {"test-zone-2"}


def test_d2_two_claims_in_the_same_zone_collapse_the_nodeclaim_to_it() -> None:
    """Topology propagation from node-local devices (D) / should collapse a NodeClaim to the
    shared zone of two compatibly-zoned claims (D2)."""
    p = dra_pod(("gpu", "gpu-claim"), ("nic", "nic-claim"))
    results = solve(
        [p],
        [plain_type("plain-it")],
        claims=[claim("gpu-claim", exact("req", "gpu")), claim("nic-claim", exact("req", "nic"))],
        slices=[
            zoned_slice("zoned-gpu-pool", GPU, "test-zone-2", "zoned-gpu-0"),
            zoned_slice("zoned-nic-pool", NIC, "test-zone-2", "zoned-nic-0"),
        ],
    )
    assert nodeclaim_requirement(results, 0, ZONE) == {"test-zone-2"}


# --- Cross-loop in-memory claim reuse (E) ------------------------------------------------------


def test_e1_a_shared_in_cluster_claim_is_allocated_once() -> None:
    """Cross-loop in-memory claim reuse (E) / should allocate a shared in-cluster claim once
    and reuse it within a single loop (E1)."""
    a, b = dra_pod(("gpu", "shared-claim")), dra_pod(("gpu", "shared-claim"))
    results = solve(
        [a, b],
        [plain_type("plain-it")],
        claims=[claim("shared-claim", exact("req"))],
        slices=[cluster_wide_slice("shared-gpu-pool", GPU, "shared-gpu-0", "shared-gpu-1")],
    )
    assert results.pod_errors == {}
    assert len(allocated(results, "shared-claim")) == 1


def test_e2_a_template_allocated_shared_claim_keeps_its_pods_together() -> None:
    """Cross-loop in-memory claim reuse (E) / should land a second pod on the same
    NodeClaim for a template-allocated shared claim (E2)."""
    a, b = dra_pod(("gpu", "shared-claim")), dra_pod(("gpu", "shared-claim"))
    results = solve([a, b], [gpu_type("gpu-it", 2)], claims=[claim("shared-claim", exact("req"))])
    assert placed_on(results, a) == placed_on(results, b) == "new:0"
    assert len(results.new_nodeclaims) == 1


def test_a_shared_template_claim_never_follows_a_pod_to_another_nodeclaim() -> None:
    """Template devices are node-local: a pod sharing a claim allocated from another
    NodeClaim's templates cannot go elsewhere (design "Allocated (In-Memory)")."""
    a = dra_pod(("gpu", "shared-claim"), cpu="3")
    b = dra_pod(("gpu", "shared-claim"), cpu="3")
    results = solve([a, b], [gpu_type("gpu-it", 1)], claims=[claim("shared-claim", exact("req"))])
    assert placed_on(results, a) == "new:0"
    assert placed_on(results, b) is None, "both do not fit one 4-CPU node"
    assert "bound to a different in-flight NodeClaim" in str(results.pod_errors[b.key])


# --- Device availability via the deviceallocation controller (V) -----------------------------


def test_v2_a_device_held_by_a_live_pod_is_not_reallocated() -> None:
    """Device availability via the deviceallocation controller (V) / should not reallocate a
    cluster-wide device held by a live pod (V2)."""
    live = dra_pod(("gpu", "held-claim"), node_name="somewhere")
    held = allocated_claim("held-claim", "shared-gpu-pool", GPU, "shared-gpu-0", pod_consumer(live))
    p = dra_pod(("gpu", "new-claim"))
    results = solve(
        [p],
        [plain_type("plain-it")],
        claims=[held, claim("new-claim", exact("req"))],
        slices=[cluster_wide_slice("shared-gpu-pool", GPU, "shared-gpu-0", "shared-gpu-1")],
    )
    assert allocated(results, "new-claim") == ["shared-gpu-pool/shared-gpu-1"]


def test_v1_a_device_held_only_by_a_deleting_pod_is_reclaimed() -> None:
    """Device availability via the deviceallocation controller (V) / should reclaim a
    cluster-wide device whose only consumer is a deleting pod (V1)."""
    leaving = dra_pod(("gpu", "held-claim"), node_name="deleting-node")
    held = allocated_claim(
        "held-claim", "shared-gpu-pool", GPU, "shared-gpu-0", pod_consumer(leaving)
    )
    p = dra_pod(("gpu", "new-claim"))
    results = solve(
        [p],
        [plain_type("plain-it")],
        claims=[held, claim("new-claim", exact("req"))],
        slices=[cluster_wide_slice("shared-gpu-pool", GPU, "shared-gpu-0")],
        deleting_pod_uids=[leaving.uid],
    )
    assert allocated(results, "new-claim") == ["shared-gpu-pool/shared-gpu-0"]
    # Without the deletion the one device is taken.
    results = solve(
        [p],
        [plain_type("plain-it")],
        claims=[held, claim("new-claim", exact("req"))],
        slices=[cluster_wide_slice("shared-gpu-pool", GPU, "shared-gpu-0")],
    )
    assert results.new_nodeclaims == []


def test_a_deleting_pods_claim_is_allocated_again_where_the_pod_goes() -> None:
    """Design "Allocated (In-Cluster)": a claim whose consumers are all deleting pods is
    re-run through the search, so the rescheduled pod takes devices on its new node."""
    leaving = dra_pod(("gpu", "held-claim"), node_name="deleting-node")
    held = allocated_claim(
        "held-claim",
        node_local_pool(GPU, "deleting-node"),
        GPU,
        "gpu-0",
        pod_consumer(leaving),
        node="deleting-node",
    )
    moving = dra_pod(("gpu", "held-claim"), uid=leaving.uid, name=leaving.name)
    results = solve(
        [moving], [gpu_type("gpu-it", 1)], claims=[held], deleting_pod_uids=[leaving.uid]
    )
    assert placed_on(results, moving) == "new:0"
    assert allocated(results, "held-claim") == ["gpu-it-pool/gpu-it-gpu-0"]


def test_a_claim_allocated_on_one_node_fits_no_other() -> None:
    """Departure from upstream (which reads only matchExpressions of an allocation's node
    selector): kube-scheduler pins node-local allocations by ``matchFields`` on
    ``metadata.name``, and a pod sharing such a claim can only go to that node."""
    node = existing_node("node-a", "gpu-it", initialized=True, cpu="1")
    a = dra_pod(("gpu", "shared-claim"), node_name="node-a")
    shared = allocated_claim(
        "shared-claim",
        node_local_pool(GPU, "node-a"),
        GPU,
        "gpu-0",
        pod_consumer(a),
        node="node-a",
    )
    b = dra_pod(("gpu", "shared-claim"))  # node-a is full: 1 CPU, taken by a
    results = solve([b], [gpu_type("gpu-it", 1)], claims=[shared], nodes=[node], running=[a])
    assert results.new_nodeclaims == []
    assert "allocated on node node-a" in str(results.pod_errors[b.key])


# --- Slice sourcing / lifecycle edges (S) -------------------------------------------------------


def test_s1_an_uninitialized_nodes_published_slices_are_left_out() -> None:
    """Slice sourcing / lifecycle edges (S) / should exclude published slices of an
    uninitialized node (S1)."""
    node = existing_node("node-a", "gpu-it", initialized=False, cpu="1")
    p = dra_pod(("gpu", "gpu-claim"), cpu="2")  # too big for node-a: a new node it is
    results = solve(
        [p],
        [gpu_type("gpu-it", 1)],
        claims=[claim("gpu-claim", exact("req"))],
        slices=[node_local_slice("node-a", GPU, "incluster-gpu-0")],
        nodes=[node],
    )
    assert placed_on(results, p) == "new:0"
    assert allocated(results, "gpu-claim") == ["gpu-it-pool/gpu-it-gpu-0"]


def test_s2_slices_of_a_node_outside_cluster_state_are_left_out() -> None:
    """Slice sourcing / lifecycle edges (S) / should exclude slices owned by a node not in
    cluster state (S2)."""
    p = dra_pod(("gpu", "gpu-claim"))
    results = solve(
        [p],
        [gpu_type("gpu-it", 1)],
        claims=[claim("gpu-claim", exact("req"))],
        slices=[node_local_slice("orphan-node", GPU, "orphan-gpu-0")],
    )
    assert allocated(results, "gpu-claim") == ["gpu-it-pool/gpu-it-gpu-0"]


# --- Partially-initialized nodes (I) ----------------------------------------------------------


def test_i1_a_pre_initialized_node_offers_its_template_devices() -> None:
    """Partially-initialized nodes (I) / should satisfy a pod via template devices for a
    pre-initialized node (I1)."""
    node = existing_node("node-a", "gpu-it", initialized=False)
    p = dra_pod(("gpu", "gpu-claim"))
    results = solve(
        [p],
        [gpu_type("gpu-it", 1)],
        claims=[claim("gpu-claim", exact("req"))],
        slices=[node_local_slice("node-a", GPU, "incluster-gpu-0")],
        nodes=[node],
    )
    assert placed_on(results, p) == "node-a"
    assert allocated(results, "gpu-claim") == ["gpu-it-pool/gpu-it-gpu-0"], "a template device"


def test_i2_no_double_counting_across_initialization() -> None:
    """Partially-initialized nodes (I) / should not double-count a node's devices across the
    uninitialized→initialized transition (I2)."""
    its = [gpu_type("gpu-it", 1)]
    published = node_local_slice("node-a", GPU, "incluster-gpu-0")
    # Run 1: uninitialized, one template device: one pod, the second needs another node.
    a, b = dra_pod(("gpu", "claim-a")), dra_pod(("gpu", "claim-b"))
    uninitialized = existing_node("node-a", "gpu-it", initialized=False)
    run1 = solve(
        [a, b],
        its,
        claims=[claim("claim-a", exact("req")), claim("claim-b", exact("req"))],
        slices=[published],
        nodes=[uninitialized],
    )
    on_node = [p for p in (a, b) if placed_on(run1, p) == "node-a"]
    assert len(on_node) == 1, "the node's one device counted once"
    # Run 2: initialized, its published device is now the one device.
    initialized = existing_node("node-a", "gpu-it", initialized=True)
    run2 = solve(
        [b], its, claims=[claim("claim-b", exact("req"))], slices=[published], nodes=[initialized]
    )
    assert placed_on(run2, b) == "node-a"
    assert len(allocated(run2, "claim-b")) == 1


# --- Consumable capacity (P) and partitionable devices (K) -------------------------------------


def test_p_and_k_unsimulated_features_are_errors_naming_claim_and_request() -> None:
    """Consumable capacity (P) / Partitionable devices (K): upstream has since grown these;
    Karpenter's design scopes them out, so a claim needing one gets an error naming the
    claim and request rather than a guess (docs/dra.md, "Out of scope")."""
    p = dra_pod(("gpu", "gpu-claim"))
    capacity = {
        "name": "req",
        "exactly": {
            "deviceClassName": "gpu",
            "capacity": {"requests": {"memory": "10Gi"}},
        },
    }
    results = solve([p], [gpu_type("gpu-it", 1)], claims=[claim("gpu-claim", capacity)])
    message = str(results.pod_errors[p.key])
    assert 'claim "gpu-claim" request "req" is not supported' in message
    assert "consumable capacity" in message


# --- IGNORE_DRA_REQUESTS and DaemonSets ---------------------------------------------------------


def test_without_dra_inputs_a_named_claim_cannot_be_found() -> None:
    """DRA simulated but nothing read from the cluster: the claim is missing, the pod waits
    (never scheduled as if it asked for nothing)."""
    p = dra_pod(("gpu", "gpu-claim"))
    results = solve([p], [gpu_type("gpu-it", 1)], dra=False)
    assert results.new_nodeclaims == []
    assert "not found" in str(results.pod_errors[p.key])


@pytest.mark.parametrize("ignore", [True, False])
def test_pods_without_claims_schedule_the_same_either_way(ignore: bool) -> None:
    from scheduler_helpers import pod

    pods = [pod(cpu="1") for _ in range(3)]
    options = DEFAULT_OPTIONS if ignore else DRA_OPTIONS
    results = solve(pods, [gpu_type("gpu-it", 2), plain_type("plain-it")], options=options)
    assert results.pod_errors == {}
    assert len(results.new_nodeclaims) == 1
