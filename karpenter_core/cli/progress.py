"""Progress feedback for commands that can run for more than a couple of seconds.

A click progress bar on standard error, drawn only when standard error is a terminal and
``--quiet`` is not given: piped or redirected output (``-o json | jq``, CI logs) stays
exactly what it was, and a person at a terminal sees that work is going on and how far it
got. The bar is redrawn at most every :data:`MIN_INTERVAL` seconds of wall time, so a
caller may report as often as it likes (``simulate`` reports every virtual-time step).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, Generic, TextIO, TypeVar

import click

if TYPE_CHECKING:
    from karpenter_core.sim.engine import RunStatus

__all__ = ["MIN_INTERVAL", "Progress", "describe_run", "is_terminal", "progress", "stderr"]

MIN_INTERVAL = 0.2
"""Seconds of wall time between two redraws: often enough to look alive, rarely enough
that drawing costs nothing next to the work."""

T = TypeVar("T")


def stderr() -> TextIO:
    """The stream progress is drawn on by default: standard error as it is at the call
    (click's test runner replaces it)."""
    return sys.stderr


def is_terminal(stream: IO[Any]) -> bool:
    """Whether ``stream`` is an interactive terminal (a closed or odd stream is not)."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (ValueError, OSError):
        return False


class Progress(Generic[T]):
    """A progress bar of ``length`` steps whose status text is ``describe(item)``.

    Use it as a context manager; :meth:`advance` moves it. ``shown`` is False for the
    stand-in :func:`progress` returns when nothing is to be drawn, whose methods do
    nothing, so callers need no branches (and may skip costly status reads)."""

    def __init__(
        self,
        length: int,
        label: str,
        describe: Callable[[T], str],
        file: TextIO | None,
        *,
        interval: float = MIN_INTERVAL,
        wall: Callable[[], float] = time.monotonic,
    ) -> None:
        self.shown = file is not None
        self._interval = interval
        self._wall = wall
        self._last: float | None = None
        self._bar: Any = None
        if file is not None:

            def show(item: T | None) -> str | None:
                return None if item is None else describe(item)

            self._bar = click.progressbar(
                length=max(1, length),
                label=label,
                file=file,
                item_show_func=show,
                show_percent=True,
                show_eta=False,
                width=24,
            )

    def __enter__(self) -> Progress[T]:
        if self._bar is not None:
            self._bar.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.__exit__(exc_type, exc, tb)

    def due(self) -> bool:
        """Whether a redraw is due now (the first always is); callers with a costly status
        read check this first."""
        if self._bar is None:
            return False
        last = self._last
        return last is None or self._wall() - last >= self._interval

    def advance(self, position: int, item: T, *, force: bool = False) -> None:
        """Move the bar to ``position`` (never back) showing ``item``; drawn when
        :meth:`due` or ``force``."""
        if self._bar is None or not (force or self.due()):
            return
        self._last = self._wall()
        steps = position - self._bar.pos
        if steps > 0:
            self._bar.update(steps, current_item=item)
        else:  # click redraws on a step only: show the new status in place
            self._bar.current_item = item
            self._bar.render_progress()


def progress(
    length: int,
    label: str,
    describe: Callable[[T], str],
    *,
    quiet: bool = False,
    file: TextIO | None = None,
) -> Progress[T]:
    """A :class:`Progress` drawing on ``file`` (default: standard error) when that is a
    terminal and not ``quiet``; otherwise one that draws nothing."""
    stream = stderr() if file is None else file
    shown = not quiet and is_terminal(stream)
    return Progress(length, label, describe, stream if shown else None)


def describe_run(status: RunStatus, until: float) -> str:
    """``simulate``'s status text: virtual time reached of the run's length, pods
    pending, nodes."""
    from karpenter_core.sim.report import format_offset

    return (
        f"+{format_offset(status.elapsed)} of {format_offset(until)}, "
        f"{status.pending} pod(s) pending, {status.nodes} node(s)"
    )
