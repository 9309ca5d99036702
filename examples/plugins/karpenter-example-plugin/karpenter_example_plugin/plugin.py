"""The hook implementations (entry point ``example`` in group ``karpenter``).

Everything here is cheap: the hooks only describe what the plugin offers, and run every
time a plugin manager is built (``karpenter plugins`` included). The work happens in the
functions and classes they name, which the core calls later.
"""

from __future__ import annotations

from karpenter_core.plugin_api import (
    ControllerSpec,
    DisruptionMethodSpec,
    DRADriverSpec,
    InstanceTypeOverlaySpec,
    InstanceTypeScorerSpec,
    hookimpl,
)
from karpenter_example_plugin import controller, discount, headroom, nvme, recycling


@hookimpl
def karpenter_instance_type_overlays() -> list[InstanceTypeOverlaySpec]:
    return [
        InstanceTypeOverlaySpec(
            name=discount.NAME, weight=discount.WEIGHT, apply=discount.apply_discount
        )
    ]


@hookimpl
def karpenter_disruption_methods() -> list[DisruptionMethodSpec]:
    return [
        DisruptionMethodSpec(
            name=recycling.NAME, order=recycling.ORDER, factory=recycling.MaxNodeAge
        )
    ]


@hookimpl
def karpenter_dra_drivers() -> list[DRADriverSpec]:
    return [DRADriverSpec(name=nvme.DRIVER, describe_devices=nvme.describe_devices)]


@hookimpl
def karpenter_controllers() -> list[ControllerSpec]:
    return [
        ControllerSpec(
            name=controller.NAME, factory=controller.RecycleSchedule, watches=controller.WATCHES
        )
    ]


@hookimpl
def karpenter_instance_type_scorers() -> list[InstanceTypeScorerSpec]:
    return [
        InstanceTypeScorerSpec(
            name=headroom.NAME,
            score=headroom.score_headroom,
            description="smallest type leaving the NodePool's CPU headroom free",
        )
    ]
