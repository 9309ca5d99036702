"""A simulated kube-scheduler: binds pending pods to nodes that fit, or says why not.

Karpenter only acts on pods kube-scheduler gave up on (``PodScheduled=False``, reason
``Unschedulable``), and its disruption decisions depend on where pods actually land; a
simulation therefore needs a scheduler that behaves like the real one closely enough.

Each pass (one reconcile of the single key, run after any pod or node change) reads nodes
and pods, then takes the pending pods — unbound, not terminating or terminal, handled by a
scheduler name this instance serves — in queue order (priority descending, then creation
time, then namespace/name) and, for each, runs the filters of the default profile in
kube-scheduler's order, stopping at a node's first failure:

1. NodeUnschedulable — ``spec.unschedulable`` unless tolerated;
2. TaintToleration — every ``NoSchedule``/``NoExecute`` taint tolerated (so
   ``karpenter.sh/unregistered``, ``karpenter.sh/disrupted`` and startup taints keep pods
   off until removed). A node that is not Ready counts as carrying
   ``node.kubernetes.io/not-ready:NoSchedule``, the taint the kubelet and node lifecycle
   controller would give it;
3. NodeAffinity — ``nodeSelector`` and the required node-affinity terms (ORed; each term's
   expressions through :class:`~karpenter_core.scheduling.requirements.Requirements`
   strict compatibility against the node's labels; ``matchFields`` on ``metadata.name``);
4. NodePorts — host-port conflicts;
5. NodeResourcesFit — the pod's requests plus one ``pods`` against allocatable minus what
   bound, non-terminal pods request;
6. PodTopologySpread — ``DoNotSchedule`` constraints only;
7. InterPodAffinity — required affinity, required anti-affinity, and existing pods'
   required anti-affinity.

Feasible nodes are scored by NodeResourcesFit alone (``LeastAllocated`` by default, or
``MostAllocated``), ties going to the node name that sorts first, and the pod is bound
(``pods/binding``). Pods bound earlier in the pass count against later ones. A pod that
fits nowhere gets ``PodScheduled=False``/``Unschedulable`` with kube-scheduler's message
(``0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint
{karpenter.sh/unregistered: }.``); a gated pod gets reason ``SchedulingGated``.

A pass decides exactly what trying every pending pod on every node would, but does
only the work that can change the outcome, as the real scheduler's caches do: nodes and
pods come from watch-fed caches (no copy of the cluster per pass) parsed once per
resourceVersion; a pass with nothing changed since the last clean one is skipped; pods
with the same namespace, labels and scheduling spec form a class, whose node-only
filters (1-3) are remembered per node version; and once a class fits nowhere, later
pods of that class in the pass are not tried again unless their condition needs
writing (for classes with spread constraints or required pod affinity, which other
pods' bindings can satisfy, only until the next binding).

Approximations, on purpose:

- The condition is written only when its status or reason changes, not when just the
  message would; the real scheduler rewrites it on message changes too, and every write
  is a pod event that re-triggers Karpenter's provisioning batch for nothing.
- Topology spread: ``minDomains``, ``nodeAffinityPolicy``/``nodeTaintsPolicy`` are
  taken at their defaults (eligible domains = nodes matching the pod's node affinity,
  taints ignored) and ``matchLabelKeys`` is honoured; ``ScheduleAnyway`` and preferred
  (anti-)affinity do not score. Affinity terms' ``namespaceSelector`` is treated as
  "all namespaces" when present and empty, else ignored (the term's ``namespaces``, or
  the pod's own namespace, decide).
- No preemption, no volume filters (binding, zone, limits), no DRA, no extenders, no
  image-locality or balanced-allocation scores, no ``nominatedNodeName``.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from attrs import field, frozen

from karpenter_core.apis.objects import Node, ObjectError, Pod
from karpenter_core.kube.client import ApiError, KubeClient, Obj
from karpenter_core.kube.informer import Informer, object_key
from karpenter_core.runtime.clock import Clock, format_time
from karpenter_core.runtime.reconciler import Result, Watch
from karpenter_core.scheduling.hostports import HostPortUsage
from karpenter_core.scheduling.podaffinity import (
    POD_AFFINITY,
    POD_ANTI_AFFINITY,
    AffinityTerm,
    TopologyPair,
    affinity_counts,
    anti_affinity_counts,
    existing_anti_affinity_counts,
    matches_all,
    namespace_labels,
    required_terms,
    satisfies_existing_anti_affinity,
    satisfies_pod_affinity,
    satisfies_pod_anti_affinity,
)
from karpenter_core.scheduling.requirements import Requirements
from karpenter_core.scheduling.spread import (
    SpreadConstraint,
    global_minimum,
    node_included,
    skew_limit,
    spread_constraints,
)
from karpenter_core.scheduling.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    TAINT_NODE_NOT_READY,
    Taint,
    Toleration,
)

if TYPE_CHECKING:
    from karpenter_core.runtime.context import ControllerContext
    from karpenter_core.runtime.manager import Manager

__all__ = [
    "CONTROLLER_NAME",
    "LEAST_ALLOCATED",
    "MOST_ALLOCATED",
    "KubeScheduler",
    "KubeSchedulerOptions",
    "register",
]

log = logging.getLogger("karpenter.sim.kube-scheduler")

CONTROLLER_NAME = "sim.kube-scheduler"
DEFAULT_SCHEDULER_NAME = "default-scheduler"
LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
_PASS = "pass"

# Reasons, worded as kube-scheduler's filter plugins word them.
REASON_UNSCHEDULABLE_NODE = "node(s) were unschedulable"
REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_PORTS = "node(s) didn't have free ports for the requested pod ports"
REASON_TOO_MANY_PODS = "Too many pods"
REASON_SPREAD = "node(s) didn't match pod topology spread constraints"
REASON_SPREAD_LABEL = (
    "node(s) didn't match pod topology spread constraints (missing required label)"
)
REASON_POD_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_POD_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
REASON_UNTOLERATED_TAINT = "node(s) had untolerated taint(s)"
REASON_MALFORMED_AFFINITY = "pod has a malformed node affinity"
NO_NODES_MESSAGE = "no nodes available to schedule pods"
GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


def _scoring(_instance: object, _attribute: object, value: str) -> None:
    if value not in (LEAST_ALLOCATED, MOST_ALLOCATED):
        raise ValueError(
            f"kube-scheduler scoring must be {LEAST_ALLOCATED} or {MOST_ALLOCATED}, got {value!r}"
        )


def _names(value: Iterable[str]) -> frozenset[str]:
    return frozenset(value)


@frozen
class KubeSchedulerOptions:
    """``scoring``: NodeResourcesFit strategy. ``scheduler_names``: the
    ``spec.schedulerName`` values this scheduler serves (pods naming another are left
    alone, as a second scheduler would own them)."""

    scoring: str = field(default=LEAST_ALLOCATED, validator=_scoring)
    scheduler_names: frozenset[str] = field(
        default=frozenset({DEFAULT_SCHEDULER_NAME}), converter=_names
    )


def _toleration_covers(tolerations: Sequence[Toleration], taint: Taint) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


class _NodeStatic:
    """What a node's object alone decides, parsed once per resourceVersion."""

    __slots__ = ("allocatable", "label_reqs", "labels", "name", "node", "rv", "taints")

    def __init__(self, rv: str, node: Node) -> None:
        self.rv = rv
        self.node = node
        self.name = node.name
        self.labels = node.labels
        self.label_reqs = Requirements.from_labels(node.labels)
        taints = [t for t in node.taints if t.effect in (NO_SCHEDULE, NO_EXECUTE)]
        if not node.ready:
            taints.append(Taint(TAINT_NODE_NOT_READY, NO_SCHEDULE))
        self.taints = tuple(taints)
        self.allocatable = dict(node.allocatable)


class _NodeState:
    """What the scheduler's cache knows about one node during a pass."""

    __slots__ = (
        "allocatable",
        "label_reqs",
        "labels",
        "name",
        "node",
        "pods",
        "ports",
        "requested",
        "static",
        "taints",
    )

    def __init__(self, static: _NodeStatic) -> None:
        self.static = static
        self.node = static.node
        self.name = static.name
        self.labels = static.labels
        self.label_reqs = static.label_reqs
        self.taints = static.taints
        self.allocatable = static.allocatable
        self.requested: dict[str, int] = {}
        self.ports = HostPortUsage()
        self.pods: list[Pod] = []

    def add(self, pod: Pod) -> None:
        for name, qty in pod.scheduling_requests.items():
            self.requested[name] = self.requested.get(name, 0) + qty
        if pod.host_ports:
            self.ports.add(pod.key, pod.host_ports)
        self.pods.append(pod)


def _node_selector_terms(pod: Pod) -> list[tuple[Requirements, list[Mapping[str, Any]]]] | None:
    """The pod's node-affinity alternatives: per required term, the expressions (with
    ``nodeSelector`` folded in) and its ``matchFields``. None when a term is malformed."""
    base = [{"key": k, "operator": "In", "values": [v]} for k, v in pod.node_selector.items()]
    required = ((pod.affinity or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    out: list[tuple[Requirements, list[Mapping[str, Any]]]] = []
    try:
        if not terms:
            out.append((Requirements.from_node_selector_requirements(base), []))
            return out
        for term in terms:
            if not isinstance(term, Mapping):
                return None
            exprs = list(term.get("matchExpressions") or [])
            fields = [f for f in term.get("matchFields") or [] if isinstance(f, Mapping)]
            if not exprs and not fields:
                continue  # an empty term matches nothing
            out.append((Requirements.from_node_selector_requirements(base + exprs), fields))
    except (ValueError, TypeError):
        return None
    return out


def _fields_match(fields: Sequence[Mapping[str, Any]], node_name: str) -> bool:
    for f in fields:
        if f.get("key") != "metadata.name":
            return False
        values = f.get("values") or []
        if f.get("operator") == "In" and node_name not in values:
            return False
        if f.get("operator") == "NotIn" and node_name in values:
            return False
        if f.get("operator") not in ("In", "NotIn"):
            return False
    return True


def _matches_node_affinity(
    terms: list[tuple[Requirements, list[Mapping[str, Any]]]], node: _NodeState | _NodeStatic
) -> bool:
    return any(
        node.label_reqs.is_compatible(reqs) and _fields_match(fields, node.name)
        for reqs, fields in terms
    )


class _PodClass:
    """What the filters and the score read from a pod, shared by every pending pod with
    the same scheduling-relevant spec, namespace and labels (a Deployment's replicas):
    such pods get the same verdict on the same node state."""

    __slots__ = (
        "affinity",
        "anti_affinity",
        "insufficient",
        "monotone",
        "spread",
        "static",
        "terms",
    )

    def __init__(self, pod: Pod) -> None:
        self.terms = _node_selector_terms(pod)
        self.insufficient = tuple(
            (name, qty, REASON_TOO_MANY_PODS if name == "pods" else f"Insufficient {name}")
            for name, qty in sorted(pod.scheduling_requests.items())
            if qty > 0
        )
        self.spread = spread_constraints(
            pod.topology_spread_constraints, pod.labels, hard_only=True
        )
        self.affinity = required_terms(pod.affinity, POD_AFFINITY, pod.namespace, pod.labels)
        self.anti_affinity = required_terms(
            pod.affinity, POD_ANTI_AFFINITY, pod.namespace, pod.labels
        )
        # Pods bound during a pass only ever make resources, ports and anti-affinity
        # harder to satisfy; topology spread and required pod affinity can get easier.
        self.monotone = not self.spread and not self.affinity
        # node name -> (the node's parsed state, the first static filter's failure or "").
        self.static: dict[str, tuple[_NodeStatic, str]] = {}


def _class_key(pod: Pod) -> Hashable:
    raw_spec = pod.raw.get("spec") or {}
    return (
        pod.namespace,
        tuple(sorted(pod.labels.items())),
        tuple(sorted(pod.scheduling_requests.items())),
        pod.tolerations,
        pod.host_ports,
        json.dumps(
            [
                dict(pod.node_selector),
                pod.affinity,
                list(pod.topology_spread_constraints),
                raw_spec.get("schedulerName"),
            ],
            sort_keys=True,
            default=str,
        ),
    )


class _PodInfo:
    __slots__ = ("_anti_affinity", "class_key", "pod", "rv")

    def __init__(self, rv: str, pod: Pod) -> None:
        self.rv = rv
        self.pod = pod
        self.class_key = _class_key(pod)
        self._anti_affinity: tuple[AffinityTerm, ...] | None = None

    @property
    def anti_affinity(self) -> tuple[AffinityTerm, ...]:
        """The pod's required anti-affinity terms, parsed once."""
        if self._anti_affinity is None:
            pod = self.pod
            self._anti_affinity = required_terms(
                pod.affinity, POD_ANTI_AFFINITY, pod.namespace, pod.labels
            )
        return self._anti_affinity


class _PassState:
    """The cluster as one pass sees it: node states (with the pods bound to them, those
    bound during the pass included), the placed pods whose required anti-affinity keeps
    others away (their terms and the labels of their node), and namespace labels."""

    __slots__ = ("by_name", "holders", "namespaces", "nodes")

    def __init__(
        self,
        nodes: list[_NodeState],
        holders: list[tuple[tuple[AffinityTerm, ...], Mapping[str, str]]],
        namespaces: Mapping[str, Mapping[str, str]],
    ) -> None:
        self.nodes = nodes
        self.by_name = {n.name: n for n in nodes}
        self.holders = holders
        self.namespaces = namespaces


class KubeScheduler:
    """The reconciler; see the module docstring. Every key means "run a pass".

    A pass's decisions are those of the straightforward algorithm (every pending pod
    against every node); the work is incremental: objects come from watch-fed caches
    (:class:`~karpenter_core.kube.informer.Informer`, pumped at the start of each pass),
    parsed once per resourceVersion; node-only filters (unschedulable, taints, node
    affinity) are remembered per pod class and node version; and once a pod class fails
    on every node, later pods of that class in the same pass fail without being tried
    again (for spread and pod-affinity classes only until the next binding). A pod whose
    condition must be written is still evaluated in full, so its message is exact."""

    def __init__(
        self, kube: KubeClient, clock: Clock, options: KubeSchedulerOptions | None = None
    ) -> None:
        self.kube = kube
        self.clock = clock
        self.options = options or KubeSchedulerOptions()
        self.bindings = 0
        self.passes = 0
        self._pod_cache = Informer(kube, "pods")
        self._node_cache = Informer(kube, "nodes")
        self._namespace_cache = Informer(kube, "namespaces")
        self._changed = False
        for informer in (self._pod_cache, self._node_cache, self._namespace_cache):
            informer.add_handler(self._on_change, replay=False)
        self._pods: dict[str, _PodInfo | None] = {}
        self._nodes: dict[str, _NodeStatic | None] = {}
        self._classes: dict[Hashable, _PodClass] = {}
        # False after a pass whose writes failed: the next pass must run even if nothing
        # changed, to retry them.
        self._settled = False

    def _on_change(self, event_type: str, obj: Obj) -> None:
        self._changed = True

    def _sync(self) -> bool:
        """Bring the caches up to date; True when anything changed since the last call."""
        for informer in (self._node_cache, self._pod_cache, self._namespace_cache):
            try:
                informer.pump(0)
            except ApiError as e:
                log.info(
                    "kube-scheduler: %s watch failed (%s); listing again", informer.resource, e
                )
                try:
                    informer.sync()
                except ApiError as again:
                    log.info("kube-scheduler: listing %s failed: %s", informer.resource, again)
                    self._settled = False
        changed, self._changed = self._changed, False
        return changed

    # ------------------------------------------------------------------ the pass

    def reconcile(self, key: object = None) -> Result:
        if not self._sync() and self._settled:
            return Result()
        self.passes += 1
        self._settled = True
        state, pending = self._pass_state()
        pending.sort(key=lambda i: (-i.pod.priority, i.pod.creation_timestamp, i.pod.key))
        classes: dict[Hashable, _PodClass] = {}
        failed: set[Hashable] = set()
        for info in pending:
            pod = info.pod
            if pod.scheduling_gates:
                self._mark(pod, "SchedulingGated", GATED_MESSAGE)
                continue
            cls = classes.get(info.class_key)
            if cls is None:
                cls = self._classes.get(info.class_key) or _PodClass(pod)
                classes[info.class_key] = cls
            if info.class_key in failed and _marked(pod, "Unschedulable"):
                continue  # it would fail again, and its condition already says so
            outcome = self._schedule_one(pod, cls, state)
            if outcome is None:
                failed.add(info.class_key)
            elif outcome:
                failed = {k for k in failed if classes[k].monotone}
        self._classes = classes
        return Result()

    def feasibility(self, pod: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
        """Why each node's filters would reject ``pod`` (a Pod object) now: node name ->
        the reasons, empty where the pod fits. Reads the caches (brought up to date first)
        and writes nothing; the pod itself, if it is pending, does not count."""
        self._sync()
        state, _ = self._pass_state()
        parsed = Pod.from_dict(pod)
        cls = _PodClass(parsed)
        if cls.terms is None:
            return {n.name: (REASON_MALFORMED_AFFINITY,) for n in state.nodes}
        ctx = _PodContext(parsed, cls, state)
        return {n.name: tuple(self._filter(ctx, cls, n)) for n in state.nodes}

    def _pass_state(self) -> tuple[_PassState, list[_PodInfo]]:
        """The node states with their bound pods, and the pending pods this scheduler
        serves."""
        nodes = [_NodeState(s) for s in self._node_statics()]
        by_name = {n.name: n for n in nodes}
        pending: list[_PodInfo] = []
        holders: list[tuple[tuple[AffinityTerm, ...], Mapping[str, str]]] = []
        for info in self._pod_infos():
            pod = info.pod
            if pod.node_name:
                node = by_name.get(pod.node_name)
                if node is not None and not pod.is_terminal():
                    node.add(pod)
                    if pod.has_required_pod_anti_affinity():
                        holders.append((info.anti_affinity, node.labels))
            elif self._serves(pod) and pod.is_active():
                pending.append(info)
        namespaces = {
            object_key(ns): (ns.get("metadata") or {}).get("labels") or {}
            for ns in self._namespace_cache.objects()
        }
        return _PassState(nodes, holders, namespaces), pending

    def _node_statics(self) -> list[_NodeStatic]:
        cache: dict[str, _NodeStatic | None] = {}
        for obj in self._node_cache.objects():
            name = object_key(obj)
            rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
            old = self._nodes.get(name)
            if old is not None and rv and old.rv == rv:
                cache[name] = old
                continue
            try:
                cache[name] = _NodeStatic(rv, Node.from_dict(obj))
            except ObjectError as e:
                log.warning("kube-scheduler: skipping node %s: %s", name, e)
                cache[name] = None
        self._nodes = cache
        return sorted((s for s in cache.values() if s is not None), key=lambda s: s.name)

    def _pod_infos(self) -> list[_PodInfo]:
        cache: dict[str, _PodInfo | None] = {}
        for obj in self._pod_cache.objects():
            key = object_key(obj)
            rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
            old = self._pods.get(key)
            if old is not None and rv and old.rv == rv:
                cache[key] = old
                continue
            try:
                cache[key] = _PodInfo(rv, Pod.from_dict(obj))
            except ObjectError as e:
                log.warning("kube-scheduler: skipping pod %s: %s", key, e)
                cache[key] = None
        self._pods = cache
        return [i for _, i in sorted(cache.items()) if i is not None]

    def _serves(self, pod: Pod) -> bool:
        name = (pod.raw.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER_NAME
        return name in self.options.scheduler_names

    def _schedule_one(self, pod: Pod, cls: _PodClass, state: _PassState) -> bool | None:
        """Place one pod: True when bound, False when binding failed, None when it fits
        nowhere (and its condition says so)."""
        if cls.terms is None:
            self._mark(pod, "Unschedulable", REASON_MALFORMED_AFFINITY)
            return None
        ctx = _PodContext(pod, cls, state)
        reasons: dict[str, int] = {}
        best: _NodeState | None = None
        best_score = -1.0
        nodes = state.nodes
        for node in nodes:
            failed = self._filter(ctx, cls, node)
            if failed:
                for r in failed:
                    reasons[r] = reasons.get(r, 0) + 1
                continue
            score = self._score(pod, node)
            if score > best_score:
                best, best_score = node, score
        if best is None:
            self._mark(pod, "Unschedulable", _fit_error(len(nodes), reasons))
            return None
        try:
            self.kube.bind(pod.name, pod.namespace, best.name)
        except ApiError as e:
            log.info("kube-scheduler: binding %s to %s failed: %s", pod.key, best.name, e)
            self._settled = False
            return False
        self.bindings += 1
        best.add(pod)
        if cls.anti_affinity:
            state.holders.append((cls.anti_affinity, best.labels))
        return True

    # ------------------------------------------------------------------ filters

    def _filter(self, ctx: _PodContext, cls: _PodClass, node: _NodeState) -> list[str]:
        static = cls.static.get(node.name)
        if static is None or static[0] is not node.static:
            static = (node.static, _static_failure(ctx, node.static))
            cls.static[node.name] = static
        if static[1]:
            return [static[1]]
        pod = ctx.pod
        if pod.host_ports and node.ports.conflicts(pod.key, pod.host_ports) is not None:
            return [REASON_PORTS]
        requested = node.requested
        allocatable = node.allocatable
        insufficient = [
            reason
            for name, qty, reason in cls.insufficient
            if requested.get(name, 0) + qty > allocatable.get(name, 0)
        ]
        if insufficient:
            return insufficient
        spread = ctx.spread_failure(node)
        if spread:
            return [spread]
        affinity = ctx.affinity_failure(node)
        if affinity:
            return [affinity]
        return []

    def _score(self, pod: Pod, node: _NodeState) -> float:
        """NodeResourcesFit over cpu and memory: the free (LeastAllocated) or used
        (MostAllocated) fraction after placing the pod, averaged."""
        total = 0.0
        for name in ("cpu", "memory"):
            alloc = node.allocatable.get(name, 0)
            if alloc <= 0:
                continue
            used = node.requested.get(name, 0) + pod.scheduling_requests.get(name, 0)
            fraction = min(1.0, used / alloc)
            total += (1.0 - fraction) if self.options.scoring == LEAST_ALLOCATED else fraction
        return total / 2

    # ------------------------------------------------------------------ status

    def _mark(self, pod: Pod, reason: str, message: str) -> None:
        """Write ``PodScheduled=False`` with ``reason`` unless it already says so."""
        if _marked(pod, reason):
            return
        conditions = [dict(c) for c in pod.conditions if c.get("type") != "PodScheduled"]
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": reason,
                "message": message,
                "lastProbeTime": None,
                "lastTransitionTime": format_time(self.clock.now()),
            }
        )
        try:
            self.kube.patch(
                "pods",
                pod.name,
                {"status": {"conditions": conditions}},
                pod.namespace,
                subresource="status",
            )
        except ApiError as e:
            log.info("kube-scheduler: updating %s failed: %s", pod.key, e)
            self._settled = False


class _PodContext:
    """Per-pod precomputation for the spread and inter-pod affinity filters (what their
    PreFilter computes in kube-scheduler), made on first use."""

    def __init__(self, pod: Pod, cls: _PodClass, state: _PassState) -> None:
        self.pod = pod
        self.cls = cls
        self.terms = cls.terms or []
        self.state = state
        self._spread: list[tuple[SpreadConstraint, dict[str, int], int]] | None = None
        self._affinity: tuple[Counter[TopologyPair], ...] | None = None
        self._matches_itself = False

    # -- topology spread (PodTopologySpread)

    def _spread_counts(self) -> list[tuple[SpreadConstraint, dict[str, int], int]]:
        """Per constraint: matching pods per eligible domain, and the most a domain may
        hold for this pod to go there."""
        if self._spread is not None:
            return self._spread
        pod = self.pod
        constraints = self.cls.spread
        keys = [c.topology_key for c in constraints]
        counts: list[dict[str, int]] = [{} for _ in constraints]
        for node in self.state.nodes:
            labels = node.labels
            if not all(k in labels for k in keys):
                continue
            for i, c in enumerate(constraints):
                if not node_included(
                    c.node_affinity_policy,
                    c.node_taints_policy,
                    partial(_matches_node_affinity, self.terms, node),
                    partial(_tolerated, pod.tolerations, node.taints),
                ):
                    continue
                domain = labels[c.topology_key]
                counts[i][domain] = counts[i].get(domain, 0) + _matching_pods(c, pod, node)
        out = []
        for c, by_domain in zip(constraints, counts, strict=True):
            minimum = global_minimum(
                by_domain.values(), c.min_domains if c.min_domains is not None else 1
            )
            limit = skew_limit(minimum, c.max_skew, c.selector.matches(pod.labels))
            out.append((c, by_domain, limit))
        self._spread = out
        return out

    def spread_failure(self, node: _NodeState) -> str:
        if not self.cls.spread:
            return ""
        for c, by_domain, limit in self._spread_counts():
            domain = node.labels.get(c.topology_key)
            if domain is None:
                return REASON_SPREAD_LABEL
            if by_domain.get(domain, 0) > limit:
                return REASON_SPREAD
        return ""

    # -- inter-pod affinity (InterPodAffinity)

    def _affinity_counts(self) -> tuple[Counter[TopologyPair], ...]:
        if self._affinity is not None:
            return self._affinity
        pod, cls, state = self.pod, self.cls, self.state
        known = state.namespaces
        own = namespace_labels(pod.namespace, known)
        existing = existing_anti_affinity_counts(state.holders, pod.namespace, pod.labels, own)
        placed = (
            [
                (p.namespace, p.labels, namespace_labels(p.namespace, known), n.labels)
                for n in state.nodes
                for p in n.pods
            ]
            if cls.affinity or cls.anti_affinity
            else []
        )
        self._matches_itself = matches_all(cls.affinity, pod.namespace, pod.labels, own)
        self._affinity = (
            affinity_counts(cls.affinity, placed),
            anti_affinity_counts(cls.anti_affinity, placed),
            existing,
        )
        return self._affinity

    def affinity_failure(self, node: _NodeState) -> str:
        """InterPodAffinity's checks in its order: the pod's affinity, its
        anti-affinity, then existing pods' anti-affinity."""
        cls = self.cls
        if not cls.affinity and not cls.anti_affinity and not self.state.holders:
            return ""
        affinity, anti, existing = self._affinity_counts()
        labels = node.labels
        if cls.affinity and not satisfies_pod_affinity(
            cls.affinity, labels, affinity, self._matches_itself
        ):
            return REASON_POD_AFFINITY
        if cls.anti_affinity and not satisfies_pod_anti_affinity(cls.anti_affinity, labels, anti):
            return REASON_POD_ANTI_AFFINITY
        if not satisfies_existing_anti_affinity(labels, existing):
            return REASON_EXISTING_ANTI_AFFINITY
        return ""


def _tolerated(tolerations: Sequence[Toleration], taints: Iterable[Taint]) -> bool:
    """Every ``NoSchedule``/``NoExecute`` taint (those a node state keeps) is tolerated."""
    return all(_toleration_covers(tolerations, t) for t in taints)


def _matching_pods(constraint: SpreadConstraint, pod: Pod, node: _NodeState) -> int:
    """The pods on ``node`` a spread constraint of ``pod`` counts: same namespace, not
    terminating, selected. An empty selector counts none (kube-scheduler's
    ``countPodsMatchSelector``)."""
    selector = constraint.selector
    if selector.empty:
        return 0
    return sum(
        1
        for p in node.pods
        if p.namespace == pod.namespace and not p.is_terminating() and selector.matches(p.labels)
    )


def _static_failure(ctx: _PodContext, node: _NodeStatic) -> str:
    """The first failing filter among those that read only the node's object and the
    pod's spec (NodeUnschedulable, TaintToleration, NodeAffinity), or ""."""
    tolerations = ctx.pod.tolerations
    if node.node.unschedulable and not _toleration_covers(
        tolerations, Taint(TAINT_NODE_UNSCHEDULABLE, NO_SCHEDULE)
    ):
        return REASON_UNSCHEDULABLE_NODE
    if not _tolerated(tolerations, node.taints):
        return REASON_UNTOLERATED_TAINT
    if not _matches_node_affinity(ctx.terms, node):
        return REASON_AFFINITY
    return ""


def _marked(pod: Pod, reason: str) -> bool:
    """The pod already carries ``PodScheduled=False`` with ``reason``."""
    return any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == reason
        for c in pod.conditions
    )


def _fit_error(node_count: int, reasons: Mapping[str, int]) -> str:
    if node_count == 0:
        return NO_NODES_MESSAGE
    parts = sorted(f"{count} {reason}" for reason, count in reasons.items())
    return f"0/{node_count} nodes are available: {', '.join(parts)}."


def _pass_key(event_type: str, obj: dict[str, Any]) -> Iterable[Hashable]:
    return (_PASS,)


def _pod_event_matters(event_type: str, obj: dict[str, Any]) -> bool:
    """Pending pods, and anything that frees capacity: deletions, terminal or terminating
    pods. A bound pod just turning Running changes nothing the scheduler uses."""
    if event_type == "DELETED":
        return True
    spec = obj.get("spec") or {}
    if not spec.get("nodeName"):
        return True
    phase = (obj.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed") or bool(
        (obj.get("metadata") or {}).get("deletionTimestamp")
    )


def register(
    manager: Manager, ctx: ControllerContext, options: KubeSchedulerOptions | None = None
) -> KubeScheduler:
    """Add the simulated kube-scheduler (controller ``sim.kube-scheduler``); it runs a
    pass after pod and node changes."""
    scheduler = KubeScheduler(ctx.kube, ctx.clock, options)
    manager.add_controller(
        CONTROLLER_NAME,
        scheduler,
        watches=[
            Watch("pods", mapper=_pass_key, predicate=_pod_event_matters),
            Watch("nodes", mapper=_pass_key),
        ],
    )
    return scheduler
