"""GCP label keys, NodeClass kind and label domains (cloudpilot-ai provider,
``pkg/apis/v1alpha1/labels.go`` and ``pkg/providers/disktype``).

Keys are reproduced verbatim so NodePools written for Karpenter on GKE keep their meaning.
The GKE readiness-gate labels are well known so DaemonSets selecting on them count in
the node overhead simulation.
"""

from __future__ import annotations

from karpenter_core.plugin_api import NodeClassKind

GROUP = "karpenter.k8s.gcp"
GCE_NODE_CLASS = NodeClassKind(group=GROUP, kind="GCENodeClass", version="v1alpha1")

LABEL_NODE_CLASS = f"{GROUP}/gcenodeclass"
LABEL_TOPOLOGY_ZONE_ID = "topology.k8s.gcp/zone-id"
LABEL_WINDOWS_BUILD = "node.kubernetes.io/windows-build"
LABEL_INSTANCE_FAMILY = f"{GROUP}/instance-family"
LABEL_INSTANCE_SHAPE = f"{GROUP}/instance-shape"
LABEL_INSTANCE_GENERATION = f"{GROUP}/instance-generation"
LABEL_INSTANCE_SIZE = f"{GROUP}/instance-size"
LABEL_INSTANCE_CPU = f"{GROUP}/instance-cpu"
LABEL_INSTANCE_MEMORY = f"{GROUP}/instance-memory"
LABEL_INSTANCE_GPU_NAME = f"{GROUP}/instance-gpu-name"
LABEL_INSTANCE_GPU_MANUFACTURER = f"{GROUP}/instance-gpu-manufacturer"
LABEL_INSTANCE_GPU_COUNT = f"{GROUP}/instance-gpu-count"
LABEL_INSTANCE_GPU_MEMORY = f"{GROUP}/instance-gpu-memory"

LABEL_GKE_READINESS_CALICO_READY = "projectcalico.org/ds-ready"
LABEL_GKE_READINESS_METADATA_SERVER_ENABLED = "iam.gke.io/gke-metadata-server-enabled"
LABEL_GKE_READINESS_MASQ_AGENT_READY = "node.kubernetes.io/masq-agent-ds-ready"
LABEL_GKE_READINESS_NETD_READY = "cloud.google.com/gke-netd-ready"
LABEL_GKE_READINESS_NODE_LOCAL_DNS_READY = "addon.gke.io/node-local-dns-ds-ready"
LABEL_GKE_ACCELERATOR = "cloud.google.com/gke-accelerator"
LABEL_GKE_CPU_SCALING_LEVEL = "cloud.google.com/gke-cpu-scaling-level"

DISK_TYPE_LABEL_PREFIX = "disk-type.gke.io/"
DISK_TYPES = (
    "hyperdisk-balanced",
    "hyperdisk-balanced-high-availability",
    "hyperdisk-extreme",
    "hyperdisk-ml",
    "hyperdisk-throughput",
    "pd-balanced",
    "pd-extreme",
    "pd-ssd",
    "pd-standard",
)
"""Persistent-disk types a machine family may support; each is a ``disk-type.gke.io/<type>``
label set to ``"true"`` on compatible nodes."""

WELL_KNOWN_LABELS: frozenset[str] = frozenset(
    {
        LABEL_INSTANCE_FAMILY,
        LABEL_INSTANCE_SHAPE,
        LABEL_INSTANCE_GENERATION,
        LABEL_INSTANCE_SIZE,
        LABEL_INSTANCE_CPU,
        LABEL_INSTANCE_MEMORY,
        LABEL_INSTANCE_GPU_NAME,
        LABEL_INSTANCE_GPU_MANUFACTURER,
        LABEL_INSTANCE_GPU_COUNT,
        LABEL_INSTANCE_GPU_MEMORY,
        LABEL_TOPOLOGY_ZONE_ID,
        LABEL_WINDOWS_BUILD,
        LABEL_GKE_READINESS_CALICO_READY,
        LABEL_GKE_READINESS_METADATA_SERVER_ENABLED,
        LABEL_GKE_READINESS_MASQ_AGENT_READY,
        LABEL_GKE_READINESS_NETD_READY,
        LABEL_GKE_READINESS_NODE_LOCAL_DNS_READY,
        LABEL_GKE_ACCELERATOR,
        LABEL_GKE_CPU_SCALING_LEVEL,
    }
    | {DISK_TYPE_LABEL_PREFIX + t for t in DISK_TYPES}
)
"""Keys NodePools may select on that instance types resolve (upstream ``WellKnownLabels``)."""

RESTRICTED_LABEL_DOMAINS: frozenset[str] = frozenset({GROUP})
"""Users may not set labels in ``karpenter.k8s.gcp``, except the well-known keys."""
