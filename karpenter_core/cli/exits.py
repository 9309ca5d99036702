"""The exit codes every ``karpenter`` command follows, and the one-line error they print.

Documented for users in ``docs/cli.md``:

======  ==========================================================================
code    meaning
======  ==========================================================================
0       success (``schedule`` also when some pods cannot be scheduled: they are in
        its output; ``simulate`` whatever the simulation found)
1       bad input or a failed check: a file that is missing, unreadable, too large,
        not a regular file, not valid YAML/JSON, or holds an invalid object;
        ``validate`` found an invalid object
2       usage error, from click: an unknown option, a missing argument, a value
        not among an option's choices
3       ``simulate`` only: the simulation ran and its report was written, but a
        controller failed repeatedly (on
        :data:`~karpenter_core.sim.report.REPEATED_FAILURES` or more reconciles)
4       ``schedule`` only: it scheduled, but left out NodePools that failed
        validation (one line each on stderr), as Karpenter provisions from the
        valid NodePools only
70      internal error: a bug in karpenter (one line names it;
        ``KARPENTER_TRACEBACK=1`` prints the traceback instead)
======  ==========================================================================
"""

from __future__ import annotations

from typing import IO, Any

import click

from karpenter_core.apis.limits import one_line

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_CONTROLLER_FAILED",
    "EXIT_INTERNAL_ERROR",
    "EXIT_INVALID_NODEPOOLS",
    "EXIT_OK",
    "EXIT_USAGE",
    "BadInput",
    "echo_problem",
]

EXIT_OK = 0
EXIT_BAD_INPUT = 1
EXIT_USAGE = 2
EXIT_CONTROLLER_FAILED = 3
EXIT_INVALID_NODEPOOLS = 4
EXIT_INTERNAL_ERROR = 70  # EX_SOFTWARE in BSD's sysexits.h


class BadInput(click.ClickException):
    """Exit 1 with ``Error: <message>``, the message on one bounded line."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


def echo_problem(line: str, *, err: bool = False, file: IO[Any] | None = None) -> None:
    """Print one problem line, bounded (a command reporting several problems uses this for
    each; a command stopping at the first raises :class:`BadInput`)."""
    click.echo(one_line(line), err=err, file=file)
