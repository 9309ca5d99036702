"""The shared vocabulary of voluntary disruption: Candidate, Command, Decision, Method
(upstream ``pkg/controllers/disruption/types.go``; spec disruption §3-§4).

Every disruption method — the built-in emptiness, drift, static drift and consolidation,
and third-party methods — is written against these types:

* a :class:`~karpenter_core.disruption.snapshot.DisruptionSnapshot` is everything one pass
  decides on (NodePools, instance types, PodDisruptionBudgets, cluster-state nodes, the
  time, what the orchestration queue holds), taken by the controller;
* a :class:`Candidate` is one existing node the method may remove, with what deciding
  needs already worked out (NodePool, instance type, price, reschedulable pods, costs);
* a :class:`Command` is one decision: remove these candidates, launch these replacements;
* a :class:`Method` turns the snapshot, candidates and the remaining budgets into a
  :class:`Decision`: commands, and notices (blocked reasons and other events) for the
  controller to publish.

Stability contract (for method authors): the names and meanings documented here stay;
fields may be added. Snapshots, candidates and commands are frozen values; a method never
mutates cluster state and never talks to the API server — the controller and the
orchestration queue do.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, TypeAlias, runtime_checkable

from attrs import field, frozen

from karpenter_core.apis.labels import CAPACITY_TYPE_LABEL_KEY, LABEL_TOPOLOGY_ZONE
from karpenter_core.apis.objects import Pod
from karpenter_core.apis.v1 import (
    DISRUPTION_REASON_DRIFTED,
    DISRUPTION_REASON_EMPTY,
    DISRUPTION_REASON_UNDERUTILIZED,
    NodeClaim,
    NodePool,
)
from karpenter_core.cloudprovider.types import InstanceType, Offerings
from karpenter_core.disruption.notices import Notice
from karpenter_core.hookspecs import (  # part of the method contract, defined with it
    CLASS_EVENTUAL,
    CLASS_GRACEFUL,
    CONSOLIDATION_TYPE_EMPTY,
    CONSOLIDATION_TYPE_MULTI,
    CONSOLIDATION_TYPE_NONE,
    CONSOLIDATION_TYPE_SINGLE,
)
from karpenter_core.scheduling.requirements import Requirements
from karpenter_core.state.statenode import StateNode

if TYPE_CHECKING:
    from karpenter_core.disruption.snapshot import DisruptionSnapshot
    from karpenter_core.provisioning.scheduler import Results

__all__ = [
    "CLASS_EVENTUAL",
    "CLASS_GRACEFUL",
    "CONSOLIDATION_TYPE_EMPTY",
    "CONSOLIDATION_TYPE_MULTI",
    "CONSOLIDATION_TYPE_NONE",
    "CONSOLIDATION_TYPE_SINGLE",
    "DECISION_DELETE",
    "DECISION_NOOP",
    "DECISION_REPLACE",
    "PER_NODE_BASE_DISRUPTION_COST",
    "REASON_DRIFTED",
    "REASON_EMPTY",
    "REASON_UNDERUTILIZED",
    "BudgetMap",
    "Candidate",
    "Command",
    "Decision",
    "Method",
    "PassAware",
    "PricedOption",
    "RecordedReplacement",
    "Replacement",
    "ValidatingMethod",
    "ValidationError",
    "Verdict",
    "candidate_price",
    "replacement_price",
]


# Disruption reasons (v1 ``DisruptionReason``: budget ``reasons`` and the
# ``DisruptionReason`` condition use these exact strings).
REASON_EMPTY = DISRUPTION_REASON_EMPTY
REASON_DRIFTED = DISRUPTION_REASON_DRIFTED
REASON_UNDERUTILIZED = DISRUPTION_REASON_UNDERUTILIZED


DECISION_REPLACE = "replace"
DECISION_DELETE = "delete"
DECISION_NOOP = "no-op"

PER_NODE_BASE_DISRUPTION_COST = 1.0
"""What draining any node costs before its pods are counted (cordon, drain, API calls)."""

BudgetMap: TypeAlias = dict[str, int]
"""NodePool name -> how many more nodes may start disrupting for the current method's
reason. Methods decrement it as they take candidates (spec §6); the controller builds a
fresh one for every method on every pass."""


# --------------------------------------------------------------------------- Candidate


@frozen(eq=False)
class Candidate:
    """One existing node a method may disrupt (upstream ``Candidate``).

    Built only by :func:`karpenter_core.disruption.candidates.get_candidates`, which
    guarantees: the node has both a Node and a NodeClaim, is initialised, is not deleting,
    marked or nominated, has no ``do-not-disrupt`` annotation, belongs to an existing
    NodePool that has instance types, is not already in the orchestration queue, and no
    pod blocks it for the method's disruption class.

    What a method may rely on:

    * ``state_node`` — the snapshot's copy of the cluster-state node (read it; never write
      to cluster state through it);
    * ``nodeclaim`` — the typed NodeClaim (:class:`karpenter_core.apis.v1.NodeClaim`);
    * ``nodepool`` — the typed NodePool, with the API server's defaults;
    * ``instance_type`` — the NodePool's instance type named by the node's label, or
      None when the provider no longer offers it (consolidation must then skip the node);
    * ``zone`` / ``capacity_type`` — the node's labels ("" when missing);
    * ``price`` — the offering matching the node's zone and capacity type, ignoring
      availability; 0 when there is none (spec §4);
    * ``reschedulable_pods`` — pods that need a new home if the node goes: active pods
      and terminating StatefulSet pods, without DaemonSet and mirror pods;
    * ``reschedule_disruption_cost`` — ``1 + Σ max(0, eviction cost)`` over those pods;
    * ``disruption_cost`` — eviction cost * remaining-lifetime fraction (kept for
      compatibility; not used for ordering at upstream HEAD).
    """

    state_node: StateNode
    nodeclaim: NodeClaim
    nodepool: NodePool
    instance_type: InstanceType | None
    zone: str
    capacity_type: str
    price: float
    reschedulable_pods: tuple[Pod, ...]
    reschedule_disruption_cost: float
    disruption_cost: float = 0.0

    # -- identity --

    def name(self) -> str:
        """The Node's name."""
        return self.state_node.name()

    def provider_id(self) -> str:
        return self.state_node.provider_id()

    def nodeclaim_name(self) -> str:
        return self.nodeclaim.name

    def nodepool_name(self) -> str:
        return self.nodepool.name

    def labels(self) -> Mapping[str, str]:
        return self.state_node.labels()

    # -- decisions --

    def savings_ratio(self) -> float:
        """Price per unit of disruption: higher goes first (spec §4, Order [HEAD])."""
        return self.price / self.reschedule_disruption_cost

    def is_empty(self) -> bool:
        """No reschedulable pod adds a positive eviction cost (so pods whose cost clamps to
        zero or below count as empty; drift's "empty" is by count instead)."""
        return self.reschedule_disruption_cost <= PER_NODE_BASE_DISRUPTION_COST

    def owned_by_static_nodepool(self) -> bool:
        return self.nodepool.is_static

    def node_requirements(self) -> Requirements:
        """The node's labels as requirements (for offering compatibility checks)."""
        return Requirements.from_labels(self.labels())

    def __repr__(self) -> str:
        return f"Candidate({self.name()!r}, nodepool={self.nodepool_name()!r})"


def candidate_price(state_node: StateNode, instance_type: InstanceType | None) -> float:
    """Upstream ``resolveNodePrice``: the offering for the node's zone and capacity-type
    labels, availability ignored; 0 when unknown or NaN."""
    if instance_type is None:
        return 0.0
    labels = state_node.labels()
    price = instance_type.offering_price(
        labels.get(LABEL_TOPOLOGY_ZONE, ""), labels.get(CAPACITY_TYPE_LABEL_KEY, "")
    )
    if price is None or math.isnan(price):
        return 0.0
    return float(price)


# --------------------------------------------------------------------------- Command


class PricedOption(Protocol):
    """One instance-type option of a replacement (the scheduler's ``ITInfo``)."""

    @property
    def it(self) -> InstanceType: ...


def _candidates(items: Iterable[Candidate]) -> tuple[Candidate, ...]:
    return tuple(items)


class Replacement(Protocol):
    """A NodeClaim a command launches: a scheduler NodeClaim from a simulation, or a
    NodePool template taken as is (static drift's
    :class:`~karpenter_core.disruption.replacements.TemplateReplacement`)."""

    @property
    def nodepool_name(self) -> str: ...

    @property
    def requirements(self) -> Requirements: ...

    def instance_types_by_price(self) -> Sequence[PricedOption]: ...


def _replacements(items: Iterable[Replacement]) -> tuple[Replacement, ...]:
    return tuple(items)


@frozen(eq=False)
class Command:
    """One disruption decision (upstream ``Command``).

    ``candidates`` are removed; ``replacements`` (scheduler NodeClaims from a simulation,
    :class:`karpenter_core.provisioning.scheduler.nodeclaim.NodeClaim`, or static drift's
    template replacements) are launched first and must initialise before any candidate is
    deleted. ``results`` is the simulation the decision came from (its ``existing_nodes``
    placements are nominated when the command starts, so provisioning does not put other
    pods there meanwhile); it may be None for commands that were not simulated
    (emptiness).

    ``method``, ``id`` and ``creation_time`` are stamped by the controller when the command
    is started; a method leaves them unset.
    """

    candidates: tuple[Candidate, ...] = field(converter=_candidates)
    replacements: tuple[Replacement, ...] = field(default=(), converter=_replacements)
    results: Results | None = None
    method: Method | None = None
    id: str = ""
    creation_time: datetime | None = None

    @property
    def decision(self) -> str:
        """``replace`` (candidates and replacements), ``delete`` (candidates only), else
        ``no-op``."""
        if self.candidates and self.replacements:
            return DECISION_REPLACE
        if self.candidates:
            return DECISION_DELETE
        return DECISION_NOOP

    @property
    def reason(self) -> str:
        return self.method.reason if self.method is not None else ""

    @property
    def consolidation_type(self) -> str:
        return self.method.consolidation_type if self.method is not None else ""

    def source_cost(self) -> float:
        """Σ candidate price."""
        return sum(c.price for c in self.candidates)

    def estimated_savings(self) -> float:
        """Σ candidate price - Σ replacement price, where a replacement's price is the
        cheapest available, compatible offering of its first (cheapest) instance type."""
        dest = 0.0
        for nc in self.replacements:
            dest += replacement_price(nc)
        return self.source_cost() - dest

    def nodepool_names(self) -> list[str]:
        seen: list[str] = []
        for c in self.candidates:
            if c.nodepool_name() not in seen:
                seen.append(c.nodepool_name())
        return seen

    def __str__(self) -> str:
        """``<Reason>/<id>: <decision>: nodepools=[..]: [nodes] -> [N replacement(s)]
        (savings: $x.xx)`` — the line logged when the command starts (spec §12)."""
        sources = ", ".join(c.name() for c in self.candidates)
        head = f"{self.reason}/{self.id}: " if self.method is not None else ""
        pools = f"nodepools=[{','.join(self.nodepool_names())}]: " if self.method else ""
        text = f"{head}{self.decision}: {pools}[{sources}]"
        if self.replacements:
            n = len(self.replacements)
            text += f" -> [{n} replacement{'' if n == 1 else 's'}]"
        if self.method is not None:
            text += f" (savings: ${self.estimated_savings():.2f})"
        return text


@frozen
class _RecordedOption:
    it: InstanceType


@frozen
class RecordedReplacement:
    """What a started command's history keeps of a replacement: its NodePool, its
    requirements and its instance types by price. A scheduler NodeClaim also holds its
    solve's instance-type index and topology (megabytes at a few hundred nodes), so a
    history of a thousand of them grew a drift of 300 nodes from 130 MB to 700 MB."""

    nodepool_name: str
    requirements: Requirements
    options: tuple[_RecordedOption, ...]

    @classmethod
    def of(cls, replacement: Replacement) -> RecordedReplacement:
        options = tuple(_RecordedOption(o.it) for o in replacement.instance_types_by_price())
        return cls(replacement.nodepool_name, replacement.requirements.copy(), options)

    def instance_types_by_price(self) -> Sequence[PricedOption]:
        return self.options


def replacement_price(nodeclaim: Replacement) -> float:
    """The launch price a replacement is expected to cost: the cheapest available
    offering of its first instance type compatible with its requirements (0 if none)."""
    options = nodeclaim.instance_types_by_price()
    if not options:
        return 0.0
    offerings = Offerings(options[0].it.offerings).available().compatible(nodeclaim.requirements)
    cheapest = offerings.cheapest()
    return float(cheapest.price) if cheapest is not None else 0.0


@frozen
class Decision:
    """What a method decided: the commands to start (at most what it wants started; a
    command without candidates is dropped) and the notices to publish, in order."""

    commands: tuple[Command, ...] = ()
    notices: tuple[Notice, ...] = ()


Verdict: TypeAlias = bool | Notice
"""What :meth:`Method.should_disrupt` answers: True to consider the candidate; False, or a
notice saying why not (the controller publishes it), to leave it out."""


# --------------------------------------------------------------------------- Method


@runtime_checkable
class Method(Protocol):
    """A way of disrupting nodes (upstream ``Method``).

    Implementations are built by their :class:`~karpenter_core.hookspecs.DisruptionMethodSpec`
    factory and run by the controller, in order, once per pass, over the pass's
    :class:`~karpenter_core.disruption.snapshot.DisruptionSnapshot`:

    1. the controller builds the candidates for ``disruption_class`` and keeps those for
       which :meth:`should_disrupt` is True (a notice instead of False is published);
    2. it builds the budget map for ``reason`` (spec §6) and calls
       :meth:`compute_commands`, which returns at most the commands it wants started and
       decrements the budgets it uses (a command with no candidates is dropped);
    3. the first method that returns a command ends the pass.

    Both are functions of the snapshot: they read no clock but the snapshot's ``now``
    (a method may keep a clock to bound its own running time), list nothing and publish
    nothing. ``compute_commands`` may return a plain list of commands instead of a
    :class:`Decision` when it has nothing to say.

    ``reason`` is the v1 disruption reason (``Empty``, ``Drifted``, ``Underutilized``, or a
    plugin's own); ``consolidation_type`` the metrics label (``empty``, ``single``,
    ``multi``, or "").

    Methods written before snapshots (``should_disrupt(candidate)`` and
    ``compute_commands(budgets, candidates)``) still run: the controller adapts them, and
    their ``DisruptionContext.snapshot`` is the pass's snapshot.
    """

    @property
    def reason(self) -> str: ...

    @property
    def disruption_class(self) -> str: ...

    @property
    def consolidation_type(self) -> str: ...

    def should_disrupt(self, snapshot: DisruptionSnapshot, candidate: Candidate) -> Verdict: ...

    def compute_commands(
        self, snapshot: DisruptionSnapshot, budgets: BudgetMap, candidates: Sequence[Candidate]
    ) -> Decision | list[Command]: ...


@runtime_checkable
class ValidatingMethod(Method, Protocol):
    """A method whose commands must survive a wait before they start (upstream's
    ``Validator``; emptiness, single- and multi-node consolidation).

    The controller holds the command for the validation period (15 s on the controller's
    clock: other controllers keep running meanwhile, so pods may bind or nodes change) and
    then calls :meth:`validate` with a snapshot taken then. It returns the command to
    start — possibly narrowed, as emptiness narrows to the nodes still empty and within
    budget — as a one-command :class:`Decision` (or the bare command), or raises
    :class:`ValidationError`; the pass then carries on with the next method, as upstream
    does when a method's validation fails."""

    def validate(self, snapshot: DisruptionSnapshot, command: Command) -> Decision | Command: ...


@runtime_checkable
class PassAware(Protocol):
    """Optional: called once per pass before :meth:`Method.should_disrupt` filtering, with
    every candidate of the method's class — what the balanced evaluator needs for its
    NodePool totals (spec §10); the snapshot's ``state_nodes`` are every node."""

    def begin_pass(self, snapshot: DisruptionSnapshot, candidates: Sequence[Candidate]) -> None: ...


class ValidationError(Exception):
    """A held command no longer holds. ``kind`` is what changed, as upstream's rejection
    reasons: ``churn`` (candidates went away), ``budget`` (a candidate is nominated or out
    of budget now) or ``scheduling`` (the re-simulation disagrees). ``notices`` are what
    the validation had to say (the controller publishes them)."""

    CHURN = "churn"
    BUDGET = "budget"
    SCHEDULING = "scheduling"

    def __init__(self, kind: str, message: str, notices: Iterable[Notice] = ()) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.notices: list[Notice] = list(notices)
