"""Fixtures for the example plugin's tests (the kit's own fixtures, ``karpenter_env``,
``make_karpenter_env`` and ``fake_cloud_provider``, come with karpenter-core).

In a plugin's own repository you would ``pip install -e .`` and be done: the entry point
is then installed and ``karpenter`` finds the plugin. This example lives inside
karpenter-core's repository, whose development environment does not install it (it would
change what every other test sees), so the fixtures here do what installing does, for one
test at a time: the package's directory goes on ``sys.path`` and ``installed`` writes the
``.dist-info`` pip would write, with the entry points of this project's
``pyproject.toml``, where ``importlib.metadata`` (and so karpenter-core) looks for them.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
from pathlib import Path

import pytest
from example_plugin_support import DISTRIBUTION, PROJECT, PYPROJECT

from karpenter_core.plugins import KarpenterPluginManager, get_plugin_manager

if importlib.util.find_spec("karpenter_example_plugin") is None:
    sys.path.insert(0, str(PROJECT))


def _is_installed() -> bool:
    try:
        importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The plugin as pip leaves it: its entry points visible to ``karpenter`` (nothing to
    do when it really is installed)."""
    if _is_installed():
        return
    info = tmp_path / "site" / f"{DISTRIBUTION.replace('-', '_')}-{PYPROJECT['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {DISTRIBUTION}\nVersion: {PYPROJECT['version']}\n"
    )
    groups = PYPROJECT["entry-points"]
    (info / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in eps.items())
            for group, eps in groups.items()
        )
    )
    monkeypatch.syspath_prepend(str(info.parent))


@pytest.fixture
def plugin_manager(installed: None) -> KarpenterPluginManager:
    """The built-ins, the kwok provider and this plugin, loaded through their entry points
    as every ``karpenter`` command loads them."""
    return get_plugin_manager({"KARPENTER_PLUGINS": "kwok,example"}, strict=True)
