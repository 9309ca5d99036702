"""Preference relaxation: how a pod that failed to schedule gives up its soft constraints.

The scheduler treats every preference as required at first. When a pod fails, one preference
is dropped and the pod is tried again, until nothing is left to relax (upstream
``preferences.go``). The order is upstream's:

1. a required node-affinity OR-term, when more than one is left (the first is dropped; the
   last term is never dropped, it is a real requirement);
2. the heaviest preferred pod-affinity term;
3. the heaviest preferred pod anti-affinity term;
4. the heaviest preferred node-affinity term (the next heaviest then becomes the one
   :func:`~karpenter_core.scheduling.requirements.pod_requirements` treats as required);
5. the first ``whenUnsatisfiable: ScheduleAnyway`` topology-spread constraint (swapped with
   the last one, then removed, as upstream does);
6. only when some NodePool has a ``PreferNoSchedule`` taint: a toleration
   ``{operator: Exists, effect: PreferNoSchedule}`` (unless an equal one exists).

Pods are parsed once into frozen :class:`~karpenter_core.apis.objects.Pod` views, so the
relaxable parts live in a mutable per-attempt copy, :class:`PodSchedulingView`. The scheduler
makes a fresh view for every attempt (``PodSchedulingView.of(pod)``; creating one copies
nothing), hands it to :meth:`Preferences.relax`, then calls ``Topology.update(view)`` and
recomputes the pod's requirements from ``view.node_selector`` / ``view.affinity`` /
``view.tolerations``. Relaxation never mutates the dictionaries it was given: each step builds
new ones (copy-on-write), so the original pod keeps all its preferences for the next retry.

Both :class:`~karpenter_core.apis.objects.Pod` and :class:`PodSchedulingView` satisfy the
:class:`SchedulingPod` protocol, which is all the topology code reads.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol

from attrs import define, field

from karpenter_core.apis.taints import Toleration

PREFERENCE_POLICY_RESPECT: Final = "Respect"
PREFERENCE_POLICY_IGNORE: Final = "Ignore"
PREFERENCE_POLICIES: Final = frozenset({PREFERENCE_POLICY_RESPECT, PREFERENCE_POLICY_IGNORE})

SCHEDULE_ANYWAY: Final = "ScheduleAnyway"
DO_NOT_SCHEDULE: Final = "DoNotSchedule"
PREFER_NO_SCHEDULE: Final = "PreferNoSchedule"

_REQUIRED: Final = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED: Final = "preferredDuringSchedulingIgnoredDuringExecution"


class SchedulingPod(Protocol):
    """What scheduling reads of a pod: identity, labels and the (relaxable) constraints.

    ``affinity`` and each topology-spread constraint are the Kubernetes JSON shapes
    (``spec.affinity``, ``spec.topologySpreadConstraints[i]``, camelCase keys).
    """

    @property
    def uid(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def namespace(self) -> str: ...

    @property
    def labels(self) -> Mapping[str, str]: ...

    @property
    def node_selector(self) -> Mapping[str, str] | None: ...

    @property
    def affinity(self) -> Mapping[str, Any] | None: ...

    @property
    def topology_spread_constraints(self) -> Sequence[Mapping[str, Any]]: ...

    @property
    def tolerations(self) -> Sequence[Toleration]: ...


def pod_id(pod: SchedulingPod) -> str:
    """The identity topology ownership and batch exclusion use: the UID, else ``ns/name``."""
    return pod.uid or f"{pod.namespace}/{pod.name}"


@define(slots=True, eq=False)
class PodSchedulingView:
    """A pod as one scheduling attempt sees it: the frozen pod plus its relaxable constraints.

    Everything except ``affinity``, ``topology_spread_constraints`` and ``tolerations`` is
    read through to :attr:`pod`. ``relaxations`` lists, in order, what was given up (the
    reason strings upstream logs), so a report can explain why a pod landed where it did.
    """

    pod: Any  # karpenter_core.apis.objects.Pod; Any to keep this module free of apis imports
    affinity: Mapping[str, Any] | None
    topology_spread_constraints: tuple[Mapping[str, Any], ...]
    tolerations: tuple[Toleration, ...]
    relaxations: list[str] = field(factory=list)

    @classmethod
    def of(cls, pod: Any) -> PodSchedulingView:
        """A fresh view of ``pod`` (a Pod or another view) with all its preferences."""
        if isinstance(pod, PodSchedulingView):
            pod = pod.pod
        return cls(
            pod=pod,
            affinity=pod.affinity,
            topology_spread_constraints=tuple(pod.topology_spread_constraints or ()),
            tolerations=tuple(pod.tolerations or ()),
        )

    def copy(self) -> PodSchedulingView:
        """An independent view in the same relaxation state."""
        return PodSchedulingView(
            pod=self.pod,
            affinity=self.affinity,
            topology_spread_constraints=self.topology_spread_constraints,
            tolerations=self.tolerations,
            relaxations=list(self.relaxations),
        )

    @property
    def uid(self) -> str:
        return str(self.pod.uid or "")

    @property
    def name(self) -> str:
        return str(self.pod.name)

    @property
    def namespace(self) -> str:
        return str(self.pod.namespace)

    @property
    def key(self) -> str:
        return f"{self.pod.namespace}/{self.pod.name}"

    @property
    def labels(self) -> Mapping[str, str]:
        labels: Mapping[str, str] = self.pod.labels or {}
        return labels

    @property
    def node_selector(self) -> Mapping[str, str] | None:
        selector: Mapping[str, str] | None = self.pod.node_selector
        return selector

    def __getattr__(self, name: str) -> Any:
        # Anything else (requests, host ports, volumes, priority...) is the pod's own.
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(object.__getattribute__(self, "pod"), name)


def _concise(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=str)


def _weight(term: Any) -> int:
    if isinstance(term, Mapping):
        w = term.get("weight")
        if isinstance(w, int) and not isinstance(w, bool):
            return w
    return 0


def _section(affinity: Mapping[str, Any] | None, name: str) -> Mapping[str, Any]:
    if not affinity:
        return {}
    section = affinity.get(name)
    return section if isinstance(section, Mapping) else {}


def _replace(affinity: Mapping[str, Any], name: str, key: str, value: Any) -> dict[str, Any]:
    """A copy of ``affinity`` with ``affinity[name][key] = value`` (the input is untouched)."""
    new = dict(affinity)
    section = dict(_section(affinity, name))
    section[key] = value
    new[name] = section
    return new


@define(frozen=True, slots=True)
class Preferences:
    """One-step relaxation of a pod's soft constraints.

    ``tolerate_prefer_no_schedule`` is true when some NodePool template carries a
    ``PreferNoSchedule`` taint (the last relaxation only helps then). Under ``policy="Ignore"``
    preferred terms and ScheduleAnyway spreads never constrain a pod (the scheduler uses strict
    requirements and the topology makes no groups for them), so dropping them could not change
    the outcome; only steps 1 and 6 run, which saves pointless retries.
    """

    tolerate_prefer_no_schedule: bool = False
    policy: str = field(default=PREFERENCE_POLICY_RESPECT)

    @policy.validator
    def _check_policy(self, _attr: Any, value: str) -> None:
        if value not in PREFERENCE_POLICIES:
            raise ValueError(f"preference policy must be one of Respect, Ignore (got {value!r})")

    def relax(self, pod: PodSchedulingView) -> bool:
        """Drop the next preference of ``pod`` in upstream order; False when none is left."""
        steps = [remove_required_node_affinity_term]
        if self.policy == PREFERENCE_POLICY_RESPECT:
            steps += [
                remove_preferred_pod_affinity_term,
                remove_preferred_pod_anti_affinity_term,
                remove_preferred_node_affinity_term,
                remove_topology_spread_schedule_anyway,
            ]
        if self.tolerate_prefer_no_schedule:
            steps.append(tolerate_prefer_no_schedule_taints)
        for step in steps:
            reason = step(pod)
            if reason is not None:
                pod.relaxations.append(reason)
                return True
        return False


def remove_required_node_affinity_term(pod: PodSchedulingView) -> str | None:
    """Drop the first required node-affinity OR-term while more than one remains."""
    node_affinity = _section(pod.affinity, "nodeAffinity")
    required = node_affinity.get(_REQUIRED)
    if not isinstance(required, Mapping):
        return None
    terms = required.get("nodeSelectorTerms") or []
    if not isinstance(terms, Sequence) or len(terms) <= 1:
        return None
    new_required = dict(required)
    new_required["nodeSelectorTerms"] = list(terms[1:])
    assert pod.affinity is not None
    pod.affinity = _replace(pod.affinity, "nodeAffinity", _REQUIRED, new_required)
    return f"removing: spec.affinity.nodeAffinity.{_REQUIRED}[0]={_concise(terms[0])}"


def _remove_heaviest(pod: PodSchedulingView, name: str) -> str | None:
    terms = _section(pod.affinity, name).get(_PREFERRED) or []
    if not isinstance(terms, Sequence) or isinstance(terms, str) or not terms:
        return None
    # Stable sort, heaviest first: among equal weights the first listed goes first, which is
    # also the term pod_requirements() treats as required for node affinity.
    ordered = sorted(terms, key=lambda t: -_weight(t))
    assert pod.affinity is not None
    pod.affinity = _replace(pod.affinity, name, _PREFERRED, ordered[1:])
    return f"removing: spec.affinity.{name}.{_PREFERRED}[0]={_concise(ordered[0])}"


def remove_preferred_pod_affinity_term(pod: PodSchedulingView) -> str | None:
    """Drop the heaviest preferred pod-affinity term."""
    return _remove_heaviest(pod, "podAffinity")


def remove_preferred_pod_anti_affinity_term(pod: PodSchedulingView) -> str | None:
    """Drop the heaviest preferred pod anti-affinity term."""
    return _remove_heaviest(pod, "podAntiAffinity")


def remove_preferred_node_affinity_term(pod: PodSchedulingView) -> str | None:
    """Drop the heaviest preferred node-affinity term."""
    return _remove_heaviest(pod, "nodeAffinity")


def remove_topology_spread_schedule_anyway(pod: PodSchedulingView) -> str | None:
    """Remove the first ScheduleAnyway spread, moving the last constraint into its place."""
    constraints = list(pod.topology_spread_constraints)
    for i, tsc in enumerate(constraints):
        if isinstance(tsc, Mapping) and tsc.get("whenUnsatisfiable") == SCHEDULE_ANYWAY:
            constraints[i] = constraints[-1]
            constraints.pop()
            pod.topology_spread_constraints = tuple(constraints)
            return f"removing: spec.topologySpreadConstraints = {_concise(tsc)}"
    return None


def _matches(a: Toleration, b: Toleration) -> bool:
    """Kubernetes ``MatchToleration``: same key, effect, value and operator ("" is Equal)."""
    return (
        a.key == b.key
        and a.effect == b.effect
        and a.value == b.value
        and (a.operator or "Equal") == (b.operator or "Equal")
    )


PREFER_NO_SCHEDULE_TOLERATION: Final = Toleration.from_dict(
    {"operator": "Exists", "effect": PREFER_NO_SCHEDULE}
)


def tolerate_prefer_no_schedule_taints(pod: PodSchedulingView) -> str | None:
    """Add a toleration for every PreferNoSchedule taint, unless one is already there."""
    if any(_matches(t, PREFER_NO_SCHEDULE_TOLERATION) for t in pod.tolerations):
        return None
    pod.tolerations = (*pod.tolerations, PREFER_NO_SCHEDULE_TOLERATION)
    return "adding: toleration for PreferNoSchedule taints"
