"""Topology: spread, pod affinity and anti-affinity for one scheduling run (upstream ``topology.go``).

The scheduler asks two things of it, for every pod and every candidate node:

* :meth:`Topology.add_requirements` narrows the candidate's requirements to the domains the
  pod may use (or returns a :class:`TopologyError` value saying why none is left);
* :meth:`Topology.record` counts the pod once it is placed.

Groups are created when a pod is first seen (:meth:`Topology.update`, also called again
after each relaxation so dropped preferences stop constraining the pod) and shared by every
pod declaring the same constraint. Each new group counts the cluster's existing pods once.

Anti-affinity works both ways: a running pod with required anti-affinity to ``app=db`` keeps
new ``app=db`` pods out of its domain even though the new pods say nothing. Those *inverse*
groups are owned by the pods that declare the term and apply to the pods they select.

Call sequence (as upstream's scheduler)::

    topology = Topology(snapshot, state_nodes, nodepools, instance_types, pods,
                        preference_policy="Respect")
    topology.register(LABEL_HOSTNAME, hostname)           # every existing / new node
    reqs = topology.add_requirements(pod, taints, strict_pod_reqs, node_reqs)
    if isinstance(reqs, TopologyError): ...               # try the next node
    topology.record(pod, taints, final_node_reqs)         # once the pod is placed
    preferences.relax(view); topology.update(view)        # after a failed attempt

``pod`` may be a :class:`~karpenter_core.apis.objects.Pod` or a
:class:`~karpenter_core.provisioning.scheduler.preferences.PodSchedulingView` (the relaxed
copy); ownership is keyed by UID (``namespace/name`` when a pod has none).

Cluster-level default spreads (``--scheduler-config``, spec §10.7) are applied before the
Topology is built: ``parse_scheduler_config(raw)`` validates the document and
``DefaultTopologySpreadInjector(defaults, services, controllers).inject(pods)`` returns the
pods with the defaults stamped on (each with its deduced selector).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from itertools import chain
from operator import attrgetter
from typing import Any

import attrs
import yaml
from attrs import define

from karpenter_core.apis.labels import LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE
from karpenter_core.apis.names import label_key_problem
from karpenter_core.apis.taints import Taint
from karpenter_core.apis.v1 import NodePool
from karpenter_core.provisioning.scheduler.preferences import (
    DO_NOT_SCHEDULE,
    PREFERENCE_POLICIES,
    PREFERENCE_POLICY_IGNORE,
    PREFERENCE_POLICY_RESPECT,
    SchedulingPod,
    pod_id,
)
from karpenter_core.provisioning.scheduler.topologydomaingroup import TopologyDomainGroup
from karpenter_core.provisioning.scheduler.topologygroup import (
    MAX_INT32,
    TopologyGroup,
    TopologyType,
    group_signature,
)
from karpenter_core.provisioning.scheduler.topologynodefilter import (
    MATCH_ALL,
    TopologyNodeFilter,
    make_topology_node_filter,
)
from karpenter_core.scheduling.podaffinity import (
    NAMESPACE_NAME_LABEL,
    POD_AFFINITY,
    POD_ANTI_AFFINITY,
    PREFERRED,
    REQUIRED,
    AffinityTerm,
    preferred_terms,
    required_terms,
    section,
)
from karpenter_core.scheduling.requirements import (
    EXISTS,
    IN,
    Requirement,
    Requirements,
)
from karpenter_core.scheduling.spread import SpreadConstraint
from karpenter_core.state.snapshot import pod_facts_for

__all__ = [
    "NAMESPACE_NAME_LABEL",
    "DefaultTopologySpreadInjector",
    "SchedulerConfigError",
    "Topology",
    "TopologyBase",
    "TopologyError",
    "build_domain_groups",
    "ignored_for_topology",
    "parse_scheduler_config",
]


@define(frozen=True, slots=True, eq=False)
class TopologyError:
    """No domain of ``group`` is allowed for the pod on this node. The message is built only
    when asked for (most failures are retried elsewhere and never shown)."""

    group: TopologyGroup
    pod_domains: Requirement
    node_domains: Requirement

    def __str__(self) -> str:
        return (
            f"unsatisfiable topology constraint for {self.group.type}, key={self.group.key} "
            f"(counts = {self.group.counts_string(25)}, podDomains = {self.pod_domains}, "
            f"nodeDomains = {self.node_domains}"
        )


def ignored_for_topology(pod: Any) -> bool:
    """Pods that are not running somewhere do not count: unbound, finished or terminating."""
    return (
        not pod.node_name
        or pod.phase in ("Succeeded", "Failed")
        or pod.deletion_timestamp is not None
    )


_namespace = attrgetter("namespace")
_affinity = attrgetter("affinity")
_node_name = attrgetter("node_name")


def _with_affinity(pods: Iterable[Any]) -> Iterable[Any]:
    """The pods with any affinity at all, in order: the only ones that can hold a required
    anti-affinity. Filtered in C, since a snapshot may hold 150,000 pods and a handful have
    one (the rest are never touched by Python code)."""
    return filter(_affinity, pods)


def _namespaces_and_anti_affinity(
    snapshot: Any, cluster_pods: Sequence[Any]
) -> tuple[Iterable[str], Iterable[Any]]:
    """The distinct namespaces of ``cluster_pods`` in first-seen order, and (in order) a
    superset of those holding a required anti-affinity: from what cluster state kept
    (``snapshot.pod_facts``) when it describes these very pods, else found by reading
    every pod (in C)."""
    facts = pod_facts_for(snapshot, cluster_pods)
    if facts is not None:
        return facts.namespaces, facts.anti_affinity
    return dict.fromkeys(map(_namespace, cluster_pods)), _with_affinity(cluster_pods)


def _counted_by_namespace(
    cluster_pods: Iterable[Any], excluded: AbstractSet[str] = frozenset()
) -> dict[str, list[Any]]:
    """The pods that count, by namespace, in order: running somewhere (not
    :func:`ignored_for_topology`) and not among ``excluded`` (pod ids)."""
    counted: dict[str, list[Any]] = {}
    for p in filter(_node_name, cluster_pods):
        if p.phase in ("Succeeded", "Failed") or p.deletion_timestamp is not None:
            continue
        if excluded and pod_id(p) in excluded:
            continue
        bucket = counted.get(p.namespace)
        if bucket is None:
            bucket = counted[p.namespace] = []
        bucket.append(p)
    return counted


def _nodepool_requirements(nodepool: NodePool) -> tuple[Requirements, tuple[Taint, ...]]:
    """A NodePool's template requirements ∩ template labels, and its template taints.

    Raises ValueError naming the NodePool when a requirement cannot be parsed.
    """
    template = nodepool.spec.template
    try:
        reqs = Requirements.from_node_selector_requirements(template.spec.requirements)
        reqs.add(*Requirements.from_labels(template.labels).values())
        taints = tuple(Taint.from_dict(t.to_dict()) for t in template.spec.taints)
    except (ValueError, TypeError, AttributeError) as e:
        raise ValueError(f"nodepool {nodepool.name!r}: {e}") from None
    return reqs, taints


def build_domain_groups(
    nodepools: Sequence[NodePool], instance_types: Mapping[str, Sequence[Any]]
) -> dict[str, TopologyDomainGroup]:
    """The domain universe per topology key (spec §10.1).

    For each NodePool and each of its instance types, every value of every key of (pool
    requirements ∩ pool labels ∩ instance-type requirements) is a domain tagged with the
    pool's taints; so is every ``In`` value of the pool's own requirements and labels.
    Complement requirements contribute the values they exclude [quirk, as upstream].
    Values are visited in sorted order so the result does not depend on hash order.
    """
    by_name = {np.name: np for np in nodepools}
    groups: dict[str, TopologyDomainGroup] = {}

    def insert(key: str, values: Iterable[str], taints: tuple[Taint, ...]) -> None:
        group = groups.get(key)
        if group is None:
            group = groups[key] = TopologyDomainGroup()
        for value in sorted(values):
            group.insert(value, taints)

    for np_name, its in instance_types.items():
        nodepool = by_name.get(np_name)
        if nodepool is None:
            continue
        base, taints = _nodepool_requirements(nodepool)
        for it in its:
            reqs = base.copy()
            reqs.add(*it.requirements.values())
            for key, req in reqs.items():
                insert(key, req.values, taints)
        for key, req in base.items():
            if req.operator() == IN:
                insert(key, req.values, taints)
    return groups


def _namespace_labels_of(namespaces: Any) -> dict[str, Mapping[str, str]]:
    """Namespace name -> labels from a snapshot's namespaces, if it has any: a mapping of
    name to labels, Kubernetes Namespace JSON objects, or objects with name and labels."""
    out: dict[str, Mapping[str, str]] = {}
    if not namespaces:
        return out
    if isinstance(namespaces, Mapping):
        for name, labels in namespaces.items():
            out[str(name)] = dict(labels or {})
        return out
    for ns in namespaces:
        if isinstance(ns, Mapping):
            meta = ns.get("metadata") or {}
            name, labels = meta.get("name"), meta.get("labels")
        else:
            name, labels = getattr(ns, "name", None), getattr(ns, "labels", None)
        if isinstance(name, str) and name:
            out[name] = dict(labels or {})
    return out


def _selecting(
    groups: Mapping[Hashable, TopologyGroup],
    cache: dict[Hashable, tuple[int, list[TopologyGroup]]],
    version: int,
    pod: SchedulingPod,
) -> list[TopologyGroup]:
    """The ``groups`` selecting ``pod``, from ``cache`` while ``version`` (bumped whenever a
    group is added) is unchanged: selection depends only on namespace and labels."""
    labels = pod.labels or {}
    sig = (pod.namespace, frozenset(labels.items()))
    hit = cache.get(sig)
    if hit is not None and hit[0] == version:
        return hit[1]
    ns = pod.namespace
    selected = [tg for tg in groups.values() if ns in tg.namespaces and tg.selector.matches(labels)]
    cache[sig] = (version, selected)
    return selected


class Topology:
    """Topology groups of one scheduling run (see module docstring).

    ``snapshot`` supplies the cluster's pods and nodes (for counting), ``state_nodes`` the
    existing capacity (whose domains every new group learns even if empty), ``nodepools`` and
    ``instance_types`` (keyed by NodePool name) the domain universe, and ``pods`` the batch
    being scheduled (never counted as already running). ``namespace_labels`` maps namespace
    name -> labels for ``namespaceSelector`` (default: the snapshot's ``namespaces``, when it
    has that attribute); other namespaces are known by name only.
    """

    def __init__(
        self,
        snapshot: Any,
        state_nodes: Sequence[Any],
        nodepools: Sequence[NodePool],
        instance_types: Mapping[str, Sequence[Any]],
        pods: Sequence[SchedulingPod],
        *,
        preference_policy: str = PREFERENCE_POLICY_RESPECT,
        namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
        base: TopologyBase | None = None,
        excluded_state_nodes: Iterable[str] = (),
    ) -> None:
        """``base`` (see :class:`TopologyBase`) replaces ``snapshot``, ``state_nodes``,
        ``nodepools``, ``instance_types`` and ``namespace_labels``: the cluster is the
        base's, without the state nodes named in ``excluded_state_nodes``."""
        if preference_policy not in PREFERENCE_POLICIES:
            raise ValueError(
                f"preference policy must be one of Respect, Ignore (got {preference_policy!r})"
            )
        self.preference_policy = preference_policy
        self.topology_groups: dict[Hashable, TopologyGroup] = {}
        self.inverse_topology_groups: dict[Hashable, TopologyGroup] = {}
        self.excluded_pods: set[str] = {pod_id(p) for p in pods}
        self._owned: dict[str, list[TopologyGroup]] = {}
        self._by_key: dict[str, list[TopologyGroup]] = {}
        self._version = 0
        self._selecting: dict[Hashable, tuple[int, list[TopologyGroup]]] = {}
        self._inverse_owned: dict[str, list[TopologyGroup]] = {}
        self._inverse_version = 0
        self._inverse_selecting_cache: dict[Hashable, tuple[int, list[TopologyGroup]]] = {}
        self._base = base
        self._excluded_state_nodes = frozenset(excluded_state_nodes)
        self._node_reqs_cache: dict[str, Requirements]
        self._nodes: dict[str, Any]
        # Existing real nodes (state nodes tracking a Node, not just an in-flight NodeClaim).
        self._state_nodes: list[tuple[Mapping[str, str], tuple[Taint, ...], Any]] = []
        # Pods that count, by namespace (running somewhere, not part of this batch): built
        # from _cluster_pods when a group first counts them (_count_domains)
        self._counted: dict[str, list[Any]] | None = {}
        self._cluster_pods: Sequence[Any] = ()
        if base is not None:
            self.domain_groups = base.domain_groups
            self._node_reqs_cache = base.node_requirements_cache
            self._nodes = base.nodes
            namespaces = dict(base.namespaces)
            for p in pods:
                namespaces.setdefault(p.namespace, {NAMESPACE_NAME_LABEL: p.namespace})
            self._namespaces = namespaces
            self._update_inverse_affinities(base.anti_affinity_pods)
            for p in pods:
                self.update(p)
            return

        self.domain_groups = build_domain_groups(nodepools, instance_types)
        self._node_reqs_cache = {}
        cluster_pods: Sequence[Any] = tuple(getattr(snapshot, "pods", ()) or ())
        self._nodes = {n.name: n for n in getattr(snapshot, "nodes", ()) or ()}
        for sn in state_nodes:
            node = getattr(sn, "node", None)
            if node is None:
                continue
            self._state_nodes.append((sn.labels(), tuple(node.taints), node))
            self._nodes.setdefault(node.name, node)

        seen, holders = _namespaces_and_anti_affinity(snapshot, cluster_pods)
        self._namespaces = _namespaces_of(seen, pods, snapshot, namespace_labels)
        # the pods that count are sorted out when a group first counts them: a solve whose
        # pods have no spread or affinity never walks the cluster's pods for them
        self._counted = None
        self._cluster_pods = cluster_pods
        self._update_inverse_affinities(holders)
        for p in pods:
            self.update(p)

    # --- public API ---------------------------------------------------------------------------

    def update(self, pod: SchedulingPod) -> None:
        """(Re)build the groups ``pod`` owns from its current constraints.

        The pod first gives up ownership of every group, so a relaxed preference stops
        applying; groups already known (same signature) are shared, new ones count the
        cluster's pods once.
        """
        pid = pod_id(pod)
        for previous in self._owned.pop(pid, ()):
            previous.remove_owner(pid)
        anti = section(pod.affinity, POD_ANTI_AFFINITY)
        if anti.get(REQUIRED) or (
            self.preference_policy == PREFERENCE_POLICY_RESPECT and anti.get(PREFERRED)
        ):
            self._update_inverse_anti_affinity(pod, None)
        owned: list[TopologyGroup] = []
        for signature, build in self._new_groups(pod):
            tg = self.topology_groups.get(signature)
            if tg is None:
                tg = build()
                self._count_domains(tg)
                self._add_group(signature, tg)
            if not tg.is_owned_by(pid):
                tg.add_owner(pid)
                owned.append(tg)
        if owned:
            self._owned[pid] = owned

    def add_requirements(
        self,
        pod: SchedulingPod,
        taints: Sequence[Taint],
        pod_requirements: Requirements,
        node_requirements: Requirements,
        allow_undefined: Any = None,
    ) -> Requirements | TopologyError:
        """``node_requirements`` narrowed by every topology that applies to ``pod`` there.

        ``pod_requirements`` should be the pod's *strict* requirements (preferred node
        affinity must not shrink the domains a spread counts). Returns a new Requirements
        (the input is not modified) or a :class:`TopologyError`.
        """
        requirements = node_requirements.copy()
        for tg in self._matching_topologies(pod, taints, node_requirements, allow_undefined):
            key = tg.key
            pod_domains = (
                pod_requirements.get(key)
                if pod_requirements.has(key)
                else Requirement.new(key, EXISTS)
            )
            node_domains = (
                node_requirements.get(key)
                if node_requirements.has(key)
                else Requirement.new(key, EXISTS)
            )
            domains, _ = tg.get(pod, pod_domains, node_domains)
            if domains.size() == 0:
                return TopologyError(tg, pod_domains, node_domains)
            requirements.add(domains)
        return requirements

    def record(
        self,
        pod: SchedulingPod,
        taints: Sequence[Taint],
        requirements: Requirements,
        allow_undefined: Any = None,
    ) -> None:
        """Count ``pod`` as placed on a node with (final) ``requirements``.

        Anti-affinity groups count every domain still possible for the key (a pod whose zone
        is undecided blocks all its candidate zones); spread and affinity groups only count
        once the requirement names exactly one domain.
        """
        taints = tuple(taints)
        for tg in self._groups_selecting(pod):
            if not tg.node_filter.matches(taints, requirements, allow_undefined):
                continue
            domains = requirements.get(tg.key)
            if tg.type is TopologyType.POD_ANTI_AFFINITY:
                tg.record(*domains.values)
            elif domains.size() == 1:
                tg.record(next(iter(domains.values)))
        for tg in self._inverse_owned.get(pod_id(pod), ()):
            tg.record(*requirements.get(tg.key).values)

    def register(self, topology_key: str, domain: str) -> None:
        """Make every group on ``topology_key`` aware of ``domain`` (e.g. a new node's hostname)."""
        for tg in self._by_key.get(topology_key, ()):
            tg.register(domain)

    def register_all(self, topology_key: str, domains: AbstractSet[str]) -> None:
        """:meth:`register` for every one of ``domains`` (the hostnames of existing nodes)."""
        for tg in self._by_key.get(topology_key, ()):
            tg.register_all(domains)

    def unregister(self, topology_key: str, domain: str) -> None:
        """Forget ``domain`` in every group on ``topology_key``."""
        for tg in self._by_key.get(topology_key, ()):
            tg.unregister(domain)

    def get_topology_zone_constraints(
        self, pod: SchedulingPod, pod_requirements: Requirements
    ) -> tuple[set[str] | None, bool]:
        """The zones every zone-keyed group of ``pod`` allows (None: no such group), and
        whether any zone is allowed at all."""
        result: set[str] | None = None
        pid = pod_id(pod)
        for tg in self._owned.get(pid, ()):
            if tg.key != LABEL_TOPOLOGY_ZONE:
                continue
            pod_domains = (
                pod_requirements.get(tg.key)
                if pod_requirements.has(tg.key)
                else Requirement.new(tg.key, EXISTS)
            )
            _, valid = tg.get(pod, pod_domains, Requirement.new(tg.key, EXISTS))
            if not valid:
                return None, False
            result = set(valid) if result is None else result & valid
        return result, True

    def groups_owned_by(self, pod: SchedulingPod) -> list[TopologyGroup]:
        """The groups whose constraint ``pod`` declares (for explanations and tests)."""
        return list(self._owned.get(pod_id(pod), ()))

    # --- internals ----------------------------------------------------------------------------

    def _add_group(self, signature: Hashable, tg: TopologyGroup) -> None:
        self.topology_groups[signature] = tg
        self._by_key.setdefault(tg.key, []).append(tg)
        self._version += 1

    def _groups_selecting(self, pod: SchedulingPod) -> list[TopologyGroup]:
        """Groups that select ``pod``. Selection depends only on namespace and labels, so the
        answer is cached per distinct (namespace, labels) until a new group appears."""
        return _selecting(self.topology_groups, self._selecting, self._version, pod)

    def _matching_topologies(
        self,
        pod: SchedulingPod,
        taints: Sequence[Taint],
        requirements: Requirements,
        allow_undefined: Any,
    ) -> list[TopologyGroup]:
        """Groups ``pod`` owns plus inverse anti-affinity groups that would count it."""
        matching = list(self._owned.get(pod_id(pod), ()))
        if self.inverse_topology_groups:
            for tg in self._inverse_selecting(pod):
                # Inverse groups are anti-affinity groups: their node filter matches all nodes.
                if tg.node_filter is MATCH_ALL or tg.node_filter.matches(
                    tuple(taints), requirements, allow_undefined
                ):
                    matching.append(tg)
        return matching

    def _inverse_selecting(self, pod: SchedulingPod) -> list[TopologyGroup]:
        """Inverse groups that select ``pod``, cached per (namespace, labels)."""
        return _selecting(
            self.inverse_topology_groups,
            self._inverse_selecting_cache,
            self._inverse_version,
            pod,
        )

    def _new_groups(self, pod: SchedulingPod) -> list[tuple[Hashable, Any]]:
        """(signature, builder) for every group ``pod`` declares; builders run only for new
        signatures, so shared constraints cost one signature computation per pod."""
        out: list[tuple[Hashable, Any]] = []
        labels = pod.labels or {}
        for tsc in pod.topology_spread_constraints or ():
            if not isinstance(tsc, Mapping):
                continue
            constraint = SpreadConstraint.from_dict(tsc, labels)
            if self.preference_policy == PREFERENCE_POLICY_IGNORE and not constraint.hard:
                continue
            out.append(self._spread_group(pod, constraint))
        affinity = pod.affinity
        if not affinity:
            return out
        respect = self.preference_policy == PREFERENCE_POLICY_RESPECT
        for kind, topology_type in (
            (POD_AFFINITY, TopologyType.POD_AFFINITY),
            (POD_ANTI_AFFINITY, TopologyType.POD_ANTI_AFFINITY),
        ):
            terms = required_terms(affinity, kind, pod.namespace, labels)
            if respect:
                terms += preferred_terms(affinity, kind, pod.namespace, labels)
            for term in terms:
                out.append(self._affinity_group(pod, topology_type, term))
        return out

    def _spread_group(
        self, pod: SchedulingPod, constraint: SpreadConstraint
    ) -> tuple[Hashable, Any]:
        key = constraint.topology_key
        selector = constraint.selector
        max_skew = constraint.max_skew
        min_domains = constraint.min_domains
        node_filter = make_topology_node_filter(
            pod, constraint.node_taints_policy, constraint.node_affinity_policy
        )
        namespaces = frozenset((pod.namespace,))
        signature = group_signature(
            TopologyType.SPREAD, key, namespaces, selector, max_skew, min_domains, node_filter
        )

        def build() -> TopologyGroup:
            return TopologyGroup(
                TopologyType.SPREAD,
                key,
                pod,
                namespaces,
                selector,
                max_skew,
                min_domains,
                node_filter,
                self.domain_groups.get(key),
            )

        return signature, build

    def _affinity_group(
        self, pod: SchedulingPod, topology_type: TopologyType, term: AffinityTerm
    ) -> tuple[Hashable, Any]:
        """The group of one (anti-)affinity term. Its namespaces are those the term selects
        among the ones this run knows (upstream's ``buildNamespaceList``)."""
        key = term.topology_key
        namespaces = term.namespace_set(self._namespaces)
        selector = term.selector
        signature = group_signature(
            topology_type, key, namespaces, selector, MAX_INT32, None, MATCH_ALL
        )

        def build() -> TopologyGroup:
            return TopologyGroup(
                topology_type,
                key,
                pod,
                namespaces,
                selector,
                MAX_INT32,
                None,
                None,
                self.domain_groups.get(key),
            )

        return signature, build

    def _node_requirements(self, node: Any) -> Requirements:
        reqs = self._node_reqs_cache.get(node.name)
        if reqs is None:
            reqs = self._node_reqs_cache[node.name] = Requirements.from_labels(node.labels)
        return reqs

    def _filter_matches_node(self, node_filter: TopologyNodeFilter, node: Any) -> bool:
        if node_filter is MATCH_ALL or node_filter.matches_every_node():
            return True
        return node_filter.matches(tuple(node.taints), self._node_requirements(node))

    def _count_domains(self, tg: TopologyGroup) -> None:
        """Learn the domains of existing nodes and count the cluster's running pods."""
        if self._base is not None:
            self._base.count_into(
                tg, self._excluded_state_nodes, self.excluded_pods, self._filter_matches_node
            )
            return
        key = tg.key
        for labels, _taints, node in self._state_nodes:
            if not self._filter_matches_node(tg.node_filter, node):
                continue
            domain = labels.get(key)
            if domain is not None:
                tg.register(domain)
        counted = self._counted
        if counted is None:
            counted = self._counted = _counted_by_namespace(self._cluster_pods, self.excluded_pods)
        for ns in tg.namespaces:
            for p in counted.get(ns, ()):
                if not tg.selector.matches(p.labels or {}):
                    continue
                node = self._nodes.get(p.node_name)
                if node is None:
                    continue  # a pod left behind by a deleted node does not run anywhere
                domain = node.labels.get(key)
                if domain is None and key == LABEL_HOSTNAME:
                    # Not labelled yet (kubelet adds it): the node name is the best guess.
                    domain = node.name
                if domain is None:
                    continue
                if not self._filter_matches_node(tg.node_filter, node):
                    continue
                tg.record(domain)

    def _update_inverse_affinities(self, cluster_pods: Iterable[Any]) -> None:
        """Inverse groups for running pods with required anti-affinity."""
        for p in cluster_pods:
            if not p.node_name or p.phase in ("Succeeded", "Failed"):
                continue
            if pod_id(p) in self.excluded_pods:
                continue
            if not section(p.affinity, POD_ANTI_AFFINITY).get(REQUIRED):
                continue
            node = self._nodes.get(p.node_name)
            if node is None:
                continue
            self._update_inverse_anti_affinity(p, node.labels)

    def _update_inverse_anti_affinity(
        self, pod: SchedulingPod, domains: Mapping[str, str] | None
    ) -> None:
        """Inverse groups from ``pod``'s *required* anti-affinity terms (preferences are not
        tracked inversely: relaxing them happens on a different pod)."""
        pid = pod_id(pod)
        terms = required_terms(pod.affinity, POD_ANTI_AFFINITY, pod.namespace, pod.labels or {})
        for term in terms:
            signature, build = self._affinity_group(pod, TopologyType.POD_ANTI_AFFINITY, term)
            tg = self.inverse_topology_groups.get(signature)
            if tg is None:
                tg = self.inverse_topology_groups[signature] = build()
                self._by_key.setdefault(tg.key, []).append(tg)
                self._inverse_version += 1
            if domains is not None and tg.key in domains:
                tg.record(domains[tg.key])
            if not tg.is_owned_by(pid):
                tg.add_owner(pid)
                self._inverse_owned.setdefault(pid, []).append(tg)


def _namespaces_of(
    cluster_namespaces: Iterable[str],
    pods: Iterable[Any],
    snapshot: Any,
    namespace_labels: Mapping[str, Mapping[str, str]] | None,
) -> dict[str, dict[str, str]]:
    """Namespace name -> labels (with ``kubernetes.io/metadata.name``) for every namespace
    the cluster's pods are in (``cluster_namespaces``, first seen first) or a pod of
    ``pods`` is, plus those ``namespace_labels`` (default: the snapshot's) know."""
    seen = dict.fromkeys(chain(cluster_namespaces, map(_namespace, pods)))
    namespaces: dict[str, dict[str, str]] = {ns: {NAMESPACE_NAME_LABEL: ns} for ns in seen}
    if namespace_labels is None:
        namespace_labels = _namespace_labels_of(getattr(snapshot, "namespaces", None))
    for ns, labels in namespace_labels.items():
        namespaces[ns] = {NAMESPACE_NAME_LABEL: ns, **labels}
    return namespaces


@define(slots=True)
class _GroupCounts:
    """One group's counting over the whole base cluster (see :meth:`TopologyBase.count_into`).

    ``present``: domain -> pods counted there, for every domain a state node registers or a
    pod is counted in; ``registered``: domain -> state nodes registering it;
    ``node_domain``: state node name -> the domain it registers; ``pod_domains``: pod id ->
    the domains its pods were counted in (one entry per pod carrying that id)."""

    present: dict[str, int]
    registered: dict[str, int]
    node_domain: dict[str, str]
    pod_domains: dict[str, list[str]]
    zeros: frozenset[str] = frozenset()
    """The domains of ``present`` with no pod."""
    nonzeros: frozenset[str] = frozenset()
    """The domains of ``present`` with pods."""


class TopologyBase:
    """What every :class:`Topology` over one cluster shares, computed once.

    A disruption pass simulates the same cluster many times, each time without a few
    candidate nodes and with their pods (and the pending ones) as the batch. Counting a new
    group walks every node and every pod of its namespaces; here that walk is done once per
    group identity, over the whole cluster, and each solve's :class:`Topology` derives its
    counts by taking out the state nodes it excludes and the pods of its batch (a handful),
    so a solve costs the same on 100 nodes or 5,000. The answers are the ones the plain
    constructor computes (a differential test checks it).

    ``snapshot`` supplies the pods, nodes and namespaces; ``state_nodes`` the existing
    capacity every derived topology starts from; ``nodepools``/``instance_types`` the domain
    universe. Build one per cluster state: it must not outlive a change to the cluster.
    """

    def __init__(
        self,
        snapshot: Any,
        state_nodes: Sequence[Any],
        nodepools: Sequence[NodePool],
        instance_types: Mapping[str, Sequence[Any]],
        *,
        namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self.domain_groups = build_domain_groups(nodepools, instance_types)
        self.node_requirements_cache: dict[str, Requirements] = {}
        cluster_pods: tuple[Any, ...] = tuple(getattr(snapshot, "pods", ()) or ())
        self.nodes: dict[str, Any] = {n.name: n for n in getattr(snapshot, "nodes", ()) or ()}
        self.state_nodes: list[tuple[str, Mapping[str, str], Any]] = []
        for sn in state_nodes:
            node = getattr(sn, "node", None)
            if node is None:
                continue
            self.state_nodes.append((sn.name(), sn.labels(), node))
            self.nodes.setdefault(node.name, node)
        # The cluster's pods (there may be 150,000) are read in C for what every solve
        # needs: the namespaces they are in (first-seen order, as _namespaces_of) and those
        # holding a required anti-affinity (the test _update_inverse_affinities applies).
        # The pods that count by namespace are sorted out when a group first needs them
        # (:attr:`counted`): most passes' solves have no spread or affinity at all.
        seen, holders = _namespaces_and_anti_affinity(snapshot, cluster_pods)
        namespaces = {ns: {NAMESPACE_NAME_LABEL: ns} for ns in seen}
        anti = [
            p
            for p in holders
            if p.node_name
            and p.phase not in ("Succeeded", "Failed")
            and section(p.affinity, POD_ANTI_AFFINITY).get(REQUIRED)
        ]
        if namespace_labels is None:
            namespace_labels = _namespace_labels_of(getattr(snapshot, "namespaces", None))
        for ns, labels in namespace_labels.items():
            namespaces[ns] = {NAMESPACE_NAME_LABEL: ns, **labels}
        self.namespaces = namespaces
        self._cluster_pods = cluster_pods
        self._counted: dict[str, list[Any]] | None = None
        self.anti_affinity_pods: tuple[Any, ...] = tuple(anti)
        self._counts: dict[Hashable, _GroupCounts] = {}

    @property
    def counted(self) -> dict[str, list[Any]]:
        """The pods that count, by namespace, in the cluster's order: running somewhere,
        not finished, not terminating (built on first use, then kept)."""
        found = self._counted
        if found is None:
            found = self._counted = _counted_by_namespace(self._cluster_pods)
        return found

    def topology(
        self,
        pods: Sequence[SchedulingPod],
        excluded_state_nodes: Iterable[str] = (),
        *,
        preference_policy: str = PREFERENCE_POLICY_RESPECT,
    ) -> Topology:
        """The topology of a solve of ``pods`` over this cluster without the state nodes
        named in ``excluded_state_nodes``."""
        return Topology(
            None,
            (),
            (),
            {},
            pods,
            preference_policy=preference_policy,
            base=self,
            excluded_state_nodes=excluded_state_nodes,
        )

    def _group_counts(
        self, tg: TopologyGroup, matches: Callable[[TopologyNodeFilter, Any], bool]
    ) -> _GroupCounts:
        identity = (tg.key, tg.namespaces, tg.selector.signature, tg.node_filter.signature)
        hit = self._counts.get(identity)
        if hit is not None:
            return hit
        key = tg.key
        node_filter = tg.node_filter
        registered: dict[str, int] = {}
        node_domain: dict[str, str] = {}
        for name, labels, node in self.state_nodes:
            if not matches(node_filter, node):
                continue
            domain = labels.get(key)
            if domain is not None:
                node_domain[name] = domain
                registered[domain] = registered.get(domain, 0) + 1
        counted: dict[str, int] = {}
        pod_domains: dict[str, list[str]] = {}
        nodes = self.nodes
        by_namespace = self.counted
        for ns in tg.namespaces:
            for p in by_namespace.get(ns, ()):
                if not tg.selector.matches(p.labels or {}):
                    continue
                node = nodes.get(p.node_name)
                if node is None:
                    continue
                domain = node.labels.get(key)
                if domain is None and key == LABEL_HOSTNAME:
                    domain = node.name
                if domain is None or not matches(node_filter, node):
                    continue
                counted[domain] = counted.get(domain, 0) + 1
                pod_domains.setdefault(pod_id(p), []).append(domain)
        present = dict.fromkeys(registered, 0)
        present.update(counted)
        zeros = frozenset(d for d, n in present.items() if n == 0)
        hit = self._counts[identity] = _GroupCounts(
            present, registered, node_domain, pod_domains, zeros, frozenset(counted)
        )
        return hit

    def count_into(
        self,
        tg: TopologyGroup,
        excluded_state_nodes: AbstractSet[str],
        excluded_pods: AbstractSet[str],
        matches: Callable[[TopologyNodeFilter, Any], bool],
    ) -> None:
        """Give the new group ``tg`` the domains and counts the plain constructor would: the
        whole cluster's, less the excluded state nodes' registrations and the excluded
        pods' counts (a domain nothing registers or counts any more disappears)."""
        counts = self._group_counts(tg, matches)
        present = counts.present
        lost_nodes: dict[str, int] = {}
        for name in excluded_state_nodes:
            domain = counts.node_domain.get(name)
            if domain is not None:
                lost_nodes[domain] = lost_nodes.get(domain, 0) + 1
        lost_pods: dict[str, int] = {}
        pod_domains = counts.pod_domains
        for pid in excluded_pods:
            for domain in pod_domains.get(pid, ()):
                lost_pods[domain] = lost_pods.get(domain, 0) + 1
        zeros: AbstractSet[str] = counts.zeros
        nonzeros: AbstractSet[str] = counts.nonzeros
        if lost_nodes or lost_pods:
            present = dict(present)
            zeros, nonzeros = set(zeros), set(nonzeros)
            registered = counts.registered
            for domain in lost_nodes.keys() | lost_pods.keys():
                left = present[domain] - lost_pods.get(domain, 0)
                zeros.discard(domain)
                nonzeros.discard(domain)
                if left > 0:
                    present[domain] = left
                    nonzeros.add(domain)
                elif registered.get(domain, 0) > lost_nodes.get(domain, 0):
                    present[domain] = 0
                    zeros.add(domain)
                else:
                    del present[domain]
        # Each domain's count is its pods' (the group's own domains start at 0), and the
        # empty domains are those left at 0.
        tg.domains.update(present)
        tg.empty_domains = (tg.empty_domains - nonzeros) | zeros


# --- default topology-spread awareness (upstream defaultconstraints.go) ------------------------------


class SchedulerConfigError(ValueError):
    """A ``--scheduler-config`` document kube-scheduler would not accept."""


_TSC_FIELDS = frozenset(
    {
        "maxSkew",
        "topologyKey",
        "whenUnsatisfiable",
        "labelSelector",
        "minDomains",
        "nodeAffinityPolicy",
        "nodeTaintsPolicy",
        "matchLabelKeys",
    }
)


def _strict_keys(value: Any, allowed: frozenset[str], where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SchedulerConfigError(f"decoding scheduler config, {where} must be a mapping")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise SchedulerConfigError(
            f'decoding scheduler config, {where}: unknown field "{unknown[0]}"'
        )
    return value


def parse_scheduler_config(raw: str | Mapping[str, Any] | None) -> tuple[dict[str, Any], ...]:
    """The validated ``podTopologySpread.defaultConstraints`` of a ``--scheduler-config``
    (``SCHEDULER_CONFIG``) YAML/JSON document; empty input means no defaults.

    Validation mirrors kube-scheduler: unknown fields are rejected, ``maxSkew`` > 0, a
    qualified ``topologyKey``, ``whenUnsatisfiable`` DoNotSchedule|ScheduleAnyway, no
    ``labelSelector`` or ``matchLabelKeys`` (selectors are deduced per pod), and no two
    constraints with the same key and action. Raises :class:`SchedulerConfigError`.
    """
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return ()
    if isinstance(raw, str):
        try:
            doc = yaml.safe_load(raw)
        except yaml.YAMLError as e:
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise SchedulerConfigError(f"decoding scheduler config, {reason}") from None
    else:
        doc = raw
    if doc is None:
        return ()
    top = _strict_keys(doc, frozenset({"podTopologySpread"}), "document")
    spread_cfg = top.get("podTopologySpread")
    if spread_cfg is None:
        return ()
    spread_cfg = _strict_keys(spread_cfg, frozenset({"defaultConstraints"}), "podTopologySpread")
    constraints = spread_cfg.get("defaultConstraints") or []
    if not isinstance(constraints, list):
        raise SchedulerConfigError(
            "decoding scheduler config, podTopologySpread.defaultConstraints must be a list"
        )
    out: list[dict[str, Any]] = []
    for i, tsc in enumerate(constraints):
        where = f"podTopologySpread.defaultConstraints[{i}]"
        tsc = dict(_strict_keys(tsc, _TSC_FIELDS, where))
        prefix = f"validating scheduler config, {where}"
        skew = tsc.get("maxSkew")
        if not isinstance(skew, int) or isinstance(skew, bool) or skew <= 0:
            raise SchedulerConfigError(f"{prefix}.maxSkew must be greater than 0")
        key = tsc.get("topologyKey")
        if not key:
            raise SchedulerConfigError(f"{prefix}.topologyKey must be set")
        if label_key_problem(key) is not None:
            raise SchedulerConfigError(f"{prefix}.topologyKey {key!r} is not a valid label name")
        when = tsc.get("whenUnsatisfiable")
        if when not in (DO_NOT_SCHEDULE, "ScheduleAnyway"):
            raise SchedulerConfigError(
                f'{prefix}.whenUnsatisfiable {when!r} must be one of "DoNotSchedule" or '
                '"ScheduleAnyway"'
            )
        if tsc.get("labelSelector") is not None:
            raise SchedulerConfigError(
                f"{prefix}.labelSelector must not be set, as selectors are deduced for each pod"
            )
        if tsc.get("matchLabelKeys"):
            raise SchedulerConfigError(
                f"{prefix}.matchLabelKeys must not be set, as it has no effect on default "
                "constraints"
            )
        for j, earlier in enumerate(out):
            if earlier["topologyKey"] == key and earlier["whenUnsatisfiable"] == when:
                raise SchedulerConfigError(
                    f"validating scheduler config, {where} is a duplicate of [{j}], "
                    f"{{{key}, {when}}}"
                )
        out.append(tsc)
    return tuple(out)


_OWNER_KINDS = {
    ("v1", "ReplicationController"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "StatefulSet"),
}


class DefaultTopologySpreadInjector:
    """Stamps the cluster's default spread constraints onto pods that declare none.

    As kube-scheduler does, each pod gets the defaults with a *deduced* selector: the merged
    selectors of the Services in its namespace that select it (later Services overwrite
    earlier ones on a shared key), then its controller's contribution: a
    ReplicationController's selector overwrites those labels; a ReplicaSet's or
    StatefulSet's selector is appended as expressions (its matchLabels become ``In``). A pod
    with nothing deducible keeps no constraints (an empty selector would count every pod in
    the namespace). ``services`` and ``controllers`` are the Kubernetes JSON objects
    (Services; ReplicationControllers, ReplicaSets, StatefulSets). A controller that is not
    found contributes nothing, as upstream tolerates lookup failures. Results are cached per
    (namespace, controller UID, labels).
    """

    def __init__(
        self,
        defaults: Sequence[Mapping[str, Any]],
        services: Iterable[Mapping[str, Any]] = (),
        controllers: Iterable[Mapping[str, Any]] = (),
    ) -> None:
        self.defaults = tuple(dict(d) for d in defaults)
        self._services: dict[str, list[Mapping[str, str] | None]] = {}
        for svc in services:
            meta = svc.get("metadata") or {}
            selector = (svc.get("spec") or {}).get("selector")
            self._services.setdefault(meta.get("namespace") or "default", []).append(
                selector if isinstance(selector, Mapping) else None
            )
        self._controllers: dict[tuple[str, str, str, str], Mapping[str, Any]] = {}
        for c in controllers:
            meta = c.get("metadata") or {}
            key = (
                str(c.get("apiVersion") or ""),
                str(c.get("kind") or ""),
                str(meta.get("namespace") or "default"),
                str(meta.get("name") or ""),
            )
            self._controllers[key] = c
        self._cache: dict[Hashable, dict[str, Any] | None] = {}

    def inject(self, pods: Sequence[Any]) -> list[Any]:
        """``pods`` with the defaults applied where they apply (new Pod values; the inputs and
        their raw dicts are untouched, so nothing is written back)."""
        if not self.defaults:
            return list(pods)
        out: list[Any] = []
        for p in pods:
            if p.topology_spread_constraints:
                out.append(p)
                continue
            selector = self.default_selector(p)
            if selector is None:
                out.append(p)
                continue
            stamped = tuple({**d, "labelSelector": selector} for d in self.defaults)
            out.append(attrs.evolve(p, topology_spread_constraints=stamped))
        return out

    def default_selector(self, pod: Any) -> dict[str, Any] | None:
        """The selector kube-scheduler would deduce for ``pod``, or None."""
        owner = _controller_of(pod)
        labels = pod.labels or {}
        cache_key = (
            pod.namespace,
            owner.uid if owner is not None else "",
            frozenset(labels.items()),
        )
        if cache_key in self._cache:
            return self._cache[cache_key]
        match_labels: dict[str, str] = {}
        for selector in self._services.get(pod.namespace, ()):
            if selector is None:
                continue  # a nil selector selects nothing
            if all(labels.get(k) == v for k, v in selector.items()):
                match_labels.update(selector)
        match_expressions: list[dict[str, Any]] = []
        if owner is not None:
            controller = self._controllers.get(
                (owner.api_version, owner.kind, pod.namespace, owner.name)
            )
            if controller is not None and (owner.api_version, owner.kind) in _OWNER_KINDS:
                sel = (controller.get("spec") or {}).get("selector")
                if owner.kind == "ReplicationController":
                    if isinstance(sel, Mapping):
                        match_labels.update(sel)
                elif isinstance(sel, Mapping):
                    for k, v in (sel.get("matchLabels") or {}).items():
                        match_expressions.append({"key": k, "operator": "In", "values": [v]})
                    match_expressions.extend(dict(e) for e in sel.get("matchExpressions") or ())
        result: dict[str, Any] | None = None
        if match_labels or match_expressions:
            result = {}
            if match_labels:
                result["matchLabels"] = match_labels
            if match_expressions:
                result["matchExpressions"] = match_expressions
        self._cache[cache_key] = result
        return result


def _controller_of(pod: Any) -> Any:
    for ref in getattr(pod, "owner_references", ()) or ():
        if ref.controller:
            return ref
    return None
