"""PodDisruptionBudgets end to end: ``karpenter serve`` disrupting and terminating nodes on a
real control plane whose kube-controller-manager runs the disruption controller, so each
PDB's ``disruptionsAllowed`` is kept current and the API server's eviction subresource
refuses (429) evictions a PDB forbids.

What is checked is Karpenter's side of the contract: its drain goes through the eviction
API and retries the refusals rather than deleting pods; its disruption candidates are
rejected, with an event naming the PDB, while a PDB allows no disruption; and a deleted
node's termination waits for the drain instead of removing the instance under the pods.

The NodePools offer 4-vCPU KWOK nodes only (3.9 vCPU allocatable), so three 1-vCPU pods
fill a node. Waits poll with generous deadlines and assert on state, never on how long
something took. Control plane, fake kubelet and ``karpenter serve`` come from
``serve_harness.py``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest
from serve_harness import (
    APP_NS,
    Cluster,
    Serve,
    cluster_fixture,  # noqa: F401 -- the `cluster` fixture
    metric,
    serve_fixture,  # noqa: F401 -- the `serve` fixture
    wait_for,
)

from karpenter_core.kube.client import NotFound

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

PDB = ("policy/v1", "PodDisruptionBudget")
DISRUPTED_TAINT = "karpenter.sh/disrupted"
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
EVALUATIONS = "karpenter_voluntary_disruption_decision_evaluation_duration_seconds_count"
EVICTIONS = "karpenter_pods_eviction_requests_total"
CONSOLIDATE_SOON = {
    "consolidationPolicy": "WhenEmptyOrUnderutilized",
    "consolidateAfter": "5s",
    "budgets": [{"nodes": "100%"}],
}


def names(objs: list[dict[str, Any]]) -> set[str]:
    return {o["metadata"]["name"] for o in objs}


def uids(objs: list[dict[str, Any]]) -> set[str]:
    return {o["metadata"]["uid"] for o in objs}


def tainted(node: dict[str, Any]) -> bool:
    return any(
        t.get("key") == DISRUPTED_TAINT for t in (node.get("spec") or {}).get("taints") or []
    )


def ready(pod: dict[str, Any]) -> bool:
    """Ready and not terminating: what a PDB counts as healthy."""
    return not pod["metadata"].get("deletionTimestamp") and any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


class Availability:
    """The most pods of ``app`` unavailable (fewer Ready, non-terminating ones than
    ``replicas``) at any point since it was created.

    Follows a watch on the pods rather than sampling lists: every change the API server
    stores is applied in order, so a dip shorter than any polling interval (replacement pods
    start at once on the fake kubelet) is still seen.
    """

    def __init__(self, cluster: Cluster, app: str, replicas: int) -> None:
        self.replicas = replicas
        listed = cluster.kube.list("pods", APP_NS, label_selector=f"app={app}")
        self.pods = {p["metadata"]["uid"]: p for p in listed.items}
        self.most = self._unavailable()
        self.watch = cluster.kube.watch(
            "pods", APP_NS, label_selector=f"app={app}", resource_version=listed.resource_version
        )

    def _unavailable(self) -> int:
        return self.replicas - sum(map(ready, self.pods.values()))

    def update(self) -> int:
        """Apply the changes seen so far; the worst so far."""
        for event in self.watch.poll():
            uid = event.object.get("metadata", {}).get("uid")
            if event.type == "DELETED":
                self.pods.pop(uid, None)
            elif event.type in ("ADDED", "MODIFIED"):
                self.pods[uid] = event.object
            else:
                continue
            self.most = max(self.most, self._unavailable())
        assert not self.watch.stopped, "the pod watch ended early: availability not followed"
        return self.most


def apply_pdb(cluster: Cluster, app: str, **spec: Any) -> None:
    """A PDB over the pods labelled ``app=<app>``; ``spec`` is minAvailable/maxUnavailable."""
    cluster.kube.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": app, "namespace": APP_NS},
            "spec": {"selector": {"matchLabels": {"app": app}}, **spec},
        }
    )


def pdb_status(cluster: Cluster, name: str) -> dict[str, Any]:
    return dict(cluster.kube.get(PDB, name, APP_NS).get("status") or {})


def pdb_settled(cluster: Cluster, name: str, healthy: int, allowed: int) -> bool:
    """The disruption controller has observed the PDB's current generation and counts
    ``healthy`` pods and ``allowed`` disruptions."""
    got = cluster.kube.get(PDB, name, APP_NS)
    status = got.get("status") or {}
    return (
        status.get("observedGeneration") == got["metadata"].get("generation")
        and status.get("currentHealthy") == healthy
        and status.get("disruptionsAllowed") == allowed
    )


def no_leaks(cluster: Cluster) -> None:
    """Every Karpenter Node (a KWOK instance) belongs to a NodeClaim and vice versa."""
    nodes = cluster.karpenter_nodes()
    claims = cluster.nodeclaims()
    assert sorted(str(n["spec"]["providerID"]) for n in nodes) == sorted(
        str((c.get("status") or {}).get("providerID")) for c in claims
    )


def refusals(op: Serve) -> float:
    """Evictions the API server refused with 429 (a PDB allowed no disruption)."""
    return metric(op.metrics(), EVICTIONS, code="429") or 0.0


def node_events(cluster: Cluster, reason: str, node: str, text: str) -> list[dict[str, Any]]:
    return [e for e in cluster.events(reason, "Node", node) if text in (e.get("note") or "")]


# --------------------------------------------------------------------------- tests


def test_drift_replaces_nodes_no_faster_than_the_pdb_allows(
    cluster: Cluster, serve: Callable[..., Serve]
) -> None:
    op = serve()
    # Every node may be disrupted at once as far as the NodePool is concerned: only the
    # PDB paces the drain.
    cluster.apply_nodepool(
        "default", disruption={"consolidateAfter": "Never", "budgets": [{"nodes": "100%"}]}
    )
    replicas = 6
    cluster.apply_deployment("web", replicas)
    wait_for(
        lambda: (
            cluster.all_running_on_karpenter_nodes("web", replicas)
            and sum(map(ready, cluster.pods("web"))) == replicas
        ),
        "6 pods ready",
    )
    old_nodes = names(cluster.karpenter_nodes())
    old_claims = names(cluster.nodeclaims())
    assert len(old_nodes) >= 2
    apply_pdb(cluster, "web", maxUnavailable=1)
    wait_for(lambda: pdb_settled(cluster, "web", healthy=replicas, allowed=1), "the PDB status")
    # A replacement pod takes 3 s to become Ready, as a real container would take to start.
    # Without it the fake kubelet readies a replacement within milliseconds and the PDB may
    # allow the node's next eviction before the queue asks, so whether any eviction meets
    # the PDB would be down to timing.
    cluster.set_pod_start_delay(3.0)

    availability = Availability(cluster, "web", replicas)
    assert availability.most == 0
    cluster.patch_nodepool(
        "default", {"template": {"metadata": {"labels": {"example.com/generation": "2"}}}}
    )
    evicted: set[str] = set()
    first = uids(cluster.pods("web"))

    def replaced() -> bool:
        availability.update()
        pods = cluster.pods("web")
        evicted.update(first - uids(pods))
        nodes = cluster.karpenter_nodes()
        return (
            not old_nodes & names(nodes)
            and not old_claims & names(cluster.nodeclaims())
            and all(
                n["metadata"]["labels"].get("example.com/generation") == "2"
                and not n["metadata"].get("deletionTimestamp")
                and not tainted(n)
                for n in nodes
            )
            and cluster.all_running_on_karpenter_nodes("web", replicas)
            and sum(map(ready, pods)) == replicas
        )

    wait_for(replaced, "every node replaced by one with the new label")

    # Every original pod had to leave its drifted node; never two down at once.
    assert evicted == first
    assert availability.update() == 1
    availability.watch.stop()
    no_leaks(cluster)
    # The drain met the PDB, was refused (429) and retried: the eviction queue asks for a
    # node's pods together, and with three on a node, maxUnavailable 1 and each replacement
    # 3 s from Ready, the second eviction of a node comes while the PDB allows none.
    assert refusals(op) >= 1
    assert (metric(op.metrics(), EVICTIONS, code="200") or 0.0) >= len(first)
    # ... and the PDB is whole again.
    wait_for(lambda: pdb_settled(cluster, "web", healthy=replicas, allowed=1), "the PDB status")


def test_a_pdb_allowing_no_disruption_blocks_consolidation_until_it_is_deleted(
    cluster: Cluster, serve: Callable[..., Serve]
) -> None:
    op = serve()
    cluster.apply_nodepool("default", disruption=CONSOLIDATE_SOON)
    cluster.apply_deployment("web", 6)
    wait_for(lambda: cluster.all_running_on_karpenter_nodes("web", 6), "6 pods running")
    assert len(cluster.karpenter_nodes()) >= 2

    # Keep one pod on each of two nodes through the scale-down (lowest deletion cost goes
    # first): two underused nodes whose pods would fit one.
    pods_by_node: dict[str, str] = {}
    for p in cluster.pods("web"):
        pods_by_node.setdefault(p["spec"]["nodeName"], p["metadata"]["name"])
    keep = sorted(pods_by_node.items())[:2]
    for _node, pod in keep:
        cluster.kube.patch(
            "pods", pod, {"metadata": {"annotations": {POD_DELETION_COST: "100"}}}, APP_NS
        )
    apply_pdb(cluster, "web", minAvailable=2)
    cluster.scale("web", 2)
    wait_for(
        lambda: names(cluster.pods("web")) == {pod for _node, pod in keep},
        "the scale-down to keep the two pods",
    )
    wait_for(lambda: pdb_settled(cluster, "web", healthy=2, allowed=0), "the PDB status")
    web_nodes = {node for node, _pod in keep}
    web_uids = uids(cluster.pods("web"))

    # Both nodes are rejected as candidates, each with an event naming the PDB ...
    for node in web_nodes:
        wait_for(
            functools.partial(
                node_events, cluster, "DisruptionBlocked", node, "PodDisruptionBudget=[default/web]"
            ),
            f"the DisruptionBlocked event on {node} naming the PDB",
        )
    # ... and stay so: two more consolidation passes change nothing.
    seen = metric(op.metrics(), EVALUATIONS, reason="underutilized") or 0.0
    wait_for(
        lambda: (metric(op.metrics(), EVALUATIONS, reason="underutilized") or 0.0) >= seen + 2,
        "two more consolidation passes",
    )
    nodes = {n["metadata"]["name"]: n for n in cluster.karpenter_nodes()}
    assert web_nodes <= set(nodes)
    assert not any(
        tainted(nodes[n]) or nodes[n]["metadata"].get("deletionTimestamp") for n in web_nodes
    )
    assert uids(cluster.pods("web")) == web_uids  # nothing evicted

    # Without the PDB the two pods fit one node: consolidation goes ahead.
    cluster.kube.delete(PDB, "web", APP_NS)

    def consolidated() -> bool:
        karpenter = cluster.karpenter_nodes()
        return (
            len(karpenter) == 1
            and len(cluster.nodeclaims()) == 1
            and not any(tainted(n) or n["metadata"].get("deletionTimestamp") for n in karpenter)
            and cluster.all_running_on_karpenter_nodes("web", 2)
            and not cluster.pending_pods()
        )

    wait_for(consolidated, "consolidation down to one node")
    assert len(web_nodes - names(cluster.karpenter_nodes())) >= 1
    no_leaks(cluster)


def test_deleting_a_node_drains_what_the_pdb_allows_and_waits_for_the_rest(
    cluster: Cluster, serve: Callable[..., Serve]
) -> None:
    cluster.apply_nodepool(
        "default", disruption={"consolidateAfter": "Never", "budgets": [{"nodes": "100%"}]}
    )
    # Three 1-vCPU pods, all pending when Karpenter starts: one node holds them.
    cluster.apply_deployment("web", 2)
    cluster.apply_deployment("other", 1)
    op = serve()
    wait_for(
        lambda: (
            cluster.all_running_on_karpenter_nodes("web", 2)
            and cluster.all_running_on_karpenter_nodes("other", 1)
        ),
        "the pods running",
    )
    (node,) = names(cluster.karpenter_nodes())
    (claim,) = cluster.nodeclaims()
    apply_pdb(cluster, "web", minAvailable=2)
    wait_for(lambda: pdb_settled(cluster, "web", healthy=2, allowed=0), "the PDB status")
    web_uids = uids(cluster.pods("web"))
    (other,) = cluster.pods("other")

    cluster.kube.delete("nodes", node)  # kubectl delete node

    # The node is cordoned with Karpenter's taint and the unprotected pod leaves it (and runs
    # on new capacity); the protected ones are refused eviction and stay.
    def drained_as_far_as_allowed() -> bool:
        try:
            got = cluster.kube.get("nodes", node)
        except NotFound:
            return False
        return (
            bool(got["metadata"].get("deletionTimestamp"))
            and tainted(got)
            # one "other" pod, Running on a Karpenter node that is not being deleted
            and cluster.all_running_on_karpenter_nodes("other", 1)
            and uids(cluster.pods("other")) != {other["metadata"]["uid"]}
            and bool(cluster.events("FailedDraining", "Node", node))
            and refusals(op) >= 1
        )

    wait_for(drained_as_far_as_allowed, "the node tainted, partly drained, evictions refused")
    # The eviction queue keeps asking (with back-off) and keeps being refused.
    seen = refusals(op)
    wait_for(lambda: refusals(op) >= seen + 2, "two more refused evictions")
    # The termination waits: the instance (a KWOK node) and its NodeClaim are still there,
    # and so are the protected pods.
    got = cluster.kube.get("nodes", node)
    assert got["metadata"].get("deletionTimestamp")
    assert claim["metadata"]["name"] in names(cluster.nodeclaims())
    pods = cluster.pods("web")
    assert uids(pods) == web_uids
    assert all(p["spec"]["nodeName"] == node and ready(p) for p in pods)
    assert pdb_status(cluster, "web").get("disruptionsAllowed") == 0

    # Lifting the PDB lets the drain finish and the termination complete.
    cluster.kube.delete(PDB, "web", APP_NS)

    def terminated() -> bool:
        return (
            node not in names(cluster.kube.list("nodes").items)
            and claim["metadata"]["name"] not in names(cluster.nodeclaims())
            and cluster.all_running_on_karpenter_nodes("web", 2)
            and cluster.all_running_on_karpenter_nodes("other", 1)
            and not cluster.pending_pods()
        )

    wait_for(terminated, "the node and its NodeClaim gone, every pod running elsewhere")
    assert not uids(cluster.pods("web")) & web_uids  # both were evicted, once allowed
    no_leaks(cluster)
