"""The ``karpenter`` command line.

Each sub-command lives in its own module (``cli/<name>.py``) exposing a click command
named ``command``; this module only assembles the group, so commands can grow without
touching each other. The group also holds what every command shares: the exit codes of
:mod:`karpenter_core.cli.exits` (documented in ``docs/cli.md``), output that survives a
terminal whose encoding cannot show a name, and one line instead of a traceback should a
command fail unexpectedly.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

import click

from karpenter_core import __version__
from karpenter_core.apis.limits import one_line
from karpenter_core.cli import (
    crds,
    instance_types,
    plugins,
    schedule,
    serve,
    simulate,
    snapshot,
    validate,
)
from karpenter_core.cli.exits import EXIT_INTERNAL_ERROR

TRACEBACK_ENV = "KARPENTER_TRACEBACK"
"""Set (to anything but empty) to get Python's traceback instead of the one-line internal
error, for a bug report."""

_KEEPS_TRACEBACKS = frozenset({"serve"})
"""Commands whose unexpected errors keep Python's traceback: the operator logs its own
errors, and its logs are read by people debugging it."""


def _tolerant_output() -> None:
    """Names the terminal's encoding cannot represent are printed escaped (``\\u00e9``)
    instead of failing the command half-way through its output."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if callable(reconfigure):
            # a closed or detached stream has nothing to fix
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")


class _Karpenter(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as e:
            if os.environ.get(TRACEBACK_ENV) or ctx.invoked_subcommand in _KEEPS_TRACEBACKS:
                raise
            click.echo(
                one_line(
                    f"Error: internal error in karpenter {ctx.invoked_subcommand or ''}: "
                    f"{type(e).__name__}: {e}"
                )
                + f" (a bug: please report it with the input; {TRACEBACK_ENV}=1 shows where)",
                err=True,
            )
            ctx.exit(EXIT_INTERNAL_ERROR)


@click.group(cls=_Karpenter, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="karpenter")
def main() -> None:
    """Karpenter node autoscaler: serve, simulate and explain provisioning decisions."""
    _tolerant_output()


for _module in (plugins, instance_types, crds, validate, schedule, simulate, snapshot, serve):
    main.add_command(_module.command)

__all__ = ["main"]
