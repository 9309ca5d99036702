"""karpenter-azure: registration, labels, settings and the factory's two modes (catalogue
only without a cluster; launching, with every required setting, with one)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from karpenter_azure import plugin
from karpenter_azure.labels import GROUP

from karpenter_core.apis import labels
from karpenter_core.cloudprovider.protocol import NodeClassKind
from karpenter_core.hookspecs import CloudProviderSpec, ProviderContext
from karpenter_core.plugins import (
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


def test_spec_declares_aksnodeclass_and_can_launch() -> None:
    spec = _spec()
    assert spec.name == "azure"
    assert spec.can_launch is True
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


def test_without_a_cluster_no_launch_setting_is_needed() -> None:
    pm = get_plugin_manager({"KARPENTER_PLUGINS": "azure"})
    provider = get_cloud_provider("azure", {}, pm)
    assert provider.name == "azure"
    assert provider.vms is None  # type: ignore[attr-defined]


def test_serving_lists_every_missing_launch_setting_with_its_variable() -> None:
    context = ProviderContext(settings={"cluster-name": "c"}, kube=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError) as e:
        _spec().factory(context)
    message = str(e.value)
    assert "\n" not in message
    for setting, env in [
        ("region", "LOCATION"),
        ("subscription-id", "AZURE_SUBSCRIPTION_ID"),
        ("cluster-endpoint", "CLUSTER_ENDPOINT"),
        ("kubelet-bootstrap-token", "KUBELET_BOOTSTRAP_TOKEN"),
        ("ssh-public-key", "SSH_PUBLIC_KEY"),
        ("vnet-subnet-id", "VNET_SUBNET_ID"),
        ("node-resource-group", "AZURE_NODE_RESOURCE_GROUP"),
    ]:
        assert f"azure setting {setting} (env {env}) is required" in message
    assert "cluster-name" not in message


@pytest.mark.parametrize(
    ("settings", "fragment"),
    [
        ({"provision-mode": "aksmachineapi"}, "'aksmachineapi' is not supported"),
        ({"provision-mode": "magic"}, "'magic' is not a provision mode"),
        ({"use-sig": "true"}, "community galleries"),
        ({"vnet-subnet-id": "subnet-1"}, "is not a subnet resource id"),
        ({"network-plugin": "flannel"}, "azure setting network-plugin: 'flannel'"),
        ({"vm-memory-overhead-percent": "2"}, "not a fraction"),
        ({"additional-tags": "a=1,b"}, "'b' is not key=value"),
        ({"node-identities": "id-1"}, "not a user-assigned identity"),
        ({"cluster-endpoint": "k8s:443"}, "is not a URL"),
    ],
)
def test_bad_settings_are_one_line_errors_naming_the_setting(
    settings: dict[str, str], fragment: str
) -> None:
    pm = get_plugin_manager({"KARPENTER_PLUGINS": "azure"})
    with pytest.raises(ValueError) as e:
        get_cloud_provider("azure", settings, pm)
    assert fragment in str(e.value)
    assert "\n" not in str(e.value)


def test_settings_parse_upstream_formats() -> None:
    from karpenter_azure.settings import AzureSettings

    s = AzureSettings.from_mapping(
        {
            "region": "East US",
            "additional-tags": "team=a, env = prod",
            "node-identities": "/subscriptions/s/resourceGroups/r/providers/"
            "Microsoft.ManagedIdentity/userAssignedIdentities/kubelet",
            "network-plugin": "Azure",
            "network-plugin-mode": "",
        }
    )
    assert s.region == "eastus"
    assert s.additional_tags == {"team": "a", "env": "prod"}
    assert s.node_identities[0].endswith("/userAssignedIdentities/kubelet")
    assert (s.network_plugin, s.network_plugin_mode) == ("azure", "")
    assert s.provision_mode == "aksscriptless"


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
    assert provider.settings.cluster_name == "test-cluster"  # type: ignore[attr-defined]
    assert provider.settings.node_resource_group == SETTINGS["node-resource-group"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("value", "level"), [("false", 30), ("true", 20)])
def test_sdk_request_logging_follows_the_setting(value: str, level: int) -> None:
    import logging

    _spec().factory(ProviderContext(settings={**SETTINGS, "enable-azure-sdk-logging": value}))
    logger = logging.getLogger("azure.core.pipeline.policies.http_logging_policy")
    assert logger.level == level
