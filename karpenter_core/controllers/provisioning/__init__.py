"""Provisioning controllers: the ``provisioner`` singleton and its two triggers.

``register(manager, ctx)`` adds ``provisioner``, ``provisioner.trigger.pod`` and
``provisioner.trigger.node`` and stores the :class:`Provisioner` in
``ctx.provisioner`` (disruption launches replacements through it).
"""

from __future__ import annotations

from karpenter_core.controllers.provisioning.batcher import Batcher, WaitResult
from karpenter_core.controllers.provisioning.provisioner import (
    NAME,
    CreateError,
    Provisioner,
    ProvisioningError,
    limits_exceeded,
)
from karpenter_core.controllers.provisioning.triggers import (
    NODE_TRIGGER,
    POD_TRIGGER,
    NodeTrigger,
    PodTrigger,
    linear_scale_reconciles,
    may_be_provisionable,
)
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import Watch

__all__ = [
    "NAME",
    "NODE_TRIGGER",
    "POD_TRIGGER",
    "Batcher",
    "CreateError",
    "NodeTrigger",
    "PodTrigger",
    "Provisioner",
    "ProvisioningError",
    "WaitResult",
    "limits_exceeded",
    "provisioner_of",
    "register",
]


def provisioner_of(ctx: ControllerContext) -> Provisioner:
    """The process's Provisioner (``ctx.provisioner``), created on first use."""
    if ctx.provisioner is None:
        ctx.provisioner = Provisioner(ctx)
    return ctx.provisioner


def register(manager: Manager, ctx: ControllerContext) -> None:
    """Add the provisioner singleton and the pod and node trigger controllers."""
    provisioner = provisioner_of(ctx)
    provisioner.bind(manager.add_singleton(NAME, provisioner))
    workers = linear_scale_reconciles(ctx.options.cpu_requests, 10, 1000)
    manager.add_controller(
        POD_TRIGGER,
        PodTrigger(ctx, provisioner),
        watches=[Watch("pods", predicate=may_be_provisionable)],
        workers=workers,
    )
    manager.add_controller(
        NODE_TRIGGER, NodeTrigger(ctx, provisioner), watches=[Watch("nodes")], workers=workers
    )
