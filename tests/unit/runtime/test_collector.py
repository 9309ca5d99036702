"""tune_collector: the simulator's garbage-collection thresholds."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from karpenter_core.runtime.collector import DEFAULT_THRESHOLDS, TUNED_THRESHOLDS, tune_collector


@pytest.fixture
def thresholds() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_the_interpreter_defaults_are_replaced(thresholds: None) -> None:
    gc.set_threshold(*DEFAULT_THRESHOLDS)
    assert tune_collector() is True
    assert gc.get_threshold() == TUNED_THRESHOLDS
    assert tune_collector() is False  # already tuned: unchanged


def test_thresholds_someone_else_chose_are_kept(thresholds: None) -> None:
    gc.set_threshold(5000, 5, 5)
    assert tune_collector() is False
    assert gc.get_threshold() == (5000, 5, 5)


def test_karpenter_simulate_runs_with_the_tuned_thresholds(thresholds: None) -> None:
    from click.testing import CliRunner

    from karpenter_core.cli import main

    gc.set_threshold(*DEFAULT_THRESHOLDS)
    result = CliRunner().invoke(main, ["simulate"])  # a usage error, after the tuning
    assert result.exit_code != 0
    assert gc.get_threshold() == TUNED_THRESHOLDS
