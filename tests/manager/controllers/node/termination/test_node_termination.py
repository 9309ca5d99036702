"""node.termination: the Node finalizer, tiered drain, volumes, instance, metrics
(upstream pkg/controllers/node/termination/suite_test.go, ported to the virtual clock)."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from termination_helpers import NODEPOOL, Env

from karpenter_core import metrics
from karpenter_core.apis import labels as wk
from karpenter_core.controllers.node.termination.terminator import (
    EXCLUDE_FROM_LOAD_BALANCERS_LABEL,
)
from karpenter_core.runtime.clock import format_time
from karpenter_core.testing import builders as b

DISRUPTED_TOLERATION_EQUAL = {
    "key": wk.DISRUPTED_TAINT_KEY,
    "operator": "Equal",
    "value": "",
    "effect": "NoSchedule",
}
DISRUPTED_TOLERATION_EXISTS = {"key": wk.DISRUPTED_TAINT_KEY, "operator": "Exists"}


def _has_disrupted_taint(node: dict) -> bool:
    return any(
        t.get("key") == wk.DISRUPTED_TAINT_KEY and t.get("effect") == "NoSchedule"
        for t in node["spec"].get("taints") or []
    )


# ---------------------------------------------------------------- the happy path


def test_deleting_an_empty_node_removes_it_after_drain_and_instance_termination() -> None:
    env = Env()
    node = env.node()
    env.nodeclaim(node)
    env.delete_node()
    env.run_for(4)
    assert env.get_node() is not None, "Drained must stay Unknown for 5 s first"
    env.run_for(30)
    assert env.get_node() is None
    assert env.cloud.instances == {}
    assert env.cloud.delete_calls == ["test:///node-a", "test:///node-a"]


def test_the_nodeclaim_is_deleted_and_carries_the_termination_conditions() -> None:
    env = Env()
    node = env.node()
    env.nodeclaim(node)
    env.delete_node()
    env.run_for(30)
    nc = env.get_nodeclaim("node-a-claim")
    assert nc is not None and nc["metadata"].get("deletionTimestamp")
    for type_ in ("Drained", "VolumesDetached", "InstanceTerminating"):
        cond = env.condition("node-a-claim", type_)
        assert cond is not None and cond["status"] == "True", type_


def test_a_node_without_a_nodeclaim_is_drained_and_released_without_instance_calls() -> None:
    env = Env()
    env.node()
    env.delete_node()
    env.settle()
    assert env.get_node() is None
    assert env.cloud.delete_calls == []


def test_duplicate_nodeclaims_are_treated_as_no_nodeclaim() -> None:
    env = Env()
    node = env.node()
    env.nodeclaim(node, name="claim-1")
    env.nodeclaim(node, name="claim-2")
    env.delete_node()
    env.settle()
    assert env.get_node() is None
    assert env.cloud.delete_calls == []
    for name in ("claim-1", "claim-2"):
        nc = env.get_nodeclaim(name)
        assert nc is not None and not nc["metadata"].get("deletionTimestamp")


def test_nodes_of_another_provider_are_left_alone() -> None:
    env = Env()
    env.node(managed=False, labels={"karpenter.test.sh/unmanagednodeclass": "default"})
    env.delete_node()
    env.run_for(60)
    node = env.get_node()
    assert node is not None
    assert not _has_disrupted_taint(node)


def test_nodes_without_the_finalizer_are_ignored() -> None:
    env = Env()
    env.node()
    node = env.get_node()
    assert node is not None
    env.server.patch("nodes", "node-a", {"metadata": {"finalizers": ["example.com/keep"]}})
    env.delete_node()
    env.run_for(30)
    node = env.get_node()
    assert node is not None and not _has_disrupted_taint(node)


def test_a_draining_node_is_tainted_and_excluded_from_load_balancers() -> None:
    env = Env()
    node = env.node()
    env.nodeclaim(node)
    env.pod("blocked", labels={"app": "a"})
    env.create(b.pdb("block-all", labels={"app": "a"}, max_unavailable=0))
    env.delete_node()
    env.run_for(10)
    node = env.get_node()
    assert node is not None
    assert _has_disrupted_taint(node)
    assert node["metadata"]["labels"][EXCLUDE_FROM_LOAD_BALANCERS_LABEL] == "karpenter"


def test_a_taint_with_the_same_key_but_another_effect_is_replaced() -> None:
    env = Env()
    env.node()
    env.server.patch(
        "nodes",
        "node-a",
        {"spec": {"taints": [{"key": wk.DISRUPTED_TAINT_KEY, "effect": "NoExecute"}]}},
    )
    env.pod("blocked", labels={"app": "a"})
    env.create(b.pdb("block-all", labels={"app": "a"}, max_unavailable=0))
    env.delete_node()
    env.run_for(3)
    node = env.get_node()
    assert node is not None
    assert node["spec"]["taints"] == [{"key": wk.DISRUPTED_TAINT_KEY, "effect": "NoSchedule"}]


# ---------------------------------------------------------------- which pods are drained


@pytest.mark.parametrize(
    "toleration", [DISRUPTED_TOLERATION_EQUAL, DISRUPTED_TOLERATION_EXISTS], ids=["equal", "exists"]
)
def test_pods_tolerating_the_disrupted_taint_are_not_evicted(toleration: dict) -> None:
    env = Env()
    node = env.node()
    env.nodeclaim(node)
    env.pod("evict-me")
    env.pod("stay", tolerations=[toleration])
    env.delete_node()
    env.run_for(60)
    assert env.get_node() is None
    stayer = env.get_pod("stay")
    assert stayer is not None and not stayer["metadata"].get("deletionTimestamp")
    assert env.get_pod("evict-me") is None
    assert [e.name for e in env.events("Evicted")] == ["evict-me"]


def test_pods_tolerating_only_unschedulable_are_evicted() -> None:
    env = Env()
    node = env.node()
    env.nodeclaim(node)
    env.pod(
        "tolerant",
        tolerations=[
            {
                "key": "node.kubernetes.io/unschedulable",
                "operator": "Exists",
                "effect": "NoSchedule",
            }
        ],
    )
    env.delete_node()
    env.run_for(60)
    assert env.get_pod("tolerant") is None
    assert env.get_node() is None


def test_mirror_pods_are_not_evicted_and_do_not_block() -> None:
    env = Env()
    node = env.node()
    env.nodeclaim(node)
    env.pod("evict-me")
    env.pod(
        "mirror",
        owner={
            "apiVersion": "v1",
            "kind": "Node",
            "name": "node-a",
            "uid": node["metadata"]["uid"],
        },
    )
    env.delete_node()
    env.run_for(20)
    mirror = env.get_pod("mirror")
    assert mirror is not None and not mirror["metadata"].get("deletionTimestamp")
    env.run_for(40)
    assert env.get_node() is None
    assert not env.queue.has(mirror)
    assert [e.name for e in env.events("Evicted")] == ["evict-me"]


def test_pods_without_an_owner_are_evicted() -> None:
    env = Env()
    node = env.node()
    env.nodeclaim(node)
    env.pod("orphan", owner=None)
    env.delete_node()
    env.run_for(60)
    assert env.get_pod("orphan") is None
    assert env.get_node() is None


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_terminal_pods_do_not_block_the_drain(phase: str) -> None:
    env = Env()
    node = env.node()
    env.nodeclaim(node)
    env.pod("done", phase=phase)
    env.delete_node()
    env.run_for(30)
    assert env.get_node() is None
    assert env.events("Evicted") == []


def test_the_node_stays_until_every_pod_is_gone() -> None:
    env = Env(kubelet=False)
    node = env.node()
    env.nodeclaim(node)
    env.pod("p0")
    env.pod("p1")
    env.delete_node()
    env.run_for(10)
    for name in ("p0", "p1"):
        pod = env.get_pod(name)
        assert pod is not None and pod["metadata"].get("deletionTimestamp")
    drained = env.condition("node-a-claim", "Drained")
    assert drained is not None
    assert (drained["status"], drained["reason"]) == ("Unknown", "Draining")
    env.server.delete("pods", "p1", "default", grace_period_seconds=0)
    env.run_for(10)
    assert env.get_node() is not None
    env.server.delete("pods", "p0", "default", grace_period_seconds=0)
    env.run_for(10)
    assert env.get_node() is None
    drained = env.condition("node-a-claim", "Drained")
    assert drained is not None and drained["status"] == "True"


def test_a_blocking_pdb_keeps_the_node_and_reports_failed_draining() -> None:
    env = Env()
    node = env.node()
    env.nodeclaim(node)
    pod = env.pod("guarded", labels={"app": "a"})
    env.create(b.pdb("guard", labels={"app": "a"}, min_available=1))
    env.delete_node()
    env.run_for(120)
    assert env.get_node() is not None
    assert env.queue.has(pod)
    failed = env.events("FailedDraining")
    assert failed and failed[0].name == "node-a" and failed[0].type == "Warning"
    assert metrics.sample("karpenter_pods_eviction_requests_total", {"code": "429"}) >= 1
    # Once the pod goes some other way, the node follows.
    env.server.delete("pods", "guarded", "default", grace_period_seconds=0)
    env.run_for(30)
    assert env.get_node() is None


def test_tiers_drain_in_order_each_after_the_previous_is_gone() -> None:
    env = Env()
    node = env.node()
    env.nodeclaim(node)

    def ds_owner(name: str) -> dict:
        return {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": name, "uid": f"{name}-uid"}

    env.pod("app", grace=10)
    env.pod("daemon", owner=ds_owner("ds"), grace=10)
    env.pod("node-critical", priority_class="system-node-critical", grace=10)
    env.pod("cluster-critical", priority_class="system-cluster-critical", grace=10)
    env.pod(
        "critical-daemon-node",
        owner=ds_owner("ds-n"),
        priority_class="system-node-critical",
        grace=10,
    )
    env.pod(
        "critical-daemon-cluster",
        owner=ds_owner("ds-c"),
        priority_class="system-cluster-critical",
        grace=10,
    )
    evicted_at: dict[str, float] = {}
    gone_at: dict[str, float] = {}
    real_evict = env.server.evict

    def spy(name: str, namespace: str, **kw: object) -> None:
        real_evict(name, namespace, **kw)  # type: ignore[arg-type]
        evicted_at[name] = env.clock.monotonic()

    env.server.evict = spy  # type: ignore[method-assign]
    env.delete_node()
    names = [
        "app",
        "daemon",
        "node-critical",
        "cluster-critical",
        "critical-daemon-node",
        "critical-daemon-cluster",
    ]
    while env.get_node() is not None and env.clock.monotonic() < 600:
        env.manager.step()
        for n in names:
            if n not in gone_at and env.get_pod(n) is None:
                gone_at[n] = env.clock.monotonic()
    assert env.get_node() is None
    tiers = [
        ["app"],
        ["daemon"],
        ["node-critical", "cluster-critical"],
        ["critical-daemon-node", "critical-daemon-cluster"],
    ]
    for earlier, later in itertools.pairwise(tiers):
        last_gone = max(gone_at[n] for n in earlier)
        for n in later:
            assert evicted_at[n] >= last_gone, f"{n} evicted before tier {earlier} was gone"
        assert min(evicted_at[n] for n in later) - max(evicted_at[n] for n in earlier) >= 10


def test_a_pod_stuck_terminating_for_over_a_minute_is_ignored() -> None:
    env = Env(kubelet=False)
    node = env.node()
    env.nodeclaim(node)
    env.pod("stuck", grace=30)
    env.delete_node()
    env.run_for(60)
    assert env.get_node() is not None, "30 s of grace + 60 s stuck allowance not yet over"
    env.run_for(40)
    assert env.get_node() is None
    assert env.get_pod("stuck") is not None


def test_a_new_pod_reusing_a_name_is_not_evicted_by_the_old_entry() -> None:
    env = Env()
    old = env.pod("reused", node="node-b")
    env.queue.add(None, [old])
    env.server.delete("pods", "reused", "default", grace_period_seconds=0)
    new = env.pod("reused", node="node-b")
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert not env.queue.has(new)
    env.run_for(30)
    pod = env.get_pod("reused")
    assert pod is not None and not pod["metadata"].get("deletionTimestamp")
    assert env.events("Evicted") == []


def test_do_not_disrupt_pods_stall_the_drain_without_a_deadline() -> None:
    env = Env()
    node = env.node()
    env.nodeclaim(node)
    env.pod("precious", annotations={wk.DO_NOT_DISRUPT_ANNOTATION_KEY: "true"})
    env.delete_node()
    env.run_for(600)
    assert env.get_node() is not None
    pod = env.get_pod("precious")
    assert pod is not None and not pod["metadata"].get("deletionTimestamp")
    assert env.events("Evicted") == []


def test_a_do_not_disrupt_duration_lets_the_pod_go_once_elapsed() -> None:
    env = Env()
    node = env.node()
    env.nodeclaim(node)
    env.pod("brief", annotations={wk.DO_NOT_DISRUPT_ANNOTATION_KEY: "2m"}, grace=5)
    env.delete_node()
    env.run_for(100)
    assert env.get_pod("brief") is not None
    env.run_for(60)
    assert env.get_pod("brief") is None
    assert env.get_node() is None
    assert env.events("DoNotDisruptUntil")


# ---------------------------------------------------------------- terminationGracePeriod


def _deadline_env(tgp: int = 300) -> tuple[Env, str]:
    env = Env()
    node = env.node()
    deadline = format_time(env.clock.now() + timedelta(seconds=tgp))
    env.nodeclaim(node, annotations={wk.NODECLAIM_TERMINATION_TIMESTAMP_ANNOTATION_KEY: deadline})
    return env, deadline


def test_a_do_not_disrupt_pod_whose_grace_fills_the_deadline_is_deleted_at_once() -> None:
    env, deadline = _deadline_env(300)
    env.pod("precious", annotations={wk.DO_NOT_DISRUPT_ANNOTATION_KEY: "true"}, grace=300)
    env.delete_node()
    env.run_for(6)
    pod = env.get_pod("precious")
    assert pod is not None and pod["metadata"].get("deletionTimestamp")
    disrupted = env.events("Disrupted")
    assert disrupted and "bypasses the PDB" in disrupted[0].message
    expiring = env.events("TerminationGracePeriodExpiring")
    assert expiring and expiring[0].message == f"All pods will be deleted by {deadline}"


def test_a_do_not_disrupt_pod_is_deleted_its_grace_period_before_the_deadline() -> None:
    env, _ = _deadline_env(300)
    env.pod("precious", annotations={wk.DO_NOT_DISRUPT_ANNOTATION_KEY: "true"}, grace=60)
    env.delete_node()
    env.run_for(90)
    pod = env.get_pod("precious")
    assert pod is not None and not pod["metadata"].get("deletionTimestamp")
    env.run_for(150)  # t = 240 s: exactly deadline - 60 s, not yet past
    pod = env.get_pod("precious")
    assert pod is not None and not pod["metadata"].get("deletionTimestamp")
    env.run_for(25)  # t = 265 s
    pod = env.get_pod("precious")
    assert pod is None or pod["metadata"].get("deletionTimestamp")


def test_a_pdb_blocked_pod_is_force_deleted_when_the_deadline_demands_it() -> None:
    env, _ = _deadline_env(120)
    env.pod("guarded", labels={"app": "a"}, grace=30)
    env.create(b.pdb("guard", labels={"app": "a"}, max_unavailable=0))
    env.delete_node()
    env.run_for(60)
    assert env.get_pod("guarded") is not None
    assert env.events("Disrupted") == []
    env.run_for(40)  # t = 100 s > 120 - 30
    assert env.events("Disrupted")
    env.run_for(60)
    assert env.get_pod("guarded") is None
    assert env.get_node() is None


def test_a_past_deadline_critical_pod_is_not_held_behind_an_earlier_tier() -> None:
    env, _ = _deadline_env(300)
    env.pod("slow", labels={"app": "a"}, grace=30)
    env.create(b.pdb("guard", labels={"app": "a"}, max_unavailable=0))
    env.pod("critical", priority_class="system-node-critical", grace=600)
    env.delete_node()
    env.run_for(3)
    critical = env.get_pod("critical")
    assert critical is None or critical["metadata"].get("deletionTimestamp")
    slow = env.get_pod("slow")
    assert slow is not None and not slow["metadata"].get("deletionTimestamp")


def test_force_deletion_shortens_grace_to_what_is_left_of_the_deadline() -> None:
    env, _ = _deadline_env(300)
    env.pod("long", annotations={wk.DO_NOT_DISRUPT_ANNOTATION_KEY: "true"}, grace=6000)
    deletes: list[int | None] = []
    real_delete = env.server.delete

    def spy(resource: object, name: str, namespace: str | None = None, **kw: object):  # type: ignore[no-untyped-def]
        if resource == "pods" and name == "long":
            deletes.append(kw.get("grace_period_seconds"))  # type: ignore[arg-type]
        return real_delete(resource, name, namespace, **kw)  # type: ignore[arg-type]

    env.server.delete = spy  # type: ignore[method-assign]
    env.run_for(90)
    env.delete_node()
    env.run_for(2)
    assert deletes and 195 <= deletes[0] <= 210


# ---------------------------------------------------------------- readiness and instances


def test_a_notready_node_whose_instance_is_gone_is_released_without_draining() -> None:
    env = Env(kubelet=False)
    node = env.node(ready=False, instance=False)
    env.nodeclaim(node)
    env.pod("p0")
    env.delete_node()
    env.settle()
    assert env.get_node() is None
    pod = env.get_pod("p0")
    assert pod is not None and not pod["metadata"].get("deletionTimestamp")


def test_a_ready_node_is_drained_even_when_the_instance_is_gone() -> None:
    env = Env(kubelet=False)
    node = env.node(ready=True, instance=False)
    env.nodeclaim(node)
    env.pod("p0")
    env.delete_node()
    env.run_for(30)
    assert env.get_node() is not None
    assert env.cloud.get_calls == []


def test_instance_deletion_is_retried_every_five_seconds_until_not_found() -> None:
    env = Env()
    node = env.node()
    env.nodeclaim(node)
    keep_alive = True
    real_delete = env.cloud.delete
    times: list[float] = []

    def stubborn(nodeclaim):  # type: ignore[no-untyped-def]
        times.append(env.clock.monotonic())
        if keep_alive:
            return None
        return real_delete(nodeclaim)

    env.cloud.delete = stubborn  # type: ignore[method-assign]
    env.delete_node()
    env.run_for(30)
    assert env.get_node() is not None
    cond = env.condition("node-a-claim", "InstanceTerminating")
    assert cond is not None and cond["status"] == "True"
    gaps = {round(b - a, 6) for a, b in itertools.pairwise(times)}
    assert gaps == {5.0}
    keep_alive = False
    env.run_for(10)
    assert env.get_node() is None


# ---------------------------------------------------------------- drain timing


def test_drained_stays_unknown_for_the_minimum_drain_time() -> None:
    env = Env()
    node = env.node()
    env.nodeclaim(node)
    env.delete_node()
    env.run_for(3)
    node = env.get_node()
    assert node is not None and _has_disrupted_taint(node)
    drained = env.condition("node-a-claim", "Drained")
    assert drained is not None and drained["status"] == "Unknown"
    env.run_for(3)
    drained = env.condition("node-a-claim", "Drained")
    assert drained is not None and drained["status"] == "True"


# ---------------------------------------------------------------- volumes


def _volume_attachment(env: Env, name: str, pv: str, node: str = "node-a") -> None:
    env.server.create(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "VolumeAttachment",
            "metadata": {"name": name},
            "spec": {
                "attacher": "csi.example.com",
                "nodeName": node,
                "source": {"persistentVolumeName": pv},
            },
        }
    )


def test_termination_waits_for_volume_attachments_to_go() -> None:
    env = Env()
    node = env.node()
    env.nodeclaim(node)
    _volume_attachment(env, "va-1", "pv-1")
    env.delete_node()
    env.run_for(30)
    assert env.get_node() is not None
    cond = env.condition("node-a-claim", "VolumesDetached")
    assert cond is not None and (cond["status"], cond["reason"]) == (
        "Unknown",
        "AwaitingVolumeDetachment",
    )
    waiting = env.events("AwaitingVolumeDetachment")
    assert waiting and "va-1" in waiting[0].message
    env.server.delete("volumeattachments", "va-1")
    env.run_for(10)
    assert env.get_node() is None
    cond = env.condition("node-a-claim", "VolumesDetached")
    assert cond is not None and cond["status"] == "True"


def test_volumes_of_pods_the_drain_leaves_behind_are_not_waited_for() -> None:
    env = Env()
    node = env.node()
    env.nodeclaim(node)
    env.server.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "default"},
            "spec": {"volumeName": "pv-kept", "accessModes": ["ReadWriteOnce"]},
        }
    )
    env.pod(
        "stay",
        tolerations=[DISRUPTED_TOLERATION_EXISTS],
        volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
    )
    _volume_attachment(env, "va-kept", "pv-kept")
    _volume_attachment(env, "va-drained", "pv-drained")
    env.delete_node()
    env.run_for(30)
    assert env.get_node() is not None
    env.server.delete("volumeattachments", "va-drained")
    env.run_for(10)
    assert env.get_node() is None


def test_volume_wait_ends_when_the_termination_grace_period_elapses() -> None:
    env, _ = _deadline_env(60)
    _volume_attachment(env, "va-1", "pv-1")
    env.delete_node()
    env.run_for(30)
    assert env.get_node() is not None
    env.run_for(60)
    assert env.get_node() is None
    cond = env.condition("node-a-claim", "VolumesDetached")
    assert cond is not None and (cond["status"], cond["reason"]) == (
        "False",
        "TerminationGracePeriodElapsed",
    )


# ---------------------------------------------------------------- metrics


def test_termination_records_node_metrics_once() -> None:
    env = Env()
    node = env.node()
    env.nodeclaim(node)
    env.run_for(100)
    env.delete_node()
    env.run_for(60)
    assert env.get_node() is None
    labels = {"nodepool": NODEPOOL}
    assert metrics.sample("karpenter_nodes_drained_total", labels) == 1
    assert (
        metrics.sample("karpenter_nodes_terminated_total", {**labels, "zone": "test-zone-a"}) == 1
    )
    assert metrics.sample("karpenter_nodes_termination_duration_seconds_count", labels) == 1
    duration = metrics.sample("karpenter_nodes_termination_duration_seconds_sum", labels)
    assert duration is not None and 5 <= duration <= 15
    assert metrics.sample("karpenter_nodes_lifetime_duration_seconds_count", labels) == 1


def test_evictions_count_requests_and_drained_pods() -> None:
    env = Env()
    node = env.node()
    env.nodeclaim(node)
    env.pod("p0")
    env.pod("p1")
    env.delete_node()
    env.run_for(60)
    assert metrics.sample("karpenter_pods_eviction_requests_total", {"code": "200"}) == 2
    assert metrics.sample("karpenter_pods_drained_total", {"reason": "Forceful Termination"}) == 2


def test_a_malformed_termination_timestamp_holds_the_node_with_a_clear_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    env = Env()
    node = env.node()
    env.nodeclaim(node, annotations={wk.NODECLAIM_TERMINATION_TIMESTAMP_ANNOTATION_KEY: "soon"})
    env.delete_node()
    with caplog.at_level("ERROR", logger="karpenter.termination"):
        env.run_for(30)
    assert env.get_node() is not None
    assert env.manager.controller("node.termination").errors == 0
    messages = [r.getMessage() for r in caplog.records]
    assert any("node-a-claim" in m and "'soon'" in m and "RFC 3339" in m for m in messages)


@pytest.mark.parametrize("seed", [None, 3, 11])
def test_many_nodes_deleted_at_once_are_each_drained_and_released(seed: int | None) -> None:
    env = Env(seed=seed)
    names = [f"node-{i}" for i in range(10)]
    for name in names:
        node = env.node(name)
        env.nodeclaim(node)
        env.pod(f"{name}-app", node=name, grace=5)
    for name in names:
        env.delete_node(name)
    env.run_for(120)
    assert all(env.get_node(name) is None for name in names)
    assert all(env.get_pod(f"{name}-app") is None for name in names)
    assert env.cloud.instances == {}
    terminated = metrics.sample(
        "karpenter_nodes_terminated_total", {"nodepool": NODEPOOL, "zone": "test-zone-a"}
    )
    assert terminated == 10
    assert metrics.sample("karpenter_nodes_drained_total", {"nodepool": NODEPOOL}) == 10
