"""Backends for the KubeClient contract tests and what they can do (see conftest.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from karpenter_core.kube.client import KubeClient

DISRUPTION_CONTROLLER = "disruption-controller"
GARBAGE_COLLECTOR = "garbage-collector"
NAMESPACE_CONTROLLER = "namespace-controller"


class Backend:
    """A KubeClient under test plus what it can do beyond a bare API server."""

    def __init__(self, name: str, client: KubeClient, capabilities: frozenset[str]) -> None:
        self.name = name
        self.client = client
        self.capabilities = capabilities

    def require(self, capability: str) -> None:
        if capability not in self.capabilities:
            pytest.skip(f"backend {self.name!r} has no {capability}")

    def eventually(self, check: Callable[[], Any], timeout: float = 30.0) -> Any:
        """Run ``check`` until it stops failing (an AssertionError, or a failed
        ``pytest.raises``) — asynchronous controllers on a real cluster; the in-memory
        backend passes or fails on the first try."""
        if self.name == "memory":
            return check()
        deadline = time.monotonic() + timeout
        while True:
            try:
                return check()
            except (AssertionError, pytest.fail.Exception):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
