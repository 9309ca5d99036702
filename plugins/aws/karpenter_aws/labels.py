"""AWS label keys, NodeClass kind and label domains (upstream ``pkg/apis/v1/labels.go``).

Keys are reproduced verbatim: NodePools written for upstream Karpenter on AWS select on
them, so they must mean the same thing here.
"""

from __future__ import annotations

from karpenter_core.plugin_api import NodeClassKind

GROUP = "karpenter.k8s.aws"
EC2_NODE_CLASS = NodeClassKind(group=GROUP, kind="EC2NodeClass", version="v1")

LABEL_TOPOLOGY_ZONE_ID = "topology.k8s.aws/zone-id"
LABEL_WINDOWS_BUILD = "node.kubernetes.io/windows-build"
LABEL_NODE_CLASS = f"{GROUP}/ec2nodeclass"

LABEL_CAPACITY_RESERVATION_ID = f"{GROUP}/capacity-reservation-id"
LABEL_CAPACITY_RESERVATION_TYPE = f"{GROUP}/capacity-reservation-type"
LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE = f"{GROUP}/capacity-reservation-interruptible"
LABEL_INSTANCE_HYPERVISOR = f"{GROUP}/instance-hypervisor"
LABEL_INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED = f"{GROUP}/instance-encryption-in-transit-supported"
LABEL_INSTANCE_NITRO_ENCLAVES_SUPPORTED = f"{GROUP}/nitro-sandbox"
LABEL_INSTANCE_CATEGORY = f"{GROUP}/instance-category"
LABEL_INSTANCE_CAPABILITY_FLEX = f"{GROUP}/instance-capability-flex"
LABEL_INSTANCE_FAMILY = f"{GROUP}/instance-family"
LABEL_INSTANCE_GENERATION = f"{GROUP}/instance-generation"
LABEL_INSTANCE_SIZE = f"{GROUP}/instance-size"
LABEL_INSTANCE_LOCAL_NVME = f"{GROUP}/instance-local-nvme"
LABEL_INSTANCE_CPU = f"{GROUP}/instance-cpu"
LABEL_INSTANCE_CPU_MANUFACTURER = f"{GROUP}/instance-cpu-manufacturer"
LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ = f"{GROUP}/instance-cpu-sustained-clock-speed-mhz"
LABEL_INSTANCE_MEMORY = f"{GROUP}/instance-memory"
LABEL_INSTANCE_EBS_BANDWIDTH = f"{GROUP}/instance-ebs-bandwidth"
LABEL_INSTANCE_NETWORK_BANDWIDTH = f"{GROUP}/instance-network-bandwidth"
LABEL_INSTANCE_GPU_NAME = f"{GROUP}/instance-gpu-name"
LABEL_INSTANCE_GPU_MANUFACTURER = f"{GROUP}/instance-gpu-manufacturer"
LABEL_INSTANCE_GPU_COUNT = f"{GROUP}/instance-gpu-count"
LABEL_INSTANCE_GPU_MEMORY = f"{GROUP}/instance-gpu-memory"
LABEL_INSTANCE_ACCELERATOR_NAME = f"{GROUP}/instance-accelerator-name"
LABEL_INSTANCE_ACCELERATOR_MANUFACTURER = f"{GROUP}/instance-accelerator-manufacturer"
LABEL_INSTANCE_ACCELERATOR_COUNT = f"{GROUP}/instance-accelerator-count"
LABEL_INSTANCE_TENANCY = f"{GROUP}/instance-tenancy"
LABEL_PLACEMENT_GROUP_ID = f"{GROUP}/placement-group-id"
LABEL_PLACEMENT_GROUP_PARTITION = f"{GROUP}/placement-group-partition"

WELL_KNOWN_LABELS: frozenset[str] = frozenset(
    {
        LABEL_CAPACITY_RESERVATION_ID,
        LABEL_CAPACITY_RESERVATION_TYPE,
        LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE,
        LABEL_INSTANCE_HYPERVISOR,
        LABEL_INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED,
        LABEL_INSTANCE_NITRO_ENCLAVES_SUPPORTED,
        LABEL_INSTANCE_CATEGORY,
        LABEL_INSTANCE_CAPABILITY_FLEX,
        LABEL_INSTANCE_FAMILY,
        LABEL_INSTANCE_GENERATION,
        LABEL_INSTANCE_SIZE,
        LABEL_INSTANCE_LOCAL_NVME,
        LABEL_INSTANCE_CPU,
        LABEL_INSTANCE_CPU_MANUFACTURER,
        LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ,
        LABEL_INSTANCE_MEMORY,
        LABEL_INSTANCE_EBS_BANDWIDTH,
        LABEL_INSTANCE_NETWORK_BANDWIDTH,
        LABEL_INSTANCE_GPU_NAME,
        LABEL_INSTANCE_GPU_MANUFACTURER,
        LABEL_INSTANCE_GPU_COUNT,
        LABEL_INSTANCE_GPU_MEMORY,
        LABEL_INSTANCE_ACCELERATOR_NAME,
        LABEL_INSTANCE_ACCELERATOR_MANUFACTURER,
        LABEL_INSTANCE_ACCELERATOR_COUNT,
        LABEL_TOPOLOGY_ZONE_ID,
        LABEL_INSTANCE_TENANCY,
        LABEL_WINDOWS_BUILD,
        LABEL_PLACEMENT_GROUP_ID,
        LABEL_PLACEMENT_GROUP_PARTITION,
    }
)
"""Keys NodePools may select on that instance types resolve (upstream ``WellKnownLabels``)."""

RESTRICTED_LABEL_DOMAINS: frozenset[str] = frozenset({GROUP})
"""Users may not set labels in the provider's own domain, except the well-known keys."""
