"""The launch template (karpenter_azure.launchtemplate): what a new VM boots with.

Scenarios from upstream's launch template tags, image-family resolver, labels,
ephemeral-disk and max-pods tests, plus the customData the template carries.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import pytest
from karpenter_azure.bootstrap import parse_script_variables
from karpenter_azure.images import AZURE_LINUX_GALLERY, UBUNTU_GALLERY
from karpenter_azure.launchtemplate import (
    BILLING_TAG_KEY,
    KARPENTER_MANAGED_TAG_KEY,
    NODEPOOL_TAG_KEY,
    STORAGE_PROFILE_EPHEMERAL,
    STORAGE_PROFILE_MANAGED_DISKS,
    LaunchTemplate,
    LaunchTemplateError,
    NetworkSettings,
    api_server_name,
    arm_zones,
    build,
    can_kubelet_set_label,
    default_max_pods,
    ephemeral_os_disk_max,
    normalize_cluster_resource_group_for_label,
    route_table_name,
    sanitize_tag_key,
    select_image,
    tags,
)
from karpenter_azure.nodeclass import AKSNodeClass

from karpenter_core.apis.v1 import NodeClaim
from karpenter_core.cloudprovider.types import InstanceType, InstanceTypeOverhead
from karpenter_core.scheduling.requirements import IN, Requirement, Requirements

SUBNET = (
    "/subscriptions/sub-1/resourceGroups/vnet-rg/providers/Microsoft.Network/"
    "virtualNetworks/aks-vnet-12345678/subnets/aks-subnet"
)
OTHER_SUBNET = SUBNET.replace("aks-subnet", "nodeclass-subnet")
MIB_MILLI = 1024 * 1024 * 1000


def nodeclass(**spec: Any) -> AKSNodeClass:
    return AKSNodeClass.from_dict({"metadata": {"name": "default"}, "spec": spec})


def instance_type(
    name: str = "Standard_D2s_v3",
    arch: str = "amd64",
    gens: tuple[str, ...] = ("1", "2"),
    gpu: str | None = None,
    ephemeral_max: int | None = None,
) -> InstanceType:
    reqs = [
        Requirement.new("node.kubernetes.io/instance-type", IN, [name]),
        Requirement.new("kubernetes.io/arch", IN, [arch]),
        Requirement.new("kubernetes.io/os", IN, ["linux"]),
        Requirement.new("karpenter.azure.com/sku-hyperv-generation", IN, list(gens)),
        Requirement.new("karpenter.sh/capacity-type", IN, ["on-demand", "spot"]),
        Requirement.new("topology.kubernetes.io/zone", IN, ["westus2-1", "westus2-2"]),
    ]
    if gpu:
        reqs.append(Requirement.new("karpenter.azure.com/sku-gpu-manufacturer", IN, [gpu]))
    if ephemeral_max is not None:
        reqs.append(
            Requirement.new(
                "karpenter.azure.com/sku-storage-ephemeralos-maxsize", IN, [str(ephemeral_max)]
            )
        )
    return InstanceType(
        name=name,
        requirements=Requirements(*reqs),
        capacity={"cpu": 2000, "memory": 8192 * MIB_MILLI},
        overhead=InstanceTypeOverhead(
            kube_reserved={"cpu": 100, "memory": 1638 * MIB_MILLI},
            system_reserved={"cpu": 0},
            eviction_threshold={"memory": 750 * MIB_MILLI},
        ),
    )


def nodeclaim(
    labels: Mapping[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    startup_taints: list[dict[str, str]] | None = None,
    requirements: list[dict[str, Any]] | None = None,
) -> NodeClaim:
    return NodeClaim.from_dict(
        {
            "metadata": {
                "name": "default-abcde",
                "labels": dict(labels if labels is not None else {"karpenter.sh/nodepool": "np"}),
            },
            "spec": {
                "taints": taints or [],
                "startupTaints": startup_taints or [],
                "requirements": requirements or [],
            },
        }
    )


def make(**overrides: Any) -> LaunchTemplate:
    args: dict[str, Any] = {
        "nodeclass": nodeclass(),
        "nodeclaim": nodeclaim(),
        "instance_type": instance_type(),
        "zone": "westus2-1",
        "capacity_type": "on-demand",
        "cluster_name": "my-cluster",
        "cluster_endpoint": "https://my-cluster-dns.hcp.westus2.azmk8s.io:443",
        "ca_bundle": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
        "bootstrap_token": "abcdef.0123456789abcdef",
        "kubernetes_version": "1.31.3",
        "subnet_id": SUBNET,
        "node_resource_group": "MC_rg_my-cluster_westus2",
        "kubelet_identity_client_id": "61f71907-753f-4802-a901-47361c3664f2",
        "network_security_group_name": "aks-agentpool-12345678-nsg",
        "subscription_id": "sub-1",
        "tenant_id": "tenant-1",
        "location": "westus2",
    }
    args.update(overrides)
    return build(**args)


def script_vars(lt: LaunchTemplate) -> dict[str, str]:
    return parse_script_variables(base64.b64decode(lt.custom_data).decode("utf-8"))


def kubelet_flags(lt: LaunchTemplate) -> dict[str, str]:
    return dict(f.split("=", 1) for f in script_vars(lt)["KUBELET_FLAGS"].split(" "))


# --- tags ---------------------------------------------------------------------------------


def test_default_tags() -> None:
    assert tags(cluster_name="c", nodeclaim_labels={"karpenter.sh/nodepool": "np"}) == {
        KARPENTER_MANAGED_TAG_KEY: "c",
        BILLING_TAG_KEY: "linux",
        NODEPOOL_TAG_KEY: "np",
    }
    assert (KARPENTER_MANAGED_TAG_KEY, NODEPOOL_TAG_KEY) == (
        "karpenter.azure.com_cluster",
        "karpenter.sh_nodepool",
    )
    # no NodePool label (a NodeClaim made by hand): no NodePool tag
    assert NODEPOOL_TAG_KEY not in tags(cluster_name="c", nodeclaim_labels={})


def test_tag_precedence_and_key_sanitising() -> None:
    got = tags(
        cluster_name="c",
        nodeclaim_labels={"karpenter.sh/nodepool": "np"},
        nodeclass_tags={
            "team/owner": "nodeclass",
            "env": "nodeclass",
            "karpenter.azure.com/cluster": "x",
        },
        additional_tags={"env": "additional", "cost-center": "42", "karpenter.sh/nodepool": "y"},
    )
    assert got == {
        "team_owner": "nodeclass",
        "env": "nodeclass",  # the NodeClass wins over the additional-tags setting
        "cost-center": "42",
        KARPENTER_MANAGED_TAG_KEY: "c",  # Karpenter's own tags win over both, after sanitising
        BILLING_TAG_KEY: "linux",
        NODEPOOL_TAG_KEY: "np",
    }
    assert sanitize_tag_key("a/b/c") == "a_b_c"


def test_template_tags_come_from_nodeclass_and_settings() -> None:
    lt = make(
        nodeclass=nodeclass(tags={"app.io/team": "blue"}),
        additional_tags={"extra": "1"},
    )
    assert lt.tags == {
        "app.io_team": "blue",
        "extra": "1",
        KARPENTER_MANAGED_TAG_KEY: "my-cluster",
        BILLING_TAG_KEY: "linux",
        NODEPOOL_TAG_KEY: "np",
    }


# --- images -------------------------------------------------------------------------------


def _definition(image_id: str) -> str:
    return image_id.split("/images/")[1].split("/")[0]


@pytest.mark.parametrize(
    ("spec", "version", "it", "gallery", "definition", "family"),
    [
        ({}, "1.31.3", instance_type(), UBUNTU_GALLERY, "2204gen2containerd", "Ubuntu2204"),
        ({}, "1.31.3", instance_type(gens=("1",)), UBUNTU_GALLERY, "2204containerd", "Ubuntu2204"),
        (
            {},
            "1.31.3",
            instance_type("Standard_D2ps_v5", arch="arm64", gens=("2",)),
            UBUNTU_GALLERY,
            "2204gen2arm64containerd",
            "Ubuntu2204",
        ),
        ({}, "1.34.0", instance_type(), UBUNTU_GALLERY, "2404gen2containerd", "Ubuntu2404"),
        (
            {"imageFamily": "Ubuntu2404"},
            "1.31.3",
            instance_type(gens=("1",)),
            UBUNTU_GALLERY,
            "2404containerd",
            "Ubuntu2404",
        ),
        (
            {"imageFamily": "AzureLinux"},
            "1.31.3",
            instance_type(),
            AZURE_LINUX_GALLERY,
            "V2gen2",
            "AzureLinux2",
        ),
        (
            {"imageFamily": "AzureLinux"},
            "1.32.0",
            instance_type("Standard_D2ps_v5", arch="arm64", gens=("2",)),
            AZURE_LINUX_GALLERY,
            "V3gen2arm64",
            "AzureLinux3",
        ),
        (
            {"security": {"trustedLaunch": {"vtpm": True}}},
            "1.34.0",
            instance_type(),
            UBUNTU_GALLERY,
            "2204gen2TLcontainerd",
            "Ubuntu2204",
        ),
    ],
)
def test_image_by_family_version_architecture_and_generation(
    spec: dict[str, Any], version: str, it: InstanceType, gallery: str, definition: str, family: str
) -> None:
    lt = make(nodeclass=nodeclass(**spec), instance_type=it, kubernetes_version=version)
    assert lt.image_id == (f"/CommunityGalleries/{gallery}/images/{definition}/versions/latest")
    assert lt.image_family == family
    assert lt.labels["kubernetes.azure.com/os-sku-effective"] == family
    assert lt.is_image_community_gallery


def test_no_image_for_an_unsupported_instance_type() -> None:
    # Trusted Launch images are gen2 amd64 only
    with pytest.raises(LaunchTemplateError, match=r"no compatible images .* Standard_A1"):
        make(
            nodeclass=nodeclass(security={"trustedLaunch": {"secureBoot": True}}),
            instance_type=instance_type("Standard_A1", gens=("1",)),
        )


def test_fips_has_no_community_gallery_image() -> None:
    fips = nodeclass(
        fipsMode="FIPS", imageFamily="Ubuntu2204", security={"trustedLaunch": {"vtpm": True}}
    )
    with pytest.raises(LaunchTemplateError, match="no compatible images"):
        make(nodeclass=fips)
    # the FIPS label is still what upstream computes when an image is supplied
    lt = make(nodeclass=fips, image_id="/subscriptions/s/images/fips")
    assert lt.labels["kubernetes.azure.com/fips_enabled"] == "true"
    assert not lt.is_image_community_gallery


def test_status_images_are_used_in_order_and_explicit_id_wins() -> None:
    images = [
        {
            "id": "/CommunityGalleries/g/images/arm/versions/1.2.3",
            "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}],
        },
        {
            "id": "/CommunityGalleries/g/images/gen2/versions/1.2.3",
            "requirements": [
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                {
                    "key": "karpenter.azure.com/sku-hyperv-generation",
                    "operator": "In",
                    "values": ["2"],
                },
            ],
        },
    ]
    assert _definition(make(images=images).image_id) == "gen2"
    assert select_image(images, instance_type("Standard_D2ps_v5", arch="arm64")).endswith(
        "/arm/versions/1.2.3"
    )
    assert make(images=images, image_id="/x/y").image_id == "/x/y"
    assert _definition(make(node_image_version="202501.01.0").image_id) == "2204gen2containerd"
    assert make(node_image_version="202501.01.0").image_id.endswith("/versions/202501.01.0")


# --- labels -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "allowed"),
    [
        ("karpenter.sh/nodepool", True),
        ("team", True),
        ("kubernetes.azure.com/mode", True),
        ("kubernetes.io/arch", True),
        ("topology.kubernetes.io/zone", True),
        ("node.kubernetes.io/instance-type", True),
        ("beta.kubernetes.io/arch", True),
        ("node.kubernetes.io/custom", True),
        ("kubelet.kubernetes.io/custom", True),
        ("foo.node.kubernetes.io/custom", True),
        ("node-role.kubernetes.io/worker", False),
        ("kubernetes.io/custom", False),
        ("example.k8s.io/custom", False),
    ],
)
def test_labels_kubelet_may_set(key: str, allowed: bool) -> None:
    assert can_kubelet_set_label(key) is allowed


def test_node_labels() -> None:
    claim = nodeclaim(
        labels={"karpenter.sh/nodepool": "np", "team": "a", "node-role.kubernetes.io/x": ""},
        requirements=[
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["westus2-1"]},
            {"key": "example.com/tier", "operator": "In", "values": ["gold"]},
            {"key": "example.com/multi", "operator": "In", "values": ["a", "b"]},
        ],
    )
    lt = make(nodeclaim=claim, capacity_type="spot")
    labels = lt.labels
    assert labels["kubernetes.azure.com/role"] == "agent"
    assert labels["kubernetes.azure.com/mode"] == "user"
    assert labels["kubernetes.azure.com/cluster"] == "MC_rg_my-cluster_westus2"
    assert labels["kubernetes.azure.com/kubelet-identity-client-id"] == (
        "61f71907-753f-4802-a901-47361c3664f2"
    )
    assert labels["karpenter.sh/do-not-sync-taints"] == "true"
    assert labels["kubernetes.azure.com/os-sku"] == "Ubuntu"
    assert labels["kubernetes.azure.com/os-sku-requested"] == "Ubuntu"
    assert labels["team"] == "a" and labels["karpenter.sh/nodepool"] == "np"
    assert labels["example.com/tier"] == "gold"  # single-valued NodeClaim requirement
    assert "example.com/multi" not in labels
    assert labels["topology.kubernetes.io/zone"] == "westus2-1"
    assert labels["node.kubernetes.io/instance-type"] == "Standard_D2s_v3"
    assert labels["kubernetes.io/arch"] == "amd64"
    assert labels["karpenter.sh/capacity-type"] == "spot"
    assert labels["karpenter.azure.com/placement-scope"] == "zonal"
    assert labels["karpenter.azure.com/sku-storage-ultra-ssd"] == "false"
    assert "node-role.kubernetes.io/x" not in labels
    assert "kubernetes.azure.com/fips_enabled" not in labels
    assert labels["kubernetes.azure.com/localdns-state"] == "disabled"
    # the customData registers exactly these labels
    expected = ",".join(f"{k}={labels[k]}" for k in sorted(labels))
    assert script_vars(lt)["KUBELET_NODE_LABELS"] == expected


def test_azure_linux_os_sku_labels() -> None:
    lt = make(nodeclass=nodeclass(imageFamily="AzureLinux"), kubernetes_version="1.32.1")
    assert lt.labels["kubernetes.azure.com/os-sku"] == "AzureLinux"
    assert lt.labels["kubernetes.azure.com/os-sku-requested"] == "AzureLinux"
    assert lt.labels["kubernetes.azure.com/os-sku-effective"] == "AzureLinux3"


@pytest.mark.parametrize(
    ("network", "overlay", "ebpf", "agentbaker_plugin"),
    [
        (NetworkSettings(), True, True, "none"),
        (NetworkSettings(dataplane=""), True, False, "none"),
        (NetworkSettings(plugin_mode="", dataplane="cilium"), False, True, "none"),
        (NetworkSettings(plugin_mode="", dataplane="azure"), False, False, "azure"),
        (NetworkSettings(plugin="none", plugin_mode="", dataplane=""), False, False, "none"),
    ],
)
def test_network_labels_and_plugin(
    network: NetworkSettings, overlay: bool, ebpf: bool, agentbaker_plugin: str
) -> None:
    lt = make(
        network_plugin=network.plugin,
        network_plugin_mode=network.plugin_mode,
        network_dataplane=network.dataplane,
        vnet_guid="vnet-guid-1",
        kubernetes_version="1.34.2",
    )
    assert ("kubernetes.azure.com/azure-cni-overlay" in lt.labels) is overlay
    if overlay:
        assert lt.labels["kubernetes.azure.com/network-subnet"] == "aks-subnet"
        assert lt.labels["kubernetes.azure.com/nodenetwork-vnetguid"] == "vnet-guid-1"
        assert lt.labels["kubernetes.azure.com/podnetwork-type"] == "overlay"
        assert lt.labels["kubernetes.azure.com/network-stateless-cni"] == "true"
    assert (lt.labels.get("kubernetes.azure.com/ebpf-dataplane") == "cilium") is ebpf
    assert script_vars(lt)["NETWORK_PLUGIN"] == agentbaker_plugin


def test_overlay_stateless_cni_before_1_34_and_bad_subnet() -> None:
    assert make().labels["kubernetes.azure.com/network-stateless-cni"] == "false"
    with pytest.raises(LaunchTemplateError, match="subnet"):
        make(subnet_id="not-a-subnet")


def test_artifact_streaming_label_is_amd64_only_and_local_dns() -> None:
    nc = nodeclass(artifactStreaming={"enabled": True})
    assert make(nodeclass=nc).labels["kubernetes.azure.com/artifactstreaming-enabled"] == "true"
    arm = make(nodeclass=nc, instance_type=instance_type("Standard_D2ps_v5", arch="arm64"))
    assert "kubernetes.azure.com/artifactstreaming-enabled" not in arm.labels
    assert arm.arch == "arm64"
    assert make(local_dns_enabled=True).labels["kubernetes.azure.com/localdns-state"] == "enabled"


def test_cluster_label_normalisation() -> None:
    assert normalize_cluster_resource_group_for_label("MC_rg(1)_c") == "MC_rg-1-_c"
    assert normalize_cluster_resource_group_for_label("rg(") == "rg-z"
    long = "a" * 70
    assert normalize_cluster_resource_group_for_label(long) == "a" * 63
    assert normalize_cluster_resource_group_for_label("a" * 62 + "-x") == "a" * 62 + "z"


# --- taints -------------------------------------------------------------------------------


def test_taints_include_startup_and_unregistered() -> None:
    lt = make(
        nodeclaim=nodeclaim(
            taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
            startup_taints=[{"key": "example.com/init", "effect": "NoSchedule"}],
        )
    )
    assert [str(t) for t in lt.taints] == [
        "dedicated=gpu:NoSchedule",
        "example.com/init:NoSchedule",
        "karpenter.sh/unregistered:NoExecute",
    ]
    assert kubelet_flags(lt)["--register-with-taints"] == (
        "dedicated=gpu:NoSchedule,example.com/init:NoSchedule,karpenter.sh/unregistered:NoExecute"
    )


def test_unregistered_taint_is_not_duplicated() -> None:
    lt = make(
        nodeclaim=nodeclaim(
            startup_taints=[{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}]
        )
    )
    assert [str(t) for t in lt.taints] == ["karpenter.sh/unregistered:NoExecute"]


# --- kubelet ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("network", "expected"),
    [
        (NetworkSettings(), 250),
        (NetworkSettings(plugin="none", plugin_mode=""), 250),
        (NetworkSettings(plugin_mode=""), 30),
        (NetworkSettings(plugin="kubenet", plugin_mode=""), 110),
    ],
)
def test_default_max_pods(network: NetworkSettings, expected: int) -> None:
    assert default_max_pods(nodeclass(), network) == expected
    assert default_max_pods(nodeclass(maxPods=42), network) == 42


def test_kubelet_flags_from_instance_type_and_nodeclass() -> None:
    lt = make(
        nodeclass=nodeclass(
            maxPods=60,
            kubelet={"cpuManagerPolicy": "static", "imageGCHighThresholdPercent": 90},
        ),
        dns_service_ip="10.0.0.99",
    )
    flags = kubelet_flags(lt)
    assert lt.max_pods == 60
    assert flags["--max-pods"] == "60"
    assert flags["--cluster-dns"] == "10.0.0.99"
    assert flags["--kube-reserved"] == "cpu=100m,memory=1638Mi"
    assert flags["--system-reserved"] == "cpu=0"
    assert flags["--eviction-hard"] == "memory.available<750Mi"
    assert flags["--cpu-manager-policy"] == "static"
    assert flags["--image-gc-high-threshold"] == "90"
    # CRD defaults of the kubelet block travel too
    assert flags["--container-log-max-size"] == "50Mi"
    assert flags["--cpu-cfs-quota"] == "true"


# --- disk ---------------------------------------------------------------------------------


def caps(**values: Any) -> dict[str, str]:
    return {k: str(v) for k, v in values.items()}


@pytest.mark.parametrize(
    ("capabilities", "size", "placement"),
    [
        # Standard_B20ms: cache disk
        (
            caps(
                EphemeralOSDiskSupported="True",
                CachedDiskBytes=32212254720,
                MaxResourceVolumeMB=163840,
            ),
            32,
            "CacheDisk",
        ),
        # Standard_D128ds_v6: NVMe, which the SKU supports as a placement
        (
            caps(
                EphemeralOSDiskSupported="True",
                NvmeDiskSizeInMiB=7208960,
                SupportedEphemeralOSDiskPlacements="ResourceDisk,NvmeDisk",
            ),
            7559,
            "NvmeDisk",
        ),
        # Standard_NC24ads_A100_v4: an NVMe disk but no NVMe placement, so the cache disk
        (
            caps(
                EphemeralOSDiskSupported="True",
                NvmeDiskSizeInMiB=915527,
                SupportedEphemeralOSDiskPlacements="ResourceDisk,CacheDisk",
                CachedDiskBytes=274877906944,
                MaxResourceVolumeMB=65536,
            ),
            274,
            "CacheDisk",
        ),
        # resource disk only (MaxResourceVolumeMB is MiB)
        (caps(EphemeralOSDiskSupported="True", MaxResourceVolumeMB=76800), 80, "ResourceDisk"),
        # Standard_A0: no ephemeral OS disk support at all
        (caps(EphemeralOSDiskSupported="False", MaxResourceVolumeMB=20480), 0, None),
        ({}, 0, None),
        (None, 0, None),
    ],
)
def test_max_ephemeral_os_disk(
    capabilities: dict[str, str] | None, size: int, placement: str | None
) -> None:
    assert ephemeral_os_disk_max(capabilities) == (size, placement)


def test_ephemeral_disk_when_the_os_disk_fits() -> None:
    nvme = caps(
        EphemeralOSDiskSupported="True",
        NvmeDiskSizeInMiB=7208960,
        SupportedEphemeralOSDiskPlacements="NvmeDisk",
    )
    lt = make(sku_capabilities=nvme)
    assert lt.ephemeral_os_disk and lt.ephemeral_os_disk_placement == "NvmeDisk"
    assert lt.storage_profile_disk_type == STORAGE_PROFILE_EPHEMERAL
    assert lt.os_disk_size_gb == 128

    small = caps(EphemeralOSDiskSupported="True", CachedDiskBytes=32212254720)
    lt = make(sku_capabilities=small)  # 128 GB (the default) does not fit in 32 GB
    assert not lt.ephemeral_os_disk and lt.ephemeral_os_disk_placement is None
    assert lt.storage_profile_disk_type == STORAGE_PROFILE_MANAGED_DISKS
    lt = make(sku_capabilities=small, nodeclass=nodeclass(osDiskSizeGB=30))
    assert lt.ephemeral_os_disk and lt.ephemeral_os_disk_placement == "CacheDisk"
    assert lt.os_disk_size_gb == 30


def test_ephemeral_disk_from_the_instance_type_label_without_capabilities() -> None:
    lt = make(instance_type=instance_type(ephemeral_max=200))
    assert lt.ephemeral_os_disk and lt.ephemeral_os_disk_placement is None
    assert not make(instance_type=instance_type(ephemeral_max=100)).ephemeral_os_disk
    assert not make().ephemeral_os_disk


# --- the rest -----------------------------------------------------------------------------


def test_subnet_of_the_nodeclass_wins() -> None:
    assert make().subnet_id == SUBNET
    lt = make(nodeclass=nodeclass(vnetSubnetID=OTHER_SUBNET))
    assert lt.subnet_id == OTHER_SUBNET
    assert lt.labels["kubernetes.azure.com/network-subnet"] == "nodeclass-subnet"
    assert script_vars(lt)["SUBNET"] == "nodeclass-subnet"


def test_zones_and_placement_scope() -> None:
    assert arm_zones("westus2-3") == ["3"]
    assert arm_zones("0") == [] and arm_zones("") == []
    lt = make(zone="westus2-2")
    assert (lt.zones, lt.placement_scope) == (("2",), "zonal")
    lt = make(zone="0")
    assert (lt.zones, lt.placement_scope) == ((), "regional")
    assert make(placement_scope="regional").labels["karpenter.azure.com/placement-scope"] == (
        "regional"
    )


def test_cluster_facts_in_custom_data() -> None:
    lt = make()
    v = script_vars(lt)
    assert v["API_SERVER_NAME"] == "my-cluster-dns.hcp.westus2.azmk8s.io"
    assert v["ROUTE_TABLE"] == "aks-agentpool-12345678-routetable"
    assert v["NETWORK_SECURITY_GROUP"] == "aks-agentpool-12345678-nsg"
    assert base64.b64decode(v["KUBE_CA_CRT"]).decode().startswith("-----BEGIN CERTIFICATE-----")
    assert v["TLS_BOOTSTRAP_TOKEN"] == "abcdef.0123456789abcdef"
    assert v["KUBERNETES_VERSION"] == lt.kubernetes_version == "1.31.3"
    assert v["USER_ASSIGNED_IDENTITY_ID"] == "61f71907-753f-4802-a901-47361c3664f2"
    assert lt.provision_mode == "aksscriptless"
    assert route_table_name("my-nsg") == "aks-agentpool--routetable"
    assert api_server_name("https://Host.Example:6443/") == "host.example"


def test_gpu_instance_type_installs_nvidia_driver_unless_disabled() -> None:
    gpu = instance_type("Standard_NC6s_v3", gpu="nvidia")
    lt = make(instance_type=gpu)
    v = script_vars(lt)
    assert lt.gpu_node and v["GPU_NODE"] == "true" and v["GPU_DRIVER_TYPE"] == "cuda-lts"
    off = script_vars(make(instance_type=gpu, nodeclass=nodeclass(gpu={"mode": "None"})))
    assert off["GPU_NODE"] == "false" and off["GPU_DRIVER_TYPE"] == ""
    assert script_vars(make())["GPU_NODE"] == "false"


def test_bad_kubernetes_version_is_a_launch_template_error() -> None:
    with pytest.raises(LaunchTemplateError, match="kubernetes version"):
        make(kubernetes_version="latest")
