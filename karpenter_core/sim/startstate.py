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
  Leases...), are left out and said so; a namespace an object needs is created;
- pods whose controlling owner the snapshot lacks, or whose owner's kind no simulated
  controller runs (ReplicaSets, StatefulSets, Jobs and DaemonSets are; an operator's
  custom kinds are not), are said so: nothing replaces them once evicted.

:func:`load_starting_state` reads the file with the snapshot module's reader.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from attrs import field, frozen

from karpenter_core.cloudprovider.protocol import AdoptsInstances
from karpenter_core.kube.client import ApiError, UnknownResourceError, resource_for
from karpenter_core.runtime.clock import parse_time
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.sim.workloads import SIMULATED_OWNER_KINDS
from karpenter_core.snapshot import Snapshot, SnapshotError, read_snapshot

__all__ = [
    "Seeded",
    "StartingState",
    "StartingStateError",
    "load_starting_state",
    "rank",
    "seed_from_objects",
    "starting_state_of",
]

DEFAULT_START = datetime(2025, 1, 1, tzinfo=UTC)
"""Virtual wall time at the start of a simulation from nothing (fixed, so reports are
repeatable), and of one from a snapshot that has no time to go by."""

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
"""Creation order: namespaces, then what others refer to (NodePools, Nodes, NodeClaims),
owners before what they own (the garbage collector would collect a pod whose ReplicaSet
does not exist yet), pods last; every other kind at 7."""
_OTHER_RANK = 7
_NODE_RANK = _RANK["NodeClaim"]
_MAX_LISTED = 5


def rank(kind: str) -> int:
    """Where objects of ``kind`` come in the creation order (see :data:`_RANK`)."""
    return _RANK.get(kind, _OTHER_RANK)


class StartingStateError(ValueError):
    """The snapshot cannot be read; the message is one line naming the file."""


@frozen
class StartingState:
    """A cluster's objects and when they were read: where a simulation starts."""

    source: str
    taken_at: datetime
    snapshot: Snapshot

    def objects(self) -> Iterator[dict[str, Any]]:
        """The snapshot's objects in creation order (:func:`rank`), decoded one at a time:
        only the simulated API server holds them all."""
        for kind in sorted(self.snapshot.kinds, key=rank):
            yield from self.snapshot.iter_objects(kind)


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
    """Read a snapshot file (:func:`~karpenter_core.snapshot.read_snapshot`: JSON, gzip or
    YAML). The run starts when it was taken; a snapshot that does not say when starts
    at its newest ``creationTimestamp``, else at the simulator's usual start."""
    try:
        snapshot = read_snapshot(path)
    except SnapshotError as e:
        raise StartingStateError(str(e)) from None
    return starting_state_of(snapshot, str(path))


def starting_state_of(snapshot: Snapshot, source: str) -> StartingState:
    """The :class:`StartingState` of a snapshot already read."""
    if snapshot.taken_at:
        try:
            return StartingState(source, parse_time(snapshot.taken_at), snapshot)
        except ValueError as e:
            raise StartingStateError(f"{source}: takenAt: {e}") from None
    newest: datetime | None = None
    for obj in snapshot.iter_objects():
        stamp = (obj.get("metadata") or {}).get("creationTimestamp")
        with contextlib.suppress(ValueError, TypeError):
            t = parse_time(str(stamp)) if stamp else None
            if t is not None and (newest is None or t > newest):
                newest = t
    return StartingState(source, newest or DEFAULT_START, snapshot)


def _listed(counts: Mapping[str, int]) -> str:
    shown = [f"{n} {k}" for k, n in sorted(counts.items())[:_MAX_LISTED]]
    more = len(counts) - _MAX_LISTED
    return ", ".join(shown) + (f" and {more} more kinds" if more > 0 else "")


class _Seeder:
    """Creates objects one by one as they come (see :func:`seed_from_objects`)."""

    def __init__(self, server: InMemoryApiServer, provider: object | None) -> None:
        self.server = server
        self.provider = provider
        self.namespaces = {n["metadata"]["name"] for n in server.list("namespaces").items}
        self.held: list[dict[str, Any]] = []  # Nodes and NodeClaims, adopted together
        self.adopted = False
        self.created: dict[str, int] = {}
        self.refused: dict[str, int] = {}
        self.first_refusal = ""
        self.unknown: dict[str, int] = {}
        self.deleting = 0
        self.malformed = 0
        self.nodeclaims: set[str] = set()
        self.notes: list[str] = []
        self.uids: set[str] = set()
        # owner kind -> pods whose owner is not there, or that no simulated controller runs
        self.orphans: dict[str, int] = {}

    def add(self, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata")
        kind, api_version = obj.get("kind"), obj.get("apiVersion")
        if not isinstance(meta, Mapping) or not meta.get("name") or not kind or not api_version:
            self.malformed += 1
            return
        if meta.get("deletionTimestamp"):
            self.deleting += 1
            return
        try:
            rt = resource_for((str(api_version), str(kind)))
        except UnknownResourceError:
            self.unknown[str(kind)] = self.unknown.get(str(kind), 0) + 1
            return
        if rt.kind in ("Node", "NodeClaim"):
            self.held.append(dict(obj))
            return
        if rank(rt.kind) > _NODE_RANK:
            self.adopt()
        if rt.kind == "Namespace":
            if meta["name"] in self.namespaces:
                return  # default, kube-system...: the simulated cluster has its own
            self.namespaces.add(str(meta["name"]))
        elif rt.namespaced:
            self._namespace(str(meta.get("namespace") or "default"))
        self._restore(obj)

    def _namespace(self, name: str) -> None:
        if name not in self.namespaces:
            self.namespaces.add(name)
            self._restore({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    def _restore(self, obj: Mapping[str, Any]) -> None:
        kind = str(obj["kind"])
        try:
            self.server.restore(obj)
        except (ApiError, KeyError, ValueError, TypeError) as e:
            self.refused[kind] = self.refused.get(kind, 0) + 1
            if not self.first_refusal:
                self.first_refusal = f"{kind} {obj['metadata'].get('name')}: {e}"
            return
        self.created[kind] = self.created.get(kind, 0) + 1
        self.uids.add(str(obj["metadata"].get("uid") or ""))
        if kind == "Pod":
            for ref in obj["metadata"].get("ownerReferences") or ():
                if (
                    isinstance(ref, Mapping)
                    and ref.get("controller")
                    and ref.get("kind") != "Node"  # a static pod's mirror
                    and (
                        str(ref.get("uid") or "") not in self.uids
                        or ref.get("kind") not in SIMULATED_OWNER_KINDS
                    )
                ):
                    owner = str(ref.get("kind"))
                    self.orphans[owner] = self.orphans.get(owner, 0) + 1
        if kind == "NodeClaim":
            self.nodeclaims.add(str(obj["metadata"]["name"]))

    def adopt(self) -> None:
        """Create the held Nodes and NodeClaims, adopted by the provider (once)."""
        if self.adopted:
            return
        self.adopted = True
        objects, notes = _adopt(self.held, self.provider)
        self.notes.extend(notes)
        for obj in sorted(objects, key=lambda o: rank(o["kind"])):
            self._restore(obj)
        self.held = []

    def finish(self) -> Seeded:
        self.adopt()
        notes = list(self.notes)
        if self.deleting:
            notes.append(f"the snapshot's {self.deleting} objects being deleted were left out")
        if self.malformed:
            notes.append(
                f"{self.malformed} snapshot items without apiVersion, kind or name were left out"
            )
        if self.unknown:
            notes.append(
                f"kinds the simulation does not serve were left out: {_listed(self.unknown)} objects"
            )
        if self.orphans:
            notes.append(
                "pods whose owner the snapshot does not hold, or is of a kind the simulation "
                f"runs no controller for ({_listed(self.orphans)} pods): nothing replaces one "
                "that is evicted or deleted"
            )
        if self.refused:
            notes.append(
                f"the simulated API server refused {_listed(self.refused)} objects of the "
                f"snapshot (first: {self.first_refusal})"
            )
        return Seeded(dict(sorted(self.created.items())), frozenset(self.nodeclaims), tuple(notes))


def seed_from_objects(
    server: InMemoryApiServer,
    objects: Iterable[Mapping[str, Any]],
    provider: object | None = None,
    *,
    in_order: bool = False,
) -> Seeded:
    """Create ``objects`` (as a snapshot holds them) in ``server``; see the module
    docstring for what is kept, adopted and left out. They are created in
    :func:`rank` order; ``in_order``: they already come in it, and are created as they
    come (a snapshot's 150,000 pods are never all decoded at once)."""
    seeder = _Seeder(server, provider)
    if not in_order:
        objects = sorted(objects, key=lambda o: rank(str(o.get("kind"))))
    for obj in objects:
        seeder.add(obj)
    return seeder.finish()


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
