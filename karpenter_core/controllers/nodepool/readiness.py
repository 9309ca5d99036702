"""``nodepool.readiness``: ``NodeClassReady`` mirrors the NodeClass the pool names.

* NodeClass kind not managed by the provider: the pool is not this operator's, ignored.
* not found: False ``NodeClassNotFound`` (but a kind its provider declares ``implicit``,
  as KWOK does, counts as a default, Ready one while no object of the kind exists);
* being deleted: False ``NodeClassTerminating``;
* its ``Ready`` condition Unknown or missing: False ``NodeClassReadinessUnknown``;
  False: False with the NodeClass's reason and message; True: True.

NodeClass events re-run the pools naming them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from karpenter_core.apis.accessors import meta_of
from karpenter_core.apis.conditions import condition_of
from karpenter_core.apis.v1 import CONDITION_NODE_CLASS_READY
from karpenter_core.controllers.nodepool.common import (
    UNSUPPORTED,
    PatchOutcome,
    get_nodeclass,
    nodepool_conditions,
    patch_status,
)
from karpenter_core.kube.client import NotFound
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import ObjectKey, Result

__all__ = ["NAME", "Readiness", "nodeclass_ready_condition"]

NAME = "nodepool.readiness"


def nodeclass_ready_condition(nodeclass: Mapping[str, Any] | None) -> tuple[str, str, str]:
    """(status, reason, message) of the pool's ``NodeClassReady`` for this NodeClass."""
    if nodeclass is None:
        return "False", "NodeClassNotFound", "NodeClass not found on cluster"
    if meta_of(nodeclass).get("deletionTimestamp"):
        return "False", "NodeClassTerminating", "NodeClass is Terminating"
    ready = condition_of(nodeclass, "Ready")
    status = ready.get("status") if ready is not None else None
    if status == "False":
        assert ready is not None
        return "False", str(ready.get("reason") or ""), str(ready.get("message") or "")
    if status == "True":
        return "True", CONDITION_NODE_CLASS_READY, ""
    return "False", "NodeClassReadinessUnknown", "Node Class Readiness Unknown"


class Readiness:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def reconcile(self, key: ObjectKey) -> Result:
        try:
            stored = self.ctx.kube.get("nodepools", key.name)
        except NotFound:
            return Result()
        nodeclass = get_nodeclass(stored, self.ctx)
        if nodeclass is UNSUPPORTED:
            return Result()
        assert not isinstance(nodeclass, type(UNSUPPORTED))
        np = copy.deepcopy(stored)
        status, reason, message = nodeclass_ready_condition(nodeclass)
        nodepool_conditions(np, self.ctx.clock).set(
            CONDITION_NODE_CLASS_READY, status, reason, message
        )
        if patch_status(self.ctx.kube, stored, np) is PatchOutcome.CONFLICT:
            return Result(requeue=True)
        return Result()
