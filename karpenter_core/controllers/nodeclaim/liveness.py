"""Liveness: give up on a NodeClaim that does not launch or register in time.

Spec: operator-and-lifecycle §5.5. ``Launched`` not True 5 minutes after its last
transition deletes the NodeClaim (``launch_timeout``); ``Registered`` not True 15 minutes
after its last transition deletes it (``registration_timeout``). Because the conditions are
initialised with the creation time, both effectively count from creation. Each timeout
is a failed registration for the NodePool's ``NodeRegistrationHealthy``.
"""

from __future__ import annotations

import logging
from typing import Any

from karpenter_core import metrics
from karpenter_core.apis.conditions import ConditionSet
from karpenter_core.apis.v1 import CONDITION_LAUNCHED, CONDITION_REGISTERED
from karpenter_core.controllers.nodeclaim.launch import disrupted_labels
from karpenter_core.controllers.nodeclaim.nodepoolhealth import NodePoolHealth
from karpenter_core.controllers.nodeclaim.registration import record_registration
from karpenter_core.kube.client import Conflict, NotFound
from karpenter_core.runtime.clock import parse_time
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import Result

__all__ = ["LAUNCH_TIMEOUT", "REGISTRATION_TIMEOUT", "Liveness"]

log = logging.getLogger("karpenter.nodeclaim.lifecycle")

LAUNCH_TIMEOUT = 5 * 60.0
REGISTRATION_TIMEOUT = 15 * 60.0
NODECLAIMS = "nodeclaims"


class Liveness:
    """The liveness step of ``nodeclaim.lifecycle``."""

    def __init__(
        self,
        ctx: ControllerContext,
        health: NodePoolHealth,
        *,
        launch_timeout: float = LAUNCH_TIMEOUT,
        registration_timeout: float = REGISTRATION_TIMEOUT,
    ) -> None:
        self.ctx = ctx
        self.health = health
        self.launch_timeout = launch_timeout
        self.registration_timeout = registration_timeout

    def _remaining(self, cond: dict[str, Any], timeout: float) -> float:
        ltt = cond.get("lastTransitionTime")
        if not ltt:
            return 0.0
        try:
            since = (self.ctx.clock.now() - parse_time(str(ltt))).total_seconds()
        except ValueError:
            return 0.0
        return timeout - since

    def reconcile(self, nodeclaim: dict[str, Any], conds: ConditionSet) -> Result:
        registered = conds.get(CONDITION_REGISTERED)
        if registered is not None and registered.get("status") == "True":
            return Result()
        launched = conds.get(CONDITION_LAUNCHED)
        if launched is None:
            return Result(requeue=True)
        if launched.get("status") != "True":
            remaining = self._remaining(launched, self.launch_timeout)
            if remaining > 0:
                return Result(requeue_after=remaining)
            return self._timeout(nodeclaim, self.launch_timeout, metrics.REASON_LAUNCH_TIMEOUT)
        if registered is None:
            return Result(requeue=True)
        remaining = self._remaining(registered, self.registration_timeout)
        if remaining > 0:
            return Result(requeue_after=remaining)
        return self._timeout(
            nodeclaim, self.registration_timeout, metrics.REASON_REGISTRATION_TIMEOUT
        )

    def _timeout(self, nodeclaim: dict[str, Any], timeout: float, reason: str) -> Result:
        try:
            record_registration(self.ctx, self.health, nodeclaim, success=False)
        except Conflict:
            return Result(requeue=True)
        name = str((nodeclaim.get("metadata") or {}).get("name") or "")
        try:
            self.ctx.kube.delete(NODECLAIMS, name)
        except NotFound:
            return Result()
        log.info("terminating nodeclaim %s due to timeout (%ss, reason %s)", name, timeout, reason)
        metrics.NODECLAIMS_DISRUPTED_TOTAL.labels(**disrupted_labels(nodeclaim, reason)).inc()
        return Result()
