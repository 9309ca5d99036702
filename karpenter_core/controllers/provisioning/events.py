"""The provisioner's events, with upstream's reasons, messages and dedupe keys (spec
apis-and-cloudprovider §14)."""

from __future__ import annotations

from karpenter_core.apis.objects import Pod
from karpenter_core.apis.v1 import NodePool
from karpenter_core.runtime.events import NORMAL, WARNING, Event
from karpenter_core.utils.pod import pod_reference

__all__ = [
    "FAILED_SCHEDULING",
    "NOMINATED",
    "NO_COMPATIBLE_INSTANCE_TYPES",
    "instance_type_scorer_problem",
    "no_compatible_instance_types",
    "nominate_pod",
    "pod_failed_to_schedule",
]

NOMINATED = "Nominated"
FAILED_SCHEDULING = "FailedScheduling"
NO_COMPATIBLE_INSTANCE_TYPES = "NoCompatibleInstanceTypes"


def nominate_pod(pod: Pod, node_name: str = "", nodeclaim_name: str = "") -> Event:
    """``Nominated``: where the pod should land (a NodeClaim being launched and/or a node)."""
    info = []
    if nodeclaim_name:
        info.append(f"nodeclaim/{nodeclaim_name}")
    if node_name:
        info.append(f"node/{node_name}")
    return Event(
        pod_reference(pod),
        NORMAL,
        NOMINATED,
        f"Pod should schedule on: {', '.join(info)}",
        (pod.uid,),
    )


def pod_failed_to_schedule(pod: Pod, err: object) -> Event:
    """``FailedScheduling``: why no node (existing or new) fits; once per 5 minutes per pod."""
    return Event(
        pod_reference(pod),
        WARNING,
        FAILED_SCHEDULING,
        f"Failed to schedule pod, {err}",
        (pod.uid,),
        dedupe_timeout=300.0,
    )


def _nodepool_ref(nodepool: NodePool) -> dict[str, str]:
    ref = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "name": nodepool.name}
    if nodepool.metadata.uid:
        ref["uid"] = nodepool.metadata.uid
    return ref


def instance_type_scorer_problem(nodepool: NodePool, reason: str, message: str) -> Event:
    """A NodePool's instance-type scorer could not be used (an unknown name, or a scorer
    that failed): its NodeClaims launch in another order, which the event says."""
    ref = _nodepool_ref(nodepool)
    return Event(
        ref, WARNING, reason, message, (ref.get("uid", ref["name"]), message), dedupe_timeout=300.0
    )


def no_compatible_instance_types(nodepool: NodePool, min_values: bool) -> Event:
    """``NoCompatibleInstanceTypes``: the pool's own requirements leave no instance type."""
    ref = _nodepool_ref(nodepool)
    message = "NodePool requirements filtered out all compatible available instance types"
    if min_values:
        message += " due to minValues incompatibility"
    return Event(
        ref,
        WARNING,
        NO_COMPATIBLE_INSTANCE_TYPES,
        message,
        (ref.get("uid", ref["name"]),),
        dedupe_timeout=60.0,
    )
