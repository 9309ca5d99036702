"""Cluster state's pods in key order, kept up to date as pods change.

Every provisioning and disruption snapshot takes every pod in key order. During a large
scale-in the pods change between nearly every two snapshots (bindings, status, deletions,
replacements), and rebuilding the ordered tuple from the key map each time — one dict
lookup per pod, plus a sort when keys came or went — was several per cent of the run.
Here a change costs a binary search: an existing key's value is replaced in place, a
removed one leaves a hole, a new one waits in a small set until the next read inserts it.
A read then copies a list at C speed (skipping holes) and is cached until the next change.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Generic, TypeVar

V = TypeVar("V")

_MERGE_DIVISOR = 32
"""A read inserts new keys one by one while they are fewer than the ordered keys over
this; more (a scale-out's burst) and it sorts everything afresh, which is then cheaper."""

_HOLE_DIVISOR = 8
"""Holes (removed keys) are compacted away once they are more than the keys over this."""


class KeyOrdered(Generic[V]):
    """Values by string key, read as a tuple in key order (:meth:`values`).

    Values must be truthy (a hole is ``None``, skipped by a C-level filter): cluster state
    stores :class:`~karpenter_core.apis.objects.Pod` objects, which are."""

    __slots__ = ("_holes", "_keys", "_new", "_tuple", "_vals", "_values")

    def __init__(self) -> None:
        self._values: dict[str, V] = {}
        self._keys: list[str] = []  # sorted; a removed key stays until compaction
        self._vals: list[V | None] = []  # aligned with _keys; None where removed
        self._new: set[str] = set()  # keys set since the last read, not in _keys
        self._holes = 0
        self._tuple: tuple[V, ...] | None = ()

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: str) -> bool:
        return key in self._values

    def get(self, key: str) -> V | None:
        return self._values.get(key)

    def set(self, key: str, value: V) -> V | None:
        """Store ``value`` under ``key``; returns the value it replaced, if any."""
        previous = self._values.get(key)
        self._values[key] = value
        self._tuple = None
        if key in self._new:
            return previous
        i = self._index(key)
        if i is None:
            self._new.add(key)
        else:
            if self._vals[i] is None:
                self._holes -= 1
            self._vals[i] = value
        return previous

    def pop(self, key: str) -> V | None:
        """Forget ``key``; returns its value, if it had one."""
        gone = self._values.pop(key, None)
        if gone is None:
            return None
        self._tuple = None
        if key in self._new:
            self._new.discard(key)
        else:
            i = self._index(key)
            if i is not None and self._vals[i] is not None:
                self._vals[i] = None
                self._holes += 1
        return gone

    def values(self) -> tuple[V, ...]:
        """Every value, ordered by key; the same tuple until something changes."""
        if self._tuple is None:
            if self._new:
                self._merge()
            if self._holes > len(self._keys) // _HOLE_DIVISOR:
                self._rebuild()
            vals = self._vals
            self._tuple = tuple(filter(None, vals)) if self._holes else tuple(vals)  # type: ignore[arg-type]
        return self._tuple

    def _index(self, key: str) -> int | None:
        keys = self._keys
        i = bisect_left(keys, key)
        return i if i < len(keys) and keys[i] == key else None

    def _merge(self) -> None:
        new = self._new
        if len(new) * _MERGE_DIVISOR > len(self._keys):
            self._rebuild()
            return
        keys, vals, values = self._keys, self._vals, self._values
        for key in sorted(new):
            i = bisect_left(keys, key)
            keys.insert(i, key)
            vals.insert(i, values[key])
        new.clear()

    def _rebuild(self) -> None:
        values = self._values
        self._keys = sorted(values)
        self._vals = [values[k] for k in self._keys]
        self._new.clear()
        self._holes = 0
