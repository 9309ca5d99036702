"""Hook implementations of karpenter-kwok (entry point ``kwok`` in group ``karpenter``)."""

from __future__ import annotations

from karpenter_core.hookspecs import CloudProviderSpec, ProviderSetting
from karpenter_core.plugins import hookimpl
from karpenter_kwok.labels import KWOK_NODE_CLASS, RESTRICTED_LABEL_DOMAINS, WELL_KNOWN_LABELS
from karpenter_kwok.provider import (
    INSTANCE_TYPES_FILE_ENV,
    INSTANCE_TYPES_FILE_SETTING,
    NAME,
    KwokCloudProvider,
)

SETTINGS = (
    ProviderSetting(
        INSTANCE_TYPES_FILE_SETTING,
        "JSON file of instance types in the KWOK format; the built-in 144-type catalogue "
        "when empty.",
        env=INSTANCE_TYPES_FILE_ENV,
    ),
)


@hookimpl
def karpenter_cloud_providers() -> list[CloudProviderSpec]:
    return [
        CloudProviderSpec(
            name=NAME,
            factory=KwokCloudProvider.from_context,
            node_classes=(KWOK_NODE_CLASS,),
            well_known_labels=WELL_KNOWN_LABELS,
            restricted_label_domains=RESTRICTED_LABEL_DOMAINS,
            settings=SETTINGS,
            can_launch=False,
            description="Simulated nodes for KWOK clusters: a generated catalogue of 144 "
            "instance types (c/s/m families, 1-256 vCPUs, amd64/arm64, linux/windows) in "
            "four test zones; catalogue only until launching lands.",
        )
    ]
