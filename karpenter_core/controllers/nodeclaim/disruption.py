"""``nodeclaim.disruption``: the ``Drifted`` and ``Consolidatable`` markers.

Spec: operator-and-lifecycle §5.7. Disruption decides *what* to replace; these markers say
*which* NodeClaims are candidates, so the disruption loop does not recompute them.

Drift (every 5 minutes; cleared while the NodeClaim is not launched). The first of:

* ``NodePoolDrifted`` — the NodePool and the NodeClaim both carry the template hash and
  its version, the versions agree and the hashes do not (static fields changed);
* ``RequirementsDrifted`` — the NodeClaim's labels no longer satisfy the NodePool's
  requirements;
* ``InstanceTypeNotFound`` — from an hour after creation, and then at most every 30
  minutes after a successful check: the instance type is gone from the provider's list,
  or none of its offerings matches the NodeClaim (a reserved NodeClaim may also match
  on-demand, since it can be demoted);
* the provider's own ``is_drifted`` reason.

Consolidatable (dynamic NodePools only): cleared when consolidation is off
(``consolidateAfter: Never``) or the NodeClaim is not initialized; otherwise True once
``consolidateAfter`` has passed since the last pod event (or since initialization when no
pod came or went), re-checked at that moment.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable, Iterable
from datetime import datetime
from typing import Any

from karpenter_core.apis import labels as wk
from karpenter_core.apis.accessors import annotations_of, labels_of
from karpenter_core.apis.conditions import ConditionSet
from karpenter_core.apis.durations import NEVER, parse_go_duration
from karpenter_core.apis.v1 import (
    CONDITION_CONSOLIDATABLE,
    CONDITION_DRIFTED,
    CONDITION_INITIALIZED,
    CONDITION_LAUNCHED,
    APIError,
)
from karpenter_core.cloudprovider.errors import is_nodeclaim_not_found, is_unevaluated_nodepool
from karpenter_core.cloudprovider.protocol import NodeClassKind
from karpenter_core.cloudprovider.types import (
    InstanceType,
    Offerings,
    reservation_id_label,
    reserved_capacity_labels,
)
from karpenter_core.controllers.nodeclaim.lifecycle import min_result
from karpenter_core.controllers.nodeclaim.utils import (
    deletion_timestamp,
    is_managed,
    status_patch,
)
from karpenter_core.kube.client import Conflict, NotFound, deep_copy, shared_get
from karpenter_core.provisioning.nodepools import parse_nodepool
from karpenter_core.runtime.clock import parse_time
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import ObjectKey, Result, Watch
from karpenter_core.scheduling.requirements import IN, Requirement, Requirements
from karpenter_core.state.cluster import parse_nodeclaim
from karpenter_core.utils.stamps import Stamps

__all__ = [
    "INSTANCE_TYPE_NOT_FOUND",
    "NAME",
    "NODEPOOL_DRIFTED",
    "REQUIREMENTS_DRIFTED",
    "Disruption",
    "instance_type_not_found",
    "requirements_drifted",
    "static_fields_drifted",
]

log = logging.getLogger("karpenter.nodeclaim.disruption")

NAME = "nodeclaim.disruption"
NODEPOOL_DRIFTED = "NodePoolDrifted"
REQUIREMENTS_DRIFTED = "RequirementsDrifted"
INSTANCE_TYPE_NOT_FOUND = "InstanceTypeNotFound"
DRIFT_REQUEUE = 300.0
INSTANCE_TYPE_CHECK_AFTER = 3600.0
INSTANCE_TYPE_CHECK_TTL = 1800.0
NODECLAIMS = "nodeclaims"
NODEPOOLS = "nodepools"


def static_fields_drifted(nodepool: dict[str, Any], nodeclaim: dict[str, Any]) -> str:
    """``NodePoolDrifted`` when both carry a hash of the same version and the hashes differ."""
    np_ann, nc_ann = annotations_of(nodepool), annotations_of(nodeclaim)
    keys = (wk.NODEPOOL_HASH_ANNOTATION_KEY, wk.NODEPOOL_HASH_VERSION_ANNOTATION_KEY)
    if not all(k in np_ann and k in nc_ann for k in keys):
        return ""
    if (
        np_ann[wk.NODEPOOL_HASH_VERSION_ANNOTATION_KEY]
        != nc_ann[wk.NODEPOOL_HASH_VERSION_ANNOTATION_KEY]
    ):
        return ""
    if np_ann[wk.NODEPOOL_HASH_ANNOTATION_KEY] != nc_ann[wk.NODEPOOL_HASH_ANNOTATION_KEY]:
        return NODEPOOL_DRIFTED
    return ""


def _template_requirements(nodepool: dict[str, Any]) -> Any:
    """The NodePool template's ``requirements`` as stored (None when unset)."""
    template = ((nodepool.get("spec") or {}).get("template") or {}).get("spec") or {}
    return template.get("requirements")


def requirements_drifted(nodepool: dict[str, Any], nodeclaim: dict[str, Any]) -> str:
    """``RequirementsDrifted`` when the NodeClaim's labels violate a NodePool requirement."""
    try:
        pool_reqs = Requirements.from_node_selector_requirements(
            _template_requirements(nodepool) or []
        )
    except ValueError as err:
        log.error(
            "nodepool %s: cannot read its requirements: %s",
            (nodepool.get("metadata") or {}).get("name"),
            err,
        )
        return ""
    if Requirements.from_labels(labels_of(nodeclaim)).compatible(pool_reqs) is not None:
        return REQUIREMENTS_DRIFTED
    return ""


def instance_type_not_found(
    instance_types: Iterable[InstanceType], nodeclaim: dict[str, Any]
) -> str:
    """``InstanceTypeNotFound`` when the type is not offered any more, or no offering of it
    matches the NodeClaim."""
    nc_labels = labels_of(nodeclaim)
    name = nc_labels.get(wk.LABEL_INSTANCE_TYPE)
    it = next((i for i in instance_types if i.name == name), None)
    if it is None:
        return INSTANCE_TYPE_NOT_FOUND
    reqs = Requirements.from_labels(nc_labels)
    if nc_labels.get(wk.CAPACITY_TYPE_LABEL_KEY) == wk.CAPACITY_TYPE_RESERVED:
        reqs[wk.CAPACITY_TYPE_LABEL_KEY] = Requirement.new(
            wk.CAPACITY_TYPE_LABEL_KEY, IN, [wk.CAPACITY_TYPE_RESERVED, wk.CAPACITY_TYPE_ON_DEMAND]
        )
        for key in {reservation_id_label(), *reserved_capacity_labels()} - {""}:
            if reqs.has(key):
                del reqs[key]
    if not Offerings(it.offerings).has_compatible(reqs):
        return INSTANCE_TYPE_NOT_FOUND
    return ""


def _seconds(value: Any) -> float | None:
    """A NodePool duration in seconds; None for ``Never``."""
    text = "0s" if value is None or value == "" else str(value)
    if text == NEVER:
        return None
    return parse_go_duration(text) / 1e9


def _node_class_of(obj: dict[str, Any]) -> tuple[str, str, str] | None:
    ref = (obj.get("spec") or {}).get("nodeClassRef") or {}
    if not isinstance(ref, dict) or not ref.get("name"):
        return None
    return (str(ref.get("group") or ""), str(ref.get("kind") or ""), str(ref["name"]))


class Disruption:
    """The keyed reconciler behind ``nodeclaim.disruption``."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self._checked = Stamps(INSTANCE_TYPE_CHECK_TTL)
        self._lock = threading.Lock()
        self._by_pool: dict[str, set[ObjectKey]] = {}
        self._pool_of: dict[ObjectKey, str] = {}
        self._by_class: dict[tuple[str, str, str], set[ObjectKey]] = {}
        self._class_of: dict[ObjectKey, tuple[str, str, str]] = {}
        # per NodeClaim: the NodePool uid and requirements and the labels its requirements
        # drift was last judged on, and the verdict (every NodeClaim is re-checked every few
        # minutes and on each pod event of its node; the inputs seldom change)
        self._requirements_verdicts: dict[ObjectKey, tuple[str, Any, Any, str]] = {}
        # per NodePool: what of it the markers read, as last mapped (see nodepool_mapper)
        self._pool_inputs: dict[str, tuple[Any, ...]] = {}

    # ------------------------------------------------------------------ watches

    def nodeclaim_mapper(self, event_type: str, obj: dict[str, Any]) -> Iterable[Hashable]:
        key = ObjectKey("", str((obj.get("metadata") or {}).get("name") or ""))
        pool = "" if event_type == "DELETED" else labels_of(obj).get(wk.NODEPOOL_LABEL_KEY, "")
        node_class = None if event_type == "DELETED" else _node_class_of(obj)
        with self._lock:
            if event_type == "DELETED":
                self._requirements_verdicts.pop(key, None)
            old = self._pool_of.pop(key, "")
            if old:
                self._by_pool.get(old, set()).discard(key)
            if pool:
                self._pool_of[key] = pool
                self._by_pool.setdefault(pool, set()).add(key)
            old_class = self._class_of.pop(key, None)
            if old_class is not None:
                self._by_class.get(old_class, set()).discard(key)
            if node_class is not None:
                self._class_of[key] = node_class
                self._by_class.setdefault(node_class, set()).add(key)
        return (key,)

    def nodeclass_mapper(
        self, kind: NodeClassKind
    ) -> Callable[[str, dict[str, Any]], Iterable[Hashable]]:
        """NodeClass events to the NodeClaims naming that NodeClass: a NodeClass change
        (new security groups, AMIs, a new hash) is the provider's drift signal, so its
        NodeClaims are checked now rather than at their next periodic requeue."""

        def mapper(event_type: str, obj: dict[str, Any]) -> Iterable[Hashable]:
            name = str((obj.get("metadata") or {}).get("name") or "")
            with self._lock:
                return sorted(self._by_class.get((kind.group, kind.kind, name), ()))

        return mapper

    def nodepool_mapper(self, event_type: str, obj: dict[str, Any]) -> Iterable[Hashable]:
        """A NodePool event to its NodeClaims, unless only the NodePool's status changed.

        The markers read the NodePool's spec, labels and annotations, never its status,
        which the counter rewrites whenever a node comes or goes: re-checking every
        NodeClaim of the pool for each of those (upstream's handler does) was most of this
        controller's work in a large cluster's scale-in, and changed no answer (the
        time-driven checks have their own requeues)."""
        meta = obj.get("metadata") or {}
        pool = str(meta.get("name") or "")
        inputs = (meta.get("uid"), meta.get("labels"), meta.get("annotations"), obj.get("spec"))
        with self._lock:
            if event_type == "DELETED":
                self._pool_inputs.pop(pool, None)
            elif self._pool_inputs.get(pool) == inputs:
                return ()
            else:
                self._pool_inputs[pool] = tuple(deep_copy(part) for part in inputs)
            return sorted(self._by_pool.get(pool, ()))

    def watches(self) -> list[Watch]:
        def managed(event_type: str, obj: dict[str, Any]) -> bool:
            return is_managed(obj, self.ctx.cloud_provider)

        # nodepool.common imports this package: resolved here, not at import time
        from karpenter_core.controllers.nodepool.common import nodeclass_resource

        watches = [
            Watch(NODECLAIMS, mapper=self.nodeclaim_mapper, predicate=managed),
            Watch(NODEPOOLS, mapper=self.nodepool_mapper),
        ]
        try:
            kinds = list(self.ctx.cloud_provider.supported_node_classes())
        except Exception as e:  # a provider that cannot say: periodic checks still run
            log.warning("not watching NodeClasses for drift: %s: %s", type(e).__name__, e)
            kinds = []
        for kind in kinds:
            rt = nodeclass_resource(kind)
            if rt is not None:
                watches.append(Watch(rt, mapper=self.nodeclass_mapper(kind)))
        return watches

    # ------------------------------------------------------------------ reconcile

    def reconcile(self, key: ObjectKey) -> Result:
        # read uncopied where the client shares objects (this runs on each pod event of
        # the node, and for every NodeClaim every few minutes); only the NodeClaim's
        # working copy is changed, and the stored one is what it is compared with
        read = shared_get(self.ctx.kube)
        try:
            stored: dict[str, Any] = read(NODECLAIMS, key.name)
        except NotFound:
            return Result()
        if not is_managed(stored, self.ctx.cloud_provider) or deletion_timestamp(stored):
            return Result()
        pool_name = labels_of(stored).get(wk.NODEPOOL_LABEL_KEY)
        if not pool_name:
            return Result()
        try:
            nodepool: dict[str, Any] = read(NODEPOOLS, pool_name)
        except NotFound:
            return Result()
        # the markers write status conditions only: the rest stays shared with the stored
        # object (a NodeClaim's spec is most of it)
        nodeclaim = dict(stored)
        if "status" in stored:
            nodeclaim["status"] = deep_copy(stored["status"])
        conds = ConditionSet(nodeclaim, self.ctx.clock)
        results = [self._drift(nodepool, nodeclaim, conds, key)]
        if (nodepool.get("spec") or {}).get("replicas") is None:
            results.append(self._consolidation(nodepool, nodeclaim, conds))
        if nodeclaim != stored:
            patch = status_patch(stored, nodeclaim)
            try:
                self.ctx.kube.patch(NODECLAIMS, key.name, patch, subresource="status")
            except Conflict:
                return Result(requeue=True)
            except NotFound:
                return Result()
        return min_result(results)

    # ------------------------------------------------------------------ drift

    def _drift(
        self,
        nodepool: dict[str, Any],
        nodeclaim: dict[str, Any],
        conds: ConditionSet,
        key: ObjectKey,
    ) -> Result:
        had = conds.get(CONDITION_DRIFTED) is not None
        if not conds.is_true(CONDITION_LAUNCHED):
            conds.clear(CONDITION_DRIFTED)
            return Result()
        reason = self._drift_reason(nodepool, nodeclaim, key)
        if not reason:
            if had:
                conds.clear(CONDITION_DRIFTED)
                log.debug(
                    "nodeclaim %s is no longer drifted",
                    (nodeclaim.get("metadata") or {}).get("name"),
                )
            return Result(requeue_after=DRIFT_REQUEUE)
        conds.set_true(CONDITION_DRIFTED, reason, reason)
        if not had:
            log.debug(
                "marking nodeclaim %s drifted: %s",
                (nodeclaim.get("metadata") or {}).get("name"),
                reason,
            )
        return Result(requeue_after=DRIFT_REQUEUE)

    def _requirements_drifted(
        self, nodepool: dict[str, Any], nodeclaim: dict[str, Any], key: ObjectKey
    ) -> str:
        """:func:`requirements_drifted`, remembered per NodeClaim while the NodePool (its
        uid and template requirements, not its version: the counter rewrites its status
        whenever a node comes or goes) and the NodeClaim's labels stay the same."""
        uid = str((nodepool.get("metadata") or {}).get("uid") or "")
        requirements = _template_requirements(nodepool)
        labels = labels_of(nodeclaim)
        with self._lock:
            kept = self._requirements_verdicts.get(key)
        if kept is not None and kept[:3] == (uid, requirements, labels):
            return kept[3]
        reason = requirements_drifted(nodepool, nodeclaim)
        with self._lock:
            if key in self._pool_of:  # not for a NodeClaim already gone
                verdict = (uid, deep_copy(requirements), dict(labels), reason)
                self._requirements_verdicts[key] = verdict
        return reason

    def _drift_reason(
        self, nodepool: dict[str, Any], nodeclaim: dict[str, Any], key: ObjectKey
    ) -> str:
        reason = static_fields_drifted(nodepool, nodeclaim) or self._requirements_drifted(
            nodepool, nodeclaim, key
        )
        if reason:
            return reason
        meta = nodeclaim.get("metadata") or {}
        uid = str(meta.get("uid") or meta.get("name") or "")
        now = self.ctx.clock.monotonic()
        checked = self._checked.get(uid)
        if checked is None or now - checked >= INSTANCE_TYPE_CHECK_TTL:
            age = self._age(meta.get("creationTimestamp"))
            if age is not None and age > INSTANCE_TYPE_CHECK_AFTER:
                try:
                    model = parse_nodepool(nodepool)
                except APIError as err:
                    log.error("nodepool %s: %s", (nodepool.get("metadata") or {}).get("name"), err)
                    return ""
                try:
                    its = self.ctx.cloud_provider.get_instance_types(model)
                except Exception as err:  # checked again next pass: not recorded as checked
                    level = logging.DEBUG if is_unevaluated_nodepool(err) else logging.WARNING
                    log.log(level, "nodepool %s: instance types unavailable: %s", model.name, err)
                    return ""
                reason = instance_type_not_found(its, nodeclaim)
                if reason:
                    return reason
                self._checked.stamp(uid, now)
        try:
            # parsed once per stored version (NodeClaims are re-checked every 5 minutes)
            return self.ctx.cloud_provider.is_drifted(parse_nodeclaim(nodeclaim)) or ""
        except APIError as err:
            log.error("nodeclaim %s: %s", meta.get("name"), err)
            return ""
        except Exception as err:
            if is_nodeclaim_not_found(err):
                return ""
            raise

    def _age(self, created: Any) -> float | None:
        if not created:
            return None
        try:
            return (self.ctx.clock.now() - parse_time(str(created))).total_seconds()
        except ValueError:
            return None

    # ------------------------------------------------------------------ consolidatable

    def _consolidation(
        self, nodepool: dict[str, Any], nodeclaim: dict[str, Any], conds: ConditionSet
    ) -> Result:
        disruption = (nodepool.get("spec") or {}).get("disruption") or {}
        try:
            after = _seconds(disruption.get("consolidateAfter"))
        except ValueError as err:
            log.error(
                "nodepool %s: consolidateAfter %r: %s",
                (nodepool.get("metadata") or {}).get("name"),
                disruption.get("consolidateAfter"),
                err,
            )
            return Result()
        if after is None:
            conds.clear(CONDITION_CONSOLIDATABLE)
            return Result()
        initialized = conds.get(CONDITION_INITIALIZED)
        if initialized is None or initialized.get("status") != "True":
            conds.clear(CONDITION_CONSOLIDATABLE)
            return Result()
        last_event = (nodeclaim.get("status") or {}).get("lastPodEventTime")
        ref = self._time(last_event) or self._time(initialized.get("lastTransitionTime"))
        if after > 0 and ref is not None:
            remaining = after - (self.ctx.clock.now() - ref).total_seconds()
            if remaining > 0:
                conds.clear(CONDITION_CONSOLIDATABLE)
                return Result(requeue_after=remaining)
        conds.set_true(CONDITION_CONSOLIDATABLE)
        return Result()

    @staticmethod
    def _time(value: Any) -> datetime | None:
        if not value:
            return None
        try:
            return parse_time(str(value))
        except ValueError:
            return None
