"""``karpenter serve --cloud-provider aws`` end to end: a real control plane, boto3 against
moto's EC2/IAM/EKS/SQS server, and a node joiner playing the instances' kubelets.

Covered: launching onto discovered subnets/security group/AMI with the NodeClass Ready and
instances tagged and templated as upstream; zones bounded by the discovered subnets;
upstream's instance tagging after registration; scale to zero terminating every instance
and a deleted EC2NodeClass removing its instance profile and launch templates; a NodeClass
whose subnet selector matches nothing (Ready=False, its pods wait, another pool works);
interruption through SQS; drift after a security-group selector change.

``aws_harness.py`` says what runs where. On-demand prices come from a price-list file the
harness writes (``aws_harness.PRICES``): they are test data, not AWS's price list (moto has
no pricing API). moto's CreateFleet always launches the first override it is given and never
reports insufficient capacity, so these tests check *that* Karpenter launches one of the
allowed types in a discovered subnet, not which one a real fleet would choose.

The provider tests are skipped while the AWS plugin's CloudProviderSpec says it cannot
launch (``can_launch`` False); the node joiner's own tests run regardless.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from aws_harness import (
    ALLOWED_TYPES,
    AWS,
    CLUSTER_NAME,
    CLUSTER_TAG,
    DECOY_ZONE,
    DISCOVERY_TAG,
    EC2NODECLASS,
    NODECLAIM,
    NODECLASS_TAG,
    NODEPOOL_TAG,
    REGION,
    UNREGISTERED_TAINT,
    ZONES,
    Moto,
    NodeJoiner,
    World,
    aws_can_launch,
    aws_fixture,  # noqa: F401 -- the `aws` fixture
    claims_by_instance,
    instance_id_of,
    instances,
    moto_fixture,  # noqa: F401 -- the `moto` fixture
    node_for,
    provider_id,
    seed,
    tags_of,
)
from serve_harness import (
    APP_NS,
    NODEPOOL,
    Cluster,
    cluster_fixture,  # noqa: F401 -- the `cluster` fixture
    metric,
    wait_for,
)

from karpenter_core.kube.client import NotFound, create_with_status

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

# Upstream's annotation keys (karpenter-provider-aws pkg/apis/v1).
HASH_ANNOTATION = "karpenter.k8s.aws/ec2nodeclass-hash"
HASH_VERSION_ANNOTATION = "karpenter.k8s.aws/ec2nodeclass-hash-version"
TAGGED_ANNOTATION = "karpenter.k8s.aws/tagged"

needs_provider = pytest.mark.skipif(
    not aws_can_launch(),
    reason="the aws plugin's CloudProviderSpec has can_launch=False (provider not finished)",
)


def steady_claims(
    aws: AWS,
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]] | None:
    """The NodeClaims and the live Karpenter instances, both by instance id, when there
    is at least one NodeClaim, none is being deleted and the live instances are exactly
    theirs, all running; else None (a launch or a removal is under way)."""
    claims = claims_by_instance(aws)
    if not claims or any(c["metadata"].get("deletionTimestamp") for c in claims.values()):
        return None
    live = {i["InstanceId"]: i for i in aws.instances()}
    if set(live) != set(claims) or any(i["State"]["Name"] != "running" for i in live.values()):
        return None
    return claims, live


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return None


def is_true(obj: dict[str, Any], kind: str) -> bool:
    c = condition(obj, kind)
    return c is not None and c.get("status") == "True"


def launch_by_hand(moto: Moto, zone_subnet: str, pool: str | None = "default") -> dict[str, Any]:
    """An instance as Karpenter tags them (or untagged when ``pool`` is None)."""
    ec2 = moto.client("ec2")
    tags = [{"Key": NODEPOOL_TAG, "Value": pool}] if pool else [{"Key": "Name", "Value": "other"}]
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    return dict(
        ec2.run_instances(
            ImageId=image,
            MinCount=1,
            MaxCount=1,
            InstanceType="m5.large",
            SubnetId=zone_subnet,
            TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
        )["Instances"][0]
    )


def launch_by_fleet(moto: Moto, world: World) -> dict[str, Any]:
    """An instance launched as Karpenter launches: CreateFleet over a launch template
    whose network interface carries the NodeClass's security group."""
    ec2 = moto.client("ec2")
    subnet, zone = next(iter(world.subnets.items()))
    ec2.create_launch_template(
        LaunchTemplateName="karpenter.k8s.aws/test",
        LaunchTemplateData={
            "ImageId": world.ami,
            "NetworkInterfaces": [{"DeviceIndex": 0, "Groups": [world.security_group]}],
        },
    )
    fleet = ec2.create_fleet(
        Type="instant",
        TargetCapacitySpecification={
            "TotalTargetCapacity": 1,
            "DefaultTargetCapacityType": "on-demand",
        },
        LaunchTemplateConfigs=[
            {
                "LaunchTemplateSpecification": {
                    "LaunchTemplateName": "karpenter.k8s.aws/test",
                    "Version": "$Latest",
                },
                "Overrides": [
                    {"InstanceType": "m5.large", "SubnetId": subnet, "AvailabilityZone": zone}
                ],
            }
        ],
        TagSpecifications=[
            {"ResourceType": "instance", "Tags": [{"Key": NODEPOOL_TAG, "Value": "default"}]}
        ],
    )
    iid = fleet["Instances"][0]["InstanceIds"][0]
    return dict(ec2.describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0])


def security_groups(moto: Moto, instance_id: str) -> list[str]:
    reservations = moto.client("ec2").describe_instances(InstanceIds=[instance_id])
    return [g["GroupId"] for g in reservations["Reservations"][0]["Instances"][0]["SecurityGroups"]]


def nodeclaim_for(name: str, instance: dict[str, Any] | None) -> dict[str, Any]:
    """A launched NodeClaim as Karpenter writes it (status from the provider's create)."""
    claim: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": name,
            "labels": {NODEPOOL_TAG: "default", "team": "payments"},
        },
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "x"},
            "requirements": [
                {
                    "key": "node.kubernetes.io/instance-type",
                    "operator": "In",
                    "values": ["m5.large"],
                }
            ],
            "taints": [{"key": "dedicated", "value": "payments", "effect": "NoSchedule"}],
            "startupTaints": [{"key": "cni.example/not-ready", "effect": "NoSchedule"}],
        },
    }
    if instance is not None:
        claim["status"] = {
            "providerID": provider_id(instance),
            "capacity": {"cpu": "2", "memory": "7577Mi", "pods": "29"},
            "allocatable": {"cpu": "1930m", "memory": "6903Mi", "pods": "29"},
        }
    return claim


# --------------------------------------------------------------------------- the node joiner


def test_node_for_registers_the_nodeclaims_labels_taints_and_resources(moto: Moto) -> None:
    world = seed(moto)
    subnet, zone = next(iter(world.subnets.items()))
    instance = launch_by_hand(moto, subnet)
    claim = nodeclaim_for("c1", instance)
    node = node_for(instance, claim)
    assert node["spec"]["providerID"] == f"aws:///{zone}/{instance['InstanceId']}"
    labels = node["metadata"]["labels"]
    assert labels["team"] == "payments"  # --node-labels from the NodeClaim
    assert labels[NODEPOOL_TAG] == "default"
    assert labels["node.kubernetes.io/instance-type"] == "m5.large"
    assert labels["topology.kubernetes.io/zone"] == zone
    assert labels["kubernetes.io/arch"] == "amd64"
    assert labels["kubernetes.io/hostname"] == node["metadata"]["name"]
    taints = {t["key"] for t in node["spec"]["taints"]}
    assert taints == {UNREGISTERED_TAINT, "dedicated", "cni.example/not-ready"}
    assert node["status"]["allocatable"] == claim["status"]["allocatable"]
    assert node["status"]["capacity"] == claim["status"]["capacity"]


def test_node_joiner_registers_one_node_per_running_karpenter_instance_with_a_nodeclaim(
    cluster: Cluster, moto: Moto
) -> None:
    world = seed(moto)
    subnets = list(world.subnets)
    claimed = launch_by_fleet(moto, world)
    assert security_groups(moto, claimed["InstanceId"]) == []  # moto's CreateFleet gap
    unclaimed = launch_by_hand(moto, subnets[1])  # its NodeClaim is not written yet
    untagged = launch_by_hand(moto, subnets[2], pool=None)  # not Karpenter's
    create_with_status(cluster.kube, nodeclaim_for("claimed", claimed))
    create_with_status(cluster.kube, nodeclaim_for("unclaimed", None))
    joiner = NodeJoiner(moto.client("ec2"), cluster.kube)
    assert len(joiner.step()) == 1
    # Booted as EC2 would have: the launch template's security group.
    assert security_groups(moto, claimed["InstanceId"]) == [world.security_group]
    node = cluster.kube.list("nodes", label_selector="team=payments").items
    assert [n["spec"]["providerID"] for n in node] == [provider_id(claimed)]
    # The fake kubelet keeps it Ready; nothing registered the other two.
    wait_for(
        lambda: condition(cluster.kube.get("nodes", node[0]["metadata"]["name"]), "Ready"),
        "the joined node's Ready condition",
    )
    assert {
        instance_id_of(n["spec"].get("providerID", "")) for n in cluster.kube.list("nodes").items
    } == {claimed["InstanceId"]}
    assert untagged["InstanceId"] not in joiner.joined
    # Once the NodeClaim names its instance the second one joins; a deleted Node stays gone.
    cluster.kube.patch(
        NODECLAIM,
        "unclaimed",
        {"status": nodeclaim_for("unclaimed", unclaimed)["status"]},
        subresource="status",
    )
    assert len(joiner.step()) == 1
    cluster.kube.delete("nodes", node[0]["metadata"]["name"])
    wait_for(lambda: _gone(cluster, node[0]["metadata"]["name"]), "the deleted node to go")
    assert joiner.step() == []
    assert set(joiner.joined) == {claimed["InstanceId"], unclaimed["InstanceId"]}


def _gone(cluster: Cluster, node: str) -> bool:
    try:
        cluster.kube.get("nodes", node)
    except NotFound:
        return True
    return False


# --------------------------------------------------------------------------- the provider


def karpenter_failed_scheduling(aws: AWS, app: str) -> set[str]:
    """Pods of ``app`` Karpenter has reported it cannot place (its FailedScheduling)."""
    pods = {p["metadata"]["name"] for p in aws.cluster.pods(app)}
    return {
        e["regarding"]["name"]
        for e in aws.kube.list(("events.k8s.io/v1", "Event"), APP_NS).items
        if e.get("reportingController") == "karpenter"
        and e.get("type") == "Warning"
        and e.get("reason") == "FailedScheduling"
        and (e.get("regarding") or {}).get("name") in pods
    }


def nodeclass_ready(aws: AWS, name: str) -> bool:
    ready = condition(aws.nodeclass(name), "Ready")
    return ready is not None and ready.get("status") == "True"


@needs_provider
def test_every_pod_runs_on_a_node_backed_by_an_ec2_instance_karpenter_launched(aws: AWS) -> None:
    aws.serve()
    aws.apply_nodeclass("default")
    aws.apply_nodepool("default", "default")
    aws.apply_deployment("web", 10)

    # The EC2NodeClass resolves the seeded subnets, security group and AMI (not the decoys).
    wait_for(lambda: nodeclass_ready(aws, "default"), "the EC2NodeClass to be Ready")
    status = aws.nodeclass("default")["status"]
    assert {s["id"]: s["zone"] for s in status["subnets"]} == aws.world.subnets
    assert {g["id"] for g in status["securityGroups"]} == {aws.world.security_group}
    assert {a["id"] for a in status["amis"]} == {aws.world.ami}
    profile = status["instanceProfile"]
    roles = aws.iam.get_instance_profile(InstanceProfileName=profile)["InstanceProfile"]["Roles"]
    assert [r["RoleName"] for r in roles] == [aws.world.role]

    wait_for(lambda: aws.cluster.all_running_on_karpenter_nodes("web", 10), "10 pods running")

    # Settled: an extra NodeClaim from a second provisioning pass may still be launching,
    # or, empty, be consolidated away (its instance shutting down). Everything below is
    # checked on one snapshot of NodeClaims, Nodes, pods and instances taken when it was
    # consistent: each NodeClaim on a running instance and none being deleted, every pod
    # on a Node of one of them, and no other live Karpenter instance. (Reading the
    # NodeClaims again after such a check races a claim launched or deleted in between.)
    def consistent() -> dict[str, dict[str, Any]] | None:
        if (steady := steady_claims(aws)) is None:
            return None
        claims, live = steady
        nodes = {n["metadata"]["name"]: n for n in aws.cluster.karpenter_nodes()}
        pods = aws.cluster.pods("web")
        if len(pods) != 10 or any(
            (node := nodes.get(p["spec"].get("nodeName") or "")) is None
            or instance_id_of(str(node["spec"].get("providerID") or "")) not in claims
            for p in pods
        ):
            return None
        return {iid: {"claim": c, "instance": live[iid]} for iid, c in claims.items()}

    snapshot = wait_for(
        consistent,
        "every NodeClaim on a running instance and none being deleted, every pod on one of "
        "their Nodes, and no other live Karpenter instance (no leaked or duplicate launch)",
    )
    claims = {iid: entry["claim"] for iid, entry in snapshot.items()}
    for entry in snapshot.values():
        claim, instance = entry["claim"], entry["instance"]
        assert instance["State"]["Name"] == "running"
        assert claim["status"]["providerID"] == provider_id(instance)
        tags = tags_of(instance)
        assert tags.get(NODEPOOL_TAG) == "default"
        assert tags.get(NODECLASS_TAG) == "default"
        assert tags.get(CLUSTER_TAG) == "owned"
        assert instance["InstanceType"] in ALLOWED_TYPES
        assert instance["SubnetId"] in aws.world.subnets
        assert (
            claim["metadata"]["labels"]["node.kubernetes.io/instance-type"]
            == (instance["InstanceType"])
        )
    # Nothing changed since the launch, so nothing is drifted.
    wait_for(
        lambda: not [c for c in aws.cluster.nodeclaims() if is_true(c, "Drifted")],
        "no NodeClaim to be Drifted",
    )
    # The launch templates carry what the NodeClass resolved and what the node needs to
    # join (moto's CreateFleet does not copy these onto the instance, so they are read here).
    templates = aws.launch_templates("default")
    assert templates
    for name, data in templates.items():
        assert data["ImageId"] == aws.world.ami, name
        assert data["IamInstanceProfile"]["Name"] == profile, name
        groups = data.get("SecurityGroupIds") or [
            g for nic in data.get("NetworkInterfaces") or [] for g in nic.get("Groups") or []
        ]
        assert groups == [aws.world.security_group], name
        user_data = base64.b64decode(data["UserData"]).decode()
        assert CLUSTER_NAME in user_data, name
        assert aws.cluster.cp.server in user_data, name
        assert UNREGISTERED_TAINT in user_data, name
    # The claims carry the NodeClass's hash (drift detection compares against it).
    hashes = aws.nodeclass("default")["metadata"].get("annotations") or {}
    assert hashes.get(HASH_ANNOTATION)
    for claim in claims.values():
        annotations = claim["metadata"].get("annotations") or {}
        assert annotations.get(HASH_ANNOTATION) == hashes[HASH_ANNOTATION]
        assert annotations.get(HASH_VERSION_ANNOTATION) == hashes[HASH_VERSION_ANNOTATION]


@needs_provider
def test_registered_instances_are_tagged_with_their_node_and_nodeclaim(aws: AWS) -> None:
    """Upstream's nodeclaim.tagging controller: once a NodeClaim has its Node, the
    instance gets ``Name`` (the Node's name), ``karpenter.sh/nodeclaim`` and
    ``eks:eks-cluster-name``, and the NodeClaim is annotated as tagged."""
    aws.serve()
    aws.apply_nodeclass("default")
    aws.apply_nodepool("default", "default")
    aws.apply_deployment("web", 2)
    wait_for(lambda: aws.cluster.all_running_on_karpenter_nodes("web", 2), "2 pods running")

    def tagged() -> bool:
        claims = claims_by_instance(aws)
        return bool(claims) and all(
            (c["metadata"].get("annotations") or {}).get(TAGGED_ANNOTATION) == "true"
            for c in claims.values()
        )

    wait_for(tagged, "every NodeClaim to be annotated as tagged")
    for iid, claim in claims_by_instance(aws).items():
        instance = aws.instance(iid)
        assert instance is not None
        tags = tags_of(instance)
        assert tags.get("Name") == claim["status"]["nodeName"]
        assert tags.get("karpenter.sh/nodeclaim") == claim["metadata"]["name"]
        assert tags.get("eks:eks-cluster-name") == CLUSTER_NAME


@needs_provider
def test_a_zonal_pod_launches_in_that_zones_subnet_and_an_undiscovered_zone_waits(
    aws: AWS,
) -> None:
    """The EC2NodeClass's subnets bound the zones Karpenter offers: a pod pinned to a
    discovered zone gets an instance in that zone's subnet; the decoy zone has only an
    untagged subnet, so a pod pinned there stays pending."""
    aws.serve()
    aws.apply_nodeclass("default")
    aws.apply_nodepool("default", "default")
    zone = ZONES[-1]
    aws.apply_deployment("zonal", 1, zone=zone)
    aws.apply_deployment("nowhere", 1, zone=DECOY_ZONE)
    wait_for(lambda: aws.cluster.all_running_on_karpenter_nodes("zonal", 1), "the zonal pod")
    claims = claims_by_instance(aws)
    assert len(claims) == 1
    instance = aws.instance(next(iter(claims)))
    assert instance is not None
    assert instance["Placement"]["AvailabilityZone"] == zone
    assert aws.world.subnets.get(instance["SubnetId"]) == zone
    wait_for(lambda: karpenter_failed_scheduling(aws, "nowhere"), "Karpenter to give up on it")
    pending = aws.cluster.pods("nowhere")
    assert len(pending) == 1 and not pending[0]["spec"].get("nodeName")
    assert {i["Placement"]["AvailabilityZone"] for i in aws.instances()} == {zone}


@needs_provider
def test_scaling_to_zero_terminates_every_instance_and_a_deleted_nodeclass_cleans_up(
    aws: AWS,
) -> None:
    aws.serve()
    aws.apply_nodeclass("default")
    aws.apply_nodepool("default", "default", consolidation="WhenEmptyOrUnderutilized")
    aws.apply_deployment("web", 10)
    wait_for(lambda: aws.cluster.all_running_on_karpenter_nodes("web", 10), "10 pods running")
    launched = set(claims_by_instance(aws))
    assert launched

    aws.cluster.scale("web", 0)
    wait_for(lambda: not aws.cluster.nodeclaims(), "every NodeClaim to be deleted")
    wait_for(lambda: not aws.instances(), "no live Karpenter instance left in EC2")
    assert not aws.cluster.karpenter_nodes()
    for iid in launched:
        instance = aws.instance(iid)
        assert instance is not None and instance["State"]["Name"] == "terminated", iid

    # Deleting the NodeClass (its finalizer) removes the instance profile Karpenter made
    # for it and its launch templates (those still there: a template no launch used for a
    # minute may already be gone, deleted by aws.launchtemplate.cleanup).
    profile = aws.nodeclass("default")["status"]["instanceProfile"]
    aws.kube.delete(NODEPOOL, "default")
    aws.kube.delete(EC2NODECLASS, "default")
    wait_for(lambda: not aws.kube.list(EC2NODECLASS).items, "the EC2NodeClass to be deleted")
    assert not aws.launch_templates("default")
    with pytest.raises(aws.iam.exceptions.NoSuchEntityException):
        aws.iam.get_instance_profile(InstanceProfileName=profile)


@needs_provider
def test_a_nodeclass_whose_subnets_match_nothing_is_not_ready_and_its_pods_wait(
    aws: AWS,
) -> None:
    aws.serve()
    aws.apply_nodeclass("default")
    aws.apply_nodeclass("nowhere", subnet_tags={DISCOVERY_TAG: f"{CLUSTER_NAME}-missing"})
    aws.apply_nodepool("default", "default")
    aws.apply_nodepool("nowhere", "nowhere")
    aws.apply_deployment("stuck", 2, nodepool="nowhere")
    aws.apply_deployment("web", 3, nodepool="default")

    def not_ready() -> dict[str, Any] | None:
        ready = condition(aws.nodeclass("nowhere"), "Ready")
        return ready if ready is not None and ready.get("status") == "False" else None

    ready = wait_for(not_ready, "the EC2NodeClass 'nowhere' to be Ready=False")
    assert ready.get("reason"), ready
    subnets = condition(aws.nodeclass("nowhere"), "SubnetsReady")
    assert subnets is not None and subnets["status"] == "False", subnets
    assert subnets.get("reason") == "SubnetsNotFound", subnets

    # The event is Karpenter's FailedScheduling on the waiting pods: upstream records none
    # for a selector that matches nothing (the NodeClass's condition says it).
    wait_for(
        lambda: len(karpenter_failed_scheduling(aws, "stuck")) == 2,
        "Karpenter's FailedScheduling on both pods",
    )

    # The other NodePool keeps working while 'nowhere' launches nothing.
    wait_for(lambda: aws.cluster.all_running_on_karpenter_nodes("web", 3), "3 pods running")
    assert {c["metadata"]["labels"][NODEPOOL_TAG] for c in aws.cluster.nodeclaims()} == {"default"}
    stuck = aws.cluster.pods("stuck")
    assert len(stuck) == 2 and all(not p["spec"].get("nodeName") for p in stuck)
    assert {tags_of(i).get(NODEPOOL_TAG) for i in instances(aws.ec2)} == {"default"}


@needs_provider
def test_a_changed_security_group_selector_drifts_and_replaces_every_instance(aws: AWS) -> None:
    """Drift is re-checked when the NodeClass changes (the drift controller watches the
    provider's NodeClass kinds, as upstream); the 5-minute periodic check alone would
    notice only after this test's wait gave up."""
    aws.serve()
    aws.apply_nodeclass("default")
    aws.apply_nodepool("default", "default")
    aws.apply_deployment("web", 4)
    wait_for(lambda: aws.cluster.all_running_on_karpenter_nodes("web", 4), "4 pods running")
    old = set(claims_by_instance(aws))
    assert old

    decoy = aws.world.decoy_security_group
    aws.kube.patch(
        EC2NODECLASS, "default", {"spec": {"securityGroupSelectorTerms": [{"id": decoy}]}}
    )
    wait_for(
        lambda: [g["id"] for g in aws.nodeclass("default")["status"]["securityGroups"]] == [decoy],
        "the EC2NodeClass to resolve the new security group",
    )

    def drift_reasons() -> set[str]:
        return {
            str((condition(c, "Drifted") or {}).get("reason"))
            for c in aws.cluster.nodeclaims()
            if is_true(c, "Drifted")
        }

    assert wait_for(drift_reasons, "the old NodeClaims to be Drifted") == {"SecurityGroupDrift"}

    def replaced() -> bool:
        claims = set(claims_by_instance(aws))
        live = {i["InstanceId"] for i in aws.instances()}
        return (
            bool(claims)
            and not claims & old
            and not live & old
            and aws.cluster.all_running_on_karpenter_nodes("web", 4)
        )

    wait_for(replaced, "every instance to be replaced")
    for iid in claims_by_instance(aws):
        instance = aws.instance(iid)
        assert instance is not None
        assert [g["GroupId"] for g in instance["SecurityGroups"]] == [decoy]


def scheduled_retirement(instance_id: str) -> str:
    """An AWS Health scheduled-change event for ``instance_id`` as EventBridge delivers it
    to SQS (the envelope and detail fields of AWS's published event format)."""
    return json.dumps(
        {
            "version": "0",
            "id": "7bf73129-1428-4cd3-a780-95db273d1602",
            "detail-type": "AWS Health Event",
            "source": "aws.health",
            "account": "123456789012",
            "time": "2026-11-30T00:00:00Z",
            "region": REGION,
            "resources": [],
            "detail": {
                "eventArn": f"arn:aws:health:{REGION}::event/EC2/"
                "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED_1",
                "service": "EC2",
                "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
                "eventTypeCategory": "scheduledChange",
                "startTime": "Mon, 30 Nov 2026 00:00:00 GMT",
                "eventDescription": [
                    {"language": "en_US", "latestDescription": "instance retirement"}
                ],
                "affectedEntities": [{"entityValue": instance_id}],
            },
        }
    )


@needs_provider
def test_a_scheduled_retirement_on_the_interruption_queue_replaces_the_instance(
    aws: AWS,
) -> None:
    sqs = aws.moto.client("sqs")
    queue = sqs.create_queue(QueueName=f"{CLUSTER_NAME}-interruption")["QueueUrl"]
    op = aws.serve("a", env={"INTERRUPTION_QUEUE": f"{CLUSTER_NAME}-interruption"})
    aws.apply_nodeclass("default")
    aws.apply_nodepool("default", "default")
    aws.apply_deployment("web", 2)
    wait_for(lambda: aws.cluster.all_running_on_karpenter_nodes("web", 2), "2 pods running")

    # Settled before the snapshot: a second provisioning pass can launch a NodeClaim the
    # pods then do not use, and emptiness removes it at once (consolidateAfter 0s): that
    # removal is not the retirement's doing, but raced the check below when the snapshot
    # still held it.
    def settled() -> dict[str, dict[str, Any]] | None:
        if (steady := steady_claims(aws)) is None:
            return None
        claims = steady[0]
        nodes = {n["metadata"]["name"]: n for n in aws.cluster.karpenter_nodes()}
        used = {
            instance_id_of(str(nodes[name]["spec"].get("providerID") or ""))
            for p in aws.cluster.pods("web")
            if (name := p["spec"].get("nodeName") or "") in nodes
        }
        return claims if used == set(claims) else None

    before = wait_for(settled, "every NodeClaim running a web pod and none launching or leaving")
    retired = sorted(before)[0]

    sqs.send_message(QueueUrl=queue, MessageBody=scheduled_retirement(retired))

    def replaced() -> bool:
        claims = claims_by_instance(aws)
        return (
            retired not in claims
            and retired not in {i["InstanceId"] for i in aws.instances()}
            and aws.cluster.all_running_on_karpenter_nodes("web", 2)
        )

    wait_for(replaced, "the retiring instance's NodeClaim to be replaced")
    instance = aws.instance(retired)
    assert instance is not None and instance["State"]["Name"] == "terminated"
    # Only the retiring instance was touched; the message was handled and deleted.
    assert set(before) - {retired} <= set(claims_by_instance(aws))
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    assert attributes == {
        "ApproximateNumberOfMessages": "0",
        "ApproximateNumberOfMessagesNotVisible": "0",
    }
    body = op.metrics()
    assert (metric(body, "karpenter_interruption_received_messages_total") or 0) >= 1
    assert (metric(body, "karpenter_interruption_deleted_messages_total") or 0) >= 1
