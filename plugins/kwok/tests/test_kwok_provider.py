"""The KWOK CloudProvider and its plugin registration."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from karpenter_kwok import plugin
from karpenter_kwok.instance_types import InstanceTypesFileError
from karpenter_kwok.provider import KwokCloudProvider

from karpenter_core.cloudprovider.protocol import CloudProvider, NodeClassKind, RepairPolicy
from karpenter_core.hookspecs import CloudProviderSpec, ProviderContext
from karpenter_core.plugins import cloud_providers, get_cloud_provider, get_plugin_manager

ENTRY = {
    "name": "tiny",
    "architecture": "arm64",
    "operatingSystems": ["linux"],
    "resources": {"cpu": "1", "memory": "1Gi"},
    "offerings": [
        {
            "Price": 0.01,
            "Available": True,
            "Requirements": [
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["z"]},
            ],
        }
    ],
}


@pytest.fixture
def custom_file(tmp_path: Path) -> str:
    path = tmp_path / "types.json"
    path.write_text(json.dumps([ENTRY]))
    return str(path)


@pytest.fixture
def provider() -> KwokCloudProvider:
    return KwokCloudProvider.from_settings({}, environ={})


def test_provider_satisfies_the_protocol(provider: KwokCloudProvider) -> None:
    assert isinstance(provider, CloudProvider)
    assert provider.name == "kwok"


def test_default_settings_serve_the_builtin_catalogue(provider: KwokCloudProvider) -> None:
    assert len(provider.get_instance_types(None)) == 144


def test_every_nodepool_gets_the_same_instance_types(provider: KwokCloudProvider) -> None:
    a = provider.get_instance_types(object())
    b = provider.get_instance_types(object())
    assert [x.name for x in a] == [x.name for x in b]
    assert all(x is y for x, y in zip(a, b, strict=True))


def test_returned_list_is_a_copy(provider: KwokCloudProvider) -> None:
    provider.get_instance_types(None).clear()
    assert len(provider.get_instance_types(None)) == 144


def test_setting_selects_an_instance_types_file(custom_file: str) -> None:
    p = KwokCloudProvider.from_settings({"instance-types-file-path": custom_file}, environ={})
    assert [it.name for it in p.get_instance_types(None)] == ["tiny"]


def test_environment_variable_selects_an_instance_types_file(custom_file: str) -> None:
    p = KwokCloudProvider.from_settings({}, environ={"INSTANCE_TYPES_FILE_PATH": custom_file})
    assert [it.name for it in p.get_instance_types(None)] == ["tiny"]


def test_setting_wins_over_environment(custom_file: str, tmp_path: Path) -> None:
    p = KwokCloudProvider.from_settings(
        {"instance-types-file-path": custom_file},
        environ={"INSTANCE_TYPES_FILE_PATH": str(tmp_path / "missing.json")},
    )
    assert [it.name for it in p.get_instance_types(None)] == ["tiny"]


def test_broken_file_fails_construction_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text("{")
    with pytest.raises(InstanceTypesFileError, match=r"broken\.json: not valid JSON"):
        KwokCloudProvider.from_settings({"instance-types-file-path": str(path)}, environ={})


def test_no_provider_side_drift(provider: KwokCloudProvider) -> None:
    assert provider.is_drifted(object()) == ""


def test_repair_policies_are_ready_false_or_unknown_for_ten_minutes(
    provider: KwokCloudProvider,
) -> None:
    assert list(provider.repair_policies()) == [
        RepairPolicy("Ready", "False", timedelta(minutes=10)),
        RepairPolicy("Ready", "Unknown", timedelta(minutes=10)),
    ]


def test_supported_node_class_is_kwoknodeclass(provider: KwokCloudProvider) -> None:
    (kind,) = provider.supported_node_classes()
    assert kind == NodeClassKind("karpenter.kwok.sh", "KWOKNodeClass", "v1alpha1")
    assert kind.label_key == "karpenter.kwok.sh/kwoknodeclass"


# --- plugin registration -------------------------------------------------------------------


def test_hookimpl_returns_one_launching_spec() -> None:
    (spec,) = plugin.karpenter_cloud_providers()
    assert isinstance(spec, CloudProviderSpec)
    assert spec.name == "kwok"
    assert spec.can_launch is True
    assert spec.node_classes == (NodeClassKind("karpenter.kwok.sh", "KWOKNodeClass", "v1alpha1"),)
    assert spec.well_known_labels == {
        "karpenter.kwok.sh/instance-size",
        "karpenter.kwok.sh/instance-family",
        "karpenter.kwok.sh/instance-cpu",
        "karpenter.kwok.sh/instance-memory",
    }
    assert spec.restricted_label_domains == {"karpenter.kwok.sh"}
    assert [(s.name, s.env) for s in spec.settings] == [
        ("instance-types-file-path", "INSTANCE_TYPES_FILE_PATH"),
        ("seed", None),
        ("launch-latency", None),
        ("launch-latency-jitter", None),
        ("insufficient-capacity", None),
        ("never-register", None),
        ("unavailable-offerings-ttl", None),
        ("catalogue-provider", None),
        ("catalogue-provider-settings", None),
        ("dra-config", "KWOK_DRA_CONFIG"),
    ]


def test_spec_factory_builds_the_provider(custom_file: str) -> None:
    (spec,) = plugin.karpenter_cloud_providers()
    p = spec.factory(ProviderContext(settings={"instance-types-file-path": custom_file}))
    assert [it.name for it in p.get_instance_types(None)] == ["tiny"]


def test_installed_plugin_is_found_through_the_plugin_manager(custom_file: str) -> None:
    pm = get_plugin_manager(environ={})
    assert "kwok" in cloud_providers(pm)
    p = get_cloud_provider("kwok", {"instance-types-file-path": custom_file}, pm=pm)
    assert p.name == "kwok"
    assert [it.name for it in p.get_instance_types(None)] == ["tiny"]
