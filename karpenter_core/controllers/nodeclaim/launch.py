"""Launch: turn a NodeClaim into an instance through ``CloudProvider.create``.

What each outcome does (spec: apis-and-cloudprovider §7, operator-and-lifecycle §5.2):

* success: the provider's labels go *under* the NodeClaim's (the user's win), its
  annotations over them; providerID, imageID, capacity and allocatable are copied;
  ``Launched=True``.
* ``InsufficientCapacityError``: Warning event ``InsufficientCapacityError``, the NodeClaim
  is deleted (its pods are provisioned again) and ``nodeclaims_disrupted_total`` counts
  ``insufficient_capacity``.
* ``NodeClassNotReadyError``: the NodeClaim is deleted, reason ``nodeclass_not_ready``.
* ``CreateError``: ``Launched=Unknown`` with its reason and message, and the error is
  returned so the key backs off and retries.
* anything else: ``Launched=Unknown``/``LaunchFailed`` (message cut to 300 characters),
  retried the same way.

Never launching twice. A create result is remembered by NodeClaim UID for an hour, so a
launch whose status write failed is completed from memory instead of launching again.
That memory dies with the process, so before creating, a NodeClaim that may have been
launched already — it existed before this process started, or an earlier create of it
failed — is looked up among the provider's instances (``list()``) and adopted if found.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import Any

from karpenter_core import metrics
from karpenter_core.apis import labels as wk
from karpenter_core.apis.accessors import labels_of
from karpenter_core.apis.conditions import ConditionSet
from karpenter_core.apis.v1 import CONDITION_LAUNCHED, APIError, NodeClaim
from karpenter_core.cloudprovider.errors import (
    CreateError,
    find_error,
    is_insufficient_capacity,
    is_node_class_not_ready,
)
from karpenter_core.controllers.nodeclaim.utils import (
    NODECLAIMS,
    instance_matches,
    termination_mode,
)
from karpenter_core.kube.client import NotFound
from karpenter_core.runtime.clock import parse_time
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import Result

__all__ = ["CACHE_TTL", "MAX_MESSAGE", "Launch", "LaunchError", "truncate_message"]

log = logging.getLogger("karpenter.nodeclaim.lifecycle")

CACHE_TTL = 3600.0
MAX_MESSAGE = 300
EVENT_INSUFFICIENT_CAPACITY = "InsufficientCapacityError"
REASON_LAUNCH_FAILED = "LaunchFailed"


class LaunchError(RuntimeError):
    """A launch that failed and will be retried with back-off."""


def truncate_message(message: str) -> str:
    """Messages over 300 characters are cut, with ``...`` appended (upstream's rule)."""
    if len(message) < MAX_MESSAGE:
        return message
    return message[:MAX_MESSAGE] + "..."


def disrupted_labels(nodeclaim: dict[str, Any], reason: str) -> dict[str, str]:
    """The label set of ``nodeclaims_disrupted_total`` / ``pods_disruption_initiated_total``."""
    lbl = labels_of(nodeclaim)
    return {
        metrics.LABEL_REASON: reason,
        metrics.LABEL_NODEPOOL: lbl.get(wk.NODEPOOL_LABEL_KEY, ""),
        metrics.LABEL_CAPACITY_TYPE: lbl.get(wk.CAPACITY_TYPE_LABEL_KEY, ""),
        metrics.LABEL_CONSOLIDATION_POLICY: "",
        metrics.LABEL_TERMINATION_MODE: termination_mode(nodeclaim),
    }


def populate_details(nodeclaim: dict[str, Any], created: dict[str, Any]) -> None:
    """Copy what the provider resolved onto the NodeClaim (in place)."""
    meta = nodeclaim.setdefault("metadata", {})
    cmeta = created.get("metadata") or {}
    meta["labels"] = {**(cmeta.get("labels") or {}), **(meta.get("labels") or {})}
    merged_ann = {**(meta.get("annotations") or {}), **(cmeta.get("annotations") or {})}
    if merged_ann:
        meta["annotations"] = merged_ann
    status = nodeclaim.setdefault("status", {})
    cstatus = created.get("status") or {}
    for key in ("providerID", "imageID", "allocatable", "capacity"):
        value = cstatus.get(key)
        if value in (None, "", {}):
            status.pop(key, None)
        else:
            status[key] = value


class Launch:
    """The launch step of ``nodeclaim.lifecycle``; keeps the create-result cache."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.started_at: datetime = ctx.clock.now()
        self._cache: dict[str, tuple[float, dict[str, Any]]] = {}
        self._suspect: set[str] = set()
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ cache

    def _cached(self, uid: str) -> dict[str, Any] | None:
        with self._lock:
            entry = self._cache.get(uid)
            if entry is None:
                return None
            expires, created = entry
            if self.ctx.clock.monotonic() >= expires:
                del self._cache[uid]
                return None
            return created

    def _remember(self, uid: str, created: dict[str, Any]) -> None:
        now = self.ctx.clock.monotonic()
        with self._lock:
            if len(self._cache) > 1024:
                self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
            self._cache[uid] = (now + CACHE_TTL, created)

    def forget(self, uid: str) -> None:
        with self._lock:
            self._cache.pop(uid, None)
            self._suspect.discard(uid)

    # ------------------------------------------------------------------ reconcile

    def reconcile(self, nodeclaim: dict[str, Any], conds: ConditionSet) -> Result:
        uid = str((nodeclaim.get("metadata") or {}).get("uid") or "")
        if not conds.is_unknown(CONDITION_LAUNCHED):
            conds.refresh(CONDITION_LAUNCHED)
            if conds.is_true(CONDITION_LAUNCHED):
                self.forget(uid)
            return Result()
        created = self._cached(uid) if uid else None
        if created is None:
            created = self._adopt(nodeclaim, uid)
        if created is None:
            created = self._create(nodeclaim, conds, uid)
            if created is None:
                return Result()
        if uid:
            self._remember(uid, created)
        populate_details(nodeclaim, created)
        conds.set_true(CONDITION_LAUNCHED)
        return Result()

    def _may_have_launched(self, nodeclaim: dict[str, Any], uid: str) -> bool:
        if uid in self._suspect:
            return True
        created = (nodeclaim.get("metadata") or {}).get("creationTimestamp")
        if not created:
            return True
        try:
            # creationTimestamp has second precision: a NodeClaim stamped with an earlier
            # second than our start may have been launched by a previous process.
            return parse_time(str(created)) < self.started_at.replace(microsecond=0)
        except ValueError:
            return True

    def _adopt(self, nodeclaim: dict[str, Any], uid: str) -> dict[str, Any] | None:
        """An existing instance of this NodeClaim, when an earlier launch may have made one."""
        if not self._may_have_launched(nodeclaim, uid):
            return None
        try:
            instances = self.ctx.cloud_provider.list()
        except NotImplementedError:
            return None
        for inst in instances:
            if getattr(inst.metadata, "deletion_timestamp", None):
                continue
            if instance_matches(inst, nodeclaim):
                log.info(
                    "found the instance %s already launched for nodeclaim %s",
                    inst.provider_id,
                    (nodeclaim.get("metadata") or {}).get("name"),
                )
                return inst.to_dict()
        return None

    def _create(
        self, nodeclaim: dict[str, Any], conds: ConditionSet, uid: str
    ) -> dict[str, Any] | None:
        name = str((nodeclaim.get("metadata") or {}).get("name") or "")
        try:
            model = NodeClaim.from_dict(nodeclaim)
        except APIError as err:
            conds.set_unknown_with_reason(
                CONDITION_LAUNCHED,
                REASON_LAUNCH_FAILED,
                truncate_message(f"invalid nodeclaim: {err}"),
            )
            raise LaunchError(f"launching nodeclaim {name}: invalid nodeclaim: {err}") from err
        if uid:
            # From here on an instance may exist even if create() raises (a timeout, say):
            # later attempts look for it before creating another.
            self._suspect.add(uid)
        try:
            result = self.ctx.cloud_provider.create(model)
        except Exception as err:
            return self._failed(nodeclaim, conds, err)
        if uid:
            self._suspect.discard(uid)
        created = result.to_dict()
        log.info(
            "launched nodeclaim %s provider-id=%s instance-type=%s zone=%s capacity-type=%s",
            name,
            (created.get("status") or {}).get("providerID"),
            labels_of(created).get(wk.LABEL_INSTANCE_TYPE),
            labels_of(created).get(wk.LABEL_TOPOLOGY_ZONE),
            labels_of(created).get(wk.CAPACITY_TYPE_LABEL_KEY),
        )
        return created

    def _failed(
        self, nodeclaim: dict[str, Any], conds: ConditionSet, err: Exception
    ) -> dict[str, Any] | None:
        name = str((nodeclaim.get("metadata") or {}).get("name") or "")
        uid = str((nodeclaim.get("metadata") or {}).get("uid") or "")
        if is_insufficient_capacity(err):
            self._suspect.discard(uid)
            self.ctx.recorder.warning(
                nodeclaim,
                EVENT_INSUFFICIENT_CAPACITY,
                f"NodeClaim {name} event: {truncate_message(str(err))}",
                uid,
            )
            log.error("failed launching nodeclaim %s: %s", name, err)
            self._delete(nodeclaim, metrics.REASON_INSUFFICIENT_CAPACITY)
            return None
        if is_node_class_not_ready(err):
            self._suspect.discard(uid)
            log.error("failed launching nodeclaim %s: %s", name, err)
            self._delete(nodeclaim, metrics.REASON_NODECLASS_NOT_READY)
            return None
        create_error = find_error(err, CreateError)
        if create_error is not None:
            conds.set_unknown_with_reason(
                CONDITION_LAUNCHED, create_error.condition_reason, create_error.condition_message
            )
        else:
            conds.set_unknown_with_reason(
                CONDITION_LAUNCHED, REASON_LAUNCH_FAILED, truncate_message(str(err))
            )
        raise LaunchError(f"launching nodeclaim {name}, {err}") from err

    def _delete(self, nodeclaim: dict[str, Any], reason: str) -> None:
        name = str((nodeclaim.get("metadata") or {}).get("name") or "")
        try:
            self.ctx.kube.delete(NODECLAIMS, name)
        except NotFound:
            return
        metrics.NODECLAIMS_DISRUPTED_TOTAL.labels(**disrupted_labels(nodeclaim, reason)).inc()
