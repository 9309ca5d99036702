"""karpenter-aws's registration: a launching provider with its labels, settings and CRD, and
a factory that refuses to start without what every AWS call needs."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta

import pytest
from karpenter_aws import catalogue, plugin
from karpenter_aws.labels import GROUP
from karpenter_aws.provider import AWSCloudProvider

from karpenter_core.apis import labels
from karpenter_core.cloudprovider.protocol import CloudProvider, NodeClassKind, RepairPolicy
from karpenter_core.hookspecs import CloudProviderSpec, ProviderContext
from karpenter_core.plugins import (
    cloud_providers,
    get_cloud_provider,
    get_plugin_manager,
)
from karpenter_core.sim.apiserver import InMemoryApiServer

SETTINGS = {"cluster-name": "test-cluster"}


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


def test_spec_declares_ec2nodeclass_and_can_launch() -> None:
    spec = _spec()
    assert spec.name == "aws"
    assert spec.can_launch is True
    assert spec.node_classes == (NodeClassKind("karpenter.k8s.aws", "EC2NodeClass", "v1"),)
    assert "CreateFleet" in spec.description


def test_spec_ships_the_ec2nodeclass_crd_when_packaged() -> None:
    crd = plugin.files("karpenter_aws") / "crds" / plugin.CRD_FILE
    if not crd.is_file():
        assert _spec().crds == ()
        return
    [shipped] = _spec().crds
    assert shipped.name == plugin.CRD_FILE
    assert "name: ec2nodeclasses.karpenter.k8s.aws" in shipped.read_text()


@pytest.mark.parametrize(
    "key",
    [
        "karpenter.k8s.aws/instance-family",
        "karpenter.k8s.aws/instance-category",
        "karpenter.k8s.aws/instance-cpu",
        "karpenter.k8s.aws/instance-gpu-name",
        "karpenter.k8s.aws/capacity-reservation-id",
        "topology.k8s.aws/zone-id",
    ],
)
def test_spec_declares_upstream_well_known_labels(key: str) -> None:
    assert key in _spec().well_known_labels


def test_spec_restricts_the_aws_label_domain() -> None:
    assert _spec().restricted_label_domains == frozenset({GROUP})


def test_entry_point_is_installed_and_loads() -> None:
    pm = get_plugin_manager({"KARPENTER_PLUGINS": "aws"})
    assert pm.plugin_info["aws"].distribution == "karpenter-aws"
    assert "aws" in cloud_providers(pm)


def test_selecting_makes_aws_keys_selectable_but_domain_restricted(aws_env: None) -> None:
    get_cloud_provider("aws", SETTINGS, get_plugin_manager({"KARPENTER_PLUGINS": "aws"}))
    assert labels.is_restricted_label("karpenter.k8s.aws/instance-family") is False
    assert labels.is_restricted_label("karpenter.k8s.aws/made-up") is True


def test_cluster_name_is_required_to_serve_a_cluster(aws_env: None) -> None:
    pm = get_plugin_manager({"KARPENTER_PLUGINS": "aws"})
    kube = InMemoryApiServer()
    with pytest.raises(ValueError, match=re.escape("cluster-name is required (env CLUSTER_NAME)")):
        get_cloud_provider("aws", {}, pm, kube=kube)


def test_listing_instance_types_needs_no_cluster_name(aws_env: None) -> None:
    provider = get_cloud_provider("aws", {}, get_plugin_manager({"KARPENTER_PLUGINS": "aws"}))
    assert isinstance(provider, AWSCloudProvider) and provider.kube is None


def test_factory_builds_a_launching_provider_from_the_context(aws_env: None) -> None:
    provider = _spec().factory(ProviderContext(settings={**SETTINGS, "reserved-enis": "1"}))
    assert isinstance(provider, AWSCloudProvider) and isinstance(provider, CloudProvider)
    assert provider.name == "aws"
    assert provider.settings.cluster_name == "test-cluster" and provider.settings.reserved_enis == 1
    assert provider.clients.region == "us-west-2"
    assert provider.supported_node_classes() == (
        NodeClassKind("karpenter.k8s.aws", "EC2NodeClass", "v1"),
    )


def test_factory_rejects_a_bad_setting_naming_it(aws_env: None) -> None:
    with pytest.raises(ValueError, match="reserved-enis"):
        _spec().factory(ProviderContext(settings={**SETTINGS, "reserved-enis": "two"}))


def _no_aws_config(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    for var in ("AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_factory_without_credentials_is_one_clear_error(
    aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_aws_config(monkeypatch)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    with pytest.raises(ValueError, match=r"^no AWS credentials: ") as e:
        _spec().factory(ProviderContext(settings=SETTINGS, kube=InMemoryApiServer()))
    assert "\n" not in str(e.value)


def test_factory_without_region_is_one_clear_error(
    aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_aws_config(monkeypatch)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_REGION", raising=False)
    with pytest.raises(ValueError, match=re.escape("no AWS region: set AWS_REGION")):
        _spec().factory(ProviderContext(settings=SETTINGS, kube=InMemoryApiServer()))


def test_without_a_cluster_the_factory_needs_no_credentials_region_or_cluster_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_aws_config(monkeypatch)
    for var in ("AWS_DEFAULT_REGION", "AWS_REGION", "CLUSTER_NAME"):
        monkeypatch.delenv(var, raising=False)
    provider = _spec().factory(ProviderContext(settings={}))
    assert isinstance(provider, AWSCloudProvider) and provider.kube is None
    assert provider.clients.region == plugin.DEFAULT_REGION
    assert catalogue.is_offline(provider.clients)
    with pytest.raises(catalogue.OfflineError, match="offline catalogue"):
        provider.clients.ec2.describe_instances()


def test_without_a_cluster_an_unknown_region_names_the_bundled_ones() -> None:
    with pytest.raises(ValueError, match=r"bundled regions: .*us-east-1") as e:
        _spec().factory(ProviderContext(settings={"region": "xx-nowhere-1"}))
    assert "xx-nowhere-1" in str(e.value) and "\n" not in str(e.value)


def test_repair_policies_are_upstreams(aws_env: None) -> None:
    provider = _spec().factory(ProviderContext(settings=SETTINGS))
    policies = {
        (p.condition_type, p.condition_status): p.toleration for p in provider.repair_policies()
    }
    assert policies == {
        ("Ready", "False"): timedelta(minutes=30),
        ("Ready", "Unknown"): timedelta(minutes=30),
        ("AcceleratedHardwareReady", "False"): timedelta(minutes=10),
        ("StorageReady", "False"): timedelta(minutes=30),
        ("NetworkingReady", "False"): timedelta(minutes=30),
        ("KernelReady", "False"): timedelta(minutes=30),
        ("ContainerRuntimeReady", "False"): timedelta(minutes=30),
    }
    assert all(isinstance(p, RepairPolicy) for p in provider.repair_policies())
