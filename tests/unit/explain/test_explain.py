"""``karpenter explain``: each reason, on a crafted cluster that produces it.

The inputs are manifests (the KWOK catalogue, offline); the answers come from the
scheduler and the disruption functions, so each case also pins that explain and the
engine agree (a pod explained as launchable is in ``schedule``'s NodeClaims, a node
explained as deletable is what consolidation computes).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from karpenter_core.cli.explain import command as explain_command
from karpenter_core.explain import (
    explain_node,
    explain_nodepool,
    explain_pod,
    load_explain_input,
)
from karpenter_core.explain.pod import ExplainError
from karpenter_core.testing import builders as b

NOW = b.START + timedelta(hours=2)
SMALL = "c-2x-amd64-linux"  # 2 cpu, 4Gi
BIG = "m-16x-amd64-linux"


def _write(tmp_path: Path, objects: Sequence[Mapping[str, Any]]) -> str:
    path = tmp_path / "cluster.yaml"
    path.write_text("\n---\n".join(json.dumps(o) for o in objects))
    return str(path)


def _load(tmp_path: Path, objects: Sequence[Mapping[str, Any]]) -> Any:
    return load_explain_input([_write(tmp_path, objects)], now=NOW)


def _pool(name: str = "default", **kw: Any) -> dict[str, Any]:
    kw.setdefault("consolidate_after", "0s")
    kw.setdefault("budgets", [{"nodes": "100%"}])
    return b.nodepool(
        name,
        requirements=[
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        ],
        **kw,
    )


def _claim_and_node(
    name: str,
    instance_type: str = SMALL,
    *,
    pool: str = "default",
    conditions: Sequence[str | Mapping[str, Any]] = ("Consolidatable",),
    annotations: Mapping[str, str] | None = None,
    capacity: Mapping[str, str] | None = None,
    last_pod_event: str | None = None,
) -> list[dict[str, Any]]:
    claim = b.nodeclaim(
        name,
        nodepool=pool,
        labels={
            "node.kubernetes.io/instance-type": instance_type,
            "topology.kubernetes.io/zone": "test-zone-a",
            "karpenter.sh/capacity-type": "on-demand",
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/os": "linux",
        },
        provider_id=f"kwok://{name}",
        node_name=name,
        capacity=dict(capacity or {"cpu": "2", "memory": "4Gi", "pods": "110"}),
        conditions=["Launched", "Registered", "Initialized", *conditions],
    )
    claim["metadata"]["creationTimestamp"] = b.START.strftime("%Y-%m-%dT%H:%M:%SZ")
    if last_pod_event is not None:
        claim["status"]["lastPodEventTime"] = last_pod_event
    node = b.node_for(claim, registered=True, initialized=True)
    if annotations:
        node["metadata"]["annotations"] = dict(annotations)
    return [claim, node]


def _pod(name: str, node: str | None = None, cpu: str = "500m", **kw: Any) -> dict[str, Any]:
    owner = b.owner_reference("ReplicaSet", "web", uid="rs-web")
    if node is None:
        return b.unschedulable_pod(name, cpu=cpu, owner=owner, **kw)
    return b.pod(name, node_name=node, cpu=cpu, owner=owner, ready=True, start_time=b.START, **kw)


# --- pods ---------------------------------------------------------------------------------------


def test_a_pod_too_big_for_every_type_names_the_closest_miss(tmp_path: Path) -> None:
    ei = _load(tmp_path, [_pool(), _pod("huge", memory="10000Gi")])
    e = explain_pod(ei, "default/huge")
    assert e.verdict.code == "unschedulable"
    assert "no instance type has enough resources" in e.verdict.message  # the scheduler's own
    (pool,) = e.nodepools
    assert pool.reason is not None and pool.reason.code == "no-instance-type"
    closest = pool.closest
    assert closest is not None and closest.reason is not None
    assert closest.reason.code == "resources"
    # the closest is the amd64 on-demand type with the most memory
    amd64 = [t for t in pool.types if t.reason is None or t.reason.code == "resources"]
    most = max(amd64, key=lambda t: -t.shortfall.get("memory", 0))
    assert closest.shortfall["memory"] == most.shortfall["memory"]
    assert set(closest.shortfall) == {"memory"}


def test_an_untolerated_taint_and_a_requirement_exclude_their_pools(tmp_path: Path) -> None:
    tainted = _pool("gpu", taints=[{"key": "team", "value": "ml", "effect": "NoSchedule"}])
    ei = _load(
        tmp_path,
        [tainted, _pool("general"), _pod("arm", node_selector={"kubernetes.io/arch": "arm64"})],
    )
    by_pool = {v.nodepool: v for v in explain_pod(ei, "default/arm").nodepools}
    gpu, general = by_pool["gpu"].reason, by_pool["general"].reason
    assert gpu is not None and gpu.code == "taints" and "team=ml:NoSchedule" in gpu.message
    assert general is not None and general.code == "requirements"
    assert "kubernetes.io/arch" in general.message


def test_a_launchable_pod_names_the_nodeclaim_schedule_would_create(tmp_path: Path) -> None:
    ei = _load(tmp_path, [_pool(), _pod("web-1", cpu="1")])
    e = explain_pod(ei, "web-1")  # namespace defaults to default
    assert e.verdict.code == "launch"
    assert "NodePool default" in e.verdict.message
    (pool,) = e.nodepools
    assert pool.reason is None and pool.fitting > 0
    assert pool.cheapest is not None and pool.cheapest.price is not None


def test_nodepool_limits_exclude_every_type_once_reached(tmp_path: Path) -> None:
    objects = [_pool(limits={"cpu": "2"}), *_claim_and_node("n1"), _pod("full", "n1", cpu="1900m")]
    objects.append(_pod("waiting", cpu="1"))
    e = explain_pod(_load(tmp_path, objects), "default/waiting")
    assert e.verdict.code == "unschedulable"
    (pool,) = e.nodepools
    assert pool.reason is not None and pool.reason.code == "no-instance-type"
    assert {t.reason.code for t in pool.types if t.reason} >= {"limits"}
    assert all(t.reason is not None for t in pool.types)


def test_a_bound_pod_says_where_it_runs_and_static_or_unready_pools_are_named(
    tmp_path: Path,
) -> None:
    unready = _pool("unready")
    unready["status"] = {
        "conditions": [{"type": "Ready", "status": "False", "message": "NodeClass not ready"}]
    }
    static = _pool("static", replicas=2)
    objects = [_pool(), unready, static, *_claim_and_node("n1"), _pod("p", "n1")]
    e = explain_pod(_load(tmp_path, objects), "default/p")
    assert e.verdict.code == "bound" and e.node == "n1"
    assert f"instance type {SMALL}" in e.verdict.message
    codes = {v.nodepool: v.reason.code if v.reason else "fits" for v in e.nodepools}
    assert codes == {"default": "fits", "unready": "not-ready", "static": "static"}


def test_an_unknown_pod_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ExplainError, match="pod default/nope is not in the input"):
        explain_pod(_load(tmp_path, [_pool()]), "nope")


# --- nodes --------------------------------------------------------------------------------------


def test_an_empty_consolidatable_node_is_for_emptiness(tmp_path: Path) -> None:
    e = explain_node(_load(tmp_path, [_pool(), *_claim_and_node("n1")]), "n1")
    assert e.summary.code == "empty"
    verdicts = {m.method: m.reason.code for m in e.methods}
    assert verdicts == {"emptiness": "empty", "consolidation": "empty", "drift": "not-drifted"}


def test_do_not_disrupt_blocks_with_the_event_sentence(tmp_path: Path) -> None:
    objects = [
        _pool(),
        *_claim_and_node("n1", annotations={"karpenter.sh/do-not-disrupt": "true"}),
    ]
    e = explain_node(_load(tmp_path, objects), "n1")
    assert e.summary.code == "not-candidate"
    assert 'blocked through the "karpenter.sh/do-not-disrupt" annotation' in e.summary.message


def test_a_node_whose_pods_fit_elsewhere_would_be_deleted(tmp_path: Path) -> None:
    objects = [
        _pool(),
        *_claim_and_node("n1"),
        *_claim_and_node("n2"),
        _pod("a", "n1", cpu="300m"),
        _pod("b", "n2", cpu="300m"),
    ]
    ei = _load(tmp_path, objects)
    e = explain_node(ei, "n1")
    assert e.summary.code == "delete", e.summary
    assert "1 pod(s) fit on other nodes" in e.summary.message


def test_a_big_node_with_one_small_pod_would_be_replaced_cheaper(tmp_path: Path) -> None:
    big = {"cpu": "16", "memory": "128Gi", "pods": "110"}
    objects = [_pool(), *_claim_and_node("n1", BIG, capacity=big), _pod("a", "n1", cpu="300m")]
    e = explain_node(_load(tmp_path, objects), "n1")
    assert e.summary.code == "replace", e.summary
    consolidation = next(m for m in e.methods if m.method == "consolidation")
    assert "replace it with a" in consolidation.reason.message
    # the replacement costs less than the node it replaces
    now_price = float(consolidation.reason.message.split("(now $")[1].split("/h")[0])
    new_price = float(consolidation.reason.message.split(" at $")[1].split("/h")[0])
    assert new_price < now_price


def test_consolidate_after_says_how_long_to_go(tmp_path: Path) -> None:
    recent = (NOW - timedelta(seconds=20)).strftime("%Y-%m-%dT%H:%M:%SZ")
    objects = [
        _pool(consolidate_after="1m"),
        *_claim_and_node("n1", conditions=(), last_pod_event=recent),
        *_claim_and_node("n2"),
        _pod("a", "n1", cpu="300m"),
    ]
    e = explain_node(_load(tmp_path, objects), "n1")
    consolidation = next(m for m in e.methods if m.method == "consolidation")
    assert consolidation.reason.code == "consolidate-after"
    assert "40s to go" in consolidation.reason.message


def test_a_pdb_that_allows_no_eviction_blocks_the_node(tmp_path: Path) -> None:
    objects = [
        _pool(),
        *_claim_and_node("n1"),
        *_claim_and_node("n2"),
        _pod("a", "n1", cpu="300m", labels={"app": "db"}),
        b.pdb("db", labels={"app": "db"}, max_unavailable=0),
    ]
    e = explain_node(_load(tmp_path, objects), "n1")
    assert e.summary.code == "not-candidate"
    assert "pdb prevents pod evictions (PodDisruptionBudget=[default/db])" in e.summary.message


def test_a_zero_budget_holds_back_what_would_happen(tmp_path: Path) -> None:
    objects = [_pool(budgets=[{"nodes": "0"}]), *_claim_and_node("n1")]
    e = explain_node(_load(tmp_path, objects), "n1")
    assert e.summary.code == "budget"
    assert "Empty budget allows no more disruptions" in e.summary.message


def test_a_drifted_nodeclaim_is_for_drift_and_found_by_nodeclaim_name(tmp_path: Path) -> None:
    drifted = {"type": "Drifted", "status": "True", "reason": "NodePoolDrifted"}
    objects = [_pool(), *_claim_and_node("n1", conditions=(drifted,)), _pod("a", "n1")]
    e = explain_node(_load(tmp_path, objects), "n1", nodeclaim=True)
    drift = next(m for m in e.methods if m.method == "drift")
    assert drift.reason.code == "drifted" and "NodePoolDrifted" in drift.reason.message


# --- nodepools ---------------------------------------------------------------------------------


def test_a_nodepool_at_its_limit_with_a_scheduled_budget_and_drift(tmp_path: Path) -> None:
    budgets = [
        {"nodes": "0", "reasons": ["Drifted"]},
        # in force for the hour starting at minute 0 of every hour (NOW is on the hour)
        {"nodes": "1", "schedule": "0 * * * *", "duration": "30m"},
    ]
    drifted = {"type": "Drifted", "status": "True", "reason": "NodePoolDrifted"}
    objects = [
        _pool(limits={"cpu": "4"}, budgets=budgets),
        *_claim_and_node("n1"),
        *_claim_and_node("n2", conditions=(drifted,)),
    ]
    e = explain_nodepool(_load(tmp_path, objects), "default")
    assert e.summary.code == "at-limit" and "cpu" in e.summary.message
    assert e.limits == (("cpu", "4", "4"),)
    assert e.drifted == ("n2",)
    by_reason = {x.reason: x for x in e.budgets}
    assert by_reason["Drifted"].allowed == 0
    assert by_reason["Empty"].allowed == 1
    assert by_reason["Empty"].active == ("nodes=1, schedule='0 * * * *', duration=30m",)
    later = load_explain_input([str(tmp_path / "cluster.yaml")], now=NOW + timedelta(minutes=40))
    outside = {x.reason: x for x in explain_nodepool(later, "default").budgets}
    assert outside["Empty"].active == () and outside["Empty"].allowed > 1


# --- the command --------------------------------------------------------------------------------


def test_the_command_renders_tables_and_json_and_fails_cleanly(tmp_path: Path) -> None:
    path = _write(tmp_path, [_pool(), *_claim_and_node("n1"), _pod("huge", memory="10000Gi")])
    runner = CliRunner()
    now = NOW.strftime("%Y-%m-%dT%H:%M:%SZ")
    result = runner.invoke(explain_command, ["pod", "default/huge", "-f", path, "--now", now])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Pod default/huge: pending and unschedulable")
    assert "closest:" in result.stdout
    result = runner.invoke(explain_command, ["node", "n1", "-f", path, "--now", now, "-o", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["kind"] == "NodeExplanation" and doc["summary"]["code"] == "empty"
    result = runner.invoke(explain_command, ["nodepool", "default", "-f", path])
    assert result.exit_code == 0 and "REMAINING" in result.stdout
    result = runner.invoke(explain_command, ["node", "missing", "-f", path])
    assert result.exit_code == 1
    assert "node missing is not in the input" in result.stderr
    result = runner.invoke(explain_command, ["pod", "x", "-f", path, "--now", "yesterday"])
    assert result.exit_code == 2


def test_a_karpenter_snapshot_file_is_read_like_its_items(tmp_path: Path) -> None:
    items = [_pool(), *_claim_and_node("n1"), _pod("p", "n1")]
    snapshot = {
        "apiVersion": "snapshot.karpenter.sh/v1alpha1",
        "kind": "Snapshot",
        "takenAt": "2026-01-01T02:00:00Z",
        "items": items,
    }
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(snapshot))
    ei = load_explain_input([str(path)], now=NOW)
    assert explain_pod(ei, "default/p").node == "n1"
    # another kind holding items is one object, not a list of them
    snapshot["kind"] = "Snapshots"
    path.write_text(json.dumps(snapshot))
    read = load_explain_input([str(path)], now=NOW).inp
    assert read.ignored_kinds == {"Snapshots": 1} and not read.nodepools


def test_from_a_snapshot_file_now_defaults_to_its_taken_at(tmp_path: Path) -> None:
    from karpenter_core.snapshot import Snapshot, write_snapshot

    taken = NOW - timedelta(minutes=50)  # 20 s after the last pod event below
    event = (taken - timedelta(seconds=20)).strftime("%Y-%m-%dT%H:%M:%SZ")
    items = [
        _pool(consolidate_after="1m"),
        *_claim_and_node("n1", conditions=(), last_pod_event=event),
        *_claim_and_node("n2"),
        _pod("a", "n1", cpu="300m"),
    ]
    path = tmp_path / "cluster.json.gz"
    write_snapshot(
        Snapshot.from_objects(items, taken_at=taken.strftime("%Y-%m-%dT%H:%M:%SZ")), path
    )
    runner = CliRunner()
    result = runner.invoke(explain_command, ["node", "n1", "--from", str(path), "-o", "json"])
    assert result.exit_code == 0, result.output
    methods = {m["method"]: m["reason"] for m in json.loads(result.stdout)["methods"]}
    assert methods["consolidation"]["code"] == "consolidate-after"
    assert "40s to go" in methods["consolidation"]["message"]
    later = runner.invoke(
        explain_command,
        ["node", "n1", "--from", str(path), "--now", NOW.strftime("%Y-%m-%dT%H:%M:%SZ")],
    )
    # 50 minutes on the window has passed: what remains is the controller's mark
    assert "to go" not in later.stdout
    assert "not marked Consolidatable yet" in later.stdout
    both = runner.invoke(explain_command, ["node", "n1", "--from", str(path), "-f", str(path)])
    assert both.exit_code == 2
