"""Packaging proof: the five wheels install into a clean venv and the extras pick plugins.

Builds karpenter-core and the four provider wheels, creates a fresh virtualenv, runs
``pip install --find-links <wheels> karpenter-core[kwok,aws]`` (third-party dependencies
come from the package index) and checks that venv's ``karpenter plugins`` sees exactly the
plugins the extras asked for — discovered through entry points, not through the source
tree.

One module-scoped fixture does the slow work once; the tests then only run commands.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PROJECTS = {
    "karpenter-core": ROOT,
    "karpenter-kwok": ROOT / "plugins" / "kwok",
    "karpenter-aws": ROOT / "plugins" / "aws",
    "karpenter-azure": ROOT / "plugins" / "azure",
    "karpenter-gcp": ROOT / "plugins" / "gcp",
}
PIP_QUIET = ["--disable-pip-version-check", "--no-input", "-q"]


def _clean_env() -> dict[str, str]:
    """The environment for child processes: no leakage of the dev venv or plugin filter."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"PYTHONPATH", "VIRTUAL_ENV", "KARPENTER_PLUGINS", "PYTHONHOME"}
    }
    env["PYTHONNOUSERSITE"] = "1"
    return env


def _run(
    cmd: Sequence[str | Path], cwd: Path, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [str(c) for c in cmd],
        cwd=cwd,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        pytest.fail(
            f"command failed ({proc.returncode}): {' '.join(map(str, cmd))}\n"
            f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}"
        )
    return proc


def _bin(venv_dir: Path, name: str) -> Path:
    return venv_dir / ("Scripts" if os.name == "nt" else "bin") / name


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheels")
    # One pip invocation builds all five (each in pip's isolated build env with hatchling).
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            *PIP_QUIET,
            "--no-deps",
            "-w",
            out,
            *PROJECTS.values(),
        ],
        cwd=out,
    )
    return out


@pytest.fixture(scope="module")
def installed_venv(wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    venv_dir = tmp_path_factory.mktemp("venv") / "env"
    venv.EnvBuilder(with_pip=True, clear=True).create(venv_dir)
    _run(
        [
            _bin(venv_dir, "python"),
            "-m",
            "pip",
            "install",
            *PIP_QUIET,
            "--find-links",
            wheelhouse,
            "karpenter-core[kwok,aws]",
        ],
        cwd=venv_dir,
    )
    yield venv_dir


def _karpenter_plugins_json(venv_dir: Path) -> dict[str, dict[str, Any]]:
    proc = _run([_bin(venv_dir, "karpenter"), "plugins", "-o", "json"], cwd=venv_dir)
    return {row["name"]: row for row in json.loads(proc.stdout)["plugins"]}


def test_every_project_builds_a_wheel(wheelhouse: Path) -> None:
    built = sorted(p.name.split("-")[0] for p in wheelhouse.glob("*.whl"))
    assert built == sorted(name.replace("-", "_") for name in PROJECTS)


def test_core_wheel_carries_no_plugin_packages(wheelhouse: Path) -> None:
    import zipfile

    [core] = wheelhouse.glob("karpenter_core-*.whl")
    top_level = {name.split("/")[0] for name in zipfile.ZipFile(core).namelist()}
    assert "karpenter_core" in top_level
    assert not {"karpenter_kwok", "karpenter_aws", "karpenter_azure", "karpenter_gcp"} & top_level


def test_extras_install_exactly_the_requested_providers(installed_venv: Path) -> None:
    proc = _run(
        [
            _bin(installed_venv, "python"),
            "-m",
            "pip",
            "list",
            "--format=json",
            "--disable-pip-version-check",
        ],
        cwd=installed_venv,
    )
    dists = {d["name"].lower(): d["version"] for d in json.loads(proc.stdout)}
    assert dists["karpenter-core"] == dists["karpenter-kwok"] == dists["karpenter-aws"] == "0.1.0"
    assert "karpenter-azure" not in dists
    assert "karpenter-gcp" not in dists


def test_installed_code_comes_from_the_venv_not_the_source_tree(installed_venv: Path) -> None:
    proc = _run(
        [
            _bin(installed_venv, "python"),
            "-c",
            "import karpenter_core, karpenter_aws; print(karpenter_core.__file__); print(karpenter_aws.__file__)",
        ],
        cwd=installed_venv,
    )
    for line in proc.stdout.splitlines():
        assert Path(line).resolve().is_relative_to(installed_venv.resolve()), line


def test_karpenter_plugins_lists_kwok_and_aws_only(installed_venv: Path) -> None:
    rows = _karpenter_plugins_json(installed_venv)
    assert set(rows) == {"builtins", "kwok", "aws"}
    assert all(row["status"] == "loaded" for row in rows.values()), rows
    assert (rows["aws"]["distribution"], rows["aws"]["version"]) == ("karpenter-aws", "0.1.0")
    assert (rows["kwok"]["distribution"], rows["kwok"]["version"]) == ("karpenter-kwok", "0.1.0")
    assert rows["aws"]["cloud_providers"][0]["can_launch"] is False


def test_karpenter_plugins_table_in_the_fresh_venv(installed_venv: Path) -> None:
    proc = _run([_bin(installed_venv, "karpenter"), "plugins"], cwd=installed_venv)
    names = [line.split()[0] for line in proc.stdout.splitlines()[1:]]
    assert names == ["builtins", "aws", "kwok"]
    assert "catalogue only" in proc.stdout
