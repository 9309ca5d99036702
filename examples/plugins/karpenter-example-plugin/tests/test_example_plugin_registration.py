"""The plugin as karpenter-core sees it: the entry point, the five hook families and what
`karpenter plugins` says about them."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from click.testing import CliRunner
from example_plugin_support import PROJECT, PYPROJECT
from karpenter_example_plugin import plugin

from karpenter_core.cli import main
from karpenter_core.plugins import (
    KarpenterPluginManager,
    controllers,
    disruption_methods,
    dra_drivers,
    instance_type_overlays,
    instance_type_scorers,
)

FAMILIES = [
    "instance_type_overlays",
    "disruption_methods",
    "dra_drivers",
    "controllers",
    "instance_type_scorers",
]


def test_the_entry_point_names_the_hook_module() -> None:
    assert PYPROJECT["entry-points"]["karpenter"] == {"example": plugin.__name__}
    assert any(d.startswith("karpenter-core") for d in PYPROJECT["dependencies"])


def test_installed_it_loads_under_its_entry_point_name(
    plugin_manager: KarpenterPluginManager,
) -> None:
    info = plugin_manager.plugin_info["example"]
    assert (info.distribution, info.version) == ("karpenter-example-plugin", "0.1.0")
    assert plugin_manager.hook_families("example") == [f"karpenter_{f}" for f in FAMILIES]


def test_each_hook_registers_its_piece_beside_the_builtins(
    plugin_manager: KarpenterPluginManager,
) -> None:
    assert [s.name for s in instance_type_overlays(plugin_manager)] == [
        "negotiated-discount",
        "nodeoverlay",
    ]
    methods = [s.name for s in disruption_methods(plugin_manager)]
    assert methods.index("drift") < methods.index("max-node-age")
    assert methods.index("max-node-age") < methods.index("multi-node-consolidation")
    assert list(dra_drivers(plugin_manager)) == ["nvme.example.com"]
    assert "headroom" in [s.name for s in instance_type_scorers(plugin_manager)]
    # KWOK (loaded beside it) contributes its DRA slice publisher; the example adds one.
    names = [s.name for s in controllers(plugin_manager)]
    assert [n for n in names if not n.startswith("kwok.")] == ["example.recycle-schedule"]


def test_karpenter_plugins_lists_all_five_families(installed: None) -> None:
    result = CliRunner().invoke(
        main, ["plugins", "-o", "json"], env={"KARPENTER_PLUGINS": "kwok,example"}
    )
    assert result.exit_code == 0, result.output
    rows: dict[str, dict[str, Any]] = {r["name"]: r for r in json.loads(result.output)["plugins"]}
    row = rows["example"]
    assert row["status"] == "loaded"
    assert row["hooks"] == FAMILIES
    assert row["instanceTypeOverlays"] == ["negotiated-discount"]
    assert row["disruptionMethods"] == ["max-node-age"]
    assert row["draDrivers"] == ["nvme.example.com"]
    assert row["instanceTypeScorers"] == ["headroom"]


def test_importing_the_hook_module_does_not_load_the_engine() -> None:
    # The module is imported by every `karpenter` command; the disruption engine and the
    # scheduler load only when a method or overlay runs.
    code = (
        "import sys, karpenter_example_plugin.plugin\n"
        "print(sorted(m for m in sys.modules if m.startswith(("
        "'karpenter_core.controllers', 'karpenter_core.provisioning', 'karpenter_core.state'))))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(PROJECT)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.strip() == "[]"
