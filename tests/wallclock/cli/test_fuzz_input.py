"""Fuzzing every command that reads a user's file with hostile files (``hostile_inputs.py``).

Whatever the file holds, the command must finish, print no traceback, keep every line
short, and exit with a code ``docs/cli.md`` allows it. The default suite tries a small,
fixed set of inputs per command (hypothesis derandomized: the same inputs every run, a few
seconds in all); the ``slow`` marker tries many more.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_inputs import TARGETS, Target, hostile_file, run_guarded, write_cluster
from hypothesis import HealthCheck, given, settings

QUICK_EXAMPLES = {
    "validate": 25,
    "schedule": 12,
    "schedule-json": 6,
    "scheduler-config": 10,
    "simulate": 10,
    "instance-types": 15,
    "schedule-instance-types": 5,
}
SLOW_EXAMPLES = 250


def _check_one(target: Target, path: Path, data: bytes) -> None:
    path.write_bytes(data)
    outcome = run_guarded(target.args(path))
    shown = outcome.output[-2000:]
    assert not outcome.hung, "the command did not finish"
    assert outcome.crash is None, outcome.crash
    assert "Traceback" not in outcome.output, shown
    assert outcome.exit_code in target.exit_codes, shown
    assert not outcome.long_lines(), f"lines of {outcome.long_lines()} characters"


def _fuzz(name: str, tmp_path: Path, examples: int) -> None:
    target = TARGETS[name]
    write_cluster(tmp_path)
    path = tmp_path / ("in.json" if target.formats == ("json",) else "in.yaml")

    @settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=hostile_file(target))
    def check(data: bytes) -> None:
        _check_one(target, path, data)

    check()


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_a_hostile_file_is_a_clear_answer(name: str, tmp_path: Path) -> None:
    _fuzz(name, tmp_path, QUICK_EXAMPLES[name])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TARGETS))
def test_many_hostile_files_are_clear_answers(name: str, tmp_path: Path) -> None:
    _fuzz(name, tmp_path, SLOW_EXAMPLES)


def test_every_target_starts_from_a_file_its_command_accepts(tmp_path: Path) -> None:
    """The fuzz changes valid files: were a starting file already refused, every change
    would be refused for the same reason and the fuzz would test nothing."""
    from hostile_inputs import Damage, render

    write_cluster(tmp_path)
    for name, target in TARGETS.items():
        for fmt in sorted(set(target.formats)):
            path = tmp_path / f"start.{fmt}"
            path.write_bytes(render(list(target.documents), [], target, fmt, Damage("none")))
            outcome = run_guarded(target.args(path))
            assert outcome.exit_code == 0, (name, fmt, outcome.output[-1000:])
