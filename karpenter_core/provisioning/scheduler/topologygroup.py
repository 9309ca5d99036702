"""One topology group: counts of selected pods per domain of one key (upstream ``topologygroup.go``).

A group is ``SELECT COUNT(*) FROM pods WHERE selector GROUP BY node.labels[key]`` kept up to
date while the scheduler places pods, plus the rule that turns the counts into allowed
domains for the next pod: spread (max skew), pod affinity (go where selected pods are) or pod
anti-affinity (go where none are). Pods that declare the same constraint share one group; the
group records them as owners.

Determinism: where upstream picks "any" domain (spread ties, affinity bootstrap) we pick the
lexicographically smallest, so a run is reproducible.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Iterable
from collections.abc import Set as AbstractSet
from typing import Any

from karpenter_core.apis.labels import LABEL_HOSTNAME
from karpenter_core.apis.labelselector import LabelSelector
from karpenter_core.apis.taints import Taint
from karpenter_core.provisioning.scheduler.preferences import SchedulingPod, pod_id
from karpenter_core.provisioning.scheduler.topologydomaingroup import TopologyDomainGroup
from karpenter_core.provisioning.scheduler.topologynodefilter import MATCH_ALL, TopologyNodeFilter
from karpenter_core.scheduling.requirements import (
    DOES_NOT_EXIST,
    IN,
    Requirement,
    Requirements,
)
from karpenter_core.scheduling.spread import MAX_INT32, global_minimum, skew_limit

__all__ = ["MAX_INT32", "TopologyGroup", "TopologyType", "group_signature"]


class TopologyType(enum.Enum):
    """The three kinds of group; the value is the phrase used in error messages."""

    SPREAD = "topology spread"
    POD_AFFINITY = "pod affinity"
    POD_ANTI_AFFINITY = "pod anti-affinity"

    def __str__(self) -> str:
        return self.value


# --- the group ----------------------------------------------------------------------------------


def group_signature(
    topology_type: TopologyType,
    key: str,
    namespaces: frozenset[str],
    selector: LabelSelector,
    max_skew: int,
    min_domains: int | None,
    node_filter: TopologyNodeFilter,
) -> Hashable:
    """The structural identity of a group: pods declaring equal constraints share one group.

    Unlike upstream's hash this includes ``minDomains``, so two spreads that differ only in
    minDomains do not silently share the first one's value.
    """
    return (
        key,
        topology_type,
        namespaces,
        max_skew,
        min_domains,
        node_filter.signature,
        selector.signature,
    )


class TopologyGroup:
    """Pod counts per domain for one (key, type, namespaces, selector, skew, filter)."""

    __slots__ = (
        "_selects_cache",
        "domains",
        "empty_domains",
        "key",
        "max_skew",
        "min_domains",
        "namespaces",
        "node_filter",
        "owners",
        "selector",
        "signature",
        "type",
    )

    def __init__(
        self,
        topology_type: TopologyType,
        key: str,
        pod: SchedulingPod,
        namespaces: Iterable[str],
        selector: LabelSelector,
        max_skew: int,
        min_domains: int | None,
        node_filter: TopologyNodeFilter | None,
        domain_group: TopologyDomainGroup | None,
    ) -> None:
        self.type = topology_type
        self.key = key
        self.namespaces = frozenset(namespaces)
        self.selector = selector
        self.max_skew = max_skew
        self.min_domains = min_domains
        self.node_filter = node_filter if node_filter is not None else MATCH_ALL
        self.owners: set[str] = set()
        self.domains: dict[str, int] = {}
        self.empty_domains: set[str] = set()
        self._selects_cache: dict[str, bool] = {}
        if domain_group is not None:
            for domain in domain_group.domains(pod.tolerations, self.node_filter.taint_policy):
                self.domains[domain] = 0
                self.empty_domains.add(domain)
        self.signature = group_signature(
            topology_type,
            key,
            self.namespaces,
            selector,
            max_skew,
            min_domains,
            self.node_filter,
        )

    def __repr__(self) -> str:
        return f"TopologyGroup({self.type}, key={self.key}, counts={self.counts_string()})"

    # --- ownership ------------------------------------------------------------------------------
    def add_owner(self, uid: str) -> None:
        self.owners.add(uid)

    def remove_owner(self, uid: str) -> None:
        self.owners.discard(uid)

    def is_owned_by(self, uid: str) -> bool:
        return uid in self.owners

    # --- counting -------------------------------------------------------------------------------
    def selects(self, pod: SchedulingPod) -> bool:
        """Whether ``pod`` is one of the pods this group counts (namespace and selector)."""
        pid = pod_id(pod)
        hit = self._selects_cache.get(pid)
        if hit is None:
            hit = pod.namespace in self.namespaces and self.selector.matches(pod.labels or {})
            self._selects_cache[pid] = hit
        return hit

    def counts(
        self,
        pod: SchedulingPod,
        taints: Iterable[Taint],
        requirements: Requirements,
        allow_undefined: Any = None,
    ) -> bool:
        """Whether ``pod`` would be counted here if it landed on a node with ``requirements``."""
        return self.selects(pod) and self.node_filter.matches(
            tuple(taints), requirements, allow_undefined
        )

    def record(self, *domains: str) -> None:
        for domain in domains:
            self.domains[domain] = self.domains.get(domain, 0) + 1
            self.empty_domains.discard(domain)

    def register(self, *domains: str) -> None:
        """Make the group aware of domains (count 0 when new)."""
        for domain in domains:
            if domain not in self.domains:
                self.domains[domain] = 0
                self.empty_domains.add(domain)

    def register_all(self, domains: AbstractSet[str]) -> None:
        """:meth:`register` for a set of domains, touching only the new ones."""
        if self.domains.keys() >= domains:
            return
        new = domains - self.domains.keys()
        if new:
            self.domains.update(dict.fromkeys(new, 0))
            self.empty_domains.update(new)

    def unregister(self, *domains: str) -> None:
        for domain in domains:
            self.domains.pop(domain, None)
            self.empty_domains.discard(domain)

    def counts_string(self, max_items: int = 25) -> str:
        """``d1: n1, d2: n2`` sorted by domain, at most ``max_items`` then ``and N other(s)``."""
        keys = sorted(self.domains)
        shown = keys[:max_items]
        text = ", ".join(f"{k}: {self.domains[k]}" for k in shown)
        if len(shown) < len(keys):
            text += f" and {len(keys) - len(shown)} other(s)"
        return text

    # --- the rules ------------------------------------------------------------------------------
    def get(
        self, pod: SchedulingPod, pod_domains: Requirement, node_domains: Requirement
    ) -> tuple[Requirement, set[str]]:
        """The domains ``pod`` may use next, as a requirement, plus (for spreads) every domain
        within max skew. ``DoesNotExist`` means none."""
        if self.type is TopologyType.SPREAD:
            return self._next_domain_spread(pod, pod_domains, node_domains)
        if self.type is TopologyType.POD_AFFINITY:
            req = self._next_domain_affinity(pod, pod_domains, node_domains)
        else:
            req = self._next_domain_anti_affinity(pod_domains, node_domains)
        return req, set() if req.complement else set(req.values)

    def _in(self, domains: Iterable[str]) -> Requirement:
        values = list(domains)
        if not values:
            return Requirement.new(self.key, DOES_NOT_EXIST)
        return Requirement.new(self.key, IN, values)

    def domain_min_count(self, pod_domains: Requirement) -> int:
        """The global minimum the skew is measured against, over the domains the pod can use
        (always 0 for hostname: a new node can always be made)."""
        if self.key == LABEL_HOSTNAME:
            return 0
        return global_minimum(
            (count for domain, count in self.domains.items() if pod_domains.has(domain)),
            self.min_domains,
        )

    def _next_domain_spread(
        self, pod: SchedulingPod, pod_domains: Requirement, node_domains: Requirement
    ) -> tuple[Requirement, set[str]]:
        limit = skew_limit(self.domain_min_count(pod_domains), self.max_skew, self.selects(pod))
        domains = self.domains
        if self.key == LABEL_HOSTNAME and len(node_domains.values) == 1:
            # A new NodeClaim's hostname is not registered until it is added: count 0.
            (host,) = node_domains.values
            if domains.get(host, 0) <= limit:
                return self._in((host,)), {host}
            return self._in(()), set()
        valid: set[str] = set()
        best: tuple[int, str] | None = None
        if node_domains.operator() == IN:
            candidates: Iterable[str] = (d for d in node_domains.values if d in domains)
        else:
            candidates = (d for d in domains if node_domains.has(d))
        for domain in candidates:
            count = domains[domain]
            if count <= limit:
                valid.add(domain)
                if best is None or (count, domain) < best:
                    best = (count, domain)
        if best is None:
            return self._in(()), valid
        return self._in((best[1],)), valid

    def _any_compatible_pod_domain(self, pod_domains: Requirement) -> bool:
        return any(count > 0 and pod_domains.has(d) for d, count in self.domains.items())

    def _may_bootstrap(self, pod: SchedulingPod, pod_domains: Requirement) -> bool:
        """A self-selecting pod may start the group when no selected pod is anywhere yet, or
        none is in a domain the pod could use."""
        return self.selects(pod) and (
            len(self.domains) == len(self.empty_domains)
            or not self._any_compatible_pod_domain(pod_domains)
        )

    def _next_domain_affinity(
        self, pod: SchedulingPod, pod_domains: Requirement, node_domains: Requirement
    ) -> Requirement:
        domains = self.domains
        if self.key == LABEL_HOSTNAME and len(node_domains.values) == 1:
            (host,) = node_domains.values
            if not pod_domains.has(host):
                return self._in(())
            if domains.get(host, 0) > 0 or self._may_bootstrap(pod, pod_domains):
                return self._in((host,))
            return self._in(())
        options: set[str] = set()
        if node_domains.operator() == IN:
            for domain in node_domains.values:
                if domains.get(domain, 0) > 0 and pod_domains.has(domain):
                    options.add(domain)
        else:
            for domain, count in domains.items():
                if count > 0 and pod_domains.has(domain) and node_domains.has(domain):
                    options.add(domain)
        if options:
            return self._in(options)
        if self._may_bootstrap(pod, pod_domains):
            # Prefer a domain the node can already offer (an in-flight NodeClaim's zone), and
            # also allow one the pod could use anywhere.
            both = pod_domains.intersection(node_domains)
            first = min((d for d in domains if both.has(d)), default=None)
            if first is not None:
                options.add(first)
            first = min((d for d in domains if pod_domains.has(d)), default=None)
            if first is not None:
                options.add(first)
        return self._in(options)

    def _next_domain_anti_affinity(
        self, pod_domains: Requirement, node_domains: Requirement
    ) -> Requirement:
        if self.key == LABEL_HOSTNAME and len(node_domains.values) == 1:
            (host,) = node_domains.values
            return self._in((host,) if self.domains.get(host, 0) == 0 else ())
        empty = self.empty_domains
        if node_domains.operator() == IN and len(node_domains.values) < len(empty):
            options = [d for d in node_domains.values if d in empty and pod_domains.has(d)]
        else:
            options = [d for d in empty if node_domains.has(d) and pod_domains.has(d)]
        return self._in(options)
