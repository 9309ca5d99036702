"""Plugin disruption methods under the controller: the snapshot contract (notices
published as events, plain lists of commands accepted) and methods written before it
(adapted, simulating through their DisruptionContext)."""

from __future__ import annotations

from collections.abc import Sequence

from disruption_harness import World

from karpenter_core.plugin_api import (
    CLASS_EVENTUAL,
    CLASS_GRACEFUL,
    Blocked,
    BudgetMap,
    Candidate,
    Command,
    DisruptionContext,
    DisruptionSnapshot,
    simulate_scheduling,
)


class Recycle:
    """A method with the snapshot contract: refuses node "keep" with a notice, and
    deletes the first other candidate (a plain list of commands)."""

    reason = "Recycled"
    disruption_class = CLASS_GRACEFUL
    consolidation_type = ""

    def __init__(self, context: DisruptionContext) -> None:
        self.seen: list[DisruptionSnapshot] = []

    def should_disrupt(self, snapshot: DisruptionSnapshot, candidate: Candidate) -> bool | Blocked:
        if candidate.name() == "keep":
            return Blocked(candidate.state_node.node, candidate.nodeclaim, "Kept by the plugin")
        return True

    def compute_commands(
        self, snapshot: DisruptionSnapshot, budgets: BudgetMap, candidates: Sequence[Candidate]
    ) -> list[Command]:
        self.seen.append(snapshot)
        return [Command(candidates[:1])]


class OldReplace:
    """A method written before snapshots: replaces the first candidate, sized with
    simulate_scheduling through its context."""

    reason = "Replaced"
    disruption_class = CLASS_EVENTUAL
    consolidation_type = ""

    def __init__(self, context: DisruptionContext) -> None:
        self.context = context
        self.now = [context.clock.now()]

    def should_disrupt(self, candidate: Candidate) -> bool:
        return True

    def compute_commands(
        self, budgets: BudgetMap, candidates: Sequence[Candidate]
    ) -> list[Command]:
        (first,) = candidates[:1]
        results = simulate_scheduling(self.context, [first])
        return [Command([first], results.new_nodeclaims, results)]


def test_a_snapshot_method_says_why_it_leaves_a_node_and_starts_a_plain_list() -> None:
    world = World()
    world.nodepool()
    world.node("keep")
    world.node("go")
    c = world.controller(Recycle)
    c.reconcile()
    (cmd,) = c.started
    assert cmd.reason == "Recycled"
    assert [x.name() for x in cmd.candidates] == ["go"]
    assert [e.message for e in world.events("DisruptionBlocked") if e.name == "keep"] == [
        "Kept by the plugin",
        "Kept by the plugin",
    ]
    (snapshot,) = c.methods[0].seen
    assert snapshot.now == world.clock.now()
    assert snapshot.simulation is not None  # the method had candidates


def test_a_method_written_before_snapshots_simulates_through_its_context() -> None:
    world = World()
    world.nodepool()
    world.node("old", instance_type="fake-it-0")
    world.pod("p", "old", cpu="500m")
    c = world.controller(OldReplace)
    c.reconcile()
    (cmd,) = c.started
    assert cmd.reason == "Replaced" and cmd.decision == "replace"
    assert world.dctx.snapshot is not None  # the pass's, set for the method
    assert world.tainted() == ["old"]
