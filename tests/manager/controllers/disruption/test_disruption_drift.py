"""Drift and static drift (spec disruption §8, scenarios 14, 15, 36-40)."""

from __future__ import annotations

import gc
import types
from datetime import timedelta

from disruption_harness import START, World

from karpenter_core.disruption.methods.drift import Drift
from karpenter_core.disruption.methods.emptiness import Emptiness
from karpenter_core.disruption.methods.staticdrift import StaticDrift
from karpenter_core.disruption.types import Command, RecordedReplacement
from karpenter_core.provisioning.scheduler.instancetypes import InstanceTypeIndex
from karpenter_core.provisioning.scheduler.nodeclaim import NodeClaim as SchedulerNodeClaim
from karpenter_core.provisioning.scheduler.topology import Topology
from karpenter_core.testing import fakecatalog


def test_a_drifted_node_is_replaced_and_deleted_once_the_replacement_is_ready() -> None:
    world = World()
    world.nodepool()
    world.node("old", instance_type="fake-it-0", drifted=True)
    world.pod("p", "old", cpu="500m")
    c = world.controller(Drift)
    c.reconcile()
    (cmd,) = c.started
    assert cmd.decision == "replace" and cmd.reason == "Drifted"
    (replacement,) = world.queue.replacement_names(world.pid("old"))
    assert world.tainted() == ["old"]
    world.execute()
    assert world.node_names() == [replacement]


def test_the_started_history_keeps_replacements_without_the_solve_behind_them() -> None:
    """The history of started commands outlives their passes: a replacement recorded there
    keeps its NodePool, requirements, instance types and price, and nothing reaches the
    solve's instance-type index or topology (a thousand of those held every pass's index:
    a 300-node drift peaked at 700 MB instead of 220)."""
    world = World()
    world.nodepool()
    world.node("old", instance_type="fake-it-0", drifted=True)
    world.pod("p", "old", cpu="500m")
    c = world.controller(Drift)
    launched: list[Command] = []
    c.on_start(launched.append)
    c.reconcile()
    (cmd,) = c.started
    (live,) = launched[0].replacements
    (kept,) = cmd.replacements
    assert isinstance(live, SchedulerNodeClaim) and isinstance(kept, RecordedReplacement)
    assert kept.nodepool_name == live.nodepool_name
    assert kept.requirements == live.requirements
    assert [o.it.name for o in kept.instance_types_by_price()] == [
        o.it.name for o in live.instance_types_by_price()
    ]
    assert cmd.estimated_savings() == launched[0].estimated_savings()
    reachable = _reachable_types(c.started)
    assert InstanceTypeIndex not in reachable and Topology not in reachable
    assert InstanceTypeIndex in _reachable_types(launched)  # the walk does find them


def _reachable_types(root: object) -> set[type]:
    """The types of every object reachable from ``root`` by references, modules aside."""
    seen: set[int] = set()
    found: set[type] = set()
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, (type, types.ModuleType)):
            continue
        seen.add(id(obj))
        found.add(type(obj))
        stack.extend(gc.get_referents(obj))
    return found


def test_an_unplaceable_pod_blocks_that_node_and_the_next_is_tried() -> None:
    world = World()
    world.nodepool()
    world.node("first", drifted=True, drifted_at=START)
    world.pod("huge", "first", cpu="150")
    world.node("second", drifted=True, drifted_at=START + timedelta(minutes=1))
    world.pod("p", "second", cpu="500m")
    c = world.controller(Drift)
    c.reconcile()
    assert [x.name() for x in c.started[0].candidates] == ["second"]
    blocked = [e for e in world.events("DisruptionBlocked") if e.name == "first"]
    assert blocked and "not all pods would schedule" in blocked[0].message.lower()


def test_empty_drifted_nodes_go_before_busy_ones_then_earliest_drift_first() -> None:
    world = World()
    world.nodepool()
    # pods too big to share a node: each busy node needs a replacement
    world.node("busy-early", drifted=True, drifted_at=START)
    world.pod(node="busy-early", cpu="3")
    world.node("busy-late", drifted=True, drifted_at=START + timedelta(minutes=5))
    world.pod(node="busy-late", cpu="3")
    world.node("empty-late", drifted=True, drifted_at=START + timedelta(minutes=9))
    c = world.controller(Drift)
    for _ in range(3):
        c.reconcile()
        world.execute()
    assert [cmd.candidates[0].name() for cmd in c.started] == [
        "empty-late",
        "busy-early",
        "busy-late",
    ]


def test_pods_needing_three_small_nodes_get_three_replacements() -> None:
    small = fakecatalog.instance_type("three-cpu", cpu=3, memory_gi=8, pods=10)
    world = World([small])
    world.nodepool()
    world.node("big", instance_type="eight-cpu", drifted=True)
    for i in range(3):
        world.pod(f"p{i}", "big", cpu="2")
    c = world.controller(Drift)
    c.reconcile()
    assert len(c.started[0].replacements) == 3


def test_budget_limits_drift_across_passes() -> None:
    world = World()
    world.nodepool(budgets=[{"nodes": "30%"}])
    for i in range(10):
        world.node(f"n{i}", drifted=i < 5)
        world.pod(node=f"n{i}", cpu="500m")
    c = world.controller(Drift)
    for _ in range(5):
        c.reconcile()
    # 30% of 10 = 3 may be disrupting at once; replacements are not initialized yet
    assert len(world.tainted()) == 3
    assert len(world.node_names()) == 10


def test_a_numeric_budget_allows_three_commands_then_none() -> None:
    world = World()
    world.nodepool(budgets=[{"nodes": "3"}])
    for i in range(10):
        world.node(f"n{i}", drifted=True)
        world.pod(node=f"n{i}", cpu="3")  # needs a node of its own
    c = world.controller(Drift)
    created = []
    for _ in range(4):
        before = len(world.kube.list("nodeclaims").items)
        c.reconcile()
        # launch replacements so cluster state stays synced, but keep the candidates
        for pid in world.queue.provider_ids():
            for name in world.queue.replacement_names(pid):
                if world.cluster.unlaunched_nodeclaim_exists(name):
                    world.launch(name)
        created.append(len(world.kube.list("nodeclaims").items) - before)
    assert created == [1, 1, 1, 0]


def test_drift_works_with_consolidation_disabled() -> None:
    world = World()
    world.nodepool(consolidate_after="Never")
    world.node("old", drifted=True)
    c = world.controller(Drift)
    c.reconcile()
    assert len(c.started) == 1


def test_an_empty_drifted_node_goes_as_empty_because_emptiness_runs_first() -> None:
    world = World()
    world.nodepool()
    world.node("old", drifted=True)
    c = world.controller(Emptiness, Drift)
    c.reconcile()
    assert c.started[0].reason == "Empty"


def test_replacement_deleted_before_initializing_untaints_the_candidate() -> None:
    world = World()
    world.nodepool()
    world.node("old", drifted=True)
    world.pod(node="old", cpu="500m")
    c = world.controller(Drift)
    c.reconcile()
    (name,) = world.queue.replacement_names(world.pid("old"))
    world.kube.delete("nodeclaims", name)
    world.cluster.delete_nodeclaim(name)
    world.queue.reconcile(world.pid("old"))
    assert world.tainted() == []
    assert not world.cluster.state_node(world.pid("old")).marked_for_deletion  # type: ignore[union-attr]


# --------------------------------------------------------------------------- static drift


def _static(replicas: int, drifted: int, budget: str = "100%", limit: int | None = None) -> World:
    world = World()
    world.nodepool(
        "static",
        replicas=replicas,
        budgets=[{"nodes": budget}],
        limits={"nodes": str(limit)} if limit is not None else None,
    )
    for i in range(replicas):
        world.node(f"s{i}", nodepool="static", drifted=i < drifted)
    return world


def test_static_drift_replaces_one_for_one_up_to_the_budget() -> None:
    world = _static(replicas=4, drifted=3, budget="2")
    c = world.controller(StaticDrift)
    c.reconcile()
    assert len(c.started) == 2
    assert all(len(cmd.replacements) == 1 for cmd in c.started)
    new = [
        nc
        for nc in world.kube.list("nodeclaims").items
        if nc["metadata"]["name"] not in {"s0", "s1", "s2", "s3"}
    ]
    assert len(new) == 2
    assert new[0]["metadata"]["labels"]["karpenter.sh/nodepool"] == "static"


def test_static_drift_respects_the_node_limit_headroom() -> None:
    world = _static(replicas=3, drifted=3, limit=4)
    c = world.controller(StaticDrift)
    c.reconcile()
    assert len(c.started) == 1


def test_static_drift_waits_while_the_pool_is_over_its_replicas() -> None:
    world = _static(replicas=2, drifted=2)
    world.node("extra", nodepool="static")
    np = world.kube.get("nodepools", "static")
    np["spec"]["replicas"] = 2
    world.kube.update(np)
    c = world.controller(StaticDrift)
    c.reconcile()
    assert not c.started


def test_drift_ignores_static_pools_and_static_drift_ignores_dynamic_ones() -> None:
    world = World()
    world.nodepool()
    world.nodepool("static", replicas=1)
    world.node("dyn", drifted=True)
    world.node("st", nodepool="static", drifted=True)
    c = world.controller(StaticDrift)
    c.reconcile()
    assert [x.candidates[0].name() for x in c.started] == ["st"]
    world.execute()
    d = world.controller(Drift)
    d.reconcile()
    assert [x.candidates[0].name() for x in d.started] == ["dyn"]
