"""metrics.nodepool: limit and usage gauges per resource; registration gating."""

from __future__ import annotations

from metrics_controllers_harness import Env, nodepool

from karpenter_core.controllers import metrics as metrics_controllers
from karpenter_core.runtime.options import Options


def test_limits_and_usage_are_reported_per_resource() -> None:
    env = Env()
    created = env.create(nodepool(limits={"cpu": "100", "memory": "1000Gi"}))
    env.set_status(created, {"resources": {"cpu": "4500m", "memory": "8Gi", "nodes": "2"}})
    env.run_for(11)
    assert env.value("karpenter_nodepools_limit", nodepool="default", resource_type="cpu") == 100
    assert env.value("karpenter_nodepools_limit", nodepool="default", resource_type="memory") == (
        1000 * 2**30
    )
    assert env.value("karpenter_nodepools_usage", nodepool="default", resource_type="cpu") == 4.5
    assert env.value("karpenter_nodepools_usage", nodepool="default", resource_type="nodes") == 2


def test_a_removed_limit_and_a_deleted_pool_lose_their_series() -> None:
    env = Env()
    env.create(nodepool(limits={"cpu": "100", "memory": "1000Gi"}))
    env.create(nodepool("other", limits={"cpu": "10"}))
    env.run_for(1)
    env.kube.patch("nodepools", "default", {"spec": {"limits": {"memory": None}}})
    env.kube.delete("nodepools", "other")
    env.run_for(1)
    series = {
        (s["nodepool"], s["resource_type"]) for s, _ in env.scrape("karpenter_nodepools_limit")
    }
    assert series == {("default", "cpu")}


def test_a_nodepool_of_another_provider_is_not_reported() -> None:
    env = Env()
    ref = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
    env.create(nodepool("foreign", limits={"cpu": "10"}, ref=ref))
    env.run_for(11)
    assert env.scrape("karpenter_nodepools_limit") == []


def test_the_three_controllers_register_under_upstreams_names() -> None:
    env = Env()
    names = {c.name for c in env.manager.controllers}
    assert set(metrics_controllers.NAMES) <= names
    assert metrics_controllers.NAMES == ("metrics.pod", "metrics.node", "metrics.nodepool")


def test_disabling_cluster_state_observability_registers_none() -> None:
    env = Env(options=Options(disable_cluster_state_observability=True))
    names = {c.name for c in env.manager.controllers}
    assert not names & set(metrics_controllers.NAMES)
