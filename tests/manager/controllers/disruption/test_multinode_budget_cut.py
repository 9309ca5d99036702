"""Multi-node consolidation's budget cut over real candidates (spec disruption §9
"Multi-node")."""

from __future__ import annotations

from disruption_harness import World

from karpenter_core.disruption.methods.multinode import take_within_budgets
from karpenter_core.disruption.types import CLASS_GRACEFUL


def test_budget_cut_keeps_order_and_spends_budget() -> None:
    w = World()
    w.nodepool("a")
    w.nodepool("b")
    for name, pool in (("a1", "a"), ("b1", "b"), ("a2", "a"), ("a3", "a"), ("b2", "b")):
        w.pod(node=w.node(name, nodepool=pool))
    cands = sorted(w.candidates(CLASS_GRACEFUL), key=lambda c: c.name())
    budgets = {"a": 2, "b": 5}
    kept, constrained = take_within_budgets(cands, budgets)
    assert [c.name() for c in kept] == ["a1", "a2", "b1", "b2"]
    assert constrained
    assert budgets == {"a": 0, "b": 3}


def test_budget_cut_without_a_block_is_not_constrained() -> None:
    w = World()
    w.nodepool("a")
    w.pod(node=w.node("a1", nodepool="a"))
    kept, constrained = take_within_budgets(w.candidates(CLASS_GRACEFUL), {"a": 1})
    assert len(kept) == 1 and not constrained
