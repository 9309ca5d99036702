"""The KWOK provider passes the provider conformance suite (karpenter_core.testing)."""

from __future__ import annotations

import pytest
from karpenter_kwok import plugin

from karpenter_core.plugin_api import (
    CloudProvider,
    EventRecorder,
    NodeClaim,
    OfferingOutage,
    ProviderContext,
    WallClock,
)
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.testing import builders
from karpenter_core.testing.conformance import CloudProviderConformance, ConformanceTarget

INSTANCE_TYPE = "c-1x-amd64-linux"


def _cluster() -> ProviderContext:
    clock = WallClock()  # KWOK registers the Node inside create() on a wall clock
    return ProviderContext(
        kube=InMemoryApiServer(clock), clock=clock, recorder=EventRecorder(clock)
    )


def _nodeclaim(provider: CloudProvider) -> NodeClaim:
    return NodeClaim.from_dict(
        builders.nodeclaim(
            "default-conform",
            nodepool="default",
            requirements=[
                builders.requirement("node.kubernetes.io/instance-type", "In", INSTANCE_TYPE)
            ],
        )
    )


def _register(cluster: ProviderContext, nodeclaim: NodeClaim) -> None:
    """The core's registration makes the Node its NodeClaim's dependent; deleting the
    NodeClaim then removes the Node (the garbage collector's cascade)."""
    assert cluster.kube is not None and nodeclaim.status is not None
    owner = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "name": nodeclaim.name,
        "uid": nodeclaim.metadata.uid,
        "blockOwnerDeletion": True,
    }
    node = str(nodeclaim.status.node_name)
    cluster.kube.patch("nodes", node, {"metadata": {"ownerReferences": [owner]}})


def _exhaust(provider: CloudProvider, nodeclaim: NodeClaim) -> None:
    provider.add_offering_outage(OfferingOutage(instance_type=INSTANCE_TYPE))  # type: ignore[attr-defined]


class TestKwokConformance(CloudProviderConformance):
    @pytest.fixture
    def conformance_target(self) -> ConformanceTarget:
        (spec,) = plugin.karpenter_cloud_providers()
        return ConformanceTarget(
            spec=spec,
            cluster=_cluster,
            nodeclaim=_nodeclaim,
            exhaust_capacity=_exhaust,
            register=_register,
            missing_provider_id="kwok://no-such-node",
        )
