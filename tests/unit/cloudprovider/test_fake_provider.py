"""The fake cloud provider controller tests share (karpenter_core.cloudprovider.fake)."""

from __future__ import annotations

import types

import pytest

from karpenter_core.cloudprovider import CloudProvider, NodeClaimNotFoundError, RepairPolicy
from karpenter_core.cloudprovider.fake import KWOK_NODE_CLASS, FakeCloudProvider
from karpenter_core.provisioning.scheduler import fakecatalog


def _pool(name: str) -> types.SimpleNamespace:
    return types.SimpleNamespace(name=name)


def test_it_is_a_cloud_provider_serving_the_fake_catalogue() -> None:
    fake = FakeCloudProvider()
    assert isinstance(fake, CloudProvider)
    names = [it.name for it in fake.get_instance_types(_pool("default"))]
    assert names == [it.name for it in fakecatalog.instance_types(5)]
    assert fake.supported_node_classes() == [KWOK_NODE_CLASS]


def test_a_pool_in_fail_for_cannot_read_its_catalogue_and_reads_are_counted() -> None:
    fake = FakeCloudProvider(fail_message="node class not found")
    fake.fail_for.add("broken")
    assert fake.get_instance_types(_pool("ok"))
    with pytest.raises(RuntimeError, match="node class not found"):
        fake.get_instance_types(_pool("broken"))
    assert fake.calls == 2


def test_instances_are_always_gone_and_launching_is_refused() -> None:
    fake = FakeCloudProvider(repair_policies=[RepairPolicy("Ready", "False", 600.0)])
    with pytest.raises(NodeClaimNotFoundError):
        fake.get("fake://x")
    with pytest.raises(NodeClaimNotFoundError):
        fake.delete(object())
    with pytest.raises(NotImplementedError):
        fake.create(object())
    assert fake.list() == []
    assert fake.is_drifted(object()) == ""
    fake.drift_reason = "ImageChanged"
    assert fake.is_drifted(object()) == "ImageChanged"
    assert [p.condition_type for p in fake.repair_policies()] == ["Ready"]
