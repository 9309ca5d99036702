"""metrics.pod: pods_state series and the pod waiting / duration metrics."""

from __future__ import annotations

from typing import Any

from metrics_controllers_harness import MANAGED_LABELS, make_env, node, pod, stamp

from karpenter_core.apis.objects import Pod
from karpenter_core.testing.expectations import metric_samples, metric_value

STATE = "karpenter_pods_state"


def test_a_pending_pod_has_one_unscheduled_state_series() -> None:
    env = make_env()
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "u"}
    env.create(pod("p", owner=owner))
    env.run_for(1)
    [(labels, value)] = metric_samples(STATE)
    assert value == 1.0
    assert labels["name"] == "p"
    assert labels["namespace"] == "default"
    assert labels["owner"] == "/apis/apps/v1/namespaces/default/replicasets/web-1"
    assert labels["scheduled"] == "false"
    assert labels["phase"] == "Pending"
    assert labels["node"] == ""
    assert labels["managed"] == "false"


def test_binding_replaces_the_series_with_the_nodes_placement() -> None:
    env = make_env()
    env.create(node("n1", labels=MANAGED_LABELS))
    created = env.create(pod("p"))
    env.run_for(1)
    env.set_status(
        env.bind(created, "n1"),
        {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    )
    env.run_for(1)
    [(labels, _)] = metric_samples(STATE)
    assert labels["node"] == "n1"
    assert labels["scheduled"] == "true"
    assert labels["ready"] == "true"
    assert labels["nodepool"] == "default"
    assert labels["zone"] == "zone-a"
    assert labels["arch"] == "amd64"
    assert labels["capacity_type"] == "spot"
    assert labels["instance_type"] == "m.large"
    assert labels["managed"] == "true"


def test_a_deleted_pod_loses_all_its_series() -> None:
    env = make_env()
    env.create(pod("p"))
    env.run_for(31)
    assert metric_value("karpenter_pods_unbound_time_seconds", name="p") is not None
    env.kube.delete("pods", "p", "default")
    env.run_for(1)
    assert metric_samples(STATE) == []
    assert metric_samples("karpenter_pods_unbound_time_seconds") == []
    assert metric_samples("karpenter_pods_unstarted_time_seconds") == []


def test_waiting_gauges_grow_with_the_clock_while_the_pod_is_pending() -> None:
    env = make_env()
    env.create(pod("p"))  # created at the start of the virtual clock
    env.run_for(60.5)
    # Requeued every 30 s: the last refresh was at t = 60.
    assert metric_value("karpenter_pods_unbound_time_seconds", name="p") == 60.0
    assert metric_value("karpenter_pods_unstarted_time_seconds", name="p") == 60.0


def test_binding_observes_the_bound_duration_once_and_drops_the_gauge() -> None:
    env = make_env()
    env.create(node("n1"))
    created = env.create(pod("p"))
    env.run_for(45)
    scheduled = {"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp(42)}
    ready = {"type": "Ready", "status": "True", "lastTransitionTime": stamp(50)}
    env.set_status(env.bind(created, "n1"), {"phase": "Running", "conditions": [scheduled, ready]})
    env.run_for(100)
    assert metric_value("karpenter_pods_bound_duration_seconds_count") == 1.0
    assert metric_value("karpenter_pods_bound_duration_seconds_sum") == 42.0
    assert metric_value("karpenter_pods_startup_duration_seconds_count") == 1.0
    assert metric_value("karpenter_pods_startup_duration_seconds_sum") == 50.0
    assert metric_samples("karpenter_pods_unbound_time_seconds") == []
    assert metric_samples("karpenter_pods_unstarted_time_seconds") == []


def test_a_pod_first_seen_running_observes_no_durations() -> None:
    env = make_env()
    env.create(node("n1"))
    ready = {"type": "Ready", "status": "True", "lastTransitionTime": stamp(0)}
    env.create(pod("p", node_name="n1", phase="Running", conditions=[ready]))
    env.run_for(5)
    assert metric_value("karpenter_pods_startup_duration_seconds_count") == 0.0
    assert metric_value("karpenter_pods_bound_duration_seconds_count") == 0.0


def test_undecided_time_runs_from_the_ack_until_a_decision() -> None:
    env = make_env()
    raw = env.create(pod("p"))
    cluster = env.cluster
    cluster.ack_pods(["default/p"])
    env.run_for(31)
    metric = "karpenter_pods_provisioning_scheduling_undecided_time_seconds"
    assert metric_value(metric, name="p") == 30.0
    cluster.mark_pod_scheduling_decisions([], {"default": [Pod.from_dict(raw)]})
    env.run_for(30)
    assert metric_samples(metric) == []


def test_provisioning_variants_count_from_when_karpenter_found_the_pod_a_place() -> None:
    env = make_env()
    env.create(node("n1"))
    raw = env.create(pod("p"))
    cluster = env.cluster
    env.run_for(10)
    assert metric_samples("karpenter_pods_provisioning_unbound_time_seconds") == []
    cluster.mark_pod_scheduling_decisions([], {"default": [Pod.from_dict(raw)]})  # t = 10
    env.run_for(21)  # refreshed at t = 30
    assert metric_value("karpenter_pods_provisioning_unbound_time_seconds", name="p") == 20.0
    assert metric_value("karpenter_pods_provisioning_unstarted_time_seconds", name="p") == 20.0
    scheduled = {"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp(35)}
    ready = {"type": "Ready", "status": "True", "lastTransitionTime": stamp(40)}
    env.set_status(env.bind(raw, "n1"), {"phase": "Running", "conditions": [scheduled, ready]})
    env.run_for(1)
    assert metric_value("karpenter_pods_provisioning_bound_duration_seconds_sum") == 25.0
    assert metric_value("karpenter_pods_provisioning_startup_duration_seconds_sum") == 30.0
    # Started: cluster state forgets the pod's scheduling times.
    assert cluster.pod_scheduling_success("default/p") is None


def _count_reconciles(env: Any) -> dict[str, int]:
    """Count metrics.pod reconciles per pod name from now on."""
    counts: dict[str, int] = {}
    (controller,) = [c for c in env.manager.controllers if c.name == "metrics.pod"]
    inner = controller.run_one

    def run_one(key: Any) -> Any:
        counts[key.name] = counts.get(key.name, 0) + 1
        return inner(key)

    controller.run_one = run_one
    return counts


def _running(env: Any, created: dict[str, Any], node_name: str) -> None:
    env.set_status(
        env.bind(created, node_name),
        {
            "phase": "Running",
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": "True"},
            ],
        },
    )


def test_a_pending_pod_is_requeued_and_a_settled_one_is_not() -> None:
    """Only a pod whose series holds a waiting time needs the 30 s refresh; with 150,000
    running pods the refresh of the others was thousands of reconciles a second."""
    env = make_env()
    env.create(node("n1", labels=MANAGED_LABELS))
    waiting = env.create(pod("waiting"))
    settled = env.create(pod("settled"))
    env.run_for(1)
    _running(env, settled, "n1")
    env.run_for(1)
    counts = _count_reconciles(env)
    env.run_for(120)
    assert counts.get("waiting", 0) == 4  # every 30 s
    assert counts.get("settled", 0) == 1  # the refresh booked while it waited, then none
    assert metric_value("karpenter_pods_unbound_time_seconds", name="waiting") is not None
    [(labels, _)] = [s for s in metric_samples(STATE) if s[0]["name"] == "settled"]
    assert labels["ready"] == "true"
    assert waiting  # created


def test_a_node_label_change_relabels_the_pods_on_it() -> None:
    env = make_env()
    n1 = env.create(node("n1", labels=MANAGED_LABELS))
    other = env.create(node("n2", labels=MANAGED_LABELS))
    _running(env, env.create(pod("p")), "n1")
    _running(env, env.create(pod("q")), "n2")
    env.run_for(1)
    counts = _count_reconciles(env)
    relabelled = {**n1["metadata"]["labels"], "topology.kubernetes.io/zone": "zone-b"}
    env.kube.patch("nodes", "n1", {"metadata": {"labels": relabelled}})
    env.run_for(1)
    zones = {s[0]["name"]: s[0]["zone"] for s in metric_samples(STATE)}
    assert zones == {"p": "zone-b", "q": "zone-a"}
    assert counts == {"p": 1}  # q's node did not change; n1's status-only updates do nothing
    env.kube.patch("nodes", "n1", {"metadata": {"annotations": {"unrelated": "x"}}})
    env.run_for(1)
    assert counts == {"p": 1}
    assert other


def test_a_pod_labelled_before_its_node_was_known_is_relabelled_when_it_appears() -> None:
    env = make_env()
    _running(env, env.create(pod("p")), "late")
    env.run_for(1)
    [(labels, _)] = metric_samples(STATE)
    assert labels["node"] == "late" and labels["nodepool"] == ""
    env.create(node("late", labels=MANAGED_LABELS))
    env.run_for(1)
    [(labels, _)] = metric_samples(STATE)
    assert labels["nodepool"] == "default" and labels["managed"] == "true"
