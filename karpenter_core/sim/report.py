"""What a simulation did: observations while it runs, and the report built from them.

The :class:`Observer` is fed by watches on the in-memory API server (pods, nodes,
NodeClaims) and by the engine (scenario events, removal reasons it caused). It keeps one
small record per object, so a report can say how long each pod waited, what each node cost
and why it went away, even for objects that no longer exist at the end. Sampling every few
virtual seconds gives the time series the HTML charts draw.

The report is a value (:class:`Report`) with three renderings: ``to_json_dict()`` (the
``-o json`` shape, a public interface documented in ``docs/simulate.md``),
:func:`render_text` and :func:`render_html` (one self-contained page, inline SVG, no
scripts or external assets).
"""

from __future__ import annotations

import html
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from attrs import define, field, frozen

from karpenter_core.apis.conditions import is_true
from karpenter_core.apis.quantity import parse_quantity
from karpenter_core.runtime.clock import Clock, format_time

__all__ = [
    "REPEATED_FAILURES",
    "ControllerFailures",
    "Decision",
    "NodeClaimRecord",
    "Observer",
    "PodRecord",
    "Report",
    "Sample",
    "percentile",
    "render_html",
    "render_text",
]

NODEPOOL_LABEL = "karpenter.sh/nodepool"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
_NOMINATED = re.compile(r"nodeclaim/([A-Za-z0-9.\-]+)")

PriceOf = Callable[[str, str, str], "float | None"]
"""(instance type, zone, capacity type) -> $/hour, None when unknown."""

REPEATED_FAILURES = 3
"""A controller whose reconciles failed this many times in one simulation failed
repeatedly, and ``karpenter simulate`` exits 3: a healthy run has no failed reconcile (a
conflict or a missing object is handled inside the reconcile), so a few mean the input or
Karpenter is broken, and the report's numbers cannot be trusted."""


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
        from karpenter_core.apis.objects import Pod

        req = Pod.from_dict(obj).requests
        return int(req.get("cpu", 0)), int(req.get("memory", 0))
    except Exception:  # a malformed pod must not break the report
        return 0, 0


# ---------------------------------------------------------------------------- records


@define(slots=True)
class PodRecord:
    key: str
    owner: str
    created: float
    cpu: int = 0
    memory: int = 0
    bound: float | None = None
    node: str = ""
    finished: float | None = None
    deleting: float | None = None
    gone: float | None = None
    daemon: bool = False
    """A DaemonSet's pod: counts toward node utilisation, not toward the pod figures."""


@define(slots=True)
class NodeClaimRecord:
    name: str
    nodepool: str
    created: float
    launched: float | None = None
    provider_id: str = ""
    instance_type: str = ""
    zone: str = ""
    capacity_type: str = ""
    price: float | None = None
    node_name: str = ""
    registered: float | None = None
    initialized: float | None = None
    deleting: float | None = None
    gone: float | None = None
    reason: str = ""
    options: int = 0
    """How many instance types the NodeClaim's requirements allowed."""

    def to_json_dict(self, time_of: Callable[[float | None], str | None]) -> dict[str, Any]:
        return {
            "name": self.name,
            "nodePool": self.nodepool,
            "node": self.node_name or None,
            "instanceType": self.instance_type or None,
            "zone": self.zone or None,
            "capacityType": self.capacity_type or None,
            "pricePerHour": self.price,
            "created": time_of(self.created),
            "launched": time_of(self.launched),
            "registered": time_of(self.registered),
            "initialized": time_of(self.initialized),
            "removed": time_of(self.deleting),
            "gone": time_of(self.gone),
            "removalReason": self.reason or None,
        }


@define(slots=True)
class NodeRecord:
    name: str
    nodepool: str
    created: float
    cpu: int = 0
    memory: int = 0
    ready: bool = False
    deleting: float | None = None
    gone: float | None = None


@frozen
class Decision:
    """Something Karpenter (or the scenario) decided, at ``t`` seconds into the run."""

    t: float
    action: str
    reason: str
    details: Mapping[str, Any] = field(factory=dict)
    source: str = "karpenter"


@frozen
class Sample:
    t: float
    nodes: int
    pending_pods: int
    bound_pods: int
    cost_per_hour: float
    cpu_utilization: float
    memory_utilization: float


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
        self.nodeclaims: dict[str, NodeClaimRecord] = {}
        self.nodes: dict[str, NodeRecord] = {}
        self.decisions: list[Decision] = []
        self.samples: list[Sample] = []
        self.notes: list[str] = []
        self.removal_hints: dict[str, str] = {}

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
        if rec is None:
            if etype == "DELETED":
                return ()
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
            rec = PodRecord(
                f"{meta.get('namespace')}/{meta.get('name')}", owner, created, cpu, memory
            )
            rec.daemon = daemon
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
        return ()

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
            rec.launched = now
            rec.provider_id = str(provider_id)
            rec.instance_type = str(labels.get(INSTANCE_TYPE_LABEL) or "")
            rec.zone = str(labels.get(ZONE_LABEL) or "")
            rec.capacity_type = str(labels.get(CAPACITY_TYPE_LABEL) or "")
            if self.price_of is not None and rec.instance_type:
                rec.price = self.price_of(rec.instance_type, rec.zone, rec.capacity_type)
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
        cpu_used: Counter[str] = Counter()
        mem_used: Counter[str] = Counter()
        for p in self.live_pods():
            if p.node and p.finished is None:
                cpu_used[p.node] += p.cpu
                mem_used[p.node] += p.memory
        cpu_ratios: list[float] = []
        mem_ratios: list[float] = []
        for n in self.nodes.values():
            if n.gone is not None or not n.nodepool:
                continue
            if n.cpu:
                cpu_ratios.append(cpu_used[n.name] / n.cpu)
            if n.memory:
                mem_ratios.append(mem_used[n.name] / n.memory)
        return _mean(cpu_ratios), _mean(mem_ratios)

    def cost_per_hour(self) -> float:
        return sum(
            nc.price or 0.0
            for nc in self.nodeclaims.values()
            if nc.launched is not None and nc.gone is None
        )

    def counts(self) -> tuple[int, int]:
        """(bound, pending) among pods that exist, are not terminating and have not finished."""
        bound = pending = 0
        for p in self.live_pods():
            if p.finished is not None or p.daemon:
                continue
            if p.deleting is not None:
                continue  # terminating: neither running for long nor waiting
            if p.node:
                bound += 1
            else:
                pending += 1
        return bound, pending

    def sample(self) -> Sample:
        bound, pending = self.counts()
        cpu, mem = self.utilization()
        nodes = sum(1 for n in self.nodes.values() if n.gone is None)
        s = Sample(self.now(), nodes, pending, bound, self.cost_per_hour(), cpu, mem)
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

    @property
    def failed_controllers(self) -> tuple[ControllerFailures, ...]:
        """The controllers that failed repeatedly (see :data:`REPEATED_FAILURES`)."""
        return tuple(f for f in self.controller_failures if f.repeated)

    @property
    def nodes_launched(self) -> int:
        return sum(1 for nc in self.nodeclaims if nc.launched is not None)

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

    def pending_stats(self) -> dict[str, float]:
        xs = self.pending_seconds
        return {
            "p50": round(percentile(xs, 0.5), 3),
            "p95": round(percentile(xs, 0.95), 3),
            "max": round(max(xs), 3) if xs else 0.0,
        }

    def to_json_dict(self) -> dict[str, Any]:
        launched = [nc for nc in self.nodeclaims if nc.launched is not None]
        return {
            "scenario": self.scenario,
            "seed": self.seed,
            "start": self.start,
            "end": self.end,
            "virtualSeconds": round(self.duration_seconds, 3),
            "wallSeconds": round(self.wall_seconds, 3),
            "nodesLaunched": self.nodes_launched,
            "nodesRemoved": self.nodes_removed,
            "removalReasons": self.removal_reasons(),
            "nodeClaimsCreated": len(self.nodeclaims),
            "nodeClaimsNotLaunched": len(self.nodeclaims) - len(launched),
            "nodes": [nc.to_json_dict(self.time_of) for nc in self.nodeclaims],
            "pods": {
                "created": self.pods_created,
                "bound": self.pods_bound,
                "pending": self.pods_pending,
                "succeeded": self.pods_succeeded,
                "pendingSeconds": self.pending_stats(),
            },
            "cost": {
                "total": round(float(self.cost_total), 6),
                "perHourAtEnd": round(float(self.cost_per_hour_at_end), 6),
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
                    "cpuUtilization": round(s.cpu_utilization, 4),
                    "memoryUtilization": round(s.memory_utilization, 4),
                }
                for s in self.samples
            ],
            "decisions": list(self.decisions),
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
    for p in pods:
        if p.bound is not None:
            pending_seconds.append(max(0.0, p.bound - p.created))
        elif p.finished is None:
            stop = p.gone if p.gone is not None else end
            pending_seconds.append(max(0.0, stop - p.created))
    bound, pending = observer.counts()
    succeeded = sum(1 for p in pods if p.finished is not None)
    total_cost = 0.0
    for nc in observer.nodeclaims.values():
        if nc.launched is None or not nc.price:
            continue
        stop = nc.gone if nc.gone is not None else end
        total_cost += nc.price * max(0.0, stop - nc.launched) / 3600.0
    cpu, mem = observer.utilization()
    decisions = _merge_decisions(observer, recorded_events)
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
        samples=tuple(observer.samples),
        notes=tuple(observer.notes),
        controllers=tuple(controllers),
        time_of=observer.time_of,
        metrics=dict(metrics or {}),
        controller_failures=tuple(controller_failures),
        compute_charged=compute_charged,
    )


STATUS_TRANSITION_PREFIX = "Status condition transitioned,"


def _is_status_observation(ev: Any) -> bool:
    """An operatorpkg status-controller event (a condition changed, a finalizer went)."""
    return ev.reason == "Finalized" or str(ev.message).startswith(STATUS_TRANSITION_PREFIX)


def _merge_decisions(observer: Observer, recorded: Iterable[Any]) -> list[dict[str, Any]]:
    """Observer decisions plus the controllers' events, in time order.

    Pod events are folded: ``Nominated`` events become the pod count of the NodeClaim they
    name; other pod events with the same reason and message at the same instant become
    one decision with a ``pods`` count. The status controllers' condition-transition and
    ``Finalized`` events are observations of what other decisions did, not decisions, so
    they are left out.
    """
    nominated: Counter[tuple[str, float]] = Counter()  # (NodeClaim, when)
    rows: list[tuple[float, int, dict[str, Any]]] = []
    folded: dict[tuple[float, str, str, str], dict[str, Any]] = {}
    seq = 0
    for ev in recorded:
        if _is_status_observation(ev):
            continue
        t = (ev.time - observer.start_time).total_seconds()
        if ev.kind == "Pod":
            if ev.reason == "Nominated":
                for nc in set(_NOMINATED.findall(ev.message)):
                    nominated[(nc, round(t, 3))] += 1
                continue
            key = (t, ev.type, ev.reason, ev.message)
            row = folded.get(key)
            if row is None:
                row = {
                    "action": ev.reason,
                    "reason": ev.message,
                    "object": f"Pod/{ev.regarding.get('namespace', '')}/{ev.name}",
                    "pods": 0,
                    "type": ev.type,
                    "source": "event",
                }
                folded[key] = row
                rows.append((t, seq, row))
                seq += 1
            row["pods"] += 1
            continue
        obj = f"{ev.kind}/{ev.name}"
        rows.append(
            (
                t,
                seq,
                {
                    "action": ev.reason,
                    "reason": ev.message,
                    "object": obj,
                    "type": ev.type,
                    "source": "event",
                },
            )
        )
        seq += 1
    for d in observer.decisions:
        row = {"action": d.action, "reason": d.reason, **d.details, "source": d.source}
        # the pods nominated in the same instant (the same provisioning pass) are the
        # pods the NodeClaim was created for
        if d.action == "CreateNodeClaim" and nominated.get(
            (str(d.details.get("nodeClaim")), round(d.t, 3))
        ):
            count = nominated[(str(d.details["nodeClaim"]), round(d.t, 3))]
            row["reason"] = f"{count} pending pod(s) did not fit on existing capacity"
            row["pods"] = count
        rows.append((d.t, seq, row))
        seq += 1
    # at one instant, what the scenario did comes first: it is the cause of the rest
    rows.sort(key=lambda r: (r[0], r[2].get("source") != "scenario", r[1]))
    out = []
    for t, _, row in rows:
        out.append({"time": observer.time_of(t), "offsetSeconds": round(t, 3), **row})
    return out


# ---------------------------------------------------------------------------- rendering


def _fmt_offset(seconds: float | None) -> str:
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


def _offset_of(report: Report, when: str | None) -> str:
    if when is None:
        return "-"
    start = datetime.fromisoformat(report.start.replace("Z", "+00:00"))
    t = datetime.fromisoformat(when.replace("Z", "+00:00"))
    return "+" + _fmt_offset((t - start).total_seconds())


MAX_TEXT_DECISIONS = 60
MAX_TEXT_NODES = 40


def render_text(
    report: Report, *, max_decisions: int = MAX_TEXT_DECISIONS, max_nodes: int = MAX_TEXT_NODES
) -> str:
    """A terminal summary: totals, the first NodeClaims, and the first decisions."""
    j = report.to_json_dict()
    ps = j["pods"]["pendingSeconds"]
    lines = [
        f"Scenario {report.scenario} (seed {report.seed}): {_fmt_offset(report.duration_seconds)} "
        f"of virtual time in {report.wall_seconds:.1f}s",
        "",
        f"Nodes      launched {j['nodesLaunched']}, removed {j['nodesRemoved']}"
        + (
            " (" + ", ".join(f"{r}: {n}" for r, n in j["removalReasons"].items()) + ")"
            if j["removalReasons"]
            else ""
        )
        + f"; NodeClaims created {j['nodeClaimsCreated']}, never launched {j['nodeClaimsNotLaunched']}",
        f"Pods       created {j['pods']['created']}, bound {j['pods']['bound']}, "
        f"pending {j['pods']['pending']}, succeeded {j['pods']['succeeded']}",
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
                f"{('+' + _fmt_offset(nc.launched)) if nc.launched is not None else '-':<10} "
                f"{('+' + _fmt_offset(nc.deleting)) if nc.deleting is not None else '-':<10} {nc.reason or ''}"
            )
        if len(report.nodeclaims) > max_nodes:
            lines.append(f"... {len(report.nodeclaims) - max_nodes} more (use -o json for all)")
    if report.decisions:
        lines += ["", f"Decisions ({len(report.decisions)}):"]
        for d in report.decisions[:max_decisions]:
            subject = (
                d.get("nodeClaim") or d.get("object") or d.get("workload") or d.get("node") or ""
            )
            extra = (
                f" [{d['pods']} pods]" if d.get("pods") and d["action"] != "CreateNodeClaim" else ""
            )
            lines.append(
                f"  {_offset_of(report, d['time']):>10}  {d['action']:<22} {subject}: {d['reason']}{extra}"
            )
        if len(report.decisions) > max_decisions:
            lines.append(
                f"  ... {len(report.decisions) - max_decisions} more (use -o json for all)"
            )
    if report.controller_failures:
        lines += ["", "Controller failures:"] + [
            f"  - {f.describe()}" + ("  (failed repeatedly)" if f.repeated else "")
            for f in report.controller_failures
        ]
    if report.notes:
        lines += ["", "Notes:"] + [f"  - {n}" for n in report.notes]
    return "\n".join(lines) + "\n"


def _svg_chart(title: str, unit: str, points: Sequence[tuple[float, float]], color: str) -> str:
    """A step chart as inline SVG (no scripts, no external assets)."""
    width, height, pad_l, pad_b, pad_t, pad_r = 720, 220, 60, 30, 28, 16
    if not points:
        points = [(0.0, 0.0)]
    t_max = max(p[0] for p in points) or 1.0
    v_max = max(p[1] for p in points)
    v_top = v_max * 1.1 if v_max > 0 else 1.0

    def x(t: float) -> float:
        return pad_l + (width - pad_l - pad_r) * t / t_max

    def y(v: float) -> float:
        return height - pad_b - (height - pad_b - pad_t) * v / v_top

    path: list[str] = [f"{x(points[0][0]):.1f},{y(points[0][1]):.1f}"]
    last = points[0][1]
    for t, v in points[1:]:
        if v != last:  # a step: along at the old value, then up or down
            path.append(f"{x(t):.1f},{y(last):.1f}")
            path.append(f"{x(t):.1f},{y(v):.1f}")
            last = v
    path.append(f"{x(points[-1][0]):.1f},{y(last):.1f}")
    ticks = []
    for i in range(5):
        v = v_top * i / 4
        label = f"{v:.2f}" if v_top < 10 else f"{v:.0f}"
        ticks.append(
            f'<line x1="{pad_l}" x2="{width - pad_r}" y1="{y(v):.1f}" y2="{y(v):.1f}" class="grid"/>'
            f'<text x="{pad_l - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{label}</text>'
        )
    for i in range(6):
        t = t_max * i / 5
        ticks.append(
            f'<text x="{x(t):.1f}" y="{height - 10}" text-anchor="middle">{_fmt_offset(t)}</text>'
        )
    return (
        f'<figure><svg viewBox="0 0 {width} {height}" role="img" aria-label="{html.escape(title)}">'
        f'<text x="{pad_l}" y="18" class="title">{html.escape(title)} ({html.escape(unit)})</text>'
        + "".join(ticks)
        + f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{" ".join(path)}"/>'
        + "</svg></figure>"
    )


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1000px;color:#222}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}
table{border-collapse:collapse;width:100%;font-size:.85rem}
th,td{border-bottom:1px solid #ddd;padding:.25rem .4rem;text-align:left;vertical-align:top}
th{background:#f4f4f4}.num{text-align:right}
figure{margin:0 0 1rem 0}svg{width:100%;height:auto;font-size:11px}
svg .grid{stroke:#e5e5e5}svg .title{font-weight:600;font-size:13px}
.cards{display:flex;flex-wrap:wrap;gap:.75rem}.card{border:1px solid #ddd;border-radius:6px;padding:.5rem .8rem;min-width:9rem}
.card b{display:block;font-size:1.2rem}.note{color:#8a5a00}.failed td{color:#b00020}
"""


def render_html(report: Report) -> str:
    """One self-contained HTML page: summary, charts of nodes, pending pods and cost over
    time, the nodes and every decision."""
    j = report.to_json_dict()
    esc = html.escape
    ps = j["pods"]["pendingSeconds"]
    cards = [
        ("Nodes launched", str(j["nodesLaunched"])),
        ("Nodes removed", str(j["nodesRemoved"])),
        ("Pods bound", str(j["pods"]["bound"])),
        ("Pods pending", str(j["pods"]["pending"])),
        ("Pending p50 / p95 / max", f"{ps['p50']:.0f}s / {ps['p95']:.0f}s / {ps['max']:.0f}s"),
        ("Total cost", f"${j['cost']['total']:.4f}"),
        ("Cost at end", f"${j['cost']['perHourAtEnd']:.4f}/h"),
        (
            "Reserved CPU / memory",
            f"{j['utilization']['cpu'] * 100:.0f}% / {j['utilization']['memory'] * 100:.0f}%",
        ),
    ]
    if report.compute_charged is not None:
        cards.append(
            (
                f"Compute charged (x{report.compute_charged.scale:g})",
                f"{report.compute_charged.total_seconds:.1f}s",
            )
        )
    samples = report.samples
    charts = [
        _svg_chart("Nodes", "count", [(s.t, float(s.nodes)) for s in samples], "#1f77b4"),
        _svg_chart(
            "Pending pods", "count", [(s.t, float(s.pending_pods)) for s in samples], "#d62728"
        ),
        _svg_chart("Cost", "$/h", [(s.t, s.cost_per_hour) for s in samples], "#2ca02c"),
    ]
    node_rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{esc(str(v))}</td>"
            for v in (
                nc.name,
                nc.nodepool,
                nc.instance_type or "-",
                nc.zone or "-",
                nc.capacity_type or "-",
                "-" if nc.price is None else f"{nc.price:.4f}",
                "-" if nc.launched is None else "+" + _fmt_offset(nc.launched),
                "-" if nc.deleting is None else "+" + _fmt_offset(nc.deleting),
                nc.reason or "",
            )
        )
        + "</tr>"
        for nc in report.nodeclaims
    )
    decision_rows = "".join(
        "<tr>"
        f"<td>{esc(_offset_of(report, d['time']))}</td><td>{esc(str(d['action']))}</td>"
        f"<td>{esc(str(d.get('nodeClaim') or d.get('object') or d.get('workload') or d.get('node') or ''))}</td>"
        f"<td>{esc(str(d['reason']))}</td>"
        "</tr>"
        for d in report.decisions
    )
    notes = "".join(f'<li class="note">{esc(n)}</li>' for n in report.notes)
    failure_rows = "".join(
        f'<tr class="{"failed" if f.repeated else ""}"><td>{esc(f.controller)}</td>'
        f'<td class="num">{f.failures}</td><td class="num">{f.reconciles}</td>'
        f"<td>{esc(f.last_error)}</td></tr>"
        for f in report.controller_failures
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>karpenter simulate: {esc(report.scenario)}</title><style>{_CSS}</style></head><body>"
        f"<h1>karpenter simulate: {esc(report.scenario)}</h1>"
        f"<p>Seed {report.seed}; {esc(_fmt_offset(report.duration_seconds))} of virtual time "
        f"({esc(report.start)} to {esc(report.end)}), {report.wall_seconds:.1f}s of wall time.</p>"
        '<div class="cards">'
        + "".join(f'<div class="card">{esc(k)}<b>{esc(v)}</b></div>' for k, v in cards)
        + "</div>"
        + (
            "<h2>Controller failures</h2><table><tr><th>Controller</th><th>Failed</th>"
            f"<th>Reconciles</th><th>Last error</th></tr>{failure_rows}</table>"
            if failure_rows
            else ""
        )
        + "<h2>Over time</h2>"
        + "".join(charts)
        + "<h2>Nodes</h2><table><tr><th>NodeClaim</th><th>NodePool</th><th>Instance type</th>"
        "<th>Zone</th><th>Capacity</th><th>$/h</th><th>Launched</th><th>Removed</th><th>Reason</th></tr>"
        + node_rows
        + "</table>"
        + f"<h2>Decisions ({len(report.decisions)})</h2><table><tr><th>When</th><th>Action</th>"
        "<th>Object</th><th>Reason</th></tr>"
        + decision_rows
        + "</table>"
        + (f"<h2>Notes</h2><ul>{notes}</ul>" if notes else "")
        + "</body></html>\n"
    )
