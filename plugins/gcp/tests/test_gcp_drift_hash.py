"""The GCENodeClass drift hash and the drift checks: upstream ``GCENodeClass.Hash`` (the
spec without image selector terms, plus the image family; zero values ignored; lists as
sets) on our algorithm, and upstream ``drift_test.go`` (``TestAreStaticFieldsDrifted``,
``TestIsImageDrifted``)."""

from __future__ import annotations

from typing import Any

import pytest
from karpenter_gcp.drift import (
    HASH_ANNOTATION,
    HASH_VERSION,
    HASH_VERSION_ANNOTATION,
    IMAGE_DRIFT,
    NODECLASS_DRIFT,
    hash_annotations,
    image_drift,
    nodeclass_hash,
    static_drift,
)
from karpenter_gcp.nodeclass import GCENodeClass

BASE: dict[str, Any] = {
    "imageSelectorTerms": [{"alias": "ContainerOptimizedOS@latest"}],
    "serviceAccount": "nodes@p.iam.gserviceaccount.com",
    "disks": [{"sizeGiB": 60, "category": "pd-balanced", "boot": True}],
    "networkTags": ["a", "b"],
    "labels": {"team": "infra"},
    "metadata": {"serial-port-logging-enable": "true"},
    "kubeletConfiguration": {"maxPods": 64},
}


def nc(spec: dict[str, Any], status: dict[str, Any] | None = None) -> GCENodeClass:
    return GCENodeClass.from_dict({"metadata": {"name": "x"}, "spec": spec, "status": status or {}})


def h(spec: dict[str, Any]) -> str:
    return nodeclass_hash(nc(spec))


@pytest.mark.parametrize(
    "change",
    [
        {"serviceAccount": "other@p.iam.gserviceaccount.com"},
        {"disks": [{"sizeGiB": 100, "category": "pd-balanced", "boot": True}]},
        {"disks": [{"sizeGiB": 60, "category": "pd-ssd", "boot": True}]},
        {"networkTags": ["a", "c"]},
        {"labels": {"team": "apps"}},
        {"metadata": {"serial-port-logging-enable": "false"}},
        {"kubeletConfiguration": {"maxPods": 32}},
        {"kubeletConfiguration": {"maxPods": 64, "cpuCFSQuota": False}},
        {"imageFamily": "Ubuntu"},
        {"subnetRangeName": "pods"},
        {"shieldedInstanceConfig": {"enableVtpm": False}},
        {"confidentialInstanceType": "SEV"},
        {"networkConfig": {"enablePrivateNodes": True}},
        {"autoGPUTaint": True},
        {"gpuDriverVersion": "latest"},
    ],
)
def test_a_hashed_field_changes_the_hash(change: dict[str, Any]) -> None:
    assert h({**BASE, **change}) != h(BASE)


def test_image_terms_do_not_change_the_hash_but_the_family_they_imply_does() -> None:
    """``imageSelectorTerms`` is ``hash:"ignore"``; the resolved image family is hashed."""
    cos_pinned = {**BASE, "imageSelectorTerms": [{"alias": "ContainerOptimizedOS@125.1.2.3"}]}
    cos_channel = {
        **BASE,
        "imageSelectorTerms": [{"family": "ContainerOptimizedOS", "channel": "stable"}],
    }
    assert h(cos_pinned) == h(BASE) == h(cos_channel)
    ubuntu = {**BASE, "imageSelectorTerms": [{"alias": "Ubuntu@latest"}]}
    assert h(ubuntu) != h(BASE)
    custom = {**BASE, "imageSelectorTerms": [{"id": "projects/p/global/images/i"}]}
    assert h(custom) not in (h(BASE), h(ubuntu))


def test_zero_values_defaults_and_order_do_not_change_the_hash() -> None:
    assert h({**BASE, "networkTags": ["b", "a"]}) == h(BASE)
    assert h({**BASE, "labels": {}}) == h({k: v for k, v in BASE.items() if k != "labels"})
    assert h({**BASE, "networkConfig": {"subnetwork": ""}}) == h(BASE)
    assert h({**BASE, "gpuDriverVersion": "default"}) == h(BASE)  # the CRD default
    assert h({**BASE, "autoGPUTaint": False}) == h(BASE)  # a non-pointer bool's zero
    unbooted = [{"sizeGiB": 60, "category": "pd-balanced"}]
    assert h({**BASE, "disks": [{**unbooted[0], "boot": False}]}) == h({**BASE, "disks": unbooted})
    assert h({**BASE, "kubeletConfiguration": {}}) == h(
        {k: v for k, v in BASE.items() if k != "kubeletConfiguration"}
    )


def test_the_hash_is_a_stable_decimal_string() -> None:
    assert h(BASE) == h(dict(reversed(list(BASE.items()))))
    assert h(BASE).isdigit()
    assert hash_annotations(nc(BASE)) == {
        HASH_ANNOTATION: h(BASE),
        HASH_VERSION_ANNOTATION: HASH_VERSION,
    }
    assert HASH_ANNOTATION == "karpenter.k8s.gcp/gcenodeclass-hash"
    assert HASH_VERSION_ANNOTATION == "karpenter.k8s.gcp/gcenodeclass-hash-version"


@pytest.mark.parametrize(
    ("claim", "want"),
    [
        ("same", ""),  # no drift when hashes match
        ("other", NODECLASS_DRIFT),  # NodeClassDrift when hashes differ
        ("absent", ""),  # no drift when the NodeClaim's hash is absent
        ("no-version", ""),  # no drift when the NodeClaim's version is absent
        ("old-version", ""),  # no drift when the hash versions mismatch
        ("empty", ""),  # no drift when all annotations are absent
    ],
)
def test_static_drift_follows_upstream(claim: str, want: str) -> None:
    current = nc(BASE)
    annotations = {
        "same": hash_annotations(current),
        "other": {HASH_ANNOTATION: "1", HASH_VERSION_ANNOTATION: HASH_VERSION},
        "absent": {HASH_VERSION_ANNOTATION: HASH_VERSION},
        "no-version": {HASH_ANNOTATION: "1"},
        "old-version": {HASH_ANNOTATION: "1", HASH_VERSION_ANNOTATION: "v4"},
        "empty": {},
    }[claim]
    assert static_drift(annotations, current) == want


@pytest.mark.parametrize(
    ("image_id", "sources", "want"),
    [
        ("projects/gke-node-images/global/images/cos-113-123", ["cos-113-123"], ""),
        (
            "projects/gke-node-images/global/images/cos-113-123",
            ["ubuntu-2004-456", "cos-113-123"],
            "",
        ),
        (
            "https://www.googleapis.com/compute/v1/projects/gke-node-images/global/images/cos-1",
            ["projects/gke-node-images/global/images/cos-1"],
            "",
        ),
        ("projects/gke-node-images/global/images/cos-113-999", ["cos-113-123"], IMAGE_DRIFT),
        ("projects/gke-node-images/global/images/cos-113-123", [], IMAGE_DRIFT),
    ],
)
def test_image_drift_follows_upstream(image_id: str, sources: list[str], want: str) -> None:
    """upstream TestIsImageDrifted: the NodeClaim's image id must end with one of the
    resolved source images."""
    images = [{"sourceImage": s, "requirements": []} for s in sources]
    assert image_drift(image_id, nc(BASE, {"images": images})) == want
