"""The AWS provider passes the provider conformance suite (karpenter_core.testing), built
by its own factory with boto3 against moto's server."""

from __future__ import annotations

from pathlib import Path

import pytest
from karpenter_aws import plugin
from karpenter_aws.clients import AWSClients
from karpenter_aws.provider import AWSCloudProvider
from test_provider import ALLOWED, CLUSTER, Env, nodeclaim

from karpenter_core.plugin_api import CloudProvider, NodeClaim, ProviderContext
from karpenter_core.testing.conformance import CloudProviderConformance, ConformanceTarget


def _exhaust(provider: CloudProvider, claim: NodeClaim) -> None:
    """Every offering the NodeClaim allows is out of capacity (what the provider records
    from CreateFleet's InsufficientInstanceCapacity errors)."""
    assert isinstance(provider, AWSCloudProvider)
    zones = [
        z["ZoneName"]
        for z in provider.clients.ec2.describe_availability_zones()["AvailabilityZones"]
    ]
    for instance_type in ALLOWED:
        for zone in zones:
            provider.unavailable.mark(
                instance_type, zone, "on-demand", "InsufficientInstanceCapacity"
            )


class TestAwsConformance(CloudProviderConformance):
    @pytest.fixture
    def conformance_target(
        self,
        clients: AWSClients,
        moto_endpoint: str,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> ConformanceTarget:
        env = Env(clients, tmp_path)  # moto seeded: VPC, subnets, groups, AMI, role, cluster
        monkeypatch.setenv("AWS_ENDPOINT_URL", moto_endpoint)
        monkeypatch.setenv("AWS_REGION", clients.region)

        def cluster() -> ProviderContext:
            return ProviderContext(kube=env.server, clock=env.clock, recorder=env.recorder)

        def launchable(provider: CloudProvider) -> NodeClaim:
            env.nodeclass()  # created and resolved by the status controller
            env.nodepool()
            return nodeclaim()

        (spec,) = plugin.karpenter_cloud_providers()
        return ConformanceTarget(
            spec=spec,
            settings={
                "cluster-name": CLUSTER,
                "cluster-endpoint": "https://k8s.example",
                "price-list-file": env.settings.price_list_file or "",
            },
            cluster=cluster,
            nodeclaim=launchable,
            exhaust_capacity=_exhaust,
            missing_provider_id="aws:///us-west-2a/i-0123456789abcdef0",
        )
