"""``karpenter validate``: check NodePool, NodeClaim, NodeOverlay, CapacityBuffer and NodeClass
manifests.

Runs what an API server with the Karpenter CRDs would reject (schema and CEL rules) plus the
runtime validation the controllers apply before an object becomes Ready, and prints one line
per problem: ``<file>: <Kind>/<name>: <field path>: <message>``. A NodeClass of an installed
cloud provider that ships its CRD (``EC2NodeClass``, ``KWOKNodeClass``) is checked against that
CRD's schema and CEL rules (:mod:`karpenter_core.apis.crds.openapi`), as the API server checks
it on create. Other kinds are skipped (and said so on stderr), so a directory of mixed
manifests can be checked as is.
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import TYPE_CHECKING

import click

from karpenter_core.apis.limits import elide
from karpenter_core.apis.manifests import ManifestError, load_file, manifest_files
from karpenter_core.apis.validation import is_supported, validate
from karpenter_core.cli.exits import EXIT_BAD_INPUT, BadInput, echo_problem
from karpenter_core.cli.output import JSON, YAML, dump, output_option

if TYPE_CHECKING:
    from karpenter_core.apis.crds.openapi import CRDSchema


@click.command(name="validate", short_help="Check Karpenter manifests as the API server would.")
@click.option(
    "-f",
    "--filename",
    "filenames",
    multiple=True,
    required=True,
    metavar="FILE_OR_DIR",
    help="Manifest file or directory to check (repeatable; '-' reads stdin).",
)
@click.option(
    "-R", "--recursive", is_flag=True, help="Descend into sub-directories of directories."
)
@click.option("-q", "--quiet", is_flag=True, help="Do not report skipped objects of other kinds.")
@click.option(
    "--cloud-provider",
    metavar="NAME",
    default=None,
    help="Also apply this provider's well-known labels and restricted label domains "
    "(as the controllers do when running with it).",
)
@output_option(
    help="table: one line per problem, then a summary; json/yaml: the same as a document "
    "(valid, checked kinds, invalid and skipped counts, problems)."
)
def command(
    filenames: tuple[str, ...],
    recursive: bool,
    quiet: bool,
    cloud_provider: str | None,
    output: str,
) -> None:
    """Validate Karpenter objects in FILE_OR_DIR(s) like kubectl apply would, plus runtime checks.

    Exits 0 when every NodePool, NodeClaim, NodeOverlay and CapacityBuffer is valid, 1 when any
    is not, an object has no apiVersion or kind, or a file cannot be read.
    """
    if cloud_provider is not None:
        _register_provider_labels(cloud_provider)
    try:
        files = manifest_files(filenames, recursive)
    except ManifestError as e:
        raise BadInput(str(e)) from None
    if not files:
        raise BadInput("no manifest files (.yaml, .yml, .json) found in " + ", ".join(filenames))

    as_document = output in (JSON, YAML)
    problems: list[dict[str, str | None]] = []

    def problem(source: str, obj: str | None, message: str) -> None:
        """One problem: a line now for people, an entry of the document for programs."""
        problems.append({"file": source, "object": obj, "message": message})
        if not as_document:
            echo_problem(f"{source}: {obj}: {message}" if obj else message)

    node_classes = _NodeClassSchemas()
    failed = False
    checked: Counter[str] = Counter()
    invalid = 0
    skipped = 0
    for path in files:
        try:
            objects = load_file(path)
        except ManifestError as e:
            problem(path, None, str(e))
            failed = True
            continue
        for loaded in objects:
            untyped = [f for f in ("apiVersion", "kind") if not _is_set(loaded.obj.get(f))]
            if untyped:
                # Every Kubernetes object says what it is; the API server refuses one that
                # does not, so this is an invalid object, not one of another kind to skip.
                checked[loaded.kind or "object without a kind"] += 1
                invalid += 1
                failed = True
                for f in untyped:
                    problem(loaded.source, loaded.display, f"{f}: Required value")
                continue
            if not is_supported(loaded.obj):
                kind = loaded.kind
                if kind in ("NodePool", "NodeClaim", "NodeOverlay", "CapacityBuffer"):
                    # Right kind, wrong version: that is an error, not something to skip.
                    checked[kind] += 1
                    for err in dict.fromkeys(str(e) for e in validate(loaded.obj)):
                        problem(loaded.source, loaded.display, err)
                    invalid += 1
                    failed = True
                    continue
                crd = node_classes.find(loaded.api_version, kind)
                if crd is not None:
                    checked[kind] += 1
                    errors = [str(e) for e in _validate_node_class(crd, loaded.obj)]
                    if errors:
                        invalid += 1
                        failed = True
                        for err in dict.fromkeys(errors):
                            problem(loaded.source, loaded.display, err)
                    continue
                skipped += 1
                if not quiet:
                    echo_problem(
                        f"{loaded.source}: {loaded.display}: skipped "
                        f"({elide(loaded.api_version)} is not a Karpenter kind)",
                        err=True,
                    )
                continue
            checked[loaded.kind] += 1
            # Some rules (schema and CEL) can report the same problem twice: print it once.
            errors = list(dict.fromkeys(str(e) for e in validate(loaded.obj)))
            if errors:
                invalid += 1
                failed = True
                for err in errors:
                    problem(loaded.source, loaded.display, err)

    for line in node_classes.problems():
        echo_problem(line, err=True)
    total = sum(checked.values())
    if not failed and total == 0 and skipped == 0:
        # kubectl apply says "no objects passed to apply" here: nothing was checked at all.
        raise BadInput("no objects found in " + ", ".join(filenames))
    if as_document:
        document = {
            "valid": not failed,
            "files": len(files),
            "checked": dict(sorted(checked.items())),
            "invalid": invalid,
            "skipped": skipped,
            "problems": problems,
        }
        click.echo(dump(document, output), nl=False)
        if failed:
            sys.exit(EXIT_BAD_INPUT)
        return
    summary = ", ".join(f"{n} {k}" for k, n in sorted(checked.items())) or "no Karpenter objects"
    extra = f"; {skipped} other object(s) skipped" if skipped else ""
    if failed:
        click.echo(f"FAILED: {invalid} of {total} object(s) invalid ({summary}){extra}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    click.echo(f"OK: {total} object(s) valid ({summary}) in {len(files)} file(s){extra}")


class _NodeClassSchemas:
    """The CRDs of the installed cloud providers' NodeClass kinds, loaded on first use (a run
    over NodePools alone never loads the plugins)."""

    def __init__(self) -> None:
        self._crds: list[CRDSchema] | None = None
        self._load_problem: str | None = None

    def _load(self) -> list[CRDSchema]:
        from karpenter_core.apis.crds.openapi import CRDSchema
        from karpenter_core.plugins import (
            PluginError,
            cloud_provider_crds,
            collect,
            get_plugin_manager,
            serves,
        )

        out: list[CRDSchema] = []
        try:
            specs = [spec for _, spec in collect(get_plugin_manager(), "karpenter_cloud_providers")]
            for spec in specs:
                for crd in cloud_provider_crds(spec):
                    if any(serves(crd.manifest, nc) for nc in spec.node_classes):
                        out.append(CRDSchema(crd.manifest))
        except PluginError as e:
            # NodeClasses are then skipped like any other kind; say why once.
            self._load_problem = f"NodeClass CRDs not loaded, NodeClasses not checked: {e}"
        return out

    def find(self, api_version: str, kind: str) -> CRDSchema | None:
        if self._crds is None:
            self._crds = self._load()
        return next((c for c in self._crds if c.serves(api_version, kind)), None)

    def problems(self) -> list[str]:
        """Lines about the CRDs themselves (a plugin that did not load, a rule that does not
        compile), each once: the CRD's problem, not a manifest's."""
        out = [self._load_problem] if self._load_problem else []
        for crd in self._crds or ():
            out += [f"CRD {crd.name}: {p}" for p in crd.problems]
        return out


def _validate_node_class(crd: CRDSchema, obj: object) -> list[object]:
    from karpenter_core.apis.validation import _validate_metadata

    if not isinstance(obj, dict):
        return []
    return [*_validate_metadata(obj), *crd.validate(obj)]


def _is_set(value: object) -> bool:
    return isinstance(value, str) and bool(value)


def _register_provider_labels(name: str) -> None:
    """Register one provider's label sets, the way the operator does at start-up."""
    from karpenter_core.plugins import (
        PluginError,
        collect,
        get_plugin_manager,
        register_provider_labels,
    )

    try:
        specs = [spec for _, spec in collect(get_plugin_manager(), "karpenter_cloud_providers")]
    except PluginError as e:
        raise BadInput(str(e)) from None
    for spec in specs:
        if spec.name == name:
            register_provider_labels(spec)
            return
    available = ", ".join(sorted(spec.name for spec in specs)) or "none installed"
    raise BadInput(f"unknown cloud provider {elide(repr(name))}; available: {available}")
