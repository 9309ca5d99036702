"""Marker for the tests that render the Helm chart with a real (Go-built) helm."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "helm: renders charts/karpenter-core with helm built from its Go module"
    )
