"""The eviction queue (upstream terminator/suite_test.go, Eviction/Queue), reconciled by
hand, plus its back-off when a PDB keeps refusing."""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any

import pytest
from termination_helpers import Env

from karpenter_core import metrics
from karpenter_core.apis import labels as wk
from karpenter_core.controllers.node.termination.eviction import EvictionQueue, QueueKey, earlier
from karpenter_core.runtime.reconciler import ObjectKey, Result
from karpenter_core.testing import builders as b

LABELS = {"test": "label"}


def _key(pod: dict[str, Any]) -> ObjectKey:
    return ObjectKey(pod["metadata"]["namespace"], pod["metadata"]["name"])


def _reconcile(env: Env, pod: dict[str, Any]) -> Result:
    return env.queue.reconcile(_key(pod))


def test_a_missing_pod_is_dropped_without_an_event() -> None:
    env = Env()
    pod = env.pod("ghost", node="node-a")
    env.queue.add(None, [pod])
    env.server.delete("pods", "ghost", "default", grace_period_seconds=0)
    assert _reconcile(env, pod) == Result()
    assert not env.queue.has(pod)
    assert env.recorder.events == []


def test_a_gone_name_forgets_every_incarnation_queued_under_it_and_only_those() -> None:
    env = Env()
    pod = env.pod("p", node="node-a")
    old = {**pod, "metadata": {**pod["metadata"], "uid": "an-earlier-one"}}
    other = env.pod("q", node="node-a")
    env.queue.add(None, [old, pod, other])
    env.server.delete("pods", "p", "default", grace_period_seconds=0)
    assert _reconcile(env, pod) == Result()
    assert not env.queue.has(pod) and not env.queue.has(old)
    assert env.queue.has(other) and len(env.queue) == 1
    enqueued: list[ObjectKey] = []
    env.queue.bind(enqueued.append)
    assert enqueued == [_key(other)]
    env.queue.add(None, [pod])  # queued again after being forgotten: enqueued afresh
    assert env.queue.has(pod) and enqueued == [_key(other), _key(pod)]


def test_a_pod_with_another_uid_is_not_in_the_queue() -> None:
    env = Env()
    pod = env.pod("p", node="node-a")
    env.queue.add(None, [pod])
    other = {**pod, "metadata": {**pod["metadata"], "uid": "another"}}
    assert env.queue.has(pod)
    assert not env.queue.has(other)


def test_eviction_without_pdbs_emits_evicted_and_counts() -> None:
    env = Env()
    pod = env.pod("p", node="node-a")
    env.queue.add(None, [pod])
    assert _reconcile(env, pod) == Result()
    live = env.get_pod("p")
    assert live is not None and live["metadata"].get("deletionTimestamp")
    assert not env.queue.has(pod)
    evicted = env.events("Evicted")
    assert len(evicted) == 1 and evicted[0].message == "Evicted pod: "
    assert metrics.sample("karpenter_pods_eviction_requests_total", {"code": "200"}) == 1
    assert metrics.sample("karpenter_pods_drained_total", {"reason": ""}) == 1


def test_eviction_allowed_by_a_pdb_succeeds() -> None:
    env = Env()
    pod = env.pod("p", node="node-a", labels=LABELS)
    env.create(b.pdb("pdb", labels=LABELS, max_unavailable=1))
    env.queue.add(None, [pod])
    _reconcile(env, pod)
    assert len(env.events("Evicted")) == 1


def test_a_blocking_pdb_requeues_with_failed_draining_on_the_node() -> None:
    env = Env()
    env.node()
    pod = env.pod("p", node="node-a", labels=LABELS)
    env.create(b.pdb("pdb", labels=LABELS, max_unavailable=0))
    env.queue.add(None, [pod])
    assert _reconcile(env, pod) == Result(requeue=True)
    assert env.queue.has(pod)
    assert metrics.sample("karpenter_pods_eviction_requests_total", {"code": "429"}) == 1
    (event,) = env.recorder.events
    assert (event.reason, event.kind, event.name) == ("FailedDraining", "Node", "node-a")
    assert "evicting pod violates a PDB" in event.message
    assert "default/p" in event.message


def test_two_pdbs_on_one_pod_requeue_with_their_own_message() -> None:
    env = Env()
    env.node()
    pod = env.pod("p", node="node-a", labels=LABELS)
    env.create(b.pdb("pdb-1", labels=LABELS, max_unavailable=0))
    env.create(b.pdb("pdb-2", labels=LABELS, max_unavailable=0))
    env.queue.add(None, [pod])
    assert _reconcile(env, pod) == Result(requeue=True)
    assert metrics.sample("karpenter_pods_eviction_requests_total", {"code": "500"}) == 1
    (event,) = env.recorder.events
    assert event.reason == "FailedDraining"
    assert "eviction does not support multiple PDBs" in event.message


def test_the_drained_reason_is_the_nodeclaims_disruption_reason() -> None:
    env = Env()
    node = env.node()
    env.nodeclaim(
        node,
        conditions=[
            {
                "type": "DisruptionReason",
                "status": "True",
                "reason": "SpotInterruption",
                "message": "Node is being interrupted",
            }
        ],
    )
    pod = env.pod("p", node="node-a")
    env.queue.add(None, [pod])
    _reconcile(env, pod)
    assert metrics.sample("karpenter_pods_drained_total", {"reason": "SpotInterruption"}) == 1
    assert env.events("Evicted")[0].message == "Evicted pod: SpotInterruption"


def test_do_not_disrupt_pods_stay_queued_without_an_eviction() -> None:
    env = Env()
    pod = env.pod("p", node="node-a", annotations={wk.DO_NOT_DISRUPT_ANNOTATION_KEY: "true"})
    env.queue.add(None, [pod])
    assert _reconcile(env, pod) == Result(requeue=True)
    live = env.get_pod("p")
    assert live is not None and not live["metadata"].get("deletionTimestamp")
    assert env.queue.has(pod)


def test_an_invalid_do_not_disrupt_value_is_ignored_with_an_event() -> None:
    env = Env()
    pod = env.pod("p", node="node-a", annotations={wk.DO_NOT_DISRUPT_ANNOTATION_KEY: "soon"})
    env.queue.add(None, [pod])
    _reconcile(env, pod)
    invalid = env.events("InvalidDoNotDisruptAnnotation")
    assert invalid and invalid[0].type == "Warning" and '"soon"' in invalid[0].message
    assert len(env.events("Evicted")) == 1


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_finished_pods_leave_the_queue_untouched(phase: str) -> None:
    env = Env()
    pod = env.pod("p", node="node-a", phase=phase)
    env.queue.add(None, [pod])
    assert _reconcile(env, pod) == Result()
    assert not env.queue.has(pod)
    assert env.events("Evicted") == []


# ---------------------------------------------------------------- force deletion


def test_force_delete_bypasses_a_blocking_pdb() -> None:
    env = Env()
    env.node()
    pod = env.pod("p", node="node-a", labels=LABELS, grace=120)
    env.create(b.pdb("pdb", labels=LABELS, max_unavailable=0))
    env.queue.add(env.clock.now() + timedelta(minutes=1), [pod])
    _reconcile(env, pod)
    live = env.get_pod("p")
    assert live is not None and live["metadata"].get("deletionTimestamp")
    assert live["metadata"]["deletionGracePeriodSeconds"] == 60
    assert len(env.events("Disrupted")) == 1
    assert metrics.sample("karpenter_pods_drained_total", {"reason": ""}) == 1
    assert not env.queue.has(pod)


def test_a_tighter_deadline_upgrades_a_queued_eviction_to_force_delete() -> None:
    env = Env()
    pod = env.pod("p", node="node-a", labels=LABELS, grace=120)
    env.create(b.pdb("pdb", labels=LABELS, max_unavailable=0))
    env.queue.add(None, [pod])
    env.queue.add(env.clock.now() + timedelta(minutes=1), [pod])
    _reconcile(env, pod)
    live = env.get_pod("p")
    assert live is not None and live["metadata"].get("deletionTimestamp")
    assert len(env.events("Disrupted")) == 1


def test_a_looser_deadline_never_replaces_an_earlier_one() -> None:
    env = Env()
    pod = env.pod("p", node="node-a", labels=LABELS, grace=120)
    env.create(b.pdb("pdb", labels=LABELS, max_unavailable=0))
    tight = env.clock.now() + timedelta(minutes=1)
    env.queue.add(tight, [pod])
    env.queue.add(env.clock.now() + timedelta(hours=1), [pod])
    env.queue.add(None, [pod])
    assert env.queue.deadline_of(pod) == tight
    _reconcile(env, pod)
    assert len(env.events("Disrupted")) == 1


def test_force_delete_grace_is_at_least_one_second_past_the_deadline() -> None:
    env = Env()
    pod = env.pod("p", node="node-a", grace=120)
    env.queue.add(env.clock.now() - timedelta(hours=1), [pod])
    _reconcile(env, pod)
    (event,) = env.events("Disrupted")
    assert "granted 1 seconds of grace-period of its 120" in event.message
    live = env.get_pod("p")
    assert live is not None and live["metadata"]["deletionGracePeriodSeconds"] == 1


def test_force_delete_of_a_vanished_pod_cleans_up() -> None:
    env = Env()
    pod = env.pod("p", node="node-a", grace=120)
    env.queue.add(env.clock.now() + timedelta(minutes=1), [pod])
    env.server.delete("pods", "p", "default", grace_period_seconds=0)
    assert _reconcile(env, pod) == Result()
    assert not env.queue.has(pod)


# ---------------------------------------------------------------- pure helpers and pacing


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [(None, None, None), (None, 5, 5), (5, None, 5), (3, 5, 3), (5, 3, 3)],
)
def test_earlier_treats_none_as_no_deadline(a: int | None, b: int | None, expected: Any) -> None:
    env = Env()
    base = env.clock.now()

    def at(x: int | None) -> Any:
        return None if x is None else base + timedelta(seconds=x)

    assert earlier(at(a), at(b)) == at(expected)


def test_queue_keys_include_the_uid() -> None:
    pod = {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}}
    assert QueueKey.of(pod) == QueueKey("ns", "p", "u1")
    assert QueueKey.of({"metadata": {"name": "p"}}).namespace == "default"


def test_entries_added_before_binding_are_enqueued_on_bind() -> None:
    env = Env()
    queue = EvictionQueue(env.server, env.clock, env.recorder)
    queue.add(None, [env.pod("b", node="x"), env.pod("a", node="x")])
    seen: list[ObjectKey] = []
    queue.bind(seen.append)
    assert seen == [ObjectKey("default", "a"), ObjectKey("default", "b")]
    queue.add(None, [env.pod("c", node="x")])
    assert seen[-1] == ObjectKey("default", "c")


def test_pdb_refusals_back_off_exponentially_up_to_ten_seconds() -> None:
    env = Env()
    env.node()
    pod = env.pod("p", node="node-a", labels=LABELS)
    env.create(b.pdb("pdb", labels=LABELS, max_unavailable=0))
    attempts: list[float] = []
    real_evict = env.server.evict

    def observed(name: str, namespace: str, **kw: Any) -> None:
        attempts.append(env.clock.monotonic())
        real_evict(name, namespace, **kw)

    env.server.evict = observed  # type: ignore[method-assign]
    env.queue.add(None, [pod])
    env.run_for(120)
    gaps = [round(b - a, 6) for a, b in itertools.pairwise(attempts)]
    assert gaps[:4] == [0.1, 0.2, 0.4, 0.8]
    assert max(gaps) == 10.0
    assert gaps == sorted(gaps)
