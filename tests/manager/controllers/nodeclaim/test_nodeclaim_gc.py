"""Garbage collection: NodeClaims whose instance vanished, and instances nobody claims."""

from __future__ import annotations

from nodeclaim_helpers import Env, disrupted, minutes, sample

from karpenter_core.apis.v1 import NodeClaim


def vanish(env: Env, name: str) -> None:
    """The instance disappears behind Karpenter's back."""
    pid = env.nodeclaim(name)["status"]["providerID"]
    del env.provider.instances[pid]


def test_a_registered_nodeclaim_whose_instance_vanished_is_collected() -> None:
    env = Env()
    pool = env.create_nodepool("pool-gc")
    env.launched_and_registered("nc", nodepool=pool)
    env.server.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "app", "namespace": "default"},
            "spec": {"nodeName": "node-nc", "containers": [{"name": "c", "image": "x"}]},
        }
    )
    before = disrupted("garbage_collected", "pool-gc", "on-demand")
    pods_labels = {
        "reason": "garbage_collected",
        "nodepool": "pool-gc",
        "capacity_type": "on-demand",
        "consolidation_policy": "",
        "termination_mode": "graceful",
    }
    pods_before = sample("karpenter_pods_disruption_initiated_total", pods_labels)
    vanish(env, "nc")
    env.set_node_ready("node-nc", False)
    env.run_for(minutes(2.1))
    nc = env.nodeclaim("nc") if env.exists("nodeclaims", "nc") else None
    assert nc is None or nc["metadata"].get("deletionTimestamp")
    assert disrupted("garbage_collected", "pool-gc", "on-demand") == before + 1
    assert sample("karpenter_pods_disruption_initiated_total", pods_labels) == pods_before + 1


def test_a_ready_node_keeps_its_nodeclaim_even_without_an_instance() -> None:
    env = Env()
    env.launched_and_registered("nc")
    vanish(env, "nc")
    env.run_for(minutes(5))
    assert not env.nodeclaim("nc")["metadata"].get("deletionTimestamp")


def test_unregistered_nodeclaims_are_left_to_liveness() -> None:
    env = Env()
    env.create_nodeclaim("nc")
    env.settle()
    vanish(env, "nc")
    env.run_for(minutes(5))
    assert not env.nodeclaim("nc")["metadata"].get("deletionTimestamp")


def orphan(env: Env, name: str = "leaked") -> str:
    pid = f"fake:///{name}/99"
    env.provider.instances[pid] = NodeClaim.from_dict(
        {"metadata": {"name": name}, "status": {"providerID": pid}}
    )
    return pid


def test_an_instance_no_nodeclaim_accounts_for_is_terminated_on_the_second_look() -> None:
    env = Env()
    env.settle()  # the first pass ran at start, before the leak
    pid = orphan(env)
    env.run_for(minutes(2.1))
    assert pid in env.provider.instances, "one sighting is not enough"
    env.run_for(minutes(2))
    assert pid not in env.provider.instances
    assert env.provider.delete_calls == [pid]


def test_an_instance_of_a_launch_in_flight_is_adopted_not_terminated() -> None:
    env = Env()
    env.provider.create_errors.extend(RuntimeError("status lost") for _ in range(1000))
    env.create_nodeclaim("in-flight")
    env.settle()
    pid = orphan(env, "in-flight")  # same identity as the NodeClaim, no providerID on it yet
    env.run_for(minutes(4.5))
    assert pid in env.provider.instances
    assert env.nodeclaim("in-flight")["status"]["providerID"] == pid
    assert env.provider.create_calls == []


def test_a_provider_list_failure_deletes_nothing() -> None:
    env = Env()
    env.launched_and_registered("nc")
    env.provider.list_error = RuntimeError("cloud API down")
    env.set_node_ready("node-nc", False)
    env.run_for(minutes(5))
    assert not env.nodeclaim("nc")["metadata"].get("deletionTimestamp")
