"""Bounded log volume during an outage: one line per kind per interval, none hidden."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from karpenter_core.kube.client import ApiError
from karpenter_core.runtime import manager as manager_module
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.logthrottle import LogThrottle, held_back
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import Result


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


def test_reconcile_failures_from_an_unreachable_server_are_throttled_per_controller(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manager_module, "_OUTAGE_FAILURES", LogThrottle(3600.0))
    clock = VirtualClock()

    class Down:
        def reconcile(self, key: Any) -> Result:
            raise ApiError("cannot reach the API server", code=503)

    class Invalid:
        def reconcile(self, key: Any) -> Result:
            raise ApiError("spec.x: Invalid value", code=422)

    manager = Manager(clock)
    manager.add_controller("down", Down())
    manager.add_controller("invalid", Invalid())
    for i in range(50):
        manager.enqueue("down", f"k{i}")
    for i in range(3):
        manager.enqueue("invalid", f"k{i}")
    with caplog.at_level(logging.WARNING, logger="karpenter.runtime"):
        manager.settle()
    lines = [r.getMessage() for r in caplog.records]
    assert sum("controller down" in line for line in lines) == 1
    assert sum("controller invalid" in line for line in lines) == 3  # each its own problem


def test_an_api_error_wrapped_by_a_reconciler_is_logged_without_a_traceback(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manager_module, "_OUTAGE_FAILURES", LogThrottle(3600.0))

    class Wrapping:
        def reconcile(self, key: Any) -> Result:
            try:
                raise ApiError("cannot reach the API server", code=503)
            except ApiError as e:
                raise RuntimeError(f"launching {key}: {e}") from e

    class Buggy:
        def reconcile(self, key: Any) -> Result:
            raise KeyError("a bug")

    manager = Manager(VirtualClock())
    manager.add_controller("wrapping", Wrapping())
    manager.add_controller("buggy", Buggy())
    for i in range(5):
        manager.enqueue("wrapping", f"k{i}")
    manager.enqueue("buggy", "k")
    with caplog.at_level(logging.WARNING, logger="karpenter.runtime"):
        manager.settle()
    wrapping = [r for r in caplog.records if "controller wrapping" in r.getMessage()]
    buggy = [r for r in caplog.records if "controller buggy" in r.getMessage()]
    assert len(wrapping) == 1 and wrapping[0].exc_info is None
    assert len(buggy) == 1 and buggy[0].exc_info is not None  # a bug keeps its traceback
