"""`karpenter validate` (placeholder until implemented)."""

from __future__ import annotations

import click


@click.command(name="validate")
def command() -> None:
    """Not implemented yet."""
    raise click.ClickException("karpenter validate is not implemented yet")
