"""Default node images per image family (upstream ``pkg/providers/imagefamily``), offline.

Upstream lists, per family, the AKS community-gallery image definitions it may boot, most
preferred first, each with the requirements (architecture, Hyper-V generation) an instance
type must meet; then asks Azure for each definition's latest version. This provider has no
Azure access yet, so the table below is bundled (upstream's definitions, galleries and
distros) and the version is the ``node-image-version`` setting (default ``latest``):
the image ids are community-gallery references
``/CommunityGalleries/<gallery>/images/<definition>/versions/<version>``.

Family selection follows upstream's ``GetImageFamily``: ``Ubuntu`` means Ubuntu 24.04 from
Kubernetes 1.34, else 22.04 (22.04 whenever Trusted Launch or FIPS is asked for);
``AzureLinux`` means Azure Linux 3 from Kubernetes 1.32, else 2. FIPS images exist only in
the AKS-managed shared image gallery (upstream's ``UseSIG``), which a self-hosted
Karpenter cannot use: a FIPS NodeClass resolves no images (:data:`FIPS_NEEDS_SIG`).
"""

from __future__ import annotations

import re
from typing import Any

from attrs import frozen

from karpenter_azure.labels import LABEL_SKU_HYPERV_GENERATION
from karpenter_azure.nodeclass import (
    IMAGE_FAMILY_AZURE_LINUX,
    IMAGE_FAMILY_UBUNTU2204,
    IMAGE_FAMILY_UBUNTU2404,
    AKSNodeClass,
)

__all__ = ["FIPS_NEEDS_SIG", "DefaultImage", "default_images", "resolve_family", "status_images"]

UBUNTU_GALLERY = "AKSUbuntu-38d80f77-467a-481f-a8d4-09b6d4220bd2"
AZURE_LINUX_GALLERY = "AKSAzureLinux-f7c7cda5-1c9a-4bdc-a222-9614c968580b"
ARCH = "kubernetes.io/arch"
FIPS_NEEDS_SIG = (
    "FIPS images require the AKS-managed shared image gallery (UseSIG), which this "
    "provider cannot use; no community-gallery FIPS image exists"
)


@frozen
class DefaultImage:
    gallery: str
    definition: str
    arch: str
    hyperv_generation: str
    distro: str

    def image_id(self, version: str) -> str:
        return f"/CommunityGalleries/{self.gallery}/images/{self.definition}/versions/{version}"

    def requirements(self) -> list[dict[str, Any]]:
        return [
            {"key": ARCH, "operator": "In", "values": [self.arch]},
            {
                "key": LABEL_SKU_HYPERV_GENERATION,
                "operator": "In",
                "values": [self.hyperv_generation],
            },
        ]


def _u(definition: str, arch: str, gen: str, distro: str) -> DefaultImage:
    return DefaultImage(UBUNTU_GALLERY, definition, arch, gen, distro)


def _a(definition: str, arch: str, gen: str, distro: str) -> DefaultImage:
    return DefaultImage(AZURE_LINUX_GALLERY, definition, arch, gen, distro)


# (family, trusted launch) -> images, most preferred first (upstream's order)
_TABLE: dict[tuple[str, bool], tuple[DefaultImage, ...]] = {
    ("Ubuntu2204", False): (
        _u("2204gen2containerd", "amd64", "2", "aks-ubuntu-containerd-22.04-gen2"),
        _u("2204containerd", "amd64", "1", "aks-ubuntu-containerd-22.04"),
        _u("2204gen2arm64containerd", "arm64", "2", "aks-ubuntu-arm64-containerd-22.04-gen2"),
    ),
    ("Ubuntu2204", True): (
        _u("2204gen2TLcontainerd", "amd64", "2", "aks-ubuntu-containerd-22.04-tl-gen2"),
    ),
    ("Ubuntu2404", False): (
        _u("2404gen2containerd", "amd64", "2", "aks-ubuntu-containerd-24.04-gen2"),
        _u("2404containerd", "amd64", "1", "aks-ubuntu-containerd-24.04"),
        _u("2404gen2arm64containerd", "arm64", "2", "aks-ubuntu-arm64-containerd-24.04-gen2"),
    ),
    ("Ubuntu2404", True): (
        _u("2404gen2TLcontainerd", "amd64", "2", "aks-ubuntu-containerd-24.04-tl-gen2"),
    ),
    ("AzureLinux2", False): (
        _a("V2gen2", "amd64", "2", "aks-azurelinux-v2-gen2"),
        _a("V2", "amd64", "1", "aks-azurelinux-v2"),
        _a("V2gen2arm64", "arm64", "2", "aks-azurelinux-v2-arm64-gen2"),
    ),
    ("AzureLinux2", True): (_a("V2gen2TL", "amd64", "2", "aks-azurelinux-v2-gen2-tl"),),
    ("AzureLinux3", False): (
        _a("V3gen2", "amd64", "2", "aks-azurelinux-v3-gen2"),
        _a("V3", "amd64", "1", "aks-azurelinux-v3"),
        _a("V3gen2arm64", "arm64", "2", "aks-azurelinux-v3-arm64-gen2"),
    ),
    ("AzureLinux3", True): (_a("V3gen2TL", "amd64", "2", "aks-azurelinux-v3-gen2-tl"),),
}


def _minor_at_least(kubernetes_version: str, minor: int) -> bool:
    """Whether ``1.<m>`` with m >= minor; an unparseable version is False (upstream)."""
    m = re.match(r"^v?(\d+)\.(\d+)", kubernetes_version.strip())
    return bool(m) and (int(m[1]), int(m[2])) >= (1, minor)  # type: ignore[index]


def resolve_family(nodeclass: AKSNodeClass, kubernetes_version: str) -> str:
    """The concrete family: Ubuntu2204, Ubuntu2404, AzureLinux2 or AzureLinux3 (Ubuntu2004
    for the FIPS without Trusted Launch case, which has FIPS images only)."""
    family = nodeclass.image_family
    if family == IMAGE_FAMILY_UBUNTU2204:
        return "Ubuntu2204"
    if family == IMAGE_FAMILY_UBUNTU2404:
        return "Ubuntu2404"
    if family == IMAGE_FAMILY_AZURE_LINUX:
        return "AzureLinux3" if _minor_at_least(kubernetes_version, 32) else "AzureLinux2"
    if nodeclass.fips:
        return "Ubuntu2204" if nodeclass.trusted_launch else "Ubuntu2004"
    if nodeclass.trusted_launch:
        return "Ubuntu2204"
    return "Ubuntu2404" if _minor_at_least(kubernetes_version, 34) else "Ubuntu2204"


def default_images(nodeclass: AKSNodeClass, kubernetes_version: str) -> tuple[DefaultImage, ...]:
    """The family's default images (empty for FIPS: see the module docstring)."""
    if nodeclass.fips:
        return ()
    return _TABLE.get((resolve_family(nodeclass, kubernetes_version), nodeclass.trusted_launch), ())


def status_images(
    nodeclass: AKSNodeClass, kubernetes_version: str, version: str = "latest"
) -> list[dict[str, Any]]:
    """``status.images`` entries (``id`` and ``requirements``), most preferred first."""
    return [
        {"id": image.image_id(version), "requirements": image.requirements()}
        for image in default_images(nodeclass, kubernetes_version)
    ]
