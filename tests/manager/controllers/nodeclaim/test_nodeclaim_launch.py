"""Launch: create through the provider, per-error reactions, and never launching twice."""

from __future__ import annotations

import itertools
from typing import Any

from nodeclaim_helpers import (
    OTHER_NODE_CLASS,
    Env,
    FlakyKube,
    disrupted,
    minutes,
)

from karpenter_core.apis import labels as wk
from karpenter_core.apis.v1 import NodeClaim
from karpenter_core.cloudprovider.errors import (
    CreateError,
    InsufficientCapacityError,
    NodeClassNotReadyError,
)
from karpenter_core.controllers.nodeclaim.launch import truncate_message


def test_a_launched_nodeclaim_is_marked_launched_with_the_providers_details() -> None:
    env = Env()
    env.create_nodeclaim("nc", labels={"team": "user"}, annotations={"a": "1"})
    env.settle()
    nc = env.nodeclaim("nc")
    assert env.condition("nc", "Launched")["status"] == "True"
    assert nc["status"]["providerID"] == "fake:///nc/1"
    assert nc["status"]["imageID"] == "img-1"
    assert nc["status"]["capacity"]["cpu"] == "4"
    assert nc["status"]["allocatable"]["memory"] == "15Gi"
    labels = nc["metadata"]["labels"]
    assert labels[wk.LABEL_INSTANCE_TYPE] == "fake-large"
    assert labels[wk.LABEL_TOPOLOGY_ZONE] == "zone-a"
    assert labels["team"] == "user", "the NodeClaim's own labels win over the provider's"
    assert nc["metadata"]["annotations"] == {"a": "1", "fake.test/launched": "yes"}
    assert wk.TERMINATION_FINALIZER in nc["metadata"]["finalizers"]


def test_the_finalizer_is_written_before_the_provider_is_asked_to_launch() -> None:
    env = Env()
    seen: list[list[str]] = []
    env.provider.on_create = lambda nc: seen.append(
        list(env.server.get("nodeclaims", nc.name)["metadata"].get("finalizers") or [])
    )
    env.create_nodeclaim("nc")
    env.settle()
    assert seen == [[wk.TERMINATION_FINALIZER]]


def test_conditions_start_unknown_at_creation_and_ready_follows_the_dependents() -> None:
    env = Env()
    env.create_nodeclaim("nc")
    env.settle()
    conds = {c["type"]: c for c in env.nodeclaim("nc")["status"]["conditions"]}
    assert conds["Registered"]["status"] == "Unknown"
    assert conds["Registered"]["reason"] == "NodeNotFound"
    assert conds["Ready"]["status"] == "Unknown"
    assert conds["Ready"]["reason"] == "ReconcilingDependents"
    assert [c["type"] for c in env.nodeclaim("nc")["status"]["conditions"]][-1] == "Ready"
    assert all(c["observedGeneration"] == 1 for c in conds.values())


def test_insufficient_capacity_deletes_the_nodeclaim_with_a_warning_and_a_metric() -> None:
    env = Env()
    pool = env.create_nodepool("pool-ice")
    env.provider.create_errors.append(InsufficientCapacityError("no fake-large in zone-a"))
    before = disrupted("insufficient_capacity", "pool-ice")
    env.create_nodeclaim("nc", nodepool=pool)
    env.settle()
    assert not env.exists("nodeclaims", "nc")
    (event,) = env.events("InsufficientCapacityError")
    assert event.type == "Warning"
    assert event.name == "nc"
    assert "insufficient capacity, no fake-large in zone-a" in event.message
    assert disrupted("insufficient_capacity", "pool-ice") == before + 1
    assert env.provider.instances == {}


def test_nodeclass_not_ready_deletes_the_nodeclaim_without_an_event() -> None:
    env = Env()
    pool = env.create_nodepool("pool-ncnr")
    env.provider.create_errors.append(NodeClassNotReadyError("subnets not resolved"))
    before = disrupted("nodeclass_not_ready", "pool-ncnr")
    env.create_nodeclaim("nc", nodepool=pool)
    env.settle()
    assert not env.exists("nodeclaims", "nc")
    assert env.recorder.events == []
    assert disrupted("nodeclass_not_ready", "pool-ncnr") == before + 1


def test_a_create_error_sets_launched_unknown_with_its_reason_and_is_retried() -> None:
    env = Env()
    env.provider.create_errors.extend(
        CreateError("quota", condition_reason="QuotaExceeded", condition_message="vCPU quota hit")
        for _ in range(3)
    )
    env.create_nodeclaim("nc")
    env.settle()
    launched = env.condition("nc", "Launched")
    assert launched["status"] == "Unknown"
    assert (launched["reason"], launched["message"]) == ("QuotaExceeded", "vCPU quota hit")
    env.run_for(60)
    assert env.condition("nc", "Launched")["status"] == "True"
    assert env.provider.create_calls == ["nc"]


def test_any_other_error_sets_launch_failed_with_a_truncated_message() -> None:
    env = Env()
    env.provider.create_errors.extend(RuntimeError("x" * 400) for _ in range(3))
    env.create_nodeclaim("nc")
    env.settle()
    launched = env.condition("nc", "Launched")
    assert launched["reason"] == "LaunchFailed"
    assert launched["message"] == "x" * 300 + "..."
    assert env.exists("nodeclaims", "nc")


def test_failed_launches_back_off_exponentially_up_to_a_minute() -> None:
    env = Env()
    env.provider.create_errors.extend(
        RuntimeError(f"boom {i}") for i in range(8)
    )  # messages differ
    attempts: list[float] = []
    env.provider.on_create = lambda nc: attempts.append(env.clock.monotonic())
    env.create_nodeclaim("nc")
    env.run_for(minutes(5))
    gaps = [b - a for a, b in itertools.pairwise(attempts)]
    assert len(attempts) == 9, "eight failures, then the launch"
    assert gaps == sorted(gaps), f"back-off never shrinks: {gaps}"
    assert gaps[-1] == 60, "capped at a minute"
    assert gaps[-3] == 32
    assert env.condition("nc", "Launched")["status"] == "True"


def test_truncate_message_keeps_short_messages() -> None:
    assert truncate_message("short") == "short"
    assert truncate_message("y" * 299) == "y" * 299
    assert truncate_message("y" * 300) == "y" * 300 + "..."


def test_a_lost_status_write_completes_from_the_cache_without_launching_again() -> None:
    clock_env = Env()
    flaky = FlakyKube(clock_env.server)
    env = Env(kube=flaky, server=clock_env.server, clock=clock_env.clock)  # type: ignore[arg-type]
    flaky.fail_status_patches = 1
    env.create_nodeclaim("nc")
    env.settle()
    env.run_for(5)
    assert env.condition("nc", "Launched")["status"] == "True"
    assert env.provider.create_calls == ["nc"]
    assert env.nodeclaim("nc")["status"]["providerID"] == "fake:///nc/1"


def _restarted(env: Env) -> Env:
    """A new operator process over the same cluster and cloud (fresh in-memory state)."""
    env.clock.advance(30)
    return Env(server=env.server, clock=env.clock, provider=env.provider)


def test_after_a_restart_mid_launch_the_existing_instance_is_adopted() -> None:
    first = Env()
    flaky = FlakyKube(first.server)
    first = Env(kube=flaky, server=first.server, clock=first.clock)  # type: ignore[arg-type]
    flaky.fail_status_patches = 10  # the process dies before it can record the launch
    first.create_nodeclaim("nc")
    first.settle()
    assert first.provider.create_calls == ["nc"]
    second = _restarted(first)
    second.settle()
    assert second.provider.create_calls == ["nc"], "no second instance"
    assert second.nodeclaim("nc")["status"]["providerID"] == "fake:///nc/1"
    assert second.condition("nc", "Launched")["status"] == "True"


def test_a_create_that_failed_after_launching_is_adopted_on_retry() -> None:
    env = Env()
    env.provider.create_then_raise = TimeoutError("request timed out")
    env.create_nodeclaim("nc")
    env.run_for(5)
    assert env.provider.create_calls == ["nc"]
    assert env.nodeclaim("nc")["status"]["providerID"] == "fake:///nc/1"


def test_nodeclaims_created_after_start_do_not_list_the_provider_before_launching() -> None:
    env = Env()
    env.provider.list_error = AssertionError("list() should not be needed")
    env.create_nodeclaim("nc")
    env.settle()
    assert env.condition("nc", "Launched")["status"] == "True"


def test_a_nodeclaim_of_another_nodeclass_is_left_alone() -> None:
    env = Env()
    env.create_nodeclaim("theirs", node_class=OTHER_NODE_CLASS)
    env.settle()
    nc = env.nodeclaim("theirs")
    assert "finalizers" not in nc["metadata"]
    assert "status" not in nc
    assert env.provider.create_calls == []


def test_launch_timeout_counts_from_creation_even_while_retrying() -> None:
    env = Env()
    env.provider.create_errors.extend(RuntimeError("boom") for _ in range(1000))
    pool = env.create_nodepool("pool-lt")
    before = disrupted("launch_timeout", "pool-lt")
    env.create_nodeclaim("nc", nodepool=pool)
    env.run_for(minutes(4.9))
    assert env.exists("nodeclaims", "nc")
    env.run_for(minutes(1.2))
    assert not env.exists("nodeclaims", "nc")
    assert disrupted("launch_timeout", "pool-lt") == before + 1


def test_an_invalid_nodeclaim_fails_launch_with_a_message_naming_the_field() -> None:
    env = Env()
    obj: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": "bad"},
        "spec": {
            "nodeClassRef": {"group": "karpenter.test.sh", "kind": "TestNodeClass", "name": "x"},
            "requirements": "not-a-list",
        },
    }
    env.server.create(obj)
    env.settle()
    launched = env.condition("bad", "Launched")
    assert launched["reason"] == "LaunchFailed"
    assert "requirements" in launched["message"]
    assert env.provider.create_calls == []


def test_the_launched_nodeclaim_parses_back_into_the_model() -> None:
    env = Env()
    env.create_nodeclaim("nc")
    env.settle()
    model = NodeClaim.from_dict(env.nodeclaim("nc"))
    assert model.provider_id == "fake:///nc/1"
    assert model.is_true("Launched")
