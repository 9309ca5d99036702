"""Parsing core objects into scheduler views: fields, defaults, predicates and errors."""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.apis.objects import (
    CSINode,
    DaemonSet,
    Node,
    ObjectError,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    StorageClass,
    label_selector_matches,
)

GI = 1024**3 * 1000


def pod(**spec: Any) -> dict[str, Any]:
    """A bare Pod with exactly ``spec`` (and ``metadata``/``status`` when given): not the
    kit's builder, whose defaults (a namespace, a status) are what these parsing tests
    leave out to see the view's own defaults."""
    meta = spec.pop("metadata", {"name": "p"})
    status = spec.pop("status", None)
    spec.setdefault("containers", [{"name": "c"}])
    d: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    if status is not None:
        d["status"] = status
    return d


def test_pod_defaults_namespace_and_key() -> None:
    p = Pod.from_dict(pod())
    assert (p.namespace, p.name, p.key) == ("default", "p", "default/p")


def test_pod_without_uid_gets_a_stable_one() -> None:
    a = Pod.from_dict(pod(metadata={"name": "x", "namespace": "n"}))
    b = Pod.from_dict(pod(metadata={"name": "x", "namespace": "n"}))
    c = Pod.from_dict(pod(metadata={"name": "y", "namespace": "n"}))
    assert a.uid == b.uid != c.uid


def test_pod_keeps_given_uid_and_raw() -> None:
    d = pod(metadata={"name": "x", "uid": "abc"})
    p = Pod.from_dict(d)
    assert p.uid == "abc"
    assert p.raw is d


def test_pod_fields_parsed_once() -> None:
    p = Pod.from_dict(
        pod(
            metadata={
                "name": "w",
                "namespace": "n",
                "labels": {"app": "w"},
                "creationTimestamp": "2024-01-02T03:04:05Z",
            },
            nodeSelector={"kubernetes.io/arch": "arm64"},
            priority=7,
            tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
            containers=[{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}],
            volumes=[
                {"name": "data", "persistentVolumeClaim": {"claimName": "data-claim"}},
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}},
                {"name": "tmp", "emptyDir": {}},
            ],
        )
    )
    assert p.labels == {"app": "w"}
    assert p.node_selector == {"kubernetes.io/arch": "arm64"}
    assert p.priority == 7
    assert p.creation_timestamp == 1704164645.0
    assert [t.key for t in p.tolerations] == ["k"]
    assert [hp.port for hp in p.host_ports] == [8080]
    assert p.pvc_names == ("data-claim", "w-scratch")


@pytest.mark.parametrize(
    ("d", "path"),
    [
        pytest.param(
            {"metadata": {}, "spec": {"containers": [{"name": "c"}]}}, "metadata.name", id="no-name"
        ),
        pytest.param(
            {"metadata": {"name": "p"}, "spec": {}}, "spec.containers", id="no-containers"
        ),
        pytest.param(
            pod(containers=[{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]),
            "spec.containers[0].resources.requests.cpu",
            id="bad-quantity",
        ),
        pytest.param(
            pod(initContainers=[{"name": "i", "resources": {"limits": {"memory": "1Qi"}}}]),
            "spec.initContainers[0].resources.limits.memory",
            id="bad-init-limit",
        ),
        pytest.param(
            pod(tolerations=[{"operator": "Bogus"}]), "spec.tolerations[0]", id="bad-toleration"
        ),
        pytest.param(pod(priority="high"), "spec.priority", id="bad-priority"),
        pytest.param(
            pod(metadata={"name": "p", "labels": {"a": 1}}),
            "metadata.labels.a",
            id="label-not-string",
        ),
        pytest.param(
            pod(volumes=[{"name": "v", "persistentVolumeClaim": {}}]),
            "spec.volumes[0].persistentVolumeClaim.claimName",
            id="pvc-without-claim",
        ),
    ],
)
def test_pod_errors_name_the_field(d: dict[str, Any], path: str) -> None:
    with pytest.raises(ObjectError) as e:
        Pod.from_dict(d)
    assert e.value.path == path
    assert str(e.value).startswith(path + ": ")


def _owned(kind: str, api_version: str = "apps/v1") -> dict[str, Any]:
    return {
        "name": "p",
        "ownerReferences": [
            {"apiVersion": api_version, "kind": kind, "name": "o", "uid": "u", "controller": True}
        ],
    }


@pytest.mark.parametrize(
    ("d", "pending"),
    [
        pytest.param(pod(), True, id="plain"),
        pytest.param(pod(nodeName="n1"), False, id="bound"),
        pytest.param(pod(status={"phase": "Succeeded"}), False, id="terminal"),
        pytest.param(
            pod(metadata={"name": "p", "deletionTimestamp": "2024-01-01T00:00:00Z"}),
            False,
            id="terminating",
        ),
        pytest.param(pod(schedulingGates=[{"name": "wait"}]), False, id="gated"),
        pytest.param(pod(metadata=_owned("DaemonSet")), False, id="daemonset-pod"),
        pytest.param(pod(metadata=_owned("Node", "v1")), False, id="mirror-pod"),
        pytest.param(pod(metadata=_owned("ReplicaSet")), True, id="replicaset-pod"),
        pytest.param(pod(status={"nominatedNodeName": "n1"}), False, id="preempting"),
    ],
)
def test_is_pending(d: dict[str, Any], pending: bool) -> None:
    assert Pod.from_dict(d).is_pending() is pending


def test_is_provisionable_needs_kube_scheduler_verdict() -> None:
    unschedulable = {
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    }
    assert Pod.from_dict(pod(status=unschedulable)).is_provisionable()
    assert not Pod.from_dict(pod()).is_provisionable()


def test_terminating_statefulset_pod_is_reschedulable() -> None:
    meta = {**_owned("StatefulSet"), "deletionTimestamp": "2024-01-01T00:00:00Z"}
    assert Pod.from_dict(pod(metadata=meta)).is_reschedulable()
    meta = {**_owned("ReplicaSet"), "deletionTimestamp": "2024-01-01T00:00:00Z"}
    assert not Pod.from_dict(pod(metadata=meta)).is_reschedulable()


def test_required_anti_affinity_detected() -> None:
    aff = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "k"}]
        }
    }
    assert Pod.from_dict(pod(affinity=aff)).has_required_pod_anti_affinity()
    assert not Pod.from_dict(pod()).has_required_pod_anti_affinity()


def test_node_parses_taints_resources_and_readiness() -> None:
    n = Node.from_dict(
        {
            "metadata": {"name": "n1", "labels": {"a": "b"}},
            "spec": {"providerID": "kwok://n1", "taints": [{"key": "t", "effect": "NoSchedule"}]},
            "status": {
                "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "allocatable": {"cpu": "3800m", "memory": "7Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )
    assert n.provider_id == "kwok://n1"
    assert [t.key for t in n.taints] == ["t"]
    assert n.allocatable == {"cpu": 3800, "memory": 7 * GI, "pods": 110000}
    assert n.ready


def test_node_without_allocatable_uses_capacity() -> None:
    n = Node.from_dict({"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "2"}}})
    assert n.allocatable == {"cpu": 2000}
    assert not n.ready


def test_node_bad_taint_names_field() -> None:
    with pytest.raises(ObjectError) as e:
        Node.from_dict(
            {"metadata": {"name": "n"}, "spec": {"taints": [{"key": "t", "effect": "Sometimes"}]}}
        )
    assert e.value.path == "spec.taints[0]"


def test_daemonset_template_pod_is_owned_and_defaulted() -> None:
    ds = DaemonSet.from_dict(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "kube-system"},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {
                    "metadata": {"labels": {"app": "agent"}},
                    "spec": {
                        "containers": [{"name": "a", "resources": {"limits": {"cpu": "200m"}}}]
                    },
                },
            },
        }
    )
    p = ds.template_pod
    assert (p.namespace, p.name) == ("kube-system", "agent")
    assert p.is_owned_by_daemonset()
    assert p.requests == {"cpu": 200}


def test_daemonset_template_errors_are_prefixed() -> None:
    bad = {
        "metadata": {"name": "agent"},
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "x"}}}]}
            }
        },
    }
    with pytest.raises(ObjectError) as e:
        DaemonSet.from_dict(bad)
    assert e.value.path == "spec.template.spec.containers[0].resources.requests.cpu"


def test_pdb_selects_pods_in_its_namespace() -> None:
    pdb = PodDisruptionBudget.from_dict(
        {
            "metadata": {"name": "b", "namespace": "n"},
            "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "w"}}},
        }
    )
    assert pdb.min_available == "50%"
    assert pdb.selects(
        Pod.from_dict(pod(metadata={"name": "a", "namespace": "n", "labels": {"app": "w"}}))
    )
    assert not pdb.selects(
        Pod.from_dict(pod(metadata={"name": "a", "namespace": "m", "labels": {"app": "w"}}))
    )


def test_pdb_rejects_bad_int_or_percent() -> None:
    with pytest.raises(ObjectError) as e:
        PodDisruptionBudget.from_dict(
            {"metadata": {"name": "b"}, "spec": {"maxUnavailable": "half"}}
        )
    assert e.value.path == "spec.maxUnavailable"


def test_pvc_distinguishes_unset_and_empty_storage_class() -> None:
    unset = PersistentVolumeClaim.from_dict({"metadata": {"name": "a"}, "spec": {}})
    empty = PersistentVolumeClaim.from_dict(
        {"metadata": {"name": "a"}, "spec": {"storageClassName": ""}}
    )
    assert unset.storage_class_name is None
    assert empty.storage_class_name == ""
    assert unset.storage_class == empty.storage_class == ""


def test_pv_node_affinity_terms_and_kind() -> None:
    pv = PersistentVolume.from_dict(
        {
            "metadata": {"name": "pv"},
            "spec": {
                "local": {"path": "/mnt"},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "kubernetes.io/hostname",
                                        "operator": "In",
                                        "values": ["n1"],
                                    }
                                ]
                            }
                        ]
                    }
                },
            },
        }
    )
    assert pv.local_or_host_path
    assert pv.node_affinity_terms is not None and len(pv.node_affinity_terms) == 1
    assert (
        PersistentVolume.from_dict({"metadata": {"name": "x"}, "spec": {}}).node_affinity_terms
        is None
    )


def test_storage_class_defaults_and_default_annotation() -> None:
    sc = StorageClass.from_dict(
        {
            "metadata": {
                "name": "gp3",
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
            },
            "provisioner": "ebs.csi.aws.com",
        }
    )
    assert sc.volume_binding_mode == "Immediate"
    assert sc.is_default


@pytest.mark.parametrize(
    ("d", "path"),
    [
        ({"metadata": {"name": "s"}}, "provisioner"),
        (
            {"metadata": {"name": "s"}, "provisioner": "p", "volumeBindingMode": "Later"},
            "volumeBindingMode",
        ),
    ],
)
def test_storage_class_errors(d: dict[str, Any], path: str) -> None:
    with pytest.raises(ObjectError) as e:
        StorageClass.from_dict(d)
    assert e.value.path == path


def test_csinode_limits_only_from_drivers_with_a_count() -> None:
    cn = CSINode.from_dict(
        {
            "metadata": {"name": "n1"},
            "spec": {"drivers": [{"name": "a", "allocatable": {"count": 25}}, {"name": "b"}]},
        }
    )
    assert cn.driver_limits == {"a": 25}


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        (None, {"a": "1"}, False),
        ({}, {"a": "1"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]},
            {"a": "2"},
            True,
        ),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True),
        (
            {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]},
            {"a": "1"},
            False,
        ),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": ""}, False),
        (
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
            {"a": "2"},
            False,
        ),
    ],
)
def test_label_selector_matches(selector: Any, labels: dict[str, str], matches: bool) -> None:
    assert label_selector_matches(selector, labels) is matches
