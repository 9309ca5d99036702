"""The AKSNodeClass (``karpenter.azure.com/v1beta1``) as a value, with upstream's validation.

Validation has two halves, both reporting the field path:

* the structural schema of the CRD this package ships (``crds/``): types, enums, minimums
  and maximums, patterns, lengths, ``maxItems``, required fields and map-list keys. The
  schema is read from the package data, so the model and the CRD cannot disagree;
* upstream's CEL rules (``x-kubernetes-validations`` of ``pkg/apis/v1beta1``), ported by
  hand in :data:`_RULES` (FIPS and image family, Trusted Launch, kubelet GC thresholds,
  swap, sysctl ranges, local DNS zones, tag keys and values).

Defaults (``imageFamily: Ubuntu``, ``osDiskSizeGB: 128``, kubelet and ``gpu.mode``
defaults) are applied first, as the API server does before it evaluates rules. An object
that slipped past the API server (the CRD not installed, an older schema) fails here with
a :class:`NodeClassError` listing every problem, never with a traceback in a controller.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable, Mapping, Sequence
from importlib.resources import files
from typing import Any

import yaml
from attrs import field, frozen

from karpenter_azure.labels import AKS_NODE_CLASS
from karpenter_core.plugin_api import KubeClient, NotFound, ResourceType, register_resource

__all__ = [
    "CONDITION_IMAGES_READY",
    "CONDITION_KUBERNETES_VERSION_READY",
    "CONDITION_READY",
    "CONDITION_SUBNETS_READY",
    "CONDITION_VALIDATION_SUCCEEDED",
    "CRD_FILE",
    "IMAGE_FAMILIES",
    "NODECLASS_RESOURCE",
    "READY_CONDITIONS",
    "AKSNodeClass",
    "NodeClassError",
    "apply_defaults",
    "crd_document",
    "get_nodeclass",
    "validate_spec",
]

CRD_FILE = "karpenter.azure.com_aksnodeclasses.yaml"

NODECLASS_RESOURCE: ResourceType = register_resource(
    ResourceType(
        group=AKS_NODE_CLASS.group,
        version=AKS_NODE_CLASS.version,
        kind=AKS_NODE_CLASS.kind,
        plural="aksnodeclasses",
        namespaced=False,
        status_subresource=True,
        tracks_generation=True,
        unconditional_update=False,
    )
)
"""AKSNodeClasses as the kube clients know them (cluster-scoped, status subresource)."""

CONDITION_READY = "Ready"
CONDITION_IMAGES_READY = "ImagesReady"
CONDITION_KUBERNETES_VERSION_READY = "KubernetesVersionReady"
CONDITION_SUBNETS_READY = "SubnetsReady"
CONDITION_VALIDATION_SUCCEEDED = "ValidationSucceeded"
READY_CONDITIONS: tuple[str, ...] = (
    CONDITION_IMAGES_READY,
    CONDITION_KUBERNETES_VERSION_READY,
    CONDITION_SUBNETS_READY,
    CONDITION_VALIDATION_SUCCEEDED,
)
"""The conditions whose conjunction is Ready. Upstream also gates on LocalDNSReady, which
needs the cluster's local DNS support; this provider does not resolve it yet."""

IMAGE_FAMILY_UBUNTU = "Ubuntu"
IMAGE_FAMILY_UBUNTU2204 = "Ubuntu2204"
IMAGE_FAMILY_UBUNTU2404 = "Ubuntu2404"
IMAGE_FAMILY_AZURE_LINUX = "AzureLinux"
IMAGE_FAMILIES: tuple[str, ...] = (
    IMAGE_FAMILY_UBUNTU,
    IMAGE_FAMILY_UBUNTU2204,
    IMAGE_FAMILY_UBUNTU2404,
    IMAGE_FAMILY_AZURE_LINUX,
)
FIPS_MODE_FIPS = "FIPS"
FIPS_MODE_DISABLED = "Disabled"


class NodeClassError(ValueError):
    """An AKSNodeClass that fails validation; ``errors`` are ``path: message`` lines."""

    def __init__(self, errors: Sequence[str]) -> None:
        self.errors = tuple(errors)
        super().__init__("; ".join(self.errors))


# --- the schema (package data) ------------------------------------------------------------


@functools.cache
def crd_document() -> Mapping[str, Any]:
    """The CRD this package ships, parsed."""
    text = (files("karpenter_azure") / "crds" / CRD_FILE).read_text(encoding="utf-8")
    doc = yaml.safe_load(text)
    assert isinstance(doc, dict)
    return doc


@functools.cache
def _spec_schema() -> Mapping[str, Any]:
    for version in crd_document()["spec"]["versions"]:
        if version["name"] == AKS_NODE_CLASS.version:
            schema = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
            assert isinstance(schema, dict)
            return schema
    raise LookupError(f"the shipped CRD has no {AKS_NODE_CLASS.version} version")


@functools.cache
def _pattern(pattern: str) -> re.Pattern[str]:
    # RE2 (the API server's engine) treats \d as ASCII digits
    return re.compile(pattern, re.ASCII)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def _type_ok(expected: str, value: Any) -> bool:
    actual = _kind(value)
    if expected == "number":
        return actual in ("integer", "number")
    return actual == expected


def _default(schema: Mapping[str, Any], value: Any) -> Any:
    """``value`` with the schema's defaults filled in (objects that are present only)."""
    if isinstance(value, Mapping) and schema.get("type") == "object":
        out = dict(value)
        for name, sub in (schema.get("properties") or {}).items():
            if name not in out and "default" in sub:
                out[name] = copy.deepcopy(sub["default"])
            if name in out:
                out[name] = _default(sub, out[name])
        return out
    if isinstance(value, list) and "items" in schema:
        return [_default(schema["items"], v) for v in value]
    return value


def apply_defaults(spec: Mapping[str, Any] | None) -> dict[str, Any]:
    """The spec with upstream's defaults applied (``imageFamily: Ubuntu``, ...)."""
    out = _default(_spec_schema(), dict(spec or {}))
    assert isinstance(out, dict)
    return out


def _structural(schema: Mapping[str, Any], value: Any, path: str, errors: list[str]) -> None:
    expected = schema.get("type")
    if expected and not _type_ok(expected, value):
        errors.append(f"{path}: expected {expected}, got {_kind(value)}")
        return
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(f'"{v}"' for v in schema["enum"])
        errors.append(f'{path}: unsupported value "{value}": supported values: {allowed}')
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: should be greater than or equal to {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: should be less than or equal to {schema['maximum']}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(f"{path}: should be at least {schema['minLength']} chars long")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{path}: may not be more than {schema['maxLength']} chars long")
        if "pattern" in schema and not _pattern(schema["pattern"]).search(value):
            errors.append(f"{path}: should match '{schema['pattern']}'")
    if isinstance(value, Mapping):
        props = schema.get("properties") or {}
        for name in schema.get("required") or ():
            if name not in value:
                errors.append(f"{path}.{name}: Required value")
        for name, sub in value.items():
            if name in props:
                _structural(props[name], sub, f"{path}.{name}", errors)
            elif isinstance(schema.get("additionalProperties"), Mapping):
                _structural(schema["additionalProperties"], sub, f"{path}[{name}]", errors)
            elif props:
                errors.append(f'{path}: unknown field "{name}"')
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: must have at most {schema['maxItems']} items")
        keys = schema.get("x-kubernetes-list-map-keys") or ()
        seen: set[tuple[Any, ...]] = set()
        for i, item in enumerate(value):
            if "items" in schema:
                _structural(schema["items"], item, f"{path}[{i}]", errors)
            if keys and isinstance(item, Mapping):
                key = tuple(item.get(k) for k in keys)
                if key in seen:
                    errors.append(
                        f"{path}[{i}]: Duplicate value: {dict(zip(keys, key, strict=True))}"
                    )
                seen.add(key)


# --- upstream's CEL rules, ported ---------------------------------------------------------


def _get(obj: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _trusted_launch(spec: Mapping[str, Any]) -> bool:
    tl = _get(spec, "security", "trustedLaunch")
    return _get(tl, "vtpm") is True or _get(tl, "secureBoot") is True


def _fips_ubuntu2404(spec: Mapping[str, Any]) -> bool:
    if spec.get("fipsMode") != FIPS_MODE_FIPS:
        return True
    return "imageFamily" in spec and spec["imageFamily"] != IMAGE_FAMILY_UBUNTU2404


def _fips_ubuntu2204(spec: Mapping[str, Any]) -> bool:
    if spec.get("fipsMode") != FIPS_MODE_FIPS:
        return True
    return "imageFamily" in spec and (
        spec["imageFamily"] != IMAGE_FAMILY_UBUNTU2204 or _trusted_launch(spec)
    )


def _fips_trusted_launch(spec: Mapping[str, Any]) -> bool:
    if spec.get("fipsMode") == FIPS_MODE_FIPS and _trusted_launch(spec):
        return spec.get("imageFamily") in (None, IMAGE_FAMILY_UBUNTU, IMAGE_FAMILY_UBUNTU2204)
    return True


def _swap(spec: Mapping[str, Any]) -> bool:
    if _get(spec, "linuxOSConfig", "swapFileSize") is None:
        return True
    return _get(spec, "kubelet", "failSwapOn") is False


def _ordered(low: str, high: str, strict: bool = False) -> Callable[[Mapping[str, Any]], bool]:
    def rule(obj: Mapping[str, Any]) -> bool:
        a, b = obj.get(low), obj.get(high)
        if not isinstance(a, int) or not isinstance(b, int):
            return True
        return a < b if strict else a <= b

    return rule


def _ports(obj: Mapping[str, Any]) -> tuple[int, int] | None:
    value = obj.get("netIPv4IPLocalPortRange")
    if not isinstance(value, str) or not re.fullmatch(r"\d+ \d+", value, re.ASCII):
        return None  # absent, or the pattern already reported it
    first, last = value.split(" ")
    return int(first), int(last)


def _port_first(obj: Mapping[str, Any]) -> bool:
    ports = _ports(obj)
    return ports is None or 1024 <= ports[0] <= 60999


def _port_last(obj: Mapping[str, Any]) -> bool:
    ports = _ports(obj)
    return ports is None or 32768 <= ports[1] <= 65535


def _port_order(obj: Mapping[str, Any]) -> bool:
    ports = _ports(obj)
    return ports is None or ports[0] <= ports[1]


def _zones(items: Any) -> list[Mapping[str, Any]]:
    return [i for i in items if isinstance(i, Mapping)] if isinstance(items, list) else []


def _required_zones(items: Any) -> bool:
    zones = {i.get("zone") for i in _zones(items)}
    return {".", "cluster.local"} <= zones


def _root_not_to_coredns(items: Any) -> bool:
    return not any(
        i.get("zone") == "." and i.get("forwardDestination") == "ClusterCoreDNS"
        for i in _zones(items)
    )


def _external_not_to_coredns(items: Any) -> bool:
    return not any(
        isinstance(i.get("zone"), str)
        and i["zone"] != "."
        and not i["zone"].endswith("cluster.local")
        and i.get("forwardDestination") == "ClusterCoreDNS"
        for i in _zones(items)
    )


def _cluster_local_not_to_vnet(item: Mapping[str, Any]) -> bool:
    zone = item.get("zone")
    return not (
        isinstance(zone, str)
        and zone.endswith("cluster.local")
        and item.get("forwardDestination") == "VnetDNS"
    )


def _verify_not_tcp(item: Mapping[str, Any]) -> bool:
    return not (item.get("serveStale") == "Verify" and item.get("protocol") == "ForceTCP")


_TAG_KEY_FORBIDDEN = re.compile(r"[<>%&?]")

_SPEC_RULES: tuple[tuple[Callable[[Any], bool], str], ...] = (
    (_fips_ubuntu2404, "FIPS is not yet supported for Ubuntu2404"),
    (_fips_ubuntu2204, "TrustedLaunch is required for FIPS support with Ubuntu2204"),
    (
        _fips_trusted_launch,
        "TrustedLaunch with FIPSMode FIPS is only supported for Ubuntu and Ubuntu2204",
    ),
    (
        _swap,
        "kubelet.failSwapOn must be set to false when linuxOSConfig.swapFileSize is specified",
    ),
)
_ZONE_ITEM_RULES: tuple[tuple[Callable[[Any], bool], str], ...] = (
    (_cluster_local_not_to_vnet, "'cluster.local' cannot be forwarded to VnetDNS"),
    (_verify_not_tcp, "serveStale Verify cannot be used with protocol ForceTCP"),
)
_RULES: dict[str, tuple[tuple[Callable[[Any], bool], str], ...]] = {
    "spec": _SPEC_RULES,
    "spec.kubelet": (
        (
            _ordered("imageGCLowThresholdPercent", "imageGCHighThresholdPercent", strict=True),
            "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
        ),
    ),
    "spec.linuxOSConfig.sysctls": (
        (
            _ordered("netCoreRmemDefault", "netCoreRmemMax"),
            "netCoreRmemDefault must be <= netCoreRmemMax",
        ),
        (
            _ordered("netCoreWmemDefault", "netCoreWmemMax"),
            "netCoreWmemDefault must be <= netCoreWmemMax",
        ),
        (
            _ordered("netIPv4NeighDefaultGcThresh1", "netIPv4NeighDefaultGcThresh2"),
            "netIPv4NeighDefaultGcThresh1 must be <= netIPv4NeighDefaultGcThresh2",
        ),
        (
            _ordered("netIPv4NeighDefaultGcThresh2", "netIPv4NeighDefaultGcThresh3"),
            "netIPv4NeighDefaultGcThresh2 must be <= netIPv4NeighDefaultGcThresh3",
        ),
        (_port_first, "netIPv4IPLocalPortRange first port must be in [1024, 60999]"),
        (_port_last, "netIPv4IPLocalPortRange last port must be in [32768, 65535]"),
        (_port_order, "netIPv4IPLocalPortRange first port must be <= last port"),
    ),
    "spec.localDNS.vnetDNSOverrides": (
        (_required_zones, "must contain required zones '.' and 'cluster.local'"),
        (
            _root_not_to_coredns,
            "root zone '.' cannot be forwarded to ClusterCoreDNS from vnetDNSOverrides",
        ),
        (
            _external_not_to_coredns,
            "external domains cannot be forwarded to ClusterCoreDNS from vnetDNSOverrides",
        ),
    ),
    "spec.localDNS.kubeDNSOverrides": (
        (_required_zones, "must contain required zones '.' and 'cluster.local'"),
    ),
    "spec.tags": (
        (
            lambda tags: all(len(k) <= 512 for k in tags),
            "tags keys must be less than 512 characters",
        ),
        (
            lambda tags: not any(_TAG_KEY_FORBIDDEN.search(k) for k in tags),
            "tags keys must not contain '<', '>', '%', '&', or '?'",
        ),
        (lambda tags: not any("\\" in k for k in tags), "tags keys must not contain '\\'"),
        (
            lambda tags: all(len(str(v)) <= 256 for v in tags.values()),
            "tags values must be less than 256 characters",
        ),
    ),
}


def _cel(spec: Mapping[str, Any], errors: list[str]) -> None:
    targets: dict[str, Any] = {
        "spec": spec,
        "spec.kubelet": _get(spec, "kubelet"),
        "spec.linuxOSConfig.sysctls": _get(spec, "linuxOSConfig", "sysctls"),
        "spec.localDNS.vnetDNSOverrides": _get(spec, "localDNS", "vnetDNSOverrides"),
        "spec.localDNS.kubeDNSOverrides": _get(spec, "localDNS", "kubeDNSOverrides"),
        "spec.tags": _get(spec, "tags"),
    }
    for path, rules in _RULES.items():
        target = targets[path]
        if not isinstance(target, list if path.endswith("Overrides") else Mapping):
            continue  # absent, or a type error the schema check reported
        for rule, message in rules:
            if not rule(target):
                errors.append(f"{path}: Invalid value: {message}")
    for overrides in ("vnetDNSOverrides", "kubeDNSOverrides"):
        for i, item in enumerate(_zones(_get(spec, "localDNS", overrides))):
            for rule, message in _ZONE_ITEM_RULES:
                if not rule(item):
                    errors.append(f"spec.localDNS.{overrides}[{i}]: Invalid value: {message}")


def validate_spec(spec: Mapping[str, Any] | None) -> list[str]:
    """Every problem with ``spec`` (defaults applied first), as ``path: message`` lines;
    empty when the API server would accept it."""
    if spec is not None and not isinstance(spec, Mapping):
        return [f"spec: expected object, got {_kind(spec)}"]
    defaulted = apply_defaults(spec)
    errors: list[str] = []
    _structural(_spec_schema(), defaulted, "spec", errors)
    # like the API server, rules run beside schema errors (each skips ill-typed input)
    _cel(defaulted, errors)
    return errors


# --- the model ----------------------------------------------------------------------------


@frozen
class AKSNodeClass:
    """A validated AKSNodeClass; ``spec`` is the defaulted spec (the drift hash's input)."""

    name: str
    generation: int
    spec: Mapping[str, Any]
    annotations: Mapping[str, str]
    status: Mapping[str, Any] = field(factory=dict)
    deletion_timestamp: str | None = None

    # --- status (what the status controller resolved) -----------------------------------

    def condition(self, kind: str) -> Mapping[str, Any] | None:
        for c in self.status.get("conditions") or ():
            if isinstance(c, Mapping) and c.get("type") == kind:
                return c
        return None

    def ready(self) -> bool | None:
        """``Ready``: True, False, or None while unknown (absent, Unknown, or reconciled
        against an older generation)."""
        cond = self.condition(CONDITION_READY)
        if cond is None:
            return None
        observed = cond.get("observedGeneration")
        if observed is not None and observed != self.generation:
            return None
        return {"True": True, "False": False}.get(str(cond.get("status")))

    def ready_message(self) -> str:
        cond = self.condition(CONDITION_READY)
        if cond is None:
            return "the AKSNodeClass has no Ready condition yet"
        return str(cond.get("message") or cond.get("reason") or "")

    @property
    def images(self) -> tuple[Mapping[str, Any], ...]:
        """``status.images``: ``{id, requirements}`` in preference order."""
        return tuple(i for i in self.status.get("images") or () if isinstance(i, Mapping))

    @property
    def kubernetes_version(self) -> str:
        return str(self.status.get("kubernetesVersion") or "")

    @property
    def image_family(self) -> str:
        return str(self.spec.get("imageFamily", IMAGE_FAMILY_UBUNTU))

    @property
    def fips_mode(self) -> str | None:
        value = self.spec.get("fipsMode")
        return str(value) if value is not None else None

    @property
    def fips(self) -> bool:
        return self.fips_mode == FIPS_MODE_FIPS

    @property
    def vnet_subnet_id(self) -> str | None:
        value = self.spec.get("vnetSubnetID")
        return str(value) if value is not None else None

    @property
    def os_disk_size_gb(self) -> int:
        return int(self.spec.get("osDiskSizeGB", 128))

    @property
    def max_pods(self) -> int | None:
        value = self.spec.get("maxPods")
        return int(value) if value is not None else None

    @property
    def tags(self) -> Mapping[str, str]:
        return dict(self.spec.get("tags") or {})

    @property
    def encryption_at_host(self) -> bool:
        return _get(self.spec, "security", "encryptionAtHost") is True

    @property
    def trusted_launch(self) -> bool:
        """vTPM or Secure Boot requested (upstream ``IsTrustedLaunchEnabled``)."""
        return _trusted_launch(self.spec)

    @property
    def gpu_mode(self) -> str:
        return str(_get(self.spec, "gpu", "mode") or "Driver")

    @property
    def artifact_streaming(self) -> bool:
        return _get(self.spec, "artifactStreaming", "enabled") is True

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> AKSNodeClass:
        """Parse and validate an AKSNodeClass object; :class:`NodeClassError` lists every
        problem with its field path."""
        meta = obj.get("metadata") or {}
        spec = obj.get("spec")
        errors = validate_spec(spec)
        if errors:
            raise NodeClassError(errors)
        return cls(
            name=str(meta.get("name", "")),
            generation=int(meta.get("generation") or 0),
            spec=apply_defaults(spec),
            annotations=dict(meta.get("annotations") or {}),
            status=dict(obj.get("status") or {}),
            deletion_timestamp=meta.get("deletionTimestamp") or None,
        )


def get_nodeclass(kube: KubeClient, name: str) -> AKSNodeClass | None:
    """The named AKSNodeClass, or None when it does not exist; a malformed one raises
    :class:`NodeClassError`."""
    try:
        obj = kube.get(NODECLASS_RESOURCE, name)
    except NotFound:
        return None
    return AKSNodeClass.from_dict(obj)
