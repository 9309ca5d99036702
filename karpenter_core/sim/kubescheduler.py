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
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from attrs import field, frozen

from karpenter_core.apis.objects import Node, ObjectError, Pod, label_selector_matches
from karpenter_core.kube.client import (
    ADDED,
    DELETED,
    ERROR,
    MODIFIED,
    ApiError,
    KubeClient,
    WatchStream,
)
from karpenter_core.runtime.clock import Clock, format_time
from karpenter_core.runtime.reconciler import Result, Watch
from karpenter_core.scheduling.hostports import HostPortUsage
from karpenter_core.scheduling.requirements import Requirements
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


def _term_namespaces(term: Mapping[str, Any], owner_namespace: str) -> frozenset[str] | None:
    """The namespaces an affinity term selects from; None means all of them."""
    namespaces = term.get("namespaces") or []
    if term.get("namespaceSelector") == {} and not namespaces:
        return None
    return frozenset(namespaces) if namespaces else frozenset({owner_namespace})


def _term_selects(term: Mapping[str, Any], owner_namespace: str, pod: Pod) -> bool:
    namespaces = _term_namespaces(term, owner_namespace)
    if namespaces is not None and pod.namespace not in namespaces:
        return False
    return label_selector_matches(term.get("labelSelector"), pod.labels)


def _required_terms(pod: Pod, kind: str) -> list[Mapping[str, Any]]:
    section = (pod.affinity or {}).get(kind) or {}
    terms = section.get("requiredDuringSchedulingIgnoredDuringExecution") or []
    return [t for t in terms if isinstance(t, Mapping) and t.get("topologyKey")]


class _Informer:
    """A watch-fed cache of one resource, as the real scheduler's informers keep: the
    first sync lists (a watch from no resourceVersion replays what exists), later syncs
    apply only what changed, so a pass no longer copies every object in the cluster."""

    def __init__(self, kube: KubeClient, resource: str) -> None:
        self.kube = kube
        self.resource = resource
        self.objects: dict[str, dict[str, Any]] = {}
        self._stream: WatchStream | None = None

    def sync(self) -> bool:
        """Bring the cache up to date; True when anything changed."""
        if self._stream is None or self._stream.stopped:
            return self._relist()
        try:
            events = self._stream.poll(0)
        except ApiError as e:
            log.info("kube-scheduler: %s watch failed (%s); listing again", self.resource, e)
            return self._relist()
        for event in events:
            if event.type in (ADDED, MODIFIED):
                self.objects[_name(event.object)] = event.object
            elif event.type == DELETED:
                self.objects.pop(_name(event.object), None)
            elif event.type == ERROR:
                return self._relist()
        return bool(events)

    def _relist(self) -> bool:
        if self._stream is not None:
            self._stream.stop()
        self._stream = None
        self.objects.clear()
        try:
            self._stream = self.kube.watch(self.resource)
            events = self._stream.poll(0)
        except (ApiError, AttributeError, NotImplementedError, TypeError):
            # A client without a usable watch: fall back to listing on every pass.
            self._stream = None
            for obj in self.kube.list(self.resource):
                self.objects[_name(obj)] = obj
            return True
        for event in events:
            if event.type in (ADDED, MODIFIED):
                self.objects[_name(event.object)] = event.object
        return True

    def close(self) -> None:
        if self._stream is not None:
            self._stream.stop()
            self._stream = None


class _PodClass:
    """What the filters and the score read from a pod, shared by every pending pod with
    the same scheduling-relevant spec, namespace and labels (a Deployment's replicas):
    such pods get the same verdict on the same node state."""

    __slots__ = ("insufficient", "monotone", "static", "terms")

    def __init__(self, pod: Pod) -> None:
        self.terms = _node_selector_terms(pod)
        self.insufficient = tuple(
            (name, qty, REASON_TOO_MANY_PODS if name == "pods" else f"Insufficient {name}")
            for name, qty in sorted(pod.scheduling_requests.items())
            if qty > 0
        )
        # Pods bound during a pass only ever make resources, ports and anti-affinity
        # harder to satisfy; topology spread and required pod affinity can get easier.
        self.monotone = not _spread_constraints(pod) and not _required_terms(pod, "podAffinity")
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
    __slots__ = ("class_key", "pod", "rv")

    def __init__(self, rv: str, pod: Pod) -> None:
        self.rv = rv
        self.pod = pod
        self.class_key = _class_key(pod)


class KubeScheduler:
    """The reconciler; see the module docstring. Every key means "run a pass".

    A pass's decisions are those of the straightforward algorithm (every pending pod
    against every node); the work is incremental: objects come from watch-fed caches,
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
        self._pod_cache = _Informer(kube, "pods")
        self._node_cache = _Informer(kube, "nodes")
        self._pods: dict[str, _PodInfo | None] = {}
        self._nodes: dict[str, _NodeStatic | None] = {}
        self._classes: dict[Hashable, _PodClass] = {}
        # False after a pass whose writes failed: the next pass must run even if nothing
        # changed, to retry them.
        self._settled = False

    # ------------------------------------------------------------------ the pass

    def reconcile(self, key: object = None) -> Result:
        changed = self._node_cache.sync()
        changed = self._pod_cache.sync() or changed
        if not changed and self._settled:
            return Result()
        self.passes += 1
        self._settled = True
        nodes = [_NodeState(s) for s in self._node_statics()]
        by_name = {n.name: n for n in nodes}
        pending: list[_PodInfo] = []
        bound: list[Pod] = []
        for info in self._pod_infos():
            pod = info.pod
            if pod.node_name:
                state = by_name.get(pod.node_name)
                if state is not None and not pod.is_terminal():
                    state.add(pod)
                    bound.append(pod)
            elif self._serves(pod) and pod.is_active():
                pending.append(info)
        pending.sort(key=lambda i: (-i.pod.priority, i.pod.creation_timestamp, i.pod.key))
        anti_holders = [(p, p.node_name) for p in bound if p.has_required_pod_anti_affinity()]
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
            outcome = self._schedule_one(pod, cls, nodes, by_name, bound, anti_holders)
            if outcome is None:
                failed.add(info.class_key)
            elif outcome:
                failed = {k for k in failed if classes[k].monotone}
        self._classes = classes
        return Result()

    def _node_statics(self) -> list[_NodeStatic]:
        objects = self._node_cache.objects
        cache: dict[str, _NodeStatic | None] = {}
        for name, obj in objects.items():
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
        for key, obj in self._pod_cache.objects.items():
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

    def _schedule_one(
        self,
        pod: Pod,
        cls: _PodClass,
        nodes: list[_NodeState],
        by_name: Mapping[str, _NodeState],
        bound: list[Pod],
        anti_holders: list[tuple[Pod, str]],
    ) -> bool | None:
        """Place one pod: True when bound, False when binding failed, None when it fits
        nowhere (and its condition says so)."""
        if cls.terms is None:
            self._mark(pod, "Unschedulable", "pod has a malformed node affinity")
            return None
        ctx = _PodContext(pod, cls.terms, nodes, by_name, bound, anti_holders)
        reasons: dict[str, int] = {}
        best: _NodeState | None = None
        best_score = -1.0
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
        bound.append(pod)
        if pod.has_required_pod_anti_affinity():
            anti_holders.append((pod, best.name))
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
    """Per-pod precomputation for the spread and inter-pod affinity filters."""

    def __init__(
        self,
        pod: Pod,
        terms: list[tuple[Requirements, list[Mapping[str, Any]]]],
        nodes: list[_NodeState],
        by_name: Mapping[str, _NodeState],
        bound: list[Pod],
        anti_holders: list[tuple[Pod, str]],
    ) -> None:
        self.pod = pod
        self.terms = terms
        self.nodes = nodes
        self.bound = bound
        # Bound pods (with their node) whose required anti-affinity selects this pod.
        self.anti_holders = [
            (p, home)
            for p, home in anti_holders
            if any(
                _term_selects(t, p.namespace, pod) for t in _required_terms(p, "podAntiAffinity")
            )
        ]
        self._spread: list[tuple[str, int, dict[str, int], bool]] | None = None
        self._node_of = by_name
        self._selected_anywhere: dict[int, bool] = {}

    # -- topology spread

    def _spread_counts(self) -> list[tuple[str, int, dict[str, int], bool]]:
        if self._spread is not None:
            return self._spread
        pod = self.pod
        constraints = _spread_constraints(pod)
        keys = [str(c["topologyKey"]) for c in constraints]
        eligible = [
            n
            for n in self.nodes
            if all(k in n.labels for k in keys) and _matches_node_affinity(self.terms, n)
        ]
        out = []
        for c in constraints:
            key = str(c["topologyKey"])
            selector = _with_match_label_keys(c.get("labelSelector"), c.get("matchLabelKeys"), pod)
            counts: dict[str, int] = {n.labels[key]: 0 for n in eligible}
            for n in eligible:
                domain = n.labels[key]
                counts[domain] += sum(
                    1
                    for p in n.pods
                    if p.namespace == pod.namespace
                    and not p.is_terminating()
                    and label_selector_matches(selector, p.labels)
                )
            self_match = label_selector_matches(selector, pod.labels)
            try:
                max_skew = int(c.get("maxSkew", 1))
            except (TypeError, ValueError):
                max_skew = 1
            out.append((key, max_skew, counts, self_match))
        self._spread = out
        return out

    def spread_failure(self, node: _NodeState) -> str:
        if not self.pod.topology_spread_constraints:
            return ""
        for key, max_skew, counts, self_match in self._spread_counts():
            if key not in node.labels:
                return REASON_SPREAD_LABEL
            if not counts:
                continue
            minimum = min(counts.values())
            skew = counts.get(node.labels[key], 0) + (1 if self_match else 0) - minimum
            if skew > max_skew:
                return REASON_SPREAD
        return ""

    # -- inter-pod affinity

    def _pods_in_domain(self, node: _NodeState, key: str) -> Iterable[Pod]:
        value = node.labels.get(key)
        if value is None:
            return ()
        return (p for n in self.nodes if n.labels.get(key) == value for p in n.pods)

    def affinity_failure(self, node: _NodeState) -> str:
        """InterPodAffinity's checks in its order: the pod's affinity, its
        anti-affinity, then existing pods' anti-affinity."""
        pod = self.pod
        for term in _required_terms(pod, "podAffinity"):
            key = str(term["topologyKey"])
            if key not in node.labels:
                return REASON_POD_AFFINITY
            if any(_term_selects(term, pod.namespace, p) for p in self._pods_in_domain(node, key)):
                continue
            # The first pod of a group that selects itself may go anywhere.
            anywhere = self._selected_anywhere.get(id(term))
            if anywhere is None:
                anywhere = any(_term_selects(term, pod.namespace, p) for p in self.bound)
                self._selected_anywhere[id(term)] = anywhere
            if anywhere or not _term_selects(term, pod.namespace, pod):
                return REASON_POD_AFFINITY
        for term in _required_terms(pod, "podAntiAffinity"):
            key = str(term["topologyKey"])
            if any(
                _term_selects(term, pod.namespace, p) and p.key != pod.key
                for p in self._pods_in_domain(node, key)
            ):
                return REASON_POD_ANTI_AFFINITY
        # Existing pods' required anti-affinity against this pod.
        for existing, home_name in self.anti_holders:
            for term in _required_terms(existing, "podAntiAffinity"):
                key = str(term["topologyKey"])
                home = self._node_of.get(home_name)
                if (
                    home is not None
                    and key in node.labels
                    and home.labels.get(key) == node.labels[key]
                    and _term_selects(term, existing.namespace, pod)
                ):
                    return REASON_EXISTING_ANTI_AFFINITY
        return ""


def _spread_constraints(pod: Pod) -> list[Mapping[str, Any]]:
    """The pod's ``DoNotSchedule`` topology spread constraints (the ones that filter)."""
    return [
        c
        for c in pod.topology_spread_constraints
        if c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule" and c.get("topologyKey")
    ]


def _static_failure(ctx: _PodContext, node: _NodeStatic) -> str:
    """The first failing filter among those that read only the node's object and the
    pod's spec (NodeUnschedulable, TaintToleration, NodeAffinity), or ""."""
    tolerations = ctx.pod.tolerations
    if node.node.unschedulable and not _toleration_covers(
        tolerations, Taint(TAINT_NODE_UNSCHEDULABLE, NO_SCHEDULE)
    ):
        return REASON_UNSCHEDULABLE_NODE
    for taint in node.taints:
        if not _toleration_covers(tolerations, taint):
            return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
    if not _matches_node_affinity(ctx.terms, node):
        return REASON_AFFINITY
    return ""


def _marked(pod: Pod, reason: str) -> bool:
    """The pod already carries ``PodScheduled=False`` with ``reason``."""
    return any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == reason
        for c in pod.conditions
    )


def _with_match_label_keys(selector: Any, keys: Any, pod: Pod) -> Mapping[str, Any] | None:
    if not isinstance(selector, Mapping):
        return None
    if not keys:
        return selector
    exprs = list(selector.get("matchExpressions") or [])
    for k in keys:
        if k in pod.labels:
            exprs.append({"key": k, "operator": "In", "values": [pod.labels[k]]})
    return {**selector, "matchExpressions": exprs}


def _fit_error(node_count: int, reasons: Mapping[str, int]) -> str:
    if node_count == 0:
        return NO_NODES_MESSAGE
    parts = sorted(f"{count} {reason}" for reason, count in reasons.items())
    return f"0/{node_count} nodes are available: {', '.join(parts)}."


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns, name = meta.get("namespace"), meta.get("name")
    return f"{ns}/{name}" if ns else str(name)


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
