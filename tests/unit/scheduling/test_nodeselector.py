"""Node selectors against a concrete node, as kube-scheduler evaluates them."""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.scheduling.nodeselector import (
    expression_matches,
    node_selector_matches,
    term_matches,
)

LABELS = {"zone": "a", "gpus": "4", "arch": "amd64"}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


@pytest.mark.parametrize(
    ("expression", "matches"),
    [
        (expr("zone", "In", "a", "b"), True),
        (expr("zone", "In", "b"), False),
        (expr("missing", "In", "a"), False),
        (expr("zone", "NotIn", "b"), True),
        (expr("missing", "NotIn", "b"), True),
        (expr("zone", "Exists"), True),
        (expr("missing", "DoesNotExist"), True),
        (expr("zone", "DoesNotExist"), False),
        (expr("gpus", "Gt", "3"), True),
        (expr("gpus", "Lt", "4"), False),
        (expr("zone", "Gt", "3"), False),
        (expr("zone", "In"), False),
        (expr("zone", "Exists", "a"), False),
        (expr("zone", "Like", "a"), False),
        ("not an expression", False),
    ],
)
def test_one_expression(expression: Any, matches: bool) -> None:
    assert expression_matches(expression, LABELS) is matches


def test_a_terms_entries_are_anded_each_on_its_own() -> None:
    term = {"matchExpressions": [expr("zone", "Exists"), expr("zone", "NotIn", "a")]}
    assert not term_matches(term, LABELS)
    assert term_matches(
        {"matchExpressions": [expr("zone", "In", "a"), expr("arch", "Exists")]}, LABELS
    )


def test_fields_match_the_node_name() -> None:
    term = {"matchFields": [expr("metadata.name", "In", "n1")]}
    assert term_matches(term, {}, "n1")
    assert not term_matches(term, {}, "n2")
    assert term_matches({"matchFields": [expr("metadata.name", "NotIn", "n1")]}, {}, "n2")


def test_empty_terms_and_selectors_match_nothing() -> None:
    assert not term_matches({}, LABELS)
    assert not node_selector_matches({"nodeSelectorTerms": []}, LABELS)
    assert not node_selector_matches(None, LABELS)


def test_terms_are_ored() -> None:
    selector = {
        "nodeSelectorTerms": [
            {"matchExpressions": [expr("zone", "In", "b")]},
            {"matchExpressions": [expr("arch", "In", "amd64")]},
        ]
    }
    assert node_selector_matches(selector, LABELS)
    assert node_selector_matches(selector["nodeSelectorTerms"], LABELS)
