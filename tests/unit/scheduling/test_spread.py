"""Topology spread constraints: parsing, inclusion policies and the skew rule."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from karpenter_core.scheduling.spread import (
    HONOR,
    IGNORE,
    MAX_INT32,
    SpreadConstraint,
    global_minimum,
    node_included,
    skew_limit,
    spread_constraints,
)

ZONE = "topology.kubernetes.io/zone"


def tsc(**fields: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
    raw.update(fields)
    return raw


def test_defaults_are_kubernetes_defaults() -> None:
    c = SpreadConstraint.from_dict(tsc(), {})
    assert (c.min_domains, c.node_affinity_policy, c.node_taints_policy) == (None, HONOR, IGNORE)
    assert c.hard


def test_match_label_keys_narrow_the_selector_to_the_pods_values() -> None:
    c = SpreadConstraint.from_dict(tsc(matchLabelKeys=["rev", "absent"]), {"rev": "2"})
    assert c.selector.matches({"app": "web", "rev": "2"})
    assert not c.selector.matches({"app": "web", "rev": "1"})


def test_match_label_keys_leave_a_missing_selector_selecting_nothing() -> None:
    c = SpreadConstraint.from_dict(tsc(labelSelector=None, matchLabelKeys=["rev"]), {"rev": "2"})
    assert not c.selector.matches({"rev": "2"})


def test_only_hard_constraints_with_a_key_when_asked() -> None:
    tscs = [tsc(), tsc(whenUnsatisfiable="ScheduleAnyway"), tsc(topologyKey=""), "junk"]
    assert len(spread_constraints(tscs, {})) == 2
    assert len(spread_constraints(tscs, {}, hard_only=True)) == 1


@pytest.mark.parametrize(
    ("affinity_policy", "taints_policy", "affinity_ok", "taints_ok", "included"),
    [
        (HONOR, IGNORE, True, False, True),
        (HONOR, IGNORE, False, True, False),
        (IGNORE, IGNORE, False, False, True),
        (IGNORE, HONOR, False, False, False),
        (HONOR, HONOR, True, True, True),
    ],
)
def test_inclusion_policies(
    affinity_policy: str, taints_policy: str, affinity_ok: bool, taints_ok: bool, included: bool
) -> None:
    assert (
        node_included(affinity_policy, taints_policy, lambda: affinity_ok, lambda: taints_ok)
        is included
    )


def test_an_ignored_policy_does_not_run_its_check() -> None:
    def boom() -> bool:
        raise AssertionError("must not be called")

    assert node_included(IGNORE, IGNORE, boom, boom)


def test_global_minimum_is_the_smallest_eligible_count() -> None:
    assert global_minimum([3, 1, 2], None) == 1


def test_fewer_domains_than_min_domains_make_the_minimum_zero() -> None:
    assert global_minimum([3, 1], 3) == 0
    assert global_minimum([3, 1, 2], 3) == 1


def test_no_domain_at_all() -> None:
    assert global_minimum([], None) == MAX_INT32
    assert global_minimum([], 1) == 0


@given(st.integers(0, 20), st.integers(0, 20), st.integers(1, 5), st.booleans())
def test_skew_limit_is_the_skew_rule(count: int, minimum: int, max_skew: int, itself: bool) -> None:
    allowed = count + (1 if itself else 0) - minimum <= max_skew
    assert (count <= skew_limit(minimum, max_skew, itself)) is allowed
