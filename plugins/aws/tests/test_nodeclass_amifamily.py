"""AMI families: default block devices, the ephemeral device and the SSM parameters each
alias reads (spec providers §1.3, §1.8; upstream ``pkg/providers/amifamily/*.go``)."""

from __future__ import annotations

import pytest
from karpenter_aws.amifamily import (
    AliasError,
    alias_parameters,
    get_family,
    resolve_alias,
    variant_requirements,
)
from karpenter_aws.nodeclass import NodeClassError

GIB = 1024**3


@pytest.mark.parametrize(
    ("family", "device", "size_gib"),
    [("AL2", "/dev/xvda", 20), ("AL2023", "/dev/xvda", 20), ("Windows2022", "/dev/sda1", 50)],
)
def test_single_volume_families(family: str, device: str, size_gib: int) -> None:
    f = get_family(family)
    (bdm,) = f.default_block_device_mappings
    assert (bdm.device_name, bdm.volume_size, bdm.volume_type, bdm.encrypted) == (
        device,
        size_gib * GIB,
        "gp3",
        True,
    )
    assert f.ephemeral_device == device


def test_bottlerocket_keeps_ephemeral_storage_on_its_data_volume() -> None:
    f = get_family("Bottlerocket")
    assert [(b.device_name, b.volume_size) for b in f.default_block_device_mappings] == [
        ("/dev/xvda", 4 * GIB),
        ("/dev/xvdb", 20 * GIB),
    ]
    assert f.ephemeral_device == "/dev/xvdb"
    assert f.pods_per_core is False
    # kube-reserved memory follows the pods it really runs, not the ENI limit (spec §1.3)
    assert f.eni_limited_memory_overhead is False
    assert get_family("AL2023").eni_limited_memory_overhead is True


def test_custom_has_no_defaults_and_unknown_names_are_custom() -> None:
    assert get_family("Custom").default_block_device_mappings == ()
    assert get_family("Custom").ephemeral_device is None
    assert get_family("Nope").name == "Custom"


def test_windows_families() -> None:
    assert get_family("Windows2019").windows_build == "10.0.17763"
    assert get_family("Windows2025").windows_build == "10.0.26100"
    assert get_family("Windows2022").os == "windows"
    assert get_family("Windows2022").eni_limited_pods is False


def test_al2023_latest_reads_five_recommended_parameters() -> None:
    params = alias_parameters(resolve_alias("al2023@latest"), "1.31")
    base = "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023"
    assert [(p.name, p.variants) for p in params] == [
        (f"{base}/x86_64/standard/recommended/image_id", ("standard",)),
        (f"{base}/x86_64/nvidia/recommended/image_id", ("nvidia",)),
        (f"{base}/x86_64/neuron/recommended/image_id", ("neuron",)),
        (f"{base}/arm64/standard/recommended/image_id", ("standard",)),
        (f"{base}/arm64/nvidia/recommended/image_id", ("nvidia",)),
    ]


def test_al2_pinned_version_and_gpu_variants() -> None:
    params = alias_parameters(resolve_alias("al2@v20240807"), "1.30", prefix="/p")
    assert [p.name for p in params] == [
        "/p/eks/optimized-ami/1.30/amazon-linux-2/amazon-eks-node-1.30-v20240807/image_id",
        "/p/eks/optimized-ami/1.30/amazon-linux-2-arm64/amazon-eks-arm64-node-1.30-v20240807/image_id",
        "/p/eks/optimized-ami/1.30/amazon-linux-2-gpu/amazon-eks-gpu-node-1.30-v20240807/image_id",
    ]
    assert params[2].variants == ("neuron", "nvidia")


def test_bottlerocket_version_drops_the_v() -> None:
    params = alias_parameters(resolve_alias("bottlerocket@v1.20.3"), "1.31")
    assert params[0].name == "/aws/service/bottlerocket/aws-k8s-1.31/x86_64/1.20.3/image_id"
    assert params[2].name == "/aws/service/bottlerocket/aws-k8s-1.31-nvidia/x86_64/1.20.3/image_id"
    latest = alias_parameters(resolve_alias("bottlerocket@latest"), "1.31")
    assert latest[1].name == "/aws/service/bottlerocket/aws-k8s-1.31/arm64/latest/image_id"


def test_windows_alias_parameter_and_requirements() -> None:
    (p,) = alias_parameters(resolve_alias("windows2022@latest"), "1.31")
    assert p.name == (
        "/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.31/image_id"
    )
    assert variant_requirements(p, None) == [
        {"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]},
        {"key": "node.kubernetes.io/windows-build", "operator": "In", "values": ["10.0.20348"]},
    ]


def test_unsupported_alias_combinations() -> None:
    with pytest.raises(AliasError, match=r"1\.33"):
        alias_parameters(resolve_alias("al2@latest"), "1.33")
    with pytest.raises(AliasError, match=r"1\.35"):
        alias_parameters(resolve_alias("windows2025@latest"), "1.34")
    assert alias_parameters(resolve_alias("windows2025@latest"), "1.35")


def test_resolve_alias_rejects_unknown_families() -> None:
    with pytest.raises(NodeClassError, match="not supported"):
        resolve_alias("ubuntu@latest")
