"""Status conditions: the one library every controller and plugin reads and writes them with.

Controllers work on the API server's object dicts, so :class:`ConditionSet` is the dict
counterpart of operatorpkg's ``ConditionSet``; a typed model (anything with ``to_dict()``)
is opened with :meth:`ConditionSet.of`, and :meth:`ConditionSet.status_patch` gives the
merge patch that writes what changed. The typed models read their own conditions
(:meth:`~karpenter_core.apis.base.ObjectModel.condition`); :func:`condition_of` and
:func:`is_true` read any object dict without opening a set.

Two kinds of set, as upstream has:

* **With a root** (``Ready`` over dependents: NodeClaims, NodePools, NodeClasses, NodeOverlays),
  operatorpkg's rules, which matter to other controllers reading the times recorded:

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

* **Without a root** (``root=None``: a Node's termination conditions on its NodeClaim, a
  CapacityBuffer's conditions), apimachinery's ``meta.SetStatusCondition``: nothing is filled
  in, a condition is replaced where it stands or appended, ``lastTransitionTime`` moves only
  when the status changes, ``observedGeneration`` is the object's generation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from karpenter_core.apis.base import format_time
from karpenter_core.apis.copying import deep_copy
from karpenter_core.apis.v1 import CONDITION_READY, NODECLAIM_READY_DEPENDENTS

if TYPE_CHECKING:
    from karpenter_core.runtime.clock import Clock

__all__ = [
    "AWAITING_RECONCILIATION",
    "FALSE",
    "TRUE",
    "UNKNOWN",
    "ConditionSet",
    "condition_of",
    "conditions_of",
    "is_true",
    "nodeclaim_conditions",
]

TRUE = "True"
FALSE = "False"
UNKNOWN = "Unknown"
AWAITING_RECONCILIATION = "AwaitingReconciliation"
_AWAITING_MESSAGE = "object is awaiting reconciliation"


def conditions_of(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The well-formed ``status.conditions`` entries of an object dict of any kind (Node,
    Pod, NodeClaim, NodePool, NodeClass, CapacityBuffer...); a malformed status reads as none."""
    status = obj.get("status")
    conds = status.get("conditions") if isinstance(status, Mapping) else None
    return [c for c in conds if isinstance(c, Mapping)] if isinstance(conds, list) else []


def condition_of(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    """The ``status.conditions`` entry of ``type_`` on an object dict of any kind, or None.
    Read-only, so it needs no clock or root condition the way :class:`ConditionSet` does."""
    for c in conditions_of(obj):
        if c.get("type") == type_:
            return c
    return None


def is_true(obj: Mapping[str, Any], type_: str) -> bool:
    """The condition ``type_`` is present on the object dict and ``True``."""
    c = condition_of(obj, type_)
    return c is not None and c.get("status") == TRUE


class _HasDict(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta


class ConditionSet:
    """The conditions of one object dict (mutated in place), root ``root`` over
    ``dependents``, or independent conditions when ``root`` is None."""

    def __init__(
        self,
        obj: dict[str, Any],
        clock: Clock,
        *,
        root: str | None = CONDITION_READY,
        dependents: Sequence[str] = NODECLAIM_READY_DEPENDENTS,
    ) -> None:
        self.obj = obj
        self.clock = clock
        self.root = root
        self._stored: list[dict[str, Any]] = deep_copy(self.items())  # 6x copy.deepcopy
        if root is None:
            self.dependents: tuple[str, ...] = ()
            return
        self.dependents = tuple(d for d in dict.fromkeys(dependents) if d != root)
        for t in (root, *self.dependents):
            if self.get(t) is None:
                self.set_unknown(t)

    @classmethod
    def of(
        cls,
        model: _HasDict,
        clock: Clock,
        *,
        root: str | None = CONDITION_READY,
        dependents: Sequence[str] = NODECLAIM_READY_DEPENDENTS,
    ) -> ConditionSet:
        """A set over a typed model's dict form (``model.to_dict()``, a copy): set conditions
        on it, then write :meth:`status_patch`, or read the updated object from ``obj``."""
        return cls(model.to_dict(), clock, root=root, dependents=dependents)

    # ------------------------------------------------------------------ the patch

    @property
    def changed(self) -> bool:
        """Whether the conditions differ from those the object had when the set was opened."""
        return self.items() != self._stored

    def status_patch(self, *, resource_version: bool = True) -> dict[str, Any] | None:
        """The merge patch (for the ``status`` subresource) that writes the conditions as they
        are now, or None when nothing changed since the set was opened. A merge patch
        replaces the whole list, so by default it carries the ``resourceVersion`` read: a
        concurrent writer makes it fail with a conflict instead of being overwritten."""
        if not self.changed:
            return None
        body: dict[str, Any] = {"status": {"conditions": deep_copy(self.items())}}
        meta = self.obj.get("metadata")
        rv = meta.get("resourceVersion") if isinstance(meta, Mapping) else None
        if resource_version and rv:
            body["metadata"] = {"resourceVersion": rv}
        return body

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
        return self.root is not None and (type_ == self.root or type_ in self.dependents)

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
        if self.root is None:
            return self._set_independent(type_, status, reason, message)
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

    def _set_independent(self, type_: str, status: str, reason: str, message: str) -> bool:
        generation = self._generation()
        new: dict[str, Any] = {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": format_time(self.clock.now()),
        }
        if generation is not None:
            new["observedGeneration"] = generation
        conds = self.items()
        for i, old in enumerate(conds):
            if old.get("type") != type_:
                continue
            if old.get("status") == status and old.get("lastTransitionTime"):
                new["lastTransitionTime"] = old["lastTransitionTime"]
            if _same(new, old):
                return False
            conds[i] = {**old, **new}
            self._write(conds)
            return True
        conds.append(new)
        self._write(conds)
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
        if self.root is None:
            return
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
