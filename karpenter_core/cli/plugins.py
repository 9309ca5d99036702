"""`karpenter plugins` (placeholder until implemented)."""

from __future__ import annotations

import click


@click.command(name="plugins")
def command() -> None:
    """Not implemented yet."""
    raise click.ClickException("karpenter plugins is not implemented yet")
