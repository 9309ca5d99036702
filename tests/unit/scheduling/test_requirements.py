"""Requirements (key -> Requirement): add, get, compatible, intersects, errors, serialisation,
pod requirements.

The compatibility tables are ported from upstream's ``pkg/scheduling/requirements_test.go``
(every entry): receiver on the left, incoming on the right, on the zone key (well-known).
"""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.apis import labels
from karpenter_core.scheduling.requirements import (
    ALLOW_UNDEFINED_WELL_KNOWN_LABELS,
    DOES_NOT_EXIST,
    EXISTS,
    GT,
    GTE,
    IN,
    LT,
    LTE,
    NOT_IN,
    BadKeyError,
    Requirement,
    Requirements,
    RequirementsError,
    pod_requirements,
    strict_pod_requirements,
)

ZONE = labels.LABEL_TOPOLOGY_ZONE


def _zone(op: str, *values: str) -> Requirements:
    return Requirements(Requirement.new(ZONE, op, values))


REQS: dict[str, Requirements] = {
    "unconstrained": Requirements(),
    "exists": _zone(EXISTS),
    "does_not_exist": _zone(DOES_NOT_EXIST),
    "in_a": _zone(IN, "A"),
    "in_b": _zone(IN, "B"),
    "in_ab": _zone(IN, "A", "B"),
    "not_in_a": _zone(NOT_IN, "A"),
    "in_1": _zone(IN, "1"),
    "in_9": _zone(IN, "9"),
    "in_19": _zone(IN, "1", "9"),
    "not_in_12": _zone(NOT_IN, "1", "2"),
    "gt_1": _zone(GT, "1"),
    "gt_9": _zone(GT, "9"),
    "lt_1": _zone(LT, "1"),
    "lt_9": _zone(LT, "9"),
}

COMPATIBLE_ALLOW_UNDEFINED = [
    ("unconstrained", "unconstrained", True),
    ("unconstrained", "exists", True),
    ("unconstrained", "does_not_exist", True),
    ("unconstrained", "in_a", True),
    ("unconstrained", "in_b", True),
    ("unconstrained", "in_ab", True),
    ("unconstrained", "not_in_a", True),
    ("unconstrained", "in_1", True),
    ("unconstrained", "in_9", True),
    ("unconstrained", "in_19", True),
    ("unconstrained", "not_in_12", True),
    ("unconstrained", "gt_1", True),
    ("unconstrained", "gt_9", True),
    ("unconstrained", "lt_1", True),
    ("unconstrained", "lt_9", True),
    ("exists", "unconstrained", True),
    ("exists", "exists", True),
    ("exists", "does_not_exist", False),
    ("exists", "in_a", True),
    ("exists", "in_b", True),
    ("exists", "in_ab", True),
    ("exists", "not_in_a", True),
    ("exists", "in_1", True),
    ("exists", "in_9", True),
    ("exists", "in_19", True),
    ("exists", "not_in_12", True),
    ("exists", "gt_1", True),
    ("exists", "gt_9", True),
    ("exists", "lt_1", True),
    ("exists", "lt_9", True),
    ("does_not_exist", "unconstrained", True),
    ("does_not_exist", "exists", False),
    ("does_not_exist", "does_not_exist", True),
    ("does_not_exist", "in_a", False),
    ("does_not_exist", "in_b", False),
    ("does_not_exist", "in_ab", False),
    ("does_not_exist", "not_in_a", True),
    ("does_not_exist", "in_1", False),
    ("does_not_exist", "in_9", False),
    ("does_not_exist", "in_19", False),
    ("does_not_exist", "not_in_12", True),
    ("does_not_exist", "gt_1", False),
    ("does_not_exist", "gt_9", False),
    ("does_not_exist", "lt_1", False),
    ("does_not_exist", "lt_9", False),
    ("in_a", "unconstrained", True),
    ("in_a", "exists", True),
    ("in_a", "does_not_exist", False),
    ("in_a", "in_a", True),
    ("in_a", "in_b", False),
    ("in_a", "in_ab", True),
    ("in_a", "not_in_a", False),
    ("in_a", "in_1", False),
    ("in_a", "in_9", False),
    ("in_a", "in_19", False),
    ("in_a", "not_in_12", True),
    ("in_a", "gt_1", False),
    ("in_a", "gt_9", False),
    ("in_a", "lt_1", False),
    ("in_a", "lt_9", False),
    ("in_b", "unconstrained", True),
    ("in_b", "exists", True),
    ("in_b", "does_not_exist", False),
    ("in_b", "in_a", False),
    ("in_b", "in_b", True),
    ("in_b", "in_ab", True),
    ("in_b", "not_in_a", True),
    ("in_b", "in_1", False),
    ("in_b", "in_9", False),
    ("in_b", "in_19", False),
    ("in_b", "not_in_12", True),
    ("in_b", "gt_1", False),
    ("in_b", "gt_9", False),
    ("in_b", "lt_1", False),
    ("in_b", "lt_9", False),
    ("in_ab", "unconstrained", True),
    ("in_ab", "exists", True),
    ("in_ab", "does_not_exist", False),
    ("in_ab", "in_a", True),
    ("in_ab", "in_b", True),
    ("in_ab", "in_ab", True),
    ("in_ab", "not_in_a", True),
    ("in_ab", "in_1", False),
    ("in_ab", "in_9", False),
    ("in_ab", "in_19", False),
    ("in_ab", "not_in_12", True),
    ("in_ab", "gt_1", False),
    ("in_ab", "gt_9", False),
    ("in_ab", "lt_1", False),
    ("in_ab", "lt_9", False),
    ("not_in_a", "unconstrained", True),
    ("not_in_a", "exists", True),
    ("not_in_a", "does_not_exist", True),
    ("not_in_a", "in_a", False),
    ("not_in_a", "in_b", True),
    ("not_in_a", "in_ab", True),
    ("not_in_a", "not_in_a", True),
    ("not_in_a", "in_1", True),
    ("not_in_a", "in_9", True),
    ("not_in_a", "in_19", True),
    ("not_in_a", "not_in_12", True),
    ("not_in_a", "gt_1", True),
    ("not_in_a", "gt_9", True),
    ("not_in_a", "lt_1", True),
    ("not_in_a", "lt_9", True),
    ("in_1", "unconstrained", True),
    ("in_1", "exists", True),
    ("in_1", "does_not_exist", False),
    ("in_1", "in_a", False),
    ("in_1", "in_b", False),
    ("in_1", "in_ab", False),
    ("in_1", "not_in_a", True),
    ("in_1", "in_1", True),
    ("in_1", "in_9", False),
    ("in_1", "in_19", True),
    ("in_1", "not_in_12", False),
    ("in_1", "gt_1", False),
    ("in_1", "gt_9", False),
    ("in_1", "lt_1", False),
    ("in_1", "lt_9", True),
    ("in_9", "unconstrained", True),
    ("in_9", "exists", True),
    ("in_9", "does_not_exist", False),
    ("in_9", "in_a", False),
    ("in_9", "in_b", False),
    ("in_9", "in_ab", False),
    ("in_9", "not_in_a", True),
    ("in_9", "in_1", False),
    ("in_9", "in_9", True),
    ("in_9", "in_19", True),
    ("in_9", "not_in_12", True),
    ("in_9", "gt_1", True),
    ("in_9", "gt_9", False),
    ("in_9", "lt_1", False),
    ("in_9", "lt_9", False),
    ("in_19", "unconstrained", True),
    ("in_19", "exists", True),
    ("in_19", "does_not_exist", False),
    ("in_19", "in_a", False),
    ("in_19", "in_b", False),
    ("in_19", "in_ab", False),
    ("in_19", "not_in_a", True),
    ("in_19", "in_1", True),
    ("in_19", "in_9", True),
    ("in_19", "in_19", True),
    ("in_19", "not_in_12", True),
    ("in_19", "gt_1", True),
    ("in_19", "gt_9", False),
    ("in_19", "lt_1", False),
    ("in_19", "lt_9", True),
    ("not_in_12", "unconstrained", True),
    ("not_in_12", "exists", True),
    ("not_in_12", "does_not_exist", True),
    ("not_in_12", "in_a", True),
    ("not_in_12", "in_b", True),
    ("not_in_12", "in_ab", True),
    ("not_in_12", "not_in_a", True),
    ("not_in_12", "in_1", False),
    ("not_in_12", "in_9", True),
    ("not_in_12", "in_19", True),
    ("not_in_12", "not_in_12", True),
    ("not_in_12", "gt_1", True),
    ("not_in_12", "gt_9", True),
    ("not_in_12", "lt_1", True),
    ("not_in_12", "lt_9", True),
    ("gt_1", "unconstrained", True),
    ("gt_1", "exists", True),
    ("gt_1", "does_not_exist", False),
    ("gt_1", "in_a", False),
    ("gt_1", "in_b", False),
    ("gt_1", "in_ab", False),
    ("gt_1", "not_in_a", True),
    ("gt_1", "in_1", False),
    ("gt_1", "in_9", True),
    ("gt_1", "in_19", True),
    ("gt_1", "not_in_12", True),
    ("gt_1", "gt_1", True),
    ("gt_1", "gt_9", True),
    ("gt_1", "lt_1", False),
    ("gt_1", "lt_9", True),
    ("gt_9", "unconstrained", True),
    ("gt_9", "exists", True),
    ("gt_9", "does_not_exist", False),
    ("gt_9", "in_a", False),
    ("gt_9", "in_b", False),
    ("gt_9", "in_ab", False),
    ("gt_9", "not_in_a", True),
    ("gt_9", "in_1", False),
    ("gt_9", "in_9", False),
    ("gt_9", "in_19", False),
    ("gt_9", "not_in_12", True),
    ("gt_9", "gt_1", True),
    ("gt_9", "gt_9", True),
    ("gt_9", "lt_1", False),
    ("gt_9", "lt_9", False),
    ("lt_1", "unconstrained", True),
    ("lt_1", "exists", True),
    ("lt_1", "does_not_exist", False),
    ("lt_1", "in_a", False),
    ("lt_1", "in_b", False),
    ("lt_1", "in_ab", False),
    ("lt_1", "not_in_a", True),
    ("lt_1", "in_1", False),
    ("lt_1", "in_9", False),
    ("lt_1", "in_19", False),
    ("lt_1", "not_in_12", True),
    ("lt_1", "gt_1", False),
    ("lt_1", "gt_9", False),
    ("lt_1", "lt_1", True),
    ("lt_1", "lt_9", True),
    ("lt_9", "unconstrained", True),
    ("lt_9", "exists", True),
    ("lt_9", "does_not_exist", False),
    ("lt_9", "in_a", False),
    ("lt_9", "in_b", False),
    ("lt_9", "in_ab", False),
    ("lt_9", "not_in_a", True),
    ("lt_9", "in_1", True),
    ("lt_9", "in_9", False),
    ("lt_9", "in_19", True),
    ("lt_9", "not_in_12", True),
    ("lt_9", "gt_1", True),
    ("lt_9", "gt_9", False),
    ("lt_9", "lt_1", True),
    ("lt_9", "lt_9", True),
]

COMPATIBLE_STRICT = [
    ("unconstrained", "exists", False),
    ("unconstrained", "in_a", False),
    ("unconstrained", "in_b", False),
    ("unconstrained", "in_ab", False),
    ("unconstrained", "in_1", False),
    ("unconstrained", "in_9", False),
    ("unconstrained", "in_19", False),
    ("unconstrained", "gt_1", False),
    ("unconstrained", "gt_9", False),
    ("unconstrained", "lt_1", False),
    ("unconstrained", "lt_9", False),
    ("unconstrained", "unconstrained", True),
    ("unconstrained", "does_not_exist", True),
    ("unconstrained", "not_in_a", True),
    ("unconstrained", "not_in_12", True),
    ("exists", "unconstrained", True),
    ("exists", "exists", True),
    ("exists", "does_not_exist", False),
    ("exists", "in_a", True),
    ("exists", "in_b", True),
    ("exists", "in_ab", True),
    ("exists", "not_in_a", True),
    ("exists", "in_1", True),
    ("exists", "in_9", True),
    ("exists", "in_19", True),
    ("exists", "not_in_12", True),
    ("exists", "gt_1", True),
    ("exists", "gt_9", True),
    ("exists", "lt_1", True),
    ("exists", "lt_9", True),
    ("does_not_exist", "unconstrained", True),
    ("does_not_exist", "exists", False),
    ("does_not_exist", "does_not_exist", True),
    ("does_not_exist", "in_a", False),
    ("does_not_exist", "in_b", False),
    ("does_not_exist", "in_ab", False),
    ("does_not_exist", "not_in_a", True),
    ("does_not_exist", "in_1", False),
    ("does_not_exist", "in_9", False),
    ("does_not_exist", "in_19", False),
    ("does_not_exist", "not_in_12", True),
    ("does_not_exist", "gt_1", False),
    ("does_not_exist", "gt_9", False),
    ("does_not_exist", "lt_1", False),
    ("does_not_exist", "lt_9", False),
    ("in_a", "unconstrained", True),
    ("in_a", "exists", True),
    ("in_a", "does_not_exist", False),
    ("in_a", "in_a", True),
    ("in_a", "in_b", False),
    ("in_a", "in_ab", True),
    ("in_a", "not_in_a", False),
    ("in_a", "in_1", False),
    ("in_a", "in_9", False),
    ("in_a", "in_19", False),
    ("in_a", "not_in_12", True),
    ("in_a", "gt_1", False),
    ("in_a", "gt_9", False),
    ("in_a", "lt_1", False),
    ("in_a", "lt_9", False),
    ("in_b", "unconstrained", True),
    ("in_b", "exists", True),
    ("in_b", "does_not_exist", False),
    ("in_b", "in_a", False),
    ("in_b", "in_b", True),
    ("in_b", "in_ab", True),
    ("in_b", "not_in_a", True),
    ("in_b", "in_1", False),
    ("in_b", "in_9", False),
    ("in_b", "in_19", False),
    ("in_b", "not_in_12", True),
    ("in_b", "gt_1", False),
    ("in_b", "gt_9", False),
    ("in_b", "lt_1", False),
    ("in_b", "lt_9", False),
    ("in_ab", "unconstrained", True),
    ("in_ab", "exists", True),
    ("in_ab", "does_not_exist", False),
    ("in_ab", "in_a", True),
    ("in_ab", "in_b", True),
    ("in_ab", "in_ab", True),
    ("in_ab", "not_in_a", True),
    ("in_ab", "in_1", False),
    ("in_ab", "in_9", False),
    ("in_ab", "in_19", False),
    ("in_ab", "not_in_12", True),
    ("in_ab", "gt_1", False),
    ("in_ab", "gt_9", False),
    ("in_ab", "lt_1", False),
    ("in_ab", "lt_9", False),
    ("not_in_a", "unconstrained", True),
    ("not_in_a", "exists", True),
    ("not_in_a", "does_not_exist", True),
    ("not_in_a", "in_a", False),
    ("not_in_a", "in_b", True),
    ("not_in_a", "in_ab", True),
    ("not_in_a", "not_in_a", True),
    ("not_in_a", "in_1", True),
    ("not_in_a", "in_9", True),
    ("not_in_a", "in_19", True),
    ("not_in_a", "not_in_12", True),
    ("not_in_a", "gt_1", True),
    ("not_in_a", "gt_9", True),
    ("not_in_a", "lt_1", True),
    ("not_in_a", "lt_9", True),
    ("in_1", "unconstrained", True),
    ("in_1", "exists", True),
    ("in_1", "does_not_exist", False),
    ("in_1", "in_a", False),
    ("in_1", "in_b", False),
    ("in_1", "in_ab", False),
    ("in_1", "not_in_a", True),
    ("in_1", "in_1", True),
    ("in_1", "in_9", False),
    ("in_1", "in_19", True),
    ("in_1", "not_in_12", False),
    ("in_1", "gt_1", False),
    ("in_1", "gt_9", False),
    ("in_1", "lt_1", False),
    ("in_1", "lt_9", True),
    ("in_9", "unconstrained", True),
    ("in_9", "exists", True),
    ("in_9", "does_not_exist", False),
    ("in_9", "in_a", False),
    ("in_9", "in_b", False),
    ("in_9", "in_ab", False),
    ("in_9", "not_in_a", True),
    ("in_9", "in_1", False),
    ("in_9", "in_9", True),
    ("in_9", "in_19", True),
    ("in_9", "not_in_12", True),
    ("in_9", "gt_1", True),
    ("in_9", "gt_9", False),
    ("in_9", "lt_1", False),
    ("in_9", "lt_9", False),
    ("in_19", "unconstrained", True),
    ("in_19", "exists", True),
    ("in_19", "does_not_exist", False),
    ("in_19", "in_a", False),
    ("in_19", "in_b", False),
    ("in_19", "in_ab", False),
    ("in_19", "not_in_a", True),
    ("in_19", "in_1", True),
    ("in_19", "in_9", True),
    ("in_19", "in_19", True),
    ("in_19", "not_in_12", True),
    ("in_19", "gt_1", True),
    ("in_19", "gt_9", False),
    ("in_19", "lt_1", False),
    ("in_19", "lt_9", True),
    ("not_in_12", "unconstrained", True),
    ("not_in_12", "exists", True),
    ("not_in_12", "does_not_exist", True),
    ("not_in_12", "in_a", True),
    ("not_in_12", "in_b", True),
    ("not_in_12", "in_ab", True),
    ("not_in_12", "not_in_a", True),
    ("not_in_12", "in_1", False),
    ("not_in_12", "in_9", True),
    ("not_in_12", "in_19", True),
    ("not_in_12", "not_in_12", True),
    ("not_in_12", "gt_1", True),
    ("not_in_12", "gt_9", True),
    ("not_in_12", "lt_1", True),
    ("not_in_12", "lt_9", True),
    ("gt_1", "unconstrained", True),
    ("gt_1", "exists", True),
    ("gt_1", "does_not_exist", False),
    ("gt_1", "in_a", False),
    ("gt_1", "in_b", False),
    ("gt_1", "in_ab", False),
    ("gt_1", "not_in_a", True),
    ("gt_1", "in_1", False),
    ("gt_1", "in_9", True),
    ("gt_1", "in_19", True),
    ("gt_1", "not_in_12", True),
    ("gt_1", "gt_1", True),
    ("gt_1", "gt_9", True),
    ("gt_1", "lt_1", False),
    ("gt_1", "lt_9", True),
    ("gt_9", "unconstrained", True),
    ("gt_9", "exists", True),
    ("gt_9", "does_not_exist", False),
    ("gt_9", "in_a", False),
    ("gt_9", "in_b", False),
    ("gt_9", "in_ab", False),
    ("gt_9", "not_in_a", True),
    ("gt_9", "in_1", False),
    ("gt_9", "in_9", False),
    ("gt_9", "in_19", False),
    ("gt_9", "not_in_12", True),
    ("gt_9", "gt_1", True),
    ("gt_9", "gt_9", True),
    ("gt_9", "lt_1", False),
    ("gt_9", "lt_9", False),
    ("lt_1", "unconstrained", True),
    ("lt_1", "exists", True),
    ("lt_1", "does_not_exist", False),
    ("lt_1", "in_a", False),
    ("lt_1", "in_b", False),
    ("lt_1", "in_ab", False),
    ("lt_1", "not_in_a", True),
    ("lt_1", "in_1", False),
    ("lt_1", "in_9", False),
    ("lt_1", "in_19", False),
    ("lt_1", "not_in_12", True),
    ("lt_1", "gt_1", False),
    ("lt_1", "gt_9", False),
    ("lt_1", "lt_1", True),
    ("lt_1", "lt_9", True),
    ("lt_9", "unconstrained", True),
    ("lt_9", "exists", True),
    ("lt_9", "does_not_exist", False),
    ("lt_9", "in_a", False),
    ("lt_9", "in_b", False),
    ("lt_9", "in_ab", False),
    ("lt_9", "not_in_a", True),
    ("lt_9", "in_1", True),
    ("lt_9", "in_9", False),
    ("lt_9", "in_19", True),
    ("lt_9", "not_in_12", True),
    ("lt_9", "gt_1", True),
    ("lt_9", "gt_9", False),
    ("lt_9", "lt_1", True),
    ("lt_9", "lt_9", True),
]


def _ids(table: list[tuple[str, str, bool]]) -> list[str]:
    return [f"{a}<-{b}" for a, b, _ in table]


@pytest.mark.parametrize(
    ("receiver", "incoming", "ok"), COMPATIBLE_ALLOW_UNDEFINED, ids=_ids(COMPATIBLE_ALLOW_UNDEFINED)
)
def test_compatible_allowing_undefined_well_known_labels(
    receiver: str, incoming: str, ok: bool
) -> None:
    err = REQS[receiver].compatible(REQS[incoming], ALLOW_UNDEFINED_WELL_KNOWN_LABELS)
    assert (err is None) is ok
    assert REQS[receiver].is_compatible(REQS[incoming], ALLOW_UNDEFINED_WELL_KNOWN_LABELS) is ok


@pytest.mark.parametrize(
    ("receiver", "incoming", "ok"), COMPATIBLE_STRICT, ids=_ids(COMPATIBLE_STRICT)
)
def test_compatible_strictly(receiver: str, incoming: str, ok: bool) -> None:
    assert (REQS[receiver].compatible(REQS[incoming]) is None) is ok


# --- add / get / has ----------------------------------------------------------------------------


def test_aliased_keys_are_normalised() -> None:
    reqs = Requirements(Requirement.new("failure-domain.beta.kubernetes.io/zone", IN, ["test"]))
    assert not reqs.has("failure-domain.beta.kubernetes.io/zone")
    assert reqs.get(ZONE).has("test")


def test_every_builder_normalises_keys() -> None:
    node_selector = {legacy: "test" for legacy in labels.NORMALIZED_LABELS}
    exprs = [{"key": k, "operator": IN, "values": [v]} for k, v in node_selector.items()]
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": exprs}]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": exprs}}
            ],
        }
    }
    for reqs in (
        Requirements.from_labels(node_selector),
        Requirements.from_node_selector_requirements(exprs),
        pod_requirements(node_selector, affinity),
    ):
        assert set(reqs.keys()) == set(labels.NORMALIZED_LABELS.values())


def test_add_intersects_with_existing_requirement() -> None:
    reqs = Requirements(Requirement.new("k", IN, ["a", "b", "c"]))
    reqs.add(Requirement.new("k", NOT_IN, ["b"]), Requirement.new("k", IN, ["b", "c", "d"]))
    assert reqs["k"] == Requirement.new("k", IN, ["c"])


def test_get_of_missing_key_is_exists_and_has_is_literal() -> None:
    reqs = Requirements()
    assert reqs.get("k") == Requirement.new("k", EXISTS)
    assert not reqs.has("k")
    assert "k" not in reqs
    assert len(reqs) == 0


def test_copy_is_independent_of_the_original() -> None:
    original = Requirements(Requirement.new("k", IN, ["a", "b"]))
    clone = original.copy()
    clone.add(Requirement.new("k", IN, ["a"]), Requirement.new("other", EXISTS))
    assert original == Requirements(Requirement.new("k", IN, ["a", "b"]))
    assert clone["k"].values == {"a"}
    assert clone != original


def test_labels_are_the_single_valued_in_keys() -> None:
    reqs = Requirements(
        Requirement.new("one", IN, ["a"]),
        Requirement.new("two", IN, ["a", "b"]),
        Requirement.new("excluded", NOT_IN, ["a"]),
        Requirement.new("exists", EXISTS),
    )
    assert reqs.labels() == {"one": "a"}


def test_from_labels_pins_each_key() -> None:
    reqs = Requirements.from_labels({"a": "1", "b": "2"})
    assert reqs == Requirements(Requirement.new("a", IN, ["1"]), Requirement.new("b", IN, ["2"]))


def test_from_node_selector_requirements_keeps_min_values() -> None:
    reqs = Requirements.from_node_selector_requirements(
        [{"key": "k", "operator": IN, "values": ["a", "b"], "minValues": 2}]
    )
    assert reqs["k"].min_values == 2
    assert reqs.has_min_values()
    assert not Requirements.from_labels({"k": "a"}).has_min_values()


def test_from_node_selector_requirements_accepts_attribute_objects() -> None:
    class Expr:
        key = "k"
        operator = NOT_IN
        values = ("a",)
        min_values = 1

    reqs = Requirements.from_node_selector_requirements([Expr()])
    assert reqs["k"] == Requirement.new("k", NOT_IN, ["a"], 1)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"operator": IN, "values": ["a"]}, r"requirement \[0\]: key must be a string"),
        ({"key": "k", "values": ["a"]}, r"requirement \[0\] \(\"k\"\): operator must be a string"),
        ({"key": "k", "operator": IN, "values": "a"}, "values must be a list of strings"),
        ({"key": "k", "operator": IN, "values": [1]}, "values must be a list of strings"),
        ({"key": "k", "operator": IN, "minValues": "2"}, "minValues must be an integer"),
        ({"key": "k", "operator": "Equal"}, 'unknown operator "Equal"'),
        ({"key": "k", "operator": GT, "values": ["x"]}, "needs exactly one integer value"),
    ],
)
def test_from_node_selector_requirements_rejects_malformed_entries(
    entry: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Requirements.from_node_selector_requirements([entry])


# --- intersects --------------------------------------------------------------------------------------


def test_intersects_ignores_keys_on_one_side_only() -> None:
    a = Requirements(Requirement.new("only-a", IN, ["x"]))
    b = Requirements(Requirement.new("only-b", DOES_NOT_EXIST))
    assert a.intersects(b) is None
    assert b.intersects(a) is None


def test_intersects_accepts_disjoint_negative_requirements() -> None:
    # NotIn vs DoesNotExist never "intersect" as values, but both only forbid things.
    a = Requirements(Requirement.new("k", DOES_NOT_EXIST))
    b = Requirements(Requirement.new("k", NOT_IN, ["x"]))
    assert a.intersects(b) is None
    assert b.intersects(a) is None
    assert a.intersects(Requirements(Requirement.new("k", DOES_NOT_EXIST))) is None


def test_intersects_reports_every_failing_key_sorted() -> None:
    existing = Requirements(
        Requirement.new("b", IN, ["1"]),
        Requirement.new("a", IN, ["x"]),
        Requirement.new("ok", EXISTS),
    )
    incoming = Requirements(
        Requirement.new("a", IN, ["y"]),
        Requirement.new("b", GT, ["5"]),
        Requirement.new("ok", IN, ["z"]),
    )
    err = existing.intersects(incoming)
    assert isinstance(err, RequirementsError)
    assert err.keys == ("a", "b")
    assert str(err) == "key a, a In [y] not in a In [x]; key b, b Exists >=6 not in b In [1]"


@pytest.mark.parametrize("sizes", [(1, 5), (5, 1)])
def test_intersects_gives_the_same_answer_whichever_side_is_smaller(
    sizes: tuple[int, int],
) -> None:
    def reqs(n: int, value: str) -> Requirements:
        return Requirements(
            Requirement.new("shared", IN, [value]),
            *(Requirement.new(f"k{i}", EXISTS) for i in range(n - 1)),
        )

    existing, incoming = reqs(sizes[0], "x"), reqs(sizes[1], "y")
    err = existing.intersects(incoming)
    assert err == RequirementsError(
        bad_keys=(
            BadKeyError(
                "shared", Requirement.new("shared", IN, ["y"]), Requirement.new("shared", IN, ["x"])
            ),
        )
    )


# --- error messages -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad_label", "message"),
    [
        # truncations
        ("zone", 'label "zone" does not have known values (typo of "topology.kubernetes.io/zone"?)'),
        ("region", 'label "region" does not have known values (typo of "topology.kubernetes.io/region"?)'),
        ("nodepool", 'label "nodepool" does not have known values (typo of "karpenter.sh/nodepool"?)'),
        ("instance-type", 'label "instance-type" does not have known values (typo of "node.kubernetes.io/instance-type"?)'),
        ("arch", 'label "arch" does not have known values (typo of "kubernetes.io/arch"?)'),
        ("capacity-type", 'label "capacity-type" does not have known values (typo of "karpenter.sh/capacity-type"?)'),
        # typos
        ("topology.kubernetesio/zone", 'label "topology.kubernetesio/zone" does not have known values (typo of "topology.kubernetes.io/zone"?)'),
        ("node.io/zone", 'label "node.io/zone" does not have known values (typo of "topology.kubernetes.io/zone"?)'),
        ("topology.kubernetes.io/regio", 'label "topology.kubernetes.io/regio" does not have known values (typo of "topology.kubernetes.io/region"?)'),
        ("node.kubernetes.io/region", 'label "node.kubernetes.io/region" does not have known values (typo of "topology.kubernetes.io/region"?)'),
        ("karpenter/nodepool", 'label "karpenter/nodepool" does not have known values (typo of "karpenter.sh/nodepool"?)'),
    ],
)  # fmt: skip
def test_unknown_label_error_hints_the_well_known_label(bad_label: str, message: str) -> None:
    incoming = Requirements(Requirement.new(bad_label, EXISTS))
    err = Requirements().compatible(incoming, ALLOW_UNDEFINED_WELL_KNOWN_LABELS)
    assert str(err) == message


def test_the_typo_hint_does_not_depend_on_the_providers_installed() -> None:
    """Providers add well-known labels (AWS ``topology.k8s.aws/zone-id``, a GKE-style
    ``topology.gke.io/zone``); the hint for ``zone`` stays Kubernetes' own key whichever are
    installed. It depended on which tests had loaded a provider into the process before."""
    with_providers = {
        *labels.WELL_KNOWN_LABELS,
        "topology.k8s.aws/zone-id",
        "topology.gke.io/zone",
        "karpenter.azure.com/sku-arch",
    }
    for bad, hint in (("zone", "topology.kubernetes.io/zone"), ("arch", "kubernetes.io/arch")):
        incoming = Requirements(Requirement.new(bad, EXISTS))
        err = Requirements().compatible(incoming, with_providers)
        assert str(err) == f'label "{bad}" does not have known values (typo of "{hint}"?)'
    # a provider's own key is still suggested when it is the only close one
    incoming = Requirements(Requirement.new("zone-id", EXISTS))
    err = Requirements().compatible(incoming, with_providers)
    assert str(err).endswith('(typo of "topology.k8s.aws/zone-id"?)')


def test_unknown_label_error_without_a_hint() -> None:
    err = Requirements().compatible(Requirements(Requirement.new("deployment", EXISTS)))
    assert str(err) == 'label "deployment" does not have known values'
    assert err is not None and err.keys == ("deployment",)


def test_unknown_label_hint_falls_back_to_the_receivers_keys() -> None:
    receiver = Requirements(Requirement.new("example.com/team", IN, ["a"]))
    err = receiver.compatible(Requirements(Requirement.new("team", IN, ["a"])))
    assert str(err) == 'label "team" does not have known values (typo of "example.com/team"?)'


def test_compatible_reports_only_the_first_undefined_key() -> None:
    incoming = Requirements(Requirement.new("x", EXISTS), Requirement.new("y", EXISTS))
    err = Requirements().compatible(incoming)
    assert err is not None and err.keys == ("x",)


def test_custom_labels_must_be_defined_even_when_well_known_are_allowed() -> None:
    incoming = Requirements(Requirement.new("example.com/gpu", IN, ["true"]))
    assert not Requirements().is_compatible(incoming, ALLOW_UNDEFINED_WELL_KNOWN_LABELS)
    defined = Requirements(Requirement.new("example.com/gpu", IN, ["true", "false"]))
    assert defined.is_compatible(incoming, ALLOW_UNDEFINED_WELL_KNOWN_LABELS)


def test_allow_undefined_follows_labels_registered_later() -> None:
    key = "example.test/registered-later"
    incoming = Requirements(Requirement.new(key, IN, ["a"]))
    assert not Requirements().is_compatible(incoming, ALLOW_UNDEFINED_WELL_KNOWN_LABELS)
    labels.register_well_known_labels([key])
    try:
        assert Requirements().is_compatible(incoming, ALLOW_UNDEFINED_WELL_KNOWN_LABELS)
    finally:
        labels.WELL_KNOWN_LABELS.discard(key)


def test_errors_format_lazily_and_are_values() -> None:
    err = Requirements(Requirement.new("k", IN, ["a"])).compatible(
        Requirements(Requirement.new("k", IN, ["b"]))
    )
    assert err == RequirementsError(
        bad_keys=(
            BadKeyError("k", Requirement.new("k", IN, ["b"]), Requirement.new("k", IN, ["a"])),
        )
    )
    assert str(err) == "key k, k In [b] not in k In [a]"


# --- serialisation ----------------------------------------------------------------------------------

_FIXTURES = [
    ("exists", EXISTS, [], None),
    ("doesNotExist", DOES_NOT_EXIST, [], None),
    ("inA", IN, ["A"], None),
    ("inB", IN, ["B"], None),
    ("inAB", IN, ["A", "B"], None),
    ("notInA", NOT_IN, ["A"], None),
    ("in1", IN, ["1"], None),
    ("in9", IN, ["9"], None),
    ("in19", IN, ["1", "9"], None),
    ("notIn12", NOT_IN, ["1", "2"], None),
    ("greaterThan1", GT, ["1"], (GTE, ["2"])),
    ("greaterThan9", GT, ["9"], (GTE, ["10"])),
    ("lessThan1", LT, ["1"], (LTE, ["0"])),
    ("lessThan9", LT, ["9"], (LTE, ["8"])),
]
_MIN_VALUES = {"exists": 3, "doesNotExist": 2, "inAB": 2, "in19": 2, "notIn12": 2}


@pytest.mark.parametrize("with_min_values", [False, True])
def test_to_node_selector_requirements_converts_every_operator(with_min_values: bool) -> None:
    reqs = Requirements()
    expected = []
    for key, op, values, serialised in _FIXTURES:
        mv = _MIN_VALUES.get(key, 1) if with_min_values else None
        reqs.add(Requirement.new(key, op, values, mv))
        out_op, out_values = serialised or (op, values)
        entry: dict[str, Any] = {"key": key, "operator": out_op}
        if out_values:
            entry["values"] = out_values
        if mv is not None:
            entry["minValues"] = mv
        expected.append(entry)
    result = reqs.to_node_selector_requirements()
    assert len(result) == 14
    assert sorted(result, key=lambda e: e["key"]) == sorted(expected, key=lambda e: e["key"])


def test_both_bounds_serialise_as_gte_and_lte_entries() -> None:
    reqs = Requirements(Requirement.new("cpu", GTE, ["8"]), Requirement.new("cpu", LTE, ["8"]))
    assert reqs.to_node_selector_requirements() == [
        {"key": "cpu", "operator": GTE, "values": ["8"]},
        {"key": "cpu", "operator": LTE, "values": ["8"]},
    ]


def test_round_trip_through_node_selector_requirements() -> None:
    reqs = Requirements(
        Requirement.new("a", IN, ["x", "y"], 2),
        Requirement.new("b", NOT_IN, ["z"]),
        Requirement.new("c", GT, ["3"]).intersection(Requirement.new("c", LT, ["10"])),
        Requirement.new("d", DOES_NOT_EXIST),
    )
    again = Requirements.from_node_selector_requirements(reqs.to_node_selector_requirements())
    assert again == reqs


def test_str_sorts_entries() -> None:
    reqs = Requirements(*(Requirement.new(k, op, v) for k, op, v, _ in _FIXTURES))
    assert str(reqs) == (
        "doesNotExist DoesNotExist, exists Exists, greaterThan1 Exists >=2, "
        "greaterThan9 Exists >=10, in1 In [1], in19 In [1 9], in9 In [9], inA In [A], "
        "inAB In [A B], inB In [B], lessThan1 Exists <=0, lessThan9 Exists <=8, "
        "notIn12 NotIn [1 2], notInA NotIn [A]"
    )


def test_str_omits_hostname() -> None:
    reqs = Requirements(
        Requirement.new(labels.LABEL_HOSTNAME, IN, ["node-1"]), Requirement.new("a", IN, ["b"])
    )
    assert str(reqs) == "a In [b]"


# --- pod requirements --------------------------------------------------------------------------------


def _expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


def _affinity(
    required: list[list[dict[str, Any]]] | None = None,
    preferred: list[tuple[int, list[dict[str, Any]]]] | None = None,
) -> dict[str, Any]:
    node_affinity: dict[str, Any] = {}
    if required is not None:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [{"matchExpressions": t} for t in required]
        }
    if preferred is not None:
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "preference": {"matchExpressions": t}} for w, t in preferred
        ]
    return {"nodeAffinity": node_affinity}


def test_pod_requirements_without_affinity_are_the_node_selector() -> None:
    assert pod_requirements({"a": "1"}, None) == Requirements.from_labels({"a": "1"})
    assert strict_pod_requirements({"a": "1"}, {}) == Requirements.from_labels({"a": "1"})
    assert pod_requirements(None, {"podAffinity": {}}) == Requirements()


def test_pod_requirements_use_only_the_first_required_term() -> None:
    affinity = _affinity(required=[[_expr(ZONE, IN, "a", "b")], [_expr(ZONE, IN, "c")]])
    assert pod_requirements(None, affinity) == _zone(IN, "a", "b")
    assert strict_pod_requirements(None, affinity) == _zone(IN, "a", "b")


def test_pod_requirements_treat_the_heaviest_preference_as_required() -> None:
    affinity = _affinity(
        required=[[_expr(ZONE, IN, "a", "b", "c")]],
        preferred=[
            (1, [_expr(ZONE, IN, "c")]),
            (50, [_expr(ZONE, IN, "b")]),
            (10, [_expr(ZONE, IN, "a")]),
        ],
    )
    assert pod_requirements(None, affinity) == _zone(IN, "b")
    assert strict_pod_requirements(None, affinity) == _zone(IN, "a", "b", "c")


def test_pod_requirements_first_preference_wins_a_weight_tie() -> None:
    affinity = _affinity(preferred=[(5, [_expr(ZONE, IN, "x")]), (5, [_expr(ZONE, IN, "y")])])
    assert pod_requirements(None, affinity) == _zone(IN, "x")


def test_pod_requirements_intersect_node_selector_and_affinity() -> None:
    affinity = _affinity(required=[[_expr(ZONE, NOT_IN, "a")]])
    reqs = pod_requirements({ZONE: "b", "team": "x"}, affinity)
    assert reqs == Requirements(
        Requirement.new(ZONE, IN, ["b"]), Requirement.new("team", IN, ["x"])
    )


def test_pod_requirements_name_a_malformed_term() -> None:
    affinity = _affinity(required=[[{"key": ZONE, "operator": "Bogus"}]])
    with pytest.raises(
        ValueError, match=r"nodeSelectorTerms\[0\]\.matchExpressions: .*unknown operator"
    ):
        pod_requirements(None, affinity)


@pytest.mark.parametrize(
    ("node_selector", "affinity", "message"),
    [
        (["a"], None, "nodeSelector: expected a mapping"),
        (None, ["x"], "affinity: expected a mapping"),
        (None, {"nodeAffinity": ["x"]}, "affinity.nodeAffinity: expected a mapping"),
        (
            None,
            {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": {}}},
            "preferredDuringSchedulingIgnoredDuringExecution: expected a list",
        ),
        (
            None,
            {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": "heavy"}]}},
            r"preferredDuringSchedulingIgnoredDuringExecution\[0\].weight: expected an integer",
        ),
        (
            None,
            {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": {}}}},
            "nodeSelectorTerms: expected a list",
        ),
    ],
)  # fmt: skip
def test_pod_requirements_reject_malformed_affinity(
    node_selector: Any, affinity: Any, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        pod_requirements(node_selector, affinity)


def test_pod_requirements_name_the_heaviest_preference_when_malformed() -> None:
    affinity = _affinity(preferred=[(1, []), (9, [{"key": ZONE, "operator": GT, "values": ["a"]}])])
    with pytest.raises(
        ValueError, match=r"preferredDuringSchedulingIgnoredDuringExecution\[1\]\.preference"
    ):
        pod_requirements(None, affinity)
    assert strict_pod_requirements(None, affinity) == Requirements()


def test_new_rejects_a_bare_string_of_values() -> None:
    with pytest.raises(ValueError, match="values must be a list of strings"):
        Requirement.new("k", IN, "abc")
