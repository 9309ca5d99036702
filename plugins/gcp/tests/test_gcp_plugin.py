"""karpenter-gcp: registration, labels, settings and the factory's two modes (catalogue
only without a cluster; serving, with the project, region and cluster, with one)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from karpenter_gcp import plugin
from karpenter_gcp.labels import GROUP

from karpenter_core.apis import labels
from karpenter_core.cloudprovider.protocol import NodeClassKind
from karpenter_core.hookspecs import CloudProviderSpec, ProviderContext
from karpenter_core.plugins import (
    cloud_providers,
    get_cloud_provider,
    get_plugin_manager,
)

SETTINGS = {
    "project-id": "test-project",
    "region": "us-central1",
    "cluster-name": "test-cluster",
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


def test_spec_declares_gcenodeclass_and_can_launch() -> None:
    spec = _spec()
    assert spec.name == "gcp"
    assert spec.can_launch is True
    assert spec.node_classes == (NodeClassKind("karpenter.k8s.gcp", "GCENodeClass", "v1alpha1"),)


@pytest.mark.parametrize(
    "key",
    [
        "karpenter.k8s.gcp/instance-family",
        "karpenter.k8s.gcp/instance-shape",
        "karpenter.k8s.gcp/instance-cpu",
        "cloud.google.com/gke-accelerator",
        "disk-type.gke.io/pd-balanced",
        "topology.k8s.gcp/zone-id",
    ],
)
def test_spec_declares_upstream_well_known_labels(key: str) -> None:
    assert key in _spec().well_known_labels


def test_spec_restricts_the_gcp_label_domain() -> None:
    assert _spec().restricted_label_domains == frozenset({GROUP})


def test_entry_point_is_installed_and_loads() -> None:
    pm = get_plugin_manager({"KARPENTER_PLUGINS": "gcp"})
    assert pm.plugin_info["gcp"].distribution == "karpenter-gcp"
    assert "gcp" in cloud_providers(pm)


def test_selecting_makes_gcp_keys_selectable_but_domain_restricted() -> None:
    get_cloud_provider("gcp", SETTINGS, get_plugin_manager({"KARPENTER_PLUGINS": "gcp"}))
    assert labels.is_restricted_label("karpenter.k8s.gcp/instance-family") is False
    assert labels.is_restricted_label("karpenter.k8s.gcp/made-up") is True


def test_without_a_cluster_no_setting_is_needed() -> None:
    provider = get_cloud_provider("gcp", {}, get_plugin_manager({"KARPENTER_PLUGINS": "gcp"}))
    assert provider.instances is None  # type: ignore[attr-defined]
    assert provider.get_instance_types(None)


def test_serving_lists_every_missing_setting_with_its_variable() -> None:
    context = ProviderContext(settings={}, kube=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError) as e:
        _spec().factory(context)
    message = str(e.value)
    assert "\n" not in message
    for setting, env in [
        ("project-id", "PROJECT_ID"),
        ("region", "CLUSTER_LOCATION"),
        ("cluster-name", "CLUSTER_NAME"),
    ]:
        assert f"gcp setting {setting} (env {env}) is required" in message


@pytest.mark.parametrize(
    ("settings", "fragment"),
    [
        ({"region": "us-central1-a"}, "is a zone; the region is 'us-central1'"),
        ({"region": "mars"}, "is not a GCP region"),
        ({"vm-memory-overhead-percent": "7"}, "not a fraction"),
        ({"interruption": "maybe"}, "not a boolean"),
    ],
)
def test_bad_settings_are_one_line_errors_naming_the_setting(
    settings: dict[str, str], fragment: str
) -> None:
    pm = get_plugin_manager({"KARPENTER_PLUGINS": "gcp"})
    with pytest.raises(ValueError) as e:
        get_cloud_provider("gcp", settings, pm)
    assert fragment in str(e.value)
    assert "\n" not in str(e.value)


def test_catalogue_only_provider_cannot_launch_and_says_why() -> None:
    provider = get_cloud_provider("gcp", SETTINGS, get_plugin_manager({"KARPENTER_PLUGINS": "gcp"}))
    with pytest.raises(RuntimeError, match="catalogue only"):
        provider.list()
    assert provider.repair_policies()


def test_provider_reports_its_name_and_node_class() -> None:
    provider = get_cloud_provider("gcp", SETTINGS, get_plugin_manager({"KARPENTER_PLUGINS": "gcp"}))
    assert provider.name == "gcp"
    assert provider.supported_node_classes() == (
        NodeClassKind("karpenter.k8s.gcp", "GCENodeClass", "v1alpha1"),
    )


def test_factory_builds_the_provider_from_the_context_settings() -> None:
    provider = _spec().factory(ProviderContext(settings=SETTINGS))
    assert provider.name == "gcp"
    assert provider.settings.project_id == "test-project"  # type: ignore[attr-defined]
    assert provider.settings.region == "us-central1"  # type: ignore[attr-defined]
