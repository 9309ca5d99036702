"""Registration: syncing the joined Node and marking the NodeClaim registered."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from nodeclaim_helpers import Env, minutes, sample

from karpenter_core.apis import labels as wk
from karpenter_core.apis.v1 import NodeClaim
from karpenter_core.cloudprovider.protocol import NodeLifecycleHookResult
from karpenter_core.controllers.nodeclaim.nodepoolhealth import NodePoolHealth, Status, shared
from karpenter_core.controllers.nodeclaim.registration import merge_taints

NO_SCHEDULE = "NoSchedule"


def taint(key: str, effect: str = NO_SCHEDULE, value: str | None = None) -> dict[str, Any]:
    t = {"key": key, "effect": effect}
    if value is not None:
        t["value"] = value
    return t


def test_the_joined_node_is_synced_and_the_nodeclaim_registered() -> None:
    env = Env()
    env.create_nodeclaim("nc", labels={"team": "a"}, annotations={"note": "x"})
    env.settle()
    env.create_node_for("nc", labels={"kubelet": "set"})
    env.settle()
    node = env.node("node-nc")
    meta = node["metadata"]
    assert wk.TERMINATION_FINALIZER in meta["finalizers"]
    (owner,) = meta["ownerReferences"]
    assert owner["kind"] == "NodeClaim"
    assert owner["name"] == "nc"
    assert owner["uid"] == env.nodeclaim("nc")["metadata"]["uid"]
    assert owner["blockOwnerDeletion"] is True
    assert meta["labels"]["team"] == "a"
    assert meta["labels"]["kubelet"] == "set"
    assert meta["labels"][wk.LABEL_INSTANCE_TYPE] == "fake-large"
    assert meta["labels"][wk.NODE_REGISTERED_LABEL_KEY] == "true"
    assert meta["annotations"]["note"] == "x"
    assert "taints" not in node["spec"], "the unregistered taint is removed"
    assert env.condition("nc", "Registered")["status"] == "True"
    assert env.nodeclaim("nc")["status"]["nodeName"] == "node-nc"


def test_registration_counts_nodes_created_by_nodepool_and_zone() -> None:
    env = Env()
    pool = env.create_nodepool("pool-reg")
    labels = {"nodepool": "pool-reg", "zone": "zone-a"}
    before = sample("karpenter_nodes_created_total", labels)
    env.create_nodeclaim("nc", nodepool=pool)
    env.settle()
    env.create_node_for("nc")
    env.settle()
    env.run_for(60)
    assert sample("karpenter_nodes_created_total", labels) == before + 1


def test_an_existing_owner_reference_is_not_added_twice() -> None:
    env = Env()
    env.create_nodeclaim("nc")
    env.settle()
    env.create_node_for("nc", owner=True)
    env.settle()
    assert len(env.node("node-nc")["metadata"]["ownerReferences"]) == 1


def test_a_node_without_the_unregistered_taint_still_registers_with_a_warning() -> None:
    env = Env()
    env.create_nodeclaim("nc")
    env.settle()
    env.create_node_for("nc", unregistered_taint=False)
    env.settle()
    assert env.condition("nc", "Registered")["status"] == "True"
    (event,) = env.events("UnregisteredTaintMissing")
    assert event.type == "Warning"
    assert event.kind == "NodeClaim"
    assert wk.UNREGISTERED_TAINT_KEY in event.message


def test_taints_and_startup_taints_are_synced_to_the_node() -> None:
    env = Env()
    env.create_nodeclaim(
        "nc", taints=[taint("dedicated", value="gpu")], startup_taints=[taint("cni-not-ready")]
    )
    env.settle()
    env.create_node_for("nc", taints=[taint("dedicated", value="node-own")])
    env.settle()
    taints = env.node("node-nc")["spec"]["taints"]
    assert taint("dedicated", value="node-own") in taints, "a matching node taint is kept as is"
    assert taint("cni-not-ready") in taints
    assert len(taints) == 2


@pytest.mark.parametrize(("value", "synced"), [("true", False), ("false", True), (None, True)])
def test_do_not_sync_taints_label(value: str | None, synced: bool) -> None:
    env = Env()
    env.create_nodeclaim("nc", taints=[taint("dedicated")], startup_taints=[taint("startup")])
    env.settle()
    labels = {} if value is None else {wk.NODE_DO_NOT_SYNC_TAINTS_LABEL_KEY: value}
    env.create_node_for("nc", labels=labels)
    env.settle()
    taints = env.node("node-nc")["spec"].get("taints") or []
    assert (taint("dedicated") in taints) is synced
    assert (taint("startup") in taints) is synced
    assert env.condition("nc", "Registered")["status"] == "True"
    assert not any(t["key"] == wk.UNREGISTERED_TAINT_KEY for t in taints)


def test_startup_taints_removed_after_registration_are_not_put_back() -> None:
    env = Env()
    env.create_nodeclaim("nc", startup_taints=[taint("startup")])
    env.settle()
    env.create_node_for("nc")
    env.settle()
    env.set_node_taints("node-nc", [])
    env.run_for(minutes(30))
    assert not env.node("node-nc")["spec"].get("taints")


def test_two_nodes_with_the_providerid_fail_registration() -> None:
    env = Env()
    env.create_nodeclaim("nc")
    env.settle()
    env.create_node_for("nc", name="one")
    env.create_node_for("nc", name="two")
    env.settle()
    registered = env.condition("nc", "Registered")
    assert (registered["status"], registered["reason"]) == ("False", "MultipleNodesFound")
    assert env.condition("nc", "Ready")["status"] == "False"


def test_no_node_yet_means_registered_unknown_node_not_found() -> None:
    env = Env()
    env.create_nodeclaim("nc")
    env.settle()
    registered = env.condition("nc", "Registered")
    assert (registered["status"], registered["reason"]) == ("Unknown", "NodeNotFound")


def test_merge_taints_adds_only_new_key_effect_pairs() -> None:
    base = [taint("a"), taint("b", "NoExecute")]
    extra = [taint("a", value="other"), taint("b"), taint("c")]
    assert merge_taints(base, extra) == [
        taint("a"),
        taint("b", "NoExecute"),
        taint("b"),
        taint("c"),
    ]


# ----------------------------------------------------------------------------- hooks


class Hook:
    def __init__(self, name: str, results: list[NodeLifecycleHookResult | Exception]) -> None:
        self._name = name
        self.results = results
        self.calls = 0

    @property
    def name(self) -> str:
        return self._name

    def registered(self, nodeclaim: NodeClaim) -> NodeLifecycleHookResult:
        self.calls += 1
        result = self.results[0] if len(self.results) == 1 else self.results.pop(0)
        if isinstance(result, Exception):
            raise result
        return result


DONE = NodeLifecycleHookResult()
LATER = NodeLifecycleHookResult(requeue_after=timedelta(seconds=30))


def hooked(*hooks: Hook) -> Env:
    env = Env(hooks=hooks)
    env.create_nodeclaim("nc")
    env.settle()
    env.create_node_for("nc")
    env.settle()
    return env


def test_registration_completes_when_every_hook_is_done() -> None:
    a, b = Hook("a", [DONE]), Hook("b", [DONE])
    env = hooked(a, b)
    assert env.condition("nc", "Registered")["status"] == "True"
    assert a.calls >= 1 and b.calls >= 1


def test_pending_hooks_defer_registration_and_keep_the_unregistered_taint() -> None:
    env = hooked(Hook("a", [DONE]), Hook("b", [LATER]), Hook("c", [LATER]))
    registered = env.condition("nc", "Registered")
    assert (registered["status"], registered["reason"], registered["message"]) == (
        "Unknown",
        "RegistrationHookPending",
        "b, c",
    )
    node = env.node("node-nc")
    assert any(t["key"] == wk.UNREGISTERED_TAINT_KEY for t in node["spec"]["taints"])
    assert wk.NODE_REGISTERED_LABEL_KEY not in node["metadata"]["labels"]
    assert wk.TERMINATION_FINALIZER in node["metadata"]["finalizers"], "syncing already happened"


def test_a_hook_that_becomes_ready_completes_registration_at_its_requeue() -> None:
    ready_at: list[float] = [30.0]

    class Gate(Hook):
        def registered(self, nodeclaim: NodeClaim) -> NodeLifecycleHookResult:
            self.calls += 1
            return DONE if env.clock.monotonic() >= ready_at[0] else LATER

    env = Env(hooks=[Gate("gate", [])])
    env.create_nodeclaim("nc")
    env.settle()
    env.create_node_for("nc")
    env.settle()
    assert env.condition("nc", "Registered")["status"] == "Unknown"
    env.run_for(29)
    assert env.condition("nc", "Registered")["status"] == "Unknown"
    env.run_for(2)
    assert env.condition("nc", "Registered")["status"] == "True"
    assert not env.node("node-nc")["spec"].get("taints")


def test_a_failing_hook_is_listed_as_pending_and_the_reconcile_fails() -> None:
    env = hooked(Hook("broken", [RuntimeError("webhook down")]))
    registered = env.condition("nc", "Registered")
    assert (registered["reason"], registered["message"]) == ("RegistrationHookPending", "broken")
    controller = env.manager.controller("nodeclaim.lifecycle")
    assert controller.errors >= 1
    assert 'registration hook "broken" failed, webhook down' in str(controller.last_error)


# ----------------------------------------------------------------------------- nodepool health


def health_env() -> tuple[Env, dict[str, Any], NodePoolHealth]:
    env = Env()
    health = shared(env.ctx)  # the tracker the controllers share
    pool = env.create_nodepool("pool-h")
    return env, pool, health


def pool_condition(env: Env) -> dict[str, Any] | None:
    conds = (env.server.get("nodepools", "pool-h").get("status") or {}).get("conditions") or []
    return next((c for c in conds if c["type"] == "NodeRegistrationHealthy"), None)


def test_a_registration_marks_the_nodepool_registration_healthy() -> None:
    env, pool, health = health_env()
    env.launched_and_registered("nc", nodepool=pool)
    assert pool_condition(env)["status"] == "True"
    assert health.status(pool["metadata"]["uid"]) is Status.HEALTHY


def test_one_success_after_two_failures_keeps_the_nodepool_unhealthy() -> None:
    env, pool, health = health_env()
    uid = pool["metadata"]["uid"]
    health.update(uid, False)
    health.update(uid, False)
    env.launched_and_registered("nc", nodepool=pool)
    assert pool_condition(env) is None, "the dry run stays unhealthy, so nothing is written"
    assert health.status(uid) is Status.UNHEALTHY


def test_nodeclaims_of_a_replaced_nodepool_do_not_count() -> None:
    env, pool, health = health_env()
    stale = dict(pool, metadata={**pool["metadata"], "uid": "old-uid"})
    env.launched_and_registered("nc", nodepool=stale)
    assert env.condition("nc", "Registered")["status"] == "True"
    assert pool_condition(env) is None
    assert health.status(pool["metadata"]["uid"]) is Status.UNKNOWN


def test_the_echo_that_teaches_a_known_nodes_providerid_wakes_the_nodeclaim() -> None:
    """The Node's event came before the NodeClaim's providerID reached the index, so it
    woke nothing; the providerID then arrives in the echo of the lifecycle's own write,
    which must wake the NodeClaim (or it waits, unregistered, for the liveness timeout).
    Other echoes of our own writes stay skipped."""
    from karpenter_core.controllers.nodeclaim.lifecycle import NodeClaimLifecycle

    env = Env()
    lifecycle = NodeClaimLifecycle(env.ctx, NodePoolHealth())
    node = {"kind": "Node", "metadata": {"name": "n1"}, "spec": {"providerID": "fake://n1"}}
    assert list(lifecycle.index.node_mapper("ADDED", node)) == []  # no NodeClaim has it yet

    def claim(rv: str, pid: str | None) -> dict[str, Any]:
        status = {"providerID": pid} if pid else {}
        meta = {"name": "nc", "resourceVersion": rv}
        return {"kind": "NodeClaim", "metadata": meta, "status": status}

    lifecycle.own_writes.record(claim("5", None))
    assert list(lifecycle.nodeclaim_mapper("MODIFIED", claim("5", None))) == []
    lifecycle.own_writes.record(claim("6", "fake://n1"))
    assert [k.name for k in lifecycle.nodeclaim_mapper("MODIFIED", claim("6", "fake://n1"))] == [
        "nc"
    ]
    lifecycle.own_writes.record(claim("7", "fake://n1"))  # the providerID known: skipped
    assert list(lifecycle.nodeclaim_mapper("MODIFIED", claim("7", "fake://n1"))) == []
