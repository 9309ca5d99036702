"""Lean, parse-once views of the core Kubernetes objects the scheduler reads.

The scheduler touches every pod many times per pass, so each object is parsed exactly once
into an immutable attrs value with slots: quantities become integer milli-units, tolerations
and host ports become values, and derived facts (the pod's effective requests, its PVC names)
are computed up front. The original mapping is kept as ``.raw`` so nothing is lost and an
object can be written back unchanged.

Pods compare by identity (``eq=False``): two parsed copies of one manifest are distinct
scheduling subjects, and identity hashing lets the scheduler key maps by pod cheaply.

Parsing errors raise :class:`ObjectError` carrying the field path (``spec.containers[0]...``)
so a caller can report file, object and field in one line.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from attrs import evolve, field, frozen

from karpenter_core.apis.hostports import HostPort, host_ports_of
from karpenter_core.apis.labelselector import LabelSelector, SelectorError, label_selector_matches
from karpenter_core.apis.limits import shown_repr
from karpenter_core.apis.names import label_key_problem
from karpenter_core.apis.quantity import QuantityError, parse_quantity
from karpenter_core.apis.taints import Taint, Toleration

__all__ = [
    "CORE_PARSERS",
    "CSINode",
    "Controller",
    "DaemonSet",
    "Namespace",
    "Node",
    "ObjectError",
    "OwnerReference",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Pod",
    "PodDisruptionBudget",
    "Service",
    "StorageClass",
    "deterministic_uid",
    "label_selector_matches",
    "object_ref",
    "parse_core_object",
    "requests_for_pods",
    "validate_pod_scheduling",
]

PODS_RESOURCE = "pods"
ONE = 1000  # one whole unit, in milli-units

BIND_COMPLETED_ANNOTATION = "pv.kubernetes.io/bind-completed"
DEFAULT_STORAGE_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
BETA_DEFAULT_STORAGE_CLASS_ANNOTATION = "storageclass.beta.kubernetes.io/is-default-class"

# Pod-level resources (spec.resources) override the container aggregate only for these.
_POD_LEVEL_RESOURCES = frozenset({"cpu", "memory"})


class ObjectError(ValueError):
    """A manifest field that cannot be parsed; ``str()`` is ``"<field>: <message>"``."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


# --- small parsing helpers ----------------------------------------------------------------


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if type(value) is dict:  # the common case, without the ABC isinstance cost
        return value
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ObjectError(path, f"expected an object, got {type(value).__name__}")
    return value


def _list(value: Any, path: str) -> Sequence[Any]:
    if type(value) is list:
        return value
    if value is None:
        return ()
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise ObjectError(path, f"expected a list, got {type(value).__name__}")
    return value


def _str_map(value: Any, path: str) -> dict[str, str]:
    m = _mapping(value, path)
    out: dict[str, str] = {}
    for k, v in m.items():
        if not isinstance(v, str):
            raise ObjectError(f"{path}.{k}", f"expected a string, got {type(v).__name__}")
        out[str(k)] = v
    return out


def _str_map_as_is(value: Any, path: str) -> Mapping[str, str]:
    """:func:`_str_map` without a copy when ``value`` already is a plain mapping of strings:
    a pod's labels and annotations then stay the decoded object's own (which replicas share
    in ``serve``'s cache), as the model already keeps its affinity, volumes and conditions.
    Models are never changed, nor the objects they were parsed from."""
    if type(value) is dict and all(type(k) is str and type(v) is str for k, v in value.items()):
        return value
    return _str_map(value, path)


_INTERN_MAX = 50_000
_interned: dict[Any, Any] = {}


def _intern(value: Any, key: Any) -> Any:
    """The one value held for ``key`` (equal values stand for each other): replicas' request
    vectors, tolerations and owner references are then one object each, not one per pod.
    The table forgets everything when it grows past ``_INTERN_MAX`` distinct values, so
    unusual clusters cost at most that."""
    held = _interned.get(key)
    if held is not None:
        return held
    if len(_interned) >= _INTERN_MAX:
        _interned.clear()
    _interned[key] = value
    return value


def _interned_resources(resources: dict[str, int]) -> Mapping[str, int]:
    return _intern(resources, ("resources", *resources.items()))  # type: ignore[no-any-return]


def _intern_tuple(kind: str, values: tuple[Any, ...]) -> tuple[Any, ...]:
    if not values:
        return ()
    return _intern(values, (kind, values))  # type: ignore[no-any-return]


def _opt_str(value: Any, path: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ObjectError(path, f"expected a string, got {type(value).__name__}")
    return value


def _int(value: Any, path: str, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ObjectError(path, f"expected an integer, got {shown_repr(value)}")
    return value


def _timestamp(value: Any, path: str) -> float | None:
    """RFC 3339 time -> POSIX seconds (None when absent)."""
    if value is None:
        return None
    if isinstance(value, datetime):  # YAML loaders turn unquoted timestamps into datetimes
        return value.timestamp()
    if not isinstance(value, str):
        raise ObjectError(path, f"expected an RFC 3339 time, got {shown_repr(value)}")
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        raise ObjectError(path, f"expected an RFC 3339 time, got {shown_repr(value)}") from None


_parse_quantity_str = functools.lru_cache(maxsize=4096)(parse_quantity)
"""Quantity strings repeat across replicas ("100m", "256Mi"): parse each spelling once."""


def _resources(value: Any, path: str) -> dict[str, int]:
    out: dict[str, int] = {}
    if value is None or value == {}:
        return out
    for name, q in _mapping(value, path).items():
        try:
            milli = _parse_quantity_str(q) if type(q) is str else parse_quantity(q)
        except (QuantityError, ValueError, TypeError) as e:
            raise ObjectError(
                f"{path}.{name}", str(e) or f"invalid quantity {shown_repr(q)}"
            ) from None
        if milli < 0:
            # The API server rejects these (ValidateResourceQuantityValue): never count them.
            raise ObjectError(
                f"{path}.{name}", f"must be greater than or equal to 0, got {shown_repr(q)}"
            )
        out[str(name)] = milli
    return out


def _add_into(dest: dict[str, int], src: Mapping[str, int]) -> None:
    for k, v in src.items():
        dest[k] = dest.get(k, 0) + v


def _max_into(dest: dict[str, int], src: Mapping[str, int]) -> None:
    for k, v in src.items():
        cur = dest.get(k)
        if cur is None or v > cur:
            dest[k] = v


def deterministic_uid(*parts: str) -> str:
    """A stable UUID for objects read from files (which have none), so runs are repeatable."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "karpenter-core/" + "/".join(parts)))


def object_ref(kind: str, namespace: str, name: str) -> str:
    """How errors name an object: ``Pod default/web-0`` or ``StorageClass gp3``."""
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _metadata(d: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(d.get("metadata"), "metadata")


def _name(meta: Mapping[str, Any]) -> str:
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ObjectError("metadata.name", "required")
    return name


def _namespace(meta: Mapping[str, Any]) -> str:
    """Manifests may leave a namespaced object's namespace out; kubectl puts it in default."""
    return str(meta.get("namespace") or "default")


class _Namespaced:
    """Mixin for the namespaced views: ``key`` is ``namespace/name``, how caches index them."""

    __slots__ = ()
    namespace: str
    name: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


# --- owner references ---------------------------------------------------------------------


@frozen
class OwnerReference:
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], path: str) -> OwnerReference:
        d = _mapping(d, path)
        return cls(
            api_version=str(d.get("apiVersion", "")),
            kind=str(d.get("kind", "")),
            name=str(d.get("name", "")),
            uid=str(d.get("uid", "")),
            controller=bool(d.get("controller", False)),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
        }
        if self.controller:
            out["controller"] = True
            out["blockOwnerDeletion"] = True
        return out


# --- Pod --------------------------------------------------------------------------------------


def _container_requests(
    c: Mapping[str, Any], path: str, statuses: Mapping[str, Mapping[str, Any]], infeasible: bool
) -> dict[str, int]:
    """One container's effective requests.

    API-server defaulting copies a limit into a missing request; we apply it here because
    manifests read from files (and workload templates) have not been through defaulting.
    In-place resize: the kubelet may hold more than the spec asks (status resources), so the
    larger of spec, status and allocated wins, as kube-scheduler does.
    """
    res = _mapping(c.get("resources"), f"{path}.resources")
    reqs = _resources(res.get("requests"), f"{path}.resources.requests")
    for k, v in _resources(res.get("limits"), f"{path}.resources.limits").items():
        reqs.setdefault(k, v)
    cs = statuses.get(str(c.get("name", "")))
    if cs is not None and cs.get("resources") is not None:
        status_reqs = _resources(
            _mapping(cs.get("resources"), "status").get("requests"), "status.resources.requests"
        )
        allocated = _resources(cs.get("allocatedResources"), "status.allocatedResources")
        base: dict[str, int] = {} if infeasible else dict(reqs)
        _max_into(base, status_reqs)
        _max_into(base, allocated)
        return base
    return reqs


def _container_limits(c: Mapping[str, Any], path: str) -> dict[str, int]:
    res = _mapping(c.get("resources"), f"{path}.resources")
    return _resources(res.get("limits"), f"{path}.resources.limits")


def _is_sidecar(c: Mapping[str, Any]) -> bool:
    return c.get("restartPolicy") == "Always"


def pod_requests(
    spec: Mapping[str, Any], status: Mapping[str, Any] | None = None
) -> dict[str, int]:
    """Effective pod requests exactly as kube-scheduler computes them (KEP-753 aware).

    Regular containers are summed; each init container's peak is its own request plus the
    restartable (sidecar) init containers declared before it, and the pod needs the max of
    that peak and the running sum (sidecars keep running, so they also join the sum). Pod-level
    ``spec.resources.requests`` replace the aggregate for cpu/memory, then ``spec.overhead`` is
    added. No ``pods`` entry: see :func:`requests_for_pods`.
    """
    status = status or {}
    statuses: dict[str, Mapping[str, Any]] = {}
    for key in ("containerStatuses", "initContainerStatuses"):
        for cs in _list(status.get(key), f"status.{key}"):
            if isinstance(cs, Mapping):
                statuses[str(cs.get("name", ""))] = cs
    infeasible = any(
        isinstance(c, Mapping)
        and c.get("type") == "PodResizePending"
        and c.get("reason") == "Infeasible"
        for c in _list(status.get("conditions"), "status.conditions")
    )
    reqs: dict[str, int] = {}
    for i, c in enumerate(_list(spec.get("containers"), "spec.containers")):
        p = f"spec.containers[{i}]"
        _add_into(reqs, _container_requests(_mapping(c, p), p, statuses, infeasible))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for i, c in enumerate(_list(spec.get("initContainers"), "spec.initContainers")):
        p = f"spec.initContainers[{i}]"
        c = _mapping(c, p)
        if _is_sidecar(c):
            creq = _container_requests(c, p, statuses, infeasible)
            _add_into(reqs, creq)
            _add_into(sidecars, creq)
            _max_into(init_peak, sidecars)
        else:
            creq = _container_requests(c, p, {}, infeasible)
            peak = dict(creq)
            _add_into(peak, sidecars)
            _max_into(init_peak, peak)
    _max_into(reqs, init_peak)
    pod_level = _resources(
        _mapping(spec.get("resources"), "spec.resources").get("requests"),
        "spec.resources.requests",
    )
    for k, v in pod_level.items():
        if k in _POD_LEVEL_RESOURCES:
            reqs[k] = v
    _add_into(reqs, _resources(spec.get("overhead"), "spec.overhead"))
    return reqs


def pod_limits(spec: Mapping[str, Any]) -> dict[str, int]:
    """Effective pod limits (same aggregation as requests, limits only)."""
    lims: dict[str, int] = {}
    for i, c in enumerate(_list(spec.get("containers"), "spec.containers")):
        p = f"spec.containers[{i}]"
        _add_into(lims, _container_limits(_mapping(c, p), p))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for i, c in enumerate(_list(spec.get("initContainers"), "spec.initContainers")):
        p = f"spec.initContainers[{i}]"
        c = _mapping(c, p)
        clim = _container_limits(c, p)
        if _is_sidecar(c):
            _add_into(lims, clim)
            _add_into(sidecars, clim)
            _max_into(init_peak, sidecars)
        else:
            peak = dict(clim)
            _add_into(peak, sidecars)
            _max_into(init_peak, peak)
    _max_into(lims, init_peak)
    pod_level = _resources(
        _mapping(spec.get("resources"), "spec.resources").get("limits"), "spec.resources.limits"
    )
    for k, v in pod_level.items():
        if k in _POD_LEVEL_RESOURCES:
            lims[k] = v
    if lims:
        _add_into(lims, _resources(spec.get("overhead"), "spec.overhead"))
    return lims


def requests_for_pods(*pods: Pod) -> dict[str, int]:
    """Summed requests of pods plus ``pods: len(pods)`` (upstream ``RequestsForPods``)."""
    total: dict[str, int] = {}
    for p in pods:
        _add_into(total, p.requests)
    total[PODS_RESOURCE] = len(pods) * ONE
    return total


def _pvc_names(pod_name: str, volumes: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    names: list[str] = []
    for i, v in enumerate(volumes):
        pvc = v.get("persistentVolumeClaim")
        if pvc is not None:
            claim = _mapping(pvc, f"spec.volumes[{i}].persistentVolumeClaim").get("claimName")
            if not isinstance(claim, str) or not claim:
                raise ObjectError(f"spec.volumes[{i}].persistentVolumeClaim.claimName", "required")
            names.append(claim)
        elif v.get("ephemeral") is not None:
            # generic ephemeral volumes get a PVC named <pod>-<volume>
            names.append(f"{pod_name}-{v.get('name', '')}")
    return tuple(names)


def _has_dra(spec: Mapping[str, Any]) -> bool:
    if spec.get("resourceClaims"):
        return True
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or ():
            if isinstance(c, Mapping) and (c.get("resources") or {}).get("claims"):
                return True
    return False


_OWNED_BY_DAEMONSET = 1
_OWNED_BY_NODE = 2
_OWNED_BY_STATEFULSET = 4
_OWNER_KIND_BITS = {
    ("apps/v1", "DaemonSet"): _OWNED_BY_DAEMONSET,
    ("v1", "Node"): _OWNED_BY_NODE,
    ("apps/v1", "StatefulSet"): _OWNED_BY_STATEFULSET,
}


_POD_METADATA_READ = (
    "name",
    "namespace",
    "uid",
    "labels",
    "annotations",
    "ownerReferences",
    "creationTimestamp",
    "deletionTimestamp",
)
"""The metadata fields :meth:`Pod.from_dict` reads (the rest is bookkeeping)."""

_ABSENT = object()


def _status_resources(status: Mapping[str, Any]) -> bool:
    """Whether a container status reports resources (an in-place resize), which
    :func:`pod_requests` then reads; validated as :func:`pod_requests` does."""
    found = False
    for key in ("containerStatuses", "initContainerStatuses"):
        for cs in _list(status.get(key), f"status.{key}"):
            if isinstance(cs, Mapping) and cs.get("resources") is not None:
                found = True
    return found


@frozen(eq=False)
class Pod:
    """A pod as the scheduler sees it. ``requests`` excludes the ``pods`` resource;
    ``scheduling_requests`` includes ``pods: 1`` (what upstream's PodData carries)."""

    namespace: str
    name: str
    uid: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    owner_references: tuple[OwnerReference, ...]
    node_name: str
    nominated_node_name: str
    phase: str
    priority: int
    creation_timestamp: float
    deletion_timestamp: float | None
    start_time: float | None
    requests: Mapping[str, int]
    limits: Mapping[str, int]
    node_selector: Mapping[str, str]
    affinity: Mapping[str, Any] | None
    tolerations: tuple[Toleration, ...]
    topology_spread_constraints: tuple[Mapping[str, Any], ...]
    host_ports: tuple[HostPort, ...]
    volumes: tuple[Mapping[str, Any], ...]
    pvc_names: tuple[str, ...]
    scheduling_gates: tuple[str, ...]
    conditions: tuple[Mapping[str, Any], ...]
    has_dra_requirements: bool
    raw: Mapping[str, Any] = field(repr=False)
    key: str = field(init=False)
    scheduling_requests: Mapping[str, int] = field(init=False, repr=False)
    _owner_kinds: int = field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "key", f"{self.namespace}/{self.name}")
        sr = dict(self.requests)
        sr[PODS_RESOURCE] = ONE
        object.__setattr__(self, "scheduling_requests", _interned_resources(sr))
        # which of the owners the predicates ask about (DaemonSet, Node, StatefulSet) this
        # pod has: disruption asks them of every pod of every node at every pass
        kinds = 0
        for o in self.owner_references:
            kinds |= _OWNER_KIND_BITS.get((o.api_version, o.kind), 0)
        object.__setattr__(self, "_owner_kinds", kinds)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Pod:
        """Parse a ``v1/Pod`` mapping; raises :class:`ObjectError` naming the bad field."""
        d = _mapping(d, "")
        meta = _metadata(d)
        spec = _mapping(d.get("spec"), "spec")
        status = _mapping(d.get("status"), "status")
        name = _name(meta)
        namespace = _namespace(meta)
        if not _list(spec.get("containers"), "spec.containers"):
            raise ObjectError("spec.containers", "required (a pod needs at least one container)")
        volumes = tuple(
            _mapping(v, f"spec.volumes[{i}]")
            for i, v in enumerate(_list(spec.get("volumes"), "spec.volumes"))
        )
        tolerations = []
        for i, t in enumerate(_list(spec.get("tolerations"), "spec.tolerations")):
            try:
                tolerations.append(Toleration.from_dict(_mapping(t, f"spec.tolerations[{i}]")))
            except (ValueError, TypeError, KeyError) as e:
                raise ObjectError(f"spec.tolerations[{i}]", str(e)) from None
        try:
            host_ports = tuple(host_ports_of(spec))
        except (ValueError, TypeError, KeyError) as e:
            raise ObjectError("spec.containers[].ports", str(e)) from None
        affinity = spec.get("affinity")
        if affinity is not None:
            affinity = _mapping(affinity, "spec.affinity")
        uid = meta.get("uid") or deterministic_uid("Pod", namespace, name)
        return cls(
            namespace=namespace,
            name=name,
            uid=str(uid),
            labels=_str_map_as_is(meta.get("labels"), "metadata.labels"),
            annotations=_str_map_as_is(meta.get("annotations"), "metadata.annotations"),
            owner_references=_intern_tuple(
                "owners",
                tuple(
                    OwnerReference.from_dict(o, f"metadata.ownerReferences[{i}]")
                    for i, o in enumerate(
                        _list(meta.get("ownerReferences"), "metadata.ownerReferences")
                    )
                ),
            ),
            node_name=_opt_str(spec.get("nodeName"), "spec.nodeName") or "",
            nominated_node_name=_opt_str(
                status.get("nominatedNodeName"), "status.nominatedNodeName"
            )
            or "",
            phase=_opt_str(status.get("phase"), "status.phase") or "Pending",
            priority=_int(spec.get("priority"), "spec.priority", 0),
            creation_timestamp=_timestamp(
                meta.get("creationTimestamp"), "metadata.creationTimestamp"
            )
            or 0.0,
            deletion_timestamp=_timestamp(
                meta.get("deletionTimestamp"), "metadata.deletionTimestamp"
            ),
            start_time=_timestamp(status.get("startTime"), "status.startTime"),
            requests=_interned_resources(pod_requests(spec, status)),
            limits=_interned_resources(pod_limits(spec)),
            node_selector=_str_map(spec.get("nodeSelector"), "spec.nodeSelector"),
            affinity=affinity,
            tolerations=_intern_tuple("tolerations", tuple(tolerations)),
            topology_spread_constraints=tuple(
                _mapping(c, f"spec.topologySpreadConstraints[{i}]")
                for i, c in enumerate(
                    _list(spec.get("topologySpreadConstraints"), "spec.topologySpreadConstraints")
                )
            ),
            host_ports=host_ports,
            volumes=volumes,
            pvc_names=_pvc_names(name, volumes),
            scheduling_gates=tuple(
                str(_mapping(g, f"spec.schedulingGates[{i}]").get("name", ""))
                for i, g in enumerate(_list(spec.get("schedulingGates"), "spec.schedulingGates"))
            ),
            conditions=tuple(
                _mapping(c, f"status.conditions[{i}]")
                for i, c in enumerate(_list(status.get("conditions"), "status.conditions"))
            ),
            has_dra_requirements=_has_dra(spec),
            raw=d,
        )

    def refreshed(self, d: Mapping[str, Any]) -> Pod:
        """The parsed view of ``d``, a later version of this pod: equal to
        ``Pod.from_dict(d)``, but when only the status, bookkeeping metadata
        (resourceVersion, managedFields...) or ``spec.nodeName`` (a bind) changed, the
        spec and metadata parsed before are kept and only the status is read again. A pod
        is bound once and its status patched a few times in its life; every component that
        watches it would otherwise parse it whole each time (a fifth of a 150,000-pod
        scale-out). Values compare as JSON values (by ``==``)."""
        old = self.raw
        if d is old:
            return self
        if type(d) is not dict or type(old) is not dict:
            return Pod.from_dict(d)
        meta, old_meta = d.get("metadata"), old.get("metadata")
        if meta is not old_meta:
            if type(meta) is not dict or type(old_meta) is not dict:
                return Pod.from_dict(d)
            for k in _POD_METADATA_READ:
                a, b = meta.get(k), old_meta.get(k)
                if a is not b and a != b:
                    return Pod.from_dict(d)
        spec, old_spec = d.get("spec"), old.get("spec")
        node_name = self.node_name
        if spec is not old_spec:
            if type(spec) is not dict or type(old_spec) is not dict:
                return Pod.from_dict(d)
            for k, v in spec.items():
                if k != "nodeName":
                    was = old_spec.get(k, _ABSENT)
                    if v is not was and v != was:
                        return Pod.from_dict(d)
            if any(k not in spec and k != "nodeName" for k in old_spec):
                return Pod.from_dict(d)
            node_name = _opt_str(spec.get("nodeName"), "spec.nodeName") or ""
        status = _mapping(d.get("status"), "status")
        old_status = _mapping(old.get("status"), "status")
        requests = self.requests
        if _status_resources(status) or _status_resources(old_status):
            requests = _interned_resources(pod_requests(_mapping(spec, "spec"), status))
        conditions = tuple(
            _mapping(c, f"status.conditions[{i}]")
            for i, c in enumerate(_list(status.get("conditions"), "status.conditions"))
        )
        return evolve(
            self,
            node_name=node_name,
            nominated_node_name=_opt_str(
                status.get("nominatedNodeName"), "status.nominatedNodeName"
            )
            or "",
            phase=_opt_str(status.get("phase"), "status.phase") or "Pending",
            start_time=_timestamp(status.get("startTime"), "status.startTime"),
            requests=requests,
            conditions=conditions,
            raw=d,
        )

    # -- predicates (upstream pkg/utils/pod) --

    def is_owned_by(self, api_version: str, kind: str) -> bool:
        return any(o.api_version == api_version and o.kind == kind for o in self.owner_references)

    def is_owned_by_daemonset(self) -> bool:
        return bool(self._owner_kinds & _OWNED_BY_DAEMONSET)

    def is_owned_by_statefulset(self) -> bool:
        return bool(self._owner_kinds & _OWNED_BY_STATEFULSET)

    def is_owned_by_node(self) -> bool:
        """Mirror (static) pods are owned by their Node."""
        return bool(self._owner_kinds & _OWNED_BY_NODE)

    def is_terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    def is_terminating(self) -> bool:
        return self.deletion_timestamp is not None

    def is_active(self) -> bool:
        return not self.is_terminal() and not self.is_terminating()

    def is_scheduled(self) -> bool:
        return self.node_name != ""

    def is_preempting(self) -> bool:
        return self.nominated_node_name != ""

    def failed_to_schedule(self) -> bool:
        """kube-scheduler marked it ``PodScheduled=False, reason=Unschedulable``."""
        return any(
            c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
            for c in self.conditions
        )

    def is_provisionable(self) -> bool:
        """What the live provisioner acts on (needs kube-scheduler's Unschedulable verdict).
        The cheap field test first: callers ask it of every pod, nearly all bound."""
        return (
            not self.is_scheduled()
            and self.failed_to_schedule()
            and not self.is_preempting()
            and not self.is_owned_by_daemonset()
            and not self.is_owned_by_node()
        )

    def is_pending(self) -> bool:
        """Waiting for a node, judged from the object alone (no kube-scheduler verdict
        needed): unbound, not terminal or terminating, not a daemon or mirror pod, not
        pre-empting and not held back by scheduling gates."""
        return (
            not self.is_scheduled()
            and self.is_active()
            and not self.is_preempting()
            and not self.scheduling_gates
            and not self.is_owned_by_daemonset()
            and not self.is_owned_by_node()
        )

    def is_reschedulable(self) -> bool:
        return (
            self.is_active() or (self.is_owned_by_statefulset() and self.is_terminating())
        ) and not (self.is_owned_by_daemonset() or self.is_owned_by_node())

    def has_required_pod_anti_affinity(self) -> bool:
        anti = (self.affinity or {}).get("podAntiAffinity") or {}
        return bool(anti.get("requiredDuringSchedulingIgnoredDuringExecution"))


# --- Node -------------------------------------------------------------------------------------


@frozen(eq=False)
class Node:
    """A ``v1/Node``. Without ``status.allocatable`` the capacity is used (handy for
    hand-written manifests; a real kubelet always reports both)."""

    name: str
    uid: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    taints: tuple[Taint, ...]
    capacity: Mapping[str, int]
    allocatable: Mapping[str, int]
    provider_id: str
    unschedulable: bool
    ready: bool
    creation_timestamp: float
    deletion_timestamp: float | None
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Node:
        d = _mapping(d, "")
        meta = _metadata(d)
        spec = _mapping(d.get("spec"), "spec")
        status = _mapping(d.get("status"), "status")
        name = _name(meta)
        taints = []
        for i, t in enumerate(_list(spec.get("taints"), "spec.taints")):
            try:
                taints.append(Taint.from_dict(_mapping(t, f"spec.taints[{i}]")))
            except (ValueError, TypeError, KeyError) as e:
                raise ObjectError(f"spec.taints[{i}]", str(e)) from None
        capacity = _resources(status.get("capacity"), "status.capacity")
        allocatable = (
            _resources(status.get("allocatable"), "status.allocatable")
            if status.get("allocatable") is not None
            else dict(capacity)
        )
        ready = any(
            isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True"
            for c in _list(status.get("conditions"), "status.conditions")
        )
        return cls(
            name=name,
            uid=str(meta.get("uid") or deterministic_uid("Node", name)),
            labels=_str_map(meta.get("labels"), "metadata.labels"),
            annotations=_str_map(meta.get("annotations"), "metadata.annotations"),
            taints=tuple(taints),
            capacity=capacity,
            allocatable=allocatable,
            provider_id=_opt_str(spec.get("providerID"), "spec.providerID") or "",
            unschedulable=bool(spec.get("unschedulable", False)),
            ready=ready,
            creation_timestamp=_timestamp(
                meta.get("creationTimestamp"), "metadata.creationTimestamp"
            )
            or 0.0,
            deletion_timestamp=_timestamp(
                meta.get("deletionTimestamp"), "metadata.deletionTimestamp"
            ),
            raw=d,
        )


# --- DaemonSet --------------------------------------------------------------------------------


@frozen(eq=False)
class DaemonSet(_Namespaced):
    """A DaemonSet with the pod it would run on a new node (``template_pod``).

    The template pod is named after the DaemonSet and owned by it, so daemon-overhead code can
    treat it like any DaemonSet pod. Limits are merged into requests (the API server does that
    for pods but not for templates)."""

    namespace: str
    name: str
    uid: str
    labels: Mapping[str, str]
    selector: Mapping[str, Any] | None
    template_pod: Pod
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DaemonSet:
        d = _mapping(d, "")
        meta = _metadata(d)
        name = _name(meta)
        namespace = _namespace(meta)
        uid = str(meta.get("uid") or deterministic_uid("DaemonSet", namespace, name))
        spec = _mapping(d.get("spec"), "spec")
        template = _mapping(spec.get("template"), "spec.template")
        tmeta = _mapping(template.get("metadata"), "spec.template.metadata")
        pod_dict = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": dict(tmeta.get("labels") or {}),
                "annotations": dict(tmeta.get("annotations") or {}),
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "DaemonSet",
                        "name": name,
                        "uid": uid,
                        "controller": True,
                    }
                ],
            },
            "spec": dict(_mapping(template.get("spec"), "spec.template.spec")),
        }
        try:
            template_pod = Pod.from_dict(pod_dict)
        except ObjectError as e:
            raise ObjectError(f"spec.template.{e.path}", e.message) from None
        selector = spec.get("selector")
        return cls(
            namespace=namespace,
            name=name,
            uid=uid,
            labels=_str_map(meta.get("labels"), "metadata.labels"),
            selector=_mapping(selector, "spec.selector") if selector is not None else None,
            template_pod=template_pod,
            raw=d,
        )


# --- PodDisruptionBudget ------------------------------------------------------------------------


@frozen(eq=False)
class PodDisruptionBudget(_Namespaced):
    namespace: str
    name: str
    selector: Mapping[str, Any] | None
    min_available: int | str | None
    max_unavailable: int | str | None
    disruptions_allowed: int
    current_healthy: int
    desired_healthy: int
    expected_pods: int
    raw: Mapping[str, Any] = field(repr=False)
    label_selector: LabelSelector = field(init=False, repr=False)
    """``selector`` compiled (one that does not parse selects nothing)."""

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "label_selector", LabelSelector.compile(self.selector))

    def selects(self, pod: Pod) -> bool:
        """Same namespace and the selector matches; a PDB with no selector selects nothing
        (policy/v1: an empty selector selects every pod in the namespace)."""
        return pod.namespace == self.namespace and self.label_selector.matches(pod.labels)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PodDisruptionBudget:
        d = _mapping(d, "")
        meta = _metadata(d)
        spec = _mapping(d.get("spec"), "spec")
        status = _mapping(d.get("status"), "status")

        def int_or_percent(v: Any, path: str) -> int | str | None:
            if v is None or (isinstance(v, int) and not isinstance(v, bool)):
                return v
            if isinstance(v, str) and len(v) > 12:  # more than an int32 or a percentage holds
                raise ObjectError(path, f"expected an integer or a percentage, got {shown_repr(v)}")
            if isinstance(v, str) and ((v.endswith("%") and v[:-1].isdigit()) or v.isdigit()):
                return int(v) if v.isdigit() else v
            raise ObjectError(path, f"expected an integer or a percentage, got {shown_repr(v)}")

        selector = spec.get("selector")
        return cls(
            namespace=_namespace(meta),
            name=_name(meta),
            selector=_mapping(selector, "spec.selector") if selector is not None else None,
            min_available=int_or_percent(spec.get("minAvailable"), "spec.minAvailable"),
            max_unavailable=int_or_percent(spec.get("maxUnavailable"), "spec.maxUnavailable"),
            disruptions_allowed=_int(
                status.get("disruptionsAllowed"), "status.disruptionsAllowed", 0
            ),
            current_healthy=_int(status.get("currentHealthy"), "status.currentHealthy", 0),
            desired_healthy=_int(status.get("desiredHealthy"), "status.desiredHealthy", 0),
            expected_pods=_int(status.get("expectedPods"), "status.expectedPods", 0),
            raw=d,
        )


# --- storage ----------------------------------------------------------------------------------


@frozen(eq=False)
class PersistentVolumeClaim(_Namespaced):
    """``storage_class_name`` is None when unset and ``""`` when explicitly empty (the
    difference matters: only an unset class receives the cluster default)."""

    namespace: str
    name: str
    storage_class_name: str | None
    volume_name: str
    phase: str
    annotations: Mapping[str, str]
    deletion_timestamp: float | None
    requests: Mapping[str, int]
    raw: Mapping[str, Any] = field(repr=False)

    @property
    def storage_class(self) -> str:
        return self.storage_class_name or ""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PersistentVolumeClaim:
        d = _mapping(d, "")
        meta = _metadata(d)
        spec = _mapping(d.get("spec"), "spec")
        status = _mapping(d.get("status"), "status")
        res = _mapping(spec.get("resources"), "spec.resources")
        return cls(
            namespace=_namespace(meta),
            name=_name(meta),
            storage_class_name=_opt_str(spec.get("storageClassName"), "spec.storageClassName"),
            volume_name=_opt_str(spec.get("volumeName"), "spec.volumeName") or "",
            phase=_opt_str(status.get("phase"), "status.phase") or "Pending",
            annotations=_str_map(meta.get("annotations"), "metadata.annotations"),
            deletion_timestamp=_timestamp(
                meta.get("deletionTimestamp"), "metadata.deletionTimestamp"
            ),
            requests=_resources(res.get("requests"), "spec.resources.requests"),
            raw=d,
        )


def _node_selector_terms(value: Any, path: str) -> tuple[tuple[Mapping[str, Any], ...], ...]:
    terms = []
    for i, t in enumerate(_list(value, path)):
        tp = f"{path}[{i}]"
        t = _mapping(t, tp)
        exprs = _list(t.get("matchExpressions"), f"{tp}.matchExpressions")
        for j, e in enumerate(exprs):
            _node_selector_requirement(e, f"{tp}.matchExpressions[{j}]")
        terms.append(tuple(exprs))
    return tuple(terms)


@frozen(eq=False)
class PersistentVolume:
    """``node_affinity_terms`` is None without ``spec.nodeAffinity.required``; otherwise one
    tuple of match expressions per OR-ed term."""

    name: str
    storage_class_name: str
    csi_driver: str
    aws_elastic_block_store: bool
    local_or_host_path: bool
    node_affinity_terms: tuple[tuple[Mapping[str, Any], ...], ...] | None
    deletion_timestamp: float | None
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PersistentVolume:
        d = _mapping(d, "")
        meta = _metadata(d)
        spec = _mapping(d.get("spec"), "spec")
        csi = _mapping(spec.get("csi"), "spec.csi")
        na = _mapping(spec.get("nodeAffinity"), "spec.nodeAffinity")
        required = na.get("required")
        terms = None
        if required is not None:
            terms = _node_selector_terms(
                _mapping(required, "spec.nodeAffinity.required").get("nodeSelectorTerms"),
                "spec.nodeAffinity.required.nodeSelectorTerms",
            )
        return cls(
            name=_name(meta),
            storage_class_name=_opt_str(spec.get("storageClassName"), "spec.storageClassName")
            or "",
            csi_driver=_opt_str(csi.get("driver"), "spec.csi.driver") or "",
            aws_elastic_block_store=spec.get("awsElasticBlockStore") is not None,
            local_or_host_path=spec.get("local") is not None or spec.get("hostPath") is not None,
            node_affinity_terms=terms,
            deletion_timestamp=_timestamp(
                meta.get("deletionTimestamp"), "metadata.deletionTimestamp"
            ),
            raw=d,
        )


@frozen(eq=False)
class StorageClass:
    name: str
    provisioner: str
    volume_binding_mode: str
    allowed_topologies: tuple[tuple[Mapping[str, Any], ...], ...]
    is_default: bool
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StorageClass:
        d = _mapping(d, "")
        meta = _metadata(d)
        annotations = _str_map(meta.get("annotations"), "metadata.annotations")
        topologies = []
        for i, t in enumerate(_list(d.get("allowedTopologies"), "allowedTopologies")):
            tp = f"allowedTopologies[{i}]"
            t = _mapping(t, tp)
            topologies.append(
                tuple(
                    _mapping(e, f"{tp}.matchLabelExpressions[{j}]")
                    for j, e in enumerate(
                        _list(t.get("matchLabelExpressions"), f"{tp}.matchLabelExpressions")
                    )
                )
            )
        provisioner = d.get("provisioner")
        if not isinstance(provisioner, str) or not provisioner:
            raise ObjectError("provisioner", "required")
        mode = _opt_str(d.get("volumeBindingMode"), "volumeBindingMode") or "Immediate"
        if mode not in ("Immediate", "WaitForFirstConsumer"):
            raise ObjectError(
                "volumeBindingMode",
                f"must be Immediate or WaitForFirstConsumer, got {shown_repr(mode)}",
            )
        return cls(
            name=_name(meta),
            provisioner=provisioner,
            volume_binding_mode=mode,
            allowed_topologies=tuple(topologies),
            is_default=annotations.get(DEFAULT_STORAGE_CLASS_ANNOTATION) == "true"
            or annotations.get(BETA_DEFAULT_STORAGE_CLASS_ANNOTATION) == "true",
            raw=d,
        )


@frozen(eq=False)
class CSINode:
    """Per-driver attachable-volume limits of a node (``spec.drivers[].allocatable.count``)."""

    name: str
    driver_limits: Mapping[str, int]
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CSINode:
        d = _mapping(d, "")
        meta = _metadata(d)
        spec = _mapping(d.get("spec"), "spec")
        limits: dict[str, int] = {}
        for i, drv in enumerate(_list(spec.get("drivers"), "spec.drivers")):
            p = f"spec.drivers[{i}]"
            drv = _mapping(drv, p)
            alloc = drv.get("allocatable")
            if alloc is None:
                continue
            count = _mapping(alloc, f"{p}.allocatable").get("count")
            if count is None:
                continue
            limits[str(drv.get("name", ""))] = _int(count, f"{p}.allocatable.count", 0)
        return cls(name=_name(meta), driver_limits=limits, raw=d)


# --- objects read for default topology spreads and namespaceSelector ---------------------------


def _selector_value(value: Any, path: str) -> Mapping[str, Any] | None:
    """A ``metav1.LabelSelector`` checked the way the API server checks one."""
    if value is None:
        return None
    sel = _mapping(value, path)
    try:
        LabelSelector.from_dict(sel)
    except SelectorError as e:
        raise ObjectError(f"{path}.{e.path}" if e.path else path, e.message) from None
    return sel


@frozen(eq=False)
class Namespace:
    """A Namespace's labels, for pod (anti-)affinity ``namespaceSelector``."""

    name: str
    labels: Mapping[str, str]
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Namespace:
        d = _mapping(d, "")
        meta = _metadata(d)
        return cls(name=_name(meta), labels=_str_map(meta.get("labels"), "metadata.labels"), raw=d)


@frozen(eq=False)
class Service(_Namespaced):
    """A Service's pod selector: kube-scheduler deduces default spread selectors from the
    Services selecting a pod. ``selector`` is None when the Service has none (it then
    selects nothing)."""

    namespace: str
    name: str
    selector: Mapping[str, str] | None
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Service:
        d = _mapping(d, "")
        meta = _metadata(d)
        spec = _mapping(d.get("spec"), "spec")
        selector = spec.get("selector")
        return cls(
            namespace=_namespace(meta),
            name=_name(meta),
            selector=None if selector is None else _str_map(selector, "spec.selector"),
            raw=d,
        )


@frozen(eq=False)
class Controller(_Namespaced):
    """A pod controller (ReplicaSet, StatefulSet, ReplicationController) as default spreads
    need it: identity and pod selector."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str
    selector: Mapping[str, Any] | None
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Controller:
        d = _mapping(d, "")
        meta = _metadata(d)
        spec = _mapping(d.get("spec"), "spec")
        kind = str(d.get("kind") or "")
        selector: Mapping[str, Any] | None
        if kind == "ReplicationController":
            raw_sel = spec.get("selector")
            selector = None if raw_sel is None else _str_map(raw_sel, "spec.selector")
        else:
            selector = _selector_value(spec.get("selector"), "spec.selector")
        return cls(
            api_version=str(d.get("apiVersion") or ""),
            kind=kind,
            namespace=_namespace(meta),
            name=_name(meta),
            uid=str(meta.get("uid") or ""),
            selector=selector,
            raw=d,
        )


# --- API-server validation of the pod fields the scheduler reads --------------------------------

_NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
_INCLUSION_POLICIES = ("Honor", "Ignore")


def _node_selector_requirement(expr: Any, path: str) -> None:
    """One ``matchExpressions`` entry of a node selector term."""
    operators = _NODE_SELECTOR_OPERATORS
    expr = _mapping(expr, path)
    key = expr.get("key")
    if not isinstance(key, str) or not key:
        raise ObjectError(f"{path}.key", "required")
    op = expr.get("operator")
    if op not in operators:
        raise ObjectError(
            f"{path}.operator",
            f"unsupported operator {shown_repr(op)} (one of {', '.join(operators)})",
        )
    values = _list(expr.get("values"), f"{path}.values")
    if op in ("In", "NotIn") and not values:
        raise ObjectError(f"{path}.values", f"must be specified for operator {op}")
    if op in ("Exists", "DoesNotExist") and values:
        raise ObjectError(f"{path}.values", f"may not be specified for operator {op}")
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            raise ObjectError(f"{path}.values", f"operator {op} needs exactly one value")
        try:
            int(str(values[0]))
        except ValueError:
            raise ObjectError(
                f"{path}.values[0]", f"operator {op} needs an integer, got {shown_repr(values[0])}"
            ) from None


def _node_selector_term(term: Any, path: str) -> None:
    term = _mapping(term, path)
    for i, e in enumerate(_list(term.get("matchExpressions"), f"{path}.matchExpressions")):
        _node_selector_requirement(e, f"{path}.matchExpressions[{i}]")
    for i, e in enumerate(_list(term.get("matchFields"), f"{path}.matchFields")):
        _node_selector_requirement(e, f"{path}.matchFields[{i}]")


def _pod_affinity_term(term: Any, path: str) -> None:
    term = _mapping(term, path)
    key = term.get("topologyKey")
    if not isinstance(key, str) or not key:
        raise ObjectError(f"{path}.topologyKey", "required")
    _selector_value(term.get("labelSelector"), f"{path}.labelSelector")
    _selector_value(term.get("namespaceSelector"), f"{path}.namespaceSelector")
    for i, ns in enumerate(_list(term.get("namespaces"), f"{path}.namespaces")):
        if not isinstance(ns, str):
            raise ObjectError(f"{path}.namespaces[{i}]", f"expected a string, got {shown_repr(ns)}")


def _weighted(item: Any, path: str, inner: str) -> Any:
    item = _mapping(item, path)
    w = item.get("weight")
    if not isinstance(w, int) or isinstance(w, bool) or not 1 <= w <= 100:
        raise ObjectError(f"{path}.weight", f"must be an integer in 1..100, got {shown_repr(w)}")
    return item.get(inner)


def validate_pod_scheduling(spec: Any, path: str = "spec") -> None:
    """Raise :class:`ObjectError` for a pod spec the API server would reject in a field the
    scheduler reads: node affinity (operators, Gt/Lt integers), pod (anti-)affinity terms and
    their selectors, and topology spread constraints.

    Live pods have passed this validation already; manifests given to ``karpenter schedule``
    have not, and a typo there must be reported as bad input rather than silently turning
    into "selects nothing"."""
    spec = _mapping(spec, path)
    aff = _mapping(spec.get("affinity"), f"{path}.affinity")
    na = _mapping(aff.get("nodeAffinity"), f"{path}.affinity.nodeAffinity")
    p = f"{path}.affinity.nodeAffinity"
    req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
    if req is not None:
        rp = f"{p}.requiredDuringSchedulingIgnoredDuringExecution"
        terms = _list(_mapping(req, rp).get("nodeSelectorTerms"), f"{rp}.nodeSelectorTerms")
        for i, t in enumerate(terms):
            _node_selector_term(t, f"{rp}.nodeSelectorTerms[{i}]")
    pp = f"{p}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, item in enumerate(_list(na.get("preferredDuringSchedulingIgnoredDuringExecution"), pp)):
        _node_selector_term(_weighted(item, f"{pp}[{i}]", "preference"), f"{pp}[{i}].preference")
    for kind in ("podAffinity", "podAntiAffinity"):
        k = f"{path}.affinity.{kind}"
        pa = _mapping(aff.get(kind), k)
        rp = f"{k}.requiredDuringSchedulingIgnoredDuringExecution"
        for i, t in enumerate(_list(pa.get("requiredDuringSchedulingIgnoredDuringExecution"), rp)):
            _pod_affinity_term(t, f"{rp}[{i}]")
        pp = f"{k}.preferredDuringSchedulingIgnoredDuringExecution"
        for i, item in enumerate(
            _list(pa.get("preferredDuringSchedulingIgnoredDuringExecution"), pp)
        ):
            term = _weighted(item, f"{pp}[{i}]", "podAffinityTerm")
            _pod_affinity_term(term, f"{pp}[{i}].podAffinityTerm")
    tp = f"{path}.topologySpreadConstraints"
    for i, tsc in enumerate(_list(spec.get("topologySpreadConstraints"), tp)):
        c = f"{tp}[{i}]"
        tsc = _mapping(tsc, c)
        skew = tsc.get("maxSkew")
        if not isinstance(skew, int) or isinstance(skew, bool) or skew <= 0:
            raise ObjectError(
                f"{c}.maxSkew", f"must be an integer greater than 0, got {shown_repr(skew)}"
            )
        key = tsc.get("topologyKey")
        if not isinstance(key, str) or not key:
            raise ObjectError(f"{c}.topologyKey", "required")
        when = tsc.get("whenUnsatisfiable")
        if when not in _WHEN_UNSATISFIABLE:
            raise ObjectError(
                f"{c}.whenUnsatisfiable",
                f"must be DoNotSchedule or ScheduleAnyway, got {shown_repr(when)}",
            )
        md = tsc.get("minDomains")
        if md is not None and (not isinstance(md, int) or isinstance(md, bool) or md <= 0):
            raise ObjectError(
                f"{c}.minDomains", f"must be an integer greater than 0, got {shown_repr(md)}"
            )
        if md is not None and when != "DoNotSchedule":
            raise ObjectError(
                f"{c}.minDomains", "may only be set when whenUnsatisfiable is DoNotSchedule"
            )
        for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            v = tsc.get(policy)
            if v is not None and v not in _INCLUSION_POLICIES:
                raise ObjectError(f"{c}.{policy}", f"must be Honor or Ignore, got {shown_repr(v)}")
        _selector_value(tsc.get("labelSelector"), f"{c}.labelSelector")
        for j, k2 in enumerate(_list(tsc.get("matchLabelKeys"), f"{c}.matchLabelKeys")):
            if label_key_problem(k2) is not None:
                raise ObjectError(
                    f"{c}.matchLabelKeys[{j}]", f"expected a label key, got {shown_repr(k2)}"
                )


CORE_PARSERS: Mapping[str, Callable[[Mapping[str, Any]], Any]] = {
    "Pod": Pod.from_dict,
    "Node": Node.from_dict,
    "PersistentVolumeClaim": PersistentVolumeClaim.from_dict,
    "PersistentVolume": PersistentVolume.from_dict,
    "DaemonSet": DaemonSet.from_dict,
    "PodDisruptionBudget": PodDisruptionBudget.from_dict,
    "StorageClass": StorageClass.from_dict,
    "CSINode": CSINode.from_dict,
    "Namespace": Namespace.from_dict,
    "Service": Service.from_dict,
    "ReplicationController": Controller.from_dict,
}
"""The core kinds with a parsed view here, by kind."""


def parse_core_object(kind: str, obj: Mapping[str, Any]) -> Any:
    """Parse one core object of a kind in :data:`CORE_PARSERS`; Pods and DaemonSet
    templates also get the API server's checks of the scheduling fields (affinity operators,
    spread constraints). Raises :class:`ObjectError` naming the field."""
    parsed = CORE_PARSERS[kind](obj)
    if kind == "Pod":
        validate_pod_scheduling(obj.get("spec"), "spec")
    elif kind == "DaemonSet":
        template = _mapping(_mapping(obj.get("spec"), "spec").get("template"), "spec.template")
        validate_pod_scheduling(template.get("spec"), "spec.template.spec")
    return parsed
