"""Status-condition metrics and events for NodeClaims, NodePools and Nodes.

Upstream runs operatorpkg's status controllers (``operatorpkg.nodeclaim.status``,
``operatorpkg.nodepool.status``, ``operatorpkg.node.status``); they publish the generic
``operator_status_condition_*`` and ``operator_termination_*`` series (apis-and-cloudprovider
spec §13) so dashboards can see how long objects sit in each condition and how long they
take to go away, and the condition-transition and ``Finalized`` events (§14). One
reconciler per kind does the same from the object dicts:

- ``operator_status_condition_count`` is 1 for every condition the object has now (type,
  status, reason); ``operator_status_condition_current_status_seconds`` is the time since
  its ``lastTransitionTime``. The object's previous series are replaced, so a condition
  that changed status is counted once.
- a condition whose status differs from the last one this process saw (a condition seen
  for the first time included, as upstream: a restarted operator counts them again) counts
  in ``operator_status_condition_transitions_total``; when there was an earlier status, the
  time it held it is observed in ``operator_status_condition_transition_seconds`` and a
  Normal event, reason the condition type, says "Status condition transitioned, ...".
- while the object is deleting, ``operator_termination_current_time_seconds`` is the time
  since its ``deletionTimestamp``; once it is gone that time is observed in
  ``operator_termination_duration_seconds`` and every series of the object goes.
- each finalizer that disappears from an object is announced with a ``Finalized`` event.

The "seconds" gauges are computed when they are collected (``now`` minus the time they
count from), so a scrape always reads the current figure and nothing has to revisit every
object to move them. Upstream's controllers requeue each object every 10 s for that; at
2,300 Nodes and NodeClaims those requeues (with their queue entries and timers) were about a
third of a simulated scale-in's time. An object is reconciled here only when it changes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable, Mapping
from datetime import datetime
from typing import Any

from attrs import frozen
from prometheus_client import Gauge

from karpenter_core import metrics
from karpenter_core.apis.conditions import conditions_of
from karpenter_core.controllers.metrics.store import MetricStore, StoreMetric
from karpenter_core.kube.client import KubeClient, NotFound, shared_get
from karpenter_core.runtime.clock import Clock, parse_time
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.events import NORMAL, Event, EventRecorder, object_reference
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import ObjectKey, Result, Watch

__all__ = ["KINDS", "NAMES", "ConditionMetrics", "StatusKind", "register"]

log = logging.getLogger("karpenter.status")


@frozen
class StatusKind:
    """A kind whose conditions are reported: its controller name, resource, group, kind."""

    controller: str
    resource: str
    group: str
    kind: str


KINDS = (
    StatusKind("operatorpkg.nodeclaim.status", "nodeclaims", "karpenter.sh", "NodeClaim"),
    StatusKind("operatorpkg.nodepool.status", "nodepools", "karpenter.sh", "NodePool"),
    StatusKind("operatorpkg.node.status", "nodes", "", "Node"),
)
NAMES = tuple(k.controller for k in KINDS)


@frozen
class _Cond:
    status: str
    reason: str
    message: str
    since: datetime | None


_Seen = dict[str, _Cond]


def _time(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return parse_time(str(value))
    except ValueError:
        return None


def _conditions(obj: Mapping[str, Any]) -> _Seen:
    seen: _Seen = {}
    for c in conditions_of(obj):
        if not c.get("type"):
            continue
        seen[str(c["type"])] = _Cond(
            str(c.get("status") or ""),
            str(c.get("reason") or ""),
            str(c.get("message") or ""),
            _time(c.get("lastTransitionTime")),
        )
    return seen


def _seconds_since(now: datetime, since: datetime | None) -> float:
    return 0.0 if since is None else max((now - since).total_seconds(), 0.0)


def _finalizers(obj: Mapping[str, Any]) -> list[str]:
    return [str(f) for f in (obj.get("metadata") or {}).get("finalizers") or ()]


class ConditionMetrics:
    """The status-condition reconciler for one kind (see the module docstring)."""

    def __init__(
        self, kind: StatusKind, kube: KubeClient, clock: Clock, recorder: EventRecorder
    ) -> None:
        self.kind = kind
        self.kube = kube
        self.clock = clock
        self.recorder = recorder
        self.store = MetricStore()
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str], _Seen] = {}
        self._finalizers: dict[tuple[str, str], tuple[dict[str, Any], list[str]]] = {}
        self._deleting: dict[tuple[str, str], datetime] = {}
        # per object: the resourceVersion (and gauges) its series were built from; a
        # reconcile of a version already reported (a resync) changes nothing
        self._built: dict[tuple[str, str], Hashable] = {}

    def _labels(self, namespace: str, name: str) -> dict[str, str]:
        return {
            "namespace": namespace,
            "name": name,
            metrics.LABEL_GROUP: self.kind.group,
            metrics.LABEL_KIND: self.kind.kind,
        }

    def reconcile(self, key: ObjectKey) -> Result:
        ident = (key.namespace or "", key.name)
        # only read here: the cached/stored object itself where the client can share it
        read = shared_get(self.kube)
        try:
            obj = read(self.kind.resource, key.name, key.namespace or None)
        except NotFound:
            self._gone(ident)
            return Result()
        now = self.clock.now()
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        fingerprint = (
            rv,
            metrics.OPERATOR_STATUS_CONDITION_COUNT,
            metrics.OPERATOR_STATUS_CONDITION_CURRENT_STATUS_SECONDS,
            metrics.OPERATOR_TERMINATION_CURRENT_TIME_SECONDS,
        )
        with self._lock:
            built = self._built.get(ident)
        if rv and built == fingerprint:
            return Result()
        current = _conditions(obj)
        finalizers = _finalizers(obj)
        with self._lock:
            previous = self._seen.get(ident, {})
            self._seen[ident] = current
            _, before = self._finalizers.get(ident, ({}, []))
            self._finalizers[ident] = (object_reference(obj), finalizers)
        self._announce_finalized(obj, [f for f in before if f not in finalizers])
        self._count_transitions(obj, previous, current)
        base = self._labels(*ident)
        series = []
        timed: list[tuple[StoreMetric, datetime | None]] = []

        def add_timed(gauge: Gauge, labels: Mapping[str, str], since: datetime | None) -> None:
            m = StoreMetric(gauge, labels, _seconds_since(now, since))
            series.append(m)
            timed.append((m, since))

        for ctype, c in sorted(current.items()):
            labels = {
                **base,
                metrics.LABEL_TYPE: ctype,
                metrics.LABEL_STATUS: c.status,
                metrics.LABEL_REASON: c.reason,
            }
            series.append(StoreMetric(metrics.OPERATOR_STATUS_CONDITION_COUNT, labels, 1.0))
            add_timed(metrics.OPERATOR_STATUS_CONDITION_CURRENT_STATUS_SECONDS, labels, c.since)
        deleting = _time((obj.get("metadata") or {}).get("deletionTimestamp"))
        if deleting is not None:
            with self._lock:
                self._deleting[ident] = deleting
            add_timed(metrics.OPERATOR_TERMINATION_CURRENT_TIME_SECONDS, base, deleting)
        self.store.update(ident, series)
        for m, since in timed:
            # the store made the child; from now on it reads its value at collection
            m.gauge.labels(*MetricStore.label_values(m)).set_function(self._since(since))
        with self._lock:
            self._built[ident] = fingerprint
        return Result()

    def _since(self, since: datetime | None) -> Callable[[], float]:
        clock = self.clock
        return lambda: _seconds_since(clock.now(), since)

    def _count_transitions(self, obj: Mapping[str, Any], previous: _Seen, current: _Seen) -> None:
        group, kind = self.kind.group, self.kind.kind
        for ctype, c in sorted(current.items()):
            before = previous.get(ctype)
            if before is not None and before.status == c.status:
                continue
            metrics.OPERATOR_STATUS_CONDITION_TRANSITIONS_TOTAL.labels(
                ctype, c.status, c.reason, group, kind
            ).inc()
            if before is None:
                continue
            if before.since is not None and c.since is not None:
                metrics.OPERATOR_STATUS_CONDITION_TRANSITION_SECONDS.labels(
                    ctype, before.status, group, kind
                ).observe(max((c.since - before.since).total_seconds(), 0.0))
            message = (
                f"Status condition transitioned, Type: {ctype}, Status: {before.status} -> "
                f"{c.status}, Reason: {c.reason}"
            )
            if c.message:
                message += f", Message: {c.message}"
            self.recorder.publish(Event(obj, NORMAL, ctype, message))

    def _announce_finalized(self, ref: Mapping[str, Any], removed: list[str]) -> None:
        for finalizer in removed:
            self.recorder.publish(Event(ref, NORMAL, "Finalized", f"Finalized {finalizer}"))

    def _gone(self, ident: tuple[str, str]) -> None:
        with self._lock:
            self._seen.pop(ident, None)
            self._built.pop(ident, None)
            deleting = self._deleting.pop(ident, None)
            ref, finalizers = self._finalizers.pop(ident, ({}, []))
        if deleting is not None:
            metrics.OPERATOR_TERMINATION_DURATION_SECONDS.labels(
                self.kind.group, self.kind.kind
            ).observe(max((self.clock.now() - deleting).total_seconds(), 0.0))
        if ref:
            self._announce_finalized(ref, finalizers)
        self.store.delete(ident)


def register(manager: Manager, ctx: ControllerContext) -> None:
    """Add one status-condition controller per kind (NodeClaim, NodePool, Node)."""
    for kind in KINDS:
        manager.add_controller(
            kind.controller,
            ConditionMetrics(kind, ctx.kube, ctx.clock, ctx.recorder),
            watches=[Watch(kind.resource)],
            workers=10,
        )
