"""The DRA allocator: can this NodeClaim satisfy a pod's ResourceClaims, and on which of its
instance types? (``designs/dra-scheduling.md``.)

One :class:`Allocator` serves one scheduling pass. :meth:`Allocator.allocate` only reads
its state and returns an :class:`AllocationResult` (or an :class:`AllocationError`); the
scheduler commits the result once it places the pod (:meth:`Allocation.commit`), and
releases the reservations of instance types it later prunes
(:meth:`Allocator.release_instance_types`).

For each claim of the pod:

* allocated in the cluster (``status.allocation``): its node selector narrows the NodeClaim;
  unless every consumer in ``reservedFor`` is a deleting pod, in which case its devices were
  freed (:func:`allocated_devices`) and it is allocated again like a new claim;
* allocated earlier in this pass: with template devices it is bound to that NodeClaim; with
  in-cluster devices only, its requirements narrow this one;
* otherwise it goes to the search: for each candidate instance type, a depth-first search
  over claims, requests and device slots tries in-cluster devices before the instance type's
  template devices, checking availability, selectors, constraints and topology, and
  backtracks on failure. Instance types that fail are pruned; the topology the survivors
  needed accumulates, so one NodeClaim can represent them all. The search is bounded by a
  step budget and a timeout.

Features Karpenter does not simulate (admin access, consumable capacity, shared counters of
partitionable devices, device taints, distinctAttribute) are errors naming the claim and
request, never silently ignored.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, NamedTuple

from attrs import define, field, frozen

from karpenter_core.apis.resource import (
    ALLOCATION_RESULTS_MAX_SIZE,
    Device,
    DeviceClass,
    NodeSelector,
    ResourceClaim,
    ResourceSlice,
)
from karpenter_core.scheduling.dynamicresources.allocationtracker import AllocationTracker
from karpenter_core.scheduling.dynamicresources.cel import CELError, CompiledSelector, evaluate
from karpenter_core.scheduling.dynamicresources.constraint import (
    AttributeBindings,
    BindingContext,
)
from karpenter_core.scheduling.dynamicresources.devices import (
    DeviceID,
    DeviceWithID,
    NodeClaimView,
    RequestName,
    ResourceSliceTemplate,
    node_selector_requirements,
)
from karpenter_core.scheduling.dynamicresources.pool import Pool, PoolIndex, filter_pools
from karpenter_core.scheduling.dynamicresources.request import (
    AllocationError,
    ClaimData,
    ClaimKey,
    RequestData,
    unsupported,
    validate_claim_request,
)
from karpenter_core.scheduling.requirements import (
    ALLOW_UNDEFINED_WELL_KNOWN_LABELS,
    Requirements,
)

DEFAULT_TIMEOUT = 5.0
"""Seconds one :meth:`Allocator.allocate` may search (upstream's ``allocateTimeout``)."""
DEFAULT_MAX_STEPS = 1_000_000
"""Devices one :meth:`Allocator.allocate` may try before giving up."""


class DeviceAllocation(NamedTuple):
    """One device chosen for a claim's request."""

    device: DeviceID
    request: RequestName


@define
class ResourceClaimAllocationMetadata:
    """A claim allocated in this pass: for which NodeClaim, with which devices per instance
    type, and the requirements it puts on any node that uses it.

    ``total_requirements`` intersects every instance type's ``contributed_requirements``:
    which type the NodeClaim becomes is unknown, so a pod on another NodeClaim that shares
    the claim must be compatible with all of them.
    """

    nodeclaim: str
    contributed_requirements: dict[str, Requirements] = field(factory=dict)
    total_requirements: Requirements = field(factory=Requirements)
    used_template_devices: bool = False
    devices: dict[str, list[DeviceAllocation]] = field(factory=dict)

    def recompute(self) -> None:
        total = Requirements()
        for reqs in self.contributed_requirements.values():
            total.add(*reqs.values())
        self.total_requirements = total


class Allocation:
    """A successful allocation, not yet applied: :meth:`commit` reserves its devices."""

    def __init__(
        self,
        allocator: Allocator,
        nodeclaim: str,
        devices_by_instance_type: dict[str, list[DeviceID]],
        claims: dict[ClaimKey, ResourceClaimAllocationMetadata],
        pools: list[Pool],
    ) -> None:
        self._allocator = allocator
        self.nodeclaim = nodeclaim
        self.devices_by_instance_type = devices_by_instance_type
        self.claims = claims
        self._pools = pools
        self._committed = False

    def commit(self) -> None:
        """Reserve the devices for the NodeClaim (per instance type), remember the claims it
        allocated and the pools the NodeClaim can still reach. Commit once."""
        if self._committed:
            raise RuntimeError("allocation committed twice")
        self._committed = True
        a = self._allocator
        a.tracker.commit(self.nodeclaim, self.devices_by_instance_type)
        a.pool_cache[self.nodeclaim] = self._pools
        for key, meta in self.claims.items():
            if key in a.claim_metadata:
                raise RuntimeError(f"claim {key[0]}/{key[1]} is already allocated")
            a.claim_metadata[key] = meta
            a.claims_by_nodeclaim.setdefault(self.nodeclaim, []).append(meta)


@frozen
class AllocationResult:
    """The instance types that can satisfy the claims, the requirements the claims put on the
    NodeClaim (merge them in), and the allocation to commit (None: nothing to reserve)."""

    instance_types: tuple[str, ...]
    requirements: Requirements
    allocation: Allocation | None = None


def claim_reserved_only_by(claim: ResourceClaim, pod_uids: AbstractSet[str]) -> bool:
    """Every consumer of the claim is a pod in ``pod_uids`` (and there is one at least)."""
    reserved = claim.reserved_for
    return bool(reserved) and all(r.is_pod and r.uid in pod_uids for r in reserved)


def allocated_devices(
    claims: Iterable[ResourceClaim], deleting_pod_uids: AbstractSet[str] = frozenset()
) -> set[DeviceID]:
    """The devices allocated in the cluster, less those of claims held only by deleting pods
    (pods on deleting nodes, disruption candidates, pods being deleted): those claims move."""
    out: set[DeviceID] = set()
    for claim in claims:
        allocation = claim.allocation
        if allocation is None or claim_reserved_only_by(claim, deleting_pod_uids):
            continue
        for r in allocation.devices.results:
            out.add(DeviceID(r.driver, r.pool, r.device))
    return out


NODE_NAME_FIELD = "metadata.name"


def allocated_nodes(selector: NodeSelector | None) -> frozenset[str] | None:
    """The nodes an allocation's node selector names by ``matchFields`` on
    ``metadata.name`` (how kube-scheduler pins an allocation of node-local devices), or None
    when some term does not pin it to named nodes."""
    if selector is None or not selector.node_selector_terms:
        return None
    names: set[str] = set()
    for term in selector.node_selector_terms:
        pinned = [f for f in term.match_fields if f.key == NODE_NAME_FIELD and f.operator == "In"]
        if not pinned:
            return None
        allowed = set(pinned[0].values)
        for f in pinned[1:]:
            allowed &= set(f.values)
        names |= allowed
    return frozenset(names)


class Allocator:
    """DRA device allocation for one scheduling pass.

    ``in_cluster_slices`` exclude the slices of deleting, disrupted and not yet initialized
    nodes (the latter are represented by their templates); ``allocated`` are the devices
    already allocated in the cluster (:func:`allocated_devices`); ``device_classes`` by name.
    """

    def __init__(
        self,
        in_cluster_slices: Sequence[ResourceSlice] = (),
        allocated: Iterable[DeviceID] = (),
        attribute_bindings: AttributeBindings | None = None,
        device_classes: Mapping[str, DeviceClass] | None = None,
        deleting_pod_uids: AbstractSet[str] = frozenset(),
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_steps: int = DEFAULT_MAX_STEPS,
        clock: Callable[[], float] = time.monotonic,
        reference: bool = False,
    ) -> None:
        self.in_cluster_slices = tuple(in_cluster_slices)
        self.tracker = AllocationTracker(allocated)
        self.attribute_bindings = attribute_bindings or AttributeBindings()
        self.device_classes: Mapping[str, DeviceClass] = dict(device_classes or {})
        self.deleting_pod_uids = frozenset(deleting_pod_uids)
        self.timeout = timeout
        self.max_steps = max_steps
        self.clock = clock
        self.pool_cache: dict[str, list[Pool]] = {}
        self.claim_metadata: dict[ClaimKey, ResourceClaimAllocationMetadata] = {}
        self.claims_by_nodeclaim: dict[str, list[ResourceClaimAllocationMetadata]] = {}
        self.reference = reference
        """Search every instance type on its own (tests compare the shortcuts against it)."""
        self.pool_index = PoolIndex(self.in_cluster_slices)
        # A pass asks the same questions many times (every NodeClaim a pod is tried on):
        # template devices are built once per template, and a selector is evaluated once
        # per device (the devices are the same objects for the whole pass).
        self._template_devices: dict[int, tuple[ResourceSliceTemplate, list[DeviceWithID]]] = {}
        self._evaluated: dict[tuple[CompiledSelector, int, str], bool | CELError] = {}
        self._shapes: dict[
            int,
            tuple[list[DeviceWithID], tuple[tuple[Any, ...], Mapping[DeviceID, int]] | None],
        ] = {}
        self._contents: dict[int, tuple[Device, str]] = {}
        self.mapped: dict[Any, Any] = {}
        """Choices mapped onto alike instance types (see ``_Outcome.on``)."""
        self._bound_types = {
            (nodepool, it)
            for by_pool in self.attribute_bindings.graph.values()
            for nodepool, by_type in by_pool.items()
            for it in by_type
        }

    def matches(
        self, device: DeviceWithID, selectors: Sequence[CompiledSelector]
    ) -> bool | CELError:
        """Whether the device passes every selector (AND); the first evaluation error is
        returned as it is. Answers are remembered for the pass."""
        for selector in selectors:
            key = (selector, id(device.device), device.id.driver)
            matched = self._evaluated.get(key)
            if matched is None:
                matched = evaluate(selector, device.id.driver, device.device)
                self._evaluated[key] = matched
            if matched is not True:
                return matched
        return True

    def template_devices(self, template: ResourceSliceTemplate) -> list[DeviceWithID]:
        """The template's devices with their identities (the same objects for the pass)."""
        hit = self._template_devices.get(id(template))
        if hit is not None and hit[0] is template:
            return hit[1]
        devices = [
            DeviceWithID(d, DeviceID(template.driver, template.pool, d.name, True))
            for d in template.devices
        ]
        self._template_devices[id(template)] = (template, devices)
        return devices

    def template_shape(
        self, devices: list[DeviceWithID]
    ) -> tuple[tuple[Any, ...], Mapping[DeviceID, int]] | None:
        """What an instance type's template devices look like to a search (driver and
        content of each, in order: pool names aside) and each device's position; None when
        two share an identity (their positions would be ambiguous)."""
        hit = self._shapes.get(id(devices))
        if hit is not None and hit[0] is devices:
            return hit[1]
        positions = {d.id: i for i, d in enumerate(devices)}
        shape: tuple[tuple[Any, ...], Mapping[DeviceID, int]] | None = None
        if len(positions) == len(devices):
            key = tuple((d.id.driver, self._content(d.device)) for d in devices)
            shape = (key, positions)
        self._shapes[id(devices)] = (devices, shape)
        return shape

    def _content(self, device: Device) -> str:
        hit = self._contents.get(id(device))
        if hit is not None and hit[0] is device:
            return hit[1]
        text = json.dumps(device.to_dict(), sort_keys=True, default=str)
        self._contents[id(device)] = (device, text)
        return text

    def has_any_bindings(self) -> bool:
        """The cloud provider declared attribute bindings for some instance type."""
        return bool(self._bound_types)

    def has_bindings(self, nodepool: str, instance_type: str) -> bool:
        """The cloud provider declared attribute bindings for this instance type here."""
        return (nodepool, instance_type) in self._bound_types

    def claim_allocation(self, key: ClaimKey) -> ResourceClaimAllocationMetadata | None:
        """What this pass allocated for the claim ``(namespace, name)``, or None."""
        return self.claim_metadata.get(key)

    def release_instance_types(self, nodeclaim: str, instance_types: Iterable[str]) -> None:
        """The scheduler pruned these instance types from the NodeClaim: free what they
        reserved, and relax the requirements of claims they alone narrowed."""
        pruned = list(instance_types)
        self.tracker.release_instance_types(nodeclaim, pruned)
        for meta in self.claims_by_nodeclaim.get(nodeclaim, ()):
            changed = False
            for it in pruned:
                if meta.contributed_requirements.pop(it, None):
                    changed = True
                meta.devices.pop(it, None)
            if changed:
                meta.recompute()

    # --- classification ---------------------------------------------------------------------

    def classify_claims(
        self, nodeclaim: NodeClaimView, claims: Sequence[ResourceClaim]
    ) -> tuple[list[ResourceClaim], Requirements, Requirements] | AllocationError:
        """Split ``claims`` into those to search for and those already allocated.

        Returns the unallocated claims, the NodeClaim's requirements narrowed by the
        allocated ones, and what the allocated ones alone require.
        """
        effective = nodeclaim.requirements.copy()
        added = Requirements()
        pending: list[ResourceClaim] = []
        for claim in claims:
            allocation = claim.allocation
            if allocation is not None and claim_reserved_only_by(claim, self.deleting_pod_uids):
                pending.append(claim)
                continue
            if allocation is not None:
                nodes = allocated_nodes(allocation.node_selector)
                if nodes is not None and nodeclaim.node_name not in nodes:
                    where = ", ".join(sorted(nodes)) or "no node"
                    return AllocationError(
                        f'ResourceClaim "{claim.namespace}/{claim.name}": allocated on node '
                        f"{where}, which this "
                        + ("node is not" if nodeclaim.node_name else "new NodeClaim cannot be"),
                        claim=claim.name,
                    )
                reqs = node_selector_requirements(allocation.node_selector)
                if reqs is not None:
                    if not effective.is_compatible(reqs, ALLOW_UNDEFINED_WELL_KNOWN_LABELS):
                        return AllocationError(
                            f'ResourceClaim "{claim.namespace}/{claim.name}": in-cluster '
                            "allocation topology is incompatible with NodeClaim requirements",
                            claim=claim.name,
                        )
                    effective.add(*reqs.values())
                    added.add(*reqs.values())
                continue
            meta = self.claim_metadata.get(claim.key)
            if meta is not None:
                if meta.used_template_devices:
                    if meta.nodeclaim != nodeclaim.id:
                        return AllocationError(
                            f'ResourceClaim "{claim.namespace}/{claim.name}": claim is bound to '
                            f"a different in-flight NodeClaim ({meta.nodeclaim})",
                            claim=claim.name,
                        )
                elif len(meta.total_requirements):
                    total = meta.total_requirements
                    if not effective.is_compatible(total, ALLOW_UNDEFINED_WELL_KNOWN_LABELS):
                        return AllocationError(
                            f'ResourceClaim "{claim.namespace}/{claim.name}": in-memory '
                            "allocation topology is incompatible with NodeClaim requirements",
                            claim=claim.name,
                        )
                    effective.add(*total.values())
                    added.add(*total.values())
                continue
            pending.append(claim)
        return pending, effective, added

    # --- allocation ---------------------------------------------------------------------------

    def allocate(
        self, nodeclaim: NodeClaimView, claims: Sequence[ResourceClaim]
    ) -> AllocationResult | AllocationError:
        """Whether ``nodeclaim`` can satisfy ``claims`` (all of one pod's, in any state), and
        on which of its instance types. Reads only; commit the result to apply it."""
        if not claims:
            return AllocationResult(tuple(nodeclaim.instance_types), Requirements())
        classified = self.classify_claims(nodeclaim, claims)
        if isinstance(classified, AllocationError):
            return classified
        pending, effective, added = classified
        if not pending:
            return AllocationResult(tuple(nodeclaim.instance_types), added)

        cached = self.pool_cache.get(nodeclaim.id)
        if cached is not None:
            pools = filter_pools(cached, effective, nodeclaim.node_name, self.pool_index.devices_of)
        else:
            pools = self.pool_index.gather(effective, nodeclaim.node_name)

        templates: dict[str, list[DeviceWithID]] = {}
        for it, slices in nodeclaim.resource_slices.items():
            if len(slices) == 1:
                templates[it] = self.template_devices(slices[0])
                continue
            devices = templates.setdefault(it, [])
            for s in slices:
                devices.extend(self.template_devices(s))

        data: list[ClaimData] = []
        for claim in pending:
            cd = validate_claim_request(claim, self.device_classes, pools, templates, self.matches)
            if isinstance(cd, AllocationError):
                return cd
            data.append(cd)

        search = _Search(self, nodeclaim, pools, templates, data, effective)
        return search.run(added)


class _Abort(Exception):
    """Unwinds the search: its budget ran out, or it met a device it cannot simulate."""

    def __init__(self, error: AllocationError) -> None:
        super().__init__(str(error))
        self.error = error


@define
class _Chosen:
    claim: int
    device: DeviceWithID
    request: RequestName


class _Outcome:
    """What one search chose, ready to be recorded for every instance type it answers for
    (the lists are shared, never changed after)."""

    __slots__ = (
        "chosen",
        "ids",
        "pattern",
        "per_claim",
        "positions",
        "template_claims",
        "templates",
        "topology",
        "topology_per_claim",
    )

    def __init__(self, chosen: list[_Chosen], claims: int) -> None:
        self.chosen = chosen
        self.ids = [c.device.id for c in chosen]
        self.per_claim: list[list[DeviceAllocation]] = [[] for _ in range(claims)]
        self.template_claims: set[int] = set()
        self.topology: Requirements | None = None
        self.topology_per_claim: dict[int, Requirements] = {}
        self.positions: Mapping[DeviceID, int] = {}
        self.pattern: tuple[tuple[int, int | DeviceID, RequestName], ...] | None = None
        for c in chosen:
            self.per_claim[c.claim].append(DeviceAllocation(c.device.id, c.request))
            if c.device.id.template:
                self.template_claims.add(c.claim)
            topo = c.device.topology
            if topo is not None:
                if self.topology is None:
                    self.topology = Requirements()
                self.topology.add(*topo.values())
                self.topology_per_claim.setdefault(c.claim, Requirements()).add(*topo.values())
        self.templates = bool(self.template_claims)

    def on(self, devices: Sequence[DeviceWithID], memo: dict[Any, Any]) -> _Outcome:
        """The same choice on another instance type with alike template devices (by
        position): the in-cluster devices are the same, the template ones its own.

        The same choice on the same type recurs across a pass (every pod asking for alike
        devices), so answers are remembered in ``memo``: their lists are shared, which is
        safe as nothing changes them once recorded."""
        pattern = self.pattern
        if pattern is None:
            positions = self.positions
            pattern = self.pattern = tuple(
                (
                    c.claim,
                    positions[c.device.id] if c.device.id.template else c.device.id,
                    c.request,
                )
                for c in self.chosen
            )
        key = (id(devices), len(self.per_claim), pattern)
        hit = memo.get(key)
        if hit is not None and hit[0] is devices:
            out: _Outcome = hit[1]
            return out
        out = _Outcome.__new__(_Outcome)
        ids: list[DeviceID] = []
        per_claim: list[list[DeviceAllocation]] = [[] for _ in self.per_claim]
        for claim, where, request in pattern:
            device_id = devices[where].id if isinstance(where, int) else where
            ids.append(device_id)
            per_claim[claim].append(DeviceAllocation(device_id, request))
        out.chosen = self.chosen  # the first type's: only ever mapped from, never recorded
        out.ids = ids
        out.per_claim = per_claim
        out.template_claims = self.template_claims
        out.templates = self.templates
        out.topology = self.topology
        out.topology_per_claim = self.topology_per_claim
        out.positions = self.positions
        out.pattern = pattern
        memo[key] = (devices, out)
        return out


class _Search:
    """The mutable state of one :meth:`Allocator.allocate` search."""

    def __init__(
        self,
        allocator: Allocator,
        nodeclaim: NodeClaimView,
        pools: list[Pool],
        templates: dict[str, list[DeviceWithID]],
        claims: list[ClaimData],
        requirements: Requirements,
    ) -> None:
        self.a = allocator
        self.nodeclaim = nodeclaim
        self.nodeclaim_id = nodeclaim.id
        self.node_name = nodeclaim.node_name
        self.initial_pools = pools
        self.pools = pools
        self.templates = templates
        self.claims = claims
        self.requirements = requirements
        self.instance_type = ""
        self.chosen: list[_Chosen] = []
        self.taken: set[DeviceID] = set()
        self.match_cache: dict[tuple[int, str, int, int, int], bool] = {}
        self.cel_error: tuple[ClaimData, RequestData, CELError] | None = None
        # The furthest the search got, (claim, request, devices placed for it), and that
        # request: what to blame when every instance type fails.
        self.frontier: tuple[int, int, int] = (-1, -1, -1)
        self.frontier_request: tuple[ClaimData, RequestData, int] | None = None
        self.steps = 0
        self.deadline = allocator.clock() + allocator.timeout

    # The result ------------------------------------------------------------------------------

    def run(self, added: Requirements) -> AllocationResult | AllocationError:
        survivors: list[str] = []
        devices_by_it: dict[str, list[DeviceID]] = {}
        metas = [ResourceClaimAllocationMetadata(self.nodeclaim_id) for _ in self.claims]
        # Instance types whose searches cannot differ get one search: those without template
        # devices, and those whose template devices are alike (same drivers and devices, pool
        # names aside: selectors and constraints never see them), when neither has attribute
        # bindings and this NodeClaim reserved the same devices (by position) on each, under
        # the same requirements. The others' choices are the first one's, device for device.
        outcomes: dict[tuple[Any, ...], _Outcome | None] = {}
        nodepool = self.nodeclaim.nodepool
        tracker = self.a.tracker
        reserving = tracker.has_reservations(self.nodeclaim_id)
        bindings = self.a.has_any_bindings()
        empty: frozenset[DeviceID] = frozenset()
        instance_types: Sequence[str] = self.nodeclaim.instance_types
        shortcuts = not self.a.reference
        if (
            shortcuts
            and not reserving
            and not bindings
            and len(instance_types) > len(self.templates)
        ):
            # The instance types without template devices all get the same answer. When it
            # is "no" (requirements the later types add only narrow it further), they are
            # left out at once instead of one by one.
            plain = next((it for it in instance_types if it not in self.templates), None)
            if plain is not None:
                before = self.requirements
                searched = self.search(plain)
                if isinstance(searched, AllocationError):
                    return searched
                # A success may have narrowed the requirements: the instance types are
                # searched in order below, as if this one had not been asked.
                self.requirements = before
                if searched is None:
                    instance_types = [it for it in instance_types if it in self.templates]
        fast = not reserving and not bindings
        templates = self.templates
        template_shape = self.a.template_shape
        shapes = self.a._shapes
        n_claims = len(metas)
        single = n_claims == 1
        for it in instance_types:
            group: tuple[Any, ...] | None = None
            devices = templates.get(it)
            shape: tuple[tuple[Any, ...], Mapping[DeviceID, int]] | None = None
            if not shortcuts:
                pass
            elif fast:
                # Nothing reserved, no bindings: alike devices under the same requirements.
                if devices is None:
                    group = (id(self.requirements),)
                else:
                    known = shapes.get(id(devices))
                    shape = (
                        known[1]
                        if known is not None and known[0] is devices
                        else template_shape(devices)
                    )
                    if shape is not None:
                        group = (id(self.requirements), shape[0])
            elif not bindings or not self.a.has_bindings(nodepool, it):
                reserved = tracker.cluster_reservations(self.nodeclaim_id, it)
                cluster = frozenset(reserved) if reserved else empty
                if devices is None:
                    group = (id(self.requirements), cluster)
                else:
                    shape = self.a.template_shape(devices)
                    if shape is not None:
                        held = tracker.template_reservations(self.nodeclaim_id, it)
                        where = shape[1]
                        positions = (
                            frozenset(where[d] for d in held if d in where) if held else empty
                        )
                        group = (id(self.requirements), cluster, shape[0], positions)
            outcome: _Outcome | None
            if group is not None and group in outcomes:
                outcome = outcomes[group]
                if outcome is not None and outcome.templates and devices is not None:
                    assert shape is not None
                    outcome = outcome.on(devices, self.a.mapped)
            else:
                searched = self.search(it)
                if isinstance(searched, AllocationError):
                    return searched
                outcome = _Outcome(searched, n_claims) if searched is not None else None
                if group is not None:
                    if outcome is not None and shape is not None:
                        outcome.positions = shape[1]
                    outcomes[group] = outcome
            if outcome is None:
                continue
            survivors.append(it)
            devices_by_it[it] = outcome.ids
            if single:
                if outcome.ids:
                    metas[0].devices[it] = outcome.per_claim[0]
            else:
                for meta, allocations in zip(metas, outcome.per_claim, strict=True):
                    if allocations:
                        meta.devices[it] = allocations
            if outcome.templates:
                for ci in outcome.template_claims:
                    metas[ci].used_template_devices = True
            if outcome.topology is not None:
                for ci, reqs in outcome.topology_per_claim.items():
                    metas[ci].contributed_requirements[it] = reqs
                # Later instance types must agree with what earlier ones needed: a NodeClaim
                # cannot say "type A in zone a or type B in zone b".
                self.requirements = self.requirements.copy()
                self.requirements.add(*outcome.topology.values())
        if not survivors:
            return self.failure()
        total = added.copy()
        claims: dict[ClaimKey, ResourceClaimAllocationMetadata] = {}
        for cd, meta in zip(self.claims, metas, strict=True):
            meta.recompute()
            total.add(*meta.total_requirements.values())
            claims[cd.key] = meta
        allocation = Allocation(
            self.a,
            self.nodeclaim_id,
            devices_by_it,
            claims,
            filter_pools(
                self.initial_pools, self.requirements, self.node_name, self.a.pool_index.devices_of
            ),
        )
        return AllocationResult(tuple(survivors), total, allocation)

    def search(self, it: str) -> list[_Chosen] | AllocationError | None:
        """The devices chosen on instance type ``it`` (None: it cannot satisfy the claims)."""
        self.instance_type = it
        self.pools = self.initial_pools
        self.chosen = []
        self.taken = set()
        ctx = BindingContext(self.a.attribute_bindings, self.nodeclaim.nodepool, it)
        for cd in self.claims:
            for constraint in cd.constraints:
                constraint.reset()
                constraint.binding = ctx
        try:
            found = self.dfs(0, 0, -1, 0)
        except _Abort as abort:
            return abort.error
        return list(self.chosen) if found else None

    def failure(self) -> AllocationError:
        """Why no instance type can satisfy the claims: a selector that failed to evaluate,
        else the request the search got furthest into, with how many of its devices could
        be found together."""
        if self.cel_error is not None:
            cd, rd, err = self.cel_error
            return AllocationError(
                f'claim "{cd.name}" request "{rd.name}": {err}',
                claim=cd.name,
                request=str(rd.name),
            )
        if self.frontier_request is not None:
            cd, rd, needed = self.frontier_request
            found = self.frontier[2]
            kinds = len(self.nodeclaim.instance_types)
            where = "the node" if self.node_name else f"any of {kinds} instance type(s)"
            what = f"all {needed}" if rd.is_all else f"{needed}"
            return AllocationError(
                f'claim "{cd.name}" request "{rd.name.parent}": no instance type can satisfy '
                f"the allocation: it needs {what} device(s), at most {found} matching, free "
                f"device(s) could be allocated together on {where}",
                claim=cd.name,
                request=rd.name.parent,
            )
        names = ", ".join(f'"{cd.name}"' for cd in self.claims)
        return AllocationError(
            f"no instance type can satisfy the allocation of claim(s) {names}",
            claim=self.claims[0].name if len(self.claims) == 1 else "",
        )

    # The search ------------------------------------------------------------------------------

    def dfs(self, ci: int, ri: int, si: int, slot: int) -> bool:
        if ci >= len(self.claims):
            return True
        cd = self.claims[ci]
        if ri >= len(cd.requests):
            return self.dfs(ci + 1, 0, -1, 0)
        rd = cd.requests[ri] if si < 0 else cd.requests[ri].sub_requests[si]
        if si < 0 and rd.sub_requests:
            return any(self.dfs(ci, ri, i, 0) for i in range(len(rd.sub_requests)))
        slots = self.slots(rd)
        if rd.is_all and slots == 0:
            return False
        if slot == 0 and self.claim_devices(ci) + slots > ALLOCATION_RESULTS_MAX_SIZE:
            return False
        if slot >= slots:
            return self.dfs(ci, ri + 1, -1, 0)
        mark = (ci, ri, slot)
        if mark > self.frontier:
            self.frontier = mark
            self.frontier_request = (cd, rd, slots)
        if rd.is_all:
            fixed = len(rd.all_devices)
            if slot < fixed:
                return self.try_device(ci, ri, si, slot, cd, rd, rd.all_devices[slot])
            return self.try_device(
                ci, ri, si, slot, cd, rd, rd.all_template_devices[self.instance_type][slot - fixed]
            )
        for pool in self.pools:
            if pool.incomplete:
                continue
            for d in pool.devices:
                if self.try_device(ci, ri, si, slot, cd, rd, d):
                    return True
        for d in self.templates.get(self.instance_type, ()):
            if self.try_device(ci, ri, si, slot, cd, rd, d):
                return True
        return False

    def slots(self, rd: RequestData) -> int:
        if rd.is_all:
            return len(rd.all_devices) + len(rd.all_template_devices.get(self.instance_type, ()))
        return rd.count

    def claim_devices(self, ci: int) -> int:
        return sum(1 for c in self.chosen if c.claim == ci)

    def tick(self) -> None:
        self.steps += 1
        if self.steps > self.a.max_steps or (
            self.steps % 256 == 0 and self.a.clock() > self.deadline
        ):
            raise _Abort(
                AllocationError(
                    "device allocation search exceeded its budget "
                    f"({self.a.max_steps} steps or {self.a.timeout:g}s)"
                )
            )

    def matches(
        self, ci: int, ri: int, si: int, cd: ClaimData, rd: RequestData, d: DeviceWithID
    ) -> bool:
        # By the device object: template devices of two instance types may share an id.
        key = (id(d.device), d.id.driver, ci, ri, si)
        cached = self.match_cache.get(key)
        if cached is not None:
            return cached
        matched = self.a.matches(d, rd.selectors)
        if isinstance(matched, CELError):
            # Kubernetes aborts on a selector error; the search treats the device as not
            # matching and reports the error if nothing else fits.
            if self.cel_error is None:
                self.cel_error = (cd, rd, matched)
            matched = False
        if matched:
            feature = _unsimulated(d)
            if feature:
                raise _Abort(unsupported(cd.name, str(rd.name), f"{feature} (device {d.id})"))
        self.match_cache[key] = matched
        return matched

    def try_device(
        self, ci: int, ri: int, si: int, slot: int, cd: ClaimData, rd: RequestData, d: DeviceWithID
    ) -> bool:
        self.tick()
        device_id = d.id
        if device_id in self.taken or self.a.tracker.is_allocated(
            device_id, self.nodeclaim_id, self.instance_type
        ):
            return False
        if not self.matches(ci, ri, si, cd, rd, d):
            return False
        added = 0
        for c in cd.constraints:
            if not c.add(rd.name, d.device, device_id):
                for undo in reversed(cd.constraints[:added]):
                    undo.remove(rd.name, d.device, device_id)
                return False
            added += 1
        saved: tuple[Requirements, list[Pool]] | None = None
        if d.topology is not None:
            if not self.requirements.is_compatible(d.topology, ALLOW_UNDEFINED_WELL_KNOWN_LABELS):
                for undo in reversed(cd.constraints[:added]):
                    undo.remove(rd.name, d.device, device_id)
                return False
            saved = (self.requirements, self.pools)
            self.requirements = self.requirements.copy()
            self.requirements.add(*d.topology.values())
            self.pools = filter_pools(
                self.pools, self.requirements, self.node_name, self.a.pool_index.devices_of
            )
        self.taken.add(device_id)
        self.chosen.append(_Chosen(ci, d, rd.name))
        if self.dfs(ci, ri, si, slot + 1):
            return True
        self.chosen.pop()
        self.taken.discard(device_id)
        if saved is not None:
            self.requirements, self.pools = saved
        for undo in reversed(cd.constraints[:added]):
            undo.remove(rd.name, d.device, device_id)
        return False


def _unsimulated(d: DeviceWithID) -> str:
    """The feature of a device this simulation cannot honour, or ""."""
    device = d.device
    if device.consumes_counters:
        return "partitionable devices (consumesCounters)"
    if device.allow_multiple_allocations:
        return "consumable capacity (allowMultipleAllocations)"
    if device.taints:
        return "device taints"
    return ""


__all__ = [
    "DEFAULT_MAX_STEPS",
    "DEFAULT_TIMEOUT",
    "NODE_NAME_FIELD",
    "Allocation",
    "AllocationResult",
    "Allocator",
    "DeviceAllocation",
    "ResourceClaimAllocationMetadata",
    "allocated_devices",
    "allocated_nodes",
    "claim_reserved_only_by",
]
