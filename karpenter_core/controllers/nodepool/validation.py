"""``nodepool.validation``: whether a NodePool is usable at all.

Runs the same checks ``karpenter validate`` does (schema/CEL rules and upstream's runtime
validation: no ``karpenter.sh/nodepool`` label or requirement, qualified names, taints,
requirements) and records the verdict as ``ValidationSucceeded``: True, or False with reason
``NodePoolValidationFailed`` and the problems as the message. A failure also gets a Warning
event so ``kubectl describe`` shows it. An invalid NodePool is never Ready, so the
provisioner skips it; nothing else breaks.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from karpenter_core.apis.accessors import meta_of
from karpenter_core.apis.v1 import CONDITION_VALIDATION_SUCCEEDED
from karpenter_core.apis.validation import validate_nodepool
from karpenter_core.controllers.nodepool.common import (
    PatchOutcome,
    managed_nodepool,
    nodepool_conditions,
    nodepool_reference,
    patch_status,
)
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.events import WARNING, Event
from karpenter_core.runtime.reconciler import ObjectKey, Result

__all__ = ["NAME", "REASON_VALIDATION_FAILED", "Validation", "validation_errors"]

log = logging.getLogger("karpenter.nodepool")

NAME = "nodepool.validation"
REASON_VALIDATION_FAILED = "NodePoolValidationFailed"


def validation_errors(np: dict[str, Any]) -> list[str]:
    """The NodePool's problems as ``path: message`` lines (empty when valid)."""
    try:
        return [str(e) for e in validate_nodepool(np)]
    except Exception as e:  # a validator bug must not take the controller down
        log.exception("validating nodepool %s failed", meta_of(np).get("name"))
        return [f"validation could not complete: {e}"]


class Validation:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def reconcile(self, key: ObjectKey) -> Result:
        stored = managed_nodepool(self.ctx, key.name)
        if stored is None:
            return Result()
        np = copy.deepcopy(stored)
        conditions = nodepool_conditions(np, self.ctx.clock)
        errors = validation_errors(np)
        if errors:
            message = "; ".join(errors)
            conditions.set_false(CONDITION_VALIDATION_SUCCEEDED, REASON_VALIDATION_FAILED, message)
            self.ctx.recorder.publish(
                Event(
                    nodepool_reference(np),
                    WARNING,
                    REASON_VALIDATION_FAILED,
                    f"NodePool is invalid and will not be used: {message}",
                    (str(meta_of(np).get("uid") or key.name), message),
                )
            )
        else:
            conditions.set_true(CONDITION_VALIDATION_SUCCEEDED)
        if patch_status(self.ctx.kube, stored, np) is PatchOutcome.CONFLICT:
            return Result(requeue=True)
        return Result()
