"""Bounded log volume during an outage, as the Manager logs reconcile failures: one line per
controller per interval, and an API error without a traceback."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from karpenter_core.kube.client import ApiError
from karpenter_core.runtime import manager as manager_module
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.logthrottle import LogThrottle
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import Result


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
