"""Clocks: the virtual clock's ordering and time arithmetic, and time formatting."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from karpenter_core.runtime.clock import (
    VirtualClock,
    format_time,
    parse_time,
)

START = datetime(2030, 5, 6, 7, 8, 9, tzinfo=UTC)


def test_virtual_clock_starts_at_its_start_time() -> None:
    clock = VirtualClock(START)
    assert clock.now() == START
    assert clock.monotonic() == 0.0


def test_virtual_clock_now_is_timezone_aware_utc() -> None:
    assert VirtualClock().now().tzinfo is not None
    assert VirtualClock().now().utcoffset() == timedelta(0)


def test_naive_start_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        VirtualClock(datetime(2030, 1, 1))


def test_advance_moves_now_and_monotonic_together() -> None:
    clock = VirtualClock(START)
    clock.advance(90.5)
    assert clock.now() == START + timedelta(seconds=90.5)
    assert clock.monotonic() == 90.5


def test_many_small_advances_do_not_drift() -> None:
    clock = VirtualClock(START)
    for _ in range(10_000):
        clock.advance(0.1)
    assert clock.monotonic() == 1000.0
    assert clock.now() == START + timedelta(seconds=1000)


def test_negative_advance_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        VirtualClock().advance(-1)


def test_timers_fire_in_due_order() -> None:
    clock = VirtualClock()
    fired: list[str] = []
    clock.call_later(3, lambda: fired.append("c"))
    clock.call_later(1, lambda: fired.append("a"))
    clock.call_later(2, lambda: fired.append("b"))
    clock.advance(10)
    assert fired == ["a", "b", "c"]


def test_timers_due_at_the_same_time_fire_in_insertion_order() -> None:
    clock = VirtualClock()
    fired: list[int] = []
    for i in range(20):
        clock.call_later(5, lambda i=i: fired.append(i))
    clock.advance(5)
    assert fired == list(range(20))


def test_a_timer_sees_its_own_due_time_as_now() -> None:
    clock = VirtualClock(START)
    seen: list[datetime] = []
    clock.call_later(7, lambda: seen.append(clock.now()))
    clock.advance(100)
    assert seen == [START + timedelta(seconds=7)]


def test_advance_stops_short_of_later_timers() -> None:
    clock = VirtualClock()
    fired: list[str] = []
    clock.call_later(5, lambda: fired.append("early"))
    clock.call_later(15, lambda: fired.append("late"))
    ran = clock.advance(10)
    assert (ran, fired, clock.monotonic()) == (1, ["early"], 10.0)


def test_timers_scheduled_by_timers_run_within_the_same_advance() -> None:
    clock = VirtualClock()
    fired: list[float] = []

    def tick() -> None:
        fired.append(clock.monotonic())
        if len(fired) < 5:
            clock.call_later(2, tick)

    clock.call_later(2, tick)
    clock.advance(100)
    assert fired == [2.0, 4.0, 6.0, 8.0, 10.0]


def test_cancelled_timers_do_not_fire() -> None:
    clock = VirtualClock()
    fired: list[str] = []
    handle = clock.call_later(1, lambda: fired.append("x"))
    handle.cancel()
    clock.advance(2)
    assert fired == []
    assert clock.pending() == 0


def test_step_runs_exactly_the_next_timer() -> None:
    clock = VirtualClock()
    fired: list[str] = []
    clock.call_later(4, lambda: fired.append("a"))
    clock.call_later(9, lambda: fired.append("b"))
    assert clock.step() is True
    assert (fired, clock.monotonic()) == (["a"], 4.0)
    assert clock.step() is True
    assert clock.step() is False


def test_next_timer_reports_the_earliest_due_time() -> None:
    clock = VirtualClock()
    assert clock.next_timer() is None
    clock.call_later(8, lambda: None)
    clock.call_later(3, lambda: None)
    assert clock.next_timer() == 3.0


def test_run_until_a_datetime() -> None:
    clock = VirtualClock(START)
    fired: list[str] = []
    clock.call_later(60, lambda: fired.append("minute"))
    clock.run_until(START + timedelta(minutes=2))
    assert fired == ["minute"]
    assert clock.now() == START + timedelta(minutes=2)


def test_run_until_a_past_time_does_not_rewind() -> None:
    clock = VirtualClock(START)
    clock.advance(100)
    clock.run_until(START)
    assert clock.monotonic() == 100.0


def test_call_at_in_the_past_runs_at_the_current_time() -> None:
    clock = VirtualClock()
    clock.advance(50)
    seen: list[float] = []
    clock.call_at(10, lambda: seen.append(clock.monotonic()))
    clock.advance(0)
    assert seen == [50.0]


def test_sleep_moves_time_without_running_timers() -> None:
    clock = VirtualClock()
    fired: list[float] = []
    clock.call_later(1, lambda: fired.append(clock.monotonic()))
    clock.sleep(5)
    assert fired == []
    assert clock.monotonic() == 5.0
    clock.advance(0)
    assert fired == [5.0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-01-02T03:04:05Z", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2024-01-02T03:04:05.250000Z", datetime(2024, 1, 2, 3, 4, 5, 250000, tzinfo=UTC)),
        ("2024-01-02T05:04:05+02:00", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
    ],
)
def test_parse_time(text: str, expected: datetime) -> None:
    assert parse_time(text) == expected


def test_parse_time_names_the_bad_value() -> None:
    with pytest.raises(ValueError, match="yesterday"):
        parse_time("yesterday")


def test_format_time_is_rfc3339_seconds() -> None:
    assert format_time(datetime(2024, 1, 2, 3, 4, 5, 999, tzinfo=UTC)) == "2024-01-02T03:04:05Z"


def test_after_is_set_once_virtual_time_passes() -> None:
    clock = VirtualClock()
    event = clock.after(30)
    clock.advance(29)
    assert not event.is_set()
    clock.advance(1)
    assert event.is_set()


def test_after_with_no_delay_is_already_set() -> None:
    assert VirtualClock().after(0).is_set()


def test_a_positive_delay_below_a_nanosecond_still_lands_after_now() -> None:
    """A wait worked out as a difference of float times can be a few femtoseconds: the
    timer must not fire at the instant it was set in (see the Manager test of the same)."""
    clock = VirtualClock(START)
    clock.advance(125.004)
    ready_at = clock.monotonic() + 15.0
    clock.advance(15.0)
    wait = ready_at - clock.monotonic()
    assert 0 < wait < 1e-9  # the float arithmetic this guards against
    fired: list[float] = []
    clock.call_later(wait, lambda: fired.append(clock.monotonic()))
    clock.call_at(ready_at, lambda: fired.append(clock.monotonic()))
    clock.call_later(0.0, lambda: fired.append(clock.monotonic()))
    clock.step()
    assert fired == [140.004]  # the zero delay, now
    clock.step()
    clock.step()
    assert fired[1:] == [140.004000001, 140.004000001]
    assert fired[1] >= ready_at
