"""The kit's expectations pass when the cluster is as expected and otherwise fail with a
message naming what was expected and what was found."""

from __future__ import annotations

import pytest

from karpenter_core import metrics
from karpenter_core.testing import Environment
from karpenter_core.testing import builders as b
from karpenter_core.testing.expectations import (
    expect_condition,
    expect_deleted,
    expect_event,
    expect_exists,
    expect_metric,
    expect_no_event,
    expect_nodeclaims,
    expect_nodes,
    expect_not_scheduled,
    expect_provisioned,
    expect_scheduled,
    expect_terminating,
    metric_value,
)


@pytest.fixture
def env() -> Environment:
    """Only the API server and clock: these tests set the cluster up by hand."""
    return Environment(controllers=(), kube_scheduler=False, kubelet=False)


def test_expect_exists_returns_the_stored_object_or_says_it_is_missing(env: Environment) -> None:
    stored = env.apply(b.pod("web"))
    assert expect_exists(env, b.pod("web"))["metadata"]["uid"] == stored["metadata"]["uid"]
    with pytest.raises(
        AssertionError, match=r"expected Pod default/gone to exist, but it was not found"
    ):
        expect_exists(env.kube, b.pod("gone"))


def test_expect_deleted_names_what_is_left_and_what_holds_it(env: Environment) -> None:
    env.apply(b.node("kept"))
    held = env.apply(b.node("held", finalizers=["example.com/hold"]))
    env.delete(held)
    expect_deleted(env, b.node("never-there"))
    with pytest.raises(AssertionError) as info:
        expect_deleted(env, b.node("kept"), b.node("held"))
    assert str(info.value) == (
        "expected to be deleted: Node kept still exists and is not being deleted; "
        "Node held is terminating, held by example.com/hold"
    )
    assert [n["metadata"]["name"] for n in expect_terminating(env, b.node("held"))] == ["held"]
    with pytest.raises(AssertionError, match="Node kept has no deletionTimestamp"):
        expect_terminating(env, b.node("kept"))


def test_expect_condition_shows_the_condition_found() -> None:
    claim = b.nodeclaim(
        "nc",
        conditions=[
            b.condition("Launched", False, reason="InsufficientCapacity", message="no spot")
        ],
    )
    assert expect_condition(claim, "Launched", False)["reason"] == "InsufficientCapacity"
    with pytest.raises(AssertionError) as info:
        expect_condition(claim, "Launched")
    assert str(info.value) == (
        "expected NodeClaim nc to have condition Launched=True, "
        "found Launched=False (InsufficientCapacity: no spot)"
    )
    with pytest.raises(
        AssertionError, match=r"has no Registered condition \(conditions: Launched=False"
    ):
        expect_condition(claim, "Registered")
    with pytest.raises(AssertionError, match=r"Launched=False \(reason Other\)"):
        expect_condition(claim, "Launched", "False", reason="Other")


def test_expect_scheduled_returns_the_node_or_says_why_the_pod_waits(env: Environment) -> None:
    node = env.apply(b.node("n1"))
    bound = env.apply(b.pod("bound"))
    env.bind(bound, node)
    assert expect_scheduled(env, bound)["metadata"]["name"] == "n1"
    waiting = env.apply(b.unschedulable_pod("waiting"))
    with pytest.raises(AssertionError) as info:
        expect_scheduled(env, waiting)
    assert "Pod default/waiting to be scheduled, but it is not bound" in str(info.value)
    assert "PodScheduled=False (Unschedulable)" in str(info.value)
    assert expect_not_scheduled(env, waiting)["metadata"]["name"] == "waiting"
    with pytest.raises(AssertionError, match="not to be scheduled, but it is on n1"):
        expect_not_scheduled(env, bound)


def test_expect_counts_list_what_was_found(env: Environment) -> None:
    env.apply(b.node("a"))
    env.apply(b.node("b"))
    assert [n["metadata"]["name"] for n in expect_nodes(env, 2)] == ["a", "b"]
    with pytest.raises(AssertionError, match="expected 1 Nodes, found 2: a, b"):
        expect_nodes(env, 1)
    with pytest.raises(AssertionError, match="expected 3 NodeClaims, found 0: none"):
        expect_nodeclaims(env, 3)


def test_expect_provisioned_reports_pending_pods_and_nodeclaims() -> None:
    env = Environment(controllers=(), kube_scheduler=True, kubelet=False)
    with pytest.raises(AssertionError) as info:
        expect_provisioned(env, b.pod("lonely", cpu="1"), within=5)
    message = str(info.value)
    assert message.startswith("expected 1 pod(s) to be scheduled within 5s, 1 still pending:")
    assert "Pod default/lonely: PodScheduled=False (Unschedulable" in message
    assert message.endswith("NodeClaims: none")


def test_expect_event_lists_the_events_there_were(env: Environment) -> None:
    node = b.node("n1")
    env.recorder.warning(node, "FailedDraining", "pods left")
    assert expect_event(env, "FailedDraining", obj=node, type_="Warning").message == "pods left"
    with pytest.raises(
        AssertionError, match=r"expected a Launched event, found FailedDraining \(Node n1\)"
    ):
        expect_event(env, "Launched")
    with pytest.raises(AssertionError, match="about Node other"):
        expect_event(env.recorder, "FailedDraining", obj=b.node("other"))
    expect_no_event(env, "Launched")
    with pytest.raises(
        AssertionError, match="expected no FailedDraining event, found 1: Node n1: pods left"
    ):
        expect_no_event(env, "FailedDraining")


def test_expect_metric_reads_the_exposition() -> None:
    metrics.reset()
    metrics.NODECLAIMS_CREATED_TOTAL.labels(
        reason="provisioning", nodepool="p", min_values_relaxed="false"
    ).inc()
    expect_metric("karpenter_nodeclaims_created_total", 1, nodepool="p")
    assert metric_value("karpenter_nodeclaims_created_total", nodepool="other") is None
    with pytest.raises(AssertionError, match=r"to be 2, found 1"):
        expect_metric("karpenter_nodeclaims_created_total", 2, nodepool="p")
    with pytest.raises(AssertionError, match="found no such sample"):
        expect_metric("karpenter_nodeclaims_created_total", 1, nodepool="other")
