"""The report: pending-time percentiles, cost integrated over node lifetimes, removal
reasons, and the three renderings."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karpenter_core.runtime.clock import VirtualClock, format_time
from karpenter_core.runtime.events import RecordedEvent
from karpenter_core.sim.report import Observer, build_report, percentile, render_text
from karpenter_core.sim.report_html import markers, render_html, what_happened
from karpenter_core.testing import builders as b


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([], 0.5, 0.0),
        ([3.0], 0.95, 3.0),
        ([1.0, 2.0, 3.0, 4.0], 0.5, 2.5),
        ([0.0, 10.0], 0.95, 9.5),
    ],
)
def test_percentile_interpolates_between_ranks(
    values: list[float], q: float, expected: float
) -> None:
    assert percentile(values, q) == pytest.approx(expected)


def pod(clock: VirtualClock, name: str, node: str = "", cpu: str = "1") -> dict[str, Any]:
    """The kit's pod as the observer receives it: with a uid and a creation time."""
    raw = b.pod(
        name, node_name=node or None, requests={"cpu": cpu, "memory": "1Gi"}, phase="Pending"
    )
    raw["metadata"].update(uid=f"uid-{name}", creationTimestamp=format_time(clock.now()))
    return raw


def nodeclaim(name: str, provider_id: str = "", deleting: bool = False) -> dict[str, Any]:
    labels = {
        "karpenter.sh/nodepool": "default",
        "node.kubernetes.io/instance-type": "c-4x",
        "topology.kubernetes.io/zone": "z1",
        "karpenter.sh/capacity-type": "spot",
    }
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if deleting:
        meta["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"providerID": provider_id, "nodeName": f"node-{name}"}}


def node(name: str, cpu: str = "4", memory: str = "8Gi") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "default"}},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


@pytest.fixture
def observed() -> tuple[VirtualClock, Observer]:
    clock = VirtualClock()
    prices = {("c-4x", "z1", "spot"): 0.36}
    obs = Observer(clock, lambda it, z, ct: prices.get((it, z, ct)))
    # t=0: two pods pending; a NodeClaim is created
    obs.on_pod("ADDED", pod(clock, "a"))
    obs.on_pod("ADDED", pod(clock, "b"))
    obs.on_nodeclaim("ADDED", nodeclaim("nc1"))
    clock.advance(60)  # launched at 60 s
    obs.on_nodeclaim("MODIFIED", nodeclaim("nc1", "kwok://n1"))
    clock.advance(30)  # node ready, pod a bound at 90 s
    obs.on_node("ADDED", node("node-nc1"))
    obs.on_pod("MODIFIED", pod(clock, "a", "node-nc1"))
    clock.advance(30)  # pod b bound at 120 s
    obs.on_pod("MODIFIED", pod(clock, "b", "node-nc1"))
    clock.advance(3600 - 60)  # removed (and gone) one hour after launch
    obs.removal_hints["nc1"] = "spot interruption"
    obs.on_nodeclaim("MODIFIED", nodeclaim("nc1", "kwok://n1", deleting=True))
    obs.on_nodeclaim("DELETED", nodeclaim("nc1", "kwok://n1", deleting=True))
    return clock, obs


def test_pending_seconds_run_from_creation_to_binding(observed: Any) -> None:
    _clock, obs = observed
    report = build_report(obs, scenario="t", seed=0, wall_seconds=0.0)
    assert sorted(report.pending_seconds) == [90.0, 120.0]
    assert report.pending_stats() == {"p50": 105.0, "p95": 118.5, "max": 120.0}


def test_cost_integrates_price_over_launch_to_gone(observed: Any) -> None:
    _clock, obs = observed
    report = build_report(obs, scenario="t", seed=0, wall_seconds=0.0)
    assert report.cost_total == pytest.approx(0.36)
    assert report.cost_per_hour_at_end == 0.0


def test_removal_reason_comes_from_the_hint(observed: Any) -> None:
    _clock, obs = observed
    data = build_report(obs, scenario="t", seed=0, wall_seconds=0.0).to_json_dict()
    assert data["nodesLaunched"] == 1 and data["nodesRemoved"] == 1
    assert data["removalReasons"] == {"spot interruption": 1}
    # the creation and the launch are one decision; nothing in the scenario deleted the
    # NodeClaim, so its deletion is one too
    actions = [d["action"] for d in data["decisions"]]
    assert actions == ["Launch", "DeleteNodeClaim"]
    # (the kit's NodeClaim names no instance types, as a static NodePool's does)
    assert data["decisions"][0]["reason"] == (
        "a replica of static NodePool default: c-4x (spot, z1) at $0.3600/h"
    )
    assert data["decisions"][1]["reason"] == "spot interruption"


def test_a_nodeclaim_the_scenario_deleted_is_not_a_karpenter_decision() -> None:
    clock = VirtualClock()
    obs = Observer(clock)
    obs.on_nodeclaim("ADDED", nodeclaim("nc1", "kwok://n1"))
    clock.advance(600)
    obs.decide("SpotInterruption", "the cloud reclaims it", source="scenario", nodeClaim="nc1")
    obs.removal_hints["nc1"] = "spot interruption"
    obs.on_nodeclaim("MODIFIED", nodeclaim("nc1", "kwok://n1", deleting=True))
    data = build_report(obs, scenario="t", seed=0, wall_seconds=0.0).to_json_dict()
    assert [(d["source"], d["action"]) for d in data["decisions"]] == [
        ("karpenter", "Launch"),
        ("scenario", "SpotInterruption"),
    ]
    assert data["removalReasons"] == {"spot interruption": 1}


def test_removal_reason_falls_back_to_the_disruption_counter() -> None:
    clock = VirtualClock()
    counter = {("registration_timeout", "default", ""): 0.0}
    obs = Observer(clock, None, lambda: dict(counter))
    obs.on_nodeclaim("ADDED", nodeclaim("nc1"))
    clock.advance(900)
    counter[("registration_timeout", "default", "")] = 1.0
    obs.on_nodeclaim("MODIFIED", nodeclaim("nc1", deleting=True))
    assert obs.nodeclaims["nc1"].reason == "registration timeout"
    assert obs.decisions[-1].action == "AbandonNodeClaim"  # it never launched


def test_utilization_is_the_average_of_requests_over_allocatable(observed: Any) -> None:
    clock = VirtualClock()
    obs = Observer(clock)
    obs.on_node("ADDED", node("n1", cpu="4", memory="8Gi"))
    obs.on_node("ADDED", node("n2", cpu="4", memory="8Gi"))
    obs.on_pod("ADDED", pod(clock, "a", "n1", cpu="2"))
    obs.on_pod("ADDED", pod(clock, "b", "n2", cpu="4"))
    cpu, mem = obs.utilization()
    assert cpu == pytest.approx((0.5 + 1.0) / 2)
    assert mem == pytest.approx(1 / 8)


def test_json_report_has_the_documented_shape(observed: Any) -> None:
    _clock, obs = observed
    data = json.loads(build_report(obs, scenario="t", seed=3, wall_seconds=1.0).to_json())
    assert isinstance(data["nodesLaunched"], int) and isinstance(data["nodesRemoved"], int)
    assert set(data["pods"]) >= {"bound", "pending", "pendingSeconds"}
    assert set(data["pods"]["pendingSeconds"]) == {"p50", "p95", "max"}
    assert all(isinstance(v, float) for v in data["pods"]["pendingSeconds"].values())
    assert isinstance(data["cost"]["total"], float) and isinstance(
        data["cost"]["perHourAtEnd"], float
    )
    for d in data["decisions"]:
        assert isinstance(d["time"], str) and d["action"] and d["reason"]


def test_html_is_one_self_contained_page_with_three_charts(observed: Any) -> None:
    _clock, obs = observed
    obs.sample()
    page = render_html(build_report(obs, scenario="t<1>", seed=0, wall_seconds=0.0))
    assert page.startswith("<!DOCTYPE html>")
    assert page.count('<svg class="chart"') == 3
    for title in ("Nodes", "Pending pods", "Cost"):
        assert f">{title} (" in page
    assert "<script" not in page and "http://" not in page and "https://" not in page
    assert "t&lt;1&gt;" in page


def test_text_report_lists_nodes_and_decisions(observed: Any) -> None:
    _clock, obs = observed
    text = render_text(build_report(obs, scenario="t", seed=0, wall_seconds=0.0))
    assert "launched 1, removed 1 (spot interruption: 1)" in text
    assert "nc1" in text and "DeleteNodeClaim" in text


def test_charts_draw_steps_only_where_the_value_changes() -> None:
    clock = VirtualClock()
    obs = Observer(clock)
    for _ in range(10):  # ten samples, all zero nodes
        obs.sample()
        clock.advance(10)
    page = render_html(build_report(obs, scenario="flat", seed=0, wall_seconds=0.0))
    points = re.findall(r'<polyline[^>]*points="([^"]*)"', page)
    assert len(points) == 3
    assert all(len(p.split()) == 2 for p in points)  # a flat line: start and end


def test_status_transition_and_finalized_events_are_not_decisions(observed: Any) -> None:
    clock, obs = observed
    ref = {"kind": "NodeClaim", "name": "nc1"}
    events = [
        RecordedEvent(
            clock.now(),
            ref,
            "Normal",
            "Launched",
            "Status condition transitioned, Type: Launched, Status: Unknown -> True, "
            "Reason: Launched",
        ),
        RecordedEvent(
            clock.now(), ref, "Normal", "Finalized", "Finalized karpenter.sh/termination"
        ),
        RecordedEvent(clock.now(), ref, "Warning", "FailedDraining", "Failed to drain node"),
    ]
    report = build_report(obs, scenario="t", seed=0, wall_seconds=0.0, recorded_events=events)
    data = report.to_json_dict()
    actions = {d["action"] for d in data["decisions"]}
    reasons = {e["reason"] for e in data["events"]}
    assert reasons == {"FailedDraining"} and "FailedDraining" not in actions
    assert not {"Launched", "Finalized"} & (actions | reasons)


def test_html_marks_launches_and_removals_and_says_what_happened(observed: Any) -> None:
    _clock, obs = observed
    obs.sample()
    report = build_report(obs, scenario="t", seed=0, wall_seconds=0.0)
    marks = [(m.row, label, m.t) for m, label in markers(report)]
    assert marks == [
        ("launch", "Launch", 60.0),
        ("disruption", "Disruption: spot interruption", 3660.0),
    ]
    summary = what_happened(report)
    assert summary[0] == "Karpenter launched 1 node (1 spot) and removed 1 (spot interruption: 1)."
    assert any("The longest wait for a node was 120s" in line for line in summary)
    page = render_html(report)
    assert page.count('<g class="marker launch"') == 3  # one per chart
    assert "Karpenter launched 1 node (1 spot)" in page


_POD_STEPS = st.lists(
    st.tuples(
        st.sampled_from(["create", "create-daemon", "bind", "finish", "terminate", "delete"]),
        st.integers(0, 5),
    ),
    max_size=40,
)


def _play_pod_steps(
    obs: Observer,
    clock: VirtualClock,
    steps: list[tuple[str, int]],
    new_pod: Callable[[int], dict[str, Any]],
    node_of: Callable[[int], str],
) -> None:
    """Feed ``obs`` the pod events ``steps`` describe, a virtual second apart: pod ``i`` is
    created by ``new_pod(i)`` (a DaemonSet's with ``create-daemon``) and bound to
    ``node_of(i)``; steps on a pod that does not exist (or exists already, for a create)
    are skipped."""
    pods: dict[int, dict[str, Any]] = {}
    for step, i in steps:
        clock.advance(1)
        if step.startswith("create") and i not in pods:
            raw = new_pod(i)
            if step == "create-daemon":
                raw["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "ds"}]
            pods[i] = raw
            obs.on_pod("ADDED", raw)
        elif i in pods:
            raw = pods[i]
            if step == "bind":
                raw["spec"]["nodeName"] = node_of(i)
            elif step == "finish":
                raw.setdefault("status", {})["phase"] = "Succeeded"
            elif step == "terminate":
                raw["metadata"]["deletionTimestamp"] = format_time(clock.now())
            elif step == "delete":
                obs.on_pod("DELETED", raw)
                del pods[i]
                continue
            obs.on_pod("MODIFIED", raw)


@settings(max_examples=80, deadline=None)
@given(_POD_STEPS)
def test_pod_counts_kept_as_events_arrive_match_a_recount(
    steps: list[tuple[str, int]],
) -> None:
    """A phase waiting for a pod count asks at every step of virtual time, so the counts
    are kept up to date per event; they must be what walking every record says."""
    clock = VirtualClock()
    obs = Observer(clock)

    def new_pod(i: int) -> dict[str, Any]:
        raw = b.pod(f"p{i}")
        raw["metadata"]["uid"] = f"uid-{i}"
        return raw

    _play_pod_steps(obs, clock, steps, new_pod, lambda i: "n1")
    bound = pending = 0
    for rec in obs.live_pods():
        if rec.finished is not None or rec.daemon or rec.deleting is not None:
            continue
        if rec.node:
            bound += 1
        else:
            pending += 1
    assert obs.counts() == (bound, pending)


@settings(max_examples=80, deadline=None)
@given(_POD_STEPS)
def test_utilization_kept_as_events_arrive_matches_a_recount(
    steps: list[tuple[str, int]],
) -> None:
    """The per-node requests behind utilization() are kept per pod event too (a sample
    used to walk every pod record ever seen); they must be what a walk over the live
    records says: bound, not finished, terminating or not, DaemonSet pods included."""
    clock = VirtualClock()
    obs = Observer(clock)
    for n in range(3):
        obs.on_node("ADDED", node(f"n{n}", cpu="8", memory="16Gi"))
    _play_pod_steps(
        obs, clock, steps, lambda i: pod(clock, f"p{i}", cpu=f"{i + 1}00m"), lambda i: f"n{i % 3}"
    )
    cpu_used = dict.fromkeys(("n0", "n1", "n2"), 0)
    mem_used = dict.fromkeys(("n0", "n1", "n2"), 0)
    for rec in obs.live_pods():
        if rec.node and rec.finished is None:
            cpu_used[rec.node] += rec.cpu
            mem_used[rec.node] += rec.memory
    cpu, mem = obs.utilization()
    nodes = obs.nodes
    assert cpu == pytest.approx(sum(v / nodes[n].cpu for n, v in cpu_used.items()) / 3)
    assert mem == pytest.approx(sum(v / nodes[n].memory for n, v in mem_used.items()) / 3)
