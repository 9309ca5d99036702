"""metrics.nodepool: limit and usage gauges per resource; registration gating."""

from __future__ import annotations

from metrics_controllers_harness import make_env

from karpenter_core.controllers import metrics as metrics_controllers
from karpenter_core.runtime.options import Options
from karpenter_core.testing import Environment
from karpenter_core.testing import builders as b
from karpenter_core.testing.expectations import metric_samples, metric_value


def test_limits_and_usage_are_reported_per_resource() -> None:
    env = make_env()
    created = env.create(b.nodepool(limits={"cpu": "100", "memory": "1000Gi"}))
    env.set_status(created, {"resources": {"cpu": "4500m", "memory": "8Gi", "nodes": "2"}})
    env.run_for(11)
    assert metric_value("karpenter_nodepools_limit", nodepool="default", resource_type="cpu") == 100
    assert metric_value(
        "karpenter_nodepools_limit", nodepool="default", resource_type="memory"
    ) == (1000 * 2**30)
    assert metric_value("karpenter_nodepools_usage", nodepool="default", resource_type="cpu") == 4.5
    assert metric_value("karpenter_nodepools_usage", nodepool="default", resource_type="nodes") == 2


def test_a_removed_limit_and_a_deleted_pool_lose_their_series() -> None:
    env = make_env()
    env.create(b.nodepool(limits={"cpu": "100", "memory": "1000Gi"}))
    env.create(b.nodepool("other", limits={"cpu": "10"}))
    env.run_for(1)
    env.kube.patch("nodepools", "default", {"spec": {"limits": {"memory": None}}})
    env.kube.delete("nodepools", "other")
    env.run_for(1)
    series = {
        (s["nodepool"], s["resource_type"]) for s, _ in metric_samples("karpenter_nodepools_limit")
    }
    assert series == {("default", "cpu")}


def test_a_nodepool_of_another_provider_is_not_reported() -> None:
    env = make_env()
    ref = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
    env.create(b.nodepool("foreign", limits={"cpu": "10"}, node_class=ref))
    env.run_for(11)
    assert metric_samples("karpenter_nodepools_limit") == []


def test_the_three_controllers_register_under_upstreams_names() -> None:
    env = make_env()
    names = {c.name for c in env.manager.controllers}
    assert set(metrics_controllers.NAMES) <= names
    assert metrics_controllers.NAMES == ("metrics.pod", "metrics.node", "metrics.nodepool")


def test_disabling_cluster_state_observability_registers_none() -> None:
    env = Environment(  # the whole registry: it is what leaves the package out
        options=Options(disable_cluster_state_observability=True),
        kube_scheduler=False,
        kubelet=False,
    )
    names = {c.name for c in env.manager.controllers}
    assert not names & set(metrics_controllers.NAMES)
