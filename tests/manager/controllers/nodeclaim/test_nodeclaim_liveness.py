"""Liveness: launch and registration timeouts, and NodePool registration health."""

from __future__ import annotations

from typing import Any

from nodeclaim_helpers import Env, disrupted, minutes

from karpenter_core.controllers.nodeclaim.nodepoolhealth import Status, shared
from karpenter_core.runtime.clock import format_time


def test_a_launched_nodeclaim_without_a_node_is_deleted_after_fifteen_minutes() -> None:
    env = Env()
    pool = env.create_nodepool("pool-rt")
    before = disrupted("registration_timeout", "pool-rt", "on-demand")
    env.create_nodeclaim("nc", nodepool=pool)
    env.run_for(minutes(14.9))
    assert env.exists("nodeclaims", "nc")
    env.run_for(minutes(0.2))
    assert not env.exists("nodeclaims", "nc")
    assert disrupted("registration_timeout", "pool-rt", "on-demand") == before + 1
    assert env.provider.instances == {}, "the finalizer terminated the instance"


def test_a_registered_nodeclaim_outlives_the_registration_timeout() -> None:
    env = Env()
    env.launched_and_registered("nc")
    env.run_for(minutes(60))
    assert env.exists("nodeclaims", "nc")


def test_a_launch_that_keeps_failing_is_not_deleted_before_five_minutes() -> None:
    env = Env()
    env.provider.create_errors.extend(RuntimeError("boom") for _ in range(100))
    env.create_nodeclaim("nc")
    env.run_for(minutes(4.5))
    assert env.exists("nodeclaims", "nc")
    assert env.condition("nc", "Launched")["reason"] == "LaunchFailed"


def test_the_registration_timeout_counts_from_the_conditions_transition_time() -> None:
    env = Env()
    env.create_nodeclaim("nc")
    env.settle()
    env.run_for(minutes(10))
    nc = env.nodeclaim("nc")
    for c in nc["status"]["conditions"]:
        if c["type"] == "Registered":
            c["lastTransitionTime"] = format_time(env.clock.now())
    env.server.update_status(nc)
    env.run_for(minutes(14.5))
    assert env.exists("nodeclaims", "nc"), "25 minutes after creation, 14.5 after the transition"
    env.run_for(minutes(1))
    assert not env.exists("nodeclaims", "nc")


def _pool_condition(env: Env, name: str) -> dict[str, Any] | None:
    conds = (env.server.get("nodepools", name).get("status") or {}).get("conditions") or []
    return next((c for c in conds if c["type"] == "NodeRegistrationHealthy"), None)


def test_two_registration_failures_turn_nodepool_registration_health_false() -> None:
    env = Env()
    health = shared(env.ctx)  # the tracker the controllers share
    pool = env.create_nodepool("pool-unhealthy")
    uid = pool["metadata"]["uid"]
    env.launched_and_registered("ok", nodepool=pool)
    assert _pool_condition(env, "pool-unhealthy")["status"] == "True"
    env.create_nodeclaim("lost-1", nodepool=pool)
    env.run_for(minutes(16))
    assert _pool_condition(env, "pool-unhealthy")["status"] == "True", "one failure in three"
    env.create_nodeclaim("lost-2", nodepool=pool)
    env.run_for(minutes(16))
    cond = _pool_condition(env, "pool-unhealthy")
    assert (cond["status"], cond["reason"]) == ("False", "RegistrationFailed")
    assert health.status(uid) is Status.UNHEALTHY


def test_launch_failures_report_the_launch_reason_on_the_nodepool() -> None:
    env = Env()
    health = shared(env.ctx)  # the tracker the controllers share
    pool = env.create_nodepool("pool-launch")
    health.update(pool["metadata"]["uid"], False)
    env.provider.create_errors.extend(RuntimeError("no quota") for _ in range(1000))
    env.create_nodeclaim("nc", nodepool=pool)
    env.run_for(minutes(6))
    cond = _pool_condition(env, "pool-launch")
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False",
        "LaunchFailed",
        "no quota",
    )


def test_a_deleted_nodepool_does_not_block_the_timeout() -> None:
    env = Env()
    pool = env.create_nodepool("pool-gone")
    env.create_nodeclaim("nc", nodepool=pool)
    env.settle()
    env.server.delete("nodepools", "pool-gone", propagation_policy="Orphan")
    env.run_for(minutes(16))
    assert not env.exists("nodeclaims", "nc")


def test_a_launch_that_keeps_failing_is_deleted_after_five_minutes() -> None:
    env = Env()
    pool = env.create_nodepool("pool-lt")
    before = disrupted("launch_timeout", "pool-lt")
    env.provider.create_errors.extend(RuntimeError("boom") for _ in range(1000))
    env.create_nodeclaim("nc", nodepool=pool)
    env.run_for(minutes(4.9))
    assert env.exists("nodeclaims", "nc")
    env.run_for(minutes(0.5))
    assert not env.exists("nodeclaims", "nc")
    assert disrupted("launch_timeout", "pool-lt") == before + 1
