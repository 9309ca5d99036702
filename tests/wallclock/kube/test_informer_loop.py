"""The informer's loop on its thread: it survives any error, reports a failure streak once
with its error, and says when it has exited."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import pytest

from karpenter_core.kube.client import ApiError
from karpenter_core.kube.informer import Informer
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer


def _server(**kwargs: Any) -> InMemoryApiServer:
    server = InMemoryApiServer(VirtualClock(), seed=1, **kwargs)
    server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    return server


def _cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}}


def _wait(check: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


class Faulty:
    """Delegates to a server; ``fail_lists`` makes the next lists raise ``error``."""

    def __init__(self, inner: InMemoryApiServer, error: BaseException) -> None:
        self.inner = inner
        self.error = error
        self.fail_lists = 0
        self.lists = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def list(self, *args: Any, **kwargs: Any) -> Any:
        self.lists += 1
        if self.fail_lists > 0:
            self.fail_lists -= 1
            raise self.error
        return self.inner.list(*args, **kwargs)


@pytest.mark.parametrize(
    "error",
    [
        RuntimeError("IncompleteRead(10 bytes read, 990 more expected)"),
        ValueError("Expecting value: line 1 column 1"),
        ApiError("connection refused", code=503),
        ConnectionResetError(104, "Connection reset by peer"),
    ],
    ids=["protocol-error", "garbled-json", "api-error", "reset"],
)
def test_the_loop_survives_any_error_and_recovers(error: BaseException) -> None:
    server = _server()
    server.create(_cm("a"))
    client = Faulty(server, error)
    client.fail_lists = 2
    informer = Informer(client, "configmaps", "ns", max_backoff=0.05)  # type: ignore[arg-type]
    informer.start()
    try:
        assert informer.wait_for_sync(20)
        assert _wait(lambda: informer.health().current)
        health = informer.health()
        assert health.running and health.failing_for is None
        assert client.lists == 3
        assert informer.get("ns/a") is not None
    finally:
        informer.stop()


def test_health_reports_a_failure_streak_with_its_error() -> None:
    server = _server()
    client = Faulty(server, RuntimeError("the body was cut short"))
    client.fail_lists = 10**6
    informer = Informer(client, "configmaps", "ns", max_backoff=0.05)  # type: ignore[arg-type]
    informer.start()
    try:
        assert _wait(lambda: client.lists >= 3)
        health = informer.health()
        assert not health.current
        assert health.failing_for is not None
        assert "RuntimeError: the body was cut short" in health.last_error
        assert health.running
        client.fail_lists = 0
        assert _wait(lambda: informer.health().current)
    finally:
        informer.stop()


def test_a_failure_streak_is_logged_once_not_per_attempt(caplog: pytest.LogCaptureFixture) -> None:
    server = _server()
    client = Faulty(server, ApiError("connection refused", code=503))
    client.fail_lists = 10**6
    informer = Informer(client, "configmaps", "ns", max_backoff=0.01)  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO, logger="karpenter.kube.informer"):
        informer.start()
        try:
            assert _wait(lambda: client.lists >= 20)
            client.fail_lists = 0
            assert _wait(lambda: informer.health().current)
        finally:
            informer.stop()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    recovered = [r.getMessage() for r in caplog.records if "recovered" in r.getMessage()]
    assert len(recovered) == 1 and "failed attempts" in recovered[0]


def test_a_loop_that_has_exited_is_reported_not_running() -> None:
    informer = Informer(_server(), "configmaps", "ns")
    informer.start()
    assert informer.wait_for_sync(10)
    assert informer.health().running
    informer.stop()
    assert not informer.health().running
