"""The kit's builders make objects the API server stores and the engine parses, with the
overrides a test gives where the engine reads them."""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.apis import labels as wk
from karpenter_core.apis.objects import DaemonSet, Node, Pod, PodDisruptionBudget
from karpenter_core.apis.v1 import NodeClaim, NodePool
from karpenter_core.apis.v1alpha1 import NodeOverlay
from karpenter_core.apis.validation import validate
from karpenter_core.kube.client import create_with_status
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.testing import builders as b
from karpenter_core.utils.pod import is_provisionable


@pytest.fixture
def server() -> InMemoryApiServer:
    return InMemoryApiServer(VirtualClock())


@pytest.mark.parametrize(
    "obj",
    [
        b.pod("p"),
        b.unschedulable_pod("u", cpu="1"),
        b.node("n"),
        b.nodepool(ready=True),
        b.nodeclaim("nc", nodepool="default", conditions=["Launched"]),
        b.daemonset("ds"),
        b.deployment("web", replicas=2),
        b.replicaset("rs"),
        b.pod_template("tmpl", cpu="1"),
        b.pdb("budget", min_available=1),
        b.namespace("team-a"),
        b.nodeoverlay("cheaper", price_adjustment="-10%"),
        b.capacity_buffer("buf", replicas=2, podTemplateRef={"name": "t"}),
    ],
    ids=lambda o: str(o["kind"]),
)
def test_the_api_server_stores_what_a_builder_makes(
    server: InMemoryApiServer, obj: dict[str, Any]
) -> None:
    stored = create_with_status(server, obj)
    assert stored["metadata"]["name"] == obj["metadata"]["name"]
    if obj.get("status") and obj["kind"] not in ("Pod",):
        assert stored.get("status", {}).items() >= obj["status"].items()


@pytest.mark.parametrize(
    "obj",
    [b.nodepool(), b.nodeclaim("nc"), b.nodeoverlay("o", price="1.5")],
    ids=lambda o: str(o["kind"]),
)
def test_karpenter_objects_pass_validation(obj: dict[str, Any]) -> None:
    assert validate(obj) == []


def test_names_left_out_are_generated_and_distinct() -> None:
    names = {b.pod()["metadata"]["name"] for _ in range(3)}
    assert len(names) == 3
    assert all(n.startswith("pod-") for n in names)


def test_a_pod_carries_what_the_scheduler_reads() -> None:
    toleration = {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
    pod = Pod.from_dict(
        b.pod(
            "p",
            namespace="team",
            labels={"app": "web"},
            cpu="500m",
            memory="1Gi",
            requests={"example.com/dongle": "1"},
            node_selector={wk.LABEL_TOPOLOGY_ZONE: "zone-a"},
            node_requirements=[b.requirement(wk.LABEL_ARCH, "In", "arm64")],
            tolerations=[toleration],
            host_ports=[8080],
            priority=10,
            owner=b.replicaset("web-rs"),
        )
    )
    assert (pod.namespace, pod.name, pod.labels) == ("team", "p", {"app": "web"})
    assert pod.requests["cpu"] == 500
    assert pod.requests["memory"] == (1 << 30) * 1000
    assert pod.requests["example.com/dongle"] == 1000
    assert pod.node_selector == {wk.LABEL_TOPOLOGY_ZONE: "zone-a"}
    assert pod.affinity is not None
    terms = pod.affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["arm64"]
    assert [t.key for t in pod.tolerations] == ["gpu"]
    assert [h.port for h in pod.host_ports] == [8080]
    assert pod.priority == 10
    [owner] = pod.owner_references
    assert (owner.kind, owner.name, owner.controller) == ("ReplicaSet", "web-rs", True)


def test_an_unschedulable_pod_is_one_karpenter_provisions_for_and_a_bound_one_is_not() -> None:
    assert is_provisionable(Pod.from_dict(b.unschedulable_pod("u")))
    assert not is_provisionable(Pod.from_dict(b.pod("bound", node_name="n1")))
    assert Pod.from_dict(b.pod("bound", node_name="n1")).phase == "Running"


def test_a_node_is_ready_with_allocatable_defaulting_to_capacity() -> None:
    node = Node.from_dict(
        b.node(
            "n",
            provider_id="fake://n",
            capacity={"cpu": "8", "memory": "32Gi", "pods": "110"},
            taints=[{"key": "dedicated", "effect": "NoSchedule"}],
        )
    )
    assert node.ready and node.provider_id == "fake://n"
    assert node.allocatable == node.capacity and node.capacity["cpu"] == 8000
    assert [t.key for t in node.taints] == ["dedicated"]
    assert not Node.from_dict(b.node("nr", ready=False)).ready


def test_a_nodepool_carries_its_template_disruption_and_limits() -> None:
    pool = NodePool.from_dict(
        b.nodepool(
            "team",
            requirements=[b.requirement(wk.CAPACITY_TYPE_LABEL_KEY, "In", "spot")],
            labels={"team": "a"},
            taints=[{"key": "team", "value": "a", "effect": "NoSchedule"}],
            consolidation_policy="WhenEmpty",
            consolidate_after="30s",
            budgets=[{"nodes": "10%"}],
            limits={"cpu": "100"},
            weight=5,
            ready=True,
        )
    )
    template = pool.spec.template
    assert template.metadata is not None and template.metadata.labels == {"team": "a"}
    assert [r.key for r in template.spec.requirements] == [wk.CAPACITY_TYPE_LABEL_KEY]
    assert [t.key for t in template.spec.taints] == ["team"]
    assert template.spec.node_class_ref is not None
    assert template.spec.node_class_ref.kind == "KWOKNodeClass"
    assert pool.spec.disruption is not None
    assert pool.spec.disruption.consolidation_policy == "WhenEmpty"
    assert pool.spec.weight == 5
    assert pool.status is not None
    assert {c.type for c in pool.status.conditions} == set(b.NODEPOOL_READY_CONDITIONS)


def test_a_nodeclaim_of_a_nodepool_object_is_owned_by_it() -> None:
    pool = b.nodepool("team")
    pool["metadata"]["uid"] = "pool-uid"
    claim = NodeClaim.from_dict(
        b.nodeclaim(
            "nc",
            nodepool=pool,
            requests={"cpu": "2"},
            provider_id="fake://nc",
            capacity={"cpu": "4"},
            conditions=["Launched", b.condition("Registered", False, reason="Waiting")],
        )
    )
    assert claim.nodepool_name == "team"
    [owner] = claim.metadata.owner_references
    assert (owner.kind, owner.name, owner.uid) == ("NodePool", "team", "pool-uid")
    assert claim.provider_id == "fake://nc"
    assert claim.status is not None and claim.status.allocatable == claim.status.capacity
    assert claim.is_true("Launched") and not claim.is_true("Registered")


def test_node_for_links_a_node_to_its_claim() -> None:
    claim = b.nodeclaim(
        "nc",
        nodepool="default",
        startup_taints=[{"key": "cni", "effect": "NoSchedule"}],
        provider_id="fake://nc",
        capacity={"cpu": "4", "memory": "8Gi", "pods": "10"},
    )
    node = Node.from_dict(b.node_for(claim))
    assert node.name == "nc" and node.provider_id == "fake://nc"
    assert node.labels[wk.NODEPOOL_LABEL_KEY] == "default"
    assert node.labels["karpenter.kwok.sh/kwoknodeclass"] == "default"
    assert {t.key for t in node.taints} == {"cni", wk.UNREGISTERED_TAINT_KEY}
    registered = Node.from_dict(b.node_for(claim, registered=True, initialized=True))
    assert wk.UNREGISTERED_TAINT_KEY not in {t.key for t in registered.taints}
    assert registered.labels[wk.NODE_INITIALIZED_LABEL_KEY] == "true"


def test_a_daemonset_template_pod_has_the_requests_and_tolerations() -> None:
    ds = DaemonSet.from_dict(b.daemonset("logs", cpu="100m", tolerations=[{"operator": "Exists"}]))
    assert ds.template_pod.requests["cpu"] == 100
    assert len(ds.template_pod.tolerations) == 1
    assert ds.selector == {"matchLabels": {"app": "logs"}}


def test_a_pdb_selects_by_labels_and_can_carry_a_status() -> None:
    pdb = PodDisruptionBudget.from_dict(
        b.pdb("budget", labels={"app": "web"}, max_unavailable=1, disruptions_allowed=0)
    )
    assert pdb.max_unavailable == 1 and pdb.disruptions_allowed == 0
    assert pdb.selects(Pod.from_dict(b.pod("w", labels={"app": "web"})))
    assert not pdb.selects(Pod.from_dict(b.pod("x", labels={"app": "other"})))


def test_an_overlay_parses_with_its_adjustment() -> None:
    overlay = NodeOverlay.from_dict(
        b.nodeoverlay(
            "o",
            requirements=[b.requirement(wk.LABEL_INSTANCE_TYPE, "In", "fake-it-0")],
            price_adjustment="-10%",
            weight=1,
        )
    )
    assert overlay.spec.price_adjustment == "-10%"
    assert overlay.spec.weight == 1


def test_owner_reference_takes_an_object_a_kind_or_a_reference() -> None:
    assert b.owner_reference("Deployment", "web")["apiVersion"] == "apps/v1"
    ref = {"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u"}
    assert b.owner_reference(ref) == ref
    built = b.owner_reference(b.daemonset("logs"), controller=False)
    assert built["kind"] == "DaemonSet" and "controller" not in built
