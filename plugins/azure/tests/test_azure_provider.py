"""AzureCloudProvider end to end on the in-memory API server and the fake ARM server, with
the official SDKs over HTTPS: an AKSNodeClass made Ready by its status controller, a
NodeClaim launched as NIC + VM with upstream's labels, get/list/delete by provider id,
insufficient capacity in one zone falling back to another with nothing leaked, and drift.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fakearm import FakeARM
from karpenter_azure import labels as az_labels
from karpenter_azure.clients import AzureClients
from karpenter_azure.drift import HASH_ANNOTATION
from karpenter_azure.nodeclass import NODECLASS_RESOURCE
from karpenter_azure.nodeclass_status import NodeClassStatusReconciler
from karpenter_azure.provider import (
    IMAGE_DRIFT,
    K8S_VERSION_DRIFT,
    REPAIR_POLICIES,
    AzureCloudProvider,
    parse_provider_id,
)
from karpenter_azure.settings import AzureSettings

from karpenter_core.apis import labels as wk
from karpenter_core.apis.v1 import NodeClaim
from karpenter_core.cloudprovider.errors import (
    CreateError,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
)
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.runtime.reconciler import ObjectKey
from karpenter_core.sim.apiserver import InMemoryApiServer

REGION = "southcentralus"
RG = "MC_rg_cluster_southcentralus"
SUBSCRIPTION = "12345678-1234-1234-1234-123456789abc"
SUBNET = (
    f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg/providers/Microsoft.Network/"
    "virtualNetworks/vnet/subnets/nodes"
)
OTHER_SUBNET = SUBNET.replace("/subnets/nodes", "/subnets/other")
SKU = "Standard_D2s_v3"


@pytest.fixture(autouse=True)
def _azure_labels() -> Iterator[None]:
    saved = set(wk.WELL_KNOWN_LABELS)
    wk.WELL_KNOWN_LABELS.update(az_labels.WELL_KNOWN_LABELS)
    yield
    wk.WELL_KNOWN_LABELS.clear()
    wk.WELL_KNOWN_LABELS.update(saved)


class Env:
    def __init__(self, clients: AzureClients) -> None:
        self.clock = VirtualClock()
        self.server = InMemoryApiServer(self.clock)
        self.recorder = EventRecorder(self.clock)
        self.settings = AzureSettings.from_mapping(
            {
                "region": REGION,
                "subscription-id": SUBSCRIPTION,
                "cluster-name": "cluster",
                "cluster-endpoint": "https://cluster.hcp.example:443",
                "kubelet-bootstrap-token": "abcdef.0123456789abcdef",
                "ssh-public-key": "ssh-ed25519 AAAAC3Nza test",
                "vnet-subnet-id": SUBNET,
                "node-resource-group": RG,
                "cluster-ca-bundle": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==",
            }
        )
        self.provider = AzureCloudProvider(
            self.settings,
            clients=clients,
            kube=self.server,
            clock=self.clock,
            recorder=self.recorder,
        )
        self.status = NodeClassStatusReconciler(
            self.server,
            self.clock,
            self.recorder,
            {"vnet-subnet-id": SUBNET},
            kubernetes_version="1.31.2",
        )

    def nodeclass(self, name: str = "default", **spec: Any) -> dict[str, Any]:
        self.server.create(
            {
                "apiVersion": "karpenter.azure.com/v1beta1",
                "kind": "AKSNodeClass",
                "metadata": {"name": name},
                "spec": spec,
            }
        )
        self.status.reconcile(ObjectKey("", name))
        return self.server.get(NODECLASS_RESOURCE, name)

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
                                "group": "karpenter.azure.com",
                                "kind": "AKSNodeClass",
                                "name": nodeclass,
                            },
                            "requirements": [],
                        }
                    }
                },
            }
        )


def nodeclaim(
    name: str = "default-abcde",
    *,
    zones: list[str] | None = None,
    capacity_types: tuple[str, ...] = ("on-demand",),
    types: tuple[str, ...] = (SKU,),
) -> NodeClaim:
    reqs: list[dict[str, Any]] = [
        {"key": wk.LABEL_INSTANCE_TYPE, "operator": "In", "values": list(types)},
        {"key": wk.CAPACITY_TYPE_LABEL_KEY, "operator": "In", "values": list(capacity_types)},
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
                    "group": "karpenter.azure.com",
                    "kind": "AKSNodeClass",
                    "name": "default",
                },
                "requirements": reqs,
                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
            },
        }
    )


@pytest.fixture
def env(azure_clients: AzureClients) -> Env:
    return Env(azure_clients)


def _vm_names(arm: FakeARM) -> set[str]:
    return {v["name"] for v in arm.vms.values()}


def _nic_names(arm: FakeARM) -> set[str]:
    return {n["name"] for n in arm.nics.values()}


def test_create_launches_nic_and_vm_with_upstream_labels_and_hash(
    env: Env, arm_env: FakeARM
) -> None:
    env.nodeclass()
    env.nodepool()
    out = env.provider.create(nodeclaim(zones=[f"{REGION}-2"]))
    assert _vm_names(arm_env) == {"aks-default-abcde"}
    assert _nic_names(arm_env) == {"aks-default-abcde"}
    labels = out.metadata.labels
    assert labels[wk.LABEL_INSTANCE_TYPE] == SKU
    assert labels[wk.LABEL_TOPOLOGY_ZONE] == f"{REGION}-2"
    assert labels[wk.CAPACITY_TYPE_LABEL_KEY] == "on-demand"
    assert labels[az_labels.LABEL_SKU_NAME] == SKU
    assert labels[az_labels.LABEL_SKU_CPU] == "2"
    assert labels[wk.NODEPOOL_LABEL_KEY] == "default"
    assert out.status is not None and out.status.provider_id is not None
    assert parse_provider_id(out.status.provider_id) == "aks-default-abcde"
    assert out.status.provider_id.startswith(f"azure:///subscriptions/{SUBSCRIPTION}/")
    assert out.status.image_id and "/CommunityGalleries/" in out.status.image_id
    assert out.metadata.annotations[HASH_ANNOTATION]
    assert out.status.capacity["cpu"] == "2"
    (vm,) = arm_env.vms.values()
    props = vm["properties"]
    assert props["hardwareProfile"]["vmSize"] == SKU
    assert vm["zones"] == ["2"]
    assert props["osProfile"]["customData"]
    assert vm["tags"]["karpenter.sh_nodepool"] == "default"
    assert vm["tags"]["karpenter.azure.com_cluster"] == "cluster"


def test_spot_launches_a_spot_vm_with_delete_eviction(env: Env, arm_env: FakeARM) -> None:
    env.nodeclass()
    env.nodepool()
    out = env.provider.create(nodeclaim(capacity_types=("spot",)))
    assert out.metadata.labels[wk.CAPACITY_TYPE_LABEL_KEY] == "spot"
    (vm,) = arm_env.vms.values()
    assert vm["properties"]["priority"] == "Spot"
    assert vm["properties"]["evictionPolicy"] == "Delete"


def test_get_list_and_delete_by_provider_id(env: Env, arm_env: FakeARM) -> None:
    env.nodeclass()
    env.nodepool()
    a = env.provider.create(nodeclaim("pool-a"))
    b = env.provider.create(nodeclaim("pool-b"))
    assert a.status is not None and b.status is not None
    pid = str(a.status.provider_id)
    got = env.provider.get(pid)
    assert got.metadata.labels[wk.LABEL_INSTANCE_TYPE] == SKU
    assert {c.status.provider_id for c in env.provider.list() if c.status} == {
        a.status.provider_id,
        b.status.provider_id,
    }
    env.provider.delete(a)
    assert _vm_names(arm_env) == {"aks-pool-b"}
    assert _nic_names(arm_env) == {"aks-pool-b"}
    with pytest.raises(NodeClaimNotFoundError):
        env.provider.get(pid)
    with pytest.raises(NodeClaimNotFoundError):
        env.provider.delete(a)
    with pytest.raises(NodeClaimNotFoundError):
        env.provider.get("aws:///us-east-1a/i-123")


def test_allocation_failure_in_a_zone_marks_it_and_the_next_launch_takes_another(
    env: Env, arm_env: FakeARM
) -> None:
    env.nodeclass()
    env.nodepool()
    allowed = [f"{REGION}-1", f"{REGION}-3"]
    # whichever of the two zones the launch picks (at random among equals) fails
    arm_env.fail_next_vm_create("ZonalAllocationFailed", "Allocation failed.")
    with pytest.raises(InsufficientCapacityError):
        env.provider.create(nodeclaim(zones=allowed))
    assert _vm_names(arm_env) == set() and _nic_names(arm_env) == set()
    marked = [z for z in allowed if env.provider.unavailable.is_unavailable(SKU, z, "on-demand")]
    assert len(marked) == 1
    out = env.provider.create(nodeclaim(zones=allowed))
    assert out.metadata.labels[wk.LABEL_TOPOLOGY_ZONE] == next(
        z for z in allowed if z not in marked
    )
    assert _vm_names(arm_env) == {"aks-default-abcde"}


def test_a_failed_vm_lro_leaves_no_nic_or_vm(env: Env, arm_env: FakeARM) -> None:
    env.nodeclass()
    env.nodepool()
    arm_env.fail_next_vm_create("InternalServerError", "boom", asynchronous=True)
    with pytest.raises(CreateError):
        env.provider.create(nodeclaim())
    assert _vm_names(arm_env) == set() and _nic_names(arm_env) == set()


def test_nodeclass_missing_or_not_ready(env: Env, arm_env: FakeARM) -> None:
    env.nodepool()
    with pytest.raises(InsufficientCapacityError, match="not found"):
        env.provider.create(nodeclaim())
    assert "FailedResolveNodeClass" in {e.reason for e in env.recorder.events}
    bad = NodeClassStatusReconciler(
        env.server, env.clock, env.recorder, {"vnet-subnet-id": "nope"}, kubernetes_version="1.31.2"
    )
    env.server.create(
        {
            "apiVersion": "karpenter.azure.com/v1beta1",
            "kind": "AKSNodeClass",
            "metadata": {"name": "default"},
            "spec": {},
        }
    )
    bad.reconcile(ObjectKey("", "default"))
    with pytest.raises(NodeClassNotReadyError):
        env.provider.create(nodeclaim())
    assert _vm_names(arm_env) == set()


def test_get_instance_types_follow_the_nodeclass(env: Env) -> None:
    from karpenter_core.apis.v1 import NodePool

    env.nodeclass()
    env.nodepool()
    pool = NodePool.from_dict(env.server.get("nodepools", "default"))
    names = {it.name for it in env.provider.get_instance_types(pool)}
    assert SKU in names
    env.nodepool("orphan", nodeclass="missing")
    orphan = NodePool.from_dict(env.server.get("nodepools", "orphan"))
    assert env.provider.get_instance_types(orphan) == []


def test_drift_by_hash_image_and_kubernetes_version(env: Env, arm_env: FakeARM) -> None:
    env.nodeclass()
    env.nodepool()
    out = env.provider.create(nodeclaim())
    stored = out.to_dict()
    stored["metadata"]["name"] = "default-abcde"
    stored["spec"] = nodeclaim().to_dict()["spec"]
    claim = NodeClaim.from_dict(stored)
    assert env.provider.is_drifted(claim) == ""
    # a Node whose kubelet runs another version
    env.server.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "status": {"nodeInfo": {"kubeletVersion": "v1.30.9"}},
        }
    )
    with_node = NodeClaim.from_dict({**stored, "status": {**stored["status"], "nodeName": "n1"}})
    assert env.provider.is_drifted(with_node) == K8S_VERSION_DRIFT
    # an image no longer among the class's images
    other_image = NodeClaim.from_dict(
        {
            **stored,
            "status": {
                **stored["status"],
                "imageID": "/CommunityGalleries/x/images/y/versions/1.0.0",
            },
        }
    )
    assert env.provider.is_drifted(other_image) == IMAGE_DRIFT
    # a spec change moves the hash
    obj = env.server.get(NODECLASS_RESOURCE, "default")
    obj["spec"]["osDiskSizeGB"] = 64
    env.server.update(obj)
    env.status.reconcile(ObjectKey("", "default"))
    assert env.provider.is_drifted(claim) == "NodeClassDrift"


def test_repair_policies_are_upstreams() -> None:
    kinds = {(p.condition_type, p.condition_status) for p in REPAIR_POLICIES}
    assert ("Ready", "False") in kinds and ("Ready", "Unknown") in kinds
    assert ("kubernetes.azure.com/NodeHealthy", "False") in kinds


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "aws:///us-east-1a/i-1",
        "azure:///subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/x",
    ],
)
def test_parse_provider_id_refuses_what_is_not_a_vm(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_provider_id(bad)


def test_catalogue_only_provider_lists_the_bundled_snapshot_without_credentials() -> None:
    provider = AzureCloudProvider(AzureSettings.from_mapping({"region": "westcentralus"}))
    names = {it.name for it in provider.get_instance_types(None)}
    assert names and all(n.startswith("Standard_") for n in names)
    with pytest.raises(RuntimeError, match="catalogue only"):
        provider.list()
