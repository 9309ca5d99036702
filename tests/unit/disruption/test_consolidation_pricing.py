"""How a simulated replacement becomes a cheaper one, or none (spec disruption §9
computeConsolidation steps 5-8, spot→spot, multi-node ``filterOutSameInstanceType``;
scenarios 24-28)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import pytest

from karpenter_core.apis.labels import (
    CAPACITY_TYPE_LABEL_KEY,
    LABEL_INSTANCE_TYPE,
    LABEL_TOPOLOGY_ZONE,
)
from karpenter_core.cloudprovider.types import InstanceType, Offering
from karpenter_core.disruption.methods.consolidation import (
    CANT_REPLACE_WITH_CHEAPER,
    ReplacementPlan,
    filter_by_price,
    filter_out_same_instance_type,
    launch_price,
    plan_replacement,
)
from karpenter_core.disruption.methods.spottospot import disabled_message, too_few_message
from karpenter_core.scheduling.requirements import EXISTS, IN, Requirement, Requirements
from karpenter_core.testing import fakecatalog

off = fakecatalog.offering


def it(name: str, *offerings: Offering, family: str = "") -> InstanceType:
    extra = [Requirement.new("family", IN, [family])] if family else []
    return fakecatalog.instance_type(name, offerings=list(offerings), requirements=extra)


def capacity(*types: str) -> Requirements:
    return Requirements(Requirement.new(CAPACITY_TYPE_LABEL_KEY, IN, list(types)))


ANY = capacity("spot", "on-demand")


def names(types: Sequence[InstanceType]) -> list[str]:
    return [t.name for t in types]


def plan(
    types: Sequence[InstanceType],
    reqs: Requirements,
    price: float,
    *,
    spot: bool = False,
    single: bool = True,
    gate: bool = True,
) -> ReplacementPlan:
    return plan_replacement(
        types,
        reqs,
        price,
        all_candidates_spot=spot,
        single_node=single,
        spot_to_spot_enabled=gate,
    )


# --- launch price ---------------------------------------------------------------------


def test_launch_price_is_the_priciest_offering_of_the_preferred_capacity_type() -> None:
    t = it("t", off("spot", "a", 1.0), off("spot", "b", 0.2), off("on-demand", "a", 0.1))
    # spot is preferred over on-demand, and any spot zone may be picked: the worst is 1.0
    assert launch_price(t, ANY) == 1.0
    assert launch_price(t, capacity("on-demand")) == 0.1


@pytest.fixture
def reservation_label() -> Iterator[None]:
    """Reserved offerings carry the reservation-id label the provider registers."""
    with fakecatalog.registered_labels():
        yield


@pytest.mark.usefixtures("reservation_label")
def test_launch_price_prefers_reserved_when_allowed() -> None:
    t = it("t", off("reserved", "a", 0.01, reservation_id="r1"), off("on-demand", "a", 1.0))
    assert launch_price(t, capacity("reserved", "on-demand")) == 0.01
    assert launch_price(t, capacity("on-demand")) == 1.0


def test_launch_price_ignores_unavailable_offerings() -> None:
    t = it("t", off("spot", "a", 9.0, available=False), off("spot", "b", 0.3))
    assert launch_price(t, ANY) == 0.3
    assert launch_price(it("u", off("spot", "a", 1.0, available=False)), ANY) == math.inf


# --- price filter ---------------------------------------------------------------------


def test_filter_by_price_keeps_strictly_cheaper_types_in_order() -> None:
    types = [
        it("a", off("on-demand", "z", 0.3)),
        it("b", off("on-demand", "z", 0.5)),
        it("c", off("on-demand", "z", 0.1)),
    ]
    cut = filter_by_price(types, ANY, 0.5)
    assert names(cut.instance_types) == ["a", "c"]
    assert cut.error is None


def test_filter_by_price_reports_broken_min_values() -> None:
    types = [
        it("a", off("on-demand", "z", 0.1), family="f1"),
        it("b", off("on-demand", "z", 0.9), family="f2"),
    ]
    reqs = capacity("on-demand")
    reqs.add(Requirement.new("family", EXISTS, min_values=2))
    cut = filter_by_price(types, reqs, 0.5)
    assert names(cut.instance_types) == ["a"]
    assert cut.error is not None
    assert "family" in str(cut.error)


# --- plan_replacement: on-demand candidates ---------------------------------------------


def test_a_cheaper_type_replaces_and_the_types_are_ordered_by_price() -> None:
    types = [
        it("big", off("on-demand", "z", 0.9)),
        it("small", off("on-demand", "z", 0.2)),
        it("mid", off("on-demand", "z", 0.4)),
    ]
    p = plan(types, capacity("on-demand"), 1.0)
    assert p.ok
    assert names(p.instance_types) == ["small", "mid", "big"]


def test_the_current_type_is_excluded_when_it_costs_the_same() -> None:
    types = [it("current", off("on-demand", "z", 1.0)), it("small", off("on-demand", "z", 0.2))]
    p = plan(types, capacity("on-demand"), 1.0)
    assert names(p.instance_types) == ["small"]


def test_no_replacement_when_any_spot_zone_could_cost_more_than_the_node() -> None:
    # Scenario 25: the node costs 0.50; the replacement's spot offerings are 1.00, 0.20
    # and 0.40, so its worst launch price is 1.00.
    replacement = it(
        "potential-spot-replacement",
        off("spot", "test-zone-1a", 1.0),
        off("spot", "test-zone-1b", 0.2),
        off("spot", "test-zone-1c", 0.4),
    )
    p = plan([replacement], ANY, 0.5)
    assert not p.ok
    assert p.rejection == CANT_REPLACE_WITH_CHEAPER


def test_no_replacement_when_the_on_demand_replacement_costs_more() -> None:
    replacement = it(
        "on-demand-replacement",
        off("on-demand", "test-zone-1a", 0.6),
        off("on-demand", "test-zone-1b", 0.6),
        off("spot", "test-zone-1b", 0.2),
        off("spot", "test-zone-1c", 0.3),
    )
    p = plan([replacement], capacity("on-demand"), 0.5)
    assert p.rejection == CANT_REPLACE_WITH_CHEAPER


def test_a_replacement_allowed_spot_and_on_demand_is_pinned_to_spot() -> None:
    types = [it("small", off("spot", "z", 0.1), off("on-demand", "z", 0.9))]
    p = plan(types, ANY, 0.5)
    assert p.ok
    assert p.requirements.get(CAPACITY_TYPE_LABEL_KEY).values == {"spot"}


def test_an_on_demand_only_replacement_is_not_pinned() -> None:
    types = [it("small", off("on-demand", "z", 0.1))]
    p = plan(types, capacity("on-demand"), 0.5)
    assert p.requirements.get(CAPACITY_TYPE_LABEL_KEY).values == {"on-demand"}


def test_min_values_broken_by_the_price_filter_is_reported() -> None:
    types = [
        it("a", off("on-demand", "z", 0.1), family="f1"),
        it("b", off("on-demand", "z", 0.9), family="f2"),
    ]
    reqs = capacity("on-demand")
    reqs.add(Requirement.new("family", EXISTS, min_values=2))
    p = plan(types, reqs, 0.5)
    assert p.rejection.startswith("Filtering by price: ")


@pytest.mark.usefixtures("reservation_label")
def test_a_reserved_offering_of_the_same_type_is_a_cheaper_replacement() -> None:
    # Scenario 32: an on-demand node moves to a near-free reservation of its own type.
    same = it("m", off("reserved", "z", 0.001, reservation_id="r"), off("on-demand", "z", 1.0))
    p = plan([same], capacity("reserved", "on-demand"), 1.0)
    assert p.ok
    assert names(p.instance_types) == ["m"]


def test_the_input_requirements_are_not_modified() -> None:
    reqs = ANY.copy()
    plan([it("small", off("spot", "z", 0.1))], reqs, 0.5)
    assert reqs.get(CAPACITY_TYPE_LABEL_KEY).values == {"spot", "on-demand"}


# --- plan_replacement: spot candidates ----------------------------------------------------


def spot_catalog(n: int) -> list[InstanceType]:
    return [
        it(f"s{i}", off("spot", "z", 0.1 * (i + 1)), off("on-demand", "z", 5.0)) for i in range(n)
    ]


def test_spot_to_spot_needs_the_feature_gate() -> None:
    p = plan(spot_catalog(20), ANY, 10.0, spot=True, gate=False)
    assert p.rejection == disabled_message()


def test_spot_to_spot_with_one_cheaper_type_reports_got_1() -> None:
    # Five types; the candidate is the priciest spot type and only one is cheaper.
    types = [it(f"s{i}", off("spot", "z", 1.0)) for i in range(4)]
    types.append(it("cheap", off("spot", "z", 0.001)))
    p = plan(types, ANY, 1.0, spot=True)
    assert p.rejection == too_few_message(1)


def test_spot_to_spot_does_nothing_when_the_candidate_is_among_the_cheapest_fifteen() -> None:
    types = spot_catalog(20)
    candidate_price = 0.2  # the second cheapest
    p = plan(types, ANY, candidate_price, spot=True)
    assert p.rejection == too_few_message(1)


def test_spot_to_spot_launches_the_cheapest_fifteen_spot_only() -> None:
    types = spot_catalog(18)
    types[16] = it("s16", off("spot", "z", 0.001))  # cheapest, listed late
    p = plan(types, ANY, 100.0, spot=True)
    assert p.ok
    kept = names(p.instance_types)
    assert len(kept) == 15
    assert kept[0] == "s16"
    assert "s17" not in kept and "s15" not in kept
    assert p.requirements.get(CAPACITY_TYPE_LABEL_KEY).values == {"spot"}


def test_spot_to_spot_keeps_what_min_values_needs_beyond_fifteen() -> None:
    reqs = ANY.copy()
    reqs.add(Requirement.new(LABEL_INSTANCE_TYPE, EXISTS, min_values=16))
    p = plan(spot_catalog(18), reqs, 100.0, spot=True)
    assert len(p.instance_types) == 16


def test_spot_to_spot_drops_types_without_a_spot_offering() -> None:
    types = [it("od", off("on-demand", "z", 0.01)), it("sp", off("spot", "z", 0.5))]
    p = plan(types, ANY, 1.0, spot=True, single=False)
    assert names(p.instance_types) == ["sp"]


def test_multi_node_spot_to_spot_has_no_fifteen_rule() -> None:
    p = plan(spot_catalog(3), ANY, 1.0, spot=True, single=False)
    assert p.ok
    assert len(p.instance_types) == 3


def test_spot_candidates_with_an_on_demand_only_replacement_take_the_normal_path() -> None:
    types = [it("od", off("on-demand", "z", 0.1))]
    p = plan(types, capacity("on-demand"), 1.0, spot=True, gate=False)
    assert p.ok


# --- filterOutSameInstanceType ------------------------------------------------------------


def node_labels(zone: str = "z", ct: str = "on-demand") -> dict[str, str]:
    return {LABEL_TOPOLOGY_ZONE: zone, CAPACITY_TYPE_LABEL_KEY: ct}


NANO = it("nano", off("on-demand", "z", 0.05))
SMALL = it("small", off("on-demand", "z", 0.1))
XL = it("xl", off("on-demand", "z", 0.8))
XL2 = it("2xl", off("on-demand", "z", 1.6))


def test_replacing_with_a_type_already_being_removed_is_invalid() -> None:
    # Scenario 28: [2xl, 2xl, small] -> {small, xl, 2xl} is just "delete the 2xls".
    cands = [(XL2, node_labels()), (XL2, node_labels()), (SMALL, node_labels())]
    cut = filter_out_same_instance_type([SMALL, XL, XL2], capacity("on-demand"), cands)
    assert cut.instance_types == ()


def test_only_types_cheaper_than_the_shared_one_survive() -> None:
    cands = [(XL2, node_labels()), (XL2, node_labels()), (SMALL, node_labels())]
    cut = filter_out_same_instance_type([NANO, SMALL, XL, XL2], capacity("on-demand"), cands)
    assert names(cut.instance_types) == ["nano"]


def test_without_a_shared_type_nothing_launchable_is_dropped() -> None:
    cands = [(XL2, node_labels()), (XL2, node_labels())]
    cut = filter_out_same_instance_type([NANO, SMALL, XL], capacity("on-demand"), cands)
    assert names(cut.instance_types) == ["nano", "small", "xl"]


def test_the_shared_price_is_the_candidates_own_offering() -> None:
    shared = it("m", off("on-demand", "z", 0.5), off("spot", "z", 0.2))
    cheaper = it("c", off("on-demand", "z", 0.3))
    # the candidate runs on-demand at 0.5: "c" at 0.3 is cheaper and stays
    cands = [(shared, node_labels(ct="on-demand"))]
    cut = filter_out_same_instance_type([cheaper, shared], capacity("on-demand"), cands)
    assert names(cut.instance_types) == ["c"]
    # the same type running as spot costs 0.2: "c" is not cheaper than keeping it
    cands = [(shared, node_labels(ct="spot"))]
    assert (
        filter_out_same_instance_type(
            [cheaper, shared], capacity("on-demand"), cands
        ).instance_types
        == ()
    )


@pytest.mark.parametrize("min_values", [1, 2])
def test_filter_out_same_instance_type_reports_min_values(min_values: int) -> None:
    a = it("a", off("on-demand", "z", 0.1), family="f1")
    b = it("b", off("on-demand", "z", 0.2), family="f2")
    reqs = capacity("on-demand")
    reqs.add(Requirement.new("family", EXISTS, min_values=min_values))
    cut = filter_out_same_instance_type([a, b], reqs, [(b, node_labels())])
    assert names(cut.instance_types) == ["a"]
    assert (cut.error is not None) == (min_values == 2)
