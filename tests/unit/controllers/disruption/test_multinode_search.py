"""Multi-node consolidation's prefix search and budget cut (spec disruption §9
"Multi-node" steps 2-5)."""

from __future__ import annotations

import pytest
from disruption_harness import World

from karpenter_core.controllers.disruption.candidates import get_candidates
from karpenter_core.controllers.disruption.multinode import (
    MAX_BATCH,
    search_prefixes,
    take_within_budgets,
)
from karpenter_core.controllers.disruption.types import CLASS_GRACEFUL


def run(
    count: int, feasible_up_to: int, max_batch: int = MAX_BATCH
) -> tuple[int | None, list[int]]:
    tried: list[int] = []

    def attempt(n: int) -> int | None:
        tried.append(n)
        return n if n <= feasible_up_to else None

    best, timed_out = search_prefixes(count, max_batch, attempt, lambda: False)
    assert not timed_out
    return best, tried


@pytest.mark.parametrize("count", [0, 1])
def test_fewer_than_two_candidates_is_single_node_work(count: int) -> None:
    assert run(count, feasible_up_to=count) == (None, [])


@pytest.mark.parametrize("count", range(2, 12))
@pytest.mark.parametrize("feasible", range(0, 12))
def test_search_finds_the_longest_feasible_prefix(count: int, feasible: int) -> None:
    best, tried = run(count, feasible)
    expected = min(feasible, count) if feasible >= 2 else None
    assert best == expected
    # a binary search: about log2(count) attempts, never a prefix of one
    assert len(tried) <= count.bit_length() + 1
    assert min(tried) >= 2


def test_batches_are_capped_at_the_maximum_plus_one() -> None:
    # Upstream's quirk: with more than 100 candidates the search may try 101.
    best, tried = run(150, feasible_up_to=150)
    assert best == MAX_BATCH + 1
    assert max(tried) == MAX_BATCH + 1


def test_with_exactly_the_maximum_the_whole_set_is_tried() -> None:
    best, _ = run(MAX_BATCH, feasible_up_to=MAX_BATCH)
    assert best == MAX_BATCH


def test_timeout_returns_the_best_so_far() -> None:
    calls = {"n": 0}

    def expired() -> bool:
        return calls["n"] >= 2

    def attempt(n: int) -> int | None:
        calls["n"] += 1
        return n

    best, timed_out = search_prefixes(64, MAX_BATCH, attempt, expired)
    assert timed_out
    assert best is not None and best >= 2


def test_timeout_before_anything_worked_returns_nothing() -> None:
    best, timed_out = search_prefixes(10, MAX_BATCH, lambda n: n, lambda: True)
    assert (best, timed_out) == (None, True)


def test_budget_cut_keeps_order_and_spends_budget() -> None:
    w = World()
    w.nodepool("a")
    w.nodepool("b")
    for name, pool in (("a1", "a"), ("b1", "b"), ("a2", "a"), ("a3", "a"), ("b2", "b")):
        w.pod(node=w.node(name, nodepool=pool))
    cands = sorted(get_candidates(w.dctx, CLASS_GRACEFUL), key=lambda c: c.name())
    budgets = {"a": 2, "b": 5}
    kept, constrained = take_within_budgets(cands, budgets)
    assert [c.name() for c in kept] == ["a1", "a2", "b1", "b2"]
    assert constrained
    assert budgets == {"a": 0, "b": 3}


def test_budget_cut_without_a_block_is_not_constrained() -> None:
    w = World()
    w.nodepool("a")
    w.pod(node=w.node("a1", nodepool="a"))
    kept, constrained = take_within_budgets(get_candidates(w.dctx, CLASS_GRACEFUL), {"a": 1})
    assert len(kept) == 1 and not constrained
