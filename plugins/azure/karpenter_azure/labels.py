"""Azure label keys, NodeClass kind and label domains (upstream ``pkg/apis/v1beta1/labels.go``).

Keys are reproduced verbatim so NodePools written for upstream Karpenter on AKS keep
their meaning. ``kubernetes.azure.com`` is deliberately *not* a restricted domain: users
may set some of its keys (upstream makes the same choice).
"""

from __future__ import annotations

from karpenter_core.plugin_api import NodeClassKind

GROUP = "karpenter.azure.com"
AKS_NODE_CLASS = NodeClassKind(group=GROUP, kind="AKSNodeClass", version="v1beta1")
AKS_LABEL_DOMAIN = "kubernetes.azure.com"

LABEL_NODE_CLASS = f"{GROUP}/aksnodeclass"
LABEL_SKU_NAME = f"{GROUP}/sku-name"
LABEL_SKU_FAMILY = f"{GROUP}/sku-family"
LABEL_SKU_SERIES = f"{GROUP}/sku-series"
LABEL_SKU_VERSION = f"{GROUP}/sku-version"
LABEL_SKU_CPU = f"{GROUP}/sku-cpu"
LABEL_SKU_MEMORY = f"{GROUP}/sku-memory"
LABEL_SKU_ACCELERATED_NETWORKING = f"{GROUP}/sku-networking-accelerated"
LABEL_SKU_STORAGE_PREMIUM_CAPABLE = f"{GROUP}/sku-storage-premium-capable"
LABEL_SKU_STORAGE_EPHEMERAL_OS_MAX_SIZE = f"{GROUP}/sku-storage-ephemeralos-maxsize"
LABEL_SKU_STORAGE_ULTRA_SSD = f"{GROUP}/sku-storage-ultra-ssd"
LABEL_SKU_GPU_NAME = f"{GROUP}/sku-gpu-name"
LABEL_SKU_GPU_MANUFACTURER = f"{GROUP}/sku-gpu-manufacturer"
LABEL_SKU_GPU_COUNT = f"{GROUP}/sku-gpu-count"
LABEL_PLACEMENT_SCOPE = f"{GROUP}/placement-scope"
LABEL_SKU_HYPERV_GENERATION = f"{GROUP}/sku-hyperv-generation"

AKS_LABEL_CPU = f"{AKS_LABEL_DOMAIN}/sku-cpu"
AKS_LABEL_MEMORY = f"{AKS_LABEL_DOMAIN}/sku-memory"
AKS_LABEL_CLUSTER = f"{AKS_LABEL_DOMAIN}/cluster"
AKS_LABEL_MODE = f"{AKS_LABEL_DOMAIN}/mode"
AKS_LABEL_SCALE_SET_PRIORITY = f"{AKS_LABEL_DOMAIN}/scalesetpriority"
AKS_LABEL_PRIORITY = f"{AKS_LABEL_DOMAIN}/priority"
AKS_LABEL_OS_SKU = f"{AKS_LABEL_DOMAIN}/os-sku"
AKS_LABEL_FIPS_ENABLED = f"{AKS_LABEL_DOMAIN}/fips_enabled"

WELL_KNOWN_LABELS: frozenset[str] = frozenset(
    {
        LABEL_SKU_NAME,
        LABEL_SKU_FAMILY,
        LABEL_SKU_SERIES,
        LABEL_SKU_VERSION,
        LABEL_SKU_CPU,
        LABEL_SKU_MEMORY,
        AKS_LABEL_CPU,
        AKS_LABEL_MEMORY,
        LABEL_SKU_ACCELERATED_NETWORKING,
        LABEL_SKU_STORAGE_PREMIUM_CAPABLE,
        LABEL_SKU_STORAGE_EPHEMERAL_OS_MAX_SIZE,
        LABEL_SKU_STORAGE_ULTRA_SSD,
        LABEL_SKU_GPU_NAME,
        LABEL_SKU_GPU_MANUFACTURER,
        LABEL_SKU_GPU_COUNT,
        LABEL_PLACEMENT_SCOPE,
        AKS_LABEL_CLUSTER,
        AKS_LABEL_MODE,
        AKS_LABEL_SCALE_SET_PRIORITY,
        AKS_LABEL_PRIORITY,
        AKS_LABEL_OS_SKU,
        AKS_LABEL_FIPS_ENABLED,
    }
)
"""Keys NodePools may select on that instance types resolve (upstream ``AzureWellKnownLabels``)."""

RESTRICTED_LABEL_DOMAINS: frozenset[str] = frozenset({GROUP})
"""Users may not set labels in ``karpenter.azure.com``, except the well-known keys."""
