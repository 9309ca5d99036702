"""``PatchObject`` and ``ApplyObject`` scenario events: objects changed mid-run (a NodePool
rollout, a budget change, a static pool's replicas, a new PDB), run by the real controllers
on the in-memory cluster and reported as ``scenario`` decisions; what cannot be done is a
note, never a crash. Also the bundled drift-rollout scenario's story, from its JSON report.
"""

from __future__ import annotations

import json
from datetime import datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from engine_helpers import make_scenario, nodepool, web

from karpenter_core.cli import main
from karpenter_core.sim.engine import Simulation, object_changes

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NODEPOOL_LABEL = "karpenter.sh/nodepool"


def patch_event(at: str, patch: dict[str, Any], **target: Any) -> dict[str, Any]:
    return {
        "at": at,
        "type": "PatchObject",
        "kind": target.pop("kind", "NodePool"),
        "name": target.pop("name", "default"),
        "patch": patch,
        **target,
    }


def apply_event(at: str, manifest: dict[str, Any]) -> dict[str, Any]:
    return {"at": at, "type": "ApplyObject", "manifest": manifest}


def decisions(sim: Simulation, action: str) -> list[dict[str, Any]]:
    return [d for d in sim.report().to_json_dict()["decisions"] if d["action"] == action]


def live_nodeclaims(sim: Simulation, pool: str = "default") -> list[dict[str, Any]]:
    return [
        nc
        for nc in sim.server.list("nodeclaims").items
        if nc["metadata"].get("labels", {}).get(NODEPOOL_LABEL) == pool
        and not nc["metadata"].get("deletionTimestamp")
    ]


# ---------------------------------------------------------------- what changed


def test_object_changes_lists_changed_leaves_and_skips_status_and_server_metadata() -> None:
    old = {
        "metadata": {"name": "p", "resourceVersion": "1", "labels": {"a": "1", "gone": "x"}},
        "spec": {"replicas": 2, "budgets": [{"nodes": "1"}]},
        "status": {"nodes": 2},
    }
    new = {
        "metadata": {"name": "p", "resourceVersion": "7", "labels": {"a": "2", "new": "y"}},
        "spec": {"replicas": 2, "budgets": [{"nodes": "0"}]},
        "status": {"nodes": 5},
    }
    assert object_changes(old, new) == [
        'metadata.labels.a: "1" -> "2"',
        'metadata.labels.gone: "x" -> (unset)',
        'metadata.labels.new: (unset) -> "y"',
        'spec.budgets: [{"nodes":"1"}] -> [{"nodes":"0"}]',
    ]
    assert object_changes(old, old) == []
    assert object_changes({"spec": {}}, {"spec": {"a": {"b": 1}, "c": {}}}) == [
        "spec.a.b: (unset) -> 1",
        "spec.c: (unset) -> {}",
    ]


# ---------------------------------------------------------------- PatchObject


def test_a_template_patch_is_applied_reported_and_drifts_the_nodes() -> None:
    patch = {"spec": {"template": {"metadata": {"labels": {"rollout": "2"}}}}}
    sim = Simulation(make_scenario(workloads=[web(3, cpu="3")], events=[patch_event("2m", patch)]))
    sim.run_until(119)
    before = {nc["metadata"]["name"] for nc in live_nodeclaims(sim)}
    assert before and not decisions(sim, "PatchObject")
    sim.run_until(900)
    pool = sim.server.get("nodepools", "default")
    assert pool["spec"]["template"]["metadata"]["labels"] == {"rollout": "2"}
    (d,) = decisions(sim, "PatchObject")
    assert (d["offsetSeconds"], d["source"], d["object"], d["applied"]) == (
        120.0,
        "scenario",
        "NodePool/default",
        True,
    )
    assert d["changes"] == ['spec.template.metadata.labels.rollout: (unset) -> "2"']
    assert d["reason"] == d["changes"][0]
    # drift replaced every node launched before the patch with one carrying the new label
    after = live_nodeclaims(sim)
    assert after and not before & {nc["metadata"]["name"] for nc in after}
    assert all(nc["metadata"]["labels"].get("rollout") == "2" for nc in after)
    data = sim.report().to_json_dict()
    assert data["removalReasons"] == {"drifted": len(before)}
    assert data["pods"]["pending"] == 0 and data["pods"]["bound"] == 3


def test_a_budget_patch_unblocks_drift_that_a_zero_budget_held_back() -> None:
    pool = nodepool()
    pool["spec"]["disruption"]["budgets"] = [{"nodes": "0"}]
    rollout = {"spec": {"template": {"metadata": {"labels": {"rollout": "2"}}}}}
    budget = {"spec": {"disruption": {"budgets": [{"nodes": "1"}]}}}
    sim = Simulation(
        make_scenario(
            nodePools=[pool],
            workloads=[web(2, cpu="3")],
            events=[patch_event("1m", rollout), patch_event("10m", budget)],
        )
    )
    sim.run_until(599)
    assert sim.report().to_json_dict()["nodesRemoved"] == 0  # drifted, but the budget is 0
    sim.run_until(1500)
    data = sim.report().to_json_dict()
    removed = [n for n in data["nodes"] if n["removed"] is not None]
    assert removed and all(n["removalReason"] == "drifted" for n in removed)
    assert all(
        (
            datetime.fromisoformat(n["removed"]) - datetime.fromisoformat(data["start"])
        ).total_seconds()
        >= 600
        for n in removed
    )
    (d,) = [d for d in decisions(sim, "PatchObject") if d["offsetSeconds"] == 600.0]
    assert d["changes"] == ['spec.disruption.budgets: [{"nodes":"0"}] -> [{"nodes":"1"}]']


def test_patching_a_static_pools_replicas_scales_it() -> None:
    pool = nodepool()
    pool["metadata"]["name"] = "static"
    pool["spec"]["replicas"] = 2
    pool["spec"]["disruption"] = {"budgets": [{"nodes": "100%"}]}
    sim = Simulation(
        make_scenario(
            options={"FEATURE_GATES": "StaticCapacity=true"},
            nodePools=[pool],
            events=[patch_event("5m", {"spec": {"replicas": 4}}, name="static")],
        )
    )
    sim.run_until(299)
    assert len(live_nodeclaims(sim, "static")) == 2
    sim.run_until(600)
    assert len(live_nodeclaims(sim, "static")) == 4
    (d,) = decisions(sim, "PatchObject")
    assert d["changes"] == ["spec.replicas: 2 -> 4"]


def test_patching_a_workload_by_namespace_and_api_version() -> None:
    sim = Simulation(
        make_scenario(
            workloads=[web(2)],
            events=[
                patch_event(
                    "3m",
                    {"spec": {"replicas": 5}},
                    apiVersion="apps/v1",
                    kind="Deployment",
                    name="web",
                    namespace="default",
                )
            ],
        )
    )
    sim.run_until(600)
    assert sim.server.get("deployments", "web", "default")["spec"]["replicas"] == 5
    assert sim.report().to_json_dict()["pods"]["bound"] == 5


def test_a_patch_of_something_missing_is_a_note_and_the_run_goes_on() -> None:
    sim = Simulation(
        make_scenario(
            workloads=[web(2)],
            events=[
                patch_event("1m", {"spec": {"replicas": 1}}, name="nope"),
                patch_event("2m", {"spec": {"x": 1}}, kind="Gizmo", name="g"),
                patch_event(
                    "3m",
                    {"spec": {"replicas": 1}},
                    kind="Deployment",
                    name="web",
                    namespace="other",
                ),
            ],
        )
    )
    data = sim.run(600).to_json_dict()
    notes = data["notes"]
    assert any("PatchObject at +60s" in n and "no NodePool named 'nope'" in n for n in notes)
    assert any("PatchObject at +120s" in n and "unknown kind" in n and "Gizmo" in n for n in notes)
    assert any(
        "PatchObject at +180s" in n and "no Deployment named 'web' in namespace other" in n
        for n in notes
    )
    missed = [d for d in data["decisions"] if d["action"] == "PatchObject"]
    assert [d["applied"] for d in missed] == [False, False, False]
    assert all(d["reason"].startswith("not applied: ") for d in missed)
    assert data["pods"]["bound"] == 2  # the rest of the scenario ran


def test_a_patch_that_makes_a_nodepool_invalid_is_not_written() -> None:
    bad = {"spec": {"template": {"spec": {"nodeClassRef": None}}}}
    sim = Simulation(make_scenario(workloads=[web(1)], events=[patch_event("1m", bad)]))
    data = sim.run(300).to_json_dict()
    assert any("the patched NodePool is invalid" in n for n in data["notes"])
    pool = sim.server.get("nodepools", "default")
    assert pool["spec"]["template"]["spec"]["nodeClassRef"]["name"] == "default"


# ---------------------------------------------------------------- ApplyObject


PDB = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "web"}}},
}


def test_an_applied_pdb_created_mid_run_holds_a_later_drain() -> None:
    sim = Simulation(
        make_scenario(
            workloads=[web(2, cpu="3")],
            events=[apply_event("2m", PDB), {"at": "3m", "type": "NodeDeletion", "count": 1}],
        )
    )
    sim.run_until(119)
    assert not sim.server.list("poddisruptionbudgets", "default").items
    sim.run_until(900)
    (d,) = decisions(sim, "ApplyObject")
    assert (d["offsetSeconds"], d["object"], d["changes"], d["applied"]) == (
        120.0,
        "PodDisruptionBudget/default/web",
        ["created"],
        True,
    )
    (deleted,) = [
        n for n in sim.server.list("nodes").items if n["metadata"].get("deletionTimestamp")
    ]
    # the PDB allows no eviction: the deleted node keeps its web pod
    assert sim.server.pods_on_node(deleted["metadata"]["name"])


def test_applying_an_existing_nodepool_replaces_it_keeping_what_the_server_owns() -> None:
    replacement = nodepool()
    replacement["spec"]["template"]["spec"]["requirements"][2]["values"] = ["8"]
    sim = Simulation(make_scenario(workloads=[web(1)], events=[apply_event("2m", replacement)]))
    sim.run_until(60)
    old = sim.server.get("nodepools", "default")
    sim.run_until(300)
    new = sim.server.get("nodepools", "default")
    assert new["metadata"]["uid"] == old["metadata"]["uid"]
    assert new["metadata"]["creationTimestamp"] == old["metadata"]["creationTimestamp"]
    assert new["spec"]["template"]["spec"]["requirements"][2]["values"] == ["8"]
    (d,) = decisions(sim, "ApplyObject")
    assert d["reason"] == "replaced: " + "; ".join(d["changes"])
    assert any(c.startswith("spec.template.spec.requirements: ") for c in d["changes"])


def test_applying_a_nodeoverlay_with_the_gate_off_says_it_has_no_effect() -> None:
    overlay = {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": "cheaper"},
        "spec": {"requirements": [], "priceAdjustment": "-10%"},
    }
    sim = Simulation(make_scenario(events=[apply_event("1m", overlay)]))
    data = sim.run(120).to_json_dict()
    assert sim.server.get("nodeoverlays", "cheaper")["spec"]["priceAdjustment"] == "-10%"
    assert any("NodeOverlay feature gate is off" in n for n in data["notes"])


def test_an_apply_the_server_refuses_is_a_note() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "nope"}}
    gizmo = {"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": "g"}}
    sim = Simulation(make_scenario(events=[apply_event("1m", cm), apply_event("2m", gizmo)]))
    data = sim.run(300).to_json_dict()
    assert any(
        "ApplyObject at +60s (ConfigMap nope/c)" in n and "refused" in n for n in data["notes"]
    )
    assert any("ApplyObject at +120s (Gizmo g)" in n and "unknown kind" in n for n in data["notes"])
    assert [d["applied"] for d in data["decisions"] if d["action"] == "ApplyObject"] == [
        False,
        False,
    ]


# ---------------------------------------------------------------- the bundled scenario


def _offset(data: dict[str, Any], stamp: str) -> float:
    return (datetime.fromisoformat(stamp) - datetime.fromisoformat(data["start"])).total_seconds()


def test_drift_rollout_replaces_nodes_one_at_a_time_and_leaves_no_pod_pending() -> None:
    result = CliRunner().invoke(
        main, ["simulate", str(EXAMPLES / "scenarios" / "drift-rollout.yaml"), "-o", "json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    (patch,) = [d for d in data["decisions"] if d["action"] == "PatchObject"]
    assert patch["source"] == "scenario" and patch["applied"] is True
    at = patch["offsetSeconds"]
    original = [n for n in data["nodes"] if _offset(data, n["created"]) < at]
    assert len(original) > 1
    # every node launched before the rollout drifted and was removed for it ...
    assert all(n["removalReason"] == "drifted" for n in original)
    assert data["removalReasons"] == {"drifted": len(original)}
    drifts = [d for d in data["decisions"] if d["action"] == "Disrupt"]
    assert len(drifts) == len(original)
    assert all(d["reason"].startswith("Drifted: replace with 1 replacement") for d in drifts)
    # ... one at a time (budget nodes: "1"): each starts after the previous one is gone
    windows = sorted((_offset(data, n["removed"]), _offset(data, n["gone"])) for n in original)
    assert all(prev_gone <= start for (_, prev_gone), (start, _) in pairwise(windows))
    # their replacements still run, and every pod is bound at the end
    replacements = [n for n in data["nodes"] if _offset(data, n["created"]) >= at]
    assert len(replacements) == len(original) and all(n["removed"] is None for n in replacements)
    assert data["pods"]["pending"] == 0 and data["pods"]["bound"] == 8
    assert data["timeline"][-1]["pendingPods"] == 0
