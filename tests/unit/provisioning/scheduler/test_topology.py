"""Topology end to end: spread, pod affinity / anti-affinity, inverse anti-affinity, relaxation.

The scenarios follow upstream ``topology_test.go`` (spec scheduling.md §15). They run through
a deliberately small scheduler (:class:`MiniScheduler`, below) that calls the Topology API
exactly the way the real scheduler does (existing nodes, then in-flight NodeClaims, then a
new NodeClaim per NodePool; relax and retry on failure; re-queue while making progress) but
knows nothing of resources except a pod count per node. That keeps these tests about
topology alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from attrs import define, field

from karpenter_core.apis.labels import (
    CAPACITY_TYPE_LABEL_KEY,
    LABEL_HOSTNAME,
    LABEL_INSTANCE_TYPE,
    LABEL_TOPOLOGY_ZONE,
    WELL_KNOWN_LABELS,
)
from karpenter_core.apis.objects import Node, Pod
from karpenter_core.apis.taints import Taint, tolerates
from karpenter_core.apis.v1 import NodePool
from karpenter_core.cloudprovider.types import InstanceType, Offering
from karpenter_core.provisioning.scheduler.preferences import (
    PodSchedulingView,
    Preferences,
)
from karpenter_core.provisioning.scheduler.topology import Topology, TopologyBase, TopologyError
from karpenter_core.scheduling.requirements import (
    IN,
    Requirement,
    Requirements,
    has_preferred_node_affinity,
    pod_requirements,
    strict_pod_requirements,
)
from karpenter_core.testing import builders as b

ZONE = LABEL_TOPOLOGY_ZONE
HOST = LABEL_HOSTNAME
CT = CAPACITY_TYPE_LABEL_KEY
ZONES = ("z1", "z2", "z3")

# --- fixtures -------------------------------------------------------------------------------------


def instance_type(
    name: str = "default-instance-type",
    zones: Sequence[str] = ZONES,
    capacity_types: Sequence[str] = ("spot", "on-demand"),
) -> InstanceType:
    reqs = Requirements(
        Requirement.new(LABEL_INSTANCE_TYPE, IN, [name]),
        Requirement.new(ZONE, IN, zones),
        Requirement.new(CT, IN, capacity_types),
    )
    offerings = [
        Offering(Requirements(Requirement.new(ZONE, IN, [z]), Requirement.new(CT, IN, [c])), 1.0)
        for z in zones
        for c in capacity_types
    ]
    return InstanceType(name, reqs, offerings)


def nodepool(
    name: str = "default",
    requirements: Sequence[Mapping[str, Any]] = (),
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, Any]] = (),
) -> NodePool:
    template: dict[str, Any] = {
        "spec": {"requirements": list(requirements), "taints": list(taints)}
    }
    if labels:
        template["metadata"] = {"labels": dict(labels)}
    return NodePool.from_dict({"metadata": {"name": name}, "spec": {"template": template}})


def zone_req(*zones: str) -> dict[str, Any]:
    return {"key": ZONE, "operator": "In", "values": list(zones)}


_uid = 0


def pod(
    name: str | None = None,
    labels: Mapping[str, str] | None = None,
    *,
    namespace: str = "default",
    tsc: Sequence[Mapping[str, Any]] = (),
    affinity: Mapping[str, Any] | None = None,
    node_selector: Mapping[str, str] | None = None,
    node_name: str = "",
    phase: str = "Pending",
    deleting: bool = False,
    tolerations: Sequence[Mapping[str, Any]] = (),
) -> Pod:
    """The kit's pod, parsed, with a numbered uid (and a deletionTimestamp when
    ``deleting``)."""
    global _uid
    _uid += 1
    raw = b.pod(
        name or f"pod-{_uid}",
        namespace=namespace,
        labels=labels,
        topology_spread=tsc,
        affinity=affinity,
        node_selector=node_selector,
        node_name=node_name or None,
        phase=phase,
        tolerations=tolerations,
    )
    raw["metadata"]["uid"] = f"uid-{_uid}"
    if deleting:
        raw["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return Pod.from_dict(raw)


def pods(n: int, labels: Mapping[str, str] | None = None, **kw: Any) -> list[Pod]:
    return [pod(labels=labels, **kw) for _ in range(n)]


def node(name: str, labels: Mapping[str, str], taints: Sequence[Mapping[str, Any]] = ()) -> Node:
    return Node.from_dict(
        {
            "metadata": {"name": name, "labels": {HOST: name, **labels}},
            "spec": {"taints": list(taints)},
        }
    )


def spread(
    key: str = ZONE,
    max_skew: int = 1,
    selector: Mapping[str, Any] | None = None,
    when: str = "DoNotSchedule",
    **extra: Any,
) -> dict[str, Any]:
    tsc: dict[str, Any] = {"topologyKey": key, "maxSkew": max_skew, "whenUnsatisfiable": when}
    if selector is not None:
        tsc["labelSelector"] = selector
    tsc.update(extra)
    return tsc


APP = {"app": "web"}
SEL = {"matchLabels": APP}


def affinity_term(labels: Mapping[str, str], key: str = ZONE, **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": dict(labels)}, "topologyKey": key, **extra}


def pod_affinity(*terms: Mapping[str, Any], preferred: bool = False) -> dict[str, Any]:
    return _aff("podAffinity", terms, preferred)


def pod_anti_affinity(*terms: Mapping[str, Any], preferred: bool = False) -> dict[str, Any]:
    return _aff("podAntiAffinity", terms, preferred)


def _aff(kind: str, terms: Sequence[Mapping[str, Any]], preferred: bool) -> dict[str, Any]:
    if preferred:
        weighted = [{"weight": 1, "podAffinityTerm": dict(t)} for t in terms]
        return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": weighted}}
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [dict(t) for t in terms]}}


# --- the mini scheduler ---------------------------------------------------------------------------


@define
class Placement:
    name: str
    requirements: Requirements
    taints: tuple[Taint, ...]
    existing: bool
    pods: list[str] = field(factory=list)

    def domain(self, key: str) -> str | None:
        r = self.requirements.get(key)
        return next(iter(r.values)) if r.operator() == IN and len(r.values) == 1 else None


@define
class ExistingNode:
    node: Node

    def labels(self) -> Mapping[str, str]:
        return self.node.labels

    def name(self) -> str:
        return self.node.name


@define
class Snapshot:
    nodes: tuple[Node, ...]
    pods: tuple[Pod, ...]


class MiniScheduler:
    """Places pods with topology only. A node holds at most ``max_pods`` pods (running ones
    included); with 0 nothing joins an existing node or claim, so every pod gets a new node."""

    def __init__(
        self,
        nodepools: Sequence[NodePool] = (),
        instance_types: Mapping[str, Sequence[InstanceType]] | None = None,
        *,
        nodes: Sequence[Node] = (),
        cluster_pods: Sequence[Pod] = (),
        policy: str = "Respect",
        max_pods: int = 100,
        base: bool = False,
    ) -> None:
        """``base``: the topology is derived from a :class:`TopologyBase` of the cluster
        (as a disruption pass's solves get it) instead of built by the constructor."""
        self.base = base
        self.nodepools = list(nodepools) or [nodepool()]
        self.instance_types = instance_types or {
            np.name: [instance_type()] for np in self.nodepools
        }
        self.nodes = list(nodes)
        self.cluster_pods = list(cluster_pods)
        self.policy = policy
        self.max_pods = max_pods

    def solve(self, batch: Sequence[Pod]) -> dict[str, Placement | None]:
        snapshot = Snapshot(tuple(self.nodes), tuple(self.cluster_pods) + tuple(batch))
        state_nodes = [ExistingNode(n) for n in self.nodes]
        if self.base:
            topology = TopologyBase(
                snapshot, state_nodes, self.nodepools, self.instance_types
            ).topology(list(batch), preference_policy=self.policy)
        else:
            topology = Topology(
                snapshot,
                state_nodes,
                self.nodepools,
                self.instance_types,
                list(batch),
                preference_policy=self.policy,
            )
        self.topology = topology
        existing = []
        for n in self.nodes:
            reqs = Requirements.from_labels(n.labels)
            reqs.add(Requirement.new(HOST, IN, [n.name]))
            running = [
                p.name for p in self.cluster_pods if p.node_name == n.name and p.phase == "Running"
            ]
            existing.append(Placement(n.name, reqs, tuple(n.taints), True, running))
            topology.register(HOST, n.name)
        templates = []
        for np in self.nodepools:
            reqs = Requirements.from_node_selector_requirements(np.spec.template.spec.requirements)
            reqs.add(*Requirements.from_labels(np.spec.template.labels).values())
            taints = tuple(Taint.from_dict(t.to_dict()) for t in np.spec.template.spec.taints)
            templates.append((np, reqs, taints))
        prefs = Preferences(
            tolerate_prefer_no_schedule=any(
                t.effect == "PreferNoSchedule" for _, _, ts in templates for t in ts
            ),
            policy=self.policy,
        )
        claims: list[Placement] = []
        result: dict[str, Placement | None] = {p.name: None for p in batch}
        self.errors: dict[str, str] = {}
        queue = list(batch)
        last_len: dict[str, int] = {}
        while queue:
            # Stop after a full cycle without progress (upstream queue.go).
            if last_len.get(queue[0].uid) == len(queue):
                break
            p = queue.pop(0)
            view = PodSchedulingView.of(p)
            while True:
                err = self._add(view, topology, existing, claims, templates, result)
                if err is None:
                    self.errors.pop(p.name, None)
                    break
                if not prefs.relax(view):
                    self.errors[p.name] = err
                    topology.update(p)
                    queue.append(p)
                    last_len[p.uid] = len(queue)
                    break
                topology.update(view)
        self.claims = claims
        return result

    def _add(
        self,
        view: PodSchedulingView,
        topology: Topology,
        existing: list[Placement],
        claims: list[Placement],
        templates: list[tuple[NodePool, Requirements, tuple[Taint, ...]]],
        result: dict[str, Placement | None],
    ) -> str | None:
        if self.policy == "Ignore":
            reqs = strict_pod_requirements(view.node_selector, view.affinity)
        else:
            reqs = pod_requirements(view.node_selector, view.affinity)
        strict = (
            strict_pod_requirements(view.node_selector, view.affinity)
            if has_preferred_node_affinity(view.affinity)
            else reqs
        )
        for placement in [*existing, *sorted(claims, key=lambda c: len(c.pods))]:
            if len(placement.pods) >= self.max_pods:
                continue
            if tolerates(placement.taints, view.tolerations) is not None:
                continue
            allow = frozenset() if placement.existing else frozenset(WELL_KNOWN_LABELS)
            if placement.requirements.compatible(reqs, allow) is not None:
                continue
            merged = placement.requirements.copy()
            merged.add(*reqs.values())
            narrowed = topology.add_requirements(view, placement.taints, strict, merged)
            if isinstance(narrowed, TopologyError):
                continue
            placement.requirements = narrowed
            placement.pods.append(view.name)
            topology.record(view, placement.taints, narrowed)
            result[view.name] = placement
            return None
        errors = []
        for np, template_reqs, taints in templates:
            if tolerates(taints, view.tolerations) is not None:
                errors.append("taints")
                continue
            if template_reqs.compatible(reqs, frozenset(WELL_KNOWN_LABELS)) is not None:
                errors.append("incompatible")
                continue
            hostname = f"hostname-placeholder-{len(claims):04}"
            merged = template_reqs.copy()
            merged.add(Requirement.new(HOST, IN, [hostname]))
            merged.add(*reqs.values())
            narrowed = topology.add_requirements(view, taints, strict, merged)
            if isinstance(narrowed, TopologyError):
                errors.append(str(narrowed))
                continue
            if not any(
                it.requirements.intersects(narrowed) is None
                for it in self.instance_types.get(np.name, ())
            ):
                errors.append("no instance type")
                continue
            claim = Placement(hostname, narrowed, taints, False, [view.name])
            claims.append(claim)
            topology.register(HOST, hostname)
            topology.record(view, taints, narrowed)
            result[view.name] = claim
            return None
        return "; ".join(errors) or "no nodepool"


def zone_counts(result: Mapping[str, Placement | None], key: str = ZONE) -> list[int]:
    """Pods per domain of ``key``, sorted (upstream's ConsistOf over node domains)."""
    c = Counter(p.domain(key) for p in result.values() if p is not None)
    return sorted(c.values())


def scheduled(result: Mapping[str, Placement | None]) -> int:
    return sum(1 for p in result.values() if p is not None)


def node_count(result: Mapping[str, Placement | None]) -> int:
    return len({p.name for p in result.values() if p is not None})


# --- topology spread ------------------------------------------------------------------------------


def test_zone_spread_balances_pods() -> None:
    result = MiniScheduler().solve(pods(4, APP, tsc=[spread(selector=SEL)]))
    assert zone_counts(result) == [1, 1, 2]


def test_zone_spread_with_match_expressions() -> None:
    sel = {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}
    result = MiniScheduler().solve(pods(4, APP, tsc=[spread(selector=sel)]))
    assert zone_counts(result) == [1, 1, 2]


def test_unknown_topology_key_blocks_only_that_pod() -> None:
    bad = pod("bad", APP, tsc=[spread(key="unknown", selector=SEL)])
    plain = pod("plain")
    result = MiniScheduler().solve([bad, plain])
    assert result["bad"] is None and result["plain"] is not None


def test_invalid_label_selector_does_not_spread() -> None:
    sel = {"matchExpressions": [{"key": "app", "operator": "In"}]}
    result = MiniScheduler(max_pods=10).solve(pods(5, APP, tsc=[spread(selector=sel)]))
    assert node_count(result) == 1


def test_nil_label_selector_does_not_spread() -> None:
    result = MiniScheduler().solve(pods(2, APP, tsc=[spread()]))
    assert zone_counts(result) == [2]


def test_spread_respects_nodepool_zones() -> None:
    np = nodepool(requirements=[zone_req("z1", "z2")])
    result = MiniScheduler([np]).solve(pods(4, APP, tsc=[spread(selector=SEL)]))
    assert zone_counts(result) == [2, 2]
    assert {p.domain(ZONE) for p in result.values() if p} == {"z1", "z2"}


def test_spread_respects_nodepool_zone_labels() -> None:
    np = nodepool(labels={ZONE: "z2"})
    result = MiniScheduler([np]).solve(pods(3, APP, tsc=[spread(selector=SEL)]))
    # The universe is (pool labels ∩ instance types) = z2 alone: no other zone to balance.
    assert zone_counts(result) == [3]


def test_spread_respects_zone_labels_across_nodepools() -> None:
    np1 = nodepool("one", requirements=[zone_req("z1", "z2")], labels={ZONE: "z1"})
    np2 = nodepool("two", labels={ZONE: "z2"})
    result = MiniScheduler([np1, np2]).solve(pods(4, APP, tsc=[spread(selector=SEL)]))
    assert zone_counts(result) == [2, 2]


def test_spread_max_skew_five_fills_to_the_allowed_domain() -> None:
    existing = [node("n1", {ZONE: "z1"}), node("n2", {ZONE: "z2"})]
    running = [
        pod(labels=APP, node_name="n1", phase="Running"),
        pod(labels=APP, node_name="n2", phase="Running"),
    ]
    np = nodepool(requirements=[zone_req("z3")])
    sched = MiniScheduler([np], nodes=existing, cluster_pods=running, max_pods=0)
    result = sched.solve(pods(10, APP, tsc=[spread(max_skew=5, selector=SEL)]))
    # z1 = 1, z2 = 1 already; z3 may reach 1 + 5 = 6.
    assert zone_counts(result) == [6]


def test_spread_does_not_violate_max_skew() -> None:
    existing = [node("n1", {ZONE: "z1"})]
    running = [pod(labels=APP, node_name="n1", phase="Running")]
    np = nodepool(requirements=[zone_req("z2", "z3")])
    sched = MiniScheduler([np], nodes=existing, cluster_pods=running, max_pods=0)
    result = sched.solve(pods(10, APP, tsc=[spread(selector=SEL)]))
    assert zone_counts(result) == [2, 2]
    assert scheduled(result) == 4


@pytest.mark.parametrize("base", [False, True], ids=["constructor", "base"])
def test_counting_ignores_pods_that_do_not_run_or_do_not_match(base: bool) -> None:
    n1, n2 = node("n1", {ZONE: "z1"}), node("n2", {ZONE: "z2"})
    no_zone = node("n3", {})
    cluster = [
        pod(labels=APP, node_name="n1", phase="Running"),
        pod(labels=APP, node_name="n1", phase="Running"),
        pod(labels=APP, node_name="n2", phase="Running"),
        # None of these count:
        pod(labels={"app": "other"}, node_name="n2", phase="Running"),
        pod(labels=APP),  # pending
        pod(labels=APP, node_name="n3", phase="Running"),  # node without the key
        pod(labels=APP, node_name="n2", namespace="other", phase="Running"),
        pod(labels=APP, node_name="n2", phase="Running", deleting=True),
        pod(labels=APP, node_name="n2", phase="Failed"),
        pod(labels=APP, node_name="n2", phase="Succeeded"),
        pod(labels=APP, node_name="gone", phase="Running"),  # node no longer exists
    ]
    np = nodepool(requirements=[zone_req("z1", "z2", "z3")])
    sched = MiniScheduler(
        [np], nodes=[n1, n2, no_zone], cluster_pods=cluster, max_pods=0, base=base
    )
    batch = pods(2, APP, tsc=[spread(selector=SEL)])
    sched.solve(batch)
    tg = sched.topology.groups_owned_by(batch[0])[0]
    # Two batch pods went to the emptiest zones: z3 (0) then z2 (1).
    assert tg.domains == {"z1": 2, "z2": 2, "z3": 1}


def test_selector_matching_nothing_puts_everything_on_one_node() -> None:
    tsc = spread(key=HOST, selector={"matchLabels": {"app": "nobody"}})
    result = MiniScheduler().solve(pods(5, APP, tsc=[tsc]))
    assert node_count(result) == 1


def test_min_domains_beyond_available_zones_limits_scheduling() -> None:
    np = nodepool(requirements=[zone_req("z1", "z2")])
    result = MiniScheduler([np]).solve(pods(3, APP, tsc=[spread(selector=SEL, minDomains=3)]))
    assert zone_counts(result) == [1, 1]


@pytest.mark.parametrize("min_domains", [2, 3])
def test_satisfied_min_domains_spreads_normally(min_domains: int) -> None:
    result = MiniScheduler().solve(
        pods(11, APP, tsc=[spread(selector=SEL, minDomains=min_domains)])
    )
    assert zone_counts(result) == [3, 4, 4]


def test_hostname_spread_makes_a_node_per_pod() -> None:
    result = MiniScheduler().solve(pods(4, APP, tsc=[spread(key=HOST, selector=SEL)]))
    assert node_count(result) == 4


def test_hostname_spread_allows_max_skew_pods_per_node() -> None:
    result = MiniScheduler().solve(pods(4, APP, tsc=[spread(key=HOST, max_skew=3, selector=SEL)]))
    assert sorted(Counter(p.name for p in result.values() if p).values()) == [1, 3]


def test_hostname_spread_on_existing_nodes_keeps_min_at_zero() -> None:
    existing = [node(f"n{i}", {ZONE: "z1"}) for i in range(4)]
    running = [pod(labels=APP, node_name=f"n{i}", phase="Running") for i in range(4)]
    sched = MiniScheduler(nodes=existing, cluster_pods=running)
    result = sched.solve(pods(5, APP, tsc=[spread(key=HOST, selector=SEL)]))
    # Each existing node already has one: a second would make 2 - 0 > 1. Five new nodes.
    assert node_count(result) == 5 and all(not p.existing for p in result.values() if p)


def test_zone_spread_lands_on_existing_nodes_when_balanced() -> None:
    existing = [node(f"n-{z}", {ZONE: z}) for z in ZONES]
    running = [
        pod(labels=APP, node_name=n, phase="Running") for n in ("n-z1", "n-z2", "n-z3", "n-z3")
    ]
    sched = MiniScheduler(nodes=existing, cluster_pods=running)
    result = sched.solve(pods(5, APP, tsc=[spread(selector=SEL)]))
    assert all(p is not None and p.existing for p in result.values())
    tg = sched.topology.topology_groups
    (group,) = tg.values()
    assert group.domains == {"z1": 3, "z2": 3, "z3": 3}


def test_capacity_type_spread_schedule_anyway_is_relaxed() -> None:
    existing = [node("spot-node", {ZONE: "z1", CT: "spot"})]
    running = [pod(labels=APP, node_name="spot-node", phase="Running")]
    np = nodepool(requirements=[{"key": CT, "operator": "In", "values": ["on-demand"]}])
    sched = MiniScheduler([np], nodes=existing, cluster_pods=running, max_pods=0)
    result = sched.solve(pods(5, APP, tsc=[spread(key=CT, selector=SEL, when="ScheduleAnyway")]))
    assert scheduled(result) == 5


def test_capacity_type_spread_do_not_schedule_is_not_relaxed() -> None:
    existing = [node("spot-node", {ZONE: "z1", CT: "spot"})]
    running = [pod(labels=APP, node_name="spot-node", phase="Running")]
    np = nodepool(requirements=[{"key": CT, "operator": "In", "values": ["on-demand"]}])
    sched = MiniScheduler([np], nodes=existing, cluster_pods=running, max_pods=0)
    result = sched.solve(pods(5, APP, tsc=[spread(key=CT, selector=SEL)]))
    assert scheduled(result) == 2
    assert "unsatisfiable topology constraint for topology spread" in next(
        iter(sched.errors.values())
    )


def test_match_label_keys_spread_each_value_separately() -> None:
    tsc = spread(key=HOST, selector={"matchLabels": {}}, matchLabelKeys=["rev"])
    batch = [
        *pods(2, {"rev": "a"}, tsc=[tsc]),
        *pods(2, {"rev": "b"}, tsc=[tsc]),
    ]
    result = MiniScheduler().solve(batch)
    assert node_count(result) == 2
    assert sorted(Counter(p.name for p in result.values() if p).values()) == [2, 2]


def test_match_label_keys_missing_on_the_pod_are_ignored() -> None:
    tsc = spread(key=HOST, selector={"matchLabels": {}}, matchLabelKeys=["rev"])
    result = MiniScheduler().solve(pods(4, APP, tsc=[tsc]))
    assert node_count(result) == 4


def _custom_label_setup(**policy: str) -> MiniScheduler:
    """Two existing tainted nodes in domains foo and bar (one pod each), a pool offering baz."""
    taint = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
    existing = [
        node("foo-node", {"fake-label": "foo"}, [taint]),
        node("bar-node", {"fake-label": "bar"}, [taint]),
    ]
    running = [
        pod(labels=APP, node_name="foo-node", phase="Running"),
        pod(labels=APP, node_name="bar-node", phase="Running"),
    ]
    np = nodepool(labels={"fake-label": "baz"})
    return MiniScheduler([np], nodes=existing, cluster_pods=running)


def test_node_taints_policy_ignore_counts_tainted_domains() -> None:
    sched = _custom_label_setup()
    result = sched.solve(pods(5, APP, tsc=[spread(key="fake-label", selector=SEL)]))
    # foo = bar = 1 count against baz, and the pods cannot go to the tainted nodes.
    assert scheduled(result) == 2


def test_node_taints_policy_honor_skips_untolerated_domains() -> None:
    sched = _custom_label_setup()
    tsc = spread(key="fake-label", selector=SEL, nodeTaintsPolicy="Honor")
    result = sched.solve(pods(5, APP, tsc=[tsc]))
    assert scheduled(result) == 5
    assert {p.domain("fake-label") for p in result.values() if p} == {"baz"}


def test_node_affinity_policy_honor_only_counts_selectable_nodes() -> None:
    existing = [node("foo-node", {"fake-label": "foo"}), node("bar-node", {"fake-label": "bar"})]
    running = [
        pod(labels=APP, node_name="foo-node", phase="Running"),
        pod(labels=APP, node_name="bar-node", phase="Running"),
    ]
    np = nodepool(labels={"fake-label": "baz", "pool": "mine"})
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["mine"]}]}
                ]
            }
        }
    }
    honor = MiniScheduler([np], nodes=existing, cluster_pods=running)
    result = honor.solve(
        pods(5, APP, affinity=affinity, tsc=[spread(key="fake-label", selector=SEL)])
    )
    assert scheduled(result) == 5
    ignore = MiniScheduler([np], nodes=existing, cluster_pods=running)
    tsc = spread(key="fake-label", selector=SEL, nodeAffinityPolicy="Ignore")
    result = ignore.solve(pods(5, APP, affinity=affinity, tsc=[tsc]))
    assert scheduled(result) == 2


def test_spread_limited_by_node_selector() -> None:
    batch = [
        *pods(5, APP, tsc=[spread(selector=SEL)], node_selector={ZONE: "z1"}),
        *pods(10, APP, tsc=[spread(selector=SEL)], node_selector={ZONE: "z2"}),
    ]
    result = MiniScheduler().solve(batch)
    # Each pod's filter only counts nodes it could use, so the two pinned sets don't interact.
    assert zone_counts(result) == [5, 10]


def test_spread_limited_by_required_node_affinity() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["z1", "z2"]}]}
                ]
            }
        }
    }
    result = MiniScheduler().solve(pods(10, APP, tsc=[spread(selector=SEL)], affinity=affinity))
    assert zone_counts(result) == [5, 5]


def test_spread_not_limited_by_preferred_node_affinity() -> None:
    affinity = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 10,
                    "preference": {
                        "matchExpressions": [
                            {"key": ZONE, "operator": "In", "values": ["z1", "z2"]}
                        ]
                    },
                }
            ]
        }
    }
    result = MiniScheduler().solve(pods(6, APP, tsc=[spread(selector=SEL)], affinity=affinity))
    assert zone_counts(result) == [2, 2, 2]


def test_combined_zone_and_hostname_spread() -> None:
    tscs = [spread(selector=SEL), spread(key=HOST, selector=SEL)]
    result = MiniScheduler().solve(pods(6, APP, tsc=tscs))
    assert zone_counts(result) == [2, 2, 2]
    assert node_count(result) == 6


def test_ignore_policy_skips_schedule_anyway_spreads() -> None:
    tsc = spread(key=HOST, selector=SEL, when="ScheduleAnyway")
    sched = MiniScheduler(policy="Ignore")
    batch = pods(3, APP, tsc=[tsc])
    result = sched.solve(batch)
    assert node_count(result) == 1
    assert sched.topology.topology_groups == {}


# --- pod affinity ---------------------------------------------------------------------------------


def test_pod_affinity_follows_the_target_on_hostname() -> None:
    target = pod("target", {"security": "s1"})
    follower = pod("follower", affinity=pod_affinity(affinity_term({"security": "s1"}, HOST)))
    result = MiniScheduler().solve([follower, target])
    assert result["target"] is not None and result["follower"] is result["target"]


def test_self_affinity_hostname_packs_one_node() -> None:
    aff = pod_affinity(affinity_term(APP, HOST))
    result = MiniScheduler().solve(pods(3, APP, affinity=aff))
    assert node_count(result) == 1 and scheduled(result) == 3


def test_self_affinity_hostname_stops_when_the_node_is_full() -> None:
    aff = pod_affinity(affinity_term(APP, HOST))
    sched = MiniScheduler(max_pods=5)
    result = sched.solve(pods(10, APP, affinity=aff))
    assert scheduled(result) == 5 and node_count(result) == 1


def test_self_affinity_zone_with_constraint() -> None:
    aff = pod_affinity(affinity_term(APP, ZONE))
    result = MiniScheduler().solve(pods(3, APP, affinity=aff, node_selector={ZONE: "z2"}))
    assert zone_counts(result) == [3]
    assert {p.domain(ZONE) for p in result.values() if p} == {"z2"}


def test_affinity_to_missing_pods_is_unschedulable() -> None:
    aff = pod_affinity(affinity_term({"app": "nobody"}, HOST))
    sched = MiniScheduler()
    result = sched.solve([pod("lonely", affinity=aff)])
    assert result["lonely"] is None
    assert sched.errors["lonely"].startswith(
        "unsatisfiable topology constraint for pod affinity, key=kubernetes.io/hostname"
    )


def test_preferred_affinity_to_missing_pods_is_relaxed() -> None:
    aff = pod_affinity(affinity_term({"app": "nobody"}, HOST), preferred=True)
    result = MiniScheduler().solve([pod("p", affinity=aff)])
    assert result["p"] is not None


def test_affinity_to_existing_pod_in_zone() -> None:
    existing = [node("n2", {ZONE: "z2"})]
    running = [pod(labels={"app": "db"}, node_name="n2", phase="Running")]
    aff = pod_affinity(affinity_term({"app": "db"}, ZONE))
    sched = MiniScheduler(nodes=existing, cluster_pods=running, max_pods=0)
    result = sched.solve(pods(3, affinity=aff))
    assert {p.domain(ZONE) for p in result.values() if p} == {"z2"}
    assert scheduled(result) == 3


def test_affinity_filters_by_namespace_list() -> None:
    existing = [node("n2", {ZONE: "z2"})]
    running = [pod(labels={"app": "db"}, node_name="n2", phase="Running", namespace="data")]
    same_ns = pod_affinity(affinity_term({"app": "db"}, ZONE))
    listed = pod_affinity(affinity_term({"app": "db"}, ZONE, namespaces=["data"]))
    sched = MiniScheduler(nodes=existing, cluster_pods=running, max_pods=0)
    result = sched.solve([pod("same", affinity=same_ns), pod("listed", affinity=listed)])
    assert result["same"] is None
    assert result["listed"] is not None and result["listed"].domain(ZONE) == "z2"


def test_affinity_empty_namespace_selector_matches_all_namespaces() -> None:
    existing = [node("n2", {ZONE: "z2"})]
    running = [pod(labels={"app": "db"}, node_name="n2", phase="Running", namespace="data")]
    aff = pod_affinity(affinity_term({"app": "db"}, ZONE, namespaceSelector={}))
    sched = MiniScheduler(nodes=existing, cluster_pods=running, max_pods=0)
    result = sched.solve([pod("p", affinity=aff)])
    assert result["p"] is not None and result["p"].domain(ZONE) == "z2"


def test_namespace_selector_uses_namespace_labels() -> None:
    running = [pod(labels={"app": "db"}, node_name="n2", phase="Running", namespace="data")]
    snapshot = Snapshot((node("n2", {ZONE: "z2"}),), tuple(running))
    term = affinity_term(
        {"app": "db"}, ZONE, namespaceSelector={"matchLabels": {"team": "storage"}}
    )
    p = pod("p", affinity=pod_affinity(term))
    for labels, expected in (({"data": {"team": "storage"}}, {"z2": 1}), ({}, {})):
        topo = Topology(
            snapshot,
            [],
            [nodepool()],
            {"default": [instance_type()]},
            [p],
            namespace_labels=labels,
        )
        (tg,) = topo.groups_owned_by(p)
        assert {d: c for d, c in tg.domains.items() if c} == expected


# --- pod anti-affinity ----------------------------------------------------------------------------


def test_hostname_anti_affinity_separates_pods_either_order() -> None:
    s2 = {"security": "s2"}
    for order in (0, 1):
        anti = pod("anti", affinity=pod_anti_affinity(affinity_term(s2, HOST)))
        target = pod("target", s2)
        batch = [anti, target] if order == 0 else [target, anti]
        result = MiniScheduler().solve(batch)
        assert result["anti"] is not None and result["target"] is not None
        assert result["anti"].name != result["target"].name


def test_self_anti_affinity_hostname_one_pod_per_node() -> None:
    aff = pod_anti_affinity(affinity_term(APP, HOST))
    result = MiniScheduler().solve(pods(5, APP, affinity=aff))
    assert node_count(result) == 5


def test_zone_anti_affinity_blocked_in_every_zone() -> None:
    s2 = {"security": "s2"}
    batch = [pod(f"s2-{z}", s2, node_selector={ZONE: z}) for z in ZONES]
    batch.append(pod("anti", affinity=pod_anti_affinity(affinity_term(s2, ZONE))))
    result = MiniScheduler().solve(batch)
    assert result["anti"] is None
    assert all(result[f"s2-{z}"] is not None for z in ZONES)


def test_inverse_anti_affinity_blocks_the_selected_pod() -> None:
    s2 = {"security": "s2"}
    anti = pod_anti_affinity(affinity_term(s2, ZONE))
    batch = [pod(f"anti-{z}", affinity=anti, node_selector={ZONE: z}) for z in ZONES]
    batch.append(pod("s2", s2))
    result = MiniScheduler().solve(batch)
    assert result["s2"] is None
    assert all(result[f"anti-{z}"] is not None for z in ZONES)


def test_inverse_preferred_anti_affinity_does_not_block() -> None:
    s2 = {"security": "s2"}
    anti = pod_anti_affinity(affinity_term(s2, ZONE), preferred=True)
    batch = [pod(f"anti-{z}", affinity=anti, node_selector={ZONE: z}) for z in ZONES]
    batch.append(pod("s2", s2))
    result = MiniScheduler().solve(batch)
    assert result["s2"] is not None


@pytest.mark.parametrize("base", [False, True], ids=["constructor", "base"])
def test_inverse_anti_affinity_of_running_pods(base: bool) -> None:
    s2 = {"security": "s2"}
    anti = pod_anti_affinity(affinity_term(s2, ZONE))
    existing = [node(f"n-{z}", {ZONE: z}) for z in ZONES]
    running = [pod(affinity=anti, node_name=f"n-{z}", phase="Running") for z in ZONES]
    sched = MiniScheduler(nodes=existing, cluster_pods=running, base=base)
    result = sched.solve([pod("s2", s2)])
    assert result["s2"] is None
    # With one zone free of them, the s2 pod goes there: pods holding the anti-affinity
    # that have finished or are not bound do not repel; one terminating still does.
    others = [
        pod(affinity=anti, node_name="n-z3", phase="Succeeded"),
        pod(affinity=anti, node_name="n-z3", phase="Failed"),
        pod(affinity=anti),
        pod(labels={"app": "plain"}, node_name="n-z3", phase="Running"),
    ]
    sched = MiniScheduler(nodes=existing, cluster_pods=[*running[:2], *others], base=base)
    result = sched.solve([pod("s2", s2)])
    assert result["s2"] is not None and result["s2"].domain(ZONE) == "z3"
    terminating = pod(affinity=anti, node_name="n-z3", phase="Running", deleting=True)
    sched = MiniScheduler(nodes=existing, cluster_pods=[*running[:2], terminating], base=base)
    assert sched.solve([pod("s2", s2)])["s2"] is None


def test_inverse_preferred_anti_affinity_of_running_pods_does_not_block() -> None:
    s2 = {"security": "s2"}
    anti = pod_anti_affinity(affinity_term(s2, ZONE), preferred=True)
    existing = [node(f"n-{z}", {ZONE: z}) for z in ZONES]
    running = [pod(affinity=anti, node_name=f"n-{z}", phase="Running") for z in ZONES]
    result = MiniScheduler(nodes=existing, cluster_pods=running).solve([pod("s2", s2)])
    assert result["s2"] is not None


def test_undecided_zone_blocks_every_candidate_zone() -> None:
    """Schrödinger: an anti-affinity pod whose zone is not decided yet blocks all its
    candidate zones for the pods it repels, this round."""
    s2 = {"security": "s2"}
    anti = pod("anti", affinity=pod_anti_affinity(affinity_term(s2, ZONE)))
    target = pod("s2", s2)
    sched = MiniScheduler()
    result = sched.solve([anti, target])
    assert result["anti"] is not None and result["anti"].domain(ZONE) is None
    assert result["s2"] is None


def test_anti_affinity_ignore_policy_drops_preferred_terms() -> None:
    s2 = {"security": "s2"}
    anti = pod_anti_affinity(affinity_term(s2, HOST), preferred=True)
    sched = MiniScheduler(policy="Ignore")
    result = sched.solve([pod("a", affinity=anti), pod("b", s2)])
    assert result["a"] is result["b"]
    assert sched.topology.inverse_topology_groups == {}


# --- API details ----------------------------------------------------------------------------------


def _topology(batch: Sequence[Pod], **kw: Any) -> Topology:
    return Topology(
        Snapshot((), tuple(batch)), [], [nodepool()], {"default": [instance_type()]}, batch, **kw
    )


def test_identical_constraints_share_one_group() -> None:
    batch = pods(50, APP, tsc=[spread(selector=SEL)])
    topo = _topology(batch)
    assert len(topo.topology_groups) == 1
    (tg,) = topo.topology_groups.values()
    assert tg.owners == {p.uid for p in batch}


def test_different_min_domains_do_not_share_a_group() -> None:
    batch = [
        pod(labels=APP, tsc=[spread(selector=SEL, minDomains=2)]),
        pod(labels=APP, tsc=[spread(selector=SEL, minDomains=3)]),
    ]
    assert len(_topology(batch).topology_groups) == 2


def test_domain_universe_comes_from_pools_and_instance_types() -> None:
    np = nodepool(
        requirements=[zone_req("z1", "z2", "z4")],
        labels={"team": "a"},
    )
    topo = Topology(Snapshot((), ()), [], [np], {"default": [instance_type()]}, [])
    # z4 is only in the pool's own In requirement; z3 is cut by the pool.
    assert sorted(topo.domain_groups[ZONE]) == ["z1", "z2", "z4"]
    assert list(topo.domain_groups["team"]) == ["a"]
    assert sorted(topo.domain_groups[CT]) == ["on-demand", "spot"]


def test_pools_without_instance_types_add_no_domains() -> None:
    topo = Topology(Snapshot((), ()), [], [nodepool()], {}, [])
    assert topo.domain_groups == {}


def test_update_after_relaxation_drops_the_relaxed_group() -> None:
    p = pod(labels=APP, tsc=[spread(selector=SEL, when="ScheduleAnyway")])
    topo = _topology([p])
    assert len(topo.groups_owned_by(p)) == 1
    view = PodSchedulingView.of(p)
    assert Preferences().relax(view)
    topo.update(view)
    assert topo.groups_owned_by(view) == []
    topo.update(p)  # the scheduler restores the unrelaxed pod after a failed attempt
    assert len(topo.groups_owned_by(p)) == 1


def test_add_requirements_returns_a_new_requirements() -> None:
    p = pod(labels=APP, tsc=[spread(selector=SEL)])
    topo = _topology([p])
    node_reqs = Requirements(Requirement.new(ZONE, IN, ["z1", "z2"]))
    out = topo.add_requirements(p, (), Requirements(), node_reqs)
    assert isinstance(out, Requirements)
    assert out.get(ZONE).values == {"z1"}
    assert node_reqs.get(ZONE).values == {"z1", "z2"}


def test_topology_error_message_names_the_constraint() -> None:
    p = pod(labels=APP, tsc=[spread(selector=SEL)])
    topo = _topology([p])
    topo.topology_groups[next(iter(topo.topology_groups))].record("z1")
    err = topo.add_requirements(
        p, (), Requirements(), Requirements(Requirement.new(ZONE, IN, ["z1"]))
    )
    assert isinstance(err, TopologyError)
    assert str(err) == (
        "unsatisfiable topology constraint for topology spread, key=topology.kubernetes.io/zone "
        "(counts = z1: 1, z2: 0, z3: 0, podDomains = topology.kubernetes.io/zone Exists, "
        "nodeDomains = topology.kubernetes.io/zone In [z1]"
    )


def test_register_and_unregister_hostnames() -> None:
    p = pod(labels=APP, tsc=[spread(key=HOST, selector=SEL)])
    topo = _topology([p])
    (tg,) = topo.topology_groups.values()
    topo.register(HOST, "node-a")
    assert tg.domains == {"node-a": 0}
    topo.register(ZONE, "node-b")  # other keys are untouched
    topo.unregister(HOST, "node-a")
    assert tg.domains == {}


def test_zone_constraints_report_allowed_zones() -> None:
    p = pod(labels=APP, tsc=[spread(selector=SEL)])
    topo = _topology([p])
    (tg,) = topo.topology_groups.values()
    tg.record("z1")
    zones, ok = topo.get_topology_zone_constraints(p, Requirements())
    assert ok and zones == {"z2", "z3"}
    plain = pod("plain")
    assert topo.get_topology_zone_constraints(plain, Requirements()) == (None, True)


def test_unknown_preference_policy_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="Respect, Ignore"):
        _topology([], preference_policy="Maybe")


# --- more upstream scenarios ----------------------------------------------------------------------

S2 = {"security": "s2"}


def _required_zones(*zones: str) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": ZONE, "operator": "In", "values": list(zones)}]}
                ]
            }
        }
    }


def test_self_affinity_hostname_does_not_bootstrap_a_second_node_later() -> None:
    aff = pod_affinity(affinity_term(S2, HOST))
    first = MiniScheduler(max_pods=5).solve(pods(10, S2, affinity=aff))
    assert scheduled(first) == 5 and node_count(first) == 1
    # Next round: the five are running on a (full) node; new ones cannot start elsewhere.
    existing = [node("n1", {ZONE: "z1"})]
    running = [pod(labels=S2, affinity=aff, node_name="n1", phase="Running") for _ in range(5)]
    second = MiniScheduler(nodes=existing, cluster_pods=running, max_pods=5)
    assert scheduled(second.solve(pods(10, S2, affinity=aff))) == 0


def test_self_affinity_hostname_counts_pods_outside_the_pods_zones() -> None:
    aff = pod_affinity(affinity_term(S2, HOST))
    existing = [node("n1", {ZONE: "z1"})]
    running = [pod(labels=S2, affinity=aff, node_name="n1", phase="Running")]
    sched = MiniScheduler(nodes=existing, cluster_pods=running, max_pods=0)
    constrained = {**aff, **_required_zones("z2", "z3")}
    # Affinity counts every node (no node filter): the s2 pod on n1 is "compatible" with the
    # hostname Exists pod domain, so the batch may not bootstrap a new host.
    assert scheduled(sched.solve(pods(3, S2, affinity=constrained))) == 0


def test_matching_affinities_with_incompatible_zones_make_two_nodes() -> None:
    s1 = {"security": "s1"}
    aff = pod_affinity(affinity_term(s1, ZONE))
    p1 = pod("p1", s1, affinity={**aff, **_required_zones("z2")})
    p2 = pod("p2", s1, affinity={**aff, **_required_zones("z3")})
    result = MiniScheduler().solve([p1, p2])
    assert result["p1"] is not None and result["p1"].domain(ZONE) == "z2"
    assert result["p2"] is not None and result["p2"].domain(ZONE) == "z3"


def test_chained_affinities_schedule_in_any_order() -> None:
    db = {"type": "db"}
    web = {"type": "web"}
    cache = {"type": "cache"}
    ui = {"type": "ui"}
    batch = [
        pod("ui", ui, affinity=pod_affinity(affinity_term(cache, HOST))),
        pod("cache", cache, affinity=pod_affinity(affinity_term(web, HOST))),
        pod("web", web, affinity=pod_affinity(affinity_term(db, HOST))),
        pod("db", db),
    ]
    result = MiniScheduler().solve(batch)
    assert scheduled(result) == 4 and node_count(result) == 1


def test_affinity_to_a_pod_that_never_comes_ends_the_loop() -> None:
    web = {"type": "web"}
    sched = MiniScheduler()
    result = sched.solve(
        [pod("db", {"type": "db"}, affinity=pod_affinity(affinity_term(web, HOST)))]
    )
    assert result["db"] is None and "pod affinity" in sched.errors["db"]


def test_anti_affinity_on_a_custom_key_uses_the_pool_label_domains() -> None:
    np_a = nodepool("a", labels={"rack": "r1"})
    np_b = nodepool("b", labels={"rack": "r2"})
    anti = pod_anti_affinity(affinity_term(APP, "rack"))
    result = MiniScheduler([np_a, np_b]).solve(pods(3, APP, affinity=anti))
    assert sorted(p.domain("rack") or "" for p in result.values() if p) == ["r1", "r2"]
    assert scheduled(result) == 2


def test_zone_anti_affinity_spreads_one_pod_per_zone() -> None:
    anti = pod_anti_affinity(affinity_term(APP, ZONE))
    sched = MiniScheduler()
    result = sched.solve(pods(4, APP, affinity=anti))
    # Upstream's Schrödinger rule: the first pod's zone is undecided, so it blocks all three
    # zones and no other pod can follow it in this round.
    assert scheduled(result) == 1


def test_zone_anti_affinity_pinned_pods_take_a_zone_each() -> None:
    anti = pod_anti_affinity(affinity_term(APP, ZONE))
    batch = [pod(labels=APP, affinity=anti, node_selector={ZONE: z}) for z in (*ZONES, "z1")]
    result = MiniScheduler().solve(batch)
    assert zone_counts(result) == [1, 1, 1]


def test_capacity_type_spread_without_constraints() -> None:
    result = MiniScheduler().solve(pods(4, APP, tsc=[spread(key=CT, selector=SEL)]))
    assert zone_counts(result, CT) == [2, 2]


def test_interdependent_selectors_spread_each_selected_set() -> None:
    # Pods select each other's label with different spreads: both groups count both kinds.
    a = {"kind": "a", "app": "web"}
    b = {"kind": "b", "app": "web"}
    batch = [
        *pods(3, a, tsc=[spread(selector={"matchLabels": {"app": "web"}})]),
        *pods(3, b, tsc=[spread(selector={"matchLabels": {"kind": "a"}})]),
    ]
    result = MiniScheduler().solve(batch)
    assert zone_counts(result) == [2, 2, 2]


def test_pod_not_selected_by_its_own_spread_does_not_count_itself() -> None:
    tsc = spread(selector={"matchLabels": {"app": "other"}})
    existing = [node("n1", {ZONE: "z1"})]
    running = [pod(labels={"app": "other"}, node_name="n1", phase="Running")]
    np = nodepool(requirements=[zone_req("z1")])
    sched = MiniScheduler([np], nodes=existing, cluster_pods=running, max_pods=0)
    # z1 has 1 other pod, z2/z3 none: z1 is 1 over the minimum, allowed since self doesn't add.
    result = sched.solve(pods(3, APP, tsc=[tsc]))
    assert scheduled(result) == 3


@pytest.mark.parametrize(
    "namespaces",
    [
        {"data": {"team": "storage"}},
        [{"metadata": {"name": "data", "labels": {"team": "storage"}}}],
    ],
)
def test_namespace_labels_come_from_the_snapshot(namespaces: Any) -> None:
    running = [pod(labels={"app": "db"}, node_name="n2", phase="Running", namespace="data")]

    @define
    class WithNamespaces:
        nodes: tuple[Node, ...]
        pods: tuple[Pod, ...]
        namespaces: Any

    snapshot = WithNamespaces((node("n2", {ZONE: "z2"}),), tuple(running), namespaces)
    term = affinity_term(
        {"app": "db"}, ZONE, namespaceSelector={"matchLabels": {"team": "storage"}}
    )
    p = pod("p", affinity=pod_affinity(term))
    topo = Topology(snapshot, [], [nodepool()], {"default": [instance_type()]}, [p])
    (tg,) = topo.groups_owned_by(p)
    assert tg.namespaces == {"data"} and tg.domains["z2"] == 1


def test_malformed_constraints_never_raise() -> None:
    weird = Pod.from_dict(
        {
            "metadata": {"name": "weird", "namespace": "default", "uid": "weird"},
            "spec": {
                "containers": [{"name": "c"}],
                "topologySpreadConstraints": [
                    {"topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
                ],
                "affinity": {
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"topologyKey": ZONE, "labelSelector": {"matchLabels": "nope"}},
                            "not a term",
                        ]
                    },
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"topologyKey": HOST, "namespaces": "data", "labelSelector": {}}
                        ]
                    },
                },
            },
        }
    )
    topo = _topology([weird])
    kinds = sorted(str(tg.type) for tg in topo.groups_owned_by(weird))
    assert kinds == ["pod affinity", "pod anti-affinity", "topology spread"]
    anti = next(tg for tg in topo.groups_owned_by(weird) if tg.key == HOST)
    assert anti.namespaces == {"data"}
    # The spread without a selector selects nothing; the affinity's bad selector neither.
    out = topo.add_requirements(weird, (), Requirements(), Requirements())
    assert isinstance(out, TopologyError) and "pod affinity" in str(out)


def test_taint_honoring_spread_ignores_domains_of_untolerated_pools() -> None:
    np = nodepool(
        "plain", requirements=[{"key": "fake-label", "operator": "In", "values": ["foo"]}]
    )
    tainted = nodepool(
        "tainted",
        requirements=[{"key": "fake-label", "operator": "In", "values": ["bar"]}],
        taints=[{"key": "taint-key", "value": "v", "effect": "NoSchedule"}],
    )
    tsc = spread(key="fake-label", selector=SEL, nodeTaintsPolicy="Honor")
    result = MiniScheduler([np, tainted]).solve(pods(2, APP, tsc=[tsc]))
    assert zone_counts(result, "fake-label") == [2]


def test_mutually_exclusive_tainted_pools_sharing_a_domain() -> None:
    pools = [
        nodepool(
            f"np{i}",
            requirements=[{"key": "fake-label", "operator": "In", "values": domains}],
            taints=[{"key": "taint-key", "value": f"nodepool-{i}", "effect": "NoSchedule"}],
        )
        for i, domains in enumerate((["foo", "bar"], ["foo", "baz"]))
    ]
    tsc = spread(key="fake-label", selector=SEL, nodeTaintsPolicy="Honor")

    def tolerating(i: int, n: int) -> list[Pod]:
        toleration = {"key": "taint-key", "value": f"nodepool-{i}", "effect": "NoSchedule"}
        return pods(n, APP, tsc=[tsc], tolerations=[toleration])

    result = MiniScheduler(pools).solve([*tolerating(0, 2), *tolerating(1, 4)])
    # Each deployment only counts nodes of the pool it tolerates (foo/bar and foo/baz), so
    # each balances on its own: 1 foo + 1 bar, then 2 foo + 2 baz. Upstream asserts the
    # multiset {3, 2, 1}.
    counts = Counter(p.domain("fake-label") for p in result.values() if p)
    assert counts == {"foo": 3, "bar": 1, "baz": 2}
