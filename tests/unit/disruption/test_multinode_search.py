"""Multi-node consolidation's prefix search (spec disruption §9 "Multi-node"); the budget
cut over real candidates is in tests/manager/controllers/disruption/test_multinode_budget_cut.py."""

from __future__ import annotations

import pytest

from karpenter_core.disruption.methods.multinode import (
    MAX_BATCH,
    search_prefixes,
)


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
