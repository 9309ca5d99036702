"""AMI families: what each one means for launches and how its aliases resolve.

A family decides the default block devices (and which one holds ephemeral storage, which
the catalogue counts as the node's ``ephemeral-storage``), the OS instance types get, how
max-pods is computed, and which public SSM parameters name the AMIs an alias such as
``al2023@latest`` stands for. Upstream: ``pkg/providers/amifamily/{al2,al2023,bottlerocket,
windows,custom}.go``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import frozen

from karpenter_aws.labels import (
    LABEL_INSTANCE_ACCELERATOR_COUNT,
    LABEL_INSTANCE_GPU_COUNT,
    LABEL_WINDOWS_BUILD,
)
from karpenter_aws.nodeclass import (
    AMI_FAMILY_AL2,
    AMI_FAMILY_AL2023,
    AMI_FAMILY_BOTTLEROCKET,
    AMI_FAMILY_CUSTOM,
    AMI_FAMILY_WINDOWS2019,
    AMI_FAMILY_WINDOWS2022,
    AMI_FAMILY_WINDOWS2025,
    Alias,
    BlockDeviceMapping,
    parse_alias,
)

__all__ = [
    "DEFAULT_SSM_PREFIX",
    "VARIANT_NEURON",
    "VARIANT_NVIDIA",
    "VARIANT_STANDARD",
    "AMIFamily",
    "AliasError",
    "AliasParameter",
    "alias_parameters",
    "get_family",
    "resolve_alias",
    "variant_requirements",
]

DEFAULT_SSM_PREFIX = "/aws/service"
"""Where AWS publishes its AMI parameters. Configurable in :func:`alias_parameters` because
``/aws/`` names are reserved (a test double of SSM cannot hold them)."""

VARIANT_STANDARD = "standard"
VARIANT_NVIDIA = "nvidia"
VARIANT_NEURON = "neuron"

_GIB = 1024**3


def _default_ebs(device: str, size_gib: int) -> BlockDeviceMapping:
    # Upstream's DefaultEBS: encrypted gp3, 20Gi unless the family says otherwise.
    return BlockDeviceMapping(
        device_name=device, volume_size=size_gib * _GIB, volume_type="gp3", encrypted=True
    )


@frozen
class AMIFamily:
    """What one AMI family implies for an instance.

    ``eni_limited_pods``: max-pods defaults to the ENI/IP limit (Windows uses 110).
    ``eni_limited_memory_overhead``: kube-reserved memory follows ENI-limited pods.
    ``pods_per_core``: ``kubelet.podsPerCore`` caps pods (Bottlerocket ignores it).
    """

    name: str
    default_block_device_mappings: tuple[BlockDeviceMapping, ...]
    ephemeral_device: str | None
    os: str = "linux"
    windows_build: str | None = None
    eni_limited_pods: bool = True
    eni_limited_memory_overhead: bool = True
    pods_per_core: bool = True


_FAMILIES: dict[str, AMIFamily] = {
    AMI_FAMILY_AL2: AMIFamily(AMI_FAMILY_AL2, (_default_ebs("/dev/xvda", 20),), "/dev/xvda"),
    AMI_FAMILY_AL2023: AMIFamily(AMI_FAMILY_AL2023, (_default_ebs("/dev/xvda", 20),), "/dev/xvda"),
    # Bottlerocket: a small OS volume and a data volume that holds images and pods.
    AMI_FAMILY_BOTTLEROCKET: AMIFamily(
        AMI_FAMILY_BOTTLEROCKET,
        (_default_ebs("/dev/xvda", 4), _default_ebs("/dev/xvdb", 20)),
        "/dev/xvdb",
        pods_per_core=False,
        eni_limited_memory_overhead=False,
    ),
    AMI_FAMILY_CUSTOM: AMIFamily(AMI_FAMILY_CUSTOM, (), None),
    **{
        name: AMIFamily(
            name,
            (_default_ebs("/dev/sda1", 50),),
            "/dev/sda1",
            os="windows",
            windows_build=build,
            eni_limited_pods=False,
            eni_limited_memory_overhead=False,
        )
        for name, build in (
            (AMI_FAMILY_WINDOWS2019, "10.0.17763"),
            (AMI_FAMILY_WINDOWS2022, "10.0.20348"),
            (AMI_FAMILY_WINDOWS2025, "10.0.26100"),
        )
    },
}


def get_family(name: str) -> AMIFamily:
    """The family named ``name``; an unknown name is treated as Custom (no defaults), the
    way upstream's ``GetAMIFamily`` falls back."""
    return _FAMILIES.get(name, _FAMILIES[AMI_FAMILY_CUSTOM])


class AliasError(ValueError):
    """An alias that cannot be resolved for this cluster (reason ``UnsupportedAlias``)."""


def resolve_alias(alias: str) -> Alias:
    """Parse ``family@version`` (raises ``NodeClassError`` naming what is wrong)."""
    return parse_alias(alias)


@frozen
class AliasParameter:
    """An SSM parameter holding the id of an AMI an alias stands for, and the variants
    (standard / nvidia / neuron) that AMI serves."""

    name: str
    variants: tuple[str, ...]
    os: str = "linux"
    windows_build: str | None = None


def _minor(k8s_version: str) -> int | None:
    parts = k8s_version.lstrip("v").split(".")
    if len(parts) < 2:
        return None
    digits = "".join(ch for ch in parts[1] if ch.isdigit())
    return int(digits) if digits else None


def alias_parameters(
    alias: Alias, k8s_version: str, prefix: str = DEFAULT_SSM_PREFIX
) -> tuple[AliasParameter, ...]:
    """The SSM parameters to read for ``alias`` on a cluster running ``k8s_version``
    (``"1.31"``). Raises :class:`AliasError` for combinations AWS no longer publishes."""
    minor = _minor(k8s_version)
    version = alias.version
    latest = version == "latest"
    eks = f"{prefix}/eks/optimized-ami/{k8s_version}"
    if alias.family == AMI_FAMILY_AL2:
        if minor is not None and minor >= 33:
            raise AliasError(
                "AL2 aliases are no longer supported on EKS 1.33+ (Amazon Linux 2 AMIs are "
                "not published for these versions)"
            )

        def al2(path: str, name: str) -> str:
            return f"{eks}/{path}/{'recommended' if latest else name}/image_id"

        return (
            AliasParameter(
                al2("amazon-linux-2", f"amazon-eks-node-{k8s_version}-{version}"),
                (VARIANT_STANDARD,),
            ),
            AliasParameter(
                al2("amazon-linux-2-arm64", f"amazon-eks-arm64-node-{k8s_version}-{version}"),
                (VARIANT_STANDARD,),
            ),
            AliasParameter(
                al2("amazon-linux-2-gpu", f"amazon-eks-gpu-node-{k8s_version}-{version}"),
                (VARIANT_NEURON, VARIANT_NVIDIA),
            ),
        )
    if alias.family == AMI_FAMILY_AL2023:
        out = []
        for arch, variants in (
            ("x86_64", (VARIANT_STANDARD, VARIANT_NVIDIA, VARIANT_NEURON)),
            ("arm64", (VARIANT_STANDARD, VARIANT_NVIDIA)),
        ):
            for variant in variants:
                name = (
                    "recommended"
                    if latest
                    else f"amazon-eks-node-al2023-{arch}-{variant}-{k8s_version}-{version}"
                )
                out.append(
                    AliasParameter(
                        f"{eks}/amazon-linux-2023/{arch}/{variant}/{name}/image_id", (variant,)
                    )
                )
        return tuple(out)
    if alias.family == AMI_FAMILY_BOTTLEROCKET:
        v = version.lstrip("v")
        br = f"{prefix}/bottlerocket/aws-k8s-{k8s_version}"
        return (
            AliasParameter(f"{br}/x86_64/{v}/image_id", (VARIANT_STANDARD, VARIANT_NEURON)),
            AliasParameter(f"{br}/arm64/{v}/image_id", (VARIANT_STANDARD,)),
            AliasParameter(f"{br}-nvidia/x86_64/{v}/image_id", (VARIANT_NVIDIA,)),
            AliasParameter(f"{br}-nvidia/arm64/{v}/image_id", (VARIANT_NVIDIA,)),
        )
    family = _FAMILIES.get(alias.family)
    if family is not None and family.os == "windows":
        if alias.family == AMI_FAMILY_WINDOWS2025 and minor is not None and minor < 35:
            raise AliasError(
                f"Windows Server 2025 requires EKS version 1.35 or higher, "
                f"current version: {k8s_version}"
            )
        year = alias.family.removeprefix("Windows")
        return (
            AliasParameter(
                f"{prefix}/ami-windows-latest/Windows_Server-{year}-English-Core-"
                f"EKS_Optimized-{k8s_version}/image_id",
                (),
                os="windows",
                windows_build=family.windows_build,
            ),
        )
    raise AliasError(f"alias family {alias.family!r} has no published AMIs")


def variant_requirements(parameter: AliasParameter, variant: str | None) -> list[dict[str, Any]]:
    """Node-selector requirements (besides architecture) of an AMI found through
    ``parameter`` for ``variant``: standard AMIs carry no accelerator drivers, so they fit
    only types without GPUs or accelerators; nvidia AMIs need a GPU, neuron AMIs an
    accelerator; Windows AMIs fix the OS and build."""
    if parameter.os == "windows":
        return [
            {"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]},
            {"key": LABEL_WINDOWS_BUILD, "operator": "In", "values": [parameter.windows_build]},
        ]
    if variant == VARIANT_STANDARD:
        return [
            {"key": LABEL_INSTANCE_ACCELERATOR_COUNT, "operator": "DoesNotExist"},
            {"key": LABEL_INSTANCE_GPU_COUNT, "operator": "DoesNotExist"},
        ]
    if variant == VARIANT_NVIDIA:
        return [{"key": LABEL_INSTANCE_GPU_COUNT, "operator": "Exists"}]
    if variant == VARIANT_NEURON:
        return [{"key": LABEL_INSTANCE_ACCELERATOR_COUNT, "operator": "Exists"}]
    return []


def families() -> Mapping[str, AMIFamily]:
    """Every known family by name."""
    return dict(_FAMILIES)
