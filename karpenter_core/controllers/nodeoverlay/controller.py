"""``nodeoverlay.controller``: evaluate every NodeOverlay against every NodePool's instance
types, report each overlay's verdict, and swap the result into the instance-type store.

One reconcile looks at the whole cluster (overlays only make sense against each other), so
every watch event maps to the same key and the controller runs with one worker. It runs on
NodeOverlay, NodePool and NodeClass changes that move ``metadata.generation`` (its own
status writes do not, so it never wakes itself) and every 6 hours.

A reconcile (spec apis §4):

1. Reads the instance types of every managed NodePool from the provider *without* the
   NodeOverlay step. A pool whose read fails is left out of the evaluation -- it stays
   "awaiting evaluation", so provisioning and disruption skip it -- and the reconcile is
   retried with back-off after the healthy pools are served.
2. Runs runtime validation on each overlay; a failure is ``ValidationSucceeded=False``,
   reason ``RuntimeValidation``, and the overlay is ignored. (Against a real API server the
   CRD's own rules have already run; the in-memory server of ``karpenter simulate`` does not
   enforce them, so they are checked here too rather than let a bad price crash a pass.)
3. Evaluates the valid overlays (:func:`~karpenter_core.controllers.nodeoverlay.store.evaluate`);
   a conflicting overlay gets reason ``Conflict`` ("conflict with another overlay").
4. Writes the conditions (optimistic lock; a conflict or a vanished overlay re-runs the
   evaluation at once, before anything is stored), swaps the new snapshot into the store and
   marks cluster state unconsolidated, since prices and capacity may have moved.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Hashable, Iterable, Mapping, Sequence
from enum import Enum
from typing import Any

from attrs import frozen

from karpenter_core.apis.accessors import name_of
from karpenter_core.apis.base import APIError
from karpenter_core.apis.conditions import ConditionSet
from karpenter_core.apis.v1 import CONDITION_READY
from karpenter_core.apis.v1alpha1 import (
    CONDITION_VALIDATION_SUCCEEDED,
    NODEOVERLAY_READY_DEPENDENTS,
    NodeOverlay,
)
from karpenter_core.apis.validation import validate_nodeoverlay
from karpenter_core.controllers.nodeoverlay.store import (
    InstanceTypeStore,
    NodePoolInstanceTypes,
    Overlay,
    evaluate,
)
from karpenter_core.kube.client import Conflict, NotFound
from karpenter_core.provisioning.nodepools import parse_nodepool
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import ObjectKey, Result
from karpenter_core.state.cluster import cluster_of, is_managed_nodepool

__all__ = [
    "CONFLICT_MESSAGE",
    "NAME",
    "NODEOVERLAYS",
    "REASON_CONFLICT",
    "REASON_RUNTIME_VALIDATION",
    "RECONCILE_KEY",
    "REQUEUE_SECONDS",
    "GenerationChanged",
    "NodeOverlayController",
    "Verdict",
    "runtime_errors",
]

log = logging.getLogger("karpenter.nodeoverlay")

NAME = "nodeoverlay.controller"
NODEOVERLAYS = "nodeoverlays"
NODEPOOLS = "nodepools"
REASON_RUNTIME_VALIDATION = "RuntimeValidation"
REASON_CONFLICT = "Conflict"
CONFLICT_MESSAGE = "conflict with another overlay"
REQUEUE_SECONDS = 6 * 3600.0
RECONCILE_KEY = ObjectKey("", "nodeoverlays")
"""Every event maps here: one reconcile covers all overlays."""


class GenerationChanged:
    """Watch predicate: creations, deletions, and updates that moved ``metadata.generation``
    (status writes do not). One instance per watched resource."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str], Any] = {}

    def __call__(self, event_type: str, obj: dict[str, Any]) -> bool:
        meta = obj.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        generation = meta.get("generation")
        with self._lock:
            if event_type == "DELETED":
                self._seen.pop(key, None)
                return True
            previous = self._seen.get(key, _UNSEEN)
            self._seen[key] = generation
        return event_type == "ADDED" or previous is _UNSEEN or previous != generation


_UNSEEN = object()


def to_reconcile_key(event_type: str, obj: dict[str, Any]) -> Iterable[Hashable]:
    return (RECONCILE_KEY,)


def runtime_errors(obj: Mapping[str, Any]) -> list[str]:
    """Why the overlay cannot be used, as ``path: message`` lines (empty when usable)."""
    try:
        return [str(e) for e in validate_nodeoverlay(obj)]
    except Exception as e:  # a validator bug must not take the controller down
        log.exception("validating nodeoverlay %s failed", name_of(obj))
        return [f"validation could not complete: {e}"]


class Verdict(Enum):
    VALID = "valid"
    RUNTIME_VALIDATION = REASON_RUNTIME_VALIDATION
    CONFLICT = REASON_CONFLICT


@frozen
class _Outcome:
    verdict: Verdict
    message: str = ""


class NodeOverlayController:
    """The reconciler; ``provider`` is the cloud provider *without* the NodeOverlay step."""

    def __init__(self, ctx: ControllerContext, provider: Any, store: InstanceTypeStore) -> None:
        self.ctx = ctx
        self.provider = provider
        self.store = store

    # ------------------------------------------------------------------ reading

    def _nodepools(self) -> tuple[list[NodePoolInstanceTypes], list[str]]:
        """The managed pools whose instance types could be read, and why others could not."""
        pools: list[NodePoolInstanceTypes] = []
        failures: list[str] = []
        for raw in self.ctx.kube.list(NODEPOOLS).items:
            name = name_of(raw)
            if not name or not is_managed_nodepool(raw, self.provider):
                continue
            try:
                model = parse_nodepool(raw)
            except APIError as e:
                failures.append(f"nodepool {name}: {e}")
                continue
            try:
                its = list(self.provider.get_instance_types(model))
            except Exception as e:
                failures.append(f"listing instance types for nodepool {name!r}: {e}")
                continue
            pools.append(NodePoolInstanceTypes(name, dict(model.spec.template.labels), its))
        return pools, failures

    def _overlays(
        self, items: Sequence[dict[str, Any]]
    ) -> tuple[list[Overlay], dict[str, _Outcome]]:
        """Runtime-valid overlays, and the verdict of each invalid one by name."""
        valid: list[Overlay] = []
        invalid: dict[str, _Outcome] = {}
        for raw in items:
            name = name_of(raw)
            errors = runtime_errors(raw)
            overlay: Overlay | None = None
            if not errors:
                try:
                    overlay = Overlay.from_model(NodeOverlay.from_dict(raw))
                except (APIError, ValueError) as e:
                    errors = [str(e)]
            if overlay is None:
                message = "; ".join(errors)
                log.warning("nodeoverlay %s is invalid and not applied: %s", name, message)
                invalid[name] = _Outcome(Verdict.RUNTIME_VALIDATION, message)
                continue
            valid.append(overlay)
        return valid, invalid

    # ------------------------------------------------------------------ reconcile

    def reconcile(self, key: ObjectKey | None = None) -> Result:
        items = [dict(o) for o in self.ctx.kube.list(NODEOVERLAYS).items]
        pools, failures = self._nodepools()
        overlays, outcomes = self._overlays(items)
        evaluation = evaluate(overlays, pools)
        for name in evaluation.applied:
            outcomes[name] = _Outcome(Verdict.VALID)
        for name in evaluation.conflicts:
            log.warning("nodeoverlay %s is not applied: %s", name, CONFLICT_MESSAGE)
            outcomes[name] = _Outcome(Verdict.CONFLICT, CONFLICT_MESSAGE)
        if not self._write_statuses(items, outcomes):
            return Result(requeue=True)
        self.store.update(evaluation.snapshot)
        cluster_of(self.ctx).mark_unconsolidated()
        if failures:
            # The healthy pools are served already; retry the others with back-off rather
            # than wait six hours (a NodeClass that appears later, a transient API error).
            log.warning(
                "nodeoverlay: %d nodepool(s) not evaluated, retrying: %s",
                len(failures),
                "; ".join(failures),
            )
            return Result(requeue=True)
        return Result.after(REQUEUE_SECONDS)

    def _write_statuses(
        self, items: Sequence[dict[str, Any]], outcomes: Mapping[str, _Outcome]
    ) -> bool:
        """Set ``ValidationSucceeded`` on every overlay; False when a write met a conflict or
        a vanished overlay (the evaluation is then stale and must run again)."""
        for stored in items:
            name = name_of(stored)
            outcome = outcomes.get(name, _Outcome(Verdict.VALID))
            updated = copy.deepcopy(stored)
            conditions = ConditionSet(
                updated,
                self.ctx.clock,
                root=CONDITION_READY,
                dependents=NODEOVERLAY_READY_DEPENDENTS,
            )
            if outcome.verdict is Verdict.VALID:
                conditions.set_true(CONDITION_VALIDATION_SUCCEEDED)
            else:
                conditions.set_false(
                    CONDITION_VALIDATION_SUCCEEDED, outcome.verdict.value, outcome.message
                )
            patch = conditions.status_patch()
            if patch is None:
                continue
            try:
                self.ctx.kube.patch(NODEOVERLAYS, name, patch, subresource="status")
            except (Conflict, NotFound):
                return False
        return True
