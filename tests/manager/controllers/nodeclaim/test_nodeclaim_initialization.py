"""Initialization: when a registered NodeClaim's Node is ready for pods."""

from __future__ import annotations

from typing import Any

import pytest
from nodeclaim_helpers import Env, fake_instance_type

from karpenter_core.apis import labels as wk
from karpenter_core.controllers.nodeclaim.initialization import dra_drivers_published
from karpenter_core.runtime.options import Options


def taint(key: str, effect: str = "NoSchedule", value: str | None = None) -> dict[str, Any]:
    t = {"key": key, "effect": effect}
    if value is not None:
        t["value"] = value
    return t


def initialized(env: Env, name: str = "nc") -> tuple[str, str, str]:
    c = env.condition(name, "Initialized")
    assert c is not None
    return c["status"], c["reason"], c["message"]


def test_an_unregistered_nodeclaim_is_not_initialized() -> None:
    env = Env()
    env.create_nodeclaim("nc")
    env.settle()
    assert initialized(env)[:2] == ("Unknown", "AwaitingReconciliation")


def test_a_ready_node_initializes_the_nodeclaim_and_is_labelled() -> None:
    env = Env()
    env.launched_and_registered("nc")
    assert initialized(env)[0] == "True"
    assert env.node("node-nc")["metadata"]["labels"][wk.NODE_INITIALIZED_LABEL_KEY] == "true"
    assert env.condition("nc", "Ready")["status"] == "True"


def test_a_not_ready_node_waits_then_initializes_when_ready() -> None:
    env = Env()
    env.create_nodeclaim("nc")
    env.settle()
    env.create_node_for("nc", ready=False)
    env.settle()
    assert initialized(env) == ("Unknown", "NodeNotReady", "Node status is NotReady")
    assert wk.NODE_INITIALIZED_LABEL_KEY not in env.node("node-nc")["metadata"]["labels"]
    env.set_node_ready("node-nc", True)
    env.settle()
    assert initialized(env)[0] == "True"


def test_startup_taints_hold_initialization_until_removed() -> None:
    env = Env()
    env.create_nodeclaim("nc", startup_taints=[taint("agent-not-ready", value="true")])
    env.settle()
    env.create_node_for("nc")
    env.settle()
    assert initialized(env) == (
        "Unknown",
        "StartupTaintsExist",
        'StartupTaint "agent-not-ready=true:NoSchedule" still exists',
    )
    env.set_node_taints("node-nc", [])
    env.settle()
    assert initialized(env)[0] == "True"


@pytest.mark.parametrize(
    "ephemeral",
    [
        taint("node.kubernetes.io/not-ready"),
        taint("node.kubernetes.io/not-ready", "NoExecute"),
        taint("node.kubernetes.io/unreachable"),
        taint("node.cloudprovider.kubernetes.io/uninitialized", value="true"),
        taint("readiness.k8s.io/network", "NoExecute"),
    ],
)
def test_known_ephemeral_taints_hold_initialization(ephemeral: dict[str, Any]) -> None:
    env = Env()
    env.create_nodeclaim("nc")
    env.settle()
    env.create_node_for("nc", taints=[ephemeral])
    env.settle()
    status, reason, _ = initialized(env)
    assert (status, reason) == ("Unknown", "KnownEphemeralTaintsExist")
    env.set_node_taints("node-nc", [])
    env.settle()
    assert initialized(env)[0] == "True"


def test_an_unregistered_extended_resource_holds_initialization() -> None:
    env = Env()
    env.provider.its = [fake_instance_type(extended={"nvidia.com/gpu": 1})]  # a GPU type
    env.create_nodeclaim(
        "nc", requests={"cpu": "1", "nvidia.com/gpu": "1", "example.com/zero": "0"}
    )
    env.settle()
    env.create_node_for("nc", allocatable={"cpu": "4", "nvidia.com/gpu": "0"})
    env.settle()
    assert initialized(env) == (
        "Unknown",
        "ResourceNotRegistered",
        'Resource "nvidia.com/gpu" was requested but not registered',
    )
    node = env.node("node-nc")
    node["status"]["allocatable"]["nvidia.com/gpu"] = "1"
    env.server.update_status(node)
    env.settle()
    assert initialized(env)[0] == "True"


def test_initialized_stays_true_when_the_node_later_gets_not_ready() -> None:
    env = Env()
    env.launched_and_registered("nc")
    env.set_node_ready("node-nc", False)
    env.settle()
    assert initialized(env)[0] == "True"


# ----------------------------------------------------------------------------- DRA


def slice_(
    driver: str, pool: str, generation: int, count: int, node: str = "node-nc"
) -> dict[str, Any]:
    return {
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
        }
    }


def nc_with_drivers(drivers: str) -> dict[str, Any]:
    return {"metadata": {"annotations": {wk.REQUESTED_DRA_DRIVERS_ANNOTATION_KEY: drivers}}}


@pytest.mark.parametrize(
    ("drivers", "slices", "missing"),
    [
        ("gpu.example.com", [slice_("gpu.example.com", "p", 1, 1)], None),
        ("gpu.example.com", [slice_("gpu.example.com", "p", 1, 2)], "gpu.example.com"),
        (
            "gpu.example.com",
            [slice_("gpu.example.com", "p", 1, 1), slice_("gpu.example.com", "p", 2, 2)],
            "gpu.example.com",
        ),
        (
            "gpu.example.com, nic.example.com",
            [slice_("gpu.example.com", "p", 1, 1)],
            "nic.example.com",
        ),
        ("", [], None),
    ],
    ids=["complete", "incomplete", "stale-generation", "second-driver", "no-expectation"],
)
def test_dra_driver_pools(drivers: str, slices: list[dict[str, Any]], missing: str | None) -> None:
    assert dra_drivers_published(nc_with_drivers(drivers), slices) == missing


def test_the_dra_gate_is_skipped_when_dra_requests_are_ignored() -> None:
    env = Env(options=Options(ignore_dra_requests=True))
    env.create_nodeclaim("nc")
    nc = env.nodeclaim("nc")
    nc["metadata"]["annotations"] = {wk.REQUESTED_DRA_DRIVERS_ANNOTATION_KEY: "gpu.example.com"}
    env.server.update(nc)
    env.settle()
    env.create_node_for("nc")
    env.settle()
    assert initialized(env)[0] == "True"


def test_conditions_follow_a_new_generation_and_ready_stays_true() -> None:
    env = Env()
    env.launched_and_registered("nc")
    assert env.condition("nc", "Ready")["status"] == "True"
    nc = env.nodeclaim("nc")
    nc["spec"]["taints"] = [taint("late")]
    env.server.update(nc)
    env.settle()
    nc = env.nodeclaim("nc")
    assert nc["metadata"]["generation"] == 2
    conds = {c["type"]: c for c in nc["status"]["conditions"]}
    for type_ in ("Launched", "Registered", "Initialized", "Ready"):
        assert conds[type_]["observedGeneration"] == 2, type_
    assert conds["Ready"]["status"] == "True"
