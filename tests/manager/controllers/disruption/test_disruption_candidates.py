"""Which nodes are disruption candidates (spec disruption §4, scenarios 1-8)."""

from __future__ import annotations

import pytest
from disruption_harness import World

from karpenter_core.apis.objects import Pod
from karpenter_core.disruption.candidates import (
    eviction_cost,
    reschedule_disruption_cost,
    sort_by_savings_ratio,
)
from karpenter_core.disruption.types import CLASS_EVENTUAL, CLASS_GRACEFUL
from karpenter_core.testing import fakecatalog

BOTH = (CLASS_GRACEFUL, CLASS_EVENTUAL)


def names(world: World, disruption_class: str = CLASS_GRACEFUL) -> list[str]:
    return [c.name() for c in world.candidates(disruption_class)]


@pytest.fixture
def world() -> World:
    w = World()
    w.nodepool()
    return w


def test_a_plain_initialized_node_is_a_candidate_with_its_facts(world: World) -> None:
    n = world.node("a", instance_type="fake-it-1", zone="test-zone-2", capacity_type="spot")
    world.pod(node=n)
    (c,) = world.candidates(CLASS_GRACEFUL)
    assert c.name() == "a"
    assert c.nodepool_name() == "default"
    assert c.instance_type is not None and c.instance_type.name == "fake-it-1"
    assert (c.zone, c.capacity_type) == ("test-zone-2", "spot")
    assert len(c.reschedulable_pods) == 1
    assert c.reschedule_disruption_cost == pytest.approx(2.0)
    assert not c.is_empty()


def test_price_is_the_offering_for_the_nodes_zone_and_capacity_type() -> None:
    it = fakecatalog.instance_type(
        "t",
        offerings=[
            fakecatalog.offering("spot", "z1", 0.3),
            fakecatalog.offering("spot", "z2", 0.5, available=False),
            fakecatalog.offering("on-demand", "z2", 0.9),
        ],
    )
    world = World([it])
    world.nodepool()
    world.node("a", instance_type="t", zone="z2", capacity_type="spot")
    world.node("b", instance_type="t", zone="z3", capacity_type="spot")
    prices = {c.name(): c.price for c in world.candidates(CLASS_GRACEFUL)}
    # availability is ignored; no matching offering is a price of 0
    assert prices == {"a": 0.5, "b": 0.0}


@pytest.mark.parametrize("cls", BOTH)
def test_do_not_disrupt_pod_blocks_both_classes_without_tgp(world: World, cls: str) -> None:
    n = world.node("a")
    world.pod(node=n, annotations={"karpenter.sh/do-not-disrupt": "true"})
    assert names(world, cls) == []
    blocked = world.events("DisruptionBlocked")
    assert blocked and 'do-not-disrupt" annotation' in blocked[0].message


def test_do_not_disrupt_pod_with_nodeclaim_tgp_blocks_only_graceful(world: World) -> None:
    n = world.node("a", termination_grace_period="300s")
    world.pod(node=n, annotations={"karpenter.sh/do-not-disrupt": "true"})
    assert names(world, CLASS_GRACEFUL) == []
    assert names(world, CLASS_EVENTUAL) == ["a"]


def test_fully_blocking_pdb_blocks_unless_eventual_with_tgp(world: World) -> None:
    world.node("a")
    world.node("b", termination_grace_period="300s")
    world.pod(node="a")
    world.pod(node="b")
    world.pdb(max_unavailable=0, disruptions_allowed=0)
    assert names(world, CLASS_GRACEFUL) == []
    assert names(world, CLASS_EVENTUAL) == ["b"]


@pytest.mark.parametrize("owner", ["DaemonSet", "Node"])
def test_do_not_disrupt_on_daemonset_or_mirror_pod_blocks(world: World, owner: str) -> None:
    world.node("a")
    world.pod(node="a", owner=owner, annotations={"karpenter.sh/do-not-disrupt": "true"})
    assert names(world) == []


def test_blocking_pdb_on_a_mirror_pod_does_not_block(world: World) -> None:
    world.node("a")
    world.pod(node="a", owner="Node")
    world.pdb(max_unavailable=0)
    assert names(world) == ["a"]


def test_blocking_pdb_on_a_daemonset_pod_blocks(world: World) -> None:
    world.node("a")
    world.pod(node="a", owner="DaemonSet")
    world.pdb(max_unavailable=0)
    assert names(world) == []


def test_dnd_and_pdb_on_terminating_or_terminal_pods_do_not_block(world: World) -> None:
    world.node("a")
    world.pod(node="a", terminating=True, annotations={"karpenter.sh/do-not-disrupt": "true"})
    world.pod(node="a", terminating=True, labels={"app": "db"})
    world.pdb(labels={"app": "db"}, max_unavailable=0)
    assert names(world) == ["a"]


def test_pod_matched_by_two_pdbs_blocks(world: World) -> None:
    world.node("a")
    world.pod(node="a")
    world.pdb("one", max_unavailable=1, disruptions_allowed=1)
    world.pdb("two", max_unavailable=1, disruptions_allowed=1)
    assert names(world) == []
    assert "multiple PDBs" in world.events("DisruptionBlocked")[0].message


def test_unhealthy_pod_under_always_allow_policy_does_not_block(world: World) -> None:
    world.node("a")
    world.pod(node="a", ready=False)
    pdb = world.pdb(max_unavailable=0)
    pdb["spec"]["unhealthyPodEvictionPolicy"] = "AlwaysAllow"
    world.kube.update(pdb)
    assert names(world) == ["a"]


def test_node_do_not_disrupt_true_excludes_and_false_does_not(world: World) -> None:
    world.node("a", node_annotations={"karpenter.sh/do-not-disrupt": "true"})
    world.node("b", node_annotations={"karpenter.sh/do-not-disrupt": "false"})
    assert names(world) == ["b"]


def test_nodeclaim_without_node_is_excluded(world: World) -> None:
    world.node("a", with_node=False)
    assert names(world) == []


def test_uninitialized_node_is_excluded(world: World) -> None:
    world.node("a", initialized=False)
    assert names(world) == []


def test_marked_or_deleting_node_is_excluded(world: World) -> None:
    world.node("a")
    world.node("b", nodeclaim_deleting=True)
    world.cluster.mark_for_deletion(world.pid("a"))
    assert names(world) == []


def test_nominated_node_is_excluded_until_the_window_passes(world: World) -> None:
    world.node("a")
    world.cluster.nominate_node_for_pod(world.pid("a"))
    assert names(world) == []
    world.clock.advance(world.cluster.nomination_seconds + 1)
    assert names(world) == ["a"]


def test_node_without_nodepool_label_or_pool_is_excluded(world: World) -> None:
    world.node("a", nodepool="")
    world.node("b", nodepool="missing")
    assert names(world) == []
    messages = [e.message for e in world.events("DisruptionBlocked")]
    assert "NodePool not found (NodePool=missing)" in messages


def test_node_of_a_pool_whose_provider_call_fails_is_excluded(world: World) -> None:
    world.node("a")
    world.provider.fail_for.add("default")
    assert names(world) == []


def test_node_already_in_the_queue_is_excluded(world: World) -> None:
    world.node("a")
    world.queue.queued.add(world.pid("a"))
    assert names(world) == []


def test_missing_zone_or_capacity_type_or_unknown_type_still_a_candidate(world: World) -> None:
    world.node("a", instance_type="no-such-type")
    (c,) = world.candidates(CLASS_GRACEFUL)
    assert c.instance_type is None
    assert c.price == 0.0


def test_should_disrupt_filters(world: World) -> None:
    world.node("a")
    world.node("b")
    got = world.candidates(CLASS_GRACEFUL, lambda c: c.name() == "b")
    assert [c.name() for c in got] == ["b"]


def test_daemonset_pods_and_terminating_deployment_pods_are_not_reschedulable(
    world: World,
) -> None:
    world.node("a")
    world.pod(node="a", owner="DaemonSet")
    world.pod(node="a", terminating=True)
    (c,) = world.candidates(CLASS_GRACEFUL)
    assert c.reschedulable_pods == ()
    assert c.is_empty()


def test_terminating_statefulset_pod_is_reschedulable(world: World) -> None:
    world.node("a")
    world.pod(node="a", owner="StatefulSet", terminating=True)
    (c,) = world.candidates(CLASS_GRACEFUL)
    assert len(c.reschedulable_pods) == 1
    assert not c.is_empty()


# --------------------------------------------------------------------------- costs


def _pod(annotations: dict[str, str] | None = None, priority: int | None = None) -> Pod:
    spec: dict = {"containers": [{"name": "c"}]}
    if priority is not None:
        spec["priority"] = priority
    return Pod.from_dict(
        {"metadata": {"name": "p", "annotations": annotations or {}}, "spec": spec}
    )


@pytest.mark.parametrize(
    ("annotations", "priority", "expected"),
    [
        ({}, None, 1.0),
        ({"controller.kubernetes.io/pod-deletion-cost": str(2**27)}, None, 2.0),
        ({}, 2**25, 2.0),
        ({"controller.kubernetes.io/pod-deletion-cost": "not-a-number"}, None, 1.0),
        ({"controller.kubernetes.io/pod-deletion-cost": str(2**31 - 1)}, 10**9, 10.0),
        ({"controller.kubernetes.io/pod-deletion-cost": str(-(2**31) + 1)}, -(2**31), -10.0),
    ],
)
def test_eviction_cost(annotations: dict[str, str], priority: int | None, expected: float) -> None:
    assert eviction_cost(_pod(annotations, priority)) == pytest.approx(expected)


def test_negative_cost_pods_count_as_empty() -> None:
    low = _pod({"controller.kubernetes.io/pod-deletion-cost": str(-(2**28))})
    assert eviction_cost(low) < 0
    assert reschedule_disruption_cost([low]) == 1.0


def test_sort_by_savings_ratio_puts_the_priciest_per_disruption_first(world: World) -> None:
    world.node("cheap", instance_type="fake-it-0")
    world.node("dear", instance_type="fake-it-4")
    world.node("busy", instance_type="fake-it-4")
    for _ in range(3):
        world.pod(node="busy")
    ordered = [c.name() for c in sort_by_savings_ratio(world.candidates(CLASS_GRACEFUL))]
    assert ordered == ["dear", "busy", "cheap"]


def test_lifetime_remaining_scales_disruption_cost(world: World) -> None:
    world.node("a")
    world.pod(node="a")
    nc = world.kube.get("nodeclaims", "a")
    nc["spec"]["expireAfter"] = "100s"
    world.cluster.update_nodeclaim(world.kube.update(nc))
    world.clock.advance(75)
    (c,) = world.candidates(CLASS_GRACEFUL)
    # one pod of eviction cost 1, a quarter of its lifetime left
    assert c.disruption_cost == pytest.approx(0.25)


def test_a_do_not_disrupt_duration_blocks_until_it_has_elapsed(world: World) -> None:
    world.node("a")
    world.pod(node="a", annotations={"karpenter.sh/do-not-disrupt": "2m"})
    world.clock.advance(60)
    assert names(world) == []
    world.clock.advance(120)
    assert names(world) == ["a"]


def test_every_do_not_disrupt_duration_must_have_elapsed(world: World) -> None:
    world.node("a")
    world.pod(node="a", annotations={"karpenter.sh/do-not-disrupt": "1m"})
    world.pod(node="a", annotations={"karpenter.sh/do-not-disrupt": "3m"})
    world.clock.advance(120)
    assert names(world) == []
    world.clock.advance(61)
    assert names(world) == ["a"]


def test_an_invalid_do_not_disrupt_value_is_ignored_with_an_event(world: World) -> None:
    world.node("a")
    world.pod(node="a", annotations={"karpenter.sh/do-not-disrupt": "invalid-format"})
    assert names(world) == ["a"]
    assert world.events("InvalidDoNotDisruptAnnotation")
