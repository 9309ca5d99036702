"""Hook implementations of karpenter-azure (entry point ``azure`` in group ``karpenter``).

The Azure provider launches one VM (and NIC) per NodeClaim in upstream's default provision
mode (aksscriptless), shaped by an AKSNodeClass; docs/azure.md describes setup, settings,
the managed identity's roles and what is left out.
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable

from karpenter_azure.labels import AKS_NODE_CLASS, RESTRICTED_LABEL_DOMAINS, WELL_KNOWN_LABELS
from karpenter_azure.nodeclass import CRD_FILE  # registers the AKSNodeClass resource type
from karpenter_azure.provider import NAME, AzureCloudProvider
from karpenter_core.plugin_api import (
    CloudProviderSpec,
    ControllerSpec,
    ProviderContext,
    ProviderSetting,
    hookimpl,
)

SETTINGS = (
    ProviderSetting(
        "region",
        "The Azure region (location) nodes are launched in and whose catalogue is listed; "
        "without one, catalogue commands use the first bundled region.",
        env="LOCATION",
    ),
    ProviderSetting(
        "subscription-id",
        "The subscription of the node resource group (ARM_SUBSCRIPTION_ID is read too).",
        env="AZURE_SUBSCRIPTION_ID",
    ),
    ProviderSetting(
        "resource-group",
        "The cluster's resource group (informational; nodes live in node-resource-group).",
        env="ARM_RESOURCE_GROUP",
    ),
    ProviderSetting(
        "cluster-name",
        "[required to launch] The Kubernetes cluster name, used for resource tags.",
        env="CLUSTER_NAME",
    ),
    ProviderSetting(
        "cluster-endpoint",
        "[required to launch] The API server endpoint new nodes connect to.",
        env="CLUSTER_ENDPOINT",
    ),
    ProviderSetting(
        "kubelet-bootstrap-token",
        "[required to launch] The bootstrap token new nodes join the cluster with.",
        env="KUBELET_BOOTSTRAP_TOKEN",
    ),
    ProviderSetting(
        "ssh-public-key",
        "[required to launch] The SSH public key put on every VM.",
        env="SSH_PUBLIC_KEY",
    ),
    ProviderSetting(
        "linux-admin-username",
        "The admin user name of Linux VMs.",
        default="azureuser",
        env="LINUX_ADMIN_USERNAME",
    ),
    ProviderSetting(
        "vnet-subnet-id",
        "[required to launch] ARM resource id of the default subnet for new nodes (an "
        "AKSNodeClass's vnetSubnetID overrides it).",
        env="VNET_SUBNET_ID",
    ),
    ProviderSetting(
        "node-resource-group",
        "[required to launch] The AKS-managed resource group where the node VMs live.",
        env="AZURE_NODE_RESOURCE_GROUP",
    ),
    ProviderSetting(
        "cluster-ca-bundle",
        "Base64 CA bundle of the API server new nodes join; the kube client's CA when empty.",
        env="CLUSTER_CA_BUNDLE",
    ),
    ProviderSetting(
        "network-plugin",
        "The cluster's network plugin (azure, none or kubenet).",
        default="azure",
        env="NETWORK_PLUGIN",
    ),
    ProviderSetting(
        "network-plugin-mode",
        "The network plugin mode (overlay, or empty for Azure CNI node subnet).",
        default="overlay",
        env="NETWORK_PLUGIN_MODE",
    ),
    ProviderSetting(
        "network-policy",
        "The cluster's network policy (empty, azure, cilium or calico).",
        default="",
        env="NETWORK_POLICY",
    ),
    ProviderSetting(
        "network-dataplane",
        "The cluster's network dataplane (cilium or azure).",
        default="cilium",
        env="NETWORK_DATAPLANE",
    ),
    ProviderSetting(
        "dns-service-ip",
        "The cluster DNS service IP handed to kubelet.",
        default="",
        env="DNS_SERVICE_IP",
    ),
    ProviderSetting(
        "vnet-guid",
        "The VNet's resource GUID (Azure CNI overlay with a bring-your-own VNet).",
        default="",
        env="VNET_GUID",
    ),
    ProviderSetting(
        "kubelet-identity-client-id",
        "Client id of the kubelet identity; a change drifts nodes (KubeletIdentityDrift).",
        default="",
        env="KUBELET_IDENTITY_CLIENT_ID",
    ),
    ProviderSetting(
        "node-identities",
        "Comma-separated user-assigned identity resource ids given to every VM.",
        default="",
        env="NODE_IDENTITIES",
    ),
    ProviderSetting(
        "additional-tags",
        "Tags for every Azure resource, key1=value1,key2=value2 (a NodeClass tag wins).",
        default="",
        env="ADDITIONAL_TAGS",
    ),
    ProviderSetting(
        "vm-memory-overhead-percent",
        "Fraction of VM memory assumed lost to the hypervisor.",
        default="0.075",
        env="VM_MEMORY_OVERHEAD_PERCENT",
    ),
    ProviderSetting(
        "provision-mode",
        "How nodes are provisioned; only upstream's default, aksscriptless, is implemented.",
        default="aksscriptless",
        env="PROVISION_MODE",
    ),
    ProviderSetting(
        "use-sig",
        "Use AKS's managed shared image galleries (only the AKS-managed add-on can); false "
        "uses the community galleries.",
        default="false",
        env="USE_SIG",
    ),
    ProviderSetting(
        "kubernetes-version",
        "The cluster's Kubernetes version (1.31), used to pick node images when the API "
        "server's /version is not reachable through the kube client.",
        env="KUBERNETES_VERSION",
    ),
    ProviderSetting(
        "node-image-version",
        "The community-gallery image version node images resolve to (without Azure access "
        "the latest version cannot be looked up).",
        default="latest",
        env="NODE_IMAGE_VERSION",
    ),
    ProviderSetting(
        "enable-azure-sdk-logging",
        "Log every ARM request and response (the Azure SDK's HTTP logging policy, at INFO). "
        "Upstream defaults to true; here false, as it floods the operator's log.",
        default="false",
        env="ENABLE_AZURE_SDK_LOGGING",
    ),
    ProviderSetting(
        "pricing-endpoint",
        "Base URL of the Azure retail prices API (default https://prices.azure.com); the "
        "bundled price snapshot is used when it cannot be reached.",
        default="",
        env="AZURE_PRICING_ENDPOINT",
    ),
)


def crds() -> tuple[Traversable, ...]:
    """The AKSNodeClass CRD (package data), when the installed package ships it."""
    crd = files("karpenter_azure") / "crds" / CRD_FILE
    return (crd,) if crd.is_file() else ()


def make_provider(context: ProviderContext) -> AzureCloudProvider:
    """The spec's factory: typed settings; Azure clients when a cluster is served.

    Without a cluster (``karpenter instance-types`` / ``schedule``) no credential or launch
    setting is needed: the catalogue comes from the bundled snapshot (live Resource SKUs
    and prices need credentials, which only serving asks for). With one, every setting
    launching needs must be present, else one ``ValueError`` line lists what is missing.
    """
    import os

    from karpenter_azure.settings import AzureSettings

    raw = dict(context.settings)
    if not raw.get("subscription-id"):
        raw["subscription-id"] = os.environ.get("ARM_SUBSCRIPTION_ID", "")
    settings = AzureSettings.from_mapping(raw)
    import logging

    logging.getLogger("azure.core.pipeline.policies.http_logging_policy").setLevel(
        logging.INFO if settings.sdk_logging else logging.WARNING
    )
    if context.kube is None:
        return AzureCloudProvider(settings, clock=context.clock, recorder=context.recorder)
    problems = settings.launch_problems()
    if problems:
        raise ValueError("cannot serve with azure: " + "; ".join(problems))
    from karpenter_azure.clients import AzureClients

    clients = AzureClients.create(settings.subscription_id)
    return AzureCloudProvider(
        settings,
        clients=clients,
        kube=context.kube,
        clock=context.clock,
        recorder=context.recorder,
    )


@hookimpl
def karpenter_cloud_providers() -> list[CloudProviderSpec]:
    return [
        CloudProviderSpec(
            name=NAME,
            factory=make_provider,
            node_classes=(AKS_NODE_CLASS,),
            well_known_labels=WELL_KNOWN_LABELS,
            restricted_label_domains=RESTRICTED_LABEL_DOMAINS,
            settings=SETTINGS,
            can_launch=True,
            crds=crds(),
            description="Azure AKS (AKSNodeClass): launches VMs (NIC + VM, scriptless "
            "bootstrap) from Resource SKUs priced by the retail prices API, spot and "
            "on-demand, drift, orphan-NIC GC; offline catalogue for southcentralus and "
            "westcentralus",
        )
    ]


@hookimpl
def karpenter_controllers() -> list[ControllerSpec]:
    """nodeclass.status (with ``azure``)."""
    from karpenter_azure.controllers import CONTROLLERS

    return list(CONTROLLERS)
