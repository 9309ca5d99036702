"""Which nodes a disruption method may consider (upstream ``types.go NewCandidate``,
``helpers.go GetCandidates``, ``state/statenode.go`` validation; spec disruption §4).

Every pass starts here: the managed NodePools and their instance types are read once, the
PodDisruptionBudgets listed once, and each state node (an independent copy) is either
turned into a :class:`Candidate` or rejected with a sentence saying why. A managed node
rejected for its own state or its pods gets a ``DisruptionBlocked`` event, so
``kubectl describe node`` answers "why is Karpenter not removing this node?".
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from attrs import frozen

from karpenter_core.apis.labels import (
    CAPACITY_TYPE_LABEL_KEY,
    DO_NOT_DISRUPT_ANNOTATION_KEY,
    LABEL_INSTANCE_TYPE,
    LABEL_TOPOLOGY_ZONE,
    NODEPOOL_LABEL_KEY,
)
from karpenter_core.apis.objects import Pod
from karpenter_core.apis.v1 import CONDITION_INITIALIZED, APIError, NodeClaim, NodePool
from karpenter_core.cloudprovider.errors import is_unevaluated_nodepool
from karpenter_core.cloudprovider.types import InstanceType
from karpenter_core.controllers.disruption import events
from karpenter_core.controllers.disruption.types import (
    CLASS_EVENTUAL,
    PER_NODE_BASE_DISRUPTION_COST,
    Candidate,
    DisruptionContext,
    candidate_price,
)
from karpenter_core.runtime.clock import parse_time
from karpenter_core.state.cluster import is_managed_nodepool
from karpenter_core.state.statenode import StateNode
from karpenter_core.utils.pod import PdbLimits, is_disruptable

__all__ = [
    "POD_DELETION_COST_ANNOTATION",
    "NodePoolCatalog",
    "build_nodepool_catalog",
    "eviction_cost",
    "get_candidates",
    "is_under_consolidate_after",
    "lifetime_remaining",
    "list_pdbs",
    "new_candidate",
    "reschedule_disruption_cost",
    "rescheduling_cost",
    "sort_by_savings_ratio",
]

log = logging.getLogger("karpenter.disruption")

POD_DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
EVICTION_COST_MIN = -10.0
EVICTION_COST_MAX = 10.0

NODEPOOLS = "nodepools"
PDBS = ("policy/v1", "PodDisruptionBudget")


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


def lifetime_remaining(now: datetime, nodeclaim: NodeClaim) -> float:
    """Fraction of the NodeClaim's ``expireAfter`` still ahead, in [0, 1] (1 without one):
    a node about to expire anyway is cheaper to disrupt."""
    expire = nodeclaim.spec.expire_after
    if expire is None or expire.nanos is None or expire.nanos <= 0:
        return 1.0
    created = nodeclaim.metadata.creation_timestamp
    if not created:
        return 1.0
    try:
        born = parse_time(str(created))
    except ValueError:
        return 1.0
    total = expire.nanos / 1e9
    left = total - (now - born).total_seconds()
    return min(max(left / total, 0.0), 1.0)


def is_under_consolidate_after(nodepool: NodePool | None, nodeclaim: Any, now: datetime) -> bool:
    """The node's pods changed less than ``consolidateAfter`` ago (upstream
    ``IsUnderConsolidateAfter``): consolidation must not move running pods onto it yet.
    ``Never`` and ``0s`` never gate, nor does a NodeClaim that is not initialised."""
    if nodepool is None or nodeclaim is None:
        return False
    disruption = nodepool.spec.disruption
    after = disruption.consolidate_after if disruption is not None else None
    if after is None or after.nanos is None or after.nanos == 0:
        return False
    nc = nodeclaim if isinstance(nodeclaim, NodeClaim) else NodeClaim.from_dict(nodeclaim)
    initialized = nc.condition(CONDITION_INITIALIZED)
    if initialized is None or not initialized.is_true:
        return False
    last = nc.status.last_pod_event_time if nc.status is not None else None
    ref_text = last or initialized.last_transition_time
    if not ref_text:
        return False
    try:
        ref = parse_time(str(ref_text))
    except ValueError:
        return False
    return (now - ref).total_seconds() < after.nanos / 1e9


# --------------------------------------------------------------------------- NodePools


@frozen
class NodePoolCatalog:
    """The managed NodePools of one pass (API model and JSON form, by name) and the
    instance types of those whose provider call succeeded with at least one type."""

    nodepools: Mapping[str, NodePool]
    raw: Mapping[str, Mapping[str, Any]]
    instance_types: Mapping[str, Mapping[str, InstanceType]]


def build_nodepool_catalog(dctx: DisruptionContext) -> NodePoolCatalog:
    """List managed NodePools and ask the provider for each one's instance types. A pool
    that cannot be read, or whose provider call fails or returns nothing, yields no
    candidates this pass (logged), never an error."""
    nodepools: dict[str, NodePool] = {}
    raw: dict[str, Mapping[str, Any]] = {}
    its: dict[str, Mapping[str, InstanceType]] = {}
    for obj in dctx.kube.list(NODEPOOLS).items:
        name = str((obj.get("metadata") or {}).get("name") or "")
        if not name or not is_managed_nodepool(obj, dctx.cloud_provider):
            continue
        try:
            model = NodePool.from_dict(obj, defaults=True)
        except (APIError, ValueError, TypeError) as e:
            log.error("disruption: ignoring nodepool %s: %s", name, e)
            continue
        nodepools[name] = model
        raw[name] = obj
        try:
            types = list(dctx.cloud_provider.get_instance_types(model))
        except Exception as e:
            if is_unevaluated_nodepool(e):
                log.debug("disruption: skipping nodepool %s: node overlays not applied yet", name)
            else:
                log.error("disruption: listing instance types for nodepool %s: %s", name, e)
            continue
        if types:
            its[name] = {it.name: it for it in types}
    return NodePoolCatalog(nodepools, raw, its)


def list_pdbs(dctx: DisruptionContext) -> PdbLimits:
    """The cluster's PodDisruptionBudgets (a malformed one is skipped)."""
    return PdbLimits.from_dicts(dctx.kube.list(PDBS).items)


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


def _pod_problem(pods: Sequence[Pod], pdbs: PdbLimits, now: datetime, recorder: Any) -> str | None:
    """Upstream ``ValidatePodsDisruptable``: an active pod with do-not-disrupt (DaemonSet
    and mirror pods included), or a PDB that forbids evicting a pod now."""
    for pod in pods:
        if not is_disruptable(pod, now, recorder):
            return f'pod has "{DO_NOT_DISRUPT_ANNOTATION_KEY}" annotation (Pod={pod.key})'
    keys, ok = pdbs.can_evict_pods(pods, now, recorder)
    if not ok:
        if len(keys) > 1:
            return (
                "eviction does not support multiple PDBs "
                f"(PodDisruptionBudget(s)=[{', '.join(keys)}])"
            )
        return f"pdb prevents pod evictions (PodDisruptionBudget=[{', '.join(keys)}])"
    return None


def _nodeclaim_model(nodeclaim: Any) -> NodeClaim:
    if isinstance(nodeclaim, NodeClaim):
        return nodeclaim
    if isinstance(nodeclaim, Mapping):
        return NodeClaim.from_dict(nodeclaim)
    return NodeClaim.from_dict(nodeclaim.to_dict())


def new_candidate(
    dctx: DisruptionContext,
    sn: StateNode,
    catalog: NodePoolCatalog,
    pdbs: PdbLimits,
    disruption_class: str,
) -> Candidate | str:
    """A :class:`Candidate` for ``sn``, or the sentence saying why it is not one (upstream
    ``NewCandidate``; ``DisruptionBlocked`` events are published here)."""
    if dctx.queue.has_any(sn.provider_id()):
        return "candidate is already being disrupted"
    now = dctx.clock.now()
    problem = _node_problem(sn, dctx.clock.monotonic())
    if problem is not None:
        if sn.nodeclaim is not None:
            dctx.recorder.publish(*events.blocked(sn.node, sn.nodeclaim, _sentence(problem)))
        return problem
    pool_name = sn.labels()[NODEPOOL_LABEL_KEY]
    nodepool = catalog.nodepools.get(pool_name)
    types = catalog.instance_types.get(pool_name)
    if nodepool is None or types is None:
        message = f"NodePool not found (NodePool={pool_name})"
        dctx.recorder.publish(*events.blocked(sn.node, sn.nodeclaim, message))
        return message
    try:
        nodeclaim = _nodeclaim_model(sn.nodeclaim)
    except (APIError, ValueError, TypeError) as e:
        return f"nodeclaim cannot be read: {e}"
    pods = list(sn.pods)
    problem = _pod_problem(pods, pdbs, now, dctx.recorder)
    if problem is not None:
        exempt = (
            disruption_class == CLASS_EVENTUAL
            and nodeclaim.spec.termination_grace_period is not None
        )
        if not exempt:
            dctx.recorder.publish(*events.blocked(sn.node, sn.nodeclaim, _sentence(problem)))
            return problem
    instance_type = types.get(sn.labels().get(LABEL_INSTANCE_TYPE, ""))
    reschedulable = tuple(p for p in pods if p.is_reschedulable())
    return Candidate(
        state_node=sn,
        nodeclaim=nodeclaim,
        nodepool=nodepool,
        nodepool_raw=catalog.raw[pool_name],
        instance_type=instance_type,
        zone=sn.labels().get(LABEL_TOPOLOGY_ZONE, ""),
        capacity_type=sn.labels().get(CAPACITY_TYPE_LABEL_KEY, ""),
        price=candidate_price(sn, instance_type),
        reschedulable_pods=reschedulable,
        reschedule_disruption_cost=reschedule_disruption_cost(reschedulable),
        disruption_cost=rescheduling_cost(pods) * lifetime_remaining(now, nodeclaim),
    )


def get_candidates(
    dctx: DisruptionContext,
    disruption_class: str,
    should_disrupt: Callable[[Candidate], bool] | None = None,
    *,
    state_nodes: Sequence[StateNode] | None = None,
    catalog: NodePoolCatalog | None = None,
) -> list[Candidate]:
    """Every node that may be disrupted in ``disruption_class`` and, when given, passes
    ``should_disrupt`` (upstream ``GetCandidates``), in provider-id order."""
    catalog = catalog if catalog is not None else build_nodepool_catalog(dctx)
    pdbs = list_pdbs(dctx)
    nodes = state_nodes if state_nodes is not None else dctx.cluster.state_nodes()
    out: list[Candidate] = []
    for sn in nodes:
        c = new_candidate(dctx, sn, catalog, pdbs, disruption_class)
        if isinstance(c, str):
            continue
        if should_disrupt is None or should_disrupt(c):
            out.append(c)
    return out


def sort_by_savings_ratio(candidates: Iterable[Candidate]) -> list[Candidate]:
    """Highest price per unit of disruption first (spec §4 Order [HEAD]); ties keep their
    order (a stable sort, as upstream's ``slices.SortStableFunc``)."""
    return sorted(candidates, key=lambda c: -c.savings_ratio())
