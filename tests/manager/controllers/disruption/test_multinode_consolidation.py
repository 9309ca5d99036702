"""Multi-node consolidation end to end over the scheduling simulation (spec disruption §9
"Multi-node", scenarios 27-30)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from disruption_harness import World

from karpenter_core import metrics
from karpenter_core.apis.labels import CAPACITY_TYPE_LABEL_KEY
from karpenter_core.disruption.methods import consolidation as consolidation_module
from karpenter_core.disruption.methods.multinode import MultiNodeConsolidation
from karpenter_core.disruption.methods.singlenode import SingleNodeConsolidation
from karpenter_core.disruption.simulation import simulate_scheduling
from karpenter_core.disruption.types import (
    DECISION_DELETE,
    DECISION_REPLACE,
    Command,
    ValidationError,
)

ALL = {"default": 100}


def method_of(world: World) -> MultiNodeConsolidation:
    method: MultiNodeConsolidation = world.method(MultiNodeConsolidation)
    return method


def run(world: World, budgets: dict[str, int] | None = None) -> list[Command]:
    return world.compute(method_of(world), dict(budgets or ALL))


def names(cmd: Command) -> list[str]:
    return sorted(c.name() for c in cmd.candidates)


def test_three_expensive_nodes_with_a_small_pod_each_become_one_cheaper_node() -> None:
    # Scenario 27.
    w = World()
    w.nodepool()
    for name in ("a", "b", "c"):
        w.pod(node=w.node(name, instance_type="fake-it-4"), cpu="500m")
    (cmd,) = run(w)
    assert cmd.decision == DECISION_REPLACE
    assert names(cmd) == ["a", "b", "c"]
    (replacement,) = cmd.replacements
    offered = {i.name for i in replacement.instance_types_by_price()}
    assert offered and "fake-it-4" not in offered
    assert cmd.estimated_savings() > 0


def test_spot_and_on_demand_candidates_can_merge() -> None:
    w = World()
    w.nodepool()
    for name, ct in (("a", "spot"), ("b", "on-demand"), ("c", "spot")):
        w.pod(node=w.node(name, instance_type="fake-it-4", capacity_type=ct), cpu="500m")
    (cmd,) = run(w)
    assert names(cmd) == ["a", "b", "c"]
    reqs = cmd.replacements[0].launch_requirements()
    assert reqs.get(CAPACITY_TYPE_LABEL_KEY).values == {"spot"}


def test_nodes_whose_pods_fit_on_another_node_are_deleted_together() -> None:
    w = World()
    w.nodepool()
    # big is not a candidate itself (were it first in line, every batch would include it)
    big = w.node("big", instance_type="fake-it-4", consolidatable=False)
    w.pod(node=big, cpu="2")
    w.pod(node=big, cpu="2")  # ~1 CPU left on big
    # two small nodes whose single pods fit in what big has left
    for name in ("s1", "s2"):
        w.pod(node=w.node(name, instance_type="fake-it-1"), cpu="400m")
    (cmd,) = run(w)
    assert cmd.decision == DECISION_DELETE
    assert names(cmd) == ["s1", "s2"]


def test_replacing_with_a_type_being_removed_is_not_a_command() -> None:
    # Two fake-it-3 nodes whose pods only fit one fake-it-3: "replace both by a fake-it-3"
    # is deleting one of them, which single-node consolidation does with less churn.
    w = World()
    w.nodepool()
    for name in ("a", "b"):
        n = w.node(name, instance_type="fake-it-3")
        w.pod(node=n, cpu="1.5")
    assert run(w) == []


def test_budgets_cap_the_batch() -> None:
    w = World()
    w.nodepool()
    for name in ("a", "b", "c"):
        w.pod(node=w.node(name, instance_type="fake-it-4"), cpu="500m")
    method = method_of(w)
    budgets = {"default": 2}
    (cmd,) = w.compute(method, budgets)
    assert len(cmd.candidates) == 2
    assert budgets == {"default": 0}


def test_a_zero_budget_finds_nothing_and_does_not_memoise() -> None:
    w = World()
    w.nodepool()
    for name in ("a", "b"):
        w.pod(node=w.node(name, instance_type="fake-it-4"), cpu="500m")
    method = method_of(w)
    assert w.compute(method, {"default": 0}) == []
    assert not method.is_consolidated(w.snapshot())


def test_one_candidate_is_left_to_single_node() -> None:
    w = World()
    w.nodepool()
    w.pod(node=w.node("a", instance_type="fake-it-4"), cpu="500m")
    method = method_of(w)
    assert w.compute(method, dict(ALL)) == []
    assert method.is_consolidated(w.snapshot())


def test_no_unconsolidatable_events_for_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    # Multi-node tries many batches; only single-node explains a node's rejection.
    w = World()
    w.nodepool()
    for name in ("a", "b"):
        w.pod(node=w.node(name, instance_type="fake-it-1"), cpu="1.5")
    assert run(w) == []
    assert w.events("Unconsolidatable") == []


def test_the_search_stops_after_a_minute_with_the_best_so_far(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    w = World()
    w.nodepool()
    for i in range(8):
        w.pod(node=w.node(f"n{i}", instance_type="fake-it-4"), cpu="200m")
    real = simulate_scheduling
    sizes: list[int] = []

    def slow(snapshot: Any, cands: Any, **kw: Any) -> Any:
        sizes.append(len(cands))
        w.clock.advance(40)
        return real(snapshot, cands, **kw)

    monkeypatch.setattr(consolidation_module, "simulate_scheduling", slow)
    (cmd,) = run(w)
    # 40 s per simulation: the first two ran before the deadline, the third did not start
    assert len(sizes) == 2
    assert len(cmd.candidates) == sizes[-1]
    assert (
        metrics.sample(
            "karpenter_voluntary_disruption_consolidation_timeouts_total",
            {"consolidation_type": "multi"},
        )
        == 1.0
    )


def test_validation_failure_raises_without_events() -> None:
    # Scenario 29: pods land on the survivors during the wait.
    w = World()
    w.nodepool()
    big = w.node("big", instance_type="fake-it-4", consolidatable=False)
    w.pod(node=big, cpu="2")
    w.pod(node=big, cpu="2")
    for name in ("s1", "s2"):
        w.pod(node=w.node(name, instance_type="fake-it-1"), cpu="400m")
    method = method_of(w)
    (cmd,) = w.compute(method, dict(ALL))
    assert w.validate(method, cmd) is cmd
    w.pod(node="big", cpu="900m")
    w.clock.advance(timedelta(seconds=15).total_seconds())
    with pytest.raises(ValidationError) as err:
        w.validate(method, cmd)
    assert err.value.kind == "scheduling"
    assert w.events("ConsolidationRejected") == []


def test_a_balanced_multi_node_move_is_scored_once_per_nodepool() -> None:
    w = World()
    w.nodepool(policy="Balanced")
    for name in ("a", "b", "c"):
        w.pod(node=w.node(name, instance_type="fake-it-4"), cpu="500m")
    (cmd,) = run(w)
    assert len(cmd.candidates) == 3
    (event,) = w.events("ConsolidationApproved")
    assert event.kind == "NodePool" and event.name == "default"
    assert "k: 2" in event.message
    assert (
        metrics.sample(
            "karpenter_consolidation_moves_total",
            {"decision": "approved", "nodepool": "default", "policy": "Balanced"},
        )
        == 1.0
    )
    assert (
        metrics.sample(
            "karpenter_consolidation_score_count",
            {"decision": "approved", "nodepool": "default", "policy": "Balanced"},
        )
        == 1.0
    )


def test_a_balanced_move_below_the_threshold_is_not_made() -> None:
    # Two cheap nodes full of small pods: removing them saves little of the pool's cost
    # (three pricey nodes stay) but moves most of its pods.
    w = World()
    w.nodepool(policy="Balanced")
    for name in ("a", "b"):
        n = w.node(name, instance_type="fake-it-1")
        for _ in range(10):
            w.pod(node=n, cpu="10m")
    for name in ("x", "y", "z"):
        w.pod(node=w.node(name, instance_type="fake-it-4", consolidatable=False), cpu="100m")
    assert run(w) == []
    assert w.events("ConsolidationApproved") == []
    assert (
        metrics.sample(
            "karpenter_consolidation_moves_total",
            {"decision": "rejected", "nodepool": "default", "policy": "Balanced"},
        )
        == 1.0
    )


def test_a_multi_node_move_in_another_policy_is_counted_but_not_scored() -> None:
    w = World()
    w.nodepool()
    for name in ("a", "b", "c"):
        w.pod(node=w.node(name, instance_type="fake-it-4"), cpu="500m")
    (cmd,) = run(w)
    assert len(cmd.candidates) == 3
    assert w.events("ConsolidationApproved") == []
    labels = {"decision": "approved", "nodepool": "default", "policy": "WhenEmptyOrUnderutilized"}
    assert metrics.sample("karpenter_consolidation_moves_total", labels) == 1.0
    assert metrics.samples("karpenter_consolidation_score_count") == []


def test_after_a_failed_multi_node_validation_single_node_goes_in_the_same_pass() -> None:
    # Scenario 29: three expensive nodes with one pod each would merge into one; during
    # the wait pods bind to nodes 1 and 2, so the merge no longer holds, and single-node
    # consolidation removes node 3 (its pod fits next to the others) instead.
    w = World()
    w.nodepool()
    for name in ("n1", "n2", "n3"):
        w.pod(node=w.node(name, instance_type="fake-it-4"), cpu="1")
    controller = w.controller(
        MultiNodeConsolidation, SingleNodeConsolidation, validation_period=15.0
    )
    assert controller.reconcile().requeue_after == 15.0  # multi-node's command is held
    assert not controller.started
    w.pod(node="n1", cpu="1")
    w.pod(node="n2", cpu="1")
    w.clock.advance(15)
    assert controller.reconcile().requeue_after == 15.0  # now single-node's is held
    w.clock.advance(15)
    controller.reconcile()
    (started,) = list(controller.started)
    assert started.consolidation_type == "single"
    assert started.decision == DECISION_DELETE
    assert [c.name() for c in started.candidates] == ["n3"]


def test_started_commands_are_kept_without_their_scheduling_simulation() -> None:
    """The controller's history of started commands drops each one's simulation results
    (the solver's view of the whole cluster at that pass); listeners and the queue get
    the command whole."""
    w = World()
    w.nodepool()
    for name in ("a", "b", "c"):
        w.pod(node=w.node(name, instance_type="fake-it-4"), cpu="500m")
    controller = w.controller(MultiNodeConsolidation, validation_period=0.0)
    heard: list[Command] = []
    controller.on_start(heard.append)
    controller.reconcile()
    (whole,) = heard
    (kept,) = list(controller.started)
    assert whole.results is not None and kept.results is None
    assert names(kept) == names(whole) == ["a", "b", "c"]
    assert kept.id == whole.id and kept.decision == whole.decision == DECISION_REPLACE
    assert kept.estimated_savings() == whole.estimated_savings() > 0
