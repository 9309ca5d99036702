"""Bounded log volume during an outage: one line per kind per interval, none hidden."""

from __future__ import annotations

from karpenter_core.runtime.logthrottle import LogThrottle, held_back


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_first_line_passes_and_the_rest_wait_for_the_interval() -> None:
    clock = Clock()
    throttle = LogThrottle(30.0, clock=clock)
    assert throttle.admit("a") == 0
    assert throttle.admit("a") is None
    assert throttle.admit("a") is None
    clock.now = 29.9
    assert throttle.admit("a") is None
    clock.now = 30.0
    assert throttle.admit("a") == 3  # the next line says how many were held back
    assert throttle.admit("a") is None


def test_keys_are_throttled_apart() -> None:
    throttle = LogThrottle(30.0, clock=Clock())
    assert throttle.admit(("controller-a", 503)) == 0
    assert throttle.admit(("controller-b", 503)) == 0
    assert throttle.admit(("controller-a", 500)) == 0


def test_many_keys_do_not_grow_without_bound() -> None:
    clock = Clock()
    throttle = LogThrottle(30.0, clock=clock, max_keys=4)
    for i in range(100):
        clock.now = i * 0.001
        assert throttle.admit(i) == 0
    assert len(throttle._last) == 4


def test_the_suffix_names_the_count_only_when_something_was_held_back() -> None:
    assert held_back(0) == ""
    assert "12 more" in held_back(12)
