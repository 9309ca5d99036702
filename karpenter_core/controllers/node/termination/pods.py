"""Pod predicates the drain depends on, on plain pod dicts (upstream ``pkg/utils/pod``).

The drain reads pods straight from the API server and must never fail on a pod it cannot
fully parse (a pod with a malformed toleration still has to leave the node), so these work
on the raw dict and treat an unreadable field as absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from karpenter_core.apis import labels as wk
from karpenter_core.apis.accessors import annotations_of, meta_of, name_of, spec_of
from karpenter_core.apis.durations import DurationError, parse_go_duration
from karpenter_core.apis.taints import DISRUPTED_NO_SCHEDULE_TAINT, Toleration
from karpenter_core.runtime.clock import format_time, parse_time
from karpenter_core.runtime.events import NORMAL, WARNING, Event, EventRecorder

__all__ = [
    "CRITICAL_PRIORITY_CLASSES",
    "STUCK_TERMINATING_AFTER",
    "deletion_time",
    "do_not_disrupt_active",
    "grace_period_seconds",
    "is_active",
    "is_critical",
    "is_drainable",
    "is_evictable",
    "is_owned_by_daemonset",
    "is_owned_by_node",
    "is_stuck_terminating",
    "is_terminal",
    "is_terminating",
    "is_waiting_eviction",
    "needs_force_delete",
    "pod_ref",
    "pvc_names",
    "tolerates_disrupted_taint",
]

CRITICAL_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
"""Priority classes that go last in a drain, as the kubelet's graceful node shutdown does."""

STUCK_TERMINATING_AFTER = timedelta(minutes=1)
"""A pod still present this long after its deletionTimestamp is ignored by the drain: the
kubelet is gone or wedged, and waiting for it would block the node forever."""


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None


def pod_ref(pod: Mapping[str, Any]) -> str:
    """``namespace/name``, for messages."""
    meta = meta_of(pod)
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


def deletion_time(pod: Mapping[str, Any]) -> datetime | None:
    """The pod's deletionTimestamp (when a graceful delete is due), or None."""
    return _time(meta_of(pod).get("deletionTimestamp"))


def is_terminal(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status")
    phase = status.get("phase") if isinstance(status, Mapping) else None
    return phase in ("Succeeded", "Failed")


def is_terminating(pod: Mapping[str, Any]) -> bool:
    return bool(meta_of(pod).get("deletionTimestamp"))


def is_active(pod: Mapping[str, Any]) -> bool:
    """Neither finished nor being deleted."""
    return not is_terminal(pod) and not is_terminating(pod)


def _owned_by(pod: Mapping[str, Any], api_version: str, kind: str) -> bool:
    owners = meta_of(pod).get("ownerReferences")
    if not isinstance(owners, list):
        return False
    return any(
        isinstance(o, Mapping) and o.get("apiVersion") == api_version and o.get("kind") == kind
        for o in owners
    )


def is_owned_by_daemonset(pod: Mapping[str, Any]) -> bool:
    return _owned_by(pod, "apps/v1", "DaemonSet")


def is_owned_by_node(pod: Mapping[str, Any]) -> bool:
    """A mirror (static) pod: the kubelet owns it, the API server cannot delete it for good."""
    return _owned_by(pod, "v1", "Node")


def is_critical(pod: Mapping[str, Any]) -> bool:
    return spec_of(pod).get("priorityClassName") in CRITICAL_PRIORITY_CLASSES


def tolerates_disrupted_taint(pod: Mapping[str, Any]) -> bool:
    """True when the pod tolerates ``karpenter.sh/disrupted:NoSchedule``: such a pod asked
    to stay on a disrupted node, so the drain leaves it alone. A malformed toleration
    tolerates nothing."""
    tolerations = spec_of(pod).get("tolerations")
    if not isinstance(tolerations, list):
        return False
    for t in tolerations:
        try:
            toleration = Toleration.from_dict(t)
        except (ValueError, TypeError):
            continue
        if toleration.tolerates(DISRUPTED_NO_SCHEDULE_TAINT):
            return True
    return False


def is_stuck_terminating(pod: Mapping[str, Any], now: datetime) -> bool:
    deleted = deletion_time(pod)
    return deleted is not None and now - deleted > STUCK_TERMINATING_AFTER


def is_drainable(pod: Mapping[str, Any], now: datetime) -> bool:
    """A pod the drain waits for. do-not-disrupt pods count: the drain stalls on them even
    though it will not evict them."""
    return (
        not tolerates_disrupted_taint(pod)
        and not is_stuck_terminating(pod, now)
        and not is_owned_by_node(pod)
    )


def is_waiting_eviction(pod: Mapping[str, Any], now: datetime) -> bool:
    return not is_terminal(pod) and is_drainable(pod, now)


def do_not_disrupt_active(
    pod: Mapping[str, Any], now: datetime, recorder: EventRecorder | None = None
) -> bool:
    """Whether ``karpenter.sh/do-not-disrupt`` protects the pod right now.

    ``"true"`` always protects. A positive Go duration protects until that long after
    ``status.startTime`` (always, when the pod has not started). Anything else is ignored,
    with an ``InvalidDoNotDisruptAnnotation`` event so the owner can fix it.
    """
    value = annotations_of(pod).get(wk.DO_NOT_DISRUPT_ANNOTATION_KEY)
    if value is None:
        return False
    if value == "true":
        return True
    uid = str(meta_of(pod).get("uid") or "")
    try:
        nanos = parse_go_duration(str(value))
        if nanos <= 0:
            raise DurationError(f'duration "{value}" must be positive')
    except DurationError as e:
        message = str(e)
        if not message.startswith("duration"):
            message = f'failed to parse "{value}" as a duration: {e}'
        if recorder is not None:
            recorder.publish(
                Event(
                    pod,
                    WARNING,
                    "InvalidDoNotDisruptAnnotation",
                    f"Invalid karpenter.sh/do-not-disrupt annotation: {message}, ignoring annotation",
                    (uid, message),
                )
            )
        return False
    status = pod.get("status")
    started = _time(status.get("startTime")) if isinstance(status, Mapping) else None
    if started is None:
        return True
    until = started + timedelta(microseconds=nanos // 1000)
    active = now < until
    if recorder is not None:
        if active:
            when = format_time(until)
            recorder.publish(
                Event(
                    pod,
                    NORMAL,
                    "DoNotDisruptUntil",
                    f"The karpenter.sh/do-not-disrupt grace period will elapse at {when}",
                    (uid, when),
                )
            )
        else:
            recorder.publish(
                Event(
                    pod,
                    NORMAL,
                    "DoNotDisruptGracePeriodElapsed",
                    "The karpenter.sh/do-not-disrupt grace period has elapsed, pod is now disruptable",
                    (uid,),
                )
            )
    return active


def is_evictable(
    pod: Mapping[str, Any], now: datetime, recorder: EventRecorder | None = None
) -> bool:
    """A pod the eviction queue may evict now."""
    return (
        is_active(pod)
        and not tolerates_disrupted_taint(pod)
        and not is_owned_by_node(pod)
        and not do_not_disrupt_active(pod, now, recorder)
    )


def grace_period_seconds(pod: Mapping[str, Any]) -> int | None:
    """``spec.terminationGracePeriodSeconds``, or None when unset or unreadable."""
    value = spec_of(pod).get("terminationGracePeriodSeconds")
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def needs_force_delete(pod: Mapping[str, Any], deadline: datetime | None, now: datetime) -> bool:
    """Whether the pod must be deleted now, bypassing PDBs and do-not-disrupt, so that it is
    gone by the node's deadline (the NodeClaim's terminationGracePeriod).

    A terminating pod qualifies when its own deletion is due after the deadline; any other
    pod when waiting any longer would leave it less than its terminationGracePeriodSeconds.
    """
    if deadline is None:
        return False
    if is_terminating(pod):
        deleted = deletion_time(pod)
        return deleted is not None and deleted > deadline
    grace = grace_period_seconds(pod)
    if grace is None:
        return False
    return now > deadline - timedelta(seconds=grace)


def pvc_names(pod: Mapping[str, Any]) -> list[str]:
    """Names of the PersistentVolumeClaims the pod mounts (generic ephemeral volumes use
    ``<pod>-<volume>``)."""
    out: list[str] = []
    volumes = spec_of(pod).get("volumes")
    if not isinstance(volumes, list):
        return out
    pod_name = name_of(pod)
    for v in volumes:
        if not isinstance(v, Mapping):
            continue
        claim = v.get("persistentVolumeClaim")
        if isinstance(claim, Mapping) and claim.get("claimName"):
            out.append(str(claim["claimName"]))
        elif isinstance(v.get("ephemeral"), Mapping) and v.get("name"):
            out.append(f"{pod_name}-{v['name']}")
    return out
