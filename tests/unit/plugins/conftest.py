"""Fixtures for plugin-manager tests: throwaway installed plugins and label isolation.

``fake_plugins`` writes real distributions (a module plus a ``*.dist-info`` with
``entry_points.txt``) into a temporary directory and points the plugin manager's
entry-point discovery at that directory only, so tests exercise real entry-point loading
without depending on what happens to be installed.
"""

from __future__ import annotations

import importlib.metadata
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from plugin_sources import FakePlugins

from karpenter_core import plugins
from karpenter_core.apis import labels


@pytest.fixture(autouse=True)
def _restore_label_sets() -> Iterator[None]:
    """Loading a provider spec extends global label sets; undo it after each test."""
    well_known = set(labels.WELL_KNOWN_LABELS)
    domains = set(labels.RESTRICTED_LABEL_DOMAINS)
    yield
    labels.WELL_KNOWN_LABELS.clear()
    labels.WELL_KNOWN_LABELS.update(well_known)
    labels.RESTRICTED_LABEL_DOMAINS.clear()
    labels.RESTRICTED_LABEL_DOMAINS.update(domains)


@pytest.fixture
def fake_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakePlugins]:
    """Return ``add(entry_point_name, source, dist=..., version=...) -> module name``.

    Only plugins added this way are visible to ``get_plugin_manager`` in the test.
    """
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    added: list[str] = []

    def discover() -> list[importlib.metadata.EntryPoint]:
        eps = []
        for dist in importlib.metadata.distributions(path=[str(site)]):
            eps.extend(ep for ep in dist.entry_points if ep.group == plugins.ENTRY_POINT_GROUP)
        return eps

    monkeypatch.setattr(plugins, "_entry_points", discover)

    def add(name: str, source: str, dist: str | None = None, version: str = "1.0") -> str:
        module = f"kp_test_{name.replace('-', '_')}_{uuid.uuid4().hex[:8]}"
        (site / f"{module}.py").write_text(textwrap.dedent(source))
        dist_name = dist or f"fake-{name}"
        info = site / f"{dist_name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {dist_name}\nVersion: {version}\n"
        )
        (info / "entry_points.txt").write_text(f"[karpenter]\n{name} = {module}\n")
        added.append(module)
        return module

    yield add
    for module in added:
        sys.modules.pop(module, None)
