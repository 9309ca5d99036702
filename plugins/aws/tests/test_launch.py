"""User data per AMI family and launch templates (content-hash names, ensure/invalidate/
delete against moto's EC2)."""

from __future__ import annotations

import base64
import email
import tomllib
from typing import Any

import attrs
import pytest
import yaml
from karpenter_aws.clients import AWSClients
from karpenter_aws.launchtemplate import (
    BlockDevice,
    LaunchTemplateProvider,
    LaunchTemplateSpec,
    MetadataOptions,
    TemplateInputs,
    block_device_from,
    default_block_devices,
)
from karpenter_aws.nodeclass import BlockDeviceMapping
from karpenter_aws.userdata import Taint, UserDataError, UserDataOptions, render

OPTS = UserDataOptions(
    cluster_name="test-cluster",
    cluster_endpoint="https://test-cluster",
    ca_bundle="Y2EtYnVuZGxlCg==",
    cluster_cidr="10.100.0.0/16",
    cluster_dns=("10.0.100.10",),
    max_pods=110,
    kube_reserved={"cpu": "70m"},
    labels={"karpenter.sh/nodepool": "default", "karpenter.sh/capacity-type": "on-demand"},
    taints=(Taint("karpenter.sh/unregistered", "NoExecute"), Taint("gpu", "NoSchedule", "true")),
)


def parts(text: str) -> list[tuple[str, str]]:
    msg = email.message_from_string(text)
    assert msg.is_multipart()
    return [(p.get_content_type(), p.get_payload()) for p in msg.get_payload()]


def nodeconfig(text: str) -> dict[str, Any]:
    [config] = [
        body
        for ctype, body in parts(text)
        if ctype == "application/node.eks.aws" and "Karpenter Generated" in body
    ]
    return dict(yaml.safe_load(config))


# --- user data --------------------------------------------------------------------------


def test_al2023_is_a_mime_archive_ending_in_karpenters_nodeconfig() -> None:
    out = render("AL2023", OPTS)
    assert out.startswith('MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"')
    cfg = nodeconfig(out)
    assert (cfg["apiVersion"], cfg["kind"]) == ("node.eks.aws/v1alpha1", "NodeConfig")
    assert cfg["spec"]["cluster"] == {
        "name": "test-cluster",
        "apiServerEndpoint": "https://test-cluster",
        "certificateAuthority": "Y2EtYnVuZGxlCg==",
        "cidr": "10.100.0.0/16",
    }
    kubelet = cfg["spec"]["kubelet"]
    assert kubelet["config"]["maxPods"] == 110 and kubelet["config"]["clusterDNS"] == [
        "10.0.100.10"
    ]
    assert kubelet["config"]["kubeReserved"] == {"cpu": "70m"}
    assert kubelet["config"]["registerWithTaints"] == [
        {"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
        {"key": "gpu", "value": "true", "effect": "NoSchedule"},
    ]
    assert kubelet["flags"] == [
        '--node-labels="karpenter.sh/capacity-type=on-demand,karpenter.sh/do-not-sync-taints=true,'
        'karpenter.sh/nodepool=default"'
    ]


@pytest.mark.parametrize(
    ("custom", "ctype"),
    [
        ("#!/bin/bash\necho hello\n", "text/x-shellscript"),
        (
            "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      maxPods: 42\n",
            "application/node.eks.aws",
        ),
    ],
)
def test_al2023_custom_user_data_comes_first(custom: str, ctype: str) -> None:
    out = render("AL2023", attrs.evolve(OPTS, custom_user_data=custom))
    got = parts(out)
    assert len(got) == 2 and got[0][0] == ctype and got[0][1].strip() == custom.strip()
    assert "Karpenter Generated NodeConfig" in got[1][1]


def test_al2023_custom_mime_archive_is_split_into_its_parts() -> None:
    custom = (
        'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="BOUNDARY"\n\n'
        '--BOUNDARY\nContent-Type: text/x-shellscript; charset="us-ascii"\n\necho one\n\n'
        "--BOUNDARY\nContent-Type: text/x-shellscript\n\necho two\n\n--BOUNDARY--\n"
    )
    got = parts(render("AL2023", attrs.evolve(OPTS, custom_user_data=custom)))
    assert [body.strip() for _, body in got[:2]] == ["echo one", "echo two"] and len(got) == 3


def test_al2_runs_bootstrap_sh_with_the_kubelet_flags() -> None:
    [(ctype, script)] = parts(render("AL2", OPTS))
    assert ctype == "text/x-shellscript"
    assert (
        "/etc/eks/bootstrap.sh 'test-cluster' --apiserver-endpoint 'https://test-cluster'" in script
    )
    assert (
        "--b64-cluster-ca 'Y2EtYnVuZGxlCg=='" in script
        and "--dns-cluster-ip '10.0.100.10'" in script
    )
    assert "--use-max-pods false" in script and "--max-pods=110" in script
    assert (
        '--register-with-taints="karpenter.sh/unregistered:NoExecute,gpu=true:NoSchedule"' in script
    )
    assert '--kube-reserved="cpu=70m"' in script


def test_bottlerocket_merges_karpenters_settings_over_the_users_toml() -> None:
    custom = '[settings.kubernetes]\nmax-pods = 5\n"cluster-name" = "wrong"\n[settings.host-containers.admin]\nenabled = true\n'
    doc = tomllib.loads(render("Bottlerocket", attrs.evolve(OPTS, custom_user_data=custom)))
    k8s = doc["settings"]["kubernetes"]
    assert k8s["cluster-name"] == "test-cluster" and k8s["max-pods"] == 110
    assert k8s["api-server"] == "https://test-cluster" and k8s["cluster-dns-ip"] == "10.0.100.10"
    assert k8s["node-labels"]["karpenter.sh/nodepool"] == "default"
    assert k8s["node-taints"] == {
        "karpenter.sh/unregistered": [":NoExecute"],
        "gpu": ["true:NoSchedule"],
    }
    assert doc["settings"]["host-containers"]["admin"]["enabled"] is True


def test_custom_family_user_data_is_used_verbatim() -> None:
    assert (
        render("Custom", attrs.evolve(OPTS, custom_user_data="#!/bin/sh\nboot\n"))
        == "#!/bin/sh\nboot\n"
    )
    assert render("Custom", OPTS) == ""


def test_windows_runs_start_eks_bootstrap_after_the_users_powershell() -> None:
    out = render("Windows2022", attrs.evolve(OPTS, custom_user_data='Write-Host "custom"\n'))
    lines = out.split("\n")
    assert lines[0] == "<powershell>" and lines[-1] == "</powershell>"
    assert lines[1] == 'Write-Host "custom"'
    assert (
        lines[2]
        == '[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1"'
    )
    cmd = lines[3]
    assert cmd.startswith(
        "& $EKSBootstrapScriptFile -EKSClusterName 'test-cluster' -APIServerEndpoint 'https://test-cluster'"
    )
    assert "-Base64ClusterCA 'Y2EtYnVuZGxlCg=='" in cmd and cmd.endswith(
        "-DNSClusterIP '10.0.100.10'"
    )
    assert (
        "--max-pods=110" in cmd
        and '--register-with-taints="karpenter.sh/unregistered:NoExecute,gpu=true:NoSchedule"'
        in cmd
    )


def test_unknown_families_and_bad_custom_data_are_named_errors() -> None:
    with pytest.raises(UserDataError, match="Plan9"):
        render("Plan9", OPTS)
    with pytest.raises(UserDataError, match="Bottlerocket TOML"):
        render("Bottlerocket", attrs.evolve(OPTS, custom_user_data="not = [toml"))


# --- launch template specs ------------------------------------------------------------------


def spec(**changes: Any) -> LaunchTemplateSpec:
    base = LaunchTemplateSpec(
        image_id="ami-1",
        instance_profile="profile",
        security_group_ids=("sg-2", "sg-1"),
        user_data="#!/bin/sh\n",
        capacity_type="on-demand",
        tags={"karpenter.k8s.aws/ec2nodeclass": "default", "eks:eks-cluster-name": "test-cluster"},
        block_devices=(BlockDevice("/dev/xvda", 20, "gp3", True),),
    )
    return attrs.evolve(base, **changes)


def test_the_name_is_a_hash_of_the_content() -> None:
    assert (
        spec().name() == spec(security_group_ids=("sg-1", "sg-2")).name()
    )  # order does not matter
    assert spec().name().startswith("karpenter.k8s.aws/")
    for change in (
        {"image_id": "ami-2"},
        {"user_data": "x"},
        {"capacity_type": "spot"},
        {"tenancy": "dedicated"},
    ):
        assert spec(**change).name() != spec().name()


def test_request_carries_the_content() -> None:
    req = spec(capacity_type="spot", associate_public_ip=False).request()
    data = req["LaunchTemplateData"]
    assert req["LaunchTemplateName"] == spec(capacity_type="spot", associate_public_ip=False).name()
    assert base64.b64decode(data["UserData"]).decode() == "#!/bin/sh\n"
    assert data["NetworkInterfaces"] == [
        {"DeviceIndex": 0, "Groups": ["sg-1", "sg-2"], "AssociatePublicIpAddress": False}
    ]
    assert data["BlockDeviceMappings"] == [
        {
            "DeviceName": "/dev/xvda",
            "Ebs": {"VolumeSize": 20, "VolumeType": "gp3", "Encrypted": True},
        }
    ]
    assert data["MetadataOptions"] == {
        "HttpEndpoint": "enabled",
        "HttpProtocolIpv6": "disabled",
        "HttpPutResponseHopLimit": 1,
        "HttpTokens": "required",
        "InstanceMetadataTags": "disabled",
    }
    assert [t["ResourceType"] for t in data["TagSpecifications"]] == [
        "network-interface",
        "spot-instances-request",
    ]
    assert "spot-instances-request" not in str(
        spec().request()["LaunchTemplateData"]["TagSpecifications"]
    )


def test_block_devices_from_the_nodeclass_round_sizes_up_to_gib() -> None:
    bdm = BlockDeviceMapping(
        device_name="/dev/xvdb",
        volume_size=100 * 10**9,
        volume_type="io2",
        iops=3000,
        encrypted=True,
    )
    assert block_device_from(bdm) == BlockDevice("/dev/xvdb", 94, "io2", True, None, 3000)


def test_template_inputs_fill_in_max_pods_capacity_type_and_family_disks() -> None:
    inputs = TemplateInputs(
        family="AL2023",
        instance_profile="p",
        security_group_ids=("sg-1",),
        user_data=attrs.evolve(OPTS, max_pods=None, labels={}),
        metadata_options=MetadataOptions(http_put_response_hop_limit=2),
    )
    s = inputs.spec("ami-1", 29, "spot")
    cfg = nodeconfig(s.user_data)
    assert cfg["spec"]["kubelet"]["config"]["maxPods"] == 29
    assert "karpenter.sh/capacity-type=spot" in cfg["spec"]["kubelet"]["flags"][0]
    assert s.block_devices == (BlockDevice("/dev/xvda", 20, "gp3", True),)
    # the user's own maxPods wins over the computed one
    users = attrs.evolve(inputs, user_data=attrs.evolve(OPTS, max_pods=50))
    assert (
        nodeconfig(users.spec("ami-1", 29, "spot").user_data)["spec"]["kubelet"]["config"][
            "maxPods"
        ]
        == 50
    )


# --- the provider against moto ------------------------------------------------------------


def test_ensure_creates_once_and_recreates_after_invalidate(clients: AWSClients) -> None:
    now = [0.0]
    lts = LaunchTemplateProvider(clients.ec2, monotonic=lambda: now[0])
    s = spec()
    name = lts.ensure(s)
    [lt] = clients.ec2.describe_launch_templates()["LaunchTemplates"]
    assert lt["LaunchTemplateName"] == name
    assert {t["Key"]: t["Value"] for t in lt["Tags"]}["karpenter.k8s.aws/ec2nodeclass"] == "default"

    clients.ec2.delete_launch_template(LaunchTemplateName=name)
    assert lts.ensure(s) == name  # still cached: no call made
    assert clients.ec2.describe_launch_templates()["LaunchTemplates"] == []
    now[0] = 61.0  # past the cache TTL: looked up, found missing, created
    assert lts.ensure(s) == name
    assert len(clients.ec2.describe_launch_templates()["LaunchTemplates"]) == 1
    clients.ec2.delete_launch_template(LaunchTemplateName=name)
    lts.invalidate(name)
    lts.ensure(s)
    assert len(clients.ec2.describe_launch_templates()["LaunchTemplates"]) == 1

    other = LaunchTemplateProvider(clients.ec2)  # a restarted process finds the template
    assert other.ensure(s) == name
    assert len(clients.ec2.describe_launch_templates()["LaunchTemplates"]) == 1


def test_delete_all_removes_only_the_nodeclass_templates(clients: AWSClients) -> None:
    lts = LaunchTemplateProvider(clients.ec2)
    mine = lts.ensure(spec())
    lts.ensure(spec(image_id="ami-2"))
    theirs = lts.ensure(
        spec(
            tags={"karpenter.k8s.aws/ec2nodeclass": "other", "eks:eks-cluster-name": "test-cluster"}
        )
    )
    assert mine != theirs
    assert lts.delete_all("test-cluster", "default") == 2
    names = [
        t["LaunchTemplateName"] for t in clients.ec2.describe_launch_templates()["LaunchTemplates"]
    ]
    assert names == [theirs]


@pytest.mark.parametrize(
    ("family", "devices"),
    [
        ("AL2023", [("/dev/xvda", 20)]),
        ("AL2", [("/dev/xvda", 20)]),
        ("Bottlerocket", [("/dev/xvda", 4), ("/dev/xvdb", 20)]),
        ("Windows2022", [("/dev/sda1", 50)]),
        ("Custom", []),
    ],
)
def test_family_default_block_devices_are_encrypted_gp3(
    family: str, devices: list[tuple[str, int]]
) -> None:
    got = default_block_devices(family)
    assert [(b.device_name, b.volume_size_gib) for b in got] == devices
    assert all(b.volume_type == "gp3" and b.encrypted for b in got)
