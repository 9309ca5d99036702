"""A rate-limited, de-duplicating work queue with client-go's semantics.

* An item is queued at most once: adding an item that is already waiting is a no-op.
* ``get`` hands an item out and marks it *processing*; adding it again meanwhile marks it
  *dirty* only, and ``done`` puts it back on the queue. So an item is never processed by
  two workers at once, and a change seen during processing is never lost.
* ``add_after`` delays an add (keeping the earliest deadline when asked twice);
  ``add_rate_limited`` delays by the rate limiter's verdict; ``forget`` resets an item's
  failure history once it succeeds.

Delays run on the :class:`~karpenter_core.runtime.clock.Clock`, so the same queue works in
real time and in a simulation.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

from karpenter_core.runtime.clock import Clock, TimerHandle

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "WorkQueue",
    "default_controller_rate_limiter",
]

T = TypeVar("T", bound=Hashable)


class RateLimiter(Protocol):
    """Decides how long an item waits before its next retry."""

    def when(self, item: Hashable) -> float:
        """Seconds to wait before retrying ``item`` (and count this as a failure)."""
        ...

    def forget(self, item: Hashable) -> None:
        """Stop tracking ``item`` (it succeeded)."""
        ...

    def num_requeues(self, item: Hashable) -> int:
        """How many failures ``item`` has had since it was last forgotten."""
        ...


class ItemExponentialFailureRateLimiter:
    """Per-item exponential back-off: ``base * 2**failures``, capped at ``max_delay``."""

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        if base_delay <= 0 or max_delay < base_delay:
            raise ValueError(
                f"need 0 < base_delay <= max_delay, got base_delay={base_delay}, max_delay={max_delay}"
            )
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._failures: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    def when(self, item: Hashable) -> float:
        with self._lock:
            exp = self._failures.get(item, 0)
            self._failures[item] = exp + 1
        if exp >= 1024:  # 2**exp would overflow a float long before this
            return self.max_delay
        return min(self.base_delay * math.pow(2, exp), self.max_delay)

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        with self._lock:
            return self._failures.get(item, 0)


class BucketRateLimiter:
    """An overall token bucket (``qps`` refill, ``burst`` size) shared by all items.

    Each retry reserves a token; when the bucket is empty the retry waits until a token
    would be available, like ``golang.org/x/time/rate`` reservations.
    """

    def __init__(self, clock: Clock, qps: float = 10.0, burst: int = 100) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"need qps > 0 and burst >= 1, got qps={qps}, burst={burst}")
        self.clock = clock
        self.qps = qps
        self.burst = burst
        self._tokens = float(burst)
        self._last = clock.monotonic()
        self._lock = threading.Lock()

    def when(self, item: Hashable) -> float:
        with self._lock:
            now = self.clock.monotonic()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def forget(self, item: Hashable) -> None:
        return None

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """The longest delay any of the given limiters asks for."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        return max(limiter.when(item) for limiter in self.limiters)

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(clock: Clock) -> MaxOfRateLimiter:
    """controller-runtime's default: per-item 5 ms..1000 s back-off, and 10 qps / 100 burst overall."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0), BucketRateLimiter(clock, 10.0, 100)
    )


class ShutDown(Exception):
    """Raised by :meth:`WorkQueue.get` when the queue is shut down and drained."""


class WorkQueue(Generic[T]):
    """De-duplicating FIFO with delayed and rate-limited adds (see the module docstring)."""

    def __init__(
        self,
        clock: Clock,
        rate_limiter: RateLimiter | None = None,
        *,
        name: str = "",
        on_ready: Callable[[], None] | None = None,
    ) -> None:
        self.clock = clock
        self.name = name
        self.rate_limiter: RateLimiter = rate_limiter or default_controller_rate_limiter(clock)
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._waiting: dict[T, TimerHandle] = {}
        self._cond = threading.Condition()
        self._shutting_down = False
        self._on_ready = on_ready

    # -- adding
    def add(self, item: T) -> None:
        """Queue ``item`` now (a no-op when it is already queued)."""
        notify = False
        with self._cond:
            if self._shutting_down or item in self._dirty:
                return
            self._dirty.add(item)
            if item not in self._processing:
                self._queue.append(item)
                notify = True
                self._cond.notify()
        if notify and self._on_ready is not None:
            self._on_ready()

    def add_after(self, item: T, delay: float) -> None:
        """Queue ``item`` after ``delay`` seconds; an earlier pending deadline wins."""
        if delay <= 0:
            self.add(item)
            return
        with self._cond:
            if self._shutting_down:
                return
            when = self.clock.monotonic() + delay
            pending = self._waiting.get(item)
            if pending is not None and not pending.cancelled and not pending.fired:
                if pending.when <= when:
                    return
                pending.cancel()
            handle = self.clock.call_later(delay, lambda: self._fire(item))
            self._waiting[item] = handle

    def _fire(self, item: T) -> None:
        with self._cond:
            handle = self._waiting.get(item)
            if handle is not None and handle.fired:
                del self._waiting[item]
        self.add(item)

    def add_rate_limited(self, item: T) -> None:
        """Queue ``item`` after the delay the rate limiter decides (counts as a failure)."""
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Reset ``item``'s failure history (call after it was processed successfully)."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)

    # -- taking
    def get(self, timeout: float | None = None) -> T:
        """Take the next item, waiting up to ``timeout`` seconds (None = until one comes).

        Raises :class:`ShutDown` once the queue is shut down and empty, and ``TimeoutError``
        if the timeout passes first.
        """
        with self._cond:
            while not self._queue:
                if self._shutting_down:
                    raise ShutDown(self.name)
                if not self._cond.wait(timeout) and timeout is not None and not self._queue:
                    if self._shutting_down:
                        raise ShutDown(self.name)
                    raise TimeoutError(f"work queue {self.name!r}: nothing to do within {timeout}s")
            return self._take()

    def get_nowait(self) -> T | None:
        """Take the next item if one is ready, else None (for single-threaded loops)."""
        with self._cond:
            if not self._queue:
                return None
            return self._take()

    def _take(self) -> T:
        item = self._queue.popleft()
        self._processing.add(item)
        self._dirty.discard(item)
        return item

    def done(self, item: T) -> None:
        """Mark ``item`` finished; if it was re-added meanwhile, queue it again."""
        notify = False
        with self._cond:
            self._processing.discard(item)
            if item in self._dirty:
                self._queue.append(item)
                notify = True
                self._cond.notify()
            elif self._shutting_down and not self._processing:
                self._cond.notify_all()
        if notify and self._on_ready is not None:
            self._on_ready()

    # -- state
    def has_ready(self) -> bool:
        """Whether an item is ready to be taken (a lock-free peek for schedulers)."""
        return bool(self._queue)

    def __len__(self) -> int:
        """Items ready to be taken (not counting delayed or in-flight ones)."""
        with self._cond:
            return len(self._queue)

    def waiting(self) -> int:
        """Items scheduled for a later add."""
        with self._cond:
            return sum(1 for h in self._waiting.values() if not h.cancelled and not h.fired)

    def processing(self) -> int:
        with self._cond:
            return len(self._processing)

    def shut_down(self) -> None:
        """Stop accepting items; ``get`` raises :class:`ShutDown` once the queue is empty."""
        with self._cond:
            self._shutting_down = True
            for handle in self._waiting.values():
                handle.cancel()
            self._waiting.clear()
            self._cond.notify_all()

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down
