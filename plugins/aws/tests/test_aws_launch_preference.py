"""A NodeClaim's launch preference (an instance-type scorer's order) on AWS: the types
kept for CreateFleet, the overrides' priorities and the allocation strategies."""

from __future__ import annotations

from karpenter_aws.instance import (
    MAX_INSTANCE_TYPES,
    build_overrides,
    filter_instance_types,
    fleet_request,
)

from karpenter_core.apis import labels as wk
from karpenter_core.cloudprovider.types import InstanceType, Offering
from karpenter_core.scheduling.requirements import IN, Requirement, Requirements

ZONE = "us-west-2a"
SUBNETS = {ZONE: "subnet-1"}


def reqs(capacity_types: tuple[str, ...] = ("on-demand",)) -> Requirements:
    return Requirements(Requirement.new(wk.CAPACITY_TYPE_LABEL_KEY, IN, list(capacity_types)))


def typ(name: str, price: float, capacity_type: str = "on-demand") -> InstanceType:
    offering_reqs = Requirements(
        Requirement.new(wk.LABEL_TOPOLOGY_ZONE, IN, [ZONE]),
        Requirement.new(wk.CAPACITY_TYPE_LABEL_KEY, IN, [capacity_type]),
    )
    return InstanceType(
        name=name,
        requirements=Requirements(
            Requirement.new(wk.LABEL_INSTANCE_TYPE, IN, [name]),
            Requirement.new(wk.LABEL_TOPOLOGY_ZONE, IN, [ZONE]),
            Requirement.new(wk.CAPACITY_TYPE_LABEL_KEY, IN, [capacity_type]),
        ),
        offerings=[Offering(offering_reqs, price)],
        capacity={"cpu": 2000, "memory": 8 * 1024**3 * 1000, "pods": 29000},
    )


CHEAP, MID, DEAR = typ("c5.large", 0.08), typ("m5.large", 0.10), typ("r5.large", 0.13)


def names(types: list[InstanceType]) -> list[str]:
    return [t.name for t in types]


def test_without_a_preference_types_stay_cheapest_first() -> None:
    kept = filter_instance_types(reqs(), {}, [DEAR, CHEAP, MID])
    assert names(kept) == ["c5.large", "m5.large", "r5.large"]


def test_a_preference_orders_the_types_and_unlisted_ones_follow_by_price() -> None:
    kept = filter_instance_types(reqs(), {}, [DEAR, CHEAP, MID], {"r5.large": 0})
    assert names(kept) == ["r5.large", "c5.large", "m5.large"]


def test_truncation_keeps_the_preferred_types() -> None:
    many = [typ(f"t{i}.large", 1.0 + i) for i in range(MAX_INSTANCE_TYPES + 5)]
    dearest = f"t{MAX_INSTANCE_TYPES + 4}.large"
    kept = filter_instance_types(reqs(), {}, many, {dearest: 0})
    assert len(kept) == MAX_INSTANCE_TYPES
    assert kept[0].name == dearest
    assert f"t{MAX_INSTANCE_TYPES - 1}.large" not in names(kept)


def test_overrides_carry_the_rank_as_priority_only_with_a_preference() -> None:
    by_price = build_overrides([CHEAP, DEAR], reqs(), SUBNETS, "ami-1")
    assert [o.request()["Priority"] for o in by_price] == [0.08, 0.13]
    ranked = build_overrides([DEAR, CHEAP], reqs(), SUBNETS, "ami-1", {"r5.large": 0})
    assert [(o.instance_type, o.request()["Priority"]) for o in ranked] == [
        ("r5.large", 0.0),
        ("c5.large", 1.0),
    ]


def test_a_prioritized_fleet_follows_the_priorities() -> None:
    configs = [("lt-1", build_overrides([MID], reqs(), SUBNETS, "ami-1"))]
    assert fleet_request(configs, "on-demand", {})["OnDemandOptions"] == {
        "AllocationStrategy": "lowest-price"
    }
    assert fleet_request(configs, "on-demand", {}, prioritized=True)["OnDemandOptions"] == {
        "AllocationStrategy": "prioritized"
    }
    assert fleet_request(configs, "spot", {}, prioritized=True)["SpotOptions"] == {
        "AllocationStrategy": "capacity-optimized-prioritized"
    }
    assert fleet_request(configs, "spot", {})["SpotOptions"] == {
        "AllocationStrategy": "price-capacity-optimized"
    }
