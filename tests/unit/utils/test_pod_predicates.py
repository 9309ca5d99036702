"""Pod predicates shared by provisioning, disruption and termination (upstream
pkg/utils/pod and pkg/utils/pdb)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from karpenter_core.apis.objects import Pod, PodDisruptionBudget
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.utils.pod import (
    PdbLimits,
    is_do_not_disrupt_active,
    is_drainable,
    is_evictable,
    is_fully_blocking_pdb,
    is_pod_eligible_for_forced_eviction,
    is_provisionable,
    is_reschedulable,
    is_stuck_terminating,
    tolerates_disrupted_noschedule_taint,
)

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def make_pod(
    name: str = "p",
    *,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    owner: tuple[str, str] | None = None,
    start: datetime | None = None,
    deleted: datetime | None = None,
    phase: str = "Running",
    tolerations: list[dict[str, Any]] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    node: str = "n1",
    namespace: str = "default",
) -> Pod:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "annotations": annotations or {},
        "labels": labels or {},
    }
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": owner[0], "kind": owner[1], "name": "o", "uid": "u", "controller": True}
        ]
    if deleted:
        meta["deletionTimestamp"] = deleted.strftime("%Y-%m-%dT%H:%M:%SZ")
    status: dict[str, Any] = {"phase": phase, "conditions": conditions or []}
    if start:
        status["startTime"] = start.strftime("%Y-%m-%dT%H:%M:%SZ")
    spec: dict[str, Any] = {"containers": [{"name": "c"}], "tolerations": tolerations or []}
    if node:
        spec["nodeName"] = node
    return Pod.from_dict({"metadata": meta, "spec": spec, "status": status})


def pdb(name: str = "b", namespace: str = "default", **spec: Any) -> PodDisruptionBudget:
    spec.setdefault("selector", {"matchLabels": {"app": "web"}})
    return PodDisruptionBudget.from_dict(
        {
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
            "status": {"disruptionsAllowed": spec.pop("_allowed", 1)},
        }
    )


# ------------------------------------------------------------------ do-not-disrupt


@pytest.mark.parametrize(
    ("value", "start", "active"),
    [
        ("true", None, True),
        ("false", None, False),
        ("10m", NOW - timedelta(minutes=5), True),
        ("10m", NOW - timedelta(minutes=10), False),
        ("10m", None, True),  # not started: fail safe
        ("-5m", None, False),
        ("soon", None, False),
    ],
)
def test_do_not_disrupt(value: str, start: datetime | None, active: bool) -> None:
    pod = make_pod(annotations={"karpenter.sh/do-not-disrupt": value}, start=start)
    assert is_do_not_disrupt_active(pod, NOW) is active


def test_no_annotation_means_no_protection() -> None:
    assert not is_do_not_disrupt_active(make_pod(), NOW)


def test_invalid_do_not_disrupt_warns_once() -> None:
    recorder = EventRecorder(VirtualClock(NOW))
    pod = make_pod(annotations={"karpenter.sh/do-not-disrupt": "soon"})
    is_do_not_disrupt_active(pod, NOW, recorder)
    is_do_not_disrupt_active(pod, NOW, recorder)
    [event] = recorder.events
    assert (event.type, event.reason) == ("Warning", "InvalidDoNotDisruptAnnotation")
    assert event.message.startswith(
        'Invalid karpenter.sh/do-not-disrupt annotation: failed to parse "soon" as a duration'
    )
    assert event.message.endswith(", ignoring annotation")


def test_non_positive_duration_message() -> None:
    recorder = EventRecorder(VirtualClock(NOW))
    pod = make_pod(annotations={"karpenter.sh/do-not-disrupt": "0s"})
    is_do_not_disrupt_active(pod, NOW, recorder)
    assert 'duration "0s" must be positive' in recorder.events[0].message


@pytest.mark.parametrize(
    ("age", "reason", "fragment"),
    [
        (timedelta(minutes=1), "DoNotDisruptUntil", "will elapse at 2026-01-01T12:09:00Z"),
        (timedelta(minutes=20), "DoNotDisruptGracePeriodElapsed", "pod is now disruptable"),
    ],
)
def test_duration_protection_events(age: timedelta, reason: str, fragment: str) -> None:
    recorder = EventRecorder(VirtualClock(NOW))
    pod = make_pod(annotations={"karpenter.sh/do-not-disrupt": "10m"}, start=NOW - age)
    is_do_not_disrupt_active(pod, NOW, recorder)
    [event] = recorder.events
    assert (event.type, event.reason) == ("Normal", reason)
    assert fragment in event.message


# ------------------------------------------------------------------ simple predicates


def test_provisionable_needs_the_unschedulable_verdict() -> None:
    unschedulable = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    assert is_provisionable(make_pod(node="", conditions=unschedulable))
    assert not is_provisionable(make_pod(node=""))
    assert not is_provisionable(make_pod(node="n1", conditions=unschedulable))


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, True),
        ({"phase": "Succeeded"}, False),
        ({"deleted": NOW}, False),
        ({"deleted": NOW, "owner": ("apps/v1", "StatefulSet")}, True),
        ({"owner": ("apps/v1", "DaemonSet")}, False),
        ({"owner": ("v1", "Node")}, False),
    ],
)
def test_reschedulable(kwargs: dict[str, Any], expected: bool) -> None:
    assert is_reschedulable(make_pod(**kwargs)) is expected


def test_tolerating_the_disrupted_taint() -> None:
    everything = [{"operator": "Exists"}]
    disrupted = [{"key": "karpenter.sh/disrupted", "operator": "Exists", "effect": "NoSchedule"}]
    other = [{"key": "x", "operator": "Exists"}]
    assert tolerates_disrupted_noschedule_taint(make_pod(tolerations=everything))
    assert tolerates_disrupted_noschedule_taint(make_pod(tolerations=disrupted))
    assert not tolerates_disrupted_noschedule_taint(make_pod(tolerations=other))
    assert not tolerates_disrupted_noschedule_taint(make_pod())
    assert not is_drainable(make_pod(tolerations=everything), NOW)


def test_stuck_terminating_after_a_minute() -> None:
    assert not is_stuck_terminating(make_pod(deleted=NOW - timedelta(seconds=59)), NOW)
    assert is_stuck_terminating(make_pod(deleted=NOW - timedelta(seconds=61)), NOW)


def test_forced_eviction_when_pod_deadline_is_past_node_expiry() -> None:
    pod = make_pod(deleted=NOW + timedelta(minutes=5))
    assert is_pod_eligible_for_forced_eviction(pod, NOW)
    assert not is_pod_eligible_for_forced_eviction(pod, NOW + timedelta(minutes=10))
    assert not is_pod_eligible_for_forced_eviction(pod, None)


def test_evictable_excludes_protected_and_mirror_pods() -> None:
    assert is_evictable(make_pod(), NOW)
    assert not is_evictable(make_pod(annotations={"karpenter.sh/do-not-disrupt": "true"}), NOW)
    assert not is_evictable(make_pod(owner=("v1", "Node")), NOW)


# ------------------------------------------------------------------ PDBs


@pytest.mark.parametrize(
    ("spec", "blocking"),
    [
        ({"maxUnavailable": 0}, True),
        ({"maxUnavailable": "0%"}, True),
        ({"minAvailable": "100%"}, True),
        ({"maxUnavailable": 1}, False),
        ({"maxUnavailable": "0"}, False),  # the string "0" is not the integer 0 (upstream)
        ({"minAvailable": 3}, False),
        ({"minAvailable": "99%"}, False),
    ],
)
def test_fully_blocking_pdb(spec: dict[str, Any], blocking: bool) -> None:
    assert is_fully_blocking_pdb(pdb(**spec)) is blocking


def test_currently_reschedulable_respects_fully_blocking_pdbs() -> None:
    web = make_pod(labels={"app": "web"})
    assert PdbLimits([pdb(maxUnavailable=1)]).is_currently_reschedulable(web, NOW)
    assert not PdbLimits([pdb(maxUnavailable=0)]).is_currently_reschedulable(web, NOW)
    other = make_pod(labels={"app": "db"})
    assert PdbLimits([pdb(maxUnavailable=0)]).is_currently_reschedulable(other, NOW)


def test_the_pdbs_selecting_a_pod_are_those_of_its_namespace_and_labels() -> None:
    pdbs = [
        pdb("web", maxUnavailable=1),
        pdb("web-other-ns", "other", maxUnavailable=1),
        pdb("tier", selector={"matchExpressions": [{"key": "tier", "operator": "Exists"}]}),
        pdb("none", selector=None),
        pdb("all", selector={}),
    ]
    limits = PdbLimits(pdbs)
    pods = [
        make_pod("a", labels={"app": "web"}),
        make_pod("b", labels={"app": "web", "tier": "front"}),
        make_pod("c", labels={"app": "web"}, namespace="other"),
        make_pod("d", labels={"tier": "back"}),
        make_pod("e"),
        make_pod("f", labels={"app": "web"}),  # same namespace and labels as "a"
        make_pod("g", labels={"app": "api"}, namespace="other"),
    ]
    expected = {
        "a": ["web", "all"],
        "b": ["web", "tier", "all"],
        "c": ["web-other-ns"],
        "d": ["tier", "all"],
        "e": ["all"],
        "f": ["web", "all"],
        "g": [],
    }
    for _ in range(2):  # asked again, answered from what was worked out
        for p in pods:
            assert [b.name for b in limits.selecting(p)] == expected[p.name], p.name
            assert list(limits.selecting(p)) == [b for b in pdbs if b.selects(p)]


def test_two_pdbs_on_one_pod_block_it() -> None:
    web = make_pod(labels={"app": "web"})
    limits = PdbLimits([pdb("a", maxUnavailable=1), pdb("b", maxUnavailable=1)])
    assert limits.is_fully_blocked(web, NOW)
    keys, ok = limits.can_evict_pods([web], NOW)
    assert not ok and sorted(keys) == ["default/a", "default/b"]


def test_always_allow_unhealthy_lets_unready_pods_go() -> None:
    unready = make_pod(labels={"app": "web"}, conditions=[{"type": "Ready", "status": "False"}])
    ready = make_pod(labels={"app": "web"})
    limits = PdbLimits([pdb(maxUnavailable=0, unhealthyPodEvictionPolicy="AlwaysAllow")])
    assert not limits.is_fully_blocked(unready, NOW)
    assert limits.is_fully_blocked(ready, NOW)


def test_can_evict_needs_an_allowed_disruption() -> None:
    web = make_pod(labels={"app": "web"})
    assert PdbLimits([pdb(maxUnavailable=1, _allowed=1)]).can_evict_pods([web], NOW) == ([], True)
    assert PdbLimits([pdb(maxUnavailable=1, _allowed=0)]).can_evict_pods([web], NOW) == (
        ["default/b"],
        False,
    )


def test_do_not_disrupt_pods_are_not_currently_reschedulable() -> None:
    pod = make_pod(annotations={"karpenter.sh/do-not-disrupt": "true"})
    assert not PdbLimits([]).is_currently_reschedulable(pod, NOW)


def test_malformed_pdbs_are_skipped() -> None:
    limits = PdbLimits.from_dicts(
        [
            {
                "metadata": {"name": "ok", "namespace": "default"},
                "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "web"}}},
            },
            {"metadata": {"name": "bad", "namespace": "default"}, "spec": {"maxUnavailable": "x"}},
        ]
    )
    assert [p.name for p in limits.pdbs] == ["ok"]
