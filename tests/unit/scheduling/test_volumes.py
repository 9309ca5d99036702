"""CSI volume limits: driver resolution, claim naming, per-node usage and limits."""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.scheduling.volumes import (
    VolumeLimitError,
    VolumeUsage,
    limits_from_csinode,
    pod_volumes,
    pvc_claim_names,
    resolve_driver,
    volumes_union,
)

PVS: dict[str, dict[str, Any]] = {
    "pv-csi": {"spec": {"csi": {"driver": "ebs.csi.aws.com"}}},
    "pv-intree-ebs": {"spec": {"awsElasticBlockStore": {"volumeID": "vol-1"}}},
    "pv-nfs": {"spec": {"nfs": {"server": "x"}}},
}
SCS: dict[str, dict[str, Any]] = {
    "gp3": {"provisioner": "ebs.csi.aws.com"},
    "legacy": {"provisioner": "kubernetes.io/gce-pd"},
    "custom": {"provisioner": "example.com/driver"},
}


class Raw:
    """A stand-in for a parsed object exposing its raw dict."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw


def _pvc(volume_name: str | None = None, sc: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if volume_name:
        spec["volumeName"] = volume_name
    if sc:
        spec["storageClassName"] = sc
    return {"spec": spec}


@pytest.mark.parametrize(
    ("pvc", "driver"),
    [
        (_pvc(volume_name="pv-csi"), "ebs.csi.aws.com"),
        (_pvc(volume_name="pv-intree-ebs"), "ebs.csi.aws.com"),
        (_pvc(volume_name="pv-nfs"), ""),
        (_pvc(volume_name="pv-missing", sc="gp3"), ""),  # bound: the class is not consulted
        (_pvc(sc="gp3"), "ebs.csi.aws.com"),
        (_pvc(sc="legacy"), "pd.csi.storage.gke.io"),
        (_pvc(sc="custom"), "example.com/driver"),
        (_pvc(sc="missing"), ""),
        (_pvc(), ""),
    ],
)
def test_resolve_driver(pvc: dict[str, Any], driver: str) -> None:
    assert resolve_driver(pvc, PVS.get, SCS.get) == driver


def test_resolve_driver_accepts_objects_with_raw() -> None:
    assert resolve_driver(Raw(_pvc(sc="gp3")), PVS.get, lambda n: Raw(SCS[n])) == "ebs.csi.aws.com"


def test_claim_names_cover_pvcs_and_generic_ephemeral_volumes() -> None:
    spec = {
        "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}},
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}},
            {"name": "tmp", "emptyDir": {}},
        ]
    }
    assert pvc_claim_names("web-0", spec) == ["data-0", "web-0-scratch"]


def test_pod_volumes_group_claims_by_driver_and_skip_unknown_ones() -> None:
    pvcs = {
        ("ns", "a"): _pvc(sc="gp3"),
        ("ns", "b"): _pvc(volume_name="pv-csi"),
        ("ns", "c"): _pvc(sc="custom"),
        ("ns", "d"): _pvc(volume_name="pv-nfs"),
    }
    vols = pod_volumes(
        "ns", ["a", "b", "c", "d", "missing"], lambda ns, n: pvcs.get((ns, n)), PVS.get, SCS.get
    )
    assert vols == {
        "ebs.csi.aws.com": frozenset({"ns/a", "ns/b"}),
        "example.com/driver": frozenset({"ns/c"}),
    }


def test_limits_from_csinode() -> None:
    csinode = {
        "spec": {
            "drivers": [
                {"name": "ebs.csi.aws.com", "allocatable": {"count": 25}},
                {"name": "no-allocatable"},
                {"name": "no-count", "allocatable": {}},
            ]
        }
    }
    assert limits_from_csinode(csinode) == {"ebs.csi.aws.com": 25, "no-count": 0}
    assert limits_from_csinode({}) == {}


def _v(**drivers: set[str]) -> dict[str, frozenset[str]]:
    return {k.replace("_", "."): frozenset(v) for k, v in drivers.items()}


def test_usage_within_limit_is_accepted_and_over_it_rejected() -> None:
    usage = VolumeUsage({"ebs": 2})
    usage.add("ns/p1", _v(ebs={"ns/a"}))
    assert usage.exceeds_limits(_v(ebs={"ns/b"})) is None
    err = usage.exceeds_limits(_v(ebs={"ns/b", "ns/c"}))
    assert err == VolumeLimitError("ebs", 3, 2)
    assert str(err) == "would exceed volume limit (provisioner=ebs, volume-count=3, volume-limit=2)"


def test_shared_claims_count_once() -> None:
    usage = VolumeUsage({"ebs": 1})
    usage.add("ns/p1", _v(ebs={"ns/shared"}))
    assert usage.exceeds_limits(_v(ebs={"ns/shared"})) is None


def test_drivers_without_a_limit_are_unbounded() -> None:
    usage = VolumeUsage({"ebs": 1})
    assert usage.exceeds_limits(_v(other={f"ns/{i}" for i in range(100)})) is None
    assert VolumeUsage().exceeds_limits(_v(ebs={"ns/a", "ns/b"})) is None


def test_explicit_limits_override_stored_ones() -> None:
    usage = VolumeUsage({"ebs": 10})
    usage.add_limit("gp", 5)
    assert usage.limits == {"ebs": 10, "gp": 5}
    assert usage.exceeds_limits(_v(ebs={"ns/a", "ns/b"}), {"ebs": 1}) == VolumeLimitError(
        "ebs", 2, 1
    )


def test_existing_usage_over_limit_is_reported_even_for_a_pod_without_volumes() -> None:
    usage = VolumeUsage()
    usage.add("ns/p1", _v(ebs={"ns/a", "ns/b"}))
    usage.add_limit("ebs", 1)
    assert usage.exceeds_limits({}) == VolumeLimitError("ebs", 2, 1)


def test_delete_pod_keeps_claims_still_used_by_other_pods() -> None:
    usage = VolumeUsage({"ebs": 2})
    usage.add("ns/p1", _v(ebs={"ns/shared", "ns/a"}))
    usage.add("ns/p2", _v(ebs={"ns/shared"}))
    usage.delete_pod("ns/p1")
    usage.delete_pod("ns/unknown")
    assert usage.volumes() == _v(ebs={"ns/shared"})
    assert usage.exceeds_limits(_v(ebs={"ns/b"})) is None


def test_copy_is_independent() -> None:
    usage = VolumeUsage({"ebs": 3})
    usage.add("ns/p1", _v(ebs={"ns/a"}))
    clone = usage.copy()
    clone.add("ns/p2", _v(ebs={"ns/b"}))
    clone.add_limit("ebs", 1)
    assert usage.volumes() == _v(ebs={"ns/a"})
    assert usage.limits == {"ebs": 3}
    assert clone.volumes() == _v(ebs={"ns/a", "ns/b"})


def test_volumes_union_merges_per_driver() -> None:
    assert volumes_union(_v(a={"1"}), _v(a={"2"}, b={"3"})) == _v(a={"1", "2"}, b={"3"})
