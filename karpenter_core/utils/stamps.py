"""When each object was last seen to, for controllers that act at most once per period.

A controller that remembers per object (by uid) when it last did something must also
forget objects that went away. Dropping every stamp older than the period whenever the
table passes a fixed size goes quadratic once more objects than that size are live (all of
them recent, the prune keeps them all and runs again at the next stamp): the table is
pruned instead when it has doubled since the last prune, so pruning costs O(1) amortised
per stamp however large the cluster.
"""

from __future__ import annotations

from collections.abc import Hashable

__all__ = ["Stamps"]


class Stamps:
    """``key -> time`` (the caller's clock, seconds), keeping at least the stamps younger
    than ``ttl``. Without a lock: a stamp lost to a concurrent prune only means the
    caller acts once more for that key (each key's reconciles are serial)."""

    def __init__(self, ttl: float, *, min_prune: int = 4096) -> None:
        self.ttl = ttl
        self._min_prune = min_prune
        self._stamps: dict[Hashable, float] = {}
        self._prune_at = min_prune
        self.prunes = 0

    def get(self, key: Hashable) -> float | None:
        return self._stamps.get(key)

    def stamp(self, key: Hashable, now: float) -> None:
        """Record ``key`` at ``now``, first dropping the expired stamps if the table has
        doubled since it was last pruned."""
        if len(self._stamps) >= self._prune_at:
            self._stamps = {k: t for k, t in self._stamps.items() if now - t < self.ttl}
            self._prune_at = max(self._min_prune, 2 * len(self._stamps))
            self.prunes += 1
        self._stamps[key] = now

    def __len__(self) -> int:
        return len(self._stamps)
