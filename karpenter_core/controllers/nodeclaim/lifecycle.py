"""``nodeclaim.lifecycle``: a NodeClaim from launch to the removal of its finalizer.

Spec: operator-and-lifecycle §5.1-5.6. For a live NodeClaim the termination finalizer is
added *before* anything is launched (an instance must never exist without the finalizer
that cleans it up); then Launch, Registration, Initialization and Liveness run in turn on
one working copy, and whatever changed is written back — metadata first, then status.
Errors from one step do not stop the others; the reconcile then fails as a whole and is
retried with back-off, or asks for the soonest requeue any step wanted.

A deleting NodeClaim is finalized instead:

1. without the finalizer, there is nothing to do;
2. with ``spec.terminationGracePeriod``, annotate
   ``karpenter.sh/nodeclaim-termination-timestamp`` = deletion time + grace period
   (``TerminationGracePeriodExpiring`` event), once;
3. when registered, delete its Nodes and wait until they are gone (node termination
   drains them and removes their finalizer);
4. with a providerID, call ``CloudProvider.delete`` every 5 s until it reports
   ``NodeClaimNotFoundError``, with ``InstanceTerminating=True`` meanwhile;
5. remove the finalizer; record ``nodeclaims_terminated_total`` and the durations.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Hashable, Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from karpenter_core import metrics
from karpenter_core.apis import labels as wk
from karpenter_core.apis.accessors import labels_of
from karpenter_core.apis.conditions import ConditionSet, nodeclaim_conditions
from karpenter_core.apis.copying import deep_copy
from karpenter_core.apis.durations import parse_go_duration
from karpenter_core.apis.v1 import CONDITION_INSTANCE_TERMINATING, APIError, NodeClaim
from karpenter_core.cloudprovider.errors import is_nodeclaim_not_found
from karpenter_core.cloudprovider.protocol import NodeLifecycleHook
from karpenter_core.controllers.nodeclaim.initialization import Initialization
from karpenter_core.controllers.nodeclaim.launch import Launch
from karpenter_core.controllers.nodeclaim.liveness import Liveness
from karpenter_core.controllers.nodeclaim.nodepoolhealth import NodePoolHealth
from karpenter_core.controllers.nodeclaim.registration import Registration
from karpenter_core.controllers.nodeclaim.utils import (
    NODECLAIMS,
    NODES,
    NodeIndex,
    OwnWrites,
    all_nodes_for_nodeclaim,
    deletion_timestamp,
    is_managed,
    managed_nodeclaim,
    merge_patch,
    provider_id,
    status_patch,
)
from karpenter_core.kube.client import Conflict, NotFound
from karpenter_core.runtime.clock import format_time, parse_time
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import ObjectKey, Result, Watch

__all__ = ["DELETE_RETRY", "NAME", "NodeClaimLifecycle", "min_result"]

log = logging.getLogger("karpenter.nodeclaim.lifecycle")

NAME = "nodeclaim.lifecycle"
DELETE_RETRY = 5.0
EVENT_TGP_EXPIRING = "TerminationGracePeriodExpiring"


class ReconcileErrors(RuntimeError):
    """Several steps of one reconcile failed."""

    def __init__(self, errors: Sequence[BaseException]) -> None:
        super().__init__("; ".join(str(e) for e in errors))
        self.errors = tuple(errors)


def min_result(results: Sequence[Result]) -> Result:
    """The soonest positive ``requeue_after`` of ``results``, and ``requeue`` if any asked."""
    after = 0.0
    requeue = False
    for r in results:
        if r.requeue_after > 0 and (after == 0 or r.requeue_after < after):
            after = r.requeue_after
        requeue = requeue or r.requeue
    return Result(requeue=requeue, requeue_after=after)


def _split(obj: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    body = {k: v for k, v in obj.items() if k != "status"}
    status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
    return body, status or {}


class NodeClaimLifecycle:
    """The keyed reconciler behind ``nodeclaim.lifecycle``."""

    def __init__(
        self,
        ctx: ControllerContext,
        health: NodePoolHealth,
        hooks: Sequence[NodeLifecycleHook] = (),
    ) -> None:
        self.ctx = ctx
        self.index = NodeIndex()
        self.launch = Launch(ctx)
        self.registration = Registration(ctx, health, hooks, self.index)
        self.initialization = Initialization(ctx, self.index)
        self.liveness = Liveness(ctx, health)
        self.own_writes = OwnWrites()

    def _patch(
        self, name: str, patch: dict[str, Any], subresource: str | None = None
    ) -> dict[str, Any]:
        result = self.ctx.kube.patch(NODECLAIMS, name, patch, subresource=subresource)
        self.own_writes.record(result)
        return result

    def _set_finalizers(
        self, name: str, meta: Mapping[str, Any], finalizers: list[str]
    ) -> dict[str, Any]:
        """Write the whole finalizer list, conditional on the resourceVersion read, so a
        concurrent change to the list is a Conflict rather than lost."""
        body = {
            "metadata": {"finalizers": finalizers, "resourceVersion": meta.get("resourceVersion")}
        }
        return self._patch(name, body)

    def nodeclaim_mapper(self, event_type: str, obj: dict[str, Any]) -> Iterable[Hashable]:
        """The NodeClaim watch mapper: keep the index current, skip our own writes' echoes
        unless the echo is how the index learns a providerID whose Node it already knows.

        Registration looks the Node up in the index; when the Node's watch event comes
        after the registration step ran (in the launch's own reconcile, or after a broken
        watch) but before the NodeClaim's providerID reached the index, that event maps to
        no NodeClaim, and the providerID then arrives in the echo of our own write. Skipped,
        nothing woke the NodeClaim again before the liveness timeout (a chaos test's
        network faults left NodeClaims Launched, their Nodes Ready and running pods,
        but never Registered)."""
        node_known = self.index.observe(event_type, obj)
        echo = event_type == "MODIFIED" and self.own_writes.consume(obj)
        if echo and not node_known:
            return ()
        return (ObjectKey("", str((obj.get("metadata") or {}).get("name") or "")),)

    def watches(self) -> list[Watch]:
        """What this controller watches: its NodeClaims, and Nodes mapped by providerID."""

        def managed(event_type: str, obj: dict[str, Any]) -> bool:
            return is_managed(obj, self.ctx.cloud_provider)

        return [
            Watch(NODECLAIMS, mapper=self.nodeclaim_mapper, predicate=managed),
            Watch(NODES, mapper=self.index.node_mapper),
        ]

    def reconcile(self, key: ObjectKey) -> Result:
        nodeclaim = managed_nodeclaim(self.ctx.kube, self.ctx.cloud_provider, key.name)
        if nodeclaim is None:
            return Result()
        if deletion_timestamp(nodeclaim):
            return self.finalize(nodeclaim)
        meta = nodeclaim.setdefault("metadata", {})
        finalizers = list(meta.get("finalizers") or [])
        if wk.TERMINATION_FINALIZER not in finalizers:
            finalizers.append(wk.TERMINATION_FINALIZER)
            try:
                nodeclaim = self._set_finalizers(key.name, meta, finalizers)
            except Conflict:
                return Result(requeue=True)
            except NotFound:
                return Result()
        stored = deep_copy(nodeclaim)
        conds = nodeclaim_conditions(nodeclaim, self.ctx.clock)
        results: list[Result] = []
        errors: list[BaseException] = []
        for step in (self.launch, self.registration, self.initialization, self.liveness):
            try:
                results.append(step.reconcile(nodeclaim, conds))
            except Exception as err:
                errors.append(err)
        if nodeclaim != stored:
            try:
                self._write(key.name, stored, nodeclaim)
            except NotFound:
                if errors:
                    raise ReconcileErrors(errors) from errors[0]
                return Result()
        if errors:
            if len(errors) == 1:
                raise errors[0]
            raise ReconcileErrors(errors) from errors[0]
        return min_result(results)

    def _write(self, name: str, stored: dict[str, Any], nodeclaim: dict[str, Any]) -> None:
        old_body, old_status = _split(stored)
        new_body, new_status = _split(nodeclaim)
        if old_body != new_body:
            patch = merge_patch(old_body, new_body)
            patch.get("metadata", {}).pop("resourceVersion", None)
            self._patch(name, patch)
        if old_status != new_status:
            self._patch(
                name,
                {"status": merge_patch(old_status, new_status)},
                subresource="status",
            )

    # ------------------------------------------------------------------ finalization

    def finalize(self, nodeclaim: dict[str, Any]) -> Result:
        meta = nodeclaim.get("metadata") or {}
        name = str(meta.get("name") or "")
        if wk.TERMINATION_FINALIZER not in (meta.get("finalizers") or []):
            return Result()
        try:
            updated = self._annotate_termination_time(nodeclaim)
        except Conflict:
            return Result(requeue=True)
        if updated is not None:
            nodeclaim = updated
            meta = nodeclaim.get("metadata") or {}
        conds = ConditionSet(nodeclaim, self.ctx.clock)
        if conds.is_true("Registered"):
            nodes = all_nodes_for_nodeclaim(self.ctx.kube, nodeclaim, self.index)
            for node in nodes:
                if deletion_timestamp(node):
                    continue
                with contextlib.suppress(NotFound):
                    self.ctx.kube.delete(NODES, str((node.get("metadata") or {}).get("name")))
            if nodes:
                # Node termination drains, waits for volumes and removes the Node's
                # finalizer; the Node's deletion event brings us back here.
                return Result()
        pool = labels_of(nodeclaim).get(wk.NODEPOOL_LABEL_KEY, "")
        if provider_id(nodeclaim):
            gone = self._delete_instance(nodeclaim)
            stored = deep_copy(nodeclaim)
            conds = ConditionSet(nodeclaim, self.ctx.clock)
            conds.set_true(CONDITION_INSTANCE_TERMINATING)
            if nodeclaim != stored:
                try:
                    nodeclaim = self._patch(
                        name, status_patch(stored, nodeclaim), subresource="status"
                    )
                except NotFound:
                    return Result()
                except Conflict:
                    return Result(requeue=True)
                meta = nodeclaim.get("metadata") or {}
            if not gone:
                return Result(requeue_after=DELETE_RETRY)
            term = ConditionSet(nodeclaim, self.ctx.clock).get(CONDITION_INSTANCE_TERMINATING) or {}
            since = self._seconds_since(term.get("lastTransitionTime"))
            if since is not None:
                metrics.NODECLAIMS_INSTANCE_TERMINATION_DURATION_SECONDS.labels(
                    **{metrics.LABEL_NODEPOOL: pool}
                ).observe(since)
        finalizers = [f for f in meta.get("finalizers") or [] if f != wk.TERMINATION_FINALIZER]
        try:
            self._set_finalizers(name, meta, finalizers)
        except Conflict:
            return Result(requeue=True)
        except NotFound:
            return Result()
        uid = str(meta.get("uid") or "")
        self.launch.forget(uid)
        log.info("deleted nodeclaim %s", name)
        since = self._seconds_since(meta.get("deletionTimestamp"))
        if since is not None:
            metrics.NODECLAIMS_TERMINATION_DURATION_SECONDS.labels(
                **{metrics.LABEL_NODEPOOL: pool}
            ).observe(since)
        lbl = labels_of(nodeclaim)
        metrics.NODECLAIMS_TERMINATED_TOTAL.labels(
            **{
                metrics.LABEL_NODEPOOL: pool,
                metrics.LABEL_CAPACITY_TYPE: lbl.get(wk.CAPACITY_TYPE_LABEL_KEY, ""),
                metrics.LABEL_ZONE: lbl.get(wk.LABEL_TOPOLOGY_ZONE, ""),
            }
        ).inc()
        return Result()

    def _seconds_since(self, when: Any) -> float | None:
        if not when:
            return None
        try:
            return max(0.0, (self.ctx.clock.now() - parse_time(str(when))).total_seconds())
        except ValueError:
            return None

    def _delete_instance(self, nodeclaim: dict[str, Any]) -> bool:
        """Ask the provider to terminate the instance; True once it reports it gone."""
        try:
            model = NodeClaim.from_dict(nodeclaim)
        except APIError as err:
            raise RuntimeError(
                f"nodeclaim {(nodeclaim.get('metadata') or {}).get('name')}: cannot delete its "
                f"instance: {err}"
            ) from err
        try:
            self.ctx.cloud_provider.delete(model)
        except Exception as err:
            if is_nodeclaim_not_found(err):
                return True
            raise
        return False

    def _annotate_termination_time(self, nodeclaim: dict[str, Any]) -> dict[str, Any] | None:
        """Set the termination-timestamp annotation once, when a grace period applies."""
        meta = nodeclaim.get("metadata") or {}
        if wk.NODECLAIM_TERMINATION_TIMESTAMP_ANNOTATION_KEY in (meta.get("annotations") or {}):
            return None
        tgp = (nodeclaim.get("spec") or {}).get("terminationGracePeriod")
        deleted = meta.get("deletionTimestamp")
        if not tgp or not deleted:
            return None
        try:
            grace = timedelta(microseconds=parse_go_duration(str(tgp)) / 1000)
            when = format_time(parse_time(str(deleted)) + grace)
        except ValueError as err:
            log.error(
                "nodeclaim %s: ignoring terminationGracePeriod %r: %s", meta.get("name"), tgp, err
            )
            return None
        try:
            updated = self._patch(
                str(meta.get("name")),
                {
                    "metadata": {
                        "annotations": {wk.NODECLAIM_TERMINATION_TIMESTAMP_ANNOTATION_KEY: when},
                        "resourceVersion": meta.get("resourceVersion"),
                    }
                },
            )
        except NotFound:
            return None
        log.info(
            "annotated nodeclaim %s %s=%s",
            meta.get("name"),
            wk.NODECLAIM_TERMINATION_TIMESTAMP_ANNOTATION_KEY,
            when,
        )
        self.ctx.recorder.warning(
            updated,
            EVENT_TGP_EXPIRING,
            f"All pods will be deleted by {when}",
            str(meta.get("name") or ""),
        )
        return updated
