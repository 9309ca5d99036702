"""Validation tables, modelled on upstream's CEL and runtime validation tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from apis_fixtures import (
    FULL_CAPACITYBUFFER,
    FULL_NODECLAIM,
    FULL_NODEOVERLAY,
    FULL_NODEPOOL,
    MINIMAL_NODEOVERLAY,
    MINIMAL_NODEPOOL,
    PRICE_NODEOVERLAY,
    STATIC_NODEPOOL,
    TEMPLATE_CAPACITYBUFFER,
    fresh,
)

from karpenter_core.apis import labels as wk
from karpenter_core.apis.v1 import NodePool
from karpenter_core.apis.validation import (
    FieldError,
    is_qualified_name,
    is_valid_label_value,
    validate,
    validate_admission,
    validate_requirement,
    validate_update,
)

Mutation = Callable[[dict[str, Any]], None]


def _np(mutate: Mutation) -> list[str]:
    d = fresh(MINIMAL_NODEPOOL)
    mutate(d)
    return [str(e) for e in validate(d)]


def _tspec(d: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = d["spec"]["template"]["spec"]
    return spec


def _reqs(*reqs: dict[str, Any]) -> Mutation:
    return lambda d: _tspec(d).update(requirements=list(reqs))


def _set(path: str, value: Any) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        node = d
        *parents, last = path.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value

    return mutate


# --- valid objects -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "manifest",
    [
        FULL_NODEPOOL,
        FULL_NODECLAIM,
        FULL_NODEOVERLAY,
        FULL_CAPACITYBUFFER,
        MINIMAL_NODEPOOL,
        STATIC_NODEPOOL,
        PRICE_NODEOVERLAY,
        TEMPLATE_CAPACITYBUFFER,
    ],
)
def test_full_manifests_are_valid(manifest: dict[str, Any]) -> None:
    assert validate(fresh(manifest)) == []


def test_accepts_attrs_objects() -> None:
    assert validate(NodePool.from_dict(fresh(FULL_NODEPOOL))) == []


def test_field_error_str() -> None:
    assert str(FieldError("spec.weight", "Required value")) == "spec.weight: Required value"


# --- NodePool: disruption ------------------------------------------------------------------


@pytest.mark.parametrize("value", ["30s", "1h30m5s", "Never", "0s"])
@pytest.mark.parametrize(
    "field", ["spec.disruption.consolidateAfter", "spec.template.spec.expireAfter"]
)
def test_nillable_durations_accept(field: str, value: str) -> None:
    assert _np(_set(field, value)) == []


@pytest.mark.parametrize("value", ["-1s", "1hr", "FooNever", "1d"])
@pytest.mark.parametrize(
    "field", ["spec.disruption.consolidateAfter", "spec.template.spec.expireAfter"]
)
def test_nillable_durations_reject(field: str, value: str) -> None:
    assert _np(_set(field, value)) == [
        f"{field}: Invalid value: \"{value}\": should match '^(([0-9]+(s|m|h))+|Never)$'"
    ]


@pytest.mark.parametrize("value", ["-1s", "1hr", "Never", "FooNever"])
def test_termination_grace_period_rejects(value: str) -> None:
    errs = _np(_set("spec.template.spec.terminationGracePeriod", value))
    assert len(errs) == 1 and "should match '^([0-9]+(s|m|h))+$'" in errs[0]


@pytest.mark.parametrize("policy", ["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"])
def test_consolidation_policies_accept(policy: str) -> None:
    assert _np(_set("spec.disruption.consolidationPolicy", policy)) == []


@pytest.mark.parametrize(
    "policy", ["1", "0", "balanced", "whenempty", "", "WhenUnderutilized", "foo"]
)
def test_consolidation_policies_reject(policy: str) -> None:
    assert _np(_set("spec.disruption.consolidationPolicy", policy)) == [
        f'spec.disruption.consolidationPolicy: Unsupported value: "{policy}": supported values: '
        '"WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"'
    ]


def _budgets(*budgets: dict[str, Any]) -> Mutation:
    return _set("spec.disruption.budgets", list(budgets))


@pytest.mark.parametrize(
    "budget",
    [
        {"nodes": "10"},
        {"nodes": "10%"},
        {"nodes": "100%"},
        {"nodes": "10", "schedule": "* * * * *", "duration": "20m"},
        {"nodes": "10", "schedule": "* * * * *", "duration": "2h20m"},
        {"nodes": "10", "schedule": "@annually", "duration": "20m"},
        {"nodes": "10", "schedule": "* * * * *", "duration": "20m", "reasons": ["Drifted"]},
        {"nodes": "10", "schedule": "* * * * *", "duration": "20m", "reasons": ["Underutilized"]},
        {"nodes": "10", "reasons": ["Drifted", "Empty"]},
    ],
)
def test_budgets_accept(budget: dict[str, Any]) -> None:
    assert _np(_budgets(budget)) == []


@pytest.mark.parametrize(
    ("budget", "error"),
    [
        ({"nodes": "10", "schedule": "*", "duration": "20m"}, ".schedule: Invalid value"),
        ({"nodes": "10", "schedule": "* * * * ", "duration": "20m"}, ".schedule: Invalid value"),
        ({"nodes": "10", "schedule": "* * * * *", "duration": "-20m"}, ".duration: Invalid value"),
        ({"nodes": "10", "schedule": "* * * * *", "duration": "30s"}, ".duration: Invalid value"),
        ({"nodes": "-10"}, ".nodes: Invalid value"),
        ({"nodes": "-10%"}, ".nodes: Invalid value"),
        ({"nodes": "1000%"}, ".nodes: Invalid value"),
        ({"nodes": "10", "schedule": "* * * * *"}, ": 'schedule' must be set with 'duration'"),
        ({"nodes": "10", "duration": "20m"}, ": 'schedule' must be set with 'duration'"),
        ({"nodes": "1", "reasons": ["invalid"]}, ".reasons[0]: Unsupported value"),
        ({"nodes": "1", "reasons": ["expired"]}, ".reasons[0]: Unsupported value"),
        ({"nodes": "1", "reasons": [""]}, ".reasons[0]: Unsupported value"),
        ({"nodes": "1", "reasons": ["Empty", "Empty"]}, '.reasons[1]: Duplicate value: "Empty"'),
        ({"nodes": "1", "schedule": "61 * * * *", "duration": "1h"}, ".schedule: invalid cron"),
    ],
)
def test_budgets_reject(budget: dict[str, Any], error: str) -> None:
    errs = _np(_budgets({"nodes": "5"}, budget))
    assert len(errs) == 1, errs
    assert errs[0].startswith("spec.disruption.budgets[1]" + error), errs


def test_budgets_max_items() -> None:
    errs = _np(_budgets(*[{"nodes": "1"}] * 51))
    assert errs == ["spec.disruption.budgets: Too many: 51: must have at most 50 items"]


# --- NodePool: taints --------------------------------------------------------------------------


def test_valid_taints() -> None:
    taints = [
        {"key": "a", "value": "b", "effect": "NoSchedule"},
        {"key": "c", "value": "d", "effect": "NoExecute"},
        {"key": "e", "value": "f", "effect": "PreferNoSchedule"},
        {"key": "Test", "value": "f", "effect": "PreferNoSchedule"},
        {"key": "test.com/Test", "value": "f", "effect": "PreferNoSchedule"},
        {"key": "test.com.com/test", "value": "f", "effect": "PreferNoSchedule"},
        {"key": "key-only", "effect": "NoExecute"},
        {"key": "a", "effect": "NoExecute"},
    ]
    assert _np(lambda d: _tspec(d).update(taints=taints)) == []


@pytest.mark.parametrize(
    "key", ["test.com.com}", "Test.com/test", "test/test/test", "test/", "/test"]
)
def test_invalid_taint_keys(key: str) -> None:
    errs = _np(lambda d: _tspec(d).update(taints=[{"key": key, "effect": "NoSchedule"}]))
    assert errs and errs[0].startswith("spec.template.spec.taints[0].key: Invalid value"), errs


def test_taint_key_too_long_fails_at_runtime() -> None:
    key = "test.com.test/test-" + "a" * 250
    errs = _np(lambda d: _tspec(d).update(taints=[{"key": key, "effect": "NoSchedule"}]))
    assert errs == [
        "spec.template.spec.taints[0]: invalid value: name part must be no more than 63 "
        "characters in taints"
    ]


def test_missing_taint_key() -> None:
    errs = _np(lambda d: _tspec(d).update(taints=[{"effect": "NoSchedule"}]))
    assert errs == ["spec.template.spec.taints[0].key: Required value"]


def test_invalid_taint_value_and_effect() -> None:
    errs = _np(
        lambda d: _tspec(d).update(
            taints=[
                {"key": "a", "value": "???", "effect": "NoSchedule"},
                {"key": "b", "effect": "???"},
            ]
        )
    )
    assert [e.split(":")[0] for e in errs] == [
        "spec.template.spec.taints[0].value",
        "spec.template.spec.taints[1].effect",
    ]


def test_duplicate_taint_across_taints_and_startup_taints() -> None:
    errs = _np(
        lambda d: _tspec(d).update(
            taints=[{"key": "a", "effect": "NoSchedule"}],
            startupTaints=[{"key": "a", "value": "x", "effect": "NoSchedule"}],
        )
    )
    assert errs == [
        "spec.template.spec.startupTaints[0]: duplicate taint Key/Effect pair a=NoSchedule"
    ]


# --- NodePool: requirements ------------------------------------------------------------------


def test_valid_requirement_keys() -> None:
    reqs = [
        {"key": k, "operator": "Exists"}
        for k in ["Test", "test.com/Test", "test.com.com/test", "key-only"]
    ]
    assert _np(_reqs(*reqs)) == []


@pytest.mark.parametrize(
    "key", ["test.com.com}", "Test.com/test", "test/test/test", "test/", "/test"]
)
def test_invalid_requirement_keys(key: str) -> None:
    errs = _np(_reqs({"key": key, "operator": "Exists"}))
    assert errs and errs[0].startswith("spec.template.spec.requirements[0].key: Invalid value")


def test_requirement_key_too_long_fails_at_runtime() -> None:
    key = "test.com.test/test-" + "a" * 250
    errs = _np(_reqs({"key": key, "operator": "Exists"}))
    assert errs == [
        f"spec.template.spec.requirements[0]: key {key} is not a qualified name, name part must "
        "be no more than 63 characters"
    ]


def test_nodepool_label_requirement_is_rejected() -> None:
    errs = _np(_reqs({"key": "karpenter.sh/nodepool", "operator": "In", "values": ["x"]}))
    assert errs == [
        'spec.template.spec.requirements[0].key: label "karpenter.sh/nodepool" is restricted'
    ]


def test_supported_ops() -> None:
    zone = "topology.kubernetes.io/zone"
    reqs = [
        {"key": zone, "operator": "In", "values": ["test"]},
        {"key": zone, "operator": "Gt", "values": ["1"]},
        {"key": zone, "operator": "Lt", "values": ["1"]},
        {"key": zone, "operator": "Gte", "values": ["1"]},
        {"key": zone, "operator": "Lte", "values": ["1"]},
        {"key": zone, "operator": "NotIn"},
        {"key": zone, "operator": "Exists"},
        {"key": zone, "operator": "DoesNotExist"},
    ]
    assert _np(_reqs(*reqs)) == []


def test_unsupported_op_message() -> None:
    errs = _np(
        _reqs(
            {"key": "a", "operator": "In", "values": ["x"]},
            {"key": "b", "operator": "Exists"},
            {"key": "c", "operator": "Foo", "values": ["x"]},
        )
    )
    assert errs == [
        'spec.template.spec.requirements[2].operator: Unsupported value: "Foo": supported values: '
        '"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"'
    ]


@pytest.mark.parametrize("key", ["karpenter.sh/test", "sub.karpenter.sh/test", "notkarpenter.sh/x"])
def test_restricted_domain_requirement(key: str) -> None:
    errs = _np(_reqs({"key": key, "operator": "In", "values": ["test"]}))
    assert (
        errs[0]
        == 'spec.template.spec.requirements[0].key: label domain "karpenter.sh" is restricted'
    )


def test_hostname_requirement_is_restricted() -> None:
    errs = _np(_reqs({"key": "kubernetes.io/hostname", "operator": "In", "values": ["x"]}))
    assert errs == [
        'spec.template.spec.requirements[0].key: label "kubernetes.io/hostname" is restricted'
    ]


@pytest.mark.parametrize(
    "key",
    ["kubernetes.io/test", "k8s.io/test", "subdomain.kubernetes.io/test", "subdomain.k8s.io/test"],
)
def test_kubernetes_domains_are_allowed(key: str) -> None:
    assert _np(_reqs({"key": key, "operator": "In", "values": ["test"]})) == []


@pytest.mark.parametrize(
    "key", sorted(wk.WELL_KNOWN_LABELS - {wk.NODEPOOL_LABEL_KEY, wk.CAPACITY_TYPE_LABEL_KEY})
)
def test_well_known_labels_are_allowed(key: str) -> None:
    assert _np(_reqs({"key": key, "operator": "In", "values": ["test"]})) == []


def test_provider_restricted_domain_applies_at_runtime(restore_label_sets: None) -> None:
    wk.register_restricted_label_domains(["example-cloud.io"])
    wk.register_well_known_labels(["example-cloud.io/instance-family"])
    ok = _np(_reqs({"key": "example-cloud.io/instance-family", "operator": "In", "values": ["c"]}))
    assert ok == []
    errs = _np(_reqs({"key": "example-cloud.io/secret", "operator": "Exists"}))
    assert len(errs) == 1
    assert errs[0].startswith(
        "spec.template.spec.requirements[0]: using label example-cloud.io/secret is not allowed"
    )
    assert "example-cloud.io/instance-family" in errs[0]


def test_overlapping_requirements_are_allowed() -> None:
    zone = "topology.kubernetes.io/zone"
    assert (
        _np(
            _reqs(
                {"key": zone, "operator": "In", "values": ["test", "foo"]},
                {"key": zone, "operator": "NotIn", "values": ["test", "bar"]},
            )
        )
        == []
    )


def test_empty_requirements_are_allowed() -> None:
    assert _np(_reqs()) == []


@pytest.mark.parametrize("op", ["Gt", "Lt", "Gte", "Lte"])
@pytest.mark.parametrize("values", [[], ["1", "2"], ["a"], ["-1"], ["1.5"]])
def test_numeric_operators_need_one_non_negative_integer(op: str, values: list[str]) -> None:
    errs = _np(_reqs({"key": "topology.kubernetes.io/zone", "operator": op, "values": values}))
    assert errs == [
        "spec.template.spec.requirements[0]: requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' "
        "must have a single positive integer value"
    ]


def test_in_requires_values() -> None:
    assert _np(_reqs({"key": "a", "operator": "In"})) == [
        "spec.template.spec.requirements[0]: requirements with operator 'In' must have a value defined"
    ]


@pytest.mark.parametrize("min_values", [-1, 0, 51])
def test_min_values_bounds(min_values: int) -> None:
    errs = _np(
        _reqs(
            {
                "key": "node.kubernetes.io/instance-type",
                "operator": "Exists",
                "minValues": min_values,
            }
        )
    )
    assert len(errs) == 1 and errs[0].startswith(
        "spec.template.spec.requirements[0].minValues: Invalid value"
    )


def test_min_values_greater_than_values() -> None:
    errs = _np(
        _reqs(
            {
                "key": "node.kubernetes.io/instance-type",
                "operator": "In",
                "values": ["a"],
                "minValues": 2,
            }
        )
    )
    assert errs == [
        "spec.template.spec.requirements[0]: requirements with 'minValues' must have at least that "
        "many values specified in the 'values' field"
    ]


def test_many_values_without_min_values() -> None:
    values = [f"instance{i}" for i in range(90)]
    assert (
        _np(_reqs({"key": "node.kubernetes.io/instance-type", "operator": "In", "values": values}))
        == []
    )


def test_requirements_max_items() -> None:
    reqs = [{"key": f"k{i}", "operator": "Exists"} for i in range(101)]
    assert _np(_reqs(*reqs)) == [
        "spec.template.spec.requirements: Too many: 101: must have at most 100 items"
    ]


def test_capacity_type_needs_a_known_value() -> None:
    errs = _np(_reqs({"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["cheap"]}))
    assert errs == [
        "spec.template.spec.requirements[0]: no valid values found in [cheap] for "
        "karpenter.sh/capacity-type, expected one of: [on-demand reserved spot], got: [cheap]"
    ]


def test_capacity_type_known_values_must_meet_min_values() -> None:
    errs = _np(
        _reqs(
            {
                "key": "karpenter.sh/capacity-type",
                "operator": "In",
                "values": ["spot", "cheap"],
                "minValues": 2,
            }
        )
    )
    assert errs == [
        "spec.template.spec.requirements[0]: not enough valid values found in [spot cheap] for "
        "karpenter.sh/capacity-type, expected at least 2 valid values from: "
        "[on-demand reserved spot], got: 1"
    ]


def test_capacity_type_with_some_unknown_values_is_allowed() -> None:
    assert (
        _np(_reqs({"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "x"]}))
        == []
    )


def test_invalid_requirement_value_fails_at_runtime() -> None:
    errs = _np(_reqs({"key": "a", "operator": "In", "values": ["/bad"]}))
    assert len(errs) == 1
    assert errs[0].startswith(
        "spec.template.spec.requirements[0]: invalid value /bad for key a, a valid label"
    )


# --- NodePool: labels ---------------------------------------------------------------------------


def _labels(labels: dict[str, str]) -> Mutation:
    return _set("spec.template.metadata", {"labels": labels})


@pytest.mark.parametrize(
    "labels",
    [
        {"foo": "bar"},
        {"kops.k8s.io/instancegroup": "karpenter-nodes", "kops.k8s.io/gpu": "1"},
        {"kubernetes.io": "test-value"},
        {"k8s.io/key": "v"},
        {"subdomain.kubernetes.io": "v"},
        {"subdomain.k8s.io/key": "v"},
        {"karpenter.sh/capacity-type": "spot"},
    ],
)
def test_labels_accept(labels: dict[str, str]) -> None:
    assert _np(_labels(labels)) == []


def test_nodepool_label_is_rejected() -> None:
    assert _np(_labels({"karpenter.sh/nodepool": "x"})) == [
        'spec.template.metadata.labels[karpenter.sh/nodepool]: label "karpenter.sh/nodepool" is restricted'
    ]


def test_restricted_label_domain() -> None:
    assert _np(_labels({"karpenter.sh/unknown": "x"})) == [
        'spec.template.metadata.labels[karpenter.sh/unknown]: label domain "karpenter.sh" is restricted'
    ]


def test_invalid_label_key_fails_at_runtime() -> None:
    errs = _np(_labels({"spaces are not allowed": "x"}))
    assert len(errs) == 1
    assert errs[0].startswith(
        'spec.template.metadata.labels[spaces are not allowed]: invalid key name "spaces are not allowed" in labels'
    )


def test_invalid_label_value() -> None:
    errs = _np(_labels({"foo": "/ is not allowed"}))
    assert len(errs) == 1 and errs[0].startswith(
        "spec.template.metadata.labels[foo]: Invalid value"
    )


def test_too_many_labels() -> None:
    errs = _np(_labels({f"k{i}": "v" for i in range(101)}))
    assert errs == ["spec.template.metadata.labels: Too many: 101: must have at most 100 items"]


# --- NodePool: nodeClassRef, static pools, structure -----------------------------------------------


@pytest.mark.parametrize("field", ["group", "kind", "name"])
def test_node_class_ref_fields_must_be_non_empty(field: str) -> None:
    errs = _np(lambda d: _tspec(d)["nodeClassRef"].update({field: ""}))
    assert errs == [f"spec.template.spec.nodeClassRef.{field}: {field} may not be empty"]


@pytest.mark.parametrize("field", ["group", "kind", "name"])
def test_node_class_ref_fields_are_required(field: str) -> None:
    errs = _np(lambda d: _tspec(d)["nodeClassRef"].pop(field))
    assert errs == [f"spec.template.spec.nodeClassRef.{field}: Required value"]


def test_node_class_ref_group_has_no_slash() -> None:
    errs = _np(lambda d: _tspec(d)["nodeClassRef"].update(group="karpenter.k8s.aws/v1"))
    assert len(errs) == 1 and "should match '^[^/]*$'" in errs[0]


@pytest.mark.parametrize("replicas", [0, 3, 10**6])
def test_static_replicas_accept(replicas: int) -> None:
    assert _np(_set("spec.replicas", replicas)) == []


def test_static_replicas_reject_negative() -> None:
    assert _np(_set("spec.replicas", -1)) == [
        "spec.replicas: Invalid value: -1: should be greater than or equal to 0"
    ]


@pytest.mark.parametrize("limit", ["cpu", "memory", "pods", "ephemeral-storage"])
def test_static_pool_rejects_resource_limits(limit: str) -> None:
    def mutate(d: dict[str, Any]) -> None:
        d["spec"]["replicas"] = 2
        d["spec"]["limits"] = {limit: "1"}

    assert _np(mutate) == ["spec: only 'limits.nodes' is supported on static NodePools"]


def test_static_pool_allows_nodes_limit_and_rejects_weight() -> None:
    def mutate(d: dict[str, Any]) -> None:
        d["spec"]["replicas"] = 2
        d["spec"]["limits"] = {"nodes": "4"}
        d["spec"]["weight"] = 5

    assert _np(mutate) == ["spec: 'weight' is not supported on static NodePools"]


@pytest.mark.parametrize(("weight", "ok"), [(1, True), (100, True), (0, False), (101, False)])
def test_weight_bounds(weight: int, ok: bool) -> None:
    assert (_np(_set("spec.weight", weight)) == []) is ok


def test_unknown_field_is_an_error() -> None:
    assert _np(_set("spec.template.spec.expireafter", "1h")) == [
        "spec.template.spec.expireafter: Unknown field"
    ]


def test_wrong_type() -> None:
    assert _np(_set("spec.weight", "ten")) == [
        'spec.weight: Invalid value: "ten": must be of type integer'
    ]


def test_limits_take_quantities() -> None:
    assert _np(_set("spec.limits", {"cpu": 1000, "memory": "1000Gi", "nvidia.com/gpu": "4"})) == []
    errs = _np(_set("spec.limits", {"memory": "lots"}))
    assert len(errs) == 1 and errs[0].startswith('spec.limits[memory]: Invalid value: "lots"')


def test_missing_template_and_name() -> None:
    d = fresh(MINIMAL_NODEPOOL)
    del d["spec"]["template"]
    del d["metadata"]["name"]
    assert [str(e) for e in validate(d)] == [
        "metadata.name: Required value: name or generateName is required",
        "spec.template: Required value",
    ]


def test_invalid_object_name() -> None:
    errs = _np(_set("metadata.name", "Not_Valid"))
    assert len(errs) == 1 and errs[0].startswith('metadata.name: Invalid value: "Not_Valid"')


def test_status_is_not_validated() -> None:
    # The API server ignores status on create (status subresource).
    assert _np(_set("status", {"nodes": "many", "bogus": 1})) == []


# --- NodeClaim -----------------------------------------------------------------------------------


def _nc(mutate: Mutation) -> list[str]:
    d = fresh(FULL_NODECLAIM)
    mutate(d)
    return [str(e) for e in validate(d)]


def test_nodeclaim_allows_nodepool_requirement() -> None:
    assert (
        _nc(
            lambda d: d["spec"].update(
                requirements=[{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["x"]}]
            )
        )
        == []
    )


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("karpenter.sh/foo", 'label domain "karpenter.sh" is restricted'),
        ("kubernetes.io/hostname", 'label "kubernetes.io/hostname" is restricted'),
    ],
)
def test_nodeclaim_restricted_requirements(key: str, message: str) -> None:
    errs = _nc(lambda d: d["spec"].update(requirements=[{"key": key, "operator": "Exists"}]))
    assert errs == [f"spec.requirements[0].key: {message}"]


def test_nodeclaim_resources_are_quantities() -> None:
    errs = _nc(lambda d: d["spec"].update(resources={"requests": {"cpu": "one"}}))
    assert len(errs) == 1 and errs[0].startswith(
        'spec.resources.requests[cpu]: Invalid value: "one"'
    )


def test_nodeclaim_group_may_not_contain_slash() -> None:
    errs = _nc(lambda d: d["spec"]["nodeClassRef"].update(group="a/b"))
    assert len(errs) == 1 and errs[0].startswith("spec.nodeClassRef.group: Invalid value")


# --- NodeOverlay ---------------------------------------------------------------------------------


def _no(mutate: Mutation) -> list[str]:
    d = fresh(MINIMAL_NODEOVERLAY)
    mutate(d)
    return [str(e) for e in validate(d)]


def _oreqs(*reqs: dict[str, Any]) -> Mutation:
    return lambda d: d["spec"].update(requirements=list(reqs))


def test_overlay_not_in_needs_values() -> None:
    assert _no(_oreqs({"key": "a", "operator": "NotIn"})) == [
        "spec.requirements[0]: requirements with operator 'NotIn' must have a value defined"
    ]


def test_overlay_allows_nodepool_key() -> None:
    assert _no(_oreqs({"key": "karpenter.sh/nodepool", "operator": "In", "values": ["x"]})) == []


def test_overlay_has_no_min_values() -> None:
    errs = _no(_oreqs({"key": "a", "operator": "In", "values": ["x"], "minValues": 1}))
    assert errs == ["spec.requirements[0].minValues: Unknown field"]


def test_overlay_numeric_operator_message() -> None:
    assert _no(_oreqs({"key": "a", "operator": "Gte", "values": ["-1"]})) == [
        "spec.requirements[0]: requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single "
        "positive integer value"
    ]


def test_overlay_price_and_adjustment_are_exclusive() -> None:
    assert _no(lambda d: d["spec"].update(price="0.432", priceAdjustment="+10%")) == [
        "spec: cannot set both 'price' and 'priceAdjustment'"
    ]


BAD_PRICES = [
    "+42",
    ".5",
    "42.",
    "42%",
    "3,14",
    "1e10",
    "0x42",
    "forty-two",
    "42a",
    "42 ",
    " 42",
    "42.0.0",
    "-",
    ".",
    "-.42",
]


@pytest.mark.parametrize("price", BAD_PRICES)
def test_overlay_price_rejects(price: str) -> None:
    errs = _no(lambda d: d["spec"].update(price=price))
    assert len(errs) == 1 and errs[0].startswith("spec.price: Invalid value")


@pytest.mark.parametrize("price", ["43", "34.43", "0"])
def test_overlay_price_accepts(price: str) -> None:
    assert _no(lambda d: d["spec"].update(price=price)) == []


@pytest.mark.parametrize("adj", ["1%", "1", "1.3", "-100.0%", "-101.1%", "+", "10%"])
def test_overlay_price_adjustment_rejects(adj: str) -> None:
    errs = _no(lambda d: d["spec"].update(priceAdjustment=adj))
    assert len(errs) == 1 and errs[0].startswith("spec.priceAdjustment: Invalid value")


@pytest.mark.parametrize(
    "adj", ["+1%", "-1%", "-100%", "+100.102%", "+298%", "+43", "-43", "+34.43", "-34.43"]
)
def test_overlay_price_adjustment_accepts(adj: str) -> None:
    assert _no(lambda d: d["spec"].update(priceAdjustment=adj)) == []


@pytest.mark.parametrize("resource", ["cpu", "memory", "ephemeral-storage", "pods"])
def test_overlay_capacity_rejects_well_known_resources(resource: str) -> None:
    assert _no(lambda d: d["spec"].update(capacity={resource: "1"})) == [
        f"spec.capacity[{resource}]: invalid resource restricted"
    ]


def test_overlay_capacity_allows_extended_resources() -> None:
    assert _no(lambda d: d["spec"].update(capacity={"smarter-devices/fuse": "1"})) == []


@pytest.mark.parametrize(("weight", "ok"), [(1, True), (10000, True), (0, False), (10001, False)])
def test_overlay_weight_bounds(weight: int, ok: bool) -> None:
    assert (_no(lambda d: d["spec"].update(weight=weight)) == []) is ok


def test_overlay_requires_requirements() -> None:
    assert _no(lambda d: d["spec"].pop("requirements")) == ["spec.requirements: Required value"]


def test_overlay_runtime_restricted_domain(restore_label_sets: None) -> None:
    wk.register_restricted_label_domains(["example-cloud.io"])
    errs = _no(_oreqs({"key": "example-cloud.io/x", "operator": "Exists"}))
    assert len(errs) == 1 and "using label example-cloud.io/x is not allowed" in errs[0]


# --- CapacityBuffer -----------------------------------------------------------------------------


def _cb(spec: dict[str, Any]) -> list[str]:
    d = {
        "apiVersion": "autoscaling.x-k8s.io/v1beta1",
        "kind": "CapacityBuffer",
        "metadata": {"name": "b", "namespace": "default"},
        "spec": spec,
    }
    return [str(e) for e in validate(d)]


@pytest.mark.parametrize(
    "spec",
    [
        {"podTemplateRef": {"name": "t"}, "replicas": 1},
        {"podTemplateRef": {"name": "t"}, "limits": {"cpu": "4"}},
        {"scalableRef": {"kind": "Deployment", "name": "web"}, "percentage": 10},
        {"scalableRef": {"apiGroup": "apps", "kind": "StatefulSet", "name": "db"}},
    ],
)
def test_capacity_buffer_accepts(spec: dict[str, Any]) -> None:
    assert _cb(spec) == []


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        (
            {"podTemplateRef": {"name": "t"}},
            "spec: If podTemplateRef is set, replicas or limits must also be set",
        ),
        (
            {
                "podTemplateRef": {"name": "t"},
                "replicas": 1,
                "scalableRef": {"kind": "Deployment", "name": "w"},
            },
            "spec: You must define either PodTemplateRef or ScalableRef, but not both",
        ),
        (
            {"podTemplateRef": {"name": ""}, "replicas": 1},
            'spec.podTemplateRef.name: Invalid value: "": should be at least 1 chars long',
        ),
        (
            {"podTemplateRef": {"name": "t"}, "replicas": -1},
            "spec.replicas: Invalid value: -1: should be greater than or equal to 0",
        ),
        (
            {"scalableRef": {"kind": "Job", "name": "w"}},
            'spec.scalableRef.kind: Unsupported value: "Job"',
        ),
        ({"scalableRef": {"name": "w"}}, "spec.scalableRef.kind: Required value"),
    ],
)
def test_capacity_buffer_rejects(spec: dict[str, Any], error: str) -> None:
    errs = _cb(spec)
    assert len(errs) == 1 and errs[0].startswith(error), errs


# --- dispatch and updates ------------------------------------------------------------------------


def test_unsupported_kind() -> None:
    assert [str(e) for e in validate({"apiVersion": "v1", "kind": "Pod"})] == [
        "kind: unsupported kind v1/Pod"
    ]


def test_wrong_version_of_a_known_kind() -> None:
    errs = [str(e) for e in validate({"apiVersion": "karpenter.sh/v1beta1", "kind": "NodePool"})]
    assert errs == [
        'apiVersion: unsupported version "karpenter.sh/v1beta1" for NodePool; use karpenter.sh/v1'
    ]


def test_missing_kind() -> None:
    assert [str(e) for e in validate({"apiVersion": "karpenter.sh/v1"})] == ["kind: Required value"]


def test_update_rejects_node_class_group_and_kind_change() -> None:
    old = fresh(MINIMAL_NODEPOOL)
    new = fresh(MINIMAL_NODEPOOL)
    _tspec(new)["nodeClassRef"].update(group="other.sh", kind="Other")
    assert [str(e) for e in validate_update(old, new)] == [
        "spec.template.spec.nodeClassRef.group: nodeClassRef.group is immutable",
        "spec.template.spec.nodeClassRef.kind: nodeClassRef.kind is immutable",
    ]


def test_update_allows_node_class_name_change() -> None:
    old = fresh(MINIMAL_NODEPOOL)
    new = fresh(MINIMAL_NODEPOOL)
    _tspec(new)["nodeClassRef"]["name"] = "other"
    assert validate_update(old, new) == []


@pytest.mark.parametrize(("old_replicas", "new_replicas"), [(None, 2), (2, None)])
def test_update_rejects_static_dynamic_switch(
    old_replicas: int | None, new_replicas: int | None
) -> None:
    old = fresh(MINIMAL_NODEPOOL)
    new = fresh(MINIMAL_NODEPOOL)
    if old_replicas is not None:
        old["spec"]["replicas"] = old_replicas
    if new_replicas is not None:
        new["spec"]["replicas"] = new_replicas
    assert [str(e) for e in validate_update(old, new)] == [
        "spec: Cannot transition NodePool between static (replicas set) and dynamic (replicas "
        "unset) provisioning modes"
    ]


def test_update_allows_scaling_a_static_pool() -> None:
    old = fresh(MINIMAL_NODEPOOL)
    old["spec"]["replicas"] = 2
    new = fresh(old)
    new["spec"]["replicas"] = 5
    assert validate_update(old, new) == []


def test_nodeclaim_spec_is_immutable() -> None:
    old = fresh(FULL_NODECLAIM)
    new = fresh(FULL_NODECLAIM)
    new["spec"]["expireAfter"] = "1h"
    assert [str(e) for e in validate_update(old, new)] == ["spec: spec is immutable"]


def test_nodeclaim_status_and_metadata_may_change() -> None:
    old = fresh(FULL_NODECLAIM)
    new = fresh(FULL_NODECLAIM)
    new["metadata"]["labels"]["extra"] = "x"
    new["status"]["nodeName"] = "other"
    assert validate_update(old, new) == []


def test_transition_rules_do_not_run_on_create() -> None:
    d = fresh(MINIMAL_NODEPOOL)
    d["spec"]["replicas"] = 1
    assert validate_admission(d) == []


# --- syntax helpers and ValidateRequirement -------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("a", True),
        ("example.com/My_Name-1", True),
        ("-a", False),
        ("a/b/c", False),
        ("/a", False),
        ("a/", False),
        ("UPPER.com/x", False),
        ("x" * 63, True),
        ("x" * 64, False),
    ],
)
def test_is_qualified_name(value: str, ok: bool) -> None:
    assert (is_qualified_name(value) == []) is ok


@pytest.mark.parametrize(
    ("value", "ok"),
    [("", True), ("a.b_c-D", True), ("a b", False), ("-a", False), ("v" * 64, False)],
)
def test_is_valid_label_value(value: str, ok: bool) -> None:
    assert (is_valid_label_value(value) == []) is ok


def test_validate_requirement_normalizes_legacy_keys() -> None:
    req = {"key": "beta.kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
    assert validate_requirement(req) == []


def test_validate_requirement_reports_every_problem_in_order() -> None:
    req = {"key": "karpenter.sh/x y", "operator": "Between", "values": ["a b"]}
    messages = [e.message for e in validate_requirement(req, "r")]
    assert (
        messages[0]
        == "key karpenter.sh/x y has an unsupported operator Between not in [In NotIn Exists DoesNotExist Gt Lt Gte Lte]"
    )
    assert messages[1].startswith("using label karpenter.sh/x y is not allowed")
    assert messages[2].startswith(
        "key karpenter.sh/x y is not a qualified name, name part must consist"
    )
    assert messages[3].startswith("invalid value a b for key karpenter.sh/x y, a valid label must")
    assert len(messages) == 4


def test_defaults_apply_before_validation() -> None:
    # A budget without ``nodes`` is defaulted to 10% by the API server, so it is valid.
    assert _np(_budgets({})) == []


def test_null_optional_fields_mean_unset() -> None:
    assert _np(_set("spec.weight", None)) == []
    assert _np(_set("spec.disruption", None)) == []
