"""Folding what the observer saw into one row per decision, and the controllers' events
into ``events``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from karpenter_core.runtime.events import RecordedEvent
from karpenter_core.sim.decisions import fold
from karpenter_core.sim.records import Decision, NodeClaimRecord

START = datetime(2025, 1, 1, tzinfo=UTC)


def at(t: float) -> datetime:
    return START + timedelta(seconds=t)


def time_of(t: float | None) -> str | None:
    return None if t is None else f"+{t:g}"


def create(t: float, name: str) -> Decision:
    return Decision(
        t,
        "CreateNodeClaim",
        "pending pods did not fit on existing capacity",
        {"nodeClaim": name, "nodePool": "default", "instanceTypeOptions": 12},
    )


def launched(name: str, t: float, **kw: Any) -> NodeClaimRecord:
    rec = NodeClaimRecord(name, "default", t, launched=t)
    rec.instance_type, rec.zone, rec.capacity_type, rec.price = "c-4x", "z1", "spot", 0.25
    for k, v in kw.items():
        setattr(rec, k, v)
    return rec


def pod_event(t: float, pod: str, reason: str, message: str) -> RecordedEvent:
    ref = {"kind": "Pod", "namespace": "default", "name": pod}
    return RecordedEvent(at(t), ref, "Normal", reason, message)


def run(
    observed: list[Decision],
    records: list[NodeClaimRecord],
    events: Sequence[RecordedEvent] = (),
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return fold(observed, events, {r.name: r for r in records}, START, time_of)


def test_a_creation_and_its_launch_are_one_row_with_the_pods_it_was_made_for() -> None:
    observed = [create(1, "nc1"), Decision(1, "Launch", "launched c-4x", {"nodeClaim": "nc1"})]
    events = [
        pod_event(1, f"web-{i}", "Nominated", "Pod should schedule on: nodeclaim/nc1")
        for i in range(3)
    ]
    decisions, chatter = run(observed, [launched("nc1", 1)], events)
    (row,) = decisions
    assert row["action"] == "Launch" and row["pods"] == 3
    assert row["reason"] == (
        "3 pending pods did not fit on existing capacity: c-4x (spot, z1) at $0.2500/h"
    )
    assert (row["instanceType"], row["capacityType"], row["zone"]) == ("c-4x", "spot", "z1")
    # the nominations are events, folded: one row for the three pods
    assert [(e["reason"], e["pods"]) for e in chatter] == [("Nominated", 3)]


def test_a_nodeclaim_that_never_launched_is_a_failed_launch_with_the_providers_error() -> None:
    rec = NodeClaimRecord("nc1", "default", 1, deleting=2, reason="insufficient capacity")
    observed = [
        create(1, "nc1"),
        Decision(2, "AbandonNodeClaim", "insufficient capacity", {"nodeClaim": "nc1"}),
    ]
    ice = RecordedEvent(
        at(2),
        {"kind": "NodeClaim", "name": "nc1"},
        "Warning",
        "InsufficientCapacityError",
        "no spot capacity for c-4x in z1",
    )
    decisions, chatter = run(observed, [rec], [ice])
    (row,) = decisions
    assert row["action"] == "LaunchFailed"
    assert row["reason"] == (
        "pending pods did not fit on existing capacity: not launched: insufficient capacity "
        "(no spot capacity for c-4x in z1)"
    )
    assert [e["reason"] for e in chatter] == ["InsufficientCapacityError"]


def disrupt(t: float, candidate: str, method: str, replacements: list[str]) -> Decision:
    decision = "replace" if replacements else "delete"
    return Decision(
        t,
        "Disrupt",
        f"{method}: {decision} (estimated savings $0.1000/h)",
        {
            "nodeClaim": candidate,
            "decision": decision,
            "method": method,
            "candidates": [candidate],
            "replacements": replacements,
        },
    )


def test_a_replacement_is_part_of_its_disruption_and_the_candidates_deletion_too() -> None:
    observed = [
        create(1, "old"),
        disrupt(600, "old", "Drifted", ["new"]),
        create(600, "new"),
        Decision(660, "DeleteNodeClaim", "drifted", {"nodeClaim": "old"}),
    ]
    records = [launched("old", 1, deleting=660.0, reason="drifted"), launched("new", 601)]
    decisions, _ = run(observed, records)
    assert [(d["action"], d["nodeClaim"]) for d in decisions] == [
        ("Launch", "old"),
        ("Disrupt", "old"),
    ]
    assert decisions[1]["reason"] == (
        "Drifted: replace (estimated savings $0.1000/h): new c-4x (spot, z1) at $0.2500/h"
    )


def test_a_disruption_whose_replacement_failed_says_it_was_abandoned() -> None:
    observed = [create(1, "old"), disrupt(600, "old", "Drifted", ["new"]), create(600, "new")]
    gone = NodeClaimRecord("new", "default", 600, deleting=601, reason="insufficient capacity")
    decisions, _ = run(observed, [launched("old", 1), gone])
    assert decisions[-1]["reason"].endswith(
        ": new not launched: insufficient capacity; the command was abandoned"
    )


def test_a_deletion_for_another_reason_than_the_disruption_stays_a_decision() -> None:
    observed = [
        create(1, "old"),
        disrupt(600, "old", "Underutilized", []),  # abandoned; the node expires later
        Decision(9000, "DeleteNodeClaim", "expired", {"nodeClaim": "old"}),
    ]
    decisions, _ = run(observed, [launched("old", 1, deleting=9000.0, reason="expired")])
    assert [d["action"] for d in decisions] == ["Launch", "Disrupt", "DeleteNodeClaim"]


def test_what_the_scenario_deleted_is_its_row_not_karpenters() -> None:
    observed = [
        create(1, "nc1"),
        Decision(900, "SpotInterruption", "reclaimed", {"nodeClaim": "nc1"}, "scenario"),
        Decision(900, "DeleteNodeClaim", "spot interruption", {"nodeClaim": "nc1"}),
        Decision(950, "DeleteNodeClaim", "garbage collected", {"nodeClaim": "nc2"}),
    ]
    decisions, _ = run(observed, [launched("nc1", 1, deleting=900.0)])
    assert [(d["source"], d["action"]) for d in decisions] == [
        ("karpenter", "Launch"),
        ("scenario", "SpotInterruption"),
        ("karpenter", "DeleteNodeClaim"),
    ]


def test_pods_karpenter_cannot_place_are_a_decision_folded_per_instant() -> None:
    message = "Failed to schedule pod, incompatible with nodepool default"
    events = [pod_event(30, f"big-{i}", "FailedScheduling", message) for i in range(4)]
    events.append(pod_event(30, "big-0", "Evicted", "Evicted pod: Underutilized"))
    decisions, chatter = run([], [], events)
    assert decisions == [
        {
            "time": "+30",
            "offsetSeconds": 30.0,
            "action": "FailedScheduling",
            "reason": message,
            "object": "Pod/default/big-0",
            "type": "Normal",
            "source": "karpenter",
            "pods": 4,
        }
    ]
    assert [(e["reason"], e["message"], e["pods"]) for e in chatter] == [
        ("Evicted", "Evicted pod: Underutilized", 1)
    ]


def test_status_echoes_are_neither_decisions_nor_events() -> None:
    ref = {"kind": "NodeClaim", "name": "nc1"}
    events = [
        RecordedEvent(
            at(5),
            ref,
            "Normal",
            "Launched",
            "Status condition transitioned, Type: Launched, Status: Unknown -> True",
        ),
        RecordedEvent(at(5), ref, "Normal", "Finalized", "Finalized karpenter.sh/termination"),
    ]
    assert run([], [], events) == ([], [])


def test_within_an_instant_the_scenario_comes_first() -> None:
    observed = [
        create(600, "nc1"),
        Decision(600, "ScaleWorkload", "web to 40", {"workload": "web"}, "scenario"),
    ]
    decisions, _ = run(observed, [launched("nc1", 600)])
    assert [d["action"] for d in decisions] == ["ScaleWorkload", "Launch"]
