"""EC2 instances: launch one through CreateFleet, find, list and terminate them.

A launch (upstream ``pkg/providers/instance``) turns a NodeClaim's requirements and the
instance types it may use into **one** ``CreateFleet`` request of type ``instant``: one
override per available (instance type, zone) offering, each with that zone's subnet, the
AMI for the type and the offering's price as its priority, grouped under the launch
templates the types need. EC2 picks the offering (lowest price on-demand,
price-capacity-optimized spot) and answers at once.

Failures are classified for the core (:mod:`karpenter_core.cloudprovider.errors`):

- no instance type can be launched (nothing compatible, available and fitting) and fleet
  answers whose every ``Errors[]`` entry is a capacity code ⇒ ``InsufficientCapacityError``;
  each such entry also marks its (type, zone, capacity type) unavailable, so the next
  scheduling pass avoids it, and ``AuthFailure.ServiceLinkedRoleCreationNotPermitted``
  turns spot off;
- a launch template CreateFleet cannot find is forgotten and the launch retried once;
- any other AWS error ⇒ ``CreateError`` with upstream's reason (``Unauthorized``,
  ``AMINotFound``, ``SpotQuotaExceeded``..., default ``LaunchFailed``);
- ``get``/``delete`` of an instance EC2 does not know, or that is already terminated
  ⇒ ``NodeClaimNotFoundError``.

Instances are found by tags: every instance carries the cluster, NodePool and
EC2NodeClass tags (:func:`launch_tags`); as upstream, the NodeClaim's own name is not a
launch tag (it would make every CreateFleet request unique, so none could be merged) but
is added by the ``nodeclaim.tagging`` controller once the node registered. The provider
id is ``aws:///<zone>/<id>``.

CreateFleet, DescribeInstances and TerminateInstances go through
:class:`~karpenter_aws.ec2batch.EC2Batcher`, so concurrent launches, lookups and
terminations share EC2 calls. Instances are remembered in an :class:`InstanceCache`
(upstream's instance cache): :meth:`InstanceProvider.get` answers from it unless asked to
skip it, so a node launched a moment ago is not reported gone because an eventually
consistent DescribeInstances does not know it yet.

A NodeClaim requesting ``vpc.amazonaws.com/efa`` gets templates with EFA interfaces (one
per network card of its type, unless the EC2NodeClass lists its own interfaces).

A reserved launch (the NodeClaim pinned to ``reserved`` and reservation ids by the core's
reserved-capacity scheduling) keeps per type and zone the reserved offering with most
capacity left, makes one template per reservation (``CapacityReservationSpecification``
targeting it, ``capacity-reservations-only``; a capacity block also gets the
``capacity-block`` market type) with that reservation's single override, and labels the
instance with the reservation it went to; a capacity error marks that reservation full.

A launch into a placement group (the EC2NodeClass's ``placementGroupSelector``) places
through its templates (``Placement.GroupId``, and ``PartitionNumber`` when the NodeClaim
targets a partition); its capacity errors are marked in the group's scope (and the
targeted partition's), and EC2's spread-group limit (seven instances per zone) marks every
candidate type in that zone for the group, without marking a reservation full.

Not implemented (docs/aws.md): the in-flight IP estimate per subnet.
"""

from __future__ import annotations

import builtins
import logging
import math
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

import attrs
from attrs import field, frozen
from botocore.exceptions import (  # type: ignore[import-untyped]
    BotoCoreError,
    ClientError,
)

from karpenter_aws.capacityreservation import CapacityReservationProvider
from karpenter_aws.ec2batch import DirectEC2, EC2Batcher, EC2Calls
from karpenter_aws.labels import (
    LABEL_CAPACITY_RESERVATION_ID,
    LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE,
    LABEL_CAPACITY_RESERVATION_TYPE,
    LABEL_INSTANCE_TENANCY,
    LABEL_NODE_CLASS,
    LABEL_PLACEMENT_GROUP_ID,
    LABEL_PLACEMENT_GROUP_PARTITION,
    LABEL_TOPOLOGY_ZONE_ID,
)
from karpenter_aws.launchtemplate import (
    EKS_CLUSTER_NAME_TAG,
    LT_NOT_FOUND_CODES,
    LaunchTemplateProvider,
    TemplateInputs,
    ec2_tags,
    error_code,
)
from karpenter_aws.placementgroup import is_spread_limit_error
from karpenter_aws.userdata import UserDataError
from karpenter_core.plugin_api import (
    IN,
    CreateError,
    InstanceType,
    InsufficientCapacityError,
    NodeClaim,
    NodeClaimNotFoundError,
    NodeClaimStatus,
    ObjectMeta,
    Requirement,
    Requirements,
    describe_requested,
    fits,
    format_time,
    preference_rank,
    truncate,
)
from karpenter_core.plugin_api import labels as wk
from karpenter_core.plugin_api import resources as res

__all__ = [
    "AMI",
    "ICE_CODES",
    "MAX_INSTANCE_TYPES",
    "NODECLAIM_TAG",
    "NODEPOOL_TAG",
    "Instance",
    "InstanceCache",
    "InstanceProvider",
    "LaunchRequest",
    "Override",
    "TagError",
    "UnavailableMarker",
    "choose_capacity_type",
    "fleet_request",
    "instance_to_nodeclaim",
    "launch_tags",
    "parse_instance_id",
    "reason_for",
]

log = logging.getLogger("karpenter.aws.instance")

NODEPOOL_TAG = wk.NODEPOOL_LABEL_KEY
NODECLAIM_TAG = "karpenter.sh/nodeclaim"
NODECLASS_TAG = LABEL_NODE_CLASS
MAX_INSTANCE_TYPES = 60
"""Upstream truncates a launch to the 60 cheapest types (CreateFleet's override limit)."""

ICE_CODES = frozenset(
    {
        "InsufficientInstanceCapacity",
        "MaxSpotInstanceCountExceeded",
        "VcpuLimitExceeded",
        "UnfulfillableCapacity",
        "Unsupported",
        "InsufficientFreeAddressesInSubnet",
        "MaxFleetCountExceeded",
        "ReservationCapacityExceeded",
    }
)
"""CreateFleet error codes that mean "no capacity for this offering" (upstream's
unfulfillable-capacity set)."""
SPOT_SLR_CODE = "AuthFailure.ServiceLinkedRoleCreationNotPermitted"
NOT_FOUND_CODES = frozenset({"InvalidInstanceID.NotFound", "InvalidInstanceID.Malformed"})
LIVE_STATES = ("pending", "running", "stopping", "stopped", "shutting-down")
RESOURCE_EFA = "vpc.amazonaws.com/efa"
_STATE_FILTER = {"Name": "instance-state-name", "Values": list(LIVE_STATES)}
_RESERVATION_LABELS = frozenset(
    {
        "karpenter.sh/capacity-reservation-id",
        "karpenter.k8s.aws/capacity-reservation-id",
        "karpenter.k8s.aws/capacity-reservation-type",
        "karpenter.k8s.aws/capacity-reservation-interruptible",
    }
)
_RESTRICTED_TAGS = (
    re.compile(r"^kubernetes\.io/cluster/[0-9A-Za-z][A-Za-z0-9\-_]*$"),
    re.compile(rf"^{re.escape(NODEPOOL_TAG)}$"),
    re.compile(rf"^{re.escape(EKS_CLUSTER_NAME_TAG)}$"),
    re.compile(rf"^{re.escape(NODECLASS_TAG)}$"),
    re.compile(rf"^{re.escape(NODECLAIM_TAG)}$"),
)
_PROVIDER_ID = re.compile(r"^aws:///(?P<zone>[^/]*)/(?P<id>i-[0-9a-zA-Z]+)$")

# (substring of "Code: message", reason, message), first match wins: upstream's table.
_REASONS: tuple[tuple[str, str, str], ...] = (
    (SPOT_SLR_CODE, "SpotSLRCreationFailed", "not allowed to create the spot service-linked role"),
    ("Not authorized for images", "AMIAuthorizationFailure", "not authorized for the AMI"),
    ("UnauthorizedOperation", "Unauthorized", "not authorized to perform this operation"),
    ("AccessDenied", "Unauthorized", "not authorized to perform this operation"),
    ("AuthFailure", "Unauthorized", "not authorized to perform this operation"),
    ("belong to different networks", "SecurityGroupSubnetVPCMismatch",
     "security groups and subnets must be in the same VPC"),
    ("iamInstanceProfile.name is invalid", "InstanceProfileNameInvalid",
     "the instance profile in the EC2NodeClass status does not exist"),
    ("InvalidLaunchTemplateId.NotFound", "LaunchTemplateNotFound", "launch template not found"),
    ("User data is limited to", "UserDataSizeLimitExceeded", "user data is too large"),
    ("InvalidAMIID.Malformed", "InvalidAMIID", "the AMI id is invalid"),
    ("InvalidAMIID.NotFound", "AMINotFound", "the AMI does not exist or is not shared with you"),
    ("RequestLimitExceeded", "RequestLimitExceeded", "request limit exceeded"),
    ("InternalError", "InternalError", "an internal error has occurred"),
    ("not eligible for Free Tier", "FreeTierIneligible", "type not eligible for Free Tier"),
    ("MaxFleetCountExceeded", "FleetQuotaExceeded", "fleet request quota exceeded"),
    ("PendingVerification", "AccountPendingVerification", "the account is pending verification"),
    ("MaxSpotInstanceCountExceeded", "SpotQuotaExceeded", "spot instance quota exceeded"),
    ("VcpuLimitExceeded", "VCPULimitExceeded", "vCPU quota exceeded"),
    ("InsufficientFreeAddressesInSubnet", "InsufficientFreeAddressesInSubnet",
     "not enough free IP addresses in the subnet"),
)  # fmt: skip


def reason_for(text: str) -> tuple[str, str]:
    """Upstream's (CreateError reason, message) for an AWS error code or message."""
    for needle, reason, message in _REASONS:
        if needle in text:
            return reason, message
    return "LaunchFailed", "instance launch failed"


class TagError(ValueError):
    """EC2NodeClass tags use a key Karpenter sets itself."""


def launch_tags(
    cluster_name: str,
    nodeclass_name: str,
    nodeclass_tags: Mapping[str, str],
    nodepool: str,
) -> dict[str, str]:
    """The tags of a launch (template, fleet, instance, volumes): the EC2NodeClass's own,
    then the ones Karpenter finds its instances by, which win. Raises :class:`TagError`
    naming user tags that would overwrite them."""
    bad = sorted(k for k in nodeclass_tags if any(p.match(k) for p in _RESTRICTED_TAGS))
    if bad:
        raise TagError(
            f"EC2NodeClass {nodeclass_name!r}: tags {', '.join(bad)} are set by Karpenter "
            "and may not be given in spec.tags"
        )
    return {
        **nodeclass_tags,
        f"kubernetes.io/cluster/{cluster_name}": "owned",
        NODEPOOL_TAG: nodepool,
        EKS_CLUSTER_NAME_TAG: cluster_name,
        NODECLASS_TAG: nodeclass_name,
    }


def parse_instance_id(provider_id: str) -> str:
    """The instance id of ``aws:///<zone>/<id>``; ``ValueError`` naming the bad id."""
    m = _PROVIDER_ID.match(provider_id or "")
    if m is None:
        raise ValueError(f"provider id {provider_id!r} is not of the form aws:///<zone>/<id>")
    return m.group("id")


class UnavailableMarker(Protocol):
    """The part of the unavailable-offerings cache a launch writes to."""

    def mark(
        self,
        instance_type: str,
        zone: str,
        capacity_type: str,
        reason: str = "",
        *,
        placement_group_id: str = "",
        placement_group_partition: str = "",
    ) -> None: ...

    def mark_capacity_type(self, capacity_type: str) -> None: ...

    def mark_subnet(self, subnet_id: str) -> None: ...


@frozen
class Instance:
    """What Karpenter needs to know about one EC2 instance."""

    id: str
    instance_type: str
    zone: str
    state: str
    capacity_type: str
    image_id: str = ""
    zone_id: str = ""
    subnet_id: str = ""
    security_group_ids: tuple[str, ...] = ()
    tags: Mapping[str, str] = field(factory=dict)
    tenancy: str = "default"
    launch_time: datetime | None = None
    reservation_id: str = ""
    reservation_type: str = ""
    reservation_interruptible: bool = False
    placement_group_id: str = ""
    partition: int | None = None

    @property
    def provider_id(self) -> str:
        return f"aws:///{self.zone}/{self.id}"

    @classmethod
    def from_ec2(cls, d: Mapping[str, Any]) -> Instance:
        """From one ``DescribeInstances`` instance.

        Spot is recognised by ``SpotInstanceRequestId`` (upstream) or
        ``InstanceLifecycle == "spot"`` (also set by EC2, and the only marker some EC2
        emulations give).
        """
        placement = d.get("Placement") or {}
        crs = d.get("CapacityReservationSpecification") or {}
        if d.get("SpotInstanceRequestId") or d.get("InstanceLifecycle") == "spot":
            capacity_type = wk.CAPACITY_TYPE_SPOT
        elif (
            d.get("CapacityReservationId")
            and crs.get("CapacityReservationPreference") == "capacity-reservations-only"
        ):
            capacity_type = wk.CAPACITY_TYPE_RESERVED
        else:
            capacity_type = wk.CAPACITY_TYPE_ON_DEMAND
        launch = d.get("LaunchTime")
        lifecycle = d.get("InstanceLifecycle")
        reserved = capacity_type == wk.CAPACITY_TYPE_RESERVED
        return cls(
            id=str(d.get("InstanceId") or ""),
            instance_type=str(d.get("InstanceType") or ""),
            zone=str(placement.get("AvailabilityZone") or ""),
            zone_id=str(placement.get("AvailabilityZoneId") or ""),
            state=str((d.get("State") or {}).get("Name") or ""),
            capacity_type=capacity_type,
            image_id=str(d.get("ImageId") or ""),
            subnet_id=str(d.get("SubnetId") or ""),
            security_group_ids=tuple(
                sorted(str(g.get("GroupId")) for g in d.get("SecurityGroups") or [])
            ),
            tags={str(t.get("Key")): str(t.get("Value") or "") for t in d.get("Tags") or []},
            tenancy=str(placement.get("Tenancy") or "default"),
            launch_time=launch if isinstance(launch, datetime) else None,
            reservation_id=str(d.get("CapacityReservationId") or "") if reserved else "",
            reservation_type=(
                ("capacity-block" if lifecycle == "capacity-block" else "default")
                if reserved
                else ""
            ),
            reservation_interruptible=reserved
            and lifecycle == "interruptible-capacity-reservation",
            placement_group_id=str(placement.get("GroupId") or ""),
            partition=(
                int(placement["PartitionNumber"]) if placement.get("PartitionNumber") else None
            ),
        )


def instance_to_nodeclaim(
    instance: Instance,
    instance_type: InstanceType | None,
    *,
    now: datetime,
    zone_id: str = "",
) -> NodeClaim:
    """The NodeClaim view of an instance (spec §0): the type's single-valued requirements
    as labels plus zone, zone id, capacity type, tenancy, placement group and partition
    (as EC2 reports them) and NodePool (from its tag);
    capacity/allocatable from the type with zeros dropped; a terminating instance gets a
    deletion timestamp of ``now``."""
    labels: dict[str, str] = {wk.LABEL_INSTANCE_TYPE: instance.instance_type}
    capacity: dict[str, str | int | float] = {}
    allocatable: dict[str, str | int | float] = {}
    if instance_type is not None:
        for req in instance_type.requirements.values():
            if req.key in _RESERVATION_LABELS or req.operator() != IN or len(req.values) != 1:
                continue
            labels[req.key] = next(iter(req.values))
        capacity = dict(
            res.format_resource_list({k: v for k, v in instance_type.capacity.items() if v})
        )
        allocatable = dict(
            res.format_resource_list({k: v for k, v in instance_type.allocatable().items() if v})
        )
    labels[wk.LABEL_TOPOLOGY_ZONE] = instance.zone
    if zone_id or instance.zone_id:
        labels[LABEL_TOPOLOGY_ZONE_ID] = zone_id or instance.zone_id
    labels[wk.CAPACITY_TYPE_LABEL_KEY] = instance.capacity_type
    if instance.capacity_type == wk.CAPACITY_TYPE_RESERVED and instance.reservation_id:
        labels[LABEL_CAPACITY_RESERVATION_ID] = instance.reservation_id
        labels[LABEL_CAPACITY_RESERVATION_TYPE] = instance.reservation_type or "default"
        labels[LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE] = str(
            instance.reservation_interruptible
        ).lower()
    labels[LABEL_INSTANCE_TENANCY] = instance.tenancy
    if instance.placement_group_id:
        labels[LABEL_PLACEMENT_GROUP_ID] = instance.placement_group_id
    if instance.partition is not None:
        labels[LABEL_PLACEMENT_GROUP_PARTITION] = str(instance.partition)
    if NODEPOOL_TAG in instance.tags:
        labels[wk.NODEPOOL_LABEL_KEY] = instance.tags[NODEPOOL_TAG]
    terminating = instance.state in ("shutting-down", "terminated")
    return NodeClaim(
        metadata=ObjectMeta(
            name=instance.tags.get(NODECLAIM_TAG) or None,
            labels=labels,
            creation_timestamp=format_time(instance.launch_time) if instance.launch_time else None,
            deletion_timestamp=format_time(now) if terminating else None,
        ),
        status=NodeClaimStatus(
            provider_id=instance.provider_id,
            image_id=instance.image_id or None,
            capacity=capacity,
            allocatable=allocatable,
        ),
    )


# --- launch ------------------------------------------------------------------------------


@frozen
class AMI:
    """An AMI the EC2NodeClass resolved and the instance types it suits."""

    id: str
    requirements: Requirements


@frozen
class Override:
    """One (instance type, zone) CreateFleet may pick, priced for its priority; with a
    launch preference ``priority`` is the type's rank in it instead (lower first)."""

    instance_type: str
    zone: str
    subnet_id: str
    image_id: str
    price: float
    priority: float | None = None

    def request(self) -> dict[str, Any]:
        return {
            "InstanceType": self.instance_type,
            "SubnetId": self.subnet_id,
            "AvailabilityZone": self.zone,
            "ImageId": self.image_id,
            "Priority": self.price if self.priority is None else self.priority,
        }


def _types_tuple(value: Iterable[InstanceType]) -> tuple[InstanceType, ...]:
    return tuple(value)


def _amis_tuple(value: Iterable[AMI]) -> tuple[AMI, ...]:
    return tuple(value)


@frozen
class LaunchRequest:
    """Everything one launch needs, resolved by the caller (explicit, so it is testable
    without a cluster): the NodeClaim's name/requirements/requests, the candidate types
    (with offerings and prices), one subnet per zone, the EC2NodeClass's AMIs (newest
    first), the template inputs, the fleet tags, the optional fleet ``Context`` and the
    placement group (and partition) the templates place into."""

    nodeclaim_name: str
    requirements: Requirements
    instance_types: tuple[InstanceType, ...] = field(converter=_types_tuple)
    subnets: Mapping[str, str]
    amis: tuple[AMI, ...] = field(converter=_amis_tuple)
    template: TemplateInputs
    tags: Mapping[str, str]
    requests: Mapping[str, int] = field(factory=dict)
    context: str | None = None
    # the ICE scope of a launch into a placement group (and targeted partition)
    placement_group_id: str = ""
    placement_group_partition: str = ""
    # the NodeClaim's launch order (an instance-type scorer's), type -> rank; empty: price
    preference: Mapping[str, int] = field(factory=dict)


FLEXIBILITY_THRESHOLD = 5
"""Fewer candidate types than this for an on-demand launch that could have been spot is
worth a warning (upstream's ``instanceTypeFlexibilityThreshold``)."""


def on_demand_fallback_warning(
    reqs: Requirements, capacity_type: str, instance_types: Sequence[InstanceType]
) -> str:
    """Upstream's on-demand fallback check: a launch that buys on-demand although spot was
    allowed (no spot offering was available) with fewer than
    :data:`FLEXIBILITY_THRESHOLD` types risks running out of capacity too; the message to
    log, or ``""``."""
    if capacity_type != wk.CAPACITY_TYPE_ON_DEMAND:
        return ""
    if not reqs.has(wk.CAPACITY_TYPE_LABEL_KEY) or not reqs.get(wk.CAPACITY_TYPE_LABEL_KEY).has(
        wk.CAPACITY_TYPE_SPOT
    ):
        return ""
    if len(instance_types) >= FLEXIBILITY_THRESHOLD:
        return ""
    return (
        f"at least {FLEXIBILITY_THRESHOLD} instance types are recommended when flexible to "
        "spot but requesting on-demand, the current provisioning request only has "
        f"{len(instance_types)} instance type options"
    )


def choose_capacity_type(reqs: Requirements, instance_types: Sequence[InstanceType]) -> str:
    """Reserved, then spot, then on-demand: the first the requirements allow and some
    type has an available offering of (upstream's order)."""
    ct = reqs.get(wk.CAPACITY_TYPE_LABEL_KEY) if reqs.has(wk.CAPACITY_TYPE_LABEL_KEY) else None
    if ct is None or ct.has(wk.CAPACITY_TYPE_RESERVED):
        reserved = _with_capacity_type(reqs, wk.CAPACITY_TYPE_RESERVED)
        for it in instance_types:
            if it.offerings.available().has_compatible(reserved):
                return wk.CAPACITY_TYPE_RESERVED
    if ct is None or ct.has(wk.CAPACITY_TYPE_SPOT):
        spot = _with_capacity_type(reqs, wk.CAPACITY_TYPE_SPOT)
        for it in instance_types:
            if it.offerings.available().has_compatible(spot):
                return wk.CAPACITY_TYPE_SPOT
    return wk.CAPACITY_TYPE_ON_DEMAND


def _with_capacity_type(reqs: Requirements, capacity_type: str) -> Requirements:
    out = reqs.copy()
    out.add(Requirement.new(wk.CAPACITY_TYPE_LABEL_KEY, IN, [capacity_type]))
    return out


def by_preference(
    instance_types: Sequence[InstanceType], reqs: Requirements, preference: Mapping[str, int]
) -> list[InstanceType]:
    """The types in the NodeClaim's launch order: best-ranked first, then cheapest
    compatible available offering first."""

    def key(it: InstanceType) -> tuple[int, float]:
        cheapest = it.offerings.available().compatible(reqs).cheapest()
        return (
            preference_rank(preference, it.name),
            math.inf if cheapest is None else cheapest.price,
        )

    return sorted(instance_types, key=key)


def filter_instance_types(
    reqs: Requirements,
    requests: Mapping[str, int],
    instance_types: Sequence[InstanceType],
    preference: Mapping[str, int] | None = None,
) -> list[InstanceType]:
    """The types the requirements allow (instance type, arch, ...), with an available
    offering they allow, and that fit the requests, cheapest first, truncated to
    :data:`MAX_INSTANCE_TYPES`; with a ``preference`` (the NodeClaim's launch order) the
    best-ranked first, truncated in that order. Raises ``InsufficientCapacityError`` when
    none is left."""
    kept = [
        it
        for it in instance_types
        if it.requirements.intersects(reqs) is None
        and it.offerings.available().has_compatible(reqs)
        and fits(it, requests, reqs)[0]
    ]
    if not kept:
        raise InsufficientCapacityError(
            "all requested instance types were unavailable during launch "
            f"({describe_requested(reqs)})"
        )
    kept = spot_offering_filter(reqs, exotic_filter(reqs, kept))
    if not kept:
        raise InsufficientCapacityError(
            "all requested instance types were unavailable during launch "
            f"({describe_requested(reqs)})"
        )
    if preference:
        kept = by_preference(kept, reqs, preference)[:MAX_INSTANCE_TYPES]
    truncated, err = truncate(kept, reqs, MAX_INSTANCE_TYPES)
    if err is not None:
        raise InsufficientCapacityError(f"truncating instance types, {err}")
    return by_preference(truncated, reqs, preference) if preference else truncated


_EXOTIC_RESOURCES = (
    "aws.amazon.com/neuron",
    "aws.amazon.com/neuroncore",
    "amd.com/gpu",
    "nvidia.com/gpu",
    "habana.ai/gaudi",
)


def exotic_filter(reqs: Requirements, instance_types: Sequence[InstanceType]) -> list[InstanceType]:
    """Leave out metal and accelerated types when plain ones will do (upstream's
    exotic-instance filter): a NodeClaim that did not ask for a GPU should not get one just
    because it was cheapest somewhere. Everything is kept when only exotic types remain or
    the requirements carry minValues (the flexibility they demand counts every type)."""
    if reqs.has_min_values():
        return list(instance_types)
    size_key = "karpenter.k8s.aws/instance-size"

    def generic(it: InstanceType) -> bool:
        sizes = it.requirements.get(size_key).values if it.requirements.has(size_key) else ()
        if any("metal" in size for size in sizes):
            return False
        return not any(it.capacity.get(r) for r in _EXOTIC_RESOURCES)

    plain = [it for it in instance_types if generic(it)]
    return plain or list(instance_types)


def spot_offering_filter(
    reqs: Requirements, instance_types: Sequence[InstanceType]
) -> list[InstanceType]:
    """When both spot and on-demand are allowed, drop spot offerings dearer than the
    cheapest on-demand one (upstream's spot-offering filter): paying more for spot than
    for on-demand is never the point. Types left with no offering are dropped."""
    ct = reqs.get(wk.CAPACITY_TYPE_LABEL_KEY)
    if (
        reqs.has_min_values()
        or not ct.has(wk.CAPACITY_TYPE_SPOT)
        or not ct.has(wk.CAPACITY_TYPE_ON_DEMAND)
    ):
        return list(instance_types)
    cheapest_od = math.inf
    has_spot = False
    for it in instance_types:
        for o in it.offerings.compatible(reqs).available():
            if o.capacity_type == wk.CAPACITY_TYPE_ON_DEMAND:
                cheapest_od = min(cheapest_od, o.price)
            elif o.capacity_type == wk.CAPACITY_TYPE_SPOT:
                has_spot = True
    if cheapest_od == math.inf or not has_spot:
        return list(instance_types)
    out: list[InstanceType] = []
    for it in instance_types:
        kept = [
            o
            for o in it.offerings
            if not (o.capacity_type == wk.CAPACITY_TYPE_SPOT and o.price > cheapest_od)
        ]
        if len(kept) == len(it.offerings):
            out.append(it)
        elif kept:
            out.append(it.with_offerings(kept))
    return out


def reserved_offering_filter(
    reqs: Requirements, instance_types: Sequence[InstanceType]
) -> list[InstanceType]:
    """For a reserved launch: each type keeps one reserved offering per zone, the one
    with the most capacity left (upstream's reserved-offering filter), so a launch
    template and override exist per reservation and the launched instance's zone names
    its reservation. Types with none are dropped."""
    out: list[InstanceType] = []
    for it in instance_types:
        best: dict[str, Any] = {}
        for o in it.offerings.available().compatible(reqs):
            if o.capacity_type != wk.CAPACITY_TYPE_RESERVED:
                continue
            current = best.get(o.zone)
            if current is None or o.reservation_capacity > current.reservation_capacity:
                best[o.zone] = o
        if best:
            out.append(it.with_offerings([best[z] for z in sorted(best)]))
    return out


def _reservation_of(o: Any) -> tuple[str, str, bool]:
    reqs = o.requirements

    def one(key: str) -> str:
        return next(iter(reqs.get(key).values), "") if reqs.has(key) else ""

    return (
        one(LABEL_CAPACITY_RESERVATION_ID),
        one(LABEL_CAPACITY_RESERVATION_TYPE) or "default",
        one(LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE) == "true",
    )


def ami_for(instance_type: InstanceType, amis: Sequence[AMI]) -> str | None:
    """The first (newest) AMI whose requirements the type meets."""
    for ami in amis:
        if instance_type.requirements.is_compatible(
            ami.requirements, allow_undefined=wk.WELL_KNOWN_LABELS
        ):
            return ami.id
    return None


def build_overrides(
    instance_types: Sequence[InstanceType],
    reqs: Requirements,
    subnets: Mapping[str, str],
    image_id: str,
    preference: Mapping[str, int] | None = None,
) -> list[Override]:
    """One override per (type, zone) with an available offering ``reqs`` allow and a
    subnet in that zone, priced by the offering; with a ``preference`` its priority is
    the type's rank there."""
    out: list[Override] = []
    seen: set[tuple[str, str]] = set()
    for it in instance_types:
        for o in it.offerings.available().compatible(reqs):
            key = (it.name, o.zone)
            if key in seen or o.zone not in subnets:
                continue
            seen.add(key)
            rank = float(preference_rank(preference, it.name)) if preference else None
            out.append(Override(it.name, o.zone, subnets[o.zone], image_id, o.price, rank))
    return out


def fleet_request(
    configs: Sequence[tuple[str, Sequence[Override]]],
    capacity_type: str,
    tags: Mapping[str, str],
    context: str | None = None,
    *,
    reservation_type: str = "",
    interruptible: bool = False,
    prioritized: bool = False,
) -> dict[str, Any]:
    """The ``CreateFleet`` arguments: instant, one instance, one config per template.

    ``prioritized`` (the NodeClaim carries a launch preference): the overrides'
    priorities are the preference's ranks, and the allocation strategies follow them
    (``prioritized`` on-demand, ``capacity-optimized-prioritized`` spot) instead of price.

    A reserved launch buys ``capacity-block`` for a capacity block, ``reserved-capacity``
    for an interruptible reservation, else on-demand (the templates target the
    reservations)."""
    target = capacity_type
    if capacity_type == wk.CAPACITY_TYPE_RESERVED:
        target = (
            "capacity-block"
            if reservation_type == "capacity-block"
            else "reserved-capacity"
            if interruptible
            else wk.CAPACITY_TYPE_ON_DEMAND
        )
    request: dict[str, Any] = {
        "Type": "instant",
        "TargetCapacitySpecification": {
            "TotalTargetCapacity": 1,
            "DefaultTargetCapacityType": target,
        },
        "LaunchTemplateConfigs": [
            {
                "LaunchTemplateSpecification": {"LaunchTemplateName": name, "Version": "$Latest"},
                "Overrides": [o.request() for o in overrides],
            }
            for name, overrides in configs
        ],
        "TagSpecifications": [
            {"ResourceType": r, "Tags": ec2_tags(tags)} for r in ("instance", "volume", "fleet")
        ],
    }
    if capacity_type == wk.CAPACITY_TYPE_SPOT:
        request["SpotOptions"] = {
            "AllocationStrategy": "capacity-optimized-prioritized"
            if prioritized
            else "price-capacity-optimized"
        }
    elif target == "reserved-capacity":
        request["ReservedCapacityOptions"] = {
            "ReservationTypes": ["interruptible-capacity-reservation"]
        }
    elif target != "capacity-block":
        request["OnDemandOptions"] = {
            "AllocationStrategy": "prioritized" if prioritized else "lowest-price"
        }
    if context:
        request["Context"] = context
    return request


LAUNCH_GRACE_SECONDS = 60.0
"""How long an instance this process launched stays cached although ``list`` does not
show it (EC2's eventual consistency)."""


class InstanceCache:
    """The instances last seen, by id, with no expiry (upstream's instance cache).

    ``get`` answers from it; a lookup that skips it and a ``list`` bring entries up to
    date, ``list`` forgets instances EC2 no longer reports, except those launched here
    less than :data:`LAUNCH_GRACE_SECONDS` ago, and a termination forgets its instance
    (upstream keeps the entry as it was before, so a cached ``get`` would still say
    running).
    """

    def __init__(
        self,
        monotonic: Callable[[], float] = time.monotonic,
        grace: float = LAUNCH_GRACE_SECONDS,
    ) -> None:
        self._monotonic = monotonic
        self._grace = grace
        self._items: dict[str, Instance] = {}
        self._launched: dict[str, float] = {}
        self._lock = threading.Lock()

    def get(self, instance_id: str) -> Instance | None:
        with self._lock:
            return self._items.get(instance_id)

    def put(self, instance: Instance) -> None:
        with self._lock:
            self._items[instance.id] = instance

    def launched(self, instance: Instance) -> None:
        """Remember an instance this process just launched."""
        with self._lock:
            self._items[instance.id] = instance
            self._launched[instance.id] = self._monotonic()

    def forget(self, instance_id: str) -> None:
        with self._lock:
            self._items.pop(instance_id, None)
            self._launched.pop(instance_id, None)

    def replace(self, listed: Iterable[Instance]) -> None:
        """What a full listing found; the rest is forgotten but recent launches."""
        now = self._monotonic()
        with self._lock:
            fresh = {i.id: i for i in listed}
            recent = {
                k: t for k, t in self._launched.items() if now - t < self._grace and k not in fresh
            }
            self._items = {**{k: self._items[k] for k in recent if k in self._items}, **fresh}
            self._launched = recent

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


class _TemplateNotFound(Exception):
    def __init__(self, cause: ClientError) -> None:
        super().__init__(str(cause))
        self.cause = cause


class InstanceProvider:
    """Launches, finds and terminates this cluster's EC2 instances."""

    def __init__(
        self,
        ec2: Any,
        cluster_name: str,
        unavailable: UnavailableMarker,
        launch_templates: LaunchTemplateProvider | None = None,
        *,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
        calls: EC2Calls | None = None,
        batch: bool = True,
        cache: InstanceCache | None = None,
    ) -> None:
        """``calls`` makes the per-instance EC2 calls: by default an
        :class:`~karpenter_aws.ec2batch.EC2Batcher`, or one EC2 call each when ``batch``
        is False."""
        self._ec2 = ec2
        self._cluster = cluster_name
        self._unavailable = unavailable
        self.launch_templates = launch_templates or LaunchTemplateProvider(ec2)
        self._wall = wall
        self.calls: EC2Calls = calls or (EC2Batcher(ec2) if batch else DirectEC2(ec2))
        self.cache = cache if cache is not None else InstanceCache()  # empty is falsy
        # told when a reservation turns out full (set by the cloud provider)
        self.reservations: CapacityReservationProvider | None = None

    # ------------------------------------------------------------------ create

    def create(self, request: LaunchRequest) -> Instance:
        """Launch one instance for ``request`` (see the module docstring for errors)."""
        reqs = request.requirements
        types = filter_instance_types(
            reqs, request.requests, request.instance_types, request.preference
        )
        capacity_type = choose_capacity_type(reqs, types)
        warning = on_demand_fallback_warning(reqs, capacity_type, types)
        if warning:
            log.error("failed while checking on-demand fallback: %s", warning)
        if capacity_type == wk.CAPACITY_TYPE_RESERVED:
            types = reserved_offering_filter(
                _with_capacity_type(reqs, wk.CAPACITY_TYPE_RESERVED), types
            )
        try:
            return self._launch(request, types, capacity_type)
        except _TemplateNotFound:
            log.info("launch template vanished; retrying launch of %s", request.nodeclaim_name)
        try:
            return self._launch(request, types, capacity_type)
        except _TemplateNotFound as e:
            reason, message = "LaunchTemplateNotFound", "launch template not found"
            raise CreateError(
                f"launch templates not found when creating fleet request, {e.cause}",
                reason,
                message,
            ) from e.cause

    def _launch(
        self, request: LaunchRequest, types: Sequence[InstanceType], capacity_type: str
    ) -> Instance:
        reqs = _with_capacity_type(request.requirements, capacity_type)
        # one template per (AMI, max pods, EFA interfaces): all three are in its content;
        # EFA interfaces only when the NodeClaim asks for EFA, as many as the type offers
        wants_efa = request.requests.get(RESOURCE_EFA, 0) > 0
        # a reserved launch also has one template per reservation (the template targets it)
        groups: dict[
            tuple[str, int | None, int, tuple[str, str, bool] | None], list[InstanceType]
        ] = {}
        for it in types:
            ami = ami_for(it, request.amis)
            if ami is None:
                continue
            pods = it.capacity.get(res.PODS)
            efa = it.capacity.get(RESOURCE_EFA, 0) // 1000 if wants_efa else 0
            base = (ami, pods // 1000 if pods else None, efa)
            if capacity_type != wk.CAPACITY_TYPE_RESERVED:
                groups.setdefault((*base, None), []).append(it)
                continue
            for o in it.offerings:
                groups.setdefault((*base, _reservation_of(o)), []).append(it)
        if not groups:
            amis = ", ".join(a.id for a in request.amis) or "none"
            raise CreateError(
                f"no instance type satisfies the requirements of the AMIs ({amis})",
                "NoCompatibleAMI",
                "no AMI of the EC2NodeClass suits the candidate instance types",
            )
        configs: list[tuple[str, list[Override]]] = []
        reservation_type, interruptible = "", False
        for (ami, max_pods, efa_count, reservation), its in groups.items():
            group_reqs = reqs
            if reservation is not None:
                group_reqs = reqs.copy()
                group_reqs.add(Requirement.new(LABEL_CAPACITY_RESERVATION_ID, IN, [reservation[0]]))
                # upstream: the types of one launch share the reservation type
                reservation_type, interruptible = reservation[1], reservation[2]
            overrides = build_overrides(its, group_reqs, request.subnets, ami, request.preference)
            if not overrides:
                continue
            try:
                spec = request.template.spec(
                    ami,
                    max_pods,
                    capacity_type,
                    efa_count,
                    reservation[:2] if reservation is not None else None,
                )
                name = self.launch_templates.ensure(spec)
            except UserDataError as e:
                raise CreateError(e, "UserDataInvalid", str(e)) from e
            except (ClientError, BotoCoreError) as e:
                reason, message = reason_for(f"{error_code(e)}: {e}")
                raise CreateError(
                    f"getting launch template configs, {e}",
                    reason,
                    f"Error getting launch template configs: {message}",
                ) from e
            configs.append((name, overrides))
        if not configs:
            raise InsufficientCapacityError(
                "no capacity offerings are currently available given the constraints "
                f"(zones with subnets: {', '.join(sorted(request.subnets)) or 'none'})"
            )
        fleet = fleet_request(
            configs,
            capacity_type,
            request.tags,
            request.context,
            reservation_type=reservation_type,
            interruptible=interruptible,
            prioritized=bool(request.preference),
        )
        try:
            out = self.calls.create_fleet(fleet)
        except ClientError as e:
            if error_code(e) in LT_NOT_FOUND_CODES:
                for name, _ in configs:
                    self.launch_templates.invalidate(name)
                raise _TemplateNotFound(e) from e
            reason, message = reason_for(f"{error_code(e)}: {e}")
            raise CreateError(
                f"creating fleet request, {e}", reason, f"Error creating fleet request: {message}"
            ) from e
        except BotoCoreError as e:
            raise CreateError(f"creating fleet request, {e}", "LaunchFailed", str(e)) from e
        errors = out.get("Errors") or []
        self._mark_unavailable(errors, capacity_type, types, request)
        for fi in out.get("Instances") or []:
            ids = fi.get("InstanceIds") or []
            if ids:
                instance = self._from_fleet(fi, ids[0], capacity_type, request)
                if capacity_type == wk.CAPACITY_TYPE_RESERVED:
                    instance = _with_reservation(instance, types)
                self.cache.launched(instance)
                return instance
        raise _fleet_error(errors)

    def _mark_unavailable(
        self,
        errors: Sequence[Mapping[str, Any]],
        capacity_type: str,
        types: Sequence[InstanceType] = (),
        request: LaunchRequest | None = None,
    ) -> None:
        full: list[str] = []
        group = request.placement_group_id if request is not None else ""
        partition = request.placement_group_partition if request is not None else ""
        for err in errors:
            code = str(err.get("ErrorCode") or "")
            overrides = (err.get("LaunchTemplateAndOverrides") or {}).get("Overrides") or {}
            it, zone = (
                str(overrides.get("InstanceType") or ""),
                str(overrides.get("AvailabilityZone") or ""),
            )
            subnet = str(overrides.get("SubnetId") or "")
            if code == "InsufficientFreeAddressesInSubnet" and subnet:
                self._unavailable.mark_subnet(subnet)
            spread_limit = bool(group) and is_spread_limit_error(str(err.get("ErrorMessage") or ""))
            if code in ICE_CODES and zone and spread_limit:
                # the group is full in this zone, whatever the type
                log.info("placement group %s is full in %s: %s", group, zone, code)
                for t in types:
                    self._unavailable.mark(
                        t.name, zone, capacity_type, code, placement_group_id=group
                    )
                continue
            if code in ICE_CODES and it and zone:
                log.info("marking %s %s in %s unavailable: %s", capacity_type, it, zone, code)
                self._unavailable.mark(
                    it,
                    zone,
                    capacity_type,
                    code,
                    placement_group_id=group,
                    placement_group_partition=partition if group else "",
                )
            elif code == SPOT_SLR_CODE:
                log.warning("spot disabled: the spot service-linked role cannot be created")
                self._unavailable.mark_capacity_type(wk.CAPACITY_TYPE_SPOT)
            if capacity_type == wk.CAPACITY_TYPE_RESERVED and code in ICE_CODES and it and zone:
                rid = _reservation_in(types, it, zone)
                if rid:
                    log.info("marking capacity reservation %s unavailable: %s", rid, code)
                    full.append(rid)
        if full and self.reservations is not None:
            self.reservations.mark_unavailable(*full)

    def _from_fleet(
        self, fi: Mapping[str, Any], instance_id: str, capacity_type: str, request: LaunchRequest
    ) -> Instance:
        overrides = (fi.get("LaunchTemplateAndOverrides") or {}).get("Overrides") or {}
        return Instance(
            id=str(instance_id),
            instance_type=str(fi.get("InstanceType") or overrides.get("InstanceType") or ""),
            zone=str(overrides.get("AvailabilityZone") or ""),
            state="pending",
            capacity_type=capacity_type,
            image_id=str(overrides.get("ImageId") or ""),
            subnet_id=str(overrides.get("SubnetId") or ""),
            security_group_ids=tuple(sorted(request.template.security_group_ids)),
            tags=dict(request.tags),
            tenancy=request.template.tenancy,
            launch_time=self._wall(),
            placement_group_id=request.placement_group_id,
            partition=int(request.placement_group_partition)
            if request.placement_group_partition
            else None,
        )

    # ------------------------------------------------------------------ find / delete

    def get(self, instance_id: str, *, skip_cache: bool = False) -> Instance:
        """The live instance ``instance_id``, from the cache unless ``skip_cache``;
        NodeClaimNotFoundError when EC2 does not know it or it is terminated."""
        if not skip_cache:
            cached = self.cache.get(instance_id)
            if cached is not None:
                return cached
        try:
            out = self.calls.describe_instances(instance_id, [_STATE_FILTER])
        except ClientError as e:
            if error_code(e) in NOT_FOUND_CODES:
                self.cache.forget(instance_id)
                raise NodeClaimNotFoundError(e) from e
            raise
        found = [
            Instance.from_ec2(i)
            for r in out.get("Reservations") or []
            for i in r.get("Instances") or []
        ]
        if not found:
            self.cache.forget(instance_id)
            raise NodeClaimNotFoundError(f"instance {instance_id} not found or terminated")
        self.cache.put(found[0])
        return found[0]

    def list(self) -> builtins.list[Instance]:
        """Every live instance of this cluster that Karpenter launched (by tags)."""
        filters = [
            {"Name": "tag-key", "Values": [NODEPOOL_TAG]},
            {"Name": "tag-key", "Values": [NODECLASS_TAG]},
            {"Name": f"tag:{EKS_CLUSTER_NAME_TAG}", "Values": [self._cluster]},
            _STATE_FILTER,
        ]
        out: builtins.list[Instance] = []
        pages = self._ec2.get_paginator("describe_instances").paginate(
            Filters=filters, PaginationConfig={"PageSize": 1000}
        )
        for page in pages:
            for r in page.get("Reservations") or []:
                out.extend(Instance.from_ec2(i) for i in r.get("Instances") or [])
        self.cache.replace(out)
        return out

    def delete(self, instance_id: str) -> None:
        """Terminate ``instance_id`` unless it already is shutting down;
        NodeClaimNotFoundError once it is gone."""
        instance = self.get(instance_id, skip_cache=True)
        if instance.state == "shutting-down":
            return
        try:
            self.calls.terminate_instances(instance_id)
        except ClientError as e:
            if error_code(e) in NOT_FOUND_CODES:
                self.cache.forget(instance_id)
                raise NodeClaimNotFoundError(e) from e
            raise
        # the cached state is the one before termination: the next get asks EC2
        self.cache.forget(instance_id)

    def create_tags(self, instance_id: str, tags: Mapping[str, str]) -> None:
        """Add tags to an instance; NodeClaimNotFoundError when it is gone."""
        try:
            self._ec2.create_tags(Resources=[instance_id], Tags=ec2_tags(tags))
        except ClientError as e:
            if error_code(e) in NOT_FOUND_CODES:
                raise NodeClaimNotFoundError(e) from e
            raise


def _reservation_in(types: Sequence[InstanceType], name: str, zone: str) -> str:
    """The reservation a reserved launch of ``name`` in ``zone`` went to (the reserved
    offering filter left one per type and zone)."""
    for it in types:
        if it.name != name:
            continue
        for o in it.offerings:
            if o.zone == zone and o.capacity_type == wk.CAPACITY_TYPE_RESERVED:
                return _reservation_of(o)[0]
    return ""


def _with_reservation(instance: Instance, types: Sequence[InstanceType]) -> Instance:
    for it in types:
        if it.name != instance.instance_type:
            continue
        for o in it.offerings:
            if o.zone == instance.zone and o.capacity_type == wk.CAPACITY_TYPE_RESERVED:
                rid, rtype, interruptible = _reservation_of(o)
                return attrs.evolve(
                    instance,
                    reservation_id=rid,
                    reservation_type=rtype,
                    reservation_interruptible=interruptible,
                )
    return instance


def _fleet_error(errors: Sequence[Mapping[str, Any]]) -> Exception:
    """The error of a fleet answer with no instance: capacity when every entry is a
    capacity code (or there is none), else a CreateError with the first other reason."""
    texts = [f"{e.get('ErrorCode')}: {e.get('ErrorMessage') or ''}" for e in errors]
    summary = "; ".join(sorted(set(texts))) or "CreateFleet returned no instance and no error"
    if all(str(e.get("ErrorCode") or "") in ICE_CODES for e in errors):
        return InsufficientCapacityError(summary)
    other = next(
        t for e, t in zip(errors, texts, strict=True) if e.get("ErrorCode") not in ICE_CODES
    )
    reason, message = reason_for(other)
    return CreateError(f"creating fleet request, {summary}", reason, message)
