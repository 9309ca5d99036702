"""The work queue between threads: a blocked get wakes on another thread's add, and
concurrent workers never hold the same item."""

from __future__ import annotations

import threading

from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.workqueue import (
    ItemExponentialFailureRateLimiter,
    ShutDown,
    WorkQueue,
)


def make_queue(clock: VirtualClock | None = None) -> tuple[WorkQueue[str], VirtualClock]:
    clock = clock or VirtualClock()
    return WorkQueue(clock, ItemExponentialFailureRateLimiter()), clock


def test_get_blocks_until_another_thread_adds() -> None:
    queue, _ = make_queue()
    got: list[str] = []
    worker = threading.Thread(target=lambda: got.append(queue.get(timeout=10)))
    worker.start()
    queue.add("a")
    worker.join(10)
    assert got == ["a"]


def test_concurrent_workers_never_hold_the_same_item() -> None:
    queue: WorkQueue[int] = WorkQueue(VirtualClock())
    holding: set[int] = set()
    lock = threading.Lock()
    violations: list[int] = []
    processed: list[int] = []

    def worker() -> None:
        while True:
            try:
                item = queue.get(timeout=0.5)
            except (TimeoutError, ShutDown):
                return
            with lock:
                if item in holding:
                    violations.append(item)
                holding.add(item)
            if len(processed) < 2000:
                queue.add(item)  # re-added while held: must not reach another worker
            with lock:
                holding.discard(item)
                processed.append(item)
            queue.done(item)

    for i in range(10):
        queue.add(i)
    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert violations == []
    assert len(processed) >= 2000
