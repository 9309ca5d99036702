"""The kit's fake cloud provider (karpenter_core.testing.fake): its catalogue, the launches
it pretends to make, the failures a test scripts, and the Nodes it registers."""

from __future__ import annotations

import types
from typing import Any

import pytest

from karpenter_core.apis import labels as wk
from karpenter_core.apis.v1 import NodeClaim
from karpenter_core.cloudprovider import (
    CloudProvider,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    RepairPolicy,
)
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.testing import builders, fakecatalog
from karpenter_core.testing.fake import KWOK_NODE_CLASS, FakeCloudProvider


def _pool(name: str) -> types.SimpleNamespace:
    return types.SimpleNamespace(name=name)


def _claim(name: str = "nc", **kw: Any) -> NodeClaim:
    return NodeClaim.from_dict(builders.nodeclaim(name, nodepool="default", **kw))


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


def test_a_pool_can_have_a_catalogue_of_its_own() -> None:
    fake = FakeCloudProvider()
    fake.its_for["small"] = fakecatalog.instance_types(1)
    assert [it.name for it in fake.get_instance_types(_pool("small"))] == ["fake-it-0"]
    assert len(fake.get_instance_types(_pool("other"))) == 5


def test_instances_it_never_launched_are_gone() -> None:
    fake = FakeCloudProvider(repair_policies=[RepairPolicy("Ready", "False", 600.0)])
    with pytest.raises(NodeClaimNotFoundError):
        fake.get("fake://x")
    with pytest.raises(NodeClaimNotFoundError):
        fake.delete(_claim(provider_id="fake://x"))
    assert fake.list() == []
    assert fake.is_drifted(object()) == ""
    fake.drift_reason = "ImageChanged"
    assert fake.is_drifted(object()) == "ImageChanged"
    assert [p.condition_type for p in fake.repair_policies()] == ["Ready"]


def test_create_launches_the_cheapest_type_the_claim_allows() -> None:
    fake = FakeCloudProvider()
    launched = fake.create(
        _claim(
            requirements=[builders.requirement(wk.CAPACITY_TYPE_LABEL_KEY, "In", "on-demand")],
            requests={"cpu": "1500m"},
        )
    )
    # fake-it-0 has 1 vCPU, so 1.5 CPU needs fake-it-1, the next cheapest
    labels = launched.metadata.labels
    assert labels[wk.LABEL_INSTANCE_TYPE] == "fake-it-1"
    assert labels[wk.CAPACITY_TYPE_LABEL_KEY] == "on-demand"
    assert labels[wk.NODEPOOL_LABEL_KEY] == "default"
    assert launched.provider_id == "fake:///nc/1"
    assert launched.status is not None and launched.status.capacity["cpu"] == "2"
    assert fake.get(launched.provider_id) is launched
    assert fake.list() == [launched]
    assert fake.create_calls == ["nc"]


def test_create_fails_with_insufficient_capacity_when_nothing_fits() -> None:
    fake = FakeCloudProvider()
    with pytest.raises(InsufficientCapacityError, match="nodeclaim 'nc'"):
        fake.create(_claim(requests={"cpu": "64"}))
    assert fake.list() == []


def test_scripted_errors_are_raised_in_order_by_the_next_calls() -> None:
    fake = FakeCloudProvider()
    fake.create_errors = [InsufficientCapacityError("first"), RuntimeError("second")]
    with pytest.raises(InsufficientCapacityError, match="first"):
        fake.create(_claim())
    with pytest.raises(RuntimeError, match="second"):
        fake.create(_claim())
    assert fake.create(_claim()).provider_id
    assert fake.create_calls == ["nc"]  # the calls that got past the scripted errors


def test_create_then_raise_launches_and_then_fails_once() -> None:
    fake = FakeCloudProvider()
    fake.create_then_raise = TimeoutError("timed out")
    with pytest.raises(TimeoutError):
        fake.create(_claim())
    assert len(fake.list()) == 1
    fake.create(_claim("other"))
    assert len(fake.list()) == 2


def test_delete_terminates_then_reports_the_instance_gone() -> None:
    fake = FakeCloudProvider()
    fake.delete_polls = 1
    launched = fake.create(_claim())
    fake.delete(launched)  # shutting down
    assert fake.list() == [launched]
    fake.delete(launched)  # gone now
    assert fake.list() == []
    with pytest.raises(NodeClaimNotFoundError):
        fake.delete(launched)
    assert fake.delete_calls == [launched.provider_id] * 3


def test_an_instance_can_be_added_by_hand() -> None:
    fake = FakeCloudProvider()
    fake.add_instance("fake://by-hand")
    assert fake.get("fake://by-hand").provider_id == "fake://by-hand"
    assert fake.get_calls == ["fake://by-hand"]


def test_with_a_cluster_client_the_launched_instance_registers_its_node() -> None:
    server = InMemoryApiServer(VirtualClock())
    fake = FakeCloudProvider(kube=server)
    launched = fake.create(
        _claim(startup_taints=[{"key": "cni", "effect": "NoSchedule"}], labels={"team": "a"})
    )
    node = server.get("nodes", "nc")
    assert node["spec"]["providerID"] == launched.provider_id
    assert node["metadata"]["labels"]["team"] == "a"
    assert node["metadata"]["labels"][wk.LABEL_HOSTNAME] == "nc"
    assert {t["key"] for t in node["spec"]["taints"]} == {"cni", wk.UNREGISTERED_TAINT_KEY}
    assert node["status"]["capacity"] == launched.status.capacity  # type: ignore[union-attr]
