"""The orchestration queue (spec disruption §12, scenarios 39 and 41)."""

from __future__ import annotations

import pytest
from disruption_harness import World

from karpenter_core import metrics
from karpenter_core.controllers.disruption.queue import QueueError, retry_duration
from karpenter_core.disruption.types import (
    CLASS_GRACEFUL,
    REASON_DRIFTED,
    REASON_EMPTY,
    Candidate,
    Command,
)
from karpenter_core.kube.client import NotFound


class _Method:
    def __init__(self, reason: str, consolidation_type: str = "") -> None:
        self.reason = reason
        self.consolidation_type = consolidation_type
        self.disruption_class = CLASS_GRACEFUL


def _candidates(world: World) -> list[Candidate]:
    return world.candidates(CLASS_GRACEFUL)


def _taints(world: World, node: str) -> list[dict]:
    return list(world.kube.get("nodes", node)["spec"].get("taints") or [])


def _reason(world: World, nodeclaim: str) -> dict | None:
    nc = world.kube.get("nodeclaims", nodeclaim)
    return next((c for c in nc["status"]["conditions"] if c["type"] == "DisruptionReason"), None)


def _start(world: World, cmd: Command) -> Command:
    stamped = Command(
        cmd.candidates,
        cmd.replacements,
        cmd.results,
        cmd.method,
        id="cmd-1",
        creation_time=world.clock.now(),
    )
    return world.queue.start_command(stamped)


@pytest.fixture
def world() -> World:
    w = World()
    w.nodepool()
    w.real_queue()
    return w


def test_retry_window_scales_with_entries_within_bounds() -> None:
    assert retry_duration(0) == 600
    assert retry_duration(10_000) == pytest.approx(800)
    assert retry_duration(10**6) == 3600


def test_delete_command_taints_marks_and_then_deletes(world: World) -> None:
    world.node("a")
    (c,) = _candidates(world)
    _start(world, Command([c], method=_Method(REASON_EMPTY, "empty")))  # type: ignore[arg-type]
    assert {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"} in _taints(world, "a")
    reason = _reason(world, "a")
    assert reason is not None and reason["status"] == "True" and reason["reason"] == "Empty"
    assert world.cluster.state_node(world.pid("a")).marked_for_deletion  # type: ignore[union-attr]
    assert world.queue.has_any(world.pid("a"))
    assert world.enqueued == [world.pid("a")]
    decisions = metrics.VOLUNTARY_DISRUPTION_DECISIONS_TOTAL.labels(
        decision="delete", reason="empty", consolidation_type="empty"
    )
    assert decisions._value.get() == 1

    world.queue.reconcile(world.pid("a"))
    with pytest.raises(NotFound):
        world.kube.get("nodeclaims", "a")
    assert world.queue.is_empty()
    assert [e.message for e in world.events("DisruptionTerminating")] == [
        "Disrupting Node: Empty",
        "Disrupting NodeClaim: Empty",
    ]
    disrupted = metrics.NODECLAIMS_DISRUPTED_TOTAL.labels(
        reason="empty",
        nodepool="default",
        capacity_type="on-demand",
        consolidation_policy="when_empty_or_underutilized",
        termination_mode="graceful",
    )
    assert disrupted._value.get() == 1


def _replace_command(world: World) -> Command:
    world.node("a", instance_type="fake-it-0")
    world.pod("p", "a", cpu="500m")
    (c,) = _candidates(world)
    results = world.simulate([c])
    assert len(results.new_nodeclaims) == 1
    return Command([c], results.new_nodeclaims, results, _Method(REASON_DRIFTED))  # type: ignore[arg-type]


def test_replace_waits_for_the_replacement_to_initialize(world: World) -> None:
    _start(world, _replace_command(world))
    (name,) = world.queue.replacement_names(world.pid("a"))
    created = world.kube.get("nodeclaims", name)
    assert created["metadata"]["labels"]["karpenter.sh/nodepool"] == "default"
    result = world.queue.reconcile(world.pid("a"))
    assert result.requeue_after == 1.0
    assert world.kube.get("nodeclaims", "a")  # the candidate stays until then
    assert world.events("DisruptionWaitingReadiness")
    assert world.events("DisruptionLaunching")[0].message == "Launching NodeClaim: Drifted"

    world.initialize(name)
    world.queue.reconcile(world.pid("a"))
    with pytest.raises(NotFound):
        world.kube.get("nodeclaims", "a")
    assert world.queue.is_empty()


def test_replacement_deleted_before_initializing_rolls_the_command_back(world: World) -> None:
    _start(world, _replace_command(world))
    (name,) = world.queue.replacement_names(world.pid("a"))
    world.kube.delete("nodeclaims", name)
    world.cluster.delete_nodeclaim(name)
    world.queue.reconcile(world.pid("a"))
    assert world.queue.is_empty()
    assert _taints(world, "a") == []
    assert _reason(world, "a") is None
    assert not world.cluster.state_node(world.pid("a")).marked_for_deletion  # type: ignore[union-attr]
    assert world.kube.get("nodeclaims", "a")
    failures = metrics.VOLUNTARY_DISRUPTION_QUEUE_FAILURES_TOTAL.labels(
        decision="replace", reason="drifted", consolidation_type=""
    )
    assert failures._value.get() == 1


def test_a_command_times_out_after_its_retry_window(world: World) -> None:
    _start(world, _replace_command(world))
    world.clock.advance(9 * 60)
    assert world.queue.reconcile(world.pid("a")).requeue_after == 1.0
    assert world.queue.has_any(world.pid("a"))
    world.clock.advance(2 * 60)
    world.queue.reconcile(world.pid("a"))
    assert world.queue.is_empty()
    assert _taints(world, "a") == []
    assert not world.cluster.state_node(world.pid("a")).marked_for_deletion  # type: ignore[union-attr]


def test_a_candidate_already_queued_cannot_start_again(world: World) -> None:
    world.node("a")
    (c,) = _candidates(world)
    cmd = Command([c], method=_Method(REASON_EMPTY, "empty"))  # type: ignore[arg-type]
    _start(world, cmd)
    with pytest.raises(QueueError, match="being disrupted"):
        _start(world, cmd)


def test_existing_destinations_are_nominated(world: World) -> None:
    world.node("a", instance_type="fake-it-3")
    world.node("b", instance_type="fake-it-3")
    world.pod("p", "b")
    c = next(c for c in _candidates(world) if c.name() == "b")
    results = world.simulate([c])
    _start(world, Command([c], (), results, _Method("Underutilized", "single")))  # type: ignore[arg-type]
    assert world.cluster.is_node_nominated(world.pid("a"))
    assert world.events("Nominated")


def test_a_foreign_taint_with_the_same_key_is_replaced(world: World) -> None:
    world.node("a")
    node = world.kube.get("nodes", "a")
    node["spec"]["taints"] = [
        {"key": "karpenter.sh/disrupted", "value": "x", "effect": "NoExecute"},
        {"key": "other", "effect": "NoSchedule"},
    ]
    world.kube.update(node)
    world.refresh("a")
    (c,) = _candidates(world)
    _start(world, Command([c], method=_Method(REASON_EMPTY, "empty")))  # type: ignore[arg-type]
    assert _taints(world, "a") == [
        {"key": "other", "effect": "NoSchedule"},
        {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"},
    ]
