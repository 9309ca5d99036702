"""Node images for a GCENodeClass's image selector terms (upstream ``pkg/providers/imagefamily``).

Upstream resolves each term by asking Compute Engine: an ``alias`` (``family@version``) or
``family`` term lists the family's GKE images (Container-Optimized OS in
``gke-node-images``, Ubuntu in ``ubuntu-os-gke-cloud``) scoped to the cluster's
Kubernetes version and picks the newest usable one per architecture (COS: amd64, arm64
and an NVIDIA variant; Ubuntu: amd64 and arm64); an ``id`` term is looked up for its
architecture. Every candidate must exist.

Here the listing is a parameter, :data:`ImageLister` (``(project, filter) -> images``):
:func:`compute_image_lister` adapts the official Compute client, so a provider with GCP
access resolves as upstream does. Without one (offline), only what the terms name
explicitly resolves, unverified:

* an ``id`` term (``projects/<p>/global/images/<name>``), architecture from the name
  (``arm64`` in it, else amd64);
* an Ubuntu term pinned to ``vYYYYMMDD``: the image names follow from the release, the
  cluster's Kubernetes minor and the date (upstream's clean-name patterns), minus the
  occasional same-day rebuild suffix (``v20251218a``) only a listing can find;
* ``latest`` and COS milestone pins need a listing and fail with
  :class:`ImageResolutionError` (``ImagesReady=False``, ``ImageResolutionFailed``).

A ``channel`` term (COS only) follows a GKE release channel: the channel's version for
the cluster's Kubernetes minor comes from the GKE server config (upstream
``ResolveVersionForChannel``: the channel's default version when its minor matches, else
its highest valid version of that minor; ``cluster`` means the cluster's enrolled
channel), and the COS image of exactly that GKE build is listed. The server config is a
parameter too, :data:`ChannelSource` (:func:`gke_channel_source` adapts the official GKE
client); without one, channel terms fail with :class:`ImageResolutionError`.

Errors of the clients themselves (unreachable API, permissions) propagate: the controller
runtime retries them with backoff, as upstream returns them to controller-runtime.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from attrs import frozen

from karpenter_gcp.labels import LABEL_INSTANCE_GPU_COUNT
from karpenter_gcp.nodeclass import (
    IMAGE_FAMILY_CONTAINER_OPTIMIZED_OS,
    IMAGE_FAMILY_UBUNTU,
    IMAGE_FAMILY_UBUNTU2204,
    IMAGE_FAMILY_UBUNTU2404,
    GCENodeClass,
)

__all__ = [
    "COS_PROJECT",
    "UBUNTU_PROJECT",
    "ChannelSource",
    "GKEChannels",
    "ImageLister",
    "ImageRecord",
    "ImageResolutionError",
    "ReleaseChannel",
    "ResolvedImage",
    "compute_image_lister",
    "gke_channel_source",
    "parse_gke_version",
    "resolve_images",
    "resolve_version_for_channel",
    "status_images",
]

COS_PROJECT = "gke-node-images"
UBUNTU_PROJECT = "ubuntu-os-gke-cloud"
ARCH = "kubernetes.io/arch"
AMD64 = "amd64"
ARM64 = "arm64"
_RETIRED = frozenset({"DEPRECATED", "OBSOLETE", "DELETED"})


class ImageResolutionError(Exception):
    """The terms cannot be resolved for a reason the NodeClass (or the missing Compute
    access) explains; the status controller reports it as ``ImagesReady=False``."""


@frozen
class ImageRecord:
    """What resolution needs of a Compute Engine image."""

    name: str
    creation_timestamp: str = ""
    deprecated_state: str = ""
    architecture: str = ""

    @property
    def usable(self) -> bool:
        return self.deprecated_state not in _RETIRED


ImageLister = Callable[[str, str], Iterable[ImageRecord]]
"""``(project, filter)`` -> the project's images matching a Compute list filter
(``name=<prefix>*``)."""


@frozen
class ResolvedImage:
    """One ``status.images`` entry: the image and the instance types it may boot."""

    source_image: str
    requirements: tuple[tuple[str, str, tuple[str, ...]], ...]

    def to_status(self) -> dict[str, Any]:
        reqs = sorted(self.requirements, key=lambda r: (len(r[0]), r[0]))
        out = []
        for key, operator, values in reqs:
            item: dict[str, Any] = {"key": key, "operator": operator}
            if values:
                item["values"] = list(values)
            out.append(item)
        return {"sourceImage": self.source_image, "requirements": out}


@frozen
class ReleaseChannel:
    """One GKE release channel of the server config."""

    default_version: str = ""
    valid_versions: tuple[str, ...] = ()


@frozen
class GKEChannels:
    """What channel resolution needs of GKE: the server config's channels (keyed by the
    upper-case channel name: RAPID, REGULAR, STABLE, EXTENDED) and the channel the cluster
    is enrolled in (``""`` or ``UNSPECIFIED`` when none)."""

    channels: Mapping[str, ReleaseChannel]
    cluster_channel: str = ""


ChannelSource = Callable[[], GKEChannels]
"""Reads the GKE server config (and the cluster's release channel) when a channel term
needs it."""


def _enum_name(value: Any) -> str:
    return str(getattr(value, "name", value) or "")


def gke_channel_source(client: Any, location: str, cluster: str) -> ChannelSource:
    """A :data:`ChannelSource` over a ``google.cloud.container_v1.ClusterManagerClient``:
    ``location`` is ``projects/<p>/locations/<l>``, ``cluster`` the cluster's name."""

    def source() -> GKEChannels:
        config = client.get_server_config(request={"name": location})
        channels = {
            _enum_name(c.channel): ReleaseChannel(c.default_version, tuple(c.valid_versions))
            for c in config.channels
        }
        found = client.get_cluster(request={"name": f"{location}/clusters/{cluster}"})
        return GKEChannels(channels, _enum_name(found.release_channel.channel))

    return source


def compute_image_lister(client: Any) -> ImageLister:
    """An :data:`ImageLister` over a ``google.cloud.compute_v1.ImagesClient``."""

    def lister(project: str, filter_: str) -> list[ImageRecord]:
        return [
            ImageRecord(
                name=image.name,
                creation_timestamp=image.creation_timestamp,
                deprecated_state=image.deprecated.state if image.deprecated else "",
                architecture=image.architecture,
            )
            for image in client.list(request={"project": project, "filter": filter_})
        ]

    return lister


# --- helpers --------------------------------------------------------------------------


def _version_parts(kubernetes_version: str) -> tuple[int, int, int] | None:
    m = re.match(r"^v?(\d+)\.(\d+)(?:\.(\d+))?", kubernetes_version.strip())
    if not m:
        return None
    return int(m[1]), int(m[2]), int(m[3] or 0)


def _minor(version: str) -> tuple[int, int] | None:
    parts = _version_parts(version)
    return None if parts is None else (parts[0], parts[1])


def resolve_version_for_channel(
    channels: GKEChannels, channel: str, kubernetes_version: str
) -> str:
    """The GKE version (``1.34.6-gke.1068000``) a release channel offers for the cluster's
    minor: the channel's default when its minor matches, else its highest valid version of
    that minor (numeric order); :class:`ImageResolutionError` when there is none."""
    name = channel.upper()
    if name == "CLUSTER":
        name = channels.cluster_channel.upper()
        if name in ("", "UNSPECIFIED"):
            raise ImageResolutionError(
                "cluster has no enrolled release channel (UNSPECIFIED); channel: cluster "
                "requires an enrolled channel; enroll the cluster in a release channel or use "
                "version: latest explicitly"
            )
    config = channels.channels.get(name)
    if config is None:
        raise ImageResolutionError(f"channel {name} not found in getServerConfig response")
    minor = _minor(kubernetes_version)
    if minor is None:
        raise ImageResolutionError(
            f"channel {name}: the cluster's Kubernetes version {kubernetes_version!r} is unknown"
        )
    if config.default_version and _minor(config.default_version) == minor:
        return config.default_version
    matching = [v for v in config.valid_versions if _minor(v) == minor]
    if not matching:
        raise ImageResolutionError(
            f"channel {name} has no valid version for cluster minor {minor[0]}.{minor[1]}; "
            "the requested channel may not yet support this Kubernetes minor; switch to a "
            "channel that does, or use version: latest explicitly"
        )
    return max(matching, key=lambda v: _version_parts(v) or (0, 0, 0))


def parse_gke_version(version: str) -> tuple[str, str] | None:
    """``("1346", "1068000")`` for ``1.34.6-gke.1068000`` (the image-name key and the
    build); None when ``version`` is not a GKE version."""
    base, sep, build = version.partition("-gke.")
    if not sep:
        return None
    return base.removeprefix("v").replace(".", ""), build


def _source(project: str, name: str) -> str:
    return f"projects/{project}/global/images/{name}"


def _arch_only(arch: str) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    return ((ARCH, "In", (arch,)),)


def _cpu_only(arch: str) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    return ((ARCH, "In", (arch,)), (LABEL_INSTANCE_GPU_COUNT, "DoesNotExist", ()))


def _newest(images: Iterable[ImageRecord]) -> ImageRecord | None:
    best: ImageRecord | None = None
    for image in images:
        if best is None or image.creation_timestamp > best.creation_timestamp:
            best = image
    return best


def parse_image_source(source: str) -> tuple[str, str]:
    """``(project, name)`` of ``projects/<project>/global/images/<name>``; other forms
    need a project upstream does not guess, and raise :class:`ImageResolutionError`."""
    m = re.fullmatch(r"projects/([^/]+)/global/images/(.+)", source.strip())
    if not m:
        raise ImageResolutionError(
            f"invalid image source {source!r}: expected projects/<project>/global/images/<name>"
        )
    return m[1], m[2]


# --- Container-Optimized OS ------------------------------------------------------------

_COS_SKIP = ("arm64", "kmod", "nvda", "gvisor", "-test", "cgpv1")
_COS_MILESTONE = re.compile(r"\d+\.\d+\.\d+\.\d+")
_COS_VERSION_IN_NAME = re.compile(r"cos-\d+-([\d-]+)-c-pre")
_COS_ARM64 = re.compile(
    r"(projects/gke-node-images/global/images/gke-\d+-gke\d+-cos)-(\d+-\d+-\d+-\d+-c-pre)"
)


def _usable_cos(image: ImageRecord) -> bool:
    """General-purpose amd64 COS: no arm64/GPU/gVisor/test or cgroup v1 variants (GKE
    1.29+ kubelets refuse cgroup v1)."""
    return image.usable and not any(s in image.name for s in _COS_SKIP)


def _cos_filter(kubernetes_version: str) -> str:
    parts = _version_parts(kubernetes_version)
    if parts is None:
        return "name=gke-*-cos-*-c-pre"
    return f"name=gke-{parts[0]}{parts[1]}{parts[2]}-*"


def _cos_latest(lister: ImageLister | None, kubernetes_version: str) -> str:
    if lister is None:
        raise ImageResolutionError(
            "resolving the latest ContainerOptimizedOS image needs the Compute Engine image "
            "list, which is not available; pin an image with an id term"
        )
    filter_ = _cos_filter(kubernetes_version)
    best = _newest(i for i in lister(COS_PROJECT, filter_) if _usable_cos(i))
    if best is None:
        raise ImageResolutionError(
            f"no non-deprecated COS amd64 image found in {COS_PROJECT} (filter: {filter_})"
        )
    return _source(COS_PROJECT, best.name)


def _cos_variants(source: str) -> list[ResolvedImage]:
    """The amd64 image, its arm64 sibling and its NVIDIA (``-nvda``) variant."""
    return [
        ResolvedImage(source, _cpu_only(AMD64)),
        ResolvedImage(_COS_ARM64.sub(r"\1-arm64-\2", source), _cpu_only(ARM64)),
        ResolvedImage(
            source.replace("-pre", "-nvda"),
            ((ARCH, "In", (AMD64,)), (LABEL_INSTANCE_GPU_COUNT, "Exists", ())),
        ),
    ]


def _cos_exact_build(lister: ImageLister | None, key: str, build: str) -> str:
    """The newest usable COS image of exactly GKE build ``build``; no fallback: a channel
    version without a published image is not ready."""
    if lister is None:
        raise ImageResolutionError(
            "resolving a release channel's COS image needs the Compute Engine image list, "
            "which is not available"
        )
    filter_ = f"name=gke-{key}-gke{build}-*"
    best = _newest(i for i in lister(COS_PROJECT, filter_) if _usable_cos(i))
    if best is None:
        raise ImageResolutionError(
            f"no COS image found for GKE build gke{build} (k8s {key}) in {COS_PROJECT}; the "
            "channel version may not yet have a published COS image"
        )
    return _source(COS_PROJECT, best.name)


def _resolve_cos(
    version: str, lister: ImageLister | None, kubernetes_version: str
) -> list[ResolvedImage]:
    if version == "latest":
        return _cos_variants(_cos_latest(lister, kubernetes_version))
    gke = parse_gke_version(version)
    if gke is not None:
        return _cos_variants(_cos_exact_build(lister, *gke))
    if not _COS_MILESTONE.fullmatch(version):
        raise ImageResolutionError(
            f"invalid ContainerOptimizedOS version {version!r}: must be 'latest' or "
            "'milestone.build.build.build' (e.g. '125.19216.104.126')"
        )
    latest = _cos_latest(lister, kubernetes_version)
    target = version.removeprefix("v").replace(".", "-")
    return _cos_variants(_COS_VERSION_IN_NAME.sub(f"cos-{target}-c-pre", latest))


# --- Ubuntu ---------------------------------------------------------------------------

_UBUNTU_PINNED = re.compile(r"v\d{8}")
_UBUNTU_CLEAN: dict[tuple[str, str], re.Pattern[str]] = {
    ("2404", AMD64): re.compile(r"ubuntu-gke-2404-\d+-\d+-amd64-v\d+[a-z]?"),
    ("2404", ARM64): re.compile(r"ubuntu-gke-2404-\d+-\d+-arm64-v\d+[a-z]?"),
    ("2204", AMD64): re.compile(r"ubuntu-gke-2204-\d+-\d+-v\d+[a-z]?"),
    ("2204", ARM64): re.compile(r"ubuntu-gke-2204-\d+-\d+-arm64-v\d+[a-z]?"),
}


def _ubuntu_requirements(arch: str) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    return _cpu_only(ARM64) if arch == ARM64 else _arch_only(AMD64)


def _ubuntu_name(release: str, arch: str, major: int, minor: int, version: str) -> str:
    """The clean image name upstream's patterns accept (2204 amd64 carries no arch)."""
    arch_part = "" if (release, arch) == ("2204", AMD64) else f"-{arch}"
    return f"ubuntu-gke-{release}-{major}-{minor}{arch_part}-{version}"


def _resolve_ubuntu(
    release: str, version: str, lister: ImageLister | None, kubernetes_version: str
) -> list[ResolvedImage]:
    if version != "latest" and not _UBUNTU_PINNED.fullmatch(version):
        raise ImageResolutionError(
            f"invalid Ubuntu version {version!r}: must be 'latest' or 'vYYYYMMDD' "
            "(e.g. 'v20260416')"
        )
    parts = _version_parts(kubernetes_version)
    if lister is None:
        if version == "latest":
            raise ImageResolutionError(
                f"resolving the latest ubuntu-gke-{release} image needs the Compute Engine "
                "image list, which is not available; pin a version (vYYYYMMDD) or an id"
            )
        if parts is None:
            raise ImageResolutionError(
                f"a pinned ubuntu-gke-{release} image needs the cluster's Kubernetes version"
            )
        return [
            ResolvedImage(
                _source(UBUNTU_PROJECT, _ubuntu_name(release, arch, parts[0], parts[1], version)),
                _ubuntu_requirements(arch),
            )
            for arch in (AMD64, ARM64)
        ]
    prefix = f"ubuntu-gke-{release}"
    filter_ = f"name={prefix}*" if parts is None else f"name={prefix}-{parts[0]}-{parts[1]}*"
    listed = list(lister(UBUNTU_PROJECT, filter_))
    out = []
    for arch in (AMD64, ARM64):
        pattern = _UBUNTU_CLEAN[(release, arch)]
        best = _newest(
            i
            for i in listed
            if i.usable
            and pattern.fullmatch(i.name)
            and (version == "latest" or i.name.endswith(f"-{version}"))
        )
        if best is None:
            raise ImageResolutionError(
                f"no ubuntu-gke-{release} {arch} image found for version {version!r} in "
                f"{UBUNTU_PROJECT}"
            )
        out.append(ResolvedImage(_source(UBUNTU_PROJECT, best.name), _ubuntu_requirements(arch)))
    return out


# --- terms ----------------------------------------------------------------------------

_RELEASES = {
    IMAGE_FAMILY_UBUNTU: "2404",
    IMAGE_FAMILY_UBUNTU2404: "2404",
    IMAGE_FAMILY_UBUNTU2204: "2204",
}


def _resolve_family(
    family: str, version: str, lister: ImageLister | None, kubernetes_version: str
) -> list[ResolvedImage]:
    if family == IMAGE_FAMILY_CONTAINER_OPTIMIZED_OS:
        images = _resolve_cos(version, lister, kubernetes_version)
    elif family in _RELEASES:
        images = _resolve_ubuntu(_RELEASES[family], version, lister, kubernetes_version)
    else:
        raise ImageResolutionError(f"unsupported image family {family!r}")
    return _existing(images, lister)


def _lookup(source: str, lister: ImageLister) -> ImageRecord | None:
    project, name = parse_image_source(source)
    return next((i for i in lister(project, f"name={name}") if i.name == name), None)


def _existing(images: list[ResolvedImage], lister: ImageLister | None) -> list[ResolvedImage]:
    """Upstream keeps only candidates Compute Engine knows (unverifiable offline)."""
    if lister is None:
        return images
    kept = [i for i in images if _lookup(i.source_image, lister) is not None]
    if images and not kept:
        raise ImageResolutionError(
            f"{len(images)} candidate image(s) were resolved but none exist in GCP; verify "
            "the pinned version is available"
        )
    return kept


def _resolve_id(source: str, lister: ImageLister | None) -> list[ResolvedImage]:
    _, name = parse_image_source(source)
    if lister is None:
        return [ResolvedImage(source, _arch_only(ARM64 if "arm64" in name else AMD64))]
    image = _lookup(source, lister)
    if image is None:
        return []
    arch = {"X86_64": AMD64, "ARM64": ARM64}.get(image.architecture)
    if arch is None:
        raise ImageResolutionError(
            f"unsupported architecture {image.architecture!r} for image {source!r}"
        )
    return [ResolvedImage(source, _arch_only(arch))]


def _resolve_term(
    term: Mapping[str, Any],
    lister: ImageLister | None,
    kubernetes_version: str,
    channels: ChannelSource | None,
) -> list[ResolvedImage]:
    if term.get("alias"):
        family, sep, version = str(term["alias"]).partition("@")
        if not sep:
            raise ImageResolutionError(
                f"malformed alias {term['alias']!r}: expected family@version"
            )
        return _resolve_family(family, version, lister, kubernetes_version)
    if term.get("id"):
        return _resolve_id(str(term["id"]), lister)
    if term.get("family"):
        if term.get("version"):
            return _resolve_family(
                str(term["family"]), str(term["version"]), lister, kubernetes_version
            )
        if channels is None:
            raise ImageResolutionError(
                f"channel {term.get('channel')!r}: resolving a release channel's version needs "
                "the GKE server config, which is not available; use version instead"
            )
        version = resolve_version_for_channel(
            channels(), str(term.get("channel") or ""), kubernetes_version
        )
        return _resolve_family(str(term["family"]), version, lister, kubernetes_version)
    raise ImageResolutionError("ImageSelectorTerm has no selection field (alias, id, or family)")


def resolve_images(
    nodeclass: GCENodeClass,
    kubernetes_version: str,
    lister: ImageLister | None = None,
    channels: ChannelSource | None = None,
) -> list[ResolvedImage]:
    """The images of every term, in term order (upstream ``List``); raises
    :class:`ImageResolutionError` when a term cannot be resolved."""
    out: list[ResolvedImage] = []
    for term in nodeclass.image_selector_terms:
        out.extend(_resolve_term(term, lister, kubernetes_version, channels))
    return out


def status_images(
    nodeclass: GCENodeClass,
    kubernetes_version: str,
    lister: ImageLister | None = None,
    channels: ChannelSource | None = None,
) -> list[dict[str, Any]]:
    """``status.images`` entries (``sourceImage`` and ``requirements``)."""
    resolved = resolve_images(nodeclass, kubernetes_version, lister, channels)
    return [i.to_status() for i in resolved]
