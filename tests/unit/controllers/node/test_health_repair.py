"""node.health (node repair): the pieces of the decision on their own (which condition is
unhealthy and when, the unhealthy threshold, the termination timestamp, the watch filter).

The policy is upstream's fake provider's: ``BadNode`` ``False`` tolerated for 30 minutes.
The reconciler over a cluster is tested in
tests/manager/controllers/node/test_health_repair_controller.py."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from karpenter_core.apis import labels as wk
from karpenter_core.cloudprovider.protocol import RepairPolicy
from karpenter_core.controllers.node.health import (
    ConditionChanges,
    allowed_unhealthy,
    condition_label,
    decide,
    find_unhealthy_condition,
    termination_timestamp,
)
from karpenter_core.runtime.clock import format_time
from karpenter_core.testing import builders as b

BAD_NODE = RepairPolicy("BadNode", "False", timedelta(minutes=30))
T0 = datetime(2026, 1, 1, tzinfo=UTC)
TERMINATION = wk.NODECLAIM_TERMINATION_TIMESTAMP_ANNOTATION_KEY


def minutes(n: float) -> float:
    return timedelta(minutes=n).total_seconds()


def condition(type_: str, status: str, since: datetime | None) -> dict[str, Any]:
    cond: dict[str, Any] = {"type": type_, "status": status}
    if since is not None:
        cond["lastTransitionTime"] = format_time(since)
    return cond


def node_dict(
    name: str = "n", conditions: Sequence[dict[str, Any]] = (), labels: dict[str, str] | None = None
) -> dict[str, Any]:
    """A Node with exactly ``conditions`` (no Ready unless given)."""
    return b.node(name, labels=labels, conditions=conditions, ready=None)


def bad_node(since: datetime = T0) -> dict[str, Any]:
    return condition("BadNode", "False", since)


# ---------------------------------------------------------------------------------------
# The decision, piece by piece
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cond", "expected"),
    [
        (condition("BadNode", "False", T0), True),
        (condition("FakeHealthyNode", "False", T0), False),  # type is not a policy's
        (condition("BadNode", "True", T0), False),  # status is not the policy's
    ],
)
def test_a_condition_matches_only_on_the_policys_type_and_status(
    cond: dict[str, Any], expected: bool
) -> None:
    found = find_unhealthy_condition(node_dict(conditions=[cond]), [BAD_NODE])
    assert (found is not None) is expected


def test_the_condition_repairable_soonest_decides() -> None:
    policies = [
        RepairPolicy("BadNode", "False", timedelta(minutes=60)),
        RepairPolicy("ValidUnhealthyCondition", "False", timedelta(minutes=30)),
    ]
    node = node_dict(
        conditions=[
            condition("ValidUnhealthyCondition", "False", T0),
            condition("BadNode", "False", T0),
        ]
    )
    found = find_unhealthy_condition(node, policies)
    assert found is not None
    assert found.type == "ValidUnhealthyCondition"
    assert found.repair_at == T0 + timedelta(minutes=30)


def test_a_matching_condition_without_a_transition_time_is_not_repaired(
    caplog: pytest.LogCaptureFixture,
) -> None:
    node = node_dict("stamp-less", [condition("BadNode", "False", None)])
    assert find_unhealthy_condition(node, [BAD_NODE]) is None
    assert "stamp-less" in caplog.text and "lastTransitionTime" in caplog.text


@pytest.mark.parametrize(
    ("total", "allowed"),
    # 20% rounded up, as intstr scales a percentage with roundUp for a PDB.
    [(0, 0), (1, 1), (3, 1), (5, 1), (10, 2), (11, 3), (100, 20)],
)
def test_twenty_percent_of_the_nodes_may_be_unhealthy_rounding_up(total: int, allowed: int) -> None:
    assert allowed_unhealthy(total) == allowed


def _peers(total: int, unhealthy: int) -> list[dict[str, Any]]:
    return [
        node_dict(f"p{i}", [bad_node()] if i < unhealthy else [condition("Ready", "True", T0)])
        for i in range(total)
    ]


@pytest.mark.parametrize(
    ("total", "unhealthy", "action"),
    [(10, 3, "blocked"), (10, 2, "repair"), (3, 1, "repair"), (5, 3, "blocked")],
)
def test_decide_blocks_repair_past_the_threshold(total: int, unhealthy: int, action: str) -> None:
    peers = _peers(total, unhealthy)
    verdict = decide(peers[0], [BAD_NODE], peers, T0 + timedelta(minutes=60))
    assert verdict.action == action
    assert (verdict.unhealthy, verdict.total) == (unhealthy, total)


def test_decide_waits_until_the_toleration_is_over() -> None:
    node = node_dict(conditions=[bad_node()])
    verdict = decide(node, [BAD_NODE], [node], T0 + timedelta(minutes=20))
    assert verdict.action == "wait"
    assert verdict.requeue_after == minutes(10)


def test_a_healthy_node_needs_nothing() -> None:
    node = node_dict(conditions=[condition("Ready", "True", T0)])
    assert decide(node, [BAD_NODE], [node], T0 + timedelta(days=1)).action == "healthy"


NOW = T0 + timedelta(hours=1)


@pytest.mark.parametrize(
    ("existing", "expected"),
    [
        (None, format_time(NOW)),
        (format_time(NOW + timedelta(minutes=120)), format_time(NOW)),  # later: forced to now
        (format_time(NOW - timedelta(minutes=3)), None),  # already past: kept
        ("not-a-time", format_time(NOW)),
    ],
)
def test_the_termination_timestamp_becomes_now_unless_already_past(
    existing: str | None, expected: str | None
) -> None:
    annotations = {} if existing is None else {TERMINATION: existing}
    assert termination_timestamp(annotations, NOW) == expected


@pytest.mark.parametrize(
    ("type_", "label"),
    [
        ("Ready", "ready"),
        ("BadNode", "bad_node"),
        ("AcceleratedHardwareReady", "accelerated_hardware_ready"),
        ("ValidUnhealthyCondition", "valid_unhealthy_condition"),
    ],
)
def test_the_condition_metric_label_is_snake_case(type_: str, label: str) -> None:
    assert condition_label(type_) == label


def test_the_watch_passes_only_condition_changes() -> None:
    changed = ConditionChanges()
    node = node_dict("n", [condition("Ready", "True", T0)])
    assert changed("ADDED", node)
    node["metadata"]["resourceVersion"] = "2"  # a heartbeat: nothing about conditions moved
    assert not changed("MODIFIED", node)
    node["status"]["conditions"] = [condition("Ready", "False", T0 + timedelta(seconds=5))]
    assert changed("MODIFIED", node)
    node["status"]["conditions"].append(condition("BadNode", "False", T0))
    assert changed("MODIFIED", node)
    assert not changed("MODIFIED", node)
    assert changed("DELETED", node)
