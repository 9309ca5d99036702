"""deep_copy: an equal value that shares no container with the original."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from karpenter_core.apis.copying import deep_copy

_leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
_json = st.recursive(
    _leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


def _containers(value: Any) -> list[Any]:
    found: list[Any] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            found.append(v)
            stack.extend(v.values())
        elif isinstance(v, list):
            found.append(v)
            stack.extend(v)
    return found


@given(_json)
def test_a_copy_is_equal_and_shares_no_container(value: Any) -> None:
    copied = deep_copy(value)
    assert copied == value
    originals = {id(c) for c in _containers(value)}
    assert not originals & {id(c) for c in _containers(copied)}


def test_tuples_become_lists_and_mapping_subclasses_plain_dicts() -> None:
    value = {"a": (1, {"b": ("x",)}), "c": OrderedDict(d=[True, None])}
    copied = deep_copy(value)
    assert copied == {"a": [1, {"b": ["x"]}], "c": {"d": [True, None]}}
    assert type(copied["a"]) is list and type(copied["a"][1]["b"]) is list
    assert type(copied["c"]) is dict
    assert deep_copy(("top", 1)) == ["top", 1]
