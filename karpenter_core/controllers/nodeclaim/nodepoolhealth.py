"""Per-NodePool memory of recent node registrations, behind ``NodeRegistrationHealthy``.

Each NodePool (by UID) keeps its last four registration outcomes. Two or more failures
among them make the pool Unhealthy; otherwise, with any outcome recorded, it is Healthy.
Registration and liveness first *dry-run* the outcome they are about to record, so the
NodePool condition flips on the same outcome that changes the verdict, then record it.

One instance is shared by every controller of the process (``ctx.extras``), like
upstream's ``nodepoolhealth.State``; the NodePool registration-health controller resets a
pool's record when the pool or its NodeClass changes.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from karpenter_core.runtime.context import ControllerContext

__all__ = [
    "BUFFER_SIZE",
    "NodePoolHealth",
    "Status",
    "Tracker",
    "shared",
]

BUFFER_SIZE = 4
THRESHOLD_FALSE = 0.5


class Status(Enum):
    UNKNOWN = "Unknown"
    HEALTHY = "Healthy"
    UNHEALTHY = "Unhealthy"


class Tracker:
    """A ring of the last ``BUFFER_SIZE`` outcomes (True = registered)."""

    def __init__(self, items: Iterable[bool] = ()) -> None:
        self._items: deque[bool] = deque(items, maxlen=BUFFER_SIZE)

    def update(self, success: bool) -> None:
        self._items.append(success)

    def items(self) -> tuple[bool, ...]:
        return tuple(self._items)

    def status(self) -> Status:
        if not self._items:
            return Status.UNKNOWN
        failures = sum(1 for ok in self._items if not ok)
        if failures / BUFFER_SIZE >= THRESHOLD_FALSE:
            return Status.UNHEALTHY
        return Status.HEALTHY

    def set_status(self, status: Status) -> None:
        """Seed the record so it reports ``status`` (used when the condition is restored)."""
        self._items.clear()
        if status is Status.HEALTHY:
            self._items.append(True)
        elif status is Status.UNHEALTHY:
            self._items.extend([False] * int(BUFFER_SIZE * THRESHOLD_FALSE))


class NodePoolHealth:
    """Trackers by NodePool UID, safe to share between worker threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._trackers: dict[str, Tracker] = {}

    def _tracker(self, uid: str) -> Tracker:
        tracker = self._trackers.get(uid)
        if tracker is None:
            tracker = self._trackers[uid] = Tracker()
        return tracker

    def status(self, uid: str) -> Status:
        with self._lock:
            return self._tracker(uid).status()

    def update(self, uid: str, success: bool) -> None:
        with self._lock:
            self._tracker(uid).update(success)

    def set_status(self, uid: str, status: Status) -> None:
        with self._lock:
            self._tracker(uid).set_status(status)

    def dry_run(self, uid: str, success: bool) -> Status:
        """The status the pool would have after recording ``success`` (nothing is recorded)."""
        with self._lock:
            copy = Tracker(self._tracker(uid).items())
        copy.update(success)
        return copy.status()

    def reset(self, uid: str) -> None:
        with self._lock:
            self._trackers.pop(uid, None)


def shared(ctx: ControllerContext) -> NodePoolHealth:
    """The process-wide NodePoolHealth (``ctx.nodepool_health``), created on first use."""
    if ctx.nodepool_health is None:
        ctx.nodepool_health = NodePoolHealth()
    return ctx.nodepool_health
