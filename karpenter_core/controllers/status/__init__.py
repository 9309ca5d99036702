"""Status-condition metrics: ``status.nodeclaim``, ``status.nodepool`` and ``status.node``.

Upstream runs operatorpkg's status controllers for NodeClaims, NodePools and Nodes; they
publish the generic ``operator_status_condition_*`` and ``operator_termination_*`` series
(apis-and-cloudprovider spec §13) so dashboards can see how long objects sit in each
condition and how long they take to go away. Here one reconciler per kind does the same
from the object dicts:

- ``operator_status_condition_count`` is 1 for every condition the object has now (type,
  status, reason); ``operator_status_condition_current_status_seconds`` is the time since
  its ``lastTransitionTime``. The object's previous series are replaced, so a condition
  that changed status is counted once.
- a condition that appears or changes status after the first observation of its object
  counts in ``operator_status_condition_transitions_total``; when it changed, the time it
  held its previous status is observed in ``operator_status_condition_transition_seconds``
  (labelled with that previous status). The first observation is a baseline only, so a
  restarted operator does not count every existing condition again.
- while the object is deleting, ``operator_termination_current_time_seconds`` is the time
  since its ``deletionTimestamp``; once it is gone that time is observed in
  ``operator_termination_duration_seconds`` and every series of the object goes.

Each object is refreshed every 10 s so the "seconds" gauges move on an idle cluster.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from attrs import frozen

from karpenter_core import metrics
from karpenter_core.controllers.metrics.store import MetricStore, StoreMetric
from karpenter_core.kube.client import KubeClient, NotFound
from karpenter_core.operator.context import ControllerContext
from karpenter_core.runtime.clock import Clock, parse_time
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import ObjectKey, Result, Watch

__all__ = ["KINDS", "NAMES", "REQUEUE_SECONDS", "ConditionMetrics", "StatusKind", "register"]

log = logging.getLogger("karpenter.status")

REQUEUE_SECONDS = 10.0


@frozen
class StatusKind:
    """A kind whose conditions are reported: its controller name, resource, group, kind."""

    controller: str
    resource: str
    group: str
    kind: str


KINDS = (
    StatusKind("status.nodeclaim", "nodeclaims", "karpenter.sh", "NodeClaim"),
    StatusKind("status.nodepool", "nodepools", "karpenter.sh", "NodePool"),
    StatusKind("status.node", "nodes", "", "Node"),
)
NAMES = tuple(k.controller for k in KINDS)

# Per condition type: (status, reason, lastTransitionTime or None).
_Seen = dict[str, tuple[str, str, datetime | None]]


def _time(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return parse_time(str(value))
    except ValueError:
        return None


def _conditions(obj: Mapping[str, Any]) -> _Seen:
    seen: _Seen = {}
    for c in (obj.get("status") or {}).get("conditions") or ():
        if not isinstance(c, Mapping) or not c.get("type"):
            continue
        seen[str(c["type"])] = (
            str(c.get("status") or ""),
            str(c.get("reason") or ""),
            _time(c.get("lastTransitionTime")),
        )
    return seen


class ConditionMetrics:
    """The status-condition metrics reconciler for one kind (see the module docstring)."""

    def __init__(self, kind: StatusKind, kube: KubeClient, clock: Clock) -> None:
        self.kind = kind
        self.kube = kube
        self.clock = clock
        self.store = MetricStore()
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str], _Seen] = {}
        self._deleting: dict[tuple[str, str], datetime] = {}

    def _labels(self, namespace: str, name: str) -> dict[str, str]:
        return {
            "namespace": namespace,
            "name": name,
            metrics.LABEL_GROUP: self.kind.group,
            metrics.LABEL_KIND: self.kind.kind,
        }

    def reconcile(self, key: ObjectKey) -> Result:
        ident = (key.namespace or "", key.name)
        try:
            obj = self.kube.get(self.kind.resource, key.name, key.namespace or None)
        except NotFound:
            self._gone(ident)
            return Result()
        now = self.clock.now()
        current = _conditions(obj)
        with self._lock:
            previous = self._seen.get(ident)
            self._seen[ident] = current
        if previous is not None:
            self._count_transitions(previous, current)
        base = self._labels(*ident)
        series = []
        for ctype, (status, reason, since) in sorted(current.items()):
            labels = {
                **base,
                metrics.LABEL_TYPE: ctype,
                metrics.LABEL_STATUS: status,
                metrics.LABEL_REASON: reason,
            }
            series.append(StoreMetric(metrics.OPERATOR_STATUS_CONDITION_COUNT, labels, 1.0))
            held = 0.0 if since is None else max((now - since).total_seconds(), 0.0)
            series.append(
                StoreMetric(metrics.OPERATOR_STATUS_CONDITION_CURRENT_STATUS_SECONDS, labels, held)
            )
        deleting = _time((obj.get("metadata") or {}).get("deletionTimestamp"))
        if deleting is not None:
            with self._lock:
                self._deleting[ident] = deleting
            series.append(
                StoreMetric(
                    metrics.OPERATOR_TERMINATION_CURRENT_TIME_SECONDS,
                    base,
                    max((now - deleting).total_seconds(), 0.0),
                )
            )
        self.store.update(ident, series)
        return Result.after(REQUEUE_SECONDS)

    def _count_transitions(self, previous: _Seen, current: _Seen) -> None:
        for ctype, (status, reason, since) in current.items():
            before = previous.get(ctype)
            if before is not None and before[0] == status:
                continue
            metrics.OPERATOR_STATUS_CONDITION_TRANSITIONS_TOTAL.labels(
                ctype, status, reason, self.kind.group, self.kind.kind
            ).inc()
            if before is not None and before[2] is not None and since is not None:
                metrics.OPERATOR_STATUS_CONDITION_TRANSITION_SECONDS.labels(
                    ctype, before[0], self.kind.group, self.kind.kind
                ).observe(max((since - before[2]).total_seconds(), 0.0))

    def _gone(self, ident: tuple[str, str]) -> None:
        with self._lock:
            self._seen.pop(ident, None)
            deleting = self._deleting.pop(ident, None)
        if deleting is not None:
            metrics.OPERATOR_TERMINATION_DURATION_SECONDS.labels(
                self.kind.group, self.kind.kind
            ).observe(max((self.clock.now() - deleting).total_seconds(), 0.0))
        self.store.delete(ident)


def register(manager: Manager, ctx: ControllerContext) -> None:
    """Add one status-condition metrics controller per kind (NodeClaim, NodePool, Node)."""
    for kind in KINDS:
        manager.add_controller(
            kind.controller,
            ConditionMetrics(kind, ctx.kube, ctx.clock),
            watches=[Watch(kind.resource)],
            workers=10,
        )
