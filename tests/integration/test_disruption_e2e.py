"""Disruption end to end: ``karpenter serve`` removing and replacing nodes on a real control
plane (kube-apiserver, kube-scheduler, the Deployment and ReplicaSet controllers).

The virtual-clock engine tests decide the same cases on a simulated cluster; here the
decisions run on informer caches, with real evictions and real rescheduling by
kube-scheduler, and the operator's wall-clock timers (``consolidateAfter``, the 10 s pass, the
15 s validation wait). The control plane, the fake kubelet standing in for KWOK and the
``karpenter serve`` subprocesses come from ``serve_harness.py``.

The NodePools offer 4-vCPU KWOK nodes only (3.9 vCPU allocatable after the 100m
kube-reserved overhead), so three 1-vCPU pods fill a node and how many nodes a workload
needs follows from its replica count. Waits poll with generous deadlines and assert on
state, never on how long something took.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from serve_harness import (
    APP_NS,
    NODEPOOL_LABEL,
    Cluster,
    Serve,
    cluster_fixture,  # noqa: F401 -- the `cluster` fixture
    metric,
    serve_fixture,  # noqa: F401 -- the `serve` fixture
    wait_for,
)

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

DISRUPTED_TAINT = "karpenter.sh/disrupted"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
DISRUPTED = "karpenter_nodeclaims_disrupted_total"
EVALUATIONS = "karpenter_voluntary_disruption_decision_evaluation_duration_seconds_count"
# Consolidate 5 s after the last pod came or went; any number of nodes at a time.
CONSOLIDATE_SOON = {
    "consolidationPolicy": "WhenEmptyOrUnderutilized",
    "consolidateAfter": "5s",
    "budgets": [{"nodes": "100%"}],
}


def names(objs: list[dict[str, Any]]) -> set[str]:
    return {o["metadata"]["name"] for o in objs}


def disrupting(node: dict[str, Any]) -> bool:
    """Karpenter has started disrupting the node: tainted ``karpenter.sh/disrupted`` or
    being deleted."""
    taints = (node.get("spec") or {}).get("taints") or []
    return bool(node["metadata"].get("deletionTimestamp")) or any(
        t.get("key") == DISRUPTED_TAINT for t in taints
    )


def no_leaks(cluster: Cluster) -> None:
    """Every Karpenter Node belongs to a NodeClaim and vice versa."""
    nodes = cluster.karpenter_nodes()
    claims = cluster.nodeclaims()
    assert sorted(str(n["spec"]["providerID"]) for n in nodes) == sorted(
        str((c.get("status") or {}).get("providerID")) for c in claims
    )


def nodes_of(cluster: Cluster, app: str) -> set[str]:
    return {p["spec"]["nodeName"] for p in cluster.pods(app)}


def settled(cluster: Cluster, app: str, replicas: int, nodes: int) -> bool:
    """``replicas`` pods Running on exactly ``nodes`` Karpenter nodes, none of them being
    disrupted, nothing pending, and as many NodeClaims as Nodes."""
    karpenter = cluster.karpenter_nodes()
    return (
        len(karpenter) == nodes
        and not any(disrupting(n) for n in karpenter)
        and len(cluster.nodeclaims()) == nodes
        and cluster.all_running_on_karpenter_nodes(app, replicas)
        and not cluster.pending_pods()
    )


def disrupted(op: Serve, reason: str) -> float:
    return metric(op.metrics(), DISRUPTED, reason=reason) or 0.0


# --------------------------------------------------------------------------- tests


def test_scale_down_removes_the_empty_and_underused_nodes(
    cluster: Cluster, serve: Callable[..., Serve]
) -> None:
    op = serve()
    cluster.apply_nodepool("default", disruption=CONSOLIDATE_SOON)
    cluster.apply_deployment("web", 9)
    wait_for(lambda: cluster.all_running_on_karpenter_nodes("web", 9), "9 pods running")
    before = names(cluster.karpenter_nodes())
    assert len(before) >= 3  # three 1-vCPU pods per node

    # The scale-down keeps one pod on each of two nodes (the ReplicaSet deletes the pods
    # with the lowest deletion cost first): one node is left empty, two underused.
    pods_by_node: dict[str, str] = {}
    for p in cluster.pods("web"):
        pods_by_node.setdefault(p["spec"]["nodeName"], p["metadata"]["name"])
    keep = sorted(pods_by_node.items())[:2]
    for _node, pod in keep:
        cluster.kube.patch(
            "pods", pod, {"metadata": {"annotations": {POD_DELETION_COST: "100"}}}, APP_NS
        )
    cluster.scale("web", 2)
    wait_for(
        lambda: names(cluster.pods("web")) == {pod for _node, pod in keep},
        "the scale-down to keep the two pods",
    )

    # Two 1-vCPU pods fit one node: emptiness removes the empty node, consolidation one of
    # the underused ones (or replaces both with one).
    wait_for(lambda: settled(cluster, "web", 2, nodes=1), "consolidation down to one node")

    gone = before - names(cluster.karpenter_nodes())
    assert len(gone) >= len(before) - 1
    no_leaks(cluster)
    # Each node that went was disrupted by emptiness or consolidation, and counted once.
    # Which of the two takes the emptied node depends on timing, as upstream: a pod still
    # terminating there when emptiness looks leaves it to multi-node consolidation.
    assert disrupted(op, "empty") + disrupted(op, "underutilized") == len(gone)
    assert disrupted(op, "underutilized") >= 1  # an underused node went too
    assert disrupted(op, "drifted") == 0


def test_a_template_change_drifts_and_replaces_every_node_one_at_a_time(
    cluster: Cluster, serve: Callable[..., Serve]
) -> None:
    op = serve()
    # Consolidation off: every replacement is drift's doing; one node at a time.
    cluster.apply_nodepool(
        "default", disruption={"consolidateAfter": "Never", "budgets": [{"nodes": "1"}]}
    )
    cluster.apply_deployment("web", 6)
    wait_for(lambda: cluster.all_running_on_karpenter_nodes("web", 6), "6 pods running")
    # Every NodeClaim with its Node: none still launching (an extra one from a second
    # provisioning pass would otherwise join the old ones after the snapshot).
    wait_for(
        lambda: settled(cluster, "web", 6, nodes=len(cluster.karpenter_nodes())),
        "as many NodeClaims as Nodes",
    )
    initial_nodes = names(cluster.karpenter_nodes())
    initial_claims = names(cluster.nodeclaims())
    assert len(initial_nodes) >= 2

    cluster.patch_nodepool(
        "default", {"template": {"metadata": {"labels": {"example.com/generation": "2"}}}}
    )
    # The old template's NodeClaims and Nodes are those without the new label: a
    # provisioning pass that began before the patch may still add one after the snapshot,
    # and drift replaces it too; so they are collected on every look, not only once.
    old_nodes, old_claims = set(initial_nodes), set(initial_claims)
    most_at_once = 0
    drifted_seen: set[str] = set()

    def old(obj: dict[str, Any]) -> bool:
        return (obj["metadata"].get("labels") or {}).get("example.com/generation") != "2"

    def replaced() -> bool:
        nonlocal most_at_once
        claims = cluster.nodeclaims()
        old_claims.update(c["metadata"]["name"] for c in claims if old(c))
        for c in claims:
            for cond in (c.get("status") or {}).get("conditions") or []:
                if cond.get("type") == "Drifted" and cond.get("status") == "True":
                    drifted_seen.add(c["metadata"]["name"])
        nodes = cluster.karpenter_nodes()
        old_nodes.update(n["metadata"]["name"] for n in nodes if old(n))
        most_at_once = max(
            most_at_once,
            sum(1 for n in nodes if n["metadata"]["name"] in old_nodes and disrupting(n)),
        )
        return (
            not old_nodes & names(nodes)
            and not old_claims & names(cluster.nodeclaims())
            and all(not old(n) and not disrupting(n) for n in nodes)
            and cluster.all_running_on_karpenter_nodes("web", 6)
            and not cluster.pending_pods()
        )

    wait_for(replaced, "every node replaced by one with the new label")

    assert drifted_seen >= initial_claims  # each old NodeClaim was marked Drifted first
    assert most_at_once <= 1  # the budget: one node disrupting at a time
    no_leaks(cluster)
    # Every pod on a new node, and no replacement left idle.
    assert not nodes_of(cluster, "web") & old_nodes
    assert nodes_of(cluster, "web") == names(cluster.karpenter_nodes())
    assert all(
        n["metadata"]["labels"][NODEPOOL_LABEL] == "default" for n in cluster.karpenter_nodes()
    )
    # Only the old NodeClaims were disrupted, each once: replacements carry the new template.
    assert disrupted(op, "drifted") == len(old_claims)


def test_a_zero_budget_blocks_consolidation_until_it_is_raised(
    cluster: Cluster, serve: Callable[..., Serve]
) -> None:
    op = serve()
    cluster.apply_nodepool("default", disruption={**CONSOLIDATE_SOON, "budgets": [{"nodes": "0"}]})
    cluster.apply_deployment("web", 6)
    wait_for(lambda: cluster.all_running_on_karpenter_nodes("web", 6), "6 pods running")
    before = names(cluster.karpenter_nodes())
    assert len(before) >= 2
    cluster.scale("web", 1)  # leaves at least one node empty

    # The emptiness method found an empty candidate and the budget stopped it ...
    wait_for(
        lambda: [
            e
            for e in cluster.events("DisruptionBlocked", "NodePool", "default")
            if "disruption reason Empty due to blocking budget" in (e.get("note") or "")
        ],
        "the NodePool's blocking-budget event",
    )
    # ... and for good: a command that slipped through would be held for the validation
    # wait and started before the next pass, so two more passes on it would show.
    seen = metric(op.metrics(), EVALUATIONS, reason="empty") or 0.0
    wait_for(
        lambda: (metric(op.metrics(), EVALUATIONS, reason="empty") or 0.0) >= seen + 2,
        "two more disruption passes",
    )
    body = op.metrics()
    assert (metric(body, "karpenter_voluntary_disruption_eligible_nodes", reason="empty") or 0) >= 1
    nodes = cluster.karpenter_nodes()
    assert names(nodes) == before
    assert not any(disrupting(n) for n in nodes)
    assert not any(c["metadata"].get("deletionTimestamp") for c in cluster.nodeclaims())
    assert not metric(body, DISRUPTED)
    assert not metric(body, "karpenter_nodepools_allowed_disruptions", nodepool="default")

    cluster.patch_nodepool("default", {"disruption": {"budgets": [{"nodes": "100%"}]}})
    wait_for(lambda: settled(cluster, "web", 1, nodes=1), "consolidation down to one node")
    no_leaks(cluster)
    assert disrupted(op, "empty") + disrupted(op, "underutilized") >= len(before) - 1


def test_a_do_not_disrupt_pod_keeps_its_node(cluster: Cluster, serve: Callable[..., Serve]) -> None:
    op = serve()
    cluster.apply_nodepool("default", disruption=CONSOLIDATE_SOON)
    # The web pods are costly to evict, so without the annotation consolidation would
    # rather move the keeper than them.
    cluster.apply_deployment("web", 3, annotations={POD_DELETION_COST: "1000000"})
    wait_for(lambda: cluster.all_running_on_karpenter_nodes("web", 3), "3 web pods running")
    web_nodes = nodes_of(cluster, "web")
    assert len(web_nodes) == 1, f"the three web pods should fill one node: {web_nodes}"
    cluster.apply_deployment("keeper", 1, annotations={DO_NOT_DISRUPT: "true"})
    wait_for(lambda: cluster.all_running_on_karpenter_nodes("keeper", 1), "the keeper running")
    (keeper,) = cluster.pods("keeper")
    keeper_node = keeper["spec"]["nodeName"]
    assert keeper_node not in web_nodes  # the web node was full

    cluster.scale("web", 1)
    # One web pod and the keeper fit one node; only the keeper's node may stay.
    wait_for(lambda: settled(cluster, "web", 1, nodes=1), "consolidation down to one node")

    assert names(cluster.karpenter_nodes()) == {keeper_node}
    (still,) = cluster.pods("keeper")
    assert still["metadata"]["uid"] == keeper["metadata"]["uid"]  # never evicted
    assert still["spec"]["nodeName"] == keeper_node
    assert nodes_of(cluster, "web") == {keeper_node}
    no_leaks(cluster)
    assert disrupted(op, "empty") + disrupted(op, "underutilized") >= 1
    blocked = [
        e
        for e in cluster.events("DisruptionBlocked", "Node", keeper_node)
        if DO_NOT_DISRUPT in (e.get("note") or "")
    ]
    assert blocked, "the keeper's node should say why it is not disrupted"
