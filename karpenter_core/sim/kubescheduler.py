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
3. NodeAffinity — ``nodeSelector`` and the required node-affinity terms (ORed; within a
   term every expression and ``matchFields`` entry is tested on its own against the
   node, as label selectors are). When every term names nodes (``metadata.name In``),
   the other nodes are left out before any filter runs ("didn't satisfy plugin(s)
   [NodeAffinity]"), as kube-scheduler's PreFilter does;
4. NodePorts — host-port conflicts;
5. NodeResourcesFit — the pod's requests plus one ``pods`` against allocatable minus what
   bound, non-terminal pods request;
6. PodTopologySpread — ``DoNotSchedule`` constraints only;
7. InterPodAffinity — required affinity, required anti-affinity, and existing pods'
   required anti-affinity;
8. DynamicResources — a pod's ResourceClaims (:mod:`karpenter_core.sim.dra`): its PreFilter
   fails a pod whose claims are missing, not created yet or name a DeviceClass that does
   not exist; the filter rejects a node an allocated claim does not select ("resourceclaim
   not available on the node") or whose reachable, unallocated devices cannot satisfy the
   rest ("cannot allocate all claims"); binding first writes each claim's allocation (with
   kube-scheduler's ``delete-protection`` finalizer) and reservation.

Feasible nodes are scored by NodeResourcesFit alone (``LeastAllocated`` by default, or
``MostAllocated``), ties going to the node name that sorts first, and the pod is bound
(``pods/binding``). As kube-scheduler does, the search for a pod stops once it has found
``numFeasibleNodesToFind`` feasible nodes (every node up to 100 nodes; with the default
``percentageOfNodesToScore`` of 0, 50% less 1% per 125 nodes, at least 5% and 100 nodes)
and the next pod's search starts where it stopped; a pod that fits nowhere has tried
every node. Pods bound earlier in the pass count against later ones. A pod that
fits nowhere gets ``PodScheduled=False``/``Unschedulable`` with kube-scheduler's message
(``0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint(s).``);
a gated pod gets reason ``SchedulingGated``.

A pass decides exactly what trying every pending pod on every node would, but does
only the work that can change the outcome, as the real scheduler's caches do: nodes and
pods come from watch-fed caches (no copy of the cluster per pass) parsed once per
resourceVersion; a pass with nothing changed since the last clean one is skipped; pods
with the same namespace, labels and scheduling spec form a class, whose node-only
filters (1-3) are remembered per node version; and once a class fits nowhere, later
pods of that class in the pass are not tried again unless their condition needs
writing (for classes with spread constraints or required pod affinity, which other
pods' bindings can satisfy, only until the next binding).

Topology spread honours ``minDomains``, ``nodeAffinityPolicy``/``nodeTaintsPolicy`` and
``matchLabelKeys``; pod (anti-)affinity terms resolve ``namespaceSelector`` against the
watched Namespaces (both through the rules in :mod:`karpenter_core.scheduling`).
``tests/contract/test_contract_kubescheduler.py`` runs generated cases through this
scheduler and the real kube-scheduler and compares every verdict and message.

Approximations, on purpose (that test excludes exactly these):

- No preemption, so a message ends after the filters' counts: kube-scheduler appends its
  PostFilter plugins' text (``preemption: 0/3 nodes are available: ...``).
- Scoring is NodeResourcesFit alone: no balanced-allocation or image-locality score, and
  ``ScheduleAnyway`` spread, preferred (anti-)affinity, preferred node affinity and
  ``PreferNoSchedule`` taints do not score; where several nodes fit, the choice may
  differ from kube-scheduler's.
- No volume filters (binding, zone, limits, restrictions), no extenders, no
  ``nominatedNodeName``; DRA allocates in-cluster devices with Karpenter's allocator
  (:mod:`karpenter_core.scheduling.dynamicresources`), so the features it does not simulate
  (admin access, consumable capacity, partitionable devices, device taints,
  ``distinctAttribute``) leave a pod unschedulable; no extended resources backed by DRA.
- A NotReady node counts as tainted ``node.kubernetes.io/not-ready`` (the node lifecycle
  controller's work, folded in here).
- A pass retries every pending pod at once when a node, a bound pod, a namespace or a
  device changed since the last pass, and otherwise only the pending pods that are new
  or changed; kube-scheduler backs pods off and requeues them on the cluster events that
  may help.
- The condition is written only when its status or reason changes, not when just the
  message would; the real scheduler rewrites it on message changes too, and every write
  is a pod event that re-triggers Karpenter's provisioning batch for nothing.
"""

from __future__ import annotations

import heapq
import itertools
import json
import logging
import re
from bisect import bisect_left
from collections import Counter, OrderedDict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from attrs import field, frozen

from karpenter_core.apis.hostports import HostPortUsage
from karpenter_core.apis.objects import Node, ObjectError, Pod
from karpenter_core.apis.parsedpods import parsed_pod
from karpenter_core.apis.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    TAINT_NODE_NOT_READY,
    Taint,
    Toleration,
)
from karpenter_core.kube.client import ApiError, KubeClient, Obj, shared_patch
from karpenter_core.kube.informer import Informer, object_key
from karpenter_core.runtime.clock import Clock, format_time
from karpenter_core.runtime.reconciler import Result, Watch
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
from karpenter_core.scheduling.spread import (
    SpreadConstraint,
    global_minimum,
    node_included,
    skew_limit,
    spread_constraints,
)
from karpenter_core.sim.dra import DynamicResources, PodClaims, write_claims
from karpenter_core.sim.pendingpods import ClassQueue, SortKey, class_of, marked_reason
from karpenter_core.sim.ranking import RankedPositions

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
REASON_NODE_AFFINITY_PREFILTER = "node(s) didn't satisfy plugin(s) [NodeAffinity]"
MESSAGE_AFFINITY_CONFLICT = "pod affinity terms conflict"
METADATA_NAME = "metadata.name"
NO_NODES_MESSAGE = "no nodes available to schedule pods"
GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"
SCHEDULING_GATED = "SchedulingGated"
UNSCHEDULABLE = "Unschedulable"
_GATED: Hashable = ("<gated>",)
"""The merge's name for the gated pods' queue (no pod class is a 1-tuple)."""


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
    percentage_of_nodes_to_score: int = 0
    """kube-scheduler's ``percentageOfNodesToScore``: 0 (its default) adapts to the cluster
    (50% less 1% per 125 nodes, at least 5%); 100 tries every node."""


MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


def feasible_nodes_to_find(nodes: int, percentage: int = 0) -> int:
    """How many feasible nodes kube-scheduler looks for before it stops filtering
    (``numFeasibleNodesToFind``): every node below 100 nodes, else ``percentage`` of them
    (adaptive when 0), never fewer than 100."""
    if nodes < MIN_FEASIBLE_NODES_TO_FIND or percentage >= 100:
        return nodes
    if percentage <= 0:
        percentage = max(50 - nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


def _toleration_covers(tolerations: Sequence[Toleration], taint: Taint) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


class _NodeStatic:
    """What a node's object alone decides, parsed once per resourceVersion."""

    __slots__ = ("allocatable", "labels", "name", "node", "rv", "taints")

    def __init__(self, rv: str, node: Node) -> None:
        self.rv = rv
        self.node = node
        self.name = node.name
        self.labels = node.labels
        taints = [t for t in node.taints if t.effect in (NO_SCHEDULE, NO_EXECUTE)]
        if not node.ready:
            taints.append(Taint(TAINT_NODE_NOT_READY, NO_SCHEDULE))
        self.taints = tuple(taints)
        self.allocatable = dict(node.allocatable)


class _NodeState:
    """What the scheduler's cache knows about one node during a pass."""

    __slots__ = (
        "allocatable",
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


_GO_INT = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _int64(value: str) -> int | None:
    """``value`` read as kube-scheduler reads a number in a label (base 10, an optional
    sign, leading zeros allowed, within int64); None when it is not one."""
    if _GO_INT.fullmatch(value) is None:
        return None
    number = int(value)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


class _LabelTest:
    """One ``matchExpressions`` entry, tested on its own against a node's labels: the
    expressions of a term are ANDed as label selectors, never merged into one requirement
    per key (``tier In [a]`` and ``tier In [b]`` together match no node, not nodes without
    ``tier``)."""

    __slots__ = ("bound", "key", "operator", "values")

    def __init__(self, key: str, operator: str, values: frozenset[str], bound: int) -> None:
        self.key = key
        self.operator = operator
        self.values = values
        self.bound = bound

    @classmethod
    def parse(cls, raw: object) -> _LabelTest | None:
        """None for an expression the API server would refuse; its term then matches no
        node (kube-scheduler ignores such terms rather than failing the pod)."""
        if not isinstance(raw, Mapping):
            return None
        key, operator, values = raw.get("key"), raw.get("operator"), raw.get("values") or []
        if not isinstance(key, str) or not key or not isinstance(values, list):
            return None
        if not all(isinstance(v, str) for v in values):
            return None
        bound = 0
        if operator in ("In", "NotIn"):
            if not values:
                return None
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                return None
        elif operator in ("Gt", "Lt"):
            number = _int64(values[0]) if len(values) == 1 else None
            if number is None:
                return None
            bound = number
        else:
            return None
        return cls(key, operator, frozenset(values), bound)

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        operator = self.operator
        if operator == "In":
            return value is not None and value in self.values
        if operator == "NotIn":
            return value is None or value not in self.values
        if operator == "Exists":
            return value is not None
        if operator == "DoesNotExist":
            return value is None
        number = None if value is None else _int64(value)
        if number is None:
            return False
        return number > self.bound if operator == "Gt" else number < self.bound


class _FieldTest:
    """One ``matchFields`` entry: ``In``/``NotIn`` with one value, on the node's fields
    (``metadata.name`` is the only one a node has; another key reads as "")."""

    __slots__ = ("equal", "key", "value")

    def __init__(self, key: str, value: str, equal: bool) -> None:
        self.key = key
        self.value = value
        self.equal = equal

    @classmethod
    def parse(cls, raw: object) -> _FieldTest | None:
        if not isinstance(raw, Mapping):
            return None
        key, operator, values = raw.get("key"), raw.get("operator"), raw.get("values")
        if not isinstance(key, str) or operator not in ("In", "NotIn"):
            return None
        if not isinstance(values, list) or len(values) != 1 or not isinstance(values[0], str):
            return None
        return cls(key, values[0], operator == "In")

    def matches(self, node_name: str) -> bool:
        value = node_name if self.key == METADATA_NAME else ""
        return (value == self.value) == self.equal


class _NodeAffinity:
    """The pod's ``nodeSelector`` and required node affinity, as kube-scheduler's
    NodeAffinity plugin reads them.

    Filter: every ``nodeSelector`` label present with its value, and (with a required
    affinity) one term whose expressions and fields all hold; a term with none of either,
    or with one the API server would refuse, matches nothing.

    PreFilter: when every term names nodes (``matchFields`` ``metadata.name In``), only
    those nodes are tried (``names``); the others fail as "didn't satisfy plugin(s)
    [NodeAffinity]" without any filter running. When the names within every term
    contradict each other, the pod fits nowhere (``conflict``)."""

    __slots__ = ("conflict", "names", "selector", "terms")

    def __init__(self, pod: Pod) -> None:
        self.selector = tuple(pod.node_selector.items())
        node_affinity = (pod.affinity or {}).get("nodeAffinity")
        required = (
            node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
            if isinstance(node_affinity, Mapping)
            else None
        )
        self.terms: tuple[tuple[tuple[_LabelTest, ...], tuple[_FieldTest, ...]], ...] | None
        self.names: frozenset[str] | None = None
        self.conflict = False
        if not isinstance(required, Mapping):
            self.terms = None
            return
        raw_terms = required.get("nodeSelectorTerms")
        raw_terms = (
            [t for t in raw_terms if isinstance(t, Mapping)] if isinstance(raw_terms, list) else []
        )
        terms = []
        for term in raw_terms:
            raw_exprs = term.get("matchExpressions") or []
            raw_fields = term.get("matchFields") or []
            if not isinstance(raw_exprs, list) or not isinstance(raw_fields, list):
                continue
            if not raw_exprs and not raw_fields:
                continue  # an empty term matches nothing
            exprs = [_LabelTest.parse(e) for e in raw_exprs]
            fields = [_FieldTest.parse(f) for f in raw_fields]
            if any(e is None for e in exprs) or any(f is None for f in fields):
                continue  # refused by the API server; kube-scheduler skips it
            terms.append(
                (
                    tuple(e for e in exprs if e is not None),
                    tuple(f for f in fields if f is not None),
                )
            )
        self.terms = tuple(terms)
        self._prefilter(raw_terms)

    def _prefilter(self, raw_terms: list[Mapping[str, Any]]) -> None:
        names: set[str] | None = None
        for term in raw_terms:
            named: set[str] | None = None
            fields = term.get("matchFields")
            for f in fields if isinstance(fields, list) else ():
                if (
                    isinstance(f, Mapping)
                    and f.get("key") == METADATA_NAME
                    and f.get("operator") == "In"
                    and isinstance(f.get("values"), list)
                ):
                    values = {v for v in f["values"] if isinstance(v, str)}
                    named = values if named is None else named & values
            if named is None:
                return  # a term not naming nodes: every node is tried
            names = named if names is None else names | named
        if names is None:
            return
        if not names:
            self.conflict = True
        else:
            self.names = frozenset(names)

    def matches(self, node: _NodeState | _NodeStatic) -> bool:
        labels = node.labels
        for key, value in self.selector:
            if labels.get(key) != value:
                return False
        if self.terms is None:
            return True
        name = node.name
        return any(
            all(e.matches(labels) for e in exprs) and all(f.matches(name) for f in fields)
            for exprs, fields in self.terms
        )


class _PodClass:
    """What the filters and the score read from a pod, shared by every pending pod with
    the same scheduling-relevant spec, namespace and labels (a Deployment's replicas):
    such pods get the same verdict on the same node state."""

    __slots__ = (
        "affinity",
        "anti_affinity",
        "full",
        "insufficient",
        "key",
        "monotone",
        "node_affinity",
        "open_at",
        "open_idx",
        "open_names",
        "open_shut",
        "rankable",
        "reason_counts",
        "reasons",
        "reasons_at",
        "spread",
        "static",
    )

    def __init__(self, pod: Pod, key: Hashable | None = None) -> None:
        # the class key (None: a class made for one question, kept nowhere)
        self.key = key
        self.node_affinity = _NodeAffinity(pod)
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
        # Its verdict and score on a node read that node alone (no host ports, which
        # exclude the pod's own entry, no anti-affinity of its own; other pods'
        # anti-affinity is checked per pass): KubeScheduler._search_ranked applies.
        self.rankable = self.monotone and not self.anti_affinity and not pod.host_ports
        # node name -> (the node's parsed state, the first static filter's failure or "").
        self.static: dict[str, tuple[_NodeStatic, str]] = {}
        # node name -> the node's state when the node's own filters (static, ports,
        # resources) refused this class: while the state is that object the node has
        # only gained pods since (a pod leaving or the node changing replaces it), so
        # it refuses again, in a later pass too (see KubeScheduler._search_open).
        self.full: dict[str, _NodeState] = {}
        # Kept across passes and brought up to date from the scheduler's node-change log
        # (see KubeScheduler._open_indices and _fit_reasons): the names of the nodes not
        # in ``full`` as they stand, and, for a class whose failures read each node alone,
        # each node's failure reasons and their counts; each with the (epoch, log
        # position) it is current to.
        self.open_names: set[str] = set()
        self.open_at: tuple[int, int, int] | None = None
        # the open names' positions in the node list (sorted), while the list's layout
        # holds, less the positions in ``open_shut`` (found full since they were listed)
        self.open_idx: list[int] = []
        self.open_shut: set[int] = set()
        self.reasons: dict[str, list[str]] = {}
        self.reason_counts: dict[str, int] = {}
        self.reasons_at: tuple[int, int] | None = None


class _Ranked:
    """A class's node scores for :meth:`KubeScheduler._search_ranked` (None: the node
    refuses it), by name and by position, and the (epoch, log position, layout) they are
    current to. Kept by class key, not on the class: a class is dropped when it has no
    pending pod, and each drain of a node brings its classes back."""

    __slots__ = ("at", "positions", "scores")

    def __init__(self) -> None:
        self.positions: RankedPositions | None = None
        self.scores: dict[str, float | None] = {}
        self.at: tuple[int, int, int] = (-1, 0, 0)


RANKED_CLASSES = 32
"""Classes whose node scores are kept (least recently searched dropped first); each holds
a score per node."""


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
                raw_spec.get("resourceClaims"),
            ],
            sort_keys=True,
            default=str,
        ),
    )


class _PodInfo:
    __slots__ = ("_anti_affinity", "class_key", "marked", "pod", "rv", "sort_key")

    def __init__(self, rv: str, pod: Pod) -> None:
        self.rv = rv
        self.pod = pod
        self.class_key = _class_key(pod)
        self.sort_key: SortKey = (-pod.priority, pod.creation_timestamp, pod.key)
        self.marked = marked_reason(pod.conditions)
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

    __slots__ = ("holders", "namespaces", "nodes", "open_nodes")

    def __init__(
        self,
        nodes: list[_NodeState],
        holders: list[tuple[tuple[AffinityTerm, ...], Mapping[str, str]]],
        namespaces: Mapping[str, Mapping[str, str]],
    ) -> None:
        self.nodes = nodes
        self.holders = holders
        self.namespaces = namespaces
        # per monotone pod class (held, so its identity is not reused within the pass):
        # the indices of nodes it has not failed on yet (see KubeScheduler._search_open)
        self.open_nodes: dict[_PodClass, list[int]] = {}


class KubeScheduler:
    """The reconciler; see the module docstring. Every key means "run a pass".

    A pass's decisions are those of the straightforward algorithm (every pending pod
    against every node); the work is incremental: objects come from watch-fed caches
    (:class:`~karpenter_core.kube.informer.Informer`, pumped at the start of each pass),
    parsed once per resourceVersion, the pods' placement (pending, or bound to a node)
    and each node's state updated from the pod events alone; node-only filters (unschedulable, taints, node
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
        # kept node scores of the rankable classes, by class key (see _search_ranked)
        self._ranked: OrderedDict[Hashable, _Ranked] = OrderedDict()
        # the caches share the in-memory server's stored objects (read-only here)
        self._pod_cache = Informer(kube, "pods", shared_reads=True)
        self._node_cache = Informer(kube, "nodes", shared_reads=True)
        self._namespace_cache = Informer(kube, "namespaces", shared_reads=True)
        # DynamicResources: the devices nodes publish, the claims holding them, the classes
        self._dra_caches = (
            Informer(kube, "resourceslices", shared_reads=True),
            Informer(kube, "resourceclaims", shared_reads=True),
            Informer(kube, "deviceclasses", shared_reads=True),
        )
        self._dra: DynamicResources | None = None
        self._changed = False
        for informer in (self._node_cache, self._namespace_cache, *self._dra_caches):
            informer.add_handler(self._on_change, replay=False)
        self._node_cache.add_handler(self._on_node_change, replay=False)
        self._pod_cache.add_handler(self._on_pod_change, replay=False)
        # The pods as the passes see them, kept up to date from the pod events alone, so
        # a pass costs what changed, not the size of the cluster: the parsed pods, the
        # ones bound to each node name (not terminal), the pending ones this scheduler
        # serves, and each node's state with its bound pods added, rebuilt only when one
        # of them or the node changed (a pass adds the pods it binds to the states; their
        # binding events then mark those nodes for rebuilding).
        self._pods: dict[str, _PodInfo] = {}
        self._dirty_pods: set[str] = set()
        self._bound: dict[str, dict[str, _PodInfo]] = {}
        self._pending: dict[str, _PodInfo] = {}
        # the same pending pods in queue order: per class, and the gated ones apart
        self._queues: dict[Hashable, ClassQueue] = {}
        self._gated = ClassQueue(SCHEDULING_GATED)
        self._dra_pending = 0
        self._states: dict[str, tuple[_NodeState, list[tuple[tuple[AffinityTerm, ...], str]]]] = {}
        self._stale_nodes: set[str] = set()
        # A pending pod that failed stays failed until the cluster changes: the next pass
        # tries every pending pod only when a node, a bound pod, a namespace or a device
        # changed (or a write failed) since the last one (``_full``); otherwise only the
        # pending pods that are new or changed (``_fresh``).
        self._full = True
        self._fresh: set[str] = set()
        self._nodes: dict[str, _NodeStatic | None] = {}
        # The node list a pass sees (by name), kept between passes: rebuilt in full after
        # a listing (``_nodes_dirty``); otherwise the nodes whose objects changed
        # (``_changed_nodes``) are parsed and put in, taken out or replaced, and only the
        # stale nodes' states are rebuilt, so a pass costs what changed, not every node
        # (each of thousands of nodes changes several times while a scale-out registers).
        self._nodes_dirty = True
        self._changed_nodes: set[str] = set()
        self._node_list: list[_NodeState] = []
        self._node_names: list[str] = []
        # the nodes with pods holding required anti-affinity: name -> their terms
        self._holding: dict[str, list[tuple[tuple[AffinityTerm, ...], str]]] = {}
        # The names of the nodes whose state changed (replaced, bound to, added, removed),
        # in order, so what a pod class keeps across passes (_PodClass.open_names and
        # reasons) is brought up to date from what changed, not every node each pass (a
        # pass runs after nearly every pod event; at 5,000 nodes those walks were most of
        # a large scale-in). The epoch moves when the log restarts or the node list is
        # rebuilt from a listing: a class kept under another epoch starts afresh.
        self._node_log: list[str] = []
        self._node_epoch = 0
        # moves whenever a node is put into or taken out of the kept list, shifting the
        # positions after it (what a class keeps by position is then found again by name)
        self._node_layout = 0
        self._classes: dict[Hashable, _PodClass] = {}
        # False after a pass whose writes failed: the next pass must run even if nothing
        # changed, to retry them.
        self._settled = False
        self._next_start = 0

    def _on_change(self, event_type: str, obj: Obj) -> None:
        self._changed = True
        self._full = True

    def _on_node_change(self, event_type: str, obj: Obj) -> None:
        self._changed_nodes.add(object_key(obj))

    def _on_pod_change(self, event_type: str, obj: Obj) -> None:
        self._changed = True
        self._dirty_pods.add(object_key(obj))

    def _sync(self) -> None:
        """Bring the caches up to date. Changes are noted in ``_changed`` (the event
        handler), which only a pass clears: a read between passes (:meth:`feasibility`)
        must not make the next pass think nothing happened."""
        for informer in (
            self._node_cache,
            self._pod_cache,
            self._namespace_cache,
            *self._dra_caches,
        ):
            try:
                informer.pump(0)
            except ApiError as e:
                log.info(
                    "kube-scheduler: %s watch failed (%s); listing again", informer.resource, e
                )
                self._nodes_dirty = True
                try:
                    informer.sync()
                except ApiError as again:
                    log.info("kube-scheduler: listing %s failed: %s", informer.resource, again)
                    self._settled = False
                    self._full = True

    # ------------------------------------------------------------------ the pass

    def reconcile(self, key: object = None) -> Result:
        self._sync()
        changed, self._changed = self._changed, False
        if not changed and self._settled:
            return Result()
        self.passes += 1
        self._settled = True
        state = self._pass_state()
        full, self._full = self._full, False
        fresh, self._fresh = self._fresh, set()
        pending = [] if full else [self._pending[k] for k in fresh if k in self._pending]
        if full or self._may_enable_waiting(pending):
            self._classes = self._full_pass(state)
        else:
            pending.sort(key=lambda i: i.sort_key)
            self._classes.update(self._listed_pass(pending, state))
        return Result()

    def _may_enable_waiting(self, fresh: list[_PodInfo]) -> bool:
        """Whether binding a new pod could let a pod that already waits fit in this pass:
        one of a class that pods bound elsewhere can help (topology spread, required pod
        affinity). Queue order then decides who gets the room, so the pass must try every
        pending pod in order (a full pass), not only the new ones."""
        if not fresh:
            return False
        new: Counter[Hashable] = Counter(info.class_key for info in fresh)
        for ck, queue in self._queues.items():
            if len(queue) <= new[ck]:
                continue  # only new pods in this class
            cls = self._classes.get(ck)
            head = queue.first()
            if cls is None and isinstance(head, _PodInfo):
                cls = _PodClass(head.pod)
            if cls is not None and not cls.monotone:
                return True
        return False

    def _use_dra(self, needed: bool) -> None:
        self._dra = DynamicResources(*(c.objects() for c in self._dra_caches)) if needed else None

    def _listed_pass(self, pending: list[_PodInfo], state: _PassState) -> dict[Hashable, _PodClass]:
        """Try ``pending`` (in queue order) in turn; the classes met."""
        self._use_dra(any(i.pod.has_dra_requirements for i in pending))
        classes: dict[Hashable, _PodClass] = {}
        failed: set[Hashable] = set()
        for info in pending:
            pod = info.pod
            if pod.scheduling_gates:
                self._mark(pod, SCHEDULING_GATED, GATED_MESSAGE)
                continue
            cls = self._class(classes, info)
            if info.class_key in failed and info.marked == UNSCHEDULABLE:
                continue  # it would fail again, and its condition already says so
            outcome = self._schedule_one(pod, cls, state)
            if outcome is None:
                failed.add(info.class_key)
            elif outcome:
                failed = {k for k in failed if classes[k].monotone}
        return classes

    def _class(self, classes: dict[Hashable, _PodClass], info: _PodInfo) -> _PodClass:
        cls = classes.get(info.class_key)
        if cls is None:
            cls = self._classes.get(info.class_key) or _PodClass(info.pod, info.class_key)
            classes[info.class_key] = cls
        return cls

    def _full_pass(self, state: _PassState) -> dict[Hashable, _PodClass]:
        """Every pending pod in queue order, as :meth:`_listed_pass` would take them, but
        reading only the pods that need work: the classes' queues are merged by their next
        pod, and a class that failed offers only its pods still to be marked (until a
        binding revives it, if other pods' bindings can make it fit). The classes met."""
        self._use_dra(self._dra_pending > 0)
        classes: dict[Hashable, _PodClass] = {}
        failed: set[Hashable] = set()
        # (position, version, class): a class's entry is current while its version is
        heap: list[tuple[SortKey, int, Hashable]] = []
        versions: dict[Hashable, int] = {}

        def push(ck: Hashable, nxt: Any) -> None:
            if nxt is not None:
                heapq.heappush(heap, (nxt.sort_key, versions.get(ck, 0), ck))

        for ck, queue in self._queues.items():
            push(ck, queue.first())
        push(_GATED, self._gated.unmarked_after(None))
        while heap:
            key, version, ck = heapq.heappop(heap)
            if versions.get(ck, 0) != version:
                continue
            if ck is _GATED:
                info = self._pending_at(self._gated, key)
                self._mark(info.pod, SCHEDULING_GATED, GATED_MESSAGE)
                push(ck, self._gated.unmarked_after(key))
                continue
            queue = self._queues[ck]
            info = self._pending_at(queue, key)
            outcome = self._schedule_one(info.pod, self._class(classes, info), state)
            if outcome is None:
                failed.add(ck)
            elif outcome and failed:
                # a binding can make the classes other pods' bindings matter to fit again
                revived = [k for k in failed if not classes[k].monotone]
                failed.difference_update(revived)
                for k in revived:
                    if k != ck:  # ck's own next pod is queued below
                        versions[k] = versions.get(k, 0) + 1
                        push(k, self._queues[k].after(key))
            push(ck, queue.unmarked_after(key) if ck in failed else queue.after(key))
        return classes

    @staticmethod
    def _pending_at(queue: ClassQueue, key: SortKey) -> _PodInfo:
        pod = queue.at(key)
        assert isinstance(pod, _PodInfo)
        return pod

    def feasibility(self, pod: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
        """Why each node's filters would reject ``pod`` (a Pod object) now: node name ->
        the reasons, empty where the pod fits. Reads the caches (brought up to date first)
        and writes nothing; the pod itself, if it is pending, does not count."""
        self._sync()
        state = self._pass_state()
        parsed = Pod.from_dict(pod)
        cls = _PodClass(parsed)
        if cls.node_affinity.conflict:
            return {n.name: (MESSAGE_AFFINITY_CONFLICT,) for n in state.nodes}
        ctx = _PodContext(parsed, cls, state)
        return {n.name: tuple(self._filter(ctx, cls, n)) for n in state.nodes}

    def _pass_state(self) -> _PassState:
        """The node states with their bound pods."""
        self._update_pods()
        if self._nodes_dirty:
            self._nodes_dirty = False
            self._changed_nodes.clear()
            states: dict[str, tuple[_NodeState, list[tuple[tuple[AffinityTerm, ...], str]]]] = {}
            for static in self._node_statics():
                states[static.name] = self._entry_for(static)
            self._states = states
            self._node_list = [node for node, _ in states.values()]
            self._node_names = list(states)
            self._holding = {name: hs for name, (_, hs) in states.items() if hs}
            self._new_node_epoch()
        else:
            self._apply_node_changes()
            names = self._node_names
            for name in self._stale_nodes:
                i = bisect_left(names, name)
                if i == len(names) or names[i] != name:
                    continue  # pods bound to a name no node has
                self._put_state(i, name, self._node_state(self._node_list[i].static))
        self._stale_nodes.clear()
        holders: list[tuple[tuple[AffinityTerm, ...], Mapping[str, str]]] = [
            (terms, self._states[name][0].labels)
            for name in sorted(self._holding)
            for terms, _key in self._holding[name]
        ]
        nodes = list(self._node_list)
        namespaces = {
            object_key(ns): (ns.get("metadata") or {}).get("labels") or {}
            for ns in self._namespace_cache.objects()
        }
        return _PassState(nodes, holders, namespaces)

    def _apply_node_changes(self) -> None:
        """Put the changed nodes' objects into the node list: parsed (once per version),
        inserted in name order, replaced, or taken out when gone or unparseable."""
        changed, self._changed_nodes = self._changed_nodes, set()
        names, nodes = self._node_names, self._node_list
        for name in sorted(changed):
            static = self._parse_node(name, self._node_cache.get(name))
            i = bisect_left(names, name)
            present = i < len(names) and names[i] == name
            if static is None:
                self._nodes.pop(name, None)
                if present:
                    del names[i], nodes[i]
                    self._node_layout += 1
                    self._states.pop(name, None)
                    self._holding.pop(name, None)
                    self._stale_nodes.discard(name)
                    self._node_changed(name)
                continue
            self._nodes[name] = static
            entry = self._entry_for(static)
            self._stale_nodes.discard(name)  # its state is current now
            if not present:
                names.insert(i, name)
                self._node_layout += 1
                nodes.insert(i, entry[0])
            self._put_state(i, name, entry)

    def _entry_for(
        self, static: _NodeStatic
    ) -> tuple[_NodeState, list[tuple[tuple[AffinityTerm, ...], str]]]:
        """The node's kept state while it is current (same parsed node, no pod changed
        there), else a new one."""
        entry = self._states.get(static.name)
        if entry is None or entry[0].static is not static or static.name in self._stale_nodes:
            entry = self._node_state(static)
        return entry

    def _put_state(
        self,
        i: int,
        name: str,
        entry: tuple[_NodeState, list[tuple[tuple[AffinityTerm, ...], str]]],
    ) -> None:
        """Make ``entry`` the state of the node at position ``i`` of the kept list."""
        self._states[name] = entry
        self._node_list[i] = entry[0]
        if entry[1]:
            self._holding[name] = entry[1]
        else:
            self._holding.pop(name, None)
        self._node_changed(name)

    def _node_changed(self, name: str) -> None:
        log = self._node_log
        log.append(name)
        if len(log) > 4096 + 4 * len(self._node_names):
            self._new_node_epoch()

    def _new_node_epoch(self) -> None:
        self._node_epoch += 1
        self._node_log = []

    def _parse_node(self, name: str, obj: Obj | None) -> _NodeStatic | None:
        """The node's parsed object, reused while its resourceVersion holds; None when it
        is gone or does not parse (logged: the passes go on without it)."""
        if obj is None:
            return None
        rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        old = self._nodes.get(name)
        if old is not None and rv and old.rv == rv:
            return old
        try:
            return _NodeStatic(rv, Node.from_dict(obj))
        except ObjectError as e:
            log.warning("kube-scheduler: skipping node %s: %s", name, e)
            return None

    def _node_state(
        self, static: _NodeStatic
    ) -> tuple[_NodeState, list[tuple[tuple[AffinityTerm, ...], str]]]:
        """A node's state with its bound pods (in key order), and the anti-affinity terms
        of those that have required anti-affinity."""
        node = _NodeState(static)
        node_holders: list[tuple[tuple[AffinityTerm, ...], str]] = []
        bound = self._bound.get(static.name, {})
        for key in sorted(bound):
            info = bound[key]
            node.add(info.pod)
            if info.pod.has_required_pod_anti_affinity():
                node_holders.append((info.anti_affinity, key))
        return node, node_holders

    def _update_pods(self) -> None:
        """Bring the parsed pods, their placement and the pending set up to date with the
        pod events since the last pass (the first one brings every pod)."""
        dirty, self._dirty_pods = self._dirty_pods, set()
        for key in sorted(dirty):
            old = self._pods.pop(key, None)
            if old is not None:
                self._unplace(key, old)
            obj = self._pod_cache.get(key)
            if obj is None:
                continue
            rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
            info = old if old is not None and rv and old.rv == rv else None
            if info is None:
                try:
                    pod = parsed_pod(obj, old.pod if old is not None else None)
                    info = _PodInfo(rv, pod)
                except ObjectError as e:
                    log.warning("kube-scheduler: skipping pod %s: %s", key, e)
                    continue
            self._pods[key] = info
            self._place(key, info)

    def _place(self, key: str, info: _PodInfo) -> None:
        pod = info.pod
        if pod.node_name:
            if not pod.is_terminal():
                self._bound.setdefault(pod.node_name, {})[key] = info
                self._stale_nodes.add(pod.node_name)
            self._full = True
        elif self._serves(pod) and pod.is_active():
            self._pending[key] = info
            self._queue_of(info).add(info)
            self._dra_pending += pod.has_dra_requirements
            self._fresh.add(key)

    def _unplace(self, key: str, info: _PodInfo) -> None:
        name = info.pod.node_name
        if name:
            self._full = True
            bound = self._bound.get(name)
            if bound is not None and bound.pop(key, None) is not None:
                self._stale_nodes.add(name)
                if not bound:
                    del self._bound[name]
        else:
            if self._pending.pop(key, None) is not None:
                self._queue_of(info).remove(info)
                self._dra_pending -= info.pod.has_dra_requirements
                if not self._queues.get(info.class_key, True):
                    del self._queues[info.class_key]

    def _queue_of(self, info: _PodInfo) -> ClassQueue:
        if info.pod.scheduling_gates:
            return self._gated
        return class_of(self._queues, info.class_key, UNSCHEDULABLE)

    def _node_statics(self) -> list[_NodeStatic]:
        cache: dict[str, _NodeStatic | None] = {}
        for obj in self._node_cache.objects():
            name = object_key(obj)
            cache[name] = self._parse_node(name, obj)
        self._nodes = cache
        return sorted((s for s in cache.values() if s is not None), key=lambda s: s.name)

    def _serves(self, pod: Pod) -> bool:
        name = (pod.raw.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER_NAME
        return name in self.options.scheduler_names

    def _schedule_one(self, pod: Pod, cls: _PodClass, state: _PassState) -> bool | None:
        """Place one pod: True when bound, False when binding failed, None when it fits
        nowhere (and its condition says so)."""
        if cls.node_affinity.conflict and state.nodes:
            # NodeAffinity's PreFilter fails the pod before any node is tried
            message = f"0/{len(state.nodes)} nodes are available: {MESSAGE_AFFINITY_CONFLICT}."
            self._mark(pod, UNSCHEDULABLE, message)
            return None
        claims = self._claims(pod) if state.nodes else None
        if isinstance(claims, str):
            # DynamicResources' PreFilter fails the pod before any node is tried
            self._mark(pod, UNSCHEDULABLE, f"0/{len(state.nodes)} nodes are available: {claims}.")
            return None
        ctx = _PodContext(pod, cls, state)
        nodes = state.nodes
        # like kube-scheduler, stop once enough nodes fit, and start the next pod's search
        # where this one stopped, so every node gets its turn
        count = len(nodes)
        start = self._next_start % count if count else 0
        if cls.rankable and claims is None and not state.holders and count == len(self._node_names):
            best, processed = self._search_ranked(ctx, cls, state, start)
        elif cls.monotone and claims is None:
            best, processed = self._search_open(ctx, cls, state, start)
        else:
            best, processed = self._search(ctx, cls, state, start, claims)
        if count:
            self._next_start = (start + processed) % count
        if best is None:
            if marked_reason(pod.conditions) == UNSCHEDULABLE:
                # already says so, and _mark would not rewrite it: the message's per-node
                # reasons (every node filtered again) were a tenth of a 2,000-node
                # scale-out, computed for each waiting pod at each pass and then dropped
                return None
            # every node was tried: the message counts each one's reasons as they stand
            self._mark(
                pod, UNSCHEDULABLE, _fit_error(count, self._fit_reasons(ctx, cls, state, claims))
            )
            return None
        try:
            if claims is not None and self._dra is not None:
                # Reserve, then PreBind: the claims' allocations and reservations first
                write_claims(self.kube, self._dra.reserve(claims, best.node.raw))
            self.kube.bind(pod.name, pod.namespace, best.name)
        except ApiError as e:
            log.info("kube-scheduler: binding %s to %s failed: %s", pod.key, best.name, e)
            self._settled = False
            self._full = True
            return False
        self.bindings += 1
        best.add(pod)
        self._node_changed(best.name)
        # the state is kept between passes: rebuild it next time from what the watch says
        # is bound there, whether or not this binding is among it
        self._stale_nodes.add(best.name)
        if cls.anti_affinity:
            state.holders.append((cls.anti_affinity, best.labels))
        return True

    def _fit_reasons(
        self, ctx: _PodContext, cls: _PodClass, state: _PassState, claims: PodClaims | None
    ) -> Mapping[str, int]:
        """How many nodes refuse the pod for each reason. A class with no claims, spread or
        pod (anti-)affinity of its own keeps its per-node reasons (on the class, across
        passes) and filters again only the nodes changed since (the node-change log,
        bindings in this pass included): every pod of a class that fits nowhere gets the
        message, and filtering each of thousands of nodes for each such pod, pass after
        pass, was most of a large scale-in. A node that did not change keeps its reason:
        its own filters read only it, and the reasons are asked for only when the search
        found no node, so a kept reason of existing pods' anti-affinity (the one other
        reason such a class can meet, on a node that passes its own filters) is still the
        node's reason whatever holders came or went."""
        nodes = state.nodes
        if claims is not None or cls.spread or cls.affinity or cls.anti_affinity:
            counts: dict[str, int] = {}
            for node in nodes:
                for r in self._node_failures(ctx, cls, node, claims):
                    counts[r] = counts.get(r, 0) + 1
            return counts
        log = self._node_log
        at = (self._node_epoch, len(log))
        kept = cls.reasons_at
        if kept is None or kept[0] != at[0] or len(nodes) != len(self._node_names):
            per_node: dict[str, list[str]] = {}
            counts = {}
            for node in nodes:
                per_node[node.name] = reasons = self._node_failures(ctx, cls, node, None)
                for r in reasons:
                    counts[r] = counts.get(r, 0) + 1
            cls.reasons, cls.reason_counts = per_node, counts
        elif kept[1] < at[1]:
            per_node, counts, names = cls.reasons, cls.reason_counts, self._node_names
            for name in set(log[kept[1] :]):
                for r in per_node.pop(name, ()):
                    counts[r] -= 1
                    if not counts[r]:
                        del counts[r]
                i = bisect_left(names, name)
                if i < len(names) and names[i] == name:
                    per_node[name] = reasons = self._node_failures(ctx, cls, nodes[i], None)
                    for r in reasons:
                        counts[r] = counts.get(r, 0) + 1
        cls.reasons_at = at
        return cls.reason_counts

    def _node_failures(
        self, ctx: _PodContext, cls: _PodClass, node: _NodeState, claims: PodClaims | None
    ) -> list[str]:
        failed = self._filter(ctx, cls, node)
        if not failed and claims is not None and self._dra is not None:
            dra_failure = self._dra.filter(claims, node.node.raw)
            failed = [dra_failure] if dra_failure else []
        return failed

    def _better(
        self, pod: Pod, node: _NodeState, best: _NodeState | None, best_score: float
    ) -> tuple[_NodeState | None, float]:
        score = self._score(pod, node)
        if score > best_score or (score == best_score and best and node.name < best.name):
            return node, score
        return best, best_score

    def _search(
        self,
        ctx: _PodContext,
        cls: _PodClass,
        state: _PassState,
        start: int,
        claims: PodClaims | None,
    ) -> tuple[_NodeState | None, int]:
        """kube-scheduler's search from ``start``: the best of the first
        ``numFeasibleNodesToFind`` feasible nodes, and how many nodes it looked at."""
        nodes = state.nodes
        count = len(nodes)
        wanted = feasible_nodes_to_find(count, self.options.percentage_of_nodes_to_score)
        best: _NodeState | None = None
        best_score = -1.0
        feasible = 0
        for i in range(count):
            node = nodes[(start + i) % count]
            if self._node_failures(ctx, cls, node, claims):
                continue
            best, best_score = self._better(ctx.pod, node, best, best_score)
            feasible += 1
            if feasible >= wanted:
                return best, i + 1
        return best, count

    def _search_open(
        self, ctx: _PodContext, cls: _PodClass, state: _PassState, start: int
    ) -> tuple[_NodeState | None, int]:
        """:meth:`_search` for a class whose fit only gets harder as a pass binds pods
        (monotone, no claims): a node it failed on earlier in the pass fails it again, so
        the search passes over those nodes without filtering them, and counts them as
        looked at exactly where the full search would have. In a scale-out every pod of a
        class would otherwise filter every full node again. A node its own filters refused
        stays out in later passes too while its state is unchanged (:attr:`_PodClass.full`):
        a pass runs after each node that registers, and each one filtered every full node
        again for the first pod of each class."""
        nodes = state.nodes
        count = len(nodes)
        wanted = feasible_nodes_to_find(count, self.options.percentage_of_nodes_to_score)
        full = cls.full
        open_ = state.open_nodes.get(cls)
        if open_ is None:
            open_ = state.open_nodes[cls] = self._open_indices(cls, nodes)
        split = bisect_left(open_, start)
        best: _NodeState | None = None
        best_score = -1.0
        feasible = 0
        closed: set[int] = set()
        found = count
        for idx in itertools.chain(open_[split:], open_[:split]):
            node = nodes[idx]
            if self._local_failure(ctx, cls, node):
                full[node.name] = node
                cls.open_names.discard(node.name)
                cls.open_shut.add(idx)
                closed.add(idx)
                continue
            if ctx.spread_failure(node) or ctx.affinity_failure(node):
                closed.add(idx)
                continue
            best, best_score = self._better(ctx.pod, node, best, best_score)
            feasible += 1
            if feasible >= wanted:
                found = (idx - start) % count + 1
                break
        if closed:
            open_[:] = [i for i in open_ if i not in closed]
        return best, found

    def _search_ranked(
        self, ctx: _PodContext, cls: _PodClass, state: _PassState, start: int
    ) -> tuple[_NodeState | None, int]:
        """:meth:`_search` for a class whose verdict and score on a node read only that
        node (:attr:`_PodClass.rankable`, no pod on any node holding required
        anti-affinity): each node's score is kept (:class:`RankedPositions`), the nodes
        changed since (the node-change log, this pass's bindings included) are scored
        again, and the search is answered from the kept scores in logarithmic time.
        Filtering and scoring 500 nodes of 5,000 for each pod was most of the simulated
        kube-scheduler's share of a large scale-in."""
        nodes = state.nodes
        names, log = self._node_names, self._node_log
        at = (self._node_epoch, len(log), self._node_layout)
        entry = self._ranked_entry(cls.key)
        kept = entry.at
        ranked = entry.positions
        if ranked is None or kept[0] != at[0] or (len(ranked) != len(nodes) and kept[2] == at[2]):
            scores = {n.name: self._rank(ctx, cls, n) for n in nodes}
            ranked = RankedPositions([scores[n.name] for n in nodes])
            entry.scores = scores
        elif kept != at:
            scores = entry.scores
            moved = kept[2] != at[2]
            for name in set(log[kept[1] :]):
                i = bisect_left(names, name)
                if i < len(names) and names[i] == name:
                    score = scores[name] = self._rank(ctx, cls, nodes[i])
                    if not moved:
                        ranked.set(i, score)
                else:
                    scores.pop(name, None)
            if moved:
                ranked = RankedPositions(
                    [scores[n.name] if n.name in scores else self._rank(ctx, cls, n) for n in nodes]
                )
        entry.positions, entry.at = ranked, at
        wanted = feasible_nodes_to_find(len(nodes), self.options.percentage_of_nodes_to_score)
        i, looked = ranked.search(start, wanted)
        return (nodes[i] if i >= 0 else None), looked

    def _ranked_entry(self, key: Hashable | None) -> _Ranked:
        if key is None:
            return _Ranked()
        kept = self._ranked
        entry = kept.get(key)
        if entry is None:
            entry = kept[key] = _Ranked()
            while len(kept) > RANKED_CLASSES:
                kept.popitem(last=False)
        else:
            kept.move_to_end(key)
        return entry

    def _rank(self, ctx: _PodContext, cls: _PodClass, node: _NodeState) -> float | None:
        """The class's score on ``node``, or None when the node's own filters refuse it."""
        if self._local_failure(ctx, cls, node):
            return None
        return self._score(ctx.pod, node)

    def _open_indices(self, cls: _PodClass, nodes: Sequence[_NodeState]) -> list[int]:
        """The positions in ``nodes`` of the nodes ``cls`` has not failed on by its own
        filters as they stand (not in :attr:`_PodClass.full` with that state), in order:
        the class's open names kept from its last pass plus the nodes changed since,
        rather than a walk over every node. While no node came or went the positions are
        kept too and only the changed nodes are looked up (finding thousands of open
        names again by name, pass after pass, was a seventh of a large scale-in)."""
        full, names, log = cls.full, self._node_names, self._node_log
        at = (self._node_epoch, len(log), self._node_layout)
        kept = cls.open_at
        cls.open_at = at
        if kept is None or kept[0] != at[0] or len(nodes) != len(names):
            cls.open_names = {n.name for n in nodes if full.get(n.name) is not n}
        elif kept[2] != at[2]:
            cls.open_names.update(log[kept[1] :])
        else:
            return list(self._catch_up_open(cls, nodes, log[kept[1] :]))
        open_: list[int] = []
        shut: list[str] = []
        for name in cls.open_names:
            i = bisect_left(names, name)
            if i < len(names) and names[i] == name and full.get(name) is not nodes[i]:
                open_.append(i)
            else:
                shut.append(name)  # gone, or failed as it stands
        cls.open_names.difference_update(shut)
        open_.sort()
        cls.open_idx = open_
        cls.open_shut.clear()
        return list(open_)

    def _catch_up_open(
        self, cls: _PodClass, nodes: Sequence[_NodeState], changed: Sequence[str]
    ) -> list[int]:
        """:attr:`_PodClass.open_idx` brought up to date, the node list's layout unchanged
        since it was made: the positions found full dropped, the changed nodes looked at
        again."""
        full, names, open_names = cls.full, self._node_names, cls.open_names
        idx = cls.open_idx
        if cls.open_shut:
            shut = cls.open_shut
            idx = [i for i in idx if i not in shut]
            shut.clear()
        added: list[int] = []
        for name in set(changed):
            i = bisect_left(names, name)
            if i == len(names) or names[i] != name:
                continue  # not in the list (a layout change would have moved it)
            if full.get(name) is not nodes[i]:
                if name not in open_names:
                    open_names.add(name)
                    added.append(i)
            elif name in open_names:  # failed as it stands: not seen changing since
                open_names.discard(name)
                idx.remove(i)
        if added:
            idx.extend(added)
            idx.sort()
        cls.open_idx = idx
        return idx

    def _claims(self, pod: Pod) -> PodClaims | str | None:
        """DynamicResources' PreFilter: the pod's claims (None: it has none), or why no
        node can take it now."""
        if self._dra is None or not pod.has_dra_requirements:
            return None
        claims = self._dra.prefilter(pod.raw)
        return None if isinstance(claims, PodClaims) and claims.empty else claims

    # ------------------------------------------------------------------ filters

    def _filter(self, ctx: _PodContext, cls: _PodClass, node: _NodeState) -> list[str]:
        local = self._local_failure(ctx, cls, node)
        if local:
            return local
        spread = ctx.spread_failure(node)
        if spread:
            return [spread]
        affinity = ctx.affinity_failure(node)
        if affinity:
            return [affinity]
        return []

    @staticmethod
    def _local_failure(ctx: _PodContext, cls: _PodClass, node: _NodeState) -> list[str]:
        """The filters that read the node alone: its object (unschedulable, taints, node
        affinity), its host ports and its resources."""
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
        return insufficient

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
        if marked_reason(pod.conditions) == reason:
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
            # the result is not read: the stored version, uncopied, where there is one
            shared_patch(self.kube)(
                "pods",
                pod.name,
                {"status": {"conditions": conditions}},
                pod.namespace,
                subresource="status",
            )
        except ApiError as e:
            log.info("kube-scheduler: updating %s failed: %s", pod.key, e)
            self._settled = False
            self._full = True


class _PodContext:
    """Per-pod precomputation for the spread and inter-pod affinity filters (what their
    PreFilter computes in kube-scheduler), made on first use."""

    def __init__(self, pod: Pod, cls: _PodClass, state: _PassState) -> None:
        self.pod = pod
        self.cls = cls
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
                    partial(self.cls.node_affinity.matches, node),
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
    affinity = ctx.cls.node_affinity
    if affinity.names is not None and node.name not in affinity.names:
        return REASON_NODE_AFFINITY_PREFILTER  # left out by the PreFilter: no filter ran
    tolerations = ctx.pod.tolerations
    if node.node.unschedulable and not _toleration_covers(
        tolerations, Taint(TAINT_NODE_UNSCHEDULABLE, NO_SCHEDULE)
    ):
        return REASON_UNSCHEDULABLE_NODE
    if not _tolerated(tolerations, node.taints):
        return REASON_UNTOLERATED_TAINT
    if not affinity.matches(node):
        return REASON_AFFINITY
    return ""


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
            Watch("resourceslices", mapper=_pass_key),
            Watch("resourceclaims", mapper=_pass_key),
            Watch("deviceclasses", mapper=_pass_key),
        ],
    )
    return scheduler
