"""`karpenter crds` (placeholder until implemented)."""

from __future__ import annotations

import click


@click.command(name="crds")
def command() -> None:
    """Not implemented yet."""
    raise click.ClickException("karpenter crds is not implemented yet")
