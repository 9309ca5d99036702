"""InstanceProvider against moto's EC2: CreateFleet launches, tags, get/list/terminate, and
the error classification (ICE from ``Errors[]`` through botocore's Stubber, since moto never
returns them)."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import attrs
import pytest
from botocore.exceptions import ClientError
from botocore.stub import ANY, Stubber
from karpenter_aws.clients import AWSClients
from karpenter_aws.instance import (
    AMI,
    MAX_INSTANCE_TYPES,
    NODECLAIM_TAG,
    Instance,
    InstanceProvider,
    LaunchRequest,
    Override,
    TagError,
    build_overrides,
    choose_capacity_type,
    exotic_filter,
    fleet_request,
    instance_to_nodeclaim,
    launch_tags,
    on_demand_fallback_warning,
    parse_instance_id,
    reason_for,
    spot_offering_filter,
)
from karpenter_aws.launchtemplate import TemplateInputs
from karpenter_aws.userdata import UserDataOptions

from karpenter_core.apis import labels as wk
from karpenter_core.cloudprovider.errors import (
    CreateError,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
)
from karpenter_core.cloudprovider.types import InstanceType, Offering
from karpenter_core.cloudprovider.unavailable import UnavailableOfferings
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.scheduling.requirements import IN, Requirement, Requirements

CLUSTER = "test-cluster"
ZONES = ("us-west-2a", "us-west-2b")


def reqs(**values: Sequence[str]) -> Requirements:
    keys = {
        "type": wk.LABEL_INSTANCE_TYPE,
        "zone": wk.LABEL_TOPOLOGY_ZONE,
        "ct": wk.CAPACITY_TYPE_LABEL_KEY,
        "arch": wk.LABEL_ARCH,
    }
    return Requirements(*(Requirement.new(keys[k], IN, list(v)) for k, v in values.items()))


def make_type(
    name: str,
    prices: dict[tuple[str, str], float],
    *,
    arch: str = "amd64",
    pods: int = 29,
    unavailable: Sequence[tuple[str, str]] = (),
) -> InstanceType:
    """A type with one offering per (zone, capacity type) in ``prices``."""
    offerings = [
        Offering(reqs(zone=[z], ct=[ct]), price, available=(z, ct) not in unavailable)
        for (z, ct), price in prices.items()
    ]
    return InstanceType(
        name=name,
        requirements=reqs(
            type=[name],
            arch=[arch],
            zone=sorted({z for z, _ in prices}),
            ct=sorted({ct for _, ct in prices}),
        ),
        offerings=offerings,
        capacity={
            "cpu": 2000,
            "memory": 8 * 1024**3 * 1000,
            "pods": pods * 1000,
            "nvidia.com/gpu": 0,
        },
    )


def on_demand(
    name: str, price: float, zones: Sequence[str] = ZONES, *, pods: int = 29
) -> InstanceType:
    return make_type(name, {(z, "on-demand"): price for z in zones}, pods=pods)


class Network:
    """A VPC with one subnet per zone, a security group and an AMI, in moto."""

    def __init__(self, ec2: Any) -> None:
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        self.subnets = {
            z: ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZone=z)[
                "Subnet"
            ]["SubnetId"]
            for i, z in enumerate(ZONES)
        }
        self.sg = ec2.create_security_group(GroupName="nodes", Description="n", VpcId=vpc)[
            "GroupId"
        ]
        self.ami = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]


@pytest.fixture
def net(clients: AWSClients) -> Network:
    return Network(clients.ec2)


@pytest.fixture
def unavailable() -> UnavailableOfferings:
    return UnavailableOfferings(VirtualClock())


@pytest.fixture
def provider(clients: AWSClients, unavailable: UnavailableOfferings) -> InstanceProvider:
    return InstanceProvider(clients.ec2, CLUSTER, unavailable)


def template(net: Network, tags: dict[str, str]) -> TemplateInputs:
    return TemplateInputs(
        family="AL2023",
        instance_profile="nodes-profile",
        security_group_ids=(net.sg,),
        user_data=UserDataOptions(
            cluster_name=CLUSTER,
            cluster_endpoint="https://k8s.example",
            cluster_cidr="10.100.0.0/16",
        ),
        tags=tags,
    )


def request(
    net: Network,
    types: Sequence[InstanceType],
    requirements: Requirements | None = None,
    *,
    nodeclaim: str = "default-abcde",
    nodepool: str = "default",
    ami_requirements: Requirements | None = None,
) -> LaunchRequest:
    tags = launch_tags(CLUSTER, "default", {"team": "a"}, nodepool)
    return LaunchRequest(
        nodeclaim_name=nodeclaim,
        requirements=requirements if requirements is not None else reqs(ct=["on-demand"]),
        instance_types=types,
        subnets=net.subnets,
        amis=(AMI(net.ami, ami_requirements or reqs(arch=["amd64"])),),
        template=template(net, tags),
        tags={**tags, NODECLAIM_TAG: nodeclaim},
    )


def describe(ec2: Any, instance_id: str) -> dict[str, Any]:
    out = ec2.describe_instances(InstanceIds=[instance_id])
    return dict(out["Reservations"][0]["Instances"][0])


# --- launching through moto -------------------------------------------------------------


def test_create_launches_an_allowed_type_in_the_zones_subnet_with_every_tag(
    clients: AWSClients, net: Network, provider: InstanceProvider
) -> None:
    types = [on_demand("m5.large", 0.096), on_demand("c5.large", 0.085)]
    inst = provider.create(request(net, types))

    assert inst.instance_type in {"m5.large", "c5.large"}
    assert inst.zone in ZONES and inst.subnet_id == net.subnets[inst.zone]
    assert inst.capacity_type == "on-demand" and inst.image_id == net.ami
    assert inst.provider_id == f"aws:///{inst.zone}/{inst.id}"
    ec2 = describe(clients.ec2, inst.id)
    tags = {t["Key"]: t["Value"] for t in ec2["Tags"]}
    assert tags == {
        "team": "a",
        f"kubernetes.io/cluster/{CLUSTER}": "owned",
        "karpenter.sh/nodepool": "default",
        "eks:eks-cluster-name": CLUSTER,
        "karpenter.k8s.aws/ec2nodeclass": "default",
        "karpenter.sh/nodeclaim": "default-abcde",
    }
    assert ec2["InstanceType"] == inst.instance_type and ec2["SubnetId"] == inst.subnet_id


def test_create_builds_its_launch_template_from_the_inputs(
    clients: AWSClients, net: Network, provider: InstanceProvider
) -> None:
    provider.create(request(net, [on_demand("m5.large", 0.096, pods=17)]))
    [lt] = clients.ec2.describe_launch_templates()["LaunchTemplates"]
    assert lt["LaunchTemplateName"].startswith("karpenter.k8s.aws/")
    data = clients.ec2.describe_launch_template_versions(
        LaunchTemplateName=lt["LaunchTemplateName"]
    )["LaunchTemplateVersions"][0]["LaunchTemplateData"]
    assert data["ImageId"] == net.ami
    assert data["IamInstanceProfile"]["Name"] == "nodes-profile"
    assert data["NetworkInterfaces"][0]["Groups"] == [net.sg]
    user_data = base64.b64decode(data["UserData"]).decode()
    assert "maxPods: 17" in user_data and "karpenter.sh/capacity-type=on-demand" in user_data


def test_spot_is_chosen_when_allowed_and_reported_from_the_instance(
    clients: AWSClients, net: Network, provider: InstanceProvider
) -> None:
    it = make_type("m5.large", {("us-west-2a", "spot"): 0.03, ("us-west-2a", "on-demand"): 0.096})
    inst = provider.create(request(net, [it], reqs(ct=["spot", "on-demand"])))
    assert inst.capacity_type == "spot"
    # moto sets InstanceLifecycle but no SpotInstanceRequestId; get() still sees spot
    assert provider.get(inst.id).capacity_type == "spot"


def test_a_launch_template_deleted_behind_the_cache_is_recreated_and_the_launch_retried(
    clients: AWSClients, net: Network, provider: InstanceProvider
) -> None:
    req = request(net, [on_demand("m5.large", 0.096)])
    provider.create(req)
    [lt] = clients.ec2.describe_launch_templates()["LaunchTemplates"]
    clients.ec2.delete_launch_template(LaunchTemplateName=lt["LaunchTemplateName"])

    inst = provider.create(req)  # the cache still says the template exists: fleet fails once

    assert describe(clients.ec2, inst.id)["State"]["Name"] in ("pending", "running")
    names = [
        t["LaunchTemplateName"] for t in clients.ec2.describe_launch_templates()["LaunchTemplates"]
    ]
    assert names == [lt["LaunchTemplateName"]]


def test_nothing_launchable_is_insufficient_capacity_without_calling_ec2(
    clients: AWSClients, net: Network, provider: InstanceProvider
) -> None:
    gone = make_type(
        "m5.large", {("us-west-2a", "on-demand"): 0.1}, unavailable=[("us-west-2a", "on-demand")]
    )
    with Stubber(clients.ec2):  # any EC2 call would fail: none is stubbed
        with pytest.raises(InsufficientCapacityError, match="all requested instance types"):
            provider.create(request(net, [gone]))
        with pytest.raises(InsufficientCapacityError):
            provider.create(request(net, [on_demand("m5.large", 0.1)], reqs(zone=["us-west-2c"])))


def test_only_types_the_requirements_allow_and_that_fit_are_offered_to_the_fleet(
    clients: AWSClients, stubbed: Stubber, provider: InstanceProvider
) -> None:
    types = [
        on_demand("m5.large", 0.1),
        on_demand("c5.large", 0.08),
        make_type("m6g.large", {("us-west-2a", "on-demand"): 0.07}, arch="arm64"),
        on_demand("t3.nano", 0.01, pods=4),
    ]
    small = attrs.evolve(
        types[3], capacity={"cpu": 2000, "memory": 512 * 1024**2 * 1000, "pods": 4000}
    )
    types[3] = small
    seen: list[dict[str, Any]] = []
    clients.ec2.meta.events.register(
        "provide-client-params.ec2.CreateFleet", lambda params, **_: seen.append(params)
    )
    _template_exists(stubbed)
    stubbed.add_response("create_fleet", {"Errors": []}, None)
    req = attrs.evolve(
        request(FAKE_NET, types, reqs(type=["m5.large", "m6g.large", "t3.nano"], ct=["on-demand"])),
        requests={"memory": 1024**3 * 1000},
    )
    with pytest.raises(InsufficientCapacityError):
        provider.create(req)
    offered = {o["InstanceType"] for c in seen[0]["LaunchTemplateConfigs"] for o in c["Overrides"]}
    # c5.large: not an allowed type; m6g.large: no AMI for arm64; t3.nano: 1Gi does not fit
    assert offered == {"m5.large"}


def test_types_no_ami_suits_are_a_create_error(net: Network, provider: InstanceProvider) -> None:
    arm = make_type("m6g.large", {("us-west-2a", "on-demand"): 0.077}, arch="arm64")
    with pytest.raises(CreateError) as e:
        provider.create(request(net, [arm]))
    assert e.value.condition_reason == "NoCompatibleAMI"


# --- get / list / delete ------------------------------------------------------------------


def test_get_list_and_delete(clients: AWSClients, net: Network, provider: InstanceProvider) -> None:
    a = provider.create(request(net, [on_demand("m5.large", 0.1)], nodeclaim="a"))
    b = provider.create(request(net, [on_demand("c5.large", 0.1)], nodeclaim="b"))
    # an instance of another cluster, and one without Karpenter's tags
    other = InstanceProvider(clients.ec2, "other-cluster", UnavailableOfferings(VirtualClock()))
    foreign = request(net, [on_demand("t3.small", 0.02)], nodeclaim="x")
    foreign = attrs.evolve(foreign, tags=launch_tags("other-cluster", "default", {}, "p"))
    other.create(foreign)
    clients.ec2.run_instances(
        ImageId=net.ami, MinCount=1, MaxCount=1, SubnetId=net.subnets["us-west-2a"]
    )

    got = provider.get(a.id)
    assert (got.id, got.instance_type, got.zone, got.tags[NODECLAIM_TAG]) == (
        a.id,
        "m5.large",
        a.zone,
        "a",
    )
    assert sorted(i.id for i in provider.list()) == sorted([a.id, b.id])

    provider.delete(a.id)
    assert describe(clients.ec2, a.id)["State"]["Name"] in ("shutting-down", "terminated")
    assert [i.id for i in provider.list()] == [b.id]
    with pytest.raises(NodeClaimNotFoundError):
        provider.get(a.id)
    with pytest.raises(NodeClaimNotFoundError):
        provider.delete(a.id)


def test_unknown_instance_is_not_found(provider: InstanceProvider) -> None:
    with pytest.raises(NodeClaimNotFoundError):
        provider.get("i-0123456789abcdef0")
    with pytest.raises(NodeClaimNotFoundError):
        provider.delete("i-0123456789abcdef0")


# --- CreateFleet errors (Stubber: moto never returns Errors[]) ------------------------------


@pytest.fixture
def stubbed(clients: AWSClients) -> Iterator[Stubber]:
    with Stubber(clients.ec2) as stub:
        yield stub
        stub.assert_no_pending_responses()


def _template_exists(stub: Stubber) -> None:
    stub.add_response(
        "describe_launch_templates",
        {"LaunchTemplates": [{"LaunchTemplateName": "karpenter.k8s.aws/1"}]},
        {"LaunchTemplateNames": ANY},
    )


def _fleet_error(code: str, it: str, zone: str, message: str = "") -> dict[str, Any]:
    return {
        "ErrorCode": code,
        "ErrorMessage": message or code,
        "Lifecycle": "on-demand",
        "LaunchTemplateAndOverrides": {
            "LaunchTemplateSpecification": {"LaunchTemplateName": "karpenter.k8s.aws/1"},
            "Overrides": {"InstanceType": it, "AvailabilityZone": zone, "SubnetId": "subnet-1"},
        },
    }


FAKE_NET = Network.__new__(Network)
FAKE_NET.subnets = {"us-west-2a": "subnet-1", "us-west-2b": "subnet-2"}
FAKE_NET.sg = "sg-1"
FAKE_NET.ami = "ami-1"


def test_capacity_errors_mark_offerings_unavailable_and_raise_ice(
    stubbed: Stubber, provider: InstanceProvider, unavailable: UnavailableOfferings
) -> None:
    _template_exists(stubbed)
    stubbed.add_response(
        "create_fleet",
        {
            "FleetId": "fleet-1",
            "Errors": [
                _fleet_error("InsufficientInstanceCapacity", "m5.large", "us-west-2a"),
                _fleet_error("InsufficientInstanceCapacity", "m5.large", "us-west-2b"),
            ],
            "Instances": [],
        },
        None,
    )
    with pytest.raises(InsufficientCapacityError, match="InsufficientInstanceCapacity"):
        provider.create(request(FAKE_NET, [on_demand("m5.large", 0.1)]))
    assert unavailable.is_unavailable("m5.large", "us-west-2a", "on-demand")
    assert unavailable.is_unavailable("m5.large", "us-west-2b", "on-demand")
    assert not unavailable.is_unavailable("m5.large", "us-west-2a", "spot")


def test_a_non_capacity_error_among_them_is_a_create_error_with_its_reason(
    stubbed: Stubber, provider: InstanceProvider, unavailable: UnavailableOfferings
) -> None:
    _template_exists(stubbed)
    stubbed.add_response(
        "create_fleet",
        {
            "Errors": [
                _fleet_error("InsufficientInstanceCapacity", "m5.large", "us-west-2a"),
                _fleet_error("InvalidAMIID.NotFound", "m5.large", "us-west-2b"),
            ]
        },
        None,
    )
    with pytest.raises(CreateError) as e:
        provider.create(request(FAKE_NET, [on_demand("m5.large", 0.1)]))
    assert e.value.condition_reason == "AMINotFound"
    assert unavailable.is_unavailable("m5.large", "us-west-2a", "on-demand")


def test_spot_service_linked_role_failure_turns_spot_off(
    stubbed: Stubber, provider: InstanceProvider, unavailable: UnavailableOfferings
) -> None:
    _template_exists(stubbed)
    stubbed.add_response(
        "create_fleet",
        {
            "Errors": [
                _fleet_error(
                    "AuthFailure.ServiceLinkedRoleCreationNotPermitted", "m5.large", "us-west-2a"
                )
            ]
        },
        None,
    )
    spot = make_type("m5.large", {("us-west-2a", "spot"): 0.03})
    with pytest.raises(CreateError) as e:
        provider.create(request(FAKE_NET, [spot], reqs(ct=["spot"])))
    assert e.value.condition_reason == "SpotSLRCreationFailed"
    assert unavailable.is_unavailable("c5.large", "us-west-2b", "spot")


def test_a_fleet_with_errors_and_an_instance_still_launches(
    stubbed: Stubber, provider: InstanceProvider, unavailable: UnavailableOfferings
) -> None:
    _template_exists(stubbed)
    stubbed.add_response(
        "create_fleet",
        {
            "Errors": [_fleet_error("InsufficientInstanceCapacity", "m5.large", "us-west-2a")],
            "Instances": [
                {
                    "InstanceIds": ["i-0abc"],
                    "InstanceType": "c5.large",
                    "LaunchTemplateAndOverrides": {
                        "Overrides": {
                            "AvailabilityZone": "us-west-2b",
                            "SubnetId": "subnet-2",
                            "ImageId": "ami-1",
                        }
                    },
                }
            ],
        },
        None,
    )
    inst = provider.create(
        request(FAKE_NET, [on_demand("m5.large", 0.1), on_demand("c5.large", 0.2)])
    )
    assert (inst.id, inst.instance_type, inst.zone, inst.subnet_id) == (
        "i-0abc",
        "c5.large",
        "us-west-2b",
        "subnet-2",
    )
    assert unavailable.is_unavailable("m5.large", "us-west-2a", "on-demand")


def test_a_create_fleet_api_error_is_a_create_error(
    stubbed: Stubber, provider: InstanceProvider
) -> None:
    _template_exists(stubbed)
    stubbed.add_client_error(
        "create_fleet",
        service_error_code="UnauthorizedOperation",
        service_message="You are not authorized",
    )
    with pytest.raises(CreateError) as e:
        provider.create(request(FAKE_NET, [on_demand("m5.large", 0.1)]))
    assert e.value.condition_reason == "Unauthorized"


def test_a_template_still_missing_after_the_retry_is_a_create_error(
    stubbed: Stubber, provider: InstanceProvider
) -> None:
    for _ in range(2):
        _template_exists(stubbed)
        stubbed.add_client_error(
            "create_fleet", service_error_code="InvalidLaunchTemplateName.NotFoundException"
        )
    with pytest.raises(CreateError) as e:
        provider.create(request(FAKE_NET, [on_demand("m5.large", 0.1)]))
    assert e.value.condition_reason == "LaunchTemplateNotFound"


def test_describe_errors_other_than_not_found_propagate(
    stubbed: Stubber, provider: InstanceProvider
) -> None:
    # the batched call fails, then the one-by-one retry of its ids: the retry's error is
    # what the caller gets
    stubbed.add_client_error("describe_instances", service_error_code="RequestLimitExceeded")
    stubbed.add_client_error("describe_instances", service_error_code="RequestLimitExceeded")
    with pytest.raises(ClientError):
        provider.get("i-1")


# --- pure pieces ------------------------------------------------------------------------------


def test_fleet_request_is_instant_single_capacity_with_tags_on_instance_volume_fleet() -> None:
    o = Override("m5.large", "us-west-2a", "subnet-1", "ami-1", 0.096)
    spot = fleet_request([("lt/1", [o])], "spot", {"k": "v"}, context="ctx")
    assert spot["Type"] == "instant"
    assert spot["TargetCapacitySpecification"] == {
        "TotalTargetCapacity": 1,
        "DefaultTargetCapacityType": "spot",
    }
    assert spot["SpotOptions"] == {"AllocationStrategy": "price-capacity-optimized"}
    assert "OnDemandOptions" not in spot and spot["Context"] == "ctx"
    assert [t["ResourceType"] for t in spot["TagSpecifications"]] == ["instance", "volume", "fleet"]
    [config] = spot["LaunchTemplateConfigs"]
    assert config["LaunchTemplateSpecification"] == {
        "LaunchTemplateName": "lt/1",
        "Version": "$Latest",
    }
    assert config["Overrides"] == [
        {
            "InstanceType": "m5.large",
            "SubnetId": "subnet-1",
            "AvailabilityZone": "us-west-2a",
            "ImageId": "ami-1",
            "Priority": 0.096,
        }
    ]
    od = fleet_request([("lt/1", [o])], "on-demand", {})
    assert (
        od["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"} and "SpotOptions" not in od
    )


def test_one_override_per_available_type_and_zone_with_a_subnet() -> None:
    its = [
        make_type(
            "m5.large",
            {
                ("us-west-2a", "on-demand"): 0.1,
                ("us-west-2b", "on-demand"): 0.11,
                ("us-west-2c", "on-demand"): 0.1,
            },
        ),
        make_type(
            "c5.large",
            {("us-west-2a", "on-demand"): 0.08},
            unavailable=[("us-west-2a", "on-demand")],
        ),
    ]
    got = build_overrides(its, reqs(ct=["on-demand"]), FAKE_NET.subnets, "ami-1")
    assert [(o.instance_type, o.zone, o.subnet_id, o.price) for o in got] == [
        ("m5.large", "us-west-2a", "subnet-1", 0.1),
        ("m5.large", "us-west-2b", "subnet-2", 0.11),
    ]


def test_capacity_type_choice() -> None:
    both = make_type("m5.large", {("us-west-2a", "spot"): 0.03, ("us-west-2a", "on-demand"): 0.1})
    od = on_demand("m5.large", 0.1)
    assert choose_capacity_type(reqs(ct=["spot", "on-demand"]), [both]) == "spot"
    assert choose_capacity_type(Requirements(), [both]) == "spot"
    assert choose_capacity_type(reqs(ct=["on-demand"]), [both]) == "on-demand"
    assert choose_capacity_type(reqs(ct=["spot", "on-demand"]), [od]) == "on-demand"


def test_the_on_demand_fallback_warning_needs_spot_allowed_and_few_types() -> None:
    few = [on_demand(f"m5.{n}", 0.1) for n in ("large", "xlarge")]
    many = [on_demand(f"m5.{n}", 0.1) for n in ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge")]
    flexible = reqs(ct=["spot", "on-demand"])
    message = on_demand_fallback_warning(flexible, "on-demand", few)
    assert "at least 5 instance types" in message and "only has 2" in message
    assert on_demand_fallback_warning(flexible, "on-demand", many) == ""
    assert on_demand_fallback_warning(reqs(ct=["on-demand"]), "on-demand", few) == ""
    assert on_demand_fallback_warning(flexible, "spot", few) == ""
    assert on_demand_fallback_warning(Requirements(), "on-demand", few) == ""


def test_an_on_demand_launch_that_could_have_been_spot_is_logged(
    net: Network, provider: InstanceProvider, caplog: pytest.LogCaptureFixture
) -> None:
    # spot is allowed but no type offers it: the launch falls back to on-demand
    inst = provider.create(
        request(net, [on_demand("m5.large", 0.1)], reqs(ct=["spot", "on-demand"]))
    )
    assert inst.capacity_type == "on-demand"
    assert any(
        r.levelname == "ERROR"
        and "on-demand fallback" in r.getMessage()
        and "only has 1" in r.getMessage()
        for r in caplog.records
    )
    caplog.clear()
    provider.create(request(net, [on_demand("m5.large", 0.1)], reqs(ct=["on-demand"])))
    assert not [r for r in caplog.records if "on-demand fallback" in r.getMessage()]


def test_launches_are_truncated_to_the_cheapest_types(
    clients: AWSClients, stubbed: Stubber, provider: InstanceProvider
) -> None:
    many = [
        on_demand(f"t{i}.large", 1.0 + i, zones=["us-west-2a"])
        for i in range(MAX_INSTANCE_TYPES + 5)
    ]
    _template_exists(stubbed)
    seen: list[dict[str, Any]] = []

    def capture(params: dict[str, Any], **_: Any) -> None:
        seen.append(params)

    clients.ec2.meta.events.register("provide-client-params.ec2.CreateFleet", capture)
    stubbed.add_response(
        "create_fleet",
        {"Errors": [_fleet_error("InsufficientInstanceCapacity", "t0.large", "us-west-2a")]},
        None,
    )
    with pytest.raises(InsufficientCapacityError):
        provider.create(request(FAKE_NET, many))
    overrides = seen[0]["LaunchTemplateConfigs"][0]["Overrides"]
    assert len(overrides) == MAX_INSTANCE_TYPES
    assert {o["InstanceType"] for o in overrides} == {
        f"t{i}.large" for i in range(MAX_INSTANCE_TYPES)
    }


def test_tags_refuse_keys_karpenter_sets() -> None:
    with pytest.raises(TagError, match=re.escape("karpenter.sh/nodepool")):
        launch_tags(CLUSTER, "default", {"karpenter.sh/nodepool": "x"}, "p")
    with pytest.raises(TagError, match=re.escape("kubernetes.io/cluster/other")):
        launch_tags(CLUSTER, "default", {"kubernetes.io/cluster/other": "owned"}, "p")


def test_provider_ids() -> None:
    assert parse_instance_id("aws:///us-west-2a/i-0abc123") == "i-0abc123"
    for bad in ("", "aws:///i-0abc", "kwok://node", "aws:///us-west-2a/node-1"):
        with pytest.raises(ValueError, match="aws:///<zone>/<id>"):
            parse_instance_id(bad)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("UnauthorizedOperation: no", "Unauthorized"),
        ("InvalidAMIID.NotFound: gone", "AMINotFound"),
        ("MaxSpotInstanceCountExceeded: x", "SpotQuotaExceeded"),
        ("VcpuLimitExceeded: x", "VCPULimitExceeded"),
        ("MaxFleetCountExceeded: x", "FleetQuotaExceeded"),
        ("Something: else", "LaunchFailed"),
    ],
)
def test_error_reasons(text: str, reason: str) -> None:
    assert reason_for(text)[0] == reason


def test_capacity_type_of_a_described_instance() -> None:
    base = {
        "InstanceId": "i-1",
        "InstanceType": "m5.large",
        "Placement": {"AvailabilityZone": "us-west-2a"},
        "State": {"Name": "running"},
    }
    assert Instance.from_ec2(base).capacity_type == "on-demand"
    assert Instance.from_ec2({**base, "SpotInstanceRequestId": "sir-1"}).capacity_type == "spot"
    assert Instance.from_ec2({**base, "InstanceLifecycle": "spot"}).capacity_type == "spot"
    reserved = {
        **base,
        "CapacityReservationId": "cr-1",
        "CapacityReservationSpecification": {
            "CapacityReservationPreference": "capacity-reservations-only"
        },
    }
    assert Instance.from_ec2(reserved).capacity_type == "reserved"
    assert (
        Instance.from_ec2(
            {
                **reserved,
                "CapacityReservationSpecification": {"CapacityReservationPreference": "open"},
            }
        ).capacity_type
        == "on-demand"
    )


def test_nodeclaim_from_an_instance() -> None:
    it = on_demand("m5.large", 0.1)
    launched = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    inst = Instance(
        id="i-1", instance_type="m5.large", zone="us-west-2a", state="running", capacity_type="on-demand",
        image_id="ami-1", tags={"karpenter.sh/nodepool": "default", NODECLAIM_TAG: "default-x"}, launch_time=launched,
    )  # fmt: skip
    nc = instance_to_nodeclaim(inst, it, now=datetime(2026, 2, 1, tzinfo=UTC), zone_id="usw2-az1")
    labels = nc.metadata.labels
    assert labels[wk.LABEL_INSTANCE_TYPE] == "m5.large" and labels[wk.LABEL_ARCH] == "amd64"
    assert (
        labels[wk.LABEL_TOPOLOGY_ZONE] == "us-west-2a"
        and labels["topology.k8s.aws/zone-id"] == "usw2-az1"
    )
    assert (
        labels[wk.CAPACITY_TYPE_LABEL_KEY] == "on-demand"
        and labels[wk.NODEPOOL_LABEL_KEY] == "default"
    )
    assert labels["karpenter.k8s.aws/instance-tenancy"] == "default"
    assert (
        nc.status is not None
        and nc.status.provider_id == "aws:///us-west-2a/i-1"
        and nc.status.image_id == "ami-1"
    )
    assert nc.status.capacity == {
        "cpu": "2",
        "memory": "8Gi",
        "pods": "29",
    }  # the zero gpu is dropped
    assert (
        nc.metadata.creation_timestamp == "2026-01-02T03:04:05Z"
        and nc.metadata.deletion_timestamp is None
    )
    gone = instance_to_nodeclaim(
        Instance(
            id="i-1",
            instance_type="m5.large",
            zone="us-west-2a",
            state="shutting-down",
            capacity_type="spot",
        ),
        None,
        now=datetime(2026, 2, 1, tzinfo=UTC),
    )
    assert gone.metadata.deletion_timestamp == "2026-02-01T00:00:00Z"
    assert gone.metadata.labels[wk.LABEL_INSTANCE_TYPE] == "m5.large"


def test_exotic_types_are_left_out_while_plain_ones_remain() -> None:
    plain = on_demand("m5.large", 0.1)
    gpu = attrs.evolve(
        on_demand("g4dn.xlarge", 0.05), capacity={"cpu": 4000, "nvidia.com/gpu": 1000}
    )
    metal = make_type("m5.metal", {("us-west-2a", "on-demand"): 0.09})
    sized = Requirements(Requirement.new("karpenter.k8s.aws/instance-size", IN, ["metal"]))
    metal = attrs.evolve(
        metal, requirements=Requirements(*metal.requirements.values(), *sized.values())
    )
    od = reqs(ct=["on-demand"])
    assert [it.name for it in exotic_filter(od, [plain, gpu, metal])] == ["m5.large"]
    assert [it.name for it in exotic_filter(od, [gpu, metal])] == ["g4dn.xlarge", "m5.metal"]
    flexible = Requirements(Requirement.new(wk.LABEL_INSTANCE_TYPE, IN, ["a", "b"], min_values=2))
    assert len(exotic_filter(flexible, [plain, gpu])) == 2


def test_spot_dearer_than_the_cheapest_on_demand_is_dropped() -> None:
    cheap_od = make_type("c5.large", {("us-west-2a", "on-demand"): 0.08})
    pricey_spot = make_type(
        "m5.large", {("us-west-2a", "spot"): 0.09, ("us-west-2a", "on-demand"): 0.1}
    )
    only_spot = make_type("r5.large", {("us-west-2a", "spot"): 0.12})
    both = reqs(ct=["spot", "on-demand"])
    got = {
        it.name: sorted(o.capacity_type for o in it.offerings)
        for it in spot_offering_filter(both, [cheap_od, pricey_spot, only_spot])
    }
    assert got == {"c5.large": ["on-demand"], "m5.large": ["on-demand"]}
    # spot only (or on-demand only) requested: nothing to compare with
    assert len(spot_offering_filter(reqs(ct=["spot"]), [cheap_od, pricey_spot, only_spot])) == 3
