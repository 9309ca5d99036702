"""Disruption budgets per NodePool (spec disruption §6, scenarios 9, 12, 13)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from karpenter_core.apis.v1 import NodePool
from karpenter_core.disruption.budgets import (
    MAX_INT32,
    allowed_disruptions,
    budget_errors,
)


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
