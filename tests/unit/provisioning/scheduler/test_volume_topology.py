"""Volume topology alternatives and PVC validation (spec scheduling.md §6.2)."""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.apis.objects import PersistentVolume, PersistentVolumeClaim, Pod, StorageClass
from karpenter_core.provisioning.scheduler import volumetopology as vt
from karpenter_core.provisioning.scheduler.volumetopology import (
    VolumeTopology,
    VolumeTopologyError,
    volume_requirements_by_pod,
)
from karpenter_core.state.snapshot import ClusterSnapshot

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def pod_with(*claims: str) -> Pod:
    return Pod.from_dict(
        {
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {
                "containers": [{"name": "c"}],
                "volumes": [
                    {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                    for i, c in enumerate(claims)
                ],
            },
        }
    )


def pvc(
    name: str, *, sc: str | None = None, volume: str = "", bound: bool = True, **extra: Any
) -> PersistentVolumeClaim:
    spec: dict[str, Any] = {}
    if sc is not None:
        spec["storageClassName"] = sc
    if volume:
        spec["volumeName"] = volume
    meta: dict[str, Any] = {"name": name, "namespace": "ns", **extra.pop("metadata", {})}
    if volume and bound:
        meta.setdefault("annotations", {})["pv.kubernetes.io/bind-completed"] = "yes"
    return PersistentVolumeClaim.from_dict({"metadata": meta, "spec": spec, **extra})


def expr(key: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": list(values)}


def pv(
    name: str, *terms: list[dict[str, Any]], local: bool = False, **spec: Any
) -> PersistentVolume:
    s: dict[str, Any] = dict(spec)
    if terms:
        s["nodeAffinity"] = {
            "required": {"nodeSelectorTerms": [{"matchExpressions": t} for t in terms]}
        }
    if local:
        s["local"] = {"path": "/mnt"}
    return PersistentVolume.from_dict({"metadata": {"name": name}, "spec": s})


def sc(
    name: str,
    *topologies: list[dict[str, Any]],
    mode: str = "WaitForFirstConsumer",
    provisioner: str = "csi.x",
) -> StorageClass:
    return StorageClass.from_dict(
        {
            "metadata": {"name": name},
            "provisioner": provisioner,
            "volumeBindingMode": mode,
            "allowedTopologies": [{"matchLabelExpressions": t} for t in topologies],
        }
    )


def zones(reqs: list[Any]) -> list[list[str]]:
    return [sorted(r.get(ZONE).values) for r in reqs]


def test_pod_without_pvcs_has_no_alternatives() -> None:
    assert VolumeTopology(ClusterSnapshot()).get_requirements(pod_with()) == []


def test_bound_pv_terms_are_alternatives() -> None:
    snap = ClusterSnapshot(
        pvcs=[pvc("a", volume="pv1")], pvs=[pv("pv1", [expr(ZONE, "z1")], [expr(ZONE, "z2")])]
    )
    assert zones(VolumeTopology(snap).get_requirements(pod_with("a"))) == [["z1"], ["z2"]]


def test_pv_without_node_affinity_does_not_constrain() -> None:
    snap = ClusterSnapshot(pvcs=[pvc("a", volume="pv1")], pvs=[pv("pv1")])
    assert VolumeTopology(snap).get_requirements(pod_with("a")) == []


def test_local_pv_drops_hostname_but_keeps_other_keys() -> None:
    snap = ClusterSnapshot(
        pvcs=[pvc("a", volume="pv1")],
        pvs=[pv("pv1", [expr(HOST, "n1"), expr(ZONE, "z1")], local=True)],
    )
    (alt,) = VolumeTopology(snap).get_requirements(pod_with("a"))
    assert HOST not in alt
    assert alt.get(ZONE).values == frozenset({"z1"})


def test_local_pv_hostname_only_term_becomes_unconstrained() -> None:
    snap = ClusterSnapshot(
        pvcs=[pvc("a", volume="pv1")], pvs=[pv("pv1", [expr(HOST, "n1")], local=True)]
    )
    (alt,) = VolumeTopology(snap).get_requirements(pod_with("a"))
    assert len(alt) == 0


def test_non_local_pv_keeps_hostname() -> None:
    snap = ClusterSnapshot(pvcs=[pvc("a", volume="pv1")], pvs=[pv("pv1", [expr(HOST, "n1")])])
    (alt,) = VolumeTopology(snap).get_requirements(pod_with("a"))
    assert alt.get(HOST).values == frozenset({"n1"})


def test_unbound_pvc_uses_storage_class_allowed_topologies() -> None:
    snap = ClusterSnapshot(
        pvcs=[pvc("a", sc="gp3")],
        storage_classes=[sc("gp3", [expr(ZONE, "z1", "z2")], [expr(ZONE, "z3")])],
    )
    assert zones(VolumeTopology(snap).get_requirements(pod_with("a"))) == [["z1", "z2"], ["z3"]]


def test_volumes_combine_keeping_only_intersecting_combinations() -> None:
    snap = ClusterSnapshot(
        pvcs=[pvc("a", volume="pv1"), pvc("b", sc="gp3")],
        pvs=[pv("pv1", [expr(ZONE, "z1")], [expr(ZONE, "z2")])],
        storage_classes=[sc("gp3", [expr(ZONE, "z2")], [expr(ZONE, "z3")])],
    )
    assert zones(VolumeTopology(snap).get_requirements(pod_with("a", "b"))) == [["z2"]]


def test_incompatible_volumes_keep_the_full_cross_product() -> None:
    snap = ClusterSnapshot(
        pvcs=[pvc("a", volume="pv1"), pvc("b", volume="pv2")],
        pvs=[pv("pv1", [expr(ZONE, "z1")]), pv("pv2", [expr(ZONE, "z2")])],
    )
    alts = VolumeTopology(snap).get_requirements(pod_with("a", "b"))
    assert len(alts) == 1
    assert alts[0].get(ZONE).values == frozenset()  # z1 ∩ z2: nothing, fails later in the scheduler


@pytest.mark.parametrize(
    "snap",
    [
        pytest.param(ClusterSnapshot(), id="missing-pvc"),
        pytest.param(ClusterSnapshot(pvcs=[pvc("a", volume="gone")]), id="missing-pv"),
        pytest.param(ClusterSnapshot(pvcs=[pvc("a", sc="gone")]), id="missing-storage-class"),
    ],
)
def test_lookup_failures_raise(snap: ClusterSnapshot) -> None:
    with pytest.raises(VolumeTopologyError):
        VolumeTopology(snap).get_requirements(pod_with("a"))


def test_requirements_by_pod_skips_failures_and_unconstrained_pods() -> None:
    good = pod_with("a")
    bad = Pod.from_dict(
        {
            **good.raw,
            "metadata": {"name": "q", "namespace": "ns"},
            "spec": {
                **good.raw["spec"],
                "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "nope"}}],
            },
        }
    )
    snap = ClusterSnapshot(
        pvcs=[pvc("a", sc="gp3")], storage_classes=[sc("gp3", [expr(ZONE, "z1")])]
    )
    out = volume_requirements_by_pod(snap, [good, bad, pod_with()])
    assert list(out) == [good.uid]


@pytest.mark.parametrize(
    ("snap", "fragment"),
    [
        pytest.param(ClusterSnapshot(), "not found", id="missing-pvc"),
        pytest.param(
            ClusterSnapshot(
                pvcs=[pvc("a", sc="gp3", metadata={"deletionTimestamp": "2024-01-01T00:00:00Z"})],
                storage_classes=[sc("gp3")],
            ),
            "persistentvolumeclaim is being deleted",
            id="deleting-pvc",
        ),
        pytest.param(
            ClusterSnapshot(
                pvcs=[pvc("a", volume="pv1", status={"phase": "Lost"})], pvs=[pv("pv1")]
            ),
            "bound to non-existent persistentvolume",
            id="lost",
        ),
        pytest.param(
            ClusterSnapshot(pvcs=[pvc("a", volume="pv1")]),
            "PersistentVolume pv1 not found",
            id="missing-pv",
        ),
        pytest.param(
            ClusterSnapshot(
                pvcs=[pvc("a", volume="pv1")],
                pvs=[
                    PersistentVolume.from_dict(
                        {
                            "metadata": {
                                "name": "pv1",
                                "deletionTimestamp": "2024-01-01T00:00:00Z",
                            },
                            "spec": {},
                        }
                    )
                ],
            ),
            "persistentvolume is being deleted",
            id="deleting-pv",
        ),
        pytest.param(
            ClusterSnapshot(pvcs=[pvc("a", volume="pv1", bound=False)], pvs=[pv("pv1")]),
            "pv.kubernetes.io/bind-completed",
            id="bind-not-completed",
        ),
        pytest.param(
            ClusterSnapshot(pvcs=[pvc("a")]),
            "unbound pvc must define a storage class",
            id="no-class",
        ),
        pytest.param(
            ClusterSnapshot(pvcs=[pvc("a", sc="gone")]),
            "failed to get storage class",
            id="missing-class",
        ),
        pytest.param(
            ClusterSnapshot(
                pvcs=[pvc("a", sc="gp3")], storage_classes=[sc("gp3", mode="Immediate")]
            ),
            "immediate volume binding mode must be bound",
            id="immediate",
        ),
    ],
)
def test_pvc_validation_rejects(snap: ClusterSnapshot, fragment: str) -> None:
    err = VolumeTopology(snap).validate_persistent_volume_claims(pod_with("a"))
    assert err is not None and fragment in err


def test_valid_pvcs_pass_validation() -> None:
    snap = ClusterSnapshot(
        pvcs=[pvc("a", sc="gp3"), pvc("b", volume="pv1")],
        pvs=[pv("pv1")],
        storage_classes=[sc("gp3")],
    )
    assert VolumeTopology(snap).validate_persistent_volume_claims(pod_with("a", "b")) is None


def test_unsupported_topology_key_and_provisioner(monkeypatch: pytest.MonkeyPatch) -> None:
    snap = ClusterSnapshot(
        pvcs=[pvc("a", sc="gp3")],
        storage_classes=[sc("gp3", [expr("rack", "r1")], provisioner="kubernetes.io/aws-ebs")],
    )
    v = VolumeTopology(snap)
    monkeypatch.setattr(vt, "UNSUPPORTED_TOPOLOGY_KEYS", {"rack"})
    assert "unsupported topology key rack" in (
        v.validate_persistent_volume_claims(pod_with("a")) or ""
    )
    monkeypatch.setattr(vt, "UNSUPPORTED_TOPOLOGY_KEYS", set())
    monkeypatch.setattr(vt, "UNSUPPORTED_PROVISIONERS", {"ebs.csi.aws.com"})
    assert "provisioner is not supported" in (
        v.validate_persistent_volume_claims(pod_with("a")) or ""
    )
