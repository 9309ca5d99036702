"""A Manager given a ComputeCharge: each reconcile's measured compute moves the virtual
clock, requeues count from the reconcile's end, other timers due meanwhile fire after it,
and what each controller was charged is booked. Reconcilers "compute" by advancing a fake
meter, so the figures are exact and independent of the machine."""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.runtime.clock import ComputeCharge, ManualMeter, VirtualClock, WallClock
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import Result


class Costly:
    """A singleton that "computes" for ``cost`` seconds and runs again ``period`` later."""

    def __init__(self, clock: VirtualClock, meter: ManualMeter, cost: float, period: float) -> None:
        self.clock, self.meter, self.cost, self.period = clock, meter, cost, period
        self.starts: list[float] = []

    def reconcile(self) -> Result:
        self.starts.append(self.clock.monotonic())
        self.meter.spend(self.cost)
        return Result(requeue_after=self.period)


def costly_manager(charge: bool, cost: float = 4.0) -> tuple[Manager, Costly, VirtualClock]:
    clock, meter = VirtualClock(), ManualMeter()
    manager = Manager(clock, charge=ComputeCharge(meter=meter) if charge else None)
    costly = Costly(clock, meter, cost, period=10.0)
    manager.add_singleton("costly", costly)
    return manager, costly, clock


def test_each_reconcile_takes_its_charged_compute_and_requeues_from_its_end() -> None:
    manager, costly, clock = costly_manager(charge=True)
    manager.run_until(40)
    assert costly.starts == [0.0, 14.0, 28.0]  # 4 s of compute, then 10 s of waiting
    assert clock.monotonic() == 40.0
    assert manager.controller("costly").charged_seconds == 12.0
    assert manager.charge is not None
    assert manager.charge.by_controller() == {"costly": 12.0}


def test_without_a_charge_compute_takes_no_virtual_time() -> None:
    manager, costly, clock = costly_manager(charge=False)
    manager.run_until(40)
    assert costly.starts == [0.0, 10.0, 20.0, 30.0, 40.0]
    assert clock.monotonic() == 40.0
    assert manager.controller("costly").charged_seconds == 0.0


def test_the_scale_multiplies_what_a_reconcile_costs() -> None:
    clock, meter = VirtualClock(), ManualMeter()
    manager = Manager(clock, charge=ComputeCharge(meter=meter, scale=3))
    costly = Costly(clock, meter, cost=2.0, period=10.0)
    manager.add_singleton("costly", costly)
    manager.run_until(35)
    assert costly.starts == [0.0, 16.0, 32.0]


def test_a_timer_due_during_a_reconcile_fires_after_it() -> None:
    manager, costly, clock = costly_manager(charge=True, cost=5.0)
    seen: list[float] = []
    clock.call_at(2.0, lambda: seen.append(clock.monotonic()))
    manager.run_until(3)
    assert costly.starts == [0.0]
    assert seen == [5.0]  # due at 2 s, but the single worker was busy until 5 s


def test_controllers_share_one_worker_and_each_is_booked() -> None:
    clock, meter = VirtualClock(), ManualMeter()
    manager = Manager(clock, charge=ComputeCharge(meter=meter))
    a = Costly(clock, meter, cost=1.0, period=100.0)
    b = Costly(clock, meter, cost=2.5, period=100.0)
    manager.add_singleton("a", a)
    manager.add_singleton("b", b)
    manager.settle()
    # registered order: a runs first, b starts when a's compute is done
    assert (a.starts, b.starts) == ([0.0], [1.0])
    assert clock.monotonic() == 3.5
    assert manager.charge is not None
    assert manager.charge.by_controller() == {"b": 2.5, "a": 1.0}
    assert manager.charge.total_seconds == 3.5


def test_a_failing_reconcile_is_charged_too() -> None:
    clock, meter = VirtualClock(), ManualMeter()
    manager = Manager(clock, charge=ComputeCharge(meter=meter))

    class Failing:
        def reconcile(self) -> Result:
            meter.spend(2.0)
            raise RuntimeError("boom")

    manager.add_singleton("failing", Failing())
    manager.settle(limit=1)
    assert manager.controller("failing").errors == 1
    assert manager.controller("failing").charged_seconds == 2.0
    assert clock.monotonic() == 2.0


def test_settle_runs_at_most_limit_reconciles() -> None:
    manager, _, _ = costly_manager(charge=True)

    class Idle:
        def reconcile(self) -> Result:
            return Result()

    manager.add_singleton("idle", Idle())
    assert manager.settle(limit=1) == 1
    assert manager.settle() == 1


def test_charging_needs_a_virtual_clock() -> None:
    with pytest.raises(ValueError, match="VirtualClock"):
        Manager(WallClock(), charge=ComputeCharge(meter=ManualMeter()))


def test_a_controller_registered_uncharged_takes_no_time() -> None:
    clock, meter = VirtualClock(), ManualMeter()
    manager = Manager(clock, charge=ComputeCharge(meter=meter))
    seen: list[Any] = []

    class Bookkeeper:
        def reconcile(self, key: Any) -> Result:
            meter.spend(3.0)
            seen.append(key)
            return Result()

    manager.add_controller("book", Bookkeeper(), charged=False)
    manager.enqueue("book", "k")
    manager.settle()
    assert seen == ["k"]
    assert clock.monotonic() == 0.0
    assert manager.charge is not None and manager.charge.by_controller() == {}
