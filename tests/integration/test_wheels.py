"""Packaging proof: the five wheels install into a clean venv and the extras pick plugins.

Builds karpenter-core and the four provider wheels, creates a fresh virtualenv, runs
``pip install --find-links <wheels> karpenter-core[kwok,aws]`` (third-party dependencies
come from the package index) and checks that venv's ``karpenter plugins`` sees exactly the
plugins the extras asked for — discovered through entry points, not through the source
tree.

The wheels (these five and the example plugin's, see ``test_example_plugin.py``) are
built once per test run by :func:`built_wheels`, whichever test and pytest-xdist worker
asks first; each test installs what it needs into a virtualenv of its own.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import venv
import zipfile
from collections.abc import Mapping, Sequence
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
EXAMPLE_PLUGIN = ROOT / "examples" / "plugins" / "karpenter-example-plugin"
"""Built beside the five, for ``test_example_plugin.py``."""
PIP_QUIET = ["--disable-pip-version-check", "--no-input", "-q"]


def _clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for child processes: no leakage of the dev venv or plugin filter
    (``extra`` is added on top)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"PYTHONPATH", "VIRTUAL_ENV", "KARPENTER_PLUGINS", "PYTHONHOME"}
    }
    env["PYTHONNOUSERSITE"] = "1"
    env.update(extra or {})
    return env


def _run(
    cmd: Sequence[str | Path],
    cwd: Path,
    timeout: float = 600,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [str(c) for c in cmd],
        cwd=cwd,
        env=_clean_env(env),
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
    # One pip invocation builds them all (each in pip's isolated build env with hatchling).
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
            EXAMPLE_PLUGIN,
        ],
        cwd=out,
    )
    return sorted(out.glob("*.whl"))


def built_wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory holding every wheel, built once per test run: pytest-xdist workers
    share their run's temporary root, and the first to take the lock builds while the
    others wait for it."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's directory, above the workers' own
    wheelhouse = root / "wheels"
    done = root / "wheels.done"
    with (root / "wheels.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            wheelhouse.mkdir(exist_ok=True)
            _build_wheels(wheelhouse)
            done.touch()
    return wheelhouse


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_wheels(tmp_path_factory)


def _install(venv_dir: Path, wheelhouse: Path, *requirements: str) -> None:
    venv.EnvBuilder(with_pip=True, clear=True).create(venv_dir)
    python = _bin(venv_dir, "python")
    _run(
        [python, "-m", "pip", "install", *PIP_QUIET, "--find-links", wheelhouse, *requirements],
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


def test_extras_install_kwok_and_aws_from_built_wheels(tmp_path: Path, wheelhouse: Path) -> None:
    wheels = sorted(wheelhouse.glob("*.whl"))
    assert sorted(w.name.split("-")[0] for w in wheels) == sorted(
        n.replace("-", "_") for n in [*PROJECTS, "karpenter-example-plugin"]
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
    assert [p["name"] for p in rows["aws"]["cloudProviders"]] == ["aws"]
    assert rows["aws"]["cloudProviders"][0]["canLaunch"] is True

    table = _run([_bin(venv_dir, "karpenter"), "plugins"], cwd=venv_dir).stdout
    assert [line.split()[0] for line in table.splitlines()[1:]] == ["builtins", "aws", "kwok"]
    assert "aws: catalogue only" not in table

    # the providers' NodeClass CRDs are package data of their wheels, printed by `crds`
    crds = _run([_bin(venv_dir, "karpenter"), "crds"], cwd=venv_dir)
    kinds = {d["spec"]["names"]["kind"] for d in yaml.safe_load_all(crds.stdout) if d}
    assert {"NodePool", "NodeClaim", "KWOKNodeClass", "EC2NodeClass"} <= kinds
    assert crds.stderr == ""
