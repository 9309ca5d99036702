"""ClusterSnapshot: merging Nodes and NodeClaims like cluster state, lookups, DaemonSet pods."""

from __future__ import annotations

from typing import Any

from karpenter_core.apis.objects import (
    CSINode,
    DaemonSet,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
)
from karpenter_core.apis.v1 import NodeClaim
from karpenter_core.state.snapshot import ClusterSnapshot
from karpenter_core.testing import builders as b


def node(
    name: str, provider_id: str | None = None, labels: dict[str, str] | None = None, cpu: str = "4"
) -> Node:
    spec = {} if provider_id is None else {"providerID": provider_id}
    return Node.from_dict(
        {
            "metadata": {"name": name, "labels": labels or {}},
            "spec": spec,
            "status": {"capacity": {"cpu": cpu}},
        }
    )


def nodeclaim(name: str, provider_id: str = "", cpu: str = "8", **meta: Any) -> NodeClaim:
    return NodeClaim.from_dict(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "default"}, **meta},
            "spec": {},
            "status": {
                "providerID": provider_id,
                "capacity": {"cpu": cpu},
                "allocatable": {"cpu": cpu},
            },
        }
    )


def pod(name: str, node_name: str = "", cpu: str = "1", **extra: Any) -> Pod:
    """The kit's pod, parsed, with ``metadata``/``spec`` entries merged in and any other
    top-level field (``status``) replaced."""
    raw = b.pod(name, cpu=cpu, node_name=node_name or None)
    raw["metadata"].update(extra.pop("metadata", {}))
    raw["spec"].update(extra.pop("spec", {}))
    raw.update(extra)
    return Pod.from_dict(raw)


MANAGED = {"karpenter.sh/nodepool": "default", "node.kubernetes.io/instance-type": "c-4x"}


def test_node_and_nodeclaim_merge_by_provider_id() -> None:
    snap = ClusterSnapshot(
        nodes=[node("n1", "p://1", MANAGED)], nodeclaims=[nodeclaim("nc1", "p://1")]
    )
    (sn,) = snap.state_nodes()
    assert sn.node is not None and sn.nodeclaim is not None


def test_unlaunched_nodeclaim_is_not_capacity() -> None:
    assert ClusterSnapshot(nodeclaims=[nodeclaim("nc1")]).state_nodes() == []


def test_unmanaged_node_without_provider_id_is_keyed_by_name() -> None:
    (sn,) = ClusterSnapshot(nodes=[node("n1")]).state_nodes()
    assert sn.name() == "n1"


def test_managed_node_without_provider_id_is_skipped() -> None:
    assert ClusterSnapshot(nodes=[node("n1", None, MANAGED)]).state_nodes() == []


def test_managed_uninitialized_node_without_instance_type_is_skipped() -> None:
    labels = {"karpenter.sh/nodepool": "default"}
    assert ClusterSnapshot(nodes=[node("n1", "p://1", labels)]).state_nodes() == []
    labels["karpenter.sh/initialized"] = "true"
    assert len(ClusterSnapshot(nodes=[node("n1", "p://1", labels)]).state_nodes()) == 1


def test_bound_non_terminal_pods_count_on_their_node() -> None:
    snap = ClusterSnapshot(
        nodes=[node("n1", "p://1")],
        pods=[
            pod("a", "n1"),
            pod("done", "n1", status={"phase": "Succeeded"}),
            pod("pending"),
            pod("elsewhere", "ghost"),
        ],
    )
    (sn,) = snap.state_nodes()
    assert [p.name for p in sn.pods] == ["a"]
    assert sn.available() == {"cpu": 3000}
    assert [p.name for p in snap.pending_pods()] == ["pending"]


def test_state_nodes_are_fresh_copies() -> None:
    snap = ClusterSnapshot(nodes=[node("n1", "p://1")])
    first = snap.state_nodes()[0]
    first.add_pod(pod("x", "n1"))
    assert snap.state_nodes()[0].pods == []


def test_active_state_nodes_excludes_deleting() -> None:
    snap = ClusterSnapshot(
        nodes=[node("n1", "p://1", MANAGED), node("n2", "p://2", MANAGED)],
        nodeclaims=[
            nodeclaim("a", "p://1"),
            nodeclaim("b", "p://2", deletionTimestamp="2024-01-01T00:00:00Z"),
        ],
    )
    assert [sn.provider_id() for sn in snap.active_state_nodes()] == ["p://1"]


def test_csinode_limits_reach_the_state_node() -> None:
    snap = ClusterSnapshot(
        nodes=[node("n1", "p://1")],
        csinodes=[
            CSINode.from_dict(
                {
                    "metadata": {"name": "n1"},
                    "spec": {"drivers": [{"name": "ebs.csi.aws.com", "allocatable": {"count": 3}}]},
                }
            )
        ],
    )
    assert snap.state_nodes()[0].volume_limits() == {"ebs.csi.aws.com": 3}


def test_nodepool_resources_sum_capacity_of_live_nodes() -> None:
    snap = ClusterSnapshot(
        nodeclaims=[
            nodeclaim("a", "p://1", cpu="8"),
            nodeclaim("b", "p://2", cpu="4"),
            nodeclaim("c", "p://3", deletionTimestamp="2024-01-01T00:00:00Z"),
        ],
    )
    assert snap.nodepool_resources("default") == {"cpu": 12000, "nodes": 2000}
    assert snap.nodepool_resources("other") == {"nodes": 0}


def _ds(required_zone: str | None = None) -> DaemonSet:
    spec: dict[str, Any] = {
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "100m"}}}]
    }
    if required_zone:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "topology.kubernetes.io/zone",
                                    "operator": "In",
                                    "values": [required_zone],
                                }
                            ]
                        }
                    ]
                }
            }
        }
    return DaemonSet.from_dict(
        {
            "metadata": {"name": "agent", "namespace": "kube-system"},
            "spec": {"template": {"spec": spec}},
        }
    )


def _ds_pod(name: str, created: str, cpu: str) -> Pod:
    return Pod.from_dict(
        {
            "metadata": {
                "name": name,
                "namespace": "kube-system",
                "creationTimestamp": created,
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "DaemonSet",
                        "name": "agent",
                        "uid": "u",
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "nodeName": "n1",
                "containers": [{"name": "a", "resources": {"requests": {"cpu": cpu}}}],
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchFields": [
                                        {"key": "metadata.name", "operator": "In", "values": ["n1"]}
                                    ]
                                }
                            ]
                        }
                    }
                },
            },
        }
    )


def test_daemonset_pod_falls_back_to_the_template() -> None:
    (p,) = ClusterSnapshot(daemonsets=[_ds()]).daemonset_pods()
    assert p.requests == {"cpu": 100}


def test_daemonset_pod_prefers_the_newest_real_pod_with_the_templates_affinity() -> None:
    snap = ClusterSnapshot(
        daemonsets=[_ds("z1")],
        pods=[
            _ds_pod("old", "2024-01-01T00:00:00Z", "150m"),
            _ds_pod("new", "2024-02-01T00:00:00Z", "300m"),
        ],
    )
    (p,) = snap.daemonset_pods()
    assert p.name == "new" and p.requests == {"cpu": 300}
    terms = p.affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]  # type: ignore[index]
    assert terms[0]["matchExpressions"][0]["values"] == ["z1"]


def test_daemonset_pod_keeps_its_affinity_when_the_template_has_none() -> None:
    snap = ClusterSnapshot(
        daemonsets=[_ds()], pods=[_ds_pod("new", "2024-02-01T00:00:00Z", "300m")]
    )
    (p,) = snap.daemonset_pods()
    assert (
        "matchFields"
        in p.affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ][0]
    )  # type: ignore[index]


def _pvc(name: str, **spec: Any) -> PersistentVolumeClaim:
    return PersistentVolumeClaim.from_dict(
        {"metadata": {"name": name, "namespace": "default"}, "spec": spec}
    )


def test_resolve_driver() -> None:
    snap = ClusterSnapshot(
        pvs=[
            PersistentVolume.from_dict(
                {"metadata": {"name": "csi"}, "spec": {"csi": {"driver": "d.example.com"}}}
            ),
            PersistentVolume.from_dict(
                {"metadata": {"name": "ebs"}, "spec": {"awsElasticBlockStore": {"volumeID": "v"}}}
            ),
            PersistentVolume.from_dict(
                {"metadata": {"name": "nfs"}, "spec": {"nfs": {"server": "s"}}}
            ),
        ],
        storage_classes=[
            StorageClass.from_dict(
                {"metadata": {"name": "intree"}, "provisioner": "kubernetes.io/gce-pd"}
            ),
            StorageClass.from_dict({"metadata": {"name": "csi"}, "provisioner": "x.csi.io"}),
        ],
    )
    assert snap.resolve_driver(_pvc("a", volumeName="csi")) == "d.example.com"
    assert snap.resolve_driver(_pvc("a", volumeName="ebs")) == "ebs.csi.aws.com"
    assert snap.resolve_driver(_pvc("a", volumeName="nfs")) == ""
    assert snap.resolve_driver(_pvc("a", volumeName="missing")) == ""
    assert snap.resolve_driver(_pvc("a", storageClassName="intree")) == "pd.csi.storage.gke.io"
    assert snap.resolve_driver(_pvc("a", storageClassName="csi")) == "x.csi.io"
    assert snap.resolve_driver(_pvc("a")) == ""


def test_pod_volumes_group_pvcs_by_driver_and_skip_unknown() -> None:
    snap = ClusterSnapshot(
        pvcs=[_pvc("a", storageClassName="csi"), _pvc("b", storageClassName="csi"), _pvc("c")],
        storage_classes=[
            StorageClass.from_dict({"metadata": {"name": "csi"}, "provisioner": "x.csi.io"})
        ],
    )
    p = Pod.from_dict(
        {
            "metadata": {"name": "p"},
            "spec": {
                "containers": [{"name": "c"}],
                "volumes": [
                    {"name": n, "persistentVolumeClaim": {"claimName": n}}
                    for n in ("a", "b", "c", "missing")
                ],
            },
        }
    )
    assert snap.pod_volumes(p) == {"x.csi.io": frozenset({"default/a", "default/b"})}


def test_default_storage_class_and_lookups() -> None:
    sc = StorageClass.from_dict(
        {
            "metadata": {
                "name": "gp3",
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
            },
            "provisioner": "p",
        }
    )
    other = StorageClass.from_dict({"metadata": {"name": "slow"}, "provisioner": "p"})
    snap = ClusterSnapshot(storage_classes=[other, sc], pods=[pod("x")], nodes=[node("n1")])
    assert snap.default_storage_class() is sc
    assert snap.storage_class("slow") is other
    assert snap.pod("default", "x") is not None and snap.pod("default", "y") is None
    assert snap.node("n1") is not None
