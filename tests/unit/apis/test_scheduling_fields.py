"""API-server checks of the pod fields the scheduler reads, and the objects default spreads
and namespace selectors need (Namespace, Service, pod controllers)."""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.apis.objects import (
    Controller,
    Namespace,
    ObjectError,
    Service,
    label_selector_matches,
    validate_pod_scheduling,
)
from karpenter_core.apis.workloads import expand_workload


def node_term(*exprs: dict[str, Any]) -> dict[str, Any]:
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": list(exprs)}]
                }
            }
        }
    }


def pod_term(kind: str, **term: Any) -> dict[str, Any]:
    return {"affinity": {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}


def tsc(**fields: Any) -> dict[str, Any]:
    base = {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone"}
    base["whenUnsatisfiable"] = "DoNotSchedule"
    base.update(fields)
    return {"topologySpreadConstraints": [base]}


NODE_AFF = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
POD_AFF = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        (
            node_term({"key": "a", "operator": "Near", "values": ["b"]}),
            f"{NODE_AFF}.nodeSelectorTerms[0].matchExpressions[0].operator",
        ),
        (
            node_term({"key": "a", "operator": "Gte", "values": ["1"]}),
            f"{NODE_AFF}.nodeSelectorTerms[0].matchExpressions[0].operator",
        ),
        (
            node_term({"key": "a", "operator": "Gt", "values": ["x"]}),
            f"{NODE_AFF}.nodeSelectorTerms[0].matchExpressions[0].values[0]",
        ),
        (
            node_term({"key": "a", "operator": "In"}),
            f"{NODE_AFF}.nodeSelectorTerms[0].matchExpressions[0].values",
        ),
        (
            node_term({"key": "a", "operator": "Exists", "values": ["b"]}),
            f"{NODE_AFF}.nodeSelectorTerms[0].matchExpressions[0].values",
        ),
        (
            node_term({"operator": "Exists"}),
            f"{NODE_AFF}.nodeSelectorTerms[0].matchExpressions[0].key",
        ),
        (
            pod_term(
                "podAffinity",
                topologyKey="kubernetes.io/hostname",
                labelSelector={
                    "matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]
                },
            ),
            f"{POD_AFF}.labelSelector.matchExpressions[0].operator",
        ),
        (
            pod_term("podAffinity", labelSelector={"matchLabels": {"a": "b"}}),
            f"{POD_AFF}.topologyKey",
        ),
        (
            pod_term(
                "podAffinity",
                topologyKey="kubernetes.io/hostname",
                namespaceSelector={"matchLabels": {"team": 3}},
            ),
            f"{POD_AFF}.namespaceSelector.matchLabels.team",
        ),
        (tsc(maxSkew=0), "spec.topologySpreadConstraints[0].maxSkew"),
        (tsc(topologyKey=""), "spec.topologySpreadConstraints[0].topologyKey"),
        (tsc(whenUnsatisfiable="Later"), "spec.topologySpreadConstraints[0].whenUnsatisfiable"),
        (tsc(minDomains=0), "spec.topologySpreadConstraints[0].minDomains"),
        (
            tsc(minDomains=2, whenUnsatisfiable="ScheduleAnyway"),
            "spec.topologySpreadConstraints[0].minDomains",
        ),
        (tsc(nodeTaintsPolicy="Sometimes"), "spec.topologySpreadConstraints[0].nodeTaintsPolicy"),
        (
            tsc(labelSelector={"matchExpressions": [{"key": "a", "operator": "Has"}]}),
            "spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0].operator",
        ),
    ],
)
def test_invalid_scheduling_fields_name_the_field(spec: dict[str, Any], path: str) -> None:
    with pytest.raises(ObjectError) as e:
        validate_pod_scheduling({"containers": [{"name": "c"}], **spec})
    assert e.value.path == path


def test_valid_scheduling_fields_pass() -> None:
    spec = {
        "containers": [{"name": "c"}],
        **node_term({"key": "a", "operator": "Gt", "values": ["3"]}),
        **tsc(minDomains=2, labelSelector={"matchLabels": {"app": "x"}}, matchLabelKeys=["v"]),
    }
    spec["affinity"]["podAntiAffinity"] = {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}
        ]
    }
    validate_pod_scheduling(spec)


def test_preferred_term_weight_must_be_1_to_100() -> None:
    spec = {
        "affinity": {
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 0, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}
                ]
            }
        }
    }
    with pytest.raises(ObjectError, match=r"1\.\.100"):
        validate_pod_scheduling(spec)


@pytest.mark.parametrize(
    ("operator", "values", "labels", "expected"),
    [
        ("In", ["a"], {"k": "a"}, True),
        ("In", ["a"], {}, False),
        ("NotIn", ["a"], {}, True),
        ("NotIn", ["a"], {"k": "a"}, False),
        ("Exists", [], {"k": ""}, True),
        ("DoesNotExist", [], {"k": ""}, False),
        ("Like", ["a"], {"k": "a"}, False),
    ],
)
def test_expression_matches(
    operator: str, values: list[str], labels: dict[str, str], expected: bool
) -> None:
    expression = {"key": "k", "operator": operator, "values": values}
    assert label_selector_matches({"matchExpressions": [expression]}, labels) is expected


def test_namespace_view_keeps_labels() -> None:
    ns = Namespace.from_dict({"metadata": {"name": "data", "labels": {"team": "a"}}})
    assert (ns.name, dict(ns.labels)) == ("data", {"team": "a"})


def test_service_without_selector_selects_nothing() -> None:
    svc = Service.from_dict({"metadata": {"name": "s"}, "spec": {}})
    assert svc.selector is None and svc.key == "default/s"


def test_controller_selector_is_validated() -> None:
    bad = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "rs"},
        "spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}},
    }
    with pytest.raises(ObjectError) as e:
        Controller.from_dict(bad)
    assert e.value.path == "spec.selector.matchExpressions[0].operator"


def test_deployment_expansion_names_its_replicaset_with_the_hash_selector() -> None:
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c"}]},
            },
        },
    }
    exp = expand_workload(deploy)
    (rs,) = exp.controllers
    (p,) = exp.pods
    (owner,) = p.owner_references
    assert (rs.kind, rs.namespace, rs.name, rs.uid) == ("ReplicaSet", "shop", owner.name, owner.uid)
    assert rs.selector == {
        "matchLabels": {"app": "web", "pod-template-hash": p.labels["pod-template-hash"]}
    }


def test_statefulset_expansion_names_itself_as_the_controller() -> None:
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "shop", "uid": "db-uid"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "c"}]},
            },
        },
    }
    (ctrl,) = expand_workload(sts).controllers
    assert (ctrl.kind, ctrl.name, ctrl.uid) == ("StatefulSet", "db", "db-uid")


def test_workload_template_scheduling_fields_are_checked() -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"containers": [{"name": "c"}], **tsc(maxSkew=-1)}}},
    }
    with pytest.raises(ObjectError) as e:
        expand_workload(job)
    assert e.value.path == "spec.template.spec.topologySpreadConstraints[0].maxSkew"
