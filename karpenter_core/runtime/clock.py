"""Clocks: the wall clock for ``serve``, a virtual clock for ``simulate`` and tests.

Every controller reads time only through a :class:`Clock`, so the same code runs against
real time or against a :class:`VirtualClock` that jumps from timer to timer. A simulated
hour of 10-second reconciles is then a few hundred callbacks, not an hour.

``now()`` is wall time (an aware UTC datetime, for timestamps written to objects);
``monotonic()`` is seconds on a clock that never goes back (for durations and timers).

A virtual clock can also *charge compute*: inside :meth:`VirtualClock.charging` time
moves with a meter (by default this process's CPU time), so code that checks
``clock.now()`` against a deadline while it computes sees the deadline come as it would on
a real controller of this speed (see :class:`ComputeCharge`).
"""

from __future__ import annotations

import heapq
import itertools
import math
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

__all__ = [
    "DEFAULT_METER_REFRESH",
    "ChargedSpan",
    "Clock",
    "CoarseMeter",
    "ComputeCharge",
    "ManualMeter",
    "TimerHandle",
    "VirtualClock",
    "WallClock",
    "format_time",
    "parse_time",
]


def format_time(t: datetime) -> str:
    """RFC 3339 with second precision, as Kubernetes writes ``metav1.Time``."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(t: datetime) -> str:
    """RFC 3339 with microseconds, as Kubernetes writes ``metav1.MicroTime``."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: str) -> datetime:
    """Parse a Kubernetes timestamp (``2024-01-02T03:04:05Z``, fractional seconds allowed)."""
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not an RFC 3339 timestamp: {value!r}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


class TimerHandle:
    """A scheduled callback; ``cancel()`` stops it from running if it has not run yet."""

    __slots__ = ("_cancelled", "callback", "fired", "when")

    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self._cancelled = False
        self.fired = False

    def cancel(self) -> None:
        self._cancelled = True

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def __repr__(self) -> str:
        state = "cancelled" if self._cancelled else "fired" if self.fired else "pending"
        return f"TimerHandle(when={self.when:.6f}, {state})"


@runtime_checkable
class Clock(Protocol):
    """The time source every controller uses."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards."""
        ...

    def sleep(self, seconds: float) -> None:
        """Block (wall) or move time forward (virtual) by ``seconds``."""
        ...

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback`` once, ``delay`` seconds from now."""
        ...

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback`` once when ``monotonic()`` reaches ``when``."""
        ...

    def after(self, delay: float) -> threading.Event:
        """An event that is set ``delay`` seconds from now (Go's ``clock.After``)."""
        ...


def _after(clock: Clock, delay: float) -> threading.Event:
    event = threading.Event()
    if delay <= 0:
        event.set()
    else:
        clock.call_later(delay, event.set)
    return event


class WallClock:
    """Real time. Timers run on one daemon thread, in due order."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, TimerHandle]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        return self.call_at(time.monotonic() + max(0.0, delay), callback)

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        handle = TimerHandle(when, callback)
        with self._cond:
            heapq.heappush(self._heap, (when, next(self._seq), handle))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="wallclock-timers", daemon=True
                )
                self._thread.start()
            self._cond.notify()
        return handle

    def after(self, delay: float) -> threading.Event:
        return _after(self, delay)

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if not self._heap:
                        self._cond.wait()
                        continue
                    when, _, handle = self._heap[0]
                    wait = when - time.monotonic()
                    if wait <= 0:
                        heapq.heappop(self._heap)
                        break
                    self._cond.wait(wait)
            if handle.cancelled:
                continue
            handle.fired = True
            try:
                handle.callback()
            except Exception:  # a timer must never kill the timer thread
                import logging

                logging.getLogger(__name__).exception("timer callback failed")


_DEFAULT_START = datetime(2026, 1, 1, tzinfo=UTC)
_NS = 1_000_000_000


class VirtualClock:
    """Time that moves only when told to; timers fire in (due time, insertion) order.

    Time is kept in integer nanoseconds so that repeated additions never drift and the
    same schedule always produces the same order. ``sleep`` moves time forward without
    firing timers (a callback that sleeps must not re-enter the loop); timers that became
    due meanwhile fire on the next ``step``/``advance``, at the then-current time.
    Thread-safe, but meant to be driven from one thread.

    Inside a :meth:`charging` block the clock also moves with a compute meter: every
    reading (and every timer scheduled) is "now plus the compute spent in the block so
    far", and the block's total is added for good when it ends. Timers that fall due
    within the block do not interrupt it; they fire afterwards, at the block's end time.
    """

    def __init__(self, start: datetime | None = None) -> None:
        start = start or _DEFAULT_START
        if start.tzinfo is None:
            raise ValueError("VirtualClock start must be timezone-aware (use UTC)")
        self._start = start.astimezone(UTC)
        self._now_ns = 0
        self._heap: list[tuple[int, int, TimerHandle]] = []
        self._seq = itertools.count()
        self._lock = threading.RLock()
        # the running charged block: its meter, the meter's reading when it began, its scale
        self._meter: Callable[[], float] | None = None
        self._meter_start = 0.0
        self._meter_scale = 1.0

    # -- reading time
    def now(self) -> datetime:
        with self._lock:
            return self._start + timedelta(microseconds=self._current_ns() // 1000)

    def monotonic(self) -> float:
        with self._lock:
            return self._current_ns() / _NS

    def _running_ns(self) -> int:
        """Compute charged so far by the running :meth:`charging` block (0 outside one)."""
        if self._meter is None:
            return 0
        return max(0, round((self._meter() - self._meter_start) * self._meter_scale * _NS))

    def _current_ns(self) -> int:
        return self._now_ns + self._running_ns()

    # -- charged compute
    @property
    def charging_now(self) -> bool:
        """Whether a :meth:`charging` block is running."""
        with self._lock:
            return self._meter is not None

    def charging(self, meter: Callable[[], float], scale: float = 1.0) -> _Charging:
        """Charge the compute ``meter`` measures during the block to this clock.

        ``meter`` returns seconds of compute (any origin, never decreasing); time moves
        by ``scale`` times what it measured. Readings inside the block include the compute
        spent so far; when the block ends its total stays added and is reported in the
        yielded :class:`ChargedSpan`. A block inside a running one charges nothing of its
        own (the outer block already measures that compute) and reports 0.
        """
        _check_scale(scale)
        return _Charging(self, meter, scale)

    def _begin_charge(self, meter: Callable[[], float], scale: float) -> bool:
        """Start a charged block; False when one is running already (this one is inner)."""
        with self._lock:
            if self._meter is not None:
                return False
            self._meter, self._meter_start, self._meter_scale = meter, meter(), scale
            return True

    def _end_charge(self) -> int:
        """End the running charged block, keeping its charge; returns it."""
        with self._lock:
            spent = self._running_ns()
            self._now_ns += spent
            self._meter = None
            return spent

    @property
    def start(self) -> datetime:
        return self._start

    # -- scheduling
    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            with self._lock:
                self._now_ns += _delay_ns(seconds)

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        with self._lock:
            return self._push(self._current_ns() + _delay_ns(delay), callback)

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        with self._lock:
            now_ns = self._current_ns()
            when_ns = _to_ns(when)
            if when_ns <= now_ns:
                # still ahead as a float (less than half a nanosecond): the next instant
                when_ns = now_ns + 1 if when > now_ns / _NS else now_ns
            return self._push(when_ns, callback)

    def after(self, delay: float) -> threading.Event:
        return _after(self, delay)

    def _push(self, when_ns: int, callback: Callable[[], None]) -> TimerHandle:
        handle = TimerHandle(when_ns / _NS, callback)
        heapq.heappush(self._heap, (when_ns, next(self._seq), handle))
        return handle

    # -- driving time
    def next_timer(self) -> float | None:
        """The monotonic time of the earliest pending timer, or None."""
        with self._lock:
            self._drop_cancelled()
            return self._heap[0][0] / _NS if self._heap else None

    def pending(self) -> int:
        """How many timers are waiting."""
        with self._lock:
            self._drop_cancelled()
            return sum(1 for _, _, h in self._heap if not h.cancelled)

    def step(self) -> bool:
        """Jump to the earliest pending timer and run it (and only it); False when none."""
        with self._lock:
            self._drop_cancelled()
            if not self._heap:
                return False
            when_ns, _, handle = heapq.heappop(self._heap)
            self._now_ns = max(self._now_ns, when_ns)
        handle.fired = True
        handle.callback()
        return True

    def advance(self, seconds: float) -> int:
        """Move time forward by ``seconds``, running every timer that falls due; returns how many ran."""
        if seconds < 0:
            raise ValueError(f"cannot advance a clock by a negative duration ({seconds}s)")
        with self._lock:
            target = self._now_ns + _to_ns(seconds)
        return self._run_until_ns(target)

    def run_until(self, t: datetime | float) -> int:
        """Run timers until time ``t`` (a datetime, or a monotonic reading); returns how many ran."""
        return self._run_until_ns(self._target_ns(t))

    def _target_ns(self, t: datetime | float) -> int:
        if isinstance(t, datetime):
            if t.tzinfo is None:
                raise ValueError("run_until needs a timezone-aware datetime")
            delta = t.astimezone(UTC) - self._start
            return (delta.days * 86_400 + delta.seconds) * _NS + delta.microseconds * 1000
        return _to_ns(t)

    def target_monotonic(self, t: datetime | float) -> float:
        """``t`` expressed on this clock's monotonic scale."""
        return self._target_ns(t) / _NS

    def _run_until_ns(self, target: int) -> int:
        ran = 0
        while True:
            with self._lock:
                self._drop_cancelled()
                if not self._heap or self._heap[0][0] > target:
                    self._now_ns = max(self._now_ns, target)
                    return ran
                when_ns, _, handle = heapq.heappop(self._heap)
                self._now_ns = max(self._now_ns, when_ns)
            handle.fired = True
            handle.callback()
            ran += 1

    def _drop_cancelled(self) -> None:
        while self._heap and self._heap[0][2].cancelled:
            heapq.heappop(self._heap)


def _to_ns(seconds: float) -> int:
    return round(seconds * _NS)


def _delay_ns(seconds: float) -> int:
    """A delay in whole nanoseconds; a positive one is at least one. A wait computed as a
    difference of float times can come out a few femtoseconds above zero (140.004 is not
    125.004 + 15.0 in binary): rounded to none, the timer fired at the same instant, the
    waiter found its wait not yet over and asked again, and virtual time never moved."""
    if seconds <= 0:
        return 0
    return max(1, round(seconds * _NS))


def _check_scale(scale: float) -> None:
    if not math.isfinite(scale) or scale <= 0:
        raise ValueError(f"a compute-time scale must be a positive number, got {scale!r}")


class _Charging:
    """The context manager :meth:`VirtualClock.charging` returns (a class rather than a
    generator: one is entered for every charged reconcile, hundreds of thousands in a large
    simulation)."""

    __slots__ = ("_clock", "_meter", "_outer", "_scale", "_span")

    def __init__(self, clock: VirtualClock, meter: Callable[[], float], scale: float) -> None:
        self._clock = clock
        self._meter = meter
        self._scale = scale
        self._span = ChargedSpan()
        self._outer = False

    def __enter__(self) -> ChargedSpan:
        self._outer = self._clock._begin_charge(self._meter, self._scale)
        return self._span

    def __exit__(self, *exc: object) -> None:
        if self._outer:
            self._span.nanoseconds = self._clock._end_charge()


class ChargedSpan:
    """What one :meth:`VirtualClock.charging` block charged, known once it has ended."""

    __slots__ = ("nanoseconds",)

    def __init__(self) -> None:
        self.nanoseconds = 0

    @property
    def seconds(self) -> float:
        return self.nanoseconds / _NS


class ManualMeter:
    """A compute meter that moves only when told to (:meth:`spend`): charged time that does
    not depend on the machine, for tests and for costs that come from a model rather than
    a measurement."""

    __slots__ = ("value",)

    def __init__(self, start: float = 0.0) -> None:
        self.value = start

    def __call__(self) -> float:
        return self.value

    def spend(self, seconds: float) -> None:
        """Record ``seconds`` of compute (not negative: a meter never goes back)."""
        if seconds < 0:
            raise ValueError(f"compute spent cannot be negative ({seconds}s)")
        self.value += seconds


DEFAULT_METER_REFRESH = 1e-3
"""Seconds of wall time a :class:`CoarseMeter` goes on from its last CPU-time read."""


class CoarseMeter:
    """A CPU-time meter read at most once per ``refresh`` seconds of wall time: between
    reads it goes on from the last one by the wall time since (on a core of its own a
    single-threaded process's CPU time moves with the wall clock). :func:`time.process_time`
    is a system call (1-2 µs); faithful time reads the meter at each charged reconcile's
    start and end and at every clock reading inside one, millions of times in a large
    simulation (a sixth of its scale-in), where the wall clock costs 80 ns. Readings never
    go back; each true read puts it right again."""

    __slots__ = ("_last", "_read", "_read_wall", "_refresh", "_source", "_wall")

    def __init__(
        self,
        source: Callable[[], float] = time.process_time,
        *,
        refresh: float = DEFAULT_METER_REFRESH,
        wall: Callable[[], float] = time.perf_counter,
    ) -> None:
        if refresh < 0:
            raise ValueError("refresh must not be negative")
        self._source = source
        self._refresh = refresh
        self._wall = wall
        self._read = source()
        self._read_wall = wall()
        self._last = self._read

    def __call__(self) -> float:
        wall = self._wall()
        since = wall - self._read_wall
        if 0.0 <= since < self._refresh:
            value = self._read + since
        else:
            value = self._read = self._source()
            self._read_wall = wall
        if value < self._last:
            return self._last
        self._last = value
        return value


class ComputeCharge:
    """Charge each reconcile's measured compute to the virtual clock ("faithful time").

    A :class:`~karpenter_core.runtime.manager.Manager` given one runs every reconcile in a
    :meth:`VirtualClock.charging` block and keeps what each controller was charged, so
    timeouts read from the clock while a controller computes (single-node consolidation's
    3 minutes, multi-node's 1 minute) and batching windows behave as on a real controller
    of this speed, ``scale`` times slower.

    The meter defaults to this process's CPU time (:func:`time.process_time`, read through
    a :class:`CoarseMeter`), rather than
    wall time: on a shared machine wall time also counts the moments the process waited
    for a core other programs held, which says nothing about the controller, while CPU
    time is what the controller itself spent; it also counts work a reconcile hands to
    helper threads (the provisioner's parallel launches), at their summed, not their
    parallel, duration. What runs in-process on the reconcile's behalf — the simulated
    API server answering its requests — is charged too, standing in for round trips.
    Tests inject a meter they advance by hand.
    """

    def __init__(self, *, meter: Callable[[], float] | None = None, scale: float = 1.0) -> None:
        _check_scale(scale)
        self.meter: Callable[[], float] = meter if meter is not None else CoarseMeter()
        self.scale = scale
        self._by_controller: dict[str, int] = {}

    def add(self, controller: str, span: ChargedSpan) -> None:
        """Book ``span`` to ``controller``."""
        self._by_controller[controller] = self._by_controller.get(controller, 0) + span.nanoseconds

    @property
    def total_nanoseconds(self) -> int:
        return sum(self._by_controller.values())

    @property
    def total_seconds(self) -> float:
        return self.total_nanoseconds / _NS

    def by_controller(self) -> dict[str, float]:
        """Seconds charged per controller, most first (ties by name)."""
        ordered = sorted(self._by_controller.items(), key=lambda kv: (-kv[1], kv[0]))
        return {name: ns / _NS for name, ns in ordered}
