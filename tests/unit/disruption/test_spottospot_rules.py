"""Spot-to-spot consolidation rules (spec disruption §9 "spot→spot", scenario 26)."""

from __future__ import annotations

from karpenter_core.apis.labels import CAPACITY_TYPE_LABEL_KEY, LABEL_INSTANCE_TYPE
from karpenter_core.cloudprovider.types import InstanceType
from karpenter_core.disruption.methods.spottospot import (
    MIN_INSTANCE_TYPES_FOR_SPOT_TO_SPOT,
    disabled_message,
    spot_only,
    spot_to_spot_options,
    too_few_message,
)
from karpenter_core.scheduling.requirements import EXISTS, IN, Requirement, Requirements
from karpenter_core.testing import fakecatalog


def spot_types(n: int, family_of: int = 1) -> list[InstanceType]:
    """``n`` spot types, cheapest first; type i is in family ``i // family_of``."""
    return [
        fakecatalog.instance_type(
            f"t{i}",
            offerings=[fakecatalog.offering("spot", "z1", 0.1 * (i + 1))],
            requirements=[Requirement.new("family", IN, [f"f{i // family_of}"])],
        )
        for i in range(n)
    ]


def test_the_minimum_is_fifteen() -> None:
    assert MIN_INSTANCE_TYPES_FOR_SPOT_TO_SPOT == 15


def test_single_node_with_fewer_than_fifteen_cheaper_types_is_rejected_with_the_count() -> None:
    out = spot_to_spot_options(spot_types(1), Requirements(), single_node=True)
    assert out.instance_types == ()
    assert out.rejection == too_few_message(1)
    assert out.rejection.endswith("got 1")
    assert "requires 15 cheaper instance type options" in out.rejection


def test_single_node_with_exactly_fifteen_keeps_all_fifteen() -> None:
    types = spot_types(15)
    out = spot_to_spot_options(types, Requirements(), single_node=True)
    assert out.rejection == ""
    assert list(out.instance_types) == types


def test_single_node_truncates_to_the_cheapest_fifteen() -> None:
    types = spot_types(18)
    out = spot_to_spot_options(types, Requirements(), single_node=True)
    assert [it.name for it in out.instance_types] == [f"t{i}" for i in range(15)]


def test_single_node_keeps_more_than_fifteen_when_min_values_needs_them() -> None:
    types = spot_types(18)
    reqs = Requirements(Requirement.new(LABEL_INSTANCE_TYPE, EXISTS, min_values=16))
    out = spot_to_spot_options(types, reqs, single_node=True)
    assert len(out.instance_types) == 16


def test_min_values_needing_fewer_than_fifteen_still_keeps_fifteen() -> None:
    types = spot_types(18, family_of=2)  # 2 types per family
    reqs = Requirements(Requirement.new("family", EXISTS, min_values=3))  # first 5 types do it
    out = spot_to_spot_options(types, reqs, single_node=True)
    assert len(out.instance_types) == 15


def test_multi_node_has_no_flexibility_rule() -> None:
    types = spot_types(2)
    out = spot_to_spot_options(types, Requirements(), single_node=False)
    assert out.rejection == ""
    assert list(out.instance_types) == types


def test_spot_only_narrows_capacity_type_without_touching_the_input() -> None:
    reqs = Requirements(
        Requirement.new(CAPACITY_TYPE_LABEL_KEY, IN, ["spot", "on-demand", "reserved"])
    )
    narrowed = spot_only(reqs)
    assert narrowed.get(CAPACITY_TYPE_LABEL_KEY).values == frozenset({"spot"})
    assert reqs.get(CAPACITY_TYPE_LABEL_KEY).values == frozenset({"spot", "on-demand", "reserved"})


def test_disabled_message_names_the_gate() -> None:
    assert disabled_message() == (
        "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"
    )
