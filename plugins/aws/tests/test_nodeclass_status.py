"""The ``nodeclass.status`` controller against moto's server: subnets, security groups,
AMIs (ids, tags, names, SSM parameters, aliases), instance profiles, conditions, AWS
failures, the hash annotations and the termination finalizer (spec providers §1.1, §1.8;
upstream ``pkg/controllers/nodeclass/*_test.go``).

Aliases: moto's SSM cannot hold ``/aws/...`` names, so the end-to-end alias tests publish
the parameters under a custom prefix (``ssm_prefix``); one test pins the real
``/aws/service/...`` names with a botocore ``Stubber`` on the SSM client.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from ec2_dry_run import dry_run_create_fleet_as_ec2
from karpenter_aws.clients import AWSClients
from karpenter_aws.nodeclass import (
    FINALIZER,
    HASH_ANNOTATION,
    HASH_VERSION,
    HASH_VERSION_ANNOTATION,
    NODECLASS_RESOURCE,
    EC2NodeClass,
)
from karpenter_aws.nodeclass_status import (
    CONTROLLER_NAME,
    DEFAULT_REQUEUE,
    SUBNET_REQUEUE,
    TERMINATION_EVENT_INTERVAL,
    WATCHES,
    NodeClassStatusReconciler,
    instance_profile_path,
)
from karpenter_aws.settings import AWSSettings

from karpenter_core.kube.client import Conflict, NotFound
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import ObjectKey, Result
from karpenter_core.sim.apiserver import InMemoryApiServer

CLUSTER = "demo"
REGION = "us-west-2"
PREFIX = "/test/aws/service"
K8S = "1.31"
ROLE = "KarpenterNodeRole-demo"
DISCOVERY = {"karpenter.sh/discovery": CLUSTER}
KEY = ObjectKey("", "default")


def _tags(tags: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in tags.items()]


class World:
    """A VPC with two discoverable subnets of different sizes and one other, a tagged
    security group and a named one, two AMIs (amd64, arm64) and the node role."""

    def __init__(self, clients: AWSClients) -> None:
        ec2 = clients.ec2
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]

        def subnet(cidr: str, zone: str, tags: dict[str, str]) -> dict[str, Any]:
            spec = [{"ResourceType": "subnet", "Tags": _tags(tags)}] if tags else []
            return dict(
                ec2.create_subnet(
                    VpcId=vpc, CidrBlock=cidr, AvailabilityZone=zone, TagSpecifications=spec
                )["Subnet"]
            )

        self.small = subnet("10.0.1.0/26", "us-west-2a", DISCOVERY)
        self.large = subnet("10.0.2.0/24", "us-west-2b", DISCOVERY)
        self.other = subnet("10.0.3.0/24", "us-west-2c", {})
        self.sg = ec2.create_security_group(
            GroupName="nodes",
            Description="nodes",
            VpcId=vpc,
            TagSpecifications=[{"ResourceType": "security-group", "Tags": _tags(DISCOVERY)}],
        )["GroupId"]
        self.sg_named = ec2.create_security_group(
            GroupName="extra", Description="extra", VpcId=vpc
        )["GroupId"]
        self.amd64 = self._image(ec2, "x86_64")
        self.arm64 = self._image(ec2, "arm64")
        ec2.create_tags(Resources=[self.amd64, self.arm64], Tags=_tags(DISCOVERY))
        iam = clients.iam
        doc = json.dumps({"Version": "2012-10-17", "Statement": []})
        for role in (ROLE, "OtherRole"):
            iam.create_role(RoleName=role, AssumeRolePolicyDocument=doc)

    @staticmethod
    def _image(ec2: Any, arch: str) -> str:
        """One of moto's preloaded Amazon Linux AMIs of ``arch`` (registered images carry
        no architecture in moto)."""
        images = ec2.describe_images(
            Owners=["amazon"],
            Filters=[
                {"Name": "name", "Values": ["al2022-ami-*"]},
                {"Name": "architecture", "Values": [arch]},
            ],
        )["Images"]
        assert images, f"moto preloads no al2022 {arch} AMI"
        return str(sorted(images, key=lambda i: i["ImageId"])[0]["ImageId"])


class Env:
    def __init__(
        self, clients: AWSClients, settings: AWSSettings | None = None, **options: Any
    ) -> None:
        self.clients = clients
        self.world = World(clients)
        self.clock = VirtualClock()
        self.server = InMemoryApiServer(self.clock)
        self.recorder = EventRecorder(self.clock)
        self.settings = settings or AWSSettings(cluster_name=CLUSTER)
        options.setdefault("kubernetes_version", K8S)
        options.setdefault("ssm_prefix", PREFIX)
        self.reconciler = NodeClassStatusReconciler(
            self.server, self.clock, self.recorder, clients, self.settings, **options
        )

    def create(self, name: str = "default", **spec: Any) -> dict[str, Any]:
        body: dict[str, Any] = {
            "subnetSelectorTerms": [{"tags": DISCOVERY}],
            "securityGroupSelectorTerms": [{"tags": DISCOVERY}],
            "amiFamily": "AL2023",
            "amiSelectorTerms": [{"tags": DISCOVERY}],
            "role": ROLE,
        }
        body.update(spec)
        body = {k: v for k, v in body.items() if v is not None}
        return self.server.create(
            {
                "apiVersion": "karpenter.k8s.aws/v1",
                "kind": "EC2NodeClass",
                "metadata": {"name": name},
                "spec": body,
            }
        )

    def reconcile(self, name: str = "default") -> Result:
        return self.reconciler.reconcile(ObjectKey("", name))

    def get(self, name: str = "default") -> dict[str, Any]:
        return self.server.get(NODECLASS_RESOURCE, name)

    def condition(self, type_: str, name: str = "default") -> dict[str, Any]:
        for c in self.get(name)["status"]["conditions"]:
            if c["type"] == type_:
                return dict(c)
        raise AssertionError(f"no {type_} condition")

    def profiles(self, uid: str) -> list[dict[str, Any]]:
        path = instance_profile_path(REGION, CLUSTER, uid)
        return list(self.clients.iam.list_instance_profiles(PathPrefix=path)["InstanceProfiles"])

    def warnings(self) -> list[tuple[str, str]]:
        return [(e.reason, e.message) for e in self.recorder.events if e.type == "Warning"]

    def nodeclaim(self, name: str, nodeclass: str = "default", **annotations: str) -> None:
        self.server.create(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodeClaim",
                "metadata": {"name": name, "annotations": annotations},
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": nodeclass,
                    },
                    "requirements": [],
                },
            }
        )


_HOOKS: list[tuple[Any, str, Callable[..., Any]]] = []


def hook(client: Any, event: str, handler: Callable[..., Any]) -> None:
    """Register a botocore event handler for this test only (the clients are shared by
    the module's tests, so ``clients`` unregisters these after each test)."""
    client.meta.events.register(event, handler)
    _HOOKS.append((client, event, handler))


@pytest.fixture(scope="module")
def module_clients(moto_endpoint: str) -> Iterator[AWSClients]:
    """One set of boto3 clients for the module: creating seven clients costs more than
    most of these tests."""
    with pytest.MonkeyPatch.context() as mp:
        for k, v in (
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("AWS_SESSION_TOKEN", "testing"),
            ("AWS_DEFAULT_REGION", REGION),
            ("AWS_EC2_METADATA_DISABLED", "true"),
        ):
            mp.setenv(k, v)
        mp.delenv("AWS_PROFILE", raising=False)
        made = AWSClients.create(REGION, endpoint_url=moto_endpoint)
        dry_run_create_fleet_as_ec2(made.ec2)  # moto would launch
        yield made


@pytest.fixture
def clients(module_clients: AWSClients, moto_endpoint: str, aws_env: None) -> Iterator[AWSClients]:
    """Fresh moto state (reset) and the module's clients; test hooks removed afterwards."""
    req = urllib.request.Request(f"{moto_endpoint}/moto-api/reset", method="POST")
    urllib.request.urlopen(req, timeout=10).close()
    try:
        yield module_clients
    finally:
        while _HOOKS:
            client, event, handler = _HOOKS.pop()
            client.meta.events.unregister(event, handler)


@pytest.fixture
def env(clients: AWSClients) -> Env:
    return Env(clients)


def put_param(clients: AWSClients, name: str, value: str) -> None:
    clients.ssm.put_parameter(Name=name, Value=value, Type="String")


# --- resolution --------------------------------------------------------------------------


def test_resolves_subnets_groups_amis_and_profile_and_becomes_ready(env: Env) -> None:
    env.create()
    assert env.reconcile() == Result.after(SUBNET_REQUEUE)
    obj = env.get()
    status = obj["status"]
    w = env.world
    # most free IPs first: the /24 before the /26; the untagged subnet is not selected
    assert [s["id"] for s in status["subnets"]] == [w.large["SubnetId"], w.small["SubnetId"]]
    assert status["subnets"][0] == {
        "id": w.large["SubnetId"],
        "zone": "us-west-2b",
        "zoneID": w.large["AvailabilityZoneId"],
    }
    assert status["securityGroups"] == [{"id": w.sg, "name": "nodes"}]
    arch = {a["id"]: a["requirements"] for a in status["amis"]}
    assert arch == {
        w.amd64: [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
        w.arm64: [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}],
    }
    uid = obj["metadata"]["uid"]
    (profile,) = env.profiles(uid)
    assert status["instanceProfile"] == profile["InstanceProfileName"]
    assert profile["InstanceProfileName"].startswith(f"{CLUSTER}_")
    assert [r["RoleName"] for r in profile["Roles"]] == [ROLE]
    tags = {t["Key"]: t["Value"] for t in profile["Tags"]}
    assert tags == {
        f"kubernetes.io/cluster/{CLUSTER}": "owned",
        "eks:eks-cluster-name": CLUSTER,
        "karpenter.k8s.aws/ec2nodeclass": "default",
        "topology.kubernetes.io/region": REGION,
    }
    generation = obj["metadata"]["generation"]
    for type_ in (
        "SubnetsReady",
        "SecurityGroupsReady",
        "AMIsReady",
        "InstanceProfileReady",
        "ValidationSucceeded",
        "Ready",
    ):
        cond = env.condition(type_)
        assert (cond["status"], cond["observedGeneration"]) == ("True", generation), cond
    nc = EC2NodeClass.from_dict(obj)
    assert nc.ready() is True
    assert nc.zones() == frozenset({"us-west-2a", "us-west-2b"})


def test_finalizer_and_hash_annotations_are_added(env: Env) -> None:
    env.create(tags={"team": "a"})
    env.reconcile()
    obj = env.get()
    assert FINALIZER in obj["metadata"]["finalizers"]
    ann = obj["metadata"]["annotations"]
    assert ann[HASH_VERSION_ANNOTATION] == HASH_VERSION
    assert ann[HASH_ANNOTATION] == EC2NodeClass.from_dict(obj).hash()


def test_hash_covers_the_cluster_ca_bundle(clients: AWSClients) -> None:
    env = Env(clients, AWSSettings(cluster_name=CLUSTER, cluster_ca_bundle="Q0E="))
    env.create()
    env.reconcile()
    obj = env.get()
    nc = EC2NodeClass.from_dict(obj)
    assert obj["metadata"]["annotations"][HASH_ANNOTATION] == nc.hash("Q0E=") != nc.hash()


def test_a_second_reconcile_changes_nothing(env: Env) -> None:
    env.create()
    env.reconcile()
    before = env.get()
    env.reconcile()
    after = env.get()
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert len(env.profiles(after["metadata"]["uid"])) == 1


def test_selectors_by_id_and_name(env: Env) -> None:
    w = env.world
    env.create(
        subnetSelectorTerms=[{"id": w.other["SubnetId"]}],
        securityGroupSelectorTerms=[{"name": "extra"}, {"id": w.sg}],
        amiSelectorTerms=[{"id": w.arm64}],
    )
    env.reconcile()
    status = env.get()["status"]
    assert [s["id"] for s in status["subnets"]] == [w.other["SubnetId"]]
    assert {g["id"] for g in status["securityGroups"]} == {w.sg, w.sg_named}
    assert [g["id"] for g in status["securityGroups"]] == sorted([w.sg, w.sg_named])
    assert [a["id"] for a in status["amis"]] == [w.arm64]


def test_wildcard_tag_value_matches_any_value(env: Env) -> None:
    env.create(subnetSelectorTerms=[{"tags": {"karpenter.sh/discovery": "*"}}])
    env.reconcile()
    assert len(env.get()["status"]["subnets"]) == 2


def test_ami_by_name_and_owner(env: Env) -> None:
    name = env.clients.ec2.describe_images(ImageIds=[env.world.arm64])["Images"][0]["Name"]
    env.create(amiSelectorTerms=[{"name": name, "owner": "amazon"}])
    env.reconcile()
    assert [a["id"] for a in env.get()["status"]["amis"]] == [env.world.arm64]


def test_ami_by_ssm_parameter(env: Env) -> None:
    put_param(env.clients, "/my/ami", env.world.amd64)
    put_param(env.clients, "/my/garbage", "not-an-ami")
    env.create(amiSelectorTerms=[{"ssmParameter": "/my/ami"}, {"ssmParameter": "/my/garbage"}])
    env.reconcile()
    assert [a["id"] for a in env.get()["status"]["amis"]] == [env.world.amd64]


def test_nothing_matches_sets_the_not_found_reasons(env: Env) -> None:
    nothing = {"tags": {"no": "match"}}
    env.create(
        subnetSelectorTerms=[nothing],
        securityGroupSelectorTerms=[nothing],
        amiSelectorTerms=[nothing],
    )
    assert env.reconcile() == Result.after(SUBNET_REQUEUE)
    assert env.condition("SubnetsReady")["reason"] == "SubnetsNotFound"
    assert env.condition("SecurityGroupsReady")["reason"] == "SecurityGroupsNotFound"
    assert env.condition("AMIsReady")["reason"] == "AMINotFound"
    validation = env.condition("ValidationSucceeded")
    assert (validation["status"], validation["reason"]) == ("False", "DependenciesNotReady")
    ready = env.condition("Ready")
    assert ready["status"] == "False"
    status = env.get()["status"]
    assert "subnets" not in status and "amis" not in status
    assert EC2NodeClass.from_dict(env.get()).ready() is False


def test_status_empties_when_the_selection_stops_matching(env: Env) -> None:
    env.create()
    env.reconcile()
    assert env.get()["status"]["subnets"]
    obj = env.get()
    obj["spec"]["subnetSelectorTerms"] = [{"tags": {"no": "match"}}]
    env.server.update(obj)
    env.reconcile()
    obj = env.get()
    assert "subnets" not in obj["status"]
    cond = env.condition("SubnetsReady")
    assert (cond["status"], cond["observedGeneration"]) == ("False", obj["metadata"]["generation"])


# --- aliases -------------------------------------------------------------------------------


def al2023_param(arch: str, variant: str, k8s: str = K8S, prefix: str = PREFIX) -> str:
    return (
        f"{prefix}/eks/optimized-ami/{k8s}/amazon-linux-2023/{arch}/{variant}/recommended/image_id"
    )


def test_alias_resolves_through_the_published_parameters(env: Env) -> None:
    w = env.world
    put_param(env.clients, al2023_param("x86_64", "standard"), w.amd64)
    put_param(env.clients, al2023_param("arm64", "standard"), w.arm64)
    put_param(env.clients, al2023_param("arm64", "nvidia"), w.arm64)
    env.create(amiFamily=None, amiSelectorTerms=[{"alias": "al2023@latest"}])
    env.reconcile()
    amis = env.get()["status"]["amis"]
    by_reqs = {json.dumps(a["requirements"], sort_keys=True): a["id"] for a in amis}
    no_gpu = [
        {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "DoesNotExist"},
        {"key": "karpenter.k8s.aws/instance-accelerator-count", "operator": "DoesNotExist"},
    ]

    def reqs(arch: str, extra: list[dict[str, Any]]) -> str:
        all_ = [*extra, {"key": "kubernetes.io/arch", "operator": "In", "values": [arch]}]
        all_.sort(key=lambda r: (len(r["key"]), r["key"]))
        return json.dumps(all_, sort_keys=True)

    gpu = [{"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Exists"}]
    assert by_reqs == {
        reqs("amd64", no_gpu): w.amd64,
        reqs("arm64", no_gpu): w.arm64,
        reqs("arm64", gpu): w.arm64,
    }
    assert env.condition("AMIsReady")["status"] == "True"


def test_alias_with_no_published_parameter_is_ami_not_found(env: Env) -> None:
    env.create(amiFamily=None, amiSelectorTerms=[{"alias": "al2023@latest"}])
    env.reconcile()
    assert env.condition("AMIsReady")["reason"] == "AMINotFound"


def test_alias_uses_the_real_public_parameter_names(clients: AWSClients) -> None:
    env = Env(clients, ssm_prefix="/aws/service")
    names = [
        al2023_param(arch, variant, prefix="/aws/service")
        for arch, variant in (
            ("x86_64", "standard"),
            ("x86_64", "nvidia"),
            ("x86_64", "neuron"),
            ("arm64", "standard"),
            ("arm64", "nvidia"),
        )
    ]
    with Stubber(clients.ssm) as stub:
        for name in names:
            if name.endswith("arm64/standard/recommended/image_id"):
                stub.add_response(
                    "get_parameter",
                    {"Parameter": {"Name": name, "Value": env.world.arm64}},
                    {"Name": name},
                )
            else:
                stub.add_client_error(
                    "get_parameter", "ParameterNotFound", expected_params={"Name": name}
                )
        env.create(amiFamily=None, amiSelectorTerms=[{"alias": "al2023@latest"}])
        env.reconcile()
        stub.assert_no_pending_responses()
    assert [a["id"] for a in env.get()["status"]["amis"]] == [env.world.arm64]


def test_pinned_alias_version_names_the_versioned_parameter(clients: AWSClients) -> None:
    env = Env(clients, ssm_prefix="/aws/service")
    name = (
        f"/aws/service/eks/optimized-ami/{K8S}/amazon-linux-2023/x86_64/standard/"
        f"amazon-eks-node-al2023-x86_64-standard-{K8S}-v20240807/image_id"
    )
    with Stubber(clients.ssm) as stub:
        stub.add_response(
            "get_parameter",
            {"Parameter": {"Name": name, "Value": env.world.amd64}},
            {"Name": name},
        )
        for _ in range(4):
            stub.add_client_error("get_parameter", "ParameterNotFound")
        env.create(amiFamily=None, amiSelectorTerms=[{"alias": "al2023@v20240807"}])
        env.reconcile()
    assert [a["id"] for a in env.get()["status"]["amis"]] == [env.world.amd64]


def test_al2_alias_on_kubernetes_1_33_is_unsupported(clients: AWSClients) -> None:
    env = Env(clients, kubernetes_version="1.33")
    env.create(amiFamily=None, amiSelectorTerms=[{"alias": "al2@latest"}])
    env.reconcile()
    cond = env.condition("AMIsReady")
    assert (cond["status"], cond["reason"]) == ("False", "UnsupportedAlias")
    assert "1.33" in cond["message"]


def test_kubernetes_version_comes_from_eks_when_not_given(clients: AWSClients) -> None:
    env = Env(clients, kubernetes_version=None)
    clients.eks.create_cluster(
        name=CLUSTER,
        version="1.30",
        roleArn="arn:aws:iam::123456789012:role/eks",
        resourcesVpcConfig={"subnetIds": [env.world.small["SubnetId"]]},
    )
    put_param(clients, al2023_param("x86_64", "standard", k8s="1.30"), env.world.amd64)
    calls: list[str] = []
    hook(clients.eks, "before-call.eks.DescribeCluster", lambda **_: calls.append("call"))
    env.create(amiFamily=None, amiSelectorTerms=[{"alias": "al2023@latest"}])
    env.reconcile()
    assert [a["id"] for a in env.get()["status"]["amis"]] == [env.world.amd64]
    env.reconcile()
    assert len(calls) == 1  # the version is kept for a while
    env.clock.advance(DEFAULT_REQUEUE)
    env.reconcile()
    assert len(calls) == 2


# --- instance profiles -------------------------------------------------------------------


def test_named_instance_profile_is_looked_up(env: Env) -> None:
    env.clients.iam.create_instance_profile(InstanceProfileName="mine")
    env.create(role=None, instanceProfile="mine")
    env.reconcile()
    assert env.get()["status"]["instanceProfile"] == "mine"
    assert env.condition("InstanceProfileReady")["status"] == "True"


def test_missing_named_instance_profile_is_not_ready(env: Env) -> None:
    env.create(role=None, instanceProfile="missing")
    env.reconcile()
    cond = env.condition("InstanceProfileReady")
    assert (cond["status"], cond["reason"]) == ("False", "InstanceProfileNotFound")
    assert env.condition("Ready")["status"] == "False"


def test_missing_role_is_a_false_condition_with_the_aws_code(env: Env) -> None:
    env.create(role="NoSuchRole")
    assert env.reconcile() == Result.after(SUBNET_REQUEUE)
    cond = env.condition("InstanceProfileReady")
    assert (cond["status"], cond["reason"]) == ("False", "InstanceProfileCreationFailed")
    assert "NoSuchEntity" in cond["message"]
    assert any(r == "InstanceProfileCreationFailed" for r, _ in env.warnings())
    # the half-made profile was removed
    assert env.profiles(env.get()["metadata"]["uid"]) == []


def test_role_change_creates_a_new_profile(env: Env) -> None:
    env.create()
    env.reconcile()
    first = env.get()["status"]["instanceProfile"]
    obj = env.get()
    obj["spec"]["role"] = "OtherRole"
    env.server.update(obj)
    env.reconcile()
    second = env.get()["status"]["instanceProfile"]
    assert second != first
    out = env.clients.iam.get_instance_profile(InstanceProfileName=second)["InstanceProfile"]
    assert [r["RoleName"] for r in out["Roles"]] == ["OtherRole"]


# --- AWS failures and bad input ----------------------------------------------------------


def _fail(operation: str, code: str) -> Any:
    def handler(**_: Any) -> None:
        raise ClientError({"Error": {"Code": code, "Message": "denied by test"}}, operation)

    return handler


def test_aws_error_is_a_false_condition_and_a_warning_not_a_crash(env: Env) -> None:
    hook(
        env.clients.ec2,
        "before-call.ec2.DescribeSubnets",
        _fail("DescribeSubnets", "UnauthorizedOperation"),
    )
    env.create()
    assert env.reconcile() == Result.after(SUBNET_REQUEUE)
    cond = env.condition("SubnetsReady")
    assert (cond["status"], cond["reason"]) == ("False", "SubnetsDiscoveryFailed")
    assert "UnauthorizedOperation" in cond["message"]
    assert any("UnauthorizedOperation" in m for _, m in env.warnings())
    # the rest still resolved
    assert env.condition("SecurityGroupsReady")["status"] == "True"
    assert env.condition("Ready")["status"] == "False"


def test_ami_lookup_error_names_the_code(env: Env) -> None:
    hook(
        env.clients.ec2,
        "before-call.ec2.DescribeImages",
        _fail("DescribeImages", "RequestLimitExceeded"),
    )
    env.create()
    env.reconcile()
    cond = env.condition("AMIsReady")
    assert cond["status"] == "False" and "RequestLimitExceeded" in cond["message"]


def test_unparseable_spec_fails_validation_naming_the_field(env: Env) -> None:
    env.create(amiSelectorTerms=[{"alias": "ubuntu@latest"}], amiFamily=None)
    assert env.reconcile() == Result()
    cond = env.condition("ValidationSucceeded")
    assert (cond["status"], cond["reason"]) == ("False", "InvalidSpec")
    assert "spec.amiSelectorTerms[0].alias" in cond["message"]
    assert env.condition("Ready")["status"] == "False"
    assert any(r == "InvalidSpec" for r, _ in env.warnings())


def test_bad_kubelet_configuration_fails_validation(env: Env) -> None:
    env.create(kubelet={"evictionSoft": {"memory.available": "5%"}})
    env.reconcile()
    cond = env.condition("ValidationSucceeded")
    assert (cond["status"], cond["reason"]) == ("False", "InvalidKubeletConfiguration")
    assert "evictionSoftGracePeriod" in cond["message"]
    assert env.condition("Ready")["status"] == "False"
    # everything else still resolved
    assert env.condition("SubnetsReady")["status"] == "True"


def test_status_write_conflict_is_retried(env: Env) -> None:
    env.create()
    real = env.server.update_status
    calls = []

    def flaky(obj: dict[str, Any]) -> dict[str, Any]:
        calls.append(obj)
        if len(calls) == 1:
            raise Conflict("the object has been modified")
        return real(obj)

    env.server.update_status = flaky  # type: ignore[method-assign]
    env.reconcile()
    assert len(calls) == 2
    assert env.condition("Ready")["status"] == "True"


def test_missing_nodeclass_is_ignored(env: Env) -> None:
    assert env.reconcile("absent") == Result()


# --- hash migration ------------------------------------------------------------------------


def test_hash_version_change_rehashes_nodeclaims_that_have_not_drifted(env: Env) -> None:
    env.nodeclaim("fresh", **{HASH_ANNOTATION: "old", HASH_VERSION_ANNOTATION: "v5"})
    env.nodeclaim("current", **{HASH_ANNOTATION: "kept", HASH_VERSION_ANNOTATION: HASH_VERSION})
    env.nodeclaim("elsewhere", nodeclass="other", **{HASH_VERSION_ANNOTATION: "v5"})
    env.create()
    env.reconcile()
    digest = env.get()["metadata"]["annotations"][HASH_ANNOTATION]

    def ann(name: str) -> dict[str, str]:
        return dict(
            env.server.get(("karpenter.sh/v1", "NodeClaim"), name)["metadata"]["annotations"]
        )

    assert ann("fresh") == {HASH_ANNOTATION: digest, HASH_VERSION_ANNOTATION: HASH_VERSION}
    assert ann("current")[HASH_ANNOTATION] == "kept"
    assert ann("elsewhere") == {HASH_VERSION_ANNOTATION: "v5"}


def test_hash_migration_conflict_retries_before_the_class_moves_on(env: Env) -> None:
    env.nodeclaim("fresh", **{HASH_VERSION_ANNOTATION: "v5"})
    env.create()
    real = env.server.update
    conflicts = []

    def flaky(obj: dict[str, Any]) -> dict[str, Any]:
        if obj.get("kind") == "NodeClaim" and not conflicts:
            conflicts.append(obj["metadata"]["name"])
            raise Conflict("the object has been modified")
        return real(obj)

    env.server.update = flaky  # type: ignore[method-assign]
    assert env.reconcile() == Result(requeue=True)
    assert HASH_VERSION_ANNOTATION not in (env.get()["metadata"].get("annotations") or {})
    env.reconcile()
    claim = env.server.get(("karpenter.sh/v1", "NodeClaim"), "fresh")
    assert claim["metadata"]["annotations"][HASH_VERSION_ANNOTATION] == HASH_VERSION
    assert env.get()["metadata"]["annotations"][HASH_VERSION_ANNOTATION] == HASH_VERSION


# --- termination ------------------------------------------------------------------------------


def test_deletion_waits_for_nodeclaims_then_cleans_up(env: Env) -> None:
    env.create()
    env.reconcile()
    uid = env.get()["metadata"]["uid"]
    assert len(env.profiles(uid)) == 1
    ec2 = env.clients.ec2

    def template(name: str, nodeclass: str) -> None:
        ec2.create_launch_template(
            LaunchTemplateName=name,
            LaunchTemplateData={"ImageId": env.world.amd64},
            TagSpecifications=[
                {
                    "ResourceType": "launch-template",
                    "Tags": _tags(
                        {
                            "eks:eks-cluster-name": CLUSTER,
                            "karpenter.k8s.aws/ec2nodeclass": nodeclass,
                        }
                    ),
                }
            ],
        )

    template("karpenter.k8s.aws/mine", "default")
    template("karpenter.k8s.aws/theirs", "other")
    env.nodeclaim("claim-a")
    env.server.delete(NODECLASS_RESOURCE, "default")
    assert env.get()["metadata"]["deletionTimestamp"]

    assert env.reconcile() == Result.after(TERMINATION_EVENT_INTERVAL)
    waiting = [e for e in env.recorder.events if e.reason == "WaitingOnNodeClaimTermination"]
    assert waiting and "claim-a" in waiting[-1].message
    assert len(env.profiles(uid)) == 1  # still in use

    env.server.delete(("karpenter.sh/v1", "NodeClaim"), "claim-a")
    assert env.reconcile() == Result()
    assert env.profiles(uid) == []
    with pytest.raises(NotFound):
        env.get()
    names = [lt["LaunchTemplateName"] for lt in ec2.describe_launch_templates()["LaunchTemplates"]]
    assert names == ["karpenter.k8s.aws/theirs"]


def test_deletion_failure_keeps_the_finalizer(env: Env) -> None:
    env.create()
    env.reconcile()
    hook(
        env.clients.iam,
        "before-call.iam.ListInstanceProfiles",
        _fail("ListInstanceProfiles", "AccessDenied"),
    )
    env.server.delete(NODECLASS_RESOURCE, "default")
    assert env.reconcile() == Result(requeue=True)
    assert FINALIZER in env.get()["metadata"]["finalizers"]
    assert any("AccessDenied" in m for _, m in env.warnings())


# --- registration ------------------------------------------------------------------------------


def test_the_controller_runs_from_its_watch_events(clients: AWSClients) -> None:
    env = Env(clients)
    manager = Manager(env.clock, env.server)
    reconciler = NodeClassStatusReconciler(
        env.server,
        env.clock,
        env.recorder,
        clients,
        env.settings,
        kubernetes_version=K8S,
        ssm_prefix=PREFIX,
    )
    manager.add_controller(CONTROLLER_NAME, reconciler, watches=WATCHES)
    manager.start()
    env.create()
    manager.settle()
    assert env.condition("Ready")["status"] == "True"
    assert DEFAULT_REQUEUE > SUBNET_REQUEUE
    manager.stop()


# --- DryRun permission checks ----------------------------------------------------------------


def _unauthorized(operation: str) -> Callable[..., Any]:
    """A handler failing ``operation`` as EC2 does for a caller without the permission
    (moto answers every DryRun as allowed)."""

    def handler(params: dict[str, Any], **_: Any) -> None:
        assert params.get("DryRun") is True  # the validation never makes the real call
        raise ClientError(
            {"Error": {"Code": "UnauthorizedOperation", "Message": "You are not authorized"}},
            operation,
        )

    return handler


def test_dry_runs_that_ec2_allows_make_the_class_valid(env: Env) -> None:
    calls: list[str] = []
    fleets: list[dict[str, Any]] = []
    for op in ("CreateLaunchTemplate", "CreateFleet", "DeleteLaunchTemplate", "RunInstances"):
        hook(
            env.clients.ec2,
            f"provide-client-params.ec2.{op}",
            lambda params, op=op, **_: calls.append(f"{op}:{params.get('DryRun')}"),
        )
    hook(
        env.clients.ec2,
        "provide-client-params.ec2.CreateFleet",
        lambda params, **_: fleets.append(params),
    )
    env.create()
    env.reconcile()
    assert env.condition("ValidationSucceeded")["status"] == "True"
    assert env.condition("Ready")["status"] == "True"
    # CreateFleet is dry-run over a template made for it (EC2 must know the template)
    assert calls == [
        "CreateLaunchTemplate:True",
        "CreateLaunchTemplate:None",
        "CreateFleet:True",
        "DeleteLaunchTemplate:None",
        "RunInstances:True",
    ]
    [fleet] = fleets
    [config] = fleet["LaunchTemplateConfigs"]
    assert config["LaunchTemplateSpecification"]["LaunchTemplateName"].startswith(
        "karpenter.k8s.aws/validation-"
    )
    subnets = {env.world.small["SubnetId"], env.world.large["SubnetId"]}
    assert {o["SubnetId"] for o in config["Overrides"]} == subnets
    assert fleet["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "on-demand"
    # nothing is left and nothing was launched
    assert not env.clients.ec2.describe_launch_templates()["LaunchTemplates"]
    assert not env.clients.ec2.describe_instances()["Reservations"]
    # remembered: a second reconcile of the same class asks EC2 nothing
    env.reconcile()
    assert len(calls) == 5


def test_an_endpoint_that_launches_on_a_dry_run_fleet_is_undone_and_not_trusted(
    env: Env,
) -> None:
    """Not EC2's behaviour (moto's, without the conftest's handler): whatever such an
    endpoint launched is terminated at once and the class is not valid."""
    ec2 = env.clients.ec2
    launched: list[str] = []

    def launch_anyway(**_: Any) -> tuple[Any, dict[str, Any]]:
        from botocore.awsrequest import AWSResponse

        [instance] = ec2.run_instances(
            ImageId=env.world.amd64, MinCount=1, MaxCount=1, InstanceType="m5.large"
        )["Instances"]
        launched.append(instance["InstanceId"])
        body = {"FleetId": "fleet-1", "Instances": [{"InstanceIds": [instance["InstanceId"]]}]}
        return AWSResponse("https://ec2.amazonaws.com/", 200, {}, None), {
            **body,
            "ResponseMetadata": {"HTTPStatusCode": 200},
        }

    ec2.meta.events.register_first("before-call.ec2.CreateFleet", launch_anyway)
    _HOOKS.append((ec2, "before-call.ec2.CreateFleet", launch_anyway))
    env.create()
    env.reconcile()
    cond = env.condition("ValidationSucceeded")
    assert (cond["status"], cond["reason"]) == ("Unknown", "DryRunFailed")
    [iid] = launched
    state = ec2.describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]["State"]
    assert state["Name"] in ("shutting-down", "terminated")


@pytest.mark.parametrize(
    ("operation", "reason"),
    [
        ("CreateLaunchTemplate", "CreateLaunchTemplateAuthCheckFailed"),
        ("CreateFleet", "CreateFleetAuthCheckFailed"),
        ("RunInstances", "RunInstancesAuthCheckFailed"),
    ],
)
def test_an_unauthorized_dry_run_fails_validation(env: Env, operation: str, reason: str) -> None:
    hook(env.clients.ec2, f"provide-client-params.ec2.{operation}", _unauthorized(operation))
    env.create()
    env.reconcile()
    cond = env.condition("ValidationSucceeded")
    assert (cond["status"], cond["reason"]) == ("False", reason)
    assert f"ec2:{operation}" in cond["message"] and "UnauthorizedOperation" in cond["message"]
    assert env.condition("Ready")["status"] == "False"
    assert any(r == reason for r, _ in env.warnings())


def test_a_throttled_dry_run_leaves_validation_unknown_and_is_retried(env: Env) -> None:
    throttled = [True]

    def handler(**_: Any) -> None:
        if throttled[0]:
            raise ClientError(
                {"Error": {"Code": "RequestLimitExceeded", "Message": "slow down"}},
                "RunInstances",
            )

    hook(env.clients.ec2, "before-call.ec2.RunInstances", handler)
    env.create()
    env.reconcile()
    cond = env.condition("ValidationSucceeded")
    assert (cond["status"], cond["reason"]) == ("Unknown", "DryRunFailed")
    throttled[0] = False
    env.reconcile()
    assert env.condition("ValidationSucceeded")["status"] == "True"
