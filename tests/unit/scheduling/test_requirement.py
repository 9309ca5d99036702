"""Requirement (one key): construction, intersection, has, operator, size, any, str, serialisation.

The intersection and has tables are ported from upstream's ``pkg/scheduling/requirement_test.go``
(every entry), written as data: (existing, incoming, expected).
"""

from __future__ import annotations

import random

import pytest

from karpenter_core.apis import labels
from karpenter_core.scheduling.requirements import (
    DOES_NOT_EXIST,
    EXISTS,
    GT,
    GTE,
    IN,
    LT,
    LTE,
    MAX_INT64,
    NOT_IN,
    OPERATORS,
    Requirement,
)

K = "key"


def r(
    complement: bool,
    values: set[str],
    gte: int | None = None,
    lte: int | None = None,
    min_values: int | None = None,
) -> Requirement:
    """A requirement given by its internal representation (the upstream tables' literals)."""
    return Requirement(K, complement, frozenset(values), gte, lte, min_values)


def _named(min_values: dict[str, int] | None = None) -> dict[str, Requirement]:
    mv = min_values or {}
    return {
        "exists": Requirement.new(K, EXISTS, (), mv.get("exists")),
        "does_not_exist": Requirement.new(K, DOES_NOT_EXIST, (), mv.get("does_not_exist")),
        "in_a": Requirement.new(K, IN, ["A"], mv.get("in_a")),
        "in_b": Requirement.new(K, IN, ["B"], mv.get("in_b")),
        "in_ab": Requirement.new(K, IN, ["A", "B"], mv.get("in_ab")),
        "not_in_a": Requirement.new(K, NOT_IN, ["A"], mv.get("not_in_a")),
        "in_1": Requirement.new(K, IN, ["1"], mv.get("in_1")),
        "in_9": Requirement.new(K, IN, ["9"], mv.get("in_9")),
        "in_19": Requirement.new(K, IN, ["1", "9"], mv.get("in_19")),
        "not_in_12": Requirement.new(K, NOT_IN, ["1", "2"], mv.get("not_in_12")),
        "gt_1": Requirement.new(K, GT, ["1"], mv.get("gt_1")),
        "gt_9": Requirement.new(K, GT, ["9"], mv.get("gt_9")),
        "lt_1": Requirement.new(K, LT, ["1"], mv.get("lt_1")),
        "lt_9": Requirement.new(K, LT, ["9"], mv.get("lt_9")),
    }


# The upstream fixtures: plain, and "with flexibility" (minValues; 2 for the two-value ones).
_MV = {
    "exists": 1, "does_not_exist": 1, "in_a": 1, "in_b": 1, "in_ab": 2, "not_in_a": 1,
    "in_1": 1, "in_9": 1, "in_19": 2, "not_in_12": 2, "gt_1": 1, "gt_9": 1, "lt_1": 1, "lt_9": 1,
}  # fmt: skip
REQ: dict[str, Requirement] = {
    **_named(),
    **{f"{k}_mv": v for k, v in _named(_MV).items()},
}


def _resolve(x: str | Requirement) -> Requirement:
    return REQ[x] if isinstance(x, str) else x


# upstream: "should intersect two requirements without minValues"
INTERSECT_NO_MIN_VALUES = [
    ("exists", "exists", "exists"),
    ("exists", "does_not_exist", "does_not_exist"),
    ("exists", "in_a", "in_a"),
    ("exists", "in_b", "in_b"),
    ("exists", "in_ab", "in_ab"),
    ("exists", "not_in_a", "not_in_a"),
    ("exists", "in_1", "in_1"),
    ("exists", "in_9", "in_9"),
    ("exists", "in_19", "in_19"),
    ("exists", "not_in_12", "not_in_12"),
    ("exists", "gt_1", "gt_1"),
    ("exists", "gt_9", "gt_9"),
    ("exists", "lt_1", "lt_1"),
    ("exists", "lt_9", "lt_9"),
    ("does_not_exist", "exists", "does_not_exist"),
    ("does_not_exist", "does_not_exist", "does_not_exist"),
    ("does_not_exist", "in_a", "does_not_exist"),
    ("does_not_exist", "in_b", "does_not_exist"),
    ("does_not_exist", "in_ab", "does_not_exist"),
    ("does_not_exist", "not_in_a", "does_not_exist"),
    ("does_not_exist", "in_1", "does_not_exist"),
    ("does_not_exist", "in_9", "does_not_exist"),
    ("does_not_exist", "in_19", "does_not_exist"),
    ("does_not_exist", "not_in_12", "does_not_exist"),
    ("does_not_exist", "gt_1", "does_not_exist"),
    ("does_not_exist", "gt_9", "does_not_exist"),
    ("does_not_exist", "lt_1", "does_not_exist"),
    ("does_not_exist", "lt_9", "does_not_exist"),
    ("in_a", "exists", "in_a"),
    ("in_a", "does_not_exist", "does_not_exist"),
    ("in_a", "in_a", "in_a"),
    ("in_a", "in_b", "does_not_exist"),
    ("in_a", "in_ab", "in_a"),
    ("in_a", "not_in_a", "does_not_exist"),
    ("in_a", "in_1", "does_not_exist"),
    ("in_a", "in_9", "does_not_exist"),
    ("in_a", "in_19", "does_not_exist"),
    ("in_a", "not_in_12", "in_a"),
    ("in_a", "gt_1", "does_not_exist"),
    ("in_a", "gt_9", "does_not_exist"),
    ("in_a", "lt_1", "does_not_exist"),
    ("in_a", "lt_9", "does_not_exist"),
    ("in_b", "exists", "in_b"),
    ("in_b", "does_not_exist", "does_not_exist"),
    ("in_b", "in_a", "does_not_exist"),
    ("in_b", "in_b", "in_b"),
    ("in_b", "in_ab", "in_b"),
    ("in_b", "not_in_a", "in_b"),
    ("in_b", "in_1", "does_not_exist"),
    ("in_b", "in_9", "does_not_exist"),
    ("in_b", "in_19", "does_not_exist"),
    ("in_b", "not_in_12", "in_b"),
    ("in_b", "gt_1", "does_not_exist"),
    ("in_b", "gt_9", "does_not_exist"),
    ("in_b", "lt_1", "does_not_exist"),
    ("in_b", "lt_9", "does_not_exist"),
    ("in_ab", "exists", "in_ab"),
    ("in_ab", "does_not_exist", "does_not_exist"),
    ("in_ab", "in_a", "in_a"),
    ("in_ab", "in_b", "in_b"),
    ("in_ab", "in_ab", "in_ab"),
    ("in_ab", "not_in_a", "in_b"),
    ("in_ab", "in_1", "does_not_exist"),
    ("in_ab", "in_9", "does_not_exist"),
    ("in_ab", "in_19", "does_not_exist"),
    ("in_ab", "not_in_12", "in_ab"),
    ("in_ab", "gt_1", "does_not_exist"),
    ("in_ab", "gt_9", "does_not_exist"),
    ("in_ab", "lt_1", "does_not_exist"),
    ("in_ab", "lt_9", "does_not_exist"),
    ("not_in_a", "exists", "not_in_a"),
    ("not_in_a", "does_not_exist", "does_not_exist"),
    ("not_in_a", "in_a", "does_not_exist"),
    ("not_in_a", "in_b", "in_b"),
    ("not_in_a", "in_ab", "in_b"),
    ("not_in_a", "not_in_a", "not_in_a"),
    ("not_in_a", "in_1", "in_1"),
    ("not_in_a", "in_9", "in_9"),
    ("not_in_a", "in_19", "in_19"),
    ("not_in_a", "not_in_12", r(True, {"1", "2", "A"})),
    ("not_in_a", "gt_1", "gt_1"),
    ("not_in_a", "gt_9", "gt_9"),
    ("not_in_a", "lt_1", "lt_1"),
    ("not_in_a", "lt_9", "lt_9"),
    ("in_1", "exists", "in_1"),
    ("in_1", "does_not_exist", "does_not_exist"),
    ("in_1", "in_a", "does_not_exist"),
    ("in_1", "in_b", "does_not_exist"),
    ("in_1", "in_ab", "does_not_exist"),
    ("in_1", "not_in_a", "in_1"),
    ("in_1", "in_1", "in_1"),
    ("in_1", "in_9", "does_not_exist"),
    ("in_1", "in_19", "in_1"),
    ("in_1", "not_in_12", "does_not_exist"),
    ("in_1", "gt_1", "does_not_exist"),
    ("in_1", "gt_9", "does_not_exist"),
    ("in_1", "lt_1", "does_not_exist"),
    ("in_1", "lt_9", "in_1"),
    ("in_9", "exists", "in_9"),
    ("in_9", "does_not_exist", "does_not_exist"),
    ("in_9", "in_a", "does_not_exist"),
    ("in_9", "in_b", "does_not_exist"),
    ("in_9", "in_ab", "does_not_exist"),
    ("in_9", "not_in_a", "in_9"),
    ("in_9", "in_1", "does_not_exist"),
    ("in_9", "in_9", "in_9"),
    ("in_9", "in_19", "in_9"),
    ("in_9", "not_in_12", "in_9"),
    ("in_9", "gt_1", "in_9"),
    ("in_9", "gt_9", "does_not_exist"),
    ("in_9", "lt_1", "does_not_exist"),
    ("in_9", "lt_9", "does_not_exist"),
    ("in_19", "exists", "in_19"),
    ("in_19", "does_not_exist", "does_not_exist"),
    ("in_19", "in_a", "does_not_exist"),
    ("in_19", "in_b", "does_not_exist"),
    ("in_19", "in_ab", "does_not_exist"),
    ("in_19", "not_in_a", "in_19"),
    ("in_19", "in_1", "in_1"),
    ("in_19", "in_9", "in_9"),
    ("in_19", "in_19", "in_19"),
    ("in_19", "not_in_12", "in_9"),
    ("in_19", "gt_1", "in_9"),
    ("in_19", "gt_9", "does_not_exist"),
    ("in_19", "lt_1", "does_not_exist"),
    ("in_19", "lt_9", "in_1"),
    ("not_in_12", "exists", "not_in_12"),
    ("not_in_12", "does_not_exist", "does_not_exist"),
    ("not_in_12", "in_a", "in_a"),
    ("not_in_12", "in_b", "in_b"),
    ("not_in_12", "in_ab", "in_ab"),
    ("not_in_12", "not_in_a", r(True, {"1", "2", "A"})),
    ("not_in_12", "in_1", "does_not_exist"),
    ("not_in_12", "in_9", "in_9"),
    ("not_in_12", "in_19", "in_9"),
    ("not_in_12", "not_in_12", "not_in_12"),
    ("not_in_12", "gt_1", r(True, {"2"}, gte=2)),
    ("not_in_12", "gt_9", r(True, set(), gte=10)),
    ("not_in_12", "lt_1", r(True, set(), lte=0)),
    ("not_in_12", "lt_9", r(True, {"1", "2"}, lte=8)),
    ("gt_1", "exists", "gt_1"),
    ("gt_1", "does_not_exist", "does_not_exist"),
    ("gt_1", "in_a", "does_not_exist"),
    ("gt_1", "in_b", "does_not_exist"),
    ("gt_1", "in_ab", "does_not_exist"),
    ("gt_1", "not_in_a", "gt_1"),
    ("gt_1", "in_1", "does_not_exist"),
    ("gt_1", "in_9", "in_9"),
    ("gt_1", "in_19", "in_9"),
    ("gt_1", "not_in_12", r(True, {"2"}, gte=2)),
    ("gt_1", "gt_1", "gt_1"),
    ("gt_1", "gt_9", "gt_9"),
    ("gt_1", "lt_1", "does_not_exist"),
    ("gt_1", "lt_9", r(True, set(), gte=2, lte=8)),
    ("gt_9", "exists", "gt_9"),
    ("gt_9", "does_not_exist", "does_not_exist"),
    ("gt_9", "in_a", "does_not_exist"),
    ("gt_9", "in_b", "does_not_exist"),
    ("gt_9", "in_ab", "does_not_exist"),
    ("gt_9", "not_in_a", "gt_9"),
    ("gt_9", "in_1", "does_not_exist"),
    ("gt_9", "in_9", "does_not_exist"),
    ("gt_9", "in_19", "does_not_exist"),
    ("gt_9", "not_in_12", "gt_9"),
    ("gt_9", "gt_1", "gt_9"),
    ("gt_9", "gt_9", "gt_9"),
    ("gt_9", "lt_1", "does_not_exist"),
    ("gt_9", "lt_9", "does_not_exist"),
    ("lt_1", "exists", "lt_1"),
    ("lt_1", "does_not_exist", "does_not_exist"),
    ("lt_1", "in_a", "does_not_exist"),
    ("lt_1", "in_b", "does_not_exist"),
    ("lt_1", "in_ab", "does_not_exist"),
    ("lt_1", "not_in_a", "lt_1"),
    ("lt_1", "in_1", "does_not_exist"),
    ("lt_1", "in_9", "does_not_exist"),
    ("lt_1", "in_19", "does_not_exist"),
    ("lt_1", "not_in_12", "lt_1"),
    ("lt_1", "gt_1", "does_not_exist"),
    ("lt_1", "gt_9", "does_not_exist"),
    ("lt_1", "lt_1", "lt_1"),
    ("lt_1", "lt_9", "lt_1"),
    ("lt_9", "exists", "lt_9"),
    ("lt_9", "does_not_exist", "does_not_exist"),
    ("lt_9", "in_a", "does_not_exist"),
    ("lt_9", "in_b", "does_not_exist"),
    ("lt_9", "in_ab", "does_not_exist"),
    ("lt_9", "not_in_a", "lt_9"),
    ("lt_9", "in_1", "in_1"),
    ("lt_9", "in_9", "does_not_exist"),
    ("lt_9", "in_19", "in_1"),
    ("lt_9", "not_in_12", r(True, {"1", "2"}, lte=8)),
    ("lt_9", "gt_1", r(True, set(), gte=2, lte=8)),
    ("lt_9", "gt_9", "does_not_exist"),
    ("lt_9", "lt_1", "lt_1"),
    ("lt_9", "lt_9", "lt_9"),
]

# upstream: "should intersect requirement with minValues with a requirement without"
INTERSECT_ONE_SIDE_MIN_VALUES = [
    ("exists_mv", "exists", "exists_mv"),
    ("exists_mv", "does_not_exist", "does_not_exist_mv"),
    ("exists_mv", "in_a", "in_a_mv"),
    ("exists_mv", "in_b", "in_b_mv"),
    ("exists_mv", "in_ab", r(False, {"A", "B"}, min_values=1)),
    ("exists_mv", "not_in_a", "not_in_a_mv"),
    ("exists_mv", "in_1", "in_1_mv"),
    ("exists_mv", "in_9", "in_9_mv"),
    ("exists_mv", "in_19", r(False, {"1", "9"}, min_values=1)),
    ("exists_mv", "not_in_12", r(True, {"1", "2"}, min_values=1)),
    ("exists_mv", "gt_1", "gt_1_mv"),
    ("exists_mv", "gt_9", "gt_9_mv"),
    ("exists_mv", "lt_1", "lt_1_mv"),
    ("exists_mv", "lt_9", "lt_9_mv"),
    ("exists_mv", "exists", "exists_mv"),
    ("does_not_exist_mv", "exists", "does_not_exist_mv"),
    ("does_not_exist_mv", "does_not_exist", "does_not_exist_mv"),
    ("does_not_exist_mv", "in_a", "does_not_exist_mv"),
    ("does_not_exist_mv", "in_b", "does_not_exist_mv"),
    ("does_not_exist_mv", "in_ab", "does_not_exist_mv"),
    ("does_not_exist_mv", "not_in_a", "does_not_exist_mv"),
    ("does_not_exist_mv", "in_1", "does_not_exist_mv"),
    ("does_not_exist_mv", "in_9", "does_not_exist_mv"),
    ("does_not_exist_mv", "in_19", "does_not_exist_mv"),
    ("does_not_exist_mv", "not_in_12", "does_not_exist_mv"),
    ("does_not_exist_mv", "gt_1", "does_not_exist_mv"),
    ("does_not_exist_mv", "gt_9", "does_not_exist_mv"),
    ("does_not_exist_mv", "lt_1", "does_not_exist_mv"),
    ("does_not_exist_mv", "lt_9", "does_not_exist_mv"),
    ("in_a_mv", "exists", "in_a_mv"),
    ("in_a_mv", "does_not_exist", "does_not_exist_mv"),
    ("in_a_mv", "in_a", "in_a_mv"),
    ("in_a_mv", "in_b", "does_not_exist_mv"),
    ("in_a_mv", "in_ab", "in_a_mv"),
    ("in_a_mv", "not_in_a", "does_not_exist_mv"),
    ("in_a_mv", "in_1", "does_not_exist_mv"),
    ("in_a_mv", "in_9", "does_not_exist_mv"),
    ("in_a_mv", "in_19", "does_not_exist_mv"),
    ("in_a_mv", "not_in_12", "in_a_mv"),
    ("in_a_mv", "gt_1", "does_not_exist_mv"),
    ("in_a_mv", "gt_9", "does_not_exist_mv"),
    ("in_a_mv", "lt_1", "does_not_exist_mv"),
    ("in_a_mv", "lt_9", "does_not_exist_mv"),
    ("in_b_mv", "exists", "in_b_mv"),
    ("in_b_mv", "does_not_exist", "does_not_exist_mv"),
    ("in_b_mv", "in_a", "does_not_exist_mv"),
    ("in_b_mv", "in_b", "in_b_mv"),
    ("in_b_mv", "in_ab", "in_b_mv"),
    ("in_b_mv", "not_in_a", "in_b_mv"),
    ("in_b_mv", "in_1", "does_not_exist_mv"),
    ("in_b_mv", "in_9", "does_not_exist_mv"),
    ("in_b_mv", "in_19", "does_not_exist_mv"),
    ("in_b_mv", "not_in_12", "in_b_mv"),
    ("in_b_mv", "gt_1", "does_not_exist_mv"),
    ("in_b_mv", "gt_9", "does_not_exist_mv"),
    ("in_b_mv", "lt_1", "does_not_exist_mv"),
    ("in_b_mv", "lt_9", "does_not_exist_mv"),
    ("in_ab_mv", "exists", "in_ab_mv"),
    ("in_ab_mv", "does_not_exist", r(False, set(), min_values=2)),
    ("in_ab_mv", "in_a", r(False, {"A"}, min_values=2)),
    ("in_ab_mv", "in_b", r(False, {"B"}, min_values=2)),
    ("in_ab_mv", "in_ab", "in_ab_mv"),
    ("in_ab_mv", "not_in_a", r(False, {"B"}, min_values=2)),
    ("in_ab_mv", "in_1", r(False, set(), min_values=2)),
    ("in_ab_mv", "in_9", r(False, set(), min_values=2)),
    ("in_ab_mv", "in_19", r(False, set(), min_values=2)),
    ("in_ab_mv", "not_in_12", r(False, {"A", "B"}, min_values=2)),
    ("in_ab_mv", "gt_1", r(False, set(), min_values=2)),
    ("in_ab_mv", "gt_9", r(False, set(), min_values=2)),
    ("in_ab_mv", "lt_1", r(False, set(), min_values=2)),
    ("in_ab_mv", "lt_9", r(False, set(), min_values=2)),
    ("not_in_a_mv", "exists", "not_in_a_mv"),
    ("not_in_a_mv", "does_not_exist", "does_not_exist_mv"),
    ("not_in_a_mv", "in_a", "does_not_exist_mv"),
    ("not_in_a_mv", "in_b", "in_b_mv"),
    ("not_in_a_mv", "in_ab", "in_b_mv"),
    ("not_in_a_mv", "not_in_a", "not_in_a_mv"),
    ("not_in_a_mv", "in_1", "in_1_mv"),
    ("not_in_a_mv", "in_9", "in_9_mv"),
    ("not_in_a_mv", "in_19", r(False, {"1", "9"}, min_values=1)),
    ("not_in_a_mv", "not_in_12", r(True, {"1", "2", "A"}, min_values=1)),
    ("not_in_a_mv", "gt_1", "gt_1_mv"),
    ("not_in_a_mv", "gt_9", "gt_9_mv"),
    ("not_in_a_mv", "lt_1", "lt_1_mv"),
    ("not_in_a_mv", "lt_9", "lt_9_mv"),
    ("in_1_mv", "exists", "in_1_mv"),
    ("in_1_mv", "does_not_exist", "does_not_exist_mv"),
    ("in_1_mv", "in_a", "does_not_exist_mv"),
    ("in_1_mv", "in_b", "does_not_exist_mv"),
    ("in_1_mv", "in_ab", "does_not_exist_mv"),
    ("in_1_mv", "not_in_a", "in_1_mv"),
    ("in_1_mv", "in_1", "in_1_mv"),
    ("in_1_mv", "in_9", "does_not_exist_mv"),
    ("in_1_mv", "in_19", "in_1_mv"),
    ("in_1_mv", "not_in_12", "does_not_exist_mv"),
    ("in_1_mv", "gt_1", "does_not_exist_mv"),
    ("in_1_mv", "gt_9", "does_not_exist_mv"),
    ("in_1_mv", "lt_1", "does_not_exist_mv"),
    ("in_1_mv", "lt_9", "in_1_mv"),
    ("in_9_mv", "exists", "in_9_mv"),
    ("in_9_mv", "does_not_exist", "does_not_exist_mv"),
    ("in_9_mv", "in_a", "does_not_exist_mv"),
    ("in_9_mv", "in_b", "does_not_exist_mv"),
    ("in_9_mv", "in_ab", "does_not_exist_mv"),
    ("in_9_mv", "not_in_a", "in_9_mv"),
    ("in_9_mv", "in_1", "does_not_exist_mv"),
    ("in_9_mv", "in_9", "in_9_mv"),
    ("in_9_mv", "in_19", "in_9_mv"),
    ("in_9_mv", "not_in_12", "in_9_mv"),
    ("in_9_mv", "gt_1", "in_9_mv"),
    ("in_9_mv", "gt_9", "does_not_exist_mv"),
    ("in_9_mv", "lt_1", "does_not_exist_mv"),
    ("in_9_mv", "lt_9", "does_not_exist_mv"),
    ("in_19_mv", "exists", "in_19_mv"),
    ("in_19_mv", "does_not_exist", r(False, set(), min_values=2)),
    ("in_19_mv", "in_a", r(False, set(), min_values=2)),
    ("in_19_mv", "in_b", r(False, set(), min_values=2)),
    ("in_19_mv", "in_ab", r(False, set(), min_values=2)),
    ("in_19_mv", "not_in_a", r(False, {"1", "9"}, min_values=2)),
    ("in_19_mv", "in_1", r(False, {"1"}, min_values=2)),
    ("in_19_mv", "in_9", r(False, {"9"}, min_values=2)),
    ("in_19_mv", "in_19", "in_19_mv"),
    ("in_19_mv", "not_in_12", r(False, {"9"}, min_values=2)),
    ("in_19_mv", "gt_1", r(False, {"9"}, min_values=2)),
    ("in_19_mv", "gt_9", r(False, set(), min_values=2)),
    ("in_19_mv", "lt_1", r(False, set(), min_values=2)),
    ("in_19_mv", "lt_9", r(False, {"1"}, min_values=2)),
    ("not_in_12_mv", "exists", "not_in_12_mv"),
    ("not_in_12_mv", "does_not_exist", r(False, set(), min_values=2)),
    ("not_in_12_mv", "in_a", r(False, {"A"}, min_values=2)),
    ("not_in_12_mv", "in_b", r(False, {"B"}, min_values=2)),
    ("not_in_12_mv", "in_ab", "in_ab_mv"),
    ("not_in_12_mv", "not_in_a", r(True, {"1", "2", "A"}, min_values=2)),
    ("not_in_12_mv", "in_1", r(False, set(), min_values=2)),
    ("not_in_12_mv", "in_9", r(False, {"9"}, min_values=2)),
    ("not_in_12_mv", "in_19", r(False, {"9"}, min_values=2)),
    ("not_in_12_mv", "not_in_12", "not_in_12_mv"),
    ("not_in_12_mv", "gt_1", r(True, {"2"}, gte=2, min_values=2)),
    ("not_in_12_mv", "gt_9", r(True, set(), gte=10, min_values=2)),
    ("not_in_12_mv", "lt_1", r(True, set(), lte=0, min_values=2)),
    ("not_in_12_mv", "lt_9", r(True, {"1", "2"}, lte=8, min_values=2)),
    ("gt_1_mv", "exists", "gt_1_mv"),
    ("gt_1_mv", "does_not_exist", "does_not_exist_mv"),
    ("gt_1_mv", "in_a", "does_not_exist_mv"),
    ("gt_1_mv", "in_b", "does_not_exist_mv"),
    ("gt_1_mv", "in_ab", "does_not_exist_mv"),
    ("gt_1_mv", "not_in_a", "gt_1_mv"),
    ("gt_1_mv", "in_1", "does_not_exist_mv"),
    ("gt_1_mv", "in_9", "in_9_mv"),
    ("gt_1_mv", "in_19", "in_9_mv"),
    ("gt_1_mv", "not_in_12", r(True, {"2"}, gte=2, min_values=1)),
    ("gt_1_mv", "gt_1", "gt_1_mv"),
    ("gt_1_mv", "gt_9", "gt_9_mv"),
    ("gt_1_mv", "lt_1", "does_not_exist_mv"),
    ("gt_1_mv", "lt_9", r(True, set(), gte=2, lte=8, min_values=1)),
    ("gt_9_mv", "exists", "gt_9_mv"),
    ("gt_9_mv", "does_not_exist", "does_not_exist_mv"),
    ("gt_9_mv", "in_a", "does_not_exist_mv"),
    ("gt_9_mv", "in_b", "does_not_exist_mv"),
    ("gt_9_mv", "in_ab", "does_not_exist_mv"),
    ("gt_9_mv", "not_in_a", "gt_9_mv"),
    ("gt_9_mv", "in_1", "does_not_exist_mv"),
    ("gt_9_mv", "in_9", "does_not_exist_mv"),
    ("gt_9_mv", "in_19", "does_not_exist_mv"),
    ("gt_9_mv", "not_in_12", "gt_9_mv"),
    ("gt_9_mv", "gt_1", "gt_9_mv"),
    ("gt_9_mv", "gt_9", "gt_9_mv"),
    ("gt_9_mv", "lt_1", "does_not_exist_mv"),
    ("gt_9_mv", "lt_9", "does_not_exist_mv"),
    ("lt_1_mv", "exists", "lt_1_mv"),
    ("lt_1_mv", "does_not_exist", "does_not_exist_mv"),
    ("lt_1_mv", "in_a", "does_not_exist_mv"),
    ("lt_1_mv", "in_b", "does_not_exist_mv"),
    ("lt_1_mv", "in_ab", "does_not_exist_mv"),
    ("lt_1_mv", "not_in_a", "lt_1_mv"),
    ("lt_1_mv", "in_1", "does_not_exist_mv"),
    ("lt_1_mv", "in_9", "does_not_exist_mv"),
    ("lt_1_mv", "in_19", "does_not_exist_mv"),
    ("lt_1_mv", "not_in_12", "lt_1_mv"),
    ("lt_1_mv", "gt_1", "does_not_exist_mv"),
    ("lt_1_mv", "gt_9", "does_not_exist_mv"),
    ("lt_1_mv", "lt_1", "lt_1_mv"),
    ("lt_1_mv", "lt_9", "lt_1_mv"),
    ("lt_9_mv", "exists", "lt_9_mv"),
    ("lt_9_mv", "does_not_exist", "does_not_exist_mv"),
    ("lt_9_mv", "in_a", "does_not_exist_mv"),
    ("lt_9_mv", "in_b", "does_not_exist_mv"),
    ("lt_9_mv", "in_ab", "does_not_exist_mv"),
    ("lt_9_mv", "not_in_a", "lt_9_mv"),
    ("lt_9_mv", "in_1", "in_1_mv"),
    ("lt_9_mv", "in_9", "does_not_exist_mv"),
    ("lt_9_mv", "in_19", "in_1_mv"),
    ("lt_9_mv", "not_in_12", r(True, {"1", "2"}, lte=8, min_values=1)),
    ("lt_9_mv", "gt_1", r(True, set(), gte=2, lte=8, min_values=1)),
    ("lt_9_mv", "gt_9", "does_not_exist_mv"),
    ("lt_9_mv", "lt_1", "lt_1_mv"),
    ("lt_9_mv", "lt_9", "lt_9_mv"),
]

# upstream: "should intersect two requirements with minValues"
INTERSECT_BOTH_MIN_VALUES = [
    ("exists_mv", "exists_mv", "exists_mv"),
    ("exists_mv", "does_not_exist_mv", "does_not_exist_mv"),
    ("exists_mv", "in_a_mv", "in_a_mv"),
    ("exists_mv", "in_b_mv", "in_b_mv"),
    ("exists_mv", "in_ab_mv", r(False, {"A", "B"}, min_values=2)),
    ("exists_mv", "not_in_a_mv", "not_in_a_mv"),
    ("exists_mv", "in_1_mv", "in_1_mv"),
    ("exists_mv", "in_9_mv", "in_9_mv"),
    ("exists_mv", "in_19_mv", r(False, {"1", "9"}, min_values=2)),
    ("exists_mv", "not_in_12_mv", r(True, {"1", "2"}, min_values=2)),
    ("exists_mv", "gt_1_mv", "gt_1_mv"),
    ("exists_mv", "gt_9_mv", "gt_9_mv"),
    ("exists_mv", "lt_1_mv", "lt_1_mv"),
    ("exists_mv", "lt_9_mv", "lt_9_mv"),
    ("exists_mv", "exists_mv", "exists_mv"),
    ("does_not_exist_mv", "exists_mv", "does_not_exist_mv"),
    ("does_not_exist_mv", "does_not_exist_mv", "does_not_exist_mv"),
    ("does_not_exist_mv", "in_a_mv", "does_not_exist_mv"),
    ("does_not_exist_mv", "in_b_mv", "does_not_exist_mv"),
    ("does_not_exist_mv", "in_ab_mv", r(False, set(), min_values=2)),
    ("does_not_exist_mv", "not_in_a_mv", "does_not_exist_mv"),
    ("does_not_exist_mv", "in_1_mv", "does_not_exist_mv"),
    ("does_not_exist_mv", "in_9_mv", "does_not_exist_mv"),
    ("does_not_exist_mv", "in_19_mv", r(False, set(), min_values=2)),
    ("does_not_exist_mv", "not_in_12_mv", r(False, set(), min_values=2)),
    ("does_not_exist_mv", "gt_1_mv", "does_not_exist_mv"),
    ("does_not_exist_mv", "gt_9_mv", "does_not_exist_mv"),
    ("does_not_exist_mv", "lt_1_mv", "does_not_exist_mv"),
    ("does_not_exist_mv", "lt_9_mv", "does_not_exist_mv"),
    ("in_a_mv", "exists_mv", "in_a_mv"),
    ("in_a_mv", "does_not_exist_mv", "does_not_exist_mv"),
    ("in_a_mv", "in_a_mv", "in_a_mv"),
    ("in_a_mv", "in_b_mv", "does_not_exist_mv"),
    ("in_a_mv", "in_ab_mv", r(False, {"A"}, min_values=2)),
    ("in_a_mv", "not_in_a_mv", "does_not_exist_mv"),
    ("in_a_mv", "in_1_mv", "does_not_exist_mv"),
    ("in_a_mv", "in_9_mv", "does_not_exist_mv"),
    ("in_a_mv", "in_19_mv", r(False, set(), min_values=2)),
    ("in_a_mv", "not_in_12_mv", r(False, {"A"}, min_values=2)),
    ("in_a_mv", "gt_1_mv", "does_not_exist_mv"),
    ("in_a_mv", "gt_9_mv", "does_not_exist_mv"),
    ("in_a_mv", "lt_1_mv", "does_not_exist_mv"),
    ("in_a_mv", "lt_9_mv", "does_not_exist_mv"),
    ("in_b_mv", "exists_mv", "in_b_mv"),
    ("in_b_mv", "does_not_exist_mv", "does_not_exist_mv"),
    ("in_b_mv", "in_a_mv", "does_not_exist_mv"),
    ("in_b_mv", "in_b_mv", "in_b_mv"),
    ("in_b_mv", "in_ab_mv", r(False, {"B"}, min_values=2)),
    ("in_b_mv", "not_in_a_mv", "in_b_mv"),
    ("in_b_mv", "in_1_mv", "does_not_exist_mv"),
    ("in_b_mv", "in_9_mv", "does_not_exist_mv"),
    ("in_b_mv", "in_19_mv", r(False, set(), min_values=2)),
    ("in_b_mv", "not_in_12_mv", r(False, {"B"}, min_values=2)),
    ("in_b_mv", "gt_1_mv", "does_not_exist_mv"),
    ("in_b_mv", "gt_9_mv", "does_not_exist_mv"),
    ("in_b_mv", "lt_1_mv", "does_not_exist_mv"),
    ("in_b_mv", "lt_9_mv", "does_not_exist_mv"),
    ("in_ab_mv", "exists_mv", "in_ab_mv"),
    ("in_ab_mv", "does_not_exist_mv", r(False, set(), min_values=2)),
    ("in_ab_mv", "in_a_mv", r(False, {"A"}, min_values=2)),
    ("in_ab_mv", "in_b_mv", r(False, {"B"}, min_values=2)),
    ("in_ab_mv", "in_ab_mv", "in_ab_mv"),
    ("in_ab_mv", "not_in_a_mv", r(False, {"B"}, min_values=2)),
    ("in_ab_mv", "in_1_mv", r(False, set(), min_values=2)),
    ("in_ab_mv", "in_9_mv", r(False, set(), min_values=2)),
    ("in_ab_mv", "in_19_mv", r(False, set(), min_values=2)),
    ("in_ab_mv", "not_in_12_mv", r(False, {"A", "B"}, min_values=2)),
    ("in_ab_mv", "gt_1_mv", r(False, set(), min_values=2)),
    ("in_ab_mv", "gt_9_mv", r(False, set(), min_values=2)),
    ("in_ab_mv", "lt_1_mv", r(False, set(), min_values=2)),
    ("in_ab_mv", "lt_9_mv", r(False, set(), min_values=2)),
    ("not_in_a_mv", "exists_mv", "not_in_a_mv"),
    ("not_in_a_mv", "does_not_exist_mv", "does_not_exist_mv"),
    ("not_in_a_mv", "in_a_mv", "does_not_exist_mv"),
    ("not_in_a_mv", "in_b_mv", "in_b_mv"),
    ("not_in_a_mv", "in_ab_mv", r(False, {"B"}, min_values=2)),
    ("not_in_a_mv", "not_in_a_mv", "not_in_a_mv"),
    ("not_in_a_mv", "in_1_mv", "in_1_mv"),
    ("not_in_a_mv", "in_9_mv", "in_9_mv"),
    ("not_in_a_mv", "in_19_mv", r(False, {"1", "9"}, min_values=2)),
    ("not_in_a_mv", "not_in_12_mv", r(True, {"1", "2", "A"}, min_values=2)),
    ("not_in_a_mv", "gt_1_mv", "gt_1_mv"),
    ("not_in_a_mv", "gt_9_mv", "gt_9_mv"),
    ("not_in_a_mv", "lt_1_mv", "lt_1_mv"),
    ("not_in_a_mv", "lt_9_mv", "lt_9_mv"),
    ("in_1_mv", "exists_mv", "in_1_mv"),
    ("in_1_mv", "does_not_exist_mv", "does_not_exist_mv"),
    ("in_1_mv", "in_a_mv", "does_not_exist_mv"),
    ("in_1_mv", "in_b_mv", "does_not_exist_mv"),
    ("in_1_mv", "in_ab_mv", r(False, set(), min_values=2)),
    ("in_1_mv", "not_in_a_mv", "in_1_mv"),
    ("in_1_mv", "in_1_mv", "in_1_mv"),
    ("in_1_mv", "in_9_mv", "does_not_exist_mv"),
    ("in_1_mv", "in_19_mv", r(False, {"1"}, min_values=2)),
    ("in_1_mv", "not_in_12_mv", r(False, set(), min_values=2)),
    ("in_1_mv", "gt_1_mv", "does_not_exist_mv"),
    ("in_1_mv", "gt_9_mv", "does_not_exist_mv"),
    ("in_1_mv", "lt_1_mv", "does_not_exist_mv"),
    ("in_1_mv", "lt_9_mv", "in_1_mv"),
    ("in_9_mv", "exists_mv", "in_9_mv"),
    ("in_9_mv", "does_not_exist_mv", "does_not_exist_mv"),
    ("in_9_mv", "in_a_mv", "does_not_exist_mv"),
    ("in_9_mv", "in_b_mv", "does_not_exist_mv"),
    ("in_9_mv", "in_ab_mv", r(False, set(), min_values=2)),
    ("in_9_mv", "not_in_a_mv", "in_9_mv"),
    ("in_9_mv", "in_1_mv", "does_not_exist_mv"),
    ("in_9_mv", "in_9_mv", "in_9_mv"),
    ("in_9_mv", "in_19_mv", r(False, {"9"}, min_values=2)),
    ("in_9_mv", "not_in_12_mv", r(False, {"9"}, min_values=2)),
    ("in_9_mv", "gt_1_mv", "in_9_mv"),
    ("in_9_mv", "gt_9_mv", "does_not_exist_mv"),
    ("in_9_mv", "lt_1_mv", "does_not_exist_mv"),
    ("in_9_mv", "lt_9_mv", "does_not_exist_mv"),
    ("in_19_mv", "exists_mv", "in_19_mv"),
    ("in_19_mv", "does_not_exist_mv", r(False, set(), min_values=2)),
    ("in_19_mv", "in_a_mv", r(False, set(), min_values=2)),
    ("in_19_mv", "in_b_mv", r(False, set(), min_values=2)),
    ("in_19_mv", "in_ab_mv", r(False, set(), min_values=2)),
    ("in_19_mv", "not_in_a_mv", r(False, {"1", "9"}, min_values=2)),
    ("in_19_mv", "in_1_mv", r(False, {"1"}, min_values=2)),
    ("in_19_mv", "in_9_mv", r(False, {"9"}, min_values=2)),
    ("in_19_mv", "in_19_mv", "in_19_mv"),
    ("in_19_mv", "not_in_12_mv", r(False, {"9"}, min_values=2)),
    ("in_19_mv", "gt_1_mv", r(False, {"9"}, min_values=2)),
    ("in_19_mv", "gt_9_mv", r(False, set(), min_values=2)),
    ("in_19_mv", "lt_1_mv", r(False, set(), min_values=2)),
    ("in_19_mv", "lt_9_mv", r(False, {"1"}, min_values=2)),
    ("not_in_12_mv", "exists_mv", "not_in_12_mv"),
    ("not_in_12_mv", "does_not_exist_mv", r(False, set(), min_values=2)),
    ("not_in_12_mv", "in_a_mv", r(False, {"A"}, min_values=2)),
    ("not_in_12_mv", "in_b_mv", r(False, {"B"}, min_values=2)),
    ("not_in_12_mv", "in_ab_mv", "in_ab_mv"),
    ("not_in_12_mv", "not_in_a_mv", r(True, {"1", "2", "A"}, min_values=2)),
    ("not_in_12_mv", "in_1_mv", r(False, set(), min_values=2)),
    ("not_in_12_mv", "in_9_mv", r(False, {"9"}, min_values=2)),
    ("not_in_12_mv", "in_19_mv", r(False, {"9"}, min_values=2)),
    ("not_in_12_mv", "not_in_12_mv", "not_in_12_mv"),
    ("not_in_12_mv", "gt_1_mv", r(True, {"2"}, gte=2, min_values=2)),
    ("not_in_12_mv", "gt_9_mv", r(True, set(), gte=10, min_values=2)),
    ("not_in_12_mv", "lt_1_mv", r(True, set(), lte=0, min_values=2)),
    ("not_in_12_mv", "lt_9_mv", r(True, {"1", "2"}, lte=8, min_values=2)),
    ("gt_1_mv", "exists_mv", "gt_1_mv"),
    ("gt_1_mv", "does_not_exist_mv", "does_not_exist_mv"),
    ("gt_1_mv", "in_a_mv", "does_not_exist_mv"),
    ("gt_1_mv", "in_b_mv", "does_not_exist_mv"),
    ("gt_1_mv", "in_ab_mv", r(False, set(), min_values=2)),
    ("gt_1_mv", "not_in_a_mv", "gt_1_mv"),
    ("gt_1_mv", "in_1_mv", "does_not_exist_mv"),
    ("gt_1_mv", "in_9_mv", "in_9_mv"),
    ("gt_1_mv", "in_19_mv", r(False, {"9"}, min_values=2)),
    ("gt_1_mv", "not_in_12_mv", r(True, {"2"}, gte=2, min_values=2)),
    ("gt_1_mv", "gt_1_mv", "gt_1_mv"),
    ("gt_1_mv", "gt_9_mv", "gt_9_mv"),
    ("gt_1_mv", "lt_1_mv", "does_not_exist_mv"),
    ("gt_1_mv", "lt_9_mv", r(True, set(), gte=2, lte=8, min_values=1)),
    ("gt_9_mv", "exists_mv", "gt_9_mv"),
    ("gt_9_mv", "does_not_exist_mv", "does_not_exist_mv"),
    ("gt_9_mv", "in_a_mv", "does_not_exist_mv"),
    ("gt_9_mv", "in_b_mv", "does_not_exist_mv"),
    ("gt_9_mv", "in_ab_mv", r(False, set(), min_values=2)),
    ("gt_9_mv", "not_in_a_mv", "gt_9_mv"),
    ("gt_9_mv", "in_1_mv", "does_not_exist_mv"),
    ("gt_9_mv", "in_9_mv", "does_not_exist_mv"),
    ("gt_9_mv", "in_19_mv", r(False, set(), min_values=2)),
    ("gt_9_mv", "not_in_12_mv", r(True, set(), gte=10, min_values=2)),
    ("gt_9_mv", "gt_1_mv", "gt_9_mv"),
    ("gt_9_mv", "gt_9_mv", "gt_9_mv"),
    ("gt_9_mv", "lt_1_mv", "does_not_exist_mv"),
    ("gt_9_mv", "lt_9_mv", "does_not_exist_mv"),
    ("lt_1_mv", "exists_mv", "lt_1_mv"),
    ("lt_1_mv", "does_not_exist_mv", "does_not_exist_mv"),
    ("lt_1_mv", "in_a_mv", "does_not_exist_mv"),
    ("lt_1_mv", "in_b_mv", "does_not_exist_mv"),
    ("lt_1_mv", "in_ab_mv", r(False, set(), min_values=2)),
    ("lt_1_mv", "not_in_a_mv", "lt_1_mv"),
    ("lt_1_mv", "in_1_mv", "does_not_exist_mv"),
    ("lt_1_mv", "in_9_mv", "does_not_exist_mv"),
    ("lt_1_mv", "in_19_mv", r(False, set(), min_values=2)),
    ("lt_1_mv", "not_in_12_mv", r(True, set(), lte=0, min_values=2)),
    ("lt_1_mv", "gt_1_mv", "does_not_exist_mv"),
    ("lt_1_mv", "gt_9_mv", "does_not_exist_mv"),
    ("lt_1_mv", "lt_1_mv", "lt_1_mv"),
    ("lt_1_mv", "lt_9_mv", "lt_1_mv"),
    ("lt_9_mv", "exists_mv", "lt_9_mv"),
    ("lt_9_mv", "does_not_exist_mv", "does_not_exist_mv"),
    ("lt_9_mv", "in_a_mv", "does_not_exist_mv"),
    ("lt_9_mv", "in_b_mv", "does_not_exist_mv"),
    ("lt_9_mv", "in_ab_mv", r(False, set(), min_values=2)),
    ("lt_9_mv", "not_in_a_mv", "lt_9_mv"),
    ("lt_9_mv", "in_1_mv", "in_1_mv"),
    ("lt_9_mv", "in_9_mv", "does_not_exist_mv"),
    ("lt_9_mv", "in_19_mv", r(False, {"1"}, min_values=2)),
    ("lt_9_mv", "not_in_12_mv", r(True, {"1", "2"}, lte=8, min_values=2)),
    ("lt_9_mv", "gt_1_mv", r(True, set(), gte=2, lte=8, min_values=1)),
    ("lt_9_mv", "gt_9_mv", "does_not_exist_mv"),
    ("lt_9_mv", "lt_1_mv", "lt_1_mv"),
    ("lt_9_mv", "lt_9_mv", "lt_9_mv"),
]

HAS_TABLE = [
    ("exists", "A", True),
    ("does_not_exist", "A", False),
    ("in_a", "A", True),
    ("in_b", "A", False),
    ("in_ab", "A", True),
    ("not_in_a", "A", False),
    ("in_1", "A", False),
    ("in_9", "A", False),
    ("in_19", "A", False),
    ("not_in_12", "A", True),
    ("gt_1", "A", False),
    ("gt_9", "A", False),
    ("lt_1", "A", False),
    ("lt_9", "A", False),
    ("exists", "B", True),
    ("does_not_exist", "B", False),
    ("in_a", "B", False),
    ("in_b", "B", True),
    ("in_ab", "B", True),
    ("not_in_a", "B", True),
    ("in_1", "B", False),
    ("in_9", "B", False),
    ("in_19", "B", False),
    ("not_in_12", "B", True),
    ("gt_1", "B", False),
    ("gt_9", "B", False),
    ("lt_1", "B", False),
    ("lt_9", "B", False),
    ("exists", "1", True),
    ("does_not_exist", "1", False),
    ("in_a", "1", False),
    ("in_b", "1", False),
    ("in_ab", "1", False),
    ("not_in_a", "1", True),
    ("in_1", "1", True),
    ("in_9", "1", False),
    ("in_19", "1", True),
    ("not_in_12", "1", False),
    ("gt_1", "1", False),
    ("gt_9", "1", False),
    ("lt_1", "1", False),
    ("lt_9", "1", True),
    ("exists", "2", True),
    ("does_not_exist", "2", False),
    ("in_a", "2", False),
    ("in_b", "2", False),
    ("in_ab", "2", False),
    ("not_in_a", "2", True),
    ("in_1", "2", False),
    ("in_9", "2", False),
    ("in_19", "2", False),
    ("not_in_12", "2", False),
    ("gt_1", "2", True),
    ("gt_9", "2", False),
    ("lt_1", "2", False),
    ("lt_9", "2", True),
    ("exists", "9", True),
    ("does_not_exist", "9", False),
    ("in_a", "9", False),
    ("in_b", "9", False),
    ("in_ab", "9", False),
    ("not_in_a", "9", True),
    ("in_1", "9", False),
    ("in_9", "9", True),
    ("in_19", "9", True),
    ("not_in_12", "9", True),
    ("gt_1", "9", True),
    ("gt_9", "9", False),
    ("lt_1", "9", False),
    ("lt_9", "9", False),
]


def _ids(table: list[tuple[object, ...]]) -> list[str]:
    return [f"{a}∩{b}" for a, b, *_ in table]


@pytest.mark.parametrize(
    ("existing", "incoming", "expected"), INTERSECT_NO_MIN_VALUES, ids=_ids(INTERSECT_NO_MIN_VALUES)
)
def test_intersection_without_min_values(
    existing: str, incoming: str, expected: str | Requirement
) -> None:
    assert REQ[existing].intersection(REQ[incoming]) == _resolve(expected)


@pytest.mark.parametrize(
    ("existing", "incoming", "expected"),
    INTERSECT_ONE_SIDE_MIN_VALUES,
    ids=_ids(INTERSECT_ONE_SIDE_MIN_VALUES),
)
def test_intersection_with_min_values_on_one_side(
    existing: str, incoming: str, expected: str | Requirement
) -> None:
    assert REQ[existing].intersection(REQ[incoming]) == _resolve(expected)


@pytest.mark.parametrize(
    ("existing", "incoming", "expected"),
    INTERSECT_BOTH_MIN_VALUES,
    ids=_ids(INTERSECT_BOTH_MIN_VALUES),
)
def test_intersection_with_min_values_on_both_sides(
    existing: str, incoming: str, expected: str | Requirement
) -> None:
    assert REQ[existing].intersection(REQ[incoming]) == _resolve(expected)


@pytest.mark.parametrize(
    ("name", "value", "expected"), HAS_TABLE, ids=[f"{n}.has({v})" for n, v, _ in HAS_TABLE]
)
def test_has(name: str, value: str, expected: bool) -> None:
    assert REQ[name].has(value) is expected


# --- construction ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("legacy", "canonical"), sorted(labels.NORMALIZED_LABELS.items()))
def test_new_normalises_legacy_keys(legacy: str, canonical: str) -> None:
    assert Requirement.new(legacy, IN, ["x"]).key == canonical


def test_new_applies_registered_value_normalisation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(labels.NORMALIZED_LABEL_VALUES, labels.LABEL_ARCH, {"x86_64": "amd64"})
    assert Requirement.new(labels.LABEL_ARCH, IN, ["x86_64", "arm64"]).values == {"amd64", "arm64"}
    assert Requirement.new(labels.LABEL_ARCH, NOT_IN, ["x86_64"]).values == {"amd64"}


@pytest.mark.parametrize(
    ("operator", "value", "expected"),
    [
        (GT, "1", r(True, set(), gte=2)),
        (LT, "9", r(True, set(), lte=8)),
        (GTE, "5", r(True, set(), gte=5)),
        (LTE, "5", r(True, set(), lte=5)),
        (GT, "-3", r(True, set(), gte=-2)),
        (GTE, "+7", r(True, set(), gte=7)),
        (GT, str(MAX_INT64), r(False, set())),
    ],
)
def test_new_canonicalises_numeric_operators_to_inclusive_bounds(
    operator: str, value: str, expected: Requirement
) -> None:
    assert Requirement.new(K, operator, [value]) == expected


def test_gt_max_int_is_does_not_exist_and_drops_min_values() -> None:
    req = Requirement.new(K, GT, [str(MAX_INT64)], min_values=3)
    assert req.operator() == DOES_NOT_EXIST
    assert req.size() == 0
    assert req.min_values is None  # upstream rebuilds a plain DoesNotExist [quirk]


@pytest.mark.parametrize("operator", [GT, LT, GTE, LTE])
@pytest.mark.parametrize("values", [[], ["a"], ["1", "2"], [" 1"], ["1_0"], ["1.5"], [str(2**63)]])
def test_new_rejects_numeric_operator_without_one_integer(operator: str, values: list[str]) -> None:
    with pytest.raises(ValueError, match=f"operator {operator} needs exactly one integer value"):
        Requirement.new(K, operator, values)


def test_new_rejects_unknown_operator() -> None:
    with pytest.raises(ValueError, match='unknown operator "Equals"'):
        Requirement.new(K, "Equals", ["a"])


def test_operators_constant_lists_all_eight() -> None:
    assert {IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT, GTE, LTE} == OPERATORS


def test_requirement_is_immutable() -> None:
    req = Requirement.new(K, IN, ["a"])
    with pytest.raises(AttributeError):
        req.key = "other"  # type: ignore[misc]
    assert isinstance(req.values, frozenset)


def test_equal_requirements_hash_equal() -> None:
    a = Requirement.new(K, IN, ["a", "b"])
    b = Requirement.new(K, IN, ["b", "a"])
    assert a == b
    assert len({a, b}) == 1


# --- derived views ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "operator"),
    [
        ("exists", EXISTS),
        ("does_not_exist", DOES_NOT_EXIST),
        ("in_a", IN),
        ("in_b", IN),
        ("in_ab", IN),
        ("not_in_a", NOT_IN),
        ("in_1", IN),
        ("in_9", IN),
        ("in_19", IN),
        ("not_in_12", NOT_IN),
        ("gt_1", EXISTS),
        ("gt_9", EXISTS),
        ("lt_1", EXISTS),
        ("lt_9", EXISTS),
    ],
)
def test_operator(name: str, operator: str) -> None:
    assert REQ[name].operator() == operator


@pytest.mark.parametrize(
    ("name", "size"),
    [
        ("exists", MAX_INT64),
        ("does_not_exist", 0),
        ("in_a", 1),
        ("in_b", 1),
        ("in_ab", 2),
        ("not_in_a", MAX_INT64 - 1),
        ("in_1", 1),
        ("in_9", 1),
        ("in_19", 2),
        ("not_in_12", MAX_INT64 - 2),
        ("gt_1", MAX_INT64),
        ("gt_9", MAX_INT64),
        ("lt_1", MAX_INT64),
        ("lt_9", MAX_INT64),
    ],
)
def test_size(name: str, size: int) -> None:
    assert REQ[name].size() == size


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("exists", "key Exists"),
        ("does_not_exist", "key DoesNotExist"),
        ("in_a", "key In [A]"),
        ("in_b", "key In [B]"),
        ("in_ab", "key In [A B]"),
        ("not_in_a", "key NotIn [A]"),
        ("in_1", "key In [1]"),
        ("in_9", "key In [9]"),
        ("in_19", "key In [1 9]"),
        ("not_in_12", "key NotIn [1 2]"),
        ("gt_1", "key Exists >=2"),
        ("gt_9", "key Exists >=10"),
        ("lt_1", "key Exists <=0"),
        ("lt_9", "key Exists <=8"),
        ("in_ab_mv", "key In [A B] minValues 2"),
    ],
)
def test_str(name: str, text: str) -> None:
    assert str(REQ[name]) == text


def test_str_of_bounded_range_and_crossed_bounds() -> None:
    assert str(REQ["gt_1"].intersection(REQ["lt_9"])) == "key Exists >=2 <=8"
    assert str(REQ["gt_9"].intersection(REQ["lt_1"])) == "key DoesNotExist"


def test_str_truncates_after_five_values() -> None:
    req = Requirement.new(K, IN, [f"v{i}" for i in range(8)])
    assert str(req) == "key In [v0 v1 v2 v3 v4 and 3 others]"


def test_str_keeps_not_in_values_next_to_bounds() -> None:
    assert str(REQ["not_in_12"].intersection(REQ["gt_1"])) == "key NotIn [2] >=2"


def _nsr(op: str, values: list[str] | None = None, mv: int | None = None) -> dict[str, object]:
    d: dict[str, object] = {"key": K, "operator": op}
    if values is not None:
        d["values"] = values
    if mv is not None:
        d["minValues"] = mv
    return d


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("exists", _nsr(EXISTS)),
        ("does_not_exist", _nsr(DOES_NOT_EXIST)),
        ("in_a", _nsr(IN, ["A"])),
        ("in_b", _nsr(IN, ["B"])),
        ("in_ab", _nsr(IN, ["A", "B"])),
        ("not_in_a", _nsr(NOT_IN, ["A"])),
        ("in_1", _nsr(IN, ["1"])),
        ("in_9", _nsr(IN, ["9"])),
        ("in_19", _nsr(IN, ["1", "9"])),
        ("not_in_12", _nsr(NOT_IN, ["1", "2"])),
        ("gt_1", _nsr(GTE, ["2"])),
        ("gt_9", _nsr(GTE, ["10"])),
        ("lt_1", _nsr(LTE, ["0"])),
        ("lt_9", _nsr(LTE, ["8"])),
        ("exists_mv", _nsr(EXISTS, mv=1)),
        ("does_not_exist_mv", _nsr(DOES_NOT_EXIST, mv=1)),
        ("in_a_mv", _nsr(IN, ["A"], 1)),
        ("in_b_mv", _nsr(IN, ["B"], 1)),
        ("in_ab_mv", _nsr(IN, ["A", "B"], 2)),
        ("not_in_a_mv", _nsr(NOT_IN, ["A"], 1)),
        ("in_1_mv", _nsr(IN, ["1"], 1)),
        ("in_9_mv", _nsr(IN, ["9"], 1)),
        ("in_19_mv", _nsr(IN, ["1", "9"], 2)),
        ("not_in_12_mv", _nsr(NOT_IN, ["1", "2"], 2)),
        ("gt_1_mv", _nsr(GTE, ["2"], 1)),
        ("gt_9_mv", _nsr(GTE, ["10"], 1)),
        ("lt_1_mv", _nsr(LTE, ["0"], 1)),
        ("lt_9_mv", _nsr(LTE, ["8"], 1)),
    ],
)
def test_to_node_selector_requirement(name: str, expected: dict[str, object]) -> None:
    assert REQ[name].to_node_selector_requirements() == [expected]


def test_both_bounds_serialise_as_two_entries() -> None:
    req = REQ["gt_1_mv"].intersection(REQ["lt_9"])
    assert req.to_node_selector_requirements() == [_nsr(GTE, ["2"], 1), _nsr(LTE, ["8"], 1)]


def test_not_in_values_next_to_a_bound_are_dropped_when_serialised() -> None:
    req = REQ["not_in_12"].intersection(REQ["lt_9"])
    assert req.values == {"1", "2"}
    assert req.to_node_selector_requirements() == [_nsr(LTE, ["8"])]


# --- any ---------------------------------------------------------------------------------------------


def test_any_of_in_is_a_member() -> None:
    assert REQ["in_a"].any() == "A"
    assert REQ["in_19"].any() in {"1", "9"}


def test_any_of_does_not_exist_is_empty() -> None:
    assert REQ["does_not_exist"].any() == ""


@pytest.mark.parametrize("seed", range(20))
def test_any_of_exists_like_requirements_is_an_admitted_integer(seed: int) -> None:
    rng = random.Random(seed)
    for name in ("exists", "not_in_a", "not_in_12", "gt_1", "gt_9", "lt_1", "lt_9"):
        value = REQ[name].any(rng)
        assert int(value) >= 0
        assert REQ[name].has(value), (name, value)


def test_any_of_lt_1_is_zero() -> None:
    assert REQ["lt_1"].any() == "0"


def test_any_never_returns_an_excluded_value() -> None:
    req = Requirement.new(K, GTE, ["0"]).intersection(Requirement.new(K, LTE, ["3"]))
    req = req.intersection(Requirement.new(K, NOT_IN, ["0", "1", "2"]))
    assert {req.any(random.Random(s)) for s in range(30)} == {"3"}


def test_any_of_negative_upper_bound_stays_within_it() -> None:
    req = Requirement.new(K, LTE, ["-5"])
    assert req.has(req.any())


# --- Gte / Lte (upstream "Gte and Lte Operators") -------------------------------------------------


@pytest.mark.parametrize(
    ("requirement", "value", "admitted"),
    [
        ((GTE, "2"), "2", True),
        ((GTE, "2"), "3", True),
        ((GTE, "2"), "100", True),
        ((GTE, "2"), "1", False),
        ((GTE, "2"), "0", False),
        ((LTE, "8"), "8", True),
        ((LTE, "8"), "7", True),
        ((LTE, "8"), "0", True),
        ((LTE, "8"), "9", False),
        ((LTE, "8"), "10", False),
        ((GTE, "0"), "0", True),
        ((GTE, "0"), "-1", False),
        ((LTE, "0"), "0", True),
        ((LTE, "0"), "1", False),
        ((GT, "1"), "2", True),
        ((GT, "1"), "1", False),
        ((LT, "9"), "8", True),
        ((LT, "9"), "9", False),
        ((GTE, "2"), "abc", False),
        ((GTE, "2"), " 3", False),
        ((GTE, "2"), "3_0", False),
        ((GTE, "2"), "+3", True),
        ((GTE, "2"), str(2**63), False),
    ],
)
def test_bounds_admit_only_integers_in_range(
    requirement: tuple[str, str], value: str, admitted: bool
) -> None:
    op, n = requirement
    assert Requirement.new(K, op, [n]).has(value) is admitted


def test_gte_and_lte_intersect_to_a_closed_range() -> None:
    req = Requirement.new(K, GTE, ["2"]).intersection(Requirement.new(K, LTE, ["8"]))
    assert [v for v in ("1", "2", "5", "8", "9") if req.has(v)] == ["2", "5", "8"]


@pytest.mark.parametrize(
    ("a", "b", "operator", "value"),
    [
        ((GT, "4"), (GTE, "5"), GTE, "5"),
        ((GT, "5"), (GTE, "5"), GTE, "6"),
        ((GT, "3"), (GTE, "6"), GTE, "6"),
        ((LT, "5"), (LTE, "5"), LTE, "4"),
        ((LT, "9"), (LTE, "5"), LTE, "5"),
    ],
)
def test_redundant_bounds_collapse_to_the_tighter_one(
    a: tuple[str, str], b: tuple[str, str], operator: str, value: str
) -> None:
    req = Requirement.new(K, a[0], [a[1]]).intersection(Requirement.new(K, b[0], [b[1]]))
    assert req.to_node_selector_requirements() == [_nsr(operator, [value])]


# --- has_intersection -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("existing", "incoming", "expected"), INTERSECT_NO_MIN_VALUES, ids=_ids(INTERSECT_NO_MIN_VALUES)
)
def test_has_intersection_agrees_with_intersection_unless_both_complement(
    existing: str, incoming: str, expected: str | Requirement
) -> None:
    a, b = REQ[existing], REQ[incoming]
    result = _resolve(expected)
    if a.complement and b.complement:
        crossed = result.operator() == DOES_NOT_EXIST
        assert a.has_intersection(b) is not crossed
    else:
        assert a.has_intersection(b) is (result.size() > 0)


def test_has_intersection_of_two_complements_ignores_exclusions() -> None:
    # Gte 1, Lte 1, NotIn [1] admits nothing, yet two complements always "intersect" [quirk].
    only_one = Requirement.new(K, GTE, ["1"]).intersection(Requirement.new(K, LTE, ["1"]))
    not_one = Requirement.new(K, NOT_IN, ["1"])
    assert only_one.intersection(not_one).has("1") is False
    assert only_one.has_intersection(not_one) is True


def test_has_intersection_is_false_when_bounds_cross() -> None:
    assert REQ["gt_9"].has_intersection(REQ["lt_9"]) is False
    assert REQ["gt_9"].has_intersection(REQ["lt_1"]) is False


def test_requirements_survive_pickling() -> None:
    import pickle

    for req in REQ.values():
        assert pickle.loads(pickle.dumps(req)) == req
