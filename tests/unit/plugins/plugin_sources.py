"""Sources of throwaway plugins used by the plugin-manager tests."""

from __future__ import annotations

from collections.abc import Callable

FakePlugins = Callable[..., str]
"""``add(entry_point_name, source, dist=..., version=...) -> module name``."""

PROVIDER_PLUGIN = """
from karpenter_core.cloudprovider.protocol import NodeClassKind
from karpenter_core.hookspecs import CloudProviderSpec, ProviderSetting
from karpenter_core.plugins import hookimpl


class Provider:
    def __init__(self, context):
        self.context = context
        self.settings = dict(context.settings)

    name = "{name}"


@hookimpl
def karpenter_cloud_providers():
    return [
        CloudProviderSpec(
            name="{name}",
            factory=Provider,
            node_classes=(NodeClassKind("karpenter.{name}.test", "TestNodeClass"),),
            well_known_labels=frozenset({{"karpenter.{name}.test/family"}}),
            restricted_label_domains=frozenset({{"karpenter.{name}.test"}}),
            settings=(
                ProviderSetting("region", required=True),
                ProviderSetting("zone-count", default="3"),
                ProviderSetting("profile"),
            ),
            can_launch={can_launch},
        )
    ]
"""


def provider_plugin(name: str, can_launch: bool = True) -> str:
    """Source of a plugin offering one cloud provider called ``name``."""
    return PROVIDER_PLUGIN.format(name=name, can_launch=can_launch)


ALL_FAMILIES_PLUGIN = """
from karpenter_core.hookspecs import (
    DisruptionMethodSpec,
    DRADriverSpec,
    InstanceTypeOverlaySpec,
)
from karpenter_core.plugins import hookimpl

CALLS = []


def _overlay(nodepool, instance_types):
    return [*instance_types, "{prefix}-overlaid"]


@hookimpl
def karpenter_instance_type_overlays():
    CALLS.append("overlays")
    return [
        InstanceTypeOverlaySpec(name="{prefix}-heavy", weight=50, apply=_overlay),
        InstanceTypeOverlaySpec(name="{prefix}-light", weight=5, apply=_overlay),
    ]


@hookimpl
def karpenter_disruption_methods():
    CALLS.append("disruption")
    return [
        DisruptionMethodSpec(name="{prefix}-late", order=900, factory=lambda ctx: ("late", ctx)),
        DisruptionMethodSpec(name="{prefix}-early", order=10, factory=lambda ctx: ("early", ctx)),
    ]


@hookimpl
def karpenter_dra_drivers():
    CALLS.append("dra")
    return [DRADriverSpec(name="{prefix}.example.com", describe_devices=lambda it, np: [])]
"""

TYPO_PLUGIN = """
from karpenter_core.plugins import hookimpl


@hookimpl
def karpenter_cloud_provider():
    return []
"""

EXTRA_ARGUMENT_PLUGIN = """
from karpenter_core.plugins import hookimpl


@hookimpl
def karpenter_cloud_providers(region):
    return []
"""

IMPORT_ERROR_PLUGIN = """
import karpenter_no_such_sdk_module  # noqa: F401
"""

WRONG_RETURN_PLUGIN = """
from karpenter_core.plugins import hookimpl


@hookimpl
def karpenter_cloud_providers():
    return ["not a spec"]
"""

RAISING_PLUGIN = """
from karpenter_core.plugins import hookimpl


@hookimpl
def karpenter_dra_drivers():
    raise RuntimeError("driver catalogue unreachable")
"""
