"""Why an AWS NodeClaim no longer matches its EC2NodeClass (upstream ``cloudprovider/drift.go``).

The checks run in upstream's order and the first hit wins:

1. ``NodeClassDrift``: the EC2NodeClass's drift hash differs from the one stamped on the
   NodeClaim at launch. Only compared when both carry the same hash *version*: a new
   Karpenter that hashes differently must not replace every node.
2. ``AMIDrift``: the instance's image is not among the AMIs the EC2NodeClass now resolves
   for the instance's type.
3. ``SecurityGroupDrift``: the instance's security groups are not exactly the ones the
   EC2NodeClass now resolves.
4. ``SubnetDrift``: the instance's subnet is no longer one the EC2NodeClass resolves.
5. ``CapacityReservationDrift``: the instance runs in a reservation the EC2NodeClass no
   longer lists in ``status.capacityReservations`` (its selector changed, or the
   reservation stopped being active). Decided from EC2's current view of the instance,
   not from offerings: an instance whose reservation ended falls back to on-demand and
   is then not drifted, where the offerings would already have gone.

6. ``PlacementGroupDrift``: the NodeClaim's ``karpenter.k8s.aws/placement-group-id``
   label is not the id of the group the EC2NodeClass resolves now (a selector added,
   removed or pointed elsewhere, or the group re-created under the same name).

Each function is pure and says ``""`` when it cannot decide (nothing resolved yet, no image
id recorded): an unknown is never a reason to replace a node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from karpenter_core.plugin_api import InstanceType, Requirements
from karpenter_core.plugin_api import labels as wk

__all__ = [
    "AMI_DRIFT",
    "CAPACITY_RESERVATION_DRIFT",
    "NODECLASS_DRIFT",
    "PLACEMENT_GROUP_DRIFT",
    "SECURITY_GROUP_DRIFT",
    "SUBNET_DRIFT",
    "ami_drift",
    "capacity_reservation_drift",
    "first_drift",
    "placement_group_drift",
    "security_group_drift",
    "static_drift",
    "subnet_drift",
]

NODECLASS_DRIFT = "NodeClassDrift"
AMI_DRIFT = "AMIDrift"
SECURITY_GROUP_DRIFT = "SecurityGroupDrift"
SUBNET_DRIFT = "SubnetDrift"
CAPACITY_RESERVATION_DRIFT = "CapacityReservationDrift"
PLACEMENT_GROUP_DRIFT = "PlacementGroupDrift"


def static_drift(
    nodeclaim_annotations: Mapping[str, str],
    nodeclass_hash: str,
    nodeclass_hash_version: str,
    *,
    hash_key: str,
    version_key: str,
) -> str:
    """``NodeClassDrift`` when the NodeClaim's launch-time hash (same version) differs."""
    claim_hash = nodeclaim_annotations.get(hash_key)
    claim_version = nodeclaim_annotations.get(version_key)
    if not claim_hash or not claim_version or not nodeclass_hash:
        return ""
    if claim_version != nodeclass_hash_version:
        return ""
    return NODECLASS_DRIFT if claim_hash != nodeclass_hash else ""


def ami_drift(
    image_id: str,
    instance_type: InstanceType | None,
    amis: Sequence[tuple[str, Requirements]],
) -> str:
    """``AMIDrift`` when ``image_id`` is not one of the ``(id, requirements)`` AMIs the
    instance's type can run."""
    if not image_id or instance_type is None or not amis:
        return ""
    allowed = {
        ami_id
        for ami_id, reqs in amis
        if instance_type.requirements.is_compatible(reqs, allow_undefined=wk.WELL_KNOWN_LABELS)
    }
    return AMI_DRIFT if image_id not in allowed else ""


def security_group_drift(instance_groups: Iterable[str], resolved: Iterable[str]) -> str:
    """``SecurityGroupDrift`` when the sets differ (nothing resolved: no decision)."""
    want = set(resolved)
    if not want:
        return ""
    return SECURITY_GROUP_DRIFT if set(instance_groups) != want else ""


def subnet_drift(instance_subnet: str, resolved: Iterable[str]) -> str:
    """``SubnetDrift`` when the instance's subnet is not a resolved one."""
    want = set(resolved)
    if not want or not instance_subnet:
        return ""
    return SUBNET_DRIFT if instance_subnet not in want else ""


def capacity_reservation_drift(reservation_id: str, listed: Iterable[str]) -> str:
    """``CapacityReservationDrift`` when the instance is in reservation ``reservation_id``
    (``""``: not reserved) and the class lists no such reservation (none listed counts:
    a removed selector takes its nodes out of the reservations too)."""
    if not reservation_id:
        return ""
    return CAPACITY_RESERVATION_DRIFT if reservation_id not in set(listed) else ""


def placement_group_drift(labelled: str, resolved: str) -> str:
    """``PlacementGroupDrift`` when the group a node was launched into (its label, ``""``
    for none) is not the class's group now (``""`` for none)."""
    return PLACEMENT_GROUP_DRIFT if labelled != resolved else ""


def first_drift(*reasons: str) -> str:
    """The first non-empty reason (upstream's order is the argument order)."""
    return next((r for r in reasons if r), "")
