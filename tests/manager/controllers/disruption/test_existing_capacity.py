"""ExistingCapacity: existing nodes prepared once for many solves (the parts the
differential test cannot see on its own: the fit index, hostnames, capacity by NodePool)."""

from __future__ import annotations

from disruption_harness import World

from karpenter_core.provisioning.scheduler.existingcapacity import ExistingCapacity
from karpenter_core.testing.fakecatalog import instance_types


def capacity_of(world: World) -> ExistingCapacity:
    nodes = [n for n in world.snapshot().state_nodes if not n.marked_for_deletion]
    return ExistingCapacity(nodes, [])


def test_nodes_are_in_solve_order_and_shared() -> None:
    world = World(instance_types(8))
    world.nodepool()
    world.node("b")
    world.node("young", initialized=False)
    world.node("a")
    cap = capacity_of(world)
    assert [n.name for n in cap.nodes] == ["a", "b", "young"]
    assert all(n.shared for n in cap.nodes)
    assert [n.name for n in cap.without(["b", "missing"])] == ["a", "young"]


def test_may_fit_keeps_every_node_with_room_in_order() -> None:
    world = World(instance_types(8))
    world.nodepool()
    world.node("small", instance_type="fake-it-0")  # 1 vCPU
    world.node("big", instance_type="fake-it-7")  # 8 vCPU
    world.node("full", instance_type="fake-it-1")
    world.pod("hog", "full", cpu="1900m")
    cap = capacity_of(world)
    names = [n.name for n in cap.nodes]
    fits = lambda req: [names[i] for i in cap.may_fit(req)]  # noqa: E731
    assert fits({"cpu": 500}) == ["big", "small"]
    assert fits({"cpu": 2000}) == ["big"]
    assert fits({"memory": 10**18}) == []  # milli-bytes: far beyond any node
    assert fits({}) == ["big", "full", "small"]  # no request: every node not over-committed


def test_hostnames_and_nodepool_capacity_leave_out_excluded_nodes() -> None:
    world = World(instance_types(8))
    world.nodepool("a")
    world.nodepool("b")
    world.node("a1", nodepool="a", instance_type="fake-it-1")
    world.node("a2", nodepool="a", instance_type="fake-it-3")
    world.node("b1", nodepool="b", instance_type="fake-it-0")
    cap = capacity_of(world)
    assert cap.hostnames() == {"a1", "a2", "b1"}
    assert cap.hostnames(["a2"]) == {"a1", "b1"}
    assert cap.nodepool_capacity("a")["cpu"] == 6000
    assert cap.nodepool_capacity("a", ["a2", "b1"])["cpu"] == 2000
    assert cap.nodepool_capacity("a", ["a2"])["nodes"] == 1000


def _view(cap: ExistingCapacity, name: str) -> tuple[dict[str, int], tuple[object, ...], bool]:
    (node,) = [n for n in cap.nodes if n.name == name]
    return dict(node.remaining), node.taints, node.initialized()


def test_a_node_unchanged_since_the_last_pass_keeps_its_view_and_a_change_rebuilds_it() -> None:
    """Each pass rebases the solver's view of an unchanged node onto its new copy; a pod
    that arrives or a Node that changes makes it be built again."""
    world = World(instance_types(8))
    world.nodepool()
    world.node("a", instance_type="fake-it-3")  # 4 vCPU
    world.node("b", instance_type="fake-it-3")
    first = capacity_of(world)
    second = capacity_of(world)
    (a1,) = [n for n in first.nodes if n.name == "a"]
    (a2,) = [n for n in second.nodes if n.name == "a"]
    assert a2 is not a1 and a2.state_node is not a1.state_node  # this pass's copy
    assert a2.remaining is a1.remaining and a2.requirements is a1.requirements  # shared
    before = _view(second, "a")
    world.pod("p", "a", cpu="1")
    third = capacity_of(world)
    assert _view(third, "a")[0]["cpu"] == before[0]["cpu"] - 1000
    assert _view(third, "b") == _view(second, "b")
    node = world.kube.get("nodes", "b")
    node["spec"]["taints"] = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    world.kube.update(node)
    world.cluster.update_node(world.kube.get("nodes", "b"))  # the Node alone
    fourth = capacity_of(world)
    assert [t.key for t in _view(fourth, "b")[1]] == ["k"]
