"""``karpenter serve --cloud-provider azure`` end to end: a real control plane, the official
Azure SDKs against the Azure plugin's fake ARM server, and a node joiner playing the VMs'
kubelets.

Covered: launching onto NIC + VM pairs with the AKSNodeClass Ready, upstream's labels on
NodeClaims and Nodes, upstream's tags on both resources and the customData and image the
class resolved on the VM; scale to zero, or deleting the NodePool, deleting every VM and
NIC; an AKSNodeClass change drifting and replacing every node; a zonal allocation failure
(answered at once or at the end of the VM's long-running operation) falling back to
another zone without leaving the failed attempt's NIC or VM behind.

``azure_harness.py`` says what runs where. Instance types come from the Resource SKUs the
fake answers (the plugin's bundled records of :data:`azure_harness.REGION`), prices from
the bundled snapshot (the retail prices endpoint given to serve does not answer).

The provider tests are skipped while the Azure plugin's CloudProviderSpec says it cannot
launch (``can_launch`` False); the node joiner's own tests run regardless.
"""

from __future__ import annotations

from typing import Any

import pytest
from azure_harness import (
    AKSNODECLASS,
    ALLOWED_TYPES,
    BOOTSTRAP_TOKEN,
    CLUSTER_NAME,
    CLUSTER_TAG,
    NODE_RESOURCE_GROUP,
    NODEPOOL_TAG,
    REGION,
    SUBSCRIPTION,
    ZONES,
    Azure,
    NodeJoiner,
    azure_can_launch,
    azure_fixture,  # noqa: F401 -- the `azure` fixture
    claims_by_vm,
    custom_data,
    fake_arm_fixture,  # noqa: F401 -- the `fake_arm` fixture
    kubelet_provider_id,
    node_for,
    vm_size,
    vm_state,
    vm_zone,
)
from cloud_harness import (
    NODECLAIM,
    NODEPOOL_LABEL,
    UNREGISTERED_TAINT,
    condition,
    is_true,
    launched_nodeclaim,
    launches_settled,
    node_gone,
)
from fakearm import FakeARM
from serve_harness import (
    NODEPOOL,
    Cluster,
    cluster_fixture,  # noqa: F401 -- the `cluster` fixture
    wait_for,
)

from karpenter_core.kube.client import create_with_status

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

# Upstream's label and annotation keys (karpenter-provider-azure pkg/apis/v1beta1).
LABEL_SKU_NAME = "karpenter.azure.com/sku-name"
LABEL_SKU_CPU = "karpenter.azure.com/sku-cpu"
HASH_ANNOTATION = "karpenter.azure.com/aksnodeclass-hash"
HASH_VERSION_ANNOTATION = "karpenter.azure.com/aksnodeclass-hash-version"
VM_PATH = (
    r"/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Compute/"
    r"virtualMachines/(?P<name>[^/]+)"
)

needs_provider = pytest.mark.skipif(
    not azure_can_launch(),
    reason="the azure plugin's CloudProviderSpec has can_launch=False (provider not finished)",
)


def sku_vcpus(size: str) -> str:
    """The vCPU count of ``size`` in the bundled Resource SKUs of the test region."""
    from karpenter_azure.catalogue import load_snapshot

    for sku in load_snapshot(REGION).skus:
        if sku.name.lower() == size.lower():
            return str(sku.vcpus)
    raise AssertionError(f"{size} is not in the bundled {REGION} catalogue")


def arm_vm(
    name: str, *, zone: str = "2", state: str = "Succeeded", pool: str | None = "default"
) -> dict[str, Any]:
    """A VM as the fake's inventory holds one Karpenter created (or an untagged one)."""
    tags = {NODEPOOL_TAG: pool, CLUSTER_TAG: CLUSTER_NAME} if pool else {"owner": "someone"}
    return {
        "id": (
            f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{NODE_RESOURCE_GROUP}"
            f"/providers/Microsoft.Compute/virtualMachines/{name}"
        ),
        "name": name,
        "type": "Microsoft.Compute/virtualMachines",
        "location": REGION,
        "resourceGroup": NODE_RESOURCE_GROUP,
        "subscriptionId": SUBSCRIPTION,
        "tags": tags,
        "zones": [zone],
        "properties": {
            "provisioningState": state,
            "vmId": f"00000000-0000-0000-0000-{len(name):012d}",
            "hardwareProfile": {"vmSize": "Standard_D2s_v3"},
            "osProfile": {"computerName": name, "customData": ""},
        },
    }


def nodeclaim_for(name: str, vm: dict[str, Any] | None) -> dict[str, Any]:
    """A launched NodeClaim as Karpenter writes it (status from the provider's create)."""
    status = (
        None
        if vm is None
        else {
            "providerID": kubelet_provider_id(vm),
            "capacity": {"cpu": "2", "memory": "8Gi", "pods": "250"},
            "allocatable": {"cpu": "1900m", "memory": "5Gi", "pods": "250"},
        }
    )
    ref = {"group": "karpenter.azure.com", "kind": "AKSNodeClass", "name": "default"}
    return launched_nodeclaim(name, ref, "Standard_D2s_v3", status)


# --------------------------------------------------------------------------- the node joiner


def test_node_for_registers_the_nodeclaims_labels_taints_and_resources() -> None:
    vm = arm_vm("aks-default-abcde", zone="3")
    claim = nodeclaim_for("default-abcde", vm)
    node = node_for(vm, claim)
    # cloud-provider-azure's provider id: the ARM id with the resource group lower-cased.
    assert node["spec"]["providerID"] == (
        f"azure:///subscriptions/{SUBSCRIPTION}/resourceGroups/{NODE_RESOURCE_GROUP.lower()}"
        "/providers/Microsoft.Compute/virtualMachines/aks-default-abcde"
    )
    assert node["metadata"]["name"] == "aks-default-abcde"
    labels = node["metadata"]["labels"]
    assert labels["team"] == "payments"  # --node-labels from the NodeClaim
    assert labels[NODEPOOL_LABEL] == "default"
    assert labels["node.kubernetes.io/instance-type"] == "Standard_D2s_v3"
    assert labels["topology.kubernetes.io/zone"] == f"{REGION}-3"
    assert labels["topology.kubernetes.io/region"] == REGION
    assert labels["kubernetes.io/hostname"] == "aks-default-abcde"
    taints = {t["key"] for t in node["spec"]["taints"]}
    assert taints == {UNREGISTERED_TAINT, "dedicated", "cni.example/not-ready"}
    assert node["status"]["allocatable"] == claim["status"]["allocatable"]
    assert node["status"]["capacity"] == claim["status"]["capacity"]
    # A regional VM is in fault domain "0" as far as the zone label goes.
    assert vm_zone({**vm, "zones": []}) == "0"


def test_node_joiner_registers_succeeded_karpenter_vms_with_a_nodeclaim_and_removes_gone_ones(
    cluster: Cluster, fake_arm: FakeARM
) -> None:
    claimed = arm_vm("aks-claimed")
    unclaimed = arm_vm("aks-unclaimed")  # its NodeClaim has no provider id yet
    failed = arm_vm("aks-failed", state="Failed")  # its create failed: it never boots
    untagged = arm_vm("aks-other", pool=None)  # not Karpenter's
    with fake_arm.lock:
        for vm in (claimed, unclaimed, failed, untagged):
            fake_arm.vms[vm["name"]] = vm
    create_with_status(cluster.kube, nodeclaim_for("claimed", claimed))
    create_with_status(cluster.kube, nodeclaim_for("unclaimed", None))
    create_with_status(cluster.kube, nodeclaim_for("failed", failed))
    joiner = NodeJoiner(fake_arm, cluster.kube)
    assert joiner.step() == ["aks-claimed"]
    nodes = cluster.kube.list("nodes", label_selector="team=payments").items
    assert [n["spec"]["providerID"] for n in nodes] == [kubelet_provider_id(claimed)]
    # The fake kubelet keeps it Ready.
    wait_for(
        lambda: is_true(cluster.kube.get("nodes", "aks-claimed"), "Ready"),
        "the joined node's Ready condition",
    )
    # Once the NodeClaim names its VM the second one joins.
    cluster.kube.patch(
        NODECLAIM,
        "unclaimed",
        {"status": nodeclaim_for("unclaimed", unclaimed)["status"]},
        subresource="status",
    )
    assert joiner.step() == ["aks-unclaimed"]
    assert set(joiner.joined) == {"aks-claimed", "aks-unclaimed"}
    # A Node deleted while its VM lives stays gone (its kubelet registered once).
    cluster.kube.delete("nodes", "aks-unclaimed")
    wait_for(lambda: node_gone(cluster, "aks-unclaimed"), "the deleted node to go")
    assert joiner.step() == []
    assert node_gone(cluster, "aks-unclaimed")
    # A VM gone from Azure takes its Node with it.
    with fake_arm.lock:
        del fake_arm.vms["aks-claimed"]
    assert joiner.step() == []
    wait_for(lambda: node_gone(cluster, "aks-claimed"), "the gone VM's node to be deleted")
    assert {n["metadata"]["name"] for n in cluster.kube.list("nodes").items}.isdisjoint(
        {"aks-claimed", "aks-unclaimed", "aks-failed", "aks-other"}
    )


def test_custom_data_decodes_the_vms_bootstrap_script() -> None:
    import base64

    vm = arm_vm("aks-x")
    script = "#!/bin/bash\nKUBERNETES_VERSION=1.34.1\n"
    vm["properties"]["osProfile"]["customData"] = base64.b64encode(script.encode()).decode()
    assert custom_data(vm) == script
    assert node_for(vm, nodeclaim_for("x", vm))["status"]["nodeInfo"]["kubeletVersion"] == (
        "v1.34.1"
    )


# --------------------------------------------------------------------------- the provider


def nodeclass_ready(azure: Azure, name: str) -> bool:
    return is_true(azure.nodeclass(name), "Ready")


def settled(azure: Azure) -> bool:
    """Every NodeClaim launched, none being deleted, each on a VM whose create succeeded,
    and no other Karpenter VM: an extra NodeClaim from a second provisioning pass may have
    been launched and, empty, consolidated away; this waits until it is gone."""
    return launches_settled(
        azure.cluster, claims_by_vm(azure), azure.vms(), lambda vm: vm_state(vm) == "Succeeded"
    )


def assert_no_leaks(azure: Azure) -> None:
    """Every VM is a NodeClaim's, every NIC a VM's (same name), nothing else in the fake."""
    claims = set(claims_by_vm(azure))
    vms = set(azure.vms())
    assert azure.all_vm_names() == vms, "a VM without Karpenter's NodePool tag"
    assert vms == claims, f"VMs {sorted(vms)} != NodeClaims' VMs {sorted(claims)}"
    assert set(azure.nics()) == vms, f"NICs {sorted(azure.nics())} != VMs {sorted(vms)}"


@needs_provider
def test_every_pod_runs_on_a_node_backed_by_an_azure_vm_with_upstreams_labels_and_tags(
    azure: Azure,
) -> None:
    azure.serve()
    azure.apply_nodeclass("default")
    azure.apply_nodepool("default", "default")
    azure.apply_deployment("web", 6)

    azure.wait(lambda: nodeclass_ready(azure, "default"), "the AKSNodeClass to be Ready")
    status = azure.nodeclass("default")["status"]
    assert status.get("kubernetesVersion")
    images = {i["id"] for i in status.get("images") or []}
    assert images, status

    azure.wait(lambda: azure.cluster.all_running_on_karpenter_nodes("web", 6), "6 pods running")
    azure.wait(lambda: settled(azure), "every NodeClaim on a succeeded VM, none being deleted")
    claims = claims_by_vm(azure)
    vms = azure.vms()
    nics = azure.nics()
    nodes = {n["metadata"]["name"]: n for n in azure.cluster.karpenter_nodes()}
    by_provider_id = {n["spec"]["providerID"]: n for n in nodes.values()}
    for pod in azure.cluster.pods("web"):
        node = nodes[pod["spec"]["nodeName"]]
        assert node["spec"]["providerID"].rsplit("/", 1)[-1].lower() in claims

    hashes = azure.nodeclass("default")["metadata"].get("annotations") or {}
    assert hashes.get(HASH_ANNOTATION)
    for name, claim in claims.items():
        vm = vms[name]
        size = vm_size(vm)
        # The provider id is the one the VM's kubelet registers with.
        assert claim["status"]["providerID"] == kubelet_provider_id(vm)
        assert name == f"aks-{claim['metadata']['name']}"
        node = by_provider_id[claim["status"]["providerID"]]
        assert claim["status"].get("nodeName") == node["metadata"]["name"]
        # Upstream's labels, on the NodeClaim and (through customData) on the Node.
        zone = vm_zone(vm)
        expected = {
            LABEL_SKU_NAME: size,
            LABEL_SKU_CPU: sku_vcpus(size),
            "node.kubernetes.io/instance-type": size,
            "topology.kubernetes.io/zone": zone,
            "karpenter.sh/capacity-type": "on-demand",
            "kubernetes.io/arch": "amd64",
            NODEPOOL_LABEL: "default",
        }
        for obj in (claim, node):
            labels = obj["metadata"]["labels"]
            assert {k: labels.get(k) for k in expected} == expected, obj["metadata"]["name"]
        assert size in ALLOWED_TYPES
        # Upstream's tags on the VM and its NIC.
        nic = nics[name]
        for resource in (vm, nic):
            assert resource["tags"].get(CLUSTER_TAG) == CLUSTER_NAME, resource["id"]
            assert resource["tags"].get(NODEPOOL_TAG) == "default", resource["id"]
        refs = vm["properties"]["networkProfile"]["networkInterfaces"]
        assert [r["id"].lower() for r in refs] == [nic["id"].lower()]
        assert vm["properties"]["priority"] == "Regular"
        # The image the AKSNodeClass resolved and the node's bootstrap.
        ref = vm["properties"]["storageProfile"]["imageReference"]
        image = ref.get("communityGalleryImageId") or ref.get("id")
        assert image in images
        assert str(claim["status"].get("imageID")).lower() == str(image).lower()
        script = custom_data(vm)
        assert BOOTSTRAP_TOKEN in script, name
        assert f"{NODEPOOL_LABEL}=default" in script, name
        assert UNREGISTERED_TAINT in script, name
        # The NodeClaim carries the AKSNodeClass's hash (drift compares against it).
        annotations = claim["metadata"].get("annotations") or {}
        assert annotations.get(HASH_ANNOTATION) == hashes[HASH_ANNOTATION]
        assert annotations.get(HASH_VERSION_ANNOTATION) == hashes[HASH_VERSION_ANNOTATION]
    # Nothing changed since the launch, so nothing is drifted.
    assert not [c for c in azure.cluster.nodeclaims() if is_true(c, "Drifted")]
    assert_no_leaks(azure)
    # Zonal: the sizes have zones here, and at equal price upstream prefers a zonal
    # offering to the regional one (zone "0").
    placed = {name: vm_zone(vm) for name, vm in vms.items()}
    assert set(placed.values()) <= set(ZONES), f"not all placed in {ZONES}: {placed}"


@needs_provider
def test_scaling_to_zero_or_deleting_the_nodepool_deletes_every_vm_and_nic(
    azure: Azure,
) -> None:
    azure.serve()
    azure.apply_nodeclass("default")
    azure.apply_nodepool("default", "default")
    azure.apply_deployment("web", 4, cpu="1")
    azure.wait(lambda: azure.cluster.all_running_on_karpenter_nodes("web", 4), "4 pods running")
    launched = set(azure.vms())
    assert launched

    azure.cluster.scale("web", 0)
    azure.wait(lambda: not azure.cluster.nodeclaims(), "every NodeClaim to be deleted")
    azure.wait(lambda: not azure.all_vm_names(), "no VM left in the fake ARM")
    azure.wait(lambda: not azure.nics(), "no NIC left in the fake ARM")
    assert not azure.cluster.karpenter_nodes()
    with azure.arm.lock:
        assert not azure.arm.extensions
    deleted = {r.path.rsplit("/", 1)[-1] for r in azure.arm.requests_to("DELETE", VM_PATH)}
    assert launched <= deleted

    # Scaled up again, then the NodePool deleted: its NodeClaims go, and their VMs and
    # NICs with them; the pods wait, and nothing is launched for them.
    azure.cluster.scale("web", 2)
    azure.wait(lambda: azure.cluster.all_running_on_karpenter_nodes("web", 2), "2 pods running")
    relaunched = set(azure.vms())
    assert relaunched and not relaunched & launched
    azure.kube.delete(NODEPOOL, "default")
    azure.wait(lambda: not azure.kube.list(NODEPOOL).items, "the NodePool to be deleted")
    azure.wait(lambda: not azure.cluster.nodeclaims(), "every NodeClaim to be deleted")
    azure.wait(lambda: not azure.all_vm_names(), "no VM left in the fake ARM")
    azure.wait(lambda: not azure.nics(), "no NIC left in the fake ARM")
    azure.wait(lambda: len(azure.cluster.pending_pods()) == 2, "the 2 pods to wait for a node")
    assert not azure.cluster.karpenter_nodes()
    assert not azure.all_vm_names() and not azure.nics()


@needs_provider
def test_an_aksnodeclass_change_drifts_and_replaces_every_node(azure: Azure) -> None:
    azure.serve()
    azure.apply_nodeclass("default")
    azure.apply_nodepool("default", "default")
    azure.apply_deployment("web", 3)
    azure.wait(lambda: azure.cluster.all_running_on_karpenter_nodes("web", 3), "3 pods running")
    azure.wait(lambda: settled(azure), "every NodeClaim on a succeeded VM")
    old = set(claims_by_vm(azure))
    assert old
    for vm in azure.vms().values():
        assert vm["properties"]["storageProfile"]["osDisk"].get("diskSizeGB") == 128
    old_hash = azure.nodeclass("default")["metadata"]["annotations"][HASH_ANNOTATION]

    azure.kube.patch(AKSNODECLASS, "default", {"spec": {"osDiskSizeGB": 64}})
    azure.wait(
        lambda: azure.nodeclass("default")["metadata"]["annotations"][HASH_ANNOTATION] != old_hash,
        "the AKSNodeClass's hash to change",
    )

    def drift_reasons() -> set[str]:
        return {
            str((condition(c, "Drifted") or {}).get("reason"))
            for c in azure.cluster.nodeclaims()
            if is_true(c, "Drifted")
        }

    assert azure.wait(drift_reasons, "the old NodeClaims to be Drifted") == {"NodeClassDrift"}

    def replaced() -> bool:
        claims = set(claims_by_vm(azure))
        return (
            bool(claims)
            and not claims & old
            and not azure.all_vm_names() & old
            and not set(azure.nics()) & old
            and azure.cluster.all_running_on_karpenter_nodes("web", 3)
        )

    azure.wait(replaced, "every node to be replaced")
    azure.wait(lambda: settled(azure), "the replacements on succeeded VMs")
    for vm in azure.vms().values():
        assert vm["properties"]["storageProfile"]["osDisk"].get("diskSizeGB") == 64
    new_hash = azure.nodeclass("default")["metadata"]["annotations"][HASH_ANNOTATION]
    for claim in claims_by_vm(azure).values():
        assert claim["metadata"]["annotations"][HASH_ANNOTATION] == new_hash
        assert not is_true(claim, "Drifted")
    assert_no_leaks(azure)


@needs_provider
@pytest.mark.parametrize("asynchronous", [False, True], ids=["at-once", "in-the-lro"])
def test_a_zonal_allocation_failure_falls_back_to_another_zone_without_leaks(
    azure: Azure, asynchronous: bool
) -> None:
    """The first VM create fails ``ZonalAllocationFailed`` in whichever zone it tried
    (answered at once, or after the operation ran, leaving a Failed VM as Azure does): the
    zone is marked unavailable for the size, the NodeClaim is replaced and launches the
    same size in another zone, never that one again, and the failed attempt's NIC and VM
    are deleted. The NodePool allows the three zones only (not the regional placement)."""
    size = ALLOWED_TYPES[0]
    azure.arm.fail_next_vm_create(
        "ZonalAllocationFailed",
        "Allocation failed. We do not have sufficient capacity for the requested VM size "
        "in this zone.",
        sku=size,
        asynchronous=asynchronous,
    )
    azure.serve()
    azure.apply_nodeclass("default")
    azure.apply_nodepool("default", "default", types=(size,), zones=ZONES)
    azure.apply_deployment("web", 1)
    azure.wait(lambda: azure.cluster.all_running_on_karpenter_nodes("web", 1), "the pod running")
    azure.wait(lambda: settled(azure), "the NodeClaim on a succeeded VM")

    puts = azure.arm.requests_to("PUT", VM_PATH)
    assert len(puts) >= 2, [r.path for r in puts]
    first = puts[0]
    failed_name = first.path.rsplit("/", 1)[-1]
    failed_zone = f"{REGION}-{first.json['zones'][0]}"
    assert failed_zone in ZONES

    retried = [f"{REGION}-{(r.json.get('zones') or ['0'])[0]}" for r in puts[1:]]
    assert failed_zone not in retried, (failed_zone, retried)

    claims = claims_by_vm(azure)
    assert len(claims) == 1
    (name,) = claims
    assert name != failed_name
    vm = azure.vms()[name]
    assert vm_size(vm) == size
    assert vm_zone(vm) in ZONES
    assert vm_zone(vm) != failed_zone
    claim = claims[name]
    assert claim["metadata"]["labels"]["topology.kubernetes.io/zone"] == vm_zone(vm)
    # Nothing of the failed attempt is left.
    assert failed_name not in azure.all_vm_names()
    assert failed_name not in azure.nics()
    assert_no_leaks(azure)
