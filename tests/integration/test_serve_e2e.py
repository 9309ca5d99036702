"""``karpenter serve`` end to end on a real control plane: provisioning, metrics, leader
election, crash recovery, invalid NodePools.

The control plane, the fake kubelet standing in for KWOK and the ``karpenter serve``
subprocesses come from ``serve_harness.py`` (its docstring says what runs where). Waits poll
the API server with generous deadlines and assert on state, never on how long something took.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from serve_harness import (
    NODEPOOL_LABEL,
    WAIT,
    Cluster,
    Serve,
    cluster_fixture,  # noqa: F401 -- the `cluster` fixture
    metric,
    serve_fixture,  # noqa: F401 -- the `serve` fixture
    wait_for,
)

pytestmark = pytest.mark.controlplane


# --------------------------------------------------------------------------- tests


def test_every_pod_of_a_deployment_ends_up_on_a_karpenter_launched_node(
    cluster: Cluster, serve: Callable[..., Serve]
) -> None:
    serve()
    cluster.apply_nodepool("default")
    cluster.apply_deployment("web", 20)
    wait_for(lambda: cluster.all_bound_to_karpenter_nodes("web", 20), "20 pods bound")
    claims = cluster.nodeclaims()
    nodes = cluster.karpenter_nodes()
    assert len(claims) >= 5  # twenty 1-vCPU pods on 4-vCPU nodes
    assert {n["spec"]["providerID"] for n in nodes} == {c["status"]["providerID"] for c in claims}
    assert all(n["metadata"]["labels"][NODEPOOL_LABEL] == "default" for n in nodes)


def test_metrics_expose_upstream_metric_names(
    cluster: Cluster, serve: Callable[..., Serve]
) -> None:
    op = serve()
    cluster.apply_nodepool("default")
    cluster.apply_deployment("web", 4)
    wait_for(lambda: cluster.all_bound_to_karpenter_nodes("web", 4), "4 pods bound")
    body = wait_for(
        lambda: (
            (b := op.metrics())
            and (metric(b, "karpenter_nodeclaims_created_total", nodepool="default") or 0) > 0
            and b
        ),
        "nodeclaims_created_total to count the launches",
    )
    assert metric(body, "karpenter_build_info") == 1.0
    assert metric(body, "karpenter_cluster_state_synced") == 1.0
    assert (metric(body, "karpenter_cluster_state_node_count") or 0) >= 1
    assert (metric(body, "karpenter_scheduler_scheduling_duration_seconds_count") or 0) >= 1
    assert (
        metric(body, "karpenter_cloudprovider_duration_seconds_count", method="Create") or 0
    ) >= 1
    assert metric(body, "leader_election_master_status", name="karpenter-leader-election") == 1.0
    for family in (
        "karpenter_nodeclaims_created_total",
        "karpenter_nodeclaims_terminated_total",
        "karpenter_nodes_created_total",
        "karpenter_pods_state",
        "karpenter_nodepools_usage",
        "karpenter_nodepools_limit",
    ):
        assert f"# TYPE {family.removesuffix('_total')}" in body, family


def test_kill_9_and_restart_launches_no_duplicate_nodeclaims_and_leaks_no_nodes(
    cluster: Cluster, serve: Callable[..., Serve]
) -> None:
    first = serve("first")
    cluster.apply_nodepool("default")
    cluster.apply_deployment("web", 20)
    wait_for(lambda: cluster.nodeclaims(), "the first NodeClaims")
    first.kill9()  # mid-provisioning: some claims launched, some pods not yet bound
    second = serve("second")
    wait_for(second.leading, "the restarted replica to lead")
    wait_for(lambda: cluster.all_bound_to_karpenter_nodes("web", 20), "20 pods bound")
    # Let the restarted operator run full provisioning passes over the settled cluster.
    wait_for(
        lambda: metric(second.metrics(), "karpenter_cluster_state_synced") == 1.0,
        "cluster state to sync",
    )
    before = {c["metadata"]["name"] for c in cluster.nodeclaims()}
    cluster.scale("web", 21)  # one more pod: forces a fresh provisioning pass
    wait_for(lambda: cluster.all_bound_to_karpenter_nodes("web", 21), "21 pods bound")
    claims = cluster.nodeclaims()
    nodes = cluster.karpenter_nodes()
    # No leaked nodes: every Karpenter node belongs to a NodeClaim and vice versa.
    assert sorted(n["spec"]["providerID"] for n in nodes) == sorted(
        c["status"]["providerID"] for c in claims
    )
    # No duplicates: every NodeClaim's node runs some of the pods it was launched for.
    used = {p["spec"]["nodeName"] for p in cluster.pods("web")}
    idle = [c["metadata"]["name"] for c in claims if c["status"].get("nodeName") not in used]
    assert idle == []
    assert before <= {c["metadata"]["name"] for c in claims}


def test_two_replicas_only_the_leader_acts_and_the_standby_takes_over(
    cluster: Cluster, serve: Callable[..., Serve]
) -> None:
    a = serve("a")
    wait_for(a.leading, "the first replica to lead")
    b = serve("b")
    assert b.ready()  # a standby is ready: caches synced, CRDs resolve
    cluster.apply_nodepool("default")
    cluster.apply_deployment("web", 8)
    wait_for(lambda: cluster.all_bound_to_karpenter_nodes("web", 8), "8 pods bound")
    assert not b.leading()
    assert (metric(a.metrics(), "karpenter_nodeclaims_created_total") or 0) > 0
    assert not metric(b.metrics(), "karpenter_nodeclaims_created_total")
    holder = cluster.lease_holder()
    a.kill9()
    wait_for(b.leading, "the standby to take over", deadline=WAIT)
    assert cluster.lease_holder() not in ("", holder)
    cluster.scale("web", 16)
    wait_for(lambda: cluster.all_bound_to_karpenter_nodes("web", 16), "16 pods bound")
    assert (metric(b.metrics(), "karpenter_nodeclaims_created_total") or 0) > 0


def test_sigterm_releases_the_lease_and_exits_zero(
    cluster: Cluster, serve: Callable[..., Serve]
) -> None:
    op = serve()
    wait_for(op.leading, "leadership")
    assert cluster.lease_holder()
    assert op.terminate() == 0
    assert cluster.lease_holder() == ""


def test_an_invalid_nodepool_is_reported_while_valid_ones_keep_working(
    cluster: Cluster, serve: Callable[..., Serve]
) -> None:
    serve()
    cluster.apply_nodepool(
        "broken",
        taints=[{"key": "example.com/team", "value": "a", "effect": "NoSchedule"}] * 2,
    )
    cluster.apply_nodepool("default")
    cluster.apply_deployment("web", 6)
    wait_for(lambda: cluster.all_bound_to_karpenter_nodes("web", 6), "6 pods bound")

    def broken_condition() -> dict[str, Any] | None:
        np = cluster.kube.get(("karpenter.sh/v1", "NodePool"), "broken")
        for c in (np.get("status") or {}).get("conditions") or []:
            if c["type"] == "ValidationSucceeded" and c["status"] == "False":
                return dict(c)
        return None

    condition = wait_for(broken_condition, "the invalid NodePool's condition")
    assert condition["reason"] == "NodePoolValidationFailed"
    events = wait_for(
        lambda: [
            e
            for e in cluster.kube.list(("events.k8s.io/v1", "Event")).items
            if e.get("reason") == "NodePoolValidationFailed"
            and (e.get("regarding") or {}).get("name") == "broken"
        ],
        "a NodePoolValidationFailed event",
    )
    assert events[0]["type"] == "Warning"
    pools = {n["metadata"]["labels"][NODEPOOL_LABEL] for n in cluster.karpenter_nodes()}
    assert pools == {"default"}
