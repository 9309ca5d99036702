"""`karpenter plugins`: what is installed, where it came from, and what it can do.

One row per plugin (built-ins first): its name, the distribution and version that
provides it, the hook families it implements, and its status — for a cloud provider
whether it can launch or is catalogue only. A plugin that failed to load is listed with
its error and the command exits 1, so a broken install is visible, never a traceback.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from karpenter_core.cli.exits import BadInput
from karpenter_core.cli.output import JSON, YAML, dump, output_option, table_lines
from karpenter_core.hookspecs import HOOK_SPEC_TYPES
from karpenter_core.plugins import (
    KarpenterPluginManager,
    PluginError,
    call_each,
    get_plugin_manager,
)

STATUS_CAN_LAUNCH = "can launch"
STATUS_CATALOGUE_ONLY = "catalogue only — cannot launch yet"

_HOOK_PREFIX = "karpenter_"


def _family(hook_name: str) -> str:
    return hook_name.removeprefix(_HOOK_PREFIX)


def plugin_report(pm: KarpenterPluginManager) -> list[dict[str, Any]]:
    """The rows of ``karpenter plugins`` as JSON-ready dicts with camelCase keys, as every
    command's JSON (the ``-o json|yaml`` shape; hook family names stay as the hooks spell
    them)."""
    provided: dict[str, dict[str, list[Any]]] = {}
    errors: dict[str, list[str]] = {}
    for hook_name in HOOK_SPEC_TYPES:
        for result in call_each(pm, hook_name):
            if result.error is not None:
                errors.setdefault(result.plugin_name, []).append(result.error)
            family = provided.setdefault(result.plugin_name, {})
            family.setdefault(_family(hook_name), []).extend(result.specs)

    rows: list[dict[str, Any]] = []
    for name, info in pm.plugin_info.items():
        specs = provided.get(name, {})
        providers = []
        for spec in specs.get("cloud_providers", []):
            providers.append(
                {
                    "name": spec.name,
                    "canLaunch": spec.can_launch,
                    "status": STATUS_CAN_LAUNCH if spec.can_launch else STATUS_CATALOGUE_ONLY,
                    "nodeClasses": [
                        {"group": k.group, "kind": k.kind, "version": k.version}
                        for k in spec.node_classes
                    ],
                    "description": spec.description,
                }
            )
        plugin_errors = errors.get(name)
        rows.append(
            _row(
                name,
                info.distribution,
                info.version,
                hooks=[_family(h) for h in pm.hook_families(name)],
                error="; ".join(plugin_errors) if plugin_errors else None,
                cloud_providers=providers,
                instance_type_overlays=[s.name for s in specs.get("instance_type_overlays", [])],
                disruption_methods=[s.name for s in specs.get("disruption_methods", [])],
                dra_drivers=[s.name for s in specs.get("dra_drivers", [])],
                instance_type_scorers=[s.name for s in specs.get("instance_type_scorers", [])],
            )
        )
    rows.extend(
        _row(err.name, err.distribution, err.version, error=err.error) for err in pm.load_errors
    )
    return rows


def _row(
    name: str,
    distribution: str | None,
    version: str | None,
    *,
    hooks: list[str] | None = None,
    error: str | None = None,
    cloud_providers: list[dict[str, Any]] | None = None,
    instance_type_overlays: list[str] | None = None,
    disruption_methods: list[str] | None = None,
    dra_drivers: list[str] | None = None,
    instance_type_scorers: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "name": name,
        "distribution": distribution,
        "version": version,
        "hooks": hooks or [],
        "status": "error" if error else "loaded",
        "error": error,
        "cloudProviders": cloud_providers or [],
        "instanceTypeOverlays": instance_type_overlays or [],
        "disruptionMethods": disruption_methods or [],
        "draDrivers": dra_drivers or [],
        "instanceTypeScorers": instance_type_scorers or [],
    }


def _status_text(row: dict[str, Any]) -> str:
    if row["status"] == "error":
        return f"error: {row['error']}"
    if row["cloudProviders"]:
        return "; ".join(f"{p['name']}: {p['status']}" for p in row["cloudProviders"])
    return "loaded"


def _dist_text(row: dict[str, Any]) -> str:
    if row["distribution"] is None:
        return "-"
    return f"{row['distribution']} {row['version']}" if row["version"] else row["distribution"]


def format_table(rows: list[dict[str, Any]]) -> str:
    """Plain aligned columns; the last column (status) is free text."""
    header = ("PLUGIN", "DISTRIBUTION", "HOOKS", "STATUS")
    body = [(r["name"], _dist_text(r), ",".join(r["hooks"]) or "-", _status_text(r)) for r in rows]
    return "\n".join(table_lines(header, body))


@click.command(name="plugins", short_help="List installed plugins, their hooks and status.")
@output_option()
def command(output: str) -> None:
    """List installed plugins: distribution, hook families and status.

    KARPENTER_PLUGINS=kwok,aws limits which installed plugins load (unset: all).
    """
    try:
        rows = plugin_report(get_plugin_manager())
    except PluginError as exc:
        raise BadInput(str(exc)) from exc
    if output in (JSON, YAML):
        click.echo(dump({"plugins": rows}, output), nl=False)
    else:
        click.echo(format_table(rows))
    if any(r["status"] == "error" for r in rows):
        sys.exit(1)
