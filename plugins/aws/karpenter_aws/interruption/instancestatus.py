"""``interruption.instancestatus``: replace instances EC2's own health checks call broken.

Every minute, ``DescribeInstanceStatus`` is asked three questions (its filters AND across
names, so each is a separate call): which instances fail their instance status check,
which fail their system status check, and which have a scheduled event (reboot,
maintenance, retirement, stop). An instance whose check has failed for at least two
minutes is deleted forcefully (termination deadline now: its pods are already cut off);
one with a scheduled event is deleted gracefully, ahead of the event, as a scheduled
change from the queue would be. This works without the interruption queue.

Which statuses count is decided by :func:`unhealthy_categories`, a pure function of one
``InstanceStatuses[]`` entry, so the response is re-checked locally rather than trusting
the filters (moto, for one, ignores them and returns every instance).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from attrs import frozen
from botocore.exceptions import BotoCoreError, ClientError

from karpenter_aws.interruption import messages as m
from karpenter_aws.interruption import metrics as im
from karpenter_aws.interruption.controller import aws_error
from karpenter_aws.interruption.handler import InstanceIndex, InterruptionHandler
from karpenter_core.plugin_api import ControllerContext, Result

__all__ = [
    "EVENT_CODES",
    "FILTER_SETS",
    "INTERVAL",
    "NAME",
    "UNHEALTHY_THRESHOLD",
    "InstanceStatusController",
    "Unhealthy",
    "unhealthy_categories",
]

log = logging.getLogger("karpenter.aws.interruption")

NAME = "interruption.instancestatus"
INTERVAL = 60.0
UNHEALTHY_THRESHOLD = 120.0
"""Seconds a status check must have been failing before the instance is replaced: a
brief blip (a host hiccup during a live migration) heals on its own."""

INSTANCE_STATUS = "InstanceStatus"
SYSTEM_STATUS = "SystemStatus"
EVENT_STATUS = "EventStatus"
CATEGORY_KINDS = {
    INSTANCE_STATUS: m.INSTANCE_STATUS,
    SYSTEM_STATUS: m.SYSTEM_STATUS,
    EVENT_STATUS: m.EVENT_STATUS,
}
"""Category -> message kind, in the order they are acted on (forceful ones first, so an
instance that is both broken and scheduled for maintenance gets the forceful delete)."""

EVENT_CODES = (
    "instance-reboot",
    "system-reboot",
    "system-maintenance",
    "instance-retirement",
    "instance-stop",
)
FILTER_SETS: tuple[tuple[dict[str, Any], ...], ...] = (
    ({"Name": "instance-status.status", "Values": ["impaired"]},),
    ({"Name": "system-status.status", "Values": ["impaired"]},),
    ({"Name": "event.code", "Values": list(EVENT_CODES)},),
)
# A finished or cancelled scheduled event stays listed for a while with this prefix on
# its description; it no longer threatens the instance.
_DONE_EVENT_PREFIXES = ("[Completed]", "[Canceled]")


@frozen
class Unhealthy:
    """An instance and the categories it is unhealthy in."""

    instance_id: str
    categories: tuple[str, ...]


def _failed_since(summary: Any, now: datetime, threshold: float) -> bool:
    """Whether a status summary has a failed check older than ``threshold`` seconds
    (a failed check without ``ImpairedSince`` counts: its start is unknown)."""
    if not isinstance(summary, Mapping):
        return False
    for detail in summary.get("Details") or ():
        if not isinstance(detail, Mapping) or detail.get("Status") != "failed":
            continue
        since = detail.get("ImpairedSince")
        if not isinstance(since, datetime):
            return True
        if (now - since).total_seconds() >= threshold:
            return True
    return False


def _has_scheduled_event(events: Any) -> bool:
    for event in events or ():
        if not isinstance(event, Mapping) or event.get("Code") not in EVENT_CODES:
            continue
        if str(event.get("Description") or "").startswith(_DONE_EVENT_PREFIXES):
            continue
        return True
    return False


def unhealthy_categories(
    status: Mapping[str, Any], now: datetime, threshold: float = UNHEALTHY_THRESHOLD
) -> tuple[str, ...]:
    """The categories (``InstanceStatus``, ``SystemStatus``, ``EventStatus``) in which one
    ``DescribeInstanceStatus`` entry is unhealthy; EBS status is ignored (a failing volume
    may be a pod's, not the node's)."""
    out: list[str] = []
    if _failed_since(status.get("InstanceStatus"), now, threshold):
        out.append(INSTANCE_STATUS)
    if _failed_since(status.get("SystemStatus"), now, threshold):
        out.append(SYSTEM_STATUS)
    if _has_scheduled_event(status.get("Events")):
        out.append(EVENT_STATUS)
    return tuple(out)


def unhealthy_instances(
    statuses: Iterable[Mapping[str, Any]], now: datetime, threshold: float = UNHEALTHY_THRESHOLD
) -> list[Unhealthy]:
    """Every unhealthy instance among ``statuses`` (first entry per instance wins)."""
    seen: set[str] = set()
    out: list[Unhealthy] = []
    for status in statuses:
        iid = str(status.get("InstanceId") or "")
        if not iid or iid in seen:
            continue
        seen.add(iid)
        categories = unhealthy_categories(status, now, threshold)
        if categories:
            out.append(Unhealthy(iid, categories))
    return out


class InstanceStatusController:
    """The singleton behind ``interruption.instancestatus`` (see the module docstring)."""

    def __init__(
        self,
        ctx: ControllerContext,
        ec2: Any,
        *,
        interval: float = INTERVAL,
        threshold: float = UNHEALTHY_THRESHOLD,
    ) -> None:
        self.ctx = ctx
        self.ec2 = ec2
        self.interval = interval
        self.threshold = threshold
        self.handler = InterruptionHandler(ctx, None)
        self._seen: set[tuple[str, str]] = set()

    def describe(self) -> list[dict[str, Any]]:
        """Every entry the three filtered DescribeInstanceStatus calls return."""
        out: list[dict[str, Any]] = []
        paginator = self.ec2.get_paginator("describe_instance_status")
        for filters in FILTER_SETS:
            for page in paginator.paginate(Filters=list(filters)):
                out.extend(page.get("InstanceStatuses") or ())
        return out

    def reconcile(self) -> Result:
        try:
            statuses = self.describe()
        except (ClientError, BotoCoreError) as err:
            if isinstance(err, ClientError) and "Unauthorized" in str(
                (err.response.get("Error") or {}).get("Code")
            ):
                log.error(
                    "ec2:DescribeInstanceStatus is not allowed; instance health checks are off "
                    "until the IAM policy allows it and Karpenter restarts (%s)",
                    aws_error(err),
                )
                return Result()
            log.warning("describing instance statuses failed: %s", aws_error(err))
            return Result(requeue=True)
        unhealthy = unhealthy_instances(statuses, self.ctx.clock.now(), self.threshold)
        current: set[tuple[str, str]] = set()
        failed = 0
        if unhealthy:
            try:
                index = InstanceIndex.load(self.ctx)
            except Exception as err:
                log.warning("listing nodeclaims for instance health failed: %s", err)
                return Result(requeue=True)
            for item in unhealthy:
                if not self._handle(item, index, current):
                    failed += 1
        self._seen &= current  # an instance healthy again is counted anew next time
        if failed:
            return Result(requeue=True)
        return Result.after(self.interval)

    def _handle(self, item: Unhealthy, index: InstanceIndex, current: set[tuple[str, str]]) -> bool:
        ok = True
        for category in item.categories:
            message = m.Message(CATEGORY_KINDS[category], (item.instance_id,))
            try:
                found = self.handler.handle(message, index)
            except Exception as err:
                log.warning(
                    "acting on unhealthy instance %s (%s) failed: %s",
                    item.instance_id,
                    category,
                    err,
                )
                ok = False
                continue
            if not found:
                continue  # not one of ours
            key = (item.instance_id, category)
            current.add(key)
            if key not in self._seen:
                self._seen.add(key)
                log.info(
                    "detected unhealthy instance %s owned by the cluster (%s)",
                    item.instance_id,
                    category,
                )
                im.INSTANCE_STATUS_UNHEALTHY.labels(category=category).inc()
        return ok
