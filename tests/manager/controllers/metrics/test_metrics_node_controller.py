"""metrics.node: per-node resource gauges with well-known-label labels, lifetime, and
cluster utilisation."""

from __future__ import annotations

from metrics_controllers_harness import MANAGED_LABELS, make_env, node, pod

from karpenter_core import metrics
from karpenter_core.testing.expectations import metric_samples, metric_value


def test_node_gauges_carry_the_well_known_labels_and_whole_units() -> None:
    env = make_env()
    env.create(node("n1", labels=MANAGED_LABELS))
    env.run_for(6)
    _, label_map = metrics.node_gauges()
    [(labels, value)] = [
        s for s in metric_samples("karpenter_nodes_allocatable") if s[0]["resource_type"] == "cpu"
    ]
    assert value == 3.8
    assert labels["node_name"] == "n1"
    assert labels["phase"] == "Running"
    assert labels[label_map["karpenter.sh/nodepool"]] == "default"
    assert labels[label_map["topology.kubernetes.io/zone"]] == "zone-a"
    assert labels[label_map["karpenter.sh/capacity-type"]] == "spot"
    # Every well-known label is a label of the series, empty when the node lacks it.
    assert set(label_map.values()) <= set(labels)
    memory = metric_value("karpenter_nodes_allocatable", node_name="n1", resource_type="memory")
    assert memory == 16 * 2**30
    overhead = metric_value("karpenter_nodes_system_overhead", node_name="n1", resource_type="cpu")
    assert overhead == 0.2


def test_pod_and_daemon_requests_and_limits_are_summed_per_node() -> None:
    env = make_env()
    env.create(node("n1"))
    env.create(pod("a", cpu="500m", node_name="n1", phase="Running", limits={"cpu": "1"}))
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "d",
          "controller": True}  # fmt: skip
    env.create(
        pod("agent", cpu="250m", node_name="n1", phase="Running", owner=ds, limits={"cpu": "500m"})
    )
    env.run_for(6)

    def cpu(metric: str) -> float | None:
        return metric_value(metric, node_name="n1", resource_type="cpu")

    assert cpu("karpenter_nodes_total_pod_requests") == 0.75
    assert cpu("karpenter_nodes_total_pod_limits") == 1.5
    assert cpu("karpenter_nodes_total_daemon_requests") == 0.25
    assert cpu("karpenter_nodes_total_daemon_limits") == 0.5


def test_lifetime_follows_the_virtual_clock() -> None:
    env = make_env()
    env.create(node("n1"))
    env.run_for(61)
    # read when collected: the node was created at t = 0
    assert metric_value("karpenter_nodes_current_lifetime_seconds", node_name="n1") == 61.0
    env.clock.advance(2)  # between two passes: no reconcile, the figure still moves
    assert metric_value("karpenter_nodes_current_lifetime_seconds", node_name="n1") == 63.0


def test_cluster_utilization_is_requests_over_allocatable() -> None:
    env = make_env()
    env.create(node("n1", cpu="4", allocatable_cpu="4"))
    env.create(node("n2", cpu="4", allocatable_cpu="4"))
    env.create(pod("a", cpu="3", node_name="n1", phase="Running"))
    env.create(pod("b", cpu="1", node_name="n2", phase="Running"))
    env.run_for(6)
    assert metric_value("karpenter_cluster_utilization_percent", resource_type="cpu") == 50.0
    # summed again when a node's pods change, and when a node goes
    env.create(pod("c", cpu="1", node_name="n2", phase="Running"))
    env.run_for(6)
    assert metric_value("karpenter_cluster_utilization_percent", resource_type="cpu") == 62.5
    env.kube.delete("nodes", "n2")
    env.run_for(6)
    assert metric_value("karpenter_cluster_utilization_percent", resource_type="cpu") == 75.0


def test_a_deleted_node_loses_its_series() -> None:
    env = make_env()
    env.create(node("n1"))
    env.create(node("n2"))
    env.run_for(6)
    env.kube.delete("nodes", "n1")
    env.run_for(6)
    names = {labels["node_name"] for labels, _ in metric_samples("karpenter_nodes_allocatable")}
    assert names == {"n2"}


def test_series_follow_pod_and_node_changes_after_the_first_pass() -> None:
    """Unchanged nodes keep their series from pass to pass (only the lifetime moves); a pod
    that arrives or leaves, and a node relabelled, change them at the next pass."""
    env = make_env()
    env.create(node("n1", labels=MANAGED_LABELS))
    env.run_for(6)

    def cpu_requests() -> float | None:
        return metric_value(
            "karpenter_nodes_total_pod_requests", node_name="n1", resource_type="cpu"
        )

    assert cpu_requests() is None  # no pod yet: no requests series
    created = env.create(pod("a", cpu="500m", node_name="n1", phase="Running"))
    env.run_for(6)
    assert cpu_requests() == 0.5
    env.create(pod("b", cpu="1", node_name="n1", phase="Running"))
    env.run_for(6)
    assert cpu_requests() == 1.5
    env.kube.delete("pods", created["metadata"]["name"], "default", grace_period_seconds=0)
    env.run_for(6)
    assert cpu_requests() == 1.0
    _, label_map = metrics.node_gauges()
    zone = label_map["topology.kubernetes.io/zone"]
    env.kube.patch(
        "nodes", "n1", {"metadata": {"labels": {"topology.kubernetes.io/zone": "zone-b"}}}
    )
    env.run_for(6)
    zones = {labels[zone] for labels, _ in metric_samples("karpenter_nodes_allocatable")}
    assert zones == {"zone-b"}  # the zone-a series went with the change
    assert metric_value("karpenter_nodes_current_lifetime_seconds", node_name="n1") == 30.0
