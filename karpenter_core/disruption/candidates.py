"""Which nodes a disruption method may consider (upstream ``types.go NewCandidate``,
``helpers.go GetCandidates``, ``state/statenode.go`` validation; spec disruption §4).

Every pass starts here: each state node of the snapshot is either turned into a
:class:`~karpenter_core.disruption.types.Candidate` or rejected with a sentence saying why.
A managed node rejected for its own state or its pods gets a ``DisruptionBlocked`` notice
(the controller publishes it as an event), so ``kubectl describe node`` answers "why is
Karpenter not removing this node?".
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

from attrs import frozen

from karpenter_core.apis.labels import (
    CAPACITY_TYPE_LABEL_KEY,
    DO_NOT_DISRUPT_ANNOTATION_KEY,
    LABEL_INSTANCE_TYPE,
    LABEL_TOPOLOGY_ZONE,
    NODEPOOL_LABEL_KEY,
)
from karpenter_core.apis.objects import Pod
from karpenter_core.apis.v1 import CONDITION_INITIALIZED, NodeClaim, NodePool, parse_time
from karpenter_core.disruption.notices import NOTICE_TYPES, Blocked, EventSink, Notice
from karpenter_core.disruption.snapshot import DisruptionSnapshot
from karpenter_core.disruption.types import (
    CLASS_EVENTUAL,
    PER_NODE_BASE_DISRUPTION_COST,
    Candidate,
    Verdict,
    candidate_price,
)
from karpenter_core.state.statenode import StateNode
from karpenter_core.utils.pod import PdbLimits, is_disruptable

__all__ = [
    "POD_DELETION_COST_ANNOTATION",
    "CandidateSet",
    "consolidate_after_reference",
    "consolidate_after_seconds",
    "eviction_cost",
    "filter_candidates",
    "get_candidates",
    "is_under_consolidate_after",
    "lifetime_remaining",
    "new_candidate",
    "reschedule_disruption_cost",
    "rescheduling_cost",
    "sort_by_savings_ratio",
]

log = logging.getLogger("karpenter.disruption")

POD_DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
EVICTION_COST_MIN = -10.0
EVICTION_COST_MAX = 10.0


# --------------------------------------------------------------------------- costs


def eviction_cost(pod: Pod) -> float:
    """How much evicting ``pod`` hurts: ``1 + deletionCost/2^27 + priority/2^25``, clamped
    to [-10, 10] (upstream ``EvictionCost``). A deletion cost that is not a number is
    ignored (logged), as upstream does."""
    cost = 1.0
    raw = pod.annotations.get(POD_DELETION_COST_ANNOTATION)
    if raw is not None:
        try:
            value = float(raw) if raw == raw.strip() else math.nan
        except ValueError:
            value = math.nan
        if math.isnan(value):
            log.debug(
                "pod %s: ignoring unparseable %s %r", pod.key, POD_DELETION_COST_ANNOTATION, raw
            )
        else:
            cost += value / 2.0**27
    cost += pod.priority / 2.0**25
    return min(max(cost, EVICTION_COST_MIN), EVICTION_COST_MAX)


def rescheduling_cost(pods: Iterable[Pod]) -> float:
    """Σ eviction cost (negative costs included, as upstream)."""
    return sum(eviction_cost(p) for p in pods)


def reschedule_disruption_cost(pods: Iterable[Pod]) -> float:
    """``1 + Σ max(0, eviction cost)``: what balanced scoring and emptiness use."""
    return PER_NODE_BASE_DISRUPTION_COST + sum(max(0.0, eviction_cost(p)) for p in pods)


def _parsed_time(text: str | None) -> datetime | None:
    try:
        return parse_time(text)
    except ValueError:
        return None


def lifetime_remaining(now: datetime, nodeclaim: NodeClaim) -> float:
    """Fraction of the NodeClaim's ``expireAfter`` still ahead, in [0, 1] (1 without one):
    a node about to expire anyway is cheaper to disrupt."""
    expire = nodeclaim.spec.expire_after
    if expire is None or expire.nanos is None or expire.nanos <= 0:
        return 1.0
    born = _parsed_time(nodeclaim.metadata.creation_timestamp)
    if born is None:
        return 1.0
    total = expire.nanos / 1e9
    left = total - (now - born).total_seconds()
    return min(max(left / total, 0.0), 1.0)


def consolidate_after_left(
    nodepool: NodePool | None, nodeclaim: NodeClaim | None, now: datetime
) -> float | None:
    """Seconds of the ``consolidateAfter`` window still to run since the node's last pod
    event (or its initialisation), ``<= 0`` once it has passed; None when no window
    applies: ``Never``, ``0s``, a NodeClaim that is not initialised, no reference time."""
    window = consolidate_after_seconds(nodepool)
    if window is None:
        return None
    ref = consolidate_after_reference(nodeclaim)
    if ref is None:
        return None
    return window - (now - ref).total_seconds()


def consolidate_after_seconds(nodepool: NodePool | None) -> float | None:
    """The NodePool's ``consolidateAfter`` in seconds; None for ``Never`` or ``0s``."""
    if nodepool is None:
        return None
    disruption = nodepool.spec.disruption
    after = disruption.consolidate_after if disruption is not None else None
    if after is None or after.nanos is None or after.nanos == 0:
        return None
    return after.nanos / 1e9


def consolidate_after_reference(nodeclaim: NodeClaim | None) -> datetime | None:
    """When the NodeClaim's ``consolidateAfter`` window started: its last pod event, or
    its initialisation; None when it is not initialised (or the time cannot be read)."""
    if nodeclaim is None:
        return None
    initialized = nodeclaim.condition(CONDITION_INITIALIZED)
    if initialized is None or not initialized.is_true:
        return None
    last = nodeclaim.status.last_pod_event_time if nodeclaim.status is not None else None
    return _parsed_time(last or initialized.last_transition_time)


def is_under_consolidate_after(
    nodepool: NodePool | None, nodeclaim: NodeClaim | None, now: datetime
) -> bool:
    """The node's pods changed less than ``consolidateAfter`` ago (upstream
    ``IsUnderConsolidateAfter``): consolidation must not move running pods onto it yet.
    ``Never`` and ``0s`` never gate, nor does a NodeClaim that is not initialised."""
    left = consolidate_after_left(nodepool, nodeclaim, now)
    return left is not None and left > 0


# --------------------------------------------------------------------------- candidates


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _node_problem(sn: StateNode, now_monotonic: float) -> str | None:
    """Upstream ``ValidateNodeDisruptable``: why the node itself cannot be disrupted."""
    if sn.nodeclaim is None:
        return "node isn't managed by karpenter"
    if sn.node is None:
        return "nodeclaim does not have an associated node"
    if not sn.initialized():
        return "node isn't initialized"
    if sn.marked_for_deletion:
        return "node is deleting or marked for deletion"
    if sn.nominated(now_monotonic):
        return "node is nominated for a pending pod"
    if sn.annotations().get(DO_NOT_DISRUPT_ANNOTATION_KEY) == "true":
        return f'disruption is blocked through the "{DO_NOT_DISRUPT_ANNOTATION_KEY}" annotation'
    if NODEPOOL_LABEL_KEY not in sn.labels():
        return f"node doesn't have required label (label={NODEPOOL_LABEL_KEY})"
    return None


@frozen
class _PodFacts:
    """What candidates take from a node's pods alone, worked out once per change of them
    (:meth:`StateNode.from_pods`): most nodes' pods are unchanged from pass to pass."""

    reschedulable: tuple[Pod, ...]
    reschedule_disruption_cost: float
    rescheduling_cost: float
    guarded: tuple[Pod, ...]
    """The pods with a do-not-disrupt annotation, in order: only they can block."""

    @classmethod
    def of(cls, pods: Sequence[Pod]) -> _PodFacts:
        reschedulable = tuple(p for p in pods if p.is_reschedulable())
        return cls(
            reschedulable,
            reschedule_disruption_cost(reschedulable),
            rescheduling_cost(pods),
            tuple(p for p in pods if DO_NOT_DISRUPT_ANNOTATION_KEY in p.annotations),
        )


def _pod_facts(sn: StateNode) -> _PodFacts:
    return sn.from_pods("disruption.candidate", _PodFacts.of)


def _pod_problem(
    pods: Sequence[Pod],
    pdbs: PdbLimits,
    now: datetime,
    sink: EventSink,
    guarded: Sequence[Pod] | None = None,
) -> str | None:
    """Upstream ``ValidatePodsDisruptable``: an active pod with do-not-disrupt (DaemonSet
    and mirror pods included), or a PDB that forbids evicting a pod now. ``guarded``: the
    pods with a do-not-disrupt annotation, when known (no other pod can block that way)."""
    for pod in pods if guarded is None else guarded:
        if not is_disruptable(pod, now, sink):
            return f'pod has "{DO_NOT_DISRUPT_ANNOTATION_KEY}" annotation (Pod={pod.key})'
    # without budgets only an annotated pod can stand in the way of an eviction
    asked = pods if pdbs.pdbs or guarded is None else guarded
    keys, ok = pdbs.can_evict_pods(asked, now, sink)
    if not ok:
        if len(keys) > 1:
            return (
                "eviction does not support multiple PDBs "
                f"(PodDisruptionBudget(s)=[{', '.join(keys)}])"
            )
        return f"pdb prevents pod evictions (PodDisruptionBudget=[{', '.join(keys)}])"
    return None


def new_candidate(
    snapshot: DisruptionSnapshot,
    sn: StateNode,
    disruption_class: str,
    notices: list[Notice],
) -> Candidate | str:
    """A :class:`Candidate` for ``sn``, or the sentence saying why it is not one (upstream
    ``NewCandidate``). What is to be published (``DisruptionBlocked``, the pod predicates'
    events) is appended to ``notices``."""
    if snapshot.is_queued(sn.provider_id()):
        return "candidate is already being disrupted"
    problem = _node_problem(sn, snapshot.monotonic)
    nodeclaim = sn.nodeclaim
    if problem is not None:
        if nodeclaim is not None:
            notices.append(Blocked(sn.node, nodeclaim, _sentence(problem)))
        return problem
    assert nodeclaim is not None  # _node_problem says so
    labels = sn.labels()
    pool_name = labels[NODEPOOL_LABEL_KEY]
    nodepool = snapshot.nodepools.get(pool_name)
    types = snapshot.instance_types.get(pool_name)
    if nodepool is None or types is None:
        message = f"NodePool not found (NodePool={pool_name})"
        notices.append(Blocked(sn.node, nodeclaim, message))
        return message
    now = snapshot.now
    pods = list(sn.pods)
    facts = _pod_facts(sn)
    problem = _pod_problem(pods, snapshot.pdbs, now, EventSink(notices), facts.guarded)
    if problem is not None:
        exempt = (
            disruption_class == CLASS_EVENTUAL
            and nodeclaim.spec.termination_grace_period is not None
        )
        if not exempt:
            notices.append(Blocked(sn.node, nodeclaim, _sentence(problem)))
            return problem
    instance_type = types.get(labels.get(LABEL_INSTANCE_TYPE, ""))
    return Candidate(
        state_node=sn,
        nodeclaim=nodeclaim,
        nodepool=nodepool,
        instance_type=instance_type,
        zone=labels.get(LABEL_TOPOLOGY_ZONE, ""),
        capacity_type=labels.get(CAPACITY_TYPE_LABEL_KEY, ""),
        price=candidate_price(sn, instance_type),
        reschedulable_pods=facts.reschedulable,
        reschedule_disruption_cost=facts.reschedule_disruption_cost,
        disruption_cost=facts.rescheduling_cost * lifetime_remaining(now, nodeclaim),
    )


@frozen
class CandidateSet:
    """The candidates of one disruption class (in provider-id order), and the notices
    building them produced, in order."""

    candidates: tuple[Candidate, ...]
    notices: tuple[Notice, ...] = ()


def get_candidates(snapshot: DisruptionSnapshot, disruption_class: str) -> CandidateSet:
    """Every node of the snapshot that may be disrupted in ``disruption_class`` (upstream
    ``GetCandidates``, before the method's own filter: :func:`filter_candidates`). Built
    once per snapshot and class: they are a function of the snapshot."""
    found = snapshot.candidate_sets.get(disruption_class)
    if isinstance(found, CandidateSet):
        return found
    notices: list[Notice] = []
    out: list[Candidate] = []
    for sn in snapshot.state_nodes:
        c = new_candidate(snapshot, sn, disruption_class, notices)
        if not isinstance(c, str):
            out.append(c)
    built = snapshot.candidate_sets[disruption_class] = CandidateSet(tuple(out), tuple(notices))
    return built


def filter_candidates(
    candidates: Iterable[Candidate],
    should_disrupt: Callable[[Candidate], Verdict],
    notices: list[Notice],
) -> list[Candidate]:
    """The candidates ``should_disrupt`` keeps (its answer is true); a notice it answers
    instead of False is appended to ``notices``."""
    kept: list[Candidate] = []
    for c in candidates:
        verdict = should_disrupt(c)
        if isinstance(verdict, NOTICE_TYPES):
            notices.append(verdict)
        elif verdict:
            kept.append(c)
    return kept


def sort_by_savings_ratio(candidates: Iterable[Candidate]) -> list[Candidate]:
    """Highest price per unit of disruption first (spec §4 Order [HEAD]); ties keep their
    order (a stable sort, as upstream's ``slices.SortStableFunc``)."""
    return sorted(candidates, key=lambda c: -c.savings_ratio())
