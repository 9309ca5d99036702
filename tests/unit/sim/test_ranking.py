"""``RankedPositions`` answers kube-scheduler's cut-short search as the node-by-node scan
does: which node is best among the first ``wanted`` feasible ones from a rotating start
(ties to the lower position), and how many nodes the scan went through."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from karpenter_core.sim.ranking import RankedPositions


def _scan(scores: list[float | None], start: int, wanted: int) -> tuple[int, int]:
    """The search as kube-scheduler writes it: node by node round the ring."""
    n = len(scores)
    best, best_score, feasible = -1, -1.0, 0
    for step in range(n):
        i = (start + step) % n
        s = scores[i]
        if s is None:
            continue
        if s > best_score or (s == best_score and best >= 0 and i < best):
            best, best_score = i, s
        feasible += 1
        if feasible >= wanted:
            return best, step + 1
    return best, n


# few distinct scores, so ties are common
_score = st.one_of(st.none(), st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]))


@settings(max_examples=300, deadline=None)
@given(
    scores=st.lists(_score, min_size=1, max_size=70),
    updates=st.lists(st.tuples(st.integers(0, 69), _score), max_size=20),
    queries=st.lists(st.tuples(st.integers(0, 69), st.integers(0, 80)), min_size=1, max_size=8),
)
def test_search_is_the_scan(
    scores: list[float | None],
    updates: list[tuple[int, float | None]],
    queries: list[tuple[int, int]],
) -> None:
    ranked = RankedPositions(scores)
    n = len(scores)
    for i, s in updates:
        scores[i % n] = s
        ranked.set(i % n, s)
    assert ranked.feasible == sum(s is not None for s in scores)
    for start, wanted in queries:
        assert ranked.search(start % n, wanted) == _scan(scores, start % n, wanted)


def test_ties_go_to_the_lower_position_even_across_the_wrap() -> None:
    ranked = RankedPositions([0.5, None, 0.5, 0.5])
    # from 3 the scan sees 3 then wraps to 0: both score 0.5, 0 is the lower position
    assert ranked.search(3, 2) == (0, 2)
    assert ranked.search(2, 1) == (2, 1)


def test_nothing_feasible_means_every_node_was_looked_at() -> None:
    ranked = RankedPositions([None, None, None])
    assert ranked.search(1, 2) == (-1, 3)
    ranked.set(2, 0.1)
    assert ranked.search(0, 2) == (2, 3)  # fewer than wanted: the whole ring, best of all
    assert ranked.search(2, 1) == (2, 1)
