"""The solve queue (spec scheduling.md §8.3).

Largest pods first (CPU, then memory), then oldest, then by uid, so packing is
first-fit-decreasing and deterministic. A pod that fails goes to the back; the loop ends when
the head was last pushed back while the queue had its current length: a whole pass without
progress.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class Queue(Generic[T]):
    __slots__ = ("_items", "_key", "_last_len")

    def __init__(
        self,
        items: Iterable[T],
        sort_key: Callable[[T], object],
        identity: Callable[[T], str],
    ) -> None:
        self._items: deque[T] = deque(sorted(items, key=sort_key))  # type: ignore[arg-type]
        self._key = identity
        self._last_len: dict[str, int] = {}

    def pop(self) -> T | None:
        if not self._items:
            return None
        head = self._items[0]
        if self._last_len.get(self._key(head)) == len(self._items):
            return None
        return self._items.popleft()

    def push(self, item: T) -> None:
        self._items.append(item)
        self._last_len[self._key(item)] = len(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def items(self) -> list[T]:
        return list(self._items)
