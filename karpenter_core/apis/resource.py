"""``resource.k8s.io/v1``: the Dynamic Resource Allocation (DRA) kinds as immutable attrs values.

DeviceClass, ResourceClaim, ResourceClaimTemplate and ResourceSlice are read the way the
``karpenter.sh`` kinds are (:mod:`karpenter_core.apis.base`): ``from_dict`` checks shapes and
raises :class:`APIError` naming the field path, ``to_dict`` writes back what was read
(unknown fields kept in ``extra``). The allocator
(:mod:`karpenter_core.scheduling.dynamicresources`) reads only these typed values.

Two things are parsed further than their JSON because every reader needs them so:

* a device attribute holds exactly one of ``int``/``bool``/``string``/``version``
  (:class:`DeviceAttribute`, ``value`` gives it), and a device capacity's quantity is also
  held in milli-units (:attr:`DeviceCapacity.milli`), so nothing re-parses them in a loop;
* ``ExactDeviceRequest.count`` defaults to 1 in ``ExactCount`` mode, as the API server
  defaults it, so objects written by hand read like objects read from a cluster.

The pod side, :func:`pod_claim_names`, says which ResourceClaim each entry of a pod's
``spec.resourceClaims`` names, with the resourceclaim controller's rules for claims made from
templates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Self

from attrs import field, frozen

from karpenter_core.apis.base import (
    APIError,
    F,
    Model,
    ObjectMeta,
    ObjectModel,
)
from karpenter_core.apis.quantity import QuantityError, parse_quantity

GROUP = "resource.k8s.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"

ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"
ALLOCATION_MODES = (ALLOCATION_MODE_EXACT_COUNT, ALLOCATION_MODE_ALL)

ALLOCATION_RESULTS_MAX_SIZE = 32
"""At most this many devices in one claim's allocation (``AllocationResultsMaxSize``)."""


# --- shared pieces ----------------------------------------------------------------------------


@frozen
class CELDeviceSelector(Model):
    """A CEL expression over one ``device`` that must evaluate to true for it to match."""

    expression: str = ""

    FIELDS = (F("expression", "expression", "str"),)


@frozen
class DeviceSelector(Model):
    """One selector; ``cel`` is the only kind the API defines today (None: an unknown kind)."""

    cel: CELDeviceSelector | None = None

    FIELDS = (F("cel", "cel", "obj", CELDeviceSelector),)


@frozen
class OpaqueDeviceConfiguration(Model):
    """Driver-specific parameters, passed through to the driver (never read here)."""

    driver: str = ""
    parameters: Any = None

    FIELDS = (F("driver", "driver", "str"), F("parameters", "parameters", "raw"))


@frozen
class NodeSelectorRequirement(Model):
    """A core/v1 node selector requirement (``key``, ``operator``, ``values``)."""

    key: str = ""
    operator: str = ""
    values: tuple[str, ...] = ()

    FIELDS = (
        F("key", "key", "str"),
        F("operator", "operator", "str"),
        F("values", "values", "strs"),
    )


@frozen
class NodeSelectorTerm(Model):
    """Requirements ANDed together (``matchExpressions`` on labels, ``matchFields`` on fields)."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()

    FIELDS = (
        F("matchExpressions", "match_expressions", "objs", NodeSelectorRequirement),
        F("matchFields", "match_fields", "objs", NodeSelectorRequirement),
    )


@frozen
class NodeSelector(Model):
    """A core/v1 NodeSelector: its terms are ORed."""

    node_selector_terms: tuple[NodeSelectorTerm, ...] = ()

    FIELDS = (F("nodeSelectorTerms", "node_selector_terms", "objs", NodeSelectorTerm),)


# --- DeviceClass ------------------------------------------------------------------------------


@frozen
class DeviceClassConfiguration(Model):
    opaque: OpaqueDeviceConfiguration | None = None

    FIELDS = (F("opaque", "opaque", "obj", OpaqueDeviceConfiguration),)


@frozen
class DeviceClassSpec(Model):
    """Selectors every device of the class must pass (ANDed with a request's own)."""

    selectors: tuple[DeviceSelector, ...] = ()
    config: tuple[DeviceClassConfiguration, ...] = ()
    extended_resource_name: str | None = None

    FIELDS = (
        F("selectors", "selectors", "objs", DeviceSelector),
        F("config", "config", "objs", DeviceClassConfiguration),
        F("extendedResourceName", "extended_resource_name", "str"),
    )


@frozen
class DeviceClass(ObjectModel):
    """A cluster-scoped ``resource.k8s.io/v1`` DeviceClass (it has no status)."""

    metadata: ObjectMeta = field(factory=ObjectMeta)
    spec: DeviceClassSpec = field(factory=DeviceClassSpec)
    status: None = None
    api_version: str = API_VERSION
    kind: str = "DeviceClass"

    FIELDS = (
        F("apiVersion", "api_version", "str"),
        F("kind", "kind", "str"),
        F("metadata", "metadata", "obj", ObjectMeta),
        F("spec", "spec", "obj", DeviceClassSpec),
    )


# --- ResourceClaim ----------------------------------------------------------------------------


@frozen
class DeviceToleration(Model):
    """Tolerates a device taint (device taints are not simulated; see the allocator)."""

    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None

    FIELDS = (
        F("key", "key", "str"),
        F("operator", "operator", "str"),
        F("value", "value", "str"),
        F("effect", "effect", "str"),
        F("tolerationSeconds", "toleration_seconds", "int"),
    )


@frozen
class CapacityRequirements(Model):
    """How much of each capacity a request consumes on a shareable device."""

    requests: dict[str, str | int | float] = field(factory=dict)

    FIELDS = (F("requests", "requests", "quantities"),)


def _check_mode(mode: str | None, path: str) -> None:
    if mode is not None and mode not in ALLOCATION_MODES:
        raise APIError(f"{path}.allocationMode: must be one of ExactCount, All; got {mode!r}")


@frozen
class ExactDeviceRequest(Model):
    """A request for devices of one class: ``count`` of them (ExactCount) or every match (All)."""

    device_class_name: str = ""
    selectors: tuple[DeviceSelector, ...] = ()
    allocation_mode: str | None = None
    count: int | None = None
    admin_access: bool | None = None
    tolerations: tuple[DeviceToleration, ...] = ()
    capacity: CapacityRequirements | None = None

    FIELDS = (
        F("deviceClassName", "device_class_name", "str"),
        F("selectors", "selectors", "objs", DeviceSelector),
        F("allocationMode", "allocation_mode", "str"),
        F("count", "count", "int"),
        F("adminAccess", "admin_access", "bool"),
        F("tolerations", "tolerations", "objs", DeviceToleration),
        F("capacity", "capacity", "obj", CapacityRequirements),
    )

    @classmethod
    def from_dict(cls, data: Any, *, path: str = "") -> Self:
        out = super().from_dict(data, path=path)
        _check_mode(out.allocation_mode, path or cls.__name__)
        return out

    @property
    def mode(self) -> str:
        """The allocation mode (the API server defaults it to ExactCount)."""
        return self.allocation_mode or ALLOCATION_MODE_EXACT_COUNT

    @property
    def device_count(self) -> int:
        """Devices an ExactCount request wants (the API server defaults ``count`` to 1)."""
        return 1 if self.count is None else self.count


@frozen
class DeviceSubRequest(Model):
    """One alternative of a ``firstAvailable`` request (tried in order)."""

    name: str = ""
    device_class_name: str = ""
    selectors: tuple[DeviceSelector, ...] = ()
    allocation_mode: str | None = None
    count: int | None = None
    tolerations: tuple[DeviceToleration, ...] = ()
    capacity: CapacityRequirements | None = None

    FIELDS = (
        F("name", "name", "str"),
        F("deviceClassName", "device_class_name", "str"),
        F("selectors", "selectors", "objs", DeviceSelector),
        F("allocationMode", "allocation_mode", "str"),
        F("count", "count", "int"),
        F("tolerations", "tolerations", "objs", DeviceToleration),
        F("capacity", "capacity", "obj", CapacityRequirements),
    )

    @classmethod
    def from_dict(cls, data: Any, *, path: str = "") -> Self:
        out = super().from_dict(data, path=path)
        _check_mode(out.allocation_mode, path or cls.__name__)
        return out

    @property
    def admin_access(self) -> bool | None:
        """Sub-requests cannot ask for admin access (the field is not in their API)."""
        return None

    @property
    def mode(self) -> str:
        return self.allocation_mode or ALLOCATION_MODE_EXACT_COUNT

    @property
    def device_count(self) -> int:
        return 1 if self.count is None else self.count


@frozen
class DeviceRequest(Model):
    """A named request: either ``exactly`` or a ``firstAvailable`` list (not both)."""

    name: str = ""
    exactly: ExactDeviceRequest | None = None
    first_available: tuple[DeviceSubRequest, ...] = ()

    FIELDS = (
        F("name", "name", "str"),
        F("exactly", "exactly", "obj", ExactDeviceRequest),
        F("firstAvailable", "first_available", "objs", DeviceSubRequest),
    )

    @classmethod
    def from_dict(cls, data: Any, *, path: str = "") -> Self:
        out = super().from_dict(data, path=path)
        if out.exactly is not None and out.first_available:
            raise APIError(f"{path or cls.__name__}: exactly and firstAvailable are exclusive")
        return out


@frozen
class DeviceConstraint(Model):
    """All devices of the named requests (all requests when empty) share ``matchAttribute``'s
    value, or (``distinctAttribute``) all differ in it."""

    requests: tuple[str, ...] = ()
    match_attribute: str | None = None
    distinct_attribute: str | None = None

    FIELDS = (
        F("requests", "requests", "strs"),
        F("matchAttribute", "match_attribute", "str"),
        F("distinctAttribute", "distinct_attribute", "str"),
    )


@frozen
class DeviceClaimConfiguration(Model):
    requests: tuple[str, ...] = ()
    opaque: OpaqueDeviceConfiguration | None = None

    FIELDS = (
        F("requests", "requests", "strs"),
        F("opaque", "opaque", "obj", OpaqueDeviceConfiguration),
    )


@frozen
class DeviceClaim(Model):
    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[DeviceConstraint, ...] = ()
    config: tuple[DeviceClaimConfiguration, ...] = ()

    FIELDS = (
        F("requests", "requests", "objs", DeviceRequest),
        F("constraints", "constraints", "objs", DeviceConstraint),
        F("config", "config", "objs", DeviceClaimConfiguration),
    )


@frozen
class ResourceClaimSpec(Model):
    devices: DeviceClaim = field(factory=DeviceClaim)

    FIELDS = (F("devices", "devices", "obj", DeviceClaim),)


@frozen
class DeviceRequestAllocationResult(Model):
    """One allocated device: which request got which ``driver/pool/device``."""

    request: str = ""
    driver: str = ""
    pool: str = ""
    device: str = ""
    admin_access: bool | None = None
    share_id: str | None = None

    FIELDS = (
        F("request", "request", "str"),
        F("driver", "driver", "str"),
        F("pool", "pool", "str"),
        F("device", "device", "str"),
        F("adminAccess", "admin_access", "bool"),
        F("shareID", "share_id", "str"),
    )


@frozen
class DeviceAllocationResult(Model):
    results: tuple[DeviceRequestAllocationResult, ...] = ()

    FIELDS = (F("results", "results", "objs", DeviceRequestAllocationResult),)


@frozen
class AllocationResult(Model):
    """Where a claim was allocated: the devices, and the nodes that can reach them."""

    devices: DeviceAllocationResult = field(factory=DeviceAllocationResult)
    node_selector: NodeSelector | None = None
    allocation_timestamp: str | None = None

    FIELDS = (
        F("devices", "devices", "obj", DeviceAllocationResult),
        F("nodeSelector", "node_selector", "obj", NodeSelector),
        F("allocationTimestamp", "allocation_timestamp", "str"),
    )


@frozen
class ResourceClaimConsumerReference(Model):
    """Who uses an allocated claim (a pod: ``resource: pods``, empty ``apiGroup``)."""

    api_group: str | None = None
    resource: str = ""
    name: str = ""
    uid: str = ""

    FIELDS = (
        F("apiGroup", "api_group", "str"),
        F("resource", "resource", "str"),
        F("name", "name", "str"),
        F("uid", "uid", "str"),
    )

    @property
    def is_pod(self) -> bool:
        return self.resource == "pods" and not self.api_group


@frozen
class ResourceClaimStatus(Model):
    allocation: AllocationResult | None = None
    reserved_for: tuple[ResourceClaimConsumerReference, ...] = ()

    FIELDS = (
        F("allocation", "allocation", "obj", AllocationResult),
        F("reservedFor", "reserved_for", "objs", ResourceClaimConsumerReference),
    )


@frozen
class ResourceClaim(Model):
    """A namespaced ``resource.k8s.io/v1`` ResourceClaim.

    A plain :class:`Model` rather than an ``ObjectModel``: its status carries no conditions.
    """

    metadata: ObjectMeta = field(factory=ObjectMeta)
    spec: ResourceClaimSpec = field(factory=ResourceClaimSpec)
    status: ResourceClaimStatus | None = None
    api_version: str = API_VERSION
    kind: str = "ResourceClaim"

    FIELDS = (
        F("apiVersion", "api_version", "str"),
        F("kind", "kind", "str"),
        F("metadata", "metadata", "obj", ObjectMeta),
        F("spec", "spec", "obj", ResourceClaimSpec),
        F("status", "status", "obj", ResourceClaimStatus),
    )

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or ""

    @property
    def key(self) -> tuple[str, str]:
        """``(namespace, name)``: claims are namespaced, so the name alone is ambiguous."""
        return (self.namespace, self.name)

    @property
    def allocation(self) -> AllocationResult | None:
        return self.status.allocation if self.status is not None else None

    @property
    def reserved_for(self) -> tuple[ResourceClaimConsumerReference, ...]:
        return self.status.reserved_for if self.status is not None else ()


@frozen
class ResourceClaimTemplateSpec(Model):
    """The claim the resourceclaim controller creates for each pod that names the template."""

    metadata: ObjectMeta | None = None
    spec: ResourceClaimSpec = field(factory=ResourceClaimSpec)

    FIELDS = (
        F("metadata", "metadata", "obj", ObjectMeta),
        F("spec", "spec", "obj", ResourceClaimSpec),
    )


@frozen
class ResourceClaimTemplate(ObjectModel):
    metadata: ObjectMeta = field(factory=ObjectMeta)
    spec: ResourceClaimTemplateSpec = field(factory=ResourceClaimTemplateSpec)
    status: None = None
    api_version: str = API_VERSION
    kind: str = "ResourceClaimTemplate"

    FIELDS = (
        F("apiVersion", "api_version", "str"),
        F("kind", "kind", "str"),
        F("metadata", "metadata", "obj", ObjectMeta),
        F("spec", "spec", "obj", ResourceClaimTemplateSpec),
    )


# --- ResourceSlice ----------------------------------------------------------------------------


@frozen
class DeviceAttribute(Model):
    """One typed attribute value: exactly one of ``int``, ``bool``, ``string``, ``version``."""

    int_value: int | None = None
    bool_value: bool | None = None
    string_value: str | None = None
    version_value: str | None = None

    FIELDS = (
        F("int", "int_value", "int"),
        F("bool", "bool_value", "bool"),
        F("string", "string_value", "str"),
        F("version", "version_value", "str"),
    )

    @classmethod
    def from_dict(cls, data: Any, *, path: str = "") -> Self:
        out = super().from_dict(data, path=path)
        set_ = [f.json for f in cls.FIELDS if getattr(out, f.attr) is not None]
        if len(set_) != 1:
            got = ", ".join(set_) if set_ else "none"
            raise APIError(
                f"{path or cls.__name__}: must set exactly one of int, bool, string, version "
                f"(got {got})"
            )
        return out

    @property
    def value(self) -> int | bool | str:
        """The value, whichever type it has (a version is its string)."""
        for v in (self.int_value, self.bool_value, self.string_value, self.version_value):
            if v is not None:
                return v
        raise APIError("device attribute has no value")

    @property
    def type_name(self) -> str:
        for f in self.FIELDS:
            if getattr(self, f.attr) is not None:
                return f.json
        return "none"

    @classmethod
    def of(cls, value: int | bool | str, *, version: bool = False) -> DeviceAttribute:
        """Build from a Python value (``version=True`` marks a string as a semver)."""
        if isinstance(value, bool):
            return cls(bool_value=value)
        if isinstance(value, int):
            return cls(int_value=value)
        return cls(version_value=value) if version else cls(string_value=value)


def _quantity_milli(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise APIError(f"{path}: expected a quantity (string or number)")
    try:
        return parse_quantity(value)
    except QuantityError as e:
        raise APIError(f"{path}: {e}") from None


@frozen
class DeviceCapacity(Model):
    """A device capacity; ``milli`` is ``value`` parsed once (milli-units, rounded up)."""

    value: str | int | float = "0"
    request_policy: Any = None
    milli: int = field(init=False, eq=False, repr=False)

    FIELDS = (
        F("value", "value", "raw"),
        F("requestPolicy", "request_policy", "raw"),
    )

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "milli", _quantity_milli(self.value, "value"))

    @classmethod
    def from_dict(cls, data: Any, *, path: str = "") -> Self:
        if isinstance(data, Mapping) and data.get("value") is not None:
            _quantity_milli(data["value"], f"{path}.value" if path else "value")
        return super().from_dict(data, path=path)

    @classmethod
    def of(cls, value: str | int) -> DeviceCapacity:
        """A capacity of ``value`` (raises :class:`APIError` when it is no quantity)."""
        return cls.from_dict({"value": value})


@frozen
class Counter(Model):
    value: str | int | float = "0"

    FIELDS = (F("value", "value", "raw"),)


@frozen
class DeviceCounterConsumption(Model):
    counter_set: str = ""
    counters: dict[str, Counter] = field(factory=dict)

    FIELDS = (
        F("counterSet", "counter_set", "str"),
        F("counters", "counters", "objmap", Counter),
    )


@frozen
class CounterSet(Model):
    name: str = ""
    counters: dict[str, Counter] = field(factory=dict)

    FIELDS = (F("name", "name", "str"), F("counters", "counters", "objmap", Counter))


@frozen
class DeviceTaint(Model):
    key: str = ""
    value: str | None = None
    effect: str = ""
    time_added: str | None = None

    FIELDS = (
        F("key", "key", "str"),
        F("value", "value", "str"),
        F("effect", "effect", "str"),
        F("timeAdded", "time_added", "str"),
    )


@frozen
class Device(Model):
    """One device a driver publishes: its name (unique in its pool), typed attributes for CEL
    selectors and matchAttribute constraints, and capacities."""

    name: str = ""
    attributes: dict[str, DeviceAttribute] = field(factory=dict)
    capacity: dict[str, DeviceCapacity] = field(factory=dict)
    consumes_counters: tuple[DeviceCounterConsumption, ...] = ()
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: tuple[DeviceTaint, ...] = ()
    allow_multiple_allocations: bool | None = None
    binds_to_node: bool | None = None
    binding_conditions: tuple[str, ...] = ()

    FIELDS = (
        F("name", "name", "str"),
        F("attributes", "attributes", "objmap", DeviceAttribute),
        F("capacity", "capacity", "objmap", DeviceCapacity),
        F("consumesCounters", "consumes_counters", "objs", DeviceCounterConsumption),
        F("nodeName", "node_name", "str"),
        F("nodeSelector", "node_selector", "obj", NodeSelector),
        F("allNodes", "all_nodes", "bool"),
        F("taints", "taints", "objs", DeviceTaint),
        F("allowMultipleAllocations", "allow_multiple_allocations", "bool"),
        F("bindsToNode", "binds_to_node", "bool"),
        F("bindingConditions", "binding_conditions", "strs"),
    )


@frozen
class ResourcePool(Model):
    """The pool a slice belongs to: all slices of the newest ``generation`` form the pool, and
    it is complete when ``resourceSliceCount`` of them are present."""

    name: str = ""
    generation: int = 0
    resource_slice_count: int = 1

    FIELDS = (
        F("name", "name", "str"),
        F("generation", "generation", "int"),
        F("resourceSliceCount", "resource_slice_count", "int"),
    )


@frozen
class ResourceSliceSpec(Model):
    driver: str = ""
    pool: ResourcePool = field(factory=ResourcePool)
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: tuple[Device, ...] = ()
    shared_counters: tuple[CounterSet, ...] = ()

    FIELDS = (
        F("driver", "driver", "str"),
        F("pool", "pool", "obj", ResourcePool),
        F("nodeName", "node_name", "str"),
        F("nodeSelector", "node_selector", "obj", NodeSelector),
        F("allNodes", "all_nodes", "bool"),
        F("perDeviceNodeSelection", "per_device_node_selection", "bool"),
        F("devices", "devices", "objs", Device),
        F("sharedCounters", "shared_counters", "objs", CounterSet),
    )


@frozen
class ResourceSlice(ObjectModel):
    """A cluster-scoped ``resource.k8s.io/v1`` ResourceSlice: devices a driver published."""

    metadata: ObjectMeta = field(factory=ObjectMeta)
    spec: ResourceSliceSpec = field(factory=ResourceSliceSpec)
    status: None = None
    api_version: str = API_VERSION
    kind: str = "ResourceSlice"

    FIELDS = (
        F("apiVersion", "api_version", "str"),
        F("kind", "kind", "str"),
        F("metadata", "metadata", "obj", ObjectMeta),
        F("spec", "spec", "obj", ResourceSliceSpec),
    )


# --- the pod side -----------------------------------------------------------------------------

CLAIM_NAMED = "named"
"""``resourceClaimName``: the pod names an existing claim it shares with others."""
CLAIM_GENERATED = "generated"
"""``resourceClaimTemplateName`` and the resourceclaim controller recorded the claim it made."""
CLAIM_NOT_NEEDED = "not-needed"
"""The controller recorded that no claim was needed (its status entry has no name)."""
CLAIM_NOT_CREATED = "not-created"
"""From a template, but no claim yet: the controller has not created it."""


@frozen
class PodClaim:
    """What one entry of ``pod.spec.resourceClaims`` resolves to.

    ``claim_name`` is the ResourceClaim's name (in the pod's namespace) when known.
    ``owned`` is true for a claim generated from a template: such a claim belongs to this pod
    only, so a claim of that name not owned by the pod (ownerReference uid) is not it.
    """

    name: str
    state: str
    claim_name: str | None = None
    template_name: str | None = None

    @property
    def owned(self) -> bool:
        return self.template_name is not None


def _str_field(entry: Mapping[str, Any], key: str, path: str) -> str | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise APIError(f"{path}.{key}: expected a string")
    return value


def pod_claim_names(pod: Mapping[str, Any]) -> tuple[PodClaim, ...]:
    """Resolve each ``spec.resourceClaims`` entry of a pod (JSON) to its ResourceClaim.

    Follows upstream's ``resourceclaim.Name``: ``resourceClaimName`` is the claim itself; for
    ``resourceClaimTemplateName`` the generated claim's name is the one the resourceclaim
    controller recorded in ``status.resourceClaimStatuses`` under the entry's name (a null
    name there means no claim is needed), and without such a record the claim does not exist
    yet. An entry with neither field is an API this code does not know: :class:`APIError`.
    """
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    if not isinstance(spec, Mapping) or not isinstance(status, Mapping):
        raise APIError("pod: spec and status must be objects")
    entries = spec.get("resourceClaims") or ()
    statuses = status.get("resourceClaimStatuses") or ()
    if not isinstance(entries, Sequence) or isinstance(entries, str):
        raise APIError("spec.resourceClaims: expected a list")
    if not isinstance(statuses, Sequence) or isinstance(statuses, str):
        raise APIError("status.resourceClaimStatuses: expected a list")
    recorded: dict[str, str | None] = {}
    for i, s in enumerate(statuses):
        path = f"status.resourceClaimStatuses[{i}]"
        if not isinstance(s, Mapping):
            raise APIError(f"{path}: expected an object")
        name = _str_field(s, "name", path)
        if name is not None:
            recorded[name] = _str_field(s, "resourceClaimName", path)
    out: list[PodClaim] = []
    for i, entry in enumerate(entries):
        path = f"spec.resourceClaims[{i}]"
        if not isinstance(entry, Mapping):
            raise APIError(f"{path}: expected an object")
        name = _str_field(entry, "name", path) or ""
        claim_name = _str_field(entry, "resourceClaimName", path)
        template = _str_field(entry, "resourceClaimTemplateName", path)
        if claim_name is not None:
            out.append(PodClaim(name, CLAIM_NAMED, claim_name=claim_name))
        elif template is not None:
            if name not in recorded:
                out.append(PodClaim(name, CLAIM_NOT_CREATED, template_name=template))
            elif recorded[name] is None:
                out.append(PodClaim(name, CLAIM_NOT_NEEDED, template_name=template))
            else:
                out.append(
                    PodClaim(
                        name, CLAIM_GENERATED, claim_name=recorded[name], template_name=template
                    )
                )
        else:
            raise APIError(
                f"{path}: one of resourceClaimName and resourceClaimTemplateName is required"
            )
    return tuple(out)


def claim_owned_by(claim: ResourceClaim, pod_uid: str) -> bool:
    """The claim has an ownerReference to the pod with ``pod_uid`` (a generated claim must)."""
    return any(ref.uid == pod_uid for ref in claim.metadata.owner_references)


__all__ = [
    "ALLOCATION_MODES",
    "ALLOCATION_MODE_ALL",
    "ALLOCATION_MODE_EXACT_COUNT",
    "ALLOCATION_RESULTS_MAX_SIZE",
    "API_VERSION",
    "CLAIM_GENERATED",
    "CLAIM_NAMED",
    "CLAIM_NOT_CREATED",
    "CLAIM_NOT_NEEDED",
    "APIError",
    "AllocationResult",
    "CELDeviceSelector",
    "CapacityRequirements",
    "Counter",
    "CounterSet",
    "Device",
    "DeviceAllocationResult",
    "DeviceAttribute",
    "DeviceCapacity",
    "DeviceClaim",
    "DeviceClaimConfiguration",
    "DeviceClass",
    "DeviceClassConfiguration",
    "DeviceClassSpec",
    "DeviceConstraint",
    "DeviceCounterConsumption",
    "DeviceRequest",
    "DeviceRequestAllocationResult",
    "DeviceSelector",
    "DeviceSubRequest",
    "DeviceTaint",
    "DeviceToleration",
    "ExactDeviceRequest",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "OpaqueDeviceConfiguration",
    "PodClaim",
    "ResourceClaim",
    "ResourceClaimConsumerReference",
    "ResourceClaimSpec",
    "ResourceClaimStatus",
    "ResourceClaimTemplate",
    "ResourceClaimTemplateSpec",
    "ResourcePool",
    "ResourceSlice",
    "ResourceSliceSpec",
    "claim_owned_by",
    "pod_claim_names",
]
