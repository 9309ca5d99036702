"""The generic batcher, driven by hand with a fake clock (no window thread): when a
window closes, what is merged into one call, and how each item gets its own result."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest
from karpenter_aws.batcher import (
    BATCH_SIZE,
    BATCH_TIME,
    Batcher,
    BatchOptions,
    one_bucket,
    request_hash,
)
from karpenter_aws.ec2batch import fleet_hash

from karpenter_core import metrics

OPTIONS = BatchOptions("test", idle=0.035, max_wait=1.0, max_items=5)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Recorder:
    """An executor that records its calls and answers ``item * 10``."""

    def __init__(self) -> None:
        self.calls: list[list[Any]] = []

    def __call__(self, items: list[Any]) -> list[Any]:
        self.calls.append(list(items))
        return [i * 10 for i in items]


def make(
    executor: Any = None, hasher: Any = one_bucket, options: BatchOptions = OPTIONS
) -> tuple[Batcher[Any, Any], Clock, Any]:
    clock = Clock()
    executor = executor if executor is not None else Recorder()
    return Batcher(options, executor, hasher, monotonic=clock, threaded=False), clock, executor


def test_a_window_closes_once_no_item_came_for_the_idle_time() -> None:
    b, clock, ex = make()
    f = b.submit(1)
    clock.now += 0.034
    assert not b.flush_due() and not f.done()
    clock.now += 0.001
    assert b.flush_due()
    assert ex.calls == [[1]] and f.result() == 10
    assert b.pending() == 0 and b.deadline() is None


def test_each_item_restarts_the_idle_time_until_the_max_wait() -> None:
    b, clock, ex = make(options=BatchOptions("test", idle=0.035, max_wait=0.1, max_items=0))
    futures = [b.submit(0)]
    for i in range(1, 4):  # items 30 ms apart: the idle time never runs out...
        clock.now += 0.03
        assert not b.flush_due()
        futures.append(b.submit(i))
    assert b.deadline() == pytest.approx(100.1)  # ...but the window opened 90 ms ago
    clock.now += 0.01
    assert b.flush_due()
    assert ex.calls == [[0, 1, 2, 3]]
    assert [f.result() for f in futures] == [0, 10, 20, 30]


def test_a_window_holding_max_items_closes_at_once() -> None:
    b, _, ex = make()
    for i in range(4):
        b.submit(i)
    assert not b.flush_due()
    b.submit(4)
    assert b.flush_due()  # no time passed
    assert ex.calls == [[0, 1, 2, 3, 4]]


def test_items_hashing_alike_share_a_call_and_others_get_their_own_in_the_same_window() -> None:
    calls: list[list[int]] = []

    def executor(items: list[dict[str, int]]) -> list[int]:
        calls.append([i["n"] for i in items])
        return [i["n"] for i in items]

    b, clock, _ = make(executor=executor, hasher=lambda item: item["kind"])
    a1 = b.submit({"kind": "a", "n": 1})
    b1 = b.submit({"kind": "b", "n": 2})
    a2 = b.submit({"kind": "a", "n": 3})
    clock.now += 1
    assert b.flush_due()
    assert sorted(calls) == [[1, 3], [2]]
    assert (a1.result(), b1.result(), a2.result()) == (1, 2, 3)


def test_one_failed_item_fails_alone() -> None:
    boom = ValueError("item 2 failed")
    b, _, _ = make(executor=lambda items: [1, boom, 3])
    futures = [b.submit(i) for i in range(3)]
    b.flush()
    assert futures[0].result() == 1 and futures[2].result() == 3
    with pytest.raises(ValueError, match="item 2 failed"):
        futures[1].result()


def test_a_call_that_raises_fails_every_item_of_it() -> None:
    def broken(items: list[Any]) -> list[Any]:
        raise ConnectionError("throttled")

    b, _, _ = make(executor=broken)
    futures = [b.submit(i) for i in range(3)]
    b.flush()
    for f in futures:
        with pytest.raises(ConnectionError, match="throttled"):
            f.result()


def test_items_a_call_gave_no_result_for_fail() -> None:
    b, _, _ = make(executor=lambda items: [7])
    first, second = b.submit(1), b.submit(2)
    b.flush()
    assert first.result() == 7
    with pytest.raises(RuntimeError, match="no result"):
        second.result()


def test_call_without_a_window_thread_sends_at_once() -> None:
    b, _, ex = make()
    assert b.call(4) == 40 and ex.calls == [[4]]


def test_a_closed_batcher_sends_what_it_holds_and_takes_no_more() -> None:
    b, _, _ = make()
    f: Future[Any] = b.submit(1)
    b.close()
    assert f.result() == 10
    with pytest.raises(RuntimeError, match="closed"):
        b.submit(2)


def test_batch_size_and_window_time_are_observed_per_batcher() -> None:
    def count(h: Any) -> float:
        samples = [s for m in h.collect() for s in m.samples]
        return next(
            (
                s.value
                for s in samples
                if s.name.endswith("_count") and s.labels == {"batcher": "t"}
            ),
            0.0,
        )

    size_sum = metrics.REGISTRY.get_sample_value
    before_sizes = count(BATCH_SIZE)
    before_windows = count(BATCH_TIME)
    before_sum = size_sum("karpenter_cloudprovider_batcher_batch_size_sum", {"batcher": "t"}) or 0
    b, clock, _ = make(hasher=lambda i: i % 2, options=BatchOptions("t", 0.035, 1.0, 0))
    for i in range(5):
        b.submit(i)
    clock.now += 0.5
    b.flush_due()
    assert count(BATCH_SIZE) - before_sizes == 2  # two buckets, two calls
    assert count(BATCH_TIME) - before_windows == 1  # one window
    after_sum = size_sum("karpenter_cloudprovider_batcher_batch_size_sum", {"batcher": "t"})
    assert after_sum - before_sum == 5
    window_sum = size_sum(
        "karpenter_cloudprovider_batcher_batch_time_seconds_sum", {"batcher": "t"}
    )
    assert window_sum is not None and window_sum >= 0.5


def test_request_hash_ignores_key_and_list_order_but_not_values() -> None:
    a = {"Filters": [{"Name": "x", "Values": ["1", "2"]}, {"Name": "y", "Values": []}], "k": 1}
    b = {"k": 1, "Filters": [{"Values": [], "Name": "y"}, {"Name": "x", "Values": ["2", "1"]}]}
    assert request_hash(a) == request_hash(b)
    assert request_hash(a) != request_hash({**a, "k": 2})


def test_fleet_requests_differing_only_in_target_capacity_share_a_bucket() -> None:
    def fleet(total: int, ct: str = "on-demand") -> dict[str, Any]:
        return {
            "Type": "instant",
            "TargetCapacitySpecification": {
                "TotalTargetCapacity": total,
                "DefaultTargetCapacityType": ct,
            },
        }

    assert fleet_hash(fleet(1)) == fleet_hash(fleet(7))
    assert fleet_hash(fleet(1)) != fleet_hash(fleet(1, "spot"))
