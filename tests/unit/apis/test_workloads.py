"""Workload expansion into the pods (and PVCs) their controllers would create."""

from __future__ import annotations

import re
from typing import Any

import pytest

from karpenter_core.apis.objects import ObjectError, PersistentVolumeClaim, Pod
from karpenter_core.apis.workloads import (
    WorkloadError,
    expand_workload,
    expand_workloads,
    template_hash,
)

SUFFIX = "[bcdfghjklmnpqrstvwxz2456789]"


def template(labels: dict[str, str] | None = None, cpu: str = "100m") -> dict[str, Any]:
    return {
        "metadata": {"labels": labels or {"app": "web"}},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
    }


def deployment(name: str = "web", replicas: int | None = 3, **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"selector": {"matchLabels": {"app": "web"}}, "template": template()}
    if replicas is not None:
        s["replicas"] = replicas
    s.update(spec)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "shop"},
        "spec": s,
    }


def existing_pod(name: str, labels: dict[str, str], namespace: str = "shop", **extra: Any) -> Pod:
    d: dict[str, Any] = {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            **extra.pop("metadata_extra", {}),
        },
        "spec": {"containers": [{"name": "c"}], **extra.pop("spec", {})},
    }
    d.update(extra)
    return Pod.from_dict(d)


def test_deployment_pods_are_named_like_the_controller_names_them() -> None:
    pods = expand_workload(deployment()).pods
    h = template_hash(deployment()["spec"]["template"])
    assert len(pods) == 3
    for p in pods:
        assert re.fullmatch(rf"web-{h}-{SUFFIX}{{5}}", p.name)
        assert p.namespace == "shop"
        assert p.labels == {"app": "web", "pod-template-hash": h}
        assert [(o.kind, o.name) for o in p.owner_references] == [("ReplicaSet", f"web-{h}")]
        assert p.requests == {"cpu": 100}
        assert p.is_pending()
    assert len({p.name for p in pods}) == 3


def test_deployment_expansion_is_deterministic() -> None:
    a = [p.name for p in expand_workload(deployment()).pods]
    b = [p.name for p in expand_workload(deployment()).pods]
    assert a == b


def test_template_change_changes_the_hash() -> None:
    assert template_hash(template(cpu="1")) != template_hash(template(cpu="2"))


def test_deployment_replicas_default_to_one() -> None:
    assert len(expand_workload(deployment(replicas=None)).pods) == 1


def test_deployment_with_zero_replicas_adds_nothing() -> None:
    assert expand_workload(deployment(replicas=0)).pods == ()


def test_existing_matching_pods_count_towards_replicas() -> None:
    have = [
        existing_pod("web-a", {"app": "web"}, spec={"nodeName": "n1"}),
        existing_pod("web-b", {"app": "web"}),
        existing_pod("other", {"app": "other"}),
        existing_pod("web-c", {"app": "web"}, namespace="elsewhere"),
        existing_pod("web-d", {"app": "web"}, status={"phase": "Failed"}),
    ]
    assert len(expand_workload(deployment(), have).pods) == 1


def test_selector_must_match_template_labels() -> None:
    with pytest.raises(ObjectError) as e:
        expand_workload(deployment(selector={"matchLabels": {"app": "api"}}))
    assert e.value.path == "spec.selector"


def test_bad_template_field_is_reported_with_its_full_path() -> None:
    d = deployment()
    d["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "fast"
    with pytest.raises(ObjectError) as e:
        expand_workload(d)
    assert e.value.path == "spec.template.spec.containers[0].resources.requests.cpu"


@pytest.mark.parametrize("replicas", [-1, "3", 1.5])
def test_bad_replicas_rejected(replicas: Any) -> None:
    with pytest.raises(ObjectError) as e:
        expand_workload(deployment(replicas=replicas))
    assert e.value.path == "spec.replicas"


def test_replicaset_pods() -> None:
    rs = {**deployment(name="rs"), "kind": "ReplicaSet"}
    pods = expand_workload(rs).pods
    assert len(pods) == 3
    assert all(re.fullmatch(rf"rs-{SUFFIX}{{5}}", p.name) for p in pods)
    assert all(p.owner_references[0].kind == "ReplicaSet" for p in pods)


def statefulset(replicas: int = 2, claim_spec: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicas": replicas,
        "selector": {"matchLabels": {"app": "db"}},
        "template": template({"app": "db"}),
    }
    if claim_spec is not None:
        spec["volumeClaimTemplates"] = [{"metadata": {"name": "data"}, "spec": claim_spec}]
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "shop"},
        "spec": spec,
    }


def test_statefulset_pods_have_ordinals_and_identity_labels() -> None:
    pods = expand_workload(statefulset(3)).pods
    assert [p.name for p in pods] == ["db-0", "db-1", "db-2"]
    assert pods[1].labels["statefulset.kubernetes.io/pod-name"] == "db-1"
    assert pods[1].labels["apps.kubernetes.io/pod-index"] == "1"
    assert pods[0].is_owned_by_statefulset()


def test_statefulset_claim_templates_become_pvcs_and_volumes() -> None:
    exp = expand_workload(
        statefulset(2, {"resources": {"requests": {"storage": "1Gi"}}}), default_storage_class="gp3"
    )
    assert [p.key for p in exp.pvcs] == ["shop/data-db-0", "shop/data-db-1"]
    assert all(p.storage_class_name == "gp3" for p in exp.pvcs)
    assert exp.pods[1].pvc_names == ("data-db-1",)


def test_statefulset_keeps_an_explicit_storage_class() -> None:
    exp = expand_workload(statefulset(1, {"storageClassName": "fast"}), default_storage_class="gp3")
    assert exp.pvcs[0].storage_class_name == "fast"


def test_statefulset_reuses_existing_pvcs_and_pods() -> None:
    pvc = PersistentVolumeClaim.from_dict(
        {"metadata": {"name": "data-db-0", "namespace": "shop"}, "spec": {}}
    )
    have = [existing_pod("db-1", {"app": "db"}, spec={"nodeName": "n1"})]
    exp = expand_workload(statefulset(2, {}), have, [pvc])
    assert [p.name for p in exp.pods] == ["db-0"]
    assert exp.pvcs == ()


def job(**spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"template": template({"run": "etl"})}
    s.update(spec)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "etl", "namespace": "data"},
        "spec": s,
    }


@pytest.mark.parametrize(
    ("spec", "status", "count"),
    [
        ({}, None, 1),
        ({"parallelism": 4}, None, 4),
        ({"parallelism": 4, "completions": 2}, None, 2),
        ({"parallelism": 4, "completions": 6}, {"succeeded": 5}, 1),
        ({"parallelism": 4, "suspend": True}, None, 0),
    ],
)
def test_job_pod_count(spec: dict[str, Any], status: dict[str, Any] | None, count: int) -> None:
    obj = job(**spec)
    if status:
        obj["status"] = status
    assert len(expand_workload(obj).pods) == count


def test_job_pods_are_labelled_and_owned() -> None:
    p = expand_workload(job()).pods[0]
    assert re.fullmatch(rf"etl-{SUFFIX}{{5}}", p.name)
    assert p.labels["batch.kubernetes.io/job-name"] == "etl"
    assert p.owner_references[0].kind == "Job"


def test_indexed_job_pods_carry_their_index_and_skip_running_ones() -> None:
    have = [
        existing_pod(
            "etl-0-x",
            {
                "batch.kubernetes.io/job-name": "etl",
                "batch.kubernetes.io/job-completion-index": "0",
            },
            namespace="data",
        )
    ]
    pods = expand_workload(job(parallelism=3, completions=3, completionMode="Indexed"), have).pods
    assert [p.annotations["batch.kubernetes.io/job-completion-index"] for p in pods] == ["1", "2"]
    assert all(re.fullmatch(rf"etl-[12]-{SUFFIX}{{5}}", p.name) for p in pods)


def test_unknown_kind_rejected() -> None:
    with pytest.raises(ObjectError):
        expand_workload({"kind": "CronJob", "metadata": {"name": "x"}, "spec": {}})


def test_replicaset_owned_by_a_listed_deployment_is_not_expanded_twice() -> None:
    rs = {
        **deployment(name="web-abc"),
        "kind": "ReplicaSet",
    }
    rs["metadata"] = {
        "name": "web-abc",
        "namespace": "shop",
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u"}
        ],
    }
    out = expand_workloads([deployment(), rs])
    assert [(i, len(e.pods)) for i, e in out] == [(0, 3), (1, 0)]
    # the ReplicaSet is still a controller, for default topology spreads
    assert [c.name for c in out[1][1].controllers] == ["web-abc"]


def test_expand_workloads_reports_which_object_failed() -> None:
    bad = deployment(name="bad", selector={"matchLabels": {"app": "nope"}})
    with pytest.raises(WorkloadError) as e:
        expand_workloads([deployment(), bad])
    assert e.value.index == 1
    assert e.value.path == "spec.selector"


# --- a snapshot's workloads with their existing pods --------------------------------------


def _ref(kind: str, name: str, uid: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": uid, "controller": True}


def snapshot_deployment(replicas: int) -> list[dict[str, Any]]:
    """A Deployment (uid ``dep``) and its ReplicaSet (uid ``rs``) as a cluster holds them:
    the ReplicaSet named by a hash this module does not compute."""
    dep = deployment(replicas=replicas)
    dep["metadata"]["uid"] = "dep"
    rs_template = template({"app": "web", "pod-template-hash": "5d8f"})
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": "web-5d8f",
            "namespace": "shop",
            "uid": "rs",
            "ownerReferences": [_ref("Deployment", "web", "dep")],
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web", "pod-template-hash": "5d8f"}},
            "template": rs_template,
        },
    }
    return [dep, rs]


def owned_pod(name: str, labels: dict[str, str], owner: dict[str, Any], **extra: Any) -> Pod:
    return existing_pod(name, labels, metadata_extra={"ownerReferences": [owner]}, **extra)


def test_a_deployment_with_its_pods_in_a_snapshot_adds_only_what_its_replicaset_lacks() -> None:
    labels = {"app": "web", "pod-template-hash": "5d8f"}
    have = [
        owned_pod(
            f"web-5d8f-{c}", labels, _ref("ReplicaSet", "web-5d8f", "rs"), spec={"nodeName": "n1"}
        )
        for c in "ab"
    ]
    out = expand_workloads(snapshot_deployment(replicas=3), have)
    (pod,) = [p for _, e in out for p in e.pods]
    # the Deployment keeps its current ReplicaSet: the new pod is that ReplicaSet's
    assert [(o.kind, o.name, o.uid) for o in pod.owner_references] == [
        ("ReplicaSet", "web-5d8f", "rs")
    ]
    assert pod.labels == labels and pod.name.startswith("web-5d8f-")
    # the real ReplicaSet is the pods' controller (default spreads), not a made-up one
    assert [c.name for _, e in out for c in e.controllers] == ["web-5d8f"]
    # as many pods as replicas: nothing is invented
    assert [p for _, e in expand_workloads(snapshot_deployment(2), have) for p in e.pods] == []


def test_a_pod_counts_for_the_controller_its_owner_reference_names_not_every_selector() -> None:
    """Two ReplicaSets selecting the same labels: each counts its own pods (by uid), as
    their controllers do; counting by selector would give each the other's pods."""

    def rs(name: str, uid: str) -> dict[str, Any]:
        obj = {**deployment(name=name, replicas=2), "kind": "ReplicaSet"}
        obj["metadata"] = {**obj["metadata"], "uid": uid}
        return obj

    have = [owned_pod(f"a-{i}", {"app": "web"}, _ref("ReplicaSet", "a", "ua")) for i in range(2)]
    out = dict(expand_workloads([rs("a", "ua"), rs("b", "ub")], have))
    assert (len(out[0].pods), len(out[1].pods)) == (0, 2)
    # a pod whose controller is not in the input still counts by selector (adopted)
    stray = [owned_pod("s", {"app": "web"}, _ref("ReplicaSet", "gone", "ug"))]
    assert len(expand_workload(rs("a", "ua"), stray).pods) == 1


def test_a_statefulset_fills_only_the_ordinals_its_own_pods_do_not_hold() -> None:
    """An anonymised snapshot hashes pod names, so the ordinals come from the
    ``apps.kubernetes.io/pod-index`` label its pods keep."""
    sts = statefulset(3)
    sts["metadata"]["uid"] = "sts"
    have = [
        owned_pod(f"a1b2c3{i}", {"app": "db", "apps.kubernetes.io/pod-index": str(i)},
                  _ref("StatefulSet", "db", "sts"))
        for i in (0, 2)
    ]  # fmt: skip
    assert [p.name for p in expand_workload(sts, have).pods] == ["db-1"]
    assert [p.name for p in expand_workload(sts, have[:1]).pods] == ["db-1", "db-2"]


def test_a_job_counts_its_own_pods_by_uid() -> None:
    j = job(parallelism=3)
    j["metadata"]["uid"] = "job"
    owner = {**_ref("Job", "renamed", "job"), "apiVersion": "batch/v1"}
    have = [owned_pod("x1", {}, owner, namespace="data")]
    assert len(expand_workload(j, have).pods) == 2
