"""Pools: the in-cluster devices a NodeClaim can reach (``designs/dra-scheduling.md``,
"Pool Management").

Slices are grouped by ``(driver, pool)``; only the newest generation counts. Completeness and
validity are properties of the whole pool (every node's slices), while the devices a pool
offers are those of the slices the NodeClaim can reach: ``allNodes``, ``nodeName`` equal to
the NodeClaim's node (an in-flight NodeClaim has none), or a node selector compatible with
the NodeClaim's requirements. A pool with fewer slices than ``resourceSliceCount`` is
*incomplete*; one that repeats a device name is *invalid* and offers nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from attrs import frozen

from karpenter_core.apis.resource import ResourceSlice
from karpenter_core.scheduling.dynamicresources.devices import (
    DeviceID,
    DeviceWithID,
    PoolKey,
    node_selector_requirements,
    term_requirements,
)
from karpenter_core.scheduling.requirements import (
    ALLOW_UNDEFINED_WELL_KNOWN_LABELS,
    Requirements,
)


@frozen(eq=False)
class Pool:
    """The reachable part of one pool (``slices``/``devices``) and its global state."""

    key: PoolKey
    slices: tuple[ResourceSlice, ...] = ()
    devices: tuple[DeviceWithID, ...] = ()
    incomplete: bool = False
    invalid: bool = False


def slice_reachable(s: ResourceSlice, requirements: Requirements, node_name: str) -> bool:
    """Whether a NodeClaim with ``requirements`` (on node ``node_name``, "" in flight) can
    use the slice's devices. Slices selecting nodes per device reach none here."""
    spec = s.spec
    if spec.all_nodes:
        return True
    if spec.node_name:
        return node_name != "" and spec.node_name == node_name
    if spec.node_selector is not None:
        for term in spec.node_selector.node_selector_terms:
            term_reqs = Requirements(*term_requirements(term.match_expressions))
            if requirements.is_compatible(term_reqs, ALLOW_UNDEFINED_WELL_KNOWN_LABELS):
                return True
    return False


def _device(key: PoolKey, s: ResourceSlice, topology: Requirements | None) -> list[DeviceWithID]:
    return [
        DeviceWithID(d, DeviceID(key.driver, key.pool, d.name), topology) for d in s.spec.devices
    ]


def _topology(s: ResourceSlice) -> Requirements | None:
    if s.spec.all_nodes:
        return None
    return node_selector_requirements(s.spec.node_selector)


def gather_pools(
    slices: Sequence[ResourceSlice], requirements: Requirements, node_name: str = ""
) -> list[Pool]:
    """The pools ``slices`` form, restricted to what the NodeClaim can reach.

    ``slices`` are the cluster's slices already stripped of those of deleting, disrupted and
    not-yet-initialized nodes (the caller's job). A pool none of whose slices is reachable is
    left out, unless it is invalid (All-mode requests must see it to fail).
    """
    order: list[PoolKey] = []
    newest: dict[PoolKey, tuple[int, int, list[tuple[ResourceSlice, bool]]]] = {}
    for s in slices:
        key = PoolKey(s.spec.driver, s.spec.pool.name)
        reachable = slice_reachable(s, requirements, node_name)
        gen = s.spec.pool.generation
        seen = newest.get(key)
        if seen is None:
            order.append(key)
            newest[key] = (gen, s.spec.pool.resource_slice_count, [(s, reachable)])
        elif gen > seen[0]:
            newest[key] = (gen, s.spec.pool.resource_slice_count, [(s, reachable)])
        elif gen == seen[0]:
            seen[2].append((s, reachable))
    pools: list[Pool] = []
    for key in order:
        _, count, entries = newest[key]
        incomplete = len(entries) != count
        invalid = False
        names: set[str] = set()
        kept: list[ResourceSlice] = []
        devices: list[DeviceWithID] = []
        for s, reachable in entries:
            if not reachable:
                continue
            kept.append(s)
            for d in _device(key, s, _topology(s)):
                invalid = invalid or d.device.name in names
                names.add(d.device.name)
                devices.append(d)
        if invalid:
            pools.append(Pool(key, incomplete=incomplete, invalid=True))
        elif kept:
            pools.append(Pool(key, tuple(kept), tuple(devices), incomplete=incomplete))
    return pools


DevicesOf = Callable[[PoolKey, ResourceSlice], Sequence[DeviceWithID]]
"""A slice's devices with their identities (a :class:`PoolIndex` hands out the same objects
every time, so per-device caches keep working across searches)."""


def _fresh_devices(key: PoolKey, s: ResourceSlice) -> list[DeviceWithID]:
    return _device(key, s, _topology(s))


def filter_pools(
    pools: Sequence[Pool],
    requirements: Requirements,
    node_name: str = "",
    devices_of: DevicesOf | None = None,
) -> list[Pool]:
    """``pools`` narrowed to the slices still reachable under tighter ``requirements``; a pool
    left with none is dropped (invalid pools are kept)."""
    of = devices_of or _fresh_devices
    out: list[Pool] = []
    for pool in pools:
        if pool.invalid:
            out.append(pool)
            continue
        kept = tuple(s for s in pool.slices if slice_reachable(s, requirements, node_name))
        if not kept:
            continue
        if len(kept) == len(pool.slices):
            out.append(pool)
            continue
        devices = tuple(d for s in kept for d in of(pool.key, s))
        out.append(Pool(pool.key, kept, devices, incomplete=pool.incomplete))
    return out


class PoolIndex:
    """:func:`gather_pools` over a fixed set of slices, for many NodeClaims.

    Generations and completeness are settled once; each slice's devices are built once (the
    same :class:`DeviceWithID` objects every time); slices pinned to a node are looked up by
    its name, so an existing node's search does not scan every other node's slices. Gives
    exactly what :func:`gather_pools` gives for the same slices.
    """

    def __init__(self, slices: Sequence[ResourceSlice]) -> None:
        order: dict[PoolKey, int] = {}
        newest: dict[PoolKey, tuple[int, int, list[tuple[int, ResourceSlice]]]] = {}
        for i, s in enumerate(slices):
            key = PoolKey(s.spec.driver, s.spec.pool.name)
            gen = s.spec.pool.generation
            seen = newest.get(key)
            if seen is None:
                order[key] = len(order)
                newest[key] = (gen, s.spec.pool.resource_slice_count, [(i, s)])
            elif gen > seen[0]:
                newest[key] = (gen, s.spec.pool.resource_slice_count, [(i, s)])
            elif gen == seen[0]:
                seen[2].append((i, s))
        self._order = order
        self._incomplete: dict[PoolKey, bool] = {}
        self._devices: dict[int, tuple[ResourceSlice, list[DeviceWithID]]] = {}
        # (position, pool, slice): pinned to a node, for every node, or by node selector
        self._pinned: dict[str, list[tuple[int, PoolKey, ResourceSlice]]] = {}
        self._shared: list[tuple[int, PoolKey, ResourceSlice]] = []
        for key, (_, count, entries) in newest.items():
            self._incomplete[key] = len(entries) != count
            for i, s in entries:
                self._devices[id(s)] = (s, _device(key, s, _topology(s)))
                spec = s.spec
                if spec.all_nodes or not spec.node_name:
                    self._shared.append((i, key, s))
                else:
                    self._pinned.setdefault(spec.node_name, []).append((i, key, s))

    def devices_of(self, key: PoolKey, s: ResourceSlice) -> Sequence[DeviceWithID]:
        """The slice's devices: the indexed objects, or new ones for a slice not indexed."""
        hit = self._devices.get(id(s))
        if hit is not None and hit[0] is s:
            return hit[1]
        return _device(key, s, _topology(s))

    def gather(self, requirements: Requirements, node_name: str = "") -> list[Pool]:
        """The pools a NodeClaim with ``requirements`` (on ``node_name``) reaches."""
        reachable = [e for e in self._shared if slice_reachable(e[2], requirements, node_name)]
        if node_name:
            reachable.extend(self._pinned.get(node_name, ()))
            reachable.sort(key=lambda e: e[0])
        by_pool: dict[PoolKey, list[ResourceSlice]] = {}
        for _, key, s in reachable:
            by_pool.setdefault(key, []).append(s)
        pools: list[Pool] = []
        for key in sorted(by_pool, key=self._order.__getitem__):
            kept = by_pool[key]
            incomplete = self._incomplete[key]
            names: set[str] = set()
            devices: list[DeviceWithID] = []
            invalid = False
            for s in kept:
                for d in self._devices[id(s)][1]:
                    invalid = invalid or d.device.name in names
                    names.add(d.device.name)
                    devices.append(d)
            if invalid:
                pools.append(Pool(key, incomplete=incomplete, invalid=True))
            else:
                pools.append(Pool(key, tuple(kept), tuple(devices), incomplete=incomplete))
        return pools


__all__ = ["DevicesOf", "Pool", "PoolIndex", "filter_pools", "gather_pools", "slice_reachable"]
