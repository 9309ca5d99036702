"""Disruption budgets per NodePool (spec disruption §6, scenarios 9, 12, 13) counted over a
cluster: what each pool may still disrupt, given its nodes."""

from __future__ import annotations

from disruption_harness import World

from karpenter_core import metrics


def _mapping(world: World, reason: str = "Empty") -> dict[str, int]:
    return world.budgets(reason)


def test_disrupting_nodes_consume_the_budget() -> None:
    world = World()
    world.nodepool(budgets=[{"nodes": "3"}])
    for i in range(5):
        world.node(f"n{i}")
    world.node("notready", ready=False)
    world.node("marked")
    world.cluster.mark_for_deletion(world.pid("marked"))
    assert _mapping(world) == {"default": 1}
    sample = metrics.NODEPOOLS_NODES_CONSUMING_BUDGETS.labels(nodepool="default", reason="Empty")
    assert sample._value.get() == 2


def test_uninitialized_unmanaged_and_terminating_nodes_are_not_counted() -> None:
    world = World()
    world.nodepool(budgets=[{"nodes": "50%"}])
    for i in range(4):
        world.node(f"n{i}")
    world.node("young", initialized=False)
    nc = world.kube.get("nodeclaims", "n3")
    nc["status"]["conditions"].append(
        {
            "type": "InstanceTerminating",
            "status": "True",
            "reason": "x",
            "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    )
    world.cluster.update_nodeclaim(nc)
    # 3 counted nodes: ceil(50% of 3) = 2
    assert _mapping(world) == {"default": 2}


def test_budget_never_goes_negative_and_blocked_pool_gets_an_event() -> None:
    world = World()
    world.nodepool(budgets=[{"nodes": "1"}])
    world.node("a", ready=False)
    world.node("b", ready=False)
    assert _mapping(world) == {"default": 0}
    world2 = World()
    world2.nodepool(budgets=[{"nodes": "0"}])
    world2.node("a")
    assert _mapping(world2) == {"default": 0}
    (event,) = world2.events("DisruptionBlocked")
    assert event.message == (
        "No allowed disruptions for disruption reason Empty due to blocking budget"
    )


def test_every_managed_pool_gets_an_entry() -> None:
    world = World()
    world.nodepool("a", budgets=[{"nodes": "10%"}])
    world.nodepool("b", budgets=[{"nodes": "2"}])
    assert _mapping(world) == {"a": 0, "b": 2}


def test_unmanaged_nodes_are_not_counted() -> None:
    world = World()
    world.nodepool(budgets=[{"nodes": "50%"}])
    world.node("managed")
    world.cluster.update_node(
        world.create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": "byo",
                    "labels": {
                        "karpenter.sh/nodepool": "default",
                        "karpenter.sh/initialized": "true",
                        "node.kubernetes.io/instance-type": "fake-it-0",
                    },
                },
                "spec": {"providerID": "byo://1"},
                "status": {"conditions": [{"type": "Ready", "status": "False"}]},
            }
        )
    )
    assert world.cluster.state_node("byo://1") is not None  # in cluster state, no NodeClaim
    # one managed node: ceil(50% of 1) = 1, and the NotReady unmanaged node uses none of it
    assert _mapping(world) == {"default": 1}
