"""VMProvider against the fake ARM server through the real Azure SDKs: request bodies as
upstream builds them, LRO polling, capacity errors → unavailable marks, cleanup after
every failure path, get/list/delete."""

from __future__ import annotations

import pytest
from fakearm import LOCATION, RESOURCE_GROUP, SUBSCRIPTION, FakeARM, FakeRequest, Response
from karpenter_azure.azerrors import AzureCapacityError, FamilyMember, OfferingRef
from karpenter_azure.clients import AzureClients
from karpenter_azure.instance import (
    AKS_BILLING_EXTENSION,
    BILLING_TAG,
    CLUSTER_TAG,
    NODEPOOL_TAG,
    LaunchRequest,
    VMProvider,
    capacity_context,
    launch_tags,
    nodeclaim_name,
    provider_id,
    resource_name,
    vm_name_from_provider_id,
)
from karpenter_azure.labels import LABEL_SKU_CPU, LABEL_SKU_FAMILY

from karpenter_core.plugin_api import (
    IN,
    CreateError,
    InstanceType,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    Offering,
    Requirement,
    Requirements,
    UnavailableOfferings,
    VirtualClock,
    labels,
)

SUBNET = (
    f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg-net/providers/Microsoft.Network/"
    "virtualNetworks/vnet/subnets/nodes"
)
IMAGE = (
    "/CommunityGalleries/AKSUbuntu-38d80f77-467a-481f-a8d4-09b6d4220bd2/images/"
    "2204gen2containerd/versions/202501.01.0"
)
SIG_IMAGE = (
    "/subscriptions/10945678-1234-1234-1234-123456789012/resourceGroups/AKS-Ubuntu/providers/"
    "Microsoft.Compute/galleries/AKSUbuntu/images/2204gen2containerd/versions/202501.01.0"
)
IDENTITY = (
    f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg/providers/"
    "Microsoft.ManagedIdentity/userAssignedIdentities/kubelet"
)
ZONES = ("westus2-1", "westus2-2", "westus2-3")


@pytest.fixture
def unavailable() -> UnavailableOfferings:
    return UnavailableOfferings(VirtualClock())


@pytest.fixture
def vms(azure_clients: AzureClients, unavailable: UnavailableOfferings) -> VMProvider:
    return VMProvider(azure_clients, RESOURCE_GROUP, LOCATION, unavailable, poll_interval=0)


def request(nodeclaim: str = "default-abcde", **kw: object) -> LaunchRequest:
    base: dict[str, object] = {
        "name": resource_name(nodeclaim),
        "sku": "Standard_D4s_v3",
        "zone": "westus2-1",
        "capacity_type": "on-demand",
        "subnet_id": SUBNET,
        "image_id": IMAGE,
        "custom_data": "IyEvYmluL2Jhc2gKZWNobyBoaQo=",
        "tags": launch_tags("cluster", "default", {"team": "a/b"}),
        "ssh_public_key": "ssh-rsa AAAA test",
        "node_identities": (IDENTITY,),
        "os_disk_size_gb": 128,
        "offerings": tuple(OfferingRef(z, ct) for z in ZONES for ct in ("on-demand", "spot")),
    }
    base.update(kw)
    return LaunchRequest(**base)  # type: ignore[arg-type]


def assert_nothing_left(arm: FakeARM, name: str) -> None:
    assert name not in arm.vms
    assert name not in arm.nics
    assert not [k for k in arm.extensions if k[0] == name]


# ---------------------------------------------------------------------------- naming


def test_names_and_provider_ids_follow_upstream() -> None:
    assert resource_name("default-abcde") == "aks-default-abcde"
    assert nodeclaim_name("aks-default-abcde") == "default-abcde"
    arm_id = (
        "/subscriptions/s/resourceGroups/MC_RG_Cluster/providers/"
        "Microsoft.Compute/virtualMachines/aks-default-abcde"
    )
    pid = provider_id(arm_id)
    assert pid == (
        "azure:///subscriptions/s/resourceGroups/mc_rg_cluster/providers/"
        "Microsoft.Compute/virtualMachines/aks-default-abcde"
    )
    assert vm_name_from_provider_id(pid) == "aks-default-abcde"
    with pytest.raises(ValueError, match="not of the form"):
        vm_name_from_provider_id("aws:///us-west-2a/i-123")


def test_launch_tags_sanitise_keys_and_karpenter_wins() -> None:
    tags = launch_tags(
        "cluster",
        "pool",
        nodeclass_tags={"karpenter.azure.com/cluster": "evil", "env": "prod"},
        additional_tags={"env": "dev", "owner": "me"},
    )
    assert tags == {
        CLUSTER_TAG: "cluster",
        BILLING_TAG: "linux",
        NODEPOOL_TAG: "pool",
        "env": "prod",
        "owner": "me",
    }


def test_launch_request_rejects_unknown_capacity_type() -> None:
    with pytest.raises(ValueError, match="capacity type"):
        request(capacity_type="reserved")


# ---------------------------------------------------------------------------- create


def test_create_makes_nic_vm_and_billing_extension_as_upstream(
    arm_env: FakeARM, vms: VMProvider
) -> None:
    vm = vms.create(request())
    name = "aks-default-abcde"
    assert set(arm_env.vms) == {name} and set(arm_env.nics) == {name}
    nic = arm_env.nics[name]
    ipc = nic["properties"]["ipConfigurations"]
    assert len(ipc) == 1
    assert ipc[0]["name"] == name
    assert ipc[0]["properties"]["primary"] is True
    assert ipc[0]["properties"]["privateIPAllocationMethod"] == "Dynamic"
    assert ipc[0]["properties"]["subnet"]["id"] == SUBNET
    assert nic["properties"]["enableAcceleratedNetworking"] is False
    assert nic["properties"]["enableIPForwarding"] is False
    assert nic["tags"][NODEPOOL_TAG] == "default"
    assert nic["tags"]["team"] == "a/b"

    body = arm_env.requests_to("PUT", r".*/virtualMachines/" + name)[0].json
    props = body["properties"]
    assert body["location"] == LOCATION
    assert body["zones"] == ["1"]
    assert body["tags"] == nic["tags"]
    assert body["identity"] == {"type": "UserAssigned", "userAssignedIdentities": {IDENTITY: {}}}
    assert props["hardwareProfile"] == {"vmSize": "Standard_D4s_v3"}
    assert props["priority"] == "Regular"
    assert "evictionPolicy" not in props and "billingProfile" not in props
    assert props["storageProfile"]["imageReference"] == {"communityGalleryImageId": IMAGE}
    os_disk = props["storageProfile"]["osDisk"]
    assert os_disk == {
        "name": name,
        "createOption": "FromImage",
        "deleteOption": "Delete",
        "diskSizeGB": 128,
    }
    nic_ref = props["networkProfile"]["networkInterfaces"][0]
    assert nic_ref["id"] == nic["id"]
    assert nic_ref["properties"] == {"primary": True, "deleteOption": "Delete"}
    os_profile = props["osProfile"]
    assert os_profile["computerName"] == name
    assert os_profile["adminUsername"] == "azureuser"
    assert os_profile["customData"] == "IyEvYmluL2Jhc2gKZWNobyBoaQo="
    linux = os_profile["linuxConfiguration"]
    assert linux["disablePasswordAuthentication"] is True
    assert linux["ssh"]["publicKeys"] == [
        {"keyData": "ssh-rsa AAAA test", "path": "/home/azureuser/.ssh/authorized_keys"}
    ]

    ext = arm_env.extensions[(name, AKS_BILLING_EXTENSION)]
    assert ext["properties"]["publisher"] == "Microsoft.AKS"
    assert ext["properties"]["type"] == "Compute.AKS.Linux.Billing"
    assert ext["properties"]["typeHandlerVersion"] == "1.0"
    assert ext["properties"]["provisioningState"] == "Succeeded"

    assert vm.name == name
    assert vm.sku == "Standard_D4s_v3"
    assert vm.zone == "westus2-1"
    assert vm.capacity_type == "on-demand"
    assert vm.image_id == IMAGE
    assert vm.provisioning_state == "Succeeded"
    assert vm.created is not None
    assert vm.provider_id == provider_id(arm_env.vms[name]["id"])
    assert arm_env.vms[name]["properties"]["provisioningState"] == "Succeeded"


def test_spot_vm_body_sets_priority_eviction_and_max_price(
    arm_env: FakeARM, vms: VMProvider
) -> None:
    vm = vms.create(request(capacity_type="spot"))
    props = arm_env.vms[vm.name]["properties"]
    assert props["priority"] == "Spot"
    assert props["evictionPolicy"] == "Delete"
    assert props["billingProfile"] == {"maxPrice": -1}
    assert vm.capacity_type == "spot"


def test_regional_vm_has_no_zones(arm_env: FakeARM, vms: VMProvider) -> None:
    vm = vms.create(request(zone=""))
    assert arm_env.requests_to("PUT", r".*/virtualMachines/" + vm.name)[0].json["zones"] == []
    assert vm.zone == "0"
    assert vms.get(vm.name).zone == "0"


def test_sig_image_ephemeral_disk_accelerated_networking_and_security(
    arm_env: FakeARM, vms: VMProvider
) -> None:
    vm = vms.create(
        request(
            image_id=SIG_IMAGE,
            ephemeral_os_disk=True,
            accelerated_networking=True,
            encryption_at_host=True,
            trusted_launch=True,
            secure_boot=True,
            vtpm=False,
            disk_encryption_set_id="/des/id",
        )
    )
    props = arm_env.vms[vm.name]["properties"]
    assert props["storageProfile"]["imageReference"] == {"id": SIG_IMAGE}
    os_disk = props["storageProfile"]["osDisk"]
    assert os_disk["diffDiskSettings"] == {"option": "Local", "placement": "ResourceDisk"}
    assert os_disk["caching"] == "ReadOnly"
    assert os_disk["managedDisk"] == {"diskEncryptionSet": {"id": "/des/id"}}
    assert props["securityProfile"] == {
        "encryptionAtHost": True,
        "securityType": "TrustedLaunch",
        "uefiSettings": {"secureBootEnabled": True, "vTpmEnabled": False},
    }
    assert arm_env.nics[vm.name]["properties"]["enableAcceleratedNetworking"] is True


def test_azure_cni_secondary_ips_and_backend_pools(arm_env: FakeARM, vms: VMProvider) -> None:
    vm = vms.create(request(secondary_ips=3, backend_pool_ids=("/lb/pool1",)))
    configs = arm_env.nics[vm.name]["properties"]["ipConfigurations"]
    assert [c["name"] for c in configs] == [vm.name, "ipconfig1", "ipconfig2", "ipconfig3"]
    assert [c["properties"]["primary"] for c in configs] == [True, False, False, False]
    assert configs[0]["properties"]["loadBalancerBackendAddressPools"] == [{"id": "/lb/pool1"}]
    assert "loadBalancerBackendAddressPools" not in configs[1]["properties"]


def test_create_polls_each_lro_until_it_succeeds(arm_env: FakeARM, vms: VMProvider) -> None:
    arm_env.lro_polls = 3
    vm = vms.create(request())
    polls = arm_env.requests_to("GET", r"/fakearm/operations/[^/]+")
    # NIC: done at the first poll; VM and extension: 3 InProgress answers then the outcome
    assert len(polls) == 1 + 4 + 4
    assert vm.provisioning_state == "Succeeded"


@pytest.mark.timeout(120)
def test_lro_polling_waits_what_retry_after_asks_not_the_default_interval(
    arm_env: FakeARM, azure_clients: AzureClients, unavailable: UnavailableOfferings
) -> None:
    # With a 10-minute default interval the launch could only finish in time if every
    # wait came from the fake's retry-after-ms (20 ms).
    arm_env.retry_after_ms = 20
    slow = VMProvider(azure_clients, RESOURCE_GROUP, LOCATION, unavailable, poll_interval=600)
    vm = slow.create(request())
    assert vm.name in arm_env.vms
    slow.delete(vm.name)
    assert_nothing_left(arm_env, vm.name)


def test_no_billing_extension_outside_public_clouds(
    arm_env: FakeARM, azure_clients: AzureClients, unavailable: UnavailableOfferings
) -> None:
    provider = VMProvider(
        azure_clients,
        RESOURCE_GROUP,
        LOCATION,
        unavailable,
        poll_interval=0,
        billing_extension=False,
    )
    vm = provider.create(request())
    assert vm.name in arm_env.vms
    assert not arm_env.extensions


def test_existing_vm_is_adopted_not_recreated(arm_env: FakeARM, vms: VMProvider) -> None:
    first = vms.create(request())
    puts = len(arm_env.requests_to("PUT", r".*/virtualMachines/[^/]+"))
    again = vms.create(request())
    assert again.id == first.id
    assert len(arm_env.requests_to("PUT", r".*/virtualMachines/[^/]+")) == puts


# ---------------------------------------------------------------------------- capacity errors


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "lro"])
def test_zonal_allocation_failure_marks_zone_both_capacity_types_and_cleans_up(
    arm_env: FakeARM,
    vms: VMProvider,
    unavailable: UnavailableOfferings,
    asynchronous: bool,
) -> None:
    arm_env.fail_next_vm_create(
        "ZonalAllocationFailed",
        "Allocation failed. We do not have sufficient capacity in the zone.",
        sku="Standard_D4s_v3",
        zone="westus2-1",
        asynchronous=asynchronous,
    )
    with pytest.raises(InsufficientCapacityError) as info:
        vms.create(request())
    assert isinstance(info.value, AzureCapacityError)
    assert info.value.reason == "ZonalAllocationFailure"
    assert "\n" not in str(info.value)
    for ct in ("on-demand", "spot"):
        assert unavailable.is_unavailable("Standard_D4s_v3", "westus2-1", ct)
        assert not unavailable.is_unavailable("Standard_D4s_v3", "westus2-2", ct)
    assert_nothing_left(arm_env, "aks-default-abcde")
    # the fall-back zone launches
    vm = vms.create(request(zone="westus2-2"))
    assert vm.zone == "westus2-2"


def test_sku_not_available_marks_every_zone_for_the_capacity_type(
    arm_env: FakeARM, vms: VMProvider, unavailable: UnavailableOfferings
) -> None:
    arm_env.fail_next_vm_create("SkuNotAvailable", "The requested VM size is not available.")
    with pytest.raises(InsufficientCapacityError, match=r"aka\.ms/azureskunotavailable"):
        vms.create(request(capacity_type="spot"))
    for zone in ZONES:
        assert unavailable.is_unavailable("Standard_D4s_v3", zone, "spot")
        assert not unavailable.is_unavailable("Standard_D4s_v3", zone, "on-demand")
    assert_nothing_left(arm_env, "aks-default-abcde")


def test_allocation_failed_marks_placement_both_types_and_larger_family_sizes(
    arm_env: FakeARM, vms: VMProvider, unavailable: UnavailableOfferings
) -> None:
    arm_env.fail_next_vm_create("AllocationFailed", "Allocation failed.", asynchronous=True)
    family = (
        FamilyMember("Standard_D2s_v3", 2),
        FamilyMember("Standard_D4s_v3", 4),
        FamilyMember("Standard_D8s_v3", 8),
    )
    with pytest.raises(InsufficientCapacityError):
        vms.create(request(vcpus=4, family=family))
    for zone in ZONES:
        for ct in ("on-demand", "spot"):
            assert unavailable.is_unavailable("Standard_D4s_v3", zone, ct)
            assert unavailable.is_unavailable("Standard_D8s_v3", zone, ct)
            assert not unavailable.is_unavailable("Standard_D2s_v3", zone, ct)
    assert_nothing_left(arm_env, "aks-default-abcde")


def test_low_priority_quota_turns_spot_off(
    arm_env: FakeARM, vms: VMProvider, unavailable: UnavailableOfferings
) -> None:
    arm_env.fail_next_vm_create(
        "OperationNotAllowed",
        "Operation could not be completed as it results in exceeding approved "
        "LowPriorityCores quota. Additional details - Location: westus2, Current Limit: 10",
    )
    with pytest.raises(InsufficientCapacityError, match="LowPriorityQuota"):
        vms.create(request(capacity_type="spot"))
    assert unavailable.is_unavailable("Standard_E2s_v5", "westus2-3", "spot")
    assert not unavailable.is_unavailable("Standard_E2s_v5", "westus2-3", "on-demand")
    assert_nothing_left(arm_env, "aks-default-abcde")


def test_regional_quota_marks_nothing_but_is_insufficient_capacity(
    arm_env: FakeARM, vms: VMProvider, unavailable: UnavailableOfferings
) -> None:
    arm_env.fail_next_vm_create(
        "OperationNotAllowed",
        "Operation could not be completed as it results in exceeding approved Total "
        "Regional Cores quota. Current Limit: 100",
    )
    with pytest.raises(InsufficientCapacityError, match="regional on-demand vCPU quota"):
        vms.create(request())
    assert len(unavailable) == 0
    assert_nothing_left(arm_env, "aks-default-abcde")


def test_subnet_full_on_nic_marks_the_subnet(
    arm_env: FakeARM, vms: VMProvider, unavailable: UnavailableOfferings
) -> None:
    arm_env.fail_next(
        "PUT",
        r".*/networkInterfaces/[^/]+",
        status=400,
        code="SubnetIsFull",
        message="Subnet nodes with address prefix 10.224.0.0/30 does not have enough capacity",
    )
    with pytest.raises(InsufficientCapacityError, match="no free IP address"):
        vms.create(request())
    assert unavailable.is_unavailable(
        "Standard_D4s_v3", "westus2-1", "on-demand", subnet_ids=[SUBNET]
    )
    assert_nothing_left(arm_env, "aks-default-abcde")


# ---------------------------------------------------------------------------- other failures


def test_nic_created_but_vm_rejected_deletes_the_nic(arm_env: FakeARM, vms: VMProvider) -> None:
    arm_env.fail_next_vm_create(
        "InvalidParameter", "The value of parameter imageReference is invalid.", status=400
    )
    with pytest.raises(CreateError) as info:
        vms.create(request())
    assert not isinstance(info.value, InsufficientCapacityError)
    assert info.value.condition_reason == "InvalidParameter"
    assert "imageReference" in str(info.value)
    assert arm_env.requests_to("DELETE", r".*/networkInterfaces/aks-default-abcde")
    assert_nothing_left(arm_env, "aks-default-abcde")


def test_vm_lro_failure_deletes_the_failed_vm_then_the_nic(
    arm_env: FakeARM, vms: VMProvider
) -> None:
    arm_env.fail_next_vm_create(
        "OSProvisioningClientError", "OS provisioning failed.", asynchronous=True
    )
    with pytest.raises(CreateError) as info:
        vms.create(request())
    assert info.value.condition_reason == "OSProvisioningClientError"
    assert arm_env.requests_to("DELETE", r".*/virtualMachines/aks-default-abcde")
    assert_nothing_left(arm_env, "aks-default-abcde")


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "lro"])
def test_extension_failure_deletes_vm_and_nic(
    arm_env: FakeARM, vms: VMProvider, asynchronous: bool
) -> None:
    arm_env.fail_next_extension(
        "VMExtensionProvisioningError", "extension failed", asynchronous=asynchronous
    )
    with pytest.raises(CreateError, match=AKS_BILLING_EXTENSION):
        vms.create(request())
    assert_nothing_left(arm_env, "aks-default-abcde")


def test_nic_failure_leaves_nothing(arm_env: FakeARM, vms: VMProvider) -> None:
    arm_env.fail_next(
        "PUT",
        r".*/networkInterfaces/[^/]+",
        status=400,
        code="InvalidResourceReference",
        message="Resource /subnets/nodes referenced by resource was not found.",
    )
    with pytest.raises(CreateError) as info:
        vms.create(request())
    assert info.value.condition_reason == "InvalidResourceReference"
    assert not arm_env.requests_to("PUT", r".*/virtualMachines/[^/]+")
    assert_nothing_left(arm_env, "aks-default-abcde")


def test_credentials_failure_is_a_create_error(arm_env: FakeARM, vms: VMProvider) -> None:
    arm_env.fail_tokens(times=50, status=400)
    with pytest.raises(CreateError) as info:
        vms.create(request())
    assert info.value.condition_reason == "Unauthorized"
    assert "\n" not in str(info.value)
    assert not arm_env.vms and not arm_env.nics


def test_throttled_calls_are_retried(arm_env: FakeARM, vms: VMProvider) -> None:
    arm_env.throttle_next("PUT", r".*/virtualMachines/[^/]+")
    vm = vms.create(request())
    statuses = arm_env.requests_to("PUT", r".*/virtualMachines/[^/]+")
    assert len(statuses) == 2
    assert vm.name in arm_env.vms


# ---------------------------------------------------------------------------- get / list / delete


def test_get_returns_the_vm_and_not_found_is_nodeclaim_not_found(
    arm_env: FakeARM, vms: VMProvider
) -> None:
    created = vms.create(request(capacity_type="spot", zone="westus2-3"))
    got = vms.get(created.name)
    assert got.id == created.id
    assert (got.sku, got.zone, got.capacity_type) == ("Standard_D4s_v3", "westus2-3", "spot")
    assert got.tags[NODEPOOL_TAG] == "default"
    assert got.created is not None
    with pytest.raises(NodeClaimNotFoundError):
        vms.get("aks-missing")


def test_list_follows_resource_graph_pages_and_filters_by_tag(
    arm_env: FakeARM, vms: VMProvider
) -> None:
    arm_env.graph_page_size = 2
    names = [f"pool-{i}" for i in range(5)]
    for n in names:
        vms.create(request(n))
    # a VM without Karpenter's NodePool tag is not Karpenter's
    vms.create(request("foreign", tags={"other": "x"}))
    listed = vms.list()
    assert sorted(v.name for v in listed) == sorted(resource_name(n) for n in names)
    graph = arm_env.requests_to("POST", r"/providers/Microsoft\.ResourceGraph/resources")
    assert len(graph) == 3
    assert graph[0].json["options"]["resultFormat"] == "objectArray"
    assert "$skipToken" in graph[1].json["options"]
    for v in listed:
        assert v.provider_id.startswith("azure:///subscriptions/")
        assert v.sku == "Standard_D4s_v3"
    nics = vms.list_nics()
    assert sorted(n.name for n in nics) == sorted(resource_name(n) for n in names)


def test_delete_removes_vm_then_nic_and_second_delete_is_not_found(
    arm_env: FakeARM, vms: VMProvider
) -> None:
    vm = vms.create(request())
    vms.delete(vm.name)
    assert_nothing_left(arm_env, vm.name)
    delete = arm_env.requests_to("DELETE", r".*/virtualMachines/" + vm.name)[0]
    assert delete.query.get("forceDeletion") == "true"
    with pytest.raises(NodeClaimNotFoundError):
        vms.delete(vm.name)


def test_delete_of_missing_vm_removes_an_orphan_nic(arm_env: FakeARM, vms: VMProvider) -> None:
    vm = vms.create(
        request(),
    )
    # the VM vanished (e.g. spot eviction) but its NIC stayed
    with arm_env.lock:
        arm_env.vms.pop(vm.name)
        arm_env.extensions.clear()
    with pytest.raises(NodeClaimNotFoundError):
        vms.delete(vm.name)
    assert vm.name not in arm_env.nics


def test_delete_nic_and_list_nics_for_garbage_collection(arm_env: FakeARM, vms: VMProvider) -> None:
    vm = vms.create(request())
    live = vms.create(request("live-1"))
    with arm_env.lock:
        arm_env.vms.pop(vm.name)
        arm_env.nics[vm.name]["properties"].pop("virtualMachine")
        arm_env.extensions.clear()
    nics = {n.name: n for n in vms.list_nics()}
    assert set(nics) == {vm.name, live.name}
    assert nics[live.name].vm_id.lower() == live.id.lower()
    assert nics[vm.name].vm_id == ""
    vms.delete_nic(vm.name)
    vms.delete_nic(vm.name)  # already gone: no error
    assert set(arm_env.nics) == {live.name}


def test_a_bare_arm_zone_is_marked_as_its_label(
    arm_env: FakeARM, vms: VMProvider, unavailable: UnavailableOfferings
) -> None:
    arm_env.fail_next_vm_create("ZonalAllocationFailed", "no capacity", zone="3")
    with pytest.raises(InsufficientCapacityError):
        vms.create(request(zone="3"))
    assert unavailable.is_unavailable("Standard_D4s_v3", "westus2-3", "on-demand")
    assert not unavailable.is_unavailable("Standard_D4s_v3", "3", "on-demand")


def test_a_delete_already_in_flight_is_not_repeated(arm_env: FakeARM, vms: VMProvider) -> None:
    vm = vms.create(request())
    nested: list[object] = []

    def poll(req: FakeRequest) -> Response:
        # While the first delete waits for its LRO, a second delete of the same VM
        # (another termination reconcile) must return at once without a new DELETE.
        if not nested:
            nested.append(vms.delete(vm.name))
        return arm_env._operation(req)

    remove = arm_env.route("GET", r"/fakearm/operations/(?P<op>[^/]+)", poll)
    try:
        vms.delete(vm.name)
    finally:
        remove()
    assert nested == [None]
    assert len(arm_env.requests_to("DELETE", r".*/virtualMachines/" + vm.name)) == 1
    assert_nothing_left(arm_env, vm.name)


# ---------------------------------------------------------------------------- backend pools

OLD_POOL = "/subscriptions/s/resourceGroups/mc/providers/Microsoft.Network/loadBalancers/kubernetes/backendAddressPools/old"
NEW_POOL = OLD_POOL.replace("/old", "/new")


def _pool_provider(
    clients: AzureClients, unavailable: UnavailableOfferings, refresh: object
) -> VMProvider:
    return VMProvider(
        clients,
        RESOURCE_GROUP,
        LOCATION,
        unavailable,
        poll_interval=0,
        refresh_backend_pools=refresh,  # type: ignore[arg-type]
    )


def test_a_stale_backend_pool_is_refreshed_and_the_nic_retried(
    arm_env: FakeARM, azure_clients: AzureClients, unavailable: UnavailableOfferings
) -> None:
    asked: list[tuple[str, ...]] = []

    def refresh(stale: tuple[str, ...]) -> list[str]:
        asked.append(stale)
        return [NEW_POOL]

    arm_env.fail_next(
        "PUT",
        r".*/networkInterfaces/[^/]+",
        status=400,
        code="InvalidResourceReference",
        message=f"Resource {OLD_POOL} referenced by resource nic was not found.",
    )
    vm = _pool_provider(azure_clients, unavailable, refresh).create(
        request(backend_pool_ids=(OLD_POOL,))
    )
    assert asked == [(OLD_POOL,)]
    ipc = arm_env.nics[vm.name]["properties"]["ipConfigurations"][0]["properties"]
    assert ipc["loadBalancerBackendAddressPools"] == [{"id": NEW_POOL}]
    assert vm.name in arm_env.vms


def test_other_missing_references_are_not_retried(
    arm_env: FakeARM, azure_clients: AzureClients, unavailable: UnavailableOfferings
) -> None:
    asked: list[tuple[str, ...]] = []
    arm_env.fail_next(
        "PUT",
        r".*/networkInterfaces/[^/]+",
        status=400,
        code="InvalidResourceReference",
        message=f"Resource {SUBNET} referenced by resource nic was not found.",
    )
    provider = _pool_provider(azure_clients, unavailable, lambda p: asked.append(p) or [NEW_POOL])
    with pytest.raises(CreateError) as info:
        provider.create(request(backend_pool_ids=(OLD_POOL,)))
    assert info.value.condition_reason == "InvalidResourceReference"
    assert asked == []
    assert_nothing_left(arm_env, "aks-default-abcde")


def test_a_failing_pool_refresh_is_a_create_error_and_leaves_nothing(
    arm_env: FakeARM, azure_clients: AzureClients, unavailable: UnavailableOfferings
) -> None:
    def refresh(stale: tuple[str, ...]) -> list[str]:
        raise RuntimeError("load balancer list failed")

    arm_env.fail_next(
        "PUT",
        r".*/networkInterfaces/[^/]+",
        status=400,
        code="InvalidResourceReference",
        message=f"Resource {OLD_POOL} was not found.",
    )
    with pytest.raises(CreateError) as info:
        _pool_provider(azure_clients, unavailable, refresh).create(
            request(backend_pool_ids=(OLD_POOL,))
        )
    assert info.value.condition_reason == "BackendPoolRefreshFailed"
    assert_nothing_left(arm_env, "aks-default-abcde")


# ---------------------------------------------------------------------------- tag updates


def test_update_tags_reaches_nic_extension_and_vm_vm_last(
    arm_env: FakeARM, vms: VMProvider
) -> None:
    vm = vms.create(request())
    arm_env.requests.clear()
    new = {**vm.tags, "team": "b"}
    vms.update_tags(vm.name, new)
    assert arm_env.nics[vm.name]["tags"] == new
    assert arm_env.extensions[(vm.name, AKS_BILLING_EXTENSION)]["tags"] == new
    assert arm_env.vms[vm.name]["tags"] == new
    patches = [r.path.rsplit("/", 2)[-2] for r in arm_env.requests if r.method == "PATCH"]
    assert patches == ["networkInterfaces", "extensions", "virtualMachines"]


def test_update_tags_skips_a_missing_extension_but_not_a_missing_vm(
    arm_env: FakeARM, vms: VMProvider
) -> None:
    vm = vms.create(request())
    with arm_env.lock:
        arm_env.extensions.clear()
    vms.update_tags(vm.name, {"a": "1"})
    assert arm_env.vms[vm.name]["tags"] == {"a": "1"}
    with pytest.raises(NodeClaimNotFoundError):
        vms.update_tags("aks-missing", {"a": "1"})


# ---------------------------------------------------------------------------- instance types


def _sku(name: str, family: str, cpus: int) -> InstanceType:
    def reqs(**values: list[str]) -> Requirements:
        return Requirements(*(Requirement.new(k, IN, v) for k, v in values.items()))

    offerings = [
        Offering(
            reqs(**{labels.LABEL_TOPOLOGY_ZONE: [z], labels.CAPACITY_TYPE_LABEL_KEY: [ct]}), 0.1
        )
        for z in ZONES
        for ct in ("on-demand", "spot")
    ]
    return InstanceType(
        name=name,
        requirements=reqs(
            **{
                labels.LABEL_INSTANCE_TYPE: [name],
                LABEL_SKU_FAMILY: [family],
                LABEL_SKU_CPU: [str(cpus)],
            }
        ),
        offerings=offerings,
    )


def test_capacity_context_from_instance_types_drives_the_marks(
    arm_env: FakeARM, vms: VMProvider, unavailable: UnavailableOfferings
) -> None:
    d4, d8, d2, e8 = (
        _sku("Standard_D4s_v3", "DSv3", 4),
        _sku("Standard_D8s_v3", "DSv3", 8),
        _sku("Standard_D2s_v3", "DSv3", 2),
        _sku("Standard_E8s_v3", "ESv3", 8),
    )
    context = capacity_context(d4, [d4, d8, d2, e8])
    assert context["vcpus"] == 4
    assert {m.name for m in context["family"]} == {d4.name, d8.name, d2.name}
    assert set(context["offerings"]) == {
        OfferingRef(z, ct) for z in ZONES for ct in ("on-demand", "spot")
    }
    arm_env.fail_next_vm_create("OverconstrainedAllocationRequest", "constraints")
    with pytest.raises(InsufficientCapacityError):
        vms.create(request(**context))
    for zone in ZONES:
        assert unavailable.is_unavailable(d4.name, zone, "on-demand")
        assert unavailable.is_unavailable(d8.name, zone, "on-demand")
        assert not unavailable.is_unavailable(d2.name, zone, "on-demand")
        assert not unavailable.is_unavailable(e8.name, zone, "on-demand")
        assert not unavailable.is_unavailable(d4.name, zone, "spot")
    assert_nothing_left(arm_env, "aks-default-abcde")
