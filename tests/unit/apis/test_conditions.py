"""Condition mechanics on object dicts: operatorpkg semantics with a root, apimachinery's
SetStatusCondition without one, the status patch, and the readers."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from karpenter_core.apis.conditions import ConditionSet, condition_of, conditions_of, is_true
from karpenter_core.apis.v1 import NodePool
from karpenter_core.runtime.clock import VirtualClock, format_time

CREATED = "2026-01-01T00:00:00Z"


def obj(generation: int = 1, **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "x", "generation": generation, "creationTimestamp": CREATED, **meta}
    }


def by_type(o: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in o["status"]["conditions"]}


def test_opening_fills_missing_dependents_unknown_at_creation_time() -> None:
    clock = VirtualClock()
    clock.advance(3600)
    o = obj()
    ConditionSet(o, clock)
    conds = by_type(o)
    assert set(conds) == {"Ready", "Launched", "Registered", "Initialized"}
    for c in conds.values():
        assert c["status"] == "Unknown"
        assert c["lastTransitionTime"] == CREATED
        assert c["observedGeneration"] == 1
    assert conds["Launched"]["reason"] == "AwaitingReconciliation"


def test_transition_time_moves_only_when_the_status_changes() -> None:
    clock = VirtualClock()
    o = obj()
    cs = ConditionSet(o, clock)
    clock.advance(10)
    assert cs.set_unknown_with_reason("Launched", "LaunchFailed", "boom")
    assert cs.get("Launched")["lastTransitionTime"] == CREATED
    clock.advance(10)
    assert cs.set_true("Launched")
    assert cs.get("Launched")["lastTransitionTime"] == "2026-01-01T00:00:20Z"
    clock.advance(10)
    assert not cs.set_true("Launched"), "setting the same condition again changes nothing"
    assert cs.get("Launched")["lastTransitionTime"] == "2026-01-01T00:00:20Z"


def test_root_is_true_only_when_every_dependent_is_true() -> None:
    clock = VirtualClock()
    o = obj()
    cs = ConditionSet(o, clock)
    cs.set_true("Launched")
    cs.set_true("Registered")
    assert cs.get("Ready")["status"] == "Unknown"
    assert cs.get("Ready")["reason"] == "ReconcilingDependents"
    assert cs.get("Ready")["message"] == "Initialized=Unknown"
    cs.set_true("Initialized")
    assert cs.get("Ready")["status"] == "True"
    assert cs.get("Ready")["reason"] == "Ready"


def test_a_false_dependent_makes_the_root_false() -> None:
    clock = VirtualClock()
    o = obj()
    cs = ConditionSet(o, clock)
    cs.set_false("Registered", "MultipleNodesFound", "Invariant violated")
    assert cs.get("Ready")["status"] == "False"
    assert cs.get("Ready")["reason"] == "UnhealthyDependents"
    assert "Registered=False" in cs.get("Ready")["message"]


def test_dependents_true_at_an_older_generation_keep_the_root_unknown() -> None:
    clock = VirtualClock()
    o = obj()
    cs = ConditionSet(o, clock)
    for t in ("Launched", "Registered", "Initialized"):
        cs.set_true(t)
    assert cs.get("Ready")["status"] == "True"
    o["metadata"]["generation"] = 2
    cs.refresh("Launched")
    assert cs.get("Ready")["status"] == "Unknown"
    cs.refresh("Registered")
    cs.refresh("Initialized")
    assert cs.get("Ready")["status"] == "True"
    assert all(c["observedGeneration"] == 2 for c in o["status"]["conditions"])


def test_the_root_comes_last_and_the_rest_by_transition_time() -> None:
    clock = VirtualClock()
    o = obj()
    cs = ConditionSet(o, clock)
    clock.advance(5)
    cs.set_true("Initialized")
    clock.advance(5)
    cs.set_true("Drifted", "NodePoolDrifted")
    types = [c["type"] for c in o["status"]["conditions"]]
    assert types[-1] == "Ready"
    assert types.index("Initialized") < types.index("Drifted")


def test_an_independent_condition_starts_at_now_and_can_be_cleared() -> None:
    clock = VirtualClock()
    clock.advance(60)
    o = obj()
    cs = ConditionSet(o, clock)
    cs.set_true("InstanceTerminating")
    assert cs.get("InstanceTerminating")["lastTransitionTime"] == "2026-01-01T00:01:00Z"
    assert cs.get("Ready")["status"] == "Unknown", "independent conditions do not feed the root"
    assert cs.clear("InstanceTerminating")
    assert cs.get("InstanceTerminating") is None
    with pytest.raises(ValueError, match="dependent"):
        cs.clear("Launched")


def test_on_a_deleting_object_every_condition_follows_the_generation() -> None:
    clock = VirtualClock()
    o = obj()
    cs = ConditionSet(o, clock)
    o["metadata"]["generation"] = 2
    o["metadata"]["deletionTimestamp"] = CREATED
    cs.set_true("InstanceTerminating")
    assert all(c["observedGeneration"] == 2 for c in o["status"]["conditions"])


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["Launched", "Registered", "Initialized"]),
            st.sampled_from(["True", "False", "Unknown"]),
        ),
        max_size=12,
    )
)
def test_root_always_agrees_with_the_dependents(steps: list[tuple[str, str]]) -> None:
    clock = VirtualClock()
    o = obj()
    cs = ConditionSet(o, clock)
    for type_, status in steps:
        cs.set(type_, status, "R", "")
    statuses = [cs.get(t)["status"] for t in ("Launched", "Registered", "Initialized")]
    want = (
        "True"
        if all(s == "True" for s in statuses)
        else "False"
        if "False" in statuses
        else "Unknown"
    )
    assert cs.get("Ready")["status"] == want


# ---------------------------------------------------------------- independent conditions


def test_without_a_root_nothing_is_filled_in_and_order_is_kept() -> None:
    clock = VirtualClock()
    o = obj(generation=4)
    cs = ConditionSet(o, clock, root=None)
    assert "status" not in o  # opening wrote nothing
    cs.set("Drained", "Unknown", "Draining", "Draining")
    clock.advance(5)
    cs.set_true("VolumesDetached")
    clock.advance(5)
    assert cs.set_true("Drained")
    assert [c["type"] for c in o["status"]["conditions"]] == ["Drained", "VolumesDetached"]
    drained = by_type(o)["Drained"]
    assert (drained["status"], drained["reason"], drained["observedGeneration"]) == (
        "True",
        "Drained",
        4,
    )
    assert drained["lastTransitionTime"] == format_time(clock.now())  # moved on True
    # the same value again changes nothing, and keeps the transition time
    clock.advance(5)
    assert not cs.set_true("Drained")
    assert by_type(o)["Drained"]["lastTransitionTime"] == drained["lastTransitionTime"]
    assert "Ready" not in by_type(o)


def test_without_a_root_any_condition_may_be_cleared() -> None:
    o = obj()
    cs = ConditionSet(o, VirtualClock(), root=None)
    cs.set_true("Ready")
    assert cs.clear("Ready")
    assert not cs.clear("Ready")
    assert o["status"]["conditions"] == []


# ---------------------------------------------------------------- the status patch


def test_status_patch_is_none_until_something_changes() -> None:
    o = obj(resourceVersion="7")
    cs = ConditionSet(o, VirtualClock(), root=None)
    assert cs.status_patch() is None
    cs.set_false("ValidationSucceeded", "Conflict", "overlaps")
    patch = cs.status_patch()
    assert patch == {
        "metadata": {"resourceVersion": "7"},
        "status": {"conditions": o["status"]["conditions"]},
    }
    assert patch is not None and patch["status"]["conditions"] is not o["status"]["conditions"]
    assert cs.status_patch(resource_version=False) == {"status": patch["status"]}


def test_opening_a_rooted_set_on_a_new_object_is_a_change_to_write() -> None:
    o = obj(resourceVersion="1")
    cs = ConditionSet(o, VirtualClock())
    patch = cs.status_patch()
    assert patch is not None
    assert {c["type"] for c in patch["status"]["conditions"]} == {
        "Ready",
        "Launched",
        "Registered",
        "Initialized",
    }
    again = ConditionSet(o, VirtualClock())  # now stored: nothing more to write
    assert again.status_patch() is None


def test_a_set_over_a_typed_model_leaves_the_model_alone() -> None:
    pool = NodePool.from_dict(
        {"metadata": {"name": "p", "generation": 2, "resourceVersion": "9"}, "spec": {}}
    )
    cs = ConditionSet.of(pool, VirtualClock(), dependents=("NodeClassReady",))
    cs.set_true("NodeClassReady")
    assert pool.conditions == ()
    updated = NodePool.from_dict(cs.obj)
    assert updated.is_true("NodeClassReady") and updated.is_true("Ready")
    patch = cs.status_patch()
    assert patch is not None and patch["metadata"] == {"resourceVersion": "9"}


# ---------------------------------------------------------------- readers


def test_readers_tolerate_malformed_status() -> None:
    assert conditions_of({"status": "x"}) == []
    assert conditions_of({"status": {"conditions": "x"}}) == []
    assert conditions_of({"status": {"conditions": [1, {"type": "A"}]}}) == [{"type": "A"}]
    good = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert is_true(good, "Ready")
    assert not is_true(good, "Other")
    assert condition_of(good, "Ready") == {"type": "Ready", "status": "True"}
    assert not is_true({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}, "Ready")
