"""Per-node CSI volume limits.

A node can attach only so many volumes per CSI driver (``CSINode.spec.drivers[].allocatable
.count``). Karpenter counts the distinct PVCs each driver would carry on an *existing* node and
refuses a pod that would push a driver over its limit; new NodeClaims have no volume limits.

Cluster objects are passed in as lookup callables returning the raw k8s dict (or an object with
a ``.raw`` dict), so this module does not depend on any particular snapshot type.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from attrs import frozen

Volumes = Mapping[str, frozenset[str]]
"""CSI driver name -> ids (``namespace/name``) of the PVCs using it."""

Lookup = Callable[..., Any]

AWS_EBS_CSI_DRIVER = "ebs.csi.aws.com"

IN_TREE_TO_CSI: dict[str, str] = {
    "kubernetes.io/aws-ebs": AWS_EBS_CSI_DRIVER,
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/azure-file": "file.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
    "kubernetes.io/vsphere-volume": "csi.vsphere.vmware.com",
    "kubernetes.io/portworx-volume": "pxd.portworx.com",
}
"""In-tree provisioner names and the CSI drivers they migrated to (csi-translation-lib)."""


def _raw(obj: Any) -> Mapping[str, Any] | None:
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj
    raw = getattr(obj, "raw", None)
    return raw if isinstance(raw, Mapping) else None


def _get(d: Mapping[str, Any] | None, *path: str) -> Any:
    cur: Any = d
    for p in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(p)
    return cur


def pvc_claim_names(pod_name: str, pod_spec: Mapping[str, Any]) -> list[str]:
    """The PVC names a pod's volumes refer to: ``persistentVolumeClaim.claimName``, and for
    generic ephemeral volumes the generated ``<pod>-<volume>`` name."""
    names: list[str] = []
    for volume in pod_spec.get("volumes") or []:
        if not isinstance(volume, Mapping):
            continue
        claim = _get(volume, "persistentVolumeClaim", "claimName")
        if isinstance(claim, str) and claim:
            names.append(claim)
        elif volume.get("ephemeral") is not None:
            names.append(f"{pod_name}-{volume.get('name', '')}")
    return names


def resolve_driver(pvc: Mapping[str, Any] | Any, get_pv: Lookup, get_storage_class: Lookup) -> str:
    """The CSI driver behind a PVC, or ``""`` when it cannot be told (then it is not counted).

    A bound PVC uses its PV's ``csi.driver`` (in-tree AWS EBS counts as the EBS CSI driver);
    an unbound one uses its StorageClass's provisioner, translated from in-tree names. A missing
    PV or StorageClass, or no StorageClass name, yields ``""`` (as upstream ignores them).
    """
    claim = _raw(pvc)
    volume_name = _get(claim, "spec", "volumeName")
    if volume_name:
        pv = _raw(get_pv(volume_name))
        if pv is None:
            return ""
        driver = _get(pv, "spec", "csi", "driver")
        if isinstance(driver, str) and driver:
            return driver
        if _get(pv, "spec", "awsElasticBlockStore") is not None:
            return AWS_EBS_CSI_DRIVER
        return ""
    sc_name = _get(claim, "spec", "storageClassName")
    if not sc_name:
        return ""
    sc = _raw(get_storage_class(sc_name))
    provisioner = _get(sc, "provisioner")
    if not isinstance(provisioner, str):
        return ""
    return IN_TREE_TO_CSI.get(provisioner, provisioner)


def pod_volumes(
    namespace: str,
    claim_names: Iterable[str],
    get_pvc: Lookup,
    get_pv: Lookup,
    get_storage_class: Lookup,
) -> dict[str, frozenset[str]]:
    """Group a pod's PVCs by CSI driver. ``get_pvc(namespace, name)``, ``get_pv(name)`` and
    ``get_storage_class(name)`` return the object or ``None``; unknown claims are skipped."""
    out: dict[str, set[str]] = {}
    for name in claim_names:
        pvc = get_pvc(namespace, name)
        if _raw(pvc) is None:
            continue
        driver = resolve_driver(pvc, get_pv, get_storage_class)
        if driver:
            out.setdefault(driver, set()).add(f"{namespace}/{name}")
    return {k: frozenset(v) for k, v in out.items()}


def limits_from_csinode(csinode: Mapping[str, Any] | Any) -> dict[str, int]:
    """Per-driver attach limits from a CSINode. A driver with ``allocatable`` but no ``count``
    gets limit 0 (upstream dereferences the missing count as zero) [quirk]."""
    limits: dict[str, int] = {}
    for driver in _get(_raw(csinode), "spec", "drivers") or []:
        if not isinstance(driver, Mapping) or driver.get("allocatable") is None:
            continue
        count = _get(driver, "allocatable", "count")
        limits[str(driver.get("name", ""))] = count if isinstance(count, int) else 0
    return limits


def volumes_union(*volumes: Volumes) -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}
    for vols in volumes:
        for driver, ids in vols.items():
            existing = out.get(driver)
            out[driver] = ids if existing is None else existing | ids
    return out


@frozen
class VolumeLimitError:
    """Adding the pod would attach more volumes of ``driver`` than the node allows."""

    driver: str
    count: int
    limit: int

    def __str__(self) -> str:
        return (
            f"would exceed volume limit (provisioner={self.driver}, "
            f"volume-count={self.count}, volume-limit={self.limit})"
        )


class VolumeUsage:
    """The PVCs attached (or to be attached) to one node, per driver, and the node's limits."""

    __slots__ = ("_limits", "_pod_volumes", "_volumes")

    def __init__(self, limits: Mapping[str, int] | None = None) -> None:
        self._volumes: dict[str, frozenset[str]] = {}
        self._pod_volumes: dict[str, Volumes] = {}
        self._limits: dict[str, int] = dict(limits or {})

    @property
    def limits(self) -> Mapping[str, int]:
        return self._limits

    def add_limit(self, driver: str, value: int) -> None:
        self._limits[driver] = value

    def add(self, pod_key: str, volumes: Volumes) -> None:
        """Record the volumes of ``pod_key`` (a shared PVC counts once per node). A pod
        without volumes leaves no record (as :class:`HostPortUsage`: copies stay small)."""
        if not volumes:
            self.delete_pod(pod_key)
            return
        self._pod_volumes[pod_key] = volumes
        self._volumes = volumes_union(self._volumes, volumes)

    def exceeds_limits(
        self, pod_volumes: Volumes, limits: Mapping[str, int] | None = None
    ) -> VolumeLimitError | None:
        """The first driver (by name) whose distinct PVC count would pass its limit if the pod's
        volumes were added; drivers without a limit are unbounded. ``limits`` overrides the
        stored ones when given."""
        lim = self._limits if limits is None else limits
        if not lim:
            return None
        for driver in sorted(pod_volumes.keys() | self._volumes.keys()):
            limit = lim.get(driver)
            if limit is None:
                continue
            count = len(
                self._volumes.get(driver, frozenset()) | pod_volumes.get(driver, frozenset())
            )
            if count > limit:
                return VolumeLimitError(driver, count, limit)
        return None

    def delete_pod(self, pod_key: str) -> None:
        if self._pod_volumes.pop(pod_key, None) is None:
            return
        # A PVC may be shared with another pod, so rebuild rather than subtract.
        self._volumes = volumes_union(*self._pod_volumes.values())

    def volumes(self) -> dict[str, frozenset[str]]:
        return dict(self._volumes)

    def __contains__(self, pod_key: object) -> bool:
        """Whether ``pod_key`` has volumes recorded here."""
        return pod_key in self._pod_volumes

    def copy(self) -> VolumeUsage:
        # every StateNode copy copies one (a snapshot copies every node): skip __init__
        new = VolumeUsage.__new__(VolumeUsage)
        new._volumes = self._volumes.copy()
        new._pod_volumes = self._pod_volumes.copy()
        new._limits = self._limits.copy()
        return new
