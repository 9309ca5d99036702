"""Provisioning: deciding which pending pods need new capacity, and what to launch.

The solver lives in :mod:`karpenter_core.provisioning.scheduler`; this module holds the
provisioner's pre-scheduling pod validation (upstream ``Provisioner.Validate``), shared by the
live controller and ``karpenter schedule``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from karpenter_core.apis.labels import NODEPOOL_LABEL_KEY

if TYPE_CHECKING:
    from karpenter_core.apis.objects import Pod
    from karpenter_core.state.snapshot import ClusterSnapshot

__all__ = ["KARPENTER_MANAGED_LABEL_DOES_NOT_EXIST", "validate_pod"]

KARPENTER_MANAGED_LABEL_DOES_NOT_EXIST = (
    f"configured to not run on a Karpenter provisioned node "
    f"(requirement={NODEPOOL_LABEL_KEY} DoesNotExist)"
)


def _validate_requirement(key: str, operator: str, values: Any) -> list[str]:
    from karpenter_core.apis.validation import validate_requirement

    reqs = {"key": key, "operator": operator, "values": list(values or ())}
    return [str(e) for e in validate_requirement(reqs)]


def _term_errors(term: Any, where: str) -> list[str]:
    if not isinstance(term, Mapping):
        return [f"{where}: expected a node selector term"]
    errs = []
    if term.get("matchFields") is not None:
        errs.append("node selector term with matchFields is not supported")
    for expr in term.get("matchExpressions") or ():
        if not isinstance(expr, Mapping):
            errs.append(f"{where}.matchExpressions: expected a requirement")
            continue
        errs.extend(
            _validate_requirement(
                str(expr.get("key", "")), str(expr.get("operator", "")), expr.get("values")
            )
        )
    return errs


def validate_pod(pod: Pod, snapshot: ClusterSnapshot) -> str | None:
    """Why Karpenter ignores this pending pod, or None when it may be scheduled.

    Rejects, as upstream does: pods that require ``karpenter.sh/nodepool DoesNotExist``;
    node-selector terms using ``matchFields``; node selectors or required node-affinity
    terms that fail runtime requirement validation (restricted labels, bad operators); and
    pods whose PVCs are unusable (see ``VolumeTopology.validate_persistent_volume_claims``).
    """
    from karpenter_core.provisioning.scheduler.volumetopology import VolumeTopology
    from karpenter_core.scheduling.requirements import DOES_NOT_EXIST, pod_requirements

    try:
        reqs = pod_requirements(pod.node_selector, pod.affinity)
    except ValueError as e:
        return str(e)
    if NODEPOOL_LABEL_KEY in reqs and reqs[NODEPOOL_LABEL_KEY].operator() == DOES_NOT_EXIST:
        return KARPENTER_MANAGED_LABEL_DOES_NOT_EXIST
    errs: list[str] = []
    for k, v in pod.node_selector.items():
        errs.extend(_validate_requirement(k, "In", [v]))
    node_affinity = (pod.affinity or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for i, term in enumerate(required.get("nodeSelectorTerms") or ()):
        errs.extend(
            _term_errors(
                term,
                f"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                f".nodeSelectorTerms[{i}]",
            )
        )
    volume_err = VolumeTopology(snapshot).validate_persistent_volume_claims(pod)
    if volume_err is not None:
        errs.append(volume_err)
    return "; ".join(errs) if errs else None
