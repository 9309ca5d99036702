"""Disruption markers: Drifted (static, requirements, instance type, provider) and
Consolidatable (consolidateAfter from the last pod event)."""

from __future__ import annotations

from typing import Any

import pytest
from nodeclaim_helpers import NODE_CLASS, Env, fake_instance_type, minutes

from karpenter_core.apis import labels as wk
from karpenter_core.controllers.nodeclaim.disruption import (
    instance_type_not_found,
    requirements_drifted,
    static_fields_drifted,
)
from karpenter_core.kube.client import ResourceType, register_resource

HASH = wk.NODEPOOL_HASH_ANNOTATION_KEY
VERSION = wk.NODEPOOL_HASH_VERSION_ANNOTATION_KEY


def set_pool(env: Env, name: str, **spec: Any) -> None:
    pool = env.server.get("nodepools", name)
    for key, value in spec.items():
        if key == "requirements":
            pool["spec"]["template"]["spec"]["requirements"] = value
        else:
            pool["spec"][key] = value
    env.server.update(pool)


def annotate(env: Env, resource: str, name: str, annotations: dict[str, str]) -> None:
    env.server.patch(resource, name, {"metadata": {"annotations": annotations}})


def drifted(env: Env, name: str = "nc") -> str | None:
    c = env.condition(name, "Drifted")
    return None if c is None else c["reason"]


def registered_in_pool(env: Env, **kwargs: Any) -> dict[str, Any]:
    pool = env.create_nodepool("pool")
    env.launched_and_registered("nc", nodepool=pool, **kwargs)
    return pool


# ----------------------------------------------------------------------------- drift


def test_a_changed_template_hash_drifts_the_nodeclaim() -> None:
    env = Env()
    registered_in_pool(env)
    annotate(env, "nodeclaims", "nc", {HASH: "111", VERSION: "v3"})
    annotate(env, "nodepools", "pool", {HASH: "111", VERSION: "v3"})
    env.settle()
    assert drifted(env) is None
    annotate(env, "nodepools", "pool", {HASH: "222"})
    env.settle()
    assert drifted(env) == "NodePoolDrifted"
    assert env.condition("nc", "Drifted")["status"] == "True"


@pytest.mark.parametrize(
    ("pool_ann", "nc_ann", "want"),
    [
        ({HASH: "1", VERSION: "v3"}, {HASH: "2", VERSION: "v3"}, "NodePoolDrifted"),
        ({HASH: "1", VERSION: "v3"}, {HASH: "2", VERSION: "v2"}, ""),
        ({HASH: "1", VERSION: "v3"}, {HASH: "1", VERSION: "v3"}, ""),
        ({HASH: "1"}, {HASH: "2", VERSION: "v3"}, ""),
        ({}, {}, ""),
    ],
    ids=["hash-differs", "versions-differ", "same", "no-version", "none"],
)
def test_static_drift_table(pool_ann: dict[str, str], nc_ann: dict[str, str], want: str) -> None:
    assert (
        static_fields_drifted(
            {"metadata": {"annotations": pool_ann}}, {"metadata": {"annotations": nc_ann}}
        )
        == want
    )


def test_requirements_the_labels_no_longer_satisfy_drift_the_nodeclaim() -> None:
    env = Env()
    registered_in_pool(env)
    set_pool(
        env,
        "pool",
        requirements=[{"key": wk.LABEL_TOPOLOGY_ZONE, "operator": "In", "values": ["zone-b"]}],
    )
    env.settle()
    assert drifted(env) == "RequirementsDrifted"
    set_pool(
        env,
        "pool",
        requirements=[
            {"key": wk.LABEL_TOPOLOGY_ZONE, "operator": "In", "values": ["zone-a", "zone-b"]}
        ],
    )
    env.settle()
    assert drifted(env) is None, "drift is cleared when it no longer applies"


def test_requirements_drift_follows_a_relabelled_nodeclaim_under_an_unchanged_pool() -> None:
    """The verdict is remembered per NodeClaim against the pool's version and the labels:
    new labels alone must be judged again."""
    env = Env()
    registered_in_pool(env)
    set_pool(
        env,
        "pool",
        requirements=[{"key": "example.com/team", "operator": "In", "values": ["a", "b"]}],
    )
    env.server.patch("nodeclaims", "nc", {"metadata": {"labels": {"example.com/team": "a"}}})
    env.settle()
    assert drifted(env) is None
    env.server.patch("nodeclaims", "nc", {"metadata": {"labels": {"example.com/team": "c"}}})
    env.settle()
    assert drifted(env) == "RequirementsDrifted"
    env.server.patch("nodeclaims", "nc", {"metadata": {"labels": {"example.com/team": "b"}}})
    env.settle()
    assert drifted(env) is None


def test_a_status_only_nodepool_change_does_not_recheck_its_nodeclaims() -> None:
    """The counter rewrites a NodePool's status whenever a node comes or goes; the markers
    never read it, so only spec, label or annotation changes recheck the pool's claims."""
    env = Env()
    registered_in_pool(env)
    env.settle()
    reconciler = env.manager.controller("nodeclaim.disruption").reconciler
    checked: list[str] = []
    original = reconciler.reconcile

    def counting(key: Any) -> Any:
        checked.append(key.name)
        return original(key)

    reconciler.reconcile = counting
    env.server.patch(
        "nodepools", "pool", {"status": {"resources": {"cpu": "7"}}}, subresource="status"
    )
    env.settle()
    assert checked == []
    annotate(env, "nodepools", "pool", {"example.com/note": "x"})
    env.settle()
    assert checked == ["nc"]


def test_requirements_drift_ignores_keys_the_nodeclaim_does_not_carry_with_notin() -> None:
    pool = {
        "spec": {
            "template": {
                "spec": {
                    "requirements": [
                        {"key": "example.com/team", "operator": "NotIn", "values": ["x"]}
                    ]
                }
            }
        }
    }
    assert requirements_drifted(pool, {"metadata": {"labels": {}}}) == ""


def test_a_vanished_instance_type_drifts_the_nodeclaim_after_an_hour() -> None:
    env = Env()
    registered_in_pool(env)
    env.provider.its = [fake_instance_type("other")]
    env.run_for(minutes(55))
    assert drifted(env) is None, "not checked in the first hour"
    env.run_for(minutes(10))
    assert drifted(env) == "InstanceTypeNotFound"


def test_an_unreadable_catalogue_defers_the_instance_type_check(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from karpenter_core.cloudprovider.errors import UnevaluatedNodePoolError

    env = Env()
    registered_in_pool(env)
    env.provider.its = [fake_instance_type("other")]
    real = env.provider.get_instance_types

    def unevaluated(nodepool: Any) -> Any:
        raise UnevaluatedNodePoolError("pool")

    env.provider.get_instance_types = unevaluated  # type: ignore[method-assign]
    with caplog.at_level("DEBUG", logger="karpenter"):
        env.run_for(minutes(65))
    assert drifted(env) is None
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "WARNING")]
    # once the catalogue answers, the check runs at the next pass, not an hour later
    env.provider.get_instance_types = real  # type: ignore[method-assign]
    env.run_for(minutes(10))
    assert drifted(env) == "InstanceTypeNotFound"


def test_instance_type_not_found_table() -> None:
    nc = {
        "metadata": {
            "labels": {
                wk.LABEL_INSTANCE_TYPE: "fake-large",
                wk.LABEL_TOPOLOGY_ZONE: "zone-a",
                wk.CAPACITY_TYPE_LABEL_KEY: "on-demand",
            }
        }
    }
    assert instance_type_not_found([fake_instance_type()], nc) == ""
    assert (
        instance_type_not_found([fake_instance_type(zone="zone-b")], nc) == "InstanceTypeNotFound"
    )
    assert instance_type_not_found([], nc) == "InstanceTypeNotFound"
    reserved = {
        "metadata": {"labels": {**nc["metadata"]["labels"], wk.CAPACITY_TYPE_LABEL_KEY: "reserved"}}
    }
    assert instance_type_not_found([fake_instance_type()], reserved) == "", (
        "a reserved NodeClaim may have been demoted to on-demand"
    )


def test_the_providers_drift_reason_is_used_last() -> None:
    env = Env()
    registered_in_pool(env)
    env.provider.drift_reason = "AMIDrifted"
    env.run_for(minutes(5.1))
    assert drifted(env) == "AMIDrifted"
    env.provider.drift_reason = ""
    env.run_for(minutes(5.1))
    assert drifted(env) is None


def test_an_unlaunched_nodeclaim_is_never_drifted() -> None:
    env = Env()
    env.create_nodepool("pool")
    env.provider.create_errors.extend(RuntimeError("boom") for _ in range(100))
    env.provider.drift_reason = "AMIDrifted"
    env.create_nodeclaim("nc", nodepool=env.server.get("nodepools", "pool"))
    env.run_for(minutes(4))
    assert drifted(env) is None


# ----------------------------------------------------------------------------- consolidatable


def consolidatable(env: Env, name: str = "nc") -> str | None:
    c = env.condition(name, "Consolidatable")
    return None if c is None else c["status"]


def test_a_nodeclaim_becomes_consolidatable_after_consolidate_after() -> None:
    env = Env()
    pool = env.create_nodepool("pool")
    set_pool(env, "pool", disruption={"consolidateAfter": "30s"})
    env.launched_and_registered("nc", nodepool=pool)
    env.run_for(29)
    assert consolidatable(env) is None
    env.run_for(2)
    assert consolidatable(env) == "True"


def test_a_pod_event_restarts_the_consolidate_after_window() -> None:
    env = Env()
    pool = env.create_nodepool("pool")
    set_pool(env, "pool", disruption={"consolidateAfter": "60s"})
    env.launched_and_registered("nc", nodepool=pool)
    env.run_for(61)
    assert consolidatable(env) == "True"
    env.server.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "app", "namespace": "default"},
            "spec": {"nodeName": "node-nc", "containers": [{"name": "c", "image": "x"}]},
        }
    )
    env.settle()
    assert consolidatable(env) is None
    env.run_for(59)
    assert consolidatable(env) is None
    env.run_for(2)
    assert consolidatable(env) == "True"


def test_consolidate_after_zero_is_consolidatable_at_once() -> None:
    env = Env()
    pool = env.create_nodepool("pool")
    set_pool(env, "pool", disruption={"consolidateAfter": "0s"})
    env.launched_and_registered("nc", nodepool=pool)
    assert consolidatable(env) == "True"


def test_consolidate_after_never_clears_the_marker() -> None:
    env = Env()
    pool = env.create_nodepool("pool")
    set_pool(env, "pool", disruption={"consolidateAfter": "0s"})
    env.launched_and_registered("nc", nodepool=pool)
    assert consolidatable(env) == "True"
    set_pool(env, "pool", disruption={"consolidateAfter": "Never"})
    env.settle()
    assert consolidatable(env) is None


def test_static_nodepools_are_never_marked_consolidatable() -> None:
    env = Env()
    pool = env.create_nodepool("pool")
    set_pool(env, "pool", replicas=2, disruption={"consolidateAfter": "0s"})
    env.launched_and_registered("nc", nodepool=pool)
    env.run_for(60)
    assert consolidatable(env) is None


def test_uninitialized_nodeclaims_are_not_consolidatable() -> None:
    env = Env()
    pool = env.create_nodepool("pool")
    set_pool(env, "pool", disruption={"consolidateAfter": "0s"})
    env.create_nodeclaim("nc", nodepool=pool)
    env.settle()
    env.create_node_for("nc", ready=False)
    env.run_for(60)
    assert consolidatable(env) is None


def test_a_nodeclass_change_rechecks_its_nodeclaims_for_drift_at_once() -> None:
    """The provider's drift signal is its NodeClass (security groups, AMIs): a change there
    is checked when it happens, not at the NodeClaim's next 5-minute requeue."""
    rt = register_resource(
        ResourceType(
            group=NODE_CLASS.group,
            version=NODE_CLASS.version,
            kind=NODE_CLASS.kind,
            plural="testnodeclasses",
            namespaced=False,
        )
    )
    env = Env()
    for name in ("default", "unrelated"):
        env.server.create(
            {
                "apiVersion": NODE_CLASS.api_version,
                "kind": NODE_CLASS.kind,
                "metadata": {"name": name},
            }
        )
    registered_in_pool(env)
    env.settle()
    assert drifted(env) is None
    env.provider.drift_reason = "SecurityGroupDrift"
    env.run_for(10)
    assert drifted(env) is None  # nothing has asked the controller to look again yet
    annotate(env, rt.plural, "unrelated", {"example.com/touched": "1"})
    env.run_for(10)
    assert drifted(env) is None  # another NodeClass changed: not this NodeClaim's business
    annotate(env, rt.plural, "default", {"example.com/touched": "1"})
    env.run_for(1)
    assert drifted(env) == "SecurityGroupDrift"
