"""GCPCloudProvider end to end on the in-memory API server and the fake Compute/GKE server,
with the official clients over HTTP: a GCENodeClass made Ready by its status controller,
a NodeClaim launched as an instance bootstrapped from the source node pool's template,
get/list/delete by provider id, zone exhaustion falling back with nothing leaked, drift,
and the conformance suite."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fakegce import CLUSTER, LOCATION, PROJECT, REGION, ZONES, FakeGCE
from karpenter_gcp import labels as gcp_labels
from karpenter_gcp import plugin
from karpenter_gcp.clients import GCPClients
from karpenter_gcp.drift import HASH_ANNOTATION
from karpenter_gcp.nodeclass import NODECLASS_RESOURCE
from karpenter_gcp.nodeclass_status import NodeClassStatusReconciler
from karpenter_gcp.provider import GCPCloudProvider
from karpenter_gcp.settings import GCPSettings

from karpenter_core.apis import labels as wk
from karpenter_core.apis.v1 import NodeClaim, NodePool
from karpenter_core.cloudprovider.errors import (
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
)
from karpenter_core.plugin_api import CloudProvider, ProviderContext
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.runtime.reconciler import ObjectKey
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.testing.conformance import CloudProviderConformance, ConformanceTarget

MACHINE = "e2-standard-4"
PINNED = {"family": "Ubuntu2404", "version": "v20260416"}
SETTINGS = {
    "project-id": PROJECT,
    "region": REGION,
    "cluster-name": CLUSTER,
    "default-nodepool-service-account": f"nodes@{PROJECT}.iam.gserviceaccount.com",
    "kubernetes-version": "1.31.5",
}


@pytest.fixture(autouse=True)
def _gcp_labels() -> Iterator[None]:
    saved = set(wk.WELL_KNOWN_LABELS)
    wk.WELL_KNOWN_LABELS.update(gcp_labels.WELL_KNOWN_LABELS)
    yield
    wk.WELL_KNOWN_LABELS.clear()
    wk.WELL_KNOWN_LABELS.update(saved)


def seed(gce: FakeGCE) -> None:
    """A GKE cluster with a running default pool and that pool's instance template."""
    gce.add_cluster(
        {
            "name": CLUSTER,
            "id": "f00dbabe" + "0" * 56,
            "location": LOCATION,
            "locations": list(ZONES),
            "network": "default",
            "subnetwork": "default",
            "networkConfig": {
                "network": f"projects/{PROJECT}/global/networks/default",
                "subnetwork": f"projects/{PROJECT}/regions/{REGION}/subnetworks/default",
            },
            "ipAllocationPolicy": {"useIpAliases": True, "clusterSecondaryRangeName": "pods"},
            "privateClusterConfig": {"enablePrivateNodes": True},
            "currentMasterVersion": "1.31.5-gke.1023000",
            "currentNodeVersion": "1.31.5-gke.1023000",
            "endpoint": "10.0.0.2",
            "nodePools": [{"name": "default-pool", "status": "RUNNING"}],
        }
    )
    gce.add_instance_template(
        {
            "name": "gke-test-cluster-default-pool-1",
            "properties": {
                "labels": {"goog-k8s-node-pool-name": "default-pool"},
                "metadata": {
                    "items": [
                        {"key": "cluster-name", "value": CLUSTER},
                        {"key": "kube-env", "value": "KUBELET_ARGS: --v=2 --max-pods=110"},
                        {
                            "key": "kube-labels",
                            "value": "cloud.google.com/gke-nodepool=default-pool",
                        },
                    ]
                },
            },
        }
    )


class Env:
    def __init__(self, clients: GCPClients) -> None:
        self.clock = VirtualClock()
        self.server = InMemoryApiServer(self.clock)
        self.recorder = EventRecorder(self.clock)
        self.provider = GCPCloudProvider(
            GCPSettings.from_mapping(SETTINGS),
            clients=clients,
            kube=self.server,
            clock=self.clock,
            recorder=self.recorder,
        )
        self.status = NodeClassStatusReconciler(
            self.server, self.clock, self.recorder, {}, kubernetes_version="1.31.5"
        )

    def nodeclass(self, name: str = "default", **spec: Any) -> None:
        spec.setdefault("imageSelectorTerms", [PINNED])
        self.server.create(
            {
                "apiVersion": "karpenter.k8s.gcp/v1alpha1",
                "kind": "GCENodeClass",
                "metadata": {"name": name},
                "spec": spec,
            }
        )
        self.status.reconcile(ObjectKey("", name))

    def nodepool(self, name: str = "default", nodeclass: str = "default") -> None:
        self.server.create(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "metadata": {"name": name},
                "spec": {
                    "template": {
                        "spec": {
                            "nodeClassRef": {
                                "group": "karpenter.k8s.gcp",
                                "kind": "GCENodeClass",
                                "name": nodeclass,
                            },
                            "requirements": [],
                        }
                    }
                },
            }
        )


def nodeclaim(name: str = "default-abcde", *, zones: list[str] | None = None) -> NodeClaim:
    reqs: list[dict[str, Any]] = [
        {"key": wk.LABEL_INSTANCE_TYPE, "operator": "In", "values": [MACHINE]},
        {"key": wk.CAPACITY_TYPE_LABEL_KEY, "operator": "In", "values": ["on-demand"]},
    ]
    if zones:
        reqs.append({"key": wk.LABEL_TOPOLOGY_ZONE, "operator": "In", "values": zones})
    return NodeClaim.from_dict(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {"name": name, "labels": {wk.NODEPOOL_LABEL_KEY: "default"}},
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.gcp",
                    "kind": "GCENodeClass",
                    "name": "default",
                },
                "requirements": reqs,
                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
            },
        }
    )


@pytest.fixture
def env(gcp_clients: GCPClients, gce_env: FakeGCE) -> Env:
    seed(gce_env)
    return Env(gcp_clients)


def test_create_inserts_an_instance_bootstrapped_from_the_source_pool(
    env: Env, gce_env: FakeGCE
) -> None:
    env.nodeclass()
    env.nodepool()
    out = env.provider.create(nodeclaim(zones=[ZONES[1]]))
    assert [i["name"] for i in gce_env.instances.values()] == ["karpenter-default-abcde"]
    labels = out.metadata.labels
    assert labels[wk.LABEL_INSTANCE_TYPE] == MACHINE
    assert labels[wk.LABEL_TOPOLOGY_ZONE] == ZONES[1]
    assert labels[wk.CAPACITY_TYPE_LABEL_KEY] == "on-demand"
    assert labels[wk.NODEPOOL_LABEL_KEY] == "default"
    assert out.status is not None
    assert out.status.provider_id == f"gce://{PROJECT}/{ZONES[1]}/karpenter-default-abcde"
    assert out.metadata.annotations[HASH_ANNOTATION]
    (body,) = gce_env.inserted_bodies()
    items = {i["key"]: i["value"] for i in body["metadata"]["items"]}
    assert "kube-env" in items and "karpenter.sh/registered=true" in items["kube-labels"]
    assert body["machineType"].endswith(f"/machineTypes/{MACHINE}")
    assert body["serviceAccounts"][0]["email"] == SETTINGS["default-nodepool-service-account"]


def test_get_list_delete_by_provider_id(env: Env, gce_env: FakeGCE) -> None:
    env.nodeclass()
    env.nodepool()
    a = env.provider.create(nodeclaim("pool-a"))
    env.provider.create(nodeclaim("pool-b"))
    assert a.status is not None and a.status.provider_id
    assert env.provider.get(a.status.provider_id).metadata.labels[wk.LABEL_INSTANCE_TYPE] == MACHINE
    assert len(env.provider.list()) == 2
    env.provider.delete(a)
    assert [i["name"] for i in gce_env.instances.values()] == ["karpenter-pool-b"]
    with pytest.raises(NodeClaimNotFoundError):
        env.provider.get(a.status.provider_id)
    with pytest.raises(NodeClaimNotFoundError):
        env.provider.get("azure:///subscriptions/s/x")


def test_zone_exhaustion_marks_the_zone_and_the_next_launch_takes_another(
    env: Env, gce_env: FakeGCE
) -> None:
    env.nodeclass()
    env.nodepool()
    allowed = [ZONES[0], ZONES[2]]
    # whichever of the two zones the launch picks (at random among equals) is exhausted
    gce_env.fail_next_insert("ZONE_RESOURCE_POOL_EXHAUSTED", asynchronous=True)
    with pytest.raises(InsufficientCapacityError):
        env.provider.create(nodeclaim(zones=allowed))
    assert not gce_env.instances and not gce_env.disks
    marked = [
        z for z in allowed if env.provider.unavailable.is_unavailable(MACHINE, z, "on-demand")
    ]
    assert len(marked) == 1
    out = env.provider.create(nodeclaim(zones=allowed))
    assert out.metadata.labels[wk.LABEL_TOPOLOGY_ZONE] == next(
        z for z in allowed if z not in marked
    )


def test_nodeclass_missing_or_invalid(env: Env, gce_env: FakeGCE) -> None:
    env.nodepool()
    with pytest.raises(InsufficientCapacityError, match="not found"):
        env.provider.create(nodeclaim())
    env.server.create(
        {
            "apiVersion": "karpenter.k8s.gcp/v1alpha1",
            "kind": "GCENodeClass",
            "metadata": {"name": "default"},
            "spec": {"imageSelectorTerms": [{"id": "projects/p/global/images/gone"}]},
        }
    )
    failing = NodeClassStatusReconciler(
        env.server,
        env.clock,
        env.recorder,
        {},
        kubernetes_version="1.31.5",
        image_lister=lambda project, flt: [],
    )
    failing.reconcile(ObjectKey("", "default"))
    with pytest.raises(NodeClassNotReadyError):
        env.provider.create(nodeclaim())
    assert not gce_env.instances


def test_drift_by_hash(env: Env, gce_env: FakeGCE) -> None:
    env.nodeclass()
    env.nodepool()
    out = env.provider.create(nodeclaim())
    stored = out.to_dict()
    stored["metadata"]["name"] = "default-abcde"
    stored["spec"] = nodeclaim().to_dict()["spec"]
    claim = NodeClaim.from_dict(stored)
    assert env.provider.is_drifted(claim) == ""
    obj = env.server.get(NODECLASS_RESOURCE, "default")
    obj["spec"]["networkTags"] = ["extra"]
    env.server.update(obj)
    env.status.reconcile(ObjectKey("", "default"))
    assert env.provider.is_drifted(claim) == "NodeClassDrift"


def test_instance_types_follow_the_nodeclass(env: Env) -> None:
    env.nodeclass()
    env.nodepool()
    env.nodepool("orphan", nodeclass="missing")
    pool = NodePool.from_dict(env.server.get("nodepools", "default"))
    assert MACHINE in {it.name for it in env.provider.get_instance_types(pool)}
    orphan = NodePool.from_dict(env.server.get("nodepools", "orphan"))
    assert env.provider.get_instance_types(orphan) == []


def _exhaust(provider: CloudProvider, claim: NodeClaim) -> None:
    assert isinstance(provider, GCPCloudProvider)
    for it in provider.catalogue.instance_types(None):
        if it.name == MACHINE:
            for o in it.offerings:
                provider.unavailable.mark(MACHINE, o.zone, o.capacity_type, "ZONE_EXHAUSTED")


class TestGcpConformance(CloudProviderConformance):
    @pytest.fixture
    def conformance_target(self, gce_env: FakeGCE) -> ConformanceTarget:
        seed(gce_env)
        env = Env(GCPClients.create())

        def cluster() -> ProviderContext:
            return ProviderContext(kube=env.server, clock=env.clock, recorder=env.recorder)

        def launchable(provider: CloudProvider) -> NodeClaim:
            env.nodeclass()
            env.nodepool()
            return nodeclaim()

        (spec,) = plugin.karpenter_cloud_providers()
        return ConformanceTarget(
            spec=spec,
            settings=SETTINGS,
            cluster=cluster,
            nodeclaim=launchable,
            exhaust_capacity=_exhaust,
            missing_provider_id=f"gce://{PROJECT}/{ZONES[0]}/karpenter-missing",
        )


def test_without_an_eligible_pool_the_template_controller_creates_the_fallback_pool(
    gcp_clients: GCPClients, gce_env: FakeGCE
) -> None:
    from karpenter_gcp.controllers import _Templates
    from karpenter_gcp.nodepooltemplate import FALLBACK_POOL

    seed(gce_env)
    for key in list(gce_env.node_pools):
        gce_env.node_pools[key]["status"] = "ERROR"
    env = Env(gcp_clients)
    _Templates(env.provider.templates).reconcile()
    assert FALLBACK_POOL in {name for (_, _, name) in gce_env.node_pools}


def test_refresh_limits_offerings_to_the_clusters_zones(
    gcp_clients: GCPClients, gce_env: FakeGCE
) -> None:
    from karpenter_gcp.controllers import _Refresh

    seed(gce_env)
    for cluster in gce_env.clusters.values():
        cluster["locations"] = [ZONES[0]]
    env = Env(gcp_clients)
    _Refresh(env.provider.catalogue, env.provider.gke).reconcile()
    (it,) = [t for t in env.provider.get_instance_types(None) if t.name == MACHINE]
    assert {o.zone for o in it.offerings} == {ZONES[0]}
