"""``nodepool.registrationhealth``: keep ``NodeRegistrationHealthy`` and its memory honest.

The NodeClaim controllers record each registration success or failure per NodePool (a ring
of the last four, shared through ``ctx.nodepool_health``) and flip ``NodeRegistrationHealthy``.
This controller (re)starts that record:

* after a restart the ring is empty: it is seeded from the condition (True -> one success,
  False -> two failures), so the verdict survives;
* when the condition is missing, or the pool's spec or its NodeClass changed since it was
  set (``metadata.generation`` vs the condition's ``observedGeneration``, the NodeClass's
  generation vs ``status.nodeClassObservedGeneration``), past outcomes no longer say
  anything: the condition goes Unknown and the ring is cleared.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from karpenter_core.apis.accessors import meta_of
from karpenter_core.apis.v1 import CONDITION_NODE_REGISTRATION_HEALTHY
from karpenter_core.controllers.nodeclaim.nodepoolhealth import Status, shared
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

__all__ = ["NAME", "RegistrationHealth"]

NAME = "nodepool.registrationhealth"


class RegistrationHealth:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.health = shared(ctx)

    def reconcile(self, key: ObjectKey) -> Result:
        try:
            stored = self.ctx.kube.get("nodepools", key.name)
        except NotFound:
            return Result()
        nodeclass = get_nodeclass(stored, self.ctx)
        if nodeclass is UNSUPPORTED or nodeclass is None:
            return Result()
        assert isinstance(nodeclass, Mapping)
        uid = str(meta_of(stored).get("uid") or key.name)
        np: dict[str, Any] = copy.deepcopy(stored)
        conditions = nodepool_conditions(np, self.ctx.clock)
        condition = conditions.get(CONDITION_NODE_REGISTRATION_HEALTHY)
        if self.health.status(uid) is Status.UNKNOWN and condition is not None:
            if condition.get("status") == "True":
                self.health.set_status(uid, Status.HEALTHY)
            elif condition.get("status") == "False":
                self.health.set_status(uid, Status.UNHEALTHY)
        nodeclass_generation = meta_of(nodeclass).get("generation")
        status = np.setdefault("status", {})
        if (
            condition is None
            or status.get("nodeClassObservedGeneration") != nodeclass_generation
            or meta_of(np).get("generation") != condition.get("observedGeneration")
        ):
            conditions.set_unknown(CONDITION_NODE_REGISTRATION_HEALTHY)
            self.health.set_status(uid, Status.UNKNOWN)
        status["nodeClassObservedGeneration"] = nodeclass_generation
        if patch_status(self.ctx.kube, stored, np) is PatchOutcome.CONFLICT:
            return Result(requeue=True)
        return Result()
