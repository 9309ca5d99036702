"""KWOK label keys, NodeClass kind and label domain (upstream ``kwok/apis/v1alpha1``).

The four ``karpenter.kwok.sh/instance-*`` keys are well-known (NodePools may select on
them and instance types define them) and ``karpenter.kwok.sh`` is a restricted domain
(users may not invent other keys in it), exactly as the upstream KWOK provider declares.
"""

from __future__ import annotations

from karpenter_core.plugin_api import NodeClassKind

GROUP = "karpenter.kwok.sh"

READY_STATUS = {
    "conditions": [
        {
            "type": "Ready",
            "status": "True",
            "reason": "Ready",
            "lastTransitionTime": "2024-01-01T01:01:01Z",
            "message": "",
        }
    ]
}
"""The status upstream's KWOKNodeClass CRD defaults a missing one to."""

KWOK_NODE_CLASS = NodeClassKind(
    group=GROUP,
    kind="KWOKNodeClass",
    version="v1alpha1",
    # no KWOKNodeClass needed until one exists (a simulation names "default" freely)
    implicit=True,
    default_status=READY_STATUS,
)

INSTANCE_SIZE_LABEL_KEY = f"{GROUP}/instance-size"
INSTANCE_FAMILY_LABEL_KEY = f"{GROUP}/instance-family"
INSTANCE_CPU_LABEL_KEY = f"{GROUP}/instance-cpu"
INSTANCE_MEMORY_LABEL_KEY = f"{GROUP}/instance-memory"

WELL_KNOWN_LABELS: frozenset[str] = frozenset(
    {
        INSTANCE_SIZE_LABEL_KEY,
        INSTANCE_FAMILY_LABEL_KEY,
        INSTANCE_CPU_LABEL_KEY,
        INSTANCE_MEMORY_LABEL_KEY,
    }
)
RESTRICTED_LABEL_DOMAINS: frozenset[str] = frozenset({GROUP})

# Labels the KWOK provider puts on the Nodes it creates (used once it can launch).
KWOK_LABEL_KEY = "kwok.x-k8s.io/node"
KWOK_LABEL_VALUE = "fake"
NODE_VIEWER_LABEL_KEY = "eks-node-viewer/instance-price"
KWOK_PARTITION_LABEL_KEY = "kwok-partition"
PROVIDER_ID_PREFIX = "kwok://"
