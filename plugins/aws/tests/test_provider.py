"""AWSCloudProvider end to end on the in-memory API server and moto's EC2: an EC2NodeClass
resolved by its status controller, a NodeClaim launched through ``create``, found by
``get``/``list``, drifted when its security groups change, and terminated by ``delete``;
plus the NodeClass-resolution errors of ``create`` and ``get_instance_types``."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from botocore.stub import Stubber
from karpenter_aws import labels as aws_labels
from karpenter_aws.clients import AWSClients
from karpenter_aws.instancetypes import InstanceTypeProvider, describe_catalogue
from karpenter_aws.nodeclass import (
    HASH_ANNOTATION,
    HASH_VERSION,
    HASH_VERSION_ANNOTATION,
    NODECLASS_RESOURCE,
    SubnetStatus,
)
from karpenter_aws.nodeclass_status import NodeClassStatusReconciler
from karpenter_aws.pricing import PricingProvider
from karpenter_aws.provider import (
    AWSCloudProvider,
    _Refresh,
    _subnet_per_zone,
    _Tagging,
    _tenancy,
)
from karpenter_aws.settings import AWSSettings

from karpenter_core.apis import labels as wk
from karpenter_core.apis.v1 import NodeClaim, NodePool
from karpenter_core.cloudprovider.errors import (
    CreateError,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
)
from karpenter_core.cloudprovider.unavailable import UnavailableOfferings
from karpenter_core.kube.client import create_with_status
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import ObjectKey, Result
from karpenter_core.scheduling.requirements import Requirement, Requirements
from karpenter_core.sim.apiserver import InMemoryApiServer

CLUSTER = "demo"
DISCOVERY = {"karpenter.sh/discovery": CLUSTER}
ROLE = "KarpenterNodeRole-demo"
ALLOWED = ("m5.large", "c5.large")
PRICES = {"m5.large": 0.096, "c5.large": 0.085, "m5.xlarge": 0.192}


def _tags(tags: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in tags.items()]


class Env:
    """moto seeded with a VPC (two discoverable subnets), two security groups, an AMI and
    the node role; an in-memory cluster for the EC2NodeClass and a NodePool."""

    def __init__(self, clients: AWSClients, tmp: Path) -> None:
        self.clients = clients
        ec2 = clients.ec2
        self.vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        self.subnets = {
            zone: ec2.create_subnet(
                VpcId=self.vpc,
                CidrBlock=f"10.0.{i}.0/24",
                AvailabilityZone=zone,
                TagSpecifications=[{"ResourceType": "subnet", "Tags": _tags(DISCOVERY)}],
            )["Subnet"]["SubnetId"]
            for i, zone in enumerate(("us-west-2a", "us-west-2b"))
        }
        self.nodes_sg = ec2.create_security_group(
            GroupName="nodes", Description="n", VpcId=self.vpc
        )["GroupId"]
        self.other_sg = ec2.create_security_group(
            GroupName="other", Description="o", VpcId=self.vpc
        )["GroupId"]
        images = ec2.describe_images(
            Owners=["amazon"],
            Filters=[
                {"Name": "name", "Values": ["al2022-ami-*"]},
                {"Name": "architecture", "Values": ["x86_64"]},
            ],
        )["Images"]
        self.ami = sorted(i["ImageId"] for i in images)[0]
        clients.iam.create_role(
            RoleName=ROLE,
            AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
        )
        clients.eks.create_cluster(
            name=CLUSTER,
            roleArn="arn:aws:iam::123456789012:role/demo-cluster",
            resourcesVpcConfig={"subnetIds": sorted(self.subnets.values())},
        )
        self.cidr = clients.eks.describe_cluster(name=CLUSTER)["cluster"][
            "kubernetesNetworkConfig"
        ]["serviceIpv4Cidr"]
        prices = tmp / "prices.json"
        prices.write_text(json.dumps(PRICES))
        self.settings = AWSSettings(
            cluster_name=CLUSTER,
            cluster_endpoint="https://k8s.example",
            price_list_file=str(prices),
        )
        self.clock = VirtualClock()
        self.server = InMemoryApiServer(self.clock)
        self.recorder = EventRecorder(self.clock)
        self.status = NodeClassStatusReconciler(
            self.server,
            self.clock,
            self.recorder,
            clients,
            self.settings,
            kubernetes_version="1.31",
        )
        # a catalogue of the few types these tests use keeps them fast (the full one is
        # the catalogue's tests' business; test_without_a_cluster... reads it whole)
        unavailable = UnavailableOfferings(self.clock)
        pricing = PricingProvider(clients, self.settings, self.clock)
        catalogue = InstanceTypeProvider(
            clients,
            self.settings,
            pricing,
            unavailable,
            self.clock,
            catalogue=describe_catalogue(clients, sorted(PRICES)),
        )
        self.provider = AWSCloudProvider(
            clients,
            self.settings,
            self.server,
            self.clock,
            self.recorder,
            unavailable=unavailable,
            pricing=pricing,
            instance_types=catalogue,
        )

    def nodeclass(self, name: str = "default", **spec: Any) -> None:
        body = {
            "subnetSelectorTerms": [{"tags": DISCOVERY}],
            "securityGroupSelectorTerms": [{"id": self.nodes_sg}],
            "amiFamily": "AL2023",
            "amiSelectorTerms": [{"id": self.ami}],
            "role": ROLE,
            **spec,
        }
        self.server.create(
            {
                "apiVersion": "karpenter.k8s.aws/v1",
                "kind": "EC2NodeClass",
                "metadata": {"name": name},
                "spec": body,
            }
        )
        self.reconcile(name)

    def as_ec2_would(self, instance_id: str) -> None:
        """Give the instance its launch template's security groups, as EC2 does (moto's
        CreateFleet ignores them)."""
        self.clients.ec2.modify_instance_attribute(InstanceId=instance_id, Groups=[self.nodes_sg])

    def reconcile(self, name: str = "default") -> None:
        self.status.reconcile(ObjectKey("", name))

    def nodepool(
        self,
        name: str = "default",
        nodeclass: str = "default",
        *,
        instance_types: Sequence[str] = ALLOWED,
        capacity_types: Sequence[str] = ("on-demand",),
    ) -> NodePool:
        obj = self.server.create(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "metadata": {"name": name},
                "spec": {
                    "template": {
                        "spec": {
                            "nodeClassRef": {
                                "group": "karpenter.k8s.aws",
                                "kind": "EC2NodeClass",
                                "name": nodeclass,
                            },
                            "requirements": [
                                {
                                    "key": wk.LABEL_INSTANCE_TYPE,
                                    "operator": "In",
                                    "values": list(instance_types),
                                },
                                {
                                    "key": wk.CAPACITY_TYPE_LABEL_KEY,
                                    "operator": "In",
                                    "values": list(capacity_types),
                                },
                            ],
                        }
                    }
                },
            }
        )
        return NodePool.from_dict(obj)


def nodeclaim(
    name: str = "default-abcde", nodeclass: str = "default", pool: str = "default"
) -> NodeClaim:
    return NodeClaim.from_dict(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {"name": name, "labels": {wk.NODEPOOL_LABEL_KEY: pool}},
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": nodeclass,
                },
                "requirements": [
                    {"key": wk.LABEL_INSTANCE_TYPE, "operator": "In", "values": list(ALLOWED)},
                    {"key": wk.CAPACITY_TYPE_LABEL_KEY, "operator": "In", "values": ["on-demand"]},
                ],
                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
            },
        }
    )


@pytest.fixture(autouse=True)
def _aws_labels() -> Iterator[None]:
    """The AWS well-known labels, as selecting the provider (get_cloud_provider) adds them."""
    saved = set(wk.WELL_KNOWN_LABELS)
    wk.WELL_KNOWN_LABELS.update(aws_labels.WELL_KNOWN_LABELS)
    yield
    wk.WELL_KNOWN_LABELS.clear()
    wk.WELL_KNOWN_LABELS.update(saved)


@pytest.fixture
def env(clients: AWSClients, tmp_path: Path) -> Env:
    return Env(clients, tmp_path)


def tags_of(ec2: Any, instance_id: str) -> dict[str, str]:
    inst = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
    return {t["Key"]: t["Value"] for t in inst.get("Tags", [])}


def test_launch_find_drift_and_terminate(env: Env) -> None:
    env.nodeclass()
    pool = env.nodepool()
    types = {it.name: it for it in env.provider.get_instance_types(pool)}
    assert set(ALLOWED) <= set(types)

    launched = env.provider.create(nodeclaim())

    assert launched.status is not None and launched.status.provider_id
    pid = launched.status.provider_id
    instance_id = pid.rsplit("/", 1)[1]
    labels = launched.metadata.labels
    assert labels[wk.LABEL_INSTANCE_TYPE] in ALLOWED
    assert (
        labels[wk.LABEL_TOPOLOGY_ZONE] in env.subnets
        and pid == f"aws:///{labels[wk.LABEL_TOPOLOGY_ZONE]}/{instance_id}"
    )
    assert (
        labels[wk.CAPACITY_TYPE_LABEL_KEY] == "on-demand"
        and labels[wk.NODEPOOL_LABEL_KEY] == "default"
    )
    assert launched.status.image_id == env.ami
    assert launched.status.allocatable and launched.status.capacity["cpu"] == "2"
    assert launched.metadata.annotations[HASH_VERSION_ANNOTATION] == HASH_VERSION
    assert launched.metadata.annotations[HASH_ANNOTATION]
    profile = env.server.get(NODECLASS_RESOURCE, "default")["status"]["instanceProfile"]
    assert launched.metadata.annotations["karpenter.k8s.aws/instance-profile-name"] == profile
    tags = tags_of(env.clients.ec2, instance_id)
    # the NodeClaim's name is not a launch tag (nodeclaim.tagging adds it), as upstream
    assert "karpenter.sh/nodeclaim" not in tags and tags["karpenter.sh/nodepool"] == "default"
    assert (
        tags["karpenter.k8s.aws/ec2nodeclass"] == "default"
        and tags["eks:eks-cluster-name"] == CLUSTER
    )
    assert tags[f"kubernetes.io/cluster/{CLUSTER}"] == "owned"

    got = env.provider.get(pid)
    assert got.status is not None and got.status.provider_id == pid
    assert got.metadata.labels[wk.LABEL_INSTANCE_TYPE] == labels[wk.LABEL_INSTANCE_TYPE]
    assert [
        (n.metadata.name, n.status.provider_id if n.status else None) for n in env.provider.list()
    ] == [(None, pid)]

    env.as_ec2_would(instance_id)
    assert env.provider.is_drifted(launched) == ""
    ncobj = env.server.get(NODECLASS_RESOURCE, "default")
    ncobj["spec"]["securityGroupSelectorTerms"] = [{"id": env.other_sg}]
    env.server.update(ncobj)
    env.reconcile()
    assert env.provider.is_drifted(launched) == "SecurityGroupDrift"

    env.provider.delete(launched)
    state = env.clients.ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0][
        "Instances"
    ][0]["State"]
    assert state["Name"] in ("shutting-down", "terminated")
    with pytest.raises(NodeClaimNotFoundError):
        env.provider.get(pid)
    with pytest.raises(NodeClaimNotFoundError):
        env.provider.delete(launched)
    assert env.provider.list() == []


def test_changed_nodeclass_hash_is_nodeclass_drift_and_a_foreign_image_is_ami_drift(
    env: Env,
) -> None:
    env.nodeclass()
    env.nodepool()
    launched = env.provider.create(nodeclaim())
    assert launched.status is not None and launched.status.provider_id
    env.as_ec2_would(launched.status.provider_id.rsplit("/", 1)[1])
    stale = launched.metadata.annotations | {HASH_ANNOTATION: "0"}
    old = NodeClaim.from_dict(
        launched.to_dict() | {"metadata": {**launched.to_dict()["metadata"], "annotations": stale}}
    )
    assert env.provider.is_drifted(old) == "NodeClassDrift"
    other_version = stale | {HASH_VERSION_ANNOTATION: "v1"}
    old = NodeClaim.from_dict(
        launched.to_dict()
        | {"metadata": {**launched.to_dict()["metadata"], "annotations": other_version}}
    )
    assert env.provider.is_drifted(old) == ""  # hashes of another version are not compared
    foreign = launched.to_dict()
    foreign["status"]["imageID"] = "ami-0000000000"
    assert env.provider.is_drifted(NodeClaim.from_dict(foreign)) == "AMIDrift"
    orphan = launched.to_dict()
    orphan["metadata"]["labels"][wk.NODEPOOL_LABEL_KEY] = "gone"
    assert env.provider.is_drifted(NodeClaim.from_dict(orphan)) == ""


def test_missing_nodeclass_is_insufficient_capacity_and_no_instance_types(env: Env) -> None:
    pool = env.nodepool(nodeclass="missing")
    with pytest.raises(InsufficientCapacityError, match="'missing' not found"):
        env.provider.create(nodeclaim(nodeclass="missing"))
    assert env.provider.get_instance_types(pool) == []
    assert any(e.reason == "FailedResolveNodeClass" for e in env.recorder.events)


def _unresolved_nodeclass(
    env: Env, status: dict[str, Any] | None, generation_bump: bool = False
) -> None:
    obj = env.server.create(
        {
            "apiVersion": "karpenter.k8s.aws/v1",
            "kind": "EC2NodeClass",
            "metadata": {"name": "default"},
            "spec": {
                "subnetSelectorTerms": [{"tags": DISCOVERY}],
                "securityGroupSelectorTerms": [{"tags": DISCOVERY}],
                "amiFamily": "AL2023",
                "amiSelectorTerms": [{"id": "ami-123"}],
                "role": ROLE,
            },
        }
    )
    if status is not None:
        obj["status"] = status
        env.server.update_status(obj)


def _ready(status: str, generation: int = 1) -> dict[str, Any]:
    return {
        "conditions": [
            {
                "type": "Ready",
                "status": status,
                "reason": "SubnetsNotFound" if status == "False" else status,
                "message": "no subnets" if status == "False" else "",
                "observedGeneration": generation,
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ]
    }


def test_not_ready_nodeclass(env: Env) -> None:
    _unresolved_nodeclass(env, _ready("False"))
    with pytest.raises(NodeClassNotReadyError, match="no subnets"):
        env.provider.create(nodeclaim())


def test_unknown_readiness_is_a_create_error(env: Env) -> None:
    _unresolved_nodeclass(env, None)
    with pytest.raises(CreateError) as e:
        env.provider.create(nodeclaim())
    assert e.value.condition_reason == "NodeClassReadinessUnknown"


def test_status_of_an_older_generation_is_not_ready(env: Env) -> None:
    _unresolved_nodeclass(env, _ready("True", generation=0))
    with pytest.raises(NodeClassNotReadyError, match="latest spec"):
        env.provider.create(nodeclaim())


def test_without_a_cluster_instance_types_are_listed_for_every_zone(
    clients: AWSClients, tmp_path: Path
) -> None:
    prices = tmp_path / "p.json"
    prices.write_text(json.dumps(PRICES))
    provider = AWSCloudProvider(
        clients, AWSSettings(cluster_name=CLUSTER, price_list_file=str(prices))
    )
    types = {it.name: it for it in provider.get_instance_types(None)}
    zones = {z["ZoneName"] for z in clients.ec2.describe_availability_zones()["AvailabilityZones"]}
    m5 = types["m5.large"]
    assert m5.requirements.get(wk.LABEL_TOPOLOGY_ZONE).values == frozenset(zones)
    priced = [o for o in m5.offerings if o.capacity_type == "on-demand"]
    assert {o.zone for o in priced} == zones and {o.price for o in priced} == {PRICES["m5.large"]}
    with pytest.raises(RuntimeError, match="cluster client"):
        provider.create(nodeclaim())


def test_the_plugin_registers_status_interruption_refresh_tagging_and_metrics(env: Env) -> None:
    from karpenter_aws import plugin

    from karpenter_core.operator.controllers import register_all
    from karpenter_core.plugins import PluginContributions

    manager = Manager(env.clock, env.server)
    ctx = ControllerContext(
        kube=env.server,
        clock=env.clock,
        cloud_provider=env.provider,
        recorder=env.recorder,
        plugins=PluginContributions(controllers=tuple(plugin.karpenter_controllers())),
    )
    reg = register_all(manager, ctx, packages=[])
    names = {c.name for c in manager.controllers}
    assert names == {
        "nodeclass.status",
        "interruption.instancestatus",
        "aws.catalogue.refresh",
        "nodeclaim.tagging",
        "aws.launchtemplate.cleanup",
        "cloudprovider.metrics",
        "capacityreservation.capacitytype",
        "capacityreservation.expiration",
    }
    # no interruption-queue setting: the queue poller is not needed, and says so
    assert ("interruption", "not needed with these settings") in reg.skipped


def test_the_plugin_controllers_stay_out_with_another_cloud_provider(env: Env) -> None:
    from karpenter_aws import plugin

    from karpenter_core.operator.controllers import register_all
    from karpenter_core.plugins import PluginContributions
    from karpenter_core.testing.fake import FakeCloudProvider

    manager = Manager(env.clock, env.server)
    ctx = ControllerContext(
        kube=env.server,
        clock=env.clock,
        cloud_provider=FakeCloudProvider(),  # type: ignore[arg-type]
        recorder=env.recorder,
        plugins=PluginContributions(controllers=tuple(plugin.karpenter_controllers())),
    )
    reg = register_all(manager, ctx, packages=[])
    assert manager.controllers == []
    assert {why for _, why in reg.skipped} == {"only with cloud provider aws"}


def test_the_launch_template_carries_the_nodeclass_and_nodeclaim(env: Env) -> None:
    env.server.create(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": "kube-system"},
            "spec": {"clusterIP": "10.100.0.10", "ports": [{"port": 53}]},
        }
    )
    env.nodeclass(tags={"team": "a"}, userData="#!/bin/bash\necho custom\n")
    env.nodepool()
    claim = nodeclaim().to_dict()
    claim["spec"]["taints"] = [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]
    claim["spec"]["requirements"][0]["values"] = ["m5.large"]  # one type: one template
    env.provider.create(NodeClaim.from_dict(claim))

    [lt] = env.clients.ec2.describe_launch_templates()["LaunchTemplates"]
    assert {t["Key"]: t["Value"] for t in lt["Tags"]}["team"] == "a"
    data = env.clients.ec2.describe_launch_template_versions(
        LaunchTemplateId=lt["LaunchTemplateId"]
    )["LaunchTemplateVersions"][0]["LaunchTemplateData"]
    status = env.server.get(NODECLASS_RESOURCE, "default")["status"]
    assert data["IamInstanceProfile"]["Name"] == status["instanceProfile"]
    assert data["ImageId"] == env.ami
    assert data["NetworkInterfaces"][0]["Groups"] == [env.nodes_sg]
    assert data["BlockDeviceMappings"][0]["DeviceName"] == "/dev/xvda"  # AL2023's default
    user_data = base64.b64decode(data["UserData"]).decode()
    assert "echo custom" in user_data and "apiServerEndpoint: https://k8s.example" in user_data
    assert f"cidr: {env.cidr}" in user_data  # from eks:DescribeCluster
    assert "- 10.100.0.10" in user_data  # clusterDNS from the kube-dns Service
    assert "key: gpu" in user_data and "key: karpenter.sh/unregistered" in user_data
    assert "karpenter.k8s.aws/ec2nodeclass=default" in user_data
    assert "karpenter.sh/nodepool=default" in user_data


def test_al2023_without_a_discoverable_service_cidr_is_a_create_error(env: Env) -> None:
    env.clients.eks.delete_cluster(name=CLUSTER)
    env.nodeclass()
    env.nodepool()
    with pytest.raises(CreateError) as e:
        env.provider.create(nodeclaim())
    assert e.value.condition_reason == "ClusterCIDRUnknown"
    assert env.clients.ec2.describe_launch_templates()["LaunchTemplates"] == []


def test_a_provider_id_of_another_cloud_is_not_found(env: Env) -> None:
    with pytest.raises(NodeClaimNotFoundError, match="aws:///<zone>/<id>"):
        env.provider.get("kwok://node-1")


class _Source:
    def __init__(self, fail: bool = False) -> None:
        self.calls = 0
        self.fail = fail

    def refresh(self) -> None:
        self.calls += 1
        if self.fail:
            raise RuntimeError("pricing:GetProducts denied")


def test_the_refresh_controller_refreshes_prices_and_types_every_12_hours() -> None:
    prices, types = _Source(), _Source()
    assert _Refresh(prices, types).reconcile() == Result.after(12 * 3600)
    assert (prices.calls, types.calls) == (1, 1)
    failing = _Source(fail=True)
    assert _Refresh(failing, types).reconcile() == Result.after(300)
    assert types.calls == 2  # a pricing failure does not skip the catalogue


def test_tagging_names_the_instance_after_its_node_once(env: Env) -> None:
    env.nodeclass()
    env.nodepool()
    launched = env.provider.create(nodeclaim()).to_dict()
    instance_id = launched["status"]["providerID"].rsplit("/", 1)[1]
    env.clients.ec2.delete_tags(Resources=[instance_id], Tags=[{"Key": "karpenter.sh/nodeclaim"}])
    claim = nodeclaim().to_dict()
    claim["status"] = {"providerID": launched["status"]["providerID"]}
    create_with_status(env.server, claim)
    tagging = _Tagging(env.server, env.provider.instances, CLUSTER)
    key = ObjectKey("", "default-abcde")

    assert tagging.reconcile(key) == Result()  # no Node yet: nothing to do
    assert "Name" not in tags_of(env.clients.ec2, instance_id)

    obj = env.server.get(("karpenter.sh/v1", "NodeClaim"), "default-abcde")
    obj["status"]["nodeName"] = "ip-10-0-0-1.us-west-2.compute.internal"
    env.server.update_status(obj)
    assert tagging.reconcile(key) == Result()
    tags = tags_of(env.clients.ec2, instance_id)
    assert tags["Name"] == "ip-10-0-0-1.us-west-2.compute.internal"
    assert (
        tags["karpenter.sh/nodeclaim"] == "default-abcde"
        and tags["eks:eks-cluster-name"] == CLUSTER
    )
    annotations = env.server.get(("karpenter.sh/v1", "NodeClaim"), "default-abcde")["metadata"][
        "annotations"
    ]
    assert annotations["karpenter.k8s.aws/tagged"] == "true"
    assert annotations["compatibility.karpenter.k8s.aws/cluster-name-tagged"] == "true"

    env.clients.ec2.delete_tags(Resources=[instance_id], Tags=[{"Key": "Name"}])
    assert tagging.reconcile(key) == Result()  # already marked tagged: left alone
    assert "Name" not in tags_of(env.clients.ec2, instance_id)


def test_drift_is_undecided_not_an_error_when_ec2_fails(env: Env) -> None:
    env.nodeclass()
    env.nodepool()
    launched = env.provider.create(nodeclaim())
    with Stubber(env.clients.ec2) as stub:
        stub.add_client_error("describe_instances", service_error_code="RequestLimitExceeded")
        assert env.provider.is_drifted(launched) == ""
        stub.assert_no_pending_responses()


def test_one_subnet_per_zone_skipping_subnets_out_of_addresses() -> None:
    subnets = (
        SubnetStatus("subnet-a1", "us-west-2a"),
        SubnetStatus("subnet-a2", "us-west-2a"),
        SubnetStatus("subnet-b1", "us-west-2b"),
    )
    unavailable = UnavailableOfferings(VirtualClock())
    assert _subnet_per_zone(subnets, unavailable) == {
        "us-west-2a": "subnet-a1",
        "us-west-2b": "subnet-b1",
    }
    unavailable.mark_subnet("subnet-a1")
    unavailable.mark_subnet("subnet-b1")
    # a zone whose every subnet is out of addresses keeps its first (its offerings are
    # unavailable anyway); one with another subnet uses that
    assert _subnet_per_zone(subnets, unavailable) == {
        "us-west-2a": "subnet-a2",
        "us-west-2b": "subnet-b1",
    }


def test_dedicated_tenancy_only_when_nothing_else_is_allowed() -> None:
    def tenancy(*values: str) -> str:
        reqs = Requirements()
        if values:
            reqs.add(Requirement.new("karpenter.k8s.aws/instance-tenancy", "In", list(values)))
        return _tenancy(reqs)

    assert tenancy() == "default"
    assert tenancy("dedicated") == "dedicated"
    assert tenancy("default", "dedicated") == "default"


def test_cluster_discovery_failures_are_retried_after_a_while_not_per_launch(env: Env) -> None:
    with Stubber(env.clients.eks) as stub:
        stub.add_client_error("describe_cluster", service_error_code="AccessDeniedException")
        info = env.provider._cluster_info()
        assert (info["endpoint"], info["cidr"]) == ("https://k8s.example", "")
        assert env.provider._cluster_info() == info  # no second call (none is stubbed)
        stub.assert_no_pending_responses()
    env.clock.advance(301)
    assert env.provider._cluster_info()["cidr"] == env.cidr  # asked again, moto answers


def test_the_fleet_context_unless_min_values_were_relaxed(env: Env) -> None:
    fleets: list[dict[str, Any]] = []
    env.clients.ec2.meta.events.register(
        "provide-client-params.ec2.CreateFleet", lambda params, **_: fleets.append(params)
    )
    env.nodeclass(context="cr-context-1")
    env.nodepool()
    env.provider.create(nodeclaim("a"))
    relaxed = nodeclaim("b").to_dict()
    relaxed["metadata"]["annotations"] = {"karpenter.sh/nodeclaim-min-values-relaxed": "true"}
    env.provider.create(NodeClaim.from_dict(relaxed))
    # (the EC2NodeClass validation's DryRun fleet is not a launch)
    launches = [f for f in fleets if not f.get("DryRun")]
    assert [f.get("Context") for f in launches] == ["cr-context-1", None]
