"""The Balanced consolidation evaluator's score (spec disruption §10, scenarios 34-35): the
arithmetic on its own, no cluster."""

from __future__ import annotations

import math

import pytest

from karpenter_core.disruption.methods.balanced import (
    NodePoolTotals,
    ScoreResult,
    evaluate_balanced_move,
    score_message,
    score_move,
)
from karpenter_core.disruption.methods.consolidation import new_command

# The design document's worked examples: a NodePool costing 58.08 with disruption 90.
TOTALS = NodePoolTotals(total_cost=58.08, total_disruption_cost=90.0)


def test_oversized_node_scores_about_2_81_and_is_approved() -> None:
    r = score_move(7.26, 4.0, TOTALS)
    assert r.score == pytest.approx(2.8125)
    assert r.approved


def test_marginal_move_is_rejected_at_k_2_and_approved_at_k_3() -> None:
    assert score_move(2.42, 9.0, TOTALS).score == pytest.approx(0.4167, abs=1e-4)
    assert not score_move(2.42, 9.0, TOTALS, k=2).approved
    assert score_move(2.42, 9.0, TOTALS, k=3).approved


def test_zero_or_negative_savings_scores_zero() -> None:
    assert score_move(0.0, 4.0, TOTALS).score == 0.0
    assert score_move(-1.0, 4.0, TOTALS).score == 0.0
    assert not score_move(0.0, 0.0, TOTALS).approved


def test_savings_without_disruption_score_infinity() -> None:
    r = score_move(1.0, 0.0, TOTALS)
    assert r.score == math.inf
    assert r.approved


@pytest.mark.parametrize("totals", [NodePoolTotals(0.0, 90.0), NodePoolTotals(58.08, 0.0)])
def test_a_pool_without_cost_or_disruption_scores_zero(totals: NodePoolTotals) -> None:
    assert score_move(7.26, 4.0, totals).score == 0.0


def test_threshold_is_one_over_k_and_approval_is_inclusive() -> None:
    assert ScoreResult(k=2).threshold == 0.5
    assert ScoreResult(0.5, 1.0, 2).approved  # exactly 0.5


def test_score_message_carries_k_and_threshold() -> None:
    msg = score_message(score_move(7.26, 4.0, TOTALS))
    assert msg == "score 2.81 >= threshold 0.50 (k: 2, savings 12.5%, disruption 4.4%)"


def test_an_empty_command_is_rejected() -> None:
    assert evaluate_balanced_move(new_command([]), {}) == (False, None)
