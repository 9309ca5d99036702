"""What single- and multi-node consolidation share: which nodes they consider, and how a
scheduling simulation becomes a delete, a cheaper replacement, or nothing.

Spec: disruption §9. A consolidation command removes candidates whose pods fit elsewhere
(delete), or replaces them by *one* cheaper NodeClaim (replace). "Cheaper" is judged
pessimistically: a replacement type survives only if the most it could cost to launch
(:func:`launch_price`) is below what the candidates cost now, so the cloud's choice among
the offered types can never make the cluster more expensive.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from attrs import frozen

from karpenter_core import metrics
from karpenter_core.apis.labels import (
    CAPACITY_TYPE_LABEL_KEY,
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_SPOT,
    LABEL_INSTANCE_TYPE,
    LABEL_TOPOLOGY_ZONE,
)
from karpenter_core.apis.v1 import (
    CONDITION_CONSOLIDATABLE,
    CONSOLIDATION_POLICY_WHEN_EMPTY,
    NodePool,
)
from karpenter_core.cloudprovider.types import (
    InstanceType,
    MinValuesError,
    compatible,
    order_by_price,
    satisfies_min_values,
    worst_launch_price,
)
from karpenter_core.disruption.budgets import budget_mapping
from karpenter_core.disruption.candidates import reschedule_disruption_cost
from karpenter_core.disruption.methods import spottospot
from karpenter_core.disruption.methods.balanced import (
    BalancedEvaluator,
    Evaluator,
    NoopEvaluator,
    compute_nodepool_totals,
    consolidation_policy,
)
from karpenter_core.disruption.notices import ConsolidationCandidate, Notice, Unconsolidatable
from karpenter_core.disruption.simulation import (
    CandidateDeletingError,
    SimulationError,
    simulate_scheduling,
)
from karpenter_core.disruption.snapshot import DisruptionSnapshot
from karpenter_core.disruption.types import (
    CLASS_GRACEFUL,
    REASON_UNDERUTILIZED,
    BudgetMap,
    Candidate,
    Command,
    Decision,
    ValidationError,
    Verdict,
)
from karpenter_core.disruption.validation import current_candidates
from karpenter_core.provisioning.scheduler.nodeclaim import NodeClaim as SchedulerNodeClaim
from karpenter_core.provisioning.scheduler.results import Results
from karpenter_core.scheduling.requirements import IN, Requirement, Requirements
from karpenter_core.state.statenode import StateNode

if TYPE_CHECKING:
    from karpenter_core.runtime.clock import Clock

__all__ = [
    "CANT_REPLACE_WITH_CHEAPER",
    "Consolidation",
    "PriceFilter",
    "ReplacementPlan",
    "consolidate_after_never",
    "filter_by_price",
    "filter_out_same_instance_type",
    "launch_price",
    "new_command",
    "node_disruption_cost",
    "plan_replacement",
    "unconsolidatable_reason",
]

CANT_REPLACE_WITH_CHEAPER = "Can't replace with a cheaper node"


def launch_price(instance_type: InstanceType, requirements: Requirements) -> float:
    """The most launching ``instance_type`` under ``requirements`` could cost.

    Only available offerings count; a launch tries reserved, then spot, then on-demand,
    so the bound is the priciest offering of the first of those that has one.
    ``math.inf`` when no available offering is compatible.
    """
    return worst_launch_price(instance_type.offerings.available(), requirements)


@frozen
class PriceFilter:
    """Instance types left after a price cut, and the minValues they broke if any."""

    instance_types: tuple[InstanceType, ...]
    error: MinValuesError | None = None


def filter_by_price(
    instance_types: Iterable[InstanceType], requirements: Requirements, max_price: float
) -> PriceFilter:
    """Keep the types whose :func:`launch_price` is strictly below ``max_price``.

    Order is preserved. If the survivors no longer satisfy the requirements' minValues,
    the result carries the error: launching them would break the NodePool's flexibility
    promise, so the caller must not act.
    """
    kept = tuple(it for it in instance_types if launch_price(it, requirements) < max_price)
    _, err = satisfies_min_values(kept, requirements)
    return PriceFilter(kept, err)


@frozen
class ReplacementPlan:
    """What a one-NodeClaim replacement launches with, or why there is no replacement.

    ``rejection`` is empty when the plan is usable; otherwise it is the Unconsolidatable
    event text (single-node consolidation publishes it, multi-node stays silent).
    ``instance_types`` are cheapest first.
    """

    instance_types: tuple[InstanceType, ...]
    requirements: Requirements
    rejection: str = ""

    @property
    def ok(self) -> bool:
        return not self.rejection


def _reject(requirements: Requirements, message: str) -> ReplacementPlan:
    return ReplacementPlan((), requirements, message)


def _price_cut(
    instance_types: Sequence[InstanceType], requirements: Requirements, candidate_price: float
) -> ReplacementPlan:
    cut = filter_by_price(instance_types, requirements, candidate_price)
    if cut.error is not None:
        return _reject(requirements, f"Filtering by price: {cut.error}")
    if not cut.instance_types:
        return _reject(requirements, CANT_REPLACE_WITH_CHEAPER)
    return ReplacementPlan(cut.instance_types, requirements)


def plan_replacement(
    instance_types: Sequence[InstanceType],
    requirements: Requirements,
    candidate_price: float,
    *,
    all_candidates_spot: bool,
    single_node: bool,
    spot_to_spot_enabled: bool,
) -> ReplacementPlan:
    """Turn the simulation's one new NodeClaim into a replacement that saves money.

    ``instance_types`` / ``requirements`` are the simulated NodeClaim's options and
    requirements (not modified); ``candidate_price`` is what the candidates cost together.

    * Types are ordered by their cheapest available compatible offering first, so every
      later truncation keeps the cheapest.
    * All-spot candidates with a replacement that may be spot take the spot→spot path
      (:mod:`.spottospot`): feature gate, spot only, price cut, and for one candidate the
      15-cheaper-types rule.
    * Otherwise the price cut alone decides. A replacement allowed both spot and
      on-demand is then pinned to spot: the cut assumed a spot launch (launch prices
      prefer spot), and an on-demand fallback could cost more than the candidates.
    """
    ordered = order_by_price(instance_types, requirements)
    capacity = requirements.get(CAPACITY_TYPE_LABEL_KEY)
    if all_candidates_spot and capacity.has(CAPACITY_TYPE_SPOT):
        if not spot_to_spot_enabled:
            return _reject(requirements, spottospot.disabled_message())
        spot_reqs = spottospot.spot_only(requirements)
        plan = _price_cut(compatible(ordered, spot_reqs), spot_reqs, candidate_price)
        if not plan.ok:
            return plan
        options = spottospot.spot_to_spot_options(plan.instance_types, spot_reqs, single_node)
        if options.rejection:
            return _reject(spot_reqs, options.rejection)
        return ReplacementPlan(options.instance_types, spot_reqs)
    plan = _price_cut(ordered, requirements, candidate_price)
    if not plan.ok:
        return plan
    if capacity.has(CAPACITY_TYPE_SPOT) and capacity.has(CAPACITY_TYPE_ON_DEMAND):
        pinned = requirements.copy()
        pinned.add(Requirement.new(CAPACITY_TYPE_LABEL_KEY, IN, [CAPACITY_TYPE_SPOT]))
        return ReplacementPlan(plan.instance_types, pinned)
    return plan


def filter_out_same_instance_type(
    instance_types: Sequence[InstanceType],
    requirements: Requirements,
    candidates: Iterable[tuple[InstanceType | None, Mapping[str, str]]],
) -> PriceFilter:
    """Multi-node guard against a replacement that is really "keep one of them".

    ``candidates`` are (instance type, node labels) of the nodes being removed. If the
    replacement may launch a type that one of the candidates already is, the move
    amounts to deleting the others while re-creating that one: cheaper to just delete
    the others (fewer pods move). So every replacement type priced at or above the
    cheapest such shared type (at the candidate's own zone/capacity type) is dropped.
    With no shared type nothing is dropped except types that cannot launch at all.
    """
    names: set[str] = set()
    prices: dict[str, float] = {}
    for it, node_labels in candidates:
        if it is None:
            continue
        names.add(it.name)
        cheapest = it.offerings.compatible(Requirements.from_labels(node_labels)).cheapest()
        if cheapest is not None and cheapest.price < prices.get(it.name, math.inf):
            prices[it.name] = cheapest.price
    max_price = math.inf
    for it in instance_types:
        if it.name in names:
            # A shared type whose candidate has no offering at its own zone/capacity type
            # has no known price: treat it as free, which keeps nothing (as upstream).
            max_price = min(max_price, prices.get(it.name, 0.0))
    return filter_by_price(instance_types, requirements, max_price)


# --------------------------------------------------------------------------- the methods' base


def consolidate_after_never(nodepool: NodePool) -> bool:
    """``consolidateAfter: Never`` (unset means the CRD default, ``0s``)."""
    disruption = nodepool.spec.disruption
    after = disruption.consolidate_after if disruption is not None else None
    return after is not None and after.is_never


def unconsolidatable_reason(candidate: Candidate) -> str | None:
    """Why consolidation will not consider ``candidate``, or None when it may.

    ``""`` is a silent no (static NodePools, and empty nodes, which emptiness owns so that
    their removal counts against the ``Empty`` budget); any other text is the
    ``Unconsolidatable`` notice to publish. A node whose instance type, capacity type or
    zone is unknown cannot be priced, so it cannot be compared with a replacement.
    """
    if candidate.owned_by_static_nodepool():
        return ""
    node_labels = candidate.labels()
    if candidate.instance_type is None:
        return f'Instance Type "{node_labels.get(LABEL_INSTANCE_TYPE, "")}" not found'
    if CAPACITY_TYPE_LABEL_KEY not in node_labels:
        return f'Node does not have label "{CAPACITY_TYPE_LABEL_KEY}"'
    if LABEL_TOPOLOGY_ZONE not in node_labels:
        return f'Node does not have label "{LABEL_TOPOLOGY_ZONE}"'
    pool = candidate.nodepool_name()
    if consolidate_after_never(candidate.nodepool):
        return f'NodePool "{pool}" has consolidation disabled'
    if candidate.is_empty():
        return ""
    if consolidation_policy(candidate.nodepool) == CONSOLIDATION_POLICY_WHEN_EMPTY:
        return f'NodePool "{pool}" has consolidation policy WhenEmpty, but node is not empty'
    return None


def node_disruption_cost(state_node: StateNode) -> float:
    """A non-candidate node's share of its NodePool's disruption (balanced totals):
    ``1 + Σ`` positive eviction costs of its pods, DaemonSet pods excluded."""
    return reschedule_disruption_cost(p for p in state_node.pods if not p.is_owned_by_daemonset())


def new_command(
    candidates: Iterable[Candidate],
    replacements: Iterable[SchedulerNodeClaim] = (),
    results: Results | None = None,
) -> Command:
    """A :class:`Command` removing ``candidates`` for ``replacements``."""
    return Command(tuple(candidates), replacements=tuple(replacements), results=results)


def _apply_plan(nodeclaim: SchedulerNodeClaim, plan: ReplacementPlan) -> None:
    """Narrow the simulated NodeClaim to the plan: it is what the queue launches."""
    by_identity = {id(info.it): info for info in nodeclaim.options}
    nodeclaim.requirements = plan.requirements
    nodeclaim.set_options([by_identity[id(it)] for it in plan.instance_types])


def _unconsolidatable(candidate: Candidate, message: str) -> Unconsolidatable:
    return Unconsolidatable(candidate.state_node.node, candidate.nodeclaim, message)


class Consolidation:
    """What single- and multi-node consolidation share (upstream ``consolidation``).

    Holds the "consolidated" memo: when a full pass found nothing to do, nothing is
    re-simulated until cluster state changes (or the state's 5-minute refresh), since the
    same inputs would give the same answer. ``clock`` bounds how long a pass may search
    (the methods' timeouts); ``spot_to_spot`` is the ``SpotToSpotConsolidation`` gate.
    """

    reason = REASON_UNDERUTILIZED
    disruption_class = CLASS_GRACEFUL
    consolidation_type = ""

    def __init__(self, clock: Clock, *, spot_to_spot: bool = False) -> None:
        self.clock = clock
        self.spot_to_spot = spot_to_spot
        self.evaluator: Evaluator = NoopEvaluator()
        self._last_consolidation_state: datetime | None = None

    # -- the memo --

    def is_consolidated(self, snapshot: DisruptionSnapshot) -> bool:
        state = snapshot.consolidation_state
        return state is not None and self._last_consolidation_state == state

    def mark_consolidated(self, snapshot: DisruptionSnapshot) -> None:
        self._last_consolidation_state = snapshot.consolidation_state

    # -- Method protocol --

    def begin_pass(self, snapshot: DisruptionSnapshot, candidates: Sequence[Candidate]) -> None:
        """Install a balanced evaluator with this pass's NodePool totals (spec §10)."""
        totals = compute_nodepool_totals(
            candidates,
            snapshot.state_nodes,
            node_disruption_cost,
            snapshot.nodepool_cost if snapshot.nodepool_costs is not None else None,
        )
        self.evaluator = BalancedEvaluator(totals)

    def should_disrupt(self, snapshot: DisruptionSnapshot, candidate: Candidate) -> Verdict:
        reason = unconsolidatable_reason(candidate)
        if reason is None:
            return candidate.nodeclaim.is_true(CONDITION_CONSOLIDATABLE)
        if reason:
            return _unconsolidatable(candidate, reason)
        return False

    def compute_commands(
        self, snapshot: DisruptionSnapshot, budgets: BudgetMap, candidates: Sequence[Candidate]
    ) -> Decision:
        raise NotImplementedError

    # -- shared decision --

    def compute_consolidation(
        self,
        snapshot: DisruptionSnapshot,
        candidates: Sequence[Candidate],
        notices: list[Notice],
    ) -> Command | None:
        """Delete or replace ``candidates`` together, or None (upstream
        ``computeConsolidation``).

        Simulates their pods elsewhere: all fit on remaining capacity -> delete; they need
        exactly one new NodeClaim that is cheaper (see :func:`plan_replacement`) ->
        replace; anything else -> None. Only a single candidate gets an Unconsolidatable
        notice saying why (multi-node tries many batches and would flood). Raises
        :class:`SimulationError` when the simulation cannot run.
        """
        try:
            results = simulate_scheduling(snapshot, candidates, consolidation=True, notices=notices)
        except CandidateDeletingError:
            return None
        single = candidates[0] if len(candidates) == 1 else None
        if not results.all_non_pending_pods_scheduled():
            if single is not None:
                why = results.non_pending_pod_scheduling_errors()
                notices.append(_unconsolidatable(single, why[:1].upper() + why[1:]))
            return None
        if not results.new_nodeclaims:
            return new_command(candidates, results=results)
        if len(results.new_nodeclaims) > 1:
            if single is not None:
                notices.append(
                    _unconsolidatable(
                        single,
                        f"Can't remove without creating {len(results.new_nodeclaims)} candidates",
                    )
                )
            return None
        replacement = results.new_nodeclaims[0]
        plan = plan_replacement(
            [info.it for info in replacement.options],
            replacement.requirements,
            sum(c.price for c in candidates),
            all_candidates_spot=all(c.capacity_type == CAPACITY_TYPE_SPOT for c in candidates),
            single_node=single is not None,
            spot_to_spot_enabled=self.spot_to_spot,
        )
        if not plan.ok:
            if single is not None:
                notices.append(_unconsolidatable(single, plan.rejection))
            return None
        _apply_plan(replacement, plan)
        command = new_command(candidates, (replacement,), results)
        text, savings = str(command), command.estimated_savings()
        for c in candidates:
            notices.append(ConsolidationCandidate(c.state_node.node, c.nodeclaim, text, savings))
        return command

    # -- validation (spec §11, all-or-nothing) --

    def _failed_validation(self, count: int) -> None:
        metrics.VOLUNTARY_DISRUPTION_FAILED_VALIDATIONS_TOTAL.labels(
            consolidation_type=self.consolidation_type
        ).inc(count)

    def _validate_candidates(
        self,
        snapshot: DisruptionSnapshot,
        candidates: Sequence[Candidate],
        notices: list[Notice],
    ) -> list[Candidate]:
        current = current_candidates(snapshot, self.should_disrupt, notices)
        fresh = [current[c.provider_id()] for c in candidates if c.provider_id() in current]
        if len(fresh) != len(candidates):
            self._failed_validation(len(candidates))
            raise ValidationError(
                ValidationError.CHURN,
                f"{len(candidates) - len(fresh)} candidates are no longer valid",
                notices,
            )
        budgets = budget_mapping(snapshot, self.reason)
        notices.extend(budgets.notices)
        remaining = budgets.remaining
        for c in fresh:
            if c.state_node.nominated(snapshot.monotonic):
                self._failed_validation(len(candidates))
                raise ValidationError(
                    ValidationError.BUDGET, "a candidate was nominated during validation", notices
                )
            pool = c.nodepool_name()
            if remaining.get(pool, 0) <= 0:
                self._failed_validation(len(candidates))
                raise ValidationError(
                    ValidationError.BUDGET,
                    "a candidate can no longer be disrupted without violating budgets",
                    notices,
                )
            remaining[pool] -= 1
        return fresh

    def _validate_command(
        self,
        snapshot: DisruptionSnapshot,
        command: Command,
        candidates: Sequence[Candidate],
        notices: list[Notice],
    ) -> None:
        if not candidates:
            raise ValidationError(ValidationError.SCHEDULING, "no candidates", notices)
        try:
            results = simulate_scheduling(snapshot, candidates, consolidation=True, notices=notices)
        except SimulationError as err:
            raise ValidationError(
                ValidationError.SCHEDULING, f"simulating scheduling, {err}", notices
            ) from err
        if not results.all_non_pending_pods_scheduled():
            raise ValidationError(
                ValidationError.SCHEDULING, results.non_pending_pod_scheduling_errors(), notices
            )
        changed = "scheduling simulation produced new results"
        new = results.new_nodeclaims
        if not new:
            if command.replacements:
                raise ValidationError(ValidationError.SCHEDULING, changed, notices)
            return
        planned_claim = command.replacements[0] if command.replacements else None
        if len(new) > 1 or not isinstance(planned_claim, SchedulerNodeClaim):
            raise ValidationError(ValidationError.SCHEDULING, changed, notices)
        # The re-simulation has no price filter, so the planned (filtered) types being a
        # subset of what it allows now confirms the plan still holds.
        planned = {info.name for info in planned_claim.options}
        allowed = {info.name for info in new[0].options}
        if not planned <= allowed:
            raise ValidationError(ValidationError.SCHEDULING, changed, notices)

    def check(self, snapshot: DisruptionSnapshot, command: Command) -> Decision:
        """Validate ``command`` against the snapshot taken after the controller's wait: the
        candidates are all still candidates, nominated by no one and within budget, and a
        simulation still supports the same decision. Raises :class:`ValidationError`."""
        notices: list[Notice] = []
        fresh = self._validate_candidates(snapshot, command.candidates, notices)
        self._validate_command(snapshot, command, fresh, notices)
        return Decision((command,), tuple(notices))
