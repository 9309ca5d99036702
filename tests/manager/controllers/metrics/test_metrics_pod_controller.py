"""metrics.pod: pods_state series and the pod waiting / duration metrics."""

from __future__ import annotations

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
