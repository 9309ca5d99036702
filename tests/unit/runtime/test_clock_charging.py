"""Charging compute to a virtual clock: readings inside a charged block move with the
meter, the block's total stays added, timers due meanwhile fire after it, and the
per-controller book of :class:`ComputeCharge`. The meter is a hand-advanced fake, so
nothing here depends on how fast the machine is."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from karpenter_core.runtime.clock import (
    ChargedSpan,
    CoarseMeter,
    ComputeCharge,
    ManualMeter,
    VirtualClock,
)

START = datetime(2030, 5, 6, 7, 8, 9, tzinfo=UTC)


def offset_meter() -> ManualMeter:
    """A hand-moved meter whose origin is not 0: only differences may count."""
    return ManualMeter(1234.5)


def test_readings_inside_a_block_include_the_compute_spent_so_far() -> None:
    clock, meter = VirtualClock(START), offset_meter()
    clock.advance(5)
    with clock.charging(meter) as span:
        assert clock.monotonic() == 5.0
        meter.spend(2.5)
        assert clock.monotonic() == 7.5
        assert clock.now() == START + timedelta(seconds=7.5)
        meter.spend(0.5)
        assert clock.monotonic() == 8.0
    assert span.seconds == 3.0
    assert clock.monotonic() == 8.0  # the charge stays after the block
    meter.spend(100)  # compute outside a block is free
    assert clock.monotonic() == 8.0


def test_the_scale_multiplies_the_charge() -> None:
    clock, meter = VirtualClock(START), offset_meter()
    with clock.charging(meter, scale=4) as span:
        meter.spend(1.25)
        assert clock.monotonic() == 5.0
    assert span.nanoseconds == 5_000_000_000
    assert clock.monotonic() == 5.0


@pytest.mark.parametrize("scale", [0, -1, math.inf, math.nan])
def test_a_scale_must_be_positive_and_finite(scale: float) -> None:
    with (
        pytest.raises(ValueError, match="positive"),
        VirtualClock(START).charging(offset_meter(), scale=scale),
    ):
        pass
    with pytest.raises(ValueError, match="positive"):
        ComputeCharge(meter=offset_meter(), scale=scale)


def test_timers_due_within_a_block_fire_after_it_at_its_end_time() -> None:
    clock, meter = VirtualClock(START), offset_meter()
    fired: list[tuple[str, float]] = []
    clock.call_at(3.0, lambda: fired.append(("other", clock.monotonic())))
    with clock.charging(meter):
        meter.spend(10)
    assert fired == []  # nothing interrupts a charged block
    assert clock.next_timer() == 3.0  # overdue, at its own due time
    assert clock.step()
    assert fired == [("other", 10.0)]
    assert clock.monotonic() == 10.0  # an overdue timer does not move time back


def test_timers_scheduled_inside_a_block_count_from_the_charged_now() -> None:
    clock, meter = VirtualClock(START), offset_meter()
    with clock.charging(meter):
        meter.spend(4)
        later = clock.call_later(6, lambda: None)
        at_past = clock.call_at(1.0, lambda: None)
    assert later.when == 10.0
    assert at_past.when == 4.0  # never before the charged now


def test_a_deadline_checked_while_computing_expires_by_compute_alone() -> None:
    # the shape of single-node consolidation's loop: deadline = now + 3m, checked between
    # candidates that each cost 10 s of compute
    clock, meter = VirtualClock(START), offset_meter()
    examined = 0
    with clock.charging(meter) as span:
        deadline = clock.now() + timedelta(minutes=3)
        for _ in range(100):
            if clock.now() > deadline:
                break
            meter.spend(10)
            examined += 1
    assert examined == 19  # at 180 s the deadline is not yet passed; at 190 s it is
    assert span.seconds == 190.0


def test_a_nested_block_charges_nothing_of_its_own() -> None:
    clock, meter = VirtualClock(START), offset_meter()
    with clock.charging(meter) as outer:
        meter.spend(1)
        with clock.charging(meter, scale=10) as inner:
            meter.spend(2)
            assert clock.monotonic() == 3.0  # the outer block's meter and scale
        assert clock.charging_now
    assert not clock.charging_now
    assert (inner.seconds, outer.seconds) == (0.0, 3.0)
    assert clock.monotonic() == 3.0


def test_a_block_that_raises_still_charges_its_compute() -> None:
    clock, meter = VirtualClock(START), offset_meter()
    with pytest.raises(RuntimeError), clock.charging(meter):
        meter.spend(7)
        raise RuntimeError("reconcile failed")
    assert clock.monotonic() == 7.0
    assert not clock.charging_now


def test_sleep_inside_a_block_adds_to_the_charge() -> None:
    clock, meter = VirtualClock(START), offset_meter()
    with clock.charging(meter):
        meter.spend(1)
        clock.sleep(2)
        assert clock.monotonic() == 3.0
    assert clock.monotonic() == 3.0


def test_compute_charge_books_spans_per_controller_most_first() -> None:
    charge = ComputeCharge(meter=offset_meter(), scale=2)
    for name, ns in (("b", 1_000_000_000), ("a", 3_000_000_000), ("b", 500_000_000)):
        span = ChargedSpan()
        span.nanoseconds = ns
        charge.add(name, span)
    assert charge.by_controller() == {"a": 3.0, "b": 1.5}
    assert charge.total_seconds == 4.5
    assert charge.scale == 2


def test_a_manual_meter_never_goes_back() -> None:
    meter = ManualMeter()
    meter.spend(1.5)
    assert meter() == 1.5
    with pytest.raises(ValueError, match="negative"):
        meter.spend(-1)
    assert meter() == 1.5


class CountingMeter(ManualMeter):
    """A manual meter that counts its reads (a CPU-time meter's reads are system calls)."""

    __slots__ = ("reads",)

    def __init__(self, start: float = 0.0) -> None:
        super().__init__(start)
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return super().__call__()


def test_a_coarse_meter_goes_on_by_wall_time_between_reads_and_never_back() -> None:
    source, wall = CountingMeter(10.0), ManualMeter(500.0)
    meter = CoarseMeter(source, refresh=0.001, wall=wall)
    assert source.reads == 1 and meter() == 10.0
    source.spend(0.0002)
    wall.spend(0.0003)
    # within the refresh interval: the last read plus the wall time since, no read
    assert meter() == pytest.approx(10.0003)
    assert source.reads == 1
    source.spend(0.003)
    wall.spend(0.002)
    # past it: read again
    assert meter() == pytest.approx(10.0032)
    assert source.reads == 2
    wall.spend(0.0005)
    ahead = meter()
    assert ahead == pytest.approx(10.0037)
    wall.spend(0.002)  # the source moved less than the wall clock meanwhile
    assert meter() == ahead  # the read is behind what was handed out: never back
    assert source.reads == 3


def test_a_coarse_meter_charges_a_block_from_its_readings() -> None:
    source, wall = ManualMeter(10.0), ManualMeter(0.0)
    clock = VirtualClock(START)
    with clock.charging(CoarseMeter(source, refresh=0.001, wall=wall)) as span:
        source.spend(0.5)
        wall.spend(0.5)
    assert span.seconds == pytest.approx(0.5)
    assert clock.monotonic() == pytest.approx(0.5)


def test_compute_charge_reads_cpu_time_through_a_coarse_meter_by_default() -> None:
    assert isinstance(ComputeCharge().meter, CoarseMeter)
    manual = ManualMeter()
    assert ComputeCharge(meter=manual).meter is manual  # a test's meter reads exactly
    with pytest.raises(ValueError, match="refresh"):
        CoarseMeter(refresh=-1)
