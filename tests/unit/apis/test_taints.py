"""Taints and tolerations: Kubernetes matching (with Gt/Lt), the all-effects rule, ephemeral
taints (upstream ``pkg/scheduling/taints_test.go``), parsing and merge."""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.apis.taints import (
    KNOWN_EPHEMERAL_TAINTS,
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    Taint,
    TaintsError,
    Toleration,
    is_known_ephemeral,
    merge,
    tolerates,
)

T = Taint("example.com/team", NO_SCHEDULE, "blue")
T_NUM = Taint("example.com/gpu-count", NO_SCHEDULE, "4")


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        # Equal (explicit and defaulted)
        (Toleration("example.com/team", "Equal", "blue", NO_SCHEDULE), T, True),
        (Toleration("example.com/team", "", "blue", NO_SCHEDULE), T, True),
        (Toleration("example.com/team", "Equal", "red", NO_SCHEDULE), T, False),
        (Toleration("example.com/team", "Equal", "", NO_SCHEDULE), T, False),
        (Toleration("example.com/other", "Equal", "blue", NO_SCHEDULE), T, False),
        # Exists ignores the value
        (Toleration("example.com/team", "Exists", "", NO_SCHEDULE), T, True),
        (Toleration("example.com/other", "Exists"), T, False),
        # empty key with Exists matches every key (and with an empty effect, everything)
        (Toleration("", "Exists"), T, True),
        (Toleration("", "Exists", "", NO_EXECUTE), T, False),
        (Toleration("", "Exists", "", NO_SCHEDULE), T, True),
        # empty effect matches every effect
        (Toleration("example.com/team", "Equal", "blue"), T, True),
        (Toleration("example.com/team", "Equal", "blue"), Taint("example.com/team", NO_EXECUTE, "blue"), True),
        (Toleration("example.com/team", "Equal", "blue", PREFER_NO_SCHEDULE), T, False),
        # Gt / Lt compare the taint value against the toleration value
        (Toleration("example.com/gpu-count", "Gt", "3"), T_NUM, True),
        (Toleration("example.com/gpu-count", "Gt", "4"), T_NUM, False),
        (Toleration("example.com/gpu-count", "Lt", "5"), T_NUM, True),
        (Toleration("example.com/gpu-count", "Lt", "4"), T_NUM, False),
        (Toleration("example.com/gpu-count", "Gt", "-1"), Taint("example.com/gpu-count", NO_SCHEDULE, "0"), True),
        (Toleration("example.com/gpu-count", "Lt", "0"), Taint("example.com/gpu-count", NO_SCHEDULE, "-7"), True),
        (Toleration("", "Gt", "3"), T_NUM, True),
        # non-canonical or non-integer values never match a comparison
        (Toleration("example.com/gpu-count", "Gt", "03"), T_NUM, False),
        (Toleration("example.com/gpu-count", "Gt", "+3"), T_NUM, False),
        (Toleration("example.com/gpu-count", "Gt", "x"), T_NUM, False),
        (Toleration("example.com/gpu-count", "Gt", "3"), Taint("example.com/gpu-count", NO_SCHEDULE, "04"), False),
        (Toleration("example.com/gpu-count", "Gt", "3"), Taint("example.com/gpu-count", NO_SCHEDULE, ""), False),
        (Toleration("example.com/gpu-count", "Lt", str(2**63)), T_NUM, False),
        (Toleration("example.com/gpu-count", "Gt", "-0"), T_NUM, False),
        (Toleration("example.com/gpu-count", "Gt", "3", NO_EXECUTE), T_NUM, False),
    ],
)  # fmt: skip
def test_toleration_matching(toleration: Toleration, taint: Taint, expected: bool) -> None:
    assert toleration.tolerates(taint) is expected


def test_every_taint_must_be_tolerated_including_prefer_no_schedule() -> None:
    taints = [T, Taint("example.com/soft", PREFER_NO_SCHEDULE)]
    err = tolerates(taints, [Toleration("example.com/team", "Exists")])
    assert err == TaintsError((Taint("example.com/soft", PREFER_NO_SCHEDULE),))
    assert tolerates(taints, [Toleration("example.com/team", "Exists"), Toleration("", "Exists", "", PREFER_NO_SCHEDULE)]) is None  # fmt: skip


def test_no_taints_are_always_tolerated() -> None:
    assert tolerates([], []) is None


def test_error_lists_each_untolerated_taint_in_upstream_form() -> None:
    err = tolerates([T, Taint("a", NO_EXECUTE)], [])
    assert str(err) == (
        "did not tolerate taint (taint=example.com/team=blue:NoSchedule); "
        "did not tolerate taint (taint=a:NoExecute)"
    )


def test_tolerations_may_be_a_generator() -> None:
    assert tolerates([T, T_NUM], (t for t in [Toleration("", "Exists")])) is None


# --- known ephemeral taints (upstream IsKnownEphemeralTaint) ----------------------------------------


@pytest.mark.parametrize(
    ("taint", "expected"),
    [
        (Taint("node.kubernetes.io/not-ready", NO_SCHEDULE), True),
        (Taint("node.kubernetes.io/not-ready", NO_EXECUTE), True),
        (Taint("node.kubernetes.io/unreachable", NO_SCHEDULE), True),
        (Taint("node.kubernetes.io/unreachable", NO_EXECUTE), False),
        (Taint("node.cloudprovider.kubernetes.io/uninitialized", NO_SCHEDULE, "true"), True),
        (Taint("node.cloudprovider.kubernetes.io/uninitialized", NO_SCHEDULE, "other"), True),
        (Taint("karpenter.sh/unregistered", NO_EXECUTE), True),
        (Taint("karpenter.sh/unregistered", NO_SCHEDULE), False),
        (Taint("readiness.k8s.io/my-rule", NO_SCHEDULE), True),
        (Taint("readiness.k8s.io/another", NO_EXECUTE), True),
        (Taint("example.com/some-taint", NO_SCHEDULE), False),
        (Taint("foo/readiness.k8s.io/bar", NO_SCHEDULE), False),
        (None, False),
    ],
)
def test_is_known_ephemeral(taint: Taint | None, expected: bool) -> None:
    assert is_known_ephemeral(taint) is expected


def test_known_ephemeral_taints_are_all_recognised() -> None:
    assert all(is_known_ephemeral(t) for t in KNOWN_EPHEMERAL_TAINTS)
    assert len(KNOWN_EPHEMERAL_TAINTS) == 5


# --- merge ----------------------------------------------------------------------------------------------


def test_merge_adds_only_new_key_effect_slots() -> None:
    base = [Taint("a", NO_SCHEDULE, "1")]
    merged = merge(
        base, [Taint("a", NO_SCHEDULE, "2"), Taint("a", NO_EXECUTE), Taint("b", NO_SCHEDULE)]
    )
    assert merged == [Taint("a", NO_SCHEDULE, "1"), Taint("a", NO_EXECUTE), Taint("b", NO_SCHEDULE)]
    assert base == [Taint("a", NO_SCHEDULE, "1")]


# --- parsing ---------------------------------------------------------------------------------------------


def test_taint_round_trips_through_dict() -> None:
    d = {"key": "k", "value": "v", "effect": NO_EXECUTE, "timeAdded": "2026-01-01T00:00:00Z"}
    assert Taint.from_dict(d).to_dict() == d
    assert Taint.from_dict({"key": "k", "effect": NO_SCHEDULE}) == Taint("k", NO_SCHEDULE)


def test_toleration_round_trips_through_dict() -> None:
    d = {
        "key": "k",
        "operator": "Equal",
        "value": "v",
        "effect": NO_EXECUTE,
        "tolerationSeconds": 30,
    }
    assert Toleration.from_dict(d).to_dict() == d
    assert Toleration.from_dict({"operator": "Exists"}) == Toleration("", "Exists")


@pytest.mark.parametrize(
    ("d", "message"),
    [
        ({"effect": NO_SCHEDULE}, "taint.key: required"),
        ({"key": "k"}, "effect must be one of"),
        ({"key": "k", "effect": "Sometimes"}, "effect must be one of"),
        ({"key": 3, "effect": NO_SCHEDULE}, "taint.key: expected a string"),
        ("k=v:NoSchedule", "taint: expected a mapping"),
    ],
)
def test_taint_from_dict_rejects_bad_input(d: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Taint.from_dict(d)


@pytest.mark.parametrize(
    ("d", "message"),
    [
        ({"operator": "In"}, "toleration.operator: must be one of"),
        ({"effect": "Never"}, "toleration.effect: must be empty or one of"),
        ({"tolerationSeconds": "30"}, "tolerationSeconds: expected an integer"),
        ({"value": 4}, "toleration.value: expected a string"),
    ],
)
def test_toleration_from_dict_rejects_bad_input(d: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Toleration.from_dict(d)


def test_taint_str_omits_an_empty_value() -> None:
    assert str(Taint("k", NO_SCHEDULE)) == "k:NoSchedule"
    assert str(Taint("k", NO_SCHEDULE, "v")) == "k=v:NoSchedule"
