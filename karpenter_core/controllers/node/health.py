"""``node.health``: node repair (upstream ``pkg/controllers/node/health``).

A cloud provider names the Node conditions that mean "this machine is broken" through
``CloudProvider.repair_policies()``: a condition type, a status and how long that status
is tolerated (KWOK: ``Ready`` ``False`` or ``Unknown`` for 10 minutes). When a managed
Node has carried such a condition for its toleration, Karpenter replaces the machine by
deleting its NodeClaim — forcefully: the NodeClaim's termination timestamp is set to now,
so the drain does not wait for PodDisruptionBudgets or ``do-not-disrupt`` pods, and
neither disruption budgets nor the NodePool's ``terminationGracePeriod`` hold it back.
Provisioning then launches a replacement for the pods the drain sends back.

Spec: disruption §14, apis-and-cloudprovider §6. Per reconcile of one Node:

1. Among the policies whose (type, status) the Node matches, the one whose
   ``lastTransitionTime + toleration`` comes first decides. Before that moment the Node is
   looked at again exactly then (:attr:`Verdict.requeue_after`).
2. Repair is a safety valve, not a stampede: if more than 20% of the nodes of the
   NodeClaim's NodePool (rounded up, like a PDB's ``maxUnavailable``; every node of the
   cluster for a NodeClaim without a NodePool) match any policy, something larger than
   one machine is wrong (a bad image, a network outage) and replacing nodes would only
   make it worse. Nothing is repaired; ``NodeRepairBlocked`` is published and the Node is
   looked at again in 5 minutes.
3. Otherwise the termination-timestamp annotation is set to now (one already in the past
   is kept), the NodeClaim is deleted, and ``nodeclaims_disrupted_total{reason=unhealthy}``,
   ``pods_disruption_initiated_total`` and ``nodeclaims_unhealthy_disrupted_total`` count it.

The controller runs only with the ``NodeRepair`` feature gate on and a provider that
declares at least one policy (the gate lives in :mod:`karpenter_core.operator.controllers`).

Deliberate differences from upstream, each on the safe side:

- A matching condition without a readable ``lastTransitionTime`` is skipped with a
  warning. Upstream reads it as the zero time and repairs at once; here a node is never
  replaced on the strength of a timestamp nobody wrote.
- ``NodeRepairBlocked`` is published on the Node, its NodeClaim and its NodePool (each
  deduplicated for 15 minutes by that object's uid). Upstream builds the same three
  events but attaches all of them to the Node.
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
import threading
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

from attrs import frozen

from karpenter_core import metrics
from karpenter_core.apis import labels as wk
from karpenter_core.apis.accessors import annotations_of, labels_of, meta_of, name_of
from karpenter_core.apis.conditions import condition_of, conditions_of
from karpenter_core.cloudprovider.protocol import RepairPolicy
from karpenter_core.controllers.node.termination.controller import is_managed
from karpenter_core.controllers.node.termination.eviction import nodeclaims_for_node
from karpenter_core.controllers.nodeclaim.garbagecollection import record_disruption
from karpenter_core.kube.client import ADDED, DELETED, NotFound
from karpenter_core.runtime.clock import format_time, parse_time
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.events import WARNING, Event
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import ObjectKey, Result, Watch

__all__ = [
    "ALLOWED_UNHEALTHY_PERCENT",
    "BLOCKED_REQUEUE",
    "EVENT_NODE_REPAIR_BLOCKED",
    "NAME",
    "ConditionChanges",
    "NodeHealth",
    "UnhealthyCondition",
    "Verdict",
    "allowed_unhealthy",
    "condition_label",
    "decide",
    "find_unhealthy_condition",
    "is_unhealthy",
    "judge",
    "register",
    "termination_timestamp",
]

log = logging.getLogger("karpenter.node.health")

NAME = "node.health"
ALLOWED_UNHEALTHY_PERCENT = 20
BLOCKED_REQUEUE = timedelta(minutes=5).total_seconds()
BLOCKED_EVENT_DEDUPE = timedelta(minutes=15).total_seconds()
EVENT_NODE_REPAIR_BLOCKED = "NodeRepairBlocked"
WORKERS = 10
NODES = "nodes"
NODECLAIMS = "nodeclaims"
NODEPOOLS = "nodepools"

# ---------------------------------------------------------------------------------------
# Decisions (pure)
# ---------------------------------------------------------------------------------------

Action = Literal["healthy", "wait", "blocked", "repair"]


@frozen
class UnhealthyCondition:
    """A Node condition that matches a repair policy, and when it makes the node repairable."""

    type: str
    status: str
    since: datetime
    toleration: timedelta

    @property
    def repair_at(self) -> datetime:
        return self.since + self.toleration


@frozen
class Verdict:
    """What to do with one Node now.

    ``action`` is ``healthy`` (nothing matches), ``wait`` (a match, toleration not yet
    over: look again in ``requeue_after`` seconds), ``blocked`` (too many of its peers
    are unhealthy) or ``repair``.
    """

    action: Action
    condition: UnhealthyCondition | None = None
    requeue_after: float = 0.0
    unhealthy: int = 0
    total: int = 0

    @property
    def allowed(self) -> int:
        return allowed_unhealthy(self.total)


def _matches(node: Mapping[str, Any], policy: RepairPolicy) -> Mapping[str, Any] | None:
    cond = condition_of(node, policy.condition_type)
    if cond is None or str(cond.get("status") or "") != policy.condition_status:
        return None
    return cond


def is_unhealthy(node: Mapping[str, Any], policies: Sequence[RepairPolicy]) -> bool:
    """Whether the Node matches any policy's (type, status), however briefly.

    This is what the 20% guard counts: a node that is down but still within its
    toleration is already evidence that something is wrong.
    """
    return any(_matches(node, p) is not None for p in policies)


def find_unhealthy_condition(
    node: Mapping[str, Any], policies: Sequence[RepairPolicy]
) -> UnhealthyCondition | None:
    """The matching condition that makes the Node repairable soonest, or None.

    A matching condition whose ``lastTransitionTime`` is missing or unreadable is skipped
    (logged): without it there is no way to know how long the node has been down.
    """
    best: UnhealthyCondition | None = None
    for policy in policies:
        cond = _matches(node, policy)
        if cond is None:
            continue
        raw = cond.get("lastTransitionTime")
        try:
            since = parse_time(str(raw)) if raw else None
        except ValueError:
            since = None
        if since is None:
            log.warning(
                "node %s: condition %s=%s has no readable lastTransitionTime (%r); "
                "not considering it for repair",
                name_of(node),
                policy.condition_type,
                policy.condition_status,
                raw,
            )
            continue
        found = UnhealthyCondition(
            policy.condition_type, policy.condition_status, since, policy.toleration
        )
        if best is None or found.repair_at < best.repair_at:
            best = found
    return best


def allowed_unhealthy(total: int) -> int:
    """How many of ``total`` nodes may be unhealthy with repair still going ahead:
    20%, rounded up (so one node of a small NodePool can always be repaired)."""
    return math.ceil(ALLOWED_UNHEALTHY_PERCENT * max(total, 0) / 100)


def decide(
    node: Mapping[str, Any],
    policies: Sequence[RepairPolicy],
    peers: Sequence[Mapping[str, Any]],
    now: datetime,
) -> Verdict:
    """What to do with ``node`` at ``now``; ``peers`` are the nodes the 20% guard counts
    (those of its NodePool, or of the whole cluster), the node itself included."""
    return judge(find_unhealthy_condition(node, policies), policies, peers, now)


def judge(
    condition: UnhealthyCondition | None,
    policies: Sequence[RepairPolicy],
    peers: Sequence[Mapping[str, Any]],
    now: datetime,
) -> Verdict:
    """:func:`decide` for a node whose deciding condition is already known (the
    controller finds it first, so it lists the peers only once a repair is due)."""
    if condition is None:
        return Verdict("healthy")
    if now < condition.repair_at:
        return Verdict("wait", condition, requeue_after=(condition.repair_at - now).total_seconds())
    unhealthy = sum(1 for n in peers if is_unhealthy(n, policies))
    total = len(peers)
    if unhealthy > allowed_unhealthy(total):
        return Verdict("blocked", condition, BLOCKED_REQUEUE, unhealthy, total)
    return Verdict("repair", condition, 0.0, unhealthy, total)


def termination_timestamp(annotations: Mapping[str, str], now: datetime) -> str | None:
    """The termination-timestamp annotation value repair writes, or None to keep the one
    there: an existing deadline already in the past is kept (it is at least as forceful),
    anything else — later, absent or unreadable — becomes ``now``."""
    existing = annotations.get(wk.NODECLAIM_TERMINATION_TIMESTAMP_ANNOTATION_KEY)
    if existing:
        try:
            if parse_time(str(existing)) < now:
                return None
        except ValueError:
            pass
    value = format_time(now)
    return None if existing == value else value


_FIRST_CAP = re.compile(r"(.)([A-Z][a-z]+)")
_ALL_CAP = re.compile(r"([a-z0-9])([A-Z])")


def condition_label(condition_type: str) -> str:
    """The ``condition`` metric label: the condition type in snake case, as upstream
    writes it (``Ready`` -> ``ready``, ``AcceleratedHardwareReady`` ->
    ``accelerated_hardware_ready``)."""
    snake = _FIRST_CAP.sub(r"\1_\2", condition_type)
    return _ALL_CAP.sub(r"\1_\2", snake).lower()


# ---------------------------------------------------------------------------------------
# Watch filtering
# ---------------------------------------------------------------------------------------


def _signature(node: Mapping[str, Any]) -> frozenset[tuple[str, str, str]]:
    return frozenset(
        (str(c.get("type") or ""), str(c.get("status") or ""), str(c.get("lastTransitionTime")))
        for c in conditions_of(node)
    )


class ConditionChanges:
    """Watch predicate: a Node update matters only when its conditions changed (one
    appeared or went, or a status or transition time moved); creations and deletions
    always do.

    Kubelets update Nodes every few seconds (heartbeats); reconciling each would cost a
    NodeClaim list for nothing. The predicate sees one object per event, so it remembers
    the last conditions it saw per Node.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, frozenset[tuple[str, str, str]]] = {}

    def __call__(self, event_type: str, node: dict[str, Any]) -> bool:
        name = name_of(node)
        with self._lock:
            if event_type == DELETED:
                self._seen.pop(name, None)
                return True
            signature = _signature(node)
            if event_type != ADDED and self._seen.get(name) == signature:
                return False
            self._seen[name] = signature
            return True


# ---------------------------------------------------------------------------------------
# The controller
# ---------------------------------------------------------------------------------------


class NodeHealth:
    """The keyed reconciler behind ``node.health`` (keys are Node names)."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.node_class_label_keys = frozenset(
            k.label_key for k in ctx.cloud_provider.supported_node_classes()
        )

    def managed(self, node: Mapping[str, Any]) -> bool:
        return is_managed(node, self.node_class_label_keys)

    def policies(self) -> tuple[RepairPolicy, ...]:
        try:
            return tuple(self.ctx.cloud_provider.repair_policies())
        except Exception as err:  # a provider bug must not take the controller down
            log.error("the cloud provider's repair_policies() failed: %s", err)
            return ()

    def reconcile(self, key: ObjectKey) -> Result:
        try:
            node = self.ctx.kube.get(NODES, key.name)
        except NotFound:
            return Result()
        if not self.managed(node):
            return Result()
        # Conditions first: they cost no API call, and most Nodes are healthy.
        policies = self.policies()
        cond = find_unhealthy_condition(node, policies)
        if cond is None:
            return Result()
        found = nodeclaims_for_node(self.ctx.kube, node)
        if len(found) != 1:
            # No NodeClaim (yet, or any more), or several: nothing to repair through.
            return Result()
        nodeclaim = found[0]
        now = self.ctx.clock.now()
        if now < cond.repair_at:
            return Result.after((cond.repair_at - now).total_seconds())

        nodepool = labels_of(nodeclaim).get(wk.NODEPOOL_LABEL_KEY)
        nodes = list(self.ctx.kube.list(NODES))
        if nodepool is not None:
            peers = [n for n in nodes if labels_of(n).get(wk.NODEPOOL_LABEL_KEY) == nodepool]
        else:
            peers = nodes
        verdict = judge(cond, policies, peers, now)
        if verdict.action == "blocked":
            self._publish_blocked(node, nodeclaim, nodepool, verdict)
            return Result.after(verdict.requeue_after)
        return self._repair(node, nodeclaim, cond, now)

    def _publish_blocked(
        self,
        node: Mapping[str, Any],
        nodeclaim: Mapping[str, Any],
        nodepool: str | None,
        verdict: Verdict,
    ) -> None:
        scope = "nodepool" if nodepool is not None else "cluster"
        message = (
            f"more than {ALLOWED_UNHEALTHY_PERCENT}% nodes are unhealthy in the {scope} "
            f"({verdict.unhealthy} of {verdict.total}, at most {verdict.allowed} allowed)"
        )
        log.info("node %s: not repairing: %s", name_of(node), message)
        targets: list[Mapping[str, Any]] = [node, nodeclaim]
        if nodepool is not None:
            with contextlib.suppress(NotFound):
                targets.append(self.ctx.kube.get(NODEPOOLS, nodepool))
        self.ctx.recorder.publish(
            *(
                Event(
                    obj,
                    WARNING,
                    EVENT_NODE_REPAIR_BLOCKED,
                    message,
                    (str(meta_of(obj).get("uid") or meta_of(obj).get("name") or ""),),
                    BLOCKED_EVENT_DEDUPE,
                )
                for obj in targets
            )
        )

    def _repair(
        self,
        node: Mapping[str, Any],
        nodeclaim: dict[str, Any],
        cond: UnhealthyCondition,
        now: datetime,
    ) -> Result:
        name = name_of(nodeclaim)
        value = termination_timestamp(annotations_of(nodeclaim), now)
        if value is not None:
            try:
                self.ctx.kube.patch(
                    NODECLAIMS,
                    name,
                    {
                        "metadata": {
                            "annotations": {
                                wk.NODECLAIM_TERMINATION_TIMESTAMP_ANNOTATION_KEY: value
                            }
                        }
                    },
                )
            except NotFound:
                return Result()
            log.info(
                "annotated nodeclaim %s %s=%s",
                name,
                wk.NODECLAIM_TERMINATION_TIMESTAMP_ANNOTATION_KEY,
                value,
            )
        if meta_of(nodeclaim).get("deletionTimestamp"):
            return Result()
        try:
            self.ctx.kube.delete(NODECLAIMS, name)
        except NotFound:
            return Result()
        log.info(
            "deleting unhealthy node %s (nodeclaim %s): %s=%s since %s",
            name_of(node),
            name,
            cond.type,
            cond.status,
            format_time(cond.since),
        )
        status = nodeclaim.get("status")
        # The pods counted are the Node's (the NodeClaim may not name its Node yet).
        record_disruption(
            self.ctx,
            {
                **nodeclaim,
                "status": {
                    **(status if isinstance(status, Mapping) else {}),
                    "nodeName": name_of(node),
                },
            },
            metrics.REASON_UNHEALTHY,
        )
        node_labels = labels_of(node)
        metrics.NODECLAIMS_UNHEALTHY_DISRUPTED_TOTAL.labels(
            **{
                metrics.LABEL_CONDITION: condition_label(cond.type),
                metrics.LABEL_NODEPOOL: node_labels.get(wk.NODEPOOL_LABEL_KEY, ""),
                metrics.LABEL_CAPACITY_TYPE: node_labels.get(wk.CAPACITY_TYPE_LABEL_KEY, ""),
                metrics.LABEL_IMAGE_ID: str(
                    (status.get("imageID") if isinstance(status, Mapping) else "") or ""
                ),
            }
        ).inc()
        return Result()


def register(manager: Manager, ctx: ControllerContext) -> None:
    """Add ``node.health`` to ``manager`` (the operator calls this only when the
    ``NodeRepair`` gate is on and the provider declares repair policies)."""
    reconciler = NodeHealth(ctx)
    changed = ConditionChanges()

    def relevant(event_type: str, node: dict[str, Any]) -> bool:
        return reconciler.managed(node) and changed(event_type, node)

    manager.add_controller(
        NAME,
        reconciler,
        watches=[Watch(NODES, predicate=relevant)],
        workers=WORKERS,
    )
