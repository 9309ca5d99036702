"""One row per decision: what Karpenter decided in a simulation, apart from what its
controllers said along the way.

The observer sees a decision in several steps (a NodeClaim created, then launched or
abandoned; a disruption command started, its replacements launched, its candidates
deleted), and Karpenter's controllers publish events about each step (``Nominated`` for
every pod, ``DisruptionBlocked`` on every pass, ``Evicted``...). A reader wants the
decisions: a launch with what it launched and for how many pods, a disruption with its
reason and what replaced the node, a removal Karpenter made for its own reason, and the
failures (a launch that got no capacity, pods Karpenter could not place). This module
folds the observer's steps into those rows and keeps the events apart, folded per instant
for pods, for the JSON report's ``events``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from karpenter_core.sim.records import Decision, NodeClaimRecord

__all__ = [
    "DECISION_EVENT_REASONS",
    "LAUNCH",
    "LAUNCH_FAILED",
    "STATUS_TRANSITION_PREFIX",
    "fold",
]

LAUNCH = "Launch"
LAUNCH_FAILED = "LaunchFailed"
DELETE = "DeleteNodeClaim"
DISRUPT = "Disrupt"

DECISION_EVENT_REASONS = frozenset({"FailedScheduling", "NoCompatibleInstanceTypes"})
"""Events that are a decision in themselves: Karpenter found no place for pods, or a
NodePool that can launch nothing. Every other event describes a step of a decision (or
why none was taken) and goes to ``events``."""

STATUS_TRANSITION_PREFIX = "Status condition transitioned,"
_NOMINATED = re.compile(r"nodeclaim/([A-Za-z0-9.\-]+)")
_INSUFFICIENT_CAPACITY = "InsufficientCapacityError"


def _is_status_observation(ev: Any) -> bool:
    """An operatorpkg status-controller event (a condition changed, a finalizer went):
    an echo of another step, neither a decision nor worth a row."""
    return ev.reason == "Finalized" or str(ev.message).startswith(STATUS_TRANSITION_PREFIX)


def _same_reason(a: str, b: str) -> bool:
    """A disruption method's reason (``Underutilized``) against a removal reason as the
    disruption counter labels it (``underutilized``)."""

    def norm(s: str) -> str:
        return s.lower().replace("_", "").replace(" ", "")

    return norm(a) == norm(b)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _offering(rec: NodeClaimRecord) -> str:
    price = "unknown price" if rec.price is None else f"${rec.price:.4f}/h"
    return (
        f"{rec.instance_type or 'an instance'} ({rec.capacity_type or '?'}, "
        f"{rec.zone or '?'}) at {price}"
    )


class _Events:
    """The controllers' events: folded pod events, the pods each NodeClaim was nominated
    for, launch errors by NodeClaim, and the events that are decisions."""

    def __init__(self, start_time: datetime) -> None:
        self.start_time = start_time
        self.nominated: Counter[tuple[str, float]] = Counter()
        self.launch_errors: dict[str, str] = {}
        self.rows: list[tuple[float, int, dict[str, Any]]] = []
        self.decisions: list[tuple[float, int, dict[str, Any]]] = []
        self._folded: dict[tuple[float, str, str, str], dict[str, Any]] = {}
        self._seq = 0

    def add(self, ev: Any) -> None:
        if _is_status_observation(ev):
            return
        t = (ev.time - self.start_time).total_seconds()
        promoted = ev.reason in DECISION_EVENT_REASONS
        if ev.kind == "Pod":
            if ev.reason == "Nominated":
                for nc in set(_NOMINATED.findall(ev.message)):
                    self.nominated[(nc, round(t, 3))] += 1
            key = (t, ev.type, ev.reason, ev.message)
            row = self._folded.get(key)
            if row is None:
                obj = f"Pod/{ev.regarding.get('namespace', '')}/{ev.name}"
                row = self._row(ev, obj, promoted)
                row["pods"] = 0
                self._folded[key] = row
                self._append(t, row, promoted)
            row["pods"] += 1
            return
        if ev.kind == "NodeClaim" and ev.reason == _INSUFFICIENT_CAPACITY:
            self.launch_errors.setdefault(ev.name, ev.message)
        self._append(t, self._row(ev, f"{ev.kind}/{ev.name}", promoted), promoted)

    @staticmethod
    def _row(ev: Any, obj: str, promoted: bool) -> dict[str, Any]:
        """An event as a row of ``events`` (Kubernetes' field names), or, when it is a
        decision, as a decision row (its reason the action, its message the reason)."""
        if promoted:
            return {
                "action": ev.reason,
                "reason": ev.message,
                "object": obj,
                "type": ev.type,
                "source": "karpenter",
            }
        return {"type": ev.type, "reason": ev.reason, "message": ev.message, "object": obj}

    def _append(self, t: float, row: dict[str, Any], promoted: bool) -> None:
        (self.decisions if promoted else self.rows).append((t, self._seq, row))
        self._seq += 1


def _launch_row(
    create: Decision, rec: NodeClaimRecord | None, pods: int, error: str | None
) -> dict[str, Any]:
    """One row for a NodeClaim Karpenter created: what it launched, for how many pods,
    or why it launched nothing."""
    if pods:
        why = f"{_plural(pods, 'pending pod')} did not fit on existing capacity"
    else:
        why = create.reason
    row: dict[str, Any] = {"action": LAUNCH, "reason": why, **create.details}
    if pods:
        row["pods"] = pods
    if rec is None:
        return row
    if rec.launched is not None:
        row["reason"] = f"{why}: {_offering(rec)}"
        row.update(
            instanceType=rec.instance_type,
            zone=rec.zone,
            capacityType=rec.capacity_type,
            pricePerHour=rec.price,
        )
    elif rec.deleting is not None:
        row["action"] = LAUNCH_FAILED
        row["reason"] = f"{why}: not launched: {rec.reason}" + (f" ({error})" if error else "")
        if error:
            row["error"] = error
    else:
        row["reason"] = f"{why}: not launched by the end of the run"
    return row


def _disrupt_row(d: Decision, nodeclaims: Mapping[str, NodeClaimRecord]) -> dict[str, Any]:
    """A disruption command, with what replaced its candidates (their launches are part
    of this decision, not rows of their own) and whether it was carried out."""
    row: dict[str, Any] = {"action": DISRUPT, "reason": d.reason, **d.details}
    parts = []
    abandoned = False
    for name in d.details.get("replacements") or ():
        rec = nodeclaims.get(name)
        if rec is not None and rec.launched is not None:
            parts.append(f"{name} {_offering(rec)}")
        elif rec is not None and rec.deleting is not None:
            parts.append(f"{name} not launched: {rec.reason}")
            abandoned = True  # the queue gives up a command whose replacement is gone
        else:
            parts.append(f"{name} not launched by the end of the run")
    if parts:
        row["reason"] += ": " + "; ".join(parts)
    if abandoned:
        row["reason"] += "; the command was abandoned"
        return row
    candidates = [nodeclaims.get(n) for n in d.details.get("candidates") or ()]
    if candidates and all(c is not None and c.deleting is None for c in candidates):
        row["reason"] += "; not carried out by the end of the run (candidates still running)"
    return row


def fold(
    observed: Sequence[Decision],
    recorded: Iterable[Any],
    nodeclaims: Mapping[str, NodeClaimRecord],
    start_time: datetime,
    time_of: Callable[[float | None], str | None],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(decisions, events)`` in time order: one row per decision (what the scenario did
    comes first within an instant: it is the cause of the rest) and every other event
    the controllers recorded (status-condition echoes left out)."""
    events = _Events(start_time)
    for ev in recorded:
        events.add(ev)
    replaced_by: dict[str, Decision] = {}
    disrupted: dict[str, Decision] = {}
    created: set[str] = set()
    scenario_hits: set[tuple[str, float]] = set()
    for d in observed:
        if d.action == DISRUPT:
            for name in d.details.get("replacements") or ():
                replaced_by[str(name)] = d
        elif d.action == "CreateNodeClaim":
            created.add(str(d.details.get("nodeClaim")))
        elif d.source == "scenario" and d.details.get("nodeClaim"):
            scenario_hits.add((str(d.details["nodeClaim"]), d.t))

    rows: list[tuple[float, int, dict[str, Any]]] = list(events.decisions)
    seq = len(events.rows) + len(events.decisions)
    for d in observed:
        name = str(d.details.get("nodeClaim") or "")
        row: dict[str, Any] | None
        if d.action == "CreateNodeClaim":
            if name in replaced_by:
                continue  # part of the disruption that asked for it
            pods = events.nominated.get((name, round(d.t, 3)), 0)
            row = _launch_row(d, nodeclaims.get(name), pods, events.launch_errors.get(name))
        elif d.action == LAUNCH:
            if name in created or name in replaced_by:
                continue  # told by the creation's row
            row = {"action": LAUNCH, "reason": d.reason, **d.details}
        elif d.action == "AbandonNodeClaim":
            if name in created or name in replaced_by:
                continue
            row = {"action": LAUNCH_FAILED, "reason": f"not launched: {d.reason}", **d.details}
        elif d.action == DISRUPT:
            for candidate in d.details.get("candidates") or ():
                disrupted[str(candidate)] = d
            row = _disrupt_row(d, nodeclaims)
        elif d.action == DELETE:
            if (name, d.t) in scenario_hits:
                continue  # the scenario deleted it (a spot interruption): its row says so
            command = disrupted.get(name)
            if command is not None and _same_reason(str(command.details.get("method")), d.reason):
                continue  # the disruption command's row says so
            row = {"action": DELETE, "reason": d.reason, **d.details}
        else:
            row = {"action": d.action, "reason": d.reason, **d.details}
        row["source"] = d.source
        rows.append((d.t, seq, row))
        seq += 1
    rows.sort(key=lambda r: (r[0], r[2].get("source") != "scenario", r[1]))

    def stamped(t: float, row: dict[str, Any]) -> dict[str, Any]:
        return {"time": time_of(t), "offsetSeconds": round(t, 3), **row}

    return (
        [stamped(t, row) for t, _, row in rows],
        [stamped(t, row) for t, _, row in sorted(events.rows, key=lambda r: (r[0], r[1]))],
    )
