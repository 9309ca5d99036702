"""``karpenter explain``: why a pod is pending, why a node is (not) disrupted, what a
NodePool may do now — over manifests or a ``karpenter snapshot`` file.

The answers are computed by :mod:`karpenter_core.explain` from the engine's own decision
functions; this module only reads the input and renders them (``-o table|json|yaml``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import click

from karpenter_core.cli.exits import BadInput
from karpenter_core.cli.output import JSON, YAML, dump, output_option, table_lines

__all__ = ["command"]


def _now(value: str | None) -> datetime | None:
    if value is None:
        return None
    from karpenter_core.apis.v1 import APIError, parse_time

    try:
        return parse_time(value)
    except APIError as e:
        raise click.BadParameter(str(e), param_hint="'--now'") from None


def _common(f: Callable[..., Any]) -> Callable[..., Any]:
    """The options every ``explain`` subcommand takes."""
    options = [
        click.option(
            "-f",
            "--filename",
            "filenames",
            multiple=True,
            metavar="FILE_OR_DIR",
            help="Manifests or a small `karpenter snapshot` file (repeatable; '-' reads stdin).",
        ),
        click.option(
            "--from",
            "snapshot_path",
            default=None,
            metavar="SNAPSHOT",
            help="A `karpenter snapshot` file (any size; --now defaults to its takenAt).",
        ),
        click.option(
            "--kubeconfig",
            default=None,
            metavar="FILE",
            help="Without -f or --from: the live cluster to read (default: $KUBECONFIG, "
            "in-cluster, ~/.kube/config).",
        ),
        click.option("--context", default=None, metavar="NAME", help="The kubeconfig context."),
        click.option(
            "--cloud-provider",
            default=None,
            metavar="NAME",
            help="Provider plugin whose instance types to use (default kwok).",
        ),
        click.option(
            "--region",
            default=None,
            metavar="REGION",
            help="Region of the provider's catalogue (its bundled one without credentials).",
        ),
        click.option(
            "--instance-types",
            "instance_types_file",
            default=None,
            metavar="FILE",
            help="Instance types from a file in the KWOK instance-types JSON format.",
        ),
        click.option(
            "--now",
            default=None,
            metavar="RFC3339",
            help="The instant to explain at (budgets' schedules, consolidateAfter, expiry). "
            "Default: now.",
        ),
        output_option(),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _run(
    what: Callable[[Any], Any],
    filenames: Sequence[str],
    snapshot_path: str | None,
    kubeconfig: str | None,
    context: str | None,
    cloud_provider: str | None,
    region: str | None,
    instance_types_file: str | None,
    now: str | None,
    output: str,
    render: Callable[[Any], list[str]],
) -> None:
    from karpenter_core.cli.schedule import InputError
    from karpenter_core.explain import load_explain_input
    from karpenter_core.explain.pod import ExplainError

    if instance_types_file is not None and cloud_provider is not None:
        raise click.UsageError("use either --cloud-provider or --instance-types, not both")
    if filenames and snapshot_path is not None:
        raise click.UsageError("use either -f or --from, not both")
    if (filenames or snapshot_path is not None) and (kubeconfig or context):
        raise click.UsageError("--kubeconfig/--context read a live cluster: drop -f/--from")
    snapshot = None
    if snapshot_path is not None:
        from karpenter_core.snapshot import SnapshotError, read_snapshot

        try:
            snapshot = read_snapshot(snapshot_path)
        except SnapshotError as e:
            raise BadInput(str(e)) from None
    elif not filenames:
        from karpenter_core.cli.snapshot import live_snapshot

        snapshot = live_snapshot(kubeconfig, context, quiet=True, command="explain")
    try:
        ei = load_explain_input(
            filenames,
            snapshot=snapshot,
            cloud_provider=cloud_provider,
            region=region,
            instance_types_file=instance_types_file,
            now=_now(now),
        )
        answer = what(ei)
    except (InputError, ExplainError) as e:
        raise BadInput(str(e.args[0] if e.args else e)) from None
    if output in (JSON, YAML):
        click.echo(dump(answer.to_json(), output), nl=False)
    else:
        click.echo("\n".join(render(answer)))


@click.group(name="explain", short_help="Explain a pod, node, NodeClaim or NodePool.")
def command() -> None:
    """Why a pod is pending or where it went, why a node is or is not disrupted, what a
    NodePool may do now: answered by Karpenter's own scheduler and disruption code over
    manifests (-f), a `karpenter snapshot` file (--from) or, with neither, the live
    cluster. See docs/explain.md."""


@command.command(name="pod", short_help="Why a pod is pending, or where it went.")
@click.argument("pod", metavar="NAMESPACE/NAME")
@_common
def pod_command(pod: str, **kw: Any) -> None:
    """Explain POD: the scheduler's verdict, then each NodePool and the first constraint
    that excluded it, with the closest instance type when none fits."""
    from karpenter_core.explain import explain_pod

    _run(lambda ei: explain_pod(ei, pod), render=_render_pod, **kw)


@command.command(name="node", short_help="Why a node is or is not disrupted.")
@click.argument("name", metavar="NAME")
@_common
def node_command(name: str, **kw: Any) -> None:
    """Explain node NAME: whether emptiness, drift or consolidation would act on it now,
    and if not, why (candidate checks, consolidateAfter, PDBs, budgets, the replacement
    consolidation would launch)."""
    from karpenter_core.explain import explain_node

    _run(lambda ei: explain_node(ei, name), render=_render_node, **kw)


@command.command(name="nodeclaim", short_help="As `explain node`, by NodeClaim name.")
@click.argument("name", metavar="NAME")
@_common
def nodeclaim_command(name: str, **kw: Any) -> None:
    """Explain the node of NodeClaim NAME, as `explain node` does."""
    from karpenter_core.explain import explain_node

    _run(lambda ei: explain_node(ei, name, nodeclaim=True), render=_render_node, **kw)


@command.command(name="nodepool", short_help="A NodePool's limits, budgets and drift now.")
@click.argument("name", metavar="NAME")
@_common
def nodepool_command(name: str, **kw: Any) -> None:
    """Explain NodePool NAME: whether it may launch, its limits, the disruption budgets in
    force now for each reason, and which of its NodeClaims have drifted."""
    from karpenter_core.explain import explain_nodepool

    _run(lambda ei: explain_nodepool(ei, name), render=_render_nodepool, **kw)


# --- rendering ----------------------------------------------------------------------------------


def _price(p: float | None) -> str:
    return f"${p:.4f}/h" if p is not None else "-"


def _render_pod(e: Any) -> list[str]:
    lines = [f"Pod {e.pod}: {e.verdict.message}", ""]
    rows = []
    for v in e.nodepools:
        if v.reason is None:
            c = v.cheapest
            text = (
                f"{v.fitting} type(s) fit this pod alone; cheapest {c.name} {_price(c.price)}"
                if c
                else ""
            )
            rows.append([v.nodepool, "fits", text])
            continue
        text = v.reason.message
        if v.closest is not None:
            assert v.closest.reason is not None
            text += f"; closest: {v.closest.name} ({v.closest.reason.message})"
        rows.append([v.nodepool, v.reason.code, text])
    if rows:
        lines += table_lines(["NODEPOOL", "VERDICT", "WHY"], rows, gap="   ")
    else:
        lines.append("No NodePools in the input.")
    return lines


def _render_node(e: Any) -> list[str]:
    lines = [
        f"Node {e.node or '-'} (NodeClaim {e.nodeclaim or '-'}, NodePool {e.nodepool or '-'}): "
        f"{e.summary.message}",
        "",
    ]
    rows = [
        [m.method, m.reason.code, "-" if m.budget is None else str(m.budget), m.reason.message]
        for m in e.methods
    ]
    lines += table_lines(["METHOD", "VERDICT", "BUDGET", "WHY"], rows, gap="   ")
    if e.expires_in is not None:
        lines += ["", f"expireAfter: {_expiry(e.expires_in)}"]
    return lines


def _expiry(seconds: float) -> str:
    if seconds <= 0:
        return "expired: the NodeClaim is due for deletion"
    return f"expires in {seconds / 3600:.1f}h"


def _render_nodepool(e: Any) -> list[str]:
    lines = [f"NodePool {e.nodepool}: {e.summary.message}"]
    if not e.budgets:
        return lines
    lines.append(f"nodes: {e.nodes}; consolidation: {e.consolidation}")
    if e.limits:
        lines += ["", *table_lines(["LIMIT", "USED", "MAX"], [list(x) for x in e.limits])]
    rows = [
        [b.reason, str(b.allowed), str(b.disrupting), str(b.remaining), "; ".join(b.active) or "-"]
        for b in e.budgets
    ]
    lines += [
        "",
        *table_lines(["REASON", "ALLOWED", "DISRUPTING", "REMAINING", "BUDGETS IN FORCE"], rows),
    ]
    drifted = ", ".join(e.drifted) if e.drifted else "none"
    lines += ["", f"drifted NodeClaims: {drifted}"]
    return lines
