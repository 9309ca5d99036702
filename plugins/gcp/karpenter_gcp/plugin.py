"""Hook implementations of karpenter-gcp (entry point ``gcp`` in group ``karpenter``).

The GCP provider is a skeleton: it registers its NodeClass kind, well-known labels and
settings so NodePools written for Karpenter on GKE validate, but it cannot launch
instances yet (``can_launch=False``).
"""

from __future__ import annotations

from karpenter_core.plugin_api import CloudProviderSpec, ProviderContext, ProviderSetting, hookimpl
from karpenter_gcp.labels import GCE_NODE_CLASS, RESTRICTED_LABEL_DOMAINS, WELL_KNOWN_LABELS
from karpenter_gcp.provider import NAME, GCPCloudProvider

SETTINGS = (
    ProviderSetting(
        "project-id",
        "GCP project id of the GKE cluster.",
        required=True,
        env="PROJECT_ID",
    ),
    ProviderSetting(
        "cluster-location",
        "GCP region used for machine-type discovery (us-central1).",
        required=True,
        env="CLUSTER_LOCATION",
    ),
    ProviderSetting(
        "cluster-name",
        "Name of the GKE cluster new nodes join.",
        required=True,
        env="CLUSTER_NAME",
    ),
    ProviderSetting(
        "node-location",
        "Exact location of the cluster for API calls; defaults to cluster-location.",
        env="NODE_LOCATION",
    ),
    ProviderSetting(
        "vm-memory-overhead-percent",
        "Fraction of machine memory assumed lost to the hypervisor.",
        default="0.07",
        env="VM_MEMORY_OVERHEAD_PERCENT",
    ),
)


def make_provider(context: ProviderContext) -> GCPCloudProvider:
    """The spec's factory: this skeleton needs only its resolved settings."""
    return GCPCloudProvider(context.settings)


@hookimpl
def karpenter_cloud_providers() -> list[CloudProviderSpec]:
    return [
        CloudProviderSpec(
            name=NAME,
            factory=make_provider,
            node_classes=(GCE_NODE_CLASS,),
            well_known_labels=WELL_KNOWN_LABELS,
            restricted_label_domains=RESTRICTED_LABEL_DOMAINS,
            settings=SETTINGS,
            can_launch=False,
            description="Google Compute Engine / GKE (GCENodeClass); labels and settings only, launching not implemented yet",
        )
    ]
