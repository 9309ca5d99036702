"""The Azure provider passes the provider conformance suite (karpenter_core.testing), built
by its own factory, its SDK clients talking HTTPS to the fake ARM server."""

from __future__ import annotations

import pytest
from fakearm import FakeARM
from karpenter_azure import plugin
from karpenter_azure.provider import AzureCloudProvider
from test_azure_provider import REGION, RG, SKU, SUBNET, SUBSCRIPTION, Env, nodeclaim

from karpenter_core.plugin_api import CloudProvider, NodeClaim, ProviderContext
from karpenter_core.testing.conformance import CloudProviderConformance, ConformanceTarget


def _exhaust(provider: CloudProvider, claim: NodeClaim) -> None:
    """Every offering the NodeClaim allows is out of capacity (what the provider records
    from ARM's allocation and SKU-availability errors)."""
    assert isinstance(provider, AzureCloudProvider)
    for it in provider.catalogue.instance_types(None):
        if it.name != SKU:
            continue
        for offering in it.offerings:
            provider.unavailable.mark(
                SKU, offering.zone, offering.capacity_type, "AllocationFailed"
            )


class TestAzureConformance(CloudProviderConformance):
    @pytest.fixture
    def conformance_target(self, arm_env: FakeARM) -> ConformanceTarget:
        from karpenter_azure.clients import AzureClients

        env = Env(AzureClients.create(SUBSCRIPTION))

        def cluster() -> ProviderContext:
            return ProviderContext(kube=env.server, clock=env.clock, recorder=env.recorder)

        def launchable(provider: CloudProvider) -> NodeClaim:
            env.nodeclass()
            env.nodepool()
            return nodeclaim()

        (spec,) = plugin.karpenter_cloud_providers()
        return ConformanceTarget(
            spec=spec,
            settings={
                "region": REGION,
                "subscription-id": SUBSCRIPTION,
                "cluster-name": "cluster",
                "cluster-endpoint": "https://cluster.hcp.example:443",
                "kubelet-bootstrap-token": "abcdef.0123456789abcdef",
                "ssh-public-key": "ssh-ed25519 AAAAC3Nza test",
                "vnet-subnet-id": SUBNET,
                "node-resource-group": RG,
                "cluster-ca-bundle": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==",
            },
            cluster=cluster,
            nodeclaim=launchable,
            exhaust_capacity=_exhaust,
            missing_provider_id=(
                f"azure:///subscriptions/{SUBSCRIPTION}/resourceGroups/{RG.lower()}/providers/"
                "Microsoft.Compute/virtualMachines/aks-missing"
            ),
        )
