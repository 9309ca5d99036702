"""``karpenter snapshot`` against a real kube-apiserver: the objects it lists are the
server's, trimmed of managedFields; a kind whose CRD is not installed is a note, not an
error; anonymising keeps pods bound to their nodes and PDB selectors matching; a
Deployment is captured with its ReplicaSet, owners before what they own."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import controlplane
from karpenter_core.apis.objects import Pod
from karpenter_core.apis.workloads import expand_workloads
from karpenter_core.cli import main as cli_main
from karpenter_core.kube.adapter import KubernetesClient
from karpenter_core.kube.client import create_with_status
from karpenter_core.kube.selectors import label_selector_from_dict
from karpenter_core.snapshot import Snapshot, read_snapshot

pytestmark = pytest.mark.controlplane


def _cluster(kube: KubernetesClient, ns: str, unique: Callable[[str], str]) -> dict[str, Any]:
    pool = unique("pool")
    kube.create(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": pool},
            "spec": {
                "template": {
                    "spec": {
                        "nodeClassRef": {
                            "group": "karpenter.kwok.sh",
                            "kind": "KWOKNodeClass",
                            "name": "default",
                        },
                        "requirements": [
                            {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}
                        ],
                    }
                }
            },
        }
    )
    nodes = [unique("node") for _ in range(2)]
    for node in nodes:
        create_with_status(
            kube,
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": node,
                    "labels": {"karpenter.sh/nodepool": pool, "kubernetes.io/hostname": node},
                },
                "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
            },
        )
    pods = {}
    for i in range(4):
        name = f"web-{i}"
        kube.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": ns, "labels": {"app": f"web{i % 2}"}},
                "spec": {
                    "nodeName": nodes[i % 2],
                    "containers": [{"name": "c", "image": "registry.example/web:1"}],
                },
            }
        )
        pods[name] = nodes[i % 2]
    kube.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web0", "namespace": ns},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web0"}}},
        }
    )
    return {"pool": pool, "nodes": nodes, "pods": pods}


def _run(cp: controlplane.ControlPlane, *args: str) -> Any:
    return CliRunner().invoke(
        cli_main, ["snapshot", "--kubeconfig", str(cp.kubeconfig), *args], catch_exceptions=False
    )


def _ours(snap: Snapshot, ns: str) -> list[dict[str, Any]]:
    return [p for p in snap.pods() if p["metadata"]["namespace"] == ns]


def test_snapshot_of_a_real_cluster(
    control_plane: controlplane.ControlPlane,
    kube: KubernetesClient,
    namespace: str,
    unique: Callable[[str], str],
    tmp_path: Path,
) -> None:
    made = _cluster(kube, namespace, unique)
    out = tmp_path / "cluster.json.gz"
    result = _run(control_plane, "-o", str(out))
    assert result.exit_code == 0, result.output
    snap = read_snapshot(out)
    assert snap.source.server.startswith("https://")
    pods = {p["metadata"]["name"]: p for p in _ours(snap, namespace)}
    assert {n: p["spec"]["nodeName"] for n, p in pods.items()} == made["pods"]
    assert set(made["nodes"]) <= {n["metadata"]["name"] for n in snap.nodes()}
    assert made["pool"] in {p["metadata"]["name"] for p in snap.nodepools()}
    assert namespace in {n["metadata"]["name"] for n in snap.namespaces()}
    assert ("web0", namespace) in {
        (p["metadata"]["name"], p["metadata"]["namespace"]) for p in snap.pdbs()
    }
    for obj in snap.iter_objects():
        assert "managedFields" not in obj["metadata"]
    assert (
        pods["web-0"]["metadata"]["uid"] == kube.get("Pod", "web-0", namespace)["metadata"]["uid"]
    )
    summary = result.stderr.strip().splitlines()
    assert summary[-1].startswith(f"snapshot of {snap.source.server}: ")
    assert f"written to {out}" in summary[-1]
    # the KWOK plugin is installed, its CRD is not on this server: left out with a note
    assert any(line.startswith("note: KWOKNodeClass") for line in summary)
    assert "KWOKNodeClass" not in snap.kinds


def test_anonymised_snapshot_keeps_bindings_and_selection(
    control_plane: controlplane.ControlPlane,
    kube: KubernetesClient,
    namespace: str,
    unique: Callable[[str], str],
    tmp_path: Path,
) -> None:
    made = _cluster(kube, namespace, unique)
    out = tmp_path / "anon.json"
    result = _run(control_plane, "-o", str(out), "--anonymise", "-q")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    text = out.read_text()
    assert namespace not in text and made["pool"] not in text
    assert not any(node in text for node in made["nodes"])
    snap = read_snapshot(out)
    assert snap.anonymised
    # uids are kept: they find our objects under their hashed names
    node_uid = {n: kube.get("Node", n)["metadata"]["uid"] for n in made["nodes"]}
    pod_uid = {p: kube.get("Pod", p, namespace)["metadata"]["uid"] for p in made["pods"]}
    nodes = {n["metadata"]["uid"]: n["metadata"]["name"] for n in snap.nodes()}
    pods = {p["metadata"]["uid"]: p for p in snap.pods()}
    for pod, node in made["pods"].items():
        assert pods[pod_uid[pod]]["spec"]["nodeName"] == nodes[node_uid[node]]
    mine = [pods[pod_uid[p]] for p in made["pods"]]
    hashed_ns = mine[0]["metadata"]["namespace"]
    assert hashed_ns in {n["metadata"]["name"] for n in snap.namespaces()}
    (pdb,) = [p for p in snap.pdbs() if p["metadata"]["namespace"] == hashed_ns]
    selector = label_selector_from_dict(pdb["spec"]["selector"])
    selected = {p["metadata"]["uid"] for p in mine if selector.matches(p["metadata"]["labels"])}
    assert selected == {pod_uid["web-0"], pod_uid["web-2"]}


def _deployment_chain(kube: KubernetesClient, ns: str, replicas: int) -> dict[str, Any]:
    """A Deployment, its ReplicaSet and its pods, owner references and all, as the
    Deployment and ReplicaSet controllers make them (the test control plane does not run
    those controllers; its garbage collector checks the references)."""
    labels = {"app": "shop"}
    hashed = {**labels, "pod-template-hash": "6b7c8d"}
    spec = {"containers": [{"name": "c", "image": "registry.example/shop:1"}]}

    def ref(obj: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": obj["apiVersion"],
            "kind": obj["kind"],
            "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }

    dep = kube.create(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "shop", "namespace": ns},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": spec},
            },
        }
    )
    rs = kube.create(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": "shop-6b7c8d",
                "namespace": ns,
                "labels": hashed,
                "ownerReferences": [ref(dep)],
            },
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": hashed},
                "template": {"metadata": {"labels": hashed}, "spec": spec},
            },
        }
    )
    pods = [
        kube.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"shop-6b7c8d-{c}",
                    "namespace": ns,
                    "labels": hashed,
                    "ownerReferences": [ref(rs)],
                },
                "spec": spec,
            }
        )
        for c in "xyz"[:replicas]
    ]
    return {"deployment": dep, "replicaset": rs, "pods": pods}


def test_a_deployment_is_captured_with_its_replicaset_and_its_pods_owner_chain_resolves(
    control_plane: controlplane.ControlPlane,
    kube: KubernetesClient,
    namespace: str,
    tmp_path: Path,
) -> None:
    made = _deployment_chain(kube, namespace, 3)
    out = tmp_path / "workloads.json"
    result = _run(control_plane, "-o", str(out), "-q")
    assert result.exit_code == 0, result.output
    snap = read_snapshot(out)
    # owners come first in the file: Deployment, then ReplicaSet, then pods
    kinds = snap.kinds
    assert kinds.index("Deployment") < kinds.index("ReplicaSet") < kinds.index("Pod")
    by_uid = {
        o["metadata"]["uid"]: o
        for o in snap.iter_objects()
        if o["metadata"].get("namespace") == namespace
    }
    pods = _ours(snap, namespace)
    assert sorted(p["metadata"]["name"] for p in pods) == sorted(
        p["metadata"]["name"] for p in made["pods"]
    )
    for pod in pods:
        (to_rs,) = pod["metadata"]["ownerReferences"]
        rs = by_uid[to_rs["uid"]]
        assert (rs["kind"], rs["metadata"]["name"]) == ("ReplicaSet", to_rs["name"])
        (to_dep,) = rs["metadata"]["ownerReferences"]
        dep = by_uid[to_dep["uid"]]
        assert (dep["kind"], dep["metadata"]["name"]) == ("Deployment", "shop")
        assert dep["metadata"]["uid"] == made["deployment"]["metadata"]["uid"]
    # and the snapshot's expansion (karpenter schedule/explain) invents no pod for them
    workloads = [o for o in by_uid.values() if o["kind"] in ("Deployment", "ReplicaSet")]
    existing = [Pod.from_dict(p) for p in pods]
    assert [p for _, e in expand_workloads(workloads, existing) for p in e.pods] == []


def test_bad_kubeconfig_is_one_line_and_exit_1(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli_main, ["snapshot", "--kubeconfig", str(tmp_path / "none"), "-o", str(tmp_path / "s")]
    )
    assert result.exit_code == 1
    assert result.stderr.strip() == f"Error: kubeconfig {tmp_path / 'none'}: no such file"
    assert not (tmp_path / "s").exists()
