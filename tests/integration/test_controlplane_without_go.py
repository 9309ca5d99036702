"""Without Go, the real-control-plane tests skip loudly — unless the control plane is
required (``make test`` and CI), when they fail: a contributor without Go can run the rest,
and CI cannot go quietly green."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEST = (
    "tests/integration/test_controlplane.py::test_the_built_scheduler_binds_a_pod_to_a_fitting_node"
)


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("KARPENTER_")}
    clean.update(
        PATH=str(Path(sys.executable).parent),  # python and pytest, no go
        XDG_CACHE_HOME=str(tmp_path),  # no cached build either
        **env,
    )
    return subprocess.run(
        [sys.executable, "-m", "pytest", TEST, "-p", "no:cacheprovider", "-q", "-p", "no:xdist"],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_without_go_the_tests_are_skipped_with_a_loud_reason(tmp_path: Path) -> None:
    proc = _run(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 skipped" in proc.stdout
    assert "real-control-plane tests SKIPPED: no Go toolchain" in proc.stdout


@pytest.mark.parametrize("value", ["1", "true"])
def test_when_required_a_missing_go_fails_them(tmp_path: Path, value: str) -> None:
    proc = _run(tmp_path, KARPENTER_REQUIRE_CONTROLPLANE=value)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 failed" in proc.stdout
    assert "Go toolchain" in proc.stdout
