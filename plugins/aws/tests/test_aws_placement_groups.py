"""Placement groups end to end: ``placementGroupSelector`` -> ``PlacementGroupReady`` ->
instance types and offerings in the group -> launch templates placing into it -> labels,
group-scoped capacity errors and ``PlacementGroupDrift``, against moto through boto3.

moto 5.2.5 has no placement groups, so :class:`Groups` answers ``DescribePlacementGroups``
from a botocore ``before-call`` handler on the real client, with EC2's response shape,
EC2's ``state`` filter and EC2's errors for an unknown name or id; every other call still
goes to moto's server. moto's ``CreateFleet`` never fails, so the capacity-error tests
answer it the same way, with the ``Errors[]`` EC2 gives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from karpenter_aws import labels as aws_labels
from karpenter_aws.clients import AWSClients
from karpenter_aws.instance import Instance, instance_to_nodeclaim
from karpenter_aws.instancetypes import InstanceTypeProvider, describe_catalogue
from karpenter_aws.placementgroup import (
    PlacementGroup,
    PlacementGroupProvider,
    supports_strategy,
)
from karpenter_aws.pricing import PricingProvider
from karpenter_aws.settings import AWSSettings
from test_provider import Env, _aws_labels, nodeclaim  # noqa: F401  (autouse: the AWS well-known labels)

from karpenter_core.apis import labels as wk
from karpenter_core.apis.v1 import NodeClaim
from karpenter_core.cloudprovider.errors import InsufficientCapacityError, NodeClassNotReadyError
from karpenter_core.runtime.clock import VirtualClock

SPREAD_LIMIT = (
    "You've reached the limit of instances in this spread placement group. A spread "
    "placement group can have up to seven instances per Availability Zone."
)


def group(
    name: str,
    gid: str,
    strategy: str = "cluster",
    *,
    partitions: int = 0,
    state: str = "available",
) -> dict[str, Any]:
    """One group as DescribePlacementGroups returns it."""
    g: dict[str, Any] = {
        "GroupName": name,
        "GroupId": gid,
        "State": state,
        "Strategy": strategy,
        "GroupArn": f"arn:aws:ec2:us-west-2:123456789012:placement-group/{name}",
        "Tags": [],
    }
    if strategy == "partition":
        g["PartitionCount"] = partitions
    if strategy == "spread":
        g["SpreadLevel"] = "rack"
    return g


def _answer(status: int, body: dict[str, Any]) -> tuple[AWSResponse, dict[str, Any]]:
    response = AWSResponse("https://ec2.amazonaws.com/", status, {}, None)
    return response, {**body, "ResponseMetadata": {"HTTPStatusCode": status}}


class Groups:
    """EC2's placement groups for one client; ``fail`` makes the next calls fail with
    that error code (as a throttled or unauthorized call would); counts the calls."""

    def __init__(self, ec2: Any) -> None:
        self.items: list[dict[str, Any]] = []
        self.calls = 0
        self.fail = ""
        ec2.meta.events.register(
            "before-parameter-build.ec2.DescribePlacementGroups", self._keep_params
        )
        ec2.meta.events.register("before-call.ec2.DescribePlacementGroups", self._answer)

    def _keep_params(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["pg_params"] = dict(params)

    def _answer(self, context: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        self.calls += 1
        if self.fail:
            return _answer(503, {"Error": {"Code": self.fail, "Message": "try later"}})
        params = context["pg_params"]
        ids, names = params.get("GroupIds"), params.get("GroupNames")
        # EC2 refuses an unknown id or name outright (before filtering)
        for wanted, field, code in (
            (ids, "GroupId", "InvalidPlacementGroupId.NotFound"),
            (names, "GroupName", "InvalidPlacementGroup.Unknown"),
        ):
            known = {g[field] for g in self.items}
            missing = [w for w in wanted or () if w not in known]
            if missing:
                return _answer(400, {"Error": {"Code": code, "Message": f"{missing[0]} unknown"}})
        found = [
            g
            for g in self.items
            if (not ids or g["GroupId"] in ids) and (not names or g["GroupName"] in names)
        ]
        for f in params.get("Filters") or []:
            if f["Name"] == "state":
                found = [g for g in found if g["State"] in f["Values"]]
        return _answer(200, {"PlacementGroups": found})


class Fleet:
    """Answers CreateFleet with EC2's errors and no instance, keeping each request."""

    def __init__(self, ec2: Any, errors: list[dict[str, Any]]) -> None:
        self.errors = errors
        self.requests: list[dict[str, Any]] = []
        ec2.meta.events.register("before-parameter-build.ec2.CreateFleet", self._keep)
        ec2.meta.events.register("before-call.ec2.CreateFleet", self._answer)

    def _keep(self, params: dict[str, Any], **_: Any) -> None:
        self.requests.append(dict(params))

    def _answer(self, **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        return _answer(200, {"FleetId": "fleet-1", "Errors": self.errors, "Instances": []})


def fleet_error(instance_type: str, zone: str, message: str = "no capacity") -> dict[str, Any]:
    return {
        "LaunchTemplateAndOverrides": {
            "Overrides": {"InstanceType": instance_type, "AvailabilityZone": zone}
        },
        "Lifecycle": "on-demand",
        "ErrorCode": "InsufficientInstanceCapacity",
        "ErrorMessage": message,
    }


@pytest.fixture
def env(clients: AWSClients, tmp_path: Path) -> Env:
    env = Env(clients, tmp_path)
    # as the plugin's controllers wire them: the status controller resolves the group
    # the provider launches into
    env.status.placement_groups = env.provider.placement_groups
    return env


@pytest.fixture
def pgs(env: Env) -> Groups:
    return Groups(env.clients.ec2)


def condition(env: Env, type_: str, name: str = "default") -> dict[str, Any]:
    from karpenter_aws.nodeclass import NODECLASS_RESOURCE

    conds = env.server.get(NODECLASS_RESOURCE, name)["status"]["conditions"]
    return dict(next(c for c in conds if c["type"] == type_))


def partition_claim(*partitions: str) -> NodeClaim:
    raw = nodeclaim().to_dict()
    raw["spec"]["requirements"].append(
        {
            "key": aws_labels.LABEL_PLACEMENT_GROUP_PARTITION,
            "operator": "In",
            "values": list(partitions),
        }
    )
    return NodeClaim.from_dict(raw)


def template_data(env: Env, name: str) -> dict[str, Any]:
    versions = env.clients.ec2.describe_launch_template_versions(LaunchTemplateName=name)
    return dict(versions["LaunchTemplateVersions"][0]["LaunchTemplateData"])


def launched_templates(env: Env) -> list[dict[str, Any]]:
    out = env.clients.ec2.describe_launch_templates()["LaunchTemplates"]
    return [template_data(env, t["LaunchTemplateName"]) for t in out]


# --- status -------------------------------------------------------------------------------


def test_without_a_selector_the_placement_group_is_ready(env: Env, pgs: Groups) -> None:
    env.nodeclass()
    assert condition(env, "PlacementGroupReady")["status"] == "True"
    assert condition(env, "Ready")["status"] == "True"
    assert pgs.calls == 0


@pytest.mark.parametrize("selector", [{"name": "training"}, {"id": "pg-0a1"}])
def test_a_selected_group_is_resolved_by_name_or_id(
    env: Env, pgs: Groups, selector: dict[str, str]
) -> None:
    pgs.items = [group("training", "pg-0a1"), group("other", "pg-0b2")]
    env.nodeclass(placementGroupSelector=selector)
    assert condition(env, "PlacementGroupReady")["status"] == "True"
    assert condition(env, "Ready")["status"] == "True"
    found = env.provider.placement_groups.get(env_selector(env))
    assert found == PlacementGroup(id="pg-0a1", name="training", strategy="cluster")


def env_selector(env: Env) -> Any:
    from karpenter_aws.nodeclass import get_nodeclass

    return get_nodeclass(env.server, "default").placement_group_selector


@pytest.mark.parametrize(
    "items",
    [[], [group("training", "pg-0a1", state="deleted")]],
    ids=["unknown", "not-available"],
)
def test_a_group_that_is_not_found_makes_the_class_not_ready(
    env: Env, pgs: Groups, items: list[dict[str, Any]]
) -> None:
    pgs.items = items
    env.nodeclass(placementGroupSelector={"name": "training"})
    cond = condition(env, "PlacementGroupReady")
    assert (cond["status"], cond["reason"]) == ("False", "PlacementGroupNotFound")
    assert "training" in cond["message"]
    assert condition(env, "Ready")["status"] == "False"


def test_an_ec2_failure_is_reported_but_the_known_group_stays_in_use(env: Env, pgs: Groups) -> None:
    pgs.items = [group("training", "pg-0a1")]
    env.nodeclass(placementGroupSelector={"name": "training"})
    assert condition(env, "PlacementGroupReady")["status"] == "True"

    pgs.fail = "RequestLimitExceeded"
    env.clock.advance(61)
    env.reconcile()
    cond = condition(env, "PlacementGroupReady")
    assert (cond["status"], cond["reason"]) == ("False", "PlacementGroupResolutionFailed")
    assert "RequestLimitExceeded" in cond["message"]
    assert any(e.reason == "PlacementGroupResolutionFailed" for e in env.recorder.events)
    # launches, offerings and drift go on with the group known before
    assert env.provider.placement_groups.get(env_selector(env)) is not None


def test_answers_are_reused_for_a_minute_and_a_deleted_group_is_forgotten() -> None:
    clock = VirtualClock()

    class EC2:
        def __init__(self) -> None:
            self.calls = 0
            self.groups = [group("g", "pg-1")]

        def describe_placement_groups(self, **_: Any) -> dict[str, Any]:
            self.calls += 1
            return {"PlacementGroups": self.groups}

    ec2 = EC2()
    provider = PlacementGroupProvider(ec2, clock)

    class Selector:
        name, id = "g", ""

    assert provider.get(Selector()) is not None
    assert provider.get(Selector()) is not None
    assert ec2.calls == 1
    ec2.groups = []
    clock.advance(59)
    assert provider.get(Selector()) is not None  # still the cached answer
    clock.advance(2)
    assert provider.get(Selector()) is None and ec2.calls == 2
    assert provider.get(None) is None and ec2.calls == 2


# --- instance types and offerings -----------------------------------------------------------


def test_types_in_a_group_carry_its_id_and_types_that_cannot_join_are_unavailable(
    env: Env, pgs: Groups, tmp_path: Path
) -> None:
    pgs.items = [group("training", "pg-0a1")]
    prices = {"m5.large": 0.096, "t3.micro": 0.0104}
    price_file = tmp_path / "more-prices.json"
    price_file.write_text(__import__("json").dumps(prices))
    settings = AWSSettings(cluster_name="demo", price_list_file=str(price_file))
    types = InstanceTypeProvider(
        env.clients,
        settings,
        PricingProvider(env.clients, settings, env.clock),
        env.provider.unavailable,
        env.clock,
        catalogue=describe_catalogue(env.clients, sorted(prices)),
        placement_groups=env.provider.placement_groups,
    )
    # EC2 says which strategies a type supports: burstable types cannot join a cluster group
    infos = types.catalogue().infos
    assert infos["t3.micro"]["PlacementGroupInfo"]["SupportedStrategies"] == [
        "partition",
        "spread",
    ]
    env.nodeclass(placementGroupSelector={"name": "training"})
    from karpenter_aws.nodeclass import get_nodeclass

    listed = {it.name: it for it in types.list(get_nodeclass(env.server, "default"))}
    for it in listed.values():
        assert it.requirements.get(aws_labels.LABEL_PLACEMENT_GROUP_ID).values == {"pg-0a1"}
        assert not it.requirements.has(aws_labels.LABEL_PLACEMENT_GROUP_PARTITION)
    assert listed["m5.large"].offerings.available()
    assert not listed["t3.micro"].offerings.available()

    # without the group both launch
    env.nodeclass("plain")
    plain = {it.name: it for it in types.list(get_nodeclass(env.server, "plain"))}
    assert plain["t3.micro"].offerings.available()
    assert not plain["m5.large"].requirements.has(aws_labels.LABEL_PLACEMENT_GROUP_ID)


def test_supports_strategy_leaves_types_without_placement_info_to_ec2() -> None:
    cluster = PlacementGroup(id="pg-1", name="g", strategy="cluster")
    spread = PlacementGroup(id="pg-2", name="h", strategy="spread")
    burstable = {"PlacementGroupInfo": {"SupportedStrategies": ["partition", "spread"]}}
    assert not supports_strategy(burstable, cluster)
    assert supports_strategy(burstable, spread)
    assert supports_strategy(burstable, None)
    assert supports_strategy({}, cluster)  # the bundled catalogue has no PlacementGroupInfo


def test_a_partition_group_has_offerings_per_partition(env: Env, pgs: Groups) -> None:
    pgs.items = [group("kafka", "pg-0c3", "partition", partitions=3)]
    env.nodeclass(placementGroupSelector={"name": "kafka"})
    pool = env.nodepool()
    m5 = next(it for it in env.provider.get_instance_types(pool) if it.name == "m5.large")
    assert m5.requirements.get(aws_labels.LABEL_PLACEMENT_GROUP_PARTITION).values == {
        "1",
        "2",
        "3",
    }
    available = m5.offerings.available()
    per_zone = {
        (o.zone, o.requirements.get(aws_labels.LABEL_PLACEMENT_GROUP_PARTITION).any())
        for o in available
        if o.capacity_type == "on-demand"
    }
    assert per_zone == {(z, p) for z in ("us-west-2a", "us-west-2b") for p in ("1", "2", "3")}


def test_capacity_marks_are_scoped_to_the_group_and_partition(env: Env, pgs: Groups) -> None:
    pgs.items = [group("kafka", "pg-0c3", "partition", partitions=2)]
    env.nodeclass(placementGroupSelector={"name": "kafka"})
    env.nodeclass("plain")
    pool = env.nodepool()
    plain_pool = env.nodepool("plain-pool", "plain")

    def available(p: Any) -> set[tuple[str, str]]:
        m5 = next(it for it in env.provider.get_instance_types(p) if it.name == "m5.large")
        return {
            (
                o.zone,
                o.requirements.get(aws_labels.LABEL_PLACEMENT_GROUP_PARTITION).any()
                if o.requirements.has(aws_labels.LABEL_PLACEMENT_GROUP_PARTITION)
                else "",
            )
            for o in m5.offerings.available()
            if o.capacity_type == "on-demand"
        }

    unavailable = env.provider.unavailable
    unavailable.mark(
        "m5.large",
        "us-west-2a",
        "on-demand",
        placement_group_id="pg-0c3",
        placement_group_partition="1",
    )
    assert ("us-west-2a", "1") not in available(pool)
    assert ("us-west-2a", "2") in available(pool)
    assert ("us-west-2a", "") in available(plain_pool)
    unavailable.mark("m5.large", "us-west-2b", "on-demand", placement_group_id="pg-0c3")
    assert not {("us-west-2b", "1"), ("us-west-2b", "2")} & available(pool)
    assert ("us-west-2b", "") in available(plain_pool)
    # and the other way round: a mark outside the group leaves the group's offerings
    unavailable.mark("m5.large", "us-west-2a", "on-demand")
    assert ("us-west-2a", "") not in available(plain_pool)
    assert ("us-west-2a", "2") in available(pool)


# --- launch ---------------------------------------------------------------------------------


def test_a_launch_places_into_the_group_and_labels_the_node(env: Env, pgs: Groups) -> None:
    pgs.items = [group("training", "pg-0a1")]
    env.nodeclass(placementGroupSelector={"name": "training"})
    env.nodepool()
    launched = env.provider.create(nodeclaim())
    labels = launched.metadata.labels
    assert labels[aws_labels.LABEL_PLACEMENT_GROUP_ID] == "pg-0a1"
    assert aws_labels.LABEL_PLACEMENT_GROUP_PARTITION not in labels
    [data] = launched_templates(env)
    assert data["Placement"] == {"GroupId": "pg-0a1", "Tenancy": "default"}


def test_a_class_whose_group_is_gone_does_not_launch_outside_it(env: Env, pgs: Groups) -> None:
    pgs.items = [group("training", "pg-0a1")]
    env.nodeclass(placementGroupSelector={"name": "training"})
    env.nodepool()
    pgs.items = []  # deleted; the Ready status from before still stands
    env.clock.advance(61)
    with pytest.raises(NodeClassNotReadyError, match="training"):
        env.provider.create(nodeclaim())
    assert not env.clients.ec2.describe_instances()["Reservations"]


def test_a_launch_without_a_group_has_no_group_in_its_template(env: Env) -> None:
    env.nodeclass()
    env.nodepool()
    launched = env.provider.create(nodeclaim())
    assert aws_labels.LABEL_PLACEMENT_GROUP_ID not in launched.metadata.labels
    [data] = launched_templates(env)
    assert data["Placement"] == {"Tenancy": "default"}


def test_a_targeted_partition_is_launched_into_and_labelled(env: Env, pgs: Groups) -> None:
    pgs.items = [group("kafka", "pg-0c3", "partition", partitions=3)]
    env.nodeclass(placementGroupSelector={"name": "kafka"})
    env.nodepool()
    launched = env.provider.create(partition_claim("3", "2"))
    labels = launched.metadata.labels
    assert labels[aws_labels.LABEL_PLACEMENT_GROUP_ID] == "pg-0c3"
    assert labels[aws_labels.LABEL_PLACEMENT_GROUP_PARTITION] == "2"  # the lowest allowed
    [data] = launched_templates(env)
    assert data["Placement"] == {"GroupId": "pg-0c3", "PartitionNumber": 2, "Tenancy": "default"}

    # a NodeClaim allowing every partition lets EC2 choose: no partition in the template
    env.provider.create(partition_claim("1", "2", "3"))
    placements = sorted(
        (d["Placement"].get("PartitionNumber", 0) for d in launched_templates(env)), key=int
    )
    assert placements == [0, 2]


def test_a_capacity_error_in_the_group_marks_only_the_group_and_partition(
    env: Env, pgs: Groups
) -> None:
    pgs.items = [group("kafka", "pg-0c3", "partition", partitions=2)]
    env.nodeclass(placementGroupSelector={"name": "kafka"})
    env.nodepool()
    Fleet(env.clients.ec2, [fleet_error("m5.large", "us-west-2a")])
    with pytest.raises(InsufficientCapacityError):
        env.provider.create(partition_claim("1"))
    u = env.provider.unavailable
    scope = {"placement_group_id": "pg-0c3"}
    assert u.is_unavailable(
        "m5.large", "us-west-2a", "on-demand", **scope, placement_group_partition="1"
    )
    assert not u.is_unavailable("m5.large", "us-west-2a", "on-demand", **scope)
    assert not u.is_unavailable("m5.large", "us-west-2a", "on-demand")


def test_the_spread_limit_takes_the_zone_out_of_the_group_for_every_type(
    env: Env, pgs: Groups
) -> None:
    pgs.items = [group("etcd", "pg-0d4", "spread")]
    env.nodeclass(placementGroupSelector={"name": "etcd"})
    env.nodepool()
    fleet = Fleet(env.clients.ec2, [fleet_error("m5.large", "us-west-2a", SPREAD_LIMIT)])
    with pytest.raises(InsufficientCapacityError):
        env.provider.create(nodeclaim())
    assert fleet.requests
    u = env.provider.unavailable
    for name in ("m5.large", "c5.large"):
        assert u.is_unavailable(name, "us-west-2a", "on-demand", placement_group_id="pg-0d4")
        assert not u.is_unavailable(name, "us-west-2b", "on-demand", placement_group_id="pg-0d4")
        assert not u.is_unavailable(name, "us-west-2a", "on-demand")


# --- labels from EC2 and drift ----------------------------------------------------------------


def test_listed_instances_carry_the_group_and_partition_ec2_reports() -> None:
    instance = Instance.from_ec2(
        {
            "InstanceId": "i-1",
            "InstanceType": "m5.large",
            "State": {"Name": "running"},
            "Placement": {
                "AvailabilityZone": "us-west-2a",
                "GroupName": "kafka",
                "GroupId": "pg-0c3",
                "PartitionNumber": 3,
            },
        }
    )
    labels = instance_to_nodeclaim(instance, None, now=VirtualClock().now()).metadata.labels
    assert labels[aws_labels.LABEL_PLACEMENT_GROUP_ID] == "pg-0c3"
    assert labels[aws_labels.LABEL_PLACEMENT_GROUP_PARTITION] == "3"
    assert labels[wk.LABEL_TOPOLOGY_ZONE] == "us-west-2a"


def test_a_node_outside_the_class_group_is_drifted(env: Env, pgs: Groups) -> None:
    from karpenter_aws.nodeclass import NODECLASS_RESOURCE

    pgs.items = [group("training", "pg-0a1")]
    env.nodeclass(placementGroupSelector={"name": "training"})
    env.nodepool()
    launched = env.provider.create(nodeclaim())
    env.as_ec2_would(launched.status.provider_id.rsplit("/", 1)[1])  # type: ignore[union-attr]
    assert env.provider.is_drifted(launched) == ""

    # the group deleted: nothing to compare with, no decision (the class is not Ready)
    pgs.items = []
    env.clock.advance(61)
    assert env.provider.is_drifted(launched) == ""
    # re-created under the same name: a new id, the node is not in it
    pgs.items = [group("training", "pg-0e5")]
    env.clock.advance(61)
    assert env.provider.is_drifted(launched) == "PlacementGroupDrift"

    # a changed selector is in the class's drift hash (upstream's), which is checked first
    obj = env.server.get(NODECLASS_RESOURCE, "default")
    obj["spec"].pop("placementGroupSelector")
    env.server.update(obj)
    env.reconcile()
    assert env.provider.is_drifted(launched) == "NodeClassDrift"


def test_placement_group_drift_compares_the_label_with_the_resolved_group() -> None:
    from karpenter_aws import drift

    assert drift.placement_group_drift("pg-1", "pg-1") == ""
    assert drift.placement_group_drift("", "") == ""
    assert drift.placement_group_drift("", "pg-1") == "PlacementGroupDrift"
    assert drift.placement_group_drift("pg-1", "") == "PlacementGroupDrift"
    assert drift.placement_group_drift("pg-1", "pg-2") == "PlacementGroupDrift"
