"""Batch windows (spec operator-and-lifecycle §3.1) on a virtual clock."""

from __future__ import annotations

import pytest

from karpenter_core.controllers.provisioning.batcher import Batcher, WaitResult
from karpenter_core.runtime.clock import VirtualClock


def make(idle: float = 1.0, maximum: float = 10.0) -> tuple[VirtualClock, Batcher, list[int]]:
    clock = VirtualClock()
    woken: list[int] = []
    batcher = Batcher(clock, idle, maximum, on_token=lambda: woken.append(1))
    return clock, batcher, woken


def test_nothing_triggered_means_no_window() -> None:
    _, batcher, _ = make()
    assert batcher.wait() == WaitResult(False, None)


def test_window_closes_idle_seconds_after_the_only_trigger() -> None:
    clock, batcher, _ = make()
    batcher.trigger("a")
    assert batcher.wait() == WaitResult(False, 1.0)
    clock.advance(0.999)
    assert not batcher.wait().ready
    clock.advance(0.001)
    assert batcher.wait().ready


def test_each_new_key_restarts_the_idle_timer() -> None:
    clock, batcher, _ = make()
    batcher.trigger("a")
    batcher.wait()
    clock.advance(0.8)
    batcher.trigger("b")
    clock.advance(0.8)  # 1.6 s after opening, 0.8 s after the last new key
    result = batcher.wait()
    assert not result.ready
    assert result.retry_after == pytest.approx(0.2)
    clock.advance(0.2)
    assert batcher.wait().ready


def test_a_key_already_seen_does_not_extend_the_window() -> None:
    clock, batcher, _ = make()
    batcher.trigger("a")
    batcher.wait()
    clock.advance(0.8)
    batcher.trigger("a")
    clock.advance(0.2)
    assert batcher.wait().ready


def test_window_never_outlasts_the_max_duration() -> None:
    clock, batcher, _ = make(idle=1.0, maximum=3.0)
    batcher.trigger(0)
    batcher.wait()
    for i in range(1, 6):
        clock.advance(0.5)
        batcher.trigger(i)
        batcher.wait()
    # 2.5 s in, last key at 2.5 s: idle would say 3.5 s, max says 3.0 s.
    assert batcher.wait().retry_after == pytest.approx(0.5)
    clock.advance(0.5)
    assert batcher.wait().ready


def test_seen_keys_are_forgotten_when_the_window_closes() -> None:
    clock, batcher, _ = make()
    batcher.trigger("a")
    batcher.wait()
    clock.advance(1.0)
    assert batcher.wait().ready
    batcher.trigger("a")
    assert batcher.wait() == WaitResult(False, 1.0)


def test_a_token_arriving_while_busy_opens_the_next_window_at_once() -> None:
    clock, batcher, woken = make()
    batcher.trigger("a")
    batcher.wait()
    clock.advance(1.0)
    assert batcher.wait().ready
    woken.clear()
    clock.advance(5.0)  # the provisioner is computing; a new pod arrives
    batcher.trigger("b")
    assert woken == [1]
    assert batcher.wait() == WaitResult(False, 1.0)


def test_wake_callback_only_when_no_window_is_open() -> None:
    _, batcher, woken = make()
    batcher.trigger("a")
    batcher.trigger("b")  # window not yet opened by the provisioner: wake again (harmless)
    assert len(woken) == 2
    batcher.wait()
    batcher.trigger("c")
    assert len(woken) == 2


@pytest.mark.parametrize(("idle", "maximum"), [(0, 10), (1, 0), (-1, 10)])
def test_non_positive_durations_are_rejected(idle: float, maximum: float) -> None:
    with pytest.raises(ValueError, match="positive"):
        Batcher(VirtualClock(), idle, maximum)
