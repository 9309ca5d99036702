"""Starting a simulation from a cluster's objects (``karpenter simulate --from SNAPSHOT``).

A snapshot holds the objects as the API server returned them: NodePools, NodeClaims,
Nodes, Pods with their owners, PDBs, NodeClasses... :func:`seed_from_objects` creates
them in the in-memory API server so the run continues where the cluster stood:

- every object keeps its ``uid`` and ``creationTimestamp`` (the server's
  :meth:`~karpenter_core.sim.apiserver.InMemoryApiServer.restore`), so owner references
  still resolve — a ReplicaSet's pods stay its own and nothing is created twice — and,
  with the virtual clock starting at the snapshot's ``takenAt``, ages such as
  ``consolidateAfter`` and ``expireAfter`` count from the real creation;
- every object keeps its ``status``: Nodes stay Ready, pods stay bound and Running,
  pending pods stay pending, NodeClaims stay launched and initialized;
- Nodes and NodeClaims go through the cloud provider's
  :class:`~karpenter_core.cloudprovider.protocol.AdoptsInstances` first, which makes them
  instances the provider knows (so disruption can delete them and their price counts);
- objects being deleted, and kinds the simulated API server does not serve (Events,
  Leases...), are left out and said so; a namespace an object needs is created.

:func:`load_starting_state` reads the file. It is the one place that knows the
snapshot format, until the snapshot module's reader replaces it.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from attrs import field, frozen

from karpenter_core.cloudprovider.protocol import AdoptsInstances
from karpenter_core.kube.client import ApiError, UnknownResourceError, resource_for
from karpenter_core.runtime.clock import parse_time
from karpenter_core.sim.apiserver import InMemoryApiServer

__all__ = [
    "Seeded",
    "StartingState",
    "StartingStateError",
    "load_starting_state",
    "seed_from_objects",
]

SNAPSHOT_API_VERSION = "snapshot.karpenter.sh/v1alpha1"
SNAPSHOT_KIND = "Snapshot"

_RANK: Mapping[str, int] = {
    "Namespace": 0,
    "NodePool": 2,
    "NodeOverlay": 2,
    "Node": 3,
    "NodeClaim": 4,
    "Deployment": 5,
    "StatefulSet": 5,
    "CronJob": 5,
    "ReplicaSet": 6,
    "DaemonSet": 6,
    "Job": 6,
    "Pod": 9,
}
"""Creation order: what others refer to first (namespaces, owners before what they own,
Nodes before the pods bound there); unlisted kinds in between (rank 1 if cluster-scoped,
else 7)."""

_MAX_LISTED = 5


class StartingStateError(ValueError):
    """The snapshot cannot be read; the message is one line naming the file."""


@frozen
class StartingState:
    """A cluster's objects and when they were read: where a simulation starts."""

    source: str
    taken_at: datetime
    objects: tuple[dict[str, Any], ...]


@frozen
class Seeded:
    """What :func:`seed_from_objects` created, and what it could not."""

    created: Mapping[str, int]
    """Kind -> objects created."""
    nodeclaims: frozenset[str]
    """The NodeClaims that existed before the run (their launches are not the run's)."""
    notes: tuple[str, ...] = field(factory=tuple)
    """What was left out or could not be adopted, for the report."""


def load_starting_state(path: str | Path) -> StartingState:
    """Read a snapshot file (JSON, gzip-compressed when it ends in ``.gz``, or YAML).

    Temporary: the snapshot module's reader takes this over once it lands; nothing else
    here depends on how the file is laid out."""
    source = str(path)
    try:
        raw = Path(source).read_bytes()
    except OSError as e:
        raise StartingStateError(f"{source}: cannot read: {e.strerror or e}") from None
    try:
        if source.endswith(".gz"):
            raw = gzip.decompress(raw)
        text = raw.decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise StartingStateError(f"{source}: not a readable snapshot: {e}") from None
    data: Any
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        from karpenter_core.apis.manifests import ManifestError, parse_yaml

        try:
            docs = parse_yaml(text, source)
        except ManifestError as e:
            raise StartingStateError(str(e)) from None
        data = docs[0] if len(docs) == 1 else None
    return starting_state_of(data, source)


def starting_state_of(data: Any, source: str) -> StartingState:
    """A :class:`StartingState` from a parsed snapshot document."""
    if not isinstance(data, Mapping) or data.get("kind") != SNAPSHOT_KIND:
        raise StartingStateError(f"{source}: not a snapshot (expected kind {SNAPSHOT_KIND})")
    if data.get("apiVersion") != SNAPSHOT_API_VERSION:
        raise StartingStateError(
            f"{source}: apiVersion: expected {SNAPSHOT_API_VERSION}, got {data.get('apiVersion')!r}"
        )
    try:
        taken_at = parse_time(str(data.get("takenAt") or ""))
    except ValueError as e:
        raise StartingStateError(f"{source}: takenAt: {e}") from None
    items = data.get("items")
    if not isinstance(items, list):
        raise StartingStateError(f"{source}: items: expected a list of objects")
    objects = tuple(dict(o) for o in items if isinstance(o, Mapping))
    return StartingState(source, taken_at, objects)


def _rank(kind: str, namespaced: bool) -> int:
    return _RANK.get(kind, 7 if namespaced else 1)


def _listed(counts: Mapping[str, int]) -> str:
    shown = [f"{n} {k}" for k, n in sorted(counts.items())[:_MAX_LISTED]]
    more = len(counts) - _MAX_LISTED
    return ", ".join(shown) + (f" and {more} more kinds" if more > 0 else "")


def seed_from_objects(
    server: InMemoryApiServer,
    objects: Iterable[Mapping[str, Any]],
    provider: object | None = None,
) -> Seeded:
    """Create ``objects`` (as a snapshot holds them) in ``server``; see the module
    docstring for what is kept, adopted and left out."""
    notes: list[str] = []
    unknown: dict[str, int] = {}
    deleting = 0
    malformed = 0
    ranked: list[tuple[int, int, dict[str, Any]]] = []
    namespaces: set[str] = set()
    for i, obj in enumerate(objects):
        meta = obj.get("metadata")
        kind, api_version = obj.get("kind"), obj.get("apiVersion")
        if not isinstance(meta, Mapping) or not meta.get("name") or not kind or not api_version:
            malformed += 1
            continue
        if meta.get("deletionTimestamp"):
            deleting += 1
            continue
        try:
            rt = resource_for((str(api_version), str(kind)))
        except UnknownResourceError:
            unknown[str(kind)] = unknown.get(str(kind), 0) + 1
            continue
        if rt.namespaced:
            namespaces.add(str(meta.get("namespace") or "default"))
        ranked.append((_rank(rt.kind, rt.namespaced), i, dict(obj)))
    ranked.sort(key=lambda r: (r[0], r[1]))
    ordered = [obj for _, _, obj in ranked]
    present = {o["metadata"]["name"] for o in ordered if o["kind"] == "Namespace"}
    for ns in sorted(namespaces - present):
        ordered.insert(0, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    ordered, adoption_notes = _adopt(ordered, provider)
    notes.extend(adoption_notes)
    created: dict[str, int] = {}
    refused: dict[str, int] = {}
    first_refusal = ""
    nodeclaims: set[str] = set()
    existing_namespaces = {n["metadata"]["name"] for n in server.list("namespaces").items}
    for obj in ordered:
        if obj["kind"] == "Namespace" and obj["metadata"]["name"] in existing_namespaces:
            continue  # default, kube-system...: the simulated cluster has its own
        try:
            server.restore(obj)
        except (ApiError, KeyError, ValueError, TypeError) as e:
            refused[obj["kind"]] = refused.get(obj["kind"], 0) + 1
            if not first_refusal:
                first_refusal = f"{obj['kind']} {obj['metadata'].get('name')}: {e}"
            continue
        created[obj["kind"]] = created.get(obj["kind"], 0) + 1
        if obj["kind"] == "NodeClaim":
            nodeclaims.add(str(obj["metadata"]["name"]))
    if deleting:
        notes.append(f"the snapshot's {deleting} objects being deleted were left out")
    if malformed:
        notes.append(f"{malformed} snapshot items without apiVersion, kind or name were left out")
    if unknown:
        notes.append(
            f"kinds the simulation does not serve were left out: {_listed(unknown)} objects"
        )
    if refused:
        notes.append(
            f"the simulated API server refused {_listed(refused)} objects of the snapshot "
            f"(first: {first_refusal})"
        )
    return Seeded(dict(sorted(created.items())), frozenset(nodeclaims), tuple(notes))


def _adopt(
    objects: Sequence[dict[str, Any]], provider: object | None
) -> tuple[list[dict[str, Any]], list[str]]:
    """The objects with their Nodes and NodeClaims adopted by ``provider``."""
    nodes = [o for o in objects if o["kind"] == "Node"]
    claims = [o for o in objects if o["kind"] == "NodeClaim"]
    if not nodes and not claims:
        return list(objects), []
    if not isinstance(provider, AdoptsInstances):
        name = getattr(provider, "name", type(provider).__name__)
        return list(objects), [
            f"cloud provider {name!r} cannot adopt the snapshot's instances: its NodeClaims "
            "are not the provider's, so they are not priced and cannot be replaced"
        ]
    adoption = provider.adopt_instances(nodes, claims)
    by_kind = {"Node": iter(adoption.nodes), "NodeClaim": iter(adoption.nodeclaims)}
    out = [next(by_kind[o["kind"]]) if o["kind"] in by_kind else o for o in objects]
    notes = []
    if adoption.unknown_instance_types:
        types = {
            k or "(no instance-type label)": n for k, n in adoption.unknown_instance_types.items()
        }
        catalogue = getattr(provider, "name", "provider's")
        notes.append(
            f"{sum(types.values())} nodes have instance types the {catalogue} catalogue does "
            f"not list ({_listed(types)}): they stay, as capacity with no price"
        )
    return out, notes
