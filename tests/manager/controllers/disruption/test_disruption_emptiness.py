"""Emptiness (spec disruption §7, scenarios 6, 10, 11, 16-18)."""

from __future__ import annotations

from disruption_harness import World

from karpenter_core import metrics
from karpenter_core.disruption.methods.emptiness import Emptiness


def _world(**pool: object) -> World:
    w = World()
    w.nodepool(**pool)  # type: ignore[arg-type]
    return w


def test_an_empty_consolidatable_node_is_deleted() -> None:
    world = _world()
    world.node("empty")
    world.node("busy")
    world.pod(node="busy")
    world.node("fresh", consolidatable=False)
    c = world.controller(Emptiness)
    c.reconcile()
    assert world.tainted() == ["empty"]
    world.execute()
    assert world.node_names() == ["busy", "fresh"]
    decisions = metrics.VOLUNTARY_DISRUPTION_DECISIONS_TOTAL.labels(
        decision="delete", reason="empty", consolidation_type="empty"
    )
    assert decisions._value.get() == 1


def test_daemonset_only_and_terminating_deployment_pods_count_as_empty() -> None:
    world = _world()
    world.node("ds")
    world.pod(node="ds", owner="DaemonSet")
    world.node("leaving")
    world.pod(node="leaving", terminating=True)
    world.node("sts")
    world.pod(node="sts", owner="StatefulSet", terminating=True)
    world.controller(Emptiness).reconcile()
    assert world.tainted() == ["ds", "leaving"]


def test_budget_limits_how_many_empty_nodes_go_in_one_command() -> None:
    for budget, expected in (("30%", 3), ("100%", 10)):
        world = _world(budgets=[{"nodes": budget}])
        for i in range(10):
            world.node(f"n{i}")
        c = world.controller(Emptiness)
        c.reconcile()
        assert len(c.started) == 1
        assert len(c.started[0].candidates) == expected
        assert len(world.tainted()) == expected


def test_a_zero_budget_does_nothing_and_does_not_memoise() -> None:
    world = _world(budgets=[{"nodes": "0%"}])
    for i in range(3):
        world.node(f"n{i}")
    c = world.controller(Emptiness)
    (method,) = c.methods
    c.reconcile()
    assert not c.started
    assert method._consolidated is None
    # the budget opens: the same state is looked at again at once
    np = world.kube.get("nodepools", "default")
    np["spec"]["disruption"]["budgets"] = [{"nodes": "100%"}]
    world.kube.update(np)
    c.reconcile()
    assert len(c.started) == 1 and len(c.started[0].candidates) == 3


def test_half_of_each_of_ten_pools_goes_in_one_command() -> None:
    world = World()
    for p in range(10):
        world.nodepool(f"pool-{p}", budgets=[{"nodes": "50%"}])
        for i in range(3):
            world.node(f"p{p}-n{i}", nodepool=f"pool-{p}")
    c = world.controller(Emptiness)
    c.reconcile()
    (cmd,) = c.started
    assert len(cmd.candidates) == 20


def test_node_do_not_disrupt_false_does_not_protect() -> None:
    world = _world()
    world.node("a", node_annotations={"karpenter.sh/do-not-disrupt": "false"})
    world.controller(Emptiness).reconcile()
    assert world.tainted() == ["a"]


def test_consolidation_disabled_means_no_emptiness_and_an_event() -> None:
    world = _world(consolidate_after="Never")
    world.node("a")
    c = world.controller(Emptiness)
    c.reconcile()
    assert not c.started
    assert world.events("Unconsolidatable")[0].message == (
        'NodePool "default" has consolidation disabled'
    )


def test_static_pools_and_nodes_with_buffer_pods_are_never_emptied() -> None:
    world = World()
    world.nodepool("static", replicas=1)
    world.nodepool()
    world.node("s", nodepool="static")
    world.node("buffered")
    world.cluster.update_buffer_pod_counts({world.pid("buffered"): 1})
    c = world.controller(Emptiness)
    c.reconcile()
    assert not c.started
    assert 'Node "buffered" has buffer pods' in [
        e.message for e in world.events("Unconsolidatable")
    ]


def test_with_the_validation_wait_nothing_happens_before_15_seconds() -> None:
    world = _world()
    world.node("a")
    c = world.controller(Emptiness, validation_period=15.0)
    first = c.reconcile()
    assert first.requeue_after == 15.0
    assert world.tainted() == []
    world.clock.advance(10)
    assert c.reconcile().requeue_after == 5.0
    assert world.tainted() == []
    world.clock.advance(5)
    c.reconcile()
    assert world.tainted() == ["a"]


def test_a_pod_binding_during_the_wait_drops_that_node_only() -> None:
    world = _world()
    world.node("a")
    world.node("b")
    c = world.controller(Emptiness, validation_period=15.0)
    c.reconcile()
    world.clock.advance(15)
    world.pod(node="b")
    c.reconcile()
    assert world.tainted() == ["a"]


def test_when_every_node_changed_during_the_wait_nothing_is_disrupted() -> None:
    world = _world()
    world.node("a")
    c = world.controller(Emptiness, validation_period=15.0)
    c.reconcile()
    world.clock.advance(15)
    world.pod(node="a")
    c.reconcile()
    assert not c.started
    failed = metrics.VOLUNTARY_DISRUPTION_FAILED_VALIDATIONS_TOTAL.labels(
        consolidation_type="empty"
    )
    assert failed._value.get() == 1


def test_a_node_nominated_during_the_wait_is_dropped() -> None:
    world = _world()
    world.node("a")
    world.node("b")
    c = world.controller(Emptiness, validation_period=15.0)
    c.reconcile()
    world.clock.advance(15)
    world.cluster.nominate_node_for_pod(world.pid("a"))
    c.reconcile()
    assert world.tainted() == ["b"]
