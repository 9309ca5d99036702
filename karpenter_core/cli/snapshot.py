"""``karpenter snapshot``: copy a live cluster's objects into one file (``docs/snapshot.md``).

It connects as ``karpenter serve`` does (``--kubeconfig``, else ``$KUBECONFIG``, else the
in-cluster service account, else ``~/.kube/config``), loads the installed plugins so their
NodeClass kinds are known, lists every kind of :func:`~karpenter_core.snapshot.snapshot_kinds`
and writes the file. Kinds the server does not serve are left out with a note; anything
else that stops it (no configuration, an unreachable server, a missing permission, a file
that cannot be written) is one ``Error:`` line and exit 1.
"""

from __future__ import annotations

import os
from typing import Any

import click

from karpenter_core import __version__
from karpenter_core.cli.exits import BadInput, echo_problem


def _current_context(kubeconfig: str | None) -> str:
    """The kubeconfig's current context (for the snapshot's ``source``); empty if unknown."""
    from kubernetes import config as k8s_config

    path = kubeconfig or os.environ.get("KUBECONFIG") or None
    try:
        lister: Any = k8s_config.list_kube_config_contexts
        _, active = lister(config_file=path)
    except Exception:  # only a label for the file: never worth failing over
        return ""
    return str((active or {}).get("name") or "")


def _summary(counts: dict[str, int], server: str, output: str) -> str:
    total = sum(counts.values())
    kinds = ", ".join(f"{kind} {n}" for kind, n in counts.items()) or "nothing"
    where = "standard output" if output == "-" else output
    return f"snapshot of {server}: {total} objects ({kinds}) written to {where}"


def live_snapshot(
    kubeconfig: str | None,
    context: str | None,
    *,
    anonymise: bool = False,
    quiet: bool = False,
    command: str = "snapshot",
) -> Any:
    """A :class:`~karpenter_core.snapshot.Snapshot` of the live cluster the kubeconfig (or
    the pod's service account) names, connecting as ``karpenter serve`` does; kinds the
    server does not serve are noted on stderr unless ``quiet``. Raises
    :class:`~karpenter_core.cli.exits.BadInput` with one line when it cannot."""
    from karpenter_core.kube.adapter import KubernetesClient
    from karpenter_core.kube.config import KubeConfigError, load_config
    from karpenter_core.plugins import get_plugin_manager
    from karpenter_core.snapshot import SnapshotError, SnapshotSource, take_snapshot

    try:
        loaded = load_config(kubeconfig, context)
    except KubeConfigError as e:
        raise BadInput(str(e)) from None
    in_cluster = loaded.source.startswith("in-cluster")
    server = "in-cluster" if in_cluster else str(loaded.configuration.host)
    source = SnapshotSource(server, "" if in_cluster else context or _current_context(kubeconfig))
    get_plugin_manager(os.environ)  # the providers' plugins register their NodeClass kinds

    def note(rt: Any, why: str) -> None:
        if not quiet:
            echo_problem(f"note: {rt.kind} ({rt}) left out: {why}", err=True)

    client = KubernetesClient(loaded.configuration, user_agent=f"karpenter/{__version__} {command}")
    try:
        return take_snapshot(client, anonymise=anonymise, source=source, on_skip=note)
    except SnapshotError as e:
        raise BadInput(str(e)) from None
    finally:
        client.close()


@click.command(name="snapshot", short_help="Copy a live cluster's objects into one file.")
@click.option(
    "-o",
    "--output",
    default="-",
    show_default=True,
    metavar="FILE|-",
    help="Where to write the snapshot: a .json file, gzip-compressed when it ends in .gz, "
    "or - for standard output.",
)
@click.option(
    "--kubeconfig",
    default=None,
    metavar="FILE",
    help="Path of a kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config).",
)
@click.option("--context", default=None, metavar="NAME", help="The kubeconfig context to use.")
@click.option(
    "--anonymise",
    is_flag=True,
    help="Replace names, non-well-known label values, images, env values and provider IDs "
    "by keyed hashes, consistently across all objects.",
)
@click.option("-q", "--quiet", is_flag=True, help="No summary or notes on standard error.")
def command(
    output: str, kubeconfig: str | None, context: str | None, anonymise: bool, quiet: bool
) -> None:
    """Read a live cluster and write every object Karpenter needs into one snapshot file:
    NodePools, NodeClaims, NodeClasses, Nodes, Pods, DaemonSets, PDBs, NodeOverlays,
    CapacityBuffers, volumes and storage classes, DRA objects and Namespaces.

    For `karpenter simulate --from` and offline analysis; see docs/snapshot.md.
    """
    from karpenter_core.snapshot import SnapshotError, write_snapshot

    snapshot = live_snapshot(kubeconfig, context, anonymise=anonymise, quiet=quiet)
    try:
        write_snapshot(snapshot, output)
    except SnapshotError as e:
        raise BadInput(str(e)) from None
    if not quiet:
        echo_problem(_summary(snapshot.counts(), snapshot.source.server, output), err=True)
