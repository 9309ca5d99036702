"""The ``node.termination`` controller: the Node's ``karpenter.sh/termination`` finalizer
(upstream ``pkg/controllers/node/termination/controller.go``).

A Node Karpenter manages cannot disappear until this finalizer is removed, and it is
removed only once the node has been emptied and its instance is going away:

1. the node's NodeClaim (found by providerID; none or several means "no NodeClaim") is
   deleted if it is not already — deleting a Node is a way to ask for its termination;
2. a NotReady node whose instance the cloud provider no longer knows is let go at once:
   no kubelet is left to drain, and waiting would block forever;
3. the deadline is the NodeClaim's ``karpenter.sh/nodeclaim-termination-timestamp``
   (deletion + terminationGracePeriod), announced with ``TerminationGracePeriodExpiring``;
4. the node is tainted ``karpenter.sh/disrupted:NoSchedule`` and labelled out of load
   balancers;
5. drain: ``Drained`` goes Unknown/``Draining``; the terminator queues pods tier by tier
   (``FailedDraining`` while pods remain, re-checked every second); ``Drained`` turns True
   only after it has been Unknown for 5 s, so pods the scheduler bound before it saw the
   taint are drained too;
6. volumes: wait (``VolumesDetached`` Unknown/``AwaitingVolumeDetachment``) until the
   VolumeAttachments of drained pods are gone, unless the deadline has passed (False,
   ``TerminationGracePeriodElapsed``);
7. instance: ``cloud_provider.delete`` every 5 s (``InstanceTerminating`` True) until the
   provider says NotFound;
8. the NodeClaim status is written (optimistic lock), then the finalizer is removed and
   ``nodes_terminated_total``, ``nodes_termination_duration_seconds`` and
   ``nodes_lifetime_duration_seconds`` are recorded.

The NodeClaim's own finalizer (the ``nodeclaim.lifecycle`` controller) deletes the Node and
waits for this one to finish before it removes the NodeClaim — so the two hand off through
the Node's existence.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from karpenter_core import metrics
from karpenter_core.apis import labels as wk
from karpenter_core.apis import v1
from karpenter_core.apis.accessors import labels_of
from karpenter_core.apis.conditions import ConditionSet, condition_of
from karpenter_core.apis.copying import deep_copy
from karpenter_core.apis.taints import DISRUPTED_NO_SCHEDULE_TAINT
from karpenter_core.cloudprovider.errors import is_nodeclaim_not_found
from karpenter_core.controllers.node.termination import pods as podutil
from karpenter_core.controllers.node.termination.eviction import nodeclaims_for_node
from karpenter_core.controllers.node.termination.terminator import Terminator
from karpenter_core.kube.client import Conflict, NotFound
from karpenter_core.runtime.clock import parse_time
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.events import NORMAL, WARNING, Event
from karpenter_core.runtime.reconciler import ObjectKey, Result

__all__ = [
    "DRAIN_REQUEUE",
    "INSTANCE_TERMINATION_REQUEUE",
    "MIN_DRAIN_TIME",
    "NodeTerminationController",
    "TerminationError",
    "is_managed",
]

log = logging.getLogger("karpenter.termination")

MIN_DRAIN_TIME = timedelta(seconds=5)
DRAIN_REQUEUE = 1.0
VOLUME_REQUEUE = 1.0
INSTANCE_TERMINATION_REQUEUE = 5.0


class TerminationError(ValueError):
    """Something on the objects stops termination until a user fixes it (the message
    names the object and field)."""


def is_managed(node: Mapping[str, Any], node_class_label_keys: frozenset[str]) -> bool:
    """Whether the node carries the NodeClass label of one of this provider's kinds."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    return any(k in labels for k in node_class_label_keys)


Step = Callable[[dict[str, Any] | None, dict[str, Any], datetime | None], Result | None]


class NodeTerminationController:
    """Reconciles deleting Nodes that carry the termination finalizer."""

    name = "node.termination"

    def __init__(self, ctx: ControllerContext, terminator: Terminator) -> None:
        self.ctx = ctx
        self.kube = ctx.kube
        self.clock = ctx.clock
        self.cloud_provider = ctx.cloud_provider
        self.recorder = ctx.recorder
        self.terminator = terminator
        self.node_class_label_keys = frozenset(
            k.label_key for k in ctx.cloud_provider.supported_node_classes()
        )

    def managed(self, node: Mapping[str, Any]) -> bool:
        return is_managed(node, self.node_class_label_keys)

    def reconcile(self, key: ObjectKey) -> Result:
        try:
            node = self.kube.get("nodes", key.name)
        except NotFound:
            return Result()
        meta = node.get("metadata") or {}
        if not meta.get("deletionTimestamp"):
            return Result()
        try:
            return self.finalize(node)
        except TerminationError as e:
            # A user has to fix the object; say what is wrong and retry with back-off.
            log.error("node %s: cannot terminate: %s", key.name, e)
            return Result(requeue=True)

    # ------------------------------------------------------------------ finalize

    def finalize(self, node: dict[str, Any]) -> Result:
        meta = node["metadata"]
        if wk.TERMINATION_FINALIZER not in (meta.get("finalizers") or []):
            return Result()
        if not self.managed(node):
            return Result()

        found = nodeclaims_for_node(self.kube, node)
        nodeclaim = found[0] if len(found) == 1 else None
        if nodeclaim is not None and not (nodeclaim.get("metadata") or {}).get("deletionTimestamp"):
            with contextlib.suppress(NotFound):
                # The NodeClaim keeps its own finalizer, so it comes back marked; carry on
                # with that copy so the status write below is not a needless conflict.
                marked = self.kube.delete("nodeclaims", nodeclaim["metadata"]["name"])
                if marked is not None:
                    nodeclaim = marked

        if not self._is_true(node, "Ready"):
            provider_id = str((node.get("spec") or {}).get("providerID") or "")
            try:
                self.cloud_provider.get(provider_id)
            except Exception as e:
                if is_nodeclaim_not_found(e):
                    # The instance is gone and no kubelet answers: nothing left to drain.
                    return self._remove_finalizer(node)
                raise

        deadline = self._termination_time(node, nodeclaim)
        try:
            node = self.terminator.taint(node, DISRUPTED_NO_SCHEDULE_TAINT)
        except Conflict:
            return Result(requeue=True)

        stored = deep_copy(nodeclaim) if nodeclaim is not None else None
        steps: tuple[Step, ...] = (
            self._await_drain,
            self._await_volume_detachment,
            self._await_instance_termination,
        )
        result: Result | None = None
        failure: BaseException | None = None
        for step in steps:
            try:
                result = step(nodeclaim, node, deadline)
            except Exception as e:
                failure = e
                break
            if result is not None:
                break
        if stored is not None and nodeclaim is not None and stored != nodeclaim:
            patched = self._patch_nodeclaim_status(stored, nodeclaim)
            if patched is not None:
                return patched
            if not self._is_true(stored, v1.CONDITION_DRAINED) and self._is_true(
                nodeclaim, v1.CONDITION_DRAINED
            ):
                metrics.NODES_DRAINED_TOTAL.labels(
                    nodepool=labels_of(node).get(wk.NODEPOOL_LABEL_KEY, "")
                ).inc()
        if failure is not None:
            raise failure
        if result is not None:
            return result
        return self._remove_finalizer(node)

    @staticmethod
    def _is_true(obj: Mapping[str, Any], type_: str) -> bool:
        c = condition_of(obj, type_)
        return c is not None and c.get("status") == "True"

    def _termination_time(
        self, node: Mapping[str, Any], nodeclaim: Mapping[str, Any] | None
    ) -> datetime | None:
        if nodeclaim is None:
            return None
        annotations = (nodeclaim.get("metadata") or {}).get("annotations") or {}
        value = annotations.get(wk.NODECLAIM_TERMINATION_TIMESTAMP_ANNOTATION_KEY)
        if value is None:
            return None
        node_name = str((node.get("metadata") or {}).get("name") or "")
        self.recorder.publish(
            Event(
                node,
                WARNING,
                "TerminationGracePeriodExpiring",
                f"All pods will be deleted by {value}",
                (node_name,),
            )
        )
        try:
            return parse_time(str(value))
        except ValueError:
            nc_name = (nodeclaim.get("metadata") or {}).get("name")
            raise TerminationError(
                f"NodeClaim {nc_name}: annotation "
                f"{wk.NODECLAIM_TERMINATION_TIMESTAMP_ANNOTATION_KEY}={value!r} is not an "
                "RFC 3339 time"
            ) from None

    # ------------------------------------------------------------------ steps

    def _conditions(self, nodeclaim: dict[str, Any]) -> ConditionSet:
        """The termination conditions (Drained, VolumesDetached, InstanceTerminating) are
        independent of the NodeClaim's Ready root, as upstream sets them."""
        return ConditionSet(nodeclaim, self.clock, root=None)

    def _await_drain(
        self, nodeclaim: dict[str, Any] | None, node: dict[str, Any], deadline: datetime | None
    ) -> Result | None:
        now = self.clock.now()
        if nodeclaim is not None and condition_of(nodeclaim, v1.CONDITION_DRAINED) is None:
            self._conditions(nodeclaim).set(v1.CONDITION_DRAINED, "Unknown", "Draining", "Draining")
        error = self.terminator.drain(node, deadline)
        if error is not None:
            name = str(node["metadata"].get("name") or "")
            self.recorder.publish(
                Event(node, WARNING, "FailedDraining", f"Failed to drain node, {error}", (name,))
            )
            return Result(requeue_after=DRAIN_REQUEUE)
        if nodeclaim is not None:
            cond = condition_of(nodeclaim, v1.CONDITION_DRAINED)
            if cond is None:
                return Result(requeue_after=DRAIN_REQUEUE)
            if cond.get("status") not in ("True", "False"):
                since = cond.get("lastTransitionTime")
                try:
                    started = parse_time(str(since)) if since else now
                except ValueError:
                    started = now
                if now - started < MIN_DRAIN_TIME:
                    return Result(requeue_after=DRAIN_REQUEUE)
            self._conditions(nodeclaim).set_true(v1.CONDITION_DRAINED)
        return None

    def _await_volume_detachment(
        self, nodeclaim: dict[str, Any] | None, node: dict[str, Any], deadline: datetime | None
    ) -> Result | None:
        now = self.clock.now()
        pending = self._pending_volume_attachments(node)
        if not pending:
            if nodeclaim is not None:
                self._conditions(nodeclaim).set_true(v1.CONDITION_VOLUMES_DETACHED)
            return None
        if deadline is None or not now > deadline:
            names = sorted(str((va.get("metadata") or {}).get("name") or "") for va in pending)
            shown = ", ".join(names[:5])
            if len(names) > 5:
                more = len(names) - 5
                shown += f" and {more} other{'s' if more > 1 else ''}"
            node_name = str(node["metadata"].get("name") or "")
            self.recorder.publish(
                Event(
                    node,
                    NORMAL,
                    "AwaitingVolumeDetachment",
                    f"Awaiting deletion of bound volumeattachments ({shown})",
                    (node_name,),
                )
            )
            if nodeclaim is not None:
                self._conditions(nodeclaim).set(
                    v1.CONDITION_VOLUMES_DETACHED,
                    "Unknown",
                    "AwaitingVolumeDetachment",
                    "AwaitingVolumeDetachment",
                )
            return Result(requeue_after=VOLUME_REQUEUE)
        if nodeclaim is not None:
            self._conditions(nodeclaim).set(
                v1.CONDITION_VOLUMES_DETACHED,
                "False",
                "TerminationGracePeriodElapsed",
                "TerminationGracePeriodElapsed",
            )
        return None

    def _pending_volume_attachments(self, node: Mapping[str, Any]) -> list[dict[str, Any]]:
        """VolumeAttachments on the node that drained pods' volumes still hold. Volumes of
        pods the drain leaves behind (tolerating the taint, mirror pods, stuck ones) would
        never detach, so they are not waited for."""
        node_name = str((node.get("metadata") or {}).get("name") or "")
        attachments = [
            va
            for va in self.kube.list("volumeattachments").items
            if (va.get("spec") or {}).get("nodeName") == node_name
        ]
        if not attachments:
            return []
        now = self.clock.now()
        skip: set[str] = set()
        for pod in self.terminator.pods_on(node_name):
            if podutil.is_drainable(pod, now):
                continue
            namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
            for claim in podutil.pvc_names(pod):
                try:
                    pvc = self.kube.get("persistentvolumeclaims", claim, namespace)
                except NotFound:
                    continue
                volume = (pvc.get("spec") or {}).get("volumeName")
                if volume:
                    skip.add(str(volume))
        pending = []
        for va in attachments:
            source = (va.get("spec") or {}).get("source") or {}
            pv = source.get("persistentVolumeName")
            if pv is None or pv in skip:
                continue
            pending.append(va)
        return pending

    def _await_instance_termination(
        self, nodeclaim: dict[str, Any] | None, node: dict[str, Any], deadline: datetime | None
    ) -> Result | None:
        if nodeclaim is None:
            return None
        try:
            model = v1.NodeClaim.from_dict(nodeclaim)
        except Exception as e:
            name = (nodeclaim.get("metadata") or {}).get("name")
            raise TerminationError(f"NodeClaim {name} cannot be read: {e}") from None
        gone = False
        try:
            self.cloud_provider.delete(model)
        except Exception as e:
            if not is_nodeclaim_not_found(e):
                raise
            gone = True
        self._conditions(nodeclaim).set_true(v1.CONDITION_INSTANCE_TERMINATING)
        if not gone:
            return Result(requeue_after=INSTANCE_TERMINATION_REQUEUE)
        return None

    # ------------------------------------------------------------------ writes

    def _patch_nodeclaim_status(
        self, stored: Mapping[str, Any], nodeclaim: Mapping[str, Any]
    ) -> Result | None:
        """Write the NodeClaim's conditions; the list is replaced whole, so the write is
        conditional on the resourceVersion we read. A conflict retries the reconcile."""
        meta = nodeclaim.get("metadata") or {}
        patch = {
            "metadata": {"resourceVersion": (stored.get("metadata") or {}).get("resourceVersion")},
            "status": {"conditions": (nodeclaim.get("status") or {}).get("conditions") or []},
        }
        try:
            self.kube.patch("nodeclaims", str(meta.get("name")), patch, subresource="status")
        except NotFound:
            return None
        except Conflict:
            return Result(requeue=True)
        return None

    def _remove_finalizer(self, node: dict[str, Any]) -> Result:
        meta = node["metadata"]
        finalizers = [f for f in meta.get("finalizers") or [] if f != wk.TERMINATION_FINALIZER]
        if finalizers == list(meta.get("finalizers") or []):
            return Result()
        patch = {
            "metadata": {"finalizers": finalizers, "resourceVersion": meta.get("resourceVersion")}
        }
        try:
            self.kube.patch("nodes", str(meta["name"]), patch)
        except NotFound:
            return Result()
        except Conflict:
            return Result(requeue=True)
        labels = labels_of(node)
        nodepool = labels.get(wk.NODEPOOL_LABEL_KEY, "")
        now = self.clock.now()
        metrics.NODES_TERMINATED_TOTAL.labels(
            nodepool=nodepool, zone=labels.get(wk.LABEL_TOPOLOGY_ZONE, "")
        ).inc()
        deleted = meta.get("deletionTimestamp")
        if deleted:
            metrics.NODES_TERMINATION_DURATION_SECONDS.labels(nodepool=nodepool).observe(
                max(0.0, (now - parse_time(str(deleted))).total_seconds())
            )
        created = meta.get("creationTimestamp")
        if created:
            metrics.NODES_LIFETIME_DURATION_SECONDS.labels(nodepool=nodepool).observe(
                max(0.0, (now - parse_time(str(created))).total_seconds())
            )
        log.info("deleted node %s", meta["name"])
        return Result()
