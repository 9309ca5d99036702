"""Pod predicates the provisioner, disruption and termination agree on (upstream
``pkg/utils/pod`` and ``pkg/utils/pdb``).

Which pods deserve capacity is a policy decision shared by several controllers: the
provisioner launches for *provisionable* pods (kube-scheduler gave up on them) and, ahead
of a drain, for the *currently reschedulable* pods of nodes being deleted; disruption and
termination ask whether a pod may be evicted at all. Keeping the rules here means the three
never disagree about a pod.

Time comes in as an argument (``now``, a timezone-aware datetime from the controller's
clock), never from the system clock, so simulations stay deterministic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from karpenter_core.apis.durations import parse_go_duration
from karpenter_core.apis.labels import DISRUPTED_TAINT_KEY, DO_NOT_DISRUPT_ANNOTATION_KEY
from karpenter_core.apis.objects import Pod, PodDisruptionBudget
from karpenter_core.apis.taints import Taint, tolerates
from karpenter_core.runtime.clock import format_time
from karpenter_core.runtime.events import NORMAL, WARNING, Event

__all__ = [
    "STUCK_TERMINATING_AFTER",
    "EventPublisher",
    "PdbLimits",
    "do_not_disrupt_until",
    "is_active",
    "is_disruptable",
    "is_do_not_disrupt_active",
    "is_drainable",
    "is_evictable",
    "is_fully_blocking_pdb",
    "is_pod_eligible_for_forced_eviction",
    "is_provisionable",
    "is_reschedulable",
    "is_stuck_terminating",
    "is_waiting_eviction",
    "pod_reference",
    "tolerates_disrupted_noschedule_taint",
]

STUCK_TERMINATING_AFTER = timedelta(minutes=1)
"""A terminating pod older than this is not waited for during a drain."""

DISRUPTED_NO_SCHEDULE_TAINT = Taint(key=DISRUPTED_TAINT_KEY, value="", effect="NoSchedule")


class EventPublisher(Protocol):
    """Where the predicates' events go: the controller's event recorder, or a decision
    collecting them to return (disruption's decisions publish nothing themselves)."""

    def publish(self, *events: Event) -> None: ...


def pod_reference(pod: Pod) -> dict[str, str]:
    """The pod as an event's involved object (works for pods parsed from bare dicts)."""
    ref = {"apiVersion": "v1", "kind": "Pod", "namespace": pod.namespace, "name": pod.name}
    if pod.uid:
        ref["uid"] = pod.uid
    return ref


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


# --------------------------------------------------------------------------- simple predicates


def is_active(pod: Pod) -> bool:
    """Neither terminal (Succeeded/Failed) nor terminating."""
    return pod.is_active()


def is_provisionable(pod: Pod) -> bool:
    """kube-scheduler marked it ``PodScheduled=False/Unschedulable``, it is unbound, not
    pre-empting (``status.nominatedNodeName`` empty), and not a DaemonSet or mirror pod."""
    return pod.is_provisionable()


def is_reschedulable(pod: Pod) -> bool:
    """Would need a new home if its node went away: active (or a terminating StatefulSet
    pod, which comes back under the same name), and not a DaemonSet or mirror pod."""
    return pod.is_reschedulable()


def tolerates_disrupted_noschedule_taint(pod: Pod) -> bool:
    """Pods tolerating ``karpenter.sh/disrupted:NoSchedule`` would land right back on a
    draining node, so drains leave them alone."""
    tolerations = pod.tolerations
    if not tolerations:  # most pods: nothing can tolerate the taint
        return False
    return tolerates((DISRUPTED_NO_SCHEDULE_TAINT,), tolerations) is None


def is_stuck_terminating(pod: Pod, now: datetime) -> bool:
    return (
        pod.deletion_timestamp is not None
        and now - _at(pod.deletion_timestamp) > STUCK_TERMINATING_AFTER
    )


def is_drainable(pod: Pod, now: datetime) -> bool:
    return (
        not tolerates_disrupted_noschedule_taint(pod)
        and not is_stuck_terminating(pod, now)
        and not pod.is_owned_by_node()
    )


def is_waiting_eviction(pod: Pod, now: datetime) -> bool:
    return not pod.is_terminal() and is_drainable(pod, now)


def is_pod_eligible_for_forced_eviction(pod: Pod, grace_expiration: datetime | None) -> bool:
    """A terminating pod whose own deletion deadline lies past the node's
    terminationGracePeriod expiry must be deleted outright."""
    return (
        grace_expiration is not None
        and pod.deletion_timestamp is not None
        and _at(pod.deletion_timestamp) > grace_expiration
    )


# --------------------------------------------------------------------------- do-not-disrupt


def _parse_do_not_disrupt(value: str) -> timedelta | str:
    """The annotation's duration, or why it is not one (upstream's wording)."""
    try:
        nanos = parse_go_duration(value)
    except ValueError as e:
        return f"failed to parse {_go_quote(value)} as a duration: {e}"
    if nanos <= 0:
        return f"duration {_go_quote(value)} must be positive"
    return timedelta(microseconds=nanos // 1000)


def _go_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def do_not_disrupt_until(pod: Pod) -> datetime | bool:
    """When the pod's ``karpenter.sh/do-not-disrupt`` protection ends: ``True`` forever
    (``"true"``, or a duration with no start time yet), a datetime for a duration counted
    from ``status.startTime``, ``False`` when absent or invalid."""
    value = pod.annotations.get(DO_NOT_DISRUPT_ANNOTATION_KEY)
    if value is None:
        return False
    if value == "true":
        return True
    parsed = _parse_do_not_disrupt(value)
    if isinstance(parsed, str):
        return False
    if pod.start_time is None:
        return True
    return _at(pod.start_time) + parsed


def is_do_not_disrupt_active(
    pod: Pod, now: datetime, recorder: EventPublisher | None = None
) -> bool:
    """``"true"`` protects forever; a positive Go duration protects while the pod is younger
    than it (since ``status.startTime``; a pod not started yet is protected); anything else
    is ignored with an ``InvalidDoNotDisruptAnnotation`` warning. With a recorder, also
    publishes ``DoNotDisruptUntil`` / ``DoNotDisruptGracePeriodElapsed`` as upstream."""
    value = pod.annotations.get(DO_NOT_DISRUPT_ANNOTATION_KEY)
    if value is None:
        return False
    if value == "true":
        return True
    parsed = _parse_do_not_disrupt(value)
    ref = pod_reference(pod)
    if isinstance(parsed, str):
        if recorder is not None:
            recorder.publish(
                Event(
                    ref,
                    WARNING,
                    "InvalidDoNotDisruptAnnotation",
                    f"Invalid karpenter.sh/do-not-disrupt annotation: {parsed}, ignoring annotation",
                    (pod.uid, parsed),
                )
            )
        return False
    if pod.start_time is None:
        return True
    until = _at(pod.start_time) + parsed
    active = now < until
    if recorder is not None:
        if active:
            stamp = format_time(until)
            recorder.publish(
                Event(
                    ref,
                    NORMAL,
                    "DoNotDisruptUntil",
                    f"The karpenter.sh/do-not-disrupt grace period will elapse at {stamp}",
                    (pod.uid, stamp),
                )
            )
        else:
            recorder.publish(
                Event(
                    ref,
                    NORMAL,
                    "DoNotDisruptGracePeriodElapsed",
                    "The karpenter.sh/do-not-disrupt grace period has elapsed, pod is now "
                    "disruptable",
                    (pod.uid,),
                )
            )
    return active


def is_evictable(pod: Pod, now: datetime, recorder: EventPublisher | None = None) -> bool:
    """Whether a drain would call the eviction API for this pod."""
    return (
        pod.is_active()
        and not tolerates_disrupted_noschedule_taint(pod)
        and not pod.is_owned_by_node()
        and not is_do_not_disrupt_active(pod, now, recorder)
    )


def is_disruptable(pod: Pod, now: datetime, recorder: EventPublisher | None = None) -> bool:
    """Inactive pods never block; active ones block while do-not-disrupt is in force."""
    return not pod.is_active() or not is_do_not_disrupt_active(pod, now, recorder)


# --------------------------------------------------------------------------- PDBs


def is_fully_blocking_pdb(pdb: PodDisruptionBudget) -> bool:
    """``maxUnavailable: 0`` (the integer) or ``"0%"``, or ``minAvailable: "100%"``: no pod
    it selects can ever be evicted voluntarily. Judged on the spec as written, as upstream's
    int-or-string checks do (the string ``"0"`` is not the integer 0)."""
    spec = pdb.raw.get("spec") if isinstance(pdb.raw, Mapping) else None
    spec = spec if isinstance(spec, Mapping) else {}
    max_unavailable = spec.get("maxUnavailable")
    min_available = spec.get("minAvailable")
    if isinstance(max_unavailable, int) and not isinstance(max_unavailable, bool):
        if max_unavailable == 0:
            return True
    elif max_unavailable == "0%":
        return True
    return min_available == "100%"


def _always_evicts_unhealthy(pdb: PodDisruptionBudget) -> bool:
    spec = pdb.raw.get("spec") if isinstance(pdb.raw, Mapping) else None
    return isinstance(spec, Mapping) and spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow"


def _not_ready(pod: Pod) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "False" for c in pod.conditions)


_SelectionKey = tuple[str, frozenset[tuple[str, str]]]
"""A pod's namespace and labels: all a PDB's selection reads."""


class PdbLimits:
    """The PodDisruptionBudgets of the cluster, asked about pods (upstream ``pdb.Limits``)."""

    def __init__(self, pdbs: Iterable[PodDisruptionBudget]) -> None:
        self.pdbs: tuple[PodDisruptionBudget, ...] = tuple(pdbs)
        self._selecting: dict[_SelectionKey, tuple[PodDisruptionBudget, ...]] = {}

    def selecting(self, pod: Pod) -> tuple[PodDisruptionBudget, ...]:
        """The PDBs selecting ``pod``, in order. Selection reads only the pod's namespace and
        labels, which a workload's pods share: a disruption pass asks this of every pod of
        every candidate, so it is worked out once per namespace and label set."""
        key = (pod.namespace, frozenset(pod.labels.items()))  # labels are strings (parsed)
        found = self._selecting.get(key)
        if found is None:
            found = self._selecting[key] = tuple(p for p in self.pdbs if p.selects(pod))
        return found

    @classmethod
    def from_dicts(cls, objs: Iterable[Mapping[str, Any]]) -> PdbLimits:
        """Parse PDB objects; a malformed one is skipped (it protects nothing we can read)."""
        from karpenter_core.apis.objects import ObjectError

        out = []
        for obj in objs:
            try:
                out.append(PodDisruptionBudget.from_dict(obj))
            except ObjectError:
                continue
        return cls(out)

    def _blocking(
        self, pod: Pod, now: datetime, recorder: EventPublisher | None, fully: bool
    ) -> list[str]:
        """Keys of the PDBs keeping ``pod`` from eviction (empty: evictable, or not a pod
        a drain would evict anyway)."""
        if not self.pdbs and DO_NOT_DISRUPT_ANNOTATION_KEY not in pod.annotations:
            return []  # nothing can block it, and is_evictable would publish nothing
        if not is_evictable(pod, now, recorder):
            return []
        matching = self.selecting(pod)
        if len(matching) > 1:
            # The eviction API refuses pods covered by more than one PDB.
            return [p.key for p in matching]
        for pdb in matching:
            if _always_evicts_unhealthy(pdb) and _not_ready(pod):
                return []
            if fully:
                if is_fully_blocking_pdb(pdb):
                    return [pdb.key]
            elif pdb.disruptions_allowed == 0:
                return [pdb.key]
        return []

    def can_evict_pods(
        self, pods: Sequence[Pod], now: datetime, recorder: EventPublisher | None = None
    ) -> tuple[list[str], bool]:
        """Whether every pod could be evicted now (each PDB allows at least one disruption);
        when not, the keys of the PDBs in the way."""
        for pod in pods:
            keys = self._blocking(pod, now, recorder, fully=False)
            if keys:
                return keys, False
        return [], True

    def is_fully_blocked(
        self, pod: Pod, now: datetime, recorder: EventPublisher | None = None
    ) -> bool:
        return bool(self._blocking(pod, now, recorder, fully=True))

    def is_currently_reschedulable(
        self, pod: Pod, now: datetime, recorder: EventPublisher | None = None
    ) -> bool:
        """Reschedulable, not held by do-not-disrupt, and not behind a PDB that never allows
        an eviction: only such pods of a deleting node are worth new capacity now."""
        return (
            pod.is_reschedulable()
            and is_disruptable(pod, now, recorder)
            and not self.is_fully_blocked(pod, now, recorder)
        )
