"""Scenario parsing: what a user writes, and the one-line errors for what they get wrong."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from karpenter_core.sim.scenario import (
    RUN_FOR_ANNOTATION,
    ScenarioError,
    load_scenario,
    parse_duration,
    parse_scenario,
)

NODEPOOL = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.kwok.sh",
                    "kind": "KWOKNodeClass",
                    "name": "default",
                },
                "requirements": [],
            }
        }
    },
}


def scenario(**extra: Any) -> dict[str, Any]:
    return {"name": "t", "nodePools": [NODEPOOL], **extra}


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("90s", 90.0), ("1h30m", 5400.0), (120, 120.0), ("2.5", 2.5), ("0", 0.0), ("500ms", 0.5)],
)
def test_durations_accept_go_syntax_and_plain_seconds(value: Any, seconds: float) -> None:
    assert parse_duration(value, "x") == seconds


@pytest.mark.parametrize("value", ["-1s", "5x", True, None, [1], "nan"])
def test_bad_durations_name_the_field(value: Any) -> None:
    with pytest.raises(ScenarioError, match=r"^where: "):
        parse_duration(value, "where")


def test_shorthand_deployment_expands_to_a_manifest_with_requests_and_selector() -> None:
    sc = parse_scenario(
        scenario(workloads=[{"deployment": "web", "replicas": 3, "requests": {"cpu": "500m"}}])
    )
    (w,) = sc.workloads
    assert (w.kind, w.namespace, w.name, w.replicas) == ("Deployment", "default", "web", 3)
    spec = w.manifest["spec"]
    assert spec["selector"] == {"matchLabels": {"app": "web"}}
    container = spec["template"]["spec"]["containers"][0]
    assert container["resources"] == {"requests": {"cpu": "500m"}}


def test_shorthand_job_carries_run_for_on_the_pod_template() -> None:
    sc = parse_scenario(
        scenario(workloads=[{"job": "batch", "parallelism": 2, "completions": 6, "runFor": "5m"}])
    )
    (w,) = sc.workloads
    assert w.kind == "Job" and w.replicas == 2
    assert w.manifest["spec"]["completions"] == 6
    assert w.manifest["spec"]["template"]["metadata"]["annotations"][RUN_FOR_ANNOTATION] == "300"
    assert w.manifest["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def test_run_for_is_the_simulated_kubelets_annotation() -> None:
    from karpenter_core.sim import kubelet

    assert kubelet.RUN_SECONDS_ANNOTATION == RUN_FOR_ANNOTATION


def test_full_manifest_workload_keeps_the_manifest() -> None:
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "api", "namespace": "prod"},
        "spec": {
            "replicas": 4,
            "selector": {"matchLabels": {"app": "api"}},
            "template": {
                "metadata": {"labels": {"app": "api"}},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        },
    }
    (w,) = parse_scenario(scenario(workloads=[{"manifest": manifest}])).workloads
    assert (w.namespace, w.name, w.replicas) == ("prod", "api", 4)


def test_scale_steps_are_sorted_and_default_until_follows_the_last_change() -> None:
    sc = parse_scenario(
        scenario(
            workloads=[
                {
                    "deployment": "web",
                    "scale": [{"at": "20m", "replicas": 1}, {"at": "10m", "replicas": 9}],
                }
            ]
        )
    )
    assert [s.at for s in sc.workloads[0].scale] == [600.0, 1200.0]
    assert sc.default_until() == 1200.0 + 600.0


def test_events_are_parsed_in_time_order() -> None:
    sc = parse_scenario(
        scenario(
            events=[
                {"at": "15m", "type": "SpotInterruption", "count": 2},
                {"at": "5m", "type": "OfferingOutage", "zone": "z", "duration": "10m"},
            ]
        )
    )
    assert [(e.type, e.at) for e in sc.events] == [
        ("OfferingOutage", 300.0),
        ("SpotInterruption", 900.0),
    ]
    assert sc.events[0].duration == 600.0 and sc.events[1].count == 2


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (scenario(bogus=1), "unknown field 'bogus'"),
        (scenario(seed="x"), "seed: expected an integer"),
        (scenario(sampleInterval="10ms"), "sampleInterval: must be at least 0.1s"),
        (scenario(workloads=[{"deployment": "w", "replicas": -1}]), r"workloads\[0\]\.replicas"),
        (scenario(workloads=[{"replicas": 1}]), r"workloads\[0\]: needs manifest"),
        (scenario(workloads=[{"deployment": "w", "requests": {"cpu": "lots"}}]), r"requests\.cpu"),
        (
            scenario(
                workloads=[{"deployment": "w", "at": "5m", "scale": [{"at": "1m", "replicas": 1}]}]
            ),
            "before the workload is created",
        ),
        (scenario(workloads=[{"deployment": "w"}, {"deployment": "w"}]), "already defined"),
        (scenario(events=[{"at": "1m", "type": "Meteor"}]), r"events\[0\]\.type"),
        (scenario(events=[{"type": "NodeFailure"}]), r"events\[0\]\.at: required"),
        (
            scenario(events=[{"at": 1, "type": "NodeFailure", "zone": "a"}]),
            "not used by NodeFailure",
        ),
        (
            scenario(events=[{"at": 1, "type": "OfferingOutage", "count": 2}]),
            "not used by OfferingOutage",
        ),
        (scenario(events=[{"at": 1, "type": "NodeFailure", "mode": "Melt"}]), r"\.mode"),
        (
            scenario(events=[{"at": 1, "type": "KarpenterRestart", "count": 2}]),
            r"\.count: not used",
        ),
        (
            {"name": "t", "nodePools": [{"metadata": {}}]},
            r"nodePools\[0\]: metadata\.name: required",
        ),
        ({"name": "t", "nodePools": [NODEPOOL, NODEPOOL]}, "defined twice"),
        ([], "a scenario is a mapping"),
    ],
)
def test_bad_scenarios_are_one_line_errors_naming_the_field(data: Any, message: str) -> None:
    with pytest.raises(ScenarioError, match=message) as info:
        parse_scenario(data, "s.yaml")
    assert "\n" not in str(info.value)
    assert str(info.value).startswith("s.yaml: ")


def test_invalid_nodepool_is_reported_with_the_validation_error() -> None:
    pool = {**NODEPOOL, "spec": {"template": {"spec": {"requirements": []}}}}
    with pytest.raises(ScenarioError, match=r"nodePools\[0\] \(default\)"):
        parse_scenario({"name": "t", "nodePools": [pool]}, "s.yaml")


def test_load_scenario_reports_missing_files_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="no such file"):
        load_scenario(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(ScenarioError, match=r"bad\.yaml: invalid YAML.*line"):
        load_scenario(bad)
    two = tmp_path / "two.yaml"
    two.write_text("name: a\n---\nname: b\n")
    with pytest.raises(ScenarioError, match="exactly one YAML document"):
        load_scenario(two)


def test_shipped_examples_parse() -> None:
    root = Path(__file__).resolve().parents[2] / "examples"
    paths = [root / "quickstart.yaml", *sorted((root / "scenarios").glob("*.yaml"))]
    for path in paths:
        assert load_scenario(path).workloads, path


def test_scenario_kind_is_optional_but_checked_when_given() -> None:
    ok = parse_scenario(scenario(apiVersion="simulate.karpenter.sh/v1alpha1", kind="Scenario"))
    assert ok.name == "t"
    with pytest.raises(
        ScenarioError, match=r"expected apiVersion simulate\.karpenter\.sh/v1alpha1"
    ):
        parse_scenario(scenario(apiVersion="karpenter.sh/v1", kind="NodePool"), "s.yaml")


# ---------------------------------------------------------------- PatchObject / ApplyObject

OVERLAY = {
    "apiVersion": "karpenter.sh/v1alpha1",
    "kind": "NodeOverlay",
    "metadata": {"name": "cheaper"},
    "spec": {"requirements": [], "priceAdjustment": "-10%"},
}


def test_patch_event_keeps_the_target_and_the_merge_patch() -> None:
    patch = {"spec": {"template": {"metadata": {"labels": {"rollout": "2"}}}}}
    (e,) = parse_scenario(
        scenario(
            events=[
                {
                    "at": "10m",
                    "type": "PatchObject",
                    "kind": "NodePool",
                    "name": "default",
                    "patch": patch,
                }
            ]
        )
    ).events
    assert (e.at, e.type, e.kind, e.name, e.namespace, e.api_version) == (
        600.0,
        "PatchObject",
        "NodePool",
        "default",
        None,
        None,
    )
    assert e.patch == patch and e.describe() == "NodePool default"


def test_patch_event_takes_a_namespace_and_an_api_version() -> None:
    (e,) = parse_scenario(
        scenario(
            events=[
                {
                    "at": 60,
                    "type": "PatchObject",
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "namespace": "prod",
                    "name": "api",
                    "patch": {"spec": {"replicas": 0}},
                }
            ]
        )
    ).events
    assert (e.api_version, e.namespace) == ("apps/v1", "prod")
    assert e.describe() == "Deployment prod/api"


def test_apply_event_keeps_the_manifest_and_names_it() -> None:
    (e,) = parse_scenario(
        scenario(events=[{"at": "20m", "type": "ApplyObject", "manifest": OVERLAY}])
    ).events
    assert (e.at, e.kind, e.api_version, e.name) == (
        1200.0,
        "NodeOverlay",
        "karpenter.sh/v1alpha1",
        "cheaper",
    )
    assert e.manifest == OVERLAY and e.manifest is not OVERLAY


def test_object_events_count_towards_the_default_until() -> None:
    sc = parse_scenario(
        scenario(
            events=[
                {"at": "25m", "type": "ApplyObject", "manifest": OVERLAY},
                {
                    "at": "10m",
                    "type": "PatchObject",
                    "kind": "NodePool",
                    "name": "d",
                    "patch": {"a": 1},
                },
            ]
        )
    )
    assert [e.type for e in sc.events] == ["PatchObject", "ApplyObject"]
    assert sc.default_until() == 1500.0 + 600.0


def _patch(**fields: Any) -> dict[str, Any]:
    return {"at": "1m", "type": "PatchObject", "kind": "NodePool", "name": "default", **fields}


_PATCH = {"spec": {"replicas": 2}}


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (
            {"at": 1, "type": "PatchObject", "name": "d", "patch": _PATCH},
            r"events\[1\]\.kind: required",
        ),
        (
            {"at": 1, "type": "PatchObject", "kind": "NodePool", "patch": _PATCH},
            r"events\[1\]\.name: required",
        ),
        (_patch(), r"events\[1\]\.patch: required"),
        (_patch(patch="spec.replicas=2"), r"events\[1\]\.patch: expected a non-empty mapping"),
        (_patch(patch={}), r"events\[1\]\.patch: expected a non-empty mapping"),
        (_patch(patch=[{"op": "add"}]), r"events\[1\]\.patch: expected a non-empty mapping"),
        (_patch(kind="", patch=_PATCH), r"events\[1\]\.kind: expected a non-empty string"),
        (_patch(name=3, patch=_PATCH), r"events\[1\]\.name: expected a non-empty string"),
        (
            _patch(namespace=[], patch=_PATCH),
            r"events\[1\]\.namespace: expected a non-empty string",
        ),
        (_patch(patch={"kind": "NodeClaim"}), r"events\[1\]\.patch\.kind: a patch cannot change"),
        (
            _patch(patch={"metadata": {"name": "other"}}),
            r"events\[1\]\.patch\.metadata\.name: a patch cannot rename",
        ),
        (_patch(patch={"metadata": "x"}), r"events\[1\]\.patch\.metadata: expected a mapping"),
        (_patch(patch=_PATCH, count=2), r"events\[1\]\.count: not used by PatchObject"),
        (_patch(patch=_PATCH, manifest=OVERLAY), r"events\[1\]\.manifest: not used by PatchObject"),
        ({"at": 1, "type": "ApplyObject"}, r"events\[1\]\.manifest: required"),
        (
            {"at": 1, "type": "ApplyObject", "manifest": "x"},
            r"events\[1\]\.manifest: expected a Kubernetes object",
        ),
        (
            {
                "at": 1,
                "type": "ApplyObject",
                "manifest": {"kind": "ConfigMap", "metadata": {"name": "c"}},
            },
            r"events\[1\]\.manifest\.apiVersion: required",
        ),
        (
            {"at": 1, "type": "ApplyObject", "manifest": {"apiVersion": "v1", "kind": "ConfigMap"}},
            r"events\[1\]\.manifest\.metadata\.name: required",
        ),
        (
            {
                "at": 1,
                "type": "ApplyObject",
                "manifest": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": ""}},
            },
            r"events\[1\]\.manifest\.metadata\.name: expected a non-empty string",
        ),
        (
            {"at": 1, "type": "ApplyObject", "manifest": OVERLAY, "name": "x"},
            r"events\[1\]\.name: not used by ApplyObject",
        ),
        (
            {
                "at": 1,
                "type": "ApplyObject",
                "manifest": {**NODEPOOL, "spec": {"template": {"spec": {}}}},
            },
            r"events\[1\]\.manifest \(default\): ",
        ),
        (
            {"at": 1, "type": "NodeFailure", "patch": _PATCH},
            r"events\[1\]\.patch: only for PatchObject",
        ),
        ({"at": 1, "type": "KarpenterRestart", "kind": "NodePool"}, r"events\[1\]\.kind: only for"),
    ],
)
def test_bad_object_events_are_one_line_errors_naming_index_and_field(
    event: dict[str, Any], message: str
) -> None:
    good = {"at": 1, "type": "KarpenterRestart"}
    with pytest.raises(ScenarioError, match=message) as info:
        parse_scenario(scenario(events=[good, event]), "s.yaml")
    assert "\n" not in str(info.value) and str(info.value).startswith("s.yaml: events[1]")
