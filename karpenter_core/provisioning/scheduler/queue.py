"""The solve queue (spec scheduling.md §8.3) and Go's ``sort.Slice`` ordering.

Largest pods first (CPU, then memory), then oldest, then by uid, so packing is
first-fit-decreasing and deterministic. A pod that fails goes to the back; the loop ends when
the head was last pushed back while the queue had its current length: a whole pass without
progress.

Upstream sorts with Go's ``sort.Slice``, which is not stable: elements that compare equal
end up in whatever order Go's pattern-defeating quicksort leaves them. That order is a
deterministic function of the slice it is given, and the scheduler's choice among in-flight
NodeClaims with equal pod counts depends on it, so :func:`go_sort_slice` reproduces the
algorithm (Go 1.19 and later, unchanged since) step for step: the same comparisons, the same
swaps, the same pseudo-random pattern breaking. Only the ordering it produces matters, but
matching it exactly is what makes the solver pick the same NodeClaims as upstream.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from itertools import pairwise
from typing import Any, Generic, TypeVar

T = TypeVar("T")

Less = Callable[[int, int], bool]
"""``less(i, j)``: does the element now at index ``i`` sort before the one at ``j``?"""
Swap = Callable[[int, int], None]
"""``swap(i, j)``: exchange the elements at ``i`` and ``j``."""

UNKNOWN_HINT = 0
INCREASING_HINT = 1
DECREASING_HINT = 2

_INSERTION_MAX = 12  # ranges this short are insertion-sorted (stable)
_NINTHER_MIN = 50  # from this length the pivot is a median of medians, and shifting is allowed
_SHIFT_STEPS = 5  # out-of-order pairs the "nearly sorted" pass fixes before giving up
_MAX_SWAPS = 12  # pivot sampling swaps meaning "strictly decreasing"
_MASK64 = (1 << 64) - 1


def go_sort_slice(n: int, less: Less, swap: Swap) -> None:
    """Sort indexes ``0..n`` exactly as Go's ``sort.Slice`` does with ``less``: same result
    for equal elements too (the algorithm is deterministic, only not stable)."""
    _pdqsort(less, swap, 0, n, n.bit_length())


def sort_slice(items: list[T], key: Callable[[T], Any]) -> None:
    """``sort.Slice(items, func(i, j) bool { return key(items[i]) < key(items[j]) })``, in
    place. Keys are computed once; they must support ``<``."""
    keys = [key(x) for x in items]

    def less(i: int, j: int) -> bool:
        return bool(keys[i] < keys[j])

    def swap(i: int, j: int) -> None:
        items[i], items[j] = items[j], items[i]
        keys[i], keys[j] = keys[j], keys[i]

    go_sort_slice(len(items), less, swap)


def stable_after_one_change(n: int, less: Less, changed: int | None = None) -> bool | None:
    """For a slice of ``n`` that was sorted before one element's key grew or one element
    was appended, and is now out of order (``less`` reads it, nothing is swapped): does Go's
    ``sort.Slice`` leave it as a stable sort would? None when it does not say (the caller
    must run :func:`go_sort_slice`).

    Up to 12 elements Go insertion-sorts, which is stable. From 50, when sampling the pivot
    sees no descending pair, Go first tries to finish with at most five adjacent swaps and
    shifts; one misplaced element is always fixed that way, shifted past the elements it
    belongs before or after without reordering anything else, which is the stable order.
    Between the two, or when the sample sees the misplaced element out of order, Go
    partitions, and equal elements move around.

    ``changed``, the misplaced element's index, saves the comparisons when the pivot sample
    does not include it: everything else is in order, so the sample then ascends."""
    if n <= _INSERTION_MAX:
        return True
    if n < _NINTHER_MIN:
        return None
    if changed is not None:
        quarter = n // 4
        if all(abs(changed - quarter * m) > 1 for m in (1, 2, 3)):
            return True
    _, hint = choose_pivot(less, 0, n)
    return True if hint == INCREASING_HINT else None


def _pdqsort(less: Less, swap: Swap, a: int, b: int, limit: int) -> None:
    balanced = True  # was the last partition reasonably even?
    partitioned = True  # did the last partition find the range already split?
    while True:
        length = b - a
        if length <= _INSERTION_MAX:
            _insertion_sort(less, swap, a, b)
            return
        if limit == 0:
            _heap_sort(less, swap, a, b)
            return
        if not balanced:
            _break_patterns(swap, a, b)
            limit -= 1
        pivot, hint = choose_pivot(less, a, b)
        if hint == DECREASING_HINT:
            _reverse(swap, a, b)
            pivot = (b - 1) - (pivot - a)
            hint = INCREASING_HINT
        if (
            balanced
            and partitioned
            and hint == INCREASING_HINT
            and _partial_insertion_sort(less, swap, a, b)
        ):
            return
        if a > 0 and not less(a - 1, pivot):
            # Everything here is >= the element left of the range, which is >= the pivot:
            # split off the run equal to the pivot and carry on with what is greater.
            a = _partition_equal(less, swap, a, b, pivot)
            continue
        mid, partitioned = _partition(less, swap, a, b, pivot)
        left, right = mid - a, b - mid
        threshold = length // 8
        if left < right:
            balanced = left >= threshold
            _pdqsort(less, swap, a, mid, limit)
            a = mid + 1
        else:
            balanced = right >= threshold
            _pdqsort(less, swap, mid + 1, b, limit)
            b = mid


def _insertion_sort(less: Less, swap: Swap, a: int, b: int) -> None:
    for i in range(a + 1, b):
        j = i
        while j > a and less(j, j - 1):
            swap(j, j - 1)
            j -= 1


def _sift_down(less: Less, swap: Swap, lo: int, hi: int, first: int) -> None:
    root = lo
    while True:
        child = 2 * root + 1
        if child >= hi:
            return
        if child + 1 < hi and less(first + child, first + child + 1):
            child += 1
        if not less(first + root, first + child):
            return
        swap(first + root, first + child)
        root = child


def _heap_sort(less: Less, swap: Swap, a: int, b: int) -> None:
    hi = b - a
    for i in range((hi - 1) // 2, -1, -1):
        _sift_down(less, swap, i, hi, a)
    for i in range(hi - 1, -1, -1):
        swap(a, a + i)
        _sift_down(less, swap, 0, i, a)


def _partition(less: Less, swap: Swap, a: int, b: int, pivot: int) -> tuple[int, bool]:
    """Hoare partition around the pivot (moved to ``a``): smaller ones left of the returned
    index, the rest right of it. Also says whether nothing had to move."""
    swap(a, pivot)
    i, j = a + 1, b - 1
    while i <= j and less(i, a):
        i += 1
    while i <= j and not less(j, a):
        j -= 1
    if i > j:
        swap(j, a)
        return j, True
    swap(i, j)
    i += 1
    j -= 1
    while True:
        while i <= j and less(i, a):
            i += 1
        while i <= j and not less(j, a):
            j -= 1
        if i > j:
            break
        swap(i, j)
        i += 1
        j -= 1
    swap(j, a)
    return j, False


def _partition_equal(less: Less, swap: Swap, a: int, b: int, pivot: int) -> int:
    """Elements equal to the pivot first, then the greater ones; returns where those start.
    The range holds nothing smaller than the pivot."""
    swap(a, pivot)
    i, j = a + 1, b - 1
    while True:
        while i <= j and not less(a, i):
            i += 1
        while i <= j and less(a, j):
            j -= 1
        if i > j:
            return i
        swap(i, j)
        i += 1
        j -= 1


def _partial_insertion_sort(less: Less, swap: Swap, a: int, b: int) -> bool:
    """Fix up to five out-of-order neighbours by shifting; True if the range ends sorted.
    Short ranges are only checked, never shifted."""
    i = a + 1
    for _ in range(_SHIFT_STEPS):
        while i < b and not less(i, i - 1):
            i += 1
        if i == b:
            return True
        if b - a < _NINTHER_MIN:
            return False
        swap(i, i - 1)
        if i - a >= 2:
            # Go bounds this walk by index 1, not by ``a``: kept, though the element left of
            # the range always stops it first.
            j = i - 1
            while j >= 1 and less(j, j - 1):
                swap(j, j - 1)
                j -= 1
        if b - i >= 2:
            j = i + 1
            while j < b and less(j, j - 1):
                swap(j, j - 1)
                j += 1
    return False


def _break_patterns(swap: Swap, a: int, b: int) -> None:
    """After an uneven partition, swap three middle elements with pseudo-random partners
    (a 64-bit xorshift seeded with the length, as Go does)."""
    length = b - a
    if length < 8:
        return
    state = length
    modulus = 1 << length.bit_length()
    middle = a + (length // 4) * 2
    for idx in range(middle - 1, middle + 2):
        state ^= (state << 13) & _MASK64
        state ^= state >> 7
        state ^= (state << 17) & _MASK64
        other = state & (modulus - 1)
        if other >= length:
            other -= length
        swap(idx, a + other)


def choose_pivot(less: Less, a: int, b: int) -> tuple[int, int]:
    """Go's pivot choice for ``[a, b)``: the element at a quarter-way point below 8, a median
    of three up to 50, a median of three medians of neighbours from 50. The hint says
    whether the sampled comparisons all ran ascending, all descending, or neither."""
    length = b - a
    swaps = [0]
    i = a + length // 4 * 1
    j = a + length // 4 * 2
    k = a + length // 4 * 3
    if length >= 8:
        if length >= _NINTHER_MIN:
            i = _median(less, i - 1, i, i + 1, swaps)
            j = _median(less, j - 1, j, j + 1, swaps)
            k = _median(less, k - 1, k, k + 1, swaps)
        j = _median(less, i, j, k, swaps)
    if swaps[0] == 0:
        return j, INCREASING_HINT
    if swaps[0] == _MAX_SWAPS:
        return j, DECREASING_HINT
    return j, UNKNOWN_HINT


def _order2(less: Less, x: int, y: int, swaps: list[int]) -> tuple[int, int]:
    if less(y, x):
        swaps[0] += 1
        return y, x
    return x, y


def _median(less: Less, x: int, y: int, z: int, swaps: list[int]) -> int:
    x, y = _order2(less, x, y, swaps)
    y, z = _order2(less, y, z, swaps)
    x, y = _order2(less, x, y, swaps)
    return y


def _reverse(swap: Swap, a: int, b: int) -> None:
    i, j = a, b - 1
    while i < j:
        swap(i, j)
        i += 1
        j -= 1


class Queue(Generic[T]):
    """Pods in upstream's ``NewQueue`` order, popped until a full pass makes no progress."""

    __slots__ = ("_items", "_key", "_last_len")

    def __init__(
        self,
        items: Iterable[T],
        sort_key: Callable[[T], Any],
        identity: Callable[[T], str],
    ) -> None:
        """``sort_key`` is upstream's comparison as a key: ``a`` goes first when
        ``sort_key(a) < sort_key(b)``. When every key differs any sort gives the one order
        there is; with equal keys (pods alike down to the uid) Go's order is reproduced."""
        given = list(items)
        keys = [sort_key(x) for x in given]
        ranked = sorted(range(len(given)), key=keys.__getitem__)
        if any(keys[x] == keys[y] for x, y in pairwise(ranked)):
            sort_slice(given, sort_key)
        else:
            given = [given[x] for x in ranked]
        self._items: deque[T] = deque(given)
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
