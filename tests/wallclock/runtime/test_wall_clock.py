"""The wall clock: real time (UTC now, a monotonic reading that never goes back) and its
timers on the timer thread (due order, cancellation, ``after``)."""

from __future__ import annotations

import threading
from datetime import timedelta

from karpenter_core.runtime.clock import Clock, VirtualClock, WallClock


def test_both_clocks_satisfy_the_protocol() -> None:
    assert isinstance(VirtualClock(), Clock)
    assert isinstance(WallClock(), Clock)


def test_wall_clock_now_is_utc() -> None:
    now = WallClock().now()
    assert now.utcoffset() == timedelta(0)


def test_wall_clock_monotonic_does_not_go_backwards() -> None:
    clock = WallClock()
    readings = [clock.monotonic() for _ in range(100)]
    assert readings == sorted(readings)


def test_wall_clock_runs_timers_in_due_order() -> None:
    clock = WallClock()
    fired: list[str] = []
    done = threading.Event()
    clock.call_later(0.02, lambda: fired.append("second"))
    clock.call_later(0.0, lambda: fired.append("first"))
    clock.call_later(0.04, done.set)
    assert done.wait(10)
    assert fired == ["first", "second"]


def test_wall_clock_cancelled_timer_does_not_fire() -> None:
    clock = WallClock()
    fired: list[str] = []
    done = threading.Event()
    clock.call_later(0.01, lambda: fired.append("x")).cancel()
    clock.call_later(0.02, done.set)
    assert done.wait(10)
    assert fired == []


def test_wall_clock_after_is_set() -> None:
    assert WallClock().after(0.01).wait(10)
