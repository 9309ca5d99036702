"""attrs models: lossless round trips, typed access, defaults, helpers."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import pytest
from apis_fixtures import (
    FULL_CAPACITYBUFFER,
    FULL_NODECLAIM,
    FULL_NODEOVERLAY,
    FULL_NODEPOOL,
    MINIMAL_NODEPOOL,
    PRICE_NODEOVERLAY,
    STATIC_NODEPOOL,
    TEMPLATE_CAPACITYBUFFER,
    fresh,
)

from karpenter_core.apis.autoscaling import CapacityBuffer
from karpenter_core.apis.crds import crd_manifests
from karpenter_core.apis.durations import HOUR, MINUTE
from karpenter_core.apis.manifests import load_manifests
from karpenter_core.apis.v1 import (
    MAX_INT32,
    APIError,
    Budget,
    Condition,
    NodeClaim,
    NodePool,
    NodeSelectorRequirementWithMinValues,
    Taint,
    apply_defaults,
    root_ready,
)
from karpenter_core.apis.v1alpha1 import NodeOverlay, order_by_weight

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
MODELS: dict[str, Any] = {
    "NodePool": NodePool,
    "NodeClaim": NodeClaim,
    "NodeOverlay": NodeOverlay,
    "CapacityBuffer": CapacityBuffer,
}


@pytest.mark.parametrize(
    ("cls", "manifest"),
    [
        (NodePool, FULL_NODEPOOL),
        (NodeClaim, FULL_NODECLAIM),
        (NodeOverlay, FULL_NODEOVERLAY),
        (CapacityBuffer, FULL_CAPACITYBUFFER),
        (NodePool, STATIC_NODEPOOL),
        (NodeOverlay, PRICE_NODEOVERLAY),
        (CapacityBuffer, TEMPLATE_CAPACITYBUFFER),
    ],
)
def test_full_manifest_round_trips_losslessly(cls: Any, manifest: dict[str, Any]) -> None:
    assert cls.from_dict(fresh(manifest)).to_dict() == manifest


ROUND_TRIP_FIXTURES = (
    FULL_NODEPOOL,
    FULL_NODECLAIM,
    FULL_NODEOVERLAY,
    FULL_CAPACITYBUFFER,
    STATIC_NODEPOOL,
    PRICE_NODEOVERLAY,
    TEMPLATE_CAPACITYBUFFER,
)


def _schema_paths(schema: dict[str, Any], prefix: str = "") -> set[str]:
    out: set[str] = set()
    for name, sub in (schema.get("properties") or {}).items():
        path = f"{prefix}.{name}" if prefix else name
        out |= {path} | _schema_paths(sub, path)
    if "items" in schema:
        out |= _schema_paths(schema["items"], prefix + "[]")
    return out


def _object_paths(obj: Any, prefix: str = "") -> set[str]:
    out: set[str] = set()
    if isinstance(obj, dict):
        for name, sub in obj.items():
            path = f"{prefix}.{name}" if prefix else name
            out |= {path} | _object_paths(sub, path)
    elif isinstance(obj, list):
        for sub in obj:
            out |= _object_paths(sub, prefix + "[]")
    return out


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_round_trip_fixtures_cover_every_crd_field(kind: str) -> None:
    [crd] = [c for c in crd_manifests() if c["spec"]["names"]["kind"] == kind]
    [version] = [v for v in crd["spec"]["versions"] if v.get("storage")]
    schema_fields = _schema_paths(version["schema"]["openAPIV3Schema"])
    used = set().union(*(_object_paths(f) for f in ROUND_TRIP_FIXTURES if f["kind"] == kind))
    missing = {p for p in schema_fields - used if not p.startswith("metadata")}
    assert not missing, sorted(missing)


def test_examples_round_trip_losslessly() -> None:
    objects = [o for o in load_manifests([str(EXAMPLES)]) if o.kind in MODELS]
    assert len(objects) >= 6
    for o in objects:
        assert MODELS[o.kind].from_dict(o.obj).to_dict() == o.obj, o.display


def test_full_nodepool_fields_are_typed() -> None:
    np = NodePool.from_dict(fresh(FULL_NODEPOOL))
    t = np.spec.template
    assert t.labels == {"team": "a", "example.com/tier": "gold"}
    assert t.spec.requirements[1] == NodeSelectorRequirementWithMinValues(
        key="node.kubernetes.io/instance-type", operator="Exists", min_values=2
    )
    assert t.spec.taints[1].time_added == "2026-01-01T00:00:00Z"
    assert t.spec.node_class_ref is not None
    assert t.spec.node_class_ref.group_kind == ("karpenter.kwok.sh", "KWOKNodeClass")
    assert t.spec.termination_grace_period is not None
    assert t.spec.termination_grace_period.nanos == HOUR + 30 * MINUTE
    assert t.spec.expire_after is not None and t.spec.expire_after.nanos == 336 * HOUR
    assert np.spec.disruption is not None
    assert np.spec.disruption.budgets[1].reasons == ("Underutilized", "Drifted")
    assert np.spec.limits["nodes"] == 50
    assert np.weight == 10
    assert np.metadata.generation == 3
    assert np.metadata.created_at == datetime(2026, 1, 1, tzinfo=UTC)
    assert np.ready()


def test_unknown_fields_are_kept_at_every_level() -> None:
    d = fresh(MINIMAL_NODEPOOL)
    d["spec"]["futureField"] = {"a": 1}
    d["spec"]["template"]["spec"]["requirements"][0]["x-extra"] = True
    d["metadata"]["managedFields"] = [{"manager": "me"}]
    np = NodePool.from_dict(d)
    assert np.spec.extra == {"futureField": {"a": 1}}
    assert np.to_dict() == d


def test_explicitly_empty_lists_and_maps_are_written_back() -> None:
    d = fresh(MINIMAL_NODEPOOL)
    d["spec"]["template"]["spec"]["taints"] = []
    d["spec"]["limits"] = {}
    d["spec"]["template"]["spec"]["requirements"][0]["values"] = []
    np = NodePool.from_dict(d)
    assert np.spec.template.spec.taints == ()
    assert np.to_dict() == d


def test_absent_collections_stay_absent() -> None:
    out = NodePool.from_dict(fresh(MINIMAL_NODEPOOL)).to_dict()
    assert "taints" not in out["spec"]["template"]["spec"]
    assert "limits" not in out["spec"]


def test_durations_keep_exact_spelling() -> None:
    d = fresh(MINIMAL_NODEPOOL)
    d["spec"]["template"]["spec"]["expireAfter"] = "60m"
    np = NodePool.from_dict(d)
    assert np.spec.template.spec.expire_after is not None
    assert np.spec.template.spec.expire_after.nanos == HOUR
    assert np.to_dict()["spec"]["template"]["spec"]["expireAfter"] == "60m"


def test_never_duration_is_nil() -> None:
    nc = NodeClaim.from_dict(fresh(FULL_NODECLAIM))
    assert nc.spec.expire_after is not None and nc.spec.expire_after.is_never


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["spec"].update(weight="ten"), "spec.weight: expected an integer, got string"),
        (lambda d: d["spec"].update(weight=True), "spec.weight: expected an integer, got boolean"),
        (
            lambda d: d["spec"]["template"]["spec"].update(requirements="x"),
            "spec.template.spec.requirements: expected a list, got string",
        ),
        (
            lambda d: d["spec"]["template"]["spec"]["requirements"][0].update(values=[1]),
            "spec.template.spec.requirements[0].values: expected a list of strings",
        ),
        (
            lambda d: d["spec"]["template"]["spec"].update(expireAfter="1hr"),
            'spec.template.spec.expireAfter: unknown unit "hr"',
        ),
        (
            lambda d: d["spec"]["template"]["spec"].update(terminationGracePeriod="Never"),
            'spec.template.spec.terminationGracePeriod: "Never" is not allowed',
        ),
        (lambda d: d.update(spec=[]), "spec: expected an object, got array"),
        (lambda d: d["spec"].update(limits={"cpu": [1]}), "spec.limits.cpu: expected a quantity"),
    ],
)
def test_wrong_shapes_raise_api_error_naming_the_field(mutate: Any, message: str) -> None:
    d = fresh(MINIMAL_NODEPOOL)
    mutate(d)
    with pytest.raises(APIError) as e:
        NodePool.from_dict(d)
    assert message in str(e.value)


def test_from_dict_rejects_non_mapping() -> None:
    with pytest.raises(APIError, match="NodePool: expected an object, got array"):
        NodePool.from_dict([])


def test_defaults_match_upstream() -> None:
    np = NodePool.from_dict(fresh(MINIMAL_NODEPOOL), defaults=True)
    d = np.spec.disruption
    assert d is not None
    assert d.consolidate_after is not None and d.consolidate_after.nanos == 0
    assert d.consolidation_policy == "WhenEmptyOrUnderutilized"
    assert d.budgets == (Budget(nodes="10%"),)
    ea = np.spec.template.spec.expire_after
    assert ea is not None and ea.nanos == 720 * HOUR and ea.to_raw() == "720h"


def test_defaults_fill_inside_a_given_disruption() -> None:
    d = fresh(MINIMAL_NODEPOOL)
    d["spec"]["disruption"] = {"consolidationPolicy": "WhenEmpty", "budgets": [{"nodes": "5"}, {}]}
    out = apply_defaults(d)["spec"]["disruption"]
    assert out == {
        "consolidationPolicy": "WhenEmpty",
        "consolidateAfter": "0s",
        "budgets": [{"nodes": "5"}, {"nodes": "10%"}],
    }


def test_defaults_do_not_override_set_values() -> None:
    d = fresh(MINIMAL_NODEPOOL)
    d["spec"]["template"]["spec"]["expireAfter"] = "Never"
    assert apply_defaults(d)["spec"]["template"]["spec"]["expireAfter"] == "Never"


def test_with_defaults_keeps_status_defaults_only_when_status_present() -> None:
    assert "status" not in NodePool.from_dict(fresh(MINIMAL_NODEPOOL)).with_defaults().to_dict()
    d = fresh(MINIMAL_NODEPOOL)
    d["status"] = {}
    assert NodePool.from_dict(d).with_defaults().to_dict()["status"] == {"nodes": 0}


def test_nodeclaim_and_buffer_defaults() -> None:
    nc = NodeClaim.from_dict(
        {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "spec": {}}, defaults=True
    )
    assert nc.spec.expire_after is not None and nc.spec.expire_after.to_raw() == "720h"
    cb = CapacityBuffer.from_dict(
        {"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer", "spec": {}},
        defaults=True,
    )
    assert cb.spec.provisioning_strategy == "buffer.x-k8s.io/active-capacity"


def test_apply_defaults_leaves_foreign_kinds_alone() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "data": {}}
    assert apply_defaults(cm) == cm


def test_hash_ignores_requirements_and_taint_order() -> None:
    a = NodePool.from_dict(fresh(FULL_NODEPOOL))
    spec = a.spec.template.spec
    b = attrs.evolve(
        a,
        spec=attrs.evolve(
            a.spec,
            template=attrs.evolve(
                a.spec.template,
                spec=attrs.evolve(spec, taints=spec.taints[::-1], requirements=()),
            ),
        ),
    )
    assert a.hash() == b.hash()


def test_hash_changes_with_template_labels() -> None:
    a = NodePool.from_dict(fresh(MINIMAL_NODEPOOL))
    d = fresh(MINIMAL_NODEPOOL)
    d["spec"]["template"]["metadata"] = {"labels": {"x": "y"}}
    assert a.hash() != NodePool.from_dict(d).hash()


def test_hash_treats_zero_expire_after_as_unset() -> None:
    d = fresh(MINIMAL_NODEPOOL)
    d["spec"]["template"]["spec"]["expireAfter"] = "0s"
    assert NodePool.from_dict(d).hash() == NodePool.from_dict(fresh(MINIMAL_NODEPOOL)).hash()


NOW = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)  # a Monday


@pytest.mark.parametrize(
    ("budget", "nodes", "allowed"),
    [
        (Budget(nodes="10%"), 25, 3),  # rounds up
        (Budget(nodes="10%"), 0, 0),
        (Budget(nodes="100%"), 7, 7),
        (Budget(nodes="5"), 2, 5),
        # A schedule without a duration is never active (the window has no length).
        (Budget(nodes="0", schedule="0 9 * * mon-fri", duration=None), 10, MAX_INT32),
    ],
)
def test_budget_allowed_disruptions(budget: Budget, nodes: int, allowed: int) -> None:
    assert budget.allowed_disruptions(NOW, nodes) == allowed


def _budget(schedule: str, duration: str, nodes: str = "0") -> Budget:
    return Budget.from_dict({"nodes": nodes, "schedule": schedule, "duration": duration})


def test_budget_is_active_inside_its_window() -> None:
    assert _budget("0 9 * * *", "2h").is_active(NOW)


def test_budget_window_is_closed_at_its_end() -> None:
    # cron "next" is strictly after the checkpoint, so the end instant is outside the window.
    assert not _budget("0 8 * * *", "2h").is_active(NOW)
    assert _budget("0 8 * * *", "2h1m").is_active(NOW)


def test_budget_is_inactive_outside_its_window() -> None:
    b = _budget("0 9 * * *", "30m")
    assert not b.is_active(NOW)
    assert b.allowed_disruptions(NOW, 10) == MAX_INT32


def test_nodepool_allowed_disruptions_takes_minimum_for_reason() -> None:
    d = fresh(MINIMAL_NODEPOOL)
    d["spec"]["disruption"] = {
        "budgets": [
            {"nodes": "50%"},
            {"nodes": "1", "reasons": ["Drifted"]},
            {"nodes": "0", "reasons": ["Empty"], "schedule": "0 9 * * *", "duration": "2h"},
        ]
    }
    np = NodePool.from_dict(d)
    assert np.allowed_disruptions(NOW, 10, "Underutilized") == 5
    assert np.allowed_disruptions(NOW, 10, "Drifted") == 1
    assert np.allowed_disruptions(NOW, 10, "Empty") == 0


def test_nodepool_with_invalid_budget_fails_closed() -> None:
    d = fresh(MINIMAL_NODEPOOL)
    d["spec"]["disruption"] = {
        "budgets": [{"nodes": "5", "schedule": "bad cron x y z", "duration": "1h"}]
    }
    assert NodePool.from_dict(d).allowed_disruptions(NOW, 10, "Empty") == 0


def test_nodepool_without_budgets_is_unbounded() -> None:
    assert (
        NodePool.from_dict(fresh(MINIMAL_NODEPOOL)).allowed_disruptions(NOW, 10, "Empty")
        == MAX_INT32
    )


@pytest.mark.parametrize(
    ("statuses", "ready"),
    [
        ({"Launched": "True", "Registered": "True", "Initialized": "True"}, "True"),
        ({"Launched": "True", "Registered": "False", "Initialized": "Unknown"}, "False"),
        ({"Launched": "True", "Registered": "True"}, "Unknown"),
    ],
)
def test_root_ready(statuses: dict[str, str], ready: str) -> None:
    conds = [Condition(type=t, status=s) for t, s in statuses.items()]
    assert root_ready(conds, ("Launched", "Registered", "Initialized")) == ready


def test_nodeclaim_accessors() -> None:
    nc = NodeClaim.from_dict(fresh(FULL_NODECLAIM))
    assert nc.nodepool_name == "full"
    assert nc.provider_id == "kwok://full-abcde"
    assert nc.is_true("Launched")
    assert not nc.ready()  # Initialized is Unknown
    assert nc.metadata.owner_references[0].block_owner_deletion is True


def test_is_true_reads_the_first_condition_of_its_type() -> None:
    """As :meth:`condition` finds it: the first of a type, True only for "True"."""
    nc = NodeClaim.from_dict(fresh(FULL_NODECLAIM))
    assert not NodeClaim.from_dict({**fresh(FULL_NODECLAIM), "status": None}).is_true("Launched")
    for first, second, expected in (("True", "False", True), ("False", "True", False)):
        conds = (Condition(type="Drifted", status=first), Condition(type="Drifted", status=second))
        assert nc.status is not None
        twice = attrs.evolve(nc, status=attrs.evolve(nc.status, conditions=conds))
        assert twice.is_true("Drifted") is expected
        assert (twice.condition("Drifted") or Condition()).is_true is expected
    assert not nc.is_true("NoSuchCondition")
    assert not nc.is_true("Initialized")  # present, Unknown


def test_template_to_nodeclaim_copies_labels_and_spec() -> None:
    np = NodePool.from_dict(fresh(FULL_NODEPOOL))
    nc = np.spec.template.to_nodeclaim()
    assert nc.metadata.labels == np.spec.template.labels
    assert nc.spec.requirements == np.spec.template.spec.requirements
    assert nc.spec.taints[0] == Taint(key="example.com/special", value="true", effect="NoSchedule")
    assert nc.to_dict()["kind"] == "NodeClaim"


def test_static_nodepool() -> None:
    d = fresh(MINIMAL_NODEPOOL)
    d["spec"]["replicas"] = 3
    assert NodePool.from_dict(d).is_static
    assert not NodePool.from_dict(fresh(MINIMAL_NODEPOOL)).is_static


def test_overlays_order_by_weight_then_name_descending() -> None:
    def overlay(name: str, weight: int | None) -> NodeOverlay:
        spec: dict[str, Any] = {"requirements": []}
        if weight is not None:
            spec["weight"] = weight
        return NodeOverlay.from_dict({"metadata": {"name": name}, "spec": spec})

    ordered = order_by_weight(
        [overlay("a", 10), overlay("b", 10), overlay("c", None), overlay("d", 50)]
    )
    assert [o.name for o in ordered] == ["d", "b", "a", "c"]


def test_capacity_buffer_accessors() -> None:
    cb = CapacityBuffer.from_dict(fresh(FULL_CAPACITYBUFFER))
    assert cb.key == "web/buf"
    assert cb.spec.scalable_ref is not None and cb.spec.scalable_ref.api_group == "apps"
    assert cb.condition("ReadyForProvisioning") is not None
