"""Pod (anti-)affinity terms and kube-scheduler's InterPodAffinity filter, one rule per test."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from karpenter_core.scheduling.podaffinity import (
    NAMESPACE_NAME_LABEL,
    POD_AFFINITY,
    POD_ANTI_AFFINITY,
    AffinityTerm,
    PlacedPod,
    affinity_counts,
    anti_affinity_counts,
    existing_anti_affinity_counts,
    namespace_labels,
    preferred_terms,
    required_terms,
    satisfies_existing_anti_affinity,
    satisfies_pod_affinity,
    satisfies_pod_anti_affinity,
)

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
KNOWN = {"db": {"team": "storage"}, "web": {"team": "front"}, "default": {}}


def term(**fields: Any) -> AffinityTerm:
    raw: dict[str, Any] = {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": "db"}}}
    raw.update(fields)
    return AffinityTerm.from_dict(raw, "default", {"app": "web", "version": "v2"})


def ns(name: str) -> Mapping[str, str]:
    return namespace_labels(name, KNOWN)


def test_without_namespaces_a_term_selects_in_its_pods_namespace() -> None:
    t = term()
    assert t.matches("default", {"app": "db"}, ns("default"))
    assert not t.matches("db", {"app": "db"}, ns("db"))


def test_listed_namespaces_replace_the_pods_own() -> None:
    t = term(namespaces=["db"])
    assert t.matches("db", {"app": "db"}, ns("db"))
    assert not t.matches("default", {"app": "db"}, ns("default"))


def test_namespace_selector_selects_by_namespace_labels() -> None:
    t = term(namespaceSelector={"matchLabels": {"team": "storage"}})
    assert t.matches("db", {"app": "db"}, ns("db"))
    assert not t.matches("web", {"app": "db"}, ns("web"))
    assert not t.matches("default", {"app": "db"}, ns("default"))


def test_empty_namespace_selector_selects_every_namespace() -> None:
    t = term(namespaceSelector={})
    assert all(t.matches(n, {"app": "db"}, ns(n)) for n in ("db", "web", "elsewhere"))


def test_namespaces_and_selector_add_up() -> None:
    t = term(namespaces=["web"], namespaceSelector={"matchLabels": {"team": "storage"}})
    assert t.namespace_set(KNOWN) == {"web", "db"}


def test_namespace_selector_can_use_the_name_label_of_unknown_namespaces() -> None:
    t = term(namespaceSelector={"matchLabels": {NAMESPACE_NAME_LABEL: "other"}})
    assert t.matches("other", {"app": "db"}, namespace_labels("other", KNOWN))
    assert t.namespace_set({**KNOWN, "other": {}}) == {"other"}


def test_match_label_keys_require_the_declaring_pods_value() -> None:
    t = term(labelSelector={"matchLabels": {"app": "db"}}, matchLabelKeys=["version"])
    assert t.matches("default", {"app": "db", "version": "v2"}, ns("default"))
    assert not t.matches("default", {"app": "db", "version": "v1"}, ns("default"))


def test_mismatch_label_keys_exclude_the_declaring_pods_value() -> None:
    t = term(labelSelector={"matchLabels": {"app": "db"}}, mismatchLabelKeys=["version"])
    assert not t.matches("default", {"app": "db", "version": "v2"}, ns("default"))
    assert t.matches("default", {"app": "db", "version": "v1"}, ns("default"))


def test_label_keys_do_nothing_without_a_label_selector() -> None:
    t = term(labelSelector=None, matchLabelKeys=["version"])
    assert not t.matches("default", {"version": "v2"}, ns("default"))


def test_required_and_preferred_terms_are_read_with_weights() -> None:
    affinity = {
        POD_ANTI_AFFINITY: {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": HOST}, "junk"],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 30, "podAffinityTerm": {"topologyKey": ZONE}}
            ],
        }
    }
    assert [t.topology_key for t in required_terms(affinity, POD_ANTI_AFFINITY, "a", {})] == [HOST]
    [preferred] = preferred_terms(affinity, POD_ANTI_AFFINITY, "a", {})
    assert (preferred.topology_key, preferred.weight) == (ZONE, 30)
    assert required_terms(affinity, POD_AFFINITY, "a", {}) == ()


# --- kube-scheduler's filter ----------------------------------------------------------------


def placed(labels: dict[str, str], zone: str, namespace: str = "default") -> PlacedPod:
    return (namespace, labels, ns(namespace), {ZONE: zone, HOST: f"h-{zone}"})


def test_affinity_goes_to_domains_where_a_selected_pod_runs() -> None:
    terms = (term(),)
    counts = affinity_counts(terms, [placed({"app": "db"}, "a")])
    assert satisfies_pod_affinity(terms, {ZONE: "a"}, counts, matches_itself=False)
    assert not satisfies_pod_affinity(terms, {ZONE: "b"}, counts, matches_itself=False)


def test_affinity_needs_the_topology_key_on_the_node() -> None:
    terms = (term(),)
    counts = affinity_counts(terms, [placed({"app": "db"}, "a")])
    assert not satisfies_pod_affinity(terms, {HOST: "x"}, counts, matches_itself=True)


def test_the_first_self_selecting_pod_may_go_anywhere() -> None:
    terms = (term(),)
    counts = affinity_counts(terms, [])
    assert satisfies_pod_affinity(terms, {ZONE: "b"}, counts, matches_itself=True)
    assert not satisfies_pod_affinity(terms, {ZONE: "b"}, counts, matches_itself=False)


def test_affinity_counts_pods_matching_every_term() -> None:
    terms = (term(), term(labelSelector={"matchLabels": {"tier": "cache"}}, topologyKey=HOST))
    only_one = affinity_counts(terms, [placed({"app": "db"}, "a")])
    assert not only_one
    both = affinity_counts(terms, [placed({"app": "db", "tier": "cache"}, "a")])
    assert both == {(ZONE, "a"): 1, (HOST, "h-a"): 1}


def test_anti_affinity_keeps_out_of_domains_with_a_selected_pod() -> None:
    terms = (term(),)
    counts = anti_affinity_counts(terms, [placed({"app": "db"}, "a")])
    assert not satisfies_pod_anti_affinity(terms, {ZONE: "a"}, counts)
    assert satisfies_pod_anti_affinity(terms, {ZONE: "b"}, counts)
    assert satisfies_pod_anti_affinity(terms, {}, counts)


def test_existing_pods_anti_affinity_keeps_a_selected_newcomer_out() -> None:
    holder_terms = (term(),)
    counts = existing_anti_affinity_counts(
        [(holder_terms, {ZONE: "a"})], "default", {"app": "db"}, ns("default")
    )
    assert not satisfies_existing_anti_affinity({ZONE: "a", "x": "y"}, counts)
    assert satisfies_existing_anti_affinity({ZONE: "b"}, counts)
    other = existing_anti_affinity_counts(
        [(holder_terms, {ZONE: "a"})], "default", {"app": "web"}, ns("default")
    )
    assert satisfies_existing_anti_affinity({ZONE: "a"}, other)
