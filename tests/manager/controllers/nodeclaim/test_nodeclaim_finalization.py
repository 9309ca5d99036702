"""Finalization: a deleted NodeClaim waits for its Nodes, terminates its instance, and
only then lets go of its finalizer."""

from __future__ import annotations

from datetime import timedelta

from nodeclaim_helpers import Env, sample

from karpenter_core.apis import labels as wk
from karpenter_core.cloudprovider.protocol import NodeLifecycleHookResult


def release_node(env: Env, name: str) -> None:
    """Play node termination: drop the Node's finalizer so it goes away."""
    env.server.patch("nodes", name, {"metadata": {"finalizers": []}})


def test_a_registered_nodeclaim_deletes_its_node_and_waits_for_it() -> None:
    env = Env()
    env.launched_and_registered("nc")
    env.server.delete("nodeclaims", "nc")
    env.run_for(60)
    assert env.node("node-nc")["metadata"].get("deletionTimestamp"), "the Node is being deleted"
    assert env.exists("nodeclaims", "nc")
    assert env.provider.delete_calls == [], "the instance outlives the drain"
    release_node(env, "node-nc")
    env.run_for(10)
    assert not env.exists("nodeclaims", "nc")
    assert env.provider.instances == {}


def test_every_node_with_the_providerid_is_deleted() -> None:
    env = Env()
    env.launched_and_registered("nc")
    env.create_node_for("nc", name="twin")
    env.settle()
    env.server.delete("nodeclaims", "nc")
    env.settle()
    assert env.node("node-nc")["metadata"].get("deletionTimestamp")
    assert not env.exists("nodes", "twin"), "the twin had no finalizer"
    release_node(env, "node-nc")
    env.run_for(10)
    assert not env.exists("nodeclaims", "nc")


def test_the_instance_is_deleted_every_five_seconds_until_it_is_gone() -> None:
    env = Env()
    env.provider.delete_polls = 3
    env.create_nodeclaim("nc")
    env.settle()
    pid = env.nodeclaim("nc")["status"]["providerID"]
    env.server.delete("nodeclaims", "nc")
    env.settle()
    assert env.condition("nc", "InstanceTerminating")["status"] == "True"
    assert env.condition("nc", "Ready")["status"] == "Unknown", "root is not touched"
    env.run_for(14)
    assert env.exists("nodeclaims", "nc")
    assert env.provider.delete_calls == [pid] * 3
    env.run_for(10)
    assert not env.exists("nodeclaims", "nc")
    assert env.provider.delete_calls == [pid] * 5, "until NodeClaimNotFoundError"


def test_a_failing_instance_delete_keeps_the_finalizer_and_retries() -> None:
    env = Env()
    env.create_nodeclaim("nc")
    env.settle()
    calls: list[float] = []
    real_delete = env.provider.delete

    def flaky(nc: object) -> None:
        calls.append(env.clock.monotonic())
        if len(calls) < 3:
            raise RuntimeError("cloud API unavailable")
        real_delete(nc)  # type: ignore[arg-type]

    env.provider.delete = flaky  # type: ignore[method-assign]
    env.server.delete("nodeclaims", "nc")
    env.settle()
    assert env.exists("nodeclaims", "nc")
    assert env.condition("nc", "InstanceTerminating") is None
    env.run_for(30)
    assert not env.exists("nodeclaims", "nc")
    assert len(calls) >= 4


def test_a_nodeclaim_that_never_launched_is_released_without_calling_the_provider() -> None:
    env = Env()
    env.provider.create_errors.extend(RuntimeError("boom") for _ in range(10))
    env.create_nodeclaim("nc")
    env.settle()
    env.server.delete("nodeclaims", "nc")
    env.settle()
    assert not env.exists("nodeclaims", "nc")
    assert env.provider.delete_calls == []


class Pending:
    name = "pending"

    def registered(self, nodeclaim: object) -> NodeLifecycleHookResult:
        return NodeLifecycleHookResult(requeue_after=timedelta(hours=1))


def test_an_unregistered_nodeclaim_does_not_delete_its_node() -> None:
    env = Env(hooks=[Pending()])
    env.create_nodeclaim("nc")
    env.settle()
    env.create_node_for("nc")
    env.settle()
    assert env.condition("nc", "Registered")["reason"] == "RegistrationHookPending"
    env.server.delete("nodeclaims", "nc")
    env.settle()
    assert not env.node("node-nc")["metadata"].get("deletionTimestamp")
    env.run_for(10)
    assert not env.exists("nodeclaims", "nc")
    assert env.provider.instances == {}
    assert env.exists("nodes", "node-nc"), "the NodeClaim did not wait for its Node to go"


def test_a_termination_grace_period_is_turned_into_a_termination_timestamp() -> None:
    env = Env()
    env.launched_and_registered("nc", termination_grace_period="1h")
    env.clock.advance(90)
    env.server.delete("nodeclaims", "nc")
    env.settle()
    annotations = env.nodeclaim("nc")["metadata"]["annotations"]
    deleted = env.nodeclaim("nc")["metadata"]["deletionTimestamp"]
    assert deleted == "2026-01-01T00:01:30Z"
    assert annotations[wk.NODECLAIM_TERMINATION_TIMESTAMP_ANNOTATION_KEY] == "2026-01-01T01:01:30Z"
    (event,) = env.events("TerminationGracePeriodExpiring")
    assert event.type == "Warning"
    assert event.message == "All pods will be deleted by 2026-01-01T01:01:30Z"


def test_no_termination_timestamp_without_a_grace_period() -> None:
    env = Env()
    env.launched_and_registered("nc")
    env.server.delete("nodeclaims", "nc")
    env.settle()
    annotations = env.nodeclaim("nc")["metadata"].get("annotations") or {}
    assert wk.NODECLAIM_TERMINATION_TIMESTAMP_ANNOTATION_KEY not in annotations


def test_an_existing_termination_timestamp_is_kept() -> None:
    env = Env()
    env.launched_and_registered("nc", termination_grace_period="1h")
    env.server.patch(
        "nodeclaims",
        "nc",
        {"metadata": {"annotations": {wk.NODECLAIM_TERMINATION_TIMESTAMP_ANNOTATION_KEY: "x"}}},
    )
    env.server.delete("nodeclaims", "nc")
    env.settle()
    annotations = env.nodeclaim("nc")["metadata"]["annotations"]
    assert annotations[wk.NODECLAIM_TERMINATION_TIMESTAMP_ANNOTATION_KEY] == "x"


def test_termination_is_counted_by_nodepool_capacity_type_and_zone() -> None:
    env = Env()
    pool = env.create_nodepool("pool-term")
    labels = {"nodepool": "pool-term", "capacity_type": "on-demand", "zone": "zone-a"}
    before = sample("karpenter_nodeclaims_terminated_total", labels)
    count_before = sample(
        "karpenter_nodeclaims_termination_duration_seconds_count", {"nodepool": "pool-term"}
    )
    env.launched_and_registered("nc", nodepool=pool)
    env.server.delete("nodeclaims", "nc")
    env.settle()
    release_node(env, "node-nc")
    env.run_for(10)
    assert not env.exists("nodeclaims", "nc")
    assert sample("karpenter_nodeclaims_terminated_total", labels) == before + 1
    assert (
        sample("karpenter_nodeclaims_termination_duration_seconds_count", {"nodepool": "pool-term"})
        == count_before + 1
    )


def test_another_controllers_finalizer_keeps_the_object_but_ours_is_removed() -> None:
    env = Env()
    env.create_nodeclaim("nc", finalizers=["example.com/hold"])
    env.settle()
    env.server.delete("nodeclaims", "nc")
    env.run_for(10)
    assert env.nodeclaim("nc")["metadata"]["finalizers"] == ["example.com/hold"]
    assert env.provider.instances == {}
