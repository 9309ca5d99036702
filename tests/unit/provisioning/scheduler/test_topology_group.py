"""TopologyGroup rules, label selectors, node filters and domain groups, one rule per test."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from attrs import define, field
from hypothesis import given
from hypothesis import strategies as st

from karpenter_core.apis.labelselector import LabelSelector, SelectorError
from karpenter_core.apis.taints import Taint, Toleration
from karpenter_core.provisioning.scheduler.topologydomaingroup import TopologyDomainGroup
from karpenter_core.provisioning.scheduler.topologygroup import (
    MAX_INT32,
    TopologyGroup,
    TopologyType,
)
from karpenter_core.provisioning.scheduler.topologynodefilter import (
    MATCH_ALL,
    make_topology_node_filter,
)
from karpenter_core.scheduling.requirements import Requirement, Requirements

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


@define
class FakePod:
    """The SchedulingPod protocol and nothing else."""

    uid: str = "u1"
    name: str = "p"
    namespace: str = "default"
    labels: Mapping[str, str] = field(factory=lambda: {"app": "web"})
    node_selector: Mapping[str, str] | None = None
    affinity: Mapping[str, Any] | None = None
    topology_spread_constraints: Sequence[Mapping[str, Any]] = ()
    tolerations: Sequence[Toleration] = ()


def req(key: str, op: str, *values: str) -> Requirement:
    return Requirement.new(key, op, values)


def exists(key: str = ZONE) -> Requirement:
    return Requirement.new(key, "Exists")


def group(
    kind: TopologyType = TopologyType.SPREAD,
    key: str = ZONE,
    counts: Mapping[str, int] | None = None,
    max_skew: int = 1,
    min_domains: int | None = None,
    selector: Mapping[str, Any] | None = None,
    pod: FakePod | None = None,
) -> TopologyGroup:
    pod = pod or FakePod()
    tg = TopologyGroup(
        kind,
        key,
        pod,
        ["default"],
        LabelSelector.compile(
            selector if selector is not None else {"matchLabels": {"app": "web"}}
        ),
        max_skew if kind is TopologyType.SPREAD else MAX_INT32,
        min_domains,
        None,
        None,
    )
    for domain, n in (counts or {}).items():
        tg.register(domain)
        for _ in range(n):
            tg.record(domain)
    return tg


def allowed(result: tuple[Requirement, set[str]]) -> set[str] | None:
    """The allowed domains, or None for DoesNotExist."""
    r, _ = result
    return None if r.size() == 0 else set(r.values)


# --- spread ---------------------------------------------------------------------------------------


def test_spread_picks_the_least_loaded_domain() -> None:
    tg = group(counts={"z1": 2, "z2": 1, "z3": 2}, max_skew=5)
    assert allowed(tg.get(FakePod(), exists(), exists())) == {"z2"}


def test_spread_ties_break_on_the_smallest_domain_name() -> None:
    tg = group(counts={"z3": 0, "z2": 0, "z1": 0})
    assert allowed(tg.get(FakePod(), exists(), exists())) == {"z1"}


def test_spread_respects_max_skew_against_the_global_minimum() -> None:
    tg = group(counts={"z1": 1, "z2": 0})
    # The node can only be in z1; z1 would reach 2 against a minimum of 0 > maxSkew 1.
    assert allowed(tg.get(FakePod(), exists(), req(ZONE, "In", "z1"))) is None
    tg2 = group(counts={"z1": 1, "z2": 0}, max_skew=2)
    assert allowed(tg2.get(FakePod(), exists(), req(ZONE, "In", "z1"))) == {"z1"}


def test_spread_minimum_only_considers_domains_the_pod_can_use() -> None:
    tg = group(counts={"z1": 3, "z2": 3, "z3": 0})
    # z3 is empty but the pod cannot go there, so the minimum is 3 and z1 is fine.
    assert allowed(tg.get(FakePod(), req(ZONE, "In", "z1", "z2"), req(ZONE, "In", "z1"))) == {"z1"}


def test_spread_min_domains_forces_a_zero_minimum() -> None:
    tg = group(counts={"z1": 1, "z2": 1}, min_domains=3)
    assert allowed(tg.get(FakePod(), exists(), exists())) is None
    tg2 = group(counts={"z1": 1, "z2": 1}, min_domains=2)
    assert allowed(tg2.get(FakePod(), exists(), exists())) == {"z1"}


def test_spread_pod_not_selected_by_group_does_not_count_itself() -> None:
    tg = group(counts={"z1": 1, "z2": 0})
    other = FakePod(uid="u2", labels={"app": "other"})
    assert allowed(tg.get(other, exists(), req(ZONE, "In", "z1"))) == {"z1"}


def test_spread_hostname_minimum_is_always_zero() -> None:
    tg = group(key=HOST, counts={"a": 1, "b": 1})
    assert tg.domain_min_count(exists(HOST)) == 0
    # A new node (unregistered hostname) always passes; "a" is at max skew already.
    assert allowed(tg.get(FakePod(), exists(HOST), req(HOST, "In", "new-node"))) == {"new-node"}
    assert allowed(tg.get(FakePod(), exists(HOST), req(HOST, "In", "a"))) is None


def test_spread_returns_every_domain_within_skew_as_valid() -> None:
    tg = group(counts={"z1": 0, "z2": 0, "z3": 1})
    r, valid = tg.get(FakePod(), exists(), exists())
    assert set(r.values) == {"z1"}
    assert valid == {"z1", "z2"}


def test_spread_only_chooses_among_node_domains() -> None:
    tg = group(counts={"z1": 0, "z2": 5, "z3": 5}, max_skew=10)
    assert allowed(tg.get(FakePod(), exists(), req(ZONE, "NotIn", "z1"))) == {"z2"}


# --- affinity -------------------------------------------------------------------------------------


def test_affinity_goes_where_selected_pods_are() -> None:
    tg = group(TopologyType.POD_AFFINITY, counts={"z1": 0, "z2": 2, "z3": 1})
    other = FakePod(uid="u2", labels={"app": "client"})
    assert allowed(tg.get(other, exists(), exists())) == {"z2", "z3"}
    assert allowed(tg.get(other, req(ZONE, "In", "z3"), exists())) == {"z3"}


def test_affinity_to_pods_that_do_not_exist_is_unsatisfiable() -> None:
    tg = group(TopologyType.POD_AFFINITY, counts={"z1": 0, "z2": 0})
    other = FakePod(uid="u2", labels={"app": "client"})
    assert allowed(tg.get(other, exists(), exists())) is None


def test_self_affinity_bootstraps_into_one_domain() -> None:
    tg = group(TopologyType.POD_AFFINITY, counts={"z2": 0, "z1": 0})
    assert allowed(tg.get(FakePod(), exists(), exists())) == {"z1"}


def test_self_affinity_bootstraps_when_counted_pods_are_out_of_reach() -> None:
    tg = group(TopologyType.POD_AFFINITY, counts={"z1": 3, "z2": 0})
    assert allowed(tg.get(FakePod(), req(ZONE, "In", "z2"), exists())) == {"z2"}


def test_self_affinity_bootstrap_prefers_the_node_domain() -> None:
    tg = group(TopologyType.POD_AFFINITY, counts={"z1": 0, "z2": 0, "z3": 0})
    # One value from pod ∩ node domains (z3) and one from the pod domains (z1).
    assert allowed(tg.get(FakePod(), exists(), req(ZONE, "In", "z3"))) == {"z1", "z3"}


def test_hostname_affinity_on_a_new_node_only_for_the_first_pod() -> None:
    tg = group(TopologyType.POD_AFFINITY, key=HOST)
    assert allowed(tg.get(FakePod(), exists(HOST), req(HOST, "In", "n1"))) == {"n1"}
    tg.register("n1")
    tg.record("n1")
    assert allowed(tg.get(FakePod(uid="u2"), exists(HOST), req(HOST, "In", "n1"))) == {"n1"}
    assert allowed(tg.get(FakePod(uid="u3"), exists(HOST), req(HOST, "In", "n2"))) is None


# --- anti-affinity --------------------------------------------------------------------------------


def test_anti_affinity_only_allows_empty_domains() -> None:
    tg = group(TopologyType.POD_ANTI_AFFINITY, counts={"z1": 1, "z2": 0, "z3": 0})
    assert allowed(tg.get(FakePod(), exists(), exists())) == {"z2", "z3"}
    assert allowed(tg.get(FakePod(), req(ZONE, "In", "z1", "z2"), exists())) == {"z2"}
    assert allowed(tg.get(FakePod(), exists(), req(ZONE, "In", "z1"))) is None


def test_anti_affinity_hostname_checks_only_that_host() -> None:
    tg = group(TopologyType.POD_ANTI_AFFINITY, key=HOST, counts={"a": 1})
    assert allowed(tg.get(FakePod(), exists(HOST), req(HOST, "In", "a"))) is None
    assert allowed(tg.get(FakePod(), exists(HOST), req(HOST, "In", "b"))) == {"b"}


def test_record_and_unregister_maintain_empty_domains() -> None:
    tg = group(TopologyType.POD_ANTI_AFFINITY, counts={"z1": 0, "z2": 0})
    tg.record("z1")
    assert tg.empty_domains == {"z2"} and tg.domains == {"z1": 1, "z2": 0}
    tg.unregister("z2")
    assert tg.empty_domains == set() and "z2" not in tg.domains


def test_counts_string_is_sorted_and_truncated() -> None:
    tg = group(counts={f"d{i:02}": i for i in range(30)})
    text = tg.counts_string(25)
    assert text.startswith("d00: 0, d01: 1")
    assert text.endswith("d24: 24 and 5 other(s)")


# --- selectors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ({}, {}, True),
        ({}, {"x": "y"}, True),
        (None, {"x": "y"}, False),
        ({"matchLabels": {"app": "web"}}, {"app": "web", "x": "y"}, True),
        ({"matchLabels": {"app": "web"}}, {"app": "db"}, False),
        (
            {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]},
            {"app": "b"},
            True,
        ),
        ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["a"]}]}, {}, False),
        ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a"]}]}, {}, True),
        (
            {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a"]}]},
            {"app": "a"},
            False,
        ),
        ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, {"app": ""}, True),
        ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, {}, False),
        ({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, {}, True),
        ({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, {"app": "a"}, False),
    ],
)
def test_label_selector_matching(
    selector: Mapping[str, Any] | None, labels: Mapping[str, str], expected: bool
) -> None:
    assert LabelSelector.compile(selector).matches(labels) is expected


@pytest.mark.parametrize(
    "selector",
    [
        {"matchExpressions": [{"key": "app", "operator": "Equals", "values": ["a"]}]},
        {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]},
        {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["a"]}]},
        {"matchLabels": {"bad key!": "x"}},
        {"matchLabels": {"app": "bad value!"}},
        {"matchExpressions": "app"},
    ],
)
def test_invalid_selectors_are_errors_and_select_nothing(selector: Mapping[str, Any]) -> None:
    with pytest.raises(SelectorError):
        LabelSelector.from_dict(selector)
    assert LabelSelector.compile(selector).matches({"app": "a"}) is False


def test_selector_signature_ignores_order_and_duplicates() -> None:
    a = {
        "matchExpressions": [
            {"key": "x", "operator": "In", "values": ["1", "2"]},
            {"key": "y", "operator": "Exists"},
        ]
    }
    b = {
        "matchExpressions": [
            {"key": "y", "operator": "Exists"},
            {"key": "x", "operator": "In", "values": ["2", "1"]},
            {"key": "y", "operator": "Exists"},
        ]
    }
    assert LabelSelector.compile(a).signature == LabelSelector.compile(b).signature
    assert LabelSelector.compile(a).signature != LabelSelector.compile({}).signature


def test_groups_select_by_namespace_and_labels() -> None:
    tg = group()
    assert tg.selects(FakePod())
    assert not tg.selects(FakePod(uid="u2", namespace="other"))
    assert not tg.selects(FakePod(uid="u3", labels={"app": "db"}))


# --- node filter ----------------------------------------------------------------------------------

NO_SCHEDULE = Taint(key="dedicated", value="x", effect="NoSchedule")


def test_node_filter_honours_node_selector_and_required_terms() -> None:
    pod = FakePod(
        node_selector={"kind": "a"},
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["z1"]}]},
                        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["z2"]}]},
                    ]
                }
            }
        },
    )
    f = make_topology_node_filter(pod, "Ignore", "Honor")
    assert f.matches((), Requirements.from_labels({"kind": "a", ZONE: "z2"}))
    assert not f.matches((), Requirements.from_labels({"kind": "a", ZONE: "z3"}))
    assert not f.matches((), Requirements.from_labels({"kind": "b", ZONE: "z1"}))
    ignore = make_topology_node_filter(pod, "Ignore", "Ignore")
    assert ignore.matches((), Requirements.from_labels({"kind": "b", ZONE: "z3"}))


def test_node_filter_honours_taints_only_when_asked() -> None:
    pod = FakePod()
    reqs = Requirements.from_labels({ZONE: "z1"})
    assert make_topology_node_filter(pod, "Ignore", "Honor").matches((NO_SCHEDULE,), reqs)
    assert not make_topology_node_filter(pod, "Honor", "Honor").matches((NO_SCHEDULE,), reqs)
    tolerant = FakePod(tolerations=(Toleration(key="dedicated", operator="Exists"),))
    assert make_topology_node_filter(tolerant, "Honor", "Honor").matches((NO_SCHEDULE,), reqs)


def test_match_all_filter_matches_everything() -> None:
    assert MATCH_ALL.matches((NO_SCHEDULE,), Requirements())


def test_node_filter_signature_is_structural() -> None:
    a = make_topology_node_filter(FakePod(node_selector={"k": "v"}), "Ignore", "Honor")
    b = make_topology_node_filter(FakePod(uid="x", node_selector={"k": "v"}), "Ignore", "Honor")
    c = make_topology_node_filter(FakePod(node_selector={"k": "w"}), "Ignore", "Honor")
    d = make_topology_node_filter(FakePod(node_selector={"k": "v"}), "Honor", "Honor")
    assert a.signature == b.signature
    assert len({a.signature, c.signature, d.signature}) == 3


# --- domain groups --------------------------------------------------------------------------------


def test_domain_group_filters_by_tolerated_taints_under_honor() -> None:
    dg = TopologyDomainGroup()
    dg.insert("tainted", [NO_SCHEDULE])
    dg.insert("clean")
    assert sorted(dg.domains((), "Ignore")) == ["clean", "tainted"]
    assert dg.domains((), "Honor") == ["clean"]
    tolerant = (Toleration(key="dedicated", operator="Exists"),)
    assert sorted(dg.domains(tolerant, "Honor")) == ["clean", "tainted"]


def test_domain_offered_untainted_stays_untainted() -> None:
    dg = TopologyDomainGroup()
    dg.insert("z1", [NO_SCHEDULE])
    dg.insert("z1")
    dg.insert("z1", [NO_SCHEDULE])
    assert dg.taint_sets("z1") == [()]
    assert dg.domains((), "Honor") == ["z1"]


def test_domain_keeps_every_taint_set_until_untainted() -> None:
    other = Taint(key="other", effect="NoSchedule")
    dg = TopologyDomainGroup()
    dg.insert("z1", [NO_SCHEDULE])
    dg.insert("z1", [other])
    assert dg.taint_sets("z1") == [(NO_SCHEDULE,), (other,)]
    tolerates_other = (Toleration(key="other", operator="Exists"),)
    assert dg.domains(tolerates_other, "Honor") == ["z1"]


# --- properties against a brute-force oracle ------------------------------------------------------

DOMAINS = ["a", "b", "c", "d"]
counts_st = st.dictionaries(st.sampled_from(DOMAINS), st.integers(0, 6), min_size=1)
subset_st = st.frozensets(st.sampled_from([*DOMAINS, "x"]))


def _domain_req(values: frozenset[str] | None) -> Requirement:
    return exists() if values is None else req(ZONE, "In", *sorted(values))


@given(
    counts=counts_st,
    pod_vals=st.none() | subset_st,
    node_vals=st.none() | subset_st,
    max_skew=st.integers(1, 3),
    min_domains=st.none() | st.integers(1, 5),
    self_selecting=st.booleans(),
)
def test_spread_matches_the_skew_oracle(
    counts: dict[str, int],
    pod_vals: frozenset[str] | None,
    node_vals: frozenset[str] | None,
    max_skew: int,
    min_domains: int | None,
    self_selecting: bool,
) -> None:
    tg = group(counts=counts, max_skew=max_skew, min_domains=min_domains)
    p = FakePod(labels={"app": "web" if self_selecting else "other"})
    pod_domains, node_domains = _domain_req(pod_vals), _domain_req(node_vals)
    eligible = [d for d in counts if pod_domains.has(d)]
    lowest = min((counts[d] for d in eligible), default=MAX_INT32)
    if min_domains is not None and len(eligible) < min_domains:
        lowest = 0
    own = 1 if self_selecting else 0
    valid = {d for d in counts if node_domains.has(d) and counts[d] + own - lowest <= max_skew}
    result, reported = tg.get(p, pod_domains, node_domains)
    assert reported == valid
    if not valid:
        assert result.size() == 0
    else:
        (chosen,) = result.values
        assert chosen in valid
        assert counts[chosen] == min(counts[d] for d in valid)


@given(counts=counts_st, pod_vals=st.none() | subset_st, node_vals=st.none() | subset_st)
def test_anti_affinity_matches_the_empty_domain_oracle(
    counts: dict[str, int],
    pod_vals: frozenset[str] | None,
    node_vals: frozenset[str] | None,
) -> None:
    tg = group(TopologyType.POD_ANTI_AFFINITY, counts=counts)
    pod_domains, node_domains = _domain_req(pod_vals), _domain_req(node_vals)
    expected = {
        d for d, n in counts.items() if n == 0 and pod_domains.has(d) and node_domains.has(d)
    }
    result, _ = tg.get(FakePod(), pod_domains, node_domains)
    assert (set(result.values) if result.size() else set()) == expected


@given(counts=counts_st, pod_vals=st.none() | subset_st, node_vals=st.none() | subset_st)
def test_affinity_for_a_non_selected_pod_matches_the_oracle(
    counts: dict[str, int],
    pod_vals: frozenset[str] | None,
    node_vals: frozenset[str] | None,
) -> None:
    tg = group(TopologyType.POD_AFFINITY, counts=counts)
    pod_domains, node_domains = _domain_req(pod_vals), _domain_req(node_vals)
    expected = {
        d for d, n in counts.items() if n > 0 and pod_domains.has(d) and node_domains.has(d)
    }
    result, _ = tg.get(FakePod(labels={"app": "other"}), pod_domains, node_domains)
    assert (set(result.values) if result.size() else set()) == expected
