"""The helm binary every chart test renders with."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from helmtool import HelmBuildError, helm_binary


@pytest.fixture(scope="session")
def helm() -> Path:
    try:
        return helm_binary()
    except HelmBuildError as e:
        pytest.fail(f"helm is unavailable: {e}", pytrace=False)
