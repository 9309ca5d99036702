"""``nodeclaim.consistency``: check that a Node is what its NodeClaim promised.

Spec: operator-and-lifecycle §5.7. At most once per 10 minutes per NodeClaim (earlier
events wait out the remainder), for a NodeClaim with a providerID and exactly one Node:
the *node shape* check flags every requested resource whose Node capacity is below 90 % of
the capacity the provider reported at launch. Each issue is logged and published as a
``FailedConsistencyCheck`` event; the NodeClaim gets ``ConsistentStateFound=False``
(``ConsistencyCheckFailed``) when there are issues and ``True`` otherwise.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from karpenter_core.apis.conditions import ConditionSet, is_true
from karpenter_core.apis.copying import deep_copy
from karpenter_core.apis.quantity import format_quantity
from karpenter_core.apis.v1 import CONDITION_CONSISTENT_STATE_FOUND, CONDITION_INITIALIZED
from karpenter_core.controllers.nodeclaim.utils import (
    DuplicateNodeError,
    NodeIndex,
    NodeNotFoundError,
    deletion_timestamp,
    managed_nodeclaim,
    milli_or_zero,
    node_for_nodeclaim,
    provider_id,
    status_patch,
)
from karpenter_core.kube.client import Conflict, NotFound
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import ObjectKey, Result
from karpenter_core.utils.stamps import Stamps

__all__ = ["NAME", "SCAN_PERIOD", "Consistency", "node_shape_issues"]

log = logging.getLogger("karpenter.nodeclaim.consistency")

NAME = "nodeclaim.consistency"
SCAN_PERIOD = 600.0
SCAN_TOLERANCE = 1e-3
"""A scan due within this many seconds runs now: waiting out a rounding residue (a
requeue of 1e-13 s) would not move a virtual clock on, and the reconcile would repeat at
the same instant forever."""
NODECLAIMS = "nodeclaims"
EVENT_FAILED_CONSISTENCY_CHECK = "FailedConsistencyCheck"


def _show(name: str, milli: int) -> str:
    fmt = "BinarySI" if name in ("memory", "ephemeral-storage") else "DecimalSI"
    return format_quantity(milli, fmt)


def node_shape_issues(node: Mapping[str, Any], nodeclaim: Mapping[str, Any]) -> list[str]:
    """Requested resources the Node has less than 90 % of the launched capacity of."""
    if deletion_timestamp(nodeclaim):
        return []
    if not is_true(nodeclaim, CONDITION_INITIALIZED):
        return []
    requests = ((nodeclaim.get("spec") or {}).get("resources") or {}).get("requests") or {}
    expected = (nodeclaim.get("status") or {}).get("capacity") or {}
    have = (node.get("status") or {}).get("capacity") or {}
    issues = []
    for name in sorted(requests):
        want = milli_or_zero(expected.get(name, 0))
        if milli_or_zero(requests[name]) == 0 or want == 0:
            continue
        got = milli_or_zero(have.get(name, 0))
        pct = got / want
        if pct < 0.90:
            issues.append(
                f"expected {_show(name, want)} of resource {name}, but found {_show(name, got)} "
                f"({pct * 100:.1f}% of expected)"
            )
    return issues


class Consistency:
    """The keyed reconciler behind ``nodeclaim.consistency``."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.index = NodeIndex()
        self._last_scanned = Stamps(SCAN_PERIOD)

    def reconcile(self, key: ObjectKey) -> Result:
        nodeclaim = managed_nodeclaim(self.ctx.kube, self.ctx.cloud_provider, key.name)
        if nodeclaim is None or not provider_id(nodeclaim):
            return Result()
        uid = str((nodeclaim.get("metadata") or {}).get("uid") or key.name)
        now = self.ctx.clock.monotonic()
        last = self._last_scanned.get(uid)
        remaining = SCAN_PERIOD - (now - last) if last is not None else 0.0
        if remaining > SCAN_TOLERANCE:
            return Result(requeue_after=remaining)
        self._last_scanned.stamp(uid, now)
        try:
            node = node_for_nodeclaim(self.ctx.kube, nodeclaim, self.index)
        except (NodeNotFoundError, DuplicateNodeError):
            return Result()
        stored = deep_copy(nodeclaim)
        issues = node_shape_issues(node, nodeclaim)
        for issue in issues:
            log.info("failed consistency check for nodeclaim %s: %s", key.name, issue)
            self.ctx.recorder.warning(nodeclaim, EVENT_FAILED_CONSISTENCY_CHECK, issue, uid, issue)
        conds = ConditionSet(nodeclaim, self.ctx.clock)
        if issues:
            conds.set_false(
                CONDITION_CONSISTENT_STATE_FOUND,
                "ConsistencyCheckFailed",
                "Consistency Check Failed",
            )
        elif not conds.is_true(CONDITION_CONSISTENT_STATE_FOUND):
            conds.set_true(CONDITION_CONSISTENT_STATE_FOUND)
        if nodeclaim != stored:
            patch = status_patch(stored, nodeclaim)
            try:
                self.ctx.kube.patch(NODECLAIMS, key.name, patch, subresource="status")
            except NotFound:
                return Result()
            except Conflict:
                return Result(requeue=True)
        return Result(requeue_after=SCAN_PERIOD)
