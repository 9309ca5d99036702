"""Single-node consolidation and what all consolidation shares: ShouldDisrupt,
computeConsolidation, the memo, the 3-minute timeout, NodePool interleaving and
validation (spec disruption §9, §11; scenarios 8, 19, 22, 24-26, 31, 33-34)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import pytest
from disruption_harness import World

from karpenter_core import metrics
from karpenter_core.apis.labels import CAPACITY_TYPE_LABEL_KEY, LABEL_TOPOLOGY_ZONE
from karpenter_core.disruption.methods import consolidation as consolidation_module
from karpenter_core.disruption.methods.singlenode import SingleNodeConsolidation, interleave
from karpenter_core.disruption.simulation import simulate_scheduling
from karpenter_core.disruption.types import (
    DECISION_DELETE,
    DECISION_REPLACE,
    Candidate,
    Command,
    ValidationError,
)
from karpenter_core.runtime.clock import format_time
from karpenter_core.runtime.options import Options
from karpenter_core.testing import fakecatalog

ALL = {"default": 100}


def method_of(world: World) -> SingleNodeConsolidation:
    method: SingleNodeConsolidation = world.method(SingleNodeConsolidation)
    return method


def run(world: World, budgets: dict[str, int] | None = None) -> list[Command]:
    return world.compute(method_of(world), dict(budgets or ALL))


def unconsolidatable(world: World) -> list[str]:
    return [e.message for e in world.events("Unconsolidatable") if e.kind == "Node"]


@pytest.fixture
def world() -> World:
    w = World()
    w.nodepool()
    return w


# --- ShouldDisrupt ----------------------------------------------------------------------------


def test_a_node_whose_pods_fit_elsewhere_is_deleted(world: World) -> None:
    # Scenario 19: A has two pods, B one; B's pod fits on A.
    a = world.node("a")
    b = world.node("b")
    world.pod(node=a)
    world.pod(node=a)
    world.pod(node=b)
    (cmd,) = run(world)
    assert cmd.decision == DECISION_DELETE
    assert [c.name() for c in cmd.candidates] == ["b"]


def test_empty_nodes_are_left_to_emptiness_silently(world: World) -> None:
    world.node("a")
    assert run(world) == []
    assert unconsolidatable(world) == []


def test_when_empty_policy_never_consolidates_a_non_empty_node() -> None:
    w = World()
    w.nodepool(policy="WhenEmpty")
    w.pod(node=w.node("a"))
    w.node("b")
    assert run(w) == []
    assert unconsolidatable(w) == [
        'NodePool "default" has consolidation policy WhenEmpty, but node is not empty'
    ]


def test_consolidate_after_never_disables_consolidation() -> None:
    w = World()
    w.nodepool(consolidate_after="Never")
    w.pod(node=w.node("a"))
    assert run(w) == []
    assert unconsolidatable(w) == ['NodePool "default" has consolidation disabled']


def test_static_nodepools_are_not_consolidated_and_say_nothing() -> None:
    w = World()
    w.nodepool(replicas=2)
    w.pod(node=w.node("a"))
    w.node("b")
    assert run(w) == []
    assert unconsolidatable(w) == []


def test_a_node_that_is_not_consolidatable_yet_is_skipped(world: World) -> None:
    a = world.node("a")
    b = world.node("b", consolidatable=False)
    world.pod(node=a)
    world.pod(node=b)
    (cmd,) = run(world)
    assert [c.name() for c in cmd.candidates] == ["a"]


def test_a_node_whose_instance_type_is_gone_is_unconsolidatable(world: World) -> None:
    world.pod(node=world.node("a", instance_type="gone-type"))
    assert run(world) == []
    assert 'Instance Type "gone-type" not found' in unconsolidatable(world)


@pytest.mark.parametrize("key", [CAPACITY_TYPE_LABEL_KEY, LABEL_TOPOLOGY_ZONE])
def test_a_node_missing_a_pricing_label_is_unconsolidatable(world: World, key: str) -> None:
    # Scenario 8: still a candidate, but consolidation says why it cannot price it.
    world.pod(node=world.node("a"))
    patched = world.kube.patch("Node", "a", {"metadata": {"labels": {key: None}}})
    world.cluster.update_node(patched)
    method = method_of(world)
    snapshot = world.snapshot()
    (cand,) = world.candidates(method.disruption_class, snapshot=snapshot)
    assert key not in cand.labels()
    assert (
        world.candidates(
            method.disruption_class, lambda c: method.should_disrupt(snapshot, c), snapshot=snapshot
        )
        == []
    )
    assert unconsolidatable(world) == [f'Node does not have label "{key}"']


# --- replace ----------------------------------------------------------------------------------


def test_the_priciest_node_is_replaced_by_a_cheaper_type_excluding_its_own(world: World) -> None:
    # Scenario 24: one small pod on the most expensive type.
    world.pod(node=world.node("a", instance_type="fake-it-4"))
    (cmd,) = run(world)
    assert cmd.decision == DECISION_REPLACE
    (replacement,) = cmd.replacements
    offered = [i.name for i in replacement.instance_types_by_price()]
    assert "fake-it-4" not in offered
    assert offered and all(name in {"fake-it-1", "fake-it-2", "fake-it-3"} for name in offered)
    assert cmd.estimated_savings() > 0
    # the NodePool allows spot and on-demand: the launch is pinned to spot
    reqs = replacement.launch_requirements()
    assert reqs.get(CAPACITY_TYPE_LABEL_KEY).values == {"spot"}
    assert world.events("ConsolidationCandidate")


def test_the_cheapest_node_that_fits_its_pod_is_not_replaced(world: World) -> None:
    world.pod(node=world.node("a", instance_type="fake-it-1"))
    assert run(world) == []
    assert "Can't replace with a cheaper node" in unconsolidatable(world)


def spot_world(n_types: int, gate: bool) -> World:
    types = [
        fakecatalog.instance_type(
            f"s{i}", cpu=2, offerings=[fakecatalog.offering("spot", "test-zone-1", 0.1 * (i + 1))]
        )
        for i in range(n_types)
    ]
    w = World(types, options=Options(feature_gates={"SpotToSpotConsolidation": gate}))
    w.nodepool()
    w.pod(node=w.node("a", instance_type=f"s{n_types - 1}", capacity_type="spot"))
    return w


def test_spot_to_spot_is_off_without_the_feature_gate() -> None:
    w = spot_world(20, gate=False)
    assert run(w) == []
    assert unconsolidatable(w) == [
        "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"
    ]


def test_spot_to_spot_needs_fifteen_cheaper_types() -> None:
    w = spot_world(5, gate=True)
    assert run(w) == []
    assert unconsolidatable(w) == [
        "SpotToSpotConsolidation requires 15 cheaper instance type options than the current "
        "candidate to consolidate, got 4"
    ]


def test_spot_to_spot_launches_the_cheapest_fifteen() -> None:
    w = spot_world(18, gate=True)
    (cmd,) = run(w)
    offered = [i.name for i in cmd.replacements[0].instance_types_by_price()]
    assert offered == [f"s{i}" for i in range(15)]


# --- budgets, memo, timeout, order --------------------------------------------------------------


def two_nodes_one_deletable(world: World) -> None:
    a = world.node("a")
    b = world.node("b")
    world.pod(node=a)
    world.pod(node=a)
    world.pod(node=b)


def test_a_zero_budget_blocks_and_does_not_memoise(world: World) -> None:
    two_nodes_one_deletable(world)
    method = method_of(world)
    assert world.compute(method, {"default": 0}) == []
    assert not method.is_consolidated(world.snapshot())
    assert world.compute(method, dict(ALL))


class CountingSimulation:
    def __init__(
        self, world: World, monkeypatch: pytest.MonkeyPatch, advance: timedelta | None = None
    ) -> None:
        self.clock = world.clock
        self.calls = 0
        self.real = simulate_scheduling
        self.advance = advance
        monkeypatch.setattr(consolidation_module, "simulate_scheduling", self)

    def __call__(self, snapshot, cands, **kw):  # type: ignore[no-untyped-def]
        self.calls += 1
        if self.advance is not None:
            self.clock.advance(self.advance.total_seconds())
        return self.real(snapshot, cands, **kw)


def test_a_pass_that_finds_nothing_is_not_repeated_until_state_changes(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.pod(node=world.node("a", instance_type="fake-it-1"))
    sim = CountingSimulation(world, monkeypatch)
    method = method_of(world)
    assert world.compute(method, dict(ALL)) == []
    assert method.is_consolidated(world.snapshot()) and sim.calls == 1
    assert world.compute(method, dict(ALL)) == []
    assert sim.calls == 1
    world.clock.advance(1)
    world.cluster.mark_unconsolidated()
    world.compute(method, dict(ALL))
    assert sim.calls == 2


def test_the_pass_gives_up_after_three_minutes(monkeypatch: pytest.MonkeyPatch) -> None:
    w = World()
    for pool in ("p1", "p2", "p3"):
        w.nodepool(pool)
        # 1.5 CPU on a 2-CPU type: fits nowhere else, and no cheaper type holds it
        w.pod(node=w.node(f"{pool}-a", nodepool=pool, instance_type="fake-it-1"), cpu="1.5")
    sim = CountingSimulation(w, monkeypatch, advance=timedelta(minutes=2))
    method = method_of(w)
    budgets = {"p1": 1, "p2": 1, "p3": 1}
    assert w.compute(method, budgets) == []
    # 2 minutes per simulation: the third candidate starts after the deadline
    assert sim.calls == 2
    assert (
        metrics.sample(
            "karpenter_voluntary_disruption_consolidation_timeouts_total",
            {"consolidation_type": "single"},
        )
        == 1.0
    )
    assert method.previously_unseen_nodepools == frozenset({"p3"})
    assert not method.is_consolidated(w.snapshot())
    # the next pass starts with the NodePool it never reached
    assert method.order(w.method_candidates(method, w.snapshot()))[0].nodepool_name() == "p3"


def test_order_is_best_ratio_first_interleaved_across_nodepools() -> None:
    w = World()
    w.nodepool("a")
    w.nodepool("b")
    for name, pool, pods in (("a1", "a", 1), ("a2", "a", 3), ("a3", "a", 2), ("b1", "b", 2)):
        n = w.node(name, nodepool=pool)
        for _ in range(pods):
            w.pod(node=n)
    method = method_of(w)
    ordered = [c.name() for c in method.order(w.candidates("graceful"))]
    # equal prices: fewer pods is a better ratio; pools alternate a, b, a, a
    assert ordered == ["a1", "b1", "a3", "a2"]


def test_interleave_puts_named_pools_first() -> None:
    w = World()
    for pool in ("a", "b", "c"):
        w.nodepool(pool)
        w.pod(node=w.node(f"{pool}1", nodepool=pool))
    cands: Sequence[Candidate] = w.candidates("graceful")
    assert [c.name() for c in interleave(cands, {"c"})] == ["c1", "a1", "b1"]


# --- validation -------------------------------------------------------------------------------


def command(world: World) -> tuple[SingleNodeConsolidation, Command]:
    method = method_of(world)
    (cmd,) = world.compute(method, dict(ALL))
    return method, cmd


def test_an_unchanged_command_validates(world: World) -> None:
    two_nodes_one_deletable(world)
    method, cmd = command(world)
    world.clock.advance(15)
    assert world.validate(method, cmd) is cmd


def test_a_candidate_nominated_meanwhile_is_no_longer_a_candidate(world: World) -> None:
    two_nodes_one_deletable(world)
    method, cmd = command(world)
    world.cluster.nominate_node_for_pod(world.pid("b"))
    with pytest.raises(ValidationError) as err:
        world.validate(method, cmd)
    assert err.value.kind == "churn"
    (event, _) = world.events("ConsolidationRejected")
    assert event.message == (
        f"Consolidation rejected: {cmd}, reason: churn (savings: ${cmd.estimated_savings():.2f})"
    )
    assert (
        metrics.sample(
            "karpenter_voluntary_disruption_failed_validations_total",
            {"consolidation_type": "single"},
        )
        == 1.0
    )


def test_a_budget_closed_meanwhile_fails_on_budget(world: World) -> None:
    two_nodes_one_deletable(world)
    method, cmd = command(world)
    world.kube.patch("NodePool", "default", {"spec": {"disruption": {"budgets": [{"nodes": "0"}]}}})
    with pytest.raises(ValidationError) as err:
        world.validate(method, cmd)
    assert err.value.kind == "budget"
    (event, _) = world.events("ConsolidationRejected")
    assert "reason: budget" in event.message


def test_a_do_not_disrupt_pod_binding_meanwhile_is_churn(world: World) -> None:
    # Scenario 30: the candidate stops being a candidate during the wait.
    two_nodes_one_deletable(world)
    method, cmd = command(world)
    world.pod(node="b", annotations={"karpenter.sh/do-not-disrupt": "true"})
    with pytest.raises(ValidationError) as err:
        world.validate(method, cmd)
    assert err.value.kind == "churn"


def test_a_pod_under_a_blocking_pdb_binding_meanwhile_is_churn(world: World) -> None:
    two_nodes_one_deletable(world)
    method, cmd = command(world)
    world.pdb(labels={"app": "guarded"}, max_unavailable=0, disruptions_allowed=0)
    world.pod(node="b", labels={"app": "guarded"})
    with pytest.raises(ValidationError) as err:
        world.validate(method, cmd)
    assert err.value.kind == "churn"


def test_pods_added_elsewhere_that_change_the_result_fail_on_scheduling(world: World) -> None:
    # B's pod no longer fits on A: deleting B would now need a new node.
    two_nodes_one_deletable(world)
    method, cmd = command(world)
    world.pod(node="a", cpu="1.5")
    with pytest.raises(ValidationError) as err:
        world.validate(method, cmd)
    assert err.value.kind == "scheduling"


def test_a_replacement_whose_types_changed_during_the_wait_fails_on_scheduling(
    world: World,
) -> None:
    # Planned: the types cheaper than fake-it-4 that hold one 1-CPU pod. A second pod
    # binds meanwhile and the smallest of them no longer fits.
    world.pod(node=world.node("a", instance_type="fake-it-4"))
    method, cmd = command(world)
    planned = {i.name for i in cmd.replacements[0].instance_types_by_price()}
    assert "fake-it-1" in planned
    world.pod(node="a", cpu="1")
    with pytest.raises(ValidationError) as err:
        world.validate(method, cmd)
    assert err.value.kind == "scheduling"


# --- balanced -----------------------------------------------------------------------------------


def test_balanced_replaces_an_oversized_node_and_says_why() -> None:
    # Scenario 34: one 500m pod on the biggest type, in a pool of four nodes.
    w = World()
    w.nodepool(policy="Balanced")
    w.pod(node=w.node("big", instance_type="fake-it-4"), cpu="500m")
    for i in range(3):
        n = w.node(f"small{i}", instance_type="fake-it-0")
        w.pod(node=n, cpu="500m")
    (cmd,) = run(w)
    assert [c.name() for c in cmd.candidates] == ["big"]
    (event, _) = w.events("ConsolidationApproved")
    assert "k: 2" in event.message and ">= threshold 0.50" in event.message


def test_balanced_leaves_a_well_packed_cheapest_node_alone() -> None:
    w = World([fakecatalog.instance_type("only", cpu=32, memory_gi=64, pods=110)])
    w.nodepool(policy="Balanced")
    n = w.node("packed", instance_type="only")
    for _ in range(8):
        w.pod(node=n, cpu="3.5")
    assert run(w) == []


# --- destinations ---------------------------------------------------------------------------


def one_type_world(consolidate_after: str = "0s") -> World:
    """A catalogue of one type: no replacement is ever cheaper, only deletes happen."""
    w = World([fakecatalog.instance_type("only", cpu=4, memory_gi=8, pods=20)])
    w.nodepool(consolidate_after=consolidate_after)
    return w


def two_nodes_in_a_one_minute_window() -> World:
    """A with two pods and B with one, consolidateAfter 1m, both just changed."""
    w = one_type_world("1m")
    a = w.node("a", instance_type="only")
    b = w.node("b", instance_type="only")
    w.pod(node=a)
    w.pod(node=a)
    w.pod(node=b)
    return w


def test_pods_do_not_move_onto_a_node_inside_its_consolidate_after_window() -> None:
    # Scenario 20: A's pods changed less than consolidateAfter ago, so it is no
    # destination yet; two minutes later B's pod may move there.
    w = two_nodes_in_a_one_minute_window()
    assert run(w) == []
    w.clock.advance(120)
    w.cluster.mark_unconsolidated()
    (cmd,) = run(w)
    assert cmd.decision == DECISION_DELETE


def test_new_pod_events_close_the_destinations_again() -> None:
    """The window's start is read from the NodeClaim each pass sees (kept while it is the
    same object): pod events recorded on A and B after their windows passed gate them
    once more, and neither can take the other's pods."""
    w = two_nodes_in_a_one_minute_window()
    w.clock.advance(120)
    w.cluster.mark_unconsolidated()
    (cmd,) = run(w)
    assert cmd.decision == DECISION_DELETE
    for name in ("a", "b"):
        nc = w.kube.get("nodeclaims", name)
        stamped = w.set_status(nc, {"lastPodEventTime": format_time(w.clock.now())})
        w.cluster.update_nodeclaim(stamped)
    w.cluster.mark_unconsolidated()
    assert run(w) == []


def test_a_destination_in_a_never_nodepool_is_usable_at_once() -> None:
    w = one_type_world("1m")
    w.nodepool("keep", consolidate_after="Never")
    a = w.node("a", nodepool="keep", instance_type="only")
    b = w.node("b", instance_type="only")
    w.pod(node=a)
    w.pod(node=b)
    (cmd,) = run(w, {"default": 1, "keep": 1})
    assert [c.name() for c in cmd.candidates] == ["b"]


def test_pods_never_move_onto_a_node_that_has_not_initialized() -> None:
    # Scenario 22: the room on A may never come.
    w = one_type_world()
    w.node("a", instance_type="only", initialized=False)
    w.pod(node=w.node("b", instance_type="only"))
    assert run(w) == []
    (msg,) = unconsolidatable(w)
    assert msg.startswith("Not all pods would schedule")


# --- reserved capacity ------------------------------------------------------------------------


@pytest.mark.parametrize("capacity_type", ["on-demand", "spot", "reserved"])
def test_a_node_moves_into_a_near_free_reservation_of_its_own_type(capacity_type: str) -> None:
    # Scenario 32 (ReservedCapacity gate on).
    with fakecatalog.registered_labels():
        m = fakecatalog.instance_type(
            "m",
            offerings=[
                fakecatalog.offering("on-demand", "test-zone-1", 1.0),
                fakecatalog.offering("spot", "test-zone-1", 0.8),
                fakecatalog.offering("reserved", "test-zone-1", 0.5, reservation_id="r-old"),
                fakecatalog.offering(
                    "reserved", "test-zone-1", 0.00001, reservation_id="r1", reservation_capacity=1
                ),
            ],
        )
        gates = {"ReservedCapacity": True, "SpotToSpotConsolidation": True}
        w = World([m], options=Options(feature_gates=gates))
        w.nodepool()
        extra = {"karpenter.sh/reservation-id": "r-old"} if capacity_type == "reserved" else {}
        w.pod(node=w.node("a", instance_type="m", capacity_type=capacity_type, labels=extra))
        (cmd,) = run(w)
        reqs = cmd.replacements[0].launch_requirements()
    assert cmd.decision == DECISION_REPLACE
    assert reqs.get(CAPACITY_TYPE_LABEL_KEY).values == {"reserved"}
    assert reqs.get("karpenter.sh/reservation-id").values == {"r1"}
