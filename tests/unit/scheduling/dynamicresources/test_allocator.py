"""The DRA allocator, ported from upstream's ``pkg/scheduling/dynamicresources/allocator_test.go``.

Each test's docstring names the upstream ``Describe / It`` it covers. Where upstream only
checks "no error", these tests also check what was allocated (from the allocation's claim
metadata), since the device choice is the behaviour.
"""

from __future__ import annotations

import pytest
from dra_builders import (
    GPU_DRIVER,
    ZONE,
    all_of,
    allocated_claim,
    allocator,
    api_slice,
    claim,
    device,
    device_class,
    exact,
    first_available,
    match,
    nodeclaim,
    sub,
    template,
    with_templates,
    zone_reqs,
)

from karpenter_core.apis.resource import Device, ResourceClaim
from karpenter_core.scheduling.dynamicresources import (
    AllocationError,
    AllocationResult,
    AttributeBinding,
    DeviceID,
    build_attribute_bindings,
)

NUMA = f"{GPU_DRIVER}/numa"


def ok(result: AllocationResult | AllocationError) -> AllocationResult:
    assert isinstance(result, AllocationResult), f"expected an allocation, got: {result}"
    return result


def fails(result: AllocationResult | AllocationError) -> AllocationError:
    assert isinstance(result, AllocationError), f"expected an error, got {result}"
    return result


def chosen(result: AllocationResult, it: str = "it-1") -> list[str]:
    """The device names the allocation picked on ``it`` (all claims, in order)."""
    assert result.allocation is not None
    return [str(d) for d in result.allocation.devices_by_instance_type[it]]


def gpus(*names: str, pool: str = "pool-a", **kw: object) -> object:
    return api_slice("s1", GPU_DRIVER, pool, names, all_nodes=True, **kw)  # type: ignore[arg-type]


FOUR = [api_slice("s1", GPU_DRIVER, "pool-a", ["gpu-0", "gpu-1", "gpu-2", "gpu-3"], all_nodes=True)]


def numa_slice() -> list[object]:
    return [
        api_slice(
            "s1",
            GPU_DRIVER,
            "pool-a",
            [
                device("gpu-0", {NUMA: "node-0"}),
                device("gpu-1", {NUMA: "node-0"}),
                device("gpu-2", {NUMA: "node-1"}),
                device("gpu-3", {NUMA: "node-1"}),
            ],
            all_nodes=True,
        )
    ]


# --- Empty claims / Single IT, in-cluster devices ---------------------------------------------


def test_no_claims_returns_every_instance_type() -> None:
    """Empty claims / should return immediately with no claims."""
    result = ok(allocator().allocate(nodeclaim("it-1"), []))
    assert result.instance_types == ("it-1",)
    assert result.allocation is None


def test_allocates_a_single_device() -> None:
    """Single IT, in-cluster devices / should allocate a single device."""
    result = ok(allocator(FOUR).allocate(nodeclaim("it-1"), [claim("c1", exact("req-1"))]))
    assert result.instance_types == ("it-1",)
    assert len(chosen(result)) == 1


def test_allocates_several_devices_for_one_request() -> None:
    """Single IT, in-cluster devices / should allocate multiple devices for a single request."""
    result = ok(allocator(FOUR).allocate(nodeclaim("it-1"), [claim("c1", exact("req-1", count=3))]))
    assert len(set(chosen(result))) == 3


def test_fails_when_not_enough_devices() -> None:
    """Single IT, in-cluster devices / should fail when not enough devices are available."""
    fails(allocator(FOUR).allocate(nodeclaim("it-1"), [claim("c1", exact("req-1", count=5))]))


def test_several_requests_in_one_claim() -> None:
    """Single IT, in-cluster devices / should handle multiple requests in a single claim."""
    c = claim("c1", exact("req-1", count=2), exact("req-2", count=2))
    result = ok(allocator(FOUR).allocate(nodeclaim("it-1"), [c]))
    assert len(set(chosen(result))) == 4


def test_requests_exceeding_the_devices_fail() -> None:
    """Single IT, in-cluster devices / should fail when multiple requests exceed total devices."""
    c = claim("c1", exact("req-1", count=3), exact("req-2", count=3))
    fails(allocator(FOUR).allocate(nodeclaim("it-1"), [c]))


def test_several_claims() -> None:
    """Single IT, in-cluster devices / should handle multiple claims."""
    claims = [claim("c1", exact("req-1", count=2)), claim("c2", exact("req-1", count=2))]
    result = ok(allocator(FOUR).allocate(nodeclaim("it-1"), claims))
    assert len(set(chosen(result))) == 4


def test_claims_of_the_same_name_in_two_namespaces_are_distinct() -> None:
    """Single IT, in-cluster devices / should distinguish claims with the same name in
    different namespaces."""
    a = allocator(FOUR)
    c1 = claim("c1", exact("req-1"), namespace="ns-1")
    c2 = claim("c1", exact("req-1"), namespace="ns-2")
    result = ok(a.allocate(nodeclaim("it-1"), [c1, c2]))
    assert result.allocation is not None
    result.allocation.commit()
    m1, m2 = a.claim_allocation(("ns-1", "c1")), a.claim_allocation(("ns-2", "c1"))
    assert m1 is not None and m2 is not None
    assert len(m1.devices["it-1"]) == 1 and len(m2.devices["it-1"]) == 1
    assert m1.devices["it-1"][0].device != m2.devices["it-1"][0].device


def test_skips_devices_allocated_in_the_cluster() -> None:
    """Single IT, in-cluster devices / should skip already-allocated devices."""
    taken = [DeviceID(GPU_DRIVER, "pool-a", f"gpu-{i}") for i in range(3)]
    fails(
        allocator(FOUR, taken).allocate(nodeclaim("it-1"), [claim("c1", exact("req-1", count=2))])
    )


def test_allocates_the_remaining_devices() -> None:
    """Single IT, in-cluster devices / should allocate remaining devices when some are already
    allocated."""
    taken = [DeviceID(GPU_DRIVER, "pool-a", "gpu-0"), DeviceID(GPU_DRIVER, "pool-a", "gpu-1")]
    result = ok(
        allocator(FOUR, taken).allocate(nodeclaim("it-1"), [claim("c1", exact("req-1", count=2))])
    )
    assert sorted(chosen(result)) == [f"{GPU_DRIVER}/pool-a/gpu-2", f"{GPU_DRIVER}/pool-a/gpu-3"]


# --- Node-name-pinned in-cluster devices ------------------------------------------------------

PINNED = [api_slice("s1", GPU_DRIVER, "pool-a", ["gpu-0"], node_name="node-a")]


def test_node_pinned_device_serves_its_node() -> None:
    """Node-name-pinned in-cluster devices / should allocate a node-name-pinned device for the
    existing node it belongs to."""
    ok(allocator(PINNED).allocate(nodeclaim("it-1", node_name="node-a"), [claim("c1", exact("r"))]))


def test_node_pinned_device_does_not_serve_another_node() -> None:
    """Node-name-pinned in-cluster devices / should not allocate a node-name-pinned device for a
    different existing node."""
    fails(
        allocator(PINNED).allocate(nodeclaim("it-1", node_name="node-b"), [claim("c1", exact("r"))])
    )


def test_node_pinned_device_does_not_serve_an_inflight_nodeclaim() -> None:
    """Node-name-pinned in-cluster devices / should not allocate a node-name-pinned device for
    an in-flight NodeClaim."""
    fails(allocator(PINNED).allocate(nodeclaim("it-1"), [claim("c1", exact("r"))]))


# --- CEL selector filtering / combined selectors ----------------------------------------------

MODEL = f"{GPU_DRIVER}/model"
MODELS = [
    api_slice(
        "s1",
        GPU_DRIVER,
        "pool-a",
        [
            device("gpu-0", {MODEL: "H100"}),
            device("gpu-1", {MODEL: "A100"}),
            device("gpu-2", {MODEL: "H100"}),
        ],
        all_nodes=True,
    )
]
H100 = {
    "gpu": device_class(),
    "h100": device_class("h100", f'device.attributes["{GPU_DRIVER}"].model == "H100"'),
}


def test_class_selector_picks_matching_devices() -> None:
    """CEL selector filtering / should only allocate devices matching the selector."""
    result = ok(
        allocator(MODELS, classes=H100).allocate(
            nodeclaim("it-1"), [claim("c", exact("r", "h100", 2))]
        )
    )
    assert sorted(chosen(result)) == [f"{GPU_DRIVER}/pool-a/gpu-0", f"{GPU_DRIVER}/pool-a/gpu-2"]


def test_too_few_matching_devices_fail() -> None:
    """CEL selector filtering / should fail when not enough devices match the selector."""
    fails(
        allocator(MODELS, classes=H100).allocate(
            nodeclaim("it-1"), [claim("c", exact("r", "h100", 3))]
        )
    )


def test_request_selector_filters() -> None:
    """CEL selector filtering / should filter with request-level selectors."""
    c = claim("c", exact("r", "gpu", 1, f'device.attributes["{GPU_DRIVER}"].model == "A100"'))
    result = ok(allocator(MODELS).allocate(nodeclaim("it-1"), [c]))
    assert chosen(result) == [f"{GPU_DRIVER}/pool-a/gpu-1"]


def test_class_and_request_selectors_are_anded() -> None:
    """Combined class and request selectors / should require both class and request selectors
    to match."""
    mem = f"{GPU_DRIVER}/memory"
    slices = [
        api_slice(
            "s1",
            GPU_DRIVER,
            "pool-a",
            [
                device("gpu-0", {MODEL: "H100", mem: 80}),
                device("gpu-1", {MODEL: "H100", mem: 40}),
                device("gpu-2", {MODEL: "A100", mem: 80}),
            ],
            all_nodes=True,
        )
    ]
    classes = {
        "h100-class": device_class(
            "h100-class", f'device.attributes["{GPU_DRIVER}"].model == "H100"'
        )
    }
    sel = f'device.attributes["{GPU_DRIVER}"].memory > 60'
    a = allocator(slices, classes=classes)
    result = ok(a.allocate(nodeclaim("it-1"), [claim("c1", exact("r", "h100-class", 1, sel))]))
    assert chosen(result) == [f"{GPU_DRIVER}/pool-a/gpu-0"]
    fails(a.allocate(nodeclaim("it-1"), [claim("c2", exact("r", "h100-class", 2, sel))]))


# --- Constraint satisfaction ------------------------------------------------------------------


def test_match_attribute_is_satisfied() -> None:
    """Constraint satisfaction / should satisfy MatchAttribute constraints."""
    c = claim("c1", exact("req-1", count=2), constraints=[match(NUMA)])
    result = ok(allocator(numa_slice()).allocate(nodeclaim("it-1"), [c]))
    picked = chosen(result)
    assert picked in (
        [f"{GPU_DRIVER}/pool-a/gpu-0", f"{GPU_DRIVER}/pool-a/gpu-1"],
        [f"{GPU_DRIVER}/pool-a/gpu-2", f"{GPU_DRIVER}/pool-a/gpu-3"],
    )


def test_match_attribute_that_cannot_hold_fails_after_backtracking() -> None:
    """Constraint satisfaction / should backtrack to satisfy constraints (3 devices on one NUMA
    node, where each has 2: fails)."""
    c = claim("c1", exact("req-1", count=3), constraints=[match(NUMA)])
    fails(allocator(numa_slice()).allocate(nodeclaim("it-1"), [c]))


def test_constraints_scoped_per_request_backtrack_across_requests() -> None:
    """Constraint satisfaction / should satisfy constraints with backtracking across requests."""
    c = claim(
        "c1",
        exact("req-1", count=2),
        exact("req-2", count=2),
        constraints=[match(NUMA, "req-1"), match(NUMA, "req-2")],
    )
    result = ok(allocator(numa_slice()).allocate(nodeclaim("it-1"), [c]))
    assert len(set(chosen(result))) == 4


def test_independent_constraints_across_claims() -> None:
    """Multi-claim competition / should maintain independent constraints across claims."""
    claims = [
        claim("c1", exact("req-1", count=2), constraints=[match(NUMA)]),
        claim("c2", exact("req-1", count=2), constraints=[match(NUMA)]),
    ]
    result = ok(allocator(numa_slice()).allocate(nodeclaim("it-1"), claims))
    assert len(set(chosen(result))) == 4


def test_constraint_scoped_to_a_subset_lets_other_requests_differ() -> None:
    """Constraint scoped to request subset / should allow non-scoped requests to cross
    constraint boundaries."""
    c = claim(
        "c1",
        exact("a", count=2),
        exact("b", count=1),
        constraints=[match(NUMA, "a")],
    )
    result = ok(allocator(numa_slice()).allocate(nodeclaim("it-1"), [c]))
    assert len(set(chosen(result))) == 3


def test_multiple_constraints_on_one_claim() -> None:
    """Constraint + template integration / should satisfy multiple constraints on the same
    claim; and should fail when multiple constraints cannot be simultaneously satisfied."""
    pcie = f"{GPU_DRIVER}/pcie"
    slices = [
        api_slice(
            "s1",
            GPU_DRIVER,
            "pool-a",
            [
                device("gpu-0", {NUMA: "n0", pcie: "p0"}),
                device("gpu-1", {NUMA: "n0", pcie: "p1"}),
                device("gpu-2", {NUMA: "n1", pcie: "p1"}),
                device("gpu-3", {NUMA: "n1", pcie: "p1"}),
            ],
            all_nodes=True,
        )
    ]
    both = claim("c1", exact("r", count=2), constraints=[match(NUMA), match(pcie)])
    result = ok(allocator(slices).allocate(nodeclaim("it-1"), [both]))
    assert sorted(chosen(result)) == [f"{GPU_DRIVER}/pool-a/gpu-2", f"{GPU_DRIVER}/pool-a/gpu-3"]
    three = claim("c2", exact("r", count=3), constraints=[match(NUMA), match(pcie)])
    fails(allocator(slices).allocate(nodeclaim("it-1"), [three]))


# --- Templates ---------------------------------------------------------------------------------

TWO = [api_slice("s1", GPU_DRIVER, "pool-a", ["gpu-0", "gpu-1"], all_nodes=True)]


def test_templates_make_up_what_the_cluster_lacks() -> None:
    """Single IT with templates / should allocate from templates when in-cluster devices are
    insufficient."""
    nc = with_templates(template(GPU_DRIVER, "pool-b", "tgpu-0", "tgpu-1"))
    result = ok(allocator(TWO).allocate(nc, [claim("c1", exact("req-1", count=3))]))
    picked = chosen(result)
    assert picked[:2] == [f"{GPU_DRIVER}/pool-a/gpu-0", f"{GPU_DRIVER}/pool-a/gpu-1"]
    assert picked[2].startswith("virtual/")


def test_in_cluster_devices_are_preferred_to_templates() -> None:
    """Single IT with templates / should prefer in-cluster devices over templates; Edge cases /
    should succeed with templates when in-cluster satisfies everything."""
    nc = with_templates(template(GPU_DRIVER, "pool-b", "tgpu-0", "tgpu-1"))
    result = ok(allocator(TWO).allocate(nc, [claim("c1", exact("req-1", count=2))]))
    assert not any(p.startswith("virtual/") for p in chosen(result))
    assert result.allocation is not None
    assert not result.allocation.claims[("default", "c1")].used_template_devices


# --- Multi-IT -----------------------------------------------------------------------------------

ONE = [api_slice("s1", GPU_DRIVER, "pool-a", ["gpu-0"], all_nodes=True)]


def test_instance_types_that_cannot_satisfy_are_pruned() -> None:
    """Multi-IT allocation / should prune instance types that cannot satisfy requests."""
    nc = nodeclaim(
        templates={"it-large": [template(GPU_DRIVER, "pool-b", "tgpu-0", "tgpu-1")], "it-small": []}
    )
    result = ok(allocator(ONE).allocate(nc, [claim("c1", exact("req-1", count=3))]))
    assert result.instance_types == ("it-large",)


def test_every_capable_instance_type_is_kept() -> None:
    """Multi-IT allocation / should keep all instance types that can satisfy requests."""
    nc = nodeclaim(
        templates={
            "it-a": [template(GPU_DRIVER, "pool-b", "tgpu-0")],
            "it-b": [template(GPU_DRIVER, "pool-c", "tgpu-0")],
        }
    )
    result = ok(allocator(ONE).allocate(nc, [claim("c1", exact("req-1", count=2))]))
    assert set(result.instance_types) == {"it-a", "it-b"}


def test_fails_when_no_instance_type_can() -> None:
    """Multi-IT allocation / should fail when no instance type can satisfy."""
    nc = nodeclaim(
        templates={
            "it-a": [template(GPU_DRIVER, "pool-b", "tgpu-0")],
            "it-b": [template(GPU_DRIVER, "pool-c", "tgpu-0")],
        }
    )
    err = fails(allocator().allocate(nc, [claim("c1", exact("req-1", count=5))]))
    assert "no instance type can satisfy" in str(err)


def test_fails_with_no_instance_types() -> None:
    """Edge cases / should fail with zero instance types."""
    fails(allocator(FOUR).allocate(nodeclaim(), [claim("c1", exact("req-1"))]))


def _numa_template(pool: str, *values: str) -> object:
    return template(
        GPU_DRIVER, pool, *(device(f"tgpu-{i}", {NUMA: v}) for i, v in enumerate(values))
    )


def test_constraint_state_does_not_leak_between_instance_types() -> None:
    """Multi-IT constraint isolation / should not leak constraint state between instance type
    iterations."""
    nc = nodeclaim(
        templates={
            "it-a": [_numa_template("pool-a", "node-0", "node-0")],  # type: ignore[list-item]
            "it-b": [_numa_template("pool-b", "node-1", "node-1")],  # type: ignore[list-item]
        }
    )
    c = claim("c1", exact("req-1", count=2), constraints=[match(NUMA)])
    assert set(ok(allocator().allocate(nc, [c])).instance_types) == {"it-a", "it-b"}


def test_binding_state_does_not_leak_between_instance_types() -> None:
    """Multi-IT constraint isolation / should not leak binding fallback state between instance
    type iterations."""
    bindings = build_attribute_bindings(
        {
            "test-np": {
                "it-a": [
                    AttributeBinding(
                        NUMA,
                        [
                            DeviceID(GPU_DRIVER, "pool-a", "tgpu-0"),
                            DeviceID(GPU_DRIVER, "pool-a", "tgpu-1"),
                        ],
                    )
                ]
            }
        }
    )
    nc = nodeclaim(
        templates={
            "it-a": [template(GPU_DRIVER, "pool-a", "tgpu-0", "tgpu-1")],
            "it-b": [_numa_template("pool-b", "node-1", "node-1")],  # type: ignore[list-item]
        }
    )
    c = claim("c1", exact("req-1", count=2), constraints=[match(NUMA)])
    assert set(ok(allocator(bindings=bindings).allocate(nc, [c])).instance_types) == {
        "it-a",
        "it-b",
    }


def test_a_failed_instance_type_leaves_clean_state() -> None:
    """Multi-IT constraint isolation / should still allow second IT to succeed when first IT
    fails constraints."""
    nc = nodeclaim(
        templates={
            "it-a": [_numa_template("pool-a", "node-0", "node-1")],  # type: ignore[list-item]
            "it-b": [_numa_template("pool-b", "node-2", "node-2")],  # type: ignore[list-item]
        }
    )
    c = claim("c1", exact("req-1", count=2), constraints=[match(NUMA)])
    assert ok(allocator().allocate(nc, [c])).instance_types == ("it-b",)


# --- Commit, contention, release -----------------------------------------------------------------

THREE = [api_slice("s1", GPU_DRIVER, "pool-a", ["gpu-0", "gpu-1", "gpu-2"], all_nodes=True)]


def _commit(result: AllocationResult | AllocationError) -> AllocationResult:
    r = ok(result)
    assert r.allocation is not None
    r.allocation.commit()
    return r


def test_commit_reserves_in_cluster_devices() -> None:
    """Commit protocol / should mark in-cluster devices as allocated after commit."""
    a = allocator(THREE)
    _commit(a.allocate(nodeclaim("it-1"), [claim("c1", exact("r", count=2))]))
    fails(a.allocate(nodeclaim("it-1"), [claim("c2", exact("r", count=2))]))


def test_commit_caches_pools_for_the_nodeclaim() -> None:
    """Commit protocol / should update pool cache on commit."""
    a = allocator(TWO)
    _commit(a.allocate(nodeclaim("it-1"), [claim("c1", exact("r"))]))
    assert "test-nc" in a.pool_cache
    result = ok(a.allocate(nodeclaim("it-1"), [claim("c2", exact("r"))]))
    assert chosen(result) == [f"{GPU_DRIVER}/pool-a/gpu-1"]


def test_committing_twice_is_refused() -> None:
    """Commit protocol: an allocation applies once (upstream panics on a re-committed claim)."""
    result = ok(allocator(TWO).allocate(nodeclaim("it-1"), [claim("c1", exact("r"))]))
    assert result.allocation is not None
    result.allocation.commit()
    with pytest.raises(RuntimeError):
        result.allocation.commit()


def test_uncommitted_allocations_reserve_nothing() -> None:
    """Uncommitted allocation state isolation / should not reserve devices when allocation is
    not committed; should not reserve devices for a different NodeClaim when not committed."""
    a = allocator(TWO)
    ok(a.allocate(nodeclaim("it-1", id="nc-a"), [claim("c1", exact("r", count=2))]))
    ok(a.allocate(nodeclaim("it-1", id="nc-a"), [claim("c2", exact("r", count=2))]))
    ok(a.allocate(nodeclaim("it-1", id="nc-b"), [claim("c3", exact("r", count=2))]))


def test_devices_reserved_by_another_nodeclaim_are_blocked() -> None:
    """Cross-NodeClaim device contention / should block devices allocated by a different
    NodeClaim."""
    a = allocator(THREE)
    _commit(a.allocate(nodeclaim("it-1", id="nc-a"), [claim("c1", exact("r", count=2))]))
    fails(a.allocate(nodeclaim("it-1", id="nc-b"), [claim("c2", exact("r", count=2))]))
    ok(a.allocate(nodeclaim("it-1", id="nc-b"), [claim("c3", exact("r", count=1))]))


def test_same_nodeclaim_other_instance_type_may_reuse_devices() -> None:
    """Cross-NodeClaim device contention / should allow the same device on the same NodeClaim
    for a different instance type."""
    a = allocator(THREE)
    _commit(a.allocate(nodeclaim("it-a", id="nc-a"), [claim("c1", exact("r", count=2))]))
    ok(a.allocate(nodeclaim("it-b", id="nc-a"), [claim("c2", exact("r", count=2))]))


def test_same_nodeclaim_same_instance_type_is_blocked() -> None:
    """Cross-NodeClaim device contention / should block the same device on the same NodeClaim
    and same instance type from a prior pod."""
    a = allocator(THREE)
    _commit(a.allocate(nodeclaim("it-a", id="nc-a"), [claim("c1", exact("r", count=2))]))
    fails(a.allocate(nodeclaim("it-a", id="nc-a"), [claim("c2", exact("r", count=2))]))
    ok(a.allocate(nodeclaim("it-a", id="nc-a"), [claim("c3", exact("r", count=1))]))


def test_multi_instance_type_reservations_block_other_nodeclaims() -> None:
    """Cross-NodeClaim device contention / should handle multi-IT NodeClaim device contention
    across NodeClaims."""
    a = allocator(THREE)
    r = _commit(
        a.allocate(nodeclaim("it-a", "it-b", id="nc-a"), [claim("c1", exact("r", count=2))])
    )
    assert r.instance_types == ("it-a", "it-b")
    fails(a.allocate(nodeclaim("it-c", id="nc-b"), [claim("c2", exact("r", count=2))]))


def test_releasing_the_only_instance_type_frees_devices() -> None:
    """ReleaseInstanceType / should free devices for other NodeClaims after releasing the only
    instance type."""
    a = allocator(TWO)
    _commit(a.allocate(nodeclaim("it-1", id="nc-a"), [claim("c1", exact("r", count=2))]))
    c2 = claim("c2", exact("r"))
    fails(a.allocate(nodeclaim("it-1", id="nc-b"), [c2]))
    a.release_instance_types("nc-a", ["it-1"])
    ok(a.allocate(nodeclaim("it-1", id="nc-b"), [c2]))


def test_devices_are_freed_with_the_last_instance_type() -> None:
    """ReleaseInstanceType / should free devices only when the last instance type referencing
    them is released."""
    a = allocator(TWO)
    _commit(a.allocate(nodeclaim("it-a", "it-b", id="nc-a"), [claim("c1", exact("r", count=2))]))
    c2 = claim("c2", exact("r"))
    a.release_instance_types("nc-a", ["it-a"])
    fails(a.allocate(nodeclaim("it-1", id="nc-b"), [c2]))
    a.release_instance_types("nc-a", ["it-b"])
    ok(a.allocate(nodeclaim("it-1", id="nc-b"), [c2]))


def test_releasing_an_unknown_instance_type_is_a_no_op() -> None:
    """ReleaseInstanceType / should be a no-op when releasing an instance type that was never
    committed."""
    a = allocator(TWO)
    a.release_instance_types("nc-nonexistent", ["it-nonexistent"])
    ok(a.allocate(nodeclaim("it-1"), [claim("c1", exact("r", count=2))]))


def test_template_devices_are_blocked_on_the_same_nodeclaim_and_type() -> None:
    """Template device tracking after commit / should block template devices for the same
    NC/IT after commit."""
    a = allocator()
    nc = with_templates(template(GPU_DRIVER, "pool-b", "tgpu-0", "tgpu-1"))
    _commit(a.allocate(nc, [claim("c1", exact("r", count=2))]))
    fails(a.allocate(nc, [claim("c2", exact("r"))]))


def test_template_devices_of_another_type_stay_free() -> None:
    """Template device tracking after commit / should allow template devices for a different IT
    on the same NC after commit."""
    a = allocator()
    _commit(
        a.allocate(
            with_templates(
                template(GPU_DRIVER, "pool-b", "tgpu-0", "tgpu-1"), id="nc-a", instance_type="it-a"
            ),
            [claim("c1", exact("r", count=2))],
        )
    )
    ok(
        a.allocate(
            with_templates(
                template(GPU_DRIVER, "pool-c", "tgpu-0", "tgpu-1"), id="nc-a", instance_type="it-b"
            ),
            [claim("c2", exact("r", count=2))],
        )
    )


def test_devices_are_shared_across_claims_of_one_call() -> None:
    """Multi-claim competition / should consume devices across claims within a single Allocate
    call; should succeed when claims fit within the total device count."""
    claims = [claim("c1", exact("r", count=2)), claim("c2", exact("r", count=2))]
    fails(allocator(THREE).allocate(nodeclaim("it-1"), claims))
    ok(allocator(FOUR).allocate(nodeclaim("it-1"), claims))


def test_devices_of_several_pools() -> None:
    """Multi-pool devices / should allocate devices from multiple pools; should treat same
    device name in different pools as distinct."""
    slices = [
        api_slice("s1", GPU_DRIVER, "pool-a", ["gpu-0"], all_nodes=True),
        api_slice("s2", GPU_DRIVER, "pool-b", ["gpu-0"], all_nodes=True),
    ]
    result = ok(allocator(slices).allocate(nodeclaim("it-1"), [claim("c1", exact("r", count=2))]))
    assert sorted(chosen(result)) == [f"{GPU_DRIVER}/pool-a/gpu-0", f"{GPU_DRIVER}/pool-b/gpu-0"]


def test_no_pools_and_no_templates_fail() -> None:
    """Empty pool set / should fail when no pools match and no templates available."""
    slices = [api_slice("s1", GPU_DRIVER, "pool-a", ["gpu-0"], zone=["eu-west-1a"])]
    fails(
        allocator(slices).allocate(
            nodeclaim("it-1", requirements=zone_reqs("us-west-2a")), [claim("c1", exact("r"))]
        )
    )


# --- All mode ------------------------------------------------------------------------------------


def test_all_mode_takes_every_matching_in_cluster_device() -> None:
    """All-mode allocation / should allocate all matching in-cluster devices."""
    result = ok(allocator(THREE).allocate(nodeclaim("it-1"), [claim("c1", all_of("r"))]))
    assert len(chosen(result)) == 3


def test_all_mode_takes_in_cluster_and_template_devices() -> None:
    """All-mode allocation / should allocate all matching in-cluster and template devices."""
    nc = with_templates(template(GPU_DRIVER, "pool-b", "tgpu-0", "tgpu-1"))
    result = ok(allocator(ONE).allocate(nc, [claim("c1", all_of("r"))]))
    assert len(chosen(result)) == 3


def test_all_mode_counts_differ_per_instance_type() -> None:
    """All-mode allocation / should include different template device counts per instance
    type."""
    nc = nodeclaim(
        templates={
            "it-large": [template(GPU_DRIVER, "pool-b", "tgpu-0", "tgpu-1", "tgpu-2")],
            "it-small": [template(GPU_DRIVER, "pool-c", "tgpu-0")],
        }
    )
    result = ok(allocator().allocate(nc, [claim("c1", all_of("r"))]))
    assert set(result.instance_types) == {"it-large", "it-small"}
    assert len(chosen(result, "it-large")) == 3
    assert len(chosen(result, "it-small")) == 1


def test_all_mode_matching_nothing_fails() -> None:
    """All-mode allocation / should fail when an All-mode request matches zero devices."""
    slices = [api_slice("s1", "nic.example.com", "nic-pool", ["nic-0"], all_nodes=True)]
    fails(allocator(slices).allocate(nodeclaim("it-1"), [claim("c1", all_of("r"))]))


def test_all_mode_with_a_taken_device_fails() -> None:
    """All-mode allocation / should fail when an already-allocated device is in the all set."""
    fails(
        allocator(TWO, [DeviceID(GPU_DRIVER, "pool-a", "gpu-0")]).allocate(
            nodeclaim("it-1"), [claim("c1", all_of("r"))]
        )
    )


TYPE = f"{GPU_DRIVER}/type"
TYPED = [
    api_slice(
        "s1",
        GPU_DRIVER,
        "pool-a",
        [
            device("gpu-0", {TYPE: "compute", NUMA: "n0"}),
            device("gpu-1", {TYPE: "compute", NUMA: "n0"}),
            device("nic-0", {TYPE: "network", NUMA: "n0"}),
            device("nic-1", {TYPE: "network", NUMA: "n1"}),
        ],
        all_nodes=True,
    )
]
TYPED_CLASSES = {
    "compute": device_class("compute", f'device.attributes["{GPU_DRIVER}"].type == "compute"'),
    "network": device_class("network", f'device.attributes["{GPU_DRIVER}"].type == "network"'),
}


def test_all_mode_and_exact_count_in_one_claim() -> None:
    """All-mode allocation / should work with All-mode and ExactCount mixed in the same claim."""
    c = claim("c1", all_of("all-compute", "compute"), exact("one-nic", "network", 1))
    result = ok(allocator(TYPED, classes=TYPED_CLASSES).allocate(nodeclaim("it-1"), [c]))
    picked = chosen(result)
    assert picked[:2] == [f"{GPU_DRIVER}/pool-a/gpu-0", f"{GPU_DRIVER}/pool-a/gpu-1"]
    assert picked[2].startswith(f"{GPU_DRIVER}/pool-a/nic-")


def test_all_mode_satisfies_match_attribute() -> None:
    """All-mode allocation / should satisfy MatchAttribute constraints in All mode."""
    slices = [
        api_slice(
            "s1",
            GPU_DRIVER,
            "pool-a",
            [device("gpu-0", {NUMA: "n0"}), device("gpu-1", {NUMA: "n0"})],
            all_nodes=True,
        )
    ]
    ok(
        allocator(slices).allocate(
            nodeclaim("it-1"), [claim("c1", all_of("r"), constraints=[match(NUMA)])]
        )
    )


def test_constraint_spans_all_mode_and_exact_count() -> None:
    """All-mode + ExactCount under shared constraint / should satisfy MatchAttribute spanning
    All-mode and ExactCount requests; should fail when mixed-mode requests cannot share
    constraint value."""
    c = claim(
        "c1", all_of("gpus", "compute"), exact("nic", "network", 1), constraints=[match(NUMA)]
    )
    result = ok(allocator(TYPED, classes=TYPED_CLASSES).allocate(nodeclaim("it-1"), [c]))
    assert chosen(result)[2] == f"{GPU_DRIVER}/pool-a/nic-0"
    taken = [DeviceID(GPU_DRIVER, "pool-a", "nic-0")]
    fails(allocator(TYPED, taken, classes=TYPED_CLASSES).allocate(nodeclaim("it-1"), [c]))


def test_all_mode_aggregates_pools() -> None:
    """Multiple pools in All-mode / should aggregate devices from multiple pools in All-mode."""
    slices = [
        api_slice("s1", GPU_DRIVER, "pool-a", ["gpu-0", "gpu-1"], all_nodes=True),
        api_slice("s2", GPU_DRIVER, "pool-b", ["gpu-0"], all_nodes=True),
    ]
    result = ok(allocator(slices).allocate(nodeclaim("it-1"), [claim("c1", all_of("r"))]))
    assert len(chosen(result)) == 3


def test_all_mode_on_an_invalid_pool_fails() -> None:
    """All-mode validation failures through Allocate() / should return error when All-mode pool
    has duplicate device names; Edge cases / should return error for All-mode request against an
    invalid pool."""
    slices = [api_slice("s1", GPU_DRIVER, "pool-a", ["gpu-0", "gpu-0"], all_nodes=True)]
    err = fails(allocator(slices).allocate(nodeclaim("it-1"), [claim("c1", all_of("r"))]))
    assert "invalid" in str(err)


def test_exact_count_ignores_an_invalid_pool() -> None:
    """Edge cases / should fail ExactCount request when invalid pool's devices are dropped."""
    slices = [api_slice("s1", GPU_DRIVER, "pool-a", ["gpu-0", "gpu-0"], all_nodes=True)]
    fails(allocator(slices).allocate(nodeclaim("it-1"), [claim("c1", exact("r"))]))


def test_all_mode_on_an_incomplete_pool_fails() -> None:
    """All-mode validation failures through Allocate() / should return error when All-mode pool
    is incomplete."""
    slices = [api_slice("s1", GPU_DRIVER, "pool-a", ["gpu-0"], all_nodes=True, count=2)]
    err = fails(allocator(slices).allocate(nodeclaim("it-1"), [claim("c1", all_of("r"))]))
    assert "incomplete" in str(err)


# --- Topology -------------------------------------------------------------------------------------


def _zonal(a_devices: list[str], b_devices: list[str]) -> list[object]:
    return [
        api_slice("s1", GPU_DRIVER, "pool-zone-a", a_devices, zone=["us-west-2a"]),
        api_slice("s2", GPU_DRIVER, "pool-zone-b", b_devices, zone=["us-west-2b"]),
    ]


def _zonal_nc(**kw: object) -> object:
    return nodeclaim("it-1", requirements=zone_reqs("us-west-2a", "us-west-2b"), **kw)  # type: ignore[arg-type]


def test_zonal_devices_narrow_the_nodeclaim() -> None:
    """Topology requirement narrowing / should accumulate topology requirements from zonal
    devices."""
    a = allocator(_zonal(["gpu-0"], ["gpu-1"]))
    result = ok(a.allocate(_zonal_nc(), [claim("c1", exact("r"))]))  # type: ignore[arg-type]
    zones = result.requirements.get(ZONE).values
    assert len(zones) == 1
    zone = next(iter(zones))
    _commit(result)
    meta = a.claim_allocation(("default", "c1"))
    assert meta is not None
    assert meta.devices["it-1"][0].device.pool == f"pool-zone-{zone[-1]}"


def test_a_zonal_device_narrows_the_pools_for_the_next() -> None:
    """Topology requirement narrowing / should narrow pools when a zonal device tightens
    requirements."""
    a = allocator(_zonal(["gpu-a0", "gpu-a1"], ["gpu-b0", "gpu-b1"]))
    result = ok(a.allocate(_zonal_nc(), [claim("c1", exact("r", count=2))]))  # type: ignore[arg-type]
    pools = {p.split("/")[1] for p in chosen(result)}
    assert len(pools) == 1
    assert len(result.requirements.get(ZONE).values) == 1


def test_backtracking_restores_requirements() -> None:
    """Topology requirement narrowing / should backtrack and restore requirements when a zonal
    device path fails."""
    a = allocator(_zonal(["gpu-a0"], ["gpu-b0", "gpu-b1"]))
    result = ok(a.allocate(_zonal_nc(), [claim("c1", exact("r", count=2))]))  # type: ignore[arg-type]
    assert result.requirements.get(ZONE).values == frozenset({"us-west-2b"})
    assert sorted(chosen(result)) == [
        f"{GPU_DRIVER}/pool-zone-b/gpu-b0",
        f"{GPU_DRIVER}/pool-zone-b/gpu-b1",
    ]


def test_incompatible_zonal_device_is_rejected() -> None:
    """Topology requirement narrowing / should reject a device whose topology is incompatible
    with accumulated requirements."""
    slices = [api_slice("s1", GPU_DRIVER, "pool-a", ["gpu-0"], zone=["eu-west-1a"])]
    fails(
        allocator(slices).allocate(
            nodeclaim("it-1", requirements=zone_reqs("us-west-2a")), [claim("c", exact("r"))]
        )
    )


def test_later_instance_types_must_agree_with_earlier_topology() -> None:
    """Cross-IT requirement accumulation / should prune later instance types when earlier IT
    pins topology via in-cluster device; should allow instance types with compatible topology
    after prior IT contributions."""
    slices = [api_slice("s1", GPU_DRIVER, "pool-zone-a", ["gpu-a0"], zone=["us-west-2a"])]
    nc = nodeclaim(
        "it-1",
        "it-2",
        "it-3",
        requirements=zone_reqs("us-west-2a", "us-west-2b"),
        templates={"it-2": [template(GPU_DRIVER, "tp", "t0")]},
    )
    # it-1 can only use the zone-a device, which pins the NodeClaim to zone a; it-2 and it-3
    # take the same (preferred) in-cluster device, compatible with that.
    result = ok(allocator(slices).allocate(nc, [claim("c1", exact("r"))]))
    assert result.instance_types == ("it-1", "it-2", "it-3")
    assert result.requirements.get(ZONE).values == frozenset({"us-west-2a"})
    # With the zone-a device needed twice, only it-2 (one template device more) can satisfy
    # two devices; it-1 and it-3 are pruned.
    result = ok(allocator(slices).allocate(nc, [claim("c2", exact("r", count=2))]))
    assert result.instance_types == ("it-2",)
    # it-1 (one template device) takes two zone-b devices and its template: zone b. it-2 has
    # no template and would need three zone-a devices: possible alone, but not on a NodeClaim
    # already pinned to zone b, so it is pruned.
    two_zones = [
        api_slice("s1", GPU_DRIVER, "pool-zone-b", ["gpu-b0", "gpu-b1"], zone=["us-west-2b"]),
        api_slice("s2", GPU_DRIVER, "pool-zone-a", ["a0", "a1", "a2"], zone=["us-west-2a"]),
    ]
    later = nodeclaim(
        "it-1",
        "it-2",
        requirements=zone_reqs("us-west-2a", "us-west-2b"),
        templates={"it-1": [template(GPU_DRIVER, "tp", "t0")]},
    )
    result = ok(allocator(two_zones).allocate(later, [claim("c3", exact("r", count=3))]))
    assert result.instance_types == ("it-1",)
    assert result.requirements.get(ZONE).values == frozenset({"us-west-2b"})
    alone = nodeclaim("it-2", requirements=zone_reqs("us-west-2a", "us-west-2b"))
    assert ok(
        allocator(two_zones).allocate(alone, [claim("c3", exact("r", count=3))])
    ).instance_types == ("it-2",)


def test_contributed_requirements_per_instance_type_and_release() -> None:
    """ContributedRequirements tracking / should track ContributedRequirements independently per
    instance type; ReleaseInstanceType requirement recomputation / should relax
    TotalRequirements when a restricting instance type is released; should empty
    TotalRequirements when all instance types are released."""
    slices = [
        api_slice("s1", GPU_DRIVER, "pool-zone-a", ["gpu-a0"], zone=["us-west-2a", "us-west-2b"])
    ]
    a = allocator(slices)
    nc = nodeclaim(
        "it-1",
        "it-2",
        requirements=zone_reqs("us-west-2a", "us-west-2b"),
        templates={"it-2": [template(GPU_DRIVER, "tp", "t0")]},
    )
    c = claim("c1", exact("r"), constraints=[])
    result = _commit(a.allocate(nc, [c]))
    assert set(result.instance_types) == {"it-1", "it-2"}
    meta = a.claim_allocation(("default", "c1"))
    assert meta is not None
    assert set(meta.contributed_requirements) == {"it-1", "it-2"}
    assert meta.total_requirements.get(ZONE).values == frozenset({"us-west-2a", "us-west-2b"})
    a.release_instance_types("test-nc", ["it-1"])
    assert set(meta.contributed_requirements) == {"it-2"}
    a.release_instance_types("test-nc", ["it-2"])
    assert len(meta.total_requirements) == 0


def test_non_topology_device_contributes_nothing() -> None:
    """ContributedRequirements tracking / should have empty TotalRequirements when IT uses
    non-topology device."""
    a = allocator(TWO)
    _commit(a.allocate(nodeclaim("it-1"), [claim("c1", exact("r"))]))
    meta = a.claim_allocation(("default", "c1"))
    assert meta is not None and len(meta.total_requirements) == 0


def test_contributed_requirements_are_per_claim() -> None:
    """ContributedRequirements tracking / should track ContributedRequirements independently per
    claim."""
    slices = [
        api_slice("s1", GPU_DRIVER, "pool-zone-a", ["gpu-a0"], zone=["us-west-2a"]),
        api_slice("s2", "nic.example.com", "nics", ["nic-0"], all_nodes=True),
    ]
    classes = {
        "gpu": device_class(),
        "nic": device_class("nic", 'device.driver == "nic.example.com"'),
    }
    a = allocator(slices, classes=classes)
    _commit(
        a.allocate(
            nodeclaim("it-1", requirements=zone_reqs("us-west-2a", "us-west-2b")),
            [claim("gpu-claim", exact("r")), claim("nic-claim", exact("r", "nic"))],
        )
    )
    g, n = (
        a.claim_allocation(("default", "gpu-claim")),
        a.claim_allocation(("default", "nic-claim")),
    )
    assert g is not None and n is not None
    assert g.total_requirements.get(ZONE).values == frozenset({"us-west-2a"})
    assert len(n.total_requirements) == 0


# --- Already-allocated claims ----------------------------------------------------------------------


def test_allocated_claim_without_node_selector_passes_through() -> None:
    """In-cluster allocated claim handling / should pass through claims with no nodeSelector;
    should return early when all claims are already allocated."""
    result = ok(
        allocator().allocate(nodeclaim("it-1"), [allocated_claim("c1"), allocated_claim("c2")])
    )
    assert result.instance_types == ("it-1",)
    assert result.allocation is None


def test_allocated_claim_node_selector_narrows() -> None:
    """In-cluster allocated claim handling / should propagate topology requirements from the
    allocation nodeSelector."""
    nc = nodeclaim("it-1", requirements=zone_reqs("us-west-2a", "us-west-2b"))
    result = ok(allocator().allocate(nc, [allocated_claim("c1", ["us-west-2a"])]))
    assert result.requirements.get(ZONE).values == frozenset({"us-west-2a"})


def test_allocated_claim_in_another_zone_fails() -> None:
    """In-cluster allocated claim handling / should fail when the allocation nodeSelector is
    incompatible with NodeClaim requirements."""
    nc = nodeclaim("it-1", requirements=zone_reqs("us-west-2a"))
    err = fails(allocator().allocate(nc, [allocated_claim("c1", ["eu-west-1a"])]))
    assert "incompatible" in str(err)


def test_allocated_claim_tightens_the_search() -> None:
    """In-cluster allocated claim handling / should tighten baseline requirements for subsequent
    unallocated claims."""
    nc = nodeclaim("it-1", requirements=zone_reqs("us-west-2a", "us-west-2b"))
    a = allocator(
        [
            api_slice("s1", GPU_DRIVER, "pool-zone-b", ["gpu-b0"], zone=["us-west-2b"]),
            api_slice("s2", GPU_DRIVER, "pool-zone-a", ["gpu-a0"], zone=["us-west-2a"]),
        ]
    )
    result = ok(
        a.allocate(
            nc, [allocated_claim("c-allocated", ["us-west-2a"]), claim("c-unalloc", exact("r"))]
        )
    )
    assert result.requirements.get(ZONE).values == frozenset({"us-west-2a"})
    assert chosen(result) == [f"{GPU_DRIVER}/pool-zone-a/gpu-a0"]


def test_mix_of_allocated_and_pending_claims() -> None:
    """In-cluster allocated claim handling / should handle a mix of allocated and unallocated
    claims."""
    result = ok(
        allocator(TWO).allocate(
            nodeclaim("it-1"), [allocated_claim("done"), claim("pending", exact("r"))]
        )
    )
    assert result.allocation is not None
    assert set(result.allocation.claims) == {("default", "pending")}


def test_allocated_claims_in_different_zones() -> None:
    """In-cluster allocated claim handling / should fail when two in-cluster allocated claims
    have incompatible zones; should succeed when two in-cluster allocated claims have
    compatible zones."""
    nc = nodeclaim("it-1", requirements=zone_reqs("us-west-2a", "us-west-2b"))
    fails(
        allocator().allocate(
            nc, [allocated_claim("c1", ["us-west-2a"]), allocated_claim("c2", ["us-west-2b"])]
        )
    )
    result = ok(
        allocator().allocate(
            nc,
            [
                allocated_claim("c1", ["us-west-2a", "us-west-2b"]),
                allocated_claim("c2", ["us-west-2a"]),
            ],
        )
    )
    assert result.requirements.get(ZONE).values == frozenset({"us-west-2a"})


def test_in_cluster_and_in_memory_claims_in_different_zones_fail() -> None:
    """In-cluster allocated claim handling / should fail when an in-cluster claim and in-memory
    claim have incompatible zones."""
    a = allocator([api_slice("s1", GPU_DRIVER, "pool-zone-b", ["gpu-b0"], zone=["us-west-2b"])])
    nc = nodeclaim("it-1", requirements=zone_reqs("us-west-2a", "us-west-2b"))
    _commit(a.allocate(nc, [claim("shared", exact("r"))]))
    other = nodeclaim("it-1", id="nc-2", requirements=zone_reqs("us-west-2a", "us-west-2b"))
    fails(a.allocate(other, [allocated_claim("c1", ["us-west-2a"]), claim("shared", exact("r"))]))


# --- Deleting pods ------------------------------------------------------------------------------------

POD = {"resource": "pods", "apiGroup": ""}


def _held(*uids: str) -> ResourceClaim:
    """A claim allocated gpu-0 in the cluster, reserved by the pods ``uids``."""
    body = allocated_claim(
        "held",
        reserved_for=[{**POD, "name": u, "uid": u} for u in uids],
        results=[{"request": "r", "driver": GPU_DRIVER, "pool": "pool-a", "device": "gpu-0"}],
    ).to_dict()
    body["spec"] = {"devices": {"requests": [exact("r")]}}
    return ResourceClaim.from_dict(body)


def test_claim_held_only_by_deleting_pods_is_allocated_again() -> None:
    """Deleting-pod claim reclassification / re-allocates a claim reserved entirely by deleting
    pods."""
    from karpenter_core.scheduling.dynamicresources import allocated_devices

    held = _held("p1", "p2")
    deleting = {"p1", "p2"}
    taken = allocated_devices([held], deleting)
    assert taken == set()
    a = allocator(
        [api_slice("s1", GPU_DRIVER, "pool-a", ["gpu-0"], all_nodes=True)], taken, deleting=deleting
    )
    result = ok(a.allocate(nodeclaim("it-1"), [held]))
    assert result.allocation is not None
    assert chosen(result) == [f"{GPU_DRIVER}/pool-a/gpu-0"]


@pytest.mark.parametrize(
    ("uids", "ref"),
    [
        (("p1", "live"), POD),
        (("live",), POD),
        (("p1",), {"resource": "jobs", "apiGroup": "batch"}),
    ],
    ids=["mix-of-deleting-and-live", "live-pod", "non-pod-consumer"],
)
def test_claim_with_a_live_consumer_stays_committed(
    uids: tuple[str, ...], ref: dict[str, str]
) -> None:
    """Deleting-pod claim reclassification / treats a claim reserved by a mix of deleting and
    live pods as committed; treats a claim reserved by a live pod as committed; treats a claim
    reserved by a non-pod consumer as committed."""
    from karpenter_core.scheduling.dynamicresources import allocated_devices

    held = allocated_claim(
        "held",
        reserved_for=[{**ref, "name": u, "uid": u} for u in uids],
        results=[{"request": "r", "driver": GPU_DRIVER, "pool": "pool-a", "device": "gpu-0"}],
    )
    deleting = {"p1"}
    taken = allocated_devices([held], deleting)
    assert taken == {DeviceID(GPU_DRIVER, "pool-a", "gpu-0")}
    result = ok(allocator(TWO, taken, deleting=deleting).allocate(nodeclaim("it-1"), [held]))
    assert result.allocation is None


# --- In-memory allocated claims -------------------------------------------------------------------------


def test_in_memory_claim_skips_the_search() -> None:
    """In-memory allocated claim handling / should skip DFS for an in-memory allocated claim on
    the same NodeClaim (in-cluster only)."""
    a = allocator(ONE)
    shared = claim("shared", exact("r"))
    _commit(a.allocate(nodeclaim("it-1"), [shared]))
    result = ok(a.allocate(nodeclaim("it-1"), [shared]))
    assert result.allocation is None


def test_in_memory_in_cluster_claim_serves_another_nodeclaim() -> None:
    """In-memory allocated claim handling / should allow an in-memory in-cluster-only claim to
    be used from a different NodeClaim."""
    a = allocator(ONE)
    shared = claim("shared", exact("r"))
    _commit(a.allocate(nodeclaim("it-1", id="nc-a"), [shared]))
    ok(a.allocate(nodeclaim("it-1", id="nc-b"), [shared]))


def test_template_allocated_claim_is_bound_to_its_nodeclaim() -> None:
    """In-memory allocated claim handling / should fail when a template-allocated claim is
    referenced from a different NodeClaim; should succeed when a template-allocated claim is
    referenced from the same NodeClaim."""
    a = allocator()
    shared = claim("shared", exact("r"))
    nc_a = with_templates(template(GPU_DRIVER, "tp", "t0"), id="nc-a")
    _commit(a.allocate(nc_a, [shared]))
    err = fails(a.allocate(with_templates(template(GPU_DRIVER, "tp", "t0"), id="nc-b"), [shared]))
    assert "different in-flight NodeClaim" in str(err)
    assert ok(a.allocate(nc_a, [shared])).allocation is None


def test_used_template_devices_is_tracked_per_claim() -> None:
    """In-memory allocated claim handling / should track UsedTemplateDevices per-claim, not
    globally."""
    a = allocator(ONE)
    nc = with_templates(template(GPU_DRIVER, "tp", "t0"))
    _commit(a.allocate(nc, [claim("in-cluster", exact("r")), claim("template", exact("r"))]))
    c1, c2 = (
        a.claim_allocation(("default", "in-cluster")),
        a.claim_allocation(("default", "template")),
    )
    assert c1 is not None and c2 is not None
    assert not c1.used_template_devices and c2.used_template_devices


def test_in_memory_requirements_propagate_and_conflict() -> None:
    """In-memory allocated claim handling / should propagate in-memory topology requirements to
    the allocation result; should fail when in-memory topology requirements are incompatible
    with NodeClaim; should merge in-memory requirements into the baseline for subsequent
    unallocated claims."""
    a = allocator(_zonal(["gpu-a0", "gpu-a1"], ["gpu-b0"]))  # type: ignore[arg-type]
    shared = claim("shared", exact("r"))
    _commit(a.allocate(_zonal_nc(id="nc-a"), [shared]))  # type: ignore[arg-type]
    meta = a.claim_allocation(("default", "shared"))
    assert meta is not None
    zone = next(iter(meta.total_requirements.get(ZONE).values))
    # Same zone elsewhere: the result carries it, and a new claim follows it.
    other = ok(a.allocate(_zonal_nc(id="nc-b"), [shared, claim("next", exact("r"))]))  # type: ignore[arg-type]
    assert other.requirements.get(ZONE).values == frozenset({zone})
    assert all(f"zone-{zone[-1]}" in p for p in chosen(other))
    # A NodeClaim pinned to the other zone cannot use the claim.
    elsewhere = "us-west-2b" if zone == "us-west-2a" else "us-west-2a"
    fails(a.allocate(nodeclaim("it-1", id="nc-c", requirements=zone_reqs(elsewhere)), [shared]))


# --- Validation errors through Allocate ----------------------------------------------------------------


def test_missing_device_class() -> None:
    """Validation errors through Allocate() / should return error when DeviceClass does not
    exist."""
    err = fails(allocator(TWO).allocate(nodeclaim("it-1"), [claim("c", exact("r", "nope"))]))
    assert "not found" in str(err)


def test_non_cel_selector() -> None:
    """Validation errors through Allocate() / should return error for unsupported selector
    type."""
    c = claim("c", {"name": "r", "exactly": {"deviceClassName": "gpu", "selectors": [{}]}})
    assert "unsupported selector type" in str(
        fails(allocator(TWO).allocate(nodeclaim("it-1"), [c]))
    )


def test_request_without_exactly_or_first_available() -> None:
    """Validation errors through Allocate() / should return error when request has neither
    Exactly nor FirstAvailable."""
    c = claim("c", {"name": "r"})
    assert "only Exactly and FirstAvailable" in str(
        fails(allocator(TWO).allocate(nodeclaim("it-1"), [c]))
    )


def test_unsupported_constraint() -> None:
    """Validation errors through Allocate() / should return error for unsupported constraint
    type."""
    c = claim("c", exact("r"), constraints=[{"requests": ["r"]}])
    assert "unsupported constraint type" in str(
        fails(allocator(TWO).allocate(nodeclaim("it-1"), [c]))
    )


# --- Bindings ------------------------------------------------------------------------------------------

PCIE = f"{GPU_DRIVER}/pcieRoot"


def _bound(*pairs: tuple[str, str]) -> object:
    return build_attribute_bindings(
        {
            "test-np": {
                "it-1": [
                    AttributeBinding(
                        PCIE, [DeviceID(GPU_DRIVER, "tp", a), DeviceID(GPU_DRIVER, "tp", b)]
                    )
                    for a, b in pairs
                ]
            }
        }
    )


def test_binding_fallback_end_to_end() -> None:
    """Constraint + template integration / should use attribute binding fallback end-to-end
    through Allocate."""
    nc = with_templates(template(GPU_DRIVER, "tp", "t0", "t1", "t2"))
    c = claim("c", exact("r", count=2), constraints=[match(PCIE)])
    fails(allocator().allocate(nc, [c]))
    result = ok(allocator(bindings=_bound(("t1", "t2"))).allocate(nc, [c]))  # type: ignore[arg-type]
    assert chosen(result) == ["virtual/gpu.example.com/tp/t1", "virtual/gpu.example.com/tp/t2"]


def test_constraint_paths_do_not_mix() -> None:
    """Constraint path exclusion during DFS / should fail when no consistent constraint
    evaluation path exists across devices; should succeed when all devices use binding path
    consistently; should succeed when all devices use concrete path consistently."""
    mixed = with_templates(template(GPU_DRIVER, "tp", device("t0", {PCIE: "root-0"}), "t1"))
    c = claim("c", exact("r", count=2), constraints=[match(PCIE)])
    fails(allocator(bindings=_bound(("t0", "t1"))).allocate(mixed, [c]))  # type: ignore[arg-type]
    concrete = with_templates(
        template(GPU_DRIVER, "tp", device("t0", {PCIE: "root-0"}), device("t1", {PCIE: "root-0"}))
    )
    ok(allocator().allocate(concrete, [c]))
    ok(
        allocator(bindings=_bound(("t0", "t1"))).allocate(
            with_templates(template(GPU_DRIVER, "tp", "t0", "t1")), [c]
        )
    )  # type: ignore[arg-type]


def test_backtracks_from_cluster_to_templates_for_a_constraint() -> None:
    """Constraint + template integration / should backtrack from in-cluster to template devices
    to satisfy constraints."""
    slices = [
        api_slice(
            "s1",
            GPU_DRIVER,
            "pool-a",
            [device("gpu-0", {NUMA: "n0"}), device("gpu-1", {NUMA: "n1"})],
            all_nodes=True,
        )
    ]
    nc = with_templates(
        template(GPU_DRIVER, "pool-b", device("t0", {NUMA: "n2"}), device("t1", {NUMA: "n2"}))
    )
    c = claim("c", exact("r", count=2), constraints=[match(NUMA)])
    result = ok(allocator(slices).allocate(nc, [c]))
    assert all(p.startswith("virtual/") for p in chosen(result))


# --- FirstAvailable ------------------------------------------------------------------------------------


def _requests(result: AllocationResult, key: str = "c", it: str = "it-1") -> list[str]:
    assert result.allocation is not None
    return [str(d.request) for d in result.allocation.claims[("default", key)].devices[it]]


def test_first_available_uses_the_first_satisfiable_alternative() -> None:
    """FirstAvailable DFS / should allocate using the first satisfiable sub-request; selected
    (sub-)request tracking / preferred sub-request selected (qualified)."""
    c = claim("c", first_available("r", sub("big", count=2), sub("small", count=1)))
    result = ok(allocator(FOUR).allocate(nodeclaim("it-1"), [c]))
    assert _requests(result) == ["r/big", "r/big"]


def test_first_available_falls_back() -> None:
    """FirstAvailable DFS / should fall back to lower-priority sub-request when higher fails;
    selected (sub-)request tracking / three sub-requests, falls through two failures to the
    last."""
    c = claim(
        "c", first_available("r", sub("eight", count=8), sub("six", count=6), sub("one", count=1))
    )
    assert _requests(ok(allocator(FOUR).allocate(nodeclaim("it-1"), [c]))) == ["r/one"]


def test_first_available_with_nothing_satisfiable_fails() -> None:
    """FirstAvailable DFS / should fail when no sub-request is satisfiable; should prune ITs
    where no sub-request is satisfiable."""
    c = claim("c", first_available("r", sub("eight", count=8), sub("six", count=6)))
    fails(allocator(FOUR).allocate(nodeclaim("it-1"), [c]))


def test_first_available_differs_per_instance_type() -> None:
    """FirstAvailable DFS / should select different sub-requests for different instance types;
    selects a different sub-request per instance type and records the matching name."""
    nc = nodeclaim(
        templates={
            "it-big": [template(GPU_DRIVER, "tp", "t0", "t1")],
            "it-small": [template(GPU_DRIVER, "tp", "t0")],
        }
    )
    c = claim("c", first_available("r", sub("two", count=2), sub("one", count=1)))
    result = ok(allocator().allocate(nc, [c]))
    assert _requests(result, it="it-big") == ["r/two", "r/two"]
    assert _requests(result, it="it-small") == ["r/one"]


def test_first_available_alternatives_by_selector_and_class() -> None:
    """FirstAvailable DFS / should handle FirstAvailable with selectors distinguishing
    sub-requests; should handle FirstAvailable with different DeviceClasses per sub-request;
    selected (sub-)request tracking / selector picks the fallback sub-request."""
    c = claim(
        "c",
        first_available(
            "r",
            sub("h100", "gpu", 1, f'device.attributes["{GPU_DRIVER}"].model == "B200"'),
            sub("a100", "gpu", 1, f'device.attributes["{GPU_DRIVER}"].model == "A100"'),
        ),
    )
    result = ok(allocator(MODELS).allocate(nodeclaim("it-1"), [c]))
    assert _requests(result) == ["r/a100"]
    assert chosen(result) == [f"{GPU_DRIVER}/pool-a/gpu-1"]
    by_class = claim("c", first_available("r", sub("x", "missing-class"), sub("y", "h100")))
    fails(allocator(MODELS, classes=H100).allocate(nodeclaim("it-1"), [by_class]))
    by_class = claim("c", first_available("r", sub("x", "h100", 3), sub("y", "gpu", 3)))
    assert (
        _requests(ok(allocator(MODELS, classes=H100).allocate(nodeclaim("it-1"), [by_class])))
        == ["r/y"] * 3
    )


def test_first_available_backtracks_across_claims() -> None:
    """FirstAvailable DFS / should handle FirstAvailable interacting with multiple claims;
    should backtrack across claims when sub-request consumes too much capacity; selected
    (sub-)request tracking / records the fallback name after cross-claim backtracking unwinds
    the preferred sub-request."""
    claims = [
        claim("c", first_available("r", sub("three", count=3), sub("two", count=2))),
        claim("d", exact("r", count=2)),
    ]
    result = ok(allocator(FOUR).allocate(nodeclaim("it-1"), claims))
    assert _requests(result) == ["r/two", "r/two"]


def test_first_available_mixed_with_exactly_and_twice_in_a_claim() -> None:
    """FirstAvailable DFS / should handle mixed Exactly and FirstAvailable requests in the same
    claim; should handle multiple FirstAvailable requests in the same claim; should still
    exercise the fallback loop for a SECOND FirstAvailable request in a claim."""
    c = claim(
        "c",
        exact("plain", count=1),
        first_available("a", sub("two", count=2), sub("one", count=1)),
        first_available("b", sub("two", count=2), sub("one", count=1)),
    )
    result = ok(allocator(FOUR).allocate(nodeclaim("it-1"), [c]))
    assert _requests(result) == ["plain", "a/two", "a/two", "b/one"]


def test_first_available_constraints_by_parent_or_sub_name() -> None:
    """FirstAvailable DFS / should handle constraints scoped to parent name applying to all
    sub-requests; should handle constraints scoped to specific sub-request; should reset a
    constraint pin from a failed sub-request before the winning sub-request needs a different
    value."""
    parent = claim(
        "c",
        first_available("r", sub("three", count=3), sub("two", count=2)),
        constraints=[match(NUMA, "r")],
    )
    assert (
        _requests(ok(allocator(numa_slice()).allocate(nodeclaim("it-1"), [parent])))
        == ["r/two"] * 2
    )
    # Scoped to the preferred alternative: three devices on one NUMA node cannot be, so the
    # unconstrained fallback wins; scoped to the fallback, the preferred one is free to win.
    subs = first_available("r", sub("three", count=3), sub("two", count=2))
    scoped = claim("c", subs, constraints=[match(NUMA, "r/three")])
    assert (
        _requests(ok(allocator(numa_slice()).allocate(nodeclaim("it-1"), [scoped])))
        == ["r/two"] * 2
    )
    scoped = claim("c", subs, constraints=[match(NUMA, "r/two")])
    assert (
        _requests(ok(allocator(numa_slice()).allocate(nodeclaim("it-1"), [scoped])))
        == ["r/three"] * 3
    )


def test_first_available_restores_topology_on_backtrack() -> None:
    """FirstAvailable DFS / should restore tightened topology requirements when a sub-request
    backtracks."""
    c = claim("c", first_available("r", sub("two", count=2), sub("one", count=1)))
    result = ok(allocator(_zonal(["gpu-a0"], ["gpu-b0"])).allocate(_zonal_nc(), [c]))  # type: ignore[arg-type]
    assert _requests(result) == ["r/one"]
    assert len(result.requirements.get(ZONE).values) == 1


def test_first_available_with_templates_and_all_mode() -> None:
    """FirstAvailable DFS / should handle FirstAvailable with template devices; should handle
    FirstAvailable with All-mode sub-request; should fall back from All-mode to ExactCount when
    All-mode matches zero devices."""
    nc = with_templates(template(GPU_DRIVER, "tp", "t0", "t1"))
    c = claim("c", first_available("r", sub("all", mode="All"), sub("one", count=1)))
    assert _requests(ok(allocator().allocate(nc, [c]))) == ["r/all", "r/all"]
    classes = {"gpu": device_class(), "none": device_class("none", "false")}
    c = claim("c", first_available("r", sub("all", "none", mode="All"), sub("one", count=1)))
    assert _requests(ok(allocator(classes=classes).allocate(nc, [c]))) == ["r/one"]


def test_first_available_commit_records_metadata() -> None:
    """FirstAvailable DFS / should correctly commit FirstAvailable allocation metadata; should
    not leak state between sub-request attempts."""
    a = allocator(FOUR)
    c = claim("c", first_available("r", sub("five", count=5), sub("two", count=2)))
    _commit(a.allocate(nodeclaim("it-1"), [c]))
    meta = a.claim_allocation(("default", "c"))
    assert meta is not None
    assert [str(d.request) for d in meta.devices["it-1"]] == ["r/two", "r/two"]
    ok(a.allocate(nodeclaim("it-1"), [claim("d", exact("r", count=2))]))
    fails(a.allocate(nodeclaim("it-1"), [claim("e", exact("r", count=3))]))


def test_first_available_device_limit() -> None:
    """FirstAvailable DFS / should allow FirstAvailable requests that fit only by selecting
    smaller sub-requests; should fall back to a smaller sub-request when the larger one exceeds
    the device limit; should reject a claim whose smallest sub-request selection still exceeds
    the device limit."""
    many = [api_slice("s1", GPU_DRIVER, "pool-a", [f"gpu-{i}" for i in range(40)], all_nodes=True)]
    c = claim(
        "c",
        exact("base", count=20),
        first_available("r", sub("big", count=20), sub("small", count=10)),
    )
    result = ok(allocator(many).allocate(nodeclaim("it-1"), [c]))
    assert _requests(result).count("r/small") == 10
    too_many = claim(
        "c",
        exact("base", count=20),
        first_available("r", sub("big", count=20), sub("small", count=13)),
    )
    assert "exceeding maximum" in str(
        fails(allocator(many).allocate(nodeclaim("it-1"), [too_many]))
    )


# --- What Karpenter does not simulate --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dev", "feature"),
    [
        (
            Device.from_dict(
                {
                    "name": "gpu-0",
                    "consumesCounters": [
                        {"counterSet": "cs", "counters": {"mem": {"value": "1Gi"}}}
                    ],
                }
            ),
            "partitionable devices",
        ),
        (device("gpu-0", allow_multiple_allocations=True), "consumable capacity"),
        (
            Device.from_dict({"name": "gpu-0", "taints": [{"key": "k", "effect": "NoSchedule"}]}),
            "device taints",
        ),
    ],
    ids=["shared-counters", "multiple-allocations", "taints"],
)
def test_devices_with_unsimulated_features_are_errors(dev: object, feature: str) -> None:
    """SharedCounters / Consumable capacity (upstream simulates them; Karpenter's design scopes
    them out): a device needing them is an error naming the claim and request."""
    slices = [api_slice("s1", GPU_DRIVER, "pool-a", [dev], all_nodes=True)]  # type: ignore[list-item]
    err = fails(allocator(slices).allocate(nodeclaim("it-1"), [claim("c1", exact("req-1"))]))
    assert str(err).startswith(
        'claim "c1" request "req-1" is not supported by Karpenter\'s DRA simulation'
    )
    assert feature in str(err) and err.unsupported


@pytest.mark.parametrize(
    ("extra", "feature"),
    [
        ({"adminAccess": True}, "admin access"),
        ({"capacity": {"requests": {"mem": "1Gi"}}}, "consumable capacity"),
    ],
)
def test_requests_with_unsimulated_features_are_errors(
    extra: dict[str, object], feature: str
) -> None:
    """Consumable capacity (capacity requests) and admin access: errors naming claim and request."""
    err = fails(allocator(TWO).allocate(nodeclaim("it-1"), [claim("c1", exact("req-1", **extra))]))
    assert 'claim "c1" request "req-1" is not supported' in str(err) and feature in str(err)


def test_the_search_has_a_budget() -> None:
    """Timeout (design "Timeout"): a search over its step budget ends with an error, not a hang."""
    many = [
        api_slice(
            "s1",
            GPU_DRIVER,
            "pool-a",
            [device(f"gpu-{i}", {NUMA: f"n{i}"}) for i in range(30)],
            all_nodes=True,
        )
    ]
    c = claim("c", exact("r", count=3), constraints=[match(NUMA)])
    err = fails(allocator(many, max_steps=500).allocate(nodeclaim("it-1"), [c]))
    assert "budget" in str(err)


def test_a_selector_runtime_error_is_reported() -> None:
    """CEL evaluation errors (Kubernetes aborts on them): reported with the expression when
    nothing matches."""
    c = claim("c", exact("r", "gpu", 1, f'device.attributes["{GPU_DRIVER}"].missing == 1'))
    err = fails(allocator(TWO).allocate(nodeclaim("it-1"), [c]))
    assert "evaluation failed" in str(err) and "missing" in str(err)


def test_recorded_request_names() -> None:
    """FirstAvailable DFS — selected (sub-)request tracking / plain Exactly request records the
    unqualified name; three sub-requests, middle wins and later is not tried; preferred
    sub-request selected from template devices; records the sub-request name on every device of
    an All-mode sub-request."""
    assert _requests(ok(allocator(FOUR).allocate(nodeclaim("it-1"), [claim("c", exact("r"))]))) == [
        "r"
    ]
    three = claim("c", first_available("r", sub("six", count=6), sub("two", count=2), sub("one")))
    assert _requests(ok(allocator(FOUR).allocate(nodeclaim("it-1"), [three]))) == ["r/two"] * 2
    nc = with_templates(template(GPU_DRIVER, "tp", "t0", "t1"))
    pref = claim("c", first_available("r", sub("two", count=2), sub("one")))
    assert _requests(ok(allocator().allocate(nc, [pref]))) == ["r/two"] * 2
    every = claim("c", first_available("r", sub("all", mode="All"), sub("one")))
    assert _requests(ok(allocator(FOUR).allocate(nodeclaim("it-1"), [every]))) == ["r/all"] * 4


def test_in_memory_claims_in_different_zones_fail() -> None:
    """In-memory allocated claim handling / should fail when two in-memory allocated claims have
    incompatible zones."""
    a = allocator(
        [
            api_slice("s1", GPU_DRIVER, "pool-zone-a", ["gpu-a0"], zone=["us-west-2a"]),
            api_slice("s2", GPU_DRIVER, "pool-zone-b", ["gpu-b0"], zone=["us-west-2b"]),
        ]
    )
    zones = zone_reqs("us-west-2a", "us-west-2b")
    _commit(
        a.allocate(nodeclaim("it-1", id="nc-a", requirements=zones), [claim("in-a", exact("r"))])
    )
    _commit(
        a.allocate(
            nodeclaim("it-1", id="nc-b", requirements=zone_reqs("us-west-2b")),
            [claim("in-b", exact("r"))],
        )
    )
    err = fails(
        a.allocate(
            nodeclaim("it-1", id="nc-c", requirements=zones),
            [claim("in-a", exact("r")), claim("in-b", exact("r"))],
        )
    )
    assert "incompatible" in str(err)
