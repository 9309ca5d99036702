"""EC2NodeClass networking against moto's server: interfaces (EFA), IPv6, prefixes,
connection tracking and CPU options in the launch templates EC2 stores, pod-ENI and EFA
capacity and the compatibility checks on moto's instance types."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from karpenter_aws.clients import AWSClients
from karpenter_aws.launchtemplate import LaunchTemplateProvider, TemplateInputs
from karpenter_aws.network import Interfaces, compatible, pod_eni
from karpenter_aws.nodeclass import EC2NodeClass, NetworkInterface, NodeClassError
from karpenter_aws.userdata import UserDataOptions

SG = ("sg-0123",)


def _inputs(family: str = "AL2023", **network: Any) -> TemplateInputs:
    dns = network.pop("cluster_dns", ("10.100.0.10",))
    return TemplateInputs(
        family=family,
        instance_profile="profile",
        security_group_ids=SG,
        tags={"eks:eks-cluster-name": "demo"},
        user_data=UserDataOptions(
            cluster_name="demo",
            cluster_endpoint="https://example.com",
            cluster_cidr="10.100.0.0/16",
            cluster_dns=dns,
        ),
        network=Interfaces.of(
            SG,
            associate_public_ip=network.pop("associate_public_ip", None),
            cluster_dns=dns,
            ip_prefix_count=network.pop("ip_prefix_count", None),
            connection_tracking=network.pop("connection_tracking", None),
            configured=network.pop("configured", None),
        ),
        nested_virtualization=network.pop("nested_virtualization", None),
    )


def _stored(clients: AWSClients, inputs: TemplateInputs, efa: int = 0) -> dict[str, Any]:
    """Create the template in EC2 and read back what EC2 stored."""
    name = LaunchTemplateProvider(clients.ec2).ensure(inputs.spec("ami-1", 29, "on-demand", efa))
    versions = clients.ec2.describe_launch_template_versions(
        LaunchTemplateName=name, Versions=["$Latest"]
    )["LaunchTemplateVersions"]
    return dict(versions[0]["LaunchTemplateData"])


def test_a_plain_class_keeps_the_one_default_interface_and_its_template_name(
    clients: AWSClients,
) -> None:
    plain = _inputs()
    assert plain.spec("ami-1", 29, "on-demand").network is None
    data = _stored(clients, plain)
    assert data["NetworkInterfaces"] == [{"DeviceIndex": 0, "Groups": list(SG)}]
    assert "CpuOptions" not in data


def test_ip_prefix_count_asks_for_ipv4_prefixes_in_an_ipv4_cluster(clients: AWSClients) -> None:
    data = _stored(clients, _inputs(ip_prefix_count=2))
    (nic,) = data["NetworkInterfaces"]
    assert nic["Ipv4PrefixCount"] == 2
    assert "Ipv6PrefixCount" not in nic and "PrimaryIpv6" not in nic


def test_an_ipv6_cluster_gets_primary_ipv6_prefixes_and_the_al2_ip_family(
    clients: AWSClients,
) -> None:
    inputs = _inputs("AL2", cluster_dns=("fd00:10:96::a",), ip_prefix_count=1)
    data = _stored(clients, inputs)
    (nic,) = data["NetworkInterfaces"]
    assert nic["PrimaryIpv6"] is True
    assert nic["Ipv6AddressCount"] == 1
    assert nic["Ipv6PrefixCount"] == 1 and "Ipv4PrefixCount" not in nic
    user_data = base64.b64decode(data["UserData"]).decode()
    assert "--ip-family ipv6" in user_data
    assert (
        "--ip-family" not in base64.b64decode(_stored(clients, _inputs("AL2"))["UserData"]).decode()
    )


def test_configured_interfaces_replace_the_default_and_efa_only_ones_get_no_addressing(
    clients: AWSClients,
) -> None:
    nics = (
        NetworkInterface(0, 0, "interface"),
        NetworkInterface(1, 0, "efa-only"),
    )
    data = _stored(
        clients,
        _inputs(
            configured=nics,
            ip_prefix_count=3,
            associate_public_ip=False,
            connection_tracking=EC2NodeClass.from_dict(
                _class(connectionTracking={"udpTimeout": 45})
            ).connection_tracking,
        ),
    )
    ena, efa = sorted(data["NetworkInterfaces"], key=lambda n: n["NetworkCardIndex"])
    assert ena["InterfaceType"] == "interface" and ena["Ipv4PrefixCount"] == 3
    assert ena["AssociatePublicIpAddress"] is False
    assert ena["ConnectionTrackingSpecification"] == {"UdpTimeout": 45}
    assert efa["InterfaceType"] == "efa-only" and efa["DeviceIndex"] == 0
    for key in ("Ipv4PrefixCount", "AssociatePublicIpAddress", "ConnectionTrackingSpecification"):
        assert key not in efa


def test_a_nodeclaim_asking_for_efa_gets_one_efa_interface_per_card(clients: AWSClients) -> None:
    data = _stored(clients, _inputs(), efa=2)
    cards = sorted(data["NetworkInterfaces"], key=lambda n: n["NetworkCardIndex"])
    assert [(n["NetworkCardIndex"], n["DeviceIndex"], n["InterfaceType"]) for n in cards] == [
        (0, 0, "efa"),
        (1, 1, "efa"),
    ]


def test_nested_virtualization_is_in_the_cpu_options(clients: AWSClients) -> None:
    data = _stored(clients, _inputs(nested_virtualization="enabled"))
    assert data["CpuOptions"] == {"NestedVirtualization": "enabled"}


def _class(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "c"},
        "spec": {
            "subnetSelectorTerms": [{"id": "subnet-1"}],
            "securityGroupSelectorTerms": [{"id": "sg-1"}],
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "role": "r",
            **spec,
        },
    }


@pytest.mark.parametrize(
    ("nics", "message"),
    [
        ([{"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "interface"}], "primary"),
        (
            [
                {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
                {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "efa-only"},
            ],
            "duplicate",
        ),
        ([{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "efa"}], "interfaceType"),
    ],
)
def test_network_interfaces_follow_the_crd_rules(nics: list[Any], message: str) -> None:
    with pytest.raises(NodeClassError, match=message):
        EC2NodeClass.from_dict(_class(networkInterfaces=nics))


def _types(clients: AWSClients, *names: str) -> dict[str, Any]:
    out = clients.ec2.describe_instance_types(InstanceTypes=list(names))["InstanceTypes"]
    return {i["InstanceType"]: i for i in out}


def test_pod_eni_is_the_trunking_types_branch_count() -> None:
    assert pod_eni("m5.large") == 9
    assert pod_eni("t3.micro") == 0  # not trunking capable


def test_compatibility_rules_out_types_without_the_asked_interfaces(clients: AWSClients) -> None:
    infos = _types(clients, "m5.large", "p4d.24xlarge")
    efa = (NetworkInterface(0, 0, "interface"), NetworkInterface(1, 0, "efa-only"))
    kwargs: dict[str, Any] = {"nested_virtualization": None, "connection_tracking": False}
    assert not compatible(infos["m5.large"], network_interfaces=efa, **kwargs)
    assert compatible(infos["p4d.24xlarge"], network_interfaces=efa, **kwargs)
    assert compatible(infos["m5.large"], network_interfaces=None, **kwargs)
