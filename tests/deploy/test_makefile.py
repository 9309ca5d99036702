"""The Makefile's two entry points install different package sets into one virtualenv
without undoing each other: ``make demo`` only karpenter-core and the KWOK provider
(runtime dependencies, no test tools), ``make venv``/``make test`` everything. Checked with
``make -n`` (print the recipes, run nothing) against a virtualenv path of the test's own,
so no package is installed. ``make browser`` (Chromium for the HTML report's browser test,
which ``make test`` runs) is run for real on a PATH of stand-ins for ``id`` and
``apt-get``, so it installs nothing either."""

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


def fake_tools(tmp_path: Path, uid: int, apt_status: int = 0, chromium: bool = False) -> Path:
    """A PATH of stand-ins: ``id`` answering ``uid``, an ``apt-get`` that records its
    arguments and exits ``apt_status``, and optionally a ``chromium``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    scripts = {
        "id": f"#!/bin/sh\necho {uid}\n",
        "apt-get": f'#!/bin/sh\necho "$*" >> "{tmp_path / "apt.log"}"\nexit {apt_status}\n',
    }
    if chromium:
        scripts["chromium"] = "#!/bin/sh\nexit 0\n"
    for name, text in scripts.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return bin_dir


def make_browser(bin_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": str(bin_dir), "HOME": os.environ.get("HOME", "/")}
    return subprocess.run(
        [shutil.which("make") or "make", "--no-print-directory", "-C", str(ROOT), "browser"],
        capture_output=True,
        text=True,
        env=env,
    )


def test_browser_installs_chromium_with_apt_get_as_root_when_missing(tmp_path: Path) -> None:
    result = make_browser(fake_tools(tmp_path, uid=0))
    assert result.returncode == 0, result.stderr
    calls = (tmp_path / "apt.log").read_text().splitlines()
    assert calls == ["update -qq", "install -y -qq chromium"]


def test_browser_fails_soft_when_apt_get_fails_or_this_is_not_root(tmp_path: Path) -> None:
    failing = make_browser(fake_tools(tmp_path / "a", uid=0, apt_status=100))
    assert failing.returncode == 0
    assert "could not install chromium; the browser test will be skipped" in failing.stdout
    user = make_browser(fake_tools(tmp_path / "b", uid=1000))
    assert user.returncode == 0
    assert "needs root and apt-get" in user.stdout
    assert not (tmp_path / "b" / "apt.log").exists()


def test_browser_does_nothing_when_chromium_is_there(tmp_path: Path) -> None:
    result = make_browser(fake_tools(tmp_path, uid=0, chromium=True))
    assert result.returncode == 0 and result.stdout == ""
    assert not (tmp_path / "apt.log").exists()


def test_make_test_runs_the_browser_step(tmp_path: Path) -> None:
    venv = fake_venv(tmp_path, ".installed-demo", ".installed-all")
    lines = dry_run("test", venv)
    assert any("apt-get install -y -qq chromium" in line for line in lines)
