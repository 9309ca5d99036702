"""Hook implementations of karpenter-aws (entry point ``aws`` in group ``karpenter``).

The AWS provider is a skeleton: it registers its NodeClass kind, well-known labels and
settings so NodePools written for upstream Karpenter on AWS validate, but it cannot
launch instances yet (``can_launch=False``).
"""

from __future__ import annotations

from karpenter_aws.labels import EC2_NODE_CLASS, RESTRICTED_LABEL_DOMAINS, WELL_KNOWN_LABELS
from karpenter_aws.provider import NAME, AWSCloudProvider
from karpenter_core.hookspecs import CloudProviderSpec, ProviderContext, ProviderSetting
from karpenter_core.plugins import hookimpl

SETTINGS = (
    ProviderSetting(
        "cluster-name",
        "The Kubernetes cluster name, used to discover and tag resources.",
        required=True,
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


def make_provider(context: ProviderContext) -> AWSCloudProvider:
    """The spec's factory: this skeleton needs only its resolved settings."""
    return AWSCloudProvider(context.settings)


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
            can_launch=False,
            description="Amazon EC2 (EC2NodeClass); labels and settings only, launching not implemented yet",
        )
    ]
