"""Packaging proof: the five wheels install into a clean venv and the extras pick plugins.

Builds karpenter-core and the four provider wheels, creates a fresh virtualenv, runs
``pip install --find-links <wheels> karpenter-core[kwok,aws]`` (third-party dependencies
come from the package index) and checks that venv's ``karpenter plugins`` sees exactly the
plugins the extras asked for — discovered through entry points, not through the source
tree.

It is one test on purpose: the expensive part is building and installing, and under
pytest-xdist separate tests would repeat that work on every worker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

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


def _build_wheels(out: Path) -> list[Path]:
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
    return sorted(out.glob("*.whl"))


def _install(venv_dir: Path, wheelhouse: Path, requirement: str) -> None:
    venv.EnvBuilder(with_pip=True, clear=True).create(venv_dir)
    python = _bin(venv_dir, "python")
    _run(
        [python, "-m", "pip", "install", *PIP_QUIET, "--find-links", wheelhouse, requirement],
        cwd=venv_dir,
    )


def _check_core_wheel(core: Path) -> None:
    names = zipfile.ZipFile(core).namelist()
    top_level = {name.split("/")[0] for name in names}
    assert "karpenter_core" in top_level
    assert (
        not {"karpenter_kwok", "karpenter_aws", "karpenter_azure", "karpenter_gcp"} & top_level
    ), "the core wheel must not carry provider packages"
    assert "karpenter_core/py.typed" in names
    assert any(n.startswith("karpenter_core/apis/crds/") and n.endswith(".yaml") for n in names), (
        "CRD manifests missing from the core wheel"
    )


def _installed_distributions(venv_dir: Path) -> dict[str, str]:
    proc = _run(
        [
            _bin(venv_dir, "python"),
            "-m",
            "pip",
            "list",
            "--format=json",
            "--disable-pip-version-check",
        ],
        cwd=venv_dir,
    )
    return {d["name"].lower(): d["version"] for d in json.loads(proc.stdout)}


def _module_files(venv_dir: Path, *modules: str) -> list[Path]:
    code = (
        "import importlib, sys\nfor m in sys.argv[1:]: print(importlib.import_module(m).__file__)"
    )
    proc = _run([_bin(venv_dir, "python"), "-c", code, *modules], cwd=venv_dir)
    return [Path(line).resolve() for line in proc.stdout.splitlines()]


def _plugins_json(venv_dir: Path) -> dict[str, dict[str, Any]]:
    proc = _run([_bin(venv_dir, "karpenter"), "plugins", "-o", "json"], cwd=venv_dir)
    return {row["name"]: row for row in json.loads(proc.stdout)["plugins"]}


def test_extras_install_kwok_and_aws_from_built_wheels(tmp_path: Path) -> None:
    wheelhouse = tmp_path / "wheels"
    wheelhouse.mkdir()
    wheels = _build_wheels(wheelhouse)
    assert sorted(w.name.split("-")[0] for w in wheels) == sorted(
        n.replace("-", "_") for n in PROJECTS
    )
    [core] = [w for w in wheels if w.name.startswith("karpenter_core-")]
    _check_core_wheel(core)

    venv_dir = tmp_path / "venv"
    _install(venv_dir, wheelhouse, "karpenter-core[kwok,aws]")

    dists = _installed_distributions(venv_dir)
    assert dists["karpenter-core"] == dists["karpenter-kwok"] == dists["karpenter-aws"] == "0.1.0"
    assert "karpenter-azure" not in dists
    assert "karpenter-gcp" not in dists

    for path in _module_files(venv_dir, "karpenter_core", "karpenter_kwok", "karpenter_aws"):
        assert path.is_relative_to(venv_dir.resolve()), (
            f"{path} imported from outside the fresh venv"
        )

    rows = _plugins_json(venv_dir)
    assert set(rows) == {"builtins", "kwok", "aws"}
    assert all(row["status"] == "loaded" for row in rows.values()), rows
    assert (rows["aws"]["distribution"], rows["aws"]["version"]) == ("karpenter-aws", "0.1.0")
    assert (rows["kwok"]["distribution"], rows["kwok"]["version"]) == ("karpenter-kwok", "0.1.0")
    assert [p["name"] for p in rows["aws"]["cloud_providers"]] == ["aws"]
    assert rows["aws"]["cloud_providers"][0]["can_launch"] is True

    table = _run([_bin(venv_dir, "karpenter"), "plugins"], cwd=venv_dir).stdout
    assert [line.split()[0] for line in table.splitlines()[1:]] == ["builtins", "aws", "kwok"]
    assert "aws: catalogue only" not in table

    # the providers' NodeClass CRDs are package data of their wheels, printed by `crds`
    crds = _run([_bin(venv_dir, "karpenter"), "crds"], cwd=venv_dir)
    kinds = {d["spec"]["names"]["kind"] for d in yaml.safe_load_all(crds.stdout) if d}
    assert {"NodePool", "NodeClaim", "KWOKNodeClass", "EC2NodeClass"} <= kinds
    assert crds.stderr == ""
