"""Find the pod a CapacityBuffer keeps room for: a PodTemplate, or a workload's template.

``podTemplateRef`` names a ``v1/PodTemplate`` in the buffer's namespace; ``scalableRef``
names an ``apps`` Deployment, StatefulSet or ReplicaSet, whose ``spec.replicas`` (default
1) feeds the percentage. Resolution failures are values, not exceptions: a missing object
is ``not_found`` (the controller reports ``PodTemplateNotFound`` / ``ScalableRefNotFound``),
anything else the user can fix is ``ResolutionFailed``. Only API failures other than
NotFound raise, so the reconcile backs off.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from attrs import frozen

from karpenter_core.apis.autoscaling import SCALABLE_KINDS
from karpenter_core.kube.client import KubeClient, NotFound, resource_for

__all__ = [
    "PODTEMPLATES",
    "Resolution",
    "ResolveFailure",
    "resolve",
]

PODTEMPLATES = resource_for(("v1", "PodTemplate"))
"""``v1/PodTemplate`` (a built-in kind): the API server sets ``metadata.generation`` and
bumps it when the template changes, which the buffer's status records."""

_SCALABLE_RESOURCES = {
    "Deployment": "deployments",
    "StatefulSet": "statefulsets",
    "ReplicaSet": "replicasets",
}


@frozen
class Resolution:
    """A resolved buffer: the pod template (``{metadata, spec}``) and where it came from."""

    template: Mapping[str, Any]
    uses_pod_template: bool
    pod_template_name: str = ""
    pod_template_generation: int = 0
    scalable_replicas: int | None = None


@frozen
class ResolveFailure:
    """Why a buffer could not be resolved; ``not_found`` when the referenced object is
    missing (it may yet be created), otherwise the spec is unusable as written."""

    message: str
    not_found: bool = False


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _template_of(template: Any, path: str, where: str) -> Mapping[str, Any] | str:
    """A deep copy of a pod template, or why there is none."""
    if not isinstance(template, Mapping) or not isinstance(template.get("spec"), Mapping):
        return f"{where} has no pod template ({path}.spec)"
    return copy.deepcopy(dict(template))


def resolve(kube: KubeClient, buffer: Mapping[str, Any]) -> Resolution | ResolveFailure:
    """Resolve ``buffer`` (a CapacityBuffer dict) against the API server."""
    meta = _mapping(buffer.get("metadata"))
    namespace = str(meta.get("namespace") or "default")
    spec = _mapping(buffer.get("spec"))
    template_ref = spec.get("podTemplateRef")
    scalable_ref = spec.get("scalableRef")
    if isinstance(template_ref, Mapping):
        name = str(template_ref.get("name") or "")
        if not name:
            return ResolveFailure("podTemplateRef.name is empty")
        try:
            pt = kube.get(PODTEMPLATES, name, namespace)
        except NotFound:
            return ResolveFailure(f'podtemplate "{namespace}/{name}" not found', not_found=True)
        template = _template_of(pt.get("template"), "template", f'podtemplate "{namespace}/{name}"')
        if isinstance(template, str):
            return ResolveFailure(template)
        generation = _mapping(pt.get("metadata")).get("generation")
        return Resolution(
            template,
            uses_pod_template=True,
            pod_template_name=name,
            pod_template_generation=generation if isinstance(generation, int) else 0,
        )
    if isinstance(scalable_ref, Mapping):
        return _resolve_scalable(kube, scalable_ref, namespace)
    return ResolveFailure("Neither podTemplateRef nor scalableRef is set")


def _resolve_scalable(
    kube: KubeClient, ref: Mapping[str, Any], namespace: str
) -> Resolution | ResolveFailure:
    group = str(ref.get("apiGroup") or "apps")
    kind = str(ref.get("kind") or "")
    name = str(ref.get("name") or "")
    if group != "apps":
        return ResolveFailure(f'unsupported scalableRef API group "{group}" (want "apps")')
    if kind not in SCALABLE_KINDS:
        return ResolveFailure(
            f'unsupported scalableRef kind "{kind}" (want one of {", ".join(SCALABLE_KINDS)})'
        )
    if not name:
        return ResolveFailure("scalableRef.name is empty")
    where = f'{kind.lower()} "{namespace}/{name}"'
    try:
        obj = kube.get(_SCALABLE_RESOURCES[kind], name, namespace)
    except NotFound:
        return ResolveFailure(f"{where} not found", not_found=True)
    template = _template_of(_mapping(obj.get("spec")).get("template"), "spec.template", where)
    if isinstance(template, str):
        return ResolveFailure(template)
    replicas = _mapping(obj.get("spec")).get("replicas")
    if replicas is None:
        replicas = 1  # the API server's default for all three kinds
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        return ResolveFailure(f"{where} has a non-integer spec.replicas: {replicas!r}")
    return Resolution(template, uses_pod_template=False, scalable_replicas=replicas)
