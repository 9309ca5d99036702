"""static.deprovisioning: a static NodePool over ``spec.replicas`` loses its surplus,
unlaunched NodeClaims first, then empty nodes, then the cheapest to disrupt, nodes with
do-not-disrupt pods last."""

from __future__ import annotations

import pytest

from karpenter_core.controllers.static import select_victims
from karpenter_core.controllers.static.deprovisioning import LaunchedNode, excess


def launched(
    name: str, *, empty: bool = False, dnd: bool = False, cost: float = 1.0
) -> LaunchedNode:
    return LaunchedNode(name, empty=empty, do_not_disrupt=dnd, cost=cost)


@pytest.mark.parametrize(
    ("active", "replicas", "expected"), [(5, 3, 2), (3, 3, 0), (2, 3, 0), (4, 0, 4)]
)
def test_excess(active: int, replicas: int, expected: int) -> None:
    assert excess(active, replicas) == expected


def test_victims_unlaunched_then_empty_then_cheapest_then_do_not_disrupt() -> None:
    nodes = [
        launched("dnd-cheap", dnd=True, cost=0.1),
        launched("busy-expensive", cost=9.0),
        launched("empty"),
        launched("busy-cheap", cost=2.0),
    ]
    order = ["unlaunched", "empty", "busy-cheap", "busy-expensive", "dnd-cheap"]
    for count in range(len(order) + 2):
        assert select_victims(["unlaunched"], nodes, count) == order[:count]


def test_victims_take_only_as_many_unlaunched_as_needed() -> None:
    assert select_victims(["a", "b", "c"], [launched("e", empty=True)], 2) == ["a", "b"]


def test_no_victims_for_zero() -> None:
    assert select_victims(["a"], [launched("e", empty=True)], 0) == []
