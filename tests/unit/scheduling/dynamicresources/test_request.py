"""Claim validation, ported from upstream's ``pkg/scheduling/dynamicresources/request_test.go``.

Each docstring names the upstream ``Describe / It`` it covers.
"""

from __future__ import annotations

from dra_builders import (
    CLASSES,
    GPU_DRIVER,
    all_of,
    api_slice,
    claim,
    device,
    device_class,
    exact,
    first_available,
    match,
    sub,
    template,
)

from karpenter_core.scheduling.dynamicresources import (
    AllocationError,
    ClaimData,
    DeviceWithID,
    gather_pools,
    validate_claim_request,
)
from karpenter_core.scheduling.dynamicresources.cel import compile_selector
from karpenter_core.scheduling.dynamicresources.devices import DeviceID
from karpenter_core.scheduling.dynamicresources.request import device_matches_selectors
from karpenter_core.scheduling.requirements import Requirements

MODEL = f"{GPU_DRIVER}/model"


def pools(*slices: object) -> list[object]:
    return gather_pools(list(slices), Requirements())  # type: ignore[arg-type]


def templates(**by_it: object) -> dict[str, list[DeviceWithID]]:
    out: dict[str, list[DeviceWithID]] = {}
    for it, tmpl in by_it.items():
        t = tmpl if isinstance(tmpl, list) else [tmpl]
        out[it] = [
            DeviceWithID(d, DeviceID(s.driver, s.pool, d.name, True)) for s in t for d in s.devices
        ]
    return out


def valid(c: object, *, p: object = (), t: object = None, classes: object = None) -> ClaimData:
    out = validate_claim_request(c, classes or CLASSES, p, t or {})  # type: ignore[arg-type]
    assert isinstance(out, ClaimData), f"expected valid, got {out}"
    return out


def invalid(c: object, *, p: object = (), t: object = None, classes: object = None) -> str:
    out = validate_claim_request(c, classes or CLASSES, p, t or {})  # type: ignore[arg-type]
    assert isinstance(out, AllocationError), "expected an error"
    return str(out)


GPUS = api_slice("s1", GPU_DRIVER, "pool-a", ["gpu-0", "gpu-1"], all_nodes=True)


def test_simple_exact_count_request() -> None:
    """ValidateClaimRequest / should validate a simple ExactCount request."""
    cd = valid(claim("c1", exact("req-1", count=2)))
    assert cd.key == ("default", "c1")
    (rd,) = cd.requests
    assert str(rd.name) == "req-1" and rd.count == 2 and not rd.is_all
    assert rd.device_class is not None and rd.device_class.name == "gpu"
    assert [s.expression for s in rd.selectors] == [f'device.driver == "{GPU_DRIVER}"']


def test_count_defaults_to_one() -> None:
    """API defaulting: an ExactCount request without ``count`` wants one device."""
    (rd,) = valid(claim("c1", {"name": "r", "exactly": {"deviceClassName": "gpu"}})).requests
    assert rd.count == 1


def test_capacity_requests_are_not_simulated() -> None:
    """ValidateClaimRequest / should populate CapacityRequests when Capacity is set (consumable
    capacity is out of Karpenter's scope here: an error naming claim and request)."""
    err = invalid(claim("c1", exact("r", capacity={"requests": {"memory": "10Gi"}})))
    assert 'claim "c1" request "r"' in err and "consumable capacity" in err


def test_several_requests() -> None:
    """ValidateClaimRequest / should validate multiple requests in a single claim."""
    cd = valid(claim("c1", exact("a", count=1), exact("b", count=3)))
    assert [(str(r.name), r.count) for r in cd.requests] == [("a", 1), ("b", 3)]


def test_empty_claim() -> None:
    """ValidateClaimRequest / should validate an empty claim with no requests."""
    cd = valid(claim("c1"))
    assert cd.requests == [] and cd.constraints == []


def test_missing_device_class() -> None:
    """ValidateClaimRequest / should fail when DeviceClass is not found."""
    assert 'DeviceClass "missing" not found' in invalid(claim("c1", exact("r", "missing")))


def test_request_without_a_kind() -> None:
    """ValidateClaimRequest / should fail when a request has neither Exactly nor
    FirstAvailable; should fail when a request has an empty FirstAvailable list."""
    assert "only Exactly and FirstAvailable" in invalid(claim("c1", {"name": "r"}))
    assert "only Exactly and FirstAvailable" in invalid(
        claim("c1", {"name": "r", "firstAvailable": []})
    )


def test_all_mode_over_invalid_or_incomplete_pools() -> None:
    """ValidateClaimRequest / should fail when an All mode request encounters an invalid pool;
    should fail when an All mode request encounters an incomplete pool."""
    dup = api_slice("s1", GPU_DRIVER, "pool-a", ["gpu-0", "gpu-0"], all_nodes=True)
    assert "invalid" in invalid(claim("c1", all_of("r")), p=pools(dup))
    partial = api_slice("s1", GPU_DRIVER, "pool-a", ["gpu-0"], all_nodes=True, count=2)
    assert "incomplete" in invalid(claim("c1", all_of("r")), p=pools(partial))


def test_class_then_request_selectors() -> None:
    """ValidateClaimRequest / should combine selectors from class and request."""
    (rd,) = valid(claim("c1", exact("r", "gpu", 1, 'device.attributes["x"].y == 1'))).requests
    assert [s.expression for s in rd.selectors] == [
        f'device.driver == "{GPU_DRIVER}"',
        'device.attributes["x"].y == 1',
    ]


def test_non_cel_selectors() -> None:
    """ValidateClaimRequest / should fail when a request has a non-CEL selector (and when the
    class has one)."""
    c = claim("c1", {"name": "r", "exactly": {"deviceClassName": "gpu", "selectors": [{}]}})
    assert "unsupported selector type (only CEL is supported)" in invalid(c)
    odd = device_class("odd").to_dict()
    odd["spec"]["selectors"].append({})
    from karpenter_core.apis.resource import DeviceClass

    err = invalid(claim("c1", exact("r", "odd")), classes={"odd": DeviceClass.from_dict(odd)})
    assert 'DeviceClass "odd" has unsupported selector type' in err


def test_match_attribute_constraints() -> None:
    """ValidateClaimRequest / should build MatchAttribute constraints from the claim; should
    build MatchAttribute constraints scoped to specific requests; should build multiple
    MatchAttribute constraints; should pass bindingFallback to MatchAttribute constraints (set
    per instance type by the search, so none at validation)."""
    cd = valid(
        claim(
            "c1",
            exact("a"),
            exact("b"),
            constraints=[match("x.com/numa"), match("x.com/pcie", "a", "b")],
        )
    )
    assert [(c.attribute, c.requests) for c in cd.constraints] == [
        ("x.com/numa", frozenset()),
        ("x.com/pcie", frozenset({"a", "b"})),
    ]
    assert all(c.binding is None for c in cd.constraints)


def test_distinct_attribute_is_not_simulated() -> None:
    """ValidateClaimRequest / should fail on DistinctAttribute constraints (not yet supported)."""
    err = invalid(claim("c1", exact("r"), constraints=[{"distinctAttribute": "x.com/numa"}]))
    assert "is not supported by Karpenter's DRA simulation: distinctAttribute" in err


def test_unsupported_constraint_kind() -> None:
    """ValidateClaimRequest / should fail on unsupported constraint types."""
    assert "unsupported constraint type" in invalid(claim("c1", exact("r"), constraints=[{}]))


def test_device_limit() -> None:
    """ValidateClaimRequest / should succeed when total devices across multiple requests equal
    AllocationResultsMaxSize; should fail when total devices across multiple requests exceed
    AllocationResultsMaxSize."""
    valid(claim("c1", exact("a", count=16), exact("b", count=16)))
    err = invalid(claim("c1", exact("a", count=16), exact("b", count=17)))
    assert "requests 33 total devices, exceeding maximum of 32" in err


def test_cel_that_does_not_compile() -> None:
    """ValidateClaimRequest / should fail when a CEL expression in a request does not compile."""
    assert "failed to compile" in invalid(claim("c1", exact("r", "gpu", 1, "device.driver ==")))


# --- All mode -------------------------------------------------------------------------------------


def test_all_mode_over_valid_pools() -> None:
    """All mode / should validate an All mode request with valid pools."""
    (rd,) = valid(claim("c1", all_of("r")), p=pools(GPUS)).requests
    assert rd.is_all and rd.count == 0
    assert [d.device.name for d in rd.all_devices] == ["gpu-0", "gpu-1"]


def test_all_mode_template_devices() -> None:
    """All mode / should populate AllTemplateDevicesByIT for All mode with template devices."""
    t = templates(
        **{"it-1": template(GPU_DRIVER, "tp", "t0", "t1"), "it-2": template(GPU_DRIVER, "tp", "t0")}
    )
    (rd,) = valid(claim("c1", all_of("r")), t=t).requests
    assert {it: len(ds) for it, ds in rd.all_template_devices.items()} == {"it-1": 2, "it-2": 1}


def test_all_mode_filters_by_selectors() -> None:
    """All mode / should filter All mode devices by selectors."""
    s = api_slice(
        "s1",
        GPU_DRIVER,
        "pool-a",
        [device("gpu-0", {MODEL: "H100"}), device("gpu-1", {MODEL: "A100"})],
        all_nodes=True,
    )
    c = claim("c1", all_of("r", "gpu", f'device.attributes["{GPU_DRIVER}"].model == "H100"'))
    (rd,) = valid(c, p=pools(s)).requests
    assert [d.device.name for d in rd.all_devices] == ["gpu-0"]


def test_all_mode_instance_types_without_matches() -> None:
    """All mode / should exclude instance types with no matching template devices from
    AllTemplateDevicesByIT; should keep instance types with no matching template devices when
    in-cluster devices exist; should keep all instance types with empty device lists when
    in-cluster devices match but no template devices match."""
    t = templates(
        **{
            "it-gpu": template(GPU_DRIVER, "tp", "t0"),
            "it-nic": template("nic.example.com", "np", "n0"),
        }
    )
    (rd,) = valid(claim("c1", all_of("r")), t=t).requests
    assert set(rd.all_template_devices) == {"it-gpu"}
    (rd,) = valid(claim("c1", all_of("r")), p=pools(GPUS), t=t).requests
    assert {it: len(ds) for it, ds in rd.all_template_devices.items()} == {"it-gpu": 1, "it-nic": 0}


def test_all_mode_aggregates_pools_and_fails_on_any_invalid_one() -> None:
    """All mode / should aggregate devices across multiple pools in All mode; should fail when
    any pool is invalid in All mode even if others are valid."""
    other = api_slice("s2", GPU_DRIVER, "pool-b", ["gpu-0"], all_nodes=True)
    (rd,) = valid(claim("c1", all_of("r")), p=pools(GPUS, other)).requests
    assert len(rd.all_devices) == 3
    dup = api_slice("s3", GPU_DRIVER, "pool-c", ["x", "x"], all_nodes=True)
    assert "invalid" in invalid(claim("c1", all_of("r")), p=pools(GPUS, dup))


def test_all_mode_with_no_matches_or_no_pools() -> None:
    """All mode / should return empty AllDevices when no pool devices match selectors in All
    mode; should validate All mode with empty pools."""
    nics = api_slice("s1", "nic.example.com", "np", ["n0"], all_nodes=True)
    (rd,) = valid(claim("c1", all_of("r")), p=pools(nics)).requests
    assert rd.all_devices == []
    (rd,) = valid(claim("c1", all_of("r"))).requests
    assert rd.all_devices == [] and rd.all_template_devices == {}


def test_all_mode_device_limit() -> None:
    """All mode / should fail when All mode in-cluster devices exceed AllocationResultsMaxSize;
    should fail when All mode in-cluster devices plus ExactCount exceed AllocationResultsMaxSize."""
    big = api_slice("s1", GPU_DRIVER, "pool-a", [f"g{i}" for i in range(33)], all_nodes=True)
    assert "exceeding maximum" in invalid(claim("c1", all_of("r")), p=pools(big))
    thirty = api_slice("s1", GPU_DRIVER, "pool-a", [f"g{i}" for i in range(30)], all_nodes=True)
    assert "exceeding maximum" in invalid(
        claim("c1", all_of("r"), exact("e", count=3)), p=pools(thirty)
    )


def test_all_mode_prunes_instance_types_over_the_limit() -> None:
    """All mode / should prune instance types whose template devices would exceed
    AllocationResultsMaxSize; should account for ExactCount devices in base total when pruning
    template devices; should fail when all instance types are pruned; should not fail when
    template devices exist but no All mode requests reference them."""
    t = templates(
        **{
            "it-big": template(GPU_DRIVER, "tp", *(f"t{i}" for i in range(30))),
            "it-small": template(GPU_DRIVER, "tp", "t0"),
        }
    )
    (rd, _) = valid(claim("c1", all_of("r"), exact("e", "gpu", 3)), t=t).requests
    assert set(rd.all_template_devices) == {"it-small"}
    only_big = templates(**{"it-big": template(GPU_DRIVER, "tp", *(f"t{i}" for i in range(30)))})
    assert "all instance types pruned" in invalid(
        claim("c1", all_of("r"), exact("e", "gpu", 3)), t=only_big
    )
    valid(claim("c1", exact("e", "gpu", 3)), t=only_big)


# --- FirstAvailable ----------------------------------------------------------------------------------


def test_first_available_request() -> None:
    """FirstAvailable / should validate a FirstAvailable request with class and sub-request
    selector merging; should validate multiple sub-requests preserving priority order; should
    set parent RequestData with name and SubRequests only (no class/selectors)."""
    c = claim("c1", first_available("r", sub("big", "gpu", 2, 'device.driver != ""'), sub("small")))
    (parent,) = valid(c).requests
    assert str(parent.name) == "r" and parent.device_class is None and parent.selectors == ()
    assert [str(s.name) for s in parent.sub_requests] == ["r/big", "r/small"]
    assert [len(s.selectors) for s in parent.sub_requests] == [2, 1]
    assert [s.count for s in parent.sub_requests] == [2, 1]


def test_first_available_sub_request_errors() -> None:
    """FirstAvailable / should fail when a sub-request references a nonexistent DeviceClass;
    should fail when a sub-request has an invalid CEL selector; should fail when a sub-request
    has a non-CEL selector; should populate CapacityRequests on sub-requests (not simulated)."""
    assert "not found" in invalid(claim("c1", first_available("r", sub("a", "missing"))))
    assert "failed to compile" in invalid(
        claim("c1", first_available("r", sub("a", "gpu", 1, "1 +")))
    )
    bad = sub("a")
    bad["selectors"] = [{}]
    assert "unsupported selector type" in invalid(claim("c1", first_available("r", bad)))
    cap = sub("a")
    cap["capacity"] = {"requests": {"mem": "1Gi"}}
    assert "consumable capacity" in invalid(claim("c1", first_available("r", cap)))


def test_first_available_device_limit_uses_the_smallest_alternative() -> None:
    """FirstAvailable / should use the MIN device count across sub-requests for the upfront
    limit check; should pass upfront when only the smaller sub-request fits within the limit;
    should include All-mode sub-request device counts in the MIN floor."""
    valid(
        claim(
            "c1",
            exact("e", count=20),
            first_available("r", sub("big", count=20), sub("small", count=12)),
        )
    )
    err = invalid(
        claim(
            "c1",
            exact("e", count=20),
            first_available("r", sub("big", count=20), sub("small", count=13)),
        )
    )
    assert "exceeding maximum" in err
    many = api_slice("s1", GPU_DRIVER, "pool-a", [f"g{i}" for i in range(20)], all_nodes=True)
    c = claim(
        "c1",
        exact("e", count=13),
        first_available("r", sub("all", mode="All"), sub("other", count=30)),
    )
    assert "exceeding maximum" in invalid(c, p=pools(many))


def test_first_available_all_mode_sub_requests() -> None:
    """FirstAvailable / should populate AllDevices for an All-mode sub-request; should populate
    AllTemplateDevicesByIT for an All-mode sub-request; should fail when an All-mode sub-request
    encounters an invalid pool; should mix ExactCount and All-mode sub-requests in the same
    FirstAvailable."""
    t = templates(**{"it-1": template(GPU_DRIVER, "tp", "t0")})
    (parent,) = valid(
        claim("c1", first_available("r", sub("all", mode="All"), sub("one"))), p=pools(GPUS), t=t
    ).requests
    all_sub, one = parent.sub_requests
    assert len(all_sub.all_devices) == 2 and len(all_sub.all_template_devices["it-1"]) == 1
    assert one.count == 1 and not one.is_all
    dup = api_slice("s1", GPU_DRIVER, "pool-a", ["x", "x"], all_nodes=True)
    assert "invalid" in invalid(
        claim("c1", first_available("r", sub("all", mode="All"))), p=pools(dup)
    )


def test_first_available_instance_type_pruning() -> None:
    """FirstAvailable / should prune ITs based on the MIN sub-request template count; should
    fail when all ITs are pruned due to sub-request template overflow; should not prune any IT
    when a template-free sub-request sets the MIN to zero."""
    t = templates(
        **{
            "it-big": template(GPU_DRIVER, "tp", *(f"t{i}" for i in range(30))),
            "it-small": template(GPU_DRIVER, "tp", "t0"),
        }
    )
    c = claim("c1", exact("e", count=3), first_available("r", sub("all", mode="All")))
    (_, parent) = valid(c, t=t).requests
    assert set(parent.sub_requests[0].all_template_devices) == {"it-small"}
    only_big = {"it-big": t["it-big"]}
    assert "all instance types pruned" in invalid(c, t=only_big)
    nics = {"nic": device_class("nic", 'device.driver == "nic.example.com"'), **CLASSES}
    c = claim(
        "c1",
        exact("e", count=3),
        first_available("r", sub("all", mode="All"), sub("none", "nic", mode="All")),
    )
    valid(c, t=only_big, classes=nics)


def test_exactly_and_first_available_in_one_claim() -> None:
    """FirstAvailable / should validate a claim with both Exactly and FirstAvailable requests."""
    cd = valid(claim("c1", exact("plain"), first_available("choice", sub("a"), sub("b"))))
    assert [str(r.name) for r in cd.requests] == ["plain", "choice"]
    assert [str(s.name) for s in cd.requests[1].sub_requests] == ["choice/a", "choice/b"]


# --- DeviceMatchesSelectors ------------------------------------------------------------------------


def _dev(attrs: dict[str, object] | None = None, **kw: object) -> DeviceWithID:
    d = device("gpu-0", attrs, **kw)  # type: ignore[arg-type]
    return DeviceWithID(d, DeviceID(GPU_DRIVER, "pool-a", "gpu-0"))


def _sel(*exprs: str) -> list[object]:
    return [compile_selector(e) for e in exprs]


def test_device_matches_selectors() -> None:
    """DeviceMatchesSelectors / should match a device with matching attributes; should not match
    a device with non-matching attributes; should match when all selectors pass (AND
    semantics); should not match when any selector fails (AND semantics); should match with
    empty selectors."""
    d = _dev({MODEL: "H100", f"{GPU_DRIVER}/mem": 80})
    h100 = f'device.attributes["{GPU_DRIVER}"].model == "H100"'
    a100 = f'device.attributes["{GPU_DRIVER}"].model == "A100"'
    big = f'device.attributes["{GPU_DRIVER}"].mem >= 80'
    assert device_matches_selectors(d, _sel(h100)) is True  # type: ignore[arg-type]
    assert device_matches_selectors(d, _sel(a100)) is False  # type: ignore[arg-type]
    assert device_matches_selectors(d, _sel(h100, big)) is True  # type: ignore[arg-type]
    assert device_matches_selectors(d, _sel(h100, a100)) is False  # type: ignore[arg-type]
    assert device_matches_selectors(d, []) is True


def test_device_matches_selectors_capacity_and_multiple_allocations() -> None:
    """DeviceMatchesSelectors / should not match when capacity selector fails; should not match
    when AllowMultipleAllocations is false."""
    d = _dev(capacity={f"{GPU_DRIVER}/memory": "40Gi"})
    cap = f'device.capacity["{GPU_DRIVER}"].memory.compareTo(quantity("80Gi")) >= 0'
    assert device_matches_selectors(d, _sel(cap)) is False  # type: ignore[arg-type]
    assert device_matches_selectors(d, _sel("device.allowMultipleAllocations")) is False  # type: ignore[arg-type]
