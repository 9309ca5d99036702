"""The ``karpenter`` command line.

Each sub-command lives in its own module (``cli/<name>.py``) exposing a click command
named ``command``; this module only assembles the group, so commands can grow without
touching each other.
"""

from __future__ import annotations

import click

from karpenter_core import __version__
from karpenter_core.cli import crds, instance_types, plugins, schedule, serve, simulate, validate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="karpenter")
def main() -> None:
    """Karpenter node autoscaler: serve, simulate and explain provisioning decisions."""


for _module in (plugins, instance_types, crds, validate, schedule, simulate, serve):
    main.add_command(_module.command)

__all__ = ["main"]
