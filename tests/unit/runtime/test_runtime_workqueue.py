"""Work queue: client-go de-duplication, delayed adds, rate limiting."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    ShutDown,
    WorkQueue,
    default_controller_rate_limiter,
)


def make_queue(clock: VirtualClock | None = None) -> tuple[WorkQueue[str], VirtualClock]:
    clock = clock or VirtualClock()
    return WorkQueue(clock, ItemExponentialFailureRateLimiter()), clock


def drain(queue: WorkQueue[str]) -> list[str]:
    out: list[str] = []
    while (item := queue.get_nowait()) is not None:
        out.append(item)
        queue.done(item)
    return out


def test_items_come_out_in_fifo_order() -> None:
    queue, _ = make_queue()
    for item in "abc":
        queue.add(item)
    assert drain(queue) == ["a", "b", "c"]


def test_adding_a_queued_item_again_is_a_no_op() -> None:
    queue, _ = make_queue()
    queue.add("a")
    queue.add("b")
    queue.add("a")
    assert len(queue) == 2
    assert drain(queue) == ["a", "b"]


def test_an_item_re_added_while_processing_waits_for_done() -> None:
    queue, _ = make_queue()
    queue.add("a")
    taken = queue.get_nowait()
    queue.add("a")
    assert queue.get_nowait() is None  # never handed out twice at once
    assert taken is not None
    queue.done(taken)
    assert queue.get_nowait() == "a"


def test_re_adds_while_processing_coalesce_into_one() -> None:
    queue, _ = make_queue()
    queue.add("a")
    taken = queue.get_nowait()
    assert taken is not None
    for _ in range(5):
        queue.add("a")
    queue.done(taken)
    assert drain(queue) == ["a"]


def test_done_without_a_re_add_does_not_requeue() -> None:
    queue, _ = make_queue()
    queue.add("a")
    taken = queue.get_nowait()
    assert taken is not None
    queue.done(taken)
    assert queue.get_nowait() is None


def test_add_after_waits_for_the_clock() -> None:
    queue, clock = make_queue()
    queue.add_after("a", 10)
    assert queue.get_nowait() is None
    assert queue.waiting() == 1
    clock.advance(9.999)
    assert queue.get_nowait() is None
    clock.advance(0.001)
    assert queue.get_nowait() == "a"


def test_add_after_keeps_the_earliest_deadline() -> None:
    queue, clock = make_queue()
    queue.add_after("a", 10)
    queue.add_after("a", 3)
    queue.add_after("a", 20)
    clock.advance(3)
    assert queue.get_nowait() == "a"
    queue.done("a")
    clock.advance(100)
    assert queue.get_nowait() is None


def test_add_after_with_no_delay_adds_now() -> None:
    queue, _ = make_queue()
    queue.add_after("a", 0)
    assert queue.get_nowait() == "a"


def test_rate_limited_adds_back_off_exponentially() -> None:
    queue, clock = make_queue()
    delays = []
    for _ in range(5):
        start = clock.monotonic()
        queue.add_rate_limited("a")
        clock.step()
        delays.append(round(clock.monotonic() - start, 6))
        assert queue.get_nowait() == "a"
        queue.done("a")
    assert delays == [0.005, 0.01, 0.02, 0.04, 0.08]
    assert queue.num_requeues("a") == 5


def test_forget_resets_the_back_off() -> None:
    queue, _ = make_queue()
    limiter = queue.rate_limiter
    for _ in range(4):
        limiter.when("a")
    queue.forget("a")
    assert queue.num_requeues("a") == 0
    assert limiter.when("a") == 0.005


def test_back_off_is_per_item() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.005, 1000)
    for _ in range(3):
        limiter.when("a")
    assert limiter.when("b") == 0.005


def test_back_off_is_capped_at_the_max_delay() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.005, 1000)
    delays = [limiter.when("a") for _ in range(40)]
    assert max(delays) == 1000
    assert delays[-1] == 1000
    assert limiter.when("a") == 1000  # and stays there without overflowing


def test_bad_back_off_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="base_delay"):
        ItemExponentialFailureRateLimiter(0, 10)


def test_bucket_allows_a_burst_then_paces_at_qps() -> None:
    clock = VirtualClock()
    bucket = BucketRateLimiter(clock, qps=10, burst=3)
    delays = [bucket.when(i) for i in range(5)]
    assert delays[:3] == [0.0, 0.0, 0.0]
    assert delays[3:] == pytest.approx([0.1, 0.2])


def test_bucket_refills_over_time() -> None:
    clock = VirtualClock()
    bucket = BucketRateLimiter(clock, qps=10, burst=2)
    bucket.when("a")
    bucket.when("b")
    clock.advance(1)
    assert bucket.when("c") == 0.0


def test_max_of_takes_the_longest_delay() -> None:
    clock = VirtualClock()
    limiter = MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000), BucketRateLimiter(clock, qps=1, burst=1)
    )
    assert limiter.when("a") == 0.005
    assert limiter.when("b") == pytest.approx(1.0)


def test_default_controller_rate_limiter_starts_at_five_milliseconds() -> None:
    limiter = default_controller_rate_limiter(VirtualClock())
    assert limiter.when("a") == 0.005
    assert limiter.when("a") == 0.01


def test_shut_down_queue_refuses_adds_and_get_raises() -> None:
    queue, _ = make_queue()
    queue.shut_down()
    queue.add("a")
    assert len(queue) == 0
    with pytest.raises(ShutDown):
        queue.get()


def test_shut_down_cancels_delayed_adds() -> None:
    queue, clock = make_queue()
    queue.add_after("a", 5)
    queue.shut_down()
    clock.advance(10)
    assert len(queue) == 0


def test_get_times_out_when_empty() -> None:
    queue, _ = make_queue()
    with pytest.raises(TimeoutError, match="nothing to do"):
        queue.get(timeout=0.01)


def test_on_ready_is_called_when_an_item_becomes_available() -> None:
    calls: list[int] = []
    queue: WorkQueue[str] = WorkQueue(VirtualClock(), on_ready=lambda: calls.append(1))
    queue.add("a")
    queue.add("a")
    assert calls == [1]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "get", "done"]), st.integers(0, 4)), max_size=60))
def test_queue_invariants_hold_for_any_sequence(ops: list[tuple[str, int]]) -> None:
    """Never two copies of an item in flight; every add is eventually served."""
    queue: WorkQueue[int] = WorkQueue(VirtualClock())
    in_flight: set[int] = set()
    pending_adds: set[int] = set()
    for op, item in ops:
        if op == "add":
            queue.add(item)
            pending_adds.add(item)
        elif op == "get":
            got = queue.get_nowait()
            if got is not None:
                assert got not in in_flight
                in_flight.add(got)
                pending_adds.discard(got)
        elif item in in_flight:
            queue.done(item)
            in_flight.discard(item)
    for item in list(in_flight):
        queue.done(item)
    served: set[int] = set()
    while (got := queue.get_nowait()) is not None:
        assert got not in served
        served.add(got)
        queue.done(got)
    assert pending_adds <= served
