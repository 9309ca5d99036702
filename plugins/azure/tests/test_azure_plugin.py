"""karpenter-azure: an honest skeleton — registered, labelled, and unable to launch."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from karpenter_azure import plugin
from karpenter_azure.labels import GROUP

from karpenter_core.apis import labels
from karpenter_core.cloudprovider.protocol import NodeClassKind
from karpenter_core.hookspecs import CloudProviderSpec, ProviderContext
from karpenter_core.plugins import (
    PluginError,
    cloud_providers,
    get_cloud_provider,
    get_plugin_manager,
)

SETTINGS = {
    "cluster-name": "test-cluster",
    "cluster-endpoint": "https://test-cluster.example:443",
    "node-resource-group": "MC_rg_test-cluster_eastus",
    "vnet-subnet-id": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/n",
}


@pytest.fixture(autouse=True)
def _restore_label_sets() -> Iterator[None]:
    well_known, domains = set(labels.WELL_KNOWN_LABELS), set(labels.RESTRICTED_LABEL_DOMAINS)
    yield
    labels.WELL_KNOWN_LABELS.clear()
    labels.WELL_KNOWN_LABELS.update(well_known)
    labels.RESTRICTED_LABEL_DOMAINS.clear()
    labels.RESTRICTED_LABEL_DOMAINS.update(domains)


def _spec() -> CloudProviderSpec:
    [spec] = plugin.karpenter_cloud_providers()
    return spec


def test_spec_declares_aksnodeclass_and_cannot_launch() -> None:
    spec = _spec()
    assert spec.name == "azure"
    assert spec.can_launch is False
    assert spec.node_classes == (NodeClassKind("karpenter.azure.com", "AKSNodeClass", "v1beta1"),)


@pytest.mark.parametrize(
    "key",
    [
        "karpenter.azure.com/sku-family",
        "karpenter.azure.com/sku-name",
        "karpenter.azure.com/sku-cpu",
        "karpenter.azure.com/sku-gpu-name",
        "kubernetes.azure.com/scalesetpriority",
        "kubernetes.azure.com/os-sku",
    ],
)
def test_spec_declares_upstream_well_known_labels(key: str) -> None:
    assert key in _spec().well_known_labels


def test_spec_restricts_the_azure_label_domain_but_not_the_aks_one() -> None:
    assert _spec().restricted_label_domains == frozenset({GROUP})
    assert "kubernetes.azure.com" not in _spec().restricted_label_domains


def test_entry_point_is_installed_and_loads() -> None:
    pm = get_plugin_manager({"KARPENTER_PLUGINS": "azure"})
    assert pm.plugin_info["azure"].distribution == "karpenter-azure"
    assert "azure" in cloud_providers(pm)


def test_selecting_makes_azure_keys_selectable_but_domain_restricted() -> None:
    get_cloud_provider("azure", SETTINGS, get_plugin_manager({"KARPENTER_PLUGINS": "azure"}))
    assert labels.is_restricted_label("karpenter.azure.com/sku-family") is False
    assert labels.is_restricted_label("karpenter.azure.com/made-up") is True


def test_cluster_name_is_a_required_setting() -> None:
    pm = get_plugin_manager({"KARPENTER_PLUGINS": "azure"})
    with pytest.raises(PluginError, match="cluster-name"):
        get_cloud_provider("azure", {}, pm)


@pytest.mark.parametrize(
    ("method", "args"),
    [
        ("create", (object(),)),
        ("delete", (object(),)),
        (
            "get",
            (
                "azure:///subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/aks-a",
            ),
        ),
        ("list", ()),
        ("get_instance_types", (None,)),
        ("is_drifted", (object(),)),
        ("repair_policies", ()),
    ],
)
def test_provider_refuses_every_operation(method: str, args: tuple[object, ...]) -> None:
    provider = get_cloud_provider(
        "azure", SETTINGS, get_plugin_manager({"KARPENTER_PLUGINS": "azure"})
    )
    with pytest.raises(NotImplementedError, match="azure cloud provider cannot launch yet"):
        getattr(provider, method)(*args)


def test_provider_reports_its_name_and_node_class() -> None:
    provider = get_cloud_provider(
        "azure", SETTINGS, get_plugin_manager({"KARPENTER_PLUGINS": "azure"})
    )
    assert provider.name == "azure"
    assert provider.supported_node_classes() == (
        NodeClassKind("karpenter.azure.com", "AKSNodeClass", "v1beta1"),
    )


def test_factory_builds_the_provider_from_the_context_settings() -> None:
    provider = _spec().factory(ProviderContext(settings=SETTINGS))
    assert provider.name == "azure"
    assert provider.settings == SETTINGS  # type: ignore[attr-defined]
