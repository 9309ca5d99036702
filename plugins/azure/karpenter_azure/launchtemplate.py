"""What one new Azure VM is launched with, in upstream's default provision mode
``aksscriptless`` (upstream ``pkg/providers/launchtemplate`` and the image-family
resolver of ``pkg/providers/imagefamily``).

Azure has no launch-template resource: upstream's ``Template`` is a value the VM
creation reads, and so is :class:`LaunchTemplate` here. :func:`build` makes it from the
AKSNodeClass, the NodeClaim, the chosen instance type, zone and capacity type, and the
cluster settings. It is pure (no Azure call): the caller passes what upstream reads from
Azure or the API server (the NodeClass's resolved images and Kubernetes version, the
managed NSG's name, the local-DNS state).

What it decides, as upstream does:

* **image**: the first of the NodeClass's images (``status.images``, else the
  image-family defaults of :mod:`karpenter_azure.images` for the Kubernetes version)
  whose requirements (architecture, Hyper-V generation) the instance type meets; the
  family (Ubuntu 22.04/24.04, Azure Linux 2/3) follows ``imageFamily``, FIPS, Trusted
  Launch and the Kubernetes version;
* **node labels** kubelet registers with: AKS's own (``kubernetes.azure.com/role``,
  ``cluster``, ``mode``, ``os-sku*``, ``kubelet-identity-client-id``, the network
  labels for Azure CNI overlay and Cilium, local DNS, artifact streaming, FIPS), then
  the NodeClaim's labels, its single-valued requirements and the instance type's,
  capacity type, placement scope and ultra SSD; minus labels kubelet may not set
  (``*.kubernetes.io`` / ``*.k8s.io`` outside the kubelet and node namespaces);
* **taints**: the NodeClaim's taints and startup taints, plus
  ``karpenter.sh/unregistered:NoExecute`` when missing;
* **kubelet configuration**: max pods (the NodeClass's, else 250 for overlay or network
  plugin none, 30 for Azure CNI node subnet, 110 otherwise), cluster DNS, the instance
  type's reserved resources and memory eviction threshold, the NodeClass ``kubelet``;
* **OS disk**: ``osDiskSizeGB``, ephemeral (``Local`` diff disk) when the SKU's largest
  ephemeral placement (NVMe disk if the SKU supports that placement, else cache disk,
  else resource disk) holds it, else a managed disk;
* **tags** (:func:`tags`): ``karpenter.azure.com_cluster``, ``compute.aks.billing``,
  ``karpenter.sh_nodepool``, over the NodeClass's tags, over the additional-tags
  setting; ``/`` in keys becomes ``_`` (Azure tag keys cannot hold it);
* **customData**: :mod:`karpenter_azure.bootstrap` renders it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from attrs import field, frozen

from karpenter_azure import images as image_table
from karpenter_azure.bootstrap import (
    ARCH_AMD64,
    ARCH_ARM64,
    AKSBootstrap,
    KubeletConfiguration,
    TaintLike,
    ca_bundle_base64,
    gpu_driver_type,
    gpu_driver_version,
    gpu_image_sha,
    parse_kubernetes_version,
    parse_subnet_id,
)
from karpenter_azure.labels import (
    AKS_LABEL_CLUSTER,
    AKS_LABEL_DOMAIN,
    AKS_LABEL_FIPS_ENABLED,
    AKS_LABEL_MODE,
    AKS_LABEL_OS_SKU,
    AKS_LABEL_PRIORITY,
    AKS_LABEL_SCALE_SET_PRIORITY,
    LABEL_PLACEMENT_SCOPE,
    LABEL_SKU_GPU_MANUFACTURER,
    LABEL_SKU_HYPERV_GENERATION,
    LABEL_SKU_STORAGE_EPHEMERAL_OS_MAX_SIZE,
    LABEL_SKU_STORAGE_ULTRA_SSD,
    WELL_KNOWN_LABELS,
)
from karpenter_azure.nodeclass import AKSNodeClass
from karpenter_core.plugin_api import (
    IN,
    InstanceType,
    NodeClaim,
    Requirement,
    Requirements,
    resources,
)
from karpenter_core.plugin_api import labels as core_labels

__all__ = [
    "AKS_MACHINE_NODECLAIM_TAG_KEY",
    "BILLING_TAG_KEY",
    "BILLING_TAG_VALUE_LINUX",
    "KARPENTER_MANAGED_TAG_KEY",
    "NODEPOOL_TAG_KEY",
    "PROVISION_MODE_AKS_SCRIPTLESS",
    "STORAGE_PROFILE_EPHEMERAL",
    "STORAGE_PROFILE_MANAGED_DISKS",
    "LaunchTemplate",
    "LaunchTemplateError",
    "NetworkSettings",
    "NodeTaint",
    "api_server_name",
    "arch_of",
    "arm_zones",
    "base_labels",
    "build",
    "can_kubelet_set_label",
    "default_max_pods",
    "ephemeral_os_disk_max",
    "kubelet_configuration",
    "node_taints",
    "normalize_cluster_resource_group_for_label",
    "os_sku",
    "route_table_name",
    "sanitize_tag_key",
    "select_image",
    "tags",
]

PROVISION_MODE_AKS_SCRIPTLESS = "aksscriptless"

KARPENTER_MANAGED_TAG_KEY = "karpenter.azure.com_cluster"
"""Every resource Karpenter creates carries it (value: the cluster name); GC and list
filter on it."""
AKS_MACHINE_NODECLAIM_TAG_KEY = "karpenter.azure.com_aksmachine_nodeclaim"
BILLING_TAG_KEY = "compute.aks.billing"
BILLING_TAG_VALUE_LINUX = "linux"
NODEPOOL_TAG_KEY = core_labels.NODEPOOL_LABEL_KEY.replace("/", "_")
"""``karpenter.sh_nodepool``: the NodePool of the NodeClaim the VM was made for."""

STORAGE_PROFILE_EPHEMERAL = "Ephemeral"
STORAGE_PROFILE_MANAGED_DISKS = "ManagedDisks"

NETWORK_PLUGIN_AZURE = "azure"
NETWORK_PLUGIN_NONE = "none"
NETWORK_PLUGIN_MODE_OVERLAY = "overlay"
NETWORK_DATAPLANE_CILIUM = "cilium"

REGIONAL_ZONE = "0"
PLACEMENT_SCOPE_ZONAL = "zonal"
PLACEMENT_SCOPE_REGIONAL = "regional"

AKS_LABEL_ROLE = f"{AKS_LABEL_DOMAIN}/role"
AKS_LABEL_KUBELET_IDENTITY_CLIENT_ID = f"{AKS_LABEL_DOMAIN}/kubelet-identity-client-id"
AKS_LABEL_OS_SKU_EFFECTIVE = f"{AKS_LABEL_DOMAIN}/os-sku-effective"
AKS_LABEL_OS_SKU_REQUESTED = f"{AKS_LABEL_DOMAIN}/os-sku-requested"
AKS_LABEL_EBPF_DATAPLANE = f"{AKS_LABEL_DOMAIN}/ebpf-dataplane"
AKS_LABEL_AZURE_CNI_OVERLAY = f"{AKS_LABEL_DOMAIN}/azure-cni-overlay"
AKS_LABEL_SUBNET_NAME = f"{AKS_LABEL_DOMAIN}/network-subnet"
AKS_LABEL_VNET_GUID = f"{AKS_LABEL_DOMAIN}/nodenetwork-vnetguid"
AKS_LABEL_POD_NETWORK_TYPE = f"{AKS_LABEL_DOMAIN}/podnetwork-type"
AKS_LABEL_NETWORK_STATELESS_CNI = f"{AKS_LABEL_DOMAIN}/network-stateless-cni"
AKS_LABEL_LOCAL_DNS_STATE = f"{AKS_LABEL_DOMAIN}/localdns-state"
AKS_LABEL_ARTIFACT_STREAMING = f"{AKS_LABEL_DOMAIN}/artifactstreaming-enabled"

_GIB_DECIMAL = 1000**3
_MIB = 1024**2


class LaunchTemplateError(ValueError):
    """The launch cannot be described: no image fits the instance type, a setting is
    malformed (Kubernetes version, subnet id for overlay labels)."""


# --- tags ---------------------------------------------------------------------------------


def sanitize_tag_key(key: str) -> str:
    """Azure tag keys cannot contain ``/``; upstream writes ``_`` instead, so label-like
    keys (``karpenter.sh/nodepool``) become ``karpenter.sh_nodepool``."""
    return key.replace("/", "_")


def _sanitized(tags: Mapping[str, str] | None) -> dict[str, str]:
    # sorted, so two keys that sanitise alike resolve the same way every time (upstream's
    # map iteration leaves that to chance)
    tags = tags or {}
    return {sanitize_tag_key(k): str(tags[k]) for k in sorted(tags)}


def tags(
    *,
    cluster_name: str,
    nodeclass_tags: Mapping[str, str] | None = None,
    nodeclaim_labels: Mapping[str, str] | None = None,
    additional_tags: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The tags of every resource of a launch (VM, NIC, disk), upstream's ``Tags``.

    Karpenter's own tags (cluster, billing, the NodePool from the NodeClaim's labels) win
    over the NodeClass's ``tags``, which win over the additional-tags setting; keys are
    sanitised first, so ``karpenter.azure.com/cluster`` collides with (and loses to)
    ``karpenter.azure.com_cluster``.
    """
    own = {KARPENTER_MANAGED_TAG_KEY: cluster_name, BILLING_TAG_KEY: BILLING_TAG_VALUE_LINUX}
    nodepool = (nodeclaim_labels or {}).get(core_labels.NODEPOOL_LABEL_KEY)
    if nodepool is not None:
        own[NODEPOOL_TAG_KEY] = nodepool
    out = _sanitized(additional_tags)
    out.update(_sanitized(nodeclass_tags))
    out.update(_sanitized(own))
    return out


# --- labels -------------------------------------------------------------------------------

_KUBELET_LABELS = frozenset(
    {
        core_labels.LABEL_HOSTNAME,
        core_labels.LABEL_TOPOLOGY_ZONE,
        core_labels.LABEL_TOPOLOGY_REGION,
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "beta.kubernetes.io/instance-type",
        core_labels.LABEL_INSTANCE_TYPE,
        core_labels.LABEL_OS,
        core_labels.LABEL_ARCH,
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
    }
)
_KUBELET_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")
_K8S_DOMAINS = ("kubernetes.io", "k8s.io")


def _in_domain(namespace: str, domain: str) -> bool:
    return namespace == domain or namespace.endswith("." + domain)


def can_kubelet_set_label(key: str) -> bool:
    """Whether kubelet may register with ``key`` (the NodeRestriction rule): labels outside
    ``kubernetes.io``/``k8s.io``, the kubelet's own well-known labels, and the
    ``kubelet.kubernetes.io``/``node.kubernetes.io`` namespaces."""
    if key in _KUBELET_LABELS:
        return True
    namespace = key.split("/", 1)[0] if "/" in key else ""
    if not any(_in_domain(namespace, d) for d in _K8S_DOMAINS):
        return True
    return any(_in_domain(namespace, ns) for ns in _KUBELET_NAMESPACES)


def normalize_cluster_resource_group_for_label(resource_group: str) -> str:
    """The node resource group as a label value: parentheses become ``-``, at most 63
    characters, and a trailing ``-``/``_``/``.`` gets a ``z`` so the value ends
    alphanumerically."""
    value = resource_group.replace("(", "-").replace(")", "-")[:63]
    if value.endswith(("-", "_", ".")):
        return value[:-1] + "z" if len(value) > 62 else value + "z"
    return value


def os_sku(image_family: str) -> str:
    """``kubernetes.azure.com/os-sku`` for a NodeClass ``imageFamily``."""
    family = image_family or "Ubuntu"
    if family in ("Ubuntu", "Ubuntu2204", "Ubuntu2404"):
        return "Ubuntu"
    if family == "AzureLinux":
        return "AzureLinux"
    return family


@frozen
class NetworkSettings:
    """The cluster's network settings (upstream options ``network-plugin``,
    ``network-plugin-mode``, ``network-policy``, ``network-dataplane``), defaults as
    upstream's."""

    plugin: str = NETWORK_PLUGIN_AZURE
    plugin_mode: str = NETWORK_PLUGIN_MODE_OVERLAY
    policy: str = ""
    dataplane: str = NETWORK_DATAPLANE_CILIUM

    @property
    def azure_cni_overlay(self) -> bool:
        return (
            self.plugin == NETWORK_PLUGIN_AZURE and self.plugin_mode == NETWORK_PLUGIN_MODE_OVERLAY
        )

    @property
    def cilium_node_subnet(self) -> bool:
        return (
            self.plugin == NETWORK_PLUGIN_AZURE
            and self.plugin_mode == ""
            and self.dataplane == NETWORK_DATAPLANE_CILIUM
        )

    @property
    def plugin_none(self) -> bool:
        return self.plugin == NETWORK_PLUGIN_NONE

    def agentbaker_plugin(self) -> str:
        """``NETWORK_PLUGIN`` for the node: ``none`` when pods do not take IPs from the
        node's subnet through Azure CNI (overlay, Cilium node subnet, BYO CNI), else
        ``azure``."""
        if self.azure_cni_overlay or self.cilium_node_subnet or self.plugin_none:
            return NETWORK_PLUGIN_NONE
        return NETWORK_PLUGIN_AZURE


def default_max_pods(nodeclass: AKSNodeClass, network: NetworkSettings) -> int:
    """The NodeClass's ``maxPods``, else AKS's default for the network: 250 for network
    plugin none and for overlay, 30 for Azure CNI node subnet, 110 otherwise."""
    if nodeclass.max_pods is not None:
        return nodeclass.max_pods
    if network.plugin == NETWORK_PLUGIN_NONE:
        return 250
    if (
        network.plugin == NETWORK_PLUGIN_AZURE
        and network.plugin_mode == NETWORK_PLUGIN_MODE_OVERLAY
    ):
        return 250
    if network.plugin == NETWORK_PLUGIN_AZURE and network.plugin_mode == "":
        return 30
    return 110


def base_labels(
    nodeclass: AKSNodeClass,
    *,
    kubernetes_version: str,
    arch: str,
    node_resource_group: str,
    kubelet_identity_client_id: str = "",
    network: NetworkSettings | None = None,
    subnet_id: str = "",
    vnet_guid: str = "",
    local_dns_enabled: bool = False,
) -> dict[str, str]:
    """The labels every node of this NodeClass registers with (upstream ``labels.Get``).

    ``subnet_id`` is the subnet the node's NIC uses (the NodeClass's ``vnetSubnetID`` or
    the default setting); with Azure CNI overlay it must parse as an ARM subnet id.
    """
    network = network or NetworkSettings()
    spec_family = nodeclass.image_family
    out = {
        AKS_LABEL_ROLE: "agent",
        AKS_LABEL_CLUSTER: normalize_cluster_resource_group_for_label(node_resource_group),
        AKS_LABEL_KUBELET_IDENTITY_CLIENT_ID: kubelet_identity_client_id,
        AKS_LABEL_MODE: "user",
        # upstream: stops the core syncing NodeClaim taints onto the Node, which would race
        # startup taints (kubernetes-sigs/karpenter#1772)
        core_labels.NODE_DO_NOT_SYNC_TAINTS_LABEL_KEY: "true",
        AKS_LABEL_SCALE_SET_PRIORITY: "regular",
        AKS_LABEL_PRIORITY: "regular",
        AKS_LABEL_OS_SKU: os_sku(spec_family),
        AKS_LABEL_OS_SKU_REQUESTED: spec_family,
        AKS_LABEL_OS_SKU_EFFECTIVE: image_table.resolve_family(nodeclass, kubernetes_version),
    }
    if nodeclass.fips:
        out[AKS_LABEL_FIPS_ENABLED] = "true"
    if network.azure_cni_overlay:
        parts = parse_subnet_id(subnet_id)
        if parts is None:
            raise LaunchTemplateError(f"invalid vnet subnet id: {subnet_id!r}")
        try:
            minor = parse_kubernetes_version(kubernetes_version)[:2]
        except ValueError as e:
            raise LaunchTemplateError(str(e)) from e
        out[AKS_LABEL_SUBNET_NAME] = parts.subnet_name
        out[AKS_LABEL_VNET_GUID] = vnet_guid
        out[AKS_LABEL_AZURE_CNI_OVERLAY] = "true"
        out[AKS_LABEL_POD_NETWORK_TYPE] = NETWORK_PLUGIN_MODE_OVERLAY
        out[AKS_LABEL_NETWORK_STATELESS_CNI] = "true" if minor >= (1, 34) else "false"
    if network.dataplane == NETWORK_DATAPLANE_CILIUM:
        out[AKS_LABEL_EBPF_DATAPLANE] = NETWORK_DATAPLANE_CILIUM
    out[AKS_LABEL_LOCAL_DNS_STATE] = "enabled" if local_dns_enabled else "disabled"
    if nodeclass.artifact_streaming and arch != ARCH_ARM64:
        out[AKS_LABEL_ARTIFACT_STREAMING] = "true"
    return out


# --- taints -------------------------------------------------------------------------------


@frozen
class NodeTaint:
    """A taint the node registers with (kubelet ``--register-with-taints``)."""

    key: str
    effect: str
    value: str | None = None

    def __str__(self) -> str:
        return (
            f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"
        )


UNREGISTERED_TAINT = NodeTaint(core_labels.UNREGISTERED_TAINT_KEY, "NoExecute")


def node_taints(nodeclaim: NodeClaim) -> tuple[NodeTaint, ...]:
    """The NodeClaim's taints, then its startup taints, then ``karpenter.sh/unregistered``
    (NoExecute) unless one of them already is that taint (same key and effect); the core
    removes it once the node registers."""
    out = [
        NodeTaint(t.key, t.effect, t.value or None)
        for t in (*nodeclaim.spec.taints, *nodeclaim.spec.startup_taints)
    ]
    if not any(
        t.key == UNREGISTERED_TAINT.key and t.effect == UNREGISTERED_TAINT.effect for t in out
    ):
        out.append(UNREGISTERED_TAINT)
    return tuple(out)


# --- instance type facts --------------------------------------------------------------------


def arch_of(instance_type: InstanceType) -> str:
    """``arm64`` when the instance type can be arm64, else ``amd64`` (upstream's test)."""
    arm = Requirements(Requirement.new(core_labels.LABEL_ARCH, IN, [ARCH_ARM64]))
    return ARCH_ARM64 if instance_type.requirements.is_compatible(arm) else ARCH_AMD64


def _single(requirements: Requirements, key: str) -> str | None:
    return requirements.labels().get(key)


_EPHEMERAL_PLACEMENT_NVME = "NvmeDisk"
_EPHEMERAL_PLACEMENT_CACHE = "CacheDisk"
_EPHEMERAL_PLACEMENT_RESOURCE = "ResourceDisk"


def _capability_int(capabilities: Mapping[str, str], name: str) -> int:
    try:
        return int(str(capabilities.get(name, "0")).strip() or 0)
    except ValueError:
        return 0


def ephemeral_os_disk_max(capabilities: Mapping[str, str] | None) -> tuple[int, str | None]:
    """The largest ephemeral OS disk (decimal GB, rounded down) a SKU can hold and where
    it goes, from its Resource SKU capabilities (upstream
    ``FindMaxEphemeralSizeGBAndPlacement``): none unless ``EphemeralOSDiskSupported``;
    the NVMe disk when it has one and ``SupportedEphemeralOSDiskPlacements`` lists
    ``NvmeDisk``; else the cache disk; else the resource disk."""
    if not capabilities:
        return 0, None
    if str(capabilities.get("EphemeralOSDiskSupported", "")).lower() != "true":
        return 0, None
    nvme_mib = _capability_int(capabilities, "NvmeDiskSizeInMiB")
    placements = {
        p.strip()
        for p in str(capabilities.get("SupportedEphemeralOSDiskPlacements", "")).split(",")
    }
    if nvme_mib > 0 and _EPHEMERAL_PLACEMENT_NVME in placements:
        return nvme_mib * _MIB // _GIB_DECIMAL, _EPHEMERAL_PLACEMENT_NVME
    cache_bytes = _capability_int(capabilities, "CachedDiskBytes")
    if cache_bytes > 0:
        return cache_bytes // _GIB_DECIMAL, _EPHEMERAL_PLACEMENT_CACHE
    resource_mib = _capability_int(capabilities, "MaxResourceVolumeMB")  # MiB, despite the name
    if resource_mib > 0:
        return resource_mib * _MIB // _GIB_DECIMAL, _EPHEMERAL_PLACEMENT_RESOURCE
    return 0, None


def _ephemeral_from_labels(instance_type: InstanceType) -> int:
    value = _single(instance_type.requirements, LABEL_SKU_STORAGE_EPHEMERAL_OS_MAX_SIZE)
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 0


def _allow_undefined() -> frozenset[str]:
    # upstream: well-known and restricted labels may be absent from the instance type
    return (
        frozenset(core_labels.WELL_KNOWN_LABELS) | WELL_KNOWN_LABELS | {LABEL_SKU_HYPERV_GENERATION}
    )


def select_image(image_list: Sequence[Mapping[str, Any]], instance_type: InstanceType) -> str:
    """The id of the first image (``{"id", "requirements"}``, most preferred first, as
    ``status.images``) whose requirements the instance type meets (upstream
    ``ResolveNodeImageFromNodeClass``)."""
    allow = _allow_undefined()
    for image in image_list:
        try:
            reqs = Requirements.from_node_selector_requirements(image.get("requirements") or ())
        except ValueError:
            continue
        if instance_type.requirements.is_compatible(reqs, allow):
            return str(image["id"])
    raise LaunchTemplateError(f"no compatible images found for instance type {instance_type.name}")


# --- cluster facts --------------------------------------------------------------------------

_MANAGED_NSG = re.compile(r"^aks-agentpool-(\d{8})-nsg$", re.IGNORECASE)


def route_table_name(network_security_group_name: str) -> str:
    """AKS's route table for the cluster whose managed NSG is ``aks-agentpool-<id>-nsg``:
    ``aks-agentpool-<id>-routetable`` (the id is empty for any other NSG name, as
    upstream)."""
    m = _MANAGED_NSG.match(network_security_group_name)
    return f"aks-agentpool-{m[1] if m else ''}-routetable"


def api_server_name(cluster_endpoint: str) -> str:
    """The host of the cluster endpoint (``https://x.hcp.eastus.azmk8s.io:443`` ->
    ``x.hcp.eastus.azmk8s.io``)."""
    return urlsplit(cluster_endpoint).hostname or ""


def arm_zones(zone: str) -> list[str]:
    """The VM's ``zones`` for a ``topology.kubernetes.io/zone`` value: ``[]`` for a
    regional VM (zone ``0`` or none), else the zone number (``eastus-2`` -> ``["2"]``)."""
    if zone in ("", REGIONAL_ZONE):
        return []
    return [zone[-1]]


def kubelet_configuration(
    nodeclass: AKSNodeClass,
    instance_type: InstanceType,
    network: NetworkSettings,
    dns_service_ip: str = "",
) -> KubeletConfiguration:
    """The node's kubelet configuration (upstream ``prepareKubeletConfiguration``)."""
    overhead = instance_type.overhead
    memory = overhead.eviction_threshold.get("memory", 0)
    return KubeletConfiguration(
        max_pods=default_max_pods(nodeclass, network),
        cluster_dns_service_ip=dns_service_ip,
        kube_reserved=resources.format_resource_list(overhead.kube_reserved),
        system_reserved=resources.format_resource_list(overhead.system_reserved),
        eviction_hard={
            "memory.available": resources.format_resource_list({"memory": memory})["memory"]
        },
        nodeclass_kubelet=dict(nodeclass.spec.get("kubelet") or {}),
    )


# --- the template -------------------------------------------------------------------------


def _str_dict(value: Mapping[str, str] | None) -> dict[str, str]:
    return dict(value or {})


@frozen
class LaunchTemplate:
    """Everything VM creation needs that is not the VM's name or NIC (upstream
    ``launchtemplate.Template``), plus what was resolved on the way."""

    image_id: str
    custom_data: str = field(repr=False)
    """base64 of the bootstrap script (``osProfile.customData``)."""
    tags: Mapping[str, str] = field(converter=_str_dict)
    os_disk_size_gb: int
    ephemeral_os_disk: bool
    ephemeral_os_disk_placement: str | None
    """``NvmeDisk``/``CacheDisk``/``ResourceDisk`` for an ephemeral disk when known; None
    lets Azure choose (its default is the cache disk)."""
    subnet_id: str
    labels: Mapping[str, str] = field(converter=_str_dict)
    taints: tuple[NodeTaint, ...]
    kubernetes_version: str
    image_family: str
    arch: str
    zone: str
    zones: tuple[str, ...]
    capacity_type: str
    placement_scope: str
    max_pods: int
    gpu_node: bool
    provision_mode: str
    bootstrap: AKSBootstrap = field(repr=False)

    @property
    def storage_profile_disk_type(self) -> str:
        return (
            STORAGE_PROFILE_EPHEMERAL if self.ephemeral_os_disk else STORAGE_PROFILE_MANAGED_DISKS
        )

    @property
    def is_image_community_gallery(self) -> bool:
        """A community-gallery id (``/CommunityGalleries/...``), set on the VM as
        ``communityGalleryImageId``; anything else goes in ``imageReference.id``."""
        return self.image_id.lower().startswith("/communitygalleries/")


def _nodeclaim_labels(nodeclaim: NodeClaim) -> dict[str, str]:
    return dict(nodeclaim.metadata.labels or {})


def _requirement_labels(nodeclaim: NodeClaim) -> dict[str, str]:
    try:
        reqs = Requirements.from_node_selector_requirements(nodeclaim.spec.requirements)
    except ValueError as e:
        raise LaunchTemplateError(f"nodeclaim requirements: {e}") from e
    return reqs.labels()


def build(
    *,
    nodeclass: AKSNodeClass,
    nodeclaim: NodeClaim,
    instance_type: InstanceType,
    zone: str,
    capacity_type: str,
    cluster_name: str,
    cluster_endpoint: str,
    ca_bundle: str | bytes,
    bootstrap_token: str,
    kubernetes_version: str,
    subnet_id: str = "",
    network_plugin: str = NETWORK_PLUGIN_AZURE,
    network_plugin_mode: str = NETWORK_PLUGIN_MODE_OVERLAY,
    network_policy: str = "",
    network_dataplane: str = NETWORK_DATAPLANE_CILIUM,
    dns_service_ip: str = "",
    kubelet_identity_client_id: str = "",
    node_resource_group: str = "",
    subscription_id: str = "",
    tenant_id: str = "",
    location: str = "",
    vnet_guid: str = "",
    network_security_group_name: str = "",
    additional_tags: Mapping[str, str] | None = None,
    image_id: str | None = None,
    images: Sequence[Mapping[str, Any]] | None = None,
    node_image_version: str = "latest",
    sku_capabilities: Mapping[str, str] | None = None,
    placement_scope: str | None = None,
    ultra_ssd: bool = False,
    local_dns_enabled: bool = False,
    admin_username: str = "azureuser",
) -> LaunchTemplate:
    """The launch template of one VM (upstream ``GetTemplate`` in ``aksscriptless`` mode).

    ``subnet_id`` is the default subnet setting (``vnet-subnet-id``); the NodeClass's
    ``vnetSubnetID`` wins. ``kubernetes_version`` is the NodeClass's resolved version
    (``status.kubernetesVersion``). The image is ``image_id`` when given, else chosen from
    ``images`` (the NodeClass's ``status.images``), else from the image family's defaults
    at ``node_image_version``. ``sku_capabilities`` (the Resource SKU's capabilities, name
    to value) decide the ephemeral OS disk and its placement; without them the instance
    type's ``sku-storage-ephemeralos-maxsize`` label gives the size and Azure picks the
    placement. ``network_security_group_name`` is the cluster's managed NSG (upstream
    reads it from Azure); the route table name derives from it. ``ca_bundle`` is the
    cluster CA, PEM or base64 of the PEM.
    """
    try:
        parse_kubernetes_version(kubernetes_version)
    except ValueError as e:
        raise LaunchTemplateError(str(e)) from e
    version = kubernetes_version.strip().removeprefix("v")
    network = NetworkSettings(
        network_plugin, network_plugin_mode, network_policy, network_dataplane
    )
    arch = arch_of(instance_type)
    node_subnet = nodeclass.vnet_subnet_id or subnet_id
    family = image_table.resolve_family(nodeclass, version)

    # image
    if image_id is None:
        candidates = (
            images
            if images is not None
            else image_table.status_images(nodeclass, version, node_image_version)
        )
        image_id = select_image(candidates, instance_type)

    # labels: AKS's, then the NodeClaim's, then single-valued requirements and the offering
    scope = placement_scope or (
        PLACEMENT_SCOPE_REGIONAL if zone in ("", REGIONAL_ZONE) else PLACEMENT_SCOPE_ZONAL
    )
    additional = {
        **_requirement_labels(nodeclaim),
        **instance_type.requirements.labels(),
        core_labels.CAPACITY_TYPE_LABEL_KEY: capacity_type,
        LABEL_PLACEMENT_SCOPE: scope,
        LABEL_SKU_STORAGE_ULTRA_SSD: "true" if ultra_ssd else "false",
    }
    merged = {
        **base_labels(
            nodeclass,
            kubernetes_version=version,
            arch=arch,
            node_resource_group=node_resource_group,
            kubelet_identity_client_id=kubelet_identity_client_id,
            network=network,
            subnet_id=node_subnet,
            vnet_guid=vnet_guid,
            local_dns_enabled=local_dns_enabled,
        ),
        **_nodeclaim_labels(nodeclaim),
        **additional,
    }
    node_labels = {k: v for k, v in merged.items() if can_kubelet_set_label(k)}
    taints = node_taints(nodeclaim)

    # disk
    if sku_capabilities is not None:
        max_gb, placement = ephemeral_os_disk_max(sku_capabilities)
    else:
        max_gb, placement = _ephemeral_from_labels(instance_type), None
    disk_gb = nodeclass.os_disk_size_gb
    ephemeral = max_gb > 0 and disk_gb <= max_gb

    # GPU
    gpu = (_single(instance_type.requirements, LABEL_SKU_GPU_MANUFACTURER) or "") == "nvidia"
    kubelet = kubelet_configuration(nodeclass, instance_type, network, dns_service_ip)
    boot = AKSBootstrap(
        kubernetes_version=version,
        arch=arch,
        ca_bundle=ca_bundle_base64(ca_bundle),
        api_server_name=api_server_name(cluster_endpoint),
        bootstrap_token=bootstrap_token,
        labels=node_labels,
        taints=_as_taint_likes(taints),
        kubelet=kubelet,
        tenant_id=tenant_id,
        subscription_id=subscription_id,
        location=location,
        resource_group=node_resource_group,
        kubelet_identity_client_id=kubelet_identity_client_id,
        network_plugin=network.agentbaker_plugin(),
        network_policy=network_policy,
        network_security_group_name=network_security_group_name,
        route_table_name=route_table_name(network_security_group_name),
        subnet_id=node_subnet,
        admin_username=admin_username,
        gpu_node=gpu,
        gpu_driver_installation_enabled=nodeclass.gpu_mode != "None",
        gpu_driver_version=gpu_driver_version(instance_type.name),
        gpu_driver_type=gpu_driver_type(instance_type.name),
        gpu_image_sha=gpu_image_sha(instance_type.name),
        cluster_name=cluster_name,
        cluster_endpoint=cluster_endpoint,
    )
    try:
        custom_data = boot.custom_data()
    except ValueError as e:
        raise LaunchTemplateError(str(e)) from e
    return LaunchTemplate(
        image_id=image_id,
        custom_data=custom_data,
        tags=tags(
            cluster_name=cluster_name,
            nodeclass_tags=nodeclass.tags,
            nodeclaim_labels=_nodeclaim_labels(nodeclaim),
            additional_tags=additional_tags,
        ),
        os_disk_size_gb=disk_gb,
        ephemeral_os_disk=ephemeral,
        ephemeral_os_disk_placement=placement if ephemeral else None,
        subnet_id=node_subnet,
        labels=node_labels,
        taints=taints,
        kubernetes_version=version,
        image_family=family,
        arch=arch,
        zone=zone,
        zones=tuple(arm_zones(zone)),
        capacity_type=capacity_type,
        placement_scope=scope,
        max_pods=kubelet.max_pods,
        gpu_node=gpu,
        provision_mode=PROVISION_MODE_AKS_SCRIPTLESS,
        bootstrap=boot,
    )


def _as_taint_likes(taints: Iterable[NodeTaint]) -> tuple[TaintLike, ...]:
    return tuple(taints)
