"""`karpenter schedule` applies the installed plugins' instance-type overlays, in the
operator's order around the input's NodeOverlays (the hook's contract: overlays change the
instance types "before the scheduler sees them")."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from plugin_sources import FakePlugins

from karpenter_core.cli import main
from karpenter_core.hookspecs import WEIGHT_NODEOVERLAY

KWOK = "from karpenter_kwok.plugin import karpenter_cloud_providers  # noqa: F401\n"

# Every m-family offering at a price nothing else beats.
CHEAP_M_PLUGIN = """
import attrs

from karpenter_core.plugin_api import InstanceTypeOverlaySpec, hookimpl


def _cheap_m(nodepool, instance_types):
    return [
        it.with_offerings(attrs.evolve(o, price=0.001) for o in it.offerings)
        if it.name.startswith("m-")
        else it
        for it in instance_types
    ]


@hookimpl
def karpenter_instance_type_overlays():
    return [InstanceTypeOverlaySpec(name="cheap-m", weight={weight}, apply=_cheap_m)]
"""

BROKEN_OVERLAYS_PLUGIN = """
from karpenter_core.plugin_api import hookimpl


@hookimpl
def karpenter_instance_type_overlays():
    raise RuntimeError("price list unreachable")
"""

MANIFESTS = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: kubernetes.io/os, operator: In, values: [linux]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers:
    - name: c
      resources: {requests: {cpu: "1500m", memory: 2Gi}}
"""

EXPENSIVE_M_NODEOVERLAY = """
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: expensive-m}
spec:
  requirements:
    - {key: karpenter.kwok.sh/instance-family, operator: In, values: [m]}
  price: "10"
"""


def _schedule(tmp_path: Path, manifests: str = MANIFESTS) -> tuple[int, str]:
    path = tmp_path / "manifests.yaml"
    path.write_text(textwrap.dedent(manifests))
    result = CliRunner().invoke(
        main, ["schedule", "-f", str(path), "-o", "json"], env={"KARPENTER_PLUGINS": None}
    )
    return result.exit_code, result.output


def _first_type(output: str) -> str:
    data: dict[str, Any] = json.loads(output)
    [claim] = data["nodeClaims"]
    return str(claim["instanceTypes"][0])


@pytest.fixture
def kwok(fake_plugins: FakePlugins) -> None:
    fake_plugins("kwok", KWOK, dist="karpenter-kwok")


def test_without_an_overlay_plugin_the_cheapest_fit_is_a_c_type(kwok: None, tmp_path: Path) -> None:
    code, out = _schedule(tmp_path)
    assert code == 0, out
    assert _first_type(out) == "c-2x-amd64-linux"


def test_a_plugin_overlay_reprices_what_the_scheduler_ranks(
    kwok: None, fake_plugins: FakePlugins, tmp_path: Path
) -> None:
    fake_plugins("cheap", CHEAP_M_PLUGIN.replace("{weight}", "10"))
    code, out = _schedule(tmp_path)
    assert code == 0, out
    assert _first_type(out) == "m-2x-amd64-linux"


def test_nodeoverlays_have_the_last_word_over_a_lighter_plugin_overlay(
    kwok: None, fake_plugins: FakePlugins, tmp_path: Path
) -> None:
    fake_plugins("cheap", CHEAP_M_PLUGIN.replace("{weight}", "10"))
    code, out = _schedule(tmp_path, MANIFESTS + EXPENSIVE_M_NODEOVERLAY)
    assert code == 0, out
    assert _first_type(out) == "c-2x-amd64-linux"


def test_a_plugin_overlay_heavier_than_nodeoverlays_runs_after_them(
    kwok: None, fake_plugins: FakePlugins, tmp_path: Path
) -> None:
    fake_plugins("cheap", CHEAP_M_PLUGIN.replace("{weight}", str(WEIGHT_NODEOVERLAY + 1)))
    code, out = _schedule(tmp_path, MANIFESTS + EXPENSIVE_M_NODEOVERLAY)
    assert code == 0, out
    assert _first_type(out) == "m-2x-amd64-linux"


def test_a_broken_overlay_plugin_is_one_line_naming_it(
    kwok: None, fake_plugins: FakePlugins, tmp_path: Path
) -> None:
    fake_plugins("broken", BROKEN_OVERLAYS_PLUGIN)
    code, out = _schedule(tmp_path)
    assert code == 1
    [line] = out.strip().splitlines()
    assert "plugin 'broken'" in line
    assert "price list unreachable" in line
