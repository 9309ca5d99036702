"""The EC2NodeClass (``karpenter.k8s.aws/v1``) as a frozen value.

Every AWS module reads the NodeClass through :meth:`EC2NodeClass.from_dict`, so the CRD's
rules (one of ``role``/``instanceProfile``, an alias alone, ``amiFamily`` required without
one, restricted tag keys, ...) are checked in one place: an object that slipped past the
API server's validation (the CRD not installed, an older schema) fails here with a
:class:`NodeClassError` naming the field, never with a traceback deep inside a launch.

The spec's resolved view (``ami_family`` after alias resolution, parsed kubelet
configuration, volume sizes in bytes) is what the catalogue and launch code need; the raw
spec stays available for the drift hash, which must cover fields this module does not model.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import field, frozen

from karpenter_aws.capacityreservation import CapacityReservation
from karpenter_aws.labels import EC2_NODE_CLASS, GROUP
from karpenter_core.plugin_api import (
    DurationError,
    KubeClient,
    NotFound,
    QuantityError,
    Requirements,
    ResourceType,
    parse_go_duration,
    parse_quantity,
    register_resource,
)

__all__ = [
    "AMI_FAMILIES",
    "AMI_FAMILY_AL2",
    "AMI_FAMILY_AL2023",
    "AMI_FAMILY_BOTTLEROCKET",
    "AMI_FAMILY_CUSTOM",
    "AMI_FAMILY_WINDOWS2019",
    "AMI_FAMILY_WINDOWS2022",
    "AMI_FAMILY_WINDOWS2025",
    "CONDITION_AMIS_READY",
    "CONDITION_CAPACITY_RESERVATIONS_READY",
    "CONDITION_INSTANCE_PROFILE_READY",
    "CONDITION_PLACEMENT_GROUP_READY",
    "CONDITION_READY",
    "CONDITION_SECURITY_GROUPS_READY",
    "CONDITION_SUBNETS_READY",
    "CONDITION_VALIDATION_SUCCEEDED",
    "FINALIZER",
    "HASH_ANNOTATION",
    "HASH_VERSION",
    "HASH_VERSION_ANNOTATION",
    "NODECLASS_RESOURCE",
    "READY_CONDITIONS",
    "READY_CONDITIONS_RESERVED",
    "AMISelectorTerm",
    "AMIStatus",
    "Alias",
    "BlockDeviceMapping",
    "CapacityReservationSelectorTerm",
    "ConnectionTracking",
    "EC2NodeClass",
    "KubeletConfiguration",
    "MetadataOptions",
    "NetworkInterface",
    "NodeClassError",
    "PlacementGroupSelector",
    "SecurityGroupSelectorTerm",
    "SecurityGroupStatus",
    "SubnetSelectorTerm",
    "SubnetStatus",
    "get_nodeclass",
    "parse_alias",
]

NODECLASS_RESOURCE: ResourceType = register_resource(
    ResourceType(
        group=EC2_NODE_CLASS.group,
        version=EC2_NODE_CLASS.version,
        kind=EC2_NODE_CLASS.kind,
        plural="ec2nodeclasses",
        namespaced=False,
        status_subresource=True,
        tracks_generation=True,
        unconditional_update=False,
    )
)
"""EC2NodeClasses as the kube clients know them (a cluster-scoped custom resource with a
status subresource); registered on import so clients and the in-memory API server resolve
the kind."""

HASH_VERSION = "v6"
HASH_ANNOTATION = f"{GROUP}/ec2nodeclass-hash"
HASH_VERSION_ANNOTATION = f"{GROUP}/ec2nodeclass-hash-version"
FINALIZER = f"{GROUP}/termination"

CONDITION_READY = "Ready"
CONDITION_SUBNETS_READY = "SubnetsReady"
CONDITION_SECURITY_GROUPS_READY = "SecurityGroupsReady"
CONDITION_AMIS_READY = "AMIsReady"
CONDITION_INSTANCE_PROFILE_READY = "InstanceProfileReady"
CONDITION_VALIDATION_SUCCEEDED = "ValidationSucceeded"
CONDITION_CAPACITY_RESERVATIONS_READY = "CapacityReservationsReady"
CONDITION_PLACEMENT_GROUP_READY = "PlacementGroupReady"
READY_CONDITIONS: tuple[str, ...] = (
    CONDITION_AMIS_READY,
    CONDITION_SUBNETS_READY,
    CONDITION_SECURITY_GROUPS_READY,
    CONDITION_INSTANCE_PROFILE_READY,
    CONDITION_VALIDATION_SUCCEEDED,
    CONDITION_PLACEMENT_GROUP_READY,
)
"""The conditions whose conjunction is Ready (upstream's). ``PlacementGroupReady`` is True
without a ``placementGroupSelector`` ("resolved nothing")."""
READY_CONDITIONS_RESERVED: tuple[str, ...] = (
    *READY_CONDITIONS,
    CONDITION_CAPACITY_RESERVATIONS_READY,
)
"""Ready's conditions with the ReservedCapacity gate on (upstream's only with the gate):
``CapacityReservationsReady`` turns True once the selector terms have been resolved."""

AMI_FAMILY_AL2 = "AL2"
AMI_FAMILY_AL2023 = "AL2023"
AMI_FAMILY_BOTTLEROCKET = "Bottlerocket"
AMI_FAMILY_CUSTOM = "Custom"
AMI_FAMILY_WINDOWS2019 = "Windows2019"
AMI_FAMILY_WINDOWS2022 = "Windows2022"
AMI_FAMILY_WINDOWS2025 = "Windows2025"
AMI_FAMILIES: tuple[str, ...] = (
    AMI_FAMILY_AL2,
    AMI_FAMILY_AL2023,
    AMI_FAMILY_BOTTLEROCKET,
    AMI_FAMILY_CUSTOM,
    AMI_FAMILY_WINDOWS2019,
    AMI_FAMILY_WINDOWS2022,
    AMI_FAMILY_WINDOWS2025,
)
_ALIAS_FAMILIES: dict[str, str] = {f.lower(): f for f in AMI_FAMILIES if f != AMI_FAMILY_CUSTOM}
_WINDOWS_FAMILIES = frozenset(
    {AMI_FAMILY_WINDOWS2019, AMI_FAMILY_WINDOWS2022, AMI_FAMILY_WINDOWS2025}
)

# Tag keys Karpenter sets itself: a user tag with one of them would hide which cluster,
# NodePool or NodeClaim owns an instance.
_RESTRICTED_TAG_KEYS = frozenset(
    {
        "eks:eks-cluster-name",
        "karpenter.sh/nodepool",
        "karpenter.sh/nodeclaim",
        f"{GROUP}/ec2nodeclass",
    }
)
_RESTRICTED_TAG_PREFIX = "kubernetes.io/cluster"

_SUBNET_ID = re.compile(r"subnet-[0-9a-z]+")
_SG_ID = re.compile(r"sg-[0-9a-z]+")
_AMI_ID = re.compile(r"ami-[0-9a-z]+")
_CR_ID = re.compile(r"^cr-[0-9a-z]+$")
_OWNER_ID = re.compile(r"^[0-9]{12}$")
_ALIAS = re.compile(r"^[a-zA-Z0-9]+@.+$")
_VOLUME_TYPES = frozenset({"standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"})
_VOLUME_SIZE = re.compile(
    r"^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi"
    r"|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G"
    r"|([1-9]|[1-5][0-7]|58)Ti|([1-9]|[1-5][0-9]|6[0-3]|64)T)$"
)
_MAX_TERMS = 30


class NodeClassError(ValueError):
    """An EC2NodeClass this provider cannot use; the message names the field."""


# --- small typed readers ------------------------------------------------------------------


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__


def _bad(path: str, expected: str, value: Any) -> NodeClassError:
    return NodeClassError(f"{path}: expected {expected}, got {_kind(value)}")


def _obj(value: Any, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _bad(path, "an object", value)
    return value


def _list(value: Any, path: str) -> Sequence[Any]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise _bad(path, "a list", value)
    return value


def _str(value: Any, path: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _bad(path, "a string", value)
    return value


def _bool(value: Any, path: str) -> bool | None:
    if value is None:
        return None
    if not isinstance(value, bool):
        raise _bad(path, "a boolean", value)
    return value


def _int(
    value: Any, path: str, minimum: int | None = None, maximum: int | None = None
) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad(path, "an integer", value)
    if isinstance(value, float):
        if not value.is_integer():
            raise NodeClassError(f"{path}: expected an integer, got {value}")
        value = int(value)
    if minimum is not None and value < minimum:
        raise NodeClassError(f"{path}: {value} is below the minimum {minimum}")
    if maximum is not None and value > maximum:
        raise NodeClassError(f"{path}: {value} is above the maximum {maximum}")
    return int(value)


def _strmap(value: Any, path: str) -> dict[str, str]:
    m = _obj(value, path)
    out: dict[str, str] = {}
    for k, v in m.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise NodeClassError(
                f"{path}: expected a map of strings to strings, got {k!r}: {_kind(v)}"
            )
        out[k] = v
    return out


def _selector_tags(value: Any, path: str) -> dict[str, str]:
    tags = _strmap(value, path)
    for k, v in tags.items():
        if k == "" or v == "":
            raise NodeClassError(f"{path}: empty tag keys or values aren't supported")
    if len(tags) > 20:
        raise NodeClassError(f"{path}: at most 20 tags, got {len(tags)}")
    return tags


def _pattern(value: Any, path: str, pattern: re.Pattern[str], what: str) -> str:
    text = _str(value, path) or ""
    if text and not pattern.search(text):
        raise NodeClassError(f"{path}: {text!r} is not {what}")
    return text


# --- selector terms -----------------------------------------------------------------------


@frozen
class SubnetSelectorTerm:
    """Subnets matching all ``tags`` (value ``*`` = any value), or the one with ``id``."""

    tags: Mapping[str, str] = field(factory=dict)
    id: str = ""

    @classmethod
    def from_dict(cls, raw: Any, path: str) -> SubnetSelectorTerm:
        m = _obj(raw, path)
        term = cls(
            tags=_selector_tags(m.get("tags"), f"{path}.tags"),
            id=_pattern(m.get("id"), f"{path}.id", _SUBNET_ID, "a subnet id (subnet-...)"),
        )
        if not term.tags and not term.id:
            raise NodeClassError(f"{path}: expected at least one, got none, ['tags', 'id']")
        if term.tags and term.id:
            raise NodeClassError(f"{path}: 'id' is mutually exclusive, cannot be set with 'tags'")
        return term


@frozen
class SecurityGroupSelectorTerm:
    """Security groups matching all ``tags``, or the one with ``id``, or those named ``name``."""

    tags: Mapping[str, str] = field(factory=dict)
    id: str = ""
    name: str = ""

    @classmethod
    def from_dict(cls, raw: Any, path: str) -> SecurityGroupSelectorTerm:
        m = _obj(raw, path)
        term = cls(
            tags=_selector_tags(m.get("tags"), f"{path}.tags"),
            id=_pattern(m.get("id"), f"{path}.id", _SG_ID, "a security group id (sg-...)"),
            name=_str(m.get("name"), f"{path}.name") or "",
        )
        set_fields = [
            n for n, v in (("tags", term.tags), ("id", term.id), ("name", term.name)) if v
        ]
        if not set_fields:
            raise NodeClassError(f"{path}: expected at least one, got none, ['tags', 'id', 'name']")
        if len(set_fields) > 1:
            raise NodeClassError(
                f"{path}: {', '.join(repr(n) for n in set_fields)} are mutually exclusive"
            )
        return term


@frozen
class AMISelectorTerm:
    """One way of naming AMIs: an ``alias`` (``al2023@latest``, alone), an ``id``, ``tags``,
    a ``name`` (optionally with ``owner``) or an ``ssmParameter`` holding an AMI id."""

    alias: str = ""
    tags: Mapping[str, str] = field(factory=dict)
    id: str = ""
    name: str = ""
    owner: str = ""
    ssm_parameter: str = ""

    @classmethod
    def from_dict(cls, raw: Any, path: str) -> AMISelectorTerm:
        m = _obj(raw, path)
        term = cls(
            alias=_str(m.get("alias"), f"{path}.alias") or "",
            tags=_selector_tags(m.get("tags"), f"{path}.tags"),
            id=_pattern(m.get("id"), f"{path}.id", _AMI_ID, "an AMI id (ami-...)"),
            name=_str(m.get("name"), f"{path}.name") or "",
            owner=_str(m.get("owner"), f"{path}.owner") or "",
            ssm_parameter=_str(m.get("ssmParameter"), f"{path}.ssmParameter") or "",
        )
        if not (term.alias or term.tags or term.id or term.name or term.ssm_parameter):
            raise NodeClassError(
                f"{path}: expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']"
            )
        if term.id and (term.alias or term.tags or term.name or term.owner):
            raise NodeClassError(
                f"{path}: 'id' is mutually exclusive, cannot be set with a combination of other fields"
            )
        if term.alias:
            if term.tags or term.name or term.owner or term.ssm_parameter:
                raise NodeClassError(
                    f"{path}: 'alias' is mutually exclusive, cannot be set with a combination of other fields"
                )
            parse_alias(term.alias, f"{path}.alias")
        return term


@frozen
class CapacityReservationSelectorTerm:
    """One term of ``capacityReservationSelectorTerms`` (resolved by
    :class:`~karpenter_aws.capacityreservation.CapacityReservationProvider`)."""

    tags: Mapping[str, str] = field(factory=dict)
    id: str = ""
    owner_id: str = ""
    instance_match_criteria: str = ""

    @classmethod
    def from_dict(cls, raw: Any, path: str) -> CapacityReservationSelectorTerm:
        m = _obj(raw, path)
        term = cls(
            tags=_selector_tags(m.get("tags"), f"{path}.tags"),
            id=_pattern(m.get("id"), f"{path}.id", _CR_ID, "a capacity reservation id (cr-...)"),
            owner_id=_pattern(
                m.get("ownerID"), f"{path}.ownerID", _OWNER_ID, "a 12-digit account id"
            ),
            instance_match_criteria=_str(
                m.get("instanceMatchCriteria"), f"{path}.instanceMatchCriteria"
            )
            or "",
        )
        if term.instance_match_criteria not in ("", "open", "targeted"):
            raise NodeClassError(
                f"{path}.instanceMatchCriteria: {term.instance_match_criteria!r} is not one of open, targeted"
            )
        if not (term.tags or term.id or term.instance_match_criteria):
            raise NodeClassError(
                f"{path}: expected at least one, got none, ['tags', 'id', 'instanceMatchCriteria']"
            )
        if term.id and (term.tags or term.owner_id or term.instance_match_criteria):
            raise NodeClassError(f"{path}: 'id' is mutually exclusive with other fields")
        return term


@frozen
class Alias:
    """``family@version`` from an alias term: ``family`` as the API spells it (``AL2023``)."""

    family: str
    version: str

    def __str__(self) -> str:
        return f"{self.family.lower()}@{self.version}"


def parse_alias(alias: str, path: str = "alias") -> Alias:
    """Split and check an AMI alias; raises :class:`NodeClassError` naming ``path``."""
    if len(alias) > 30:
        raise NodeClassError(f"{path}: {alias!r} is longer than 30 characters")
    if not _ALIAS.match(alias):
        raise NodeClassError(
            f"{path}: {alias!r} is improperly formatted, must match the format 'family@version'"
        )
    name, _, version = alias.partition("@")
    family = _ALIAS_FAMILIES.get(name)
    if family is None:
        raise NodeClassError(
            f"{path}: family {name!r} is not supported, must be one of the following: "
            + ", ".join(repr(f) for f in _ALIAS_FAMILIES)
        )
    if family in _WINDOWS_FAMILIES and version != "latest":
        raise NodeClassError(f"{path}: windows families may only specify version 'latest'")
    return Alias(family=family, version=version)


# --- the rest of the spec -----------------------------------------------------------------


@frozen
class KubeletConfiguration:
    """The kubelet settings that change scheduling, parsed; ``raw`` keeps the whole map
    (upstream's kubelet block is open) for user data and the drift hash."""

    max_pods: int | None = None
    pods_per_core: int | None = None
    kube_reserved: Mapping[str, str] = field(factory=dict)
    system_reserved: Mapping[str, str] = field(factory=dict)
    eviction_hard: Mapping[str, str] = field(factory=dict)
    eviction_soft: Mapping[str, str] = field(factory=dict)
    cluster_dns: tuple[str, ...] = ()
    raw: Mapping[str, Any] = field(factory=dict)

    @classmethod
    def from_dict(cls, raw: Any, path: str = "spec.kubelet") -> KubeletConfiguration:
        m = _obj(raw, path)
        dns = _list(m.get("clusterDNS"), f"{path}.clusterDNS")
        for i, d in enumerate(dns):
            if not isinstance(d, str):
                raise _bad(f"{path}.clusterDNS[{i}]", "a string", d)
        max_pods = m.get("maxPods")
        if isinstance(max_pods, str):
            # Upstream accepts a CEL expression here behind the NodeClassCEL gate; it is not
            # evaluated by this provider, so the value must be a number.
            raise NodeClassError(
                f"{path}.maxPods: expressions are not supported, expected an integer, got {max_pods!r}"
            )
        return cls(
            max_pods=_int(max_pods, f"{path}.maxPods", minimum=0),
            pods_per_core=_int(m.get("podsPerCore"), f"{path}.podsPerCore", minimum=0),
            kube_reserved=_resource_map(m.get("kubeReserved"), f"{path}.kubeReserved"),
            system_reserved=_resource_map(m.get("systemReserved"), f"{path}.systemReserved"),
            eviction_hard=_strmap(m.get("evictionHard"), f"{path}.evictionHard"),
            eviction_soft=_strmap(m.get("evictionSoft"), f"{path}.evictionSoft"),
            cluster_dns=tuple(dns),
            raw=json.loads(json.dumps(dict(m))),
        )

    def problems(self) -> list[str]:
        """What the kubelet would reject or silently ignore in this configuration (upstream
        ``ValidateKubeletConfig``'s semantic checks). Not parse errors: a class with these
        is valid API input, but the status controller keeps it from becoming Ready."""
        return _kubelet_problems(self.raw)

    def canonical(self) -> str:
        """The configuration as sorted JSON, zero values dropped and lists as sets: equal
        for configurations that mean the same, so it can key caches and the hash."""
        return (
            json.dumps(_canonical(self.raw, drop_zero=True), sort_keys=True, separators=(",", ":"))
            if self.raw
            else "null"
        )


_EVICTION_SIGNALS = (
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
)
_RESERVABLE = ("cpu", "memory", "ephemeral-storage", "pid")
# Fields bootstrap sets itself: a user value would be dropped on the way to the node.
_KARPENTER_OWNED_KUBELET_FIELDS = {
    "registerWithTaints": "Karpenter sets it from the NodeClaim's taints so the node "
    "registers unschedulable until it's ready",
}


def _eviction_threshold_problem(field_: str, key: str, value: Any) -> str | None:
    bad = f"spec.kubelet.{field_}[{key}]: {value!r} must be a percentage or a resource quantity"
    if not isinstance(value, str):
        return bad
    if value.endswith("%"):
        try:
            pct = float(value[:-1])
        except ValueError:
            return bad
        return None if 0 <= pct <= 100 else bad
    try:
        q = parse_quantity(value)
    except QuantityError:
        return bad
    return (
        f"spec.kubelet.{field_}[{key}]: {value!r} can't be a negative resource quantity"
        if q < 0
        else None
    )


def _kubelet_problems(raw: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for name in sorted(_KARPENTER_OWNED_KUBELET_FIELDS):
        if name in raw:
            out.append(
                f"spec.kubelet.{name}: can't be set, {_KARPENTER_OWNED_KUBELET_FIELDS[name]}"
            )
    maps: dict[str, Mapping[str, Any]] = {}
    for name in (
        "evictionHard",
        "evictionSoft",
        "evictionSoftGracePeriod",
        "evictionMinimumReclaim",
    ):
        value = raw.get(name)
        if not isinstance(value, Mapping):
            continue
        maps[name] = value
        for key in sorted(value):
            if key not in _EVICTION_SIGNALS:
                out.append(
                    f"spec.kubelet.{name}: {key!r} isn't a valid eviction signal, must be one of "
                    + ", ".join(_EVICTION_SIGNALS)
                )
            if name == "evictionSoftGracePeriod":
                try:
                    if parse_go_duration(str(value[key])) < 0:
                        out.append(f"spec.kubelet.{name}[{key}]: can't be a negative duration")
                except DurationError:
                    out.append(f"spec.kubelet.{name}[{key}]: {value[key]!r} must be a duration")
                continue
            problem = _eviction_threshold_problem(name, key, value[key])
            if problem:
                out.append(problem)
    soft, grace = maps.get("evictionSoft", {}), maps.get("evictionSoftGracePeriod", {})
    for signal in sorted(soft):
        if signal not in grace:
            out.append(
                f"spec.kubelet.evictionSoft[{signal}]: has no matching evictionSoftGracePeriod"
            )
    for signal in sorted(grace):
        if signal not in soft:
            out.append(
                f"spec.kubelet.evictionSoftGracePeriod[{signal}]: has no matching evictionSoft"
            )
    for name in ("kubeReserved", "systemReserved"):
        value = raw.get(name)
        if not isinstance(value, Mapping):
            continue
        for key in sorted(value):
            if key not in _RESERVABLE:
                out.append(
                    f"spec.kubelet.{name}: {key!r} isn't a reservable resource, must be one of "
                    + ", ".join(_RESERVABLE)
                )
            if str(value[key]).startswith("-"):
                out.append(
                    f"spec.kubelet.{name}[{key}]: {value[key]!r} can't be a negative resource quantity"
                )
    ints = {k: v for k, v in raw.items() if isinstance(v, int) and not isinstance(v, bool)}
    for name in ("imageGCHighThresholdPercent", "imageGCLowThresholdPercent"):
        if name in ints and not 0 <= ints[name] <= 100:
            out.append(f"spec.kubelet.{name}: {ints[name]} must be between 0 and 100")
    for name in ("podsPerCore", "evictionMaxPodGracePeriod", "maxPods"):
        if name in ints and ints[name] < 0:
            out.append(f"spec.kubelet.{name}: {ints[name]} can't be negative")
    high, low = ints.get("imageGCHighThresholdPercent"), ints.get("imageGCLowThresholdPercent")
    if high is not None and low is not None and high <= low:
        out.append(
            f"spec.kubelet: imageGCHighThresholdPercent ({high}) must be greater than "
            f"imageGCLowThresholdPercent ({low})"
        )
    return out


def _resource_map(value: Any, path: str) -> dict[str, str]:
    m = _obj(value, path)
    out: dict[str, str] = {}
    for k, v in m.items():
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise _bad(f"{path}.{k}", "a quantity", v)
        try:
            parse_quantity(v)
        except QuantityError as e:
            raise NodeClassError(f"{path}.{k}: {e}") from None
        out[str(k)] = str(v)
    return out


@frozen
class BlockDeviceMapping:
    """One EBS volume to attach; ``volume_size`` in bytes."""

    device_name: str | None = None
    root_volume: bool = False
    volume_size: int | None = None
    volume_type: str | None = None
    encrypted: bool | None = None
    delete_on_termination: bool | None = None
    iops: int | None = None
    throughput: int | None = None
    kms_key_id: str | None = None
    snapshot_id: str | None = None
    volume_initialization_rate: int | None = None

    @classmethod
    def from_dict(cls, raw: Any, path: str) -> BlockDeviceMapping:
        m = _obj(raw, path)
        ebs = _obj(m.get("ebs"), f"{path}.ebs")
        size_raw = ebs.get("volumeSize")
        size: int | None = None
        if size_raw is not None:
            if not isinstance(size_raw, str) or not _VOLUME_SIZE.match(size_raw):
                raise NodeClassError(
                    f"{path}.ebs.volumeSize: {size_raw!r} is not a volume size "
                    "(1Gi-59000Gi, 1G-64000G, 1Ti-58Ti or 1T-64T)"
                )
            size = parse_quantity(size_raw) // 1000
        vtype = _str(ebs.get("volumeType"), f"{path}.ebs.volumeType")
        if vtype is not None and vtype not in _VOLUME_TYPES:
            raise NodeClassError(
                f"{path}.ebs.volumeType: {vtype!r} is not one of {', '.join(sorted(_VOLUME_TYPES))}"
            )
        bdm = cls(
            device_name=_str(m.get("deviceName"), f"{path}.deviceName"),
            root_volume=bool(_bool(m.get("rootVolume"), f"{path}.rootVolume")),
            volume_size=size,
            volume_type=vtype,
            encrypted=_bool(ebs.get("encrypted"), f"{path}.ebs.encrypted"),
            delete_on_termination=_bool(
                ebs.get("deleteOnTermination"), f"{path}.ebs.deleteOnTermination"
            ),
            iops=_int(ebs.get("iops"), f"{path}.ebs.iops", minimum=0),
            throughput=_int(ebs.get("throughput"), f"{path}.ebs.throughput", minimum=0),
            kms_key_id=_str(ebs.get("kmsKeyID"), f"{path}.ebs.kmsKeyID"),
            snapshot_id=_str(ebs.get("snapshotID"), f"{path}.ebs.snapshotID"),
            volume_initialization_rate=_int(
                ebs.get("volumeInitializationRate"),
                f"{path}.ebs.volumeInitializationRate",
                100,
                300,
            ),
        )
        if "ebs" in m and bdm.snapshot_id is None and bdm.volume_size is None:
            raise NodeClassError(f"{path}.ebs: snapshotID or volumeSize must be defined")
        if bdm.volume_initialization_rate is not None and not bdm.snapshot_id:
            raise NodeClassError(
                f"{path}.ebs: snapshotID must be set when volumeInitializationRate is set"
            )
        return bdm


@frozen
class MetadataOptions:
    """IMDS settings for launched instances; the defaults are the CRD's."""

    http_endpoint: str = "enabled"
    http_protocol_ipv6: str = "disabled"
    http_put_response_hop_limit: int = 1
    http_tokens: str = "required"

    @classmethod
    def from_dict(cls, raw: Any, path: str = "spec.metadataOptions") -> MetadataOptions:
        m = _obj(raw, path)

        def enum(key: str, allowed: tuple[str, ...], default: str) -> str:
            v = _str(m.get(key), f"{path}.{key}")
            if v is None:
                return default
            if v not in allowed:
                raise NodeClassError(f"{path}.{key}: {v!r} is not one of {', '.join(allowed)}")
            return v

        hop = _int(m.get("httpPutResponseHopLimit"), f"{path}.httpPutResponseHopLimit", 1, 64)
        return cls(
            http_endpoint=enum("httpEndpoint", ("enabled", "disabled"), "enabled"),
            http_protocol_ipv6=enum("httpProtocolIPv6", ("enabled", "disabled"), "disabled"),
            http_put_response_hop_limit=1 if hop is None else hop,
            http_tokens=enum("httpTokens", ("required", "optional"), "required"),
        )


@frozen
class NetworkInterface:
    """One ``spec.networkInterfaces`` entry: an ENA (``interface``) or ``efa-only``
    interface on a network card. When the list is set it replaces the launch template's
    single default interface, and its ``efa-only`` count is the type's
    ``vpc.amazonaws.com/efa``."""

    network_card_index: int = 0
    device_index: int = 0
    interface_type: str = "interface"

    @classmethod
    def from_dict(cls, raw: Any, path: str) -> NetworkInterface:
        m = _obj(raw, path)
        for key in ("networkCardIndex", "deviceIndex", "interfaceType"):
            if m.get(key) is None:
                raise NodeClassError(f"{path}.{key}: required")
        kind = _str(m.get("interfaceType"), f"{path}.interfaceType") or ""
        if kind not in ("interface", "efa-only"):
            raise NodeClassError(
                f"{path}.interfaceType: {kind!r} is not one of interface, efa-only"
            )
        return cls(
            network_card_index=_int(m.get("networkCardIndex"), f"{path}.networkCardIndex", 0) or 0,
            device_index=_int(m.get("deviceIndex"), f"{path}.deviceIndex", 0) or 0,
            interface_type=kind,
        )


def _network_interfaces(raw: Any) -> tuple[NetworkInterface, ...] | None:
    """None when unset (the type's own EFA count applies); the CRD's rules otherwise."""
    if raw is None:
        return None
    path = "spec.networkInterfaces"
    items = _list(raw, path)
    if len(items) > 150:
        raise NodeClassError(f"{path}: at most 150, got {len(items)}")
    nics = tuple(NetworkInterface.from_dict(n, f"{path}[{i}]") for i, n in enumerate(items))
    if nics and not any(
        n.network_card_index == 0 and n.device_index == 0 and n.interface_type == "interface"
        for n in nics
    ):
        raise NodeClassError(
            f"{path}: networkInterfaces must include a primary interface with "
            "interfaceType='interface'"
        )
    slots = [(n.network_card_index, n.device_index) for n in nics]
    efa_cards = [n.network_card_index for n in nics if n.interface_type == "efa-only"]
    if len(set(slots)) != len(slots) or len(set(efa_cards)) != len(efa_cards):
        raise NodeClassError(
            f"{path}: networkInterfaces must not have duplicate networkCardIndex and "
            "deviceIndex pairs, and can have at most one efa device per network card"
        )
    return nics


@frozen
class ConnectionTracking:
    """Idle connection-tracking timeouts (seconds) for the ENIs of the launch template."""

    tcp_established_timeout: int | None = None
    udp_stream_timeout: int | None = None
    udp_timeout: int | None = None

    @classmethod
    def from_dict(
        cls, raw: Any, path: str = "spec.connectionTracking"
    ) -> ConnectionTracking | None:
        if raw is None:
            return None
        m = _obj(raw, path)
        ct = cls(
            tcp_established_timeout=_int(
                m.get("tcpEstablishedTimeout"), f"{path}.tcpEstablishedTimeout", 60, 432000
            ),
            udp_stream_timeout=_int(m.get("udpStreamTimeout"), f"{path}.udpStreamTimeout", 60, 180),
            udp_timeout=_int(m.get("udpTimeout"), f"{path}.udpTimeout", 30, 60),
        )
        if (
            ct.tcp_established_timeout is None
            and ct.udp_stream_timeout is None
            and (ct.udp_timeout is None)
        ):
            raise NodeClassError(
                f"{path}: at least one of tcpEstablishedTimeout, udpStreamTimeout, or "
                "udpTimeout must be set"
            )
        return ct


_PG_ID = re.compile(r"^pg-[0-9a-z]+$")


@frozen
class PlacementGroupSelector:
    """``spec.placementGroupSelector``: one placement group, by ``name`` or ``id``."""

    name: str = ""
    id: str = ""

    @classmethod
    def from_dict(
        cls, raw: Any, path: str = "spec.placementGroupSelector"
    ) -> PlacementGroupSelector | None:
        if raw is None:
            return None
        m = _obj(raw, path)
        sel = cls(
            name=_str(m.get("name"), f"{path}.name") or "",
            id=_pattern(m.get("id"), f"{path}.id", _PG_ID, "a placement group id (pg-...)"),
        )
        if not sel.name and not sel.id:
            raise NodeClassError(f"{path}: expected at least one, got none, ['name', 'id']")
        if sel.name and sel.id:
            raise NodeClassError(f"{path}: 'name' and 'id' are mutually exclusive")
        return sel


def _nested_virtualization(raw: Any) -> str | None:
    path = "spec.cpuOptions"
    m = _obj(raw, path)
    value = _str(m.get("nestedVirtualization"), f"{path}.nestedVirtualization")
    if value is not None and value not in ("enabled", "disabled"):
        raise NodeClassError(
            f"{path}.nestedVirtualization: {value!r} is not one of enabled, disabled"
        )
    return value


# --- status -------------------------------------------------------------------------------


@frozen
class SubnetStatus:
    id: str
    zone: str
    zone_id: str = ""


@frozen
class SecurityGroupStatus:
    id: str
    name: str = ""


@frozen
class AMIStatus:
    """A resolved AMI and the instance requirements it fits (architecture, and for some
    families GPU/accelerator constraints)."""

    id: str
    name: str = ""
    requirements: Requirements = field(factory=Requirements, eq=False)
    deprecated: bool = False
    raw_requirements: tuple[Mapping[str, Any], ...] = field(default=(), repr=False)


def _status(raw: Any) -> dict[str, Any]:
    m = _obj(raw, "status")
    subnets = []
    for i, s in enumerate(_list(m.get("subnets"), "status.subnets")):
        s = _obj(s, f"status.subnets[{i}]")
        subnets.append(
            SubnetStatus(
                id=_str(s.get("id"), f"status.subnets[{i}].id") or "",
                zone=_str(s.get("zone"), f"status.subnets[{i}].zone") or "",
                zone_id=_str(s.get("zoneID"), f"status.subnets[{i}].zoneID") or "",
            )
        )
    groups = []
    for i, g in enumerate(_list(m.get("securityGroups"), "status.securityGroups")):
        g = _obj(g, f"status.securityGroups[{i}]")
        groups.append(
            SecurityGroupStatus(
                id=_str(g.get("id"), f"status.securityGroups[{i}].id") or "",
                name=_str(g.get("name"), f"status.securityGroups[{i}].name") or "",
            )
        )
    amis = []
    for i, a in enumerate(_list(m.get("amis"), "status.amis")):
        p = f"status.amis[{i}]"
        a = _obj(a, p)
        reqs_raw = _list(a.get("requirements"), f"{p}.requirements")
        try:
            reqs = Requirements.from_node_selector_requirements(reqs_raw)
        except ValueError as e:
            raise NodeClassError(f"{p}.requirements: {e}") from None
        amis.append(
            AMIStatus(
                id=_str(a.get("id"), f"{p}.id") or "",
                name=_str(a.get("name"), f"{p}.name") or "",
                requirements=reqs,
                deprecated=bool(_bool(a.get("deprecated"), f"{p}.deprecated")),
                raw_requirements=tuple(dict(r) for r in reqs_raw),
            )
        )
    reservations = tuple(
        CapacityReservation.from_status(_obj(r, f"status.capacityReservations[{i}]"))
        for i, r in enumerate(_list(m.get("capacityReservations"), "status.capacityReservations"))
    )
    conditions = []
    for i, c in enumerate(_list(m.get("conditions"), "status.conditions")):
        conditions.append(dict(_obj(c, f"status.conditions[{i}]")))
    return {
        "subnets": tuple(subnets),
        "security_groups": tuple(groups),
        "amis": tuple(amis),
        "capacity_reservations": reservations,
        "instance_profile": _str(m.get("instanceProfile"), "status.instanceProfile") or "",
        "conditions": tuple(conditions),
    }


# --- the NodeClass ------------------------------------------------------------------------

# Spec fields the drift hash leaves out (upstream ``hash:"ignore"``): selector terms resolve
# into status and drift on their own; amiFamily enters the hash resolved; kubelet enters as
# its canonical string.
_HASH_IGNORED = frozenset(
    {
        "subnetSelectorTerms",
        "securityGroupSelectorTerms",
        "capacityReservationSelectorTerms",
        "amiSelectorTerms",
        "amiFamily",
        "kubelet",
        "ipPrefixCount",
    }
)


def _canonical(value: Any, *, drop_zero: bool = False) -> Any:
    """Maps sorted, lists treated as sets (sorted by their JSON), unset values (null, empty
    maps and lists) dropped. ``drop_zero`` also drops ``false``, ``0`` and ``""``: spec
    fields are optional pointers upstream, so an explicit ``false`` differs from unset
    there, while kubelet settings compare by value."""
    if isinstance(value, Mapping):
        out = {}
        for k in sorted(value):
            v = _canonical(value[k], drop_zero=drop_zero)
            if v is not None:
                out[str(k)] = v
        return out or None
    if isinstance(value, list | tuple):
        items = [c for c in (_canonical(v, drop_zero=drop_zero) for v in value) if c is not None]
        if not items:
            return None
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
    if value is None:
        return None
    if drop_zero and (
        value is False
        or value == ""
        or (isinstance(value, int | float) and not isinstance(value, bool) and value == 0)
    ):
        return None
    return value


@frozen
class EC2NodeClass:
    """One EC2NodeClass: identity, the resolved spec and the last written status."""

    name: str
    uid: str = ""
    generation: int = 0
    deletion_timestamp: str | None = None
    subnet_selector_terms: tuple[SubnetSelectorTerm, ...] = ()
    security_group_selector_terms: tuple[SecurityGroupSelectorTerm, ...] = ()
    ami_selector_terms: tuple[AMISelectorTerm, ...] = ()
    capacity_reservation_selector_terms: tuple[CapacityReservationSelectorTerm, ...] = ()
    ami_family: str = AMI_FAMILY_CUSTOM
    role: str | None = None
    instance_profile: str | None = None
    user_data: str | None = None
    tags: Mapping[str, str] = field(factory=dict)
    kubelet: KubeletConfiguration = field(factory=KubeletConfiguration)
    block_device_mappings: tuple[BlockDeviceMapping, ...] = ()
    metadata_options: MetadataOptions = field(factory=MetadataOptions)
    associate_public_ip: bool | None = None
    detailed_monitoring: bool = False
    instance_store_policy: str | None = None
    context: str | None = None
    network_interfaces: tuple[NetworkInterface, ...] | None = None
    ip_prefix_count: int | None = None
    connection_tracking: ConnectionTracking | None = None
    placement_group_selector: PlacementGroupSelector | None = None
    nested_virtualization: str | None = None
    # status
    subnets: tuple[SubnetStatus, ...] = ()
    security_groups: tuple[SecurityGroupStatus, ...] = ()
    amis: tuple[AMIStatus, ...] = ()
    capacity_reservations: tuple[CapacityReservation, ...] = ()
    status_instance_profile: str = ""
    conditions: tuple[Mapping[str, Any], ...] = ()
    # the spec as written, for the drift hash (it covers fields not modelled here)
    raw_spec: Mapping[str, Any] = field(factory=dict, repr=False, eq=False)
    annotations: Mapping[str, str] = field(factory=dict, repr=False)

    @classmethod
    def from_dict(cls, obj: Any) -> EC2NodeClass:
        """Parse an EC2NodeClass object; raises :class:`NodeClassError` naming the field."""
        o = _obj(obj, "EC2NodeClass")
        meta = _obj(o.get("metadata"), "metadata")
        name = _str(meta.get("name"), "metadata.name") or ""
        try:
            return cls._from_dict(o, meta, name)
        except NodeClassError as e:
            raise NodeClassError(f"EC2NodeClass {name!r}: {e}") from None

    @classmethod
    def _from_dict(cls, o: Mapping[str, Any], meta: Mapping[str, Any], name: str) -> EC2NodeClass:
        spec = _obj(o.get("spec"), "spec")

        def terms(key: str, parse: Any, required: bool) -> tuple[Any, ...]:
            items = _list(spec.get(key), f"spec.{key}")
            if required and not items:
                raise NodeClassError(f"spec.{key}: {key} cannot be empty")
            if len(items) > _MAX_TERMS:
                raise NodeClassError(f"spec.{key}: at most {_MAX_TERMS} terms, got {len(items)}")
            return tuple(parse(t, f"spec.{key}[{i}]") for i, t in enumerate(items))

        subnet_terms = terms("subnetSelectorTerms", SubnetSelectorTerm.from_dict, True)
        sg_terms = terms("securityGroupSelectorTerms", SecurityGroupSelectorTerm.from_dict, True)
        ami_terms = terms("amiSelectorTerms", AMISelectorTerm.from_dict, True)
        cr_terms = terms(
            "capacityReservationSelectorTerms", CapacityReservationSelectorTerm.from_dict, False
        )
        aliases = [t for t in ami_terms if t.alias]
        if aliases and len(ami_terms) != 1:
            raise NodeClassError(
                "spec.amiSelectorTerms: 'alias' is mutually exclusive, cannot be set with a "
                "combination of other amiSelectorTerms"
            )
        alias = parse_alias(aliases[0].alias, "spec.amiSelectorTerms[0].alias") if aliases else None
        family = _str(spec.get("amiFamily"), "spec.amiFamily")
        if family is not None and family not in AMI_FAMILIES:
            raise NodeClassError(
                f"spec.amiFamily: {family!r} is not one of {', '.join(AMI_FAMILIES)}"
            )
        if alias is None and family is None:
            raise NodeClassError(
                "spec.amiFamily: must specify amiFamily if amiSelectorTerms does not contain an alias"
            )
        if (
            alias is not None
            and family is not None
            and family not in (alias.family, AMI_FAMILY_CUSTOM)
        ):
            raise NodeClassError(
                f"spec.amiFamily: if set, amiFamily must be {alias.family!r} or 'Custom' "
                f"when using an {alias.family} alias"
            )
        resolved_family = (
            family if family is not None else (alias.family if alias else AMI_FAMILY_CUSTOM)
        )

        role = _str(spec.get("role"), "spec.role")
        profile = _str(spec.get("instanceProfile"), "spec.instanceProfile")
        if role == "":
            raise NodeClassError("spec.role: role cannot be empty")
        if profile == "":
            raise NodeClassError("spec.instanceProfile: instanceProfile cannot be empty")
        if (role is None) == (profile is None):
            raise NodeClassError("spec: must specify exactly one of ['role', 'instanceProfile']")

        tags = _strmap(spec.get("tags"), "spec.tags")
        for k in tags:
            if k == "":
                raise NodeClassError("spec.tags: empty tag keys aren't supported")
            if k in _RESTRICTED_TAG_KEYS or k.startswith(_RESTRICTED_TAG_PREFIX):
                raise NodeClassError(f"spec.tags: tag contains a restricted tag matching {k}")

        bdm_raw = _list(spec.get("blockDeviceMappings"), "spec.blockDeviceMappings")
        if len(bdm_raw) > 50:
            raise NodeClassError(f"spec.blockDeviceMappings: at most 50, got {len(bdm_raw)}")
        bdms = tuple(
            BlockDeviceMapping.from_dict(b, f"spec.blockDeviceMappings[{i}]")
            for i, b in enumerate(bdm_raw)
        )
        if sum(1 for b in bdms if b.root_volume) > 1:
            raise NodeClassError(
                "spec.blockDeviceMappings: must have only one blockDeviceMappings with rootVolume"
            )

        policy = _str(spec.get("instanceStorePolicy"), "spec.instanceStorePolicy")
        if policy is not None and policy != "RAID0":
            raise NodeClassError(f"spec.instanceStorePolicy: {policy!r} is not one of RAID0")

        generation = _int(meta.get("generation"), "metadata.generation") or 0
        deletion = meta.get("deletionTimestamp")
        status = _status(o.get("status"))
        annotations = _strmap(meta.get("annotations"), "metadata.annotations")
        return cls(
            name=name,
            uid=_str(meta.get("uid"), "metadata.uid") or "",
            generation=generation,
            deletion_timestamp=str(deletion) if deletion else None,
            subnet_selector_terms=subnet_terms,
            security_group_selector_terms=sg_terms,
            ami_selector_terms=ami_terms,
            capacity_reservation_selector_terms=cr_terms,
            ami_family=resolved_family,
            role=role,
            instance_profile=profile,
            user_data=_str(spec.get("userData"), "spec.userData"),
            tags=tags,
            kubelet=KubeletConfiguration.from_dict(spec.get("kubelet")),
            block_device_mappings=bdms,
            metadata_options=MetadataOptions.from_dict(spec.get("metadataOptions")),
            associate_public_ip=_bool(
                spec.get("associatePublicIPAddress"), "spec.associatePublicIPAddress"
            ),
            detailed_monitoring=bool(
                _bool(spec.get("detailedMonitoring"), "spec.detailedMonitoring")
            ),
            instance_store_policy=policy,
            context=_str(spec.get("context"), "spec.context"),
            network_interfaces=_network_interfaces(spec.get("networkInterfaces")),
            ip_prefix_count=_int(spec.get("ipPrefixCount"), "spec.ipPrefixCount", minimum=0),
            connection_tracking=ConnectionTracking.from_dict(spec.get("connectionTracking")),
            placement_group_selector=PlacementGroupSelector.from_dict(
                spec.get("placementGroupSelector")
            ),
            nested_virtualization=_nested_virtualization(spec.get("cpuOptions")),
            subnets=status["subnets"],
            security_groups=status["security_groups"],
            amis=status["amis"],
            capacity_reservations=status["capacity_reservations"],
            status_instance_profile=status["instance_profile"],
            conditions=status["conditions"],
            raw_spec=json.loads(json.dumps(dict(spec))),
            annotations=annotations,
        )

    # --- resolved views ---------------------------------------------------------------

    @property
    def alias(self) -> Alias | None:
        """The alias term, if the AMIs are chosen by one."""
        for t in self.ami_selector_terms:
            if t.alias:
                return parse_alias(t.alias)
        return None

    @property
    def instance_profile_name(self) -> str:
        """The instance profile launches use: the named one, or the one status resolved."""
        return self.instance_profile or self.status_instance_profile

    def condition(self, type_: str) -> Mapping[str, Any] | None:
        for c in self.conditions:
            if c.get("type") == type_:
                return c
        return None

    def ready(self) -> bool | None:
        """True/False from the Ready condition; None when it is Unknown, missing, or was
        written for an older generation (the status does not describe this spec yet)."""
        cond = self.condition(CONDITION_READY)
        if cond is None:
            return None
        observed = cond.get("observedGeneration")
        if observed is not None and observed != self.generation:
            return None
        if cond.get("status") == "True":
            return True
        if cond.get("status") == "False":
            return False
        return None

    def ready_message(self) -> str:
        """Why the class is not ready, for launch errors and events."""
        cond = self.condition(CONDITION_READY)
        if cond is None:
            return f"EC2NodeClass {self.name!r} has no Ready condition yet"
        observed = cond.get("observedGeneration")
        if observed is not None and observed != self.generation:
            return (
                f"EC2NodeClass {self.name!r} status is for generation {observed}, "
                f"spec is generation {self.generation}"
            )
        # Ready only says which dependents are unhealthy; their own reasons say why.
        failing = [
            c
            for t in READY_CONDITIONS_RESERVED
            if (c := self.condition(t)) is not None and c.get("status") == "False"
        ]
        if cond.get("status") == "False" and failing:
            return "; ".join(
                f"{c.get('type')}: "
                + (": ".join(str(p) for p in (c.get("reason"), c.get("message")) if p) or "False")
                for c in failing
            )
        reason = str(cond.get("reason") or "")
        message = str(cond.get("message") or "")
        return "; ".join(p for p in (reason, message) if p) or f"Ready is {cond.get('status')}"

    def zones(self) -> frozenset[str]:
        """Zones with at least one resolved subnet."""
        return frozenset(s.zone for s in self.subnets if s.zone)

    def hash(self, ca_bundle: str | None = None) -> str:
        """The drift hash (version :data:`HASH_VERSION`): the spec minus selector terms,
        ``amiFamily``, ``kubelet`` and ``ipPrefixCount``, plus the resolved AMI family, the
        cluster CA bundle and the canonical kubelet string. Zero values are ignored and
        lists compare as sets, so reordering or spelling out a default does not drift
        nodes. Volume sizes enter in bytes (``1Ti`` and ``1024Gi`` are the same disk)."""
        spec = {k: v for k, v in self.raw_spec.items() if k not in _HASH_IGNORED}
        if isinstance(spec.get("blockDeviceMappings"), list):
            spec["blockDeviceMappings"] = [
                {
                    "deviceName": b.device_name,
                    # a plain bool upstream: false is its zero value, not a choice
                    "rootVolume": b.root_volume or None,
                    "ebs": {
                        "volumeSize": b.volume_size,
                        "volumeType": b.volume_type,
                        "encrypted": b.encrypted,
                        "deleteOnTermination": b.delete_on_termination,
                        "iops": b.iops,
                        "throughput": b.throughput,
                        "kmsKeyID": b.kms_key_id,
                        "snapshotID": b.snapshot_id,
                        "volumeInitializationRate": b.volume_initialization_rate,
                    },
                }
                for b in self.block_device_mappings
            ]
        payload = [_canonical(spec), self.ami_family, ca_bundle or "", self.kubelet.canonical()]
        digest = hashlib.sha256(
            json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
        ).digest()
        return str(int.from_bytes(digest[:8], "big"))


def get_nodeclass(kube: KubeClient, name: str) -> EC2NodeClass | None:
    """The named EC2NodeClass, or None when it does not exist. A malformed one raises
    :class:`NodeClassError` (callers turn it into a launch error naming the field)."""
    try:
        obj = kube.get(NODECLASS_RESOURCE, name)
    except NotFound:
        return None
    return EC2NodeClass.from_dict(obj)
