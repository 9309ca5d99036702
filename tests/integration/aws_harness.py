"""Harness for ``karpenter serve --cloud-provider aws`` end to end on a real control plane,
with EC2 played by moto's server.

What runs where:

- **AWS**: a moto server (``ThreadedMotoServer``) in the test process, one per test,
  seeded by :func:`seed` with what an EKS cluster's account holds: a VPC, subnets in three
  zones and a security group tagged ``karpenter.sh/discovery=<cluster>`` (plus an untagged
  decoy subnet and group that discovery must not pick), one of moto's preloaded x86_64
  Amazon Linux 2 AMIs, the node IAM role and the EKS cluster (so ``DescribeCluster`` can
  answer for the CA bundle and service CIDR).
- **Karpenter**: ``karpenter serve --cloud-provider aws`` subprocesses (serve_harness's
  :class:`Serve`) reaching moto through ``AWS_ENDPOINT_URL`` with dummy credentials. moto
  has no pricing API, so on-demand prices come from a ``PRICE_LIST_FILE`` the harness
  writes (:data:`PRICES`, test data, not AWS's price list).
- **The instances' kubelets**: :class:`NodeJoiner`. It first does what moto's CreateFleet
  leaves out of a launch: it gives each instance its launch template's security groups
  (without them the provider rightly sees every instance as drifted). Then, as an
  instance's kubelet registers a Node carrying the instance's providerID and the labels
  and taints Karpenter put in its user data (``--node-labels``,
  ``--register-with-taints``), the joiner polls ``DescribeInstances`` and registers that
  Node for each running Karpenter instance, taking the labels, taints and resources from
  the NodeClaim whose ``status.providerID`` names the instance (the same values the user
  data carries). From then on serve_harness's fake kubelet keeps the Node Ready and runs
  the pods the real kube-scheduler binds to it.

Waits poll with generous deadlines and assert on state, never on how long something took.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import socket
import threading
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from click.testing import CliRunner
from moto.server import ThreadedMotoServer
from serve_harness import APP_NS, Cluster, Serve, wait_for

from karpenter_core.cli import main as cli_main
from karpenter_core.kube.client import AlreadyExists, ApiError, create_with_status
from karpenter_core.plugins import cloud_providers, get_plugin_manager

log = logging.getLogger("aws_harness")

REGION = "us-west-2"
CLUSTER_NAME = "karpenter-e2e"
DISCOVERY_TAG = "karpenter.sh/discovery"
# Three zones get a tagged subnet; the fourth only an untagged decoy.
ZONES = ("us-west-2a", "us-west-2b", "us-west-2c")
DECOY_ZONE = "us-west-2d"
NODE_ROLE = f"KarpenterNodeRole-{CLUSTER_NAME}"
# Test data: on-demand USD/hour for the types the NodePools allow (moto has no pricing API).
PRICES = {"c5.large": 0.085, "m5.large": 0.096, "m5.xlarge": 0.192}
ALLOWED_TYPES = tuple(sorted(PRICES))

NODEPOOL_TAG = "karpenter.sh/nodepool"
NODECLASS_TAG = "karpenter.k8s.aws/ec2nodeclass"
CLUSTER_TAG = f"kubernetes.io/cluster/{CLUSTER_NAME}"
EC2NODECLASS = ("karpenter.k8s.aws/v1", "EC2NodeClass")
NODECLAIM = ("karpenter.sh/v1", "NodeClaim")
UNREGISTERED_TAINT = "karpenter.sh/unregistered"
PROVIDER_ID_PREFIX = "aws:///"
LIVE_STATES = ("pending", "running", "stopping", "stopped", "shutting-down")
_ARCH = {"x86_64": "amd64", "arm64": "arm64"}
_CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


def aws_can_launch() -> bool:
    """Whether the installed AWS plugin says it can launch (its CloudProviderSpec)."""
    spec = cloud_providers(get_plugin_manager()).get("aws")
    return bool(spec is not None and spec.can_launch)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tags_of(resource: Mapping[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in resource.get("Tags") or []}


def provider_id(instance: Mapping[str, Any]) -> str:
    """``aws:///<zone>/<instance-id>``, as upstream's providerID."""
    return (
        f"{PROVIDER_ID_PREFIX}{instance['Placement']['AvailabilityZone']}/{instance['InstanceId']}"
    )


def instance_id_of(provider_id_: str) -> str:
    return provider_id_.rsplit("/", 1)[-1]


# --------------------------------------------------------------------------- moto


def _refuse_dry_run_fleets() -> None:
    """moto launches a ``DryRun`` CreateFleet; EC2 refuses it with ``DryRunOperation``
    (which the provider's EC2NodeClass validation relies on). The server runs in this
    process, so its CreateFleet handler is taught EC2's answer once."""
    from moto.ec2.responses.fleets import Fleets

    if getattr(Fleets.create_fleet, "refuses_dry_run", False):
        return
    launch = Fleets.create_fleet

    def create_fleet(self: Fleets) -> Any:
        self.error_on_dryrun()
        return launch(self)

    create_fleet.refuses_dry_run = True  # type: ignore[attr-defined]
    Fleets.create_fleet = create_fleet  # type: ignore[method-assign]


class Moto:
    """A moto server on a free loopback port, reset to an empty account, and boto3 clients
    for it (dummy credentials)."""

    def __init__(self) -> None:
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=_free_port(), verbose=False)
        self.endpoint = ""
        self.session = boto3.session.Session(region_name=REGION, **_CREDENTIALS)

    def start(self) -> Moto:
        _refuse_dry_run_fleets()
        self.server.start()
        host, port = self.server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"
        # moto's state is per process, not per server: start from an empty account.
        req = urllib.request.Request(f"{self.endpoint}/moto-api/reset", method="POST")
        urllib.request.urlopen(req, timeout=10).close()
        return self

    def stop(self) -> None:
        self.server.stop()

    def client(self, service: str) -> Any:
        return self.session.client(service, endpoint_url=self.endpoint)

    def env(self) -> dict[str, str]:
        """The environment a process needs to reach this server through boto3's own
        resolution (no profile, no instance metadata)."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ACCESS_KEY_ID": _CREDENTIALS["aws_access_key_id"],
            "AWS_SECRET_ACCESS_KEY": _CREDENTIALS["aws_secret_access_key"],
            "AWS_EC2_METADATA_DISABLED": "true",
        }


class World:
    """What :func:`seed` created."""

    def __init__(self) -> None:
        self.vpc_id = ""
        self.subnets: dict[str, str] = {}  # tagged subnet id -> zone
        self.decoy_subnet = ""
        self.security_group = ""
        self.decoy_security_group = ""
        self.ami = ""
        self.ami_name = ""
        self.role = NODE_ROLE


def seed(moto: Moto) -> World:
    """A cluster's AWS account as Karpenter's getting-started guide leaves it."""
    ec2 = moto.client("ec2")
    world = World()
    discovery = [{"Key": DISCOVERY_TAG, "Value": CLUSTER_NAME}]
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]
    world.vpc_id = vpc["VpcId"]
    for i, zone in enumerate(ZONES):
        subnet = ec2.create_subnet(
            VpcId=world.vpc_id,
            CidrBlock=f"10.0.{i * 32}.0/19",
            AvailabilityZone=zone,
            TagSpecifications=[{"ResourceType": "subnet", "Tags": discovery}],
        )["Subnet"]
        world.subnets[subnet["SubnetId"]] = zone
    world.decoy_subnet = ec2.create_subnet(
        VpcId=world.vpc_id, CidrBlock="10.0.128.0/19", AvailabilityZone=DECOY_ZONE
    )["Subnet"]["SubnetId"]
    world.security_group = ec2.create_security_group(
        GroupName=f"{CLUSTER_NAME}-nodes",
        Description="Karpenter nodes",
        VpcId=world.vpc_id,
        TagSpecifications=[{"ResourceType": "security-group", "Tags": discovery}],
    )["GroupId"]
    world.decoy_security_group = ec2.create_security_group(
        GroupName=f"{CLUSTER_NAME}-other", Description="not for nodes", VpcId=world.vpc_id
    )["GroupId"]
    images = ec2.describe_images(
        Owners=["amazon"],
        Filters=[
            {"Name": "name", "Values": ["amzn2-ami-hvm-*"]},
            {"Name": "architecture", "Values": ["x86_64"]},
        ],
    )["Images"]
    assert images, "moto preloads no x86_64 Amazon Linux 2 AMI"
    image = sorted(images, key=lambda i: i["Name"])[-1]
    world.ami, world.ami_name = image["ImageId"], image["Name"]
    iam = moto.client("iam")
    iam.create_role(
        RoleName=NODE_ROLE,
        AssumeRolePolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "ec2.amazonaws.com"},
                        "Action": "sts:AssumeRole",
                    }
                ],
            }
        ),
    )
    moto.client("eks").create_cluster(
        name=CLUSTER_NAME,
        roleArn=f"arn:aws:iam::123456789012:role/{CLUSTER_NAME}-cluster",
        resourcesVpcConfig={
            "subnetIds": sorted(world.subnets),
            "securityGroupIds": [world.security_group],
        },
    )
    return world


def write_price_list(path: Path) -> Path:
    path.write_text(json.dumps(PRICES, indent=2, sort_keys=True) + "\n")
    return path


def instances(ec2: Any, states: tuple[str, ...] = LIVE_STATES) -> list[dict[str, Any]]:
    """Karpenter's instances (tagged with a NodePool) in ``states``."""
    out: list[dict[str, Any]] = []
    pages = ec2.get_paginator("describe_instances").paginate(
        Filters=[
            {"Name": "instance-state-name", "Values": list(states)},
            {"Name": "tag-key", "Values": [NODEPOOL_TAG]},
        ]
    )
    for page in pages:
        for reservation in page["Reservations"]:
            out.extend(reservation["Instances"])
    return out


# --------------------------------------------------------------------------- node joiner


def node_for(instance: Mapping[str, Any], nodeclaim: Mapping[str, Any]) -> dict[str, Any]:
    """The Node the instance's kubelet registers.

    Labels: the NodeClaim's (``--node-labels``), the kubelet's own (arch, os, hostname)
    and the cloud node manager's (instance type, zone, region) read from the instance.
    Taints: ``karpenter.sh/unregistered`` and the NodeClaim's taints and startup taints
    (``--register-with-taints``). Capacity and allocatable: the NodeClaim's status, what
    the instance type it was launched as reports.
    """
    name = instance.get("PrivateDnsName") or instance["InstanceId"]
    zone = instance["Placement"]["AvailabilityZone"]
    meta = nodeclaim.get("metadata") or {}
    spec = nodeclaim.get("spec") or {}
    status = nodeclaim.get("status") or {}
    arch = _ARCH.get(str(instance.get("Architecture")), "amd64")
    labels = dict(meta.get("labels") or {})
    labels.update(
        {
            "kubernetes.io/arch": arch,
            "kubernetes.io/os": "linux",
            "kubernetes.io/hostname": name,
            "node.kubernetes.io/instance-type": instance["InstanceType"],
            "topology.kubernetes.io/zone": zone,
            "topology.kubernetes.io/region": zone[:-1],
        }
    )
    pool = tags_of(instance).get(NODEPOOL_TAG)
    if pool:
        labels[NODEPOOL_TAG] = pool
    taints = [{"key": UNREGISTERED_TAINT, "effect": "NoExecute"}]
    taints += [dict(t) for t in spec.get("taints") or []]
    taints += [dict(t) for t in spec.get("startupTaints") or []]
    addresses = [{"type": "Hostname", "address": name}]
    if instance.get("PrivateIpAddress"):
        addresses.insert(0, {"type": "InternalIP", "address": instance["PrivateIpAddress"]})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"providerID": provider_id(instance), "taints": taints},
        "status": {
            "capacity": dict(status.get("capacity") or {}),
            "allocatable": dict(status.get("allocatable") or status.get("capacity") or {}),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                }
            ],
            "addresses": addresses,
            "nodeInfo": {
                "architecture": arch,
                "operatingSystem": "linux",
                "kubeletVersion": "v1.33.0",
                "machineID": instance["InstanceId"],
                "systemUUID": instance["InstanceId"],
                "bootID": instance["InstanceId"],
                "kernelVersion": "",
                "osImage": "",
                "containerRuntimeVersion": "",
                "kubeProxyVersion": "",
            },
        },
    }


def launch_template_groups(data: Mapping[str, Any]) -> list[str]:
    """The security group ids a launch template's data gives an instance."""
    groups = list(data.get("SecurityGroupIds") or [])
    for nic in data.get("NetworkInterfaces") or []:
        groups += [g for g in nic.get("Groups") or [] if g not in groups]
    return groups


class NodeJoiner:
    """Boots Karpenter's EC2 instances and plays their kubelets (see the module docstring).

    *Boot*: EC2 gives an instance its launch template's security groups; moto's CreateFleet
    does not (a known gap), which would make every instance look drifted to the provider's
    ``SecurityGroupDrift`` check. So each fleet instance gets its template's groups
    (``ModifyInstanceAttribute``) as soon as it is seen, before its kubelet joins.

    *Join*: each instance joins at most once: a kubelet registers when its machine boots,
    and a Node Karpenter deleted while terminating the instance must not come back. An
    instance whose NodeClaim is not yet written (or is being deleted) waits for the next poll.
    """

    def __init__(self, ec2: Any, kube: Any, interval: float = 0.25) -> None:
        self.ec2 = ec2
        self.kube = kube
        self.interval = interval
        self.booted: set[str] = set()  # fleet instances given their template's groups
        self.joined: dict[str, str] = {}  # instance id -> Node name
        self.errors: list[str] = []
        self._template_groups: dict[tuple[str, str], list[str]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _fleet_templates(self) -> dict[str, tuple[str, str]]:
        """Instance id -> (launch template id, version) it was launched from by a fleet."""
        out = {}
        for page in self.ec2.get_paginator("describe_fleets").paginate():
            for fleet in page["Fleets"]:
                for entry in fleet.get("Instances") or []:
                    spec = (entry.get("LaunchTemplateAndOverrides") or {}).get(
                        "LaunchTemplateSpecification"
                    ) or {}
                    if spec.get("LaunchTemplateId"):
                        for iid in entry.get("InstanceIds") or []:
                            out[iid] = (spec["LaunchTemplateId"], str(spec.get("Version", "")))
        return out

    def _groups(self, template: tuple[str, str]) -> list[str]:
        if template not in self._template_groups:
            lt_id, version = template
            versions = self.ec2.describe_launch_template_versions(
                LaunchTemplateId=lt_id, Versions=[version or "$Latest"]
            )["LaunchTemplateVersions"]
            self._template_groups[template] = launch_template_groups(
                versions[0]["LaunchTemplateData"]
            )
        return self._template_groups[template]

    def boot(self, live: list[dict[str, Any]]) -> None:
        """Give each new fleet instance in ``live`` its launch template's security groups."""
        new = [i for i in live if i["InstanceId"] not in self.booted]
        if not new:
            return
        templates = self._fleet_templates()  # read after ``live``: their fleets are in it
        for instance in new:
            iid = instance["InstanceId"]
            template = templates.get(iid)
            if template is None:  # not launched by a fleet: RunInstances applied the template
                self.booted.add(iid)
                continue
            groups = self._groups(template)
            if groups:
                self.ec2.modify_instance_attribute(InstanceId=iid, Groups=groups)
            self.booted.add(iid)

    def step(self) -> list[str]:
        """One poll: boot new instances, then register the Nodes of running, booted
        instances whose NodeClaim names them; the names of the Nodes created."""
        self.boot(instances(self.ec2, ("pending", "running")))
        claims = {
            (c.get("status") or {}).get("providerID"): c
            for c in self.kube.list(NODECLAIM).items
            if (c.get("status") or {}).get("providerID")
        }
        created = []
        for instance in instances(self.ec2, ("running",)):
            iid = instance["InstanceId"]
            claim = claims.get(provider_id(instance))
            if iid in self.joined or iid not in self.booted or claim is None:
                continue
            if claim["metadata"].get("deletionTimestamp"):
                continue
            node = node_for(instance, claim)
            with contextlib.suppress(AlreadyExists):
                create_with_status(self.kube, node)
                created.append(node["metadata"]["name"])
            self.joined[iid] = node["metadata"]["name"]
        return created

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.step()
            except Exception as e:  # keep joining: one failed poll is retried on the next
                self.errors.append(f"{type(e).__name__}: {e}")
                log.warning("node joiner: %s", e)

    def start(self) -> NodeJoiner:
        self._thread = threading.Thread(target=self._run, name="node-joiner", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)


# --------------------------------------------------------------------------- the AWS world


class AWS:
    """The cluster, moto, the seeded account, the price list and the node joiner."""

    def __init__(self, cluster: Cluster, moto: Moto, world: World, workdir: Path) -> None:
        self.cluster = cluster
        self.kube = cluster.kube
        self.moto = moto
        self.world = world
        self.workdir = workdir
        self.ec2 = moto.client("ec2")
        self.iam = moto.client("iam")
        self.price_list = write_price_list(workdir / "prices.json")
        self.joiner = NodeJoiner(self.ec2, self.kube)
        self.started: list[Serve] = []

    def install_crds(self) -> None:
        """The CRDs as users install them: ``karpenter crds --cloud-provider aws``."""
        result = CliRunner().invoke(cli_main, ["crds", "--cloud-provider", "aws"])
        assert result.exit_code == 0, result.output
        crds = [d for d in yaml.safe_load_all(result.stdout) if d]
        for crd in crds:
            with contextlib.suppress(AlreadyExists):
                self.kube.create(crd)
        for crd in crds:
            name = crd["metadata"]["name"]
            wait_for(functools.partial(self.cluster._established, name), f"the CRD {name}")

    def serve(self, name: str = "a", *extra: str, env: Mapping[str, str] | None = None) -> Serve:
        """``karpenter serve --cloud-provider aws`` against moto; ``env`` adds settings."""
        env = {
            **self.moto.env(),
            "CLUSTER_NAME": CLUSTER_NAME,
            "CLUSTER_ENDPOINT": self.cluster.cp.server,
            "PRICE_LIST_FILE": str(self.price_list),
            **(env or {}),
        }
        s = Serve(
            self.cluster, self.workdir, name, "--cloud-provider", "aws", *extra, env=env
        ).start()
        self.started.append(s)
        return s

    # -- objects

    def apply_nodeclass(self, name: str, *, subnet_tags: Mapping[str, str] | None = None) -> None:
        """An EC2NodeClass selecting subnets and security groups by the discovery tag
        (``subnet_tags`` replaces the subnet selector), the seeded AMI by id, the node role."""
        discovery = {DISCOVERY_TAG: CLUSTER_NAME}
        self.kube.create(
            {
                "apiVersion": "karpenter.k8s.aws/v1",
                "kind": "EC2NodeClass",
                "metadata": {"name": name},
                "spec": {
                    "amiFamily": "AL2023",
                    "amiSelectorTerms": [{"id": self.world.ami}],
                    "subnetSelectorTerms": [{"tags": dict(subnet_tags or discovery)}],
                    "securityGroupSelectorTerms": [{"tags": discovery}],
                    "role": self.world.role,
                },
            }
        )

    def apply_nodepool(
        self, name: str, nodeclass: str, *, consolidation: str = "WhenEmpty"
    ) -> None:
        """An on-demand NodePool of :data:`ALLOWED_TYPES`. It consolidates at once under
        ``consolidation`` (by default only empty nodes, so a test's snapshot of nodes and
        instances is not raced by a replacement), any number of nodes at a time."""
        self.kube.create(
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
                                    "key": "node.kubernetes.io/instance-type",
                                    "operator": "In",
                                    "values": list(ALLOWED_TYPES),
                                },
                                {
                                    "key": "karpenter.sh/capacity-type",
                                    "operator": "In",
                                    "values": ["on-demand"],
                                },
                            ],
                        }
                    },
                    "disruption": {
                        "consolidationPolicy": consolidation,
                        "consolidateAfter": "0s",
                        "budgets": [{"nodes": "100%"}],
                    },
                    "limits": {"cpu": "1000"},
                },
            }
        )

    def apply_deployment(
        self,
        name: str,
        replicas: int,
        *,
        cpu: str = "500m",
        nodepool: str | None = None,
        zone: str | None = None,
    ) -> None:
        """Pause pods labelled ``app=<name>``; ``nodepool`` / ``zone`` pin them to that
        NodePool / zone (a nodeSelector)."""
        pod_spec: dict[str, Any] = {
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "app",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}},
                }
            ],
        }
        selector = {}
        if nodepool is not None:
            selector[NODEPOOL_TAG] = nodepool
        if zone is not None:
            selector["topology.kubernetes.io/zone"] = zone
        if selector:
            pod_spec["nodeSelector"] = selector
        self.kube.create(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "namespace": APP_NS},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
                },
            }
        )

    def nodeclass(self, name: str) -> dict[str, Any]:
        return self.kube.get(EC2NODECLASS, name)

    def instances(self, states: tuple[str, ...] = LIVE_STATES) -> list[dict[str, Any]]:
        return instances(self.ec2, states)

    def launch_templates(self, nodeclass: str) -> dict[str, dict[str, Any]]:
        """Name -> latest LaunchTemplateData of Karpenter's templates for ``nodeclass``."""
        out = {}
        found = self.ec2.describe_launch_templates(
            Filters=[{"Name": f"tag:{NODECLASS_TAG}", "Values": [nodeclass]}]
        )["LaunchTemplates"]
        for lt in found:
            if lt["LaunchTemplateName"].startswith("karpenter.k8s.aws/validation-"):
                continue  # the EC2NodeClass validation's, there only during its dry run
            versions = self.ec2.describe_launch_template_versions(
                LaunchTemplateId=lt["LaunchTemplateId"], Versions=["$Latest"]
            )["LaunchTemplateVersions"]
            out[lt["LaunchTemplateName"]] = dict(versions[0]["LaunchTemplateData"])
        return out

    def instance(self, instance_id: str) -> dict[str, Any] | None:
        reservations = self.ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
        found = [i for r in reservations for i in r["Instances"]]
        return found[0] if found else None

    def report(self) -> None:
        """Printed at teardown (pytest shows it when the test failed)."""
        for s in self.started:
            print(f"--- {s.log.name} (last lines)\n{s.log_tail(80)}")
        if self.joiner.errors:
            print("--- node joiner errors:", self.joiner.errors[-10:])
        with contextlib.suppress(ApiError, OSError):
            print(
                "--- nodeclaims:",
                [
                    (c["metadata"]["name"], (c.get("status") or {}).get("providerID"))
                    for c in self.cluster.nodeclaims()
                ],
            )
        with contextlib.suppress(ApiError):
            for nc in self.kube.list(EC2NODECLASS).items:
                print(f"--- EC2NodeClass {nc['metadata']['name']} status:", nc.get("status"))
        with contextlib.suppress(Exception):
            print(
                "--- instances:",
                [
                    (i["InstanceId"], i["InstanceType"], i["State"]["Name"])
                    for i in self.instances((*LIVE_STATES, "terminated"))
                ],
            )


@pytest.fixture(name="moto")
def moto_fixture() -> Iterator[Moto]:
    m = Moto().start()
    try:
        yield m
    finally:
        m.stop()


@pytest.fixture(name="aws")
def aws_fixture(cluster: Cluster, moto: Moto, tmp_path: Path) -> Iterator[AWS]:
    """The seeded account, the AWS CRDs installed and the node joiner running;
    ``aws.serve()`` starts ``karpenter serve --cloud-provider aws``."""
    env = AWS(cluster, moto, seed(moto), tmp_path)
    env.install_crds()
    env.joiner.start()
    try:
        yield env
    finally:
        env.joiner.stop()
        for s in env.started:
            if not s.exited():
                s.kill9()
        env.report()


def claims_by_instance(aws: AWS) -> dict[str, dict[str, Any]]:
    return {
        instance_id_of(c["status"]["providerID"]): c
        for c in aws.cluster.nodeclaims()
        if (c.get("status") or {}).get("providerID")
    }
