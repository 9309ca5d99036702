"""In-flight NodeClaims: a growing set of pods, narrowing requirements, shrinking options (§8.7).

``can_add`` runs upstream's filtering pipeline (taints, requirements, volume alternatives,
topology, instance types, minValues, reserved offerings) and returns either a ``Placement``
(the would-be state) or an error value; ``add`` commits a placement. Instance-type
compatibility is cached per requirement signature (``instancetypes``); only resources are
checked per call, and only against types not already ruled out.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left
from collections.abc import Sequence
from itertools import compress
from typing import TYPE_CHECKING, Any

from karpenter_core.apis.labels import (
    CAPACITY_TYPE_LABEL_KEY,
    CAPACITY_TYPE_RESERVED,
    LABEL_HOSTNAME,
    LABEL_INSTANCE_TYPE,
    NODECLAIM_MIN_VALUES_RELAXED_ANNOTATION_KEY,
    RESTRICTED_LABELS,
    WELL_KNOWN_LABELS,
)
from karpenter_core.hookspecs import InstanceTypeScorerSpec, ScoringRequest
from karpenter_core.provisioning.scheduler import resourcelist as rl
from karpenter_core.provisioning.scheduler.daemons import DaemonOverheadGroup
from karpenter_core.provisioning.scheduler.errors import (
    InstanceTypeFilterError,
    PodError,
    ReservedOfferingError,
    min_values_message,
)
from karpenter_core.provisioning.scheduler.instancetypes import (
    FAST_KEYS,
    InstanceTypeIndex,
    ITInfo,
    OptionSet,
    has_min_values,
    min_values_check,
    order_by_price,
    signature,
)
from karpenter_core.provisioning.scheduler.nodeclaimtemplate import (
    MAX_INSTANCE_TYPES,
    SIMULATION_KEYS,
    NodeClaimTemplate,
)
from karpenter_core.provisioning.scheduler.offerings import (
    capacity_type_of,
    reservation_id_of,
    reservation_label,
)
from karpenter_core.provisioning.scheduler.podinfo import PodData
from karpenter_core.provisioning.scheduler.reservations import ReservationManager
from karpenter_core.provisioning.scheduler.topologyadapter import TopologyAdapter
from karpenter_core.scheduling.dynamicresources import AllocationError, AllocationResult
from karpenter_core.scheduling.requirements import IN, Requirement, Requirements
from karpenter_core.scoring import PREFERENCE_ANNOTATION_KEY, Scoring

if TYPE_CHECKING:
    from karpenter_core.apis.resource import ResourceClaim
    from karpenter_core.provisioning.scheduler.dra import DRASimulation

_hostname_ids = itertools.count(1)


class Placement:
    """What a NodeClaim (or node) would look like with the pod added; ``allocation`` is the
    pod's DRA device allocation there, committed when the pod is placed."""

    __slots__ = ("allocation", "instance_types", "offerings", "requirements")

    def __init__(
        self,
        requirements: Requirements,
        instance_types: list[ITInfo] | None = None,
        offerings: list[Any] | None = None,
        allocation: AllocationResult | None = None,
    ) -> None:
        self.requirements = requirements
        self.instance_types = instance_types or []
        self.offerings = offerings or []
        self.allocation = allocation


NO_DRA_INSTANCE_TYPE = PodError(
    "no instance type satisfies both scheduling and dynamic resource requirements"
)


def with_min_values(req: Requirement, n: int) -> Requirement:
    return Requirement(req.key, req.complement, req.values, req.gte, req.lte, n)


def filter_instance_types(
    index: InstanceTypeIndex,
    options: Sequence[ITInfo],
    reqs: Requirements,
    pod: Any,
    pod_requests: dict[str, int],
    groups: Sequence[DaemonOverheadGroup],
    total: dict[str, int],
    relax_min_values: bool,
    want_error: bool,
    optset: OptionSet | None = None,
) -> tuple[list[ITInfo], dict[str, int], InstanceTypeFilterError | None]:
    """Instance types among ``options`` that meet ``reqs``, fit ``total`` (+ daemon overhead)
    and have a compatible offering; plus minValues keys relaxed; plus an error when none do.

    ``want_error=False`` skips the bookkeeping of which criteria were met, for callers that
    discard the reason (in-flight NodeClaims).
    """
    sig = signature(reqs)
    table = index.entries(sig)
    ports = pod.host_ports
    totals: list[dict[str, int] | None] = []
    for g in groups:
        if ports and g.host_port_usage.conflicts(pod.key, list(ports)) is not None:
            totals.append(None)
        elif g.overhead:
            totals.append(rl.add(total, g.overhead))
        else:
            totals.append(total)
    single = totals[0] if len(totals) == 1 else None
    survivors: list[ITInfo] = []
    trusted: list[ITInfo] = []
    entry = index.entry
    scan: Sequence[ITInfo] = options
    if optset is not None and single is not None and optset.sorted:
        lo = bisect_left(optset.cpu_keys, single.get("cpu", 0))
        scan = optset.options[lo:]
        if optset.simple and all(k in FAST_KEYS for k in single):
            j = lo
            for k, v in single.items():
                jk = bisect_left(optset.suffix_min[k], v)
                if jk > j:
                    j = jk
            # Options from j on fit; only [lo, j) needs checking one by one.
            scan = optset.options[lo:j]
            tail = optset.options[j:]
            if optset.sig is not None and optset.sig == sig:
                # Requirements unchanged since these options were vetted: all compatible.
                trusted = tail
                tail = []
        else:
            tail = []
    else:
        tail = []
    for info in scan:
        if single is not None:
            t = single
        else:
            t = None
            for g, gt in zip(groups, totals, strict=True):
                if info.index in g.members:
                    t = gt
                    break
            if t is None:
                continue
        e = table.get(info.index)
        if e is None:
            e = entry(table, info, reqs)
        if not e.compatible:
            continue
        for gi in e.groups:
            ag = info.groups[gi]
            if not ag.nonnegative:
                continue
            alloc = ag.allocatable
            assert t is not None
            for k, v in t.items():
                if v > alloc.get(k, 0):
                    break
            else:
                survivors.append(info)
                break
    if tail:
        assert optset is not None
        if len(tail) > 16:
            # Flags per signature over the template's list, sliced: a C-level filter.
            flags = index.compatible_flags(sig, optset.root, reqs)
            start = optset.offset + len(optset.options) - len(tail)
            survivors.extend(compress(tail, flags[start:]))
        else:
            for info in tail:
                e = table.get(info.index)
                if e is None:
                    e = entry(table, info, reqs)
                if e.compatible and e.groups:
                    survivors.append(info)
    if trusted:
        survivors.extend(trusted)
    unsatisfiable: dict[str, int] = {}
    min_values_err: str | None = None
    if survivors and has_min_values(reqs):
        deficient = min_values_check(survivors, reqs)
        if deficient:
            if relax_min_values:
                unsatisfiable = deficient
            else:
                min_values_err = min_values_message(deficient)
                survivors = []
    if survivors:
        return survivors, unsatisfiable, None
    if not want_error:
        return [], unsatisfiable, None
    err = InstanceTypeFilterError(reqs, pod_requests)
    if min_values_err is not None:
        err.min_values_error = min_values_err
    elif has_min_values(reqs):
        err.min_values_error = None
    option_ids = {info.index for info in options}
    for g, gt in zip(groups, totals, strict=True):
        if gt is None:
            continue
        if g.overhead:
            err.track_daemon_overhead(g.overhead)
        for info in g.instance_types:
            if info.index not in option_ids:
                continue
            e = entry(table, info, reqs)
            compat = e.compatible
            fit = False
            has_offering = bool(e.groups)
            for gi in e.groups:
                if compat:
                    err.track_largest(info.groups[gi].allocatable)
                if rl.fits(gt, info.groups[gi].allocatable):
                    fit = True
                    break
            err.requirements_met = err.requirements_met or compat
            err.fits = err.fits or fit
            err.has_offering = err.has_offering or has_offering
            err.requirements_and_fits = err.requirements_and_fits or (
                compat and fit and not has_offering
            )
            err.requirements_and_offering = err.requirements_and_offering or (
                compat and has_offering and not fit
            )
            err.fits_and_offering = err.fits_and_offering or (fit and has_offering and not compat)
    if not options and min_values_err is None and has_min_values(reqs):
        err.min_values_error = min_values_message(min_values_check([], reqs))
    return [], unsatisfiable, err


class NodeClaim:
    """A NodeClaim being built during one solve."""

    def __init__(
        self,
        template: NodeClaimTemplate,
        topology: TopologyAdapter,
        daemon_groups: Sequence[DaemonOverheadGroup],
        options: list[ITInfo],
        reservations: ReservationManager,
        index: InstanceTypeIndex,
        reserved_capacity: bool,
        strict_reservations: bool,
        optset: OptionSet | None = None,
        dra: DRASimulation | None = None,
    ) -> None:
        """``optset``, when given, indexes exactly ``options`` (the scheduler shares one
        per pool and limits state instead of rebuilding it for every NodeClaim). ``dra``
        simulates the pods' ResourceClaims (None: DRA requests are not simulated)."""
        self.template = template
        self.nodepool_name = template.nodepool_name
        self.hostname = f"hostname-placeholder-{next(_hostname_ids):04d}"
        self.requirements = template.requirements.copy()
        self.requirements.add(Requirement.new(LABEL_HOSTNAME, IN, [self.hostname]))
        self.options = options
        self.requests: dict[str, int] = {}
        self.pods: list[Any] = []
        self.topology = topology
        self.daemon_groups = [g.copy_for_nodeclaim() for g in daemon_groups]
        self.reservations = reservations
        self.index = index
        self.reserved_capacity = reserved_capacity
        self.strict_reservations = strict_reservations
        self.reserved_offerings: list[Any] = []
        self.annotations: dict[str, str] = dict(template.annotations)
        self.labels: dict[str, str] = dict(template.labels)
        self.finalized = False
        self._merge_cache: dict[int, tuple[Requirements, Requirements | object]] = {}
        self.reject_shared = False
        self.full_for_requests = False
        """Whether the last :meth:`can_add` refused the pod because no option left could
        hold its requests on top of this NodeClaim's (requirements aside): within a solve a
        NodeClaim only gains pods and loses options, so it would refuse the same requests
        again."""
        self._sig: int | None = None
        self._by_price: list[ITInfo] | None = None
        self.scorer: InstanceTypeScorerSpec | None = None
        """The scorer ordering this NodeClaim's options (set after the solve by
        :meth:`Results.truncate_instance_types`); None is upstream's price order."""
        self.scoring: Scoring | None = None
        self._ranked: list[ITInfo] | None = None
        if optset is None and options is template.instance_type_options:
            optset = template.optset
        self._optset: OptionSet | None = optset
        self.dra = dra
        self.dra_types: set[str] = set()
        """Instance types devices are reserved on for this NodeClaim: those it loses release
        theirs."""

    # -- the filtering pipeline --

    def signature(self) -> int:
        """A token for template + requirements without the hostname: NodeClaims sharing it
        give the same answer to everything but resources and hostname topology."""
        if self._sig is None:
            key = (id(self.template), signature(self.requirements))
            tokens = self.index.signature_tokens
            token = tokens.get(key)
            if token is None:
                token = tokens[key] = len(tokens)
            self._sig = token
        return self._sig

    def _option_set(self) -> OptionSet:
        if self._optset is None:
            self._optset = OptionSet(self.options)
        return self._optset

    def _merged(self, data: PodData) -> Requirements | object:
        """NodeClaim requirements ∩ pod requirements (cached per pod requirement set until
        the NodeClaim changes; callers copy before modifying)."""
        key = id(data.requirements)
        hit = self._merge_cache.get(key)
        if hit is not None and hit[0] is data.requirements:
            return hit[1]
        rerr = self.requirements.compatible(data.requirements, self.index.allow_undefined)
        if rerr is not None:
            result: Requirements | object = PodError("incompatible requirements", rerr)
        else:
            merged = self.requirements.copy()
            merged.add(*data.requirements.values())
            result = merged
        self._merge_cache[key] = (data.requirements, result)
        return result

    def can_add(
        self,
        pod: Any,
        data: PodData,
        relax_min_values: bool,
        want_error: bool = True,
        claims: Sequence[ResourceClaim] = (),
    ) -> Placement | object:
        # ``reject_shared`` tells the solver whether a rejection would repeat for every
        # NodeClaim with this template and requirement signature (taints, requirements,
        # hostname-independent topology), so it can skip those NodeClaims for this pod.
        self.reject_shared = True
        self.full_for_requests = False
        err = self.template.tolerates(pod.tolerations)
        if err is not None:
            return err
        requests = self.requests
        if not want_error and len(self.daemon_groups) == 1 and not self.index.reference:
            # Cheap exit: no remaining option could hold the pod, whatever the requirements.
            optset = self._option_set()
            overhead = self.daemon_groups[0].overhead
            for k, v in data.requests.items():
                if v + requests.get(k, 0) + overhead.get(k, 0) > optset.max_allocatable(k):
                    self.reject_shared = False
                    self.full_for_requests = True
                    return _NO_FIT
        base = self._merged(data)
        if not isinstance(base, Requirements):
            return base
        total = rl.add(requests, data.requests)
        last: object = _NO_FIT
        shared = True
        for volume_reqs in data.volume_alternatives():
            result = self._try_volume_alternative(
                pod, data, base, volume_reqs, total, relax_min_values, want_error, claims
            )
            if isinstance(result, Placement):
                return result
            shared = shared and self.reject_shared
            last = result
        self.reject_shared = shared
        return last

    def _try_volume_alternative(
        self,
        pod: Any,
        data: PodData,
        base: Requirements,
        volume_reqs: Requirements | None,
        total: dict[str, int],
        relax_min_values: bool,
        want_error: bool,
        claims: Sequence[ResourceClaim] = (),
    ) -> Placement | object:
        allow = self.index.allow_undefined
        reqs = base
        if volume_reqs is not None:
            verr = reqs.compatible(volume_reqs, allow)
            if verr is not None:
                return PodError("incompatible volume requirements", verr)
            reqs = base.copy()
            reqs.add(*volume_reqs.values())
        topo = self.topology.add_requirements(
            pod, self.template.taints, data.strict_requirements, reqs, allow
        )
        if not isinstance(topo, Requirements):
            self.reject_shared = self.topology.hostname_free
            return topo
        if topo is not reqs:
            terr = reqs.compatible(topo, allow)
            if terr is not None:
                self.reject_shared = self.topology.hostname_free
                return terr
            reqs = reqs.copy()
            reqs.add(*topo.values())
        self.reject_shared = False
        survivors, unsatisfiable, ferr = filter_instance_types(
            self.index,
            self.options,
            reqs,
            pod,
            data.requests,
            self.daemon_groups,
            total,
            relax_min_values,
            want_error,
            None if self.index.reference else self._option_set(),
        )
        if not survivors:
            return ferr if ferr is not None else _NO_FIT
        allocation: AllocationResult | None = None
        if claims and self.dra is not None:
            placed = self._allocate_devices(
                pod,
                data,
                reqs,
                survivors,
                unsatisfiable,
                total,
                relax_min_values,
                want_error,
                claims,
            )
            if not isinstance(placed, tuple):
                return placed
            reqs, survivors, unsatisfiable, allocation = placed
        if reqs is base:
            reqs = base.copy()
        if relax_min_values and unsatisfiable:
            for key, achieved in unsatisfiable.items():
                reqs[key] = with_min_values(reqs.get(key), achieved)
        offerings = self._offerings_to_reserve(survivors, reqs)
        if not isinstance(offerings, list):
            return offerings
        return Placement(reqs, survivors, offerings, allocation)

    def _allocate_devices(
        self,
        pod: Any,
        data: PodData,
        reqs: Requirements,
        survivors: list[ITInfo],
        unsatisfiable: dict[str, int],
        total: dict[str, int],
        relax_min_values: bool,
        want_error: bool,
        claims: Sequence[ResourceClaim],
    ) -> tuple[Requirements, list[ITInfo], dict[str, int], AllocationResult] | object:
        """Allocate the pod's claims on the instance types that passed the other filters;
        keep those the allocation succeeded on, with the requirements the devices bring
        (a zonal slice's zone) merged in. Upstream allocates before topology and filtering
        and narrows both with the devices' requirements; the allocation is asked here, on
        fewer instance types, and topology and filtering run again when it narrows the
        requirements, so the outcome is the same (the allocator even sees the topology's
        domain, so it picks devices the NodeClaim can use)."""
        assert self.dra is not None
        allow = self.index.allow_undefined
        result = self.dra.allocate_on_nodeclaim(
            self.hostname, self.nodepool_name, reqs, [i.name for i in survivors], claims
        )
        if isinstance(result, AllocationError):
            return PodError("allocating dynamic resources", result)
        narrowed = len(result.requirements) and not _implied(reqs, result.requirements)
        if narrowed:
            derr = reqs.compatible(result.requirements, allow)
            if derr is not None:
                return PodError("incompatible dynamic resource requirements", derr)
            reqs = reqs.copy()
            reqs.add(*result.requirements.values())
            topo = self.topology.add_requirements(
                pod, self.template.taints, data.strict_requirements, reqs, allow
            )
            if not isinstance(topo, Requirements):
                return topo
            if topo is not reqs:
                terr = reqs.compatible(topo, allow)
                if terr is not None:
                    return terr
                reqs.add(*topo.values())
            survivors, unsatisfiable, ferr = filter_instance_types(
                self.index,
                survivors,
                reqs,
                pod,
                data.requests,
                self.daemon_groups,
                total,
                relax_min_values,
                want_error,
            )
            if not survivors:
                return ferr if ferr is not None else _NO_FIT
        supported = set(result.instance_types)
        kept = [i for i in survivors if i.name in supported]
        if not kept:
            return NO_DRA_INSTANCE_TYPE
        return reqs, kept, unsatisfiable, result

    def _offerings_to_reserve(
        self, survivors: Sequence[ITInfo], reqs: Requirements
    ) -> list[Any] | object:
        if not self.reserved_capacity or not self.reservations.has_reservations:
            return []
        has_compatible = False
        reserved: list[Any] = []
        for info in survivors:
            for o in info.it.offerings:
                if not o.available or capacity_type_of(o) != CAPACITY_TYPE_RESERVED:
                    continue
                if not self.index.offering_compatible(reqs, o):
                    continue
                has_compatible = True
                if self.reservations.can_reserve(self.hostname, o):
                    reserved.append(o)
        if self.strict_reservations:
            if has_compatible and not reserved:
                return ReservedOfferingError(
                    "one or more instance types with compatible reserved offerings are "
                    "available, but could not be reserved"
                )
            if self.reserved_offerings and not reserved:
                return ReservedOfferingError(
                    "satisfying updated nodeclaim constraints would remove all compatible "
                    "reserved offering options"
                )
        return reserved

    def add(self, pod: Any, data: PodData, placement: Placement) -> None:
        self.pods.append(pod)
        if self.dra is not None:
            self._commit_devices(placement)
        if placement.instance_types is not self.options:
            old = self._optset
            new = placement.instance_types
            n = len(new)
            if old is not None and n and old.options[-n:] == new:
                self._optset = old.suffix(len(old.options) - n, signature(placement.requirements))
            else:
                self._optset = None
        self.options = placement.instance_types
        self._merge_cache.clear()
        self._by_price = None
        self._sig = None
        rl.add_into(self.requests, data.requests)
        self.requirements = placement.requirements
        self.topology.register(LABEL_HOSTNAME, self.hostname)
        self.topology.record(
            pod, self.template.taints, placement.requirements, self.index.allow_undefined
        )
        if pod.host_ports:
            for g in self.daemon_groups:
                g.host_port_usage.add(pod.key, list(pod.host_ports))
        if self.reserved_capacity and (placement.offerings or self.reserved_offerings):
            self.reservations.reserve(self.hostname, placement.offerings)
            kept = {reservation_id_of(o) for o in placement.offerings}
            self.reservations.release(
                self.hostname,
                [o for o in self.reserved_offerings if reservation_id_of(o) not in kept],
            )
            self.reserved_offerings = list(placement.offerings)

    def _commit_devices(self, placement: Placement) -> None:
        """Commit the pod's device allocation, then release what the instance types this
        placement drops had reserved (upstream releases the allocation's pruned types;
        types dropped by a later pod's placement are released too)."""
        assert self.dra is not None
        result = placement.allocation
        if result is not None and result.allocation is not None:
            result.allocation.commit()
            self.dra_types.update(result.instance_types)
        if self.dra_types and placement.instance_types is not self.options:
            kept = {i.name for i in placement.instance_types}
            pruned = [name for name in self.dra_types if name not in kept]
            if pruned:
                self.dra_types.difference_update(pruned)
                self.dra.release(self.hostname, pruned)

    # -- finalisation and output --

    def finalize(self) -> None:
        """Drop the placeholder hostname, pin held reservations, add the daemon overhead."""
        if self.finalized:
            return
        self.finalized = True
        self._by_price = None
        self._ranked = None
        if self.requirements.has(LABEL_HOSTNAME):
            del self.requirements[LABEL_HOSTNAME]
        if self.reserved_offerings:
            self.requirements[CAPACITY_TYPE_LABEL_KEY] = Requirement.new(
                CAPACITY_TYPE_LABEL_KEY, IN, [CAPACITY_TYPE_RESERVED]
            )
            self.requirements.add(
                Requirement.new(
                    reservation_label(),
                    IN,
                    sorted({reservation_id_of(o) for o in self.reserved_offerings}),
                )
            )
        remaining = {i.index for i in self.options}
        overhead: dict[str, int] | None = None
        for g in self.daemon_groups:
            if not (g.members & remaining):
                continue
            overhead = dict(g.overhead) if overhead is None else rl.min_of(overhead, g.overhead)
        if overhead:
            rl.add_into(self.requests, overhead)

    def instance_types_by_price(self) -> list[ITInfo]:
        if self._by_price is None:
            self._by_price = order_by_price(self.index, self.options, self.requirements)
        return self._by_price

    def set_scorer(self, scoring: Scoring) -> None:
        """Let ``scoring`` order this NodeClaim's options (its NodePool's scorer)."""
        self.scoring = scoring
        self.scorer = scoring.spec_for(self.template.nodepool)
        self._ranked = None

    def instance_types_ranked(self) -> list[ITInfo]:
        """The options in launch order: the scorer's (ties by price), else by price."""
        if self.scorer is None or self.scoring is None:
            return self.instance_types_by_price()
        if self._ranked is None:
            by_price = self.instance_types_by_price()
            prices = self.index.prices(signature(self.requirements))
            request = ScoringRequest(
                nodepool=self.template.nodepool,
                instance_types=tuple(i.it for i in by_price),
                prices=tuple(prices[i] for i in by_price),
                requirements=self.requirements,
                requests=dict(self.requests),
                pod_count=len(self.pods),
            )
            order = self.scoring.rank_or_price(self.scorer, request)
            self._ranked = by_price if order is None else [by_price[j] for j in order]
        return self._ranked

    def preference_annotation(self) -> dict[str, str]:
        """The launch order for the cloud provider (:mod:`karpenter_core.scoring`), as the
        NodeClaim annotation; none under the price order, which providers apply anyway."""
        if self.scorer is None:
            return {}
        names = [i.name for i in self.instance_types_ranked()[:MAX_INSTANCE_TYPES]]
        return {PREFERENCE_ANNOTATION_KEY: ",".join(names)}

    def set_options(self, options: list[ITInfo], *, ranked: bool = False) -> None:
        """Replace the options; ``ranked``: they are already in launch order (a prefix of
        :meth:`instance_types_ranked`), so the scorer is not asked again."""
        self.options = options
        self._by_price = None
        self._ranked = options if ranked and self.scorer is not None else None
        self._optset = None

    def launch_requirements(self, max_instance_types: int = MAX_INSTANCE_TYPES) -> Requirements:
        """Requirements as upstream's ``ToNodeClaim`` emits them: instance types in launch
        order (cheapest first unless a scorer says otherwise; capped), the capacity types
        their offerings allow, simulation keys removed."""
        reqs = self.requirements.copy()
        ordered = self.instance_types_ranked()[:max_instance_types]
        min_values = reqs.get(LABEL_INSTANCE_TYPE).min_values
        reqs.add(Requirement.new(LABEL_INSTANCE_TYPE, IN, [i.name for i in ordered], min_values))
        # Offerings never carry the instance-type key, so the NodeClaim's own signature
        # answers offering compatibility for the requirements with it added.
        table = self.index.capacity_type_table(signature(self.requirements))
        capacity_types: list[str] = []
        for info in ordered:
            for ct in self.index.capacity_types(table, info, self.requirements):
                if ct not in capacity_types:
                    capacity_types.append(ct)
        if capacity_types:
            reqs.add(Requirement.new(CAPACITY_TYPE_LABEL_KEY, IN, capacity_types))
        out = Requirements()
        for key, r in reqs.items():
            if key not in SIMULATION_KEYS:
                out[key] = r
        return out

    def to_nodeclaim_dict(self) -> dict[str, Any]:
        """The ``karpenter.sh/v1`` NodeClaim to create (upstream ``ToNodeClaim``): the pool's
        template with the launch requirements, custom requirement keys as labels, the pods'
        requests plus daemon overhead, and an owner reference to the NodePool."""
        spec: dict[str, Any] = {
            k: v for k, v in self.template.spec.items() if k not in ("requirements", "resources")
        }
        spec["requirements"] = sorted(
            self.launch_requirements().to_node_selector_requirements(),
            key=lambda r: (r["key"], r["operator"]),
        )
        spec["resources"] = {"requests": rl.format_list(self.requests)}
        labels = {**self.labels, **self.custom_labels()}
        return {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {
                "generateName": f"{self.nodepool_name}-",
                "labels": dict(sorted(labels.items())),
                "annotations": dict(
                    sorted({**self.annotations, **self.preference_annotation()}.items())
                ),
                "ownerReferences": [
                    {
                        "apiVersion": "karpenter.sh/v1",
                        "kind": "NodePool",
                        "name": self.nodepool_name,
                        "uid": self.template.nodepool_uid,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": spec,
        }

    def custom_labels(self) -> dict[str, str]:
        """Custom requirement keys materialised as labels (upstream uses any allowed value)."""
        labels: dict[str, str] = {}
        for key, r in self.requirements.items():
            if key in WELL_KNOWN_LABELS or key in RESTRICTED_LABELS or key in SIMULATION_KEYS:
                continue
            value = r.any()
            if value:
                labels[key] = value
        return labels

    def min_values_relaxed(self) -> bool:
        return self.annotations.get(NODECLAIM_MIN_VALUES_RELAXED_ANNOTATION_KEY) == "true"


def _implied(reqs: Requirements, extra: Requirements) -> bool:
    """Every requirement of ``extra`` is already one of ``reqs`` (adding it changes
    nothing)."""
    return all(reqs.has(k) and reqs.get(k) == r for k, r in extra.items())


class _NoFit:
    __slots__ = ()

    def __str__(self) -> str:
        return "no remaining instance type option has room for the pod"


_NO_FIT = _NoFit()
