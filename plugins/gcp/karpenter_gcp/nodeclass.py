"""The GCENodeClass (``karpenter.k8s.gcp/v1alpha1``) as a value, with upstream's validation.

Validation has two halves, both reporting the field path:

* the structural schema of the CRD this package ships (``crds/``): types, enums, minimums
  and maximums, patterns, lengths, ``minItems``/``maxItems``, ``maxProperties``, required
  fields. The schema is read from the package data, so the model and the CRD cannot
  disagree;
* upstream's CEL rules (``x-kubernetes-validations`` of ``pkg/apis/v1alpha1``), ported by
  hand below (disk size and provisioned IOPS/throughput per category, image selector terms
  and aliases, kubelet reservations and eviction maps, restricted labels, reserved GKE
  metadata keys).

Defaults (``gpuDriverVersion: default``, the only one upstream declares) are applied first,
as the API server does before it evaluates rules. An object that slipped past the API
server (the CRD not installed, an older schema) fails here with a :class:`NodeClassError`
listing every problem, never with a traceback in a controller.
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

from karpenter_core.plugin_api import KubeClient, NotFound, ResourceType, register_resource
from karpenter_gcp.labels import GCE_NODE_CLASS

__all__ = [
    "CONDITION_IMAGES_READY",
    "CONDITION_READY",
    "CONDITION_VALIDATION_SUCCEEDED",
    "CRD_FILE",
    "DEFAULT_MAX_PODS",
    "IMAGE_FAMILY_CONTAINER_OPTIMIZED_OS",
    "IMAGE_FAMILY_CUSTOM",
    "IMAGE_FAMILY_UBUNTU",
    "IMAGE_FAMILY_UBUNTU2204",
    "IMAGE_FAMILY_UBUNTU2404",
    "NODECLASS_RESOURCE",
    "READY_CONDITIONS",
    "RESERVED_METADATA_KEYS",
    "Alias",
    "GCENodeClass",
    "NodeClassError",
    "apply_defaults",
    "crd_document",
    "get_nodeclass",
    "validate_spec",
]

CRD_FILE = "karpenter.k8s.gcp_gcenodeclasses.yaml"

NODECLASS_RESOURCE: ResourceType = register_resource(
    ResourceType(
        group=GCE_NODE_CLASS.group,
        version=GCE_NODE_CLASS.version,
        kind=GCE_NODE_CLASS.kind,
        plural="gcenodeclasses",
        namespaced=False,
        status_subresource=True,
        tracks_generation=True,
        unconditional_update=False,
    )
)
"""GCENodeClasses as the kube clients know them (cluster-scoped, status subresource)."""

CONDITION_READY = "Ready"
CONDITION_IMAGES_READY = "ImagesReady"
CONDITION_VALIDATION_SUCCEEDED = "ValidationSucceeded"
READY_CONDITIONS: tuple[str, ...] = (CONDITION_IMAGES_READY, CONDITION_VALIDATION_SUCCEEDED)
"""The conditions whose conjunction is Ready. Upstream gates on ImagesReady alone; this
provider adds ValidationSucceeded so a spec that slipped past the API server reads as not
Ready with the offending fields named, instead of failing every reconcile."""

IMAGE_FAMILY_UBUNTU = "Ubuntu"
IMAGE_FAMILY_UBUNTU2404 = "Ubuntu2404"
IMAGE_FAMILY_UBUNTU2204 = "Ubuntu2204"
IMAGE_FAMILY_CONTAINER_OPTIMIZED_OS = "ContainerOptimizedOS"
IMAGE_FAMILY_CUSTOM = "Custom"
ALIAS_FAMILIES: tuple[str, ...] = (IMAGE_FAMILY_UBUNTU, IMAGE_FAMILY_CONTAINER_OPTIMIZED_OS)

DEFAULT_MAX_PODS = 110
"""Upstream ``KubeletMaxPods``: the pod limit when ``kubeletConfiguration.maxPods`` is unset."""

RESERVED_METADATA_KEYS: frozenset[str] = frozenset(
    {
        "cluster-location",
        "cluster-name",
        "cluster-uid",
        "configure-sh",
        "containerd-configure-sh",
        "disable-address-manager",
        "enable-os-login",
        "gci-ensure-gke-docker",
        "gci-metrics-enabled",
        "gci-update-strategy",
        "instance-template",
        "install-ssh-psm1",
        "k8s-node-setup-psm1",
        "kube-env",
        "kube-labels",
        "startup-script",
        "user-data",
        "user-profile-psm1",
        "windows-startup-script-ps1",
        "common-psm1",
        "kubeconfig",
        "kubelet-config",
    }
)
"""Instance metadata keys the GKE bootstrap owns; ``spec.metadata`` may not set them."""


class NodeClassError(ValueError):
    """A GCENodeClass that fails validation; ``errors`` are ``path: message`` lines."""

    def __init__(self, errors: Sequence[str]) -> None:
        self.errors = tuple(errors)
        super().__init__("; ".join(self.errors))


# --- the schema (package data) ------------------------------------------------------------


@functools.cache
def crd_document() -> Mapping[str, Any]:
    """The CRD this package ships, parsed."""
    text = (files("karpenter_gcp") / "crds" / CRD_FILE).read_text(encoding="utf-8")
    doc = yaml.safe_load(text)
    assert isinstance(doc, dict)
    return doc


@functools.cache
def _spec_schema() -> Mapping[str, Any]:
    for version in crd_document()["spec"]["versions"]:
        if version["name"] == GCE_NODE_CLASS.version:
            schema = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
            assert isinstance(schema, dict)
            return schema
    raise LookupError(f"the shipped CRD has no {GCE_NODE_CLASS.version} version")


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
    """The spec with upstream's defaults applied (``gpuDriverVersion: default``)."""
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
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            errors.append(f"{path}: must have at most {schema['maxProperties']} properties")
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
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(f"{path}: should have at least {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: must have at most {schema['maxItems']} items")
        for i, item in enumerate(value):
            if "items" in schema:
                _structural(schema["items"], item, f"{path}[{i}]", errors)


# --- upstream's CEL rules, ported ---------------------------------------------------------

Rule = tuple[Callable[[Any], bool], str]

_IOPS_CATEGORIES = (
    "pd-extreme",
    "hyperdisk-balanced",
    "hyperdisk-balanced-high-availability",
    "hyperdisk-extreme",
)
_THROUGHPUT_CATEGORIES = (
    "hyperdisk-balanced",
    "hyperdisk-balanced-high-availability",
    "hyperdisk-throughput",
    "hyperdisk-ml",
)
_PAIRED_CATEGORIES = ("hyperdisk-balanced", "hyperdisk-balanced-high-availability")

_DISK_RULES: tuple[Rule, ...] = (
    (
        lambda d: "provisionedIOPS" not in d or d.get("category") in _IOPS_CATEGORIES,
        "provisionedIOPS is only applicable for pd-extreme, hyperdisk-balanced, "
        "hyperdisk-balanced-high-availability, and hyperdisk-extreme",
    ),
    (
        lambda d: "provisionedThroughput" not in d or d.get("category") in _THROUGHPUT_CATEGORIES,
        "provisionedThroughput is only applicable for hyperdisk-balanced, "
        "hyperdisk-balanced-high-availability, hyperdisk-throughput, and hyperdisk-ml",
    ),
    (
        lambda d: (
            d.get("category") not in _PAIRED_CATEGORIES
            or ("provisionedIOPS" in d) == ("provisionedThroughput" in d)
        ),
        "provisionedIOPS and provisionedThroughput must both be set or both be unset for "
        "hyperdisk-balanced and hyperdisk-balanced-high-availability",
    ),
)

_COS_VERSION = re.compile(r"[0-9]+[.][0-9]+[.][0-9]+[.][0-9]+")
_UBUNTU_VERSION = re.compile(r"v[0-9]{8}")

_ALIAS_RULES: tuple[Rule, ...] = (
    (
        lambda a: re.match(r"^[a-zA-Z0-9]+@.+", a) is not None,
        "'alias' is improperly formatted, must match the format 'family@version'",
    ),
    (
        lambda a: (re.match(r"[^@]+", a) or [""])[0] in ALIAS_FAMILIES,
        "family is not supported, must be one of the following: 'ContainerOptimizedOS,Ubuntu'",
    ),
    (
        lambda a: (
            not a.startswith("ContainerOptimizedOS@")
            or re.fullmatch(r"ContainerOptimizedOS@(latest|[0-9]+[.][0-9]+[.][0-9]+[.][0-9]+)", a)
            is not None
        ),
        "ContainerOptimizedOS version must be 'latest' or 'milestone.build.build.build' "
        "(e.g. '125.19216.104.126')",
    ),
    (
        lambda a: (
            not a.startswith("Ubuntu@") or re.fullmatch(r"Ubuntu@(latest|v[0-9]{8})", a) is not None
        ),
        "Ubuntu version must be 'latest' or 'vYYYYMMDD' (e.g. 'v20260416')",
    ),
)


def _family_version_ok(family: str, pattern: re.Pattern[str]) -> Callable[[Any], bool]:
    def rule(t: Mapping[str, Any]) -> bool:
        if "version" not in t or "family" not in t or t["family"] != family:
            return True
        return t["version"] == "latest" or pattern.fullmatch(str(t["version"])) is not None

    return rule


_TERM_RULES: tuple[Rule, ...] = (
    (
        lambda t: "family" not in t or "channel" in t or "version" in t,
        "family requires either channel or version to be set",
    ),
    (
        lambda t: not ("channel" in t or "version" in t) or "family" in t,
        "channel and version require family to be set",
    ),
    (lambda t: not ("channel" in t and "version" in t), "channel and version cannot both be set"),
    (
        lambda t: "channel" not in t or t.get("family") == IMAGE_FAMILY_CONTAINER_OPTIMIZED_OS,
        "channel is only supported for family ContainerOptimizedOS",
    ),
    (
        lambda t: sum(k in t for k in ("alias", "id", "family")) == 1,
        "exactly one of alias, id, or family must be set",
    ),
    (
        _family_version_ok(IMAGE_FAMILY_CONTAINER_OPTIMIZED_OS, _COS_VERSION),
        "ContainerOptimizedOS version must be 'latest' or 'milestone.build.build.build' "
        "(e.g. '125.19216.104.126')",
    ),
    (
        _family_version_ok(IMAGE_FAMILY_UBUNTU2404, _UBUNTU_VERSION),
        "Ubuntu2404 version must be 'latest' or 'vYYYYMMDD' (e.g. 'v20260416')",
    ),
    (
        _family_version_ok(IMAGE_FAMILY_UBUNTU2204, _UBUNTU_VERSION),
        "Ubuntu2204 version must be 'latest' or 'vYYYYMMDD' (e.g. 'v20260416')",
    ),
    (
        lambda t: t.get("family") != IMAGE_FAMILY_UBUNTU,
        "family 'Ubuntu' is not valid; use Ubuntu2404 for Ubuntu 24.04 or Ubuntu2204 for "
        "Ubuntu 22.04",
    ),
)


def _terms(items: list[Any]) -> list[Mapping[str, Any]]:
    return [t for t in items if isinstance(t, Mapping)]


_TERMS_RULES: tuple[Rule, ...] = (
    (
        lambda ts: all(any(k in t for k in ("alias", "id", "family")) for t in _terms(ts)),
        "each term must set exactly one of: alias, id, or family (with channel or version)",
    ),
    (
        lambda ts: (
            not (
                any("channel" in t for t in _terms(ts))
                and any(
                    t.get("family") == IMAGE_FAMILY_CONTAINER_OPTIMIZED_OS
                    and t.get("version") == "latest"
                    for t in _terms(ts)
                )
            )
        ),
        "channel: and version: latest cannot both appear in the same imageSelectorTerms",
    ),
)

_EVICTION_SIGNALS = (
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
)
_RESERVED_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pid")
_QUANTITY = (
    r"(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?"
)
_QUANTITY_RE = re.compile(f"^{_QUANTITY}$", re.ASCII)
_PERCENT_OR_QUANTITY_RE = re.compile(
    rf"^((\d{{1,2}}(\.\d{{1,2}})?|100(\.0{{1,2}})?)%|{_QUANTITY})$", re.ASCII
)


def _signals_message(name: str) -> str:
    quoted = ",".join(f"'{s}'" for s in _EVICTION_SIGNALS)
    return f"valid keys for {name} are [{quoted}]"


def _eviction_rules(name: str, values: bool) -> tuple[Rule, ...]:
    rules: list[Rule] = [(lambda m: all(k in _EVICTION_SIGNALS for k in m), _signals_message(name))]
    if values:
        rules.append(
            (
                lambda m: all(_PERCENT_OR_QUANTITY_RE.search(str(v)) for v in m.values()),
                f"{name} values must be a percentage or a resource.Quantity",
            )
        )
    return tuple(rules)


def _reserved_rules(name: str) -> tuple[Rule, ...]:
    return (
        (
            lambda m: all(k in _RESERVED_RESOURCES for k in m),
            f"valid keys for {name} are ['cpu','memory','ephemeral-storage','pid']",
        ),
        (
            lambda m: not any(str(v).startswith("-") for v in m.values()),
            f"{name} value cannot be a negative resource quantity",
        ),
        (
            lambda m: all(_QUANTITY_RE.search(str(v)) for v in m.values()),
            f"{name} values must be a resource.Quantity",
        ),
    )


def _gc_thresholds(k: Mapping[str, Any]) -> bool:
    high, low = k.get("imageGCHighThresholdPercent"), k.get("imageGCLowThresholdPercent")
    if not isinstance(high, int) or not isinstance(low, int):
        return True
    return high > low


def _keys_matched(have: str, want: str) -> Callable[[Any], bool]:
    """``has(self.<have>) ? self.<have>.all(e, e in self.<want>) : true``; a missing
    ``<want>`` map fails the rule (CEL: no such key), as the API server rejects it."""

    def rule(k: Mapping[str, Any]) -> bool:
        source = k.get(have)
        if have not in k or not isinstance(source, Mapping):
            return True
        target = k.get(want)
        if not isinstance(target, Mapping):
            return not source
        return all(e in target for e in source)

    return rule


_KUBELET_RULES: tuple[Rule, ...] = (
    (_gc_thresholds, "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent"),
    (
        _keys_matched("evictionSoft", "evictionSoftGracePeriod"),
        "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod",
    ),
    (
        _keys_matched("evictionSoftGracePeriod", "evictionSoft"),
        "evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft",
    ),
)

_LABEL_RULES: tuple[Rule, ...] = (
    (lambda m: all(k != "" for k in m), "empty tag keys aren't supported"),
    (
        lambda m: "gce:gce-cluster-name" not in m,
        "tag contains a restricted tag matching gce:gce-cluster-name",
    ),
    (
        lambda m: not any(k.startswith("kubernetes.io/cluster") for k in m),
        "tag contains a restricted tag matching kubernetes.io/cluster/",
    ),
    (
        lambda m: "karpenter.sh/nodepool" not in m,
        "tag contains a restricted tag matching karpenter.sh/nodepool",
    ),
    (
        lambda m: "karpenter.sh/nodeclaim" not in m,
        "tag contains a restricted tag matching karpenter.sh/nodeclaim",
    ),
    (
        lambda m: "karpenter.k8s.gcp/gcenodeclass" not in m,
        "tag contains a restricted tag matching karpenter.k8s.gcp/gcenodeclass",
    ),
)

_METADATA_RULES: tuple[Rule, ...] = (
    (
        lambda m: not any(k in RESERVED_METADATA_KEYS for k in m),
        "spec.metadata contains a reserved GKE metadata key",
    ),
)


def _get(obj: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _check(target: Any, kind: type, rules: tuple[Rule, ...], path: str, errors: list[str]) -> None:
    if not isinstance(target, kind):
        return  # absent, or a type error the schema check reported
    for rule, message in rules:
        if not rule(target):
            errors.append(f"{path}: Invalid value: {message}")


def _cel(spec: Mapping[str, Any], errors: list[str]) -> None:
    disks = spec.get("disks")
    for i, disk in enumerate(disks if isinstance(disks, list) else ()):
        if not isinstance(disk, Mapping):
            continue
        size = disk.get("sizeGiB")
        if isinstance(size, int) and not isinstance(size, bool) and size < 10:
            errors.append(f"spec.disks[{i}].sizeGiB: Invalid value: size invalid")
        _check(disk, Mapping, _DISK_RULES, f"spec.disks[{i}]", errors)
    terms = spec.get("imageSelectorTerms")
    for i, term in enumerate(terms if isinstance(terms, list) else ()):
        if not isinstance(term, Mapping):
            continue
        path = f"spec.imageSelectorTerms[{i}]"
        _check(term.get("alias"), str, _ALIAS_RULES, f"{path}.alias", errors)
        identity = term.get("id")
        if isinstance(identity, str) and "\n" in identity:  # self.matches('^.*$')
            errors.append(
                f"{path}.id: Invalid value: 'id' is improperly formatted, must match the format 'id'"
            )
        _check(term, Mapping, _TERM_RULES, path, errors)
    _check(terms, list, _TERMS_RULES, "spec.imageSelectorTerms", errors)
    kubelet = spec.get("kubeletConfiguration")
    base = "spec.kubeletConfiguration"
    _check(
        _get(kubelet, "evictionHard"),
        Mapping,
        _eviction_rules("evictionHard", True),
        f"{base}.evictionHard",
        errors,
    )
    _check(
        _get(kubelet, "evictionSoft"),
        Mapping,
        _eviction_rules("evictionSoft", True),
        f"{base}.evictionSoft",
        errors,
    )
    _check(
        _get(kubelet, "evictionSoftGracePeriod"),
        Mapping,
        _eviction_rules("evictionSoftGracePeriod", False),
        f"{base}.evictionSoftGracePeriod",
        errors,
    )
    _check(
        _get(kubelet, "kubeReserved"),
        Mapping,
        _reserved_rules("kubeReserved"),
        f"{base}.kubeReserved",
        errors,
    )
    _check(
        _get(kubelet, "systemReserved"),
        Mapping,
        _reserved_rules("systemReserved"),
        f"{base}.systemReserved",
        errors,
    )
    _check(kubelet, Mapping, _KUBELET_RULES, base, errors)
    _check(spec.get("labels"), Mapping, _LABEL_RULES, "spec.labels", errors)
    _check(spec.get("metadata"), Mapping, _METADATA_RULES, "spec.metadata", errors)


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
class Alias:
    """An image alias term split (``ContainerOptimizedOS@latest``)."""

    family: str
    version: str


@frozen
class GCENodeClass:
    """A validated GCENodeClass; ``spec`` is the defaulted spec (the drift hash's input)."""

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
            return "the GCENodeClass has no Ready condition yet"
        return str(cond.get("message") or cond.get("reason") or "")

    @property
    def images(self) -> tuple[Mapping[str, Any], ...]:
        """``status.images``: ``{sourceImage, requirements}`` in preference order."""
        return tuple(i for i in self.status.get("images") or () if isinstance(i, Mapping))

    # --- spec -------------------------------------------------------------------------

    @property
    def image_selector_terms(self) -> tuple[Mapping[str, Any], ...]:
        return tuple(_terms(list(self.spec.get("imageSelectorTerms") or ())))

    def alias(self) -> Alias | None:
        """The first alias term, split (upstream ``Alias()``)."""
        for term in self.image_selector_terms:
            if term.get("alias"):
                family, _, version = str(term["alias"]).partition("@")
                return Alias(family, version)
        return None

    @property
    def image_family(self) -> str:
        """Upstream ``ImageFamily()``: ``spec.imageFamily``, else the alias's family, else
        the first family term's (``Ubuntu`` for both Ubuntu releases, which is what the
        bootstrap distinguishes), else ``Custom`` (id terms only)."""
        if self.spec.get("imageFamily"):
            return str(self.spec["imageFamily"])
        alias = self.alias()
        if alias is not None:
            return alias.family
        for term in self.image_selector_terms:
            family = term.get("family")
            if family == IMAGE_FAMILY_CONTAINER_OPTIMIZED_OS:
                return IMAGE_FAMILY_CONTAINER_OPTIMIZED_OS
            if family in (IMAGE_FAMILY_UBUNTU2404, IMAGE_FAMILY_UBUNTU2204):
                return IMAGE_FAMILY_UBUNTU
        return IMAGE_FAMILY_CUSTOM

    @property
    def disks(self) -> tuple[Mapping[str, Any], ...]:
        return tuple(d for d in self.spec.get("disks") or () if isinstance(d, Mapping))

    @property
    def boot_disk(self) -> Mapping[str, Any] | None:
        return next((d for d in self.disks if d.get("boot") is True), None)

    @property
    def service_account(self) -> str | None:
        return self.spec.get("serviceAccount") or None

    @property
    def network_tags(self) -> tuple[str, ...]:
        return tuple(str(t) for t in self.spec.get("networkTags") or ())

    @property
    def metadata(self) -> Mapping[str, str]:
        """``spec.metadata``: extra instance metadata (never a reserved GKE key)."""
        return dict(self.spec.get("metadata") or {})

    @property
    def labels(self) -> Mapping[str, str]:
        """``spec.labels``: GCE instance labels."""
        return dict(self.spec.get("labels") or {})

    @property
    def kubelet(self) -> Mapping[str, Any]:
        """``spec.kubeletConfiguration`` (empty when unset); its keys are kubelet's own."""
        return dict(self.spec.get("kubeletConfiguration") or {})

    @property
    def max_pods(self) -> int:
        value = self.kubelet.get("maxPods")
        return int(value) if value is not None else DEFAULT_MAX_PODS

    @property
    def subnet_range_name(self) -> str | None:
        return self.spec.get("subnetRangeName") or None

    @property
    def network_config(self) -> Mapping[str, Any]:
        return dict(self.spec.get("networkConfig") or {})

    @property
    def subnetwork(self) -> str | None:
        return self.network_config.get("subnetwork") or None

    @property
    def enable_private_nodes(self) -> bool | None:
        value = self.network_config.get("enablePrivateNodes")
        return bool(value) if value is not None else None

    @property
    def additional_network_interfaces(self) -> tuple[Mapping[str, Any], ...]:
        items = self.network_config.get("additionalNetworkInterfaces") or ()
        return tuple(i for i in items if isinstance(i, Mapping))

    @property
    def shielded_instance_config(self) -> Mapping[str, bool]:
        return dict(self.spec.get("shieldedInstanceConfig") or {})

    @property
    def confidential_instance_type(self) -> str | None:
        return self.spec.get("confidentialInstanceType") or None

    @property
    def auto_gpu_taint(self) -> bool:
        return self.spec.get("autoGPUTaint") is True

    @property
    def gpu_driver_version(self) -> str:
        return str(self.spec.get("gpuDriverVersion") or "default")

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> GCENodeClass:
        """Parse and validate a GCENodeClass object; :class:`NodeClassError` lists every
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


def get_nodeclass(kube: KubeClient, name: str) -> GCENodeClass | None:
    """The named GCENodeClass, or None when it does not exist; a malformed one raises
    :class:`NodeClassError`."""
    try:
        obj = kube.get(NODECLASS_RESOURCE, name)
    except NotFound:
        return None
    return GCENodeClass.from_dict(obj)
