"""karpenter-gcp: an honest skeleton — registered, labelled, and unable to launch."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from karpenter_gcp import plugin
from karpenter_gcp.labels import GROUP

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
    "project-id": "test-project",
    "cluster-location": "us-central1",
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


def test_spec_declares_gcenodeclass_and_cannot_launch() -> None:
    spec = _spec()
    assert spec.name == "gcp"
    assert spec.can_launch is False
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


def test_project_id_is_a_required_setting() -> None:
    pm = get_plugin_manager({"KARPENTER_PLUGINS": "gcp"})
    with pytest.raises(PluginError, match="project-id"):
        get_cloud_provider("gcp", {}, pm)


@pytest.mark.parametrize(
    ("method", "args"),
    [
        ("create", (object(),)),
        ("delete", (object(),)),
        ("get", ("gce://project/us-central1-a/karpenter-abc",)),
        ("list", ()),
        ("get_instance_types", (None,)),
        ("is_drifted", (object(),)),
        ("repair_policies", ()),
    ],
)
def test_provider_refuses_every_operation(method: str, args: tuple[object, ...]) -> None:
    provider = get_cloud_provider("gcp", SETTINGS, get_plugin_manager({"KARPENTER_PLUGINS": "gcp"}))
    with pytest.raises(NotImplementedError, match="gcp cloud provider cannot launch yet"):
        getattr(provider, method)(*args)


def test_provider_reports_its_name_and_node_class() -> None:
    provider = get_cloud_provider("gcp", SETTINGS, get_plugin_manager({"KARPENTER_PLUGINS": "gcp"}))
    assert provider.name == "gcp"
    assert provider.supported_node_classes() == (
        NodeClassKind("karpenter.k8s.gcp", "GCENodeClass", "v1alpha1"),
    )


def test_factory_builds_the_provider_from_the_context_settings() -> None:
    provider = _spec().factory(ProviderContext(settings=SETTINGS))
    assert provider.name == "gcp"
    assert provider.settings == SETTINGS  # type: ignore[attr-defined]
