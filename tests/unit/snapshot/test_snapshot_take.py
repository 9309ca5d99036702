"""take_snapshot over the in-memory API server: every kind, trimmed, in creation order;
404 kinds skipped, 403 an error naming the RBAC permission."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from snapshot_cluster import LAST_APPLIED, build_cluster

from karpenter_core.kube.client import Forbidden, NotFound, ResourceType, resource_for
from karpenter_core.snapshot import (
    SnapshotError,
    SnapshotSource,
    read_snapshot,
    snapshot_kinds,
    take_snapshot,
    write_snapshot,
)
from karpenter_core.snapshot.take import strip


def test_every_object_is_taken_by_kind_in_creation_order() -> None:
    kube = build_cluster()
    snap = take_snapshot(kube, source=SnapshotSource("https://h", "c"), taken_at="T")
    assert list(snap.counts().items()) == [
        ("Namespace", 6),
        ("StorageClass", 1),
        ("PersistentVolumeClaim", 1),
        ("KWOKNodeClass", 1),
        ("NodePool", 1),
        ("Node", 3),
        ("PodTemplate", 1),
        ("Service", 1),
        ("Deployment", 1),
        ("ReplicaSet", 1),
        ("StatefulSet", 1),
        ("Job", 1),
        ("DaemonSet", 1),
        ("PodDisruptionBudget", 3),
        ("CapacityBuffer", 1),
        ("Pod", 6),
    ]
    assert (snap.taken_at, snap.source, snap.anonymised) == (
        "T",
        SnapshotSource("https://h", "c"),
        False,
    )
    names = sorted(p["metadata"]["name"] for p in snap.pods())
    assert names == sorted(p["metadata"]["name"] for p in kube.list("Pod"))
    node = snap.nodes()[0]
    assert node == strip(kube.get("Node", node["metadata"]["name"]))
    assert node["status"]["allocatable"]["cpu"] == "1930m"


def test_bookkeeping_is_dropped_and_the_server_copy_untouched() -> None:
    kube = build_cluster()
    snap = take_snapshot(kube)
    for pod in snap.pods():
        meta = pod["metadata"]
        assert "managedFields" not in meta
        assert LAST_APPLIED not in meta.get("annotations", {})
        assert meta["annotations"] == {"acme.com/owner": "alice"}
    stored = kube.get("Pod", "ledger-0", "payments")["metadata"]
    assert stored["managedFields"] and LAST_APPLIED in stored["annotations"]


def test_strip_drops_an_annotations_map_left_empty() -> None:
    obj = {"kind": "X", "metadata": {"name": "a", "annotations": {LAST_APPLIED: "{}"}}}
    assert strip(obj) == {"kind": "X", "metadata": {"name": "a"}}
    assert obj["metadata"]["annotations"] == {LAST_APPLIED: "{}"}


def test_kinds_cover_the_brief_and_every_registered_node_class() -> None:
    kinds = [rt.kind for rt in snapshot_kinds()]
    for kind in (
        "NodePool", "NodeClaim", "Node", "Pod", "DaemonSet", "PodDisruptionBudget",
        "NodeOverlay", "CapacityBuffer", "PersistentVolumeClaim", "PersistentVolume",
        "StorageClass", "CSINode", "DeviceClass", "ResourceClaim", "ResourceSlice",
        "Namespace", "KWOKNodeClass", "Deployment", "ReplicaSet", "StatefulSet", "Job",
        "PodTemplate", "Service",
    ):  # fmt: skip
        assert kind in kinds
    # owners before what they own, what a CapacityBuffer names before it
    assert kinds.index("Deployment") < kinds.index("ReplicaSet") < kinds.index("Pod")
    assert kinds.index("Service") < kinds.index("StatefulSet") < kinds.index("Pod")
    assert kinds.index("Job") < kinds.index("Pod")
    assert kinds.index("PodTemplate") < kinds.index("CapacityBuffer")
    assert kinds.index("Deployment") < kinds.index("CapacityBuffer")
    # what pods refer to comes before them, what nodes refer to before nodes
    assert kinds.index("Namespace") < kinds.index("NodePool") < kinds.index("Node")
    assert kinds.index("KWOKNodeClass") < kinds.index("NodePool")
    assert kinds[-1] == "Pod"


class _Refusing:
    """The in-memory server, answering one kind with an error."""

    def __init__(self, kube: Any, kind: str, error: Exception) -> None:
        self._kube, self._kind, self._error = kube, kind, error

    def list(self, resource: Any, *args: Any, **kwargs: Any) -> Any:
        if resource_for(resource).kind == self._kind:
            raise self._error
        return self._kube.list(resource, *args, **kwargs)


def test_a_kind_the_server_does_not_serve_is_skipped_and_reported() -> None:
    skipped: list[tuple[ResourceType, str]] = []
    client = _Refusing(build_cluster(), "NodeOverlay", NotFound("the server could not find"))
    snap = take_snapshot(client, on_skip=lambda rt, why: skipped.append((rt, why)))  # type: ignore[arg-type]
    assert [rt.kind for rt, _ in skipped] == ["NodeOverlay"]
    assert "NodeOverlay" not in snap.kinds and snap.counts()["Pod"] == 6


def test_forbidden_names_the_kind_and_the_rbac_verb() -> None:
    client = _Refusing(build_cluster(), "PodDisruptionBudget", Forbidden("no"))
    with pytest.raises(SnapshotError) as caught:
        take_snapshot(client)  # type: ignore[arg-type]
    assert str(caught.value) == (
        "cannot list poddisruptionbudgets.policy (PodDisruptionBudget): forbidden; the "
        "snapshot needs RBAC verb list on poddisruptionbudgets in API group policy"
    )


def test_taken_snapshot_round_trips_through_a_file(tmp_path: Path) -> None:
    snap = take_snapshot(build_cluster(), anonymise=True, anonymise_key=b"k")
    write_snapshot(snap, tmp_path / "s.json.gz")
    back = read_snapshot(tmp_path / "s.json.gz")
    assert back == snap
    assert back.anonymised is True
