"""The KubeClient protocol: what the engine needs from a Kubernetes API server.

Objects are plain JSON-like dicts, exactly as the API server speaks them. Two
implementations share this protocol: the in-memory server in ``karpenter_core.sim`` (for
simulations and fast tests) and the adapter on the official ``kubernetes`` client (for a
real cluster). The contract tests in ``tests/contract`` pin behaviour both must share, so
only real API-server semantics belong here.

Resources are named by a :class:`ResourceType` (group/version/kind/plural/scope), looked up
in a small registry by ``(apiVersion, kind)``, by kind alone when unambiguous, or by plural.
Failures are :class:`ApiError` subclasses carrying the HTTP status code and the reason the
API server would give, so callers branch on the type (``except NotFound``) rather than on
strings.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol, runtime_checkable

from attrs import field, frozen

from karpenter_core.apis.copying import deep_copy

__all__ = [
    "ADDED",
    "BOOKMARK",
    "DELETED",
    "ERROR",
    "MODIFIED",
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "Gone",
    "InternalError",
    "Invalid",
    "KubeClient",
    "NotFound",
    "Obj",
    "ObjectList",
    "ResourceLike",
    "ResourceType",
    "TooManyRequests",
    "UnknownResourceError",
    "WatchEvent",
    "WatchStream",
    "api_reader",
    "create_with_status",
    "deep_copy",
    "register_resource",
    "resource_for",
    "resource_types",
    "shared_create",
    "shared_get",
    "shared_list",
    "shared_patch",
]

Obj = dict[str, Any]

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"
BOOKMARK = "BOOKMARK"
ERROR = "ERROR"

INITIAL_EVENTS_END_ANNOTATION = "k8s.io/initial-events-end"


# --------------------------------------------------------------------------- errors


class ApiError(Exception):
    """An error status from the API server: HTTP ``code``, machine ``reason``, human message."""

    code: int = 500
    reason: str = "InternalError"

    def __init__(self, message: str, *, code: int | None = None, reason: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if reason is not None:
            self.reason = reason

    def to_status(self) -> Obj:
        """The ``Status`` object the API server would return."""
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }

    def __str__(self) -> str:
        return f"{self.reason} ({self.code}): {self.message}"


class BadRequest(ApiError):
    code = 400
    reason = "BadRequest"


class Forbidden(ApiError):
    code = 403
    reason = "Forbidden"


class NotFound(ApiError):
    code = 404
    reason = "NotFound"


class AlreadyExists(ApiError):
    code = 409
    reason = "AlreadyExists"


class Conflict(ApiError):
    code = 409
    reason = "Conflict"


class Gone(ApiError):
    """The requested resourceVersion is no longer available (watch from too old a version)."""

    code = 410
    reason = "Expired"


class Invalid(ApiError):
    code = 422
    reason = "Invalid"


class TooManyRequests(ApiError):
    """Throttled, or (for evictions) a PodDisruptionBudget does not allow the disruption now."""

    code = 429
    reason = "TooManyRequests"


class InternalError(ApiError):
    code = 500
    reason = "InternalError"


_BY_CODE_REASON: dict[tuple[int, str], type[ApiError]] = {
    (400, "BadRequest"): BadRequest,
    (403, "Forbidden"): Forbidden,
    (404, "NotFound"): NotFound,
    (409, "AlreadyExists"): AlreadyExists,
    (409, "Conflict"): Conflict,
    (410, "Expired"): Gone,
    (410, "Gone"): Gone,
    (422, "Invalid"): Invalid,
    (429, "TooManyRequests"): TooManyRequests,
    (500, "InternalError"): InternalError,
}


def error_from_status(status: Mapping[str, Any]) -> ApiError:
    """Turn an API ``Status`` dict into the matching :class:`ApiError` subclass."""
    code = int(status.get("code") or 500)
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or reason or f"HTTP {code}")
    cls = _BY_CODE_REASON.get((code, reason))
    if cls is None:
        cls = next((c for (k, _), c in _BY_CODE_REASON.items() if k == code), ApiError)
    return cls(message, code=code, reason=reason or cls.reason)


# --------------------------------------------------------------------------- resource types


class UnknownResourceError(LookupError):
    """A resource name that no registered :class:`ResourceType` answers to."""


# The field selectors the API server accepts beyond metadata.name / metadata.namespace.
_POD_FIELDS = (
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
)
_EVENT_V1_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)
_EVENTS_K8S_FIELDS = (
    "regarding.kind",
    "regarding.namespace",
    "regarding.name",
    "regarding.uid",
    "regarding.apiVersion",
    "regarding.resourceVersion",
    "regarding.fieldPath",
    "reason",
    "reportingController",
    "type",
)


@frozen
class ResourceType:
    """What the API server knows about one kind: where it lives and how it behaves.

    ``status_subresource``: main-resource writes ignore ``status`` and ``update_status``
    writes ignore everything else. ``tracks_generation``: ``metadata.generation`` starts at 1
    and is bumped when anything but metadata/status changes. ``unconditional_update``:
    an update without ``metadata.resourceVersion`` is accepted (built-ins) rather than
    rejected (custom resources).
    """

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    status_subresource: bool = False
    tracks_generation: bool = False
    unconditional_update: bool = True
    field_selectors: tuple[str, ...] = field(default=())

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> tuple[str, str]:
        return (self.api_version, self.kind)

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    def supports_field(self, name: str) -> bool:
        if name == "metadata.name" or (self.namespaced and name == "metadata.namespace"):
            return True
        return name in self.field_selectors

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _rt(
    api_version: str,
    kind: str,
    plural: str,
    namespaced: bool,
    *,
    status: bool = False,
    generation: bool = False,
    unconditional: bool = True,
    fields: tuple[str, ...] = (),
) -> ResourceType:
    group, _, version = api_version.rpartition("/")
    return ResourceType(
        group, version, kind, plural, namespaced, status, generation, unconditional, fields
    )


def _crd(api_version: str, kind: str, plural: str, namespaced: bool) -> ResourceType:
    return _rt(
        api_version, kind, plural, namespaced, status=True, generation=True, unconditional=False
    )


_BUILTIN: tuple[ResourceType, ...] = (
    _rt("v1", "Pod", "pods", True, status=True, fields=_POD_FIELDS),
    _rt("v1", "Node", "nodes", False, status=True, fields=("spec.unschedulable",)),
    _rt("v1", "Namespace", "namespaces", False, status=True, fields=("status.phase",)),
    _rt("v1", "Service", "services", True, status=True),
    _rt("v1", "Endpoints", "endpoints", True),
    _rt("v1", "ConfigMap", "configmaps", True),
    _rt("v1", "PodTemplate", "podtemplates", True, generation=True),
    _rt("v1", "Secret", "secrets", True, fields=("type",)),
    _rt("v1", "ServiceAccount", "serviceaccounts", True),
    _rt("v1", "PersistentVolume", "persistentvolumes", False, status=True),
    _rt("v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, status=True),
    _rt(
        "v1", "ReplicationController", "replicationcontrollers", True, status=True, generation=True
    ),
    _rt("v1", "Event", "events", True, fields=_EVENT_V1_FIELDS),
    _rt("apps/v1", "Deployment", "deployments", True, status=True, generation=True),
    _rt("apps/v1", "ReplicaSet", "replicasets", True, status=True, generation=True),
    _rt("apps/v1", "StatefulSet", "statefulsets", True, status=True, generation=True),
    _rt("apps/v1", "DaemonSet", "daemonsets", True, status=True, generation=True),
    _rt("batch/v1", "Job", "jobs", True, status=True, generation=True),
    _rt(
        "policy/v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        True,
        status=True,
        generation=True,
    ),
    _rt("storage.k8s.io/v1", "StorageClass", "storageclasses", False),
    _rt("storage.k8s.io/v1", "CSINode", "csinodes", False),
    _rt("storage.k8s.io/v1", "CSIDriver", "csidrivers", False),
    _rt("storage.k8s.io/v1", "VolumeAttachment", "volumeattachments", False, status=True),
    _rt("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", False),
    _rt("coordination.k8s.io/v1", "Lease", "leases", True),
    _rt("events.k8s.io/v1", "Event", "events", True, fields=_EVENTS_K8S_FIELDS),
    # Dynamic Resource Allocation (GA in 1.34): classes and slices are cluster-scoped and
    # count spec generations; claims have a status subresource (allocation, reservedFor).
    _rt("resource.k8s.io/v1", "DeviceClass", "deviceclasses", False, generation=True),
    _rt("resource.k8s.io/v1", "ResourceClaim", "resourceclaims", True, status=True),
    _rt("resource.k8s.io/v1", "ResourceClaimTemplate", "resourceclaimtemplates", True),
    _rt(
        "resource.k8s.io/v1",
        "ResourceSlice",
        "resourceslices",
        False,
        generation=True,
        fields=("spec.nodeName", "spec.driver"),
    ),
    _rt(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        False,
        status=True,
        generation=True,
    ),
    _crd("karpenter.sh/v1", "NodePool", "nodepools", False),
    _crd("karpenter.sh/v1", "NodeClaim", "nodeclaims", False),
    _crd("karpenter.sh/v1alpha1", "NodeOverlay", "nodeoverlays", False),
    _crd("autoscaling.x-k8s.io/v1beta1", "CapacityBuffer", "capacitybuffers", True),
    _crd("karpenter.kwok.sh/v1alpha1", "KWOKNodeClass", "kwoknodeclasses", False),
)

_registry_lock = threading.Lock()
_REGISTRY: dict[tuple[str, str], ResourceType] = {rt.key: rt for rt in _BUILTIN}
# names already resolved (every API call names its resource, and a scan of the registry
# per call was several per cent of a simulated scale-out); emptied when the registry changes
_BY_NAME: dict[str, ResourceType] = {}


def register_resource(rt: ResourceType) -> ResourceType:
    """Add (or replace) a resource type, e.g. a provider's NodeClass CRD."""
    with _registry_lock:
        _REGISTRY[rt.key] = rt
        _BY_NAME.clear()
    return rt


def resource_types() -> list[ResourceType]:
    """Every registered resource type."""
    with _registry_lock:
        return list(_REGISTRY.values())


ResourceLike = ResourceType | tuple[str, str] | str


def resource_for(resource: ResourceLike) -> ResourceType:
    """Resolve ``ResourceType``, ``(apiVersion, kind)``, a kind or a plural (``pods``,
    ``nodepools.karpenter.sh``) to a registered :class:`ResourceType`.

    Bare kinds/plurals that name several types (``Event``) are refused: say which one.
    """
    if isinstance(resource, ResourceType):
        return resource
    if isinstance(resource, str):
        known = _BY_NAME.get(resource)
        if known is not None:
            return known
    with _registry_lock:
        if isinstance(resource, tuple):
            rt = _REGISTRY.get(resource)
            if rt is None:
                raise UnknownResourceError(
                    f"no resource type registered for apiVersion {resource[0]!r}, kind {resource[1]!r}"
                )
            return rt
        if not isinstance(resource, str) or not resource:
            raise UnknownResourceError(f"not a resource name: {resource!r}")
        name = resource
        hits = [rt for rt in _REGISTRY.values() if name in (rt.kind, rt.plural, str(rt))]
        if not hits:
            lowered = name.lower()
            hits = [rt for rt in _REGISTRY.values() if lowered in (rt.kind.lower(), rt.plural)]
        if len(hits) == 1:
            _BY_NAME[name] = hits[0]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise UnknownResourceError(f"no resource type registered for {name!r}")
    options = ", ".join(sorted(f"({rt.api_version!r}, {rt.kind!r})" for rt in hits))
    raise UnknownResourceError(f"{name!r} is ambiguous: use one of {options}")


def resource_of(obj: Mapping[str, Any]) -> ResourceType:
    """The resource type of an object from its ``apiVersion`` and ``kind``."""
    api_version = obj.get("apiVersion")
    kind = obj.get("kind")
    if not api_version or not kind:
        raise UnknownResourceError(
            "object has no apiVersion/kind: both are needed to know its resource"
        )
    return resource_for((str(api_version), str(kind)))


# --------------------------------------------------------------------------- lists and watches


@frozen
class ObjectList:
    """The result of a list: items (each with apiVersion/kind set) and the list's resourceVersion."""

    items: list[Obj]
    resource_version: str

    def __iter__(self) -> Iterator[Obj]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


@frozen
class WatchEvent:
    """One watch notification: ``type`` in ADDED/MODIFIED/DELETED/BOOKMARK, the object."""

    type: str
    object: Obj

    def __iter__(self) -> Iterator[Any]:
        """Unpack as ``(type, object)``."""
        return iter((self.type, self.object))


@runtime_checkable
class WatchStream(Protocol):
    """A watch: iterate to block for events; ``poll`` to take what has arrived without waiting.

    Iteration ends when the stream is stopped or its timeout passes. A watch whose
    resourceVersion has been compacted away raises :class:`Gone`, either from ``watch()``
    itself or from the first read of the stream.
    """

    def __iter__(self) -> Iterator[WatchEvent]: ...

    def poll(self, timeout: float | None = 0) -> list[WatchEvent]:
        """Events delivered so far (waiting up to ``timeout`` seconds for the first; None = forever)."""
        ...

    def stop(self) -> None: ...

    @property
    def stopped(self) -> bool: ...


@runtime_checkable
class KubeClient(Protocol):
    """CRUD, watch and the pod subresources the engine uses.

    ``namespace`` is ignored for cluster-scoped kinds; for namespaced kinds writes take it
    from the object (or the argument), defaulting to ``"default"``; reads with
    ``namespace=None`` span all namespaces (``list``/``watch``) and ``get`` needs one.
    """

    def get(self, resource: ResourceLike, name: str, namespace: str | None = None) -> Obj: ...

    def list(
        self,
        resource: ResourceLike,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ObjectList: ...

    def watch(
        self,
        resource: ResourceLike,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        allow_watch_bookmarks: bool = False,
        send_initial_events: bool = False,
        timeout_seconds: float | None = None,
    ) -> WatchStream: ...

    def create(self, obj: Mapping[str, Any], namespace: str | None = None) -> Obj: ...

    def update(self, obj: Mapping[str, Any]) -> Obj: ...

    def update_status(self, obj: Mapping[str, Any]) -> Obj: ...

    def patch(
        self,
        resource: ResourceLike,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
    ) -> Obj: ...

    def delete(
        self,
        resource: ResourceLike,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> Obj | None:
        """Delete; returns the object when it still exists (finalizers, graceful pods), else None."""
        ...

    def evict(
        self,
        name: str,
        namespace: str,
        *,
        grace_period_seconds: int | None = None,
    ) -> None:
        """Evict a pod through the eviction subresource (PodDisruptionBudgets are honoured)."""
        ...

    def bind(self, name: str, namespace: str, node_name: str) -> None:
        """Bind a pod to a node (the binding subresource)."""
        ...


def create_with_status(client: KubeClient, obj: Mapping[str, Any]) -> Obj:
    """Create ``obj`` as it is written, status included: a create ignores ``status`` for
    kinds with a status subresource, so it is written there afterwards (how tests and
    fixtures set up a Ready NodePool or a Running pod)."""
    created = client.create(obj)
    status = obj.get("status")
    rt = resource_of(created)
    if status and rt.status_subresource:
        meta = created.get("metadata") or {}
        created = client.patch(
            rt, str(meta.get("name")), {"status": status}, meta.get("namespace"),
            subresource="status",
        )  # fmt: skip
    return created


# --------------------------------------------------------------------------- read paths


def shared_get(client: KubeClient) -> Callable[..., Obj]:
    """``client``'s uncopied ``get`` where it has one (an informer cache, the in-memory
    server), else its ``get``. Only for callers that do not change what they read (nor hand
    it to code that does): it is the object other readers see."""
    read: Callable[..., Obj] | None = getattr(client, "get_shared", None)
    return read or client.get


def shared_list(client: KubeClient) -> Callable[..., ObjectList]:
    """``client``'s uncopied ``list`` where it has one, else its ``list``; the same rule as
    :func:`shared_get`."""
    read: Callable[..., ObjectList] | None = getattr(client, "list_shared", None)
    return read or client.list


def shared_patch(client: KubeClient) -> Callable[..., Obj]:
    """``client``'s ``patch`` that returns the stored result uncopied where it has one
    (the in-memory server), else its ``patch``; the same rule as :func:`shared_get` for
    what it returns."""
    write: Callable[..., Obj] | None = getattr(client, "patch_shared", None)
    return write or client.patch


def shared_create(client: KubeClient) -> Callable[..., Obj]:
    """``client``'s ``create`` that returns the stored result uncopied where it has one
    (the in-memory server), else its ``create``; the same rule as :func:`shared_get` for
    what it returns."""
    write: Callable[..., Obj] | None = getattr(client, "create_shared", None)
    return write or client.create


def api_reader(client: KubeClient) -> KubeClient:
    """The client that reads from the API server itself, past any informer cache in front
    of it (controller-runtime's API reader). For the few reads a stale cache would make
    wrong rather than late: "has this instance been created already?" asked right after a
    broken watch is answered from what the cache saw before the break."""
    uncached: Callable[[], KubeClient] | None = getattr(client, "uncached", None)
    return uncached() if uncached is not None else client


MERGE_PATCH = "merge"
JSON_PATCH = "json"
PATCH_TYPES = (MERGE_PATCH, JSON_PATCH)
