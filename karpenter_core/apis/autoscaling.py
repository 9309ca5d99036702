"""``autoscaling.x-k8s.io/v1beta1``: CapacityBuffer (spare capacity kept warm).

Upstream Karpenter vendors this type from cluster-autoscaler; we model it with the same
conventions as :mod:`karpenter_core.apis.v1` (:mod:`karpenter_core.apis.base`). Unlike the karpenter.sh kinds it is namespaced
and its conditions are plain ``metav1.Condition``.
"""

from __future__ import annotations

from attrs import field, frozen

from karpenter_core.apis.base import Condition, F, Model, ObjectMeta, ObjectModel, object_fields

GROUP = "autoscaling.x-k8s.io"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"

ACTIVE_PROVISIONING_STRATEGY = "buffer.x-k8s.io/active-capacity"
CONDITION_READY_FOR_PROVISIONING = "ReadyForProvisioning"
CONDITION_PROVISIONING = "Provisioning"
CONDITION_LIMITED_BY_QUOTAS = "LimitedByQuotas"
SCALABLE_KINDS = ("Deployment", "StatefulSet", "ReplicaSet")


@frozen
class LocalObjectRef(Model):
    name: str = ""

    FIELDS = (F("name", "name", "str"),)


@frozen
class ScalableRef(Model):
    kind: str = ""
    name: str = ""
    api_group: str | None = None

    FIELDS = (
        F("apiGroup", "api_group", "str"),
        F("kind", "kind", "str"),
        F("name", "name", "str"),
    )


@frozen
class CapacityBufferSpec(Model):
    provisioning_strategy: str | None = None
    pod_template_ref: LocalObjectRef | None = None
    scalable_ref: ScalableRef | None = None
    replicas: int | None = None
    percentage: int | None = None
    limits: dict[str, str | int | float] = field(factory=dict)

    FIELDS = (
        F("provisioningStrategy", "provisioning_strategy", "str"),
        F("podTemplateRef", "pod_template_ref", "obj", LocalObjectRef),
        F("scalableRef", "scalable_ref", "obj", ScalableRef),
        F("replicas", "replicas", "int"),
        F("percentage", "percentage", "int"),
        F("limits", "limits", "quantities"),
    )


@frozen
class CapacityBufferStatus(Model):
    pod_template_ref: LocalObjectRef | None = None
    replicas: int | None = None
    pod_template_generation: int | None = None
    conditions: tuple[Condition, ...] = ()
    provisioning_strategy: str | None = None

    FIELDS = (
        F("podTemplateRef", "pod_template_ref", "obj", LocalObjectRef),
        F("replicas", "replicas", "int"),
        F("podTemplateGeneration", "pod_template_generation", "int"),
        F("conditions", "conditions", "objs", Condition),
        F("provisioningStrategy", "provisioning_strategy", "str"),
    )


@frozen
class CapacityBuffer(ObjectModel):
    """An ``autoscaling.x-k8s.io/v1beta1`` CapacityBuffer (namespaced)."""

    metadata: ObjectMeta = field(factory=ObjectMeta)
    spec: CapacityBufferSpec = field(factory=CapacityBufferSpec)
    status: CapacityBufferStatus | None = None
    api_version: str = API_VERSION
    kind: str = "CapacityBuffer"

    FIELDS = object_fields(CapacityBufferSpec, CapacityBufferStatus)

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or "default"

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def provisioning_strategy(self) -> str:
        return self.spec.provisioning_strategy or ACTIVE_PROVISIONING_STRATEGY


__all__ = [
    "ACTIVE_PROVISIONING_STRATEGY",
    "API_VERSION",
    "CapacityBuffer",
    "CapacityBufferSpec",
    "CapacityBufferStatus",
    "LocalObjectRef",
    "ScalableRef",
]
