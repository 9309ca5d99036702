"""Status conditions with operatorpkg's semantics, on plain object dicts.

Controllers here work on the API server's dicts, so this is the dict counterpart of
operatorpkg's ``ConditionSet``. The rules matter to other controllers, which read the
times these conditions record:

* Opening a condition set fills in the root (``Ready``) and every dependent that is
  missing as ``Unknown``/``AwaitingReconciliation`` with ``lastTransitionTime`` = the
  object's creation time, so "how long has Launched been Unknown" counts from creation
  (the launch and registration timeouts rely on this).
* ``set`` stamps ``observedGeneration`` with the object's generation and moves
  ``lastTransitionTime`` only when the status changes; on a deleting object every other
  condition's ``observedGeneration`` is bumped too.
* After a dependent changes, the root is recomputed: True when every dependent is True at
  the current generation; False (``UnhealthyDependents``) when one is False at the current
  generation; otherwise Unknown (``ReconcilingDependents``). The message lists the
  unhealthy dependents, newest first.
* Conditions are kept sorted: by ``lastTransitionTime`` (stable), the root last.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from karpenter_core.apis.v1 import CONDITION_READY, NODECLAIM_READY_DEPENDENTS
from karpenter_core.runtime.clock import Clock, format_time

__all__ = [
    "AWAITING_RECONCILIATION",
    "FALSE",
    "TRUE",
    "UNKNOWN",
    "ConditionSet",
    "condition_of",
    "nodeclaim_conditions",
]

TRUE = "True"
FALSE = "False"
UNKNOWN = "Unknown"
AWAITING_RECONCILIATION = "AwaitingReconciliation"
_AWAITING_MESSAGE = "object is awaiting reconciliation"


def condition_of(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    """The ``status.conditions`` entry of ``type_`` on an object dict of any kind (Node,
    NodeClaim, NodePool, NodeClass), or None. Read-only, so it needs no clock or root
    condition the way :class:`ConditionSet` does; a malformed status reads as no condition."""
    status = obj.get("status")
    conds = status.get("conditions") if isinstance(status, Mapping) else None
    for c in conds if isinstance(conds, list) else ():
        if isinstance(c, Mapping) and c.get("type") == type_:
            return c
    return None


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta


class ConditionSet:
    """The conditions of one object dict (mutated in place), root ``root`` over ``dependents``."""

    def __init__(
        self,
        obj: dict[str, Any],
        clock: Clock,
        *,
        root: str = CONDITION_READY,
        dependents: Sequence[str] = NODECLAIM_READY_DEPENDENTS,
    ) -> None:
        self.obj = obj
        self.clock = clock
        self.root = root
        self.dependents = tuple(d for d in dict.fromkeys(dependents) if d != root)
        for t in (root, *self.dependents):
            if self.get(t) is None:
                self.set_unknown(t)

    # ------------------------------------------------------------------ reading

    def items(self) -> list[dict[str, Any]]:
        status = self.obj.get("status")
        if not isinstance(status, dict):
            return []
        conds = status.get("conditions")
        return [c for c in conds if isinstance(c, dict)] if isinstance(conds, list) else []

    def get(self, type_: str) -> dict[str, Any] | None:
        for c in self.items():
            if c.get("type") == type_:
                return c
        return None

    def is_true(self, *types: str) -> bool:
        return all((self.get(t) or {}).get("status") == TRUE for t in types)

    def is_false(self, type_: str) -> bool:
        return (self.get(type_) or {}).get("status") == FALSE

    def is_unknown(self, type_: str) -> bool:
        """Unknown, or missing altogether (operatorpkg's ``IsUnknown`` on a nil condition)."""
        c = self.get(type_)
        return c is None or c.get("status") not in (TRUE, FALSE)

    def is_dependent(self, type_: str) -> bool:
        return type_ == self.root or type_ in self.dependents

    # ------------------------------------------------------------------ writing

    def _generation(self) -> int | None:
        gen = _meta(self.obj).get("generation")
        return gen if isinstance(gen, int) else None

    def _write(self, conditions: list[dict[str, Any]]) -> None:
        status = self.obj.get("status")
        if not isinstance(status, dict):
            status = {}
            self.obj["status"] = status
        status["conditions"] = conditions

    def set(self, type_: str, status: str, reason: str = "", message: str = "") -> bool:
        """Set a condition; returns whether anything changed."""
        meta = _meta(self.obj)
        generation = self._generation()
        deleting = bool(meta.get("deletionTimestamp"))
        new: dict[str, Any] = {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message,
        }
        if generation is not None:
            new["observedGeneration"] = generation
        out: list[dict[str, Any]] = []
        found = False
        for cond in self.items():
            if cond.get("type") != type_:
                cond = dict(cond)
                if deleting and generation is not None:
                    cond["observedGeneration"] = generation
                out.append(cond)
                continue
            found = True
            if cond.get("status") == status and cond.get("lastTransitionTime"):
                new["lastTransitionTime"] = cond["lastTransitionTime"]
            else:
                new["lastTransitionTime"] = format_time(self.clock.now())
            if _same(new, cond):
                return False
        if not found:
            created = meta.get("creationTimestamp")
            if self.is_dependent(type_) and isinstance(created, str) and created:
                new["lastTransitionTime"] = created
            else:
                new["lastTransitionTime"] = format_time(self.clock.now())
        out.append(new)
        root = self.root
        # Root last; the rest by transition time, stable (RFC 3339 at second precision
        # sorts correctly as text).
        out.sort(key=lambda c: (c.get("type") == root, str(c.get("lastTransitionTime") or "")))
        self._write(out)
        if type_ != root:
            self._recompute_root()
        return True

    def set_true(self, type_: str, reason: str | None = None, message: str = "") -> bool:
        return self.set(type_, TRUE, reason if reason is not None else type_, message)

    def set_false(self, type_: str, reason: str, message: str) -> bool:
        return self.set(type_, FALSE, reason, message)

    def set_unknown(self, type_: str) -> bool:
        return self.set(type_, UNKNOWN, AWAITING_RECONCILIATION, _AWAITING_MESSAGE)

    def set_unknown_with_reason(self, type_: str, reason: str, message: str) -> bool:
        return self.set(type_, UNKNOWN, reason, message)

    def refresh(self, type_: str) -> bool:
        """Re-set a condition as it is, so its ``observedGeneration`` follows the object."""
        c = self.get(type_)
        if c is None:
            return False
        return self.set(
            type_,
            str(c.get("status") or UNKNOWN),
            str(c.get("reason") or ""),
            str(c.get("message") or ""),
        )

    def clear(self, type_: str) -> bool:
        """Remove an independent condition (dependents cannot be cleared)."""
        if self.is_dependent(type_):
            raise ValueError(f"cannot clear dependent condition {type_!r}")
        conds = self.items()
        kept = [c for c in conds if c.get("type") != type_]
        if len(kept) == len(conds):
            return False
        kept.sort(key=lambda c: str(c.get("type") or ""))
        self._write(kept)
        return True

    def _recompute_root(self) -> None:
        generation = self._generation()
        unhealthy = [
            c
            for c in self.items()
            if c.get("type") in self.dependents
            and (c.get("status") != TRUE or c.get("observedGeneration") != generation)
        ]
        if not unhealthy:
            self.set_true(self.root)
            return
        unhealthy.sort(key=lambda c: str(c.get("lastTransitionTime") or ""), reverse=True)
        failed = any(
            c.get("status") == FALSE and c.get("observedGeneration") == generation
            for c in unhealthy
        )
        self.set(
            self.root,
            FALSE if failed else UNKNOWN,
            "UnhealthyDependents" if failed else "ReconcilingDependents",
            ", ".join(f"{c.get('type')}={c.get('status')}" for c in unhealthy),
        )


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    keys = ("type", "status", "reason", "message", "lastTransitionTime", "observedGeneration")
    return all((a.get(k) or None) == (b.get(k) or None) for k in keys)


def nodeclaim_conditions(nodeclaim: dict[str, Any], clock: Clock) -> ConditionSet:
    """The NodeClaim's conditions: ``Ready`` over ``Launched``, ``Registered``, ``Initialized``."""
    return ConditionSet(nodeclaim, clock)
