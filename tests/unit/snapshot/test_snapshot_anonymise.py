"""Anonymising keeps the cluster's relations (which pods each PDB selects, which nodes each
pod's node selector matches, pod-to-node bindings, owners, claims) and hides its names."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from snapshot_cluster import build_cluster

from karpenter_core.kube.selectors import label_selector_from_dict
from karpenter_core.scheduling.requirements import Requirements, strict_pod_requirements
from karpenter_core.snapshot import (
    Anonymiser,
    Snapshot,
    SnapshotSource,
    anonymise,
    take_snapshot,
)
from karpenter_core.snapshot.anonymise import is_well_known_key

Obj = dict[str, Any]


def _uid(obj: Obj) -> str:
    return str(obj["metadata"]["uid"])


def _pdb_selects(snap: Snapshot) -> dict[str, set[str]]:
    out = {}
    for pdb in snap.pdbs():
        selector = label_selector_from_dict(pdb["spec"]["selector"])
        out[_uid(pdb)] = {
            _uid(p)
            for p in snap.pods()
            if p["metadata"]["namespace"] == pdb["metadata"]["namespace"]
            and selector.matches(p["metadata"].get("labels") or {})
        }
    return out


def _selector_matches(snap: Snapshot) -> dict[str, set[str]]:
    out = {}
    for pod in snap.pods():
        reqs = strict_pod_requirements(pod["spec"].get("nodeSelector"), pod["spec"].get("affinity"))
        out[_uid(pod)] = {
            _uid(n)
            for n in snap.nodes()
            if Requirements.from_labels(n["metadata"]["labels"]).is_compatible(reqs)
        }
    return out


def _by_name(objs: list[Obj]) -> dict[str, str]:
    return {o["metadata"]["name"]: _uid(o) for o in objs}


def _binding(snap: Snapshot) -> dict[str, str]:
    nodes = _by_name(snap.nodes())
    return {_uid(p): nodes[p["spec"]["nodeName"]] for p in snap.pods()}


def _by_kind_and_name(snap: Snapshot) -> dict[tuple[str, str, str], str]:
    return {
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): _uid(o)
        for o in snap.iter_objects()
    }


def _owners(snap: Snapshot) -> dict[tuple[str, str], str]:
    """(object, owner kind) -> the owner its reference names: the chain pod -> ReplicaSet
    -> Deployment (and pod -> StatefulSet, Job, DaemonSet) resolves by name, and the
    reference's uid is that object's."""
    objects = _by_kind_and_name(snap)
    out = {}
    for obj in snap.iter_objects():
        for ref in obj["metadata"].get("ownerReferences", []):
            owner = objects[(ref["kind"], obj["metadata"].get("namespace", ""), ref["name"])]
            assert owner == ref["uid"]
            out[(_uid(obj), ref["kind"])] = owner
    return out


def _workload_selection(snap: Snapshot) -> dict[str, tuple[bool, set[str]]]:
    """Each workload and Service: whether its selector matches its own pod template, and
    the pods of its namespace it selects."""
    out = {}
    for kind in ("Deployment", "ReplicaSet", "StatefulSet", "Job", "Service"):
        for obj in snap.objects(kind):
            raw = obj["spec"]["selector"]
            selector = label_selector_from_dict(raw if kind != "Service" else {"matchLabels": raw})
            template = obj["spec"].get("template", {}).get("metadata", {}).get("labels", {})
            out[_uid(obj)] = (
                kind == "Service" or selector.matches(template),
                {
                    _uid(p)
                    for p in snap.pods()
                    if p["metadata"]["namespace"] == obj["metadata"]["namespace"]
                    and selector.matches(p["metadata"].get("labels") or {})
                },
            )
    return out


def _workload_refs(snap: Snapshot) -> dict[str, str]:
    """A StatefulSet's ``serviceName`` names its Service, a CapacityBuffer's
    ``podTemplateRef`` its PodTemplate (both in the object's namespace)."""
    objects = _by_kind_and_name(snap)
    out = {}
    for sts in snap.objects("StatefulSet"):
        ns = sts["metadata"]["namespace"]
        out[_uid(sts)] = objects[("Service", ns, sts["spec"]["serviceName"])]
    for buffer in snap.capacity_buffers():
        ns = buffer["metadata"]["namespace"]
        out[_uid(buffer)] = objects[("PodTemplate", ns, buffer["spec"]["podTemplateRef"]["name"])]
    return out


def _claims(snap: Snapshot) -> dict[str, set[str]]:
    claims = {(c["metadata"]["namespace"], c["metadata"]["name"]): _uid(c) for c in snap.pvcs()}
    return {
        _uid(p): {
            claims[(p["metadata"]["namespace"], v["persistentVolumeClaim"]["claimName"])]
            for v in p["spec"].get("volumes", [])
            if "persistentVolumeClaim" in v
        }
        for p in snap.pods()
    }


def _namespaces_exist(snap: Snapshot) -> bool:
    names = {n["metadata"]["name"] for n in snap.namespaces()}
    return all(
        o["metadata"]["namespace"] in names
        for o in snap.iter_objects()
        if "namespace" in o["metadata"]
    )


def _nodepool_refs(snap: Snapshot) -> dict[str, str]:
    classes = _by_name(snap.node_classes())
    pools = _by_name(snap.nodepools())
    out = {
        _uid(p): classes[p["spec"]["template"]["spec"]["nodeClassRef"]["name"]]
        for p in snap.nodepools()
    }
    out.update(
        {_uid(n): pools[n["metadata"]["labels"]["karpenter.sh/nodepool"]] for n in snap.nodes()}
    )
    return out


PROPERTIES: list[Callable[[Snapshot], Any]] = [
    _pdb_selects, _selector_matches, _binding, _owners, _claims, _namespaces_exist, _nodepool_refs,
    _workload_selection, _workload_refs,
]  # fmt: skip


@pytest.fixture(scope="module")
def snapshots() -> tuple[Snapshot, Snapshot]:
    plain = take_snapshot(build_cluster(), taken_at="T")
    return plain, anonymise(plain, key=b"test-key")


@pytest.mark.parametrize("prop", PROPERTIES, ids=lambda p: p.__name__)
def test_cluster_properties_survive_anonymising(
    snapshots: tuple[Snapshot, Snapshot], prop: Callable[[Snapshot], Any]
) -> None:
    plain, anon = snapshots
    before, after = prop(plain), prop(anon)
    assert before == after
    assert before  # the property is not vacuous on this cluster


def test_the_crafted_cluster_exercises_the_relations(snapshots: tuple[Snapshot, Snapshot]) -> None:
    plain, _ = snapshots
    selects = {len(v) for v in _pdb_selects(plain).values()}
    assert selects == {1, 2, 3}  # checkout, both ledgers, all of search's backends
    matches = _selector_matches(plain)
    assert sorted(len(v) for v in matches.values()) == [1, 1, 1, 2, 3, 3]
    owners = _owners(plain)
    assert {kind for _, kind in owners} == {
        "ReplicaSet", "Deployment", "StatefulSet", "Job", "DaemonSet",
    }  # fmt: skip
    assert sorted(len(pods) for _, pods in _workload_selection(plain).values()) == [1, 1, 1, 2, 2]
    assert len(_workload_refs(plain)) == 2


def test_names_and_free_text_are_hidden(snapshots: tuple[Snapshot, Snapshot]) -> None:
    _, anon = snapshots
    text = "\n".join(json.dumps(o) for o in anon.iter_objects())
    for secret in (
        "ledger", "checkout", "indexer", "payments", "search", "ip-10-0-0", "acme-nodes",
        "general", "hunter2", "postgres", "registry.acme.com", "alice", "i-0ip", "log-agent",
        "fast", "7d9f5c", "progressed",
    ):  # fmt: skip
        assert secret not in text, secret
    assert anon.anonymised is True


def test_well_known_values_and_resources_are_kept(snapshots: tuple[Snapshot, Snapshot]) -> None:
    plain, anon = snapshots
    node = anon.nodes()[0]
    labels = node["metadata"]["labels"]
    assert labels["topology.kubernetes.io/zone"].startswith("us-west-2")
    assert labels["node.kubernetes.io/instance-type"] == "m5.large"
    assert labels["karpenter.sh/capacity-type"] == "spot"
    assert labels["kubernetes.io/hostname"] == node["metadata"]["name"] != "ip-10-0-0-1"
    assert "acme.com/team" in labels  # keys stay, values go
    assert node["status"]["allocatable"] == plain.nodes()[0]["status"]["allocatable"]
    assert node["status"]["addresses"][0] == {"type": "InternalIP", "address": "10.0.0.7"}
    pod = anon.pods()[0]
    container = pod["spec"]["containers"][0]
    assert container["resources"] == {"requests": {"cpu": "500m", "memory": "1Gi"}}
    assert pod["spec"]["tolerations"] == plain.pods()[0]["spec"]["tolerations"]
    assert container["env"][0]["name"] == "PASSWORD"
    requirements = anon.nodepools()[0]["spec"]["template"]["spec"]["requirements"]
    assert requirements[0]["values"] == ["spot", "on-demand"]
    assert requirements[2] == {"key": "acme.com/generation", "operator": "Gt", "values": ["5"]}
    assert anon.storage_classes()[0]["provisioner"] == "ebs.csi.aws.com"


def test_hashes_are_stable_per_key_and_differ_between_keys() -> None:
    a, b = Anonymiser(b"one"), Anonymiser(b"two")
    assert a.hash("web") == Anonymiser(b"one").hash("web") != b.hash("web")
    assert a.hash("web") != a.hash("web2")
    assert a.hash("") == ""
    assert Anonymiser().hash("web") != Anonymiser().hash("web")  # random key by default
    assert len(a.hash("web")) <= 63 and a.hash("web").isalnum() and a.hash("web")[0].isalpha()


def test_the_source_is_hidden_too() -> None:
    snap = anonymise(Snapshot("T", SnapshotSource("https://k8s.acme.com", "prod")))
    assert "acme" not in snap.source.server and snap.source.context != "prod"


@pytest.mark.parametrize(
    ("key", "kept"),
    [
        ("topology.kubernetes.io/zone", True),
        ("karpenter.sh/capacity-type", True),
        ("karpenter.k8s.aws/instance-family", True),
        ("kubernetes.io/arch", True),
        ("kubernetes.io/hostname", False),
        ("karpenter.sh/nodepool", False),
        ("karpenter.k8s.aws/ec2nodeclass", False),
        ("app.kubernetes.io/name", False),
        ("app", False),
        ("acme.com/team", False),
        ("notkubernetes.io/x", False),
    ],
)
def test_well_known_keys(key: str, kept: bool) -> None:
    assert is_well_known_key(key) is kept
