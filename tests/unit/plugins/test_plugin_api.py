"""The public plugin API: one module re-exporting what a plugin may use, and the bundled
plugins and the worked example plugin using nothing else of the core (as a third party
would have to)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import karpenter_core.plugin_api as api

ROOT = Path(__file__).resolve().parents[3]
PLUGIN_PACKAGES = sorted(
    p
    for pattern in ("plugins/*/karpenter_*", "examples/plugins/*/karpenter_*")
    for p in ROOT.glob(pattern)
    if p.is_dir()
)


def _core_imports(path: Path) -> list[str]:
    """Every ``karpenter_core`` import in ``path`` other than the plugin API."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("karpenter_core") and node.module != api.__name__:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: from {node.module}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("karpenter_core") and alias.name != api.__name__:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: import {alias.name}")
    return found


def test_the_bundled_plugins_are_found() -> None:
    names = {p.name for p in PLUGIN_PACKAGES}
    assert {
        "karpenter_kwok",
        "karpenter_aws",
        "karpenter_azure",
        "karpenter_gcp",
        "karpenter_example_plugin",
    } <= names


@pytest.mark.parametrize("package", PLUGIN_PACKAGES, ids=lambda p: p.name)
def test_a_bundled_plugin_imports_the_core_only_through_the_plugin_api(package: Path) -> None:
    offending = [line for f in sorted(package.rglob("*.py")) for line in _core_imports(f)]
    assert offending == []


def test_the_scan_catches_an_internal_import(tmp_path: Path) -> None:
    module = ROOT / "plugins" / "_scan_probe.py"
    try:
        module.write_text("from karpenter_core.controllers.nodeclaim import lifecycle\n")
        assert _core_imports(module) == [
            "plugins/_scan_probe.py:1: from karpenter_core.controllers.nodeclaim"
        ]
    finally:
        module.unlink()


@pytest.mark.parametrize("name", api.__all__)
def test_every_public_name_resolves_to_the_core_object(name: str) -> None:
    value = getattr(api, name)
    if name in api._MODULES:
        assert value is importlib.import_module(api._MODULES[name])
    else:
        assert value is getattr(importlib.import_module(api._NAMES[name]), name)


def test_all_lists_exactly_the_public_names() -> None:
    assert len(api.__all__) == len(set(api.__all__))
    assert set(api.__all__) == {*api._NAMES, *api._MODULES}
    assert sorted(dir(api)) == sorted(api.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Scheduler'"):
        api.Scheduler  # noqa: B018 - the scheduler is the core's own business
