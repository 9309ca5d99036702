"""The provisioning batcher: gather pod arrivals into one scheduling pass.

Launching for each pod as it arrives would create one small node per pod; waiting a little
lets a burst of pods (a Deployment scaling out) share well-packed nodes. Upstream's rule
(spec operator-and-lifecycle §3.1):

* ``trigger(key)``: a key already seen in this window does nothing; a new key drops a
  token into a one-slot channel (many triggers coalesce into one token).
* The window opens when the provisioner picks up a token. It closes ``idle`` seconds after
  the last *new* key (1 s, ``BATCH_IDLE_DURATION``) and never later than ``max`` seconds
  after it opened (10 s, ``BATCH_MAX_DURATION``). The seen-set is cleared when it closes.
* A token dropped while the provisioner is busy opens the next window as soon as it looks.

Upstream blocks a goroutine on timers; here nothing blocks. :meth:`Batcher.wait` answers
"is the window closed yet?" from the clock and, if not, how long until it might be, so the
provisioner singleton returns ``Result(requeue_after=...)``. On a virtual clock that makes
the window exact to the nanosecond; on a wall clock it behaves like upstream's timers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable

from attrs import frozen

from karpenter_core.runtime.clock import Clock

__all__ = ["Batcher", "WaitResult"]

_EPSILON = 1e-6


@frozen
class WaitResult:
    """``ready``: the window closed, schedule now. Otherwise ``retry_after`` seconds until
    the window may close, or None when no window is open (wait for a trigger)."""

    ready: bool
    retry_after: float | None = None


class Batcher:
    """Batching windows on ``clock`` (thread-safe)."""

    def __init__(
        self,
        clock: Clock,
        idle_duration: float = 1.0,
        max_duration: float = 10.0,
        on_token: Callable[[], None] | None = None,
    ) -> None:
        if idle_duration <= 0 or max_duration <= 0:
            raise ValueError("batch idle and max durations must be positive")
        self.clock = clock
        self.idle_duration = idle_duration
        self.max_duration = max_duration
        self.on_token = on_token
        """Called (outside the lock) when a token arrives while no window is open, so the
        provisioner can be woken instead of polling."""
        self._lock = threading.Lock()
        self._seen: set[Hashable] = set()
        self._token = False
        self._last_token: float | None = None  # monotonic time of the newest token
        self._window_start: float | None = None
        self._window_last: float = 0.0  # newest token time counted in the open window

    def trigger(self, key: Hashable) -> None:
        """Note that ``key`` (a pod or node UID) wants provisioning."""
        with self._lock:
            if key in self._seen:
                return
            self._seen.add(key)
            self._token = True
            self._last_token = self.clock.monotonic()
            wake = self._window_start is None
        if wake and self.on_token is not None:
            self.on_token()

    @property
    def window_open(self) -> bool:
        with self._lock:
            return self._window_start is not None

    def wait(self) -> WaitResult:
        """Advance the window state to now (see the module docstring)."""
        now = self.clock.monotonic()
        with self._lock:
            if self._window_start is None:
                if not self._token:
                    self._seen.clear()
                    return WaitResult(False, None)
                self._token = False
                self._window_start = now
                self._window_last = now
            elif self._token:
                self._token = False
                last = now if self._last_token is None else self._last_token
                self._window_last = max(self._window_last, last)
            close_at = min(
                self._window_last + self.idle_duration, self._window_start + self.max_duration
            )
            # Within a microsecond counts as closed: float rounding of a timer must not leave
            # a sub-nanosecond requeue that a virtual clock cannot advance past.
            if now >= close_at - _EPSILON:
                self._window_start = None
                self._seen.clear()
                return WaitResult(True)
            return WaitResult(False, close_at - now)
