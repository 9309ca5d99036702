"""Hook implementations of karpenter-aws (entry point ``aws`` in group ``karpenter``).

The provider launches EC2 instances through CreateFleet for NodeClaims whose NodePool
names an EC2NodeClass; docs/aws.md describes setup, settings and IAM permissions.
"""

from __future__ import annotations

import os
from importlib.resources import files
from importlib.resources.abc import Traversable

import boto3  # type: ignore[import-untyped]

from karpenter_aws import catalogue
from karpenter_aws.labels import EC2_NODE_CLASS, RESTRICTED_LABEL_DOMAINS, WELL_KNOWN_LABELS
from karpenter_aws.provider import NAME, AWSCloudProvider
from karpenter_aws.settings import AWSSettings
from karpenter_core.plugin_api import (
    CloudProviderSpec,
    ControllerSpec,
    ProviderContext,
    ProviderSetting,
    hookimpl,
)

CRD_FILE = "karpenter.k8s.aws_ec2nodeclasses.yaml"
CATALOGUE_ONLY_CLUSTER = "-"
"""The cluster name a provider built without a cluster uses (it never tags or lists)."""
DEFAULT_REGION = "us-east-1"
"""The region catalogue commands list when none is set (upstream's price fallback)."""

SETTINGS = (
    ProviderSetting(
        "region",
        "The AWS region (AWS_DEFAULT_REGION and the profile's region are read too when "
        "this is empty); `karpenter instance-types --region` sets it. Without a cluster the "
        "bundled catalogue of the region is listed (us-east-1 when none is set).",
        env="AWS_REGION",
    ),
    ProviderSetting(
        "cluster-name",
        "The Kubernetes cluster name, used to discover and tag resources (required to "
        "serve a cluster; listing instance types works without it).",
        env="CLUSTER_NAME",
    ),
    ProviderSetting(
        "cluster-endpoint",
        "API server endpoint new nodes join; discovered with DescribeCluster when empty.",
        env="CLUSTER_ENDPOINT",
    ),
    ProviderSetting(
        "cluster-ca-bundle",
        "Base64 CA bundle of the API server new nodes join; discovered with DescribeCluster "
        "when empty.",
        env="CLUSTER_CA_BUNDLE",
    ),
    ProviderSetting(
        "interruption-queue",
        "SQS queue receiving EC2 interruption events; interruption handling is off when empty.",
        env="INTERRUPTION_QUEUE",
    ),
    ProviderSetting(
        "isolated-vpc",
        "Assume AWS services without a VPC endpoint (the pricing API) are unreachable.",
        default="false",
        env="ISOLATED_VPC",
    ),
    ProviderSetting(
        "reserved-enis",
        "ENIs left out of the max-pods and kube-reserved calculations.",
        default="0",
        env="RESERVED_ENIS",
    ),
    ProviderSetting(
        "vm-memory-overhead-percent",
        "Fraction of instance memory assumed lost to the hypervisor.",
        default="0.075",
        env="VM_MEMORY_OVERHEAD_PERCENT",
    ),
    ProviderSetting(
        "price-list-file",
        'A JSON file of on-demand prices ({"m5.large": 0.096, ...}, USD per hour) used '
        "where the pricing API is unreachable (isolated VPCs) or has no price for a type.",
        env="PRICE_LIST_FILE",
    ),
)


def crds() -> tuple[Traversable, ...]:
    """The EC2NodeClass CRD (package data), when the installed package ships it."""
    crd = files("karpenter_aws") / "crds" / CRD_FILE
    return (crd,) if crd.is_file() else ()


def make_provider(context: ProviderContext) -> AWSCloudProvider:
    """The spec's factory: typed settings, boto3 clients from the standard chain.

    Without a cluster (catalogue commands) no AWS client is made at all: the provider
    lists the bundled catalogue of the region (:mod:`karpenter_aws.catalogue`).

    Raises ``ValueError`` (one line for ``karpenter serve``) for a bad setting, no region
    or no credentials: every later call would fail with a less helpful botocore error.
    """
    from karpenter_aws.clients import AWSClients

    raw = dict(context.settings)
    # AWS_REGION is what the Go SDK (and upstream's docs) use; boto3 reads only
    # AWS_DEFAULT_REGION and profiles, so honour both.
    region = (raw.get("region") or os.environ.get("AWS_REGION") or "").strip() or None
    if context.kube is None:
        # No cluster (``karpenter instance-types`` / ``schedule``): the bundled catalogue,
        # no credentials, no network, none of the settings only launching needs.
        raw["cluster-name"] = (raw.get("cluster-name") or "").strip() or CATALOGUE_ONLY_CLUSTER
        settings = AWSSettings.from_mapping(raw)
        region = region or os.environ.get("AWS_DEFAULT_REGION", "").strip() or DEFAULT_REGION
        if region not in catalogue.REGIONS:
            raise catalogue.DATA.unknown_region(region)
        return AWSCloudProvider(
            catalogue.offline_clients(region),
            settings,
            None,
            context.clock,
            context.recorder,
            node_classes=context.node_classes,
        )
    settings = AWSSettings.from_mapping(raw)
    session = boto3.session.Session()
    clients = AWSClients.create(region, session=session)
    if session.get_credentials() is None:
        raise ValueError(
            "no AWS credentials: set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, a profile "
            "(AWS_PROFILE), web identity (IRSA / EKS Pod Identity) or run where instance "
            "metadata provides a role"
        )
    return AWSCloudProvider(clients, settings, context.kube, context.clock, context.recorder)


@hookimpl
def karpenter_cloud_providers() -> list[CloudProviderSpec]:
    return [
        CloudProviderSpec(
            name=NAME,
            factory=make_provider,
            node_classes=(EC2_NODE_CLASS,),
            well_known_labels=WELL_KNOWN_LABELS,
            restricted_label_domains=RESTRICTED_LABEL_DOMAINS,
            settings=SETTINGS,
            can_launch=True,
            crds=crds(),
            description="Amazon EC2 (EC2NodeClass): launches instances with CreateFleet from "
            "the instance types, subnets, security groups and AMIs an EC2NodeClass resolves; "
            "spot and on-demand, drift, interruption via SQS; offline catalogue and prices for 33 "
            "regions",
        )
    ]


@hookimpl
def karpenter_controllers() -> list[ControllerSpec]:
    """nodeclass.status, interruption, the catalogue refresh and tagging (with ``aws``)."""
    from karpenter_aws.controllers import CONTROLLERS

    return list(CONTROLLERS)
