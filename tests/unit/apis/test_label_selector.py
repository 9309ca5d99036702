"""The one LabelSelector and the one label-key validator: dict form, strict and lenient
parsing, the compile cache, signatures, and Kubernetes' name syntax."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from karpenter_core.apis.labelselector import (
    EVERYTHING,
    IN,
    NOTHING,
    LabelSelector,
    SelectorError,
    label_selector_matches,
    requirement,
)
from karpenter_core.apis.names import (
    is_qualified_name,
    is_valid_label_value,
    label_key_problem,
    label_value_problem,
)
from karpenter_core.kube.selectors import parse_label_selector


@pytest.mark.parametrize(
    ("key", "ok"),
    [
        ("app", True),
        ("example.com/app", True),
        ("a" * 63, True),
        ("a" * 64, False),
        ("example.com/" + "a" * 63, True),
        ("Example.com/app", False),
        ("/app", False),
        ("a/b/c", False),
        ("-app", False),
        ("app-", False),
        ("app\n", False),
        ("", False),
    ],
)
def test_qualified_names(key: str, ok: bool) -> None:
    assert (is_qualified_name(key) == []) is ok
    assert (label_key_problem(key) is None) is ok


@pytest.mark.parametrize(("value", "ok"), [("", True), ("a.b_c-d", True), ("-a", False)])
def test_label_values(value: str, ok: bool) -> None:
    assert (is_valid_label_value(value) == []) is ok
    assert (label_value_problem(value) is None) is ok


def test_a_key_that_is_not_a_string_is_not_a_label_key() -> None:
    assert label_key_problem(3) == "invalid label key 3: must be a string"


def test_nil_selects_nothing_and_empty_selects_everything() -> None:
    assert LabelSelector.from_dict(None) is NOTHING
    assert LabelSelector.from_dict({}) == EVERYTHING
    assert EVERYTHING.matches(None)
    assert not NOTHING.matches({})


@pytest.mark.parametrize(
    ("selector", "path"),
    [
        ({"matchLabels": {"team": 3}}, "matchLabels.team"),
        ({"matchLabels": {"bad key": "x"}}, "matchLabels.bad key"),
        ({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}, "operator"),
        ({"matchExpressions": [{"operator": "Exists"}]}, "matchExpressions[0].key"),
        ({"matchExpressions": [{"key": "-a", "operator": "Exists"}]}, "matchExpressions[0].key"),
        ({"matchExpressions": [{"key": "a", "operator": "In"}]}, "matchExpressions[0].values"),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]}, "values[0]"),
        ({"matchExpressions": "a"}, "matchExpressions"),
    ],
)
def test_strict_parsing_names_the_field(selector: dict[str, Any], path: str) -> None:
    with pytest.raises(SelectorError) as e:
        LabelSelector.from_dict(selector)
    assert e.value.path.endswith(path)
    assert not label_selector_matches(selector, {"a": "1", "team": "3"})


def test_compile_remembers_a_selector_by_content() -> None:
    raw = {"matchLabels": {"app": "web"}}
    assert LabelSelector.compile(raw) is LabelSelector.compile({"matchLabels": {"app": "web"}})


def test_compile_takes_selectors_with_unhashable_content() -> None:
    raw = {"matchExpressions": [{"key": "a", "operator": "In", "values": [{"x": 1}]}]}
    assert LabelSelector.compile(raw) is NOTHING


def test_the_dict_and_string_forms_give_the_same_selector() -> None:
    from_dict = LabelSelector.from_dict(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}],
        }
    )
    assert from_dict == parse_label_selector("tier in (a,b),app=web")
    assert str(from_dict) == "app=web,tier in (a,b)"


def test_nothing_stays_nothing_when_requirements_are_added() -> None:
    assert NOTHING.with_requirements(requirement("a", IN, ["1"])) is NOTHING
    merged = EVERYTHING.with_requirements(requirement("a", IN, ["1"]))
    assert merged.matches({"a": "1"}) and not merged.matches({"a": "2"})


_keys = st.sampled_from(["app", "tier", "example.com/role"])
_values = st.sampled_from(["a", "b", "c"])
_expressions = st.one_of(
    st.builds(
        lambda k, op, vs: {"key": k, "operator": op, "values": vs},
        _keys,
        st.sampled_from(["In", "NotIn"]),
        st.lists(_values, min_size=1, max_size=3),
    ),
    st.builds(
        lambda k, op: {"key": k, "operator": op}, _keys, st.sampled_from(["Exists", "DoesNotExist"])
    ),
)


def _oracle(expr: dict[str, Any], labels: dict[str, str]) -> bool:
    key, op = expr["key"], expr["operator"]
    if op == "In":
        return labels.get(key) in expr["values"]
    if op == "NotIn":
        return labels.get(key) not in expr["values"]
    if op == "Exists":
        return key in labels
    return key not in labels


@given(
    st.dictionaries(_keys, _values, max_size=2),
    st.lists(_expressions, max_size=4),
    st.dictionaries(_keys, _values, max_size=3),
)
def test_matching_is_the_conjunction_of_the_parts(
    match_labels: dict[str, str], exprs: list[dict[str, Any]], labels: dict[str, str]
) -> None:
    selector = LabelSelector.from_dict({"matchLabels": match_labels, "matchExpressions": exprs})
    expected = all(labels.get(k) == v for k, v in match_labels.items()) and all(
        _oracle(e, labels) for e in exprs
    )
    assert selector.matches(labels) is expected


@given(st.lists(_expressions, min_size=1, max_size=4), st.randoms())
def test_signature_ignores_order_and_repetition(exprs: list[dict[str, Any]], rnd: Any) -> None:
    shuffled = [*exprs, exprs[0]]
    rnd.shuffle(shuffled)
    a = LabelSelector.from_dict({"matchExpressions": exprs})
    b = LabelSelector.from_dict({"matchExpressions": shuffled})
    assert a.signature == b.signature
