"""Consistency (node shape), pod events (lastPodEventTime) and hydration (NodeClass label)."""

from __future__ import annotations

from typing import Any

from nodeclaim_helpers import Env, disrupted, minutes

from karpenter_core.controllers.nodeclaim.consistency import node_shape_issues
from karpenter_core.controllers.nodeclaim.expiration import Expiration
from karpenter_core.controllers.nodeclaim.nodehydration import NodeHydration
from karpenter_core.runtime.clock import parse_time
from karpenter_core.runtime.reconciler import ObjectKey, Result
from karpenter_core.testing import builders as b

# ----------------------------------------------------------------------------- consistency


def shrink_node(env: Env, name: str, memory: str) -> None:
    node = env.node(name)
    node["status"]["capacity"]["memory"] = memory
    env.server.update_status(node)


def test_a_node_with_the_promised_shape_is_consistent() -> None:
    env = Env()
    env.launched_and_registered("nc", requests={"cpu": "1", "memory": "1Gi"})
    env.run_for(minutes(10.1))
    assert env.condition("nc", "ConsistentStateFound")["status"] == "True"
    assert env.events("FailedConsistencyCheck") == []


def test_a_node_short_of_memory_fails_the_consistency_check() -> None:
    env = Env()
    env.create_nodeclaim("nc", requests={"cpu": "1", "memory": "1Gi"})
    env.settle()
    env.create_node_for("nc", capacity={"cpu": "4", "memory": "8Gi", "pods": "110"})
    env.run_for(minutes(10.1))
    cond = env.condition("nc", "ConsistentStateFound")
    assert (cond["status"], cond["reason"]) == ("False", "ConsistencyCheckFailed")
    (event,) = env.events("FailedConsistencyCheck")
    assert event.type == "Warning"
    assert event.message == "expected 16Gi of resource memory, but found 8Gi (50.0% of expected)"


def test_the_check_runs_at_most_every_ten_minutes_per_nodeclaim() -> None:
    env = Env()
    env.launched_and_registered("nc", requests={"cpu": "1", "memory": "1Gi"})
    env.run_for(minutes(10.1))
    assert env.condition("nc", "ConsistentStateFound")["status"] == "True"
    shrink_node(env, "node-nc", "8Gi")
    env.run_for(minutes(9))
    assert env.condition("nc", "ConsistentStateFound")["status"] == "True"
    env.run_for(minutes(1.1))
    assert env.condition("nc", "ConsistentStateFound")["status"] == "False"


def test_node_shape_ignores_uninitialized_and_unrequested_resources() -> None:
    node = {"status": {"capacity": {"cpu": "1", "memory": "1Gi"}}}
    nc: dict[str, Any] = {
        "metadata": {},
        "spec": {"resources": {"requests": {"cpu": "1"}}},
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi"},
            "conditions": [{"type": "Initialized", "status": "True"}],
        },
    }
    assert node_shape_issues(node, nc) == [
        "expected 4 of resource cpu, but found 1 (25.0% of expected)"
    ]
    nc["status"]["conditions"] = [{"type": "Initialized", "status": "Unknown"}]
    assert node_shape_issues(node, nc) == []


# ----------------------------------------------------------------------------- pod events


def pod(name: str, node: str | None = None, *, daemonset: bool = False) -> dict[str, Any]:
    owner = b.owner_reference("DaemonSet", "ds", uid="ds-uid") if daemonset else None
    return b.pod(name, node_name=node, owner=owner)


def last_pod_event(env: Env) -> str | None:
    return (env.nodeclaim("nc").get("status") or {}).get("lastPodEventTime")


def test_binding_a_pod_records_the_pod_event_time() -> None:
    env = Env()
    env.launched_and_registered("nc")
    env.run_for(30)
    assert last_pod_event(env) is None
    env.server.create(pod("app"))
    env.server.bind("app", "default", "node-nc")
    env.settle()
    assert last_pod_event(env) == "2026-01-01T00:00:30Z"


def test_pod_events_within_ten_seconds_are_not_recorded_again() -> None:
    env = Env()
    env.launched_and_registered("nc")
    env.server.create(pod("a", "node-nc"))
    env.settle()
    first = last_pod_event(env)
    env.run_for(5)
    env.server.create(pod("b", "node-nc"))
    env.settle()
    assert last_pod_event(env) == first
    env.run_for(10)
    env.server.create(pod("c", "node-nc"))
    env.settle()
    assert parse_time(str(last_pod_event(env))) > parse_time(str(first))


def test_daemonset_pods_do_not_count() -> None:
    env = Env()
    env.launched_and_registered("nc")
    env.server.create(pod("ds-pod", "node-nc", daemonset=True))
    env.settle()
    assert last_pod_event(env) is None


def test_a_pod_finishing_counts_as_a_pod_event() -> None:
    env = Env()
    env.launched_and_registered("nc")
    env.server.create(pod("job", "node-nc"))
    env.settle()
    env.run_for(60)
    job = env.server.get("pods", "job", "default")
    job["status"]["phase"] = "Succeeded"
    env.server.update_status(job)
    env.settle()
    assert last_pod_event(env) == "2026-01-01T00:01:00Z"


def test_other_pod_updates_do_not_count() -> None:
    env = Env()
    env.launched_and_registered("nc")
    env.server.create(pod("web", "node-nc"))
    env.settle()
    env.run_for(60)
    env.server.patch("pods", "web", {"metadata": {"labels": {"x": "y"}}}, "default")
    env.settle()
    assert last_pod_event(env) == "2026-01-01T00:00:00Z"


# ----------------------------------------------------------------------------- hydration


def test_nodeclaims_get_their_nodeclass_label() -> None:
    env = Env()
    env.create_nodeclaim("nc")
    env.settle()
    assert env.nodeclaim("nc")["metadata"]["labels"]["karpenter.test.sh/testnodeclass"] == "default"


def test_nodes_get_their_nodeclaims_nodeclass_label() -> None:
    env = Env()
    env.launched_and_registered("nc")
    env.settle()
    assert env.node("node-nc")["metadata"]["labels"]["karpenter.test.sh/testnodeclass"] == "default"


def test_a_node_shared_by_two_nodeclaims_is_not_hydrated() -> None:
    env = Env()
    hydrator = NodeHydration(env.ctx)
    node = env.server.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "shared", "labels": {}},
            "spec": {"providerID": "fake:///shared"},
        }
    )
    hydrator.node_mapper("ADDED", node)
    ref = {"group": "karpenter.test.sh", "kind": "TestNodeClass", "name": "x"}
    for name in ("a", "b"):
        nc = {"metadata": {"name": name}, "spec": {"nodeClassRef": ref}}
        nc["status"] = {"providerID": "fake:///shared"}
        hydrator.nodeclaim_mapper("ADDED", nc)
    hydrator.reconcile(ObjectKey("", "shared"))
    assert env.node("shared")["metadata"].get("labels", {}) == {}


# ----------------------------------------------------------------------------- expiration


def test_a_nodeclaim_is_deleted_when_it_expires() -> None:
    env = Env()
    pool = env.create_nodepool("pool-exp")
    before = disrupted("expired", "pool-exp", "on-demand")
    env.create_nodeclaim("nc", nodepool=pool)
    nc = env.nodeclaim("nc")
    nc["spec"]["expireAfter"] = "2h"
    env.server.update(nc)
    env.settle()
    env.create_node_for("nc")
    env.run_for(minutes(119))
    assert not env.nodeclaim("nc")["metadata"].get("deletionTimestamp")
    env.run_for(minutes(2))
    assert not env.exists("nodeclaims", "nc") or env.nodeclaim("nc")["metadata"].get(
        "deletionTimestamp"
    )
    assert disrupted("expired", "pool-exp", "on-demand") == before + 1


def _expiry_result(expire_after: str | None) -> Result:
    env = Env()
    env.create_nodeclaim("nc")
    if expire_after is not None:
        nc = env.nodeclaim("nc")
        nc["spec"]["expireAfter"] = expire_after
        env.server.update(nc)
    env.clock.advance(60)
    return Expiration(env.ctx).reconcile(ObjectKey("", "nc"))


def test_expire_after_never_never_expires() -> None:
    assert _expiry_result("Never") == Result()


def test_without_expire_after_the_default_is_thirty_days() -> None:
    assert _expiry_result(None) == Result(requeue_after=30 * 24 * 3600 - 60)


def test_an_unparseable_expire_after_is_logged_not_raised() -> None:
    assert _expiry_result("soon") == Result()


def test_a_scan_due_within_a_rounding_residue_runs_instead_of_requeueing_for_it() -> None:
    from karpenter_core.controllers.nodeclaim.consistency import SCAN_PERIOD, Consistency

    env = Env()
    env.launched_and_registered("nc", requests={"cpu": "1", "memory": "1Gi"})
    env.settle()
    consistency = Consistency(env.ctx)
    uid = env.server.get("nodeclaims", "nc")["metadata"]["uid"]
    now = env.ctx.clock.monotonic()
    # what float arithmetic leaves after waiting out the period: 1e-13 s still to go
    consistency._last_scanned.stamp(uid, now - SCAN_PERIOD + 1e-13)
    result = consistency.reconcile(ObjectKey(None, "nc"))
    assert consistency._last_scanned.get(uid) == now  # scanned now
    assert not 0 < result.requeue_after < 1.0  # not asked back for a residue
