"""The Makefile's two entry points install different package sets into one virtualenv
without undoing each other: ``make demo`` only karpenter-core and the KWOK provider
(runtime dependencies, no test tools), ``make venv``/``make test`` everything. Checked with
``make -n`` (print the recipes, run nothing) against a virtualenv path of the test's own,
so no package is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def dry_run(target: str, venv: Path) -> list[str]:
    """The commands ``make TARGET`` would run with ``VENV=venv``."""
    out = subprocess.run(
        ["make", "--no-print-directory", "-n", "-C", str(ROOT), target, f"VENV={venv}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.splitlines()


def pip_installs(lines: list[str]) -> list[str]:
    return [line for line in lines if " -m pip " in line and " install " in line]


def fake_venv(tmp_path: Path, *stamps: str) -> Path:
    """A virtualenv as make sees it: a python and the given stamp files, newer than
    every pyproject.toml."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    projects = [ROOT / "pyproject.toml", *ROOT.glob("plugins/*/pyproject.toml")]
    newest = max(p.stat().st_mtime for p in projects)
    for stamp in stamps:
        (venv / stamp).write_text("")
        os.utime(venv / stamp, (newest + 10, newest + 10))
    return venv


def test_demo_installs_core_and_kwok_only_and_shows_pip_progress(tmp_path: Path) -> None:
    lines = dry_run("demo", tmp_path / "venv")
    assert any(line.endswith(f"-m venv {tmp_path / 'venv'}") for line in lines)
    installs = pip_installs(lines)
    assert len(installs) == 1
    (install,) = installs
    assert install.endswith("install -e . -e plugins/kwok")
    assert "--quiet" not in install and " -q" not in install
    assert any("karpenter simulate examples/quickstart.yaml" in line for line in lines)


def test_venv_installs_every_package_with_the_dev_tools(tmp_path: Path) -> None:
    installs = pip_installs(dry_run("venv", tmp_path / "venv"))
    assert '-e ".[dev]"' in installs[-1]
    for plugin in ("kwok", "aws", "azure", "gcp"):
        assert f"-e plugins/{plugin}" in installs[-1]
    assert not any("--quiet" in line for line in installs)


def test_venv_after_demo_still_installs_the_dev_tools(tmp_path: Path) -> None:
    venv = fake_venv(tmp_path, ".installed-demo")
    installs = pip_installs(dry_run("venv", venv))
    assert installs and '-e ".[dev]"' in installs[-1]


def test_demo_after_a_full_install_installs_nothing(tmp_path: Path) -> None:
    venv = fake_venv(tmp_path, ".installed-demo", ".installed-all")
    lines = dry_run("demo", venv)
    assert pip_installs(lines) == []
    assert any("karpenter simulate" in line for line in lines)
