"""Hook implementations of karpenter-gcp (entry point ``gcp`` in group ``karpenter``).

The GCP provider launches one GCE instance per NodeClaim for a GKE cluster, shaped by a
GCENodeClass and bootstrapped from one of the cluster's node pools; docs/gcp.md describes
setup, settings, IAM roles and what is left out.
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable

from karpenter_core.plugin_api import (
    CloudProviderSpec,
    ControllerSpec,
    ProviderContext,
    ProviderSetting,
    hookimpl,
)
from karpenter_gcp.labels import GCE_NODE_CLASS, RESTRICTED_LABEL_DOMAINS, WELL_KNOWN_LABELS
from karpenter_gcp.nodeclass import CRD_FILE  # registers the GCENodeClass resource type
from karpenter_gcp.provider import NAME, GCPCloudProvider

SETTINGS = (
    ProviderSetting(
        "project-id",
        "[required to serve] GCP project id of the GKE cluster.",
        env="PROJECT_ID",
    ),
    ProviderSetting(
        "region",
        "[required to serve] The cluster's region (upstream's cluster-location, us-central1): "
        "machine types, prices and zones; catalogue commands default to us-central1.",
        env="CLUSTER_LOCATION",
    ),
    ProviderSetting(
        "node-location",
        "Exact location of the cluster for GKE API calls (us-central1-a for a zonal "
        "cluster); defaults to the region.",
        env="NODE_LOCATION",
    ),
    ProviderSetting(
        "cluster-name",
        "[required to serve] Name of the GKE cluster new nodes join.",
        env="CLUSTER_NAME",
    ),
    ProviderSetting(
        "vm-memory-overhead-percent",
        "Fraction of machine memory assumed lost to the hypervisor.",
        default="0.07",
        env="VM_MEMORY_OVERHEAD_PERCENT",
    ),
    ProviderSetting(
        "default-nodepool-service-account",
        "Service account of nodes whose GCENodeClass names none (and of the fallback pool).",
        default="",
        env="DEFAULT_NODEPOOL_SERVICE_ACCOUNT",
    ),
    ProviderSetting(
        "default-nodepool-template-name",
        "Pin the node pool whose instance template supplies the bootstrap.",
        default="",
        env="DEFAULT_NODEPOOL_TEMPLATE_NAME",
    ),
    ProviderSetting(
        "interruption",
        "Interruption handling (accepted for upstream compatibility; not implemented).",
        default="true",
        env="INTERRUPTION",
    ),
    ProviderSetting(
        "kubernetes-version",
        "The cluster's Kubernetes version, for image resolution when the API server's "
        "/version is not reachable through the kube client.",
        default="",
        env="KUBERNETES_VERSION",
    ),
)


def crds() -> tuple[Traversable, ...]:
    """The GCENodeClass CRD (package data), when the installed package ships it."""
    crd = files("karpenter_gcp") / "crds" / CRD_FILE
    return (crd,) if crd.is_file() else ()


def make_provider(context: ProviderContext) -> GCPCloudProvider:
    """The spec's factory: typed settings; Google Cloud clients when a cluster is served.

    Without a cluster (``karpenter instance-types`` / ``schedule``) nothing but a region is
    read and no credential is needed (the bundled snapshot). With one, the project, region
    and cluster name must be set — one ``ValueError`` line lists what is missing — and
    Application Default Credentials (or the ``GCP_COMPUTE_ENDPOINT`` /
    ``GCP_CONTAINER_ENDPOINT`` overrides) must be available.
    """
    from karpenter_gcp.settings import GCPSettings

    settings = GCPSettings.from_mapping(context.settings)
    if context.kube is None:
        return GCPCloudProvider(settings, clock=context.clock, recorder=context.recorder)
    problems = settings.launch_problems()
    if problems:
        raise ValueError("cannot serve with gcp: " + "; ".join(problems))
    from karpenter_gcp.clients import GCPClients

    return GCPCloudProvider(
        settings,
        clients=GCPClients.create(),
        kube=context.kube,
        clock=context.clock,
        recorder=context.recorder,
    )


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
            can_launch=True,
            crds=crds(),
            description="Google Compute Engine for GKE (GCENodeClass): launches instances "
            "bootstrapped from a node pool's template, from machine types and prices, spot "
            "and on-demand, drift; offline catalogue for us-central1, us-east1, europe-west4",
        )
    ]


@hookimpl
def karpenter_controllers() -> list[ControllerSpec]:
    """nodeclass.status, the catalogue refresh and the CSR approver (with ``gcp``)."""
    from karpenter_gcp.controllers import CONTROLLERS

    return list(CONTROLLERS)
