"""The asynchronous event recorder writes in the background and flushes on close."""

from __future__ import annotations

from typing import Any

from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.events import EventRecorder

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "u-1"}}


def test_an_asynchronous_recorder_writes_in_the_background_and_close_flushes() -> None:
    import threading

    release = threading.Event()
    written: list[str] = []

    class Slow:
        def create(self, obj: Any, namespace: str | None = None) -> Any:
            release.wait(5.0)
            written.append(obj["reason"])
            return obj

    recorder = EventRecorder(VirtualClock(), Slow(), asynchronous=True)  # type: ignore[arg-type]
    recorder.normal(NODE, "A", "a")
    recorder.normal(NODE, "B", "b")
    # publish returned although the client is still blocked on the first write
    assert len(recorder.events) == 2
    release.set()
    recorder.close()
    assert written == ["A", "B"]
    recorder.normal(NODE, "C", "c")  # after close: kept in memory, not written
    assert written == ["A", "B"]
    assert len(recorder.events) == 3
