"""``metrics.pod``: one ``karpenter_pods_state`` series per pod, and how long pods wait.

Per pod (spec apis-and-cloudprovider §13, upstream ``pkg/controllers/metrics/pod``):

* ``pods_state`` = 1 with the pod's name, namespace, owner (a self link built from the first
  owner reference), node, scheduled, phase, ready, and the node's NodePool, zone, arch,
  capacity type, instance type and whether Karpenter manages it;
* while pending: ``pods_unstarted_time_seconds`` / ``pods_unbound_time_seconds`` (since
  creation) and their ``provisioning_`` variants (since Karpenter first found the pod a
  place, when it has); once Ready / bound, the gauges go and the startup / bound durations
  are observed once (pods seen pending by this controller only, as upstream);
* ``pods_provisioning_scheduling_undecided_time_seconds`` from when cluster state
  acknowledged the pod until the provisioner decides anything about it.

A pod with a waiting gauge is requeued every 30 s so the gauge keeps growing without an
event (upstream requeues every pod; one whose series holds no time has nothing to refresh, and
with 150,000 pods those reconciles were 5,000 a second). What else a series shows comes from
the pod, refreshed by its events, and from its node's labels: a change of those labels
(or a node that appears after its pods were labelled without it) requeues the node's pods.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from karpenter_core import metrics
from karpenter_core.apis.conditions import condition_of
from karpenter_core.apis.labels import (
    CAPACITY_TYPE_LABEL_KEY,
    LABEL_ARCH,
    LABEL_INSTANCE_TYPE,
    LABEL_TOPOLOGY_ZONE,
    NODEPOOL_LABEL_KEY,
)
from karpenter_core.apis.v1 import parse_time
from karpenter_core.controllers.metrics.store import MetricStore, StoreMetric
from karpenter_core.kube.client import NotFound, shared_get, shared_list
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import ObjectKey, Result, Watch
from karpenter_core.state.cluster import cluster_of

__all__ = ["NAME", "REQUEUE_SECONDS", "PodMetrics", "owner_self_link"]

NAME = "metrics.pod"
REQUEUE_SECONDS = 30.0

_WAITING_GAUGES = (
    metrics.PODS_UNSTARTED_TIME_SECONDS,
    metrics.PODS_PROVISIONING_UNSTARTED_TIME_SECONDS,
    metrics.PODS_UNBOUND_TIME_SECONDS,
    metrics.PODS_PROVISIONING_UNBOUND_TIME_SECONDS,
    metrics.PODS_PROVISIONING_SCHEDULING_UNDECIDED_TIME_SECONDS,
)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _is_true(cond: Mapping[str, Any] | None) -> bool:
    return cond is not None and cond.get("status") == "True"


def _time(value: Any) -> datetime | None:
    try:
        return parse_time(value) if isinstance(value, str) else None
    except ValueError:
        return None


_NODE_LABELS = (
    NODEPOOL_LABEL_KEY,
    LABEL_TOPOLOGY_ZONE,
    LABEL_ARCH,
    CAPACITY_TYPE_LABEL_KEY,
    LABEL_INSTANCE_TYPE,
)


def _node_values(labels: Mapping[str, Any]) -> tuple[str, ...]:
    """The node label values a pod's ``pods_state`` series shows."""
    return tuple(str(labels.get(k) or "") for k in _NODE_LABELS)


def owner_self_link(pod: Mapping[str, Any]) -> str:
    """The first owner's API path, as upstream rebuilds the deprecated selfLink:
    ``/apis/<apiVersion>/namespaces/<ns>/<lower kind>s/<name>``; "" without owners."""
    meta = _mapping(pod.get("metadata"))
    owners = meta.get("ownerReferences") or []
    if not owners or not isinstance(owners[0], Mapping):
        return ""
    o = owners[0]
    return (
        f"/apis/{o.get('apiVersion', '')}/namespaces/{meta.get('namespace') or 'default'}/"
        f"{str(o.get('kind', '')).lower()}s/{o.get('name', '')}"
    )


class PodMetrics:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.cluster = cluster_of(ctx)
        self.store = MetricStore()
        self._lock = threading.Lock()
        self._pending: set[str] = set()
        self._unscheduled: set[str] = set()
        # the node-derived label values each node's pods were last labelled with, and the
        # pods labelled while their node was unknown (by node name)
        self._node_values: dict[str, tuple[str, ...]] = {}
        self._nodeless: dict[str, set[str]] = {}

    def watches(self) -> list[Watch]:
        """Pods, and nodes whose labels change what their pods' series show."""
        return [Watch("pods"), Watch("nodes", mapper=self._pods_of_node)]

    def _pods_of_node(self, event_type: str, node: Any) -> list[ObjectKey]:
        meta = _mapping(_mapping(node).get("metadata"))
        name = str(meta.get("name") or "")
        values = None if event_type == "DELETED" else _node_values(_mapping(meta.get("labels")))
        with self._lock:
            seen = self._node_values.get(name)
            if values is None:
                self._node_values.pop(name, None)
            else:
                self._node_values[name] = values
            waiting = self._nodeless.pop(name, set()) if values is not None else set()
        if seen is None or values is None or seen == values:
            keys = waiting
        else:
            list_pods = shared_list(self.ctx.kube)
            pods = list_pods("pods", field_selector=f"spec.nodeName={name}").items
            keys = set()
            for p in pods:
                pod_meta = _mapping(p.get("metadata"))
                keys.add(f"{pod_meta.get('namespace') or 'default'}/{pod_meta.get('name')}")
        out = []
        for ident in sorted(keys):
            namespace, _, pod_name = ident.partition("/")
            out.append(ObjectKey(name=pod_name, namespace=namespace))
        return out

    def reconcile(self, key: ObjectKey) -> Result:
        namespace = key.namespace or "default"
        name_labels = {"name": key.name, "namespace": namespace}
        ident = f"{namespace}/{key.name}"
        # read-only: the cached object itself where the client can hand it out uncopied
        get_pod = shared_get(self.ctx.kube)
        try:
            pod = get_pod("pods", key.name, namespace)
        except NotFound:
            with self._lock:
                self._pending.discard(ident)
                self._unscheduled.discard(ident)
            for gauge in _WAITING_GAUGES:
                _delete(gauge, name_labels)
            self.store.delete(ident)
            return Result()
        labels = self._labels(pod, key.name, namespace)
        self.store.update(ident, [StoreMetric(metrics.PODS_STATE, labels, 1.0)])
        now = self.ctx.clock.now()
        created = _time(_mapping(pod.get("metadata")).get("creationTimestamp")) or now
        schedulable = self.cluster.pod_scheduling_success(ident)
        self._undecided(pod, ident, name_labels, now)
        self._startup(pod, ident, name_labels, now, created, schedulable)
        self._bound(pod, ident, name_labels, now, created, schedulable)
        with self._lock:
            waiting = ident in self._pending or ident in self._unscheduled
        return Result.after(REQUEUE_SECONDS) if waiting else Result()

    # -- labels --

    def _labels(self, pod: Mapping[str, Any], name: str, namespace: str) -> dict[str, str]:
        spec = _mapping(pod.get("spec"))
        node_name = str(spec.get("nodeName") or "")
        node_labels: Mapping[str, Any] = {}
        if node_name:
            # Cluster state's parsed node first: a sim with thousands of pods should not
            # copy a node out of the API server for each of them.
            found = self.cluster.node_labels(node_name)
            if found is None:
                with contextlib.suppress(NotFound):
                    node = self.ctx.kube.get("nodes", node_name)
                    found = _mapping(_mapping(node.get("metadata")).get("labels"))
            if found is None:
                with self._lock:
                    self._nodeless.setdefault(node_name, set()).add(f"{namespace}/{name}")
            else:
                node_labels = found
        pool = str(node_labels.get(NODEPOOL_LABEL_KEY) or "")
        return {
            "name": name,
            "namespace": namespace,
            "owner": owner_self_link(pod),
            "node": node_name,
            "scheduled": "true" if node_name else "false",
            "phase": str(_mapping(pod.get("status")).get("phase") or ""),
            "ready": "true" if _is_true(condition_of(pod, "Ready")) else "false",
            metrics.LABEL_NODEPOOL: pool,
            metrics.LABEL_ZONE: str(node_labels.get(LABEL_TOPOLOGY_ZONE) or ""),
            "arch": str(node_labels.get(LABEL_ARCH) or ""),
            metrics.LABEL_CAPACITY_TYPE: str(node_labels.get(CAPACITY_TYPE_LABEL_KEY) or ""),
            "instance_type": str(node_labels.get(LABEL_INSTANCE_TYPE) or ""),
            "managed": "true" if pool else "false",
        }

    # -- waiting times --

    def _undecided(
        self, pod: Mapping[str, Any], ident: str, labels: dict[str, str], now: datetime
    ) -> None:
        gauge = metrics.PODS_PROVISIONING_SCHEDULING_UNDECIDED_TIME_SECONDS
        decided = self.cluster.pod_scheduling_decision(ident) is not None
        bound = bool(_mapping(pod.get("spec")).get("nodeName"))
        if decided or bound or _is_true(condition_of(pod, "PodScheduled")) or _terminal(pod):
            _delete(gauge, labels)
            return
        acked = self.cluster.pod_ack_time(ident)
        if acked is not None:
            gauge.labels(**labels).set(_seconds(now, acked))

    def _startup(
        self,
        pod: Mapping[str, Any],
        ident: str,
        labels: dict[str, str],
        now: datetime,
        created: datetime,
        schedulable: datetime | None,
    ) -> None:
        if _phase(pod) == "Pending":
            self._set_waiting(
                metrics.PODS_UNSTARTED_TIME_SECONDS,
                metrics.PODS_PROVISIONING_UNSTARTED_TIME_SECONDS,
                labels,
                now,
                created,
                schedulable,
            )
            with self._lock:
                self._pending.add(ident)
            return
        with self._lock:
            if ident not in self._pending:
                return
        ready = condition_of(pod, "Ready")
        if _is_true(ready) or _terminal(pod):
            _delete(metrics.PODS_UNSTARTED_TIME_SECONDS, labels)
            _delete(metrics.PODS_PROVISIONING_UNSTARTED_TIME_SECONDS, labels)
            started = _time((ready or {}).get("lastTransitionTime")) if _is_true(ready) else None
            # A terminal pod's Ready is False: no startup duration for it (upstream).
            if started is not None:
                metrics.PODS_STARTUP_DURATION_SECONDS.observe(_seconds(started, created))
                if schedulable is not None:
                    metrics.PODS_PROVISIONING_STARTUP_DURATION_SECONDS.observe(
                        _seconds(started, schedulable)
                    )
            with self._lock:
                self._pending.discard(ident)
            # Cluster state need not remember this pod's scheduling times any longer.
            self.cluster.clear_pod_scheduling(ident)
            return
        self._set_waiting(
            metrics.PODS_UNSTARTED_TIME_SECONDS,
            metrics.PODS_PROVISIONING_UNSTARTED_TIME_SECONDS,
            labels,
            now,
            created,
            schedulable,
        )

    def _bound(
        self,
        pod: Mapping[str, Any],
        ident: str,
        labels: dict[str, str],
        now: datetime,
        created: datetime,
        schedulable: datetime | None,
    ) -> None:
        scheduled = condition_of(pod, "PodScheduled")
        if _phase(pod) == "Pending":
            if not _is_true(scheduled):
                self._set_waiting(
                    metrics.PODS_UNBOUND_TIME_SECONDS,
                    metrics.PODS_PROVISIONING_UNBOUND_TIME_SECONDS,
                    labels,
                    now,
                    created,
                    schedulable,
                )
            with self._lock:
                self._unscheduled.add(ident)
            return
        with self._lock:
            if ident not in self._unscheduled or not _is_true(scheduled):
                return
            self._unscheduled.discard(ident)
        _delete(metrics.PODS_UNBOUND_TIME_SECONDS, labels)
        _delete(metrics.PODS_PROVISIONING_UNBOUND_TIME_SECONDS, labels)
        bound_at = _time((scheduled or {}).get("lastTransitionTime"))
        if bound_at is not None:
            metrics.PODS_BOUND_DURATION_SECONDS.observe(_seconds(bound_at, created))
            if schedulable is not None:
                metrics.PODS_PROVISIONING_BOUND_DURATION_SECONDS.observe(
                    _seconds(bound_at, schedulable)
                )

    @staticmethod
    def _set_waiting(
        since_creation: Any,
        since_schedulable: Any,
        labels: dict[str, str],
        now: datetime,
        created: datetime,
        schedulable: datetime | None,
    ) -> None:
        since_creation.labels(**labels).set(_seconds(now, created))
        if schedulable is not None:
            since_schedulable.labels(**labels).set(_seconds(now, schedulable))
        else:
            _delete(since_schedulable, labels)


def _phase(pod: Mapping[str, Any]) -> str:
    return str(_mapping(pod.get("status")).get("phase") or "")


def _terminal(pod: Mapping[str, Any]) -> bool:
    return _phase(pod) in ("Succeeded", "Failed")


def _seconds(later: datetime, earlier: datetime) -> float:
    return (later - earlier).total_seconds()


def _delete(gauge: Any, labels: Mapping[str, str]) -> None:
    values = tuple(labels[n] for n in gauge._labelnames)
    # most calls find no series (a pod that never waited): look before removing, as a
    # failed remove raises, and this runs several times per pod event
    if values not in gauge._metrics:
        return
    with contextlib.suppress(KeyError):
        gauge.remove(*values)
