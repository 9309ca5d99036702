"""Progress feedback: drawn on a terminal only, throttled, saying where the work is."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from karpenter_core.cli import main, progress
from karpenter_core.cli.progress import Progress, describe_run
from karpenter_core.sim.engine import RunStatus

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Terminal:
    """A stream that says it is a terminal and writes to another (the test runner's)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        return int(self.inner.write(text))

    def flush(self) -> None:
        self.inner.flush()


class FakeWall:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_bar_shows_the_status_and_redraws_at_most_every_interval() -> None:
    out, wall = FakeTerminal(), FakeWall()
    bar: Progress[str] = Progress(10, "working", lambda s: f"at {s}", out, interval=1.0, wall=wall)
    with bar:
        bar.advance(2, "two")
        bar.advance(3, "three")  # same instant: not drawn
        wall.now += 1.0
        bar.advance(5, "five")
    text = out.getvalue()
    assert "working" in text
    assert "at two" in text and "20%" in text
    assert "at three" not in text
    assert "at five" in text and "50%" in text


def test_a_status_change_without_a_step_is_drawn() -> None:
    out = FakeTerminal()
    bar: Progress[str] = Progress(3, "schedule", str, out)
    with bar:
        bar.advance(0, "reading manifests", force=True)
    assert "reading manifests" in out.getvalue()


def test_simulate_status_names_virtual_time_pending_pods_and_nodes() -> None:
    text = describe_run(RunStatus(elapsed=300.0, pending=3, nodes=2), until=2700.0)
    assert text == "+5m00s of 45m00s, 3 pod(s) pending, 2 node(s)"


def test_nothing_is_drawn_off_a_terminal_or_when_quiet() -> None:
    piped = io.StringIO()
    bar = progress.progress(5, "x", str, file=piped)
    assert not bar.shown
    with bar:
        bar.advance(3, "three", force=True)
    assert piped.getvalue() == ""
    tty = FakeTerminal()
    quiet = progress.progress(5, "x", str, quiet=True, file=tty)
    with quiet:
        quiet.advance(3, "three", force=True)
    assert not quiet.shown and tty.getvalue() == ""
    assert progress.progress(5, "x", str, file=tty).shown


def _schedule(*extra: str) -> str:
    result = CliRunner().invoke(
        main, ["schedule", "-f", str(EXAMPLES / "schedule"), "-o", "json", *extra]
    )
    assert result.exit_code == 0, result.output
    return result.stderr


def test_schedule_prints_no_progress_when_stderr_is_not_a_terminal() -> None:
    assert _schedule() == ""


def test_schedule_shows_its_phases_on_a_terminal_unless_quiet(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(progress, "stderr", lambda: Terminal(sys.stderr))
    shown = _schedule()
    assert "reading manifests" in shown
    assert "loading instance types" in shown
    assert "scheduling 8 pending pod(s)" in shown
    assert "100%" in shown
    assert _schedule("--quiet") == ""
