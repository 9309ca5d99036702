"""Which nodes a topology-spread constraint counts (upstream ``topologynodefilter.go``).

Kubernetes counts a node for a spread only if the pod could land there: by default the node
must satisfy the pod's nodeSelector and required node affinity (``nodeAffinityPolicy: Honor``)
and its taints are ignored (``nodeTaintsPolicy: Ignore``). Pod affinity and anti-affinity count
every node, so their groups use :data:`MATCH_ALL`.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from attrs import define, field

from karpenter_core.apis.taints import Taint, Toleration, tolerates
from karpenter_core.provisioning.scheduler.preferences import SchedulingPod
from karpenter_core.scheduling.requirements import Requirements
from karpenter_core.scheduling.spread import HONOR, IGNORE, node_included

_INVALID_TERM = "<invalid>"


@define(frozen=True, slots=True)
class TopologyNodeFilter:
    """The pod's node-selection terms (OR-ed) plus the two inclusion policies.

    ``requirements`` holds one entry per required node-affinity term (each combined with the
    nodeSelector), or just the nodeSelector when there is no required node affinity. A term
    that cannot be parsed is ``None`` and matches no node. An empty tuple matches every node.
    ``signature`` is the structural identity used to deduplicate topology groups.
    """

    requirements: tuple[Requirements | None, ...] = ()
    taint_policy: str = ""
    affinity_policy: str = ""
    tolerations: tuple[Toleration, ...] = ()
    signature: Hashable = field(default=None, eq=False)

    def matches(
        self,
        taints: Sequence[Taint],
        requirements: Requirements,
        allow_undefined: Any = None,
    ) -> bool:
        """Whether a node with ``taints`` and ``requirements`` takes part in the topology.

        ``allow_undefined`` is accepted for parity with the callers' compatibility options but,
        as upstream, not applied: the requirement check is always strict [quirk].
        """
        del allow_undefined
        return node_included(
            self.affinity_policy,
            self.taint_policy,
            lambda: self.matches_requirements(requirements),
            lambda: tolerates(taints, self.tolerations) is None,
        )

    def matches_every_node(self) -> bool:
        """Whether :meth:`matches` is true whatever the node (no term to meet under an
        honoured affinity policy, taints not honoured): most spreads, checked once."""
        return (self.affinity_policy != HONOR or not self.requirements) and (
            self.taint_policy != HONOR
        )

    def matches_requirements(self, requirements: Requirements) -> bool:
        """Whether node ``requirements`` are compatible with at least one of the pod's terms."""
        if not self.requirements or self.affinity_policy == IGNORE:
            return True
        for term in self.requirements:
            if term is not None and requirements.compatible(term) is None:
                return True
        return False


#: The filter of pod affinity / anti-affinity groups: every node counts. Its taint policy is
#: neither Honor nor Ignore, which (as upstream) still limits the group's initial domains to
#: those whose taints the creating pod tolerates.
MATCH_ALL = TopologyNodeFilter(signature=("match-all",))


def _freeze(value: Any) -> Hashable:
    """A hashable, order-insensitive image of a JSON value (lists compare as sets)."""
    t = type(value)
    if t is str or t is int or value is None or t is bool or t is float:
        return value  # type: ignore[no-any-return]
    if t is dict or isinstance(value, Mapping):
        return frozenset([(k, _freeze(v)) for k, v in value.items()])
    if t is list or t is tuple:
        return frozenset([_freeze(v) for v in value])
    if isinstance(value, Hashable):
        return value
    return repr(value)


def _required_terms(affinity: Mapping[str, Any] | None) -> list[Any] | None:
    """The required node-affinity terms, or None when the pod has no required node affinity."""
    if not affinity:
        return None
    node_affinity = affinity.get("nodeAffinity")
    if not isinstance(node_affinity, Mapping):
        return None
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not isinstance(required, Mapping):
        return None
    terms = required.get("nodeSelectorTerms") or []
    return list(terms) if isinstance(terms, list | tuple) else []


def make_topology_node_filter(
    pod: SchedulingPod, taint_policy: str, affinity_policy: str
) -> TopologyNodeFilter:
    """The node filter of a spread constraint declared by ``pod``."""
    node_selector = dict(pod.node_selector or {})
    tolerations = tuple(pod.tolerations)
    terms = _required_terms(pod.affinity)
    try:
        base = Requirements.from_labels(node_selector)
    except ValueError:
        base = None
    reqs: list[Requirements | None] = []
    signatures: list[Hashable] = []
    if terms is None:
        reqs.append(base)
        signatures.append(_freeze(node_selector) if base is not None else _INVALID_TERM)
    else:
        for term in terms:
            term_reqs: Requirements | None = None
            if base is not None and isinstance(term, Mapping):
                try:
                    term_reqs = base.copy()
                    term_reqs.add(
                        *Requirements.from_node_selector_requirements(
                            term.get("matchExpressions") or []
                        ).values()
                    )
                except (ValueError, TypeError, AttributeError):
                    term_reqs = None
            reqs.append(term_reqs)
            signatures.append(
                frozenset(term_reqs.values()) if term_reqs is not None else _INVALID_TERM
            )
    signature = (
        frozenset(signatures),
        taint_policy,
        affinity_policy,
        _freeze([_freeze_toleration(t) for t in tolerations]),
    )
    return TopologyNodeFilter(
        requirements=tuple(reqs),
        taint_policy=taint_policy,
        affinity_policy=affinity_policy,
        tolerations=tolerations,
        signature=signature,
    )


def _freeze_toleration(t: Toleration) -> Hashable:
    try:
        hash(t)
    except TypeError:
        return repr(t)
    return t
