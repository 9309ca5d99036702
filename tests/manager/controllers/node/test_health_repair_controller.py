"""node.health (node repair): upstream ``pkg/controllers/node/health`` suite.

The fake provider's default policy is upstream's fake: ``BadNode`` ``False`` tolerated for
30 minutes. Reconciles run against the in-memory API server on a virtual clock; the pieces
of the decision on their own are in tests/unit/controllers/node/test_health_repair.py."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from karpenter_core import metrics
from karpenter_core.apis import labels as wk
from karpenter_core.cloudprovider.protocol import NodeClassKind, RepairPolicy
from karpenter_core.controllers.node.health import (
    BLOCKED_REQUEUE,
    EVENT_NODE_REPAIR_BLOCKED,
    NodeHealth,
)
from karpenter_core.runtime.clock import format_time
from karpenter_core.runtime.reconciler import ObjectKey, Result
from karpenter_core.testing import Environment, FakeCloudProvider
from karpenter_core.testing import builders as b

NODE_CLASS = NodeClassKind("karpenter.test.sh", "TestNodeClass", "v1")
BAD_NODE = RepairPolicy("BadNode", "False", timedelta(minutes=30))
T0 = datetime(2026, 1, 1, tzinfo=UTC)
TERMINATION = wk.NODECLAIM_TERMINATION_TIMESTAMP_ANNOTATION_KEY


def minutes(n: float) -> float:
    return timedelta(minutes=n).total_seconds()


def condition(type_: str, status: str, since: datetime | None) -> dict[str, Any]:
    cond: dict[str, Any] = {"type": type_, "status": status}
    if since is not None:
        cond["lastTransitionTime"] = format_time(since)
    return cond


def node_dict(
    name: str = "n", conditions: Sequence[dict[str, Any]] = (), labels: dict[str, str] | None = None
) -> dict[str, Any]:
    """A Node with exactly ``conditions`` (no Ready unless given)."""
    return b.node(name, labels=labels, conditions=conditions, ready=None)


class Env(Environment):
    """No controllers running unless ``repair`` (then the registry's node.health package,
    with its gate on): reconciles are called directly. The provider is the kit's fake with
    upstream's fake policy."""

    def __init__(self, *, repair: bool = False) -> None:
        super().__init__(
            FakeCloudProvider(node_classes=[NODE_CLASS], repair_policies=[BAD_NODE]),
            options={"FEATURE_GATES": "NodeRepair=true"} if repair else None,
            controllers=["node.health"] if repair else (),
            kube_scheduler=False,
            kubelet=False,
            start=T0,
        )
        self.controller = NodeHealth(self.ctx)
        self.seq = 0

    def nodepool(self, name: str = "default", budget: str | None = None) -> dict[str, Any]:
        budgets = [{"nodes": budget}] if budget is not None else None
        return self.server.create(b.nodepool(name, node_class=NODE_CLASS, budgets=budgets))

    def pair(
        self,
        *,
        nodepool: str | None = "default",
        conditions: Sequence[dict[str, Any]] = (),
        annotations: dict[str, str] | None = None,
        node_annotations: dict[str, str] | None = None,
        managed: bool = True,
    ) -> tuple[str, str]:
        """A NodeClaim with the termination finalizer and its Node; returns their names."""
        self.seq += 1
        nc_name, node_name = f"nc-{self.seq}", f"node-{self.seq}"
        pid = f"fake:///{nc_name}"
        labels = {wk.CAPACITY_TYPE_LABEL_KEY: "on-demand"}
        self.create(
            b.nodeclaim(
                nc_name,
                nodepool=nodepool,
                labels=labels,
                annotations=annotations,
                finalizers=[wk.TERMINATION_FINALIZER],
                node_class=NODE_CLASS,
                provider_id=pid,
                node_name=node_name,
                image_id="img-1",
            )
        )
        node_labels = dict(labels)
        if nodepool is not None:
            node_labels[wk.NODEPOOL_LABEL_KEY] = nodepool
        if managed:
            node_labels[NODE_CLASS.label_key] = "default"
        node = node_dict(node_name, conditions, node_labels)
        node["spec"] = {"providerID": pid}
        if node_annotations:
            node["metadata"]["annotations"] = dict(node_annotations)
        self.server.create(node)
        return nc_name, node_name

    def reconcile(self, node_name: str) -> Result:
        return self.controller.reconcile(ObjectKey("", node_name))

    def nodeclaim(self, name: str) -> dict[str, Any]:
        return self.server.get("nodeclaims", name)

    def deleting(self, nc_name: str) -> bool:
        return bool(self.nodeclaim(nc_name)["metadata"].get("deletionTimestamp"))

    def blocked_events(self) -> list[Any]:
        return [e for e in self.recorder.events if e.reason == EVENT_NODE_REPAIR_BLOCKED]


@pytest.fixture
def env() -> Env:
    return Env()


def bad_node(since: datetime = T0) -> dict[str, Any]:
    return condition("BadNode", "False", since)


def sample(name: str, labels: dict[str, str]) -> float:
    value = metrics.REGISTRY.get_sample_value(name, labels)
    return 0.0 if value is None else value


# ---------------------------------------------------------------------------------------
# Reconciliation (upstream suite)
# ---------------------------------------------------------------------------------------


def test_an_unhealthy_node_past_its_toleration_has_its_nodeclaim_deleted(env: Env) -> None:
    env.nodepool()
    nc, node = env.pair(conditions=[bad_node()])
    env.clock.advance(minutes(60))
    assert env.reconcile(node) == Result()
    assert env.deleting(nc)


@pytest.mark.parametrize(
    "cond",
    [condition("FakeHealthyNode", "False", T0), condition("BadNode", "True", T0)],
    ids=["type-not-a-policy", "status-not-the-policys"],
)
def test_a_node_not_matching_a_policy_is_left_alone(env: Env, cond: dict[str, Any]) -> None:
    env.nodepool()
    nc, node = env.pair(conditions=[cond])
    env.clock.advance(minutes(60))
    assert env.reconcile(node) == Result()
    assert not env.deleting(nc)


def test_a_node_within_its_toleration_is_kept_and_looked_at_when_it_ends(env: Env) -> None:
    env.nodepool()
    nc, node = env.pair(conditions=[bad_node()])
    env.clock.advance(minutes(20))
    assert env.reconcile(node) == Result.after(minutes(10))
    assert not env.deleting(nc)
    assert TERMINATION not in (env.nodeclaim(nc)["metadata"].get("annotations") or {})


def test_the_requeue_is_for_the_policy_closest_to_its_toleration(env: Env) -> None:
    env.provider.policies = (
        RepairPolicy("BadNode", "False", timedelta(minutes=60)),
        RepairPolicy("ValidUnhealthyCondition", "False", timedelta(minutes=30)),
    )
    env.nodepool()
    _, node = env.pair(conditions=[condition("ValidUnhealthyCondition", "False", T0), bad_node()])
    env.clock.advance(minutes(27))
    assert env.reconcile(node) == Result.after(minutes(3))


def test_repair_sets_the_termination_timestamp_to_now(env: Env) -> None:
    env.nodepool()
    nc, node = env.pair(conditions=[bad_node()])
    env.clock.advance(minutes(60))
    env.reconcile(node)
    annotations = env.nodeclaim(nc)["metadata"]["annotations"]
    assert annotations[TERMINATION] == format_time(env.clock.now())


def test_repair_overrides_a_later_termination_timestamp(env: Env) -> None:
    env.nodepool()
    later = format_time(T0 + timedelta(minutes=180))
    nc, node = env.pair(conditions=[bad_node()], annotations={TERMINATION: later})
    env.clock.advance(minutes(60))
    env.reconcile(node)
    assert env.nodeclaim(nc)["metadata"]["annotations"][TERMINATION] == format_time(env.clock.now())


def test_repair_keeps_a_termination_timestamp_already_past(env: Env) -> None:
    env.nodepool()
    earlier = format_time(T0 + timedelta(minutes=57))
    nc, node = env.pair(conditions=[bad_node()], annotations={TERMINATION: earlier})
    env.clock.advance(minutes(60))
    env.reconcile(node)
    assert env.nodeclaim(nc)["metadata"]["annotations"][TERMINATION] == earlier
    assert env.deleting(nc)


def test_repair_ignores_a_blocking_disruption_budget(env: Env) -> None:
    env.nodepool(budget="0")
    nc, node = env.pair(conditions=[bad_node()])
    env.clock.advance(minutes(60))
    env.reconcile(node)
    assert env.deleting(nc)


def test_repair_ignores_do_not_disrupt_on_the_node(env: Env) -> None:
    env.nodepool()
    nc, node = env.pair(
        conditions=[bad_node()], node_annotations={wk.DO_NOT_DISRUPT_ANNOTATION_KEY: "true"}
    )
    env.clock.advance(minutes(60))
    env.reconcile(node)
    assert env.deleting(nc)


def test_more_than_20_percent_unhealthy_in_a_nodepool_blocks_repair(env: Env) -> None:
    env.nodepool()
    pairs = [env.pair(conditions=[bad_node()] if i < 3 else []) for i in range(10)]
    env.clock.advance(minutes(60))
    for nc, node in pairs[:3]:
        assert env.reconcile(node) == Result.after(BLOCKED_REQUEUE)
        assert not env.deleting(nc)
    events = env.blocked_events()
    assert {e.kind for e in events} == {"Node", "NodeClaim", "NodePool"}
    assert all(e.type == "Warning" and "nodepool" in e.message for e in events)


def test_only_the_nodes_own_nodepool_counts_toward_the_threshold(env: Env) -> None:
    env.nodepool("default")
    env.nodepool("other")
    nc, node = env.pair(nodepool="default", conditions=[bad_node()])
    for _ in range(4):
        env.pair(nodepool="default")
    for _ in range(5):  # an outage in another NodePool does not stop this repair
        env.pair(nodepool="other", conditions=[bad_node()])
    env.clock.advance(minutes(60))
    env.reconcile(node)
    assert env.deleting(nc)


def test_more_than_20_percent_unhealthy_in_the_cluster_blocks_a_nodeclaim_without_a_nodepool(
    env: Env,
) -> None:
    pairs = [env.pair(nodepool=None, conditions=[bad_node()] if i < 3 else []) for i in range(10)]
    env.clock.advance(minutes(60))
    for nc, node in pairs[:3]:
        assert env.reconcile(node) == Result.after(BLOCKED_REQUEUE)
        assert not env.deleting(nc)
    events = env.blocked_events()
    assert {e.kind for e in events} == {"Node", "NodeClaim"}
    assert all("cluster" in e.message for e in events)


def test_the_threshold_rounds_up_for_a_small_nodepool(env: Env) -> None:
    env.nodepool()
    pairs = [env.pair(conditions=[bad_node()] if i == 0 else []) for i in range(3)]
    env.clock.advance(minutes(60))
    env.reconcile(pairs[0][1])
    assert env.deleting(pairs[0][0])


def test_repair_counts_the_disruption_metrics(env: Env) -> None:
    env.nodepool("metrics-pool")
    nc, node = env.pair(nodepool="metrics-pool", conditions=[bad_node()])
    disrupted = {
        "reason": "unhealthy",
        "nodepool": "metrics-pool",
        "capacity_type": "on-demand",
        "consolidation_policy": "",
        "termination_mode": "graceful",
    }
    unhealthy = {
        "condition": "bad_node",
        "nodepool": "metrics-pool",
        "capacity_type": "on-demand",
        "image_id": "img-1",
    }
    before = (
        sample("karpenter_nodeclaims_disrupted_total", disrupted),
        sample("karpenter_nodeclaims_unhealthy_disrupted_total", unhealthy),
    )
    env.clock.advance(minutes(60))
    env.reconcile(node)
    assert env.deleting(nc)
    after = (
        sample("karpenter_nodeclaims_disrupted_total", disrupted),
        sample("karpenter_nodeclaims_unhealthy_disrupted_total", unhealthy),
    )
    assert after == (before[0] + 1, before[1] + 1)


def test_a_nodeclaim_already_deleting_is_annotated_but_not_counted_again(env: Env) -> None:
    env.nodepool("deleting-pool")
    nc, node = env.pair(nodepool="deleting-pool", conditions=[bad_node()])
    env.server.delete("nodeclaims", nc)  # held by its finalizer
    labels = {
        "condition": "bad_node",
        "nodepool": "deleting-pool",
        "capacity_type": "on-demand",
        "image_id": "img-1",
    }
    before = sample("karpenter_nodeclaims_unhealthy_disrupted_total", labels)
    env.clock.advance(minutes(60))
    env.reconcile(node)
    assert env.nodeclaim(nc)["metadata"]["annotations"][TERMINATION] == format_time(env.clock.now())
    assert sample("karpenter_nodeclaims_unhealthy_disrupted_total", labels) == before


def test_an_unmanaged_node_is_not_repaired(env: Env) -> None:
    env.nodepool()
    nc, node = env.pair(conditions=[bad_node()], managed=False)
    env.clock.advance(minutes(60))
    assert env.reconcile(node) == Result()
    assert not env.deleting(nc)


def test_a_node_without_a_nodeclaim_is_left_alone(env: Env) -> None:
    env.server.create(
        {
            **node_dict("orphan", [bad_node()], {NODE_CLASS.label_key: "default"}),
            "spec": {"providerID": "fake:///nobody"},
        }
    )
    env.clock.advance(minutes(60))
    assert env.reconcile("orphan") == Result()


def test_a_missing_node_is_nothing_to_do(env: Env) -> None:
    assert env.reconcile("gone") == Result()


def test_a_failing_provider_stops_repair_without_crashing(
    env: Env, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    env.nodepool()
    nc, node = env.pair(conditions=[bad_node()])

    def exploded() -> list[RepairPolicy]:
        raise RuntimeError("provider exploded")

    monkeypatch.setattr(env.provider, "repair_policies", exploded)
    env.clock.advance(minutes(60))
    assert env.reconcile(node) == Result()
    assert not env.deleting(nc)
    assert "provider exploded" in caplog.text


# ---------------------------------------------------------------------------------------
# Registered on a Manager: the requeue at the toleration's end does the repair
# ---------------------------------------------------------------------------------------


def test_the_controller_repairs_when_the_toleration_ends_without_another_event() -> None:
    env = Env(repair=True)
    manager = env.manager
    env.nodepool()
    nc, _ = env.pair(conditions=[bad_node()])
    manager.settle()
    manager.run_for(minutes(30) - 1)
    assert not env.deleting(nc)
    manager.run_for(2)
    assert env.deleting(nc)


def test_repair_counts_the_reschedulable_pods_of_the_node(env: Env) -> None:
    env.nodepool("pods-pool")
    nc, node = env.pair(nodepool="pods-pool", conditions=[bad_node()])
    env.server.patch("nodeclaims", nc, {"status": {"nodeName": None}}, subresource="status")
    for name, owners in (("app", []), ("ds", [{"kind": "DaemonSet", "name": "d", "uid": "u"}])):
        env.server.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": "default", "ownerReferences": owners},
                "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]},
            }
        )
    labels = {
        "reason": "unhealthy",
        "nodepool": "pods-pool",
        "capacity_type": "on-demand",
        "consolidation_policy": "",
        "termination_mode": "graceful",
    }
    before = sample("karpenter_pods_disruption_initiated_total", labels)
    env.clock.advance(minutes(60))
    env.reconcile(node)
    # the DaemonSet pod would not need a new home
    assert sample("karpenter_pods_disruption_initiated_total", labels) == before + 1
