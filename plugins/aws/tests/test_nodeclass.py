"""EC2NodeClass parsing: the CRD's rules enforced in Python, errors naming the field, the
resolved views the catalogue and launch code read, and the drift hash."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from karpenter_aws.nodeclass import (
    HASH_VERSION,
    EC2NodeClass,
    NodeClassError,
    get_nodeclass,
    parse_alias,
)

from karpenter_core.sim.apiserver import InMemoryApiServer


def manifest(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "role": "KarpenterNodeRole-demo",
    }
    base.update(spec)
    for k in [k for k, v in base.items() if v is None]:
        del base[k]
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default", "uid": "u-1", "generation": 2},
        "spec": base,
    }


def parse(**spec: Any) -> EC2NodeClass:
    return EC2NodeClass.from_dict(manifest(**spec))


def test_minimal_alias_class_resolves_family_and_defaults() -> None:
    nc = parse()
    assert nc.name == "default" and nc.uid == "u-1" and nc.generation == 2
    assert nc.ami_family == "AL2023"
    assert nc.role == "KarpenterNodeRole-demo" and nc.instance_profile is None
    assert nc.subnet_selector_terms[0].tags == {"karpenter.sh/discovery": "demo"}
    # metadataOptions default from the CRD
    mo = nc.metadata_options
    assert (mo.http_endpoint, mo.http_protocol_ipv6, mo.http_put_response_hop_limit) == (
        "enabled",
        "disabled",
        1,
    )
    assert mo.http_tokens == "required"
    assert nc.detailed_monitoring is False and nc.associate_public_ip is None


def test_explicit_ami_family_wins_over_alias_family() -> None:
    nc = parse(amiFamily="Custom")
    assert nc.ami_family == "Custom"


def test_full_spec_parses() -> None:
    nc = parse(
        amiSelectorTerms=[{"id": "ami-0123abcd"}, {"name": "my-ami-*", "owner": "self"}],
        amiFamily="Bottlerocket",
        kubelet={
            "maxPods": 42,
            "podsPerCore": 2,
            "kubeReserved": {"cpu": "100m", "memory": "1Gi"},
            "systemReserved": {"memory": "200Mi"},
            "evictionHard": {"memory.available": "5%"},
            "clusterDNS": ["10.0.0.10"],
            "imageGCHighThresholdPercent": 85,
        },
        blockDeviceMappings=[
            {
                "deviceName": "/dev/xvda",
                "rootVolume": True,
                "ebs": {"volumeSize": "100Gi", "volumeType": "gp3", "encrypted": True},
            },
            {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "1Ti", "iops": 3000}},
        ],
        tags={"team": "a"},
        userData="echo hi",
        associatePublicIPAddress=False,
        detailedMonitoring=True,
        instanceStorePolicy="RAID0",
        context="ctx",
        metadataOptions={"httpPutResponseHopLimit": 2, "httpTokens": "optional"},
    )
    assert nc.ami_family == "Bottlerocket"
    assert nc.ami_selector_terms[1].owner == "self"
    assert nc.kubelet.max_pods == 42 and nc.kubelet.pods_per_core == 2
    assert nc.kubelet.kube_reserved == {"cpu": "100m", "memory": "1Gi"}
    assert nc.kubelet.cluster_dns == ("10.0.0.10",)
    assert nc.kubelet.raw["imageGCHighThresholdPercent"] == 85
    root, data = nc.block_device_mappings
    assert root.root_volume and root.volume_size == 100 * 1024**3 and root.encrypted is True
    assert data.volume_size == 1024**4 and data.iops == 3000
    assert nc.metadata_options.http_put_response_hop_limit == 2
    assert nc.metadata_options.http_tokens == "optional"
    assert nc.associate_public_ip is False and nc.detailed_monitoring is True
    assert (nc.instance_store_policy, nc.context, nc.user_data) == ("RAID0", "ctx", "echo hi")


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"subnetSelectorTerms": []}, "spec.subnetSelectorTerms"),
        ({"subnetSelectorTerms": [{}]}, "spec.subnetSelectorTerms[0]"),
        ({"subnetSelectorTerms": [{"id": "sg-1"}]}, "spec.subnetSelectorTerms[0].id"),
        (
            {"subnetSelectorTerms": [{"id": "subnet-1", "tags": {"a": "b"}}]},
            "spec.subnetSelectorTerms[0]",
        ),
        ({"subnetSelectorTerms": [{"tags": {"a": ""}}]}, "spec.subnetSelectorTerms[0].tags"),
        (
            {"securityGroupSelectorTerms": [{"id": "sg-1", "name": "x"}]},
            "spec.securityGroupSelectorTerms[0]",
        ),
        ({"securityGroupSelectorTerms": "sg-1"}, "spec.securityGroupSelectorTerms"),
        ({"amiSelectorTerms": [{"alias": "al2023"}]}, "spec.amiSelectorTerms[0].alias"),
        ({"amiSelectorTerms": [{"alias": "ubuntu@latest"}]}, "spec.amiSelectorTerms[0].alias"),
        (
            {"amiSelectorTerms": [{"alias": "windows2022@v1"}]},
            "spec.amiSelectorTerms[0].alias",
        ),
        (
            {"amiSelectorTerms": [{"alias": "al2023@latest"}, {"id": "ami-1"}]},
            "spec.amiSelectorTerms",
        ),
        ({"amiSelectorTerms": [{"id": "ami-1", "name": "x"}]}, "spec.amiSelectorTerms[0]"),
        ({"amiSelectorTerms": [{"id": "ami-1"}]}, "spec.amiFamily"),
        ({"amiFamily": "Ubuntu"}, "spec.amiFamily"),
        ({"amiFamily": "AL2"}, "spec.amiFamily"),
        ({"role": None}, "spec"),
        ({"instanceProfile": "p"}, "spec"),
        ({"role": ""}, "spec.role"),
        ({"tags": {"karpenter.sh/nodepool": "x"}}, "spec.tags"),
        ({"tags": {"kubernetes.io/cluster/demo": "owned"}}, "spec.tags"),
        ({"tags": {"a": 1}}, "spec.tags"),
        ({"kubelet": {"maxPods": "a+b"}}, "spec.kubelet.maxPods"),
        ({"kubelet": {"maxPods": True}}, "spec.kubelet.maxPods"),
        ({"kubelet": {"kubeReserved": {"cpu": "lots"}}}, "spec.kubelet.kubeReserved.cpu"),
        ({"kubelet": {"clusterDNS": "10.0.0.10"}}, "spec.kubelet.clusterDNS"),
        (
            {"blockDeviceMappings": [{"ebs": {"volumeSize": "100"}}]},
            "spec.blockDeviceMappings[0].ebs.volumeSize",
        ),
        (
            {"blockDeviceMappings": [{"ebs": {"volumeSize": "1Gi", "volumeType": "gp9"}}]},
            "spec.blockDeviceMappings[0].ebs.volumeType",
        ),
        ({"blockDeviceMappings": [{"ebs": {}}]}, "spec.blockDeviceMappings[0].ebs"),
        (
            {
                "blockDeviceMappings": [
                    {"rootVolume": True, "ebs": {"volumeSize": "1Gi"}},
                    {"rootVolume": True, "ebs": {"volumeSize": "2Gi"}},
                ]
            },
            "spec.blockDeviceMappings",
        ),
        ({"metadataOptions": {"httpTokens": "maybe"}}, "spec.metadataOptions.httpTokens"),
        (
            {"metadataOptions": {"httpPutResponseHopLimit": 65}},
            "spec.metadataOptions.httpPutResponseHopLimit",
        ),
        ({"instanceStorePolicy": "RAID1"}, "spec.instanceStorePolicy"),
        ({"detailedMonitoring": "yes"}, "spec.detailedMonitoring"),
    ],
)
def test_bad_input_is_named_by_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(NodeClassError) as err:
        parse(**spec)
    assert f"'default': {field}:" in str(err.value)


def test_not_an_object() -> None:
    with pytest.raises(NodeClassError, match="expected an object, got a list"):
        EC2NodeClass.from_dict([])


def test_parse_alias() -> None:
    a = parse_alias("bottlerocket@v1.20.0")
    assert (a.family, a.version, str(a)) == ("Bottlerocket", "v1.20.0", "bottlerocket@v1.20.0")


def test_status_is_read() -> None:
    obj = manifest()
    obj["status"] = {
        "subnets": [
            {"id": "subnet-1", "zone": "us-west-2a", "zoneID": "usw2-az1"},
            {"id": "subnet-2", "zone": "us-west-2b", "zoneID": "usw2-az2"},
            {"id": "subnet-3", "zone": "us-west-2a", "zoneID": "usw2-az1"},
        ],
        "securityGroups": [{"id": "sg-1", "name": "nodes"}],
        "amis": [
            {
                "id": "ami-1",
                "name": "al2023-arm",
                "requirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}
                ],
            }
        ],
        "instanceProfile": "demo_123",
        "conditions": [{"type": "Ready", "status": "True", "observedGeneration": 2}],
    }
    nc = EC2NodeClass.from_dict(obj)
    assert nc.zones() == frozenset({"us-west-2a", "us-west-2b"})
    assert nc.subnets[1].zone_id == "usw2-az2"
    assert nc.security_groups[0].name == "nodes"
    assert nc.amis[0].requirements.get("kubernetes.io/arch").values == frozenset({"arm64"})
    assert nc.status_instance_profile == "demo_123" == nc.instance_profile_name
    assert nc.ready() is True


def _with_ready(status: str, observed: int, **extra: str) -> EC2NodeClass:
    obj = manifest()
    obj["status"] = {
        "conditions": [{"type": "Ready", "status": status, "observedGeneration": observed, **extra}]
    }
    return EC2NodeClass.from_dict(obj)


def test_ready_false_carries_the_reason() -> None:
    nc = _with_ready("False", 2, reason="SubnetsNotFound", message="no subnets matched")
    assert nc.ready() is False
    assert nc.ready_message() == "SubnetsNotFound; no subnets matched"


def test_ready_message_names_the_failing_dependents() -> None:
    obj = manifest()
    obj["status"] = {
        "conditions": [
            {
                "type": "SubnetsReady",
                "status": "False",
                "reason": "SubnetsNotFound",
                "message": "SubnetSelector did not match any Subnets",
                "observedGeneration": 2,
            },
            {"type": "AMIsReady", "status": "True", "reason": "AMIsReady", "observedGeneration": 2},
            {
                "type": "Ready",
                "status": "False",
                "reason": "UnhealthyDependents",
                "message": "SubnetsReady=False",
                "observedGeneration": 2,
            },
        ]
    }
    nc = EC2NodeClass.from_dict(obj)
    assert nc.ready() is False
    assert nc.ready_message() == (
        "SubnetsReady: SubnetsNotFound: SubnetSelector did not match any Subnets"
    )


def test_ready_is_unknown_for_an_older_generation_or_no_condition() -> None:
    assert _with_ready("True", 1).ready() is None
    assert "generation 1" in _with_ready("True", 1).ready_message()
    assert _with_ready("Unknown", 2).ready() is None
    assert parse().ready() is None


def test_bad_status_is_named_by_field() -> None:
    obj = manifest()
    obj["status"] = {"amis": [{"id": "ami-1", "requirements": [{"key": "a", "operator": "Nope"}]}]}
    with pytest.raises(NodeClassError, match=r"status.amis\[0\].requirements"):
        EC2NodeClass.from_dict(obj)


# --- hash -----------------------------------------------------------------------------------


def test_hash_version() -> None:
    assert HASH_VERSION == "v6"


def test_hash_ignores_selector_terms_unset_values_and_order() -> None:
    base = parse(tags={"a": "1", "b": "2"})
    moved = parse(
        tags={"b": "2", "a": "1"},
        subnetSelectorTerms=[{"id": "subnet-9"}],
        securityGroupSelectorTerms=[{"name": "other"}],
        amiSelectorTerms=[{"alias": "al2023@v20240807"}],
        blockDeviceMappings=[],
        kubelet={},
    )
    assert base.hash() == moved.hash()


def test_hash_explicit_false_differs_from_unset() -> None:
    # upstream's optional fields are pointers: false is a choice, unset is the default
    assert parse(associatePublicIPAddress=False).hash() != parse().hash()
    assert parse(detailedMonitoring=False).hash() != parse().hash()


def test_hash_root_volume_false_is_unset() -> None:
    plain = parse(blockDeviceMappings=[{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi"}}])
    explicit = parse(
        blockDeviceMappings=[
            {"deviceName": "/dev/xvda", "rootVolume": False, "ebs": {"volumeSize": "20Gi"}}
        ]
    )
    assert plain.hash() == explicit.hash()


def test_hash_kubelet_zero_values_are_ignored() -> None:
    assert parse(kubelet={"podsPerCore": 0}).hash() == parse().hash()


def test_hash_changes_with_hashed_fields() -> None:
    base = parse().hash()
    assert parse(userData="echo").hash() != base
    assert parse(tags={"a": "1"}).hash() != base
    assert parse(detailedMonitoring=True).hash() != base
    assert parse(kubelet={"maxPods": 10}).hash() != base
    assert parse(amiFamily="Custom").hash() != base  # resolved family differs
    assert parse().hash(ca_bundle="Q0E=") != base


def test_hash_lists_are_sets_and_volume_sizes_compare_in_bytes() -> None:
    a = parse(
        blockDeviceMappings=[
            {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "1Ti"}},
            {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "20Gi"}},
        ]
    )
    b = parse(
        blockDeviceMappings=[
            {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "20Gi"}},
            {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "1024Gi"}},
        ]
    )
    assert a.hash() == b.hash()


def test_hash_kubelet_clusterdns_is_a_set() -> None:
    a = parse(kubelet={"clusterDNS": ["10.0.0.10", "10.0.0.11"]})
    b = parse(kubelet={"clusterDNS": ["10.0.0.11", "10.0.0.10"]})
    assert a.hash() == b.hash()
    assert a.kubelet.canonical() == b.kubelet.canonical()


def test_from_dict_does_not_alias_the_input() -> None:
    obj = manifest(kubelet={"maxPods": 3})
    before = copy.deepcopy(obj)
    nc = EC2NodeClass.from_dict(obj)
    obj["spec"]["kubelet"]["maxPods"] = 9
    assert nc.kubelet.raw["maxPods"] == 3
    assert before["spec"]["kubelet"]["maxPods"] == 3


def test_get_nodeclass() -> None:
    server = InMemoryApiServer()
    assert get_nodeclass(server, "default") is None
    server.create(manifest())
    nc = get_nodeclass(server, "default")
    assert nc is not None and nc.ami_family == "AL2023"


# --- kubelet semantics --------------------------------------------------------------------


def test_the_example_kubelet_settings_have_no_problems() -> None:
    nc = parse(
        kubelet={
            "evictionHard": {"memory.available": "5%", "nodefs.available": "1Gi"},
            "evictionSoft": {"memory.available": "10%"},
            "evictionSoftGracePeriod": {"memory.available": "1m30s"},
            "kubeReserved": {"cpu": "100m", "ephemeral-storage": "1Gi"},
            "imageGCHighThresholdPercent": 85,
            "imageGCLowThresholdPercent": 80,
        }
    )
    assert nc.kubelet.problems() == []


@pytest.mark.parametrize(
    ("kubelet", "expected"),
    [
        ({"registerWithTaints": []}, "spec.kubelet.registerWithTaints: can't be set"),
        ({"evictionHard": {"memory.free": "1Gi"}}, "isn't a valid eviction signal"),
        ({"evictionHard": {"memory.available": "120%"}}, "must be a percentage"),
        ({"evictionHard": {"memory.available": "lots"}}, "must be a percentage"),
        ({"evictionSoft": {"memory.available": "5%"}}, "has no matching evictionSoftGracePeriod"),
        (
            {"evictionSoftGracePeriod": {"memory.available": "1m"}},
            "has no matching evictionSoft",
        ),
        (
            {
                "evictionSoft": {"memory.available": "5%"},
                "evictionSoftGracePeriod": {"memory.available": "soon"},
            },
            "must be a duration",
        ),
        ({"kubeReserved": {"gpu": "1"}}, "isn't a reservable resource"),
        ({"systemReserved": {"memory": "-1Gi"}}, "can't be a negative resource quantity"),
        ({"imageGCHighThresholdPercent": 101}, "must be between 0 and 100"),
        (
            {"imageGCHighThresholdPercent": 50, "imageGCLowThresholdPercent": 60},
            "must be greater than imageGCLowThresholdPercent",
        ),
        ({"evictionMaxPodGracePeriod": -1}, "can't be negative"),
    ],
)
def test_kubelet_problems(kubelet: dict[str, Any], expected: str) -> None:
    problems = parse(kubelet=kubelet).kubelet.problems()
    assert any(expected in p for p in problems), problems
