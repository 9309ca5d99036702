"""``nodepool.validation``: whether a NodePool is usable at all.

Runs the same checks ``karpenter validate`` does (schema/CEL rules and upstream's runtime
validation: no ``karpenter.sh/nodepool`` label or requirement, qualified names, taints,
requirements) and records the verdict as ``ValidationSucceeded``: True, or False with reason
``NodePoolValidationFailed`` and the problems as the message. A failure also gets a Warning
event so ``kubectl describe`` shows it. An invalid NodePool is never Ready, so the
provisioner skips it; nothing else breaks.

A NodePool that picks its instance-type scorer (``karpenter.sh/instance-type-scorer``) also
gets ``InstanceTypeScorerResolved``: True, or False with reason
``UnknownInstanceTypeScorer`` and a Warning event when no installed plugin registers that
name. That condition does not gate Ready: the pool launches in the operator's scorer's
order meanwhile. Pools without the annotation carry no such condition.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from karpenter_core.apis.accessors import meta_of
from karpenter_core.apis.conditions import ConditionSet
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
from karpenter_core.scoring import (
    REASON_UNKNOWN_SCORER,
    SCORER_ANNOTATION_KEY,
    nodepool_scorer_problem,
)

__all__ = [
    "CONDITION_INSTANCE_TYPE_SCORER_RESOLVED",
    "NAME",
    "REASON_VALIDATION_FAILED",
    "Validation",
    "validation_errors",
]

log = logging.getLogger("karpenter.nodepool")

NAME = "nodepool.validation"
REASON_VALIDATION_FAILED = "NodePoolValidationFailed"
CONDITION_INSTANCE_TYPE_SCORER_RESOLVED = "InstanceTypeScorerResolved"


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
        self._scorer_condition(np, conditions)
        if patch_status(self.ctx.kube, stored, np) is PatchOutcome.CONFLICT:
            return Result(requeue=True)
        return Result()

    def _scorer_condition(self, np: dict[str, Any], conditions: ConditionSet) -> None:
        annotations = meta_of(np).get("annotations") or {}
        if SCORER_ANNOTATION_KEY not in annotations:
            conditions.clear(CONDITION_INSTANCE_TYPE_SCORER_RESOLVED)
            return
        problem = nodepool_scorer_problem(
            annotations,
            self.ctx.plugins.instance_type_scorers,
            self.ctx.options.instance_type_scorer,
        )
        if problem is None:
            conditions.set_true(CONDITION_INSTANCE_TYPE_SCORER_RESOLVED)
            return
        conditions.set_false(
            CONDITION_INSTANCE_TYPE_SCORER_RESOLVED, REASON_UNKNOWN_SCORER, problem
        )
        self.ctx.recorder.publish(
            Event(
                nodepool_reference(np),
                WARNING,
                REASON_UNKNOWN_SCORER,
                problem,
                (str(meta_of(np).get("uid") or meta_of(np).get("name")), problem),
            )
        )
