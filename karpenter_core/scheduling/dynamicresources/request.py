"""A ResourceClaim read for the search: its requests resolved against DeviceClasses, selectors
compiled, ``All``-mode device sets computed, constraints built (``designs/dra-scheduling.md``,
"Request Validation").

Everything a user can get wrong surfaces here as an :class:`AllocationError` naming the claim
and request, before any search: a missing DeviceClass, a selector that is not CEL or does not
compile, a constraint kind not simulated, more than 32 devices, an ``All`` request over an
incomplete or invalid pool, or a feature Karpenter does not simulate.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from attrs import define, field, frozen

from karpenter_core.apis.resource import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_RESULTS_MAX_SIZE,
    DeviceClass,
    DeviceSelector,
    DeviceSubRequest,
    ExactDeviceRequest,
    ResourceClaim,
)
from karpenter_core.scheduling.dynamicresources.cel import (
    CELError,
    CompiledSelector,
    compile_selector,
    evaluate,
)
from karpenter_core.scheduling.dynamicresources.constraint import MatchAttribute
from karpenter_core.scheduling.dynamicresources.devices import DeviceWithID, RequestName
from karpenter_core.scheduling.dynamicresources.pool import Pool

ClaimKey = tuple[str, str]
"""``(namespace, name)`` of a ResourceClaim."""


@frozen
class AllocationError:
    """Why a pod's claims cannot be satisfied here; ``str()`` is the message for the pod."""

    message: str
    claim: str = ""
    request: str = ""
    unsupported: str = ""
    """The feature Karpenter does not simulate, when that is the reason."""

    def __str__(self) -> str:
        return self.message


def unsupported(claim: str, request: str, feature: str) -> AllocationError:
    where = f'claim "{claim}"' + (f' request "{request}"' if request else "")
    return AllocationError(
        f"{where} is not supported by Karpenter's DRA simulation: {feature}",
        claim=claim,
        request=request,
        unsupported=feature,
    )


@define(eq=False)
class RequestData:
    """One request (or one ``firstAvailable`` alternative) ready for the search.

    A ``firstAvailable`` parent has only ``name`` and ``sub_requests``. ``all_devices`` and
    ``all_template_devices`` (per instance type) are the fixed device sets of an ``All``
    request; ``count`` is the device count of an ``ExactCount`` one.
    """

    name: RequestName
    sub_requests: list[RequestData] = field(factory=list)
    device_class: DeviceClass | None = None
    count: int = 0
    mode: str = "ExactCount"
    selectors: tuple[CompiledSelector, ...] = ()
    all_devices: list[DeviceWithID] = field(factory=list)
    all_template_devices: dict[str, list[DeviceWithID]] = field(factory=dict)

    @property
    def is_all(self) -> bool:
        return self.mode == ALLOCATION_MODE_ALL

    def base_devices(self) -> int:
        """Devices the request needs whatever the instance type (the smallest alternative
        for a ``firstAvailable`` request)."""
        if self.sub_requests:
            return min(s.count + len(s.all_devices) for s in self.sub_requests)
        return self.count + len(self.all_devices)


@define(eq=False)
class ClaimData:
    key: ClaimKey
    claim: ResourceClaim
    requests: list[RequestData] = field(factory=list)
    constraints: list[MatchAttribute] = field(factory=list)

    @property
    def name(self) -> str:
        return self.claim.name


def device_matches_selectors(
    device: DeviceWithID, selectors: Sequence[CompiledSelector]
) -> bool | CELError:
    """Whether the device passes every selector (AND); the first evaluation error is
    returned as it is."""
    for s in selectors:
        matched = evaluate(s, device.id.driver, device.device)
        if matched is not True:
            return matched
    return True


Matcher = Callable[[DeviceWithID, Sequence[CompiledSelector]], "bool | CELError"]
"""How a device is tested against selectors (:func:`device_matches_selectors`, or the
allocator's remembering version)."""


def _matching(
    devices: Sequence[DeviceWithID],
    selectors: Sequence[CompiledSelector],
    matcher: Matcher = device_matches_selectors,
) -> list[DeviceWithID] | CELError:
    out: list[DeviceWithID] = []
    for d in devices:
        matched = matcher(d, selectors)
        if isinstance(matched, CELError):
            return matched
        if matched:
            out.append(d)
    return out


def _selectors(
    claim: str,
    request: str,
    device_class: DeviceClass,
    own: Sequence[DeviceSelector],
) -> tuple[CompiledSelector, ...] | AllocationError:
    compiled: list[CompiledSelector] = []
    for origin, selectors in (("class", device_class.spec.selectors), ("request", own)):
        for s in selectors:
            if s.cel is None:
                what = f'DeviceClass "{device_class.name}" has' if origin == "class" else "has"
                return AllocationError(
                    f'claim "{claim}" request "{request}": {what} unsupported selector type '
                    "(only CEL is supported)",
                    claim=claim,
                    request=request,
                )
            c = compile_selector(s.cel.expression)
            if isinstance(c, CELError):
                return AllocationError(
                    f'claim "{claim}" request "{request}": {c}', claim=claim, request=request
                )
            compiled.append(c)
    return tuple(compiled)


def _request_data(
    claim: str,
    request: str,
    req: ExactDeviceRequest | DeviceSubRequest,
    device_classes: Mapping[str, DeviceClass],
    pools: Sequence[Pool],
    template_devices: Mapping[str, Sequence[DeviceWithID]],
    matcher: Matcher = device_matches_selectors,
) -> RequestData | AllocationError:
    if req.admin_access:
        return unsupported(claim, request, "admin access (adminAccess: true)")
    if req.capacity is not None and req.capacity.requests:
        return unsupported(claim, request, "consumable capacity (capacity.requests)")
    device_class = device_classes.get(req.device_class_name)
    if device_class is None:
        return AllocationError(
            f'claim "{claim}" request "{request}": DeviceClass "{req.device_class_name}" not found',
            claim=claim,
            request=request,
        )
    selectors = _selectors(claim, request, device_class, req.selectors)
    if isinstance(selectors, AllocationError):
        return selectors
    rd = RequestData(
        RequestName(request),
        device_class=device_class,
        count=req.device_count,
        mode=req.mode,
        selectors=selectors,
    )
    if not rd.is_all:
        return rd
    rd.count = 0
    for pool in pools:
        what = ""
        if pool.invalid:
            what = "is invalid (duplicate device names)"
        elif pool.incomplete:
            what = "is incomplete (missing slices)"
        if what:
            return AllocationError(
                f'claim "{claim}" request "{request}": pool {pool.key.driver}/{pool.key.pool} {what}',
                claim=claim,
                request=request,
            )
        matched = _matching(pool.devices, selectors, matcher)
        if isinstance(matched, CELError):
            return AllocationError(
                f'claim "{claim}" request "{request}": {matched}', claim, request
            )
        rd.all_devices.extend(matched)
    for instance_type, devices in template_devices.items():
        matched = _matching(devices, selectors, matcher)
        if isinstance(matched, CELError):
            return AllocationError(
                f'claim "{claim}" request "{request}": {matched}', claim, request
            )
        # With no match anywhere the instance type cannot satisfy an All request.
        if matched or rd.all_devices:
            rd.all_template_devices[instance_type] = matched
    return rd


def validate_claim_request(
    claim: ResourceClaim,
    device_classes: Mapping[str, DeviceClass],
    pools: Sequence[Pool],
    template_devices: Mapping[str, Sequence[DeviceWithID]],
    matcher: Matcher = device_matches_selectors,
) -> ClaimData | AllocationError:
    """Read ``claim`` for the search over ``pools`` and each instance type's template devices."""
    name = claim.name
    data = ClaimData(claim.key, claim)
    for c in claim.spec.devices.constraints:
        if c.match_attribute is not None:
            data.constraints.append(MatchAttribute(c.match_attribute, frozenset(c.requests)))
        elif c.distinct_attribute is not None:
            return unsupported(name, "", "distinctAttribute constraints")
        else:
            return AllocationError(f'claim "{name}": unsupported constraint type', claim=name)
    for r in claim.spec.devices.requests:
        if r.exactly is not None:
            rd = _request_data(
                name, r.name, r.exactly, device_classes, pools, template_devices, matcher
            )
            if isinstance(rd, AllocationError):
                return rd
        elif r.first_available:
            rd = RequestData(RequestName(r.name))
            for sub in r.first_available:
                sd = _request_data(
                    name, sub.name, sub, device_classes, pools, template_devices, matcher
                )
                if isinstance(sd, AllocationError):
                    return sd
                sd.name = RequestName(r.name, sub.name)
                rd.sub_requests.append(sd)
        else:
            return AllocationError(
                f'claim "{name}" request "{r.name}": only Exactly and FirstAvailable requests '
                "are supported",
                claim=name,
                request=r.name,
            )
        data.requests.append(rd)
    return _enforce_device_limit(data)


def _enforce_device_limit(data: ClaimData) -> ClaimData | AllocationError:
    """At most 32 devices per claim: fail when even the smallest choice is over, and drop
    the instance types whose ``All``-mode template devices would push it over."""
    name = data.name
    base = sum(r.base_devices() for r in data.requests)
    limit = ALLOCATION_RESULTS_MAX_SIZE
    if base > limit:
        return AllocationError(
            f'claim "{name}" requests {base} total devices, exceeding maximum of {limit}',
            claim=name,
        )

    def alternatives(r: RequestData) -> list[RequestData]:
        return r.sub_requests or [r]

    instance_types: list[str] = []
    for r in data.requests:
        for alt in alternatives(r):
            for it in alt.all_template_devices:
                if it not in instance_types:
                    instance_types.append(it)
    pruned = 0
    for it in instance_types:
        extra = sum(
            min(len(alt.all_template_devices.get(it, ())) for alt in alternatives(r))
            for r in data.requests
        )
        if base + extra > limit:
            pruned += 1
            for r in data.requests:
                for alt in alternatives(r):
                    alt.all_template_devices.pop(it, None)
    if instance_types and pruned == len(instance_types):
        return AllocationError(
            f'claim "{name}": all instance types pruned, no instance type can satisfy this '
            f"claim without exceeding the maximum of {limit} devices",
            claim=name,
        )
    return data


__all__ = [
    "AllocationError",
    "ClaimData",
    "ClaimKey",
    "RequestData",
    "device_matches_selectors",
    "unsupported",
    "validate_claim_request",
]
