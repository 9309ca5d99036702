"""Image selector term resolution (upstream ``pkg/providers/imagefamily`` and its tests:
``containeroptimizedos_test.go``, ``ubuntu_test.go``, ``image_test.go``), over a fake
Compute image list; then the offline rules (no lister: explicit terms only) and the
adapter over the official Compute client against a local HTTP server."""

from __future__ import annotations

import fnmatch
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import compute_v1, container_v1
from karpenter_gcp.images import (
    COS_PROJECT,
    UBUNTU_PROJECT,
    GKEChannels,
    ImageRecord,
    ImageResolutionError,
    ReleaseChannel,
    compute_image_lister,
    gke_channel_source,
    parse_gke_version,
    resolve_images,
    resolve_version_for_channel,
    status_images,
)
from karpenter_gcp.nodeclass import GCENodeClass

GPU_COUNT = "karpenter.k8s.gcp/instance-gpu-count"
COS_IMAGE = "gke-1351-gke1396004-cos-125-19216-104-126-c-pre"


class FakeImages:
    """Compute ``images.list`` semantics the resolver relies on: ``name=<glob>`` filters
    per project; records every call."""

    def __init__(self, images: dict[str, list[ImageRecord]]) -> None:
        self.images = images
        self.calls: list[tuple[str, str]] = []

    def __call__(self, project: str, filter_: str) -> list[ImageRecord]:
        self.calls.append((project, filter_))
        assert filter_.startswith("name=")
        pattern = filter_.removeprefix("name=")
        return [i for i in self.images.get(project, []) if fnmatch.fnmatchcase(i.name, pattern)]


def img(
    name: str, created: str = "2025-01-01T00:00:00Z", state: str = "", arch: str = ""
) -> ImageRecord:
    return ImageRecord(
        name=name, creation_timestamp=created, deprecated_state=state, architecture=arch
    )


def with_cos_variants(*records: ImageRecord) -> list[ImageRecord]:
    """The listed amd64 images plus the arm64 and NVIDIA siblings Compute also has (the
    resolver checks each candidate exists)."""
    out = list(records)
    for r in records:
        out.append(img(r.name.replace("-cos-", "-cos-arm64-"), r.creation_timestamp))
        out.append(img(r.name.replace("-pre", "-nvda"), r.creation_timestamp))
    return out


def nodeclass(*terms: dict[str, Any]) -> GCENodeClass:
    return GCENodeClass.from_dict(
        {"metadata": {"name": "x"}, "spec": {"imageSelectorTerms": list(terms)}}
    )


def sources(nc: GCENodeClass, version: str, lister: Any) -> list[str]:
    return [i.source_image for i in resolve_images(nc, version, lister)]


def cos(name: str) -> str:
    return f"projects/{COS_PROJECT}/global/images/{name}"


def ubuntu(name: str) -> str:
    return f"projects/{UBUNTU_PROJECT}/global/images/{name}"


# --- Container-Optimized OS -------------------------------------------------------------


def test_cos_latest_picks_the_newest_non_deprecated_and_scopes_to_the_patch_version() -> None:
    """upstream TestResolveLatestCOSImage_PicksNewestNonDeprecated, TestBuildImageFilter_*."""
    lister = FakeImages(
        {
            COS_PROJECT: with_cos_variants(
                img(COS_IMAGE, "2025-04-01T00:00:00Z"),
                img("gke-1351-gke1390000-cos-125-19216-100-100-c-pre", "2025-03-01T00:00:00Z"),
                img(
                    "gke-1351-gke1380000-cos-125-19216-90-90-c-pre",
                    "2025-05-01T00:00:00Z",
                    "DEPRECATED",
                ),
                img("gke-1340-gke1-cos-120-1-1-1-c-pre", "2026-01-01T00:00:00Z"),
            )
        }
    )
    nc = nodeclass({"alias": "ContainerOptimizedOS@latest"})
    assert sources(nc, "1.35.1", lister) == [
        cos(COS_IMAGE),
        cos("gke-1351-gke1396004-cos-arm64-125-19216-104-126-c-pre"),
        cos("gke-1351-gke1396004-cos-125-19216-104-126-c-nvda"),
    ]
    assert lister.calls[0] == (COS_PROJECT, "name=gke-1351-*")
    lister.calls.clear()
    sources(nc, "", lister)
    assert lister.calls[0] == (COS_PROJECT, "name=gke-*-cos-*-c-pre")  # no version: broad


def test_cos_latest_excludes_specialised_variants() -> None:
    """upstream TestResolveLatestCOSImage_ExcludesSpecialisedVariants."""
    plain = "gke-1351-gke1390000-cos-125-19216-100-100-c-pre"
    lister = FakeImages(
        {
            COS_PROJECT: [
                img(
                    "gke-1351-gke1396004-cos-arm64-125-19216-104-126-c-pre", "2025-04-11T00:00:00Z"
                ),
                img("gke-1351-gke1396004-cos-125-19216-104-126-c-nvda", "2025-04-10T00:00:00Z"),
                img("gke-1351-gke1396004-cos-125-19216-104-126-c-pre-kmod", "2025-04-09T00:00:00Z"),
                img("gke-1351-gke1396004-cos-125-19216-104-126-c-test", "2025-04-08T00:00:00Z"),
                img(
                    "gke-1351-gke1389001-cos-125-19216-220-106-c-cgpv1-pre", "2025-04-07T00:00:00Z"
                ),
                *with_cos_variants(img(plain, "2025-03-01T00:00:00Z")),
            ]
        }
    )
    assert sources(
        nodeclass({"family": "ContainerOptimizedOS", "version": "latest"}), "1.35.1", lister
    )[0] == cos(plain)


def test_cos_variants_carry_upstreams_requirements() -> None:
    """upstream TestResolveImages_DrivesArm64AndGPUVariants; status requirements sorted by
    key length then key, as upstream's status controller writes them."""
    lister = FakeImages({COS_PROJECT: with_cos_variants(img(COS_IMAGE))})
    got = status_images(nodeclass({"alias": "ContainerOptimizedOS@latest"}), "1.35.1", lister)
    assert got == [
        {
            "sourceImage": cos(COS_IMAGE),
            "requirements": [
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                {"key": GPU_COUNT, "operator": "DoesNotExist"},
            ],
        },
        {
            "sourceImage": cos("gke-1351-gke1396004-cos-arm64-125-19216-104-126-c-pre"),
            "requirements": [
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]},
                {"key": GPU_COUNT, "operator": "DoesNotExist"},
            ],
        },
        {
            "sourceImage": cos("gke-1351-gke1396004-cos-125-19216-104-126-c-nvda"),
            "requirements": [
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                {"key": GPU_COUNT, "operator": "Exists"},
            ],
        },
    ]


@pytest.mark.parametrize(
    ("pin", "rendered"),
    [("125.19216.104.126", "125-19216-104-126"), ("124.18935.44.10", "124-18935-44-10")],
)
def test_a_cos_milestone_pin_rewrites_the_latest_images_version(pin: str, rendered: str) -> None:
    """upstream TestResolveImages_COS_PinnedVersion_Valid / _DifferentMilestone."""
    pinned = f"gke-1351-gke1396004-cos-{rendered}-c-pre"
    lister = FakeImages(
        {COS_PROJECT: with_cos_variants(img(COS_IMAGE), img(pinned, "2020-01-01T00:00:00Z"))}
    )
    assert sources(nodeclass({"alias": f"ContainerOptimizedOS@{pin}"}), "1.35.1", lister) == [
        cos(pinned),
        cos(f"gke-1351-gke1396004-cos-arm64-{rendered}-c-pre"),
        cos(f"gke-1351-gke1396004-cos-{rendered}-c-nvda"),
    ]


def test_candidates_that_do_not_exist_are_dropped_and_none_existing_is_an_error() -> None:
    """upstream filterExistingImages: keep candidates Compute knows; if none, a resolution
    error naming how many were tried."""
    lister = FakeImages({COS_PROJECT: [img(COS_IMAGE)]})  # no arm64 / nvda siblings
    assert sources(nodeclass({"alias": "ContainerOptimizedOS@latest"}), "1.35.1", lister) == [
        cos(COS_IMAGE)
    ]
    with pytest.raises(ImageResolutionError, match="3 candidate image"):
        resolve_images(nodeclass({"alias": "ContainerOptimizedOS@124.1.2.3"}), "1.35.1", lister)


def test_no_usable_cos_image_is_an_error() -> None:
    lister = FakeImages({COS_PROJECT: [img(COS_IMAGE, state="OBSOLETE")]})
    with pytest.raises(ImageResolutionError, match="no non-deprecated COS amd64 image"):
        resolve_images(nodeclass({"alias": "ContainerOptimizedOS@latest"}), "1.35.1", lister)


# --- Ubuntu -----------------------------------------------------------------------------


def test_ubuntu_latest_picks_the_newest_clean_image_per_arch() -> None:
    """upstream TestSelectImage_Ubuntu_PicksNewestNonDeprecatedAmd64,
    TestSelectImage_Ubuntu_ExcludesNonCleanAmd64, TestBuildImageFilter_Ubuntu_*."""
    lister = FakeImages(
        {
            UBUNTU_PROJECT: [
                img("ubuntu-gke-2404-1-35-amd64-v20260419-test", "2026-04-19T00:00:00Z"),
                img("ubuntu-gke-2404-1-35-amd64-cgroupsv1-v20260418", "2026-04-18T00:00:00Z"),
                img("ubuntu-gke-2404-1-35-amd64-v20260418-tpu", "2026-04-18T12:00:00Z"),
                img("ubuntu-gke-2404-1-35-amd64-linux64k-v20260416", "2026-04-16T00:00:00Z"),
                img("ubuntu-gke-2404-1-35-amd64-v20260501", "2026-05-01T00:00:00Z", "OBSOLETE"),
                img("ubuntu-gke-2404-1-35-amd64-v20260401", "2026-04-01T00:00:00Z"),
                img("ubuntu-gke-2404-1-35-amd64-v20260301", "2026-03-01T00:00:00Z"),
                img("ubuntu-gke-2404-1-35-arm64-v20260420", "2026-04-20T00:00:00Z"),
                img("ubuntu-gke-2404-1-34-amd64-v20260601", "2026-06-01T00:00:00Z"),
            ]
        }
    )
    got = status_images(nodeclass({"family": "Ubuntu2404", "version": "latest"}), "1.35.1", lister)
    assert got == [
        {
            "sourceImage": ubuntu("ubuntu-gke-2404-1-35-amd64-v20260401"),
            "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
        },
        {
            "sourceImage": ubuntu("ubuntu-gke-2404-1-35-arm64-v20260420"),
            "requirements": [
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]},
                {"key": GPU_COUNT, "operator": "DoesNotExist"},
            ],
        },
    ]
    assert lister.calls[0] == (UBUNTU_PROJECT, "name=ubuntu-gke-2404-1-35*")


def test_the_ubuntu_alias_means_2404_and_2204_amd64_names_carry_no_arch() -> None:
    """upstream: alias Ubuntu -> the 24.04 provider; TestSelectImage_Ubuntu2204_PicksAmd64NotArm64,
    TestResolveImages_Ubuntu2204_ResolvesRealArm64_WhenNewestAmd64IsTpuSuffix."""
    lister = FakeImages(
        {
            UBUNTU_PROJECT: [
                img("ubuntu-gke-2404-1-34-amd64-v20260722"),
                img("ubuntu-gke-2404-1-34-arm64-v20260722"),
                img("ubuntu-gke-2204-1-34-v20260722", "2026-07-22T14:04:32Z"),
                img("ubuntu-gke-2204-1-34-v20260722-tpu", "2026-07-22T14:04:40Z"),
                img("ubuntu-gke-2204-1-34-arm64-v20260722", "2026-07-22T14:05:00Z"),
            ]
        }
    )
    assert sources(nodeclass({"alias": "Ubuntu@latest"}), "1.34.7", lister) == [
        ubuntu("ubuntu-gke-2404-1-34-amd64-v20260722"),
        ubuntu("ubuntu-gke-2404-1-34-arm64-v20260722"),
    ]
    assert sources(nodeclass({"family": "Ubuntu2204", "version": "latest"}), "1.34.7", lister) == [
        ubuntu("ubuntu-gke-2204-1-34-v20260722"),
        ubuntu("ubuntu-gke-2204-1-34-arm64-v20260722"),
    ]


def test_ubuntu_selects_a_letter_suffixed_rebuild_and_a_pinned_date() -> None:
    """upstream TestResolveImages_Ubuntu_SelectsLetterSuffixVersion, _PinnedVersion_Valid."""
    lister = FakeImages(
        {
            UBUNTU_PROJECT: [
                img("ubuntu-gke-2404-1-35-amd64-v20251218a", "2025-12-18T02:00:00Z"),
                img("ubuntu-gke-2404-1-35-arm64-v20251218a", "2025-12-18T02:05:00Z"),
                img("ubuntu-gke-2404-1-35-amd64-v20251101", "2025-11-01T00:00:00Z"),
                img("ubuntu-gke-2404-1-35-arm64-v20251101", "2025-11-01T00:05:00Z"),
            ]
        }
    )
    assert sources(nodeclass({"alias": "Ubuntu@latest"}), "1.35.0", lister) == [
        ubuntu("ubuntu-gke-2404-1-35-amd64-v20251218a"),
        ubuntu("ubuntu-gke-2404-1-35-arm64-v20251218a"),
    ]
    assert sources(nodeclass({"alias": "Ubuntu@v20251101"}), "1.35.0", lister) == [
        ubuntu("ubuntu-gke-2404-1-35-amd64-v20251101"),
        ubuntu("ubuntu-gke-2404-1-35-arm64-v20251101"),
    ]


def test_a_missing_arch_is_a_resolution_error() -> None:
    """upstream TestResolveImages_Ubuntu_MissingArm64_IsResolutionError and
    _PinnedVersion_MissingArm64_IsResolutionError."""
    lister = FakeImages(
        {
            UBUNTU_PROJECT: [
                img("ubuntu-gke-2404-1-35-amd64-v20260416"),
                img("ubuntu-gke-2404-1-35-amd64-v20260722-tpu"),
                img("ubuntu-gke-2404-1-35-arm64-v20260420"),
            ]
        }
    )
    with pytest.raises(ImageResolutionError, match="no ubuntu-gke-2404 arm64 image found"):
        resolve_images(nodeclass({"alias": "Ubuntu@v20260416"}), "1.35.0", lister)


@pytest.mark.parametrize(
    "version", ["20260416", "v202604161", "v2026041", "vABCDEFGH", "v20260416-extra"]
)
def test_an_invalid_ubuntu_version_is_a_resolution_error(version: str) -> None:
    """upstream TestResolveImages_Ubuntu_PinnedVersion_InvalidFormat (the CRD rejects these
    too; the resolver does not rely on it)."""
    nc = GCENodeClass(
        name="x",
        generation=1,
        spec={"imageSelectorTerms": [{"family": "Ubuntu2404", "version": version}]},
        annotations={},
    )
    with pytest.raises(ImageResolutionError, match="invalid Ubuntu version"):
        resolve_images(nc, "1.35.0", FakeImages({}))


@pytest.mark.parametrize("version", ["125", "v1.35.1", "125.19216", "125.19216.104", "latest-1"])
def test_an_invalid_cos_version_is_a_resolution_error(version: str) -> None:
    """upstream TestResolveImages_COS_PinnedVersion_InvalidFormat."""
    nc = GCENodeClass(
        name="x",
        generation=1,
        spec={"imageSelectorTerms": [{"family": "ContainerOptimizedOS", "version": version}]},
        annotations={},
    )
    with pytest.raises(ImageResolutionError, match="invalid ContainerOptimizedOS version"):
        resolve_images(nc, "1.35.0", FakeImages({}))


# --- id terms, several terms, channels ----------------------------------------------------


def test_an_id_term_takes_its_architecture_from_compute_and_a_missing_image_resolves_nothing() -> (
    None
):
    lister = FakeImages(
        {
            "p": [
                img("mine-x86", arch="X86_64"),
                img("mine-arm", arch="ARM64"),
                img("mine-risc", arch="RISCV"),
            ]
        }
    )
    got = status_images(
        nodeclass(
            {"id": "projects/p/global/images/mine-arm"}, {"id": "projects/p/global/images/mine-x86"}
        ),
        "1.35.0",
        lister,
    )
    assert got == [
        {
            "sourceImage": "projects/p/global/images/mine-arm",
            "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}],
        },
        {
            "sourceImage": "projects/p/global/images/mine-x86",
            "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
        },
    ]
    assert (
        resolve_images(nodeclass({"id": "projects/p/global/images/gone"}), "1.35.0", lister) == []
    )
    with pytest.raises(ImageResolutionError, match="unsupported architecture 'RISCV'"):
        resolve_images(nodeclass({"id": "projects/p/global/images/mine-risc"}), "1.35.0", lister)
    with pytest.raises(ImageResolutionError, match="invalid image source 'global/images/x'"):
        resolve_images(nodeclass({"id": "global/images/x"}), "1.35.0", lister)


def test_terms_resolve_in_order_and_channels_need_gke() -> None:
    lister = FakeImages(
        {COS_PROJECT: with_cos_variants(img(COS_IMAGE)), "p": [img("mine", arch="X86_64")]}
    )
    got = sources(
        nodeclass(
            {"id": "projects/p/global/images/mine"}, {"alias": "ContainerOptimizedOS@latest"}
        ),
        "1.35.1",
        lister,
    )
    assert got[0] == "projects/p/global/images/mine" and got[1] == cos(COS_IMAGE) and len(got) == 4
    with pytest.raises(ImageResolutionError, match=r"channel 'stable'.*GKE server config"):
        resolve_images(
            nodeclass({"family": "ContainerOptimizedOS", "channel": "stable"}), "1.35.1", lister
        )


# --- offline (no lister) ------------------------------------------------------------------


def test_offline_explicit_terms_resolve_and_latest_does_not() -> None:
    got = status_images(
        nodeclass(
            {"id": "projects/p/global/images/node-arm64-v1"},
            {"id": "projects/p/global/images/node-v1"},
            {"family": "Ubuntu2204", "version": "v20260416"},
            {"alias": "Ubuntu@v20260416"},
        ),
        "1.34.2",
    )
    assert [(i["sourceImage"], i["requirements"][0]["values"]) for i in got] == [
        ("projects/p/global/images/node-arm64-v1", ["arm64"]),
        ("projects/p/global/images/node-v1", ["amd64"]),
        (ubuntu("ubuntu-gke-2204-1-34-v20260416"), ["amd64"]),
        (ubuntu("ubuntu-gke-2204-1-34-arm64-v20260416"), ["arm64"]),
        (ubuntu("ubuntu-gke-2404-1-34-amd64-v20260416"), ["amd64"]),
        (ubuntu("ubuntu-gke-2404-1-34-arm64-v20260416"), ["arm64"]),
    ]
    for term in (
        {"alias": "ContainerOptimizedOS@latest"},
        {"alias": "ContainerOptimizedOS@125.19216.104.126"},
        {"alias": "Ubuntu@latest"},
    ):
        with pytest.raises(ImageResolutionError, match="needs the Compute Engine image list"):
            resolve_images(nodeclass(term), "1.34.2")
    with pytest.raises(ImageResolutionError, match="needs the cluster's Kubernetes version"):
        resolve_images(nodeclass({"alias": "Ubuntu@v20260416"}), "")


# --- the official client adapter ------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    pages: dict[str, list[dict[str, Any]]] = {}
    seen: list[tuple[str, str]] = []

    def do_GET(self) -> None:
        url = urlparse(self.path)
        project = url.path.split("/")[4]  # /compute/v1/projects/{p}/global/images
        filter_ = parse_qs(url.query).get("filter", [""])[0]
        self.seen.append((url.path, filter_))
        pattern = filter_.removeprefix("name=") or "*"
        items = [i for i in self.pages.get(project, []) if fnmatch.fnmatchcase(i["name"], pattern)]
        body = json.dumps({"items": items}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def images_client() -> Iterator[compute_v1.ImagesClient]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield compute_v1.ImagesClient(
            credentials=AnonymousCredentials(),
            client_options=ClientOptions(api_endpoint=f"http://127.0.0.1:{server.server_port}"),
        )
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_compute_image_lister_reads_the_official_clients_list(
    images_client: compute_v1.ImagesClient,
) -> None:
    _Handler.seen = []
    _Handler.pages = {
        COS_PROJECT: [
            {
                "name": COS_IMAGE,
                "creationTimestamp": "2025-04-01T00:00:00Z",
                "architecture": "X86_64",
            },
            {
                "name": "gke-1351-gke1-cos-1-2-3-4-c-pre",
                "creationTimestamp": "2025-05-01T00:00:00Z",
                "deprecated": {"state": "DEPRECATED"},
            },
        ]
    }
    lister = compute_image_lister(images_client)
    assert lister(COS_PROJECT, "name=gke-1351-*") == [
        ImageRecord(COS_IMAGE, "2025-04-01T00:00:00Z", "", "X86_64"),
        ImageRecord("gke-1351-gke1-cos-1-2-3-4-c-pre", "2025-05-01T00:00:00Z", "DEPRECATED", ""),
    ]
    assert _Handler.seen == [
        (f"/compute/v1/projects/{COS_PROJECT}/global/images", "name=gke-1351-*")
    ]
    # end to end: the deprecated newer image is skipped; only the amd64 candidate exists
    got = sources(nodeclass({"alias": "ContainerOptimizedOS@latest"}), "1.35.1", lister)
    assert got == [cos(COS_IMAGE)]


# --- release channels ---------------------------------------------------------------------


def channels(**configs: ReleaseChannel) -> GKEChannels:
    return GKEChannels(channels={k.upper(): v for k, v in configs.items()})


@pytest.mark.parametrize(
    ("config", "channel", "cluster", "want"),
    [
        # default version's minor matches the cluster's
        (
            ReleaseChannel("1.34.6-gke.1068000", ("1.34.6-gke.1068000", "1.33.5-gke.900000")),
            "stable",
            "1.34.7",
            "1.34.6-gke.1068000",
        ),
        # channel names are upper-cased
        (
            ReleaseChannel("1.35.3-gke.1737000", ("1.35.3-gke.1737000",)),
            "STABLE",
            "1.35.1",
            "1.35.3-gke.1737000",
        ),
        # falls back to the highest valid version of the minor
        (
            ReleaseChannel(
                "1.35.3-gke.1389000",
                ("1.35.3-gke.1389000", "1.34.6-gke.1068000", "1.34.5-gke.900000"),
            ),
            "stable",
            "1.34.7",
            "1.34.6-gke.1068000",
        ),
        # numeric, not lexicographic order
        (
            ReleaseChannel("1.35.0-gke.100000", ("1.34.9-gke.900000", "1.34.10-gke.1000000")),
            "stable",
            "1.34.5",
            "1.34.10-gke.1000000",
        ),
        # an empty default falls to the valid versions
        (ReleaseChannel("", ("1.34.6-gke.1068000",)), "stable", "1.34.0", "1.34.6-gke.1068000"),
    ],
)
def test_resolve_version_for_channel_follows_upstream(
    config: ReleaseChannel, channel: str, cluster: str, want: str
) -> None:
    """upstream pkg/providers/gke/version_test.go TestResolveVersionForChannel_*."""
    assert resolve_version_for_channel(channels(stable=config), channel, cluster) == want


def test_channel_resolution_errors() -> None:
    only_135 = channels(stable=ReleaseChannel("1.35.3-gke.1389000", ("1.35.3-gke.1389000",)))
    with pytest.raises(
        ImageResolutionError, match=r"channel STABLE has no valid version for cluster minor 1\.34"
    ):
        resolve_version_for_channel(only_135, "stable", "1.34.7")
    with pytest.raises(ImageResolutionError, match="channel RAPID not found in getServerConfig"):
        resolve_version_for_channel(only_135, "rapid", "1.35.0")
    with pytest.raises(ImageResolutionError, match="no enrolled release channel"):
        resolve_version_for_channel(only_135, "cluster", "1.35.0")
    enrolled = GKEChannels(only_135.channels, cluster_channel="STABLE")
    assert resolve_version_for_channel(enrolled, "cluster", "1.35.0") == "1.35.3-gke.1389000"


@pytest.mark.parametrize(
    ("version", "want"),
    [
        ("1.34.6-gke.1068000", ("1346", "1068000")),
        ("v1.35.1-gke.1396004", ("1351", "1396004")),
        ("latest", None),
        ("1351.19216.104.126", None),
    ],
)
def test_parse_gke_version(version: str, want: tuple[str, str] | None) -> None:
    """upstream TestParseGKEVersion."""
    assert parse_gke_version(version) == want


def test_a_channel_term_resolves_the_cos_image_of_exactly_that_build() -> None:
    """upstream TestDispatch_FamilyChannel_CallsGetServerConfig,
    TestResolveExactBuildCOSImage_PicksMatchingBuild / _ReturnsErrorOnMiss."""
    build = "gke-1346-gke1068000-cos-125-19216-220-72-c-pre"
    lister = FakeImages(
        {
            COS_PROJECT: with_cos_variants(
                img(build), img("gke-1346-gke1099999-cos-125-1-1-1-c-pre", "2030-01-01")
            )
        }
    )
    source = channels(stable=ReleaseChannel("1.34.6-gke.1068000", ("1.34.6-gke.1068000",)))
    nc = nodeclass({"family": "ContainerOptimizedOS", "channel": "stable"})
    got = [i.source_image for i in resolve_images(nc, "1.34.7", lister, lambda: source)]
    assert got == [
        cos(build),
        cos("gke-1346-gke1068000-cos-arm64-125-19216-220-72-c-pre"),
        cos("gke-1346-gke1068000-cos-125-19216-220-72-c-nvda"),
    ]
    assert lister.calls[0] == (COS_PROJECT, "name=gke-1346-gke1068000-*")
    missing = channels(stable=ReleaseChannel("1.34.6-gke.9999999", ()))
    with pytest.raises(ImageResolutionError, match="gke9999999"):
        resolve_images(nc, "1.34.7", lister, lambda: missing)
    with pytest.raises(ImageResolutionError, match="needs the Compute Engine image list"):
        resolve_images(nc, "1.34.7", None, lambda: source)


class _GKEHandler(BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_GET(self) -> None:
        path = urlparse(self.path).path
        self.seen.append(path)
        if path.endswith("/serverConfig"):
            payload: dict[str, Any] = {
                "channels": [
                    {
                        "channel": "STABLE",
                        "defaultVersion": "1.34.6-gke.1068000",
                        "validVersions": ["1.34.6-gke.1068000"],
                    },
                    {"channel": "RAPID", "defaultVersion": "1.35.3-gke.1737000"},
                ]
            }
        else:
            payload = {"name": "prod", "releaseChannel": {"channel": "STABLE"}}
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_gke_channel_source_reads_the_official_clients_server_config() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _GKEHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        client = container_v1.ClusterManagerClient(
            credentials=AnonymousCredentials(),
            transport="rest",
            client_options=ClientOptions(api_endpoint=f"http://127.0.0.1:{server.server_port}"),
        )
        _GKEHandler.seen = []
        got = gke_channel_source(client, "projects/p/locations/us-central1", "prod")()
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert got == GKEChannels(
        channels={
            "STABLE": ReleaseChannel("1.34.6-gke.1068000", ("1.34.6-gke.1068000",)),
            "RAPID": ReleaseChannel("1.35.3-gke.1737000", ()),
        },
        cluster_channel="STABLE",
    )
    assert _GKEHandler.seen == [
        "/v1/projects/p/locations/us-central1/serverConfig",
        "/v1/projects/p/locations/us-central1/clusters/prod",
    ]
