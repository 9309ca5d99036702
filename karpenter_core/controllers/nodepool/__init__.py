"""NodePool controllers: validation, NodeClass readiness, resource counters, the template
hash, and registration health.

``register(manager, ctx)`` adds ``nodepool.validation``, ``nodepool.readiness``,
``nodepool.counter``, ``nodepool.hash`` and ``nodepool.registrationhealth``.
"""

from __future__ import annotations

from typing import Any

from karpenter_core.controllers.nodepool import (
    counter,
    readiness,
    registrationhealth,
    validation,
)
from karpenter_core.controllers.nodepool import hash as hashing
from karpenter_core.controllers.nodepool.common import managed_predicate, nodeclass_watches
from karpenter_core.controllers.provisioning.triggers import linear_scale_reconciles
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import Watch

__all__ = ["register"]


def _created(event_type: str, obj: dict[str, Any]) -> bool:
    return event_type == "ADDED"


def register(manager: Manager, ctx: ControllerContext) -> None:
    """Add the five NodePool controllers."""
    managed = managed_predicate(ctx)
    workers = linear_scale_reconciles(ctx.options.cpu_requests, 10, 1000)
    manager.add_controller(
        validation.NAME,
        validation.Validation(ctx),
        watches=[Watch("nodepools", predicate=managed)],
        workers=10,
    )
    manager.add_controller(
        readiness.NAME,
        readiness.Readiness(ctx),
        watches=[Watch("nodepools", predicate=managed), *nodeclass_watches(ctx)],
        workers=workers,
    )

    def created_and_managed(event_type: str, obj: dict[str, Any]) -> bool:
        return _created(event_type, obj) and bool(managed(event_type, obj))

    manager.add_controller(
        counter.NAME,
        counter.Counter(ctx),
        watches=[Watch("nodepools", predicate=created_and_managed)],
        workers=workers,
    )
    manager.add_controller(
        hashing.NAME,
        hashing.Hash(ctx),
        watches=[Watch("nodepools", predicate=managed)],
        workers=workers,
    )
    manager.add_controller(
        registrationhealth.NAME,
        registrationhealth.RegistrationHealth(ctx),
        watches=[Watch("nodepools", predicate=managed), *nodeclass_watches(ctx)],
        workers=workers,
    )
