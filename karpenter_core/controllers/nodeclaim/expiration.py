"""``nodeclaim.expiration``: replace NodeClaims that have lived past ``expireAfter``.

Spec: operator-and-lifecycle §5.7. Expiry is creation + ``spec.expireAfter`` (720h when
the field is absent, the API server's default; ``Never`` disables it). Before expiry the
NodeClaim is looked at again at the expiry instant; after it, it is deleted outright
(``expired``) — expiration is forceful and ignores disruption budgets, as upstream.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from karpenter_core import metrics
from karpenter_core.apis.durations import NEVER, parse_go_duration
from karpenter_core.controllers.nodeclaim.garbagecollection import record_disruption
from karpenter_core.controllers.nodeclaim.utils import deletion_timestamp, managed_nodeclaim
from karpenter_core.kube.client import NotFound
from karpenter_core.runtime.clock import parse_time
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import ObjectKey, Result

__all__ = ["DEFAULT_EXPIRE_AFTER", "NAME", "Expiration"]

log = logging.getLogger("karpenter.nodeclaim.expiration")

NAME = "nodeclaim.expiration"
DEFAULT_EXPIRE_AFTER = "720h"
NODECLAIMS = "nodeclaims"


class Expiration:
    """The keyed reconciler behind ``nodeclaim.expiration``."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def reconcile(self, key: ObjectKey) -> Result:
        nodeclaim = managed_nodeclaim(self.ctx.kube, self.ctx.cloud_provider, key.name)
        if nodeclaim is None or deletion_timestamp(nodeclaim):
            return Result()
        meta = nodeclaim.get("metadata") or {}
        raw = (nodeclaim.get("spec") or {}).get("expireAfter")
        value = DEFAULT_EXPIRE_AFTER if raw is None or raw == "" else str(raw)
        if value == NEVER:
            return Result()
        try:
            expire_after = timedelta(microseconds=parse_go_duration(value) / 1000)
            created = parse_time(str(meta.get("creationTimestamp") or ""))
        except ValueError as err:
            log.error("nodeclaim %s: cannot work out its expiry: %s", key.name, err)
            return Result()
        remaining = (created + expire_after - self.ctx.clock.now()).total_seconds()
        if remaining > 0:
            return Result(requeue_after=remaining)
        try:
            self.ctx.kube.delete(NODECLAIMS, key.name)
        except NotFound:
            return Result()
        log.info("deleting expired nodeclaim %s", key.name)
        record_disruption(self.ctx, nodeclaim, metrics.REASON_EXPIRED)
        return Result()
