"""``explain node`` / ``explain nodeclaim``: is it a disruption candidate now, and why not.

Built on the disruption package's pure functions over a
:class:`~karpenter_core.disruption.snapshot.DisruptionSnapshot` made from the input:
:func:`~karpenter_core.disruption.candidates.new_candidate` says why a node is not a
candidate (the sentence of the ``DisruptionBlocked`` event), each method's
``should_disrupt`` whether it would act and, when it will not, the ``Unconsolidatable``
sentence; single-node consolidation's simulation (the one the controller runs) gives the
delete or the replacement and its price, or the pod that cannot move; budgets are the
pass's :func:`~karpenter_core.disruption.budgets.budget_mapping`. Nothing here decides
anything the controller would not.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import attrs
from attrs import frozen

from karpenter_core.apis.v1 import CONDITION_INITIALIZED, NodePool, parse_time
from karpenter_core.disruption.budgets import budget_mapping
from karpenter_core.disruption.candidates import consolidate_after_left, new_candidate
from karpenter_core.disruption.methods.drift import Drift
from karpenter_core.disruption.methods.emptiness import Emptiness
from karpenter_core.disruption.methods.singlenode import SingleNodeConsolidation
from karpenter_core.disruption.notices import Blocked, Notice, Unconsolidatable
from karpenter_core.disruption.snapshot import DisruptionSnapshot, SimulationInputs
from karpenter_core.disruption.types import (
    CLASS_EVENTUAL,
    CLASS_GRACEFUL,
    REASON_DRIFTED,
    REASON_EMPTY,
    REASON_UNDERUTILIZED,
    Candidate,
    Verdict,
    replacement_price,
)
from karpenter_core.explain.inputs import ExplainInput
from karpenter_core.explain.pod import ExplainError
from karpenter_core.explain.reasons import Reason
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.state.statenode import StateNode
from karpenter_core.utils.pod import PdbLimits

__all__ = ["MethodVerdict", "NodeExplanation", "disruption_snapshot", "explain_node"]

# Reason codes (docs/explain.md lists them).
NOT_CANDIDATE = "not-candidate"
NOT_CONSOLIDATABLE_YET = "consolidate-after"
UNCONSOLIDATABLE = "unconsolidatable"
NOT_DRIFTED = "not-drifted"
DRIFTED = "drifted"
EMPTY = "empty"
NOT_EMPTY = "not-empty"
DELETE = "delete"
REPLACE = "replace"
BUDGET = "budget"
NO_ACTION = "no-action"

REASONS = (REASON_EMPTY, REASON_DRIFTED, REASON_UNDERUTILIZED)


@frozen
class MethodVerdict:
    """What one disruption method would do with the node (``reason.code``: ``empty``,
    ``drifted``, ``delete``, ``replace``, or why not), under its budget: ``budget`` is how
    many more of the pool's nodes may start disrupting for this reason now."""

    method: str
    reason: Reason
    budget: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "reason": self.reason.to_json(), "budget": self.budget}


@frozen
class NodeExplanation:
    """The node, its NodeClaim and NodePool, and the verdict of every method."""

    node: str
    nodeclaim: str
    nodepool: str
    summary: Reason
    methods: tuple[MethodVerdict, ...] = ()
    expires_in: float | None = None
    """Seconds until ``expireAfter`` deletes the NodeClaim (negative: overdue); None
    without one."""

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "NodeExplanation",
            "node": self.node,
            "nodeClaim": self.nodeclaim,
            "nodePool": self.nodepool,
            "summary": self.summary.to_json(),
            "methods": [m.to_json() for m in self.methods],
            "expiresInSeconds": self.expires_in,
        }


def disruption_snapshot(ei: ExplainInput) -> DisruptionSnapshot:
    """The snapshot a disruption pass would take of the input at ``ei.now``, with its
    simulation inputs (the NodePools that may launch and their instance types)."""
    from karpenter_core.cli.schedule import _eligible_nodepools

    snapshot = ei.inp.snapshot
    pools = {np.name: np.with_defaults() for np in ei.inp.nodepools}
    types = {name: {it.name: it for it in its} for name, its in ei.instance_types.items() if its}
    state_nodes = tuple(snapshot.state_nodes())
    pdbs = PdbLimits(snapshot.pdbs)
    eligible = _eligible_nodepools(ei.inp.nodepools)
    simulation = SimulationInputs(
        cluster=attrs.evolve(snapshot, prebuilt_state_nodes=state_nodes),
        nodepools=tuple(eligible),
        instance_types={np.name: list(ei.instance_types.get(np.name, ())) for np in eligible},
        options=ei.options,
        dra=ei.inp.dra_inputs() if not ei.options.ignore_dra_requests else None,
    )
    return DisruptionSnapshot(
        now=ei.now,
        monotonic=0.0,
        nodepools=pools,
        instance_types=types,
        pdbs=pdbs,
        state_nodes=state_nodes,
        simulation=simulation,
    )


def _find(snapshot: DisruptionSnapshot, name: str, by_nodeclaim: bool) -> StateNode:
    for sn in snapshot.state_nodes:
        if by_nodeclaim:
            if sn.nodeclaim is not None and sn.nodeclaim.name == name:
                return sn
        elif sn.node is not None and sn.node.name == name:
            return sn
    what = "nodeclaim" if by_nodeclaim else "node"
    raise ExplainError(f"{what} {name} is not in the input (or has not launched)")


def explain_node(ei: ExplainInput, name: str, *, nodeclaim: bool = False) -> NodeExplanation:
    """Explain the node ``name`` (a NodeClaim's name with ``nodeclaim``); raises
    :class:`ExplainError` when it is not in the input."""
    snapshot = disruption_snapshot(ei)
    sn = _find(snapshot, name, nodeclaim)
    node_name = sn.node.name if sn.node is not None else ""
    claim_name = sn.nodeclaim.name if sn.nodeclaim is not None else ""
    pool_name = sn.nodepool_name()
    expires = _expires_in(sn, snapshot.nodepools.get(pool_name), ei.now)
    budgets = {r: budget_mapping(snapshot, r).remaining.get(pool_name) for r in REASONS}

    graceful = new_candidate(snapshot, sn, CLASS_GRACEFUL, [])
    eventual = new_candidate(snapshot, sn, CLASS_EVENTUAL, [])
    methods: list[MethodVerdict] = []
    if isinstance(graceful, str):
        blocked = Reason(NOT_CANDIDATE, graceful)
        methods += [
            MethodVerdict("emptiness", blocked, budgets[REASON_EMPTY]),
            MethodVerdict("consolidation", blocked, budgets[REASON_UNDERUTILIZED]),
        ]
    else:
        methods.append(
            MethodVerdict("emptiness", _emptiness(snapshot, graceful), budgets[REASON_EMPTY])
        )
        methods.append(
            MethodVerdict(
                "consolidation",
                _consolidation(snapshot, graceful, ei.now),
                budgets[REASON_UNDERUTILIZED],
            )
        )
    if isinstance(eventual, str):
        methods.append(
            MethodVerdict("drift", Reason(NOT_CANDIDATE, eventual), budgets[REASON_DRIFTED])
        )
    else:
        methods.append(MethodVerdict("drift", _drift(snapshot, eventual), budgets[REASON_DRIFTED]))
    return NodeExplanation(
        node=node_name,
        nodeclaim=claim_name,
        nodepool=pool_name,
        summary=_summary(methods),
        methods=tuple(methods),
        expires_in=expires,
    )


_ACTIONS = {
    EMPTY: REASON_EMPTY,
    DRIFTED: REASON_DRIFTED,
    DELETE: REASON_UNDERUTILIZED,
    REPLACE: REASON_UNDERUTILIZED,
}


def _summary(methods: list[MethodVerdict]) -> Reason:
    """The first method (in the controller's order: emptiness, drift, consolidation) that
    would act, as limited by its budget; else the first reason why not."""
    order = {"emptiness": 0, "drift": 1, "consolidation": 2}
    ranked = sorted(methods, key=lambda m: order.get(m.method, 9))
    for m in ranked:
        if m.reason.code in _ACTIONS:
            if m.budget is not None and m.budget <= 0:
                return Reason(
                    BUDGET,
                    f"{m.method} would act ({m.reason.message}) but the NodePool's "
                    f"{_ACTIONS[m.reason.code]} budget allows no more disruptions now",
                )
            return Reason(m.reason.code, f"{m.method}: {m.reason.message}")
    first = ranked[0].reason if ranked else Reason(NO_ACTION, "nothing to do")
    if first.code == NOT_CANDIDATE:
        return first
    reasons = "; ".join(f"{m.method}: {m.reason.message}" for m in ranked)
    return Reason(NO_ACTION, f"no disruption now ({reasons})")


def _notice_reason(verdict: Verdict) -> Reason | None:
    if isinstance(verdict, Unconsolidatable):
        return Reason(UNCONSOLIDATABLE, verdict.message)
    if isinstance(verdict, Blocked):
        return Reason(NOT_CANDIDATE, verdict.message)
    return None


def _emptiness(snapshot: DisruptionSnapshot, c: Candidate) -> Reason:
    verdict = Emptiness().should_disrupt(snapshot, c)
    notice = _notice_reason(verdict)
    if notice is not None:
        return notice
    if verdict:
        return Reason(EMPTY, "the node is empty: emptiness would delete it")
    if not c.is_empty():
        return Reason(NOT_EMPTY, f"{len(c.reschedulable_pods)} pod(s) would have to move")
    return _consolidate_after(snapshot, c)


def _consolidation(snapshot: DisruptionSnapshot, c: Candidate, now: datetime) -> Reason:
    method = SingleNodeConsolidation(VirtualClock(now))
    verdict = method.should_disrupt(snapshot, c)
    notice = _notice_reason(verdict)
    if notice is not None:
        return notice
    if not verdict:
        if c.is_empty():
            return Reason(EMPTY, "the node is empty: emptiness, not consolidation, removes it")
        if c.owned_by_static_nodepool():
            return Reason(UNCONSOLIDATABLE, "static NodePools are not consolidated")
        return _consolidate_after(snapshot, c)
    notices: list[Notice] = []
    command = method.compute_consolidation(snapshot, [c], notices)
    if command is None:
        for n in notices:
            found = _notice_reason(n)
            if found is not None:
                return found
        return Reason(UNCONSOLIDATABLE, "the simulation found no cheaper placement")
    pods = len(c.reschedulable_pods)
    if not command.replacements:
        return Reason(
            DELETE,
            f"its {pods} pod(s) fit on other nodes: consolidation would delete it "
            f"(saves ${c.price:.4f}/h)",
        )
    replacement = command.replacements[0]
    price = replacement_price(replacement)
    options = replacement.instance_types_by_price()
    cheapest = options[0].it.name if options else "?"
    return Reason(
        REPLACE,
        f"consolidation would replace it with a {cheapest} from NodePool "
        f"{replacement.nodepool_name} at ${price:.4f}/h (now ${c.price:.4f}/h, "
        f"{len(options)} types allowed)",
    )


def _consolidate_after(snapshot: DisruptionSnapshot, c: Candidate) -> Reason:
    """Why a node that is not ``Consolidatable`` is not: the NodePool's consolidateAfter
    window since the node's last pod event (what the NodeClaim disruption controller
    waits out before setting the condition)."""
    nodepool = c.nodepool
    after = nodepool.spec.disruption.consolidate_after if nodepool.spec.disruption else None
    if after is None or after.nanos is None:
        return Reason(NOT_CONSOLIDATABLE_YET, "consolidateAfter is Never")
    initialized = c.nodeclaim.condition(CONDITION_INITIALIZED)
    if initialized is None or not initialized.is_true:
        return Reason(NOT_CONSOLIDATABLE_YET, "the NodeClaim is not initialized yet")
    left = consolidate_after_left(nodepool, c.nodeclaim, snapshot.now)
    if left is not None and left > 0:
        status = c.nodeclaim.status
        ref = (status.last_pod_event_time if status is not None else None) or (
            initialized.last_transition_time
        )
        return Reason(
            NOT_CONSOLIDATABLE_YET,
            f"consolidateAfter {_duration(after.nanos / 1e9)} since its last pod event at "
            f"{ref}: {_duration(left)} to go",
        )
    return Reason(
        NOT_CONSOLIDATABLE_YET,
        "the NodeClaim is not marked Consolidatable yet (the NodeClaim disruption "
        "controller sets it once consolidateAfter has passed)",
    )


def _drift(snapshot: DisruptionSnapshot, c: Candidate) -> Reason:
    if c.owned_by_static_nodepool():
        return Reason(NOT_DRIFTED, "static NodePools drift through their own controller")
    if Drift().should_disrupt(snapshot, c):
        cond = c.nodeclaim.condition("Drifted")
        why = cond.reason if cond is not None and cond.reason else "Drifted"
        return Reason(DRIFTED, f"drifted ({why}): drift would replace it")
    return Reason(NOT_DRIFTED, "not drifted")


def _expires_in(sn: StateNode, nodepool: NodePool | None, now: datetime) -> float | None:
    claim = sn.nodeclaim
    if claim is None:
        return None
    expire = claim.spec.expire_after
    if expire is None or expire.nanos is None or expire.nanos <= 0:
        return None
    born = parse_time(claim.metadata.creation_timestamp)
    if born is None:
        return None
    return (born + timedelta(seconds=expire.nanos / 1e9) - now).total_seconds()


def _duration(seconds: float) -> str:
    s = round(seconds)
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return "".join(f"{v}{u}" for v, u in ((h, "h"), (m, "m"), (sec, "s")) if v) or "0s"
