"""One copy of each nested value that many cached objects hold alike (hash-consing).

The 200 replicas of a Deployment carry the same containers, tolerations, volumes sources,
affinity, spread constraints, owner reference and labels; decoded from JSON, each pod has its
own copy of all of them, and with 150,000 pods cached those copies are most of the
operator's memory. :class:`SharedStructures` hands out one canonical object per distinct
value: a mapping or list is replaced by an equal one already held when there is one.

Sharing is sound only because cached objects are never changed in place: readers get deep
copies (``CachedClient.get``/``list``) or promise not to change what they are handed
(``get_shared``, ``list_shared``, watch handlers), and the informer replaces an object on
update rather than editing it. A change made through one pod would otherwise show in all
pods that share the value.

The table is keyed by a hash of each value's items, where a nested mapping or list counts by
its identity (it is canonical already, built bottom-up), so a key costs no memory beyond an
int; a hit is confirmed item by item before it is used. Values no cached object holds any
more are dropped by a sweep when the table has doubled since the last one: an entry that
only the table refers to has a reference count of the table's own plus the sweep's (CPython's
counting, which this relies on).
"""

from __future__ import annotations

import sys
import threading
from typing import Any

__all__ = ["SharedStructures"]

_CONTAINERS = (dict, list)
_SWEEP_FLOOR = 10_000
# table (or candidates tuple) + the sweep's local name + getrefcount's argument
_UNREFERENCED = 3


def _same_items(held: Any, new: Any) -> bool:
    """Whether ``held`` (canonical) equals ``new`` whose nested values are canonical too:
    nested containers by identity, scalars by type and value (``True`` is not ``1``)."""
    if type(held) is not type(new) or len(held) != len(new):
        return False
    if type(new) is dict:
        if list(held) != list(new):  # same keys in the same order (JSON order is kept)
            return False
        pairs = zip(held.values(), new.values(), strict=True)
    else:
        pairs = zip(held, new, strict=True)
    for a, b in pairs:
        if type(b) in _CONTAINERS:
            if a is not b:
                return False
        elif type(a) is not type(b) or a != b:
            return False
    return True


def _fingerprint(value: dict[str, Any] | list[Any]) -> int:
    if type(value) is dict:
        items = (
            (k, id(v)) if type(v) in _CONTAINERS else (k, type(v), v) for k, v in value.items()
        )
        return hash((0, *items))
    return hash((1, *(id(v) if type(v) in _CONTAINERS else (type(v), v) for v in value)))


class SharedStructures:
    """Canonical copies of nested values; thread-safe (informers run on their own threads).

    ``share(value)`` returns a value equal to ``value`` (JSON-shaped: dicts, lists, strings,
    numbers, booleans, None) whose strings are interned and whose every nested mapping and
    list below ``depth`` levels is the table's canonical one. The top ``depth`` levels are
    copied fresh: an object's own mapping and its ``metadata``/``spec``/``status`` are
    unique per object, and tabling them would only cost memory."""

    def __init__(self) -> None:
        self._table: dict[int, Any] = {}
        self._lock = threading.Lock()
        self._after_sweep = 0
        self.hits = 0

    def __len__(self) -> int:
        with self._lock:
            return sum(len(v) if type(v) is tuple else 1 for v in self._table.values())

    def share(self, value: Any, depth: int = 2) -> Any:
        with self._lock:
            out = self._share(value, depth)
            if len(self._table) > max(_SWEEP_FLOOR, 2 * self._after_sweep):
                self._sweep()
            return out

    def sweep(self) -> int:
        """Drop the values no cached object holds any more; returns how many went."""
        with self._lock:
            return self._sweep()

    def _share(self, value: Any, depth: int) -> Any:
        t = type(value)
        if t is str:
            return sys.intern(value)
        if t is dict:
            d = {sys.intern(k): self._share(v, depth - 1) for k, v in value.items()}
            return d if depth > 0 else self._canonical(d)
        if t is list:
            lst = [self._share(v, depth - 1) for v in value]
            return lst if depth > 0 else self._canonical(lst)
        return value

    def _canonical(self, value: dict[str, Any] | list[Any]) -> Any:
        h = _fingerprint(value)
        held = self._table.get(h)
        if held is None:
            self._table[h] = value
            return value
        candidates = held if type(held) is tuple else (held,)
        for c in candidates:
            if _same_items(c, value):
                self.hits += 1
                return c
        self._table[h] = (*candidates, value)
        return value

    def _sweep(self) -> int:
        # parents first would free children only at the next sweep; repeat while it helps
        dropped = 0
        while True:
            gone = 0
            for h in list(self._table):
                held = self._table[h]
                if type(held) is tuple:
                    kept = tuple(c for c in held if sys.getrefcount(c) > _UNREFERENCED)
                    gone += len(held) - len(kept)
                    if not kept:
                        del self._table[h]
                    elif len(kept) == 1:
                        self._table[h] = kept[0]
                    elif len(kept) != len(held):
                        self._table[h] = kept
                    del kept
                elif sys.getrefcount(held) <= _UNREFERENCED:
                    del self._table[h]
                    gone += 1
                del held
            dropped += gone
            if not gone:
                break
        self._after_sweep = len(self._table)
        return dropped
