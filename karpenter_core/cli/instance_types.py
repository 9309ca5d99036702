"""`karpenter instance-types` (placeholder until implemented)."""

from __future__ import annotations

import click


@click.command(name="instance-types")
def command() -> None:
    """Not implemented yet."""
    raise click.ClickException("karpenter instance-types is not implemented yet")
