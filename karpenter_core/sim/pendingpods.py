"""The simulated kube-scheduler's pending pods, kept in queue order per pod class.

A pass takes the pending pods in queue order (priority descending, creation time, then
namespace/name) and, once a class fits nowhere, passes over that class's pods whose
``Unschedulable`` condition is already written (they would fail again the same way). With
150,000 pods pending and a pass after every node that becomes ready, sorting and walking
every pending pod per pass was most of a large simulation's time although nearly all of
them were passed over. :class:`ClassQueue` holds one class's pending pods in queue order
and, separately, the ones still to be marked, so a pass can merge the classes' heads and
jump straight to the next pod that needs any work: its cost is the pods it tries, not the
pods that wait.

Membership follows the pod events between passes (:meth:`ClassQueue.add`,
:meth:`ClassQueue.remove`); nothing changes during a pass (its writes come back as events
before the next one), so positions found by a pass stay valid for it.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Hashable
from typing import Any, Protocol

__all__ = ["ClassQueue", "QueuedPod", "SortKey", "class_of", "marked_reason"]

SortKey = tuple[int, float, str]
"""A pod's place in the queue: (-priority, creation time, namespace/name); unique per pod."""


class QueuedPod(Protocol):
    """What a queue holds: a pod's queue position and whether its condition is written."""

    @property
    def sort_key(self) -> SortKey: ...

    @property
    def marked(self) -> str: ...


def marked_reason(conditions: Any) -> str:
    """The reason of the pod's ``PodScheduled=False`` condition ("" when it has none)."""
    for c in conditions:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return str(c.get("reason") or "")
    return ""


class ClassQueue:
    """One pod class's pending pods: all of them in queue order, and the ones not yet
    marked with ``reason``. Removed pods leave stale entries behind, skipped on reading
    and dropped when they outnumber a fraction of the live ones; added pods are appended,
    or, when they belong earlier, held apart and put in place before the next read."""

    __slots__ = (
        "_items",
        "_late",
        "_listed",
        "_members",
        "_reason",
        "_stale",
        "_unmarked",
        "_unmarked_late",
    )

    def __init__(self, reason: str) -> None:
        self._reason = reason
        self._members: dict[SortKey, QueuedPod] = {}
        # both lists may hold keys of pods removed (or, in the unmarked one, marked) since:
        # readers skip them, and a compaction drops them once they are many
        self._items: list[SortKey] = []
        self._unmarked: list[SortKey] = []
        self._listed: set[SortKey] = set()
        # keys added out of order, put in place by the next read (_prepare): sorting the
        # whole list for each was most of a pass when tens of thousands of pods wait and
        # recreated pods keep arriving between passes (names in one creation second are
        # not in order)
        self._late: list[SortKey] = []
        self._unmarked_late: list[SortKey] = []
        self._stale = 0

    def __len__(self) -> int:
        return len(self._members)

    def add(self, pod: QueuedPod) -> None:
        key = pod.sort_key
        self._members[key] = pod  # a new version of a pod takes its old one's place
        if key not in self._listed:
            self._listed.add(key)
            if self._items and key < self._items[-1]:
                self._late.append(key)
            else:
                self._items.append(key)
        if pod.marked != self._reason:
            if self._unmarked and key < self._unmarked[-1]:
                self._unmarked_late.append(key)
            else:
                self._unmarked.append(key)

    def remove(self, pod: QueuedPod) -> None:
        key = pod.sort_key
        if self._members.get(key) is not pod:
            return
        del self._members[key]
        self._stale += 1
        if self._stale > 32 + len(self._members) // 4:
            self._compact()

    def _compact(self) -> None:
        members, reason = self._members, self._reason
        self._prepare()
        self._items = [k for k in self._items if k in members]
        self._listed = set(self._items)
        unmarked = (k for k in self._unmarked if k in members and members[k].marked != reason)
        self._unmarked = list(dict.fromkeys(unmarked))
        self._stale = 0

    def _prepare(self) -> None:
        if self._late:
            _merge(self._items, self._late)
            self._late = []
        if self._unmarked_late:
            _merge(self._unmarked, self._unmarked_late)
            self._unmarked_late = []

    def at(self, key: SortKey) -> QueuedPod:
        """The pod at position ``key`` (one :meth:`first` or an ``after`` returned)."""
        return self._members[key]

    def first(self) -> QueuedPod | None:
        """The first pod in queue order."""
        return self._next(self._items, None)

    def after(self, key: SortKey) -> QueuedPod | None:
        """The first pod after position ``key``."""
        return self._next(self._items, key)

    def unmarked_after(self, key: SortKey | None) -> QueuedPod | None:
        """The first pod after position ``key`` (from the start for None) whose condition
        does not yet carry the queue's reason."""
        return self._next(self._unmarked, key)

    def _next(self, keys: list[SortKey], after: SortKey | None) -> QueuedPod | None:
        self._prepare()
        i = 0 if after is None else bisect_right(keys, after)
        members = self._members
        # the unmarked list may hold a key whose pod was replaced by a marked version
        unmarked = keys is self._unmarked
        skip = self._reason if unmarked else None
        start = i
        found = None
        while i < len(keys):
            pod = members.get(keys[i])
            if pod is not None and pod.marked != skip:
                found = pod
                break
            i += 1
        if i > start:
            # the keys passed over are of pods gone (or, in the unmarked list, marked)
            # since: drop them, or every pass walks them again until a compaction (a pass
            # per node in a scale-out, over thousands of pods bound or marked meanwhile);
            # a pod added again under its key is appended anew by add
            if not unmarked:
                passed = keys[start:i]
                self._listed.difference_update(passed)
                self._stale = max(0, self._stale - len(passed))
            del keys[start:i]
        return found


def _merge(keys: list[SortKey], late: list[SortKey]) -> None:
    """Put ``late`` into the sorted ``keys``: one by one where they are few (a search and
    a move of pointers each), else by sorting the lot (a merge of two runs)."""
    if len(late) <= 16 + len(keys) // 512:
        for key in late:
            insort(keys, key)
    else:
        keys.extend(late)
        keys.sort()


def class_of(queues: dict[Hashable, ClassQueue], key: Hashable, reason: str) -> ClassQueue:
    """The queue for ``key``, created empty on first use."""
    queue = queues.get(key)
    if queue is None:
        queue = queues[key] = ClassQueue(reason)
    return queue
