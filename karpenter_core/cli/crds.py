"""``karpenter crds``: print the CRD manifests (pipe to ``kubectl apply -f -``)."""

from __future__ import annotations

from typing import Any

import click

from karpenter_core.apis.crds import crd_manifests, crd_yaml_files


def _aliases(crd: dict[str, Any]) -> set[str]:
    names = crd["spec"]["names"]
    out = {names["kind"], names["plural"], names["singular"], crd["metadata"]["name"]}
    out.update(str(s) for s in names.get("shortNames", []))
    return {a.lower() for a in out}


@click.command(name="crds")
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    metavar="KIND",
    help="Only this CRD (kind, plural, short name or CRD name; repeatable).",
)
def command(kinds: tuple[str, ...]) -> None:
    """Print the NodePool, NodeClaim, NodeOverlay and CapacityBuffer CRDs as one YAML stream."""
    files = list(crd_yaml_files().values())
    crds = crd_manifests()
    if kinds:
        wanted = {k.lower() for k in kinds}
        known = set().union(*(_aliases(c) for c in crds))
        unknown = sorted(k for k in kinds if k.lower() not in known)
        if unknown:
            available = ", ".join(str(c["spec"]["names"]["kind"]) for c in crds)
            raise click.ClickException(f"unknown kind {', '.join(unknown)}; available: {available}")
        files = [text for text, crd in zip(files, crds, strict=True) if _aliases(crd) & wanted]
    click.echo("".join(files), nl=False)
