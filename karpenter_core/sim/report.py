"""What a simulation did: observations while it runs, and the report built from them.

The :class:`Observer` is fed by watches on the in-memory API server (pods, nodes,
NodeClaims) and by the engine (scenario events, removal reasons it caused). It keeps one
small record per object, so a report can say how long each pod waited, what each node cost
and why it went away, even for objects that no longer exist at the end. Sampling every few
virtual seconds gives the time series the HTML charts draw.

The report is a value (:class:`Report`) with three renderings: ``to_json_dict()`` (the
``-o json`` shape, a public interface documented in ``docs/simulate.md``),
:func:`render_text`, and :func:`karpenter_core.sim.report_html.render_html` (one
self-contained page, inline SVG, no scripts or external assets). Its decisions are one row
per decision (:mod:`karpenter_core.sim.decisions`); the controllers' events are kept apart.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from attrs import field, frozen

from karpenter_core.apis.conditions import is_true
from karpenter_core.apis.quantity import parse_quantity
from karpenter_core.runtime.clock import Clock, format_time
from karpenter_core.sim.decisions import fold
from karpenter_core.sim.records import Decision, NodeClaimRecord, NodeRecord, PodRecord, Sample

__all__ = [
    "REPEATED_FAILURES",
    "ControllerFailures",
    "Decision",
    "NodeClaimRecord",
    "Observer",
    "PodRecord",
    "Report",
    "Sample",
    "capacity_type_name",
    "decision_subject",
    "format_offset",
    "offset_of",
    "percentile",
    "pods_note",
    "render_text",
]

NODEPOOL_LABEL = "karpenter.sh/nodepool"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"

PriceOf = Callable[[str, str, str], "float | None"]
"""(instance type, zone, capacity type) -> $/hour, None when unknown."""

REPEATED_FAILURES = 3
"""A controller whose reconciles failed this many times in one simulation failed
repeatedly, and ``karpenter simulate`` exits 3: a healthy run has no failed reconcile (a
conflict or a missing object is handled inside the reconcile), so a few mean the input or
Karpenter is broken, and the report's numbers cannot be trusted."""


def capacity_type_name(capacity_type: str) -> str:
    """A capacity type as reports show it: a node without the label is ``unknown``."""
    return capacity_type or "unknown"


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-quantile (0..1) with linear interpolation between closest ranks (numpy's
    default); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo = math.floor(pos)
    hi = math.ceil(pos)
    if lo == hi:
        return float(ordered[lo])
    return float(ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo))


def _cpu_mem(resources: Mapping[str, Any] | None) -> tuple[int, int]:
    """(milli-CPU, milli-bytes) from a k8s resource map; malformed values count as 0."""
    out = []
    for name in ("cpu", "memory"):
        raw = (resources or {}).get(name)
        try:
            out.append(parse_quantity(raw) if raw is not None else 0)
        except (ValueError, TypeError):
            out.append(0)
    return out[0], out[1]


def _pod_requests(obj: Mapping[str, Any]) -> tuple[int, int]:
    """A pod's effective CPU/memory requests, as kube-scheduler counts them."""
    try:
        from karpenter_core.apis.objects import pod_requests

        req = pod_requests(obj.get("spec") or {}, obj.get("status"))
        return int(req.get("cpu", 0)), int(req.get("memory", 0))
    except Exception:  # a malformed pod must not break the report
        return 0, 0


def _instance_type_options(spec: Mapping[str, Any]) -> int:
    """The number of instance types a NodeClaim's requirements allow (0: unconstrained)."""
    for req in spec.get("requirements") or ():
        if (
            isinstance(req, Mapping)
            and req.get("key") == INSTANCE_TYPE_LABEL
            and req.get("operator") == "In"
        ):
            return len(req.get("values") or ())
    return 0


def _using_node(rec: PodRecord | None) -> str:
    """The node whose utilisation counts a pod's requests ("" for none): bound, existing,
    not finished; a terminating pod still holds its node."""
    if rec is None or rec.gone is not None or rec.finished is not None:
        return ""
    return rec.node


def _count_slot(rec: PodRecord | None) -> int | None:
    """Where a pod counts in :meth:`Observer.counts`: 0 bound, 1 pending, None neither
    (gone, terminating, finished, or a DaemonSet pod)."""
    if rec is None or rec.gone is not None or rec.finished is not None or rec.daemon:
        return None
    if rec.deleting is not None:
        return None  # terminating: neither running for long nor waiting
    return 0 if rec.node else 1


class Observer:
    """Records what happens to pods, nodes and NodeClaims, in virtual time.

    The ``on_*`` methods have the shape of a Watch mapper (``(event_type, obj)`` -> keys)
    and return no keys, so the engine can register them as a watch-only controller: they
    see every change as soon as the Manager delivers it. Every method is idempotent per
    object, so a restarted Manager re-listing everything changes nothing.
    """

    def __init__(
        self,
        clock: Clock,
        price_of: PriceOf | None = None,
        disruption_reasons: Callable[[], Mapping[tuple[str, ...], float]] | None = None,
    ) -> None:
        self.clock = clock
        self.t0 = clock.monotonic()
        self.start_time = clock.now()
        self.price_of = price_of
        self.disruption_reasons = disruption_reasons
        self._last_reasons: dict[tuple[str, ...], float] = dict(
            disruption_reasons() if disruption_reasons else {}
        )
        self.pods: dict[str, PodRecord] = {}
        # (bound, pending) as counts() defines them, kept as pod events arrive: the run
        # asks at every step of virtual time while a phase waits for a pod count
        self._counts = [0, 0]
        # requests of the pods utilization() counts, per node, kept the same way: the
        # sample every interval walked every pod record ever seen (gone ones included)
        self._used: dict[str, list[int]] = {}
        self.nodeclaims: dict[str, NodeClaimRecord] = {}
        self.nodes: dict[str, NodeRecord] = {}
        self.decisions: list[Decision] = []
        self.samples: list[Sample] = []
        self.notes: list[str] = []
        self.removal_hints: dict[str, str] = {}
        self.existing_nodeclaims: set[str] = set()
        """NodeClaims launched before the run (a snapshot's): seen at the start, they
        are the run's starting nodes rather than launches."""

    # -- time

    def now(self) -> float:
        return self.clock.monotonic() - self.t0

    def time_of(self, t: float | None) -> str | None:
        if t is None:
            return None
        return format_time(self.start_time + timedelta(seconds=t))

    def decide(self, action: str, reason: str, source: str = "karpenter", **details: Any) -> None:
        self.decisions.append(Decision(self.now(), action, reason, details, source))

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    # -- watch mappers

    def on_pod(self, etype: str, obj: dict[str, Any]) -> tuple[()]:
        meta = obj.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        if not uid:
            return ()
        now = self.now()
        rec = self.pods.get(uid)
        before = _count_slot(rec)
        used_before = _using_node(rec)
        rec = self._on_pod(etype, obj, meta, uid, now, rec)
        after = _count_slot(rec)
        if before != after:
            if before is not None:
                self._counts[before] -= 1
            if after is not None:
                self._counts[after] += 1
        used_after = _using_node(rec)
        if used_before != used_after and rec is not None:
            if used_before:
                self._use(used_before, rec, -1)
            if used_after:
                self._use(used_after, rec, 1)
        return ()

    def _use(self, node: str, rec: PodRecord, sign: int) -> None:
        used = self._used.get(node)
        if used is None:
            used = self._used[node] = [0, 0]
        used[0] += sign * rec.cpu
        used[1] += sign * rec.memory
        if not used[0] and not used[1]:
            del self._used[node]

    def _on_pod(
        self,
        etype: str,
        obj: dict[str, Any],
        meta: Mapping[str, Any],
        uid: str,
        now: float,
        rec: PodRecord | None,
    ) -> PodRecord | None:
        if rec is None:
            if etype == "DELETED":
                return None
            owners = meta.get("ownerReferences") or ()
            owner = next(
                (f"{o.get('kind')}/{o.get('name')}" for o in owners if isinstance(o, Mapping)),
                "",
            )
            daemon = any(isinstance(o, Mapping) and o.get("kind") == "DaemonSet" for o in owners)
            cpu, memory = _pod_requests(obj)
            # watch events arrive in the instant they happen, so "now" is the creation
            # time to the nanosecond; creationTimestamp (whole seconds) only matters for
            # a pod that existed before the watch opened
            created = now
            ts = meta.get("creationTimestamp")
            if isinstance(ts, str):
                stamped = self._offset(ts, now)
                if now - stamped >= 1.0:
                    created = stamped
            # a pod from before the run (a snapshot's) waits from the run's start: the
            # run did not see it wait before
            existing = created < 0.0
            rec = PodRecord(
                f"{meta.get('namespace')}/{meta.get('name')}", owner, max(created, 0.0), cpu, memory
            )
            rec.daemon = daemon
            rec.existing = existing and bool((obj.get("spec") or {}).get("nodeName"))
            self.pods[uid] = rec
        node = (obj.get("spec") or {}).get("nodeName") or ""
        if node and rec.bound is None:
            rec.bound = now
            rec.node = str(node)
        phase = (obj.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed") and rec.finished is None:
            rec.finished = now
        if meta.get("deletionTimestamp") and rec.deleting is None:
            rec.deleting = now
        if etype == "DELETED" and rec.gone is None:
            rec.gone = now
            if rec.deleting is None:
                rec.deleting = now
        return rec

    def _offset(self, ts: str, default: float) -> float:
        try:
            from karpenter_core.runtime.clock import parse_time

            return (parse_time(ts) - self.start_time).total_seconds()
        except (ValueError, TypeError):
            return default

    def on_node(self, etype: str, obj: dict[str, Any]) -> tuple[()]:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        if not name:
            return ()
        now = self.now()
        rec = self.nodes.get(name)
        if rec is None or (rec.gone is not None and etype != "DELETED"):
            if etype == "DELETED":
                return ()
            labels = meta.get("labels") or {}
            rec = NodeRecord(name, str(labels.get(NODEPOOL_LABEL) or ""), now)
            self.nodes[name] = rec
        cpu, memory = _cpu_mem((obj.get("status") or {}).get("allocatable"))
        if cpu or memory:
            rec.cpu, rec.memory = cpu, memory
        labels = meta.get("labels") or {}
        if labels.get(NODEPOOL_LABEL):
            rec.nodepool = str(labels[NODEPOOL_LABEL])
        if labels.get(CAPACITY_TYPE_LABEL):
            rec.capacity_type = str(labels[CAPACITY_TYPE_LABEL])
        rec.ready = is_true(obj, "Ready")
        if meta.get("deletionTimestamp") and rec.deleting is None:
            rec.deleting = now
        if etype == "DELETED" and rec.gone is None:
            rec.gone = now
            if rec.deleting is None:
                rec.deleting = now
        return ()

    def on_nodeclaim(self, etype: str, obj: dict[str, Any]) -> tuple[()]:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        if not name:
            return ()
        now = self.now()
        labels = meta.get("labels") or {}
        status = obj.get("status") or {}
        rec = self.nodeclaims.get(name)
        if rec is None and name in self.existing_nodeclaims:
            if etype == "DELETED":
                return ()
            rec = self._existing_nodeclaim(name, obj)
        if rec is None:
            if etype == "DELETED":
                return ()
            rec = NodeClaimRecord(name, str(labels.get(NODEPOOL_LABEL) or ""), now)
            spec = obj.get("spec") or {}
            rec.options = _instance_type_options(spec)
            self.nodeclaims[name] = rec
            # Dynamic NodePools' claims list the instance types they allow; a static
            # NodePool's claim is its bare template (the provider picks the type).
            why = (
                "pending pods did not fit on existing capacity"
                if rec.options
                else f"a replica of static NodePool {rec.nodepool}"
            )
            self.decide(
                "CreateNodeClaim",
                why,
                nodeClaim=name,
                nodePool=rec.nodepool,
                requests=dict((spec.get("resources") or {}).get("requests") or {}),
                instanceTypeOptions=rec.options,
            )
        provider_id = status.get("providerID") or ""
        if provider_id and rec.launched is None:
            self._launched(rec, now, str(provider_id), labels)
            price = "unknown price" if rec.price is None else f"${rec.price:.4f}/h"
            among = (
                f", the provider's pick of {rec.options} compatible types" if rec.options else ""
            )
            self.decide(
                "Launch",
                f"launched {rec.instance_type or 'an instance'} ({rec.capacity_type or '?'}, "
                f"{rec.zone or '?'}) at {price}{among}",
                nodeClaim=name,
                nodePool=rec.nodepool,
                instanceType=rec.instance_type,
                zone=rec.zone,
                capacityType=rec.capacity_type,
                pricePerHour=rec.price,
            )
        if status.get("nodeName"):
            rec.node_name = str(status["nodeName"])
        if rec.registered is None and is_true(obj, "Registered"):
            rec.registered = now
        if rec.initialized is None and is_true(obj, "Initialized"):
            rec.initialized = now
        if (meta.get("deletionTimestamp") or etype == "DELETED") and rec.deleting is None:
            rec.deleting = now
            rec.reason = self._removal_reason(rec)
            action = "DeleteNodeClaim" if rec.launched is not None else "AbandonNodeClaim"
            self.decide(
                action,
                rec.reason,
                nodeClaim=name,
                nodePool=rec.nodepool,
                node=rec.node_name or None,
            )
        if etype == "DELETED" and rec.gone is None:
            rec.gone = now
        return ()

    def _launched(
        self, rec: NodeClaimRecord, t: float, provider_id: str, labels: Mapping[str, Any]
    ) -> None:
        """The NodeClaim's instance is up since ``t``: what it is and what it costs."""
        rec.launched = t
        rec.provider_id = provider_id
        rec.instance_type = str(labels.get(INSTANCE_TYPE_LABEL) or "")
        rec.zone = str(labels.get(ZONE_LABEL) or "")
        rec.capacity_type = str(labels.get(CAPACITY_TYPE_LABEL) or "")
        if self.price_of is not None and rec.instance_type:
            rec.price = self.price_of(rec.instance_type, rec.zone, rec.capacity_type)

    def _existing_nodeclaim(self, name: str, obj: Mapping[str, Any]) -> NodeClaimRecord:
        """The record of a NodeClaim from before the run: created when its timestamp
        says, launched (for the cost) at the start, no launch decision."""
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        ts = meta.get("creationTimestamp")
        created = self._offset(ts, 0.0) if isinstance(ts, str) else 0.0
        rec = NodeClaimRecord(name, str(labels.get(NODEPOOL_LABEL) or ""), min(created, 0.0))
        rec.existing = True
        rec.options = _instance_type_options(obj.get("spec") or {})
        provider_id = (obj.get("status") or {}).get("providerID") or ""
        if provider_id:
            self._launched(rec, 0.0, str(provider_id), labels)
        self.nodeclaims[name] = rec
        return rec

    def _removal_reason(self, rec: NodeClaimRecord) -> str:
        hint = self.removal_hints.pop(rec.name, None)
        delta = self._reason_delta()
        if hint:
            return hint
        if delta:
            # several deletions in one reconcile: prefer a series of this NodeClaim's pool
            for labels in list(delta):
                if rec.nodepool in labels:
                    return _take(delta, labels, self._last_reasons)
            return _take(delta, next(iter(delta)), self._last_reasons)
        node = self.nodes.get(rec.node_name) if rec.node_name else None
        if node is not None and node.deleting is not None:
            return "node deleted"
        return "deleted"

    def _reason_delta(self) -> dict[tuple[str, ...], float]:
        """Disruption-counter increases not yet attributed to a NodeClaim."""
        if self.disruption_reasons is None:
            return {}
        current = self.disruption_reasons()
        delta = {
            labels: value - self._last_reasons.get(labels, 0.0)
            for labels, value in current.items()
            if value - self._last_reasons.get(labels, 0.0) > 0
        }
        return delta

    # -- sampling

    def live_pods(self) -> Iterable[PodRecord]:
        return (p for p in self.pods.values() if p.gone is None)

    def utilization(self) -> tuple[float, float]:
        """Average over Karpenter nodes of (pod requests / allocatable), CPU and memory,
        as upstream's performance suite measures it."""
        cpu_ratios: list[float] = []
        mem_ratios: list[float] = []
        none = (0, 0)
        for n in self.nodes.values():
            if n.gone is not None or not n.nodepool:
                continue
            cpu_used, mem_used = self._used.get(n.name, none)
            if n.cpu:
                cpu_ratios.append(cpu_used / n.cpu)
            if n.memory:
                mem_ratios.append(mem_used / n.memory)
        return _mean(cpu_ratios), _mean(mem_ratios)

    def cost_per_hour(self) -> float:
        return sum(
            nc.price or 0.0
            for nc in self.nodeclaims.values()
            if nc.launched is not None and nc.gone is None
        )

    def counts(self) -> tuple[int, int]:
        """(bound, pending) among pods that exist, are not terminating, have not finished
        and are not DaemonSet pods (kept up to date as pod events arrive)."""
        return self._counts[0], self._counts[1]

    def sample(self) -> Sample:
        bound, pending = self.counts()
        cpu, mem = self.utilization()
        by_type: Counter[str] = Counter(
            n.capacity_type for n in self.nodes.values() if n.gone is None
        )
        cost_by_type: dict[str, float] = {}
        for nc in self.nodeclaims.values():
            if nc.launched is not None and nc.gone is None and nc.price:
                ct = nc.capacity_type
                cost_by_type[ct] = cost_by_type.get(ct, 0.0) + nc.price
        s = Sample(
            self.now(),
            by_type.total(),
            pending,
            bound,
            self.cost_per_hour(),
            cpu,
            mem,
            tuple(sorted(by_type.items())),
            tuple(sorted(cost_by_type.items())),
        )
        if self.samples and self.samples[-1].t == s.t:
            self.samples[-1] = s
        else:
            self.samples.append(s)
        return s


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def _take(
    delta: dict[tuple[str, ...], float],
    labels: tuple[str, ...],
    last: dict[tuple[str, ...], float],
) -> str:
    """Attribute one increment of the series ``labels`` (its first label is the reason)."""
    last[labels] = last.get(labels, 0.0) + 1.0
    return labels[0].replace("_", " ") if labels else "deleted"


# ---------------------------------------------------------------------------- the report


@frozen
class ControllerFailures:
    """A controller whose reconciles raised: how often, out of how many, and the last error
    (one line, elided)."""

    controller: str
    reconciles: int
    failures: int
    last_error: str

    @property
    def repeated(self) -> bool:
        return self.failures >= REPEATED_FAILURES

    def describe(self) -> str:
        return (
            f"controller {self.controller} failed {self.failures} of {self.reconciles} "
            f"reconciles; last error: {self.last_error}"
        )

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "controller": self.controller,
            "reconciles": self.reconciles,
            "failures": self.failures,
            "lastError": self.last_error,
            "failedRepeatedly": self.repeated,
        }


@frozen
class ComputeCharged:
    """Virtual time charged for Karpenter's compute (``chargeComputeTime``): the scale,
    the total and each controller's share, most first."""

    scale: float
    total_seconds: float
    by_controller: Mapping[str, float]

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "scale": self.scale,
            "totalSeconds": round(self.total_seconds, 3),
            "controllers": {name: round(sec, 3) for name, sec in self.by_controller.items()},
        }

    def describe(self, top: int = 3) -> str:
        shown = list(self.by_controller.items())[:top]
        parts = ", ".join(f"{name} {sec:.1f}s" for name, sec in shown)
        more = len(self.by_controller) - len(shown)
        return (
            f"{self.total_seconds:.1f}s charged to the virtual clock (x{self.scale:g})"
            + (f": {parts}" if parts else "")
            + (f", {more} more" if more > 0 else "")
        )


@frozen
class Report:
    """The outcome of one simulation (see ``docs/simulate.md`` for every field)."""

    scenario: str
    seed: int
    start: str
    end: str
    duration_seconds: float
    wall_seconds: float
    nodeclaims: tuple[NodeClaimRecord, ...]
    pods_bound: int
    pods_pending: int
    pods_succeeded: int
    pods_created: int
    pending_seconds: tuple[float, ...]
    cost_total: float
    cost_per_hour_at_end: float
    cpu_utilization: float
    memory_utilization: float
    decisions: tuple[dict[str, Any], ...]
    samples: tuple[Sample, ...]
    notes: tuple[str, ...]
    controllers: tuple[str, ...]
    time_of: Callable[[float | None], str | None]
    metrics: Mapping[str, float] = field(factory=dict)
    controller_failures: tuple[ControllerFailures, ...] = ()
    compute_charged: ComputeCharged | None = None
    events: tuple[dict[str, Any], ...] = ()
    """What the controllers said along the way (``-o json``'s ``events``): every event
    but the status-condition echoes, pod events folded per instant."""
    cost_by_capacity_type: Mapping[str, float] = field(factory=dict)
    pods_disrupted: int = 0
    """Pods that were running on a node when its removal began and went with it."""

    @property
    def failed_controllers(self) -> tuple[ControllerFailures, ...]:
        """The controllers that failed repeatedly (see :data:`REPEATED_FAILURES`)."""
        return tuple(f for f in self.controller_failures if f.repeated)

    @property
    def nodes_launched(self) -> int:
        return sum(1 for nc in self.nodeclaims if nc.launched is not None and not nc.existing)

    @property
    def nodes_at_start(self) -> int:
        """The snapshot's launched NodeClaims a run from a snapshot started with."""
        return sum(1 for nc in self.nodeclaims if nc.launched is not None and nc.existing)

    @property
    def nodes_removed(self) -> int:
        return sum(
            1 for nc in self.nodeclaims if nc.launched is not None and nc.deleting is not None
        )

    def removal_reasons(self) -> dict[str, int]:
        return dict(
            sorted(
                Counter(
                    nc.reason
                    for nc in self.nodeclaims
                    if nc.launched is not None and nc.deleting is not None
                ).items()
            )
        )

    def nodes_launched_by_capacity_type(self) -> dict[str, int]:
        return dict(
            sorted(
                Counter(
                    capacity_type_name(nc.capacity_type)
                    for nc in self.nodeclaims
                    if nc.launched is not None and not nc.existing
                ).items()
            )
        )

    def pending_stats(self) -> dict[str, float]:
        xs = self.pending_seconds
        return {
            "p50": round(percentile(xs, 0.5), 3),
            "p95": round(percentile(xs, 0.95), 3),
            "max": round(max(xs), 3) if xs else 0.0,
        }

    def to_json_dict(self) -> dict[str, Any]:
        created = [nc for nc in self.nodeclaims if not nc.existing]
        launched = [nc for nc in created if nc.launched is not None]
        return {
            "scenario": self.scenario,
            "seed": self.seed,
            "start": self.start,
            "end": self.end,
            "virtualSeconds": round(self.duration_seconds, 3),
            "wallSeconds": round(self.wall_seconds, 3),
            "nodesLaunched": self.nodes_launched,
            "nodesLaunchedByCapacityType": self.nodes_launched_by_capacity_type(),
            "nodesRemoved": self.nodes_removed,
            "removalReasons": self.removal_reasons(),
            "nodeClaimsCreated": len(created),
            "nodeClaimsNotLaunched": len(created) - len(launched),
            "nodesAtStart": self.nodes_at_start,
            "nodes": [nc.to_json_dict(self.time_of) for nc in self.nodeclaims],
            "pods": {
                "created": self.pods_created,
                "bound": self.pods_bound,
                "pending": self.pods_pending,
                "succeeded": self.pods_succeeded,
                "disrupted": self.pods_disrupted,
                "pendingSeconds": self.pending_stats(),
            },
            "cost": {
                "total": round(float(self.cost_total), 6),
                "perHourAtEnd": round(float(self.cost_per_hour_at_end), 6),
                "byCapacityType": {
                    capacity_type_name(k): round(v, 6)
                    for k, v in sorted(self.cost_by_capacity_type.items())
                },
                "currency": "USD",
            },
            "utilization": {
                "cpu": round(self.cpu_utilization, 4),
                "memory": round(self.memory_utilization, 4),
            },
            "timeline": [
                {
                    "time": self.time_of(s.t),
                    "offsetSeconds": round(s.t, 3),
                    "nodes": s.nodes,
                    "pendingPods": s.pending_pods,
                    "boundPods": s.bound_pods,
                    "costPerHour": round(s.cost_per_hour, 6),
                    "nodesByCapacityType": {
                        capacity_type_name(k): n for k, n in s.nodes_by_capacity_type
                    },
                    "costPerHourByCapacityType": {
                        capacity_type_name(k): round(v, 6) for k, v in s.cost_by_capacity_type
                    },
                    "cpuUtilization": round(s.cpu_utilization, 4),
                    "memoryUtilization": round(s.memory_utilization, 4),
                }
                for s in self.samples
            ],
            "decisions": list(self.decisions),
            "events": list(self.events),
            "controllers": list(self.controllers),
            "controllerFailures": [f.to_json_dict() for f in self.controller_failures],
            "computeCharged": (
                None if self.compute_charged is None else self.compute_charged.to_json_dict()
            ),
            "metrics": dict(self.metrics),
            "notes": list(self.notes),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_json_dict(), indent=2, sort_keys=False)


def build_report(
    observer: Observer,
    *,
    scenario: str,
    seed: int,
    wall_seconds: float,
    recorded_events: Iterable[Any] = (),
    controllers: Sequence[str] = (),
    metrics: Mapping[str, float] | None = None,
    controller_failures: Sequence[ControllerFailures] = (),
    compute_charged: ComputeCharged | None = None,
) -> Report:
    """Freeze what ``observer`` saw (and the controllers' recorded events) into a report."""
    end = observer.now()
    observer.sample()
    pods = [p for p in observer.pods.values() if not p.daemon]
    pending_seconds = []
    disrupted = 0
    for p in pods:
        node = observer.nodes.get(p.node) if p.node else None
        if (
            node is not None
            and node.deleting is not None
            and p.deleting is not None
            and p.finished is None
            and p.deleting >= node.deleting
        ):
            disrupted += 1
        if p.existing:
            continue
        if p.bound is not None:
            pending_seconds.append(max(0.0, p.bound - p.created))
        elif p.finished is None:
            stop = p.gone if p.gone is not None else end
            pending_seconds.append(max(0.0, stop - p.created))
    bound, pending = observer.counts()
    succeeded = sum(1 for p in pods if p.finished is not None)
    cost_by_type: dict[str, float] = {}
    for nc in observer.nodeclaims.values():
        if nc.launched is None or not nc.price:
            continue
        stop = nc.gone if nc.gone is not None else end
        cost = nc.price * max(0.0, stop - nc.launched) / 3600.0
        cost_by_type[nc.capacity_type] = cost_by_type.get(nc.capacity_type, 0.0) + cost
    total_cost = sum(cost_by_type.values())
    cpu, mem = observer.utilization()
    decisions, events = fold(
        observer.decisions,
        recorded_events,
        observer.nodeclaims,
        observer.start_time,
        observer.time_of,
    )
    return Report(
        scenario=scenario,
        seed=seed,
        start=observer.time_of(0.0) or "",
        end=observer.time_of(end) or "",
        duration_seconds=end,
        wall_seconds=wall_seconds,
        nodeclaims=tuple(observer.nodeclaims.values()),
        pods_bound=bound,
        pods_pending=pending,
        pods_succeeded=succeeded,
        pods_created=len(pods),
        pending_seconds=tuple(pending_seconds),
        cost_total=total_cost,
        cost_per_hour_at_end=observer.cost_per_hour(),
        cpu_utilization=cpu,
        memory_utilization=mem,
        decisions=tuple(decisions),
        events=tuple(events),
        samples=tuple(observer.samples),
        notes=tuple(observer.notes),
        controllers=tuple(controllers),
        time_of=observer.time_of,
        metrics=dict(metrics or {}),
        controller_failures=tuple(controller_failures),
        compute_charged=compute_charged,
        cost_by_capacity_type=dict(cost_by_type),
        pods_disrupted=disrupted,
    )


# ---------------------------------------------------------------------------- rendering


def format_offset(seconds: float | None) -> str:
    """Seconds into the run as ``45s``, ``2m05s`` or ``1h02m05s`` (``-`` for none)."""
    if seconds is None:
        return "-"
    s = round(seconds)
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    if h:
        return f"{h}h{m:02d}m{sec:02d}s"
    if m:
        return f"{m}m{sec:02d}s"
    return f"{sec}s"


def offset_of(report: Report, when: str | None) -> str:
    """An RFC 3339 time of the run as ``+2m05s`` from its start (``-`` for none)."""
    if when is None:
        return "-"
    start = datetime.fromisoformat(report.start.replace("Z", "+00:00"))
    t = datetime.fromisoformat(when.replace("Z", "+00:00"))
    return "+" + format_offset((t - start).total_seconds())


def decision_subject(d: Mapping[str, Any]) -> str:
    """What a decision row is about: its NodeClaim(s), object, workload or node."""
    return str(d.get("nodeClaim") or d.get("object") or d.get("workload") or d.get("node") or "")


def pods_note(d: Mapping[str, Any]) -> str:
    """``[N pods]`` for a folded pod event (a launch says its pods in its reason)."""
    if d.get("pods") and d["action"] not in ("Launch", "LaunchFailed"):
        return f" [{d['pods']} pods]"
    return ""


MAX_TEXT_DECISIONS = 60
MAX_TEXT_NODES = 40


def render_text(
    report: Report, *, max_decisions: int = MAX_TEXT_DECISIONS, max_nodes: int = MAX_TEXT_NODES
) -> str:
    """A terminal summary: totals, the first NodeClaims, and the first decisions."""
    j = report.to_json_dict()
    ps = j["pods"]["pendingSeconds"]
    lines = [
        f"Scenario {report.scenario} (seed {report.seed}): {format_offset(report.duration_seconds)} "
        f"of virtual time in {report.wall_seconds:.1f}s",
        "",
        "Nodes      "
        + (f"{j['nodesAtStart']} at the start, " if j["nodesAtStart"] else "")
        + f"launched {j['nodesLaunched']}, removed {j['nodesRemoved']}"
        + (
            " (" + ", ".join(f"{r}: {n}" for r, n in j["removalReasons"].items()) + ")"
            if j["removalReasons"]
            else ""
        )
        + f"; NodeClaims created {j['nodeClaimsCreated']}, never launched {j['nodeClaimsNotLaunched']}",
        f"Pods       created {j['pods']['created']}, bound {j['pods']['bound']}, "
        f"pending {j['pods']['pending']}, succeeded {j['pods']['succeeded']}"
        + (f", disrupted {j['pods']['disrupted']}" if j["pods"]["disrupted"] else ""),
        f"Pending    p50 {ps['p50']:.1f}s  p95 {ps['p95']:.1f}s  max {ps['max']:.1f}s",
        f"Cost       total ${j['cost']['total']:.4f}, ${j['cost']['perHourAtEnd']:.4f}/h at the end",
        f"Reserved   CPU {j['utilization']['cpu'] * 100:.1f}%  memory {j['utilization']['memory'] * 100:.1f}%",
    ]
    if report.compute_charged is not None:
        lines.append(f"Compute    {report.compute_charged.describe()}")
    if report.nodeclaims:
        lines += [
            "",
            "NODECLAIM                  NODEPOOL     TYPE               ZONE          CAPACITY   $/H      LAUNCHED   REMOVED    REASON",
        ]
        shown = report.nodeclaims[:max_nodes]
        for nc in shown:
            lines.append(
                f"{nc.name:<26} {nc.nodepool:<12} {nc.instance_type or '-':<18} {nc.zone or '-':<13} "
                f"{nc.capacity_type or '-':<10} {f'{nc.price:.4f}' if nc.price is not None else '-':<8} "
                f"{('+' + format_offset(nc.launched)) if nc.launched is not None else '-':<10} "
                f"{('+' + format_offset(nc.deleting)) if nc.deleting is not None else '-':<10} {nc.reason or ''}"
            )
        if len(report.nodeclaims) > max_nodes:
            lines.append(f"... {len(report.nodeclaims) - max_nodes} more (use -o json for all)")
    if report.decisions:
        steps = sum(1 for d in report.decisions if d.get("source") == "scenario")
        lines += [
            "",
            f"Decisions ({len(report.decisions) - steps} by Karpenter, "
            f"{steps} scenario step{'' if steps == 1 else 's'}):",
        ]
        for d in report.decisions[:max_decisions]:
            who = "scenario" if d.get("source") == "scenario" else "karpenter"
            subject = decision_subject(d)
            lines.append(
                f"  {offset_of(report, d['time']):>9}  {who:<9}  {d['action']:<16} "
                f"{subject + ': ' if subject else ''}{d['reason']}{pods_note(d)}"
            )
        if len(report.decisions) > max_decisions:
            lines.append(
                f"  ... {len(report.decisions) - max_decisions} more (use -o json for all)"
            )
    if report.events:
        lines.append(
            f"  ({len(report.events)} events from Karpenter's controllers besides: "
            "-o json lists them under events)"
        )
    if report.controller_failures:
        lines += ["", "Controller failures:"] + [
            f"  - {f.describe()}" + ("  (failed repeatedly)" if f.repeated else "")
            for f in report.controller_failures
        ]
    if report.notes:
        lines += ["", "Notes:"] + [f"  - {n}" for n in report.notes]
    return "\n".join(lines) + "\n"
