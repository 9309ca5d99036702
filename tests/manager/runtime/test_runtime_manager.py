"""Manager: result handling, watches to keys, and the deterministic virtual-time loop."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from karpenter_core.runtime.clock import ComputeCharge, ManualMeter, VirtualClock, WallClock
from karpenter_core.runtime.manager import LivelockError, Manager
from karpenter_core.runtime.reconciler import ObjectKey, Result, Watch, key_of
from karpenter_core.sim.apiserver import InMemoryApiServer


class Recorder:
    """A keyed reconciler that logs (time, key) and returns what ``decide`` says."""

    def __init__(self, clock: VirtualClock, decide: Callable[[Any], Result | None] | None = None):
        self.clock = clock
        self.calls: list[tuple[float, Any]] = []
        self.decide = decide or (lambda key: Result())

    def reconcile(self, key: Any) -> Result | None:
        self.calls.append((self.clock.monotonic(), key))
        return self.decide(key)


class Ticker:
    """A singleton that runs every ``period`` seconds."""

    def __init__(self, clock: VirtualClock, period: float) -> None:
        self.clock = clock
        self.period = period
        self.times: list[float] = []

    def reconcile(self) -> Result:
        self.times.append(self.clock.monotonic())
        return Result(requeue_after=self.period)


def configmap(name: str, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
    }


# ---------------------------------------------------------------- singletons and timers


def test_a_simulated_hour_of_ten_second_singleton_runs() -> None:
    clock = VirtualClock()
    manager = Manager(clock)
    ticker = Ticker(clock, 10)
    manager.add_singleton("ticker", ticker)
    ran = manager.run_until(clock.start + timedelta(hours=1))
    assert len(ticker.times) == 361  # t=0, 10, ..., 3600
    assert ran == 361
    assert ticker.times[:3] == [0.0, 10.0, 20.0]
    assert clock.monotonic() == 3600.0


def test_singletons_with_different_periods_interleave_by_time() -> None:
    clock = VirtualClock()
    manager = Manager(clock)
    fast, slow = Ticker(clock, 10), Ticker(clock, 60)
    manager.add_singleton("fast", fast)
    manager.add_singleton("slow", slow)
    manager.run_for(600)
    assert len(fast.times) == 61
    assert slow.times == [0.0, 60.0, 120.0, 180.0, 240.0, 300.0, 360.0, 420.0, 480.0, 540.0, 600.0]


def test_run_until_leaves_the_clock_at_the_target() -> None:
    clock = VirtualClock()
    manager = Manager(clock)
    manager.add_singleton("ticker", Ticker(clock, 1000))
    manager.run_for(42)
    assert clock.monotonic() == 42.0


# ---------------------------------------------------------------- result handling


def test_a_failing_reconcile_is_retried_with_exponential_back_off() -> None:
    clock = VirtualClock()
    manager = Manager(clock)
    attempts: list[float] = []

    def decide(key: Any) -> Result:
        attempts.append(clock.monotonic())
        if len(attempts) < 5:
            raise RuntimeError("not yet")
        return Result()

    controller = manager.add_controller("c", Recorder(clock, decide))
    manager.enqueue("c", "k")
    manager.run_for(10)
    gaps = [round(b - a, 6) for a, b in itertools.pairwise(attempts)]
    assert gaps == [0.005, 0.01, 0.02, 0.04]
    assert controller.errors == 4
    assert controller.queue.num_requeues("k") == 0  # forgotten after the success


def test_requeue_after_runs_again_later_and_resets_the_back_off() -> None:
    clock = VirtualClock()
    manager = Manager(clock)
    outcomes = iter([RuntimeError("x"), RuntimeError("y"), Result(requeue_after=30), Result()])

    def decide(key: Any) -> Result:
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    recorder = Recorder(clock, decide)
    controller = manager.add_controller("c", recorder)
    manager.enqueue("c", "k")
    manager.run_for(100)
    times = [t for t, _ in recorder.calls]
    assert times == [0.0, 0.005, 0.015, 30.015]
    assert controller.queue.num_requeues("k") == 0


def test_requeue_true_retries_with_back_off_without_counting_an_error() -> None:
    clock = VirtualClock()
    manager = Manager(clock)
    results = iter([Result(requeue=True), Result(requeue=True), Result()])
    recorder = Recorder(clock, lambda key: next(results))
    controller = manager.add_controller("c", recorder)
    manager.enqueue("c", "k")
    manager.run_for(10)
    assert [t for t, _ in recorder.calls] == [0.0, 0.005, 0.015]
    assert controller.errors == 0


def test_an_empty_result_is_not_requeued() -> None:
    clock = VirtualClock()
    manager = Manager(clock)
    recorder = Recorder(clock)
    manager.add_controller("c", recorder)
    manager.enqueue("c", "k")
    manager.run_for(3600)
    assert len(recorder.calls) == 1


def test_returning_something_other_than_a_result_is_an_error() -> None:
    clock = VirtualClock()
    manager = Manager(clock)
    controller = manager.add_controller("c", Recorder(clock, lambda key: "done"))  # type: ignore[arg-type,return-value]
    manager.enqueue("c", "k")
    manager.settle()
    assert controller.errors == 1
    assert "expected Result" in str(controller.last_error)


def test_negative_requeue_after_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        Result(requeue_after=-1)


def test_keys_enqueued_many_times_at_once_reconcile_once() -> None:
    clock = VirtualClock()
    manager = Manager(clock)
    recorder = Recorder(clock)
    manager.add_controller("c", recorder)
    for _ in range(10):
        manager.enqueue("c", "k")
    manager.settle()
    assert recorder.calls == [(0.0, "k")]


@pytest.mark.parametrize("charged", [False, True], ids=["free", "charged"])
def test_a_reconciler_that_requeues_itself_forever_is_reported(charged: bool) -> None:
    # charged: every reconcile costs a millisecond of compute, which must not count as
    # time moving on (or the loop would spin until the target, never reported)
    clock, meter = VirtualClock(), ManualMeter()
    charge = ComputeCharge(meter=meter) if charged else None
    manager = Manager(clock, max_reconciles_per_instant=50, charge=charge)

    class Spinner:
        def reconcile(self, key: Any) -> Result:
            meter.spend(0.001)
            manager.enqueue("spin", key)
            return Result()

    manager.add_controller("spin", Spinner())
    manager.enqueue("spin", "k")
    with pytest.raises(LivelockError, match="spin"):
        manager.run_for(1)


def test_many_distinct_keys_at_one_instant_are_not_a_livelock() -> None:
    """150,000 pods created at once are 150,000 reconciles at one virtual instant: that is
    a burst, not a loop; only a key reconciled over and over is."""
    clock = VirtualClock()
    manager = Manager(clock, max_reconciles_per_key=3)
    seen: list[Any] = []

    class Once:
        def reconcile(self, key: Any) -> Result:
            seen.append(key)
            return Result()

    manager.add_controller("burst", Once())
    for i in range(5_000):
        manager.enqueue("burst", i)
    manager.settle()
    assert len(seen) == 5_000


def test_a_key_woken_by_other_controllers_writes_is_not_a_livelock() -> None:
    """A scale-in evicts pods one by one at one virtual instant, and every eviction wakes
    the kube-scheduler's single key: the cluster changes between its reconciles, so it is
    progress, however many times that happens; only a key reconciled again with nothing
    watched changing counts towards the limit."""
    clock = VirtualClock()
    server = InMemoryApiServer(clock)
    manager = Manager(clock, server, max_reconciles_per_key=3)
    writes = iter(range(20))
    passes: list[float] = []

    class Writer:
        def reconcile(self, key: Any) -> Result:
            i = next(writes, None)
            if i is not None:
                server.create(configmap(f"cm-{i}"))
                manager.enqueue("writer", key)
            return Result()

    class Pass:
        def reconcile(self, key: Any) -> Result:
            passes.append(clock.monotonic())
            if next(done, None) is not None:  # every write seen: now spin on itself
                manager.enqueue("pass", key)
            return Result()

    done = iter(())
    manager.add_controller("writer", Writer())
    manager.add_controller(
        "pass",
        Pass(),
        watches=[Watch("configmaps", namespace="default", mapper=lambda t, o: ["all"])],
    )
    manager.enqueue("writer", "w")
    manager.settle()
    assert len(server.list("configmaps", namespace="default").items) == 20
    woken = len(passes)
    assert woken > 3 and set(passes) == {0.0}

    done = itertools.repeat(1)
    manager.enqueue("pass", "all")
    with pytest.raises(LivelockError, match="nothing watched changing"):
        manager.settle()
    # the last wake-up counted as the first with nothing changing: two more, then the stop
    assert len(passes) == woken + 2


# ---------------------------------------------------------------- watches


def test_watch_events_enqueue_object_keys() -> None:
    clock = VirtualClock()
    server = InMemoryApiServer(clock)
    server.create(configmap("existing"))
    manager = Manager(clock, server)
    recorder = Recorder(clock)
    manager.add_controller("cm", recorder, watches=[Watch("configmaps", namespace="default")])
    manager.settle()
    assert [k for _, k in recorder.calls] == [ObjectKey("default", "existing")]
    server.create(configmap("new"))
    server.patch("configmaps", "existing", {"data": {"a": "b"}}, "default")
    manager.settle()
    assert [k for _, k in recorder.calls[1:]] == [
        ObjectKey("default", "new"),
        ObjectKey("default", "existing"),
    ]


def test_watches_are_polled_only_when_the_server_saw_watch_activity() -> None:
    """The in-memory server counts what its watches receive; the pump run before every
    reconcile polls its watches only when that count moved, and still delivers every
    event and reopens a stopped watch."""
    clock = VirtualClock()
    server = InMemoryApiServer(clock)
    manager = Manager(clock, server)
    recorder = Recorder(clock)
    manager.add_controller("cm", recorder, watches=[Watch("configmaps", namespace="default")])
    manager.add_controller("other", Recorder(clock), watches=[Watch("secrets")])
    manager.start()
    manager.pump_watches()
    polls = 0
    for feed in manager._feeds:
        assert feed.stream is not None
        inner = feed.stream.poll_shared  # type: ignore[attr-defined]

        def counted(inner: Callable[[], Any] = inner) -> Any:
            nonlocal polls
            polls += 1
            return inner()

        feed.stream.poll_shared = counted  # type: ignore[attr-defined]
    assert manager.pump_watches() == 0
    assert polls == 0  # nothing happened: no watch polled
    server.create(configmap("a"))
    assert manager.pump_watches() == 1
    assert polls == 2  # something did: every watch polled once
    manager.settle()
    assert [k for _, k in recorder.calls] == [ObjectKey("default", "a")]
    stream = manager._feeds[0].stream
    assert stream is not None
    stream.stop()
    manager.pump_watches()
    assert manager._feeds[0].stream is not stream  # a stopped watch is opened again
    server.create(configmap("b"))
    manager.settle()
    assert [k for _, k in recorder.calls[1:]] == [ObjectKey("default", "b")]


def test_watch_mapper_and_predicate_shape_the_keys() -> None:
    clock = VirtualClock()
    server = InMemoryApiServer(clock)
    manager = Manager(clock, server)
    recorder = Recorder(clock)
    watch = Watch(
        "configmaps",
        mapper=lambda etype, obj: [("owner", obj["metadata"]["labels"]["owner"])],
        predicate=lambda etype, obj: "owner" in (obj["metadata"].get("labels") or {}),
    )
    manager.add_controller("cm", recorder, watches=[watch])
    manager.start()
    plain = configmap("plain")
    owned = configmap("owned")
    owned["metadata"]["labels"] = {"owner": "alice"}
    server.create(plain)
    server.create(owned)
    manager.settle()
    assert [k for _, k in recorder.calls] == [("owner", "alice")]


def test_a_deleted_object_is_reconciled_by_key() -> None:
    clock = VirtualClock()
    server = InMemoryApiServer(clock)
    server.create(configmap("a"))
    manager = Manager(clock, server)
    recorder = Recorder(clock)
    manager.add_controller("cm", recorder, watches=[Watch("configmaps")])
    manager.settle()
    server.delete("configmaps", "a", "default")
    manager.settle()
    assert [k for _, k in recorder.calls] == [ObjectKey("default", "a"), ObjectKey("default", "a")]


def test_watching_without_a_client_is_refused() -> None:
    clock = VirtualClock()
    with pytest.raises(ValueError, match="no KubeClient"):
        Manager(clock).add_controller("c", Recorder(clock), watches=[Watch("pods")])


def test_duplicate_controller_names_are_refused() -> None:
    clock = VirtualClock()
    manager = Manager(clock)
    manager.add_controller("c", Recorder(clock))
    with pytest.raises(ValueError, match="already registered"):
        manager.add_controller("c", Recorder(clock))


def test_a_reconciler_without_reconcile_is_refused() -> None:
    with pytest.raises(TypeError, match="no reconcile"):
        Manager(VirtualClock()).add_controller("c", object())  # type: ignore[arg-type]


def test_key_of_cluster_scoped_and_namespaced_objects() -> None:
    assert key_of({"metadata": {"name": "n"}}) == ObjectKey("", "n")
    assert str(key_of({"metadata": {"name": "p", "namespace": "ns"}})) == "ns/p"


# ---------------------------------------------------------------- determinism


def _scenario(seed: int | None) -> list[tuple[float, str, Any]]:
    """Three controllers, a watch, timers and failures; returns the global reconcile order."""
    clock = VirtualClock()
    server = InMemoryApiServer(clock, seed=7)
    manager = Manager(clock, server, seed=seed)
    order: list[tuple[float, str, Any]] = []

    class Logged:
        def __init__(self, name: str, decide: Callable[[Any], Result]) -> None:
            self.name, self.decide = name, decide

        def reconcile(self, key: Any) -> Result:
            order.append((clock.monotonic(), self.name, key))
            return self.decide(key)

    def flaky(key: Any) -> Result:
        if sum(1 for _, n, k in order if n == "flaky" and k == key) < 3:
            raise RuntimeError("flake")
        return Result(requeue_after=7)

    manager.add_controller(
        "cm", Logged("cm", lambda k: Result(requeue_after=5)), watches=[Watch("configmaps")]
    )
    manager.add_controller("flaky", Logged("flaky", flaky))
    manager.add_controller("plain", Logged("plain", lambda k: Result()))
    for i in range(5):
        server.create(configmap(f"cm-{i}"))
        manager.enqueue("flaky", f"f-{i}")
        manager.enqueue("plain", f"p-{i}")

    def later() -> None:
        server.create(configmap("late"))

    clock.call_later(12.5, later)
    manager.run_for(60)
    return order


def test_the_same_inputs_give_the_same_order() -> None:
    assert _scenario(None) == _scenario(None)


def test_the_same_seed_gives_the_same_order() -> None:
    assert _scenario(3) == _scenario(3)


def test_without_a_seed_ready_controllers_take_turns() -> None:
    order = _scenario(None)
    first_round = [name for _, name, _ in order[:6]]
    assert first_round == ["cm", "flaky", "plain", "cm", "flaky", "plain"]


def test_step_does_one_thing_at_a_time() -> None:
    clock = VirtualClock()
    manager = Manager(clock)
    ticker = Ticker(clock, 10)
    manager.add_singleton("t", ticker)
    assert manager.step() is True  # reconcile at t=0
    assert ticker.times == [0.0]
    assert manager.step() is True  # fire the 10 s timer (queues the singleton)
    assert ticker.times == [0.0]
    assert manager.step() is True  # reconcile at t=10
    assert ticker.times == [0.0, 10.0]


def test_step_reports_when_nothing_is_left() -> None:
    clock = VirtualClock()
    manager = Manager(clock)
    manager.add_controller("c", Recorder(clock))
    manager.enqueue("c", "k")
    assert manager.step() is True
    assert manager.step() is False


def test_virtual_operations_need_a_virtual_clock() -> None:
    with pytest.raises(RuntimeError, match="VirtualClock"):
        Manager(WallClock()).step()


def test_triggering_a_singleton_runs_it_before_its_timer() -> None:
    clock = VirtualClock()
    manager = Manager(clock)
    ticker = Ticker(clock, 100)
    singleton = manager.add_singleton("t", ticker)
    manager.run_for(30)
    singleton.trigger()
    manager.settle()
    assert ticker.times == [0.0, 30.0]


def test_only_singletons_can_be_triggered() -> None:
    clock = VirtualClock()
    keyed = Manager(clock).add_controller("c", Recorder(clock))
    with pytest.raises(TypeError, match="keyed"):
        keyed.trigger()


def test_a_wait_a_few_femtoseconds_long_still_moves_time() -> None:
    """The disruption controller holds a command until ``held_at + 15.0`` and requeues
    after whatever is left of the wait. As floats, 125.004 + 15.0 is 2.8e-14 s after the
    clock's 140.004: rounded to no nanoseconds, the requeue fired at the same instant, the
    wait was still not over, and a 15,000-pod scale-in simulation stopped as a livelock."""
    clock = VirtualClock()
    manager = Manager(clock, max_reconciles_per_key=5)
    clock.advance(125.004)
    ready_at = clock.monotonic() + 15.0
    outcomes: list[str] = []

    class Holder:
        def reconcile(self) -> Result:
            wait = ready_at - clock.monotonic()
            if wait > 0:
                outcomes.append("wait")
                return Result(requeue_after=wait)
            outcomes.append("done")
            return Result(requeue_after=3600)

    manager.add_singleton("holder", Holder())
    manager.run_for(20)
    assert "done" in outcomes
    assert outcomes.count("wait") <= 3
