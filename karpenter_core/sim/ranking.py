"""Nodes ranked for one pod class: kube-scheduler's cut-short search in logarithmic time.

kube-scheduler filters nodes from a rotating start until it has found
``numFeasibleNodesToFind`` that fit (10 % of 5,000 nodes: 500), then binds the pod to the
best scored of those. Done node by node, every pod of a 150,000-pod scale-in filters and
scores hundreds of nodes; when a class's verdict and score on a node depend on that node
alone (see :class:`~karpenter_core.sim.kubescheduler.KubeScheduler`), they change only when
the node does, so they can be kept per node and the search answered from them:
:class:`RankedPositions` holds each position's score (``None``: the node refuses the
class) in a segment tree of feasible counts and best positions, and :meth:`~RankedPositions.search`
returns what the node-by-node scan would.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["RankedPositions"]

_NONE = -1


class RankedPositions:
    """Scores at positions ``0 .. n-1`` (``None`` where the node does not fit). "Best" is
    the highest score, the lowest position among equal scores (the node list is in name
    order, and kube-scheduler's tie goes to the smaller name)."""

    __slots__ = ("_best", "_count", "_n", "_scores", "_size")

    def __init__(self, scores: Sequence[float | None]) -> None:
        n = len(scores)
        size = 1
        while size < n:
            size *= 2
        self._n = n
        self._size = size
        self._scores: list[float] = [0.0] * n
        count = [0] * (2 * size)
        best = [_NONE] * (2 * size)
        for i, s in enumerate(scores):
            if s is not None:
                self._scores[i] = s
                count[size + i] = 1
                best[size + i] = i
        self._count = count
        self._best = best
        for k in range(size - 1, 0, -1):
            count[k] = count[2 * k] + count[2 * k + 1]
            best[k] = self._better(best[2 * k], best[2 * k + 1])

    def __len__(self) -> int:
        return self._n

    @property
    def feasible(self) -> int:
        """How many positions fit."""
        return self._count[1]

    def _better(self, a: int, b: int) -> int:
        if a < 0:
            return b
        if b < 0:
            return a
        sa, sb = self._scores[a], self._scores[b]
        if sa > sb or (sa == sb and a < b):
            return a
        return b

    def set(self, i: int, score: float | None) -> None:
        """Position ``i`` now scores ``score`` (``None``: it does not fit)."""
        k = self._size + i
        count, best = self._count, self._best
        if score is None:
            count[k], best[k] = 0, _NONE
        else:
            self._scores[i] = score
            count[k], best[k] = 1, i
        k //= 2
        while k:
            count[k] = count[2 * k] + count[2 * k + 1]
            best[k] = self._better(best[2 * k], best[2 * k + 1])
            k //= 2

    def _before(self, i: int) -> int:
        """Feasible positions in ``[0, i)``."""
        total = 0
        lo, hi = self._size, self._size + i
        count = self._count
        while lo < hi:
            if lo & 1:
                total += count[lo]
                lo += 1
            if hi & 1:
                hi -= 1
                total += count[hi]
            lo //= 2
            hi //= 2
        return total

    def _kth(self, k: int) -> int:
        """The position of the ``k``-th feasible one (from 1), which must exist."""
        count = self._count
        node = 1
        while node < self._size:
            left = count[2 * node]
            if k <= left:
                node = 2 * node
            else:
                k -= left
                node = 2 * node + 1
        return node - self._size

    def _best_in(self, lo: int, hi: int) -> int:
        """The best feasible position in ``[lo, hi)``, or -1."""
        found = _NONE
        lo += self._size
        hi += self._size
        best = self._best
        while lo < hi:
            if lo & 1:
                found = self._better(found, best[lo])
                lo += 1
            if hi & 1:
                hi -= 1
                found = self._better(found, best[hi])
            lo //= 2
            hi //= 2
        return found

    def search(self, start: int, wanted: int) -> tuple[int, int]:
        """Scan from ``start`` round the ring until ``wanted`` feasible positions are
        found (or all were seen): the best of those seen (-1: none fits) and how many
        positions the scan went through, as kube-scheduler's node-by-node search reports
        them."""
        n = self._n
        total = self._count[1]
        wanted = max(wanted, 1)  # the scan stops at its first feasible one at the least
        if total < wanted or n == 0:
            return self._best[1], n
        before = self._before(start)
        after = total - before
        if after >= wanted:
            end = self._kth(before + wanted)
            return self._best_in(start, end + 1), end - start + 1
        end = self._kth(wanted - after)
        found = self._better(self._best_in(start, n), self._best_in(0, end + 1))
        return found, n - start + end + 1
