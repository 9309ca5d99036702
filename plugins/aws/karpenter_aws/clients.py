"""The boto3 clients the AWS provider uses, built once from one session.

Credentials, region and endpoint follow boto3's own resolution (``AWS_REGION``,
``AWS_ENDPOINT_URL``, profiles, IMDS), exactly as upstream's aws-sdk-go config does, so
``karpenter serve --cloud-provider aws`` in a pod with IRSA or Pod Identity needs no
extra flags. Tests point every client at moto's server with ``endpoint_url``.

The pricing API lives in only a few regions: its client is built for the one nearest
the cluster's region (:func:`pricing_region`).
"""

from __future__ import annotations

from typing import Any

import boto3
from attrs import frozen
from botocore.config import Config

__all__ = ["AWSClients", "pricing_region"]

# Retries with client-side backoff, as the SDK's standard mode; Karpenter's own loops retry
# on top of this.
_CONFIG = Config(retries={"max_attempts": 3, "mode": "standard"}, user_agent_extra="karpenter-core")


def pricing_region(region: str) -> str:
    """The pricing API endpoint region serving ``region``'s prices."""
    if region.startswith("ap-"):
        return "ap-south-1"
    if region.startswith("eu-"):
        return "eu-central-1"
    if region.startswith("cn-"):
        return "cn-northwest-1"
    return "us-east-1"


@frozen
class AWSClients:
    """One boto3 client per service the provider calls (all thread-safe)."""

    region: str
    ec2: Any
    ssm: Any
    iam: Any
    pricing: Any
    sqs: Any
    eks: Any

    @classmethod
    def create(
        cls,
        region: str | None = None,
        *,
        endpoint_url: str | None = None,
        session: boto3.session.Session | None = None,
    ) -> AWSClients:
        """Clients for ``region`` (boto3's default region when None).

        Raises ``ValueError`` when no region can be found: every EC2 call needs one and
        the error boto3 would give later names none of the ways to set it.
        """
        session = session or boto3.session.Session()
        region = region or session.region_name
        if not region:
            raise ValueError(
                "no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION, or a profile's region)"
            )

        def client(service: str, in_region: str = region) -> Any:
            return session.client(
                service, region_name=in_region, endpoint_url=endpoint_url, config=_CONFIG
            )

        return cls(
            region=region,
            ec2=client("ec2"),
            ssm=client("ssm"),
            iam=client("iam"),
            pricing=client("pricing", pricing_region(region)),
            sqs=client("sqs"),
            eks=client("eks"),
        )
