"""``karpenter crds``: print the CRD manifests (pipe to ``kubectl apply -f -``).

The core's CRDs (NodePool, NodeClaim, NodeOverlay, CapacityBuffer) come first, then the
CRDs the selected cloud providers ship through ``CloudProviderSpec.crds`` (their
NodeClasses, e.g. KWOK's ``KWOKNodeClass``): without those a provider has nothing to
read its NodeClass from, and users apply this command's output and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import click
from attrs import frozen

from karpenter_core.apis.crds import crd_manifests, crd_yaml_files
from karpenter_core.cli.exits import BadInput
from karpenter_core.cli.output import JSON, TABLE, YAML, dump, output_option, table_lines
from karpenter_core.plugins import (
    PluginError,
    ProviderCRD,
    cloud_provider_crds,
    cloud_providers,
    get_plugin_manager,
    node_classes_without_crd,
    unknown_cloud_provider_message,
)


@frozen
class CRDDocument:
    """One CRD to print: its file's text and the parsed manifest; ``provider`` is None
    for the core's own."""

    text: str
    manifest: Mapping[str, Any]
    provider: str | None = None


@frozen
class Selection:
    """What ``karpenter crds`` prints, and the notes for stderr (NodeClasses whose CRD
    no selected provider ships; worth saying only when not filtering by kind) and the
    warnings (plugins that failed to load, so their CRDs are missing)."""

    documents: tuple[CRDDocument, ...]
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def _aliases(crd: Mapping[str, Any]) -> set[str]:
    names = crd["spec"]["names"]
    out = {names["kind"], names["plural"], crd["metadata"]["name"]}
    if "singular" in names:
        out.add(names["singular"])
    out.update(str(s) for s in names.get("shortNames", []))
    return {a.lower() for a in out}


def _kind(doc: CRDDocument) -> str:
    return str(doc.manifest["spec"]["names"]["kind"])


def merge(core: Sequence[CRDDocument], provided: Iterable[ProviderCRD]) -> tuple[CRDDocument, ...]:
    """The core's CRDs then the providers', each CRD once.

    Two providers may ship the same CRD (one plugin offering two provider names); the
    same text is printed once. A provider CRD that redefines one of the core's, or two
    different texts for one CRD name, is a :class:`PluginError` naming who ships what:
    applying both would leave whichever came last.
    """
    out = list(core)
    by_name: dict[str, CRDDocument] = {str(d.manifest["metadata"]["name"]): d for d in core}
    for crd in provided:
        seen = by_name.get(crd.name)
        if seen is None:
            doc = CRDDocument(crd.text, crd.manifest, crd.provider)
            by_name[crd.name] = doc
            out.append(doc)
        elif seen.provider is None:
            raise PluginError(
                f"cloud provider {crd.provider!r}: CRD file {crd.file} redefines the core "
                f"CRD {crd.name}"
            )
        elif seen.text != crd.text:
            raise PluginError(
                f"cloud providers {seen.provider!r} and {crd.provider!r} ship different "
                f"manifests for the CRD {crd.name}"
            )
    return tuple(out)


def filter_kinds(documents: Sequence[CRDDocument], kinds: Sequence[str]) -> list[CRDDocument]:
    """The documents ``kinds`` name (kind, plural, singular, short name or CRD name, any
    case); a name matching none is a :class:`click.ClickException` listing the kinds."""
    wanted = {k.lower() for k in kinds}
    known = set().union(*(_aliases(d.manifest) for d in documents))
    unknown = sorted(k for k in kinds if k.lower() not in known)
    if unknown:
        available = ", ".join(_kind(d) for d in documents)
        raise BadInput(f"unknown kind {', '.join(unknown)}; available: {available}")
    return [d for d in documents if _aliases(d.manifest) & wanted]


def as_stream_document(text: str) -> str:
    """``text`` as one document of a YAML stream: a ``---`` marker in front unless the
    file has one before its content (core files do, after their header comment; KWOK's
    starts with a comment and ``apiVersion``), and a final newline so the next marker
    starts a line."""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if not stripped.startswith("---"):
            text = "---\n" + text
        break
    return text if text.endswith("\n") else text + "\n"


def select(providers: Sequence[str]) -> Selection:
    """Load the plugins and pick the CRDs to print: the core's, then those of
    ``providers`` in the order given, or of every installed provider (by name) when
    ``providers`` is empty.

    Raises :class:`PluginError` for an unknown provider name (listing the installed ones
    and any plugin that failed to load), duplicate provider names, or a broken CRD file.
    """
    pm = get_plugin_manager()
    specs = cloud_providers(pm)
    notes: list[str] = []
    warnings: list[str] = []
    if providers:
        names = list(dict.fromkeys(providers))
        for name in names:
            if name not in specs:
                raise PluginError(unknown_cloud_provider_message(name, specs, pm))
    else:
        names = sorted(specs)
        warnings.extend(
            f"warning: {err}; the CRDs of the cloud providers it offers are not printed"
            for err in pm.load_errors
        )
    provided: list[ProviderCRD] = []
    for name in names:
        spec = specs[name]
        try:
            crds = cloud_provider_crds(spec)
        except PluginError as exc:
            if providers:
                raise
            raise PluginError(
                f"{exc} (pick the providers to print with --cloud-provider NAME)"
            ) from exc
        provided.extend(crds)
        notes.extend(
            f"note: cloud provider {name!r} ships no CRD for its NodeClass {nc.kind} "
            f"({nc.api_version}); install that CRD from the provider's own release"
            for nc in node_classes_without_crd(spec, crds)
        )
    core = [
        CRDDocument(text, manifest)
        for text, manifest in zip(crd_yaml_files().values(), crd_manifests(), strict=True)
    ]
    return Selection(merge(core, provided), tuple(notes), tuple(warnings))


def render_table(documents: Sequence[CRDDocument]) -> str:
    """One row per CRD: its name, kind, served versions and who ships it."""
    rows = [
        [
            str(d.manifest["metadata"]["name"]),
            _kind(d),
            ",".join(str(v.get("name")) for v in d.manifest["spec"].get("versions") or ()),
            d.provider or "core",
        ]
        for d in documents
    ]
    return "\n".join(table_lines(("NAME", "KIND", "VERSIONS", "FROM"), rows))


@click.command(name="crds", short_help="Print the CRDs for `kubectl apply -f -`.")
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    metavar="KIND",
    help="Only this CRD (kind, plural, short name or CRD name; repeatable).",
)
@click.option(
    "--cloud-provider",
    "providers",
    multiple=True,
    metavar="NAME",
    help="Include the CRDs this installed cloud provider ships (its NodeClass); "
    "repeatable. Default: the CRDs of every installed cloud provider.",
)
@output_option(
    default=YAML,
    help="yaml: the manifests as one YAML stream, for kubectl apply; json: a v1 List of "
    "them; table: one row per CRD.",
)
def command(kinds: tuple[str, ...], providers: tuple[str, ...], output: str) -> None:
    """Print the CRDs as one YAML stream for `kubectl apply -f -`.

    First the core's (NodePool, NodeClaim, NodeOverlay, CapacityBuffer), then the CRDs
    the cloud provider plugins ship, such as KWOK's KWOKNodeClass. A provider that
    ships no CRD for its NodeClass is named on stderr.
    """
    try:
        selection = select(providers)
    except PluginError as exc:
        raise BadInput(str(exc)) from exc
    documents = list(selection.documents)
    if kinds:
        documents = filter_kinds(documents, kinds)
    if output == JSON:
        items = [d.manifest for d in documents]
        click.echo(dump({"apiVersion": "v1", "kind": "List", "items": items}, JSON), nl=False)
    elif output == TABLE:
        click.echo(render_table(documents))
    else:
        click.echo("".join(as_stream_document(d.text) for d in documents), nl=False)
    for warning in selection.warnings:
        click.echo(warning, err=True)
    if not kinds:
        for note in selection.notes:
            click.echo(note, err=True)
