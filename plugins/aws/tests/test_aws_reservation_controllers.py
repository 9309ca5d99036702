"""The capacity-reservation singletons (``capacityreservation.capacitytype`` and
``capacityreservation.expiration``) against moto, with EC2's reservation answers supplied
as in ``test_aws_capacity_reservations``."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from karpenter_aws import labels as aws_labels
from karpenter_aws.clients import AWSClients
from karpenter_aws.nodeclass import READY_CONDITIONS
from karpenter_aws.reservation_controllers import (
    CapacityTypeController,
    ExpirationController,
)
from test_aws_capacity_reservations import Reservations, reservation, reserved_nodeclaim
from test_provider import Env, _aws_labels  # noqa: F401  (autouse: the AWS well-known labels)

from karpenter_core.apis import labels as wk
from karpenter_core.apis.v1 import NodeClaim
from karpenter_core.kube.client import NotFound

RESERVATION_KEYS = (
    aws_labels.LABEL_CAPACITY_RESERVATION_ID,
    aws_labels.LABEL_CAPACITY_RESERVATION_TYPE,
    aws_labels.LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE,
)


class InReservation:
    """What EC2 says of an instance in a reservation (moto's DescribeInstances does not
    carry it): its ``CapacityReservationId`` and ``capacity-reservations-only``
    preference, for the instances in :attr:`ids`; an instance taken out of the set is what
    EC2 shows once its reservation has ended (plain on-demand)."""

    def __init__(self, ec2: Any) -> None:
        self.ids: dict[str, str] = {}
        ec2.meta.events.register("after-call.ec2.DescribeInstances", self._add)

    def _add(self, parsed: dict[str, Any], **_: Any) -> None:
        for r in parsed.get("Reservations") or []:
            for i in r.get("Instances") or []:
                rid = self.ids.get(i["InstanceId"])
                if rid:
                    i["CapacityReservationId"] = rid
                    i["CapacityReservationSpecification"] = {
                        "CapacityReservationPreference": "capacity-reservations-only"
                    }


@pytest.fixture
def env(clients: AWSClients, tmp_path: Path) -> Iterator[Env]:
    e = Env(clients, tmp_path)
    e.status.reservations = e.provider.reservations
    yield e


@pytest.fixture
def crs(env: Env) -> Reservations:
    return Reservations(env.clients.ec2)


@pytest.fixture
def held(env: Env) -> InReservation:
    return InReservation(env.clients.ec2)


def _in_cluster(env: Env, launched: NodeClaim, name: str) -> dict[str, Any]:
    """The launched NodeClaim as the cluster has it, and its registered Node."""
    raw = launched.to_dict()
    raw["metadata"]["name"] = name
    created = env.server.create({k: v for k, v in raw.items() if k != "status"})
    created["status"] = raw["status"]
    env.server.update_status(created)
    env.server.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": f"node-{name}",
                "labels": {
                    **raw["metadata"]["labels"],
                    wk.NODE_REGISTERED_LABEL_KEY: "true",
                },
            },
            "spec": {"providerID": raw["status"]["providerID"]},
        }
    )
    return env.server.get("nodeclaims", name)


def _deleting(env: Env, name: str) -> bool:
    try:
        return bool(env.server.get("nodeclaims", name)["metadata"].get("deletionTimestamp"))
    except NotFound:
        return True


def _launch_reserved(env: Env, crs: Reservations, held: InReservation, **kw: Any) -> str:
    crs.items = [reservation("cr-a1", available=2, **kw)]
    env.nodeclass(capacityReservationSelectorTerms=[{"id": "cr-a1"}])
    launched = env.provider.create(reserved_nodeclaim("cr-a1"))
    instance_id = launched.status.provider_id.rsplit("/", 1)[-1]
    held.ids[instance_id] = "cr-a1"
    env.as_ec2_would(instance_id)
    _in_cluster(env, launched, "default-r1")
    return "default-r1"


def test_a_nodeclaim_whose_reservation_ended_is_relabelled_on_demand(
    env: Env, crs: Reservations, held: InReservation
) -> None:
    name = _launch_reserved(env, crs, held)
    controller = CapacityTypeController(env.server, env.provider)

    # still in the reservation: nothing changes
    controller.reconcile()
    assert (
        env.server.get("nodeclaims", name)["metadata"]["labels"][wk.CAPACITY_TYPE_LABEL_KEY]
        == "reserved"
    )

    held.ids.clear()  # the reservation ended; EC2 now runs the instance on-demand
    result = controller.reconcile()
    assert result.requeue_after == 60.0
    for resource, obj_name in (("nodeclaims", name), ("nodes", f"node-{name}")):
        labels = env.server.get(resource, obj_name)["metadata"]["labels"]
        assert labels[wk.CAPACITY_TYPE_LABEL_KEY] == "on-demand", resource
        assert not set(RESERVATION_KEYS) & set(labels), resource
        assert labels[wk.LABEL_INSTANCE_TYPE] == "m5.large"  # the rest is kept


def test_an_unregistered_node_and_a_deleting_nodeclaim_are_left_alone(
    env: Env, crs: Reservations, held: InReservation
) -> None:
    name = _launch_reserved(env, crs, held)
    node = env.server.get("nodes", f"node-{name}")
    del node["metadata"]["labels"][wk.NODE_REGISTERED_LABEL_KEY]
    env.server.update(node)
    held.ids.clear()
    CapacityTypeController(env.server, env.provider).reconcile()
    assert (
        env.server.get("nodeclaims", name)["metadata"]["labels"][wk.CAPACITY_TYPE_LABEL_KEY]
        == "on-demand"
    )
    # the Node's labels are still being synced by registration: the next pass gets it
    node_labels = env.server.get("nodes", f"node-{name}")["metadata"]["labels"]
    assert node_labels[wk.CAPACITY_TYPE_LABEL_KEY] == "reserved"

    # a deleting NodeClaim is draining anyway: not patched
    nc = env.server.get("nodeclaims", name)
    nc["metadata"]["labels"][wk.CAPACITY_TYPE_LABEL_KEY] = "reserved"
    nc["metadata"]["finalizers"] = ["karpenter.sh/termination"]
    env.server.update(nc)
    env.server.delete("nodeclaims", name)
    CapacityTypeController(env.server, env.provider).reconcile()
    labels = env.server.get("nodeclaims", name)["metadata"]["labels"]
    assert labels[wk.CAPACITY_TYPE_LABEL_KEY] == "reserved"


def _reserved_claim(env: Env, name: str, rid: str) -> None:
    """A NodeClaim in the cluster that landed in reservation ``rid``."""
    raw = reserved_nodeclaim(rid).to_dict()
    raw["metadata"]["name"] = name
    raw["metadata"]["labels"].update(
        {
            wk.CAPACITY_TYPE_LABEL_KEY: "reserved",
            aws_labels.LABEL_CAPACITY_RESERVATION_ID: rid,
            aws_labels.LABEL_CAPACITY_RESERVATION_TYPE: "capacity-block",
        }
    )
    env.server.create(raw)


def test_nodeclaims_of_an_expiring_capacity_block_are_deleted_ahead_of_the_reclaim(
    env: Env, crs: Reservations
) -> None:
    end = env.clock.now() + timedelta(hours=2)
    crs.items = [
        reservation("cr-cb", reservation_type="capacity-block", end=end),
        reservation("cr-d", end=end),  # a default reservation's end reclaims nothing
        reservation("cr-later", reservation_type="capacity-block", end=end + timedelta(hours=1)),
    ]
    for name, rid in (("in-block", "cr-cb"), ("in-default", "cr-d"), ("later", "cr-later")):
        _reserved_claim(env, name, rid)
    controller = ExpirationController(env.server, env.provider.reservations, env.clock)

    assert controller.reconcile().requeue_after == 60.0
    assert not _deleting(env, "in-block")

    # 41 minutes before the end the block is still active; from 40 it is expiring
    env.clock.advance(timedelta(minutes=79).total_seconds())
    controller.reconcile()
    assert not _deleting(env, "in-block")
    env.clock.advance(timedelta(minutes=2).total_seconds())
    controller.reconcile()
    assert _deleting(env, "in-block")
    assert not _deleting(env, "in-default") and not _deleting(env, "later")


# --- CapacityReservationsReady and CapacityReservationDrift --------------------------


def _conditions(env: Env) -> dict[str, str]:
    status = env.server.get("ec2nodeclasses", "default")["status"]
    return {c["type"]: c["status"] for c in status["conditions"]}


def test_capacity_reservations_ready_once_the_terms_are_resolved(
    env: Env, crs: Reservations
) -> None:
    crs.items = [reservation("cr-a1")]
    env.nodeclass(capacityReservationSelectorTerms=[{"id": "cr-a1"}])
    conditions = _conditions(env)
    assert conditions["CapacityReservationsReady"] == "True" and conditions["Ready"] == "True"


def test_a_class_whose_reservations_were_never_resolved_is_not_ready(
    env: Env, crs: Reservations
) -> None:
    def refuse(**_: Any) -> None:
        raise ClientError(
            {"Error": {"Code": "UnauthorizedOperation", "Message": "no"}},
            "DescribeCapacityReservations",
        )

    env.clients.ec2.meta.events.register_first(
        "before-call.ec2.DescribeCapacityReservations", refuse
    )
    env.nodeclass(capacityReservationSelectorTerms=[{"id": "cr-a1"}])
    conditions = _conditions(env)
    assert conditions["CapacityReservationsReady"] == "Unknown"
    assert conditions["Ready"] == "Unknown"


def test_without_the_reserved_capacity_gate_there_is_no_condition(
    env: Env, crs: Reservations
) -> None:
    env.status.reserved_capacity = False
    env.status._ready_conditions = READY_CONDITIONS
    crs.items = [reservation("cr-a1")]
    env.nodeclass(capacityReservationSelectorTerms=[{"id": "cr-a1"}])
    status = env.server.get("ec2nodeclasses", "default")["status"]
    assert "capacityReservations" not in status and crs.calls == 0
    conditions = _conditions(env)
    assert "CapacityReservationsReady" not in conditions and conditions["Ready"] == "True"


def test_a_node_in_a_reservation_the_class_no_longer_selects_is_drifted(
    env: Env, crs: Reservations, held: InReservation
) -> None:
    name = _launch_reserved(env, crs, held)
    env.nodepool()
    nodeclaim = NodeClaim.from_dict(env.server.get("nodeclaims", name))
    assert env.provider.is_drifted(nodeclaim) == ""

    crs.items.append(reservation("cr-b2"))
    nodeclass = env.server.get("ec2nodeclasses", "default")
    nodeclass["spec"]["capacityReservationSelectorTerms"] = [{"id": "cr-b2"}]
    env.server.update(nodeclass)
    env.reconcile()
    assert env.provider.is_drifted(nodeclaim) == "CapacityReservationDrift"

    # its reservation ended and EC2 runs it on-demand: nothing to replace
    held.ids.clear()
    assert env.provider.is_drifted(nodeclaim) == ""
