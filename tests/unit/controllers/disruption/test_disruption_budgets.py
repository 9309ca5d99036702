"""Disruption budgets per NodePool (spec disruption §6, scenarios 9, 12, 13)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from disruption_harness import World

from karpenter_core import metrics
from karpenter_core.apis.v1 import NodePool
from karpenter_core.controllers.disruption.budgets import (
    MAX_INT32,
    allowed_disruptions,
    budget_errors,
    build_budget_mapping,
)
from karpenter_core.controllers.disruption.candidates import build_nodepool_catalog


def _pool(*budgets: dict) -> NodePool:
    return NodePool.from_dict(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "p"},
            "spec": {"template": {"spec": {}}, "disruption": {"budgets": list(budgets)}},
        }
    )


NOW = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)


def test_budgets_by_reason_take_the_smallest_that_applies() -> None:
    pool = _pool(
        {"nodes": "10"},
        {"nodes": "15", "reasons": ["Drifted", "Underutilized"]},
        {"nodes": "5", "reasons": ["Drifted"]},
        {"nodes": "4", "reasons": ["Empty"]},
        # @weekly with a 1h window is not active at noon on a Wednesday
        {"nodes": "0", "schedule": "@weekly", "duration": "1h"},
    )
    got = {r: allowed_disruptions(pool, NOW, 100, r) for r in ("Empty", "Drifted", "Underutilized")}
    assert got == {"Empty": 4, "Drifted": 5, "Underutilized": 10}


def test_percentages_round_up() -> None:
    assert allowed_disruptions(_pool({"nodes": "30%"}), NOW, 10, "Empty") == 3
    assert allowed_disruptions(_pool({"nodes": "10%"}), NOW, 11, "Empty") == 2


def test_no_budget_applying_allows_max_int32() -> None:
    assert allowed_disruptions(_pool({"nodes": "1", "reasons": ["Drifted"]}), NOW, 3, "Empty") == (
        MAX_INT32
    )


@pytest.mark.parametrize(
    ("schedule", "duration", "now", "active"),
    [
        # midnight at +01:00 is 23:00 UTC the day before: 30 min after midnight UTC is over
        ("@daily", "30m", datetime(2000, 6, 1, 0, 0, tzinfo=timezone(timedelta(hours=1))), False),
        ("@yearly", "24h", datetime(1000, 1, 1, 12, 0, tzinfo=UTC), True),
        ("@daily", "48h", NOW, True),
        # Sunday 00:00 UTC; the window opens at 06:30
        ("30 6 * * SUN", "6h", datetime(2026, 3, 1, 0, 0, tzinfo=UTC), False),
    ],
)
def test_scheduled_budgets(schedule: str, duration: str, now: datetime, active: bool) -> None:
    pool = _pool({"nodes": "0", "schedule": schedule, "duration": duration})
    assert allowed_disruptions(pool, now, 10, "Empty") == (0 if active else MAX_INT32)


def test_an_invalid_budget_zeroes_every_reason() -> None:
    pool = _pool(
        {"nodes": "10"},
        {"nodes": "1", "reasons": ["Drifted"], "schedule": "bad cron", "duration": "1h"},
    )
    assert budget_errors(pool, NOW)
    assert {allowed_disruptions(pool, NOW, 10, r) for r in ("Empty", "Drifted")} == {0}


def _mapping(world: World, reason: str = "Empty") -> dict[str, int]:
    return build_budget_mapping(world.dctx, reason, build_nodepool_catalog(world.dctx))


def test_disrupting_nodes_consume_the_budget() -> None:
    world = World()
    world.nodepool(budgets=[{"nodes": "3"}])
    for i in range(5):
        world.node(f"n{i}")
    world.node("notready", ready=False)
    world.node("marked")
    world.cluster.mark_for_deletion(world.pid("marked"))
    assert _mapping(world) == {"default": 1}
    sample = metrics.NODEPOOLS_NODES_CONSUMING_BUDGETS.labels(nodepool="default", reason="Empty")
    assert sample._value.get() == 2


def test_uninitialized_unmanaged_and_terminating_nodes_are_not_counted() -> None:
    world = World()
    world.nodepool(budgets=[{"nodes": "50%"}])
    for i in range(4):
        world.node(f"n{i}")
    world.node("young", initialized=False)
    nc = world.kube.get("nodeclaims", "n3")
    nc["status"]["conditions"].append(
        {
            "type": "InstanceTerminating",
            "status": "True",
            "reason": "x",
            "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    )
    world.cluster.update_nodeclaim(nc)
    # 3 counted nodes: ceil(50% of 3) = 2
    assert _mapping(world) == {"default": 2}


def test_budget_never_goes_negative_and_blocked_pool_gets_an_event() -> None:
    world = World()
    world.nodepool(budgets=[{"nodes": "1"}])
    world.node("a", ready=False)
    world.node("b", ready=False)
    assert _mapping(world) == {"default": 0}
    world2 = World()
    world2.nodepool(budgets=[{"nodes": "0"}])
    world2.node("a")
    assert _mapping(world2) == {"default": 0}
    (event,) = world2.events("DisruptionBlocked")
    assert event.message == (
        "No allowed disruptions for disruption reason Empty due to blocking budget"
    )


def test_every_managed_pool_gets_an_entry() -> None:
    world = World()
    world.nodepool("a", budgets=[{"nodes": "10%"}])
    world.nodepool("b", budgets=[{"nodes": "2"}])
    assert _mapping(world) == {"a": 0, "b": 2}


def test_unmanaged_nodes_are_not_counted() -> None:
    world = World()
    world.nodepool(budgets=[{"nodes": "50%"}])
    world.node("managed")
    world.cluster.update_node(
        world.create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": "byo",
                    "labels": {
                        "karpenter.sh/nodepool": "default",
                        "karpenter.sh/initialized": "true",
                        "node.kubernetes.io/instance-type": "fake-it-0",
                    },
                },
                "spec": {"providerID": "byo://1"},
                "status": {"conditions": [{"type": "Ready", "status": "False"}]},
            }
        )
    )
    assert world.cluster.state_node("byo://1") is not None  # in cluster state, no NodeClaim
    # one managed node: ceil(50% of 1) = 1, and the NotReady unmanaged node uses none of it
    assert _mapping(world) == {"default": 1}
