"""Preference relaxation: upstream order, one step at a time, copy-on-write, Respect/Ignore."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from karpenter_core.apis.objects import Pod
from karpenter_core.apis.taints import Toleration
from karpenter_core.provisioning.scheduler.preferences import (
    PodSchedulingView,
    Preferences,
)
from karpenter_core.scheduling.requirements import pod_requirements

ZONE = "topology.kubernetes.io/zone"


def term(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": op, "values": list(values)}]}


def pod_term(app: str, key: str = ZONE) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}


def make_pod(
    affinity: dict[str, Any] | None = None,
    tsc: list[dict[str, Any]] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
) -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if affinity is not None:
        spec["affinity"] = affinity
    if tsc is not None:
        spec["topologySpreadConstraints"] = tsc
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return Pod.from_dict(
        {
            "metadata": {"name": "p", "namespace": "default", "uid": "uid-p", "labels": {"a": "b"}},
            "spec": spec,
        }
    )


def everything() -> dict[str, Any]:
    """A pod affinity with one relaxable item of every kind."""
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [term(ZONE, "In", "z1"), term(ZONE, "In", "z2")]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": term(ZONE, "In", "z2")}
            ],
        },
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": pod_term("x")}
            ]
        },
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": pod_term("y")}
            ]
        },
    }


SPREAD_ANYWAY = {
    "maxSkew": 1,
    "topologyKey": ZONE,
    "whenUnsatisfiable": "ScheduleAnyway",
    "labelSelector": {"matchLabels": {"a": "b"}},
}


def test_relaxes_in_upstream_order_one_step_per_call() -> None:
    view = PodSchedulingView.of(make_pod(everything(), [SPREAD_ANYWAY]))
    prefs = Preferences(tolerate_prefer_no_schedule=True)
    steps = []
    while prefs.relax(view):
        steps.append(view.relaxations[-1].split("=")[0].strip())
    assert steps == [
        "removing: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]",
        "removing: spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]",
        "removing: spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]",
        "removing: spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]",
        "removing: spec.topologySpreadConstraints",
        "adding: toleration for PreferNoSchedule taints",
    ]


def test_last_required_node_affinity_term_is_never_dropped() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [term(ZONE, "In", "invalid")]
            }
        }
    }
    view = PodSchedulingView.of(make_pod(affinity))
    assert Preferences().relax(view) is False
    assert view.affinity == affinity


def test_required_node_affinity_terms_are_dropped_from_the_front() -> None:
    terms = [term(ZONE, "In", "bad-1"), term(ZONE, "In", "bad-2"), term(ZONE, "In", "z1")]
    view = PodSchedulingView.of(
        make_pod(
            {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
                }
            }
        )
    )
    prefs = Preferences()
    assert prefs.relax(view) and prefs.relax(view)
    assert view.affinity is not None
    remaining = view.affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert remaining["nodeSelectorTerms"] == [terms[2]]
    assert prefs.relax(view) is False


def test_heaviest_preferred_node_term_is_dropped_and_next_heaviest_becomes_required() -> None:
    affinity = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": term(ZONE, "In", "z1")},
                {"weight": 100, "preference": term(ZONE, "In", "z3")},
                {"weight": 50, "preference": term(ZONE, "In", "z2")},
            ]
        }
    }
    view = PodSchedulingView.of(make_pod(affinity))
    assert pod_requirements(view.node_selector, view.affinity).get(ZONE).values == {"z3"}
    assert Preferences().relax(view)
    assert pod_requirements(view.node_selector, view.affinity).get(ZONE).values == {"z2"}
    assert Preferences().relax(view)
    assert pod_requirements(view.node_selector, view.affinity).get(ZONE).values == {"z1"}
    assert Preferences().relax(view)
    assert not pod_requirements(view.node_selector, view.affinity).has(ZONE)
    assert Preferences().relax(view) is False


def test_preferred_pod_affinity_terms_go_heaviest_first() -> None:
    affinity = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "podAffinityTerm": pod_term("light")},
                {"weight": 90, "podAffinityTerm": pod_term("heavy")},
            ]
        }
    }
    view = PodSchedulingView.of(make_pod(affinity))
    assert Preferences().relax(view)
    assert view.affinity is not None
    left = view.affinity["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert [t["podAffinityTerm"]["labelSelector"]["matchLabels"]["app"] for t in left] == ["light"]
    assert '"heavy"' in view.relaxations[0]


def test_schedule_anyway_spread_is_swapped_with_last_then_removed() -> None:
    hard_a = {**SPREAD_ANYWAY, "whenUnsatisfiable": "DoNotSchedule", "topologyKey": "a"}
    hard_b = {**SPREAD_ANYWAY, "whenUnsatisfiable": "DoNotSchedule", "topologyKey": "b"}
    view = PodSchedulingView.of(make_pod(tsc=[SPREAD_ANYWAY, hard_a, hard_b]))
    assert Preferences().relax(view)
    assert [t["topologyKey"] for t in view.topology_spread_constraints] == ["b", "a"]
    assert Preferences().relax(view) is False


def test_do_not_schedule_spreads_are_never_relaxed() -> None:
    hard = {**SPREAD_ANYWAY, "whenUnsatisfiable": "DoNotSchedule"}
    view = PodSchedulingView.of(make_pod(tsc=[hard]))
    assert Preferences(tolerate_prefer_no_schedule=False).relax(view) is False
    assert view.topology_spread_constraints == (hard,)


def test_prefer_no_schedule_toleration_only_when_some_pool_has_such_a_taint() -> None:
    assert (
        Preferences(tolerate_prefer_no_schedule=False).relax(PodSchedulingView.of(make_pod()))
        is False
    )
    view = PodSchedulingView.of(make_pod())
    assert Preferences(tolerate_prefer_no_schedule=True).relax(view)
    assert view.tolerations == (
        Toleration.from_dict({"operator": "Exists", "effect": "PreferNoSchedule"}),
    )
    # Adding it twice would be pointless: the second call reports nothing left.
    assert Preferences(tolerate_prefer_no_schedule=True).relax(view) is False


def test_existing_equivalent_toleration_means_nothing_to_add() -> None:
    view = PodSchedulingView.of(
        make_pod(tolerations=[{"operator": "Exists", "effect": "PreferNoSchedule"}])
    )
    assert Preferences(tolerate_prefer_no_schedule=True).relax(view) is False


def test_relaxation_never_mutates_the_original_pod() -> None:
    pod = make_pod(everything(), [SPREAD_ANYWAY])
    before_affinity = copy.deepcopy(pod.affinity)
    before_tsc = copy.deepcopy(pod.topology_spread_constraints)
    view = PodSchedulingView.of(pod)
    prefs = Preferences(tolerate_prefer_no_schedule=True)
    while prefs.relax(view):
        pass
    assert pod.affinity == before_affinity
    assert pod.topology_spread_constraints == before_tsc
    assert pod.tolerations == ()
    fresh = PodSchedulingView.of(view)
    assert fresh.affinity == before_affinity and fresh.relaxations == []


def test_copy_is_independent() -> None:
    view = PodSchedulingView.of(make_pod(everything()))
    other = view.copy()
    Preferences().relax(other)
    assert view.relaxations == [] and other.relaxations != []
    assert view.affinity != other.affinity


def test_ignore_policy_only_drops_required_terms_and_adds_the_toleration() -> None:
    view = PodSchedulingView.of(make_pod(everything(), [SPREAD_ANYWAY]))
    prefs = Preferences(tolerate_prefer_no_schedule=True, policy="Ignore")
    count = 0
    while prefs.relax(view):
        count += 1
    assert count == 2
    assert view.relaxations[0].startswith(
        "removing: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    )
    assert view.relaxations[1] == "adding: toleration for PreferNoSchedule taints"


def test_unknown_policy_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="Respect, Ignore"):
        Preferences(policy="Sometimes")


def test_view_reads_through_to_the_pod() -> None:
    pod = make_pod()
    view = PodSchedulingView.of(pod)
    assert (view.uid, view.name, view.namespace, view.key) == ("uid-p", "p", "default", pod.key)
    assert view.labels == {"a": "b"}
    assert view.requests == pod.requests
