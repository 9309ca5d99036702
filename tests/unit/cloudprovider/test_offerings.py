"""Offerings and instance-type lists: filters, prices, minValues, truncation."""

from __future__ import annotations

import math

import pytest
from cp_builders import instance_type, offering, reqs
from hypothesis import given
from hypothesis import strategies as st

from karpenter_core.cloudprovider import types
from karpenter_core.cloudprovider.types import (
    MIN_VALUES_POLICY_BEST_EFFORT,
    MinValuesError,
    Offerings,
    adjusted_price,
    compatible,
    order_by_price,
    satisfies_min_values,
    truncate,
    worst_launch_price,
)
from karpenter_core.scheduling.requirements import IN, Requirement, Requirements

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
FAMILY = "karpenter.kwok.sh/instance-family"


def test_zone_and_capacity_type_are_read_from_requirements() -> None:
    o = offering("test-zone-b", "spot", 0.2)
    assert (o.zone, o.capacity_type) == ("test-zone-b", "spot")


def test_offering_without_zone_has_empty_zone() -> None:
    o = types.Offering(requirements=reqs(ct="spot"), price=1.0)
    assert o.zone == ""
    assert o.capacity_type == "spot"


def test_reservation_id_uses_the_registered_label(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(types, "_reservation_id_label", "example.com/reservation-id")
    reserved = offering(capacity_type="reserved", extra={"example.com/reservation-id": "r-1"})
    assert reserved.reservation_id == "r-1"
    assert offering().reservation_id == ""


def test_reservation_id_is_empty_without_a_registered_label(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(types, "_reservation_id_label", "")
    assert offering(extra={"example.com/reservation-id": "r-1"}).reservation_id == ""


def test_available_keeps_only_available_offerings() -> None:
    a, b = offering(price=1), offering(price=2, available=False)
    assert list(Offerings([a, b]).available()) == [a]


def test_compatible_filters_by_requirements() -> None:
    a, b = offering("z1"), offering("z2")
    ofs = Offerings([a, b])
    assert list(ofs.compatible(reqs(zone="z2"))) == [b]
    assert ofs.has_compatible(reqs(zone="z1"))
    assert not ofs.has_compatible(reqs(zone="z3"))


def test_compatible_allows_requirements_that_leave_well_known_keys_open() -> None:
    assert Offerings([offering("z1")]).has_compatible(Requirements())


def test_cheapest_and_most_expensive_pick_the_first_of_equals() -> None:
    a, b, c = offering(price=2), offering(price=1), offering(price=1)
    ofs = Offerings([a, b, c])
    assert ofs.cheapest() is b
    d = offering(price=2)
    assert Offerings([a, b, d]).most_expensive() is a
    assert Offerings().cheapest() is None
    assert Offerings().most_expensive() is None


WORST_PRICE_CASES = [
    # (offerings (zone, capacity type, price), requirements, expected)
    ([("z1", "spot", 0.3), ("z2", "spot", 0.4), ("z1", "on-demand", 1.0)], {}, 0.4),
    ([("z1", "spot", 0.3), ("z1", "on-demand", 1.0), ("z1", "reserved", 0.1)], {}, 0.1),
    ([("z1", "spot", 0.3), ("z2", "on-demand", 1.0)], {"zone": "z2"}, 1.0),
    ([("z1", "spot", 0.3), ("z2", "on-demand", 1.0)], {"ct": "on-demand"}, 1.0),
    ([("z1", "spot", 0.3)], {"zone": "z9"}, math.inf),
    ([], {}, math.inf),
]


@pytest.mark.parametrize(("offers", "requirements", "expected"), WORST_PRICE_CASES)
def test_worst_launch_price_uses_first_capacity_type_in_reserved_spot_on_demand_order(
    offers: list[tuple[str, str, float]], requirements: dict[str, str], expected: float
) -> None:
    ofs = Offerings(offering(z, ct, p) for z, ct, p in offers)
    assert worst_launch_price(ofs, reqs(**requirements)) == expected
    assert ofs.worst_launch_price(reqs(**requirements)) == expected


@pytest.mark.parametrize(
    ("change", "base", "expected"),
    [
        ("-10%", 10.0, 9.0),
        ("+10%", 10.0, 11.0),
        ("-50%", 10.0, 5.0),
        ("+100%", 10.0, 20.0),
        ("-100%", 10.0, 0.0),
        ("-200%", 10.0, 0.0),
        ("-25%", 1.5, 1.125),
        ("+0", 10.0, 10.0),
        ("+5", 10.0, 15.0),
        ("-2.5", 10.0, 7.5),
        ("-10", 10.0, 0.0),
        ("-15", 10.0, 0.0),
        ("+0.75", 1.25, 2.0),
        ("+100", 0.001, 100.001),
        ("+0.0001", 0.0001, 0.0002),
        ("80.0", 82781.0, 80.0),
        ("", 82781.0, 82781.0),
    ],
)
def test_adjusted_price(change: str, base: float, expected: float) -> None:
    assert adjusted_price(base, change) == pytest.approx(expected)


def test_adjusted_price_names_a_malformed_change() -> None:
    with pytest.raises(ValueError, match="'\\+ten'"):
        adjusted_price(1.0, "+ten")


def test_price_overlay_marks_the_copy_only() -> None:
    o = offering(price=10.0)
    overlaid = o.with_price_overlay("-10%")
    assert (overlaid.price, overlaid.is_price_overlaid()) == (9.0, True)
    assert (o.price, o.is_price_overlaid()) == (10.0, False)
    assert (overlaid.zone, overlaid.capacity_type) == (o.zone, o.capacity_type)


# --- instance-type lists ------------------------------------------------------------------


def _priced(name: str, *prices: float, available: bool = True, zone: str = "z1"):
    return instance_type(
        name, offerings=[offering(zone, "on-demand", p, available) for p in prices]
    )


def test_order_by_price_sorts_by_cheapest_offering() -> None:
    a, b, c = _priced("a", 3.0, 0.5), _priced("b", 1.0), _priced("c", 2.0)
    assert [it.name for it in order_by_price([b, c, a], Requirements())] == ["a", "b", "c"]


def test_order_by_price_ignores_unavailable_and_incompatible_offerings() -> None:
    cheap_gone = instance_type(
        "gone", offerings=[offering(price=0.1, available=False), offering(price=5.0)]
    )
    other_zone = _priced("elsewhere", 0.01, zone="z2")
    mid = _priced("mid", 1.0)
    ordered = order_by_price([cheap_gone, other_zone, mid], reqs(zone="z1"))
    assert [it.name for it in ordered] == ["mid", "gone", "elsewhere"]


def test_order_by_price_does_not_reorder_its_input() -> None:
    its = [_priced("b", 2.0), _priced("a", 1.0)]
    order_by_price(its, Requirements())
    assert [it.name for it in its] == ["b", "a"]


@given(st.lists(st.lists(st.floats(0, 100), max_size=3), max_size=8))
def test_order_by_price_is_a_permutation_sorted_by_cheapest_price(
    prices: list[list[float]],
) -> None:
    its = [_priced(f"it-{i}", *ps) for i, ps in enumerate(prices)]
    ordered = order_by_price(its, Requirements())
    assert sorted(it.name for it in ordered) == sorted(it.name for it in its)
    keys = [min((o.price for o in it.offerings), default=math.inf) for it in ordered]
    assert keys == sorted(keys)


def test_compatible_keeps_types_with_an_available_compatible_offering() -> None:
    ok = _priced("ok", 1.0)
    gone = _priced("gone", 1.0, available=False)
    elsewhere = _priced("elsewhere", 1.0, zone="z2")
    assert compatible([ok, gone, elsewhere], reqs(zone="z1")) == [ok]


def _with_family(name: str, family: str):
    return instance_type(name, offerings=[offering(price=1.0)], extra_requirements={FAMILY: family})


def _min_values(instance_types: int | None = None, families: int | None = None) -> Requirements:
    r = Requirements()
    r.add(Requirement.new(INSTANCE_TYPE, "Exists", (), instance_types))
    r.add(Requirement.new(FAMILY, "Exists", (), families))
    return r


def test_satisfies_min_values_returns_prefix_length_needed() -> None:
    its = [
        _with_family("c4.large", "c4"),
        _with_family("c5.xlarge", "c5"),
        _with_family("m4.2xlarge", "m4"),
    ]
    assert satisfies_min_values(its, _min_values(3, 3)) == (3, None)
    assert satisfies_min_values(its, _min_values(2, 1)) == (2, None)


def test_satisfies_min_values_reports_deficient_keys_and_counts() -> None:
    its = [
        _with_family("c4.large", "c4"),
        _with_family("c4.xlarge", "c4"),
        _with_family("c5.2xlarge", "c5"),
    ]
    needed, err = satisfies_min_values(its, _min_values(3, 3))
    assert needed == 3
    assert err == MinValuesError({FAMILY: 2})
    assert str(err) == (
        "minValues requirement is not met for label(s) (label(s)=[karpenter.kwok.sh/instance-family])"
    )


def test_without_min_values_nothing_is_needed() -> None:
    assert satisfies_min_values([_with_family("a", "c4")], reqs(zone="z1")) == (0, None)


def test_error_lists_every_deficient_key_sorted() -> None:
    _, err = satisfies_min_values([_with_family("a", "c4")], _min_values(2, 2))
    assert str(err).endswith(f"(label(s)=[{FAMILY} {INSTANCE_TYPE}])")


def test_truncate_keeps_the_cheapest() -> None:
    its = [_priced("c", 3.0), _priced("a", 1.0), _priced("b", 2.0)]
    kept, err = truncate(its, Requirements(), 2)
    assert err is None
    assert [it.name for it in kept] == ["a", "b"]


def test_truncate_fails_when_min_values_would_break_under_strict_policy() -> None:
    its = [
        instance_type("a", offerings=[offering(price=1.0)], extra_requirements={FAMILY: "c4"}),
        instance_type("b", offerings=[offering(price=2.0)], extra_requirements={FAMILY: "c4"}),
        instance_type("c", offerings=[offering(price=3.0)], extra_requirements={FAMILY: "m5"}),
    ]
    kept, err = truncate(its, _min_values(families=2), 2)
    assert err is not None
    assert str(err).startswith("validating minValues, minValues requirement is not met")
    assert [it.name for it in kept] == ["a", "b", "c"]


def test_truncate_ignores_min_values_under_best_effort() -> None:
    its = [
        instance_type("a", offerings=[offering(price=1.0)], extra_requirements={FAMILY: "c4"}),
        instance_type("b", offerings=[offering(price=2.0)], extra_requirements={FAMILY: "m5"}),
    ]
    kept, err = truncate(its, _min_values(families=2), 1, MIN_VALUES_POLICY_BEST_EFFORT)
    assert err is None
    assert [it.name for it in kept] == ["a"]


def test_truncate_passes_when_min_values_survive() -> None:
    its = [
        instance_type("a", offerings=[offering(price=1.0)], extra_requirements={FAMILY: "c4"}),
        instance_type("b", offerings=[offering(price=2.0)], extra_requirements={FAMILY: "m5"}),
        instance_type("c", offerings=[offering(price=3.0)], extra_requirements={FAMILY: "m5"}),
    ]
    r = _min_values(families=2)
    r.add(Requirement.new(FAMILY, IN, ["c4", "m5"]))
    kept, err = truncate(its, r, 2)
    assert err is None
    assert [it.name for it in kept] == ["a", "b"]


@given(st.lists(st.sampled_from(["c4", "c5", "m4", "m5"]), max_size=8), st.integers(1, 4))
def test_min_values_prefix_is_the_shortest_that_satisfies(
    families: list[str], minimum: int
) -> None:
    its = [_with_family(f"it-{i}", fam) for i, fam in enumerate(families)]
    needed, err = satisfies_min_values(its, _min_values(families=minimum))
    if err is None and its:
        assert len(set(families[:needed])) >= minimum
        assert len(set(families[: needed - 1])) < minimum
    elif err is not None:
        assert needed == len(its)
        assert len(set(families)) < minimum
        assert err.unsatisfied == {FAMILY: len(set(families))}
