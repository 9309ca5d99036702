"""SharedStructures: alike nested values are held once, unlike ones never confused, and
values no object holds any more leave the table."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from karpenter_core.kube.client import deep_copy
from karpenter_core.kube.informer import SharingCompactor, compact_object
from karpenter_core.kube.sharing import SharedStructures


def _pod(name: str, node: str, started: str) -> dict[str, Any]:
    return json.loads(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": name,
                    "namespace": "default",
                    "labels": {"app": "web", "pod-template-hash": "5d4f"},
                    "ownerReferences": [{"kind": "ReplicaSet", "name": "web-5d4f", "uid": "u"}],
                },
                "spec": {
                    "nodeName": node,
                    "containers": [
                        {"name": "app", "image": "web:1", "resources": {"requests": {"cpu": "1"}}}
                    ],
                    "tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 300}],
                },
                "status": {
                    "phase": "Running",
                    "conditions": [
                        {"type": "Ready", "status": "True", "lastTransitionTime": started}
                    ],
                },
            }
        )
    )


def test_replicas_share_what_they_hold_alike_and_keep_what_is_their_own() -> None:
    compact = SharingCompactor()
    a = compact(_pod("web-1", "n1", "2026-01-01T00:00:00Z"))
    b = compact(_pod("web-2", "n2", "2026-01-01T00:00:09Z"))
    assert a["spec"]["containers"] is b["spec"]["containers"]
    assert a["spec"]["tolerations"] is b["spec"]["tolerations"]
    assert a["metadata"]["labels"] is b["metadata"]["labels"]
    assert a["metadata"]["ownerReferences"] is b["metadata"]["ownerReferences"]
    # each object's own mappings are its own, and what differs is not shared
    assert a["spec"] is not b["spec"] and a["metadata"] is not b["metadata"]
    assert a["status"]["conditions"] is not b["status"]["conditions"]
    assert a["spec"]["nodeName"] == "n1" and b["spec"]["nodeName"] == "n2"
    assert a == compact_object(_pod("web-1", "n1", "2026-01-01T00:00:00Z"))


def test_values_equal_in_python_but_not_in_json_are_not_confused() -> None:
    shared = SharedStructures()
    one = shared.share({"a": {"b": {"x": 1}}})
    true = shared.share({"a": {"b": {"x": True}}})
    floating = shared.share({"a": {"b": {"x": 1.0}}})
    assert one["a"]["b"]["x"] is not True and type(one["a"]["b"]["x"]) is int
    assert true["a"]["b"]["x"] is True
    assert type(floating["a"]["b"]["x"]) is float
    reordered = shared.share({"a": {"b": {"y": 2, "x": 1}}})
    again = shared.share({"a": {"b": {"x": 1, "y": 2}}})
    assert list(reordered["a"]["b"]) == ["y", "x"] and list(again["a"]["b"]) == ["x", "y"]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2) | st.sampled_from("ab"),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("xyz"), inner),
    max_leaves=12,
)


@given(st.lists(JSON, min_size=1, max_size=6))
def test_every_shared_value_equals_what_was_given(values: list[Any]) -> None:
    shared = SharedStructures()
    for value in values:
        out = shared.share({"top": {"mid": value}})
        assert out == {"top": {"mid": value}}
        assert json.dumps(out) == json.dumps({"top": {"mid": value}})  # types kept


def test_values_no_object_holds_leave_the_table() -> None:
    shared = SharedStructures()
    held = [shared.share({"spec": {"v": {"name": f"pod-{i}", "image": "x"}}}) for i in range(50)]
    kept = shared.share({"spec": {"v": {"name": "keep", "image": "x"}}})
    assert len(shared) == 51
    held.clear()
    assert shared.sweep() == 50
    assert len(shared) == 1
    # what is still held is still shared
    assert (
        shared.share({"spec": {"v": {"name": "keep", "image": "x"}}})["spec"]["v"]
        is (kept["spec"]["v"])
    )


def test_nested_values_freed_with_their_parent() -> None:
    shared = SharedStructures()
    obj = shared.share({"spec": {"outer": [{"inner": [1, 2]}]}})
    assert len(shared) == 3  # the list, its mapping, the inner list
    del obj
    assert shared.sweep() == 3 and len(shared) == 0


def test_the_table_sweeps_itself_as_it_grows() -> None:
    shared = SharedStructures()
    for i in range(30_000):
        shared.share({"spec": {"v": {"n": i}}})  # none kept
    assert len(shared) < 20_000


def test_a_deep_copy_of_a_shared_object_shares_nothing() -> None:
    compact = SharingCompactor()
    a = compact(_pod("web-1", "n1", "t"))
    b = compact(_pod("web-2", "n2", "t"))
    mine = deep_copy(a)  # what CachedClient.get hands out
    mine["spec"]["containers"][0]["image"] = "changed"
    assert b["spec"]["containers"][0]["image"] == "web:1"
