"""Hook implementations of karpenter-azure (entry point ``azure`` in group ``karpenter``).

The Azure provider registers its NodeClass kind and CRD, well-known labels, settings and
the AKSNodeClass status controller (docs/azure.md), so NodePools and AKSNodeClasses written
for upstream Karpenter on AKS validate; it cannot launch VMs yet (``can_launch=False``).
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
        "cluster-name",
        "The Kubernetes cluster name, used for resource tags.",
        required=True,
        env="CLUSTER_NAME",
    ),
    ProviderSetting(
        "cluster-endpoint",
        "The API server endpoint new nodes connect to.",
        required=True,
        env="CLUSTER_ENDPOINT",
    ),
    ProviderSetting(
        "node-resource-group",
        "The AKS-managed resource group where the node VMs live.",
        required=True,
        env="AZURE_NODE_RESOURCE_GROUP",
    ),
    ProviderSetting(
        "vnet-subnet-id",
        "ARM resource id of the default subnet for new nodes.",
        required=True,
        env="VNET_SUBNET_ID",
    ),
    ProviderSetting(
        "network-plugin",
        "The cluster's network plugin.",
        default="azure",
        env="NETWORK_PLUGIN",
    ),
    ProviderSetting(
        "network-plugin-mode",
        "The network plugin mode.",
        default="overlay",
        env="NETWORK_PLUGIN_MODE",
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
)


def crds() -> tuple[Traversable, ...]:
    """The AKSNodeClass CRD (package data), when the installed package ships it."""
    crd = files("karpenter_azure") / "crds" / CRD_FILE
    return (crd,) if crd.is_file() else ()


def make_provider(context: ProviderContext) -> AzureCloudProvider:
    """The spec's factory: this skeleton needs only its resolved settings."""
    return AzureCloudProvider(context.settings)


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
            can_launch=False,
            crds=crds(),
            description="Azure AKS (AKSNodeClass): CRD, validation, drift hash and status "
            "controller; launching not implemented yet",
        )
    ]


@hookimpl
def karpenter_controllers() -> list[ControllerSpec]:
    """nodeclass.status (with ``azure``)."""
    from karpenter_azure.controllers import CONTROLLERS

    return list(CONTROLLERS)
