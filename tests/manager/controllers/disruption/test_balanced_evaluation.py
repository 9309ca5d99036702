"""The Balanced consolidation evaluator over a cluster (spec disruption §10, scenarios
34-35): NodePool totals from the candidates and the cost tracker, approvals and their events."""

from __future__ import annotations

import attrs
import pytest
from disruption_harness import World

from karpenter_core import metrics
from karpenter_core.apis.labels import DO_NOT_DISRUPT_ANNOTATION_KEY
from karpenter_core.disruption.methods.balanced import (
    BalancedEvaluator,
    NodePoolTotals,
    NoopEvaluator,
    compute_nodepool_totals,
    evaluate_balanced_move,
)
from karpenter_core.disruption.methods.consolidation import new_command, node_disruption_cost
from karpenter_core.disruption.methods.singlenode import SingleNodeConsolidation
from karpenter_core.disruption.notices import Notice
from karpenter_core.disruption.types import CLASS_GRACEFUL, Candidate
from karpenter_core.state.cost import ClusterCost, cluster_cost_of

# --- with candidates ------------------------------------------------------------------------


def candidates(world: World) -> dict[str, Candidate]:
    return {c.name(): c for c in world.candidates(CLASS_GRACEFUL)}


def priced(c: Candidate, price: float) -> Candidate:
    return attrs.evolve(c, price=price)


@pytest.fixture
def pool() -> World:
    w = World()
    w.nodepool("bal", policy="Balanced")
    for i in range(5):
        w.pod(node=w.node(f"n{i}", nodepool="bal"))
    return w


def test_totals_sum_every_candidates_price_and_disruption(pool: World) -> None:
    cands = [priced(c, 4.84) for c in candidates(pool).values()]
    totals = compute_nodepool_totals(cands, pool.cluster.state_nodes(), node_disruption_cost)
    assert totals["bal"].total_cost == pytest.approx(5 * 4.84)
    # each node: 1 (draining it) + 1 (one pod with the default eviction cost)
    assert totals["bal"].total_disruption_cost == pytest.approx(10.0)


def test_non_candidate_nodes_still_count_towards_disruption(pool: World) -> None:
    cands = [priced(c, 4.84) for name, c in candidates(pool).items() if name != "n0"]
    totals = compute_nodepool_totals(cands, pool.cluster.state_nodes(), node_disruption_cost)
    assert totals["bal"].total_cost == pytest.approx(4 * 4.84)
    assert totals["bal"].total_disruption_cost == pytest.approx(10.0)


def test_daemonset_pods_do_not_add_to_a_non_candidates_disruption(pool: World) -> None:
    pool.pod(node="n0", owner="DaemonSet")
    (n0,) = [sn for sn in pool.cluster.state_nodes() if sn.name() == "n0"]
    assert node_disruption_cost(n0) == pytest.approx(2.0)


def test_zero_priced_candidates_add_disruption_but_no_cost(pool: World) -> None:
    cands = list(candidates(pool).values())
    cands = [priced(cands[0], 0.0)] + [priced(c, 4.84) for c in cands[1:]]
    totals = compute_nodepool_totals(cands, pool.cluster.state_nodes(), node_disruption_cost)
    assert totals["bal"].total_cost == pytest.approx(4 * 4.84)
    assert totals["bal"].total_disruption_cost == pytest.approx(10.0)


def test_a_tracked_nodepool_cost_wins_over_the_candidates_sum(pool: World) -> None:
    cands = [priced(c, 1.0) for c in candidates(pool).values()]
    totals = compute_nodepool_totals(
        cands, pool.cluster.state_nodes(), node_disruption_cost, lambda name: 42.0
    )
    assert totals["bal"].total_cost == 42.0


# --- the NodePool cost from the cluster cost tracker ---------------------------------------------


@pytest.fixture
def guarded() -> World:
    """A Balanced pool of five equal nodes where only n0 is a candidate: n0 runs four pods,
    the other four are do-not-disrupt nodes without pods."""
    w = World()
    w.nodepool("bal", policy="Balanced")
    n0 = w.node("n0", nodepool="bal")
    for _ in range(4):
        w.pod(node=n0)
    for i in range(1, 5):
        w.node(f"g{i}", nodepool="bal", node_annotations={DO_NOT_DISRUPT_ANNOTATION_KEY: "true"})
    return w


def track(world: World) -> ClusterCost:
    """The process's tracker, fed every NodeClaim (as state.nodeclaim would)."""
    cost = cluster_cost_of(world.ctx)
    for nc in world.kube.list("nodeclaims").items:
        assert cost.update_nodeclaim(nc) is None
    return cost


def test_without_a_tracker_there_is_no_tracked_cost_to_read(guarded: World) -> None:
    assert guarded.snapshot().nodepool_costs is None
    cands = list(candidates(guarded).values())
    totals = compute_nodepool_totals(cands, guarded.cluster.state_nodes(), node_disruption_cost)
    assert totals["bal"].total_cost == pytest.approx(sum(c.price for c in cands))


def test_the_tracked_pool_cost_includes_nodes_that_are_not_candidates(guarded: World) -> None:
    cands = candidates(guarded)
    assert set(cands) == {"n0"}
    cost = track(guarded)
    price = cands["n0"].price  # every node is the same offering
    assert price > 0
    assert cost.nodepool_cost("bal") == pytest.approx(5 * price)
    totals = compute_nodepool_totals(
        list(cands.values()),
        guarded.cluster.state_nodes(),
        node_disruption_cost,
        guarded.snapshot().nodepool_cost,
    )
    assert totals["bal"].total_cost == pytest.approx(5 * price)


def test_a_tracker_that_knows_nothing_of_the_pool_falls_back_to_candidate_prices(
    guarded: World,
) -> None:
    cluster_cost_of(guarded.ctx)  # exists, but nothing fed it
    cands = list(candidates(guarded).values())
    totals = compute_nodepool_totals(
        cands,
        guarded.cluster.state_nodes(),
        node_disruption_cost,
        guarded.snapshot().nodepool_cost,
    )
    assert totals["bal"].total_cost == pytest.approx(sum(c.price for c in cands))


def test_the_tracked_pool_cost_turns_an_approval_into_a_rejection(guarded: World) -> None:
    # Deleting n0 saves its price. Against the candidates' sum (n0 alone) that is 100% of
    # the pool's cost; against the tracked cost of all five nodes, 20%. The disruption
    # share is the same either way (n0's pods against the whole pool), and is above
    # 0.2 / 0.5 = 40%, so only the fallback reaches the threshold.
    method = guarded.method(SingleNodeConsolidation)
    cands = list(candidates(guarded).values())
    (n0,) = cands
    move = new_command([n0])

    method.begin_pass(guarded.snapshot(), cands)
    before_ok, before = method.evaluator.approve_command(move, [])
    assert method.evaluator.can_pass_threshold(n0)

    track(guarded)
    method.begin_pass(guarded.snapshot(), cands)
    after_ok, after = method.evaluator.approve_command(move, [])

    assert before is not None and after is not None
    assert before["bal"].savings_fraction == pytest.approx(1.0)
    assert after["bal"].savings_fraction == pytest.approx(1 / 5)
    assert after["bal"].disruption_fraction == before["bal"].disruption_fraction > 0.4
    assert before_ok and before["bal"].score >= 0.5
    assert not after_ok and after["bal"].score < 0.5
    assert not method.evaluator.can_pass_threshold(n0)


def test_non_balanced_pools_are_not_scored_and_never_block() -> None:
    w = World()
    w.nodepool("plain")
    for i in range(5):
        w.pod(node=w.node(f"n{i}", nodepool="plain"))
    cands = [priced(c, 4.84) for c in candidates(w).values()]
    totals = compute_nodepool_totals(cands, w.cluster.state_nodes(), node_disruption_cost)
    approved, per_pool = evaluate_balanced_move(new_command(cands[:2]), totals)
    assert approved
    assert per_pool == {}


def test_a_balanced_pool_missing_from_the_totals_is_rejected(pool: World) -> None:
    c = priced(candidates(pool)["n0"], 4.84)
    approved, per_pool = evaluate_balanced_move(new_command([c]), {})
    assert not approved
    assert per_pool is not None and per_pool["bal"].score == 0.0


def test_deleting_one_of_ten_equal_nodes_is_approved() -> None:
    w = World()
    w.nodepool("bal", policy="Balanced")
    for i in range(10):
        w.pod(node=w.node(f"n{i}", nodepool="bal"))
    cands = [priced(c, 4.84) for c in candidates(w).values()]
    totals = compute_nodepool_totals(cands, w.cluster.state_nodes(), node_disruption_cost)
    approved, per_pool = evaluate_balanced_move(new_command(cands[:1]), totals)
    # savings 10% of cost, disruption 10% of disruption: score 1.0
    assert per_pool is not None and per_pool["bal"].score == pytest.approx(1.0)
    assert approved


def test_cross_pool_savings_split_by_source_cost_and_every_pool_must_approve() -> None:
    w = World()
    w.nodepool("a", policy="Balanced")
    w.nodepool("b", policy="Balanced")
    for pool in ("a", "b"):
        for i in range(4):
            w.pod(node=w.node(f"{pool}{i}", nodepool=pool))
    cs = candidates(w)
    # pool a: four nodes at 3.0; pool b: four at 1.0
    cands = [priced(c, 3.0 if name.startswith("a") else 1.0) for name, c in cs.items()]
    totals = compute_nodepool_totals(cands, w.cluster.state_nodes(), node_disruption_cost)
    move = [c for c in cands if c.name() in ("a0", "b0")]
    approved, per_pool = evaluate_balanced_move(new_command(move), totals)
    assert per_pool is not None
    # savings 4.0 split 3:1 -> a saves 3.0 of 12.0, b saves 1.0 of 4.0; each moves 2 of 8
    assert per_pool["a"].savings_fraction == pytest.approx(3.0 / 12.0)
    assert per_pool["b"].savings_fraction == pytest.approx(1.0 / 4.0)
    assert per_pool["a"].disruption_fraction == pytest.approx(2.0 / 8.0)
    assert approved
    # a pool whose share is too small to pass blocks the whole move
    lopsided = {"a": totals["a"], "b": NodePoolTotals(400.0, 8.0)}
    approved, per_pool = evaluate_balanced_move(new_command(move), lopsided)
    assert per_pool is not None and not per_pool["b"].approved
    assert not approved


def test_mixed_pools_only_score_the_balanced_one() -> None:
    w = World()
    w.nodepool("bal", policy="Balanced")
    w.nodepool("plain")
    w.pod(node=w.node("x", nodepool="bal"))
    w.pod(node=w.node("y", nodepool="plain"))
    cands = list(candidates(w).values())
    totals = compute_nodepool_totals(cands, w.cluster.state_nodes(), node_disruption_cost)
    _, per_pool = evaluate_balanced_move(new_command(cands), totals)
    assert per_pool is not None and set(per_pool) == {"bal"}


# --- the evaluator's side effects -------------------------------------------------------------


def test_approving_a_single_node_move_publishes_the_score(pool: World) -> None:
    cands = [priced(c, 4.84) for c in candidates(pool).values()]
    totals = compute_nodepool_totals(cands, pool.cluster.state_nodes(), node_disruption_cost)
    ev = BalancedEvaluator(totals)
    notices: list[Notice] = []
    approved, _ = ev.approve_command(new_command(cands[:1]), notices)
    assert approved
    pool.publish(notices)
    (event, _nc_event) = pool.events("ConsolidationApproved")
    assert "k: 2" in event.message and ">= threshold 0.50" in event.message
    labels = {"decision": "approved", "nodepool": "bal", "policy": "Balanced"}
    assert metrics.sample("karpenter_consolidation_moves_total", labels) == 1.0


def test_a_rejected_move_is_counted_but_publishes_no_event(pool: World) -> None:
    cands = [priced(c, 4.84) for c in candidates(pool).values()]
    ev = BalancedEvaluator({"bal": NodePoolTotals(1000.0, 10.0)})
    notices: list[Notice] = []
    approved, _ = ev.approve_command(new_command(cands[:1]), notices)
    assert not approved
    assert notices == []
    assert pool.events("ConsolidationApproved") == []
    labels = {"decision": "rejected", "nodepool": "bal", "policy": "Balanced"}
    assert metrics.sample("karpenter_consolidation_moves_total", labels) == 1.0


def test_can_pass_threshold_scores_a_pure_delete(pool: World) -> None:
    c = priced(candidates(pool)["n0"], 4.84)
    assert BalancedEvaluator({"bal": NodePoolTotals(24.2, 10.0)}).can_pass_threshold(c)
    assert not BalancedEvaluator({"bal": NodePoolTotals(1000.0, 10.0)}).can_pass_threshold(c)
    # unknown totals or a pool of another policy never filter
    assert BalancedEvaluator({}).can_pass_threshold(c)
    plain = World()
    plain.nodepool()
    plain.pod(node=plain.node("p"))
    (pc,) = candidates(plain).values()
    assert BalancedEvaluator({"default": NodePoolTotals(1000.0, 10.0)}).can_pass_threshold(pc)


def test_multi_node_approval_is_published_on_the_nodepool(pool: World) -> None:
    cands = [priced(c, 4.84) for c in candidates(pool).values()]
    totals = compute_nodepool_totals(cands, pool.cluster.state_nodes(), node_disruption_cost)
    ev = BalancedEvaluator(totals)
    command = new_command(cands[:2])
    notices: list[Notice] = []
    approved, per_pool = ev.approve_command(command, notices)
    assert approved and per_pool is not None
    assert notices == []  # multi-node: nothing per step
    pool.publish(ev.emit_multi_node_events(command, per_pool, True))
    (event,) = pool.events("ConsolidationApproved")
    assert event.kind == "NodePool" and event.name == "bal"


def test_noop_evaluator_approves_everything(pool: World) -> None:
    c = priced(candidates(pool)["n0"], 0.0)
    ev = NoopEvaluator()
    assert ev.approve_command(new_command([c]), []) == (True, None)
    assert ev.can_pass_threshold(c)
