"""The worked example plugin as a user gets it: its wheel, installed with
``karpenter-core[kwok]`` into a fresh virtualenv, and each hook's effect seen through that
virtualenv's ``karpenter plugins``, ``karpenter schedule`` and ``karpenter simulate``.

One test, for the same reason as ``test_wheels.py``: installing is the expensive part.
The wheels come from the run's shared build (:func:`test_wheels.built_wheels`).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from test_wheels import (
    EXAMPLE_PLUGIN,
    _bin,
    _install,
    _installed_distributions,
    _module_files,
    _plugins_json,
    _run,
    built_wheels,
)

from karpenter_core.hookspecs import HOOK_SPEC_TYPES

pytestmark = pytest.mark.slow

# every hook family but a cloud provider's and node lifecycle hooks, in hookspec order
FAMILIES = [
    hook.removeprefix("karpenter_")
    for hook in HOOK_SPEC_TYPES
    if hook not in ("karpenter_cloud_providers", "karpenter_node_lifecycle_hooks")
]


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_wheels(tmp_path_factory)


def _check_example_wheel(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        [entry_points] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        declared = zf.read(entry_points).decode()
    assert {n.split("/")[0] for n in names if "dist-info" not in n} == {"karpenter_example_plugin"}
    assert "karpenter_example_plugin/py.typed" in names
    assert "[karpenter]\nexample = karpenter_example_plugin.plugin" in declared


def _json(venv_dir: Path, *args: str, plugins: str | None = None) -> dict[str, Any]:
    env = {"KARPENTER_PLUGINS": plugins} if plugins is not None else None
    proc = _run([_bin(venv_dir, "karpenter"), *args, "-o", "json"], cwd=venv_dir, env=env)
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def _first_instance_type(venv_dir: Path, plugins: str | None = None) -> str:
    manifests = str(EXAMPLE_PLUGIN / "manifests")
    [claim] = _json(venv_dir, "schedule", "-f", manifests, plugins=plugins)["nodeClaims"]
    return str(claim["instanceTypes"][0])


def test_the_example_plugin_installs_from_its_wheel_and_every_hook_shows(
    tmp_path: Path, wheelhouse: Path
) -> None:
    [wheel] = wheelhouse.glob("karpenter_example_plugin-*.whl")
    _check_example_wheel(wheel)

    venv_dir = tmp_path / "venv"
    _install(venv_dir, wheelhouse, "karpenter-core[kwok]", "karpenter-example-plugin")
    dists = _installed_distributions(venv_dir)
    assert dists["karpenter-example-plugin"] == dists["karpenter-kwok"] == "0.1.0"
    assert "karpenter-aws" not in dists
    [module] = _module_files(venv_dir, "karpenter_example_plugin")
    assert module.is_relative_to(venv_dir.resolve()), f"{module} imported from outside the venv"

    # karpenter plugins: all five hook families, each with what it registered
    rows = _plugins_json(venv_dir)
    assert set(rows) == {"builtins", "kwok", "example"}
    example = rows["example"]
    assert (example["status"], example["distribution"]) == ("loaded", "karpenter-example-plugin")
    assert example["hooks"] == FAMILIES
    assert example["instanceTypeOverlays"] == ["negotiated-discount"]
    assert example["disruptionMethods"] == ["max-node-age"]
    assert example["draDrivers"] == ["nvme.example.com"]
    assert example["instanceTypeScorers"] == ["headroom"]

    # karpenter schedule: the NodePool's negotiated discount makes an m type the cheapest
    # fit; without the plugin the same manifests get a c type
    assert _first_instance_type(venv_dir) == "m-4x-amd64-linux"
    assert _first_instance_type(venv_dir, plugins="kwok") == "c-4x-amd64-linux"

    # karpenter simulate: the controller runs and announces each node's recycling; the
    # method removes the three first nodes as Aged once they are 20 minutes old
    report = _json(venv_dir, "simulate", str(EXAMPLE_PLUGIN / "scenario.yaml"))
    assert "example.recycle-schedule" in report["controllers"]
    assert report["controllerFailures"] == []
    decisions = report["decisions"]
    first = {
        d["nodeClaim"] for d in decisions if d["action"] == "Launch" and d["offsetSeconds"] < 60
    }
    aged = [d for d in decisions if d["action"] == "Disrupt"]
    assert len(first) == 3
    assert {d["nodeClaim"] for d in aged} == first
    assert all(d["reason"].startswith("Aged: replace with 1 replacement") for d in aged)
    assert min(d["offsetSeconds"] for d in aged) >= 20 * 60
    assert report["removalReasons"] == {"aged": 3}
    scheduled = [e for e in report["events"] if e["reason"] == "RecycleScheduled"]
    assert len(scheduled) == report["nodesLaunched"]
    assert report["pods"]["pending"] == 0

    without = _json(venv_dir, "simulate", str(EXAMPLE_PLUGIN / "scenario.yaml"), plugins="kwok")
    assert not [d for d in without["decisions"] if d["action"] == "Disrupt"]
    assert not [e for e in without["events"] if e["reason"] == "RecycleScheduled"]
    assert without["nodesRemoved"] == 0
