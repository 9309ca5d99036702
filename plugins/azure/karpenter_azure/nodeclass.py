"""The AKSNodeClass (``karpenter.azure.com/v1beta1``) as a value, with upstream's validation.

Validation is the API server's, run by karpenter-core's generic CRD validator
(``CRDSchema`` of the plugin API) on the CRD this package ships (``crds/``): structural
defaulting (``imageFamily: Ubuntu``, ``osDiskSizeGB: 128``, kubelet and ``gpu.mode``
defaults), then the OpenAPI checks (types, enums, bounds, patterns, lengths, item counts,
required fields, map-list keys) and upstream's ``x-kubernetes-validations`` CEL rules (FIPS
and image family, Trusted Launch, kubelet GC thresholds, swap, sysctl ranges, local DNS
zones, tag keys and values), with the API server's field paths and wording. The model and
the CRD cannot disagree, because the CRD is the only statement of the rules. An object
that slipped past the API server (the CRD not installed, an older schema) fails here with
a :class:`NodeClassError` listing every problem, never with a traceback in a controller.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from importlib.resources import files
from typing import Any

import yaml
from attrs import field, frozen

from karpenter_azure.labels import AKS_NODE_CLASS
from karpenter_core.plugin_api import (
    CRDSchema,
    KubeClient,
    NotFound,
    ResourceType,
    SpecCheck,
    register_resource,
)

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
def _crd() -> CRDSchema:
    return CRDSchema(crd_document())


def _check(spec: Any) -> SpecCheck:
    """The API server's verdict on ``spec`` (``None`` reads as ``{}``) and its defaulted
    form, from the shipped CRD."""
    return _crd().check_spec(AKS_NODE_CLASS.version, {} if spec is None else spec)


def apply_defaults(spec: Mapping[str, Any] | None) -> dict[str, Any]:
    """The spec with upstream's defaults applied (``imageFamily: Ubuntu``, ...)."""
    out = _check(dict(spec or {})).spec
    assert isinstance(out, dict)
    return out


def validate_spec(spec: Mapping[str, Any] | None) -> list[str]:
    """Every problem with ``spec`` (defaults applied first), as ``path: message`` lines in
    the API server's wording; empty when the API server would accept it."""
    return [str(e) for e in _check(spec).errors]


# --- helpers of the model -----------------------------------------------------------------


def _get(obj: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _trusted_launch(spec: Mapping[str, Any]) -> bool:
    tl = _get(spec, "security", "trustedLaunch")
    return _get(tl, "vtpm") is True or _get(tl, "secureBoot") is True


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
        check = _check(spec)
        if check.errors:
            raise NodeClassError([str(e) for e in check.errors])
        return cls(
            name=str(meta.get("name", "")),
            generation=int(meta.get("generation") or 0),
            spec=check.spec,
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
