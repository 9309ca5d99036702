"""Capacity reservations end to end: selector terms -> status.capacityReservations ->
reserved offerings -> a launch into the reservation, against moto through boto3.

moto has no capacity reservations, so :class:`Reservations` answers
``DescribeCapacityReservations`` from a botocore ``before-call`` handler on the real
client, with EC2's response shape and EC2's filter semantics; every other call still goes
to moto's server.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from karpenter_aws import labels as aws_labels
from karpenter_aws.capacityreservation import CapacityReservation, CapacityReservationProvider
from karpenter_aws.clients import AWSClients
from karpenter_aws.nodeclass import NODECLASS_RESOURCE
from karpenter_aws.offerings import RESERVED_PRICE_DIVISOR
from test_provider import PRICES, Env, _aws_labels  # noqa: F401  (autouse: the AWS well-known labels)

from karpenter_core.apis import labels as wk
from karpenter_core.apis.objects import Pod
from karpenter_core.apis.v1 import NodeClaim, NodePool
from karpenter_core.cloudprovider.errors import NodeClaimNotFoundError
from karpenter_core.provisioning.scheduler import Results, schedule
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.state.snapshot import ClusterSnapshot
from karpenter_core.testing import builders as b

OWNER = "123456789012"


def reservation(
    rid: str,
    *,
    instance_type: str = "m5.large",
    zone: str = "us-west-2a",
    available: int = 2,
    criteria: str = "targeted",
    state: str = "active",
    tags: dict[str, str] | None = None,
    reservation_type: str = "default",
    end: datetime | None = None,
) -> dict[str, Any]:
    """One reservation as DescribeCapacityReservations returns it."""
    r: dict[str, Any] = {
        "CapacityReservationId": rid,
        "OwnerId": OWNER,
        "InstanceType": instance_type,
        "AvailabilityZone": zone,
        "AvailableInstanceCount": available,
        "TotalInstanceCount": available,
        "InstanceMatchCriteria": criteria,
        "State": state,
        "ReservationType": reservation_type,
        "Tags": [{"Key": k, "Value": v} for k, v in (tags or {}).items()],
    }
    if end is not None:
        r["EndDate"] = end
    return r


class Reservations:
    """EC2's capacity reservations for one client: the filters EC2 documents for
    DescribeCapacityReservations (``state``, ``owner-id``, ``instance-match-criteria``,
    ``tag:<key>``, ``tag-key``) and ``CapacityReservationIds``; counts the calls."""

    def __init__(self, ec2: Any) -> None:
        self.items: list[dict[str, Any]] = []
        self.calls = 0
        ec2.meta.events.register(
            "before-parameter-build.ec2.DescribeCapacityReservations", self._keep_params
        )
        ec2.meta.events.register("before-call.ec2.DescribeCapacityReservations", self._answer)

    def _keep_params(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["cr_params"] = dict(params)

    def _matches(self, r: dict[str, Any], params: dict[str, Any]) -> bool:
        ids = params.get("CapacityReservationIds")
        if ids and r["CapacityReservationId"] not in ids:
            return False
        tags = {t["Key"]: t["Value"] for t in r.get("Tags") or []}
        for f in params.get("Filters") or []:
            name, values = f["Name"], f["Values"]
            if name == "state" and r["State"] not in values:
                return False
            if name == "owner-id" and r["OwnerId"] not in values:
                return False
            if name == "instance-match-criteria" and r["InstanceMatchCriteria"] not in values:
                return False
            if name == "tag-key" and not set(values) & set(tags):
                return False
            if name.startswith("tag:") and tags.get(name[4:]) not in values:
                return False
        return True

    def _answer(self, context: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        self.calls += 1
        params = context["cr_params"]
        found = [r for r in self.items if self._matches(r, params)]
        response = AWSResponse("https://ec2.amazonaws.com/", 200, {}, None)
        return response, {
            "CapacityReservations": found,
            "ResponseMetadata": {"HTTPStatusCode": 200},
        }


@pytest.fixture
def env(clients: AWSClients, tmp_path: Path) -> Iterator[Env]:
    yield Env(clients, tmp_path)


@pytest.fixture
def crs(env: Env) -> Reservations:
    return Reservations(env.clients.ec2)


def _share(env: Env) -> None:
    """The status controller and the provider count the same reservations (as the
    plugin's controllers wire them)."""
    env.status.reservations = env.provider.reservations


def reserved_nodeclaim(*ids: str) -> NodeClaim:
    return NodeClaim.from_dict(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {"name": "default-r1", "labels": {wk.NODEPOOL_LABEL_KEY: "default"}},
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "default",
                },
                "requirements": [
                    {"key": wk.LABEL_INSTANCE_TYPE, "operator": "In", "values": ["m5.large"]},
                    {"key": wk.CAPACITY_TYPE_LABEL_KEY, "operator": "In", "values": ["reserved"]},
                    {
                        "key": aws_labels.LABEL_CAPACITY_RESERVATION_ID,
                        "operator": "In",
                        "values": list(ids),
                    },
                ],
                "resources": {"requests": {"cpu": "1"}},
            },
        }
    )


def test_selector_terms_resolve_into_status_sorted_and_filtered(
    env: Env, crs: Reservations
) -> None:
    crs.items = [
        reservation("cr-b2", tags={"team": "ml"}, zone="us-west-2b"),
        reservation("cr-a1"),
        reservation("cr-c3", tags={"team": "web"}),  # other tag value
        reservation("cr-d4", tags={"team": "ml"}, state="expired"),  # not active
        reservation("cr-e5", tags={"team": "ml"}, criteria="open"),  # not targeted
    ]
    env.nodeclass(
        capacityReservationSelectorTerms=[
            {"id": "cr-a1"},
            {"tags": {"team": "ml"}, "instanceMatchCriteria": "targeted", "ownerID": OWNER},
        ]
    )
    status = env.server.get(NODECLASS_RESOURCE, "default")["status"]
    assert [r["id"] for r in status["capacityReservations"]] == ["cr-a1", "cr-b2"]
    assert status["capacityReservations"][1] == {
        "availabilityZone": "us-west-2b",
        "id": "cr-b2",
        "instanceMatchCriteria": "targeted",
        "instanceType": "m5.large",
        "ownerID": OWNER,
        "reservationType": "default",
        "interruptible": False,
        "state": "active",
    }
    ready = {c["type"]: c["status"] for c in status["conditions"]}
    assert ready["ValidationSucceeded"] == "True" and ready["Ready"] == "True"
    # a second reconcile within the minute asks EC2 nothing new
    calls = crs.calls
    env.reconcile()
    assert crs.calls == calls


def test_a_capacity_block_is_expiring_40_minutes_before_its_end() -> None:
    now = datetime(2026, 1, 1, 12, tzinfo=UTC)
    raw = reservation("cr-cb", reservation_type="capacity-block", end=now + timedelta(minutes=41))
    assert CapacityReservation.from_ec2(raw, now).state == "active"
    assert CapacityReservation.from_ec2(raw, now + timedelta(minutes=2)).state == "expiring"
    default = reservation("cr-d", end=now + timedelta(minutes=1))
    assert CapacityReservation.from_ec2(default, now).state == "active"
    with pytest.raises(ValueError, match="match criteria"):
        CapacityReservation.from_ec2(reservation("cr-x", criteria="weird"), now)


def test_reserved_offerings_carry_the_reservation_and_its_available_count(
    env: Env, crs: Reservations
) -> None:
    _share(env)
    crs.items = [
        reservation("cr-a1", available=3),
        reservation("cr-x9", instance_type="c5.large", available=0),
    ]
    env.nodeclass(capacityReservationSelectorTerms=[{"id": "cr-a1"}, {"id": "cr-x9"}])
    types = {it.name: it for it in env.provider.get_instance_types(env.nodepool())}
    [offering] = [o for o in types["m5.large"].offerings if o.capacity_type == "reserved"]
    assert offering.zone == "us-west-2a" and offering.available
    assert offering.reservation_id == "cr-a1" and offering.reservation_capacity == 3
    assert offering.price == pytest.approx(PRICES["m5.large"] / RESERVED_PRICE_DIVISOR)
    reqs = offering.requirements
    assert reqs.get(aws_labels.LABEL_CAPACITY_RESERVATION_TYPE).values == {"default"}
    assert reqs.get(aws_labels.LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE).values == {"false"}
    assert types["m5.large"].requirements.get(wk.CAPACITY_TYPE_LABEL_KEY).has("reserved")
    # a full reservation is listed but unavailable; other offerings say "no reservation"
    [full] = [o for o in types["c5.large"].offerings if o.capacity_type == "reserved"]
    assert not full.available and full.reservation_capacity == 0
    od = next(o for o in types["m5.large"].offerings if o.capacity_type == "on-demand")
    assert (
        od.reservation_id == ""
        and od.requirements.get(aws_labels.LABEL_CAPACITY_RESERVATION_ID).operator()
        == "DoesNotExist"
    )


def test_a_reserved_launch_targets_the_reservation_and_counts_it(
    env: Env, crs: Reservations
) -> None:
    _share(env)
    crs.items = [
        reservation("cr-a1", available=2),
        reservation("cr-b2", zone="us-west-2b", available=1),
    ]
    env.nodeclass(capacityReservationSelectorTerms=[{"id": "cr-a1"}, {"id": "cr-b2"}])
    fleets: list[dict[str, Any]] = []
    env.clients.ec2.meta.events.register(
        "provide-client-params.ec2.CreateFleet", lambda params, **_: fleets.append(params)
    )

    launched = env.provider.create(reserved_nodeclaim("cr-a1"))

    labels = launched.metadata.labels
    assert labels[wk.CAPACITY_TYPE_LABEL_KEY] == "reserved"
    assert labels[wk.LABEL_TOPOLOGY_ZONE] == "us-west-2a"
    assert labels[aws_labels.LABEL_CAPACITY_RESERVATION_ID] == "cr-a1"
    assert labels[aws_labels.LABEL_CAPACITY_RESERVATION_TYPE] == "default"
    assert labels[aws_labels.LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE] == "false"
    [fleet] = fleets
    assert fleet["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "on-demand"
    [config] = fleet["LaunchTemplateConfigs"]
    [override] = config["Overrides"]
    assert (override["InstanceType"], override["AvailabilityZone"]) == ("m5.large", "us-west-2a")
    name = config["LaunchTemplateSpecification"]["LaunchTemplateName"]
    data = env.clients.ec2.describe_launch_template_versions(LaunchTemplateName=name)[
        "LaunchTemplateVersions"
    ][0]["LaunchTemplateData"]
    assert data["CapacityReservationSpecification"] == {
        "CapacityReservationPreference": "capacity-reservations-only",
        "CapacityReservationTarget": {"CapacityReservationId": "cr-a1"},
    }
    # the launch took one slot; the scheduler sees it at once
    assert env.provider.reservations.available("cr-a1") == 1
    types = {it.name: it for it in env.provider.get_instance_types(env.nodepool())}
    caps = {
        o.reservation_id: o.reservation_capacity
        for o in types["m5.large"].offerings
        if o.capacity_type == "reserved"
    }
    assert caps == {"cr-a1": 1, "cr-b2": 1}

    env.provider.delete(launched)
    assert env.provider.reservations.available("cr-a1") == 1  # terminating, not gone yet
    with pytest.raises(NodeClaimNotFoundError):
        env.provider.delete(launched)
    assert env.provider.reservations.available("cr-a1") == 2


def test_available_counts_follow_syncs_launches_and_capacity_errors() -> None:
    clock = VirtualClock()
    p = CapacityReservationProvider(None, clock)
    p.set_available("cr-1", 2)
    launched_before = clock.now() - timedelta(seconds=5)
    p.mark_launched("cr-1", launched_before)  # the sync already counted it
    assert p.available("cr-1") == 2
    p.mark_launched("cr-1")
    assert p.available("cr-1") == 1
    version = p.version
    p.mark_unavailable("cr-1")
    assert p.available("cr-1") == 0 and p.version > version
    p.mark_launched("cr-1")
    assert p.available("cr-1") == 0  # never below zero
    p.mark_terminated("cr-1")
    assert p.available("cr-1") == 1
    p.mark_terminated("cr-unknown")
    assert p.available("cr-unknown") == 0


# --- the core scheduler on the provider's types ---------------------------------------


def _solve(env: Env, pool: NodePool, *cpus: str) -> Results:
    pods = []
    for i, cpu in enumerate(cpus):
        raw = b.pod(f"p-{i}", cpu=cpu)
        raw["metadata"]["uid"] = f"uid-{i}"  # the scheduler's tie order
        pods.append(Pod.from_dict(raw))
    types = env.provider.get_instance_types(pool)
    return schedule(ClusterSnapshot(pods=pods), pods, [pool], {pool.name: types})


def _launch(env: Env, results: Results, name: str) -> NodeClaim:
    [planned] = results.new_nodeclaims
    raw = planned.to_nodeclaim_dict()
    raw["metadata"]["name"] = name
    raw["metadata"]["labels"][wk.NODEPOOL_LABEL_KEY] = "default"
    return env.provider.create(NodeClaim.from_dict(raw))


def test_the_scheduler_prefers_the_reservation_then_goes_on_demand_once_it_is_full(
    env: Env, crs: Reservations
) -> None:
    _share(env)
    crs.items = [reservation("cr-a1", available=1)]
    env.nodeclass(capacityReservationSelectorTerms=[{"id": "cr-a1"}])
    pool = env.nodepool(instance_types=["m5.large"], capacity_types=["reserved", "on-demand"])

    # two pods that need a node each: the reservation holds one; the core plans only
    # that one into it and keeps the other pod for the next round rather than buying
    # on-demand while the reservation might still be the better place
    both = _solve(env, pool, "1500m", "1500m")
    assert len(both.new_nodeclaims) == 1 and len(both.reserved_offering_errors()) == 1

    first = _solve(env, pool, "1500m")
    reqs = first.new_nodeclaims[0].launch_requirements()
    assert reqs.get(wk.CAPACITY_TYPE_LABEL_KEY).values == {"reserved"}
    assert reqs.get(aws_labels.LABEL_CAPACITY_RESERVATION_ID).values == {"cr-a1"}
    launched = _launch(env, first, "default-r1")
    assert launched.metadata.labels[wk.CAPACITY_TYPE_LABEL_KEY] == "reserved"
    assert launched.metadata.labels[aws_labels.LABEL_CAPACITY_RESERVATION_ID] == "cr-a1"
    assert env.provider.reservations.available("cr-a1") == 0

    # the reservation is full: the next round plans on-demand, not pinned to it
    second = _solve(env, pool, "1500m")
    assert not second.pod_errors
    reqs = second.new_nodeclaims[0].launch_requirements()
    assert reqs.get(wk.CAPACITY_TYPE_LABEL_KEY).values == {"on-demand"}
    assert not reqs.get(aws_labels.LABEL_CAPACITY_RESERVATION_ID).values
    other = _launch(env, second, "default-od1")
    assert other.metadata.labels[wk.CAPACITY_TYPE_LABEL_KEY] == "on-demand"
    assert aws_labels.LABEL_CAPACITY_RESERVATION_ID not in other.metadata.labels
