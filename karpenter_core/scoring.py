"""Instance-type scoring: which of a NodeClaim's feasible instance types to prefer.

After a solve, every new NodeClaim holds the instance types that fit all its pods. Upstream
orders them by their cheapest compatible offering, keeps the first ones (the
``max_instance_types`` cap) and the provider launches the cheapest. Here a *scorer*
decides that order (Cluster Autoscaler's expanders): ``price`` (the default, upstream's
order, computed by the scheduler itself without calling any scorer), ``least-waste`` and
``priority``, or any scorer a plugin registers through ``karpenter_instance_type_scorers``.

The order reaches the cloud provider in two ways, so that no provider re-implements a
scorer:

- the cap keeps the best-ranked types (a type ranked out never reaches the provider);
- the NodeClaim carries the ranking in its :data:`PREFERENCE_ANNOTATION_KEY` annotation
  (written only when the scorer is not ``price``, so default NodeClaims are unchanged), and
  a provider that chooses among the NodeClaim's types puts :func:`preference_rank` first
  in its sort key: the best-ranked type with an available offering launches, at its
  cheapest compatible offering.

Selection: the operator option ``INSTANCE_TYPE_SCORER`` for every NodePool, and a
NodePool's :data:`SCORER_ANNOTATION_KEY` annotation for its own NodeClaims. A name nobody
registered is refused at start-up (the option) or reported on the NodePool (the
annotation: a Warning event and the ``InstanceTypeScorerResolved`` condition, and the
NodePool falls back to the operator's scorer). A scorer that fails for a NodeClaim
leaves that NodeClaim in price order, with a Warning event on its NodePool.
"""

from __future__ import annotations

import fnmatch
import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from karpenter_core.apis.labels import (
    INSTANCE_TYPE_PREFERENCE_ANNOTATION_KEY,
    INSTANCE_TYPE_PRIORITY_ANNOTATION_KEY,
    INSTANCE_TYPE_SCORER_ANNOTATION_KEY,
)
from karpenter_core.hookspecs import InstanceTypeScorerSpec, ScoringRequest

if TYPE_CHECKING:
    from karpenter_core.apis.v1 import NodePool
    from karpenter_core.runtime.context import ControllerContext

__all__ = [
    "BUILTIN_SCORERS",
    "DEFAULT_SCORER",
    "LEAST_WASTE",
    "PREFERENCE_ANNOTATION_KEY",
    "PRICE",
    "PRIORITY",
    "PRIORITY_ANNOTATION_KEY",
    "REASON_SCORER_FAILED",
    "REASON_UNKNOWN_SCORER",
    "SCORER_ANNOTATION_KEY",
    "ProblemReporter",
    "Scoring",
    "UnknownScorerError",
    "launch_preference",
    "nodepool_scorer_problem",
    "parse_priority",
    "preference_rank",
    "rank",
    "score_least_waste",
    "score_price",
    "score_priority",
    "scorer_problem",
]

log = logging.getLogger("karpenter.scoring")

PRICE = "price"
LEAST_WASTE = "least-waste"
PRIORITY = "priority"
DEFAULT_SCORER = PRICE

SCORER_ANNOTATION_KEY = INSTANCE_TYPE_SCORER_ANNOTATION_KEY
"""NodePool annotation: the scorer for this NodePool's NodeClaims (overrides the option)."""
PRIORITY_ANNOTATION_KEY = INSTANCE_TYPE_PRIORITY_ANNOTATION_KEY
"""NodePool annotation read by ``priority``: instance-type globs or families, best first."""
PREFERENCE_ANNOTATION_KEY = INSTANCE_TYPE_PREFERENCE_ANNOTATION_KEY
"""NodeClaim annotation the core writes: the instance types, most preferred first."""

REASON_UNKNOWN_SCORER = "UnknownInstanceTypeScorer"
REASON_SCORER_FAILED = "InstanceTypeScorerFailed"


class UnknownScorerError(ValueError):
    """The operator option names a scorer nobody registered; the message lists them."""


# --- the built-in scorers ------------------------------------------------------------------


def score_price(request: ScoringRequest) -> list[float]:
    """Every type equal: the core's tie-break (price) is the whole order. The scheduler
    recognises this function and skips scoring altogether."""
    return [0.0] * len(request.instance_types)


_WASTE_RESOURCES = ("cpu", "memory")


def score_least_waste(request: ScoringRequest) -> list[float]:
    """The fraction of the type's allocatable CPU and memory the NodeClaim's pods leave
    unused, summed over the two (0 is a perfect fit, 2 an empty machine); ties by price.

    Cluster Autoscaler's ``least-waste`` expander: when several sizes fit, prefer the
    one the pods fill best, even if a roomier one is cheaper per hour."""
    out: list[float] = []
    for it in request.instance_types:
        allocatable = it.allocatable()
        waste = 0.0
        for name in _WASTE_RESOURCES:
            total = allocatable.get(name, 0)
            used = request.requests.get(name, 0)
            waste += max(total - used, 0) / total if total > 0 else 1.0
        out.append(waste)
    return out


_SEPARATORS = re.compile(r"[,\s]+")
_GLOB_CHARS = frozenset("*?[")


def parse_priority(value: str) -> list[str]:
    """The entries of a :data:`PRIORITY_ANNOTATION_KEY` value: comma- or space-separated,
    best first, empty entries dropped."""
    return [entry for entry in _SEPARATORS.split(value) if entry]


def _matches(entry: str, name: str) -> bool:
    """An entry is a shell glob on the instance-type name; one without glob characters is
    also a family: ``m5`` matches ``m5.large``, ``c`` matches ``c-4x-amd64-linux``."""
    if _GLOB_CHARS & set(entry):
        return fnmatch.fnmatchcase(name, entry)
    return name == entry or name.startswith((entry + ".", entry + "-"))


def score_priority(request: ScoringRequest) -> list[float]:
    """The position of the first entry of the NodePool's :data:`PRIORITY_ANNOTATION_KEY`
    annotation the type matches; unlisted types after every listed one; ties by price.

    Cluster Autoscaler's ``priority`` expander, configured per NodePool rather than in a
    ConfigMap: the reserved-instance family first, a family the workloads are tuned for,
    and so on. Without the annotation every type ties and the order is price."""
    raw = request.nodepool.metadata.annotations.get(PRIORITY_ANNOTATION_KEY, "")
    entries = parse_priority(str(raw))
    out: list[float] = []
    for it in request.instance_types:
        position = next((i for i, e in enumerate(entries) if _matches(e, it.name)), len(entries))
        out.append(float(position))
    return out


BUILTIN_SCORERS: tuple[InstanceTypeScorerSpec, ...] = (
    InstanceTypeScorerSpec(
        PRICE, score_price, "cheapest compatible offering first (upstream's order)"
    ),
    InstanceTypeScorerSpec(
        LEAST_WASTE,
        score_least_waste,
        "least unused CPU and memory for the NodeClaim's pods, then price",
    ),
    InstanceTypeScorerSpec(
        PRIORITY,
        score_priority,
        f"the NodePool's {PRIORITY_ANNOTATION_KEY} order (globs or families), then price",
    ),
)
"""The scorers karpenter-core registers for itself (:mod:`karpenter_core.builtins`)."""


# --- ranking -------------------------------------------------------------------------------


def rank(spec: InstanceTypeScorerSpec, request: ScoringRequest) -> list[int]:
    """Positions into ``request.instance_types``, best first: by ``spec``'s score, ties in
    the request's (price) order. Raises ``ValueError``/``TypeError`` when the scorer
    returns something that is not one real number per type; whatever the scorer itself
    raises propagates."""
    scores = list(spec.score(request))
    n = len(request.instance_types)
    if len(scores) != n:
        raise ValueError(f"returned {len(scores)} scores for {n} instance types")
    keys: list[float] = []
    for s in scores:
        if isinstance(s, bool) or not isinstance(s, int | float) or math.isnan(s):
            raise TypeError(f"returned the score {s!r}; scores are real numbers")
        keys.append(float(s))
    return sorted(range(n), key=lambda i: (keys[i], i))


ProblemReporter = Callable[["NodePool", str, str], None]
"""``report(nodepool, reason, message)``: where :class:`Scoring` says that a NodePool's
scorer could not be used (the provisioner publishes a Warning event on the NodePool)."""


def _log_problem(nodepool: NodePool, reason: str, message: str) -> None:
    log.warning("nodepool %s: %s: %s", nodepool.name, reason, message)


def _unknown_message(name: str, known: Sequence[str]) -> str:
    return f"unknown instance-type scorer {name!r} (known: {', '.join(sorted(known))})"


class Scoring:
    """The scorers of one operator (or one ``karpenter schedule``): resolves each
    NodePool's scorer and ranks its NodeClaims' options.

    ``scorers`` are every registered scorer; ``default`` is the operator option's name,
    checked here (:class:`UnknownScorerError`). ``report`` hears about NodePools whose
    annotation names an unknown scorer and scorers that fail (default: a log warning).
    """

    def __init__(
        self,
        scorers: Sequence[InstanceTypeScorerSpec],
        default: str = DEFAULT_SCORER,
        report: ProblemReporter | None = None,
    ) -> None:
        self.scorers: dict[str, InstanceTypeScorerSpec] = {s.name: s for s in scorers}
        if default not in self.scorers:
            raise UnknownScorerError(_unknown_message(default, list(self.scorers)))
        self.default = default
        self.report: ProblemReporter = report or _log_problem

    def spec_for(self, nodepool: NodePool) -> InstanceTypeScorerSpec | None:
        """The scorer of ``nodepool``'s NodeClaims, or None for upstream's price order (the
        built-in ``price`` scorer, which the scheduler applies without calling it)."""
        annotations = nodepool.metadata.annotations
        spec = None
        if SCORER_ANNOTATION_KEY in annotations:
            spec = self.scorers.get(str(annotations[SCORER_ANNOTATION_KEY]).strip())
            if spec is None:
                problem = nodepool_scorer_problem(
                    annotations, list(self.scorers.values()), self.default
                )
                self.report(nodepool, REASON_UNKNOWN_SCORER, problem or "")
        if spec is None:
            spec = self.scorers[self.default]
        return None if spec.score is score_price else spec

    def rank_or_price(
        self, spec: InstanceTypeScorerSpec, request: ScoringRequest
    ) -> list[int] | None:
        """:func:`rank`, or None (price order) after reporting a scorer that failed."""
        try:
            return rank(spec, request)
        except Exception as e:  # a plugin's bug costs its ordering, never the launch
            self.report(
                request.nodepool,
                REASON_SCORER_FAILED,
                f"instance-type scorer {spec.name!r} failed ({type(e).__name__}: {e}); "
                "launching by price",
            )
            return None


def scorer_problem(ctx: ControllerContext) -> str | None:
    """Why the operator's ``INSTANCE_TYPE_SCORER`` names no registered scorer, or None:
    ``karpenter serve`` and ``simulate`` refuse to start with it (start-up, not a log line
    on every provisioning pass)."""
    try:
        Scoring(ctx.plugins.instance_type_scorers, ctx.options.instance_type_scorer)
    except UnknownScorerError as e:
        return f"instance-type-scorer: {e}"
    return None


def nodepool_scorer_problem(
    annotations: Mapping[str, Any], scorers: Sequence[InstanceTypeScorerSpec], default: str
) -> str | None:
    """Why a NodePool's :data:`SCORER_ANNOTATION_KEY` annotation cannot be honoured, or
    None (also when it has none): the message the NodePool's condition and event carry."""
    name = annotations.get(SCORER_ANNOTATION_KEY)
    if name is None:
        return None
    known = [s.name for s in scorers]
    if str(name).strip() in known:
        return None
    return f"{SCORER_ANNOTATION_KEY}: {_unknown_message(str(name), known)}; using {default!r}"


# --- the provider's side --------------------------------------------------------------------


def launch_preference(annotations: Mapping[str, Any] | None) -> dict[str, int]:
    """Instance type -> rank (0 is best) from a NodeClaim's annotations; empty when the
    core wrote no preference (the ``price`` scorer): then the cheapest offering wins."""
    raw = (annotations or {}).get(PREFERENCE_ANNOTATION_KEY)
    if not raw:
        return {}
    out: dict[str, int] = {}
    for name in str(raw).split(","):
        name = name.strip()
        if name and name not in out:
            out[name] = len(out)
    return out


def preference_rank(preference: Mapping[str, int], name: str) -> int:
    """The first element of a provider's sort key for instance type ``name``: its rank in
    the NodeClaim's :func:`launch_preference` (types it does not list come last); 0 for
    every type when there is no preference, so the provider's own (price) order stands."""
    if not preference:
        return 0
    return preference.get(name, len(preference))
