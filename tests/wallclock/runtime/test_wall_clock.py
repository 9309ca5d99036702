"""The wall clock's timers, on its timer thread: due order, cancellation, ``after``."""

from __future__ import annotations

import threading

from karpenter_core.runtime.clock import WallClock


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
