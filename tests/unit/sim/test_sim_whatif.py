"""What-if changes as written on the command line and in a scenario's ``whatIf`` list, and
the figures a comparison reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from karpenter_core.sim.scenario import APPLY_OBJECT, PATCH_OBJECT, ScenarioError, parse_scenario
from karpenter_core.sim.whatif import parse_what_if, show_figure, what_if_entry


def test_nodepool_patch() -> None:
    w = parse_what_if('nodepool/default={"spec":{"limits":{"cpu":"64"}}}')
    assert (w.event.type, w.event.kind, w.event.name) == (PATCH_OBJECT, "NodePool", "default")
    assert w.event.patch == {"spec": {"limits": {"cpu": "64"}}} and w.event.at == 0.0
    assert w.gate is None


def test_consolidation_and_budget_are_nodepool_patches() -> None:
    w = parse_what_if("consolidation/p=WhenEmpty")
    assert w.event.patch == {"spec": {"disruption": {"consolidationPolicy": "WhenEmpty"}}}
    assert parse_what_if("budget/p=10%").event.patch == {
        "spec": {"disruption": {"budgets": [{"nodes": "10%"}]}}
    }
    listed = parse_what_if('budget/p=[{"nodes":"0","reasons":["Drifted"]}]')
    assert listed.event.patch == {
        "spec": {"disruption": {"budgets": [{"nodes": "0", "reasons": ["Drifted"]}]}}
    }


def test_deployment_scale_with_and_without_namespace() -> None:
    w = parse_what_if("deployment/shop/web=7")
    assert (w.event.kind, w.event.namespace, w.event.name) == ("Deployment", "shop", "web")
    assert w.event.patch == {"spec": {"replicas": 7}}
    assert parse_what_if("deployment/web=0").event.namespace == "default"


def test_inline_overlay_adjusts_every_offering_and_needs_its_gate() -> None:
    w = parse_what_if("nodeoverlay/discount=-20%")
    assert w.event.type == APPLY_OBJECT and w.event.kind == "NodeOverlay"
    assert w.event.manifest is not None
    assert w.event.manifest["spec"]["priceAdjustment"] == "-20%"
    assert w.event.manifest["spec"]["requirements"] == [
        {"key": "node.kubernetes.io/instance-type", "operator": "Exists"}
    ]
    assert w.gate == "NodeOverlay"


def test_overlay_from_a_file_relative_to_the_scenario(tmp_path: Path) -> None:
    (tmp_path / "o.yaml").write_text(
        "apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: spot}\n"
        "spec:\n  requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]\n"
        "  price: '0.01'\n",
        encoding="utf-8",
    )
    w = parse_what_if("nodeoverlay=o.yaml", base=tmp_path)
    assert w.event.name == "spot" and w.event.manifest is not None
    assert w.event.manifest["spec"]["price"] == "0.01"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("nodepool/default", "not TARGET=VALUE"),
        ("=x", "not TARGET=VALUE"),
        ("nodepool=x", "nodepool/NAME expected"),
        ("nodepool/a/b={}", "nodepool/NAME expected"),
        ("nodepool/default=[1", "not JSON"),
        ("nodepool/default=[1]", "expected a non-empty mapping"),
        ('nodepool/default={"kind":"X"}', "cannot change what the object is"),
        ("consolidation/default=Never", "one of WhenEmpty, WhenEmptyOrUnderutilized"),
        ("deployment/a/b/c=1", "deployment/[NAMESPACE/]NAME expected"),
        ("deployment/web=-1", "whole number"),
        ("nodeoverlay/x={}", "spec.requirements"),
        ("spot/x=1", "unknown target 'spot'"),
    ],
)
def test_bad_syntax_is_one_line_naming_the_option(text: str, says: str) -> None:
    with pytest.raises(ScenarioError) as e:
        parse_what_if(text)
    assert str(e.value).startswith("--what-if") and says in str(e.value)
    assert "\n" not in str(e.value)


def test_scenario_from_and_what_if(tmp_path: Path) -> None:
    sc = parse_scenario(
        {
            "from": "snap.json.gz",
            "whatIf": [
                "consolidation/default=WhenEmpty",
                {"kind": "NodePool", "name": "default", "patch": {"spec": {"weight": 5}}},
            ],
        },
        str(tmp_path / "s.yaml"),
    )
    assert sc.from_path == str(tmp_path / "snap.json.gz")
    assert [w.text for w in sc.what_if] == [
        "consolidation/default=WhenEmpty",
        "PatchObject NodePool default",
    ]
    with pytest.raises(ScenarioError, match=r"whatIf\[0\]: expected a TARGET=VALUE string"):
        parse_scenario({"whatIf": [3]}, "s.yaml")
    with pytest.raises(ScenarioError, match="from: expected the path"):
        parse_scenario({"from": ""}, "s.yaml")


def test_entry_mapping_applies_a_manifest() -> None:
    w = what_if_entry(
        {"manifest": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}}, "w"
    )
    assert w.event.type == APPLY_OBJECT and w.text == "ApplyObject ConfigMap c"


def test_figures_are_shown_with_units_and_signs() -> None:
    assert show_figure(0.1086, "dollars", signed=True) == "+$0.1086"
    assert show_figure(-0.5, "dollars", signed=True) == "-$0.5000"
    assert show_figure(65.0, "seconds") == "1m05s"
    assert show_figure(-1.0, "count", signed=True) == "-1"
    assert show_figure(0.0, "count", signed=True) == "0"
