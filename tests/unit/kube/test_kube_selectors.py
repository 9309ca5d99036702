"""Label and field selectors: parsing, matching, canonical strings, errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from karpenter_core.kube.selectors import (
    EVERYTHING,
    NOTHING,
    SelectorError,
    label_selector_from_dict,
    parse_field_selector,
    parse_label_selector,
)

LABELS = {"app": "web", "tier": "front", "size": "8", "k8s.io/role": "x"}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app=db", False),
        ("app!=db", True),
        ("app!=web", False),
        ("missing!=x", True),
        ("tier in (front,back)", True),
        ("tier in (back)", False),
        ("tier notin (back)", True),
        ("missing notin (a)", True),
        ("tier notin (front)", False),
        ("app", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("size>4", True),
        ("size<4", False),
        ("size>8", False),
        ("app>1", False),
        ("missing>1", False),
        ("k8s.io/role=x", True),
        ("app=web,tier=front", True),
        ("app=web,tier=back", False),
        ("  app = web ,  tier in ( front , back )  ", True),
        ("missing=", False),
        ("app=,tier=front", False),
    ],
)
def test_label_selector_matching(selector: str, matches: bool) -> None:
    assert parse_label_selector(selector).matches(LABELS) is matches


def test_empty_value_matches_an_empty_label() -> None:
    assert parse_label_selector("flag=").matches({"flag": ""})


@pytest.mark.parametrize(
    ("selector", "problem"),
    [
        ("app=web,", "trailing"),
        ("=web", "label key"),
        ("app in web", r"'\('"),
        ("app in (a", "end of input"),
        ("app in ()", "at least one value"),
        ("app>x", "integer"),
        ("Bad Key=1", "unknown operator 'Key'"),
        ("app=-bad-", "invalid label value"),
        ("-bad=1", "invalid label key"),
        ("a/b/c=1", "prefix"),
    ],
)
def test_label_selector_errors_say_what_is_wrong(selector: str, problem: str) -> None:
    with pytest.raises(SelectorError, match=problem):
        parse_label_selector(selector)


def test_selector_dict_with_match_labels_and_expressions() -> None:
    selector = label_selector_from_dict(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["front", "back"]},
                {"key": "legacy", "operator": "DoesNotExist"},
                {"key": "size", "operator": "Exists"},
                {"key": "zone", "operator": "NotIn", "values": ["a"]},
            ],
        }
    )
    assert selector.matches(LABELS)
    assert not selector.matches({**LABELS, "legacy": "yes"})


def test_nil_selector_selects_nothing_and_empty_selects_everything() -> None:
    assert label_selector_from_dict(None) == NOTHING
    assert not NOTHING.matches(LABELS)
    assert label_selector_from_dict({}) == EVERYTHING
    assert EVERYTHING.matches({})
    assert EVERYTHING.empty and not NOTHING.empty


@pytest.mark.parametrize(
    ("selector", "problem"),
    [
        ({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}, "operator"),
        ({"matchExpressions": [{"key": "a", "operator": "In"}]}, "at least one value"),
        ({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}, "no values"),
        ({"matchLabels": ["a"]}, "matchLabels"),
        ({"matchExpressions": {"a": 1}}, "matchExpressions"),
    ],
)
def test_selector_dict_errors_say_what_is_wrong(selector: dict[str, object], problem: str) -> None:
    with pytest.raises(SelectorError, match=problem):
        label_selector_from_dict(selector)


def test_label_selector_string_is_canonical() -> None:
    selector = parse_label_selector("tier in (b,a),app=web,!old,size>3")
    assert str(selector) == "app=web,!old,size>3,tier in (a,b)"


_keys = st.sampled_from(["app", "tier", "example.com/role", "size"])
_values = st.sampled_from(["a", "b", "web", "1", "20"])
_requirements = st.one_of(
    st.builds(lambda k, v: f"{k}={v}", _keys, _values),
    st.builds(lambda k, v: f"{k}!={v}", _keys, _values),
    st.builds(
        lambda k, vs: f"{k} in ({','.join(vs)})", _keys, st.lists(_values, min_size=1, max_size=3)
    ),
    st.builds(
        lambda k, vs: f"{k} notin ({','.join(vs)})",
        _keys,
        st.lists(_values, min_size=1, max_size=3),
    ),
    st.builds(lambda k: k, _keys),
    st.builds(lambda k: f"!{k}", _keys),
    st.builds(lambda k, n: f"{k}>{n}", _keys, st.integers(0, 30)),
)
_label_sets = st.dictionaries(_keys, _values, max_size=4)


@given(st.lists(_requirements, min_size=1, max_size=4), _label_sets)
def test_canonical_string_round_trips_and_matches_the_same(
    reqs: list[str], labels: dict[str, str]
) -> None:
    selector = parse_label_selector(",".join(reqs))
    again = parse_label_selector(str(selector))
    assert again == selector
    assert again.matches(labels) == selector.matches(labels)


@given(st.lists(_requirements, min_size=1, max_size=4), _label_sets)
def test_a_conjunction_matches_exactly_when_every_part_does(
    reqs: list[str], labels: dict[str, str]
) -> None:
    whole = parse_label_selector(",".join(reqs)).matches(labels)
    assert whole == all(parse_label_selector(r).matches(labels) for r in reqs)


# ---------------------------------------------------------------- field selectors


@pytest.mark.parametrize(
    ("selector", "fields", "matches"),
    [
        ("spec.nodeName=n1", {"spec.nodeName": "n1"}, True),
        ("spec.nodeName==n1", {"spec.nodeName": "n1"}, True),
        ("spec.nodeName=n1", {"spec.nodeName": "n2"}, False),
        ("spec.nodeName!=n1", {"spec.nodeName": "n2"}, True),
        ("spec.nodeName=", {"spec.nodeName": ""}, True),
        ("spec.nodeName=", {}, True),
        ("a=1,b!=2", {"a": "1", "b": "3"}, True),
        ("a=1,b!=2", {"a": "1", "b": "2"}, False),
        (r"a=x\,y", {"a": "x,y"}, True),
        (r"a=x\=y", {"a": "x=y"}, True),
        ("", {"a": "1"}, True),
    ],
)
def test_field_selector_matching(selector: str, fields: dict[str, str], matches: bool) -> None:
    assert parse_field_selector(selector).matches(fields) is matches


@pytest.mark.parametrize(
    ("selector", "problem"),
    [
        ("spec.nodeName", "no operator"),
        ("=x", "missing field"),
        ("a=1,,b=2", "empty requirement"),
        (r"a=x\y", "invalid escape"),
    ],
)
def test_field_selector_errors_say_what_is_wrong(selector: str, problem: str) -> None:
    with pytest.raises(SelectorError, match=problem):
        parse_field_selector(selector)


def test_field_selector_exact_value_for_indexes() -> None:
    selector = parse_field_selector("metadata.namespace!=x,spec.nodeName=n1")
    assert selector.exact("spec.nodeName") == "n1"
    assert selector.exact("metadata.namespace") is None


def test_field_selector_string_escapes_values() -> None:
    selector = parse_field_selector(r"a=x\,y")
    assert parse_field_selector(str(selector)) == selector
