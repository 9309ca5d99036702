"""The GCENodeClass (``karpenter.k8s.gcp/v1alpha1``) as a value, with upstream's validation.

Validation is the API server's, run by karpenter-core's generic CRD validator
(``CRDSchema`` of the plugin API) on the CRD this package ships (``crds/``): structural
defaulting (``gpuDriverVersion: default``, the only default upstream declares), then the
OpenAPI checks (types, enums, bounds, patterns, lengths, ``minItems``/``maxItems``,
``maxProperties``, required fields) and upstream's ``x-kubernetes-validations`` CEL rules
(disk size and provisioned IOPS/throughput per category, image selector terms and aliases,
kubelet reservations and eviction maps, restricted labels, reserved GKE metadata keys), with
the API server's field paths and wording. The model and the CRD cannot disagree, because the
CRD is the only statement of the rules. An object that slipped past the API server (the CRD
not installed, an older schema) fails here with a :class:`NodeClassError` listing every
problem, never with a traceback in a controller.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from importlib.resources import files
from typing import Any

import yaml
from attrs import field, frozen

from karpenter_core.plugin_api import (
    CRDSchema,
    KubeClient,
    NotFound,
    ResourceType,
    SpecCheck,
    register_resource,
)
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
def _crd() -> CRDSchema:
    return CRDSchema(crd_document())


def _check(spec: Any) -> SpecCheck:
    """The API server's verdict on ``spec`` (``None`` reads as ``{}``) and its defaulted
    form, from the shipped CRD."""
    return _crd().check_spec(GCE_NODE_CLASS.version, {} if spec is None else spec)


def apply_defaults(spec: Mapping[str, Any] | None) -> dict[str, Any]:
    """The spec with upstream's defaults applied (``gpuDriverVersion: default``)."""
    out = _check(dict(spec or {})).spec
    assert isinstance(out, dict)
    return out


def validate_spec(spec: Mapping[str, Any] | None) -> list[str]:
    """Every problem with ``spec`` (defaults applied first), as ``path: message`` lines in
    the API server's wording; empty when the API server would accept it."""
    return [str(e) for e in _check(spec).errors]


def _terms(items: list[Any]) -> list[Mapping[str, Any]]:
    return [t for t in items if isinstance(t, Mapping)]


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


def get_nodeclass(kube: KubeClient, name: str) -> GCENodeClass | None:
    """The named GCENodeClass, or None when it does not exist; a malformed one raises
    :class:`NodeClassError`."""
    try:
        obj = kube.get(NODECLASS_RESOURCE, name)
    except NotFound:
        return None
    return GCENodeClass.from_dict(obj)
