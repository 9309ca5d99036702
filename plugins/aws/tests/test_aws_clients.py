"""AWSClients against moto's server: one client per service, in the right regions."""

from __future__ import annotations

import boto3
import pytest
from karpenter_aws.clients import AWSClients, pricing_region


def test_the_clients_reach_moto_in_the_cluster_region(clients: AWSClients) -> None:
    zones = clients.ec2.describe_availability_zones()["AvailabilityZones"]
    assert zones and {z["RegionName"] for z in zones} == {"us-west-2"}
    assert clients.ec2.meta.region_name == "us-west-2"
    assert clients.pricing.meta.region_name == "us-east-1"


@pytest.mark.parametrize(
    ("region", "endpoint"),
    [
        ("us-west-2", "us-east-1"),
        ("ap-northeast-1", "ap-south-1"),
        ("eu-west-3", "eu-central-1"),
        ("cn-north-1", "cn-northwest-1"),
        ("sa-east-1", "us-east-1"),
    ],
)
def test_pricing_endpoint_region(region: str, endpoint: str) -> None:
    assert pricing_region(region) == endpoint


def test_no_region_is_a_clear_error(aws_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    with pytest.raises(ValueError, match="no AWS region"):
        AWSClients.create(session=boto3.session.Session())
