"""The AWS drift checks as pure functions (upstream ``cloudprovider/drift.go``): what each
decides, and that an unknown is never drift."""

from __future__ import annotations

from karpenter_aws.drift import (
    AMI_DRIFT,
    CAPACITY_RESERVATION_DRIFT,
    NODECLASS_DRIFT,
    SECURITY_GROUP_DRIFT,
    SUBNET_DRIFT,
    ami_drift,
    capacity_reservation_drift,
    first_drift,
    security_group_drift,
    static_drift,
    subnet_drift,
)

from karpenter_core.apis import labels as wk
from karpenter_core.cloudprovider.types import InstanceType
from karpenter_core.scheduling.requirements import IN, Requirement, Requirements

HASH, VERSION = "karpenter.k8s.aws/ec2nodeclass-hash", "karpenter.k8s.aws/ec2nodeclass-hash-version"


def arch(value: str) -> Requirements:
    return Requirements(Requirement.new(wk.LABEL_ARCH, IN, [value]))


def test_static_drift_compares_hashes_of_the_same_version_only() -> None:
    def check(annotations: dict[str, str], nodeclass_hash: str, version: str = "v6") -> str:
        return static_drift(
            annotations, nodeclass_hash, version, hash_key=HASH, version_key=VERSION
        )

    assert check({HASH: "1", VERSION: "v6"}, "2") == NODECLASS_DRIFT
    assert check({HASH: "1", VERSION: "v6"}, "1") == ""
    assert check({HASH: "1", VERSION: "v5"}, "2") == ""  # another hashing scheme: not comparable
    assert check({VERSION: "v6"}, "2") == "" and check({HASH: "1"}, "2") == ""


def test_ami_drift_is_an_image_the_nodeclass_no_longer_resolves_for_the_type() -> None:
    amd = InstanceType(name="m5.large", requirements=arch("amd64"))
    amis = [("ami-arm", arch("arm64")), ("ami-new", arch("amd64"))]
    assert ami_drift("ami-new", amd, amis) == ""
    assert ami_drift("ami-old", amd, amis) == AMI_DRIFT
    assert ami_drift("ami-arm", amd, amis) == AMI_DRIFT  # resolved, but not for this type
    assert ami_drift("", amd, amis) == "" and ami_drift("ami-old", None, amis) == ""
    assert ami_drift("ami-old", amd, []) == ""


def test_security_group_and_subnet_drift() -> None:
    assert security_group_drift(["sg-1", "sg-2"], ["sg-2", "sg-1"]) == ""
    assert security_group_drift(["sg-1"], ["sg-1", "sg-2"]) == SECURITY_GROUP_DRIFT
    assert security_group_drift(["sg-1"], []) == ""
    assert subnet_drift("subnet-1", ["subnet-1", "subnet-2"]) == ""
    assert subnet_drift("subnet-3", ["subnet-1"]) == SUBNET_DRIFT
    assert subnet_drift("subnet-3", []) == "" and subnet_drift("", ["subnet-1"]) == ""


def test_the_first_reason_wins() -> None:
    assert first_drift("", SECURITY_GROUP_DRIFT, SUBNET_DRIFT) == SECURITY_GROUP_DRIFT
    assert first_drift("", "") == ""


def test_capacity_reservation_drift_is_a_reservation_the_class_no_longer_lists() -> None:
    assert capacity_reservation_drift("cr-1", ["cr-1", "cr-2"]) == ""
    assert capacity_reservation_drift("cr-3", ["cr-1"]) == CAPACITY_RESERVATION_DRIFT
    assert capacity_reservation_drift("cr-3", []) == CAPACITY_RESERVATION_DRIFT
    assert capacity_reservation_drift("", ["cr-1"]) == ""  # not in a reservation
