"""Event recorder: in-memory record, deduplication, events.k8s.io/v1 objects."""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.kube.client import Forbidden
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.events import Event, EventRecorder, object_reference
from karpenter_core.sim.apiserver import InMemoryApiServer

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "u-1"}}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "apps", "uid": "u-2"},
}


def test_published_events_are_kept_in_memory() -> None:
    clock = VirtualClock()
    recorder = EventRecorder(clock)
    recorder.normal(NODE, "Launched", "launched n1")
    recorder.warning(POD, "FailedScheduling", "no capacity")
    assert [(e.type, e.kind, e.name, e.reason) for e in recorder.events] == [
        ("Normal", "Node", "n1", "Launched"),
        ("Warning", "Pod", "p", "FailedScheduling"),
    ]
    assert recorder.events[0].time == clock.now()


def test_identical_events_within_the_window_are_dropped() -> None:
    clock = VirtualClock()
    recorder = EventRecorder(clock, dedupe_timeout=120)
    recorder.normal(NODE, "Ready", "node is ready")
    clock.advance(119)
    recorder.normal(NODE, "Ready", "node is ready")
    assert len(recorder.events) == 1
    assert recorder.dropped == 1


def test_identical_events_after_the_window_are_recorded_again() -> None:
    clock = VirtualClock()
    recorder = EventRecorder(clock, dedupe_timeout=120)
    recorder.normal(NODE, "Ready", "node is ready")
    clock.advance(120)
    recorder.normal(NODE, "Ready", "node is ready")
    assert len(recorder.events) == 2


def test_events_that_differ_are_not_deduplicated() -> None:
    recorder = EventRecorder(VirtualClock())
    recorder.normal(NODE, "Ready", "node is ready")
    recorder.normal(NODE, "Ready", "node is ready again")
    recorder.warning(NODE, "Ready", "node is ready")
    recorder.normal(POD, "Ready", "node is ready")
    assert len(recorder.events) == 4


def test_dedupe_values_key_events_by_reason_and_values() -> None:
    recorder = EventRecorder(VirtualClock())
    recorder.normal(NODE, "DisruptionBlocked", "message one", "n1")
    recorder.normal(NODE, "DisruptionBlocked", "a different message", "n1")
    recorder.normal(NODE, "DisruptionBlocked", "message one", "n2")
    assert [e.message for e in recorder.events] == ["message one", "message one"]


def test_an_event_can_carry_its_own_dedupe_timeout() -> None:
    clock = VirtualClock()
    recorder = EventRecorder(clock)
    event = Event(NODE, "Normal", "Tick", "tick", dedupe_values=("n1",), dedupe_timeout=5)
    recorder.publish(event)
    clock.advance(5)
    recorder.publish(event)
    assert len(recorder.events) == 2


def test_events_are_filtered_by_object() -> None:
    recorder = EventRecorder(VirtualClock())
    recorder.normal(NODE, "A", "a")
    recorder.normal(POD, "B", "b")
    assert [e.reason for e in recorder.for_object("Pod", "p", "apps")] == ["B"]
    assert recorder.for_object("Pod", "p", "elsewhere") == []


@pytest.mark.parametrize("bad", ["normal", "Error", ""])
def test_event_type_must_be_normal_or_warning(bad: str) -> None:
    with pytest.raises(ValueError, match="Normal"):
        Event(NODE, bad, "Reason", "message")


def test_an_event_needs_a_reason() -> None:
    with pytest.raises(ValueError, match="reason"):
        Event(NODE, "Normal", "", "message")


def test_object_reference_of_an_object() -> None:
    assert object_reference(POD) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "p",
        "namespace": "apps",
        "uid": "u-2",
    }


def test_events_are_written_as_events_k8s_io_v1_objects() -> None:
    clock = VirtualClock()
    server = InMemoryApiServer(clock)
    recorder = EventRecorder(clock, server, instance="karpenter-test")
    pod = server.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        }
    )
    recorder.warning(pod, "FailedScheduling", "x" * 2000)
    recorder.normal(NODE, "Launched", "launched")
    [pod_event] = server.list(
        ("events.k8s.io/v1", "Event"), "default", field_selector="regarding.name=p"
    ).items
    assert pod_event["type"] == "Warning"
    assert pod_event["reason"] == "FailedScheduling"
    assert pod_event["regarding"]["uid"] == pod["metadata"]["uid"]
    assert pod_event["reportingController"] == "karpenter"
    assert pod_event["reportingInstance"] == "karpenter-test"
    assert len(pod_event["note"]) == 1024
    assert pod_event["eventTime"].endswith("Z")
    node_events = server.list(
        ("events.k8s.io/v1", "Event"), "default", field_selector="regarding.kind=Node"
    )
    assert [e["regarding"]["name"] for e in node_events] == ["n1"]


def test_events_about_the_same_object_at_the_same_instant_get_distinct_names() -> None:
    clock = VirtualClock()
    server = InMemoryApiServer(clock)
    recorder = EventRecorder(clock, server)
    recorder.normal(NODE, "A", "a")
    recorder.normal(NODE, "B", "b")
    names = {e["metadata"]["name"] for e in server.list(("events.k8s.io/v1", "Event"), "default")}
    assert len(names) == 2


def test_a_failed_write_is_counted_not_raised() -> None:
    class Refusing:
        def create(self, obj: Any, namespace: str | None = None) -> Any:
            raise Forbidden("no")

    recorder = EventRecorder(VirtualClock(), Refusing())  # type: ignore[arg-type]
    recorder.normal(NODE, "A", "a")
    assert recorder.write_errors == 1
    assert len(recorder.events) == 1


def test_a_burst_of_distinct_events_prunes_the_dedupe_keys_a_few_times_not_per_event(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """45,000 pods each changing a condition inside one window once pruned on every event
    past the 40,000th key (quadratic); the keys still inside their window must be kept."""
    clock = VirtualClock()
    recorder = EventRecorder(clock, dedupe_timeout=120, max_events=10)
    prunes = []
    prune = recorder._prune
    monkeypatch.setattr(recorder, "_prune", lambda now: (prunes.append(now), prune(now)))
    for i in range(100_000):
        recorder.normal({**POD, "metadata": {"name": f"p{i}", "uid": f"u{i}"}}, "Ready", "r")
    assert 1 <= len(prunes) <= 2
    recorder.normal({**POD, "metadata": {"name": "p0", "uid": "u0"}}, "Ready", "r")
    assert recorder.dropped == 1
    clock.advance(121)
    for i in range(100_000, 300_000):
        recorder.normal({**POD, "metadata": {"name": f"p{i}", "uid": f"u{i}"}}, "Ready", "r")
    assert len(prunes) <= 4
    assert len(recorder._seen) <= 200_000
