"""Pod affinity and anti-affinity terms: the one implementation of the Kubernetes rules.

Both schedulers read terms through :class:`AffinityTerm`: the provisioning scheduler
(:mod:`karpenter_core.provisioning.scheduler.topology`, one topology group per term, as
upstream Karpenter) and the simulated kube-scheduler (:mod:`karpenter_core.sim.kubescheduler`,
kube-scheduler's InterPodAffinity filter, the ``*_counts`` and ``satisfies_*`` functions
below).

What a term is (``k8s.io/api`` ``PodAffinityTerm`` and kube-scheduler's ``AffinityTerm``):

* it selects pods whose labels match ``labelSelector`` (None selects nothing) and whose
  namespace is one of ``namespaces`` or carries labels that ``namespaceSelector`` selects
  (``{}`` selects every namespace); with neither, the namespace of the pod that declares the
  term;
* ``matchLabelKeys`` / ``mismatchLabelKeys`` add ``key in (value)`` / ``key notin (value)``
  requirements with the declaring pod's label values (only when ``labelSelector`` is set).
  The API server merges them into ``labelSelector`` when it admits the pod (Kubernetes 1.33+,
  which is what kube-scheduler 1.34 and upstream Karpenter then read); manifests and the
  in-memory server have not been through that, so :meth:`AffinityTerm.from_dict` merges them.
  Merging twice adds the same requirement twice, which changes nothing;
* it is satisfied per topology domain: the value of ``topologyKey`` on the node.

Where the schedulers deliberately differ, each keeps its upstream's rule:

* kube-scheduler counts, for required affinity, the pods that match *all* the pod's affinity
  terms (``podMatchesAllAffinityTerms``) and lets the first pod of a self-selecting group go
  anywhere only while no such pod runs on a node with the keys; upstream Karpenter makes one
  group per term and counts each independently (``topologygroup.go``);
* kube-scheduler resolves ``namespaceSelector`` against the Namespace objects it watches
  (``{}`` matching even unknown ones); Karpenter lists the namespaces it knows
  (:meth:`AffinityTerm.namespace_set`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Mapping
from typing import Any, Final

from attrs import field, frozen

from karpenter_core.apis.labelselector import (
    IN,
    NOT_IN,
    NOTHING,
    LabelSelector,
    SelectorError,
    requirement,
)

__all__ = [
    "NAMESPACE_NAME_LABEL",
    "POD_AFFINITY",
    "POD_ANTI_AFFINITY",
    "PREFERRED",
    "REQUIRED",
    "AffinityTerm",
    "TopologyPair",
    "affinity_counts",
    "anti_affinity_counts",
    "existing_anti_affinity_counts",
    "matches_all",
    "namespace_labels",
    "preferred_terms",
    "required_terms",
    "satisfies_existing_anti_affinity",
    "satisfies_pod_affinity",
    "satisfies_pod_anti_affinity",
    "section",
]

REQUIRED: Final = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED: Final = "preferredDuringSchedulingIgnoredDuringExecution"
POD_AFFINITY: Final = "podAffinity"
POD_ANTI_AFFINITY: Final = "podAntiAffinity"

NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"
"""Every namespace carries this label (the API server sets it), so a ``namespaceSelector``
can match a namespace known only by name."""

TopologyPair = tuple[str, str]
"""A topology domain: (topology key, the node's value for it)."""


def namespace_labels(name: str, known: Mapping[str, Mapping[str, str]]) -> Mapping[str, str]:
    """The labels of namespace ``name``: from ``known`` (name -> labels), else just the
    ``kubernetes.io/metadata.name`` label the API server gives every namespace."""
    labels = known.get(name)
    if labels is None:
        return {NAMESPACE_NAME_LABEL: name}
    if NAMESPACE_NAME_LABEL not in labels:
        return {NAMESPACE_NAME_LABEL: name, **labels}
    return labels


def section(affinity: Mapping[str, Any] | None, kind: str) -> Mapping[str, Any]:
    """``affinity[kind]`` (``podAffinity``/``podAntiAffinity``) as a mapping, ``{}`` if unset."""
    if not affinity:
        return {}
    value = affinity.get(kind)
    return value if isinstance(value, Mapping) else {}


def _label_keys(owner_labels: Mapping[str, str], keys: Any, operator: str) -> list[Any]:
    if not isinstance(keys, list | tuple):
        return []
    out = []
    for key in keys:
        if isinstance(key, str) and key in owner_labels:
            try:
                out.append(requirement(key, operator, (owner_labels[key],)))
            except SelectorError:
                continue  # an invalid label value cannot be selected on
    return out


@frozen
class AffinityTerm:
    """One pod (anti-)affinity term, parsed (see the module docstring).

    ``namespaces`` holds the listed namespaces, or the declaring pod's own when the term
    lists none and has no ``namespaceSelector``; ``namespace_selector`` is
    :data:`~karpenter_core.apis.labelselector.NOTHING` without one. ``weight`` is the
    preferred term's weight (0 for required terms).
    """

    topology_key: str
    selector: LabelSelector
    namespaces: frozenset[str]
    namespace_selector: LabelSelector = NOTHING
    weight: int = 0
    signature: Hashable = field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(
            self,
            "signature",
            (
                self.topology_key,
                self.selector.signature,
                self.namespaces,
                self.namespace_selector.signature,
            ),
        )

    @classmethod
    def from_dict(
        cls,
        term: Mapping[str, Any],
        owner_namespace: str,
        owner_labels: Mapping[str, str],
        weight: int = 0,
    ) -> AffinityTerm:
        """A ``PodAffinityTerm`` declared by a pod in ``owner_namespace`` with
        ``owner_labels``. A selector that does not parse selects nothing."""
        raw_selector = term.get("labelSelector")
        selector = LabelSelector.compile(raw_selector)
        if raw_selector is not None:
            extra = _label_keys(owner_labels, term.get("matchLabelKeys"), IN)
            extra += _label_keys(owner_labels, term.get("mismatchLabelKeys"), NOT_IN)
            if extra:
                selector = selector.with_requirements(*extra)
        raw_namespaces = term.get("namespaces")
        if isinstance(raw_namespaces, str):
            raw_namespaces = [raw_namespaces]
        elif not isinstance(raw_namespaces, list | tuple):
            raw_namespaces = ()
        listed = frozenset(n for n in raw_namespaces if isinstance(n, str))
        raw_ns_selector = term.get("namespaceSelector")
        if not listed and raw_ns_selector is None:
            listed = frozenset((owner_namespace,))
        return cls(
            topology_key=str(term.get("topologyKey") or ""),
            selector=selector,
            namespaces=listed,
            namespace_selector=LabelSelector.compile(raw_ns_selector),
            weight=weight,
        )

    def applies_to(self, namespace: str, labels_of_namespace: Mapping[str, str] | None) -> bool:
        """Whether the term selects pods in ``namespace`` (whose labels are given)."""
        return namespace in self.namespaces or self.namespace_selector.matches(labels_of_namespace)

    def matches(
        self,
        namespace: str,
        labels: Mapping[str, str] | None,
        labels_of_namespace: Mapping[str, str] | None,
    ) -> bool:
        """Whether the term selects a pod in ``namespace`` with ``labels``."""
        return self.applies_to(namespace, labels_of_namespace) and self.selector.matches(labels)

    def namespace_set(self, known: Mapping[str, Mapping[str, str]]) -> frozenset[str]:
        """The namespaces the term selects among ``known`` (name -> labels), plus the listed
        ones: upstream Karpenter's ``buildNamespaceList``."""
        if self.namespace_selector.nothing:
            return self.namespaces
        selector = self.namespace_selector
        picked = {ns for ns in known if selector.matches(namespace_labels(ns, known))}
        return frozenset(picked | self.namespaces)


def required_terms(
    affinity: Mapping[str, Any] | None,
    kind: str,
    owner_namespace: str,
    owner_labels: Mapping[str, str],
) -> tuple[AffinityTerm, ...]:
    """The required terms of ``affinity[kind]`` (``podAffinity`` or ``podAntiAffinity``)."""
    terms = section(affinity, kind).get(REQUIRED) or ()
    return tuple(
        AffinityTerm.from_dict(t, owner_namespace, owner_labels)
        for t in terms
        if isinstance(t, Mapping)
    )


def preferred_terms(
    affinity: Mapping[str, Any] | None,
    kind: str,
    owner_namespace: str,
    owner_labels: Mapping[str, str],
) -> tuple[AffinityTerm, ...]:
    """The preferred terms of ``affinity[kind]``, each with its weight."""
    out = []
    for weighted in section(affinity, kind).get(PREFERRED) or ():
        if not isinstance(weighted, Mapping):
            continue
        term = weighted.get("podAffinityTerm")
        if not isinstance(term, Mapping):
            continue
        weight = weighted.get("weight")
        out.append(
            AffinityTerm.from_dict(
                term,
                owner_namespace,
                owner_labels,
                weight if isinstance(weight, int) and not isinstance(weight, bool) else 0,
            )
        )
    return tuple(out)


# --- kube-scheduler's InterPodAffinity filter ------------------------------------------------
#
# A placed pod is (namespace, labels, labels of its namespace, labels of its node). The
# counts are what the plugin's PreFilter computes once per pod; the satisfies_* functions are
# its Filter, per node.

PlacedPod = tuple[str, Mapping[str, str], Mapping[str, str], Mapping[str, str]]


def matches_all(
    terms: Iterable[AffinityTerm],
    namespace: str,
    labels: Mapping[str, str],
    labels_of_namespace: Mapping[str, str] | None,
) -> bool:
    """Whether every one of ``terms`` (at least one) selects the pod."""
    seen = False
    for term in terms:
        seen = True
        if not term.matches(namespace, labels, labels_of_namespace):
            return False
    return seen


def _record(counts: Counter[TopologyPair], node_labels: Mapping[str, str], key: str) -> None:
    value = node_labels.get(key)
    if value is not None:
        counts[(key, value)] += 1


def affinity_counts(
    terms: tuple[AffinityTerm, ...], placed: Iterable[PlacedPod]
) -> Counter[TopologyPair]:
    """Per domain of each term's key, the placed pods that match *all* ``terms``."""
    counts: Counter[TopologyPair] = Counter()
    if not terms:
        return counts
    for namespace, labels, ns_labels, node_labels in placed:
        if matches_all(terms, namespace, labels, ns_labels):
            for term in terms:
                _record(counts, node_labels, term.topology_key)
    return counts


def anti_affinity_counts(
    terms: tuple[AffinityTerm, ...], placed: Iterable[PlacedPod]
) -> Counter[TopologyPair]:
    """Per domain of each term's key, the placed pods that term matches."""
    counts: Counter[TopologyPair] = Counter()
    if not terms:
        return counts
    for namespace, labels, ns_labels, node_labels in placed:
        for term in terms:
            if term.matches(namespace, labels, ns_labels):
                _record(counts, node_labels, term.topology_key)
    return counts


def existing_anti_affinity_counts(
    holders: Iterable[tuple[tuple[AffinityTerm, ...], Mapping[str, str]]],
    namespace: str,
    labels: Mapping[str, str],
    labels_of_namespace: Mapping[str, str] | None,
) -> Counter[TopologyPair]:
    """The domains where placed pods' required anti-affinity terms (with the labels of the
    node each runs on) keep out a pod in ``namespace`` with ``labels``."""
    counts: Counter[TopologyPair] = Counter()
    for terms, node_labels in holders:
        for term in terms:
            if term.matches(namespace, labels, labels_of_namespace):
                _record(counts, node_labels, term.topology_key)
    return counts


def satisfies_pod_affinity(
    terms: tuple[AffinityTerm, ...],
    node_labels: Mapping[str, str],
    counts: Counter[TopologyPair],
    matches_itself: bool,
) -> bool:
    """The pod's required affinity on a node: every term's key is on the node and a pod
    matching the terms runs in each term's domain; or no such pod runs anywhere and the pod
    matches all its own terms (the first pod of a group)."""
    found = True
    for term in terms:
        value = node_labels.get(term.topology_key)
        if value is None:
            return False
        if counts[(term.topology_key, value)] <= 0:
            found = False
    if found:
        return True
    return not any(c > 0 for c in counts.values()) and matches_itself


def satisfies_pod_anti_affinity(
    terms: tuple[AffinityTerm, ...],
    node_labels: Mapping[str, str],
    counts: Counter[TopologyPair],
) -> bool:
    """The pod's required anti-affinity on a node: no pod a term matches runs in the node's
    domain of that term."""
    if not counts:
        return True
    for term in terms:
        value = node_labels.get(term.topology_key)
        if value is not None and counts[(term.topology_key, value)] > 0:
            return False
    return True


def satisfies_existing_anti_affinity(
    node_labels: Mapping[str, str], counts: Counter[TopologyPair]
) -> bool:
    """No placed pod's required anti-affinity keeps the pod out of the node's domains."""
    if not counts:
        return True
    return not any(counts[pair] > 0 for pair in node_labels.items())
