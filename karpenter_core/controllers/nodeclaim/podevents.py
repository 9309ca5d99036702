"""``nodeclaim.podevents``: remember when pods last came to or left a NodeClaim's Node.

Spec: operator-and-lifecycle §5.7. Consolidation measures ``consolidateAfter`` from
``status.lastPodEventTime``. A pod event counts when a (non-DaemonSet) pod is seen on a
node — created bound, becoming bound, becoming terminal (Succeeded/Failed) or starting to
terminate. The NodeClaim of that Node (exactly one, managed) gets ``lastPodEventTime`` =
now, unless it was set less than 10 s ago (to keep a burst of pods from writing a burst
of status patches).

The watch only carries the new object, so the mapper keeps each pod's last
(node, terminal, terminating) to recognise the transitions; the work is keyed by Node
name, which coalesces all the pods of one Node into one reconcile.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from karpenter_core.controllers.nodeclaim.utils import NodeIndex, nodeclaim_of_node
from karpenter_core.kube.client import NotFound
from karpenter_core.runtime.clock import format_time, parse_time
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import ObjectKey, Result

__all__ = ["DEDUPE_TIMEOUT", "NAME", "PodEvents", "PodTransitions"]

NAME = "nodeclaim.podevents"
DEDUPE_TIMEOUT = 10.0
NODECLAIMS = "nodeclaims"


def _pod_state(pod: Mapping[str, Any]) -> tuple[str, bool, bool]:
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    meta = pod.get("metadata") or {}
    return (
        str(spec.get("nodeName") or ""),
        status.get("phase") in ("Succeeded", "Failed"),
        bool(meta.get("deletionTimestamp")),
    )


def _daemonset_owned(pod: Mapping[str, Any]) -> bool:
    owners = (pod.get("metadata") or {}).get("ownerReferences") or ()
    return any(o.get("kind") == "DaemonSet" for o in owners)


class PodTransitions:
    """Watch mapper: a pod event -> the Node key, when it is an event that counts."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: dict[tuple[str, str], tuple[str, bool, bool]] = {}

    def __call__(self, event_type: str, pod: dict[str, Any]) -> Iterable[Hashable]:
        meta = pod.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        state = _pod_state(pod)
        with self._lock:
            if event_type == "DELETED":
                self._last.pop(key, None)
                return ()
            old = self._last.get(key)
            self._last[key] = state
        node, terminal, terminating = state
        if not node or _daemonset_owned(pod):
            return ()
        if old is None:
            counts = True  # a pod seen for the first time on a node
        else:
            bound = not old[0]
            counts = bound or (terminal and not old[1]) or (terminating and not old[2])
        return (ObjectKey("", node),) if counts else ()


class PodEvents:
    """The keyed (by Node name) reconciler behind ``nodeclaim.podevents``."""

    def __init__(self, ctx: ControllerContext, index: NodeIndex) -> None:
        self.ctx = ctx
        self.index = index

    def reconcile(self, key: ObjectKey) -> Result:
        pair = nodeclaim_of_node(self.ctx.kube, self.ctx.cloud_provider, self.index, key.name)
        if pair is None:
            return Result()
        _, nodeclaim = pair
        now = self.ctx.clock.now()
        last = (nodeclaim.get("status") or {}).get("lastPodEventTime")
        if last:
            try:
                if (now - parse_time(str(last))).total_seconds() < DEDUPE_TIMEOUT:
                    return Result()
            except ValueError:
                pass
        stamp = format_time(now)
        if stamp == last:
            return Result()
        with contextlib.suppress(NotFound):
            self.ctx.kube.patch(
                NODECLAIMS,
                str(nodeclaim["metadata"]["name"]),
                {"status": {"lastPodEventTime": stamp}},
                subresource="status",
            )
        return Result()
