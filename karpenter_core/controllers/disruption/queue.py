"""The orchestration queue: carry out a disruption command safely (upstream ``queue.go``;
spec disruption §12, ``disruption.queue`` controller).

The order is what keeps workloads safe, and it is fixed:

1. taint the candidates ``karpenter.sh/disrupted:NoSchedule`` and set their NodeClaims'
   ``DisruptionReason`` (nothing new lands on them from now on);
2. create the replacement NodeClaims;
3. mark the candidates for deletion in cluster state — only now, or the provisioner would
   launch capacity for the candidates' pods a second time;
4. nominate the existing nodes the simulation placed pods on;
5. wait until every replacement has initialised; then delete the candidates' NodeClaims
   (termination drains them).

If a replacement disappears before it initialises (launch failed, registration timed out),
or the command outlives its retry window, the command fails: the taints, the
``DisruptionReason`` condition and the deletion marks are rolled back and the nodes are
candidates again on a later pass.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable, Mapping, Sequence

import attrs
from attrs import define

from karpenter_core import metrics
from karpenter_core.apis.conditions import ConditionSet, condition_of
from karpenter_core.apis.copying import deep_copy
from karpenter_core.apis.labels import DISRUPTED_TAINT_KEY
from karpenter_core.apis.v1 import CONDITION_DISRUPTION_REASON, CONDITION_INITIALIZED
from karpenter_core.controllers.disruption import events
from karpenter_core.controllers.nodeclaim.launch import disrupted_labels
from karpenter_core.controllers.nodeclaim.utils import status_patch
from karpenter_core.controllers.provisioning import events as provisioning_events
from karpenter_core.controllers.provisioning.provisioner import Provisioner, ProvisioningError
from karpenter_core.disruption.replacements import release_reservations
from karpenter_core.disruption.types import Candidate, Command
from karpenter_core.kube.client import ApiError, Conflict, NotFound
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.reconciler import Result
from karpenter_core.state.cluster import Cluster
from karpenter_core.state.statenode import StateNode

__all__ = [
    "MAX_RETRY",
    "MIN_RETRY",
    "NAME",
    "QUEUE_REQUEUE",
    "Queue",
    "QueueError",
    "UnrecoverableError",
    "clear_disruption_reason",
    "metric_reason",
    "require_no_schedule_taint",
    "retry_duration",
]

log = logging.getLogger("karpenter.disruption.queue")

NAME = "disruption.queue"
QUEUE_REQUEUE = 1.0
"""How often a waiting command looks at its replacements again."""
MIN_RETRY = 600.0
MAX_RETRY = 3600.0
RETRY_SCALE = 0.08
"""A command may wait 80 ms per queued entry, clamped to [10 min, 1 h]: the more commands
in flight, the longer launches reasonably take."""
CONFLICT_RETRIES = 5

NODES = "nodes"
NODECLAIMS = "nodeclaims"


class QueueError(RuntimeError):
    """A command could not be started (the message says which step failed)."""


class UnrecoverableError(RuntimeError):
    """A started command can no longer succeed; it is rolled back."""


def retry_duration(entries: int) -> float:
    """How long a command may take before it is given up: ``clamp(80 ms * entries, 10 min,
    1 h)`` (10 000 entries: 13m20s)."""
    return min(max(RETRY_SCALE * entries, MIN_RETRY), MAX_RETRY)


def metric_reason(reason: str) -> str:
    """A disruption reason as a metric label (``Underutilized`` -> ``underutilized``;
    upstream's ``ToSnakeCase``)."""
    out = []
    for i, ch in enumerate(reason):
        if ch.isupper() and i > 0 and not reason[i - 1].isupper():
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def _is_disrupted_taint(taint: Mapping[str, object]) -> bool:
    return bool(taint.get("key") == DISRUPTED_TAINT_KEY and taint.get("effect") == "NoSchedule")


def require_no_schedule_taint(ctx: ControllerContext, sn: StateNode, add: bool) -> None:
    """Add (or remove) ``karpenter.sh/disrupted:NoSchedule`` on the candidate's Node,
    under optimistic locking (a concurrent taint change makes the write retry, never lose
    the other writer's taint). A taint with the same key but another value or effect is
    replaced. A Node already deleting keeps its taint: termination owns it then. Raises
    :class:`ApiError` when the write keeps failing; a Node that is gone is fine."""
    if sn.node is None or sn.nodeclaim is None:
        return
    name = sn.node.name
    for _ in range(CONFLICT_RETRIES):
        try:
            node = ctx.kube.get(NODES, name)
        except NotFound:
            return
        spec = node.setdefault("spec", {})
        taints = list(spec.get("taints") or [])
        has = any(_is_disrupted_taint(t) for t in taints)
        if has and (node.get("metadata") or {}).get("deletionTimestamp"):
            return
        kept = [t for t in taints if t.get("key") != DISRUPTED_TAINT_KEY]
        if add:
            if has:
                return
            wanted = [*kept, {"key": DISRUPTED_TAINT_KEY, "effect": "NoSchedule"}]
        else:
            wanted = [t for t in taints if not _is_disrupted_taint(t)]
        if wanted == taints:
            return
        spec["taints"] = wanted
        try:
            ctx.kube.update(node)
        except NotFound:
            return
        except Conflict:
            continue
        return
    raise Conflict(f"node {name}: the disrupted taint kept conflicting with other writers")


def _set_nodeclaim_condition(
    ctx: ControllerContext, nodeclaim_name: str, reason: str | None
) -> None:
    """Set ``DisruptionReason`` (reason given) or clear it (None) on the NodeClaim's status,
    under optimistic locking. A NodeClaim that is gone is fine."""
    for _ in range(CONFLICT_RETRIES):
        try:
            nc = ctx.kube.get(NODECLAIMS, nodeclaim_name)
        except NotFound:
            return
        stored = deep_copy(nc)
        conds = ConditionSet(nc, ctx.clock)
        if reason is None:
            conds.clear(CONDITION_DISRUPTION_REASON)
        else:
            conds.set_true(CONDITION_DISRUPTION_REASON, reason, reason)
        if nc == stored:
            return
        try:
            ctx.kube.patch(
                NODECLAIMS, nodeclaim_name, status_patch(stored, nc), subresource="status"
            )
        except NotFound:
            return
        except Conflict:
            continue
        return
    raise Conflict(f"nodeclaim {nodeclaim_name}: status kept conflicting with other writers")


def clear_disruption_reason(ctx: ControllerContext, sn: StateNode) -> None:
    """Clear ``DisruptionReason`` on an initialised node's NodeClaim."""
    if sn.nodeclaim_view is None or not sn.initialized():
        return
    _set_nodeclaim_condition(ctx, sn.nodeclaim_view.name, None)


@define
class _Entry:
    """A started command and what the queue learns while carrying it out."""

    command: Command
    replacement_names: list[str]
    initialized: list[bool]


class Queue:
    """The ``disruption.queue`` controller and the registry of commands in flight (one
    entry per candidate provider id). Keys are the provider id of a command's first
    candidate."""

    def __init__(self, ctx: ControllerContext, cluster: Cluster, provisioner: Provisioner) -> None:
        self.ctx = ctx
        self.cluster = cluster
        self.provisioner = provisioner
        self._lock = threading.RLock()
        self._by_pid: dict[str, _Entry] = {}
        self._enqueue: Callable[[Hashable], object] | None = None

    def bind(self, enqueue: Callable[[Hashable], object]) -> None:
        """Where started commands are handed to the reconciler (the controller's
        ``enqueue``)."""
        self._enqueue = enqueue

    # ------------------------------------------------------------------ reads

    def has_any(self, *provider_ids: str) -> bool:
        with self._lock:
            return any(p in self._by_pid for p in provider_ids)

    def is_empty(self) -> bool:
        with self._lock:
            return not self._by_pid

    def commands(self) -> list[Command]:
        """The commands in flight, each once."""
        with self._lock:
            seen: dict[int, Command] = {}
            for entry in self._by_pid.values():
                seen.setdefault(id(entry), entry.command)
            return list(seen.values())

    def replacement_names(self, provider_id: str) -> list[str]:
        with self._lock:
            entry = self._by_pid.get(provider_id)
            return list(entry.replacement_names) if entry is not None else []

    # ------------------------------------------------------------------ starting

    def start_command(self, cmd: Command) -> Command:
        """Taint, launch replacements, mark for deletion and enqueue (see the module
        docstring). Returns the command as queued (candidates that could not be tainted
        are dropped from a delete-only command). Raises :class:`QueueError`; the next
        disruption pass removes a taint left behind.

        Static replacements hold a reserved node count each (static drift): the
        provisioner gives them back once it has attempted them; a command that fails (or
        breaks off) before reaching the provisioner gives them back here."""
        handed_over = False
        try:
            pids = [c.provider_id() for c in cmd.candidates]
            if not cmd.candidates:
                raise QueueError("command has no candidates")
            if self.has_any(*pids):
                raise QueueError("candidate is being disrupted")
            log.info("disrupting node(s): %s", cmd)
            marked, errors = self._mark_disrupted(cmd)
            if errors and (cmd.replacements or not marked):
                raise QueueError(f"marking disrupted: {'; '.join(errors)}")
            cmd = attrs.evolve(cmd, candidates=marked)
            names: list[str] = []
            if cmd.replacements:
                handed_over = True
                try:
                    names = self.provisioner.create_nodeclaims(
                        list(cmd.replacements), reason=cmd.reason.lower()
                    )
                except (ProvisioningError, ApiError) as e:
                    raise QueueError(f"launching replacement nodeclaim: {e}") from None
        finally:
            if not handed_over:
                release_reservations(self.cluster.nodepool_state, cmd.replacements)
        if len(names) != len(cmd.replacements):
            raise QueueError(
                "expected replacement count did not equal actual replacement count "
                f"(expected {len(cmd.replacements)}, created {len(names)})"
            )
        pids = [c.provider_id() for c in cmd.candidates]
        self.cluster.mark_for_deletion(*pids)
        self._record(cmd)
        entry = _Entry(cmd, names, [False] * len(names))
        with self._lock:
            for pid in pids:
                self._by_pid[pid] = entry
        if self._enqueue is not None:
            self._enqueue(pids[0])
        reason = cmd.reason.lower()
        for pool in cmd.nodepool_names():
            metrics.VOLUNTARY_DISRUPTION_DECISIONS_BY_NODEPOOL_TOTAL.labels(
                nodepool=pool,
                decision=cmd.decision,
                reason=reason,
                consolidation_type=cmd.consolidation_type,
            ).inc()
        metrics.VOLUNTARY_DISRUPTION_DECISIONS_TOTAL.labels(
            decision=cmd.decision, reason=reason, consolidation_type=cmd.consolidation_type
        ).inc()
        return cmd

    def _mark_disrupted(self, cmd: Command) -> tuple[list[Candidate], list[str]]:
        marked: list[Candidate] = []
        errors: list[str] = []
        for c in cmd.candidates:
            try:
                require_no_schedule_taint(self.ctx, c.state_node, True)
            except ApiError as e:
                errors.append(f"tainting node {c.name()}: {e}")
                continue
            try:
                _set_nodeclaim_condition(self.ctx, c.nodeclaim_name(), cmd.reason)
            except ApiError as e:
                errors.append(f"nodeclaim {c.nodeclaim_name()}: {e}")
                continue
            marked.append(c)
            if c.owned_by_static_nodepool():
                self.cluster.nodepool_state.mark_pending_disruption(
                    c.nodepool_name(), c.nodeclaim_name()
                )
        return marked, errors

    def _record(self, cmd: Command) -> None:
        """Nominate the existing nodes the simulation moved pods onto (upstream
        ``Results.Record``), so they are not disrupted while those pods arrive."""
        if cmd.results is None:
            return
        for existing in cmd.results.existing_nodes:
            if not existing.pods:
                continue
            sn = existing.state_node
            self.cluster.nominate_node_for_pod(sn.provider_id())
            node_name = sn.node.name if sn.node is not None else ""
            nc_name = sn.nodeclaim_view.name if sn.nodeclaim_view is not None else ""
            for pod in existing.pods:
                self.ctx.recorder.publish(provisioning_events.nominate_pod(pod, node_name, nc_name))

    # ------------------------------------------------------------------ reconciling

    def reconcile(self, key: Hashable) -> Result:
        pid = str(key)
        with self._lock:
            entry = self._by_pid.get(pid)
        if entry is None:
            return Result()
        try:
            done = self._wait_or_terminate(entry)
        except UnrecoverableError as e:
            self._fail(entry, str(e))
            return Result()
        if not done:
            return Result.after(QUEUE_REQUEUE)
        log.debug("command succeeded: %s", entry.command)
        self._complete(entry, succeeded=True)
        return Result()

    def _wait_or_terminate(self, entry: _Entry) -> bool:
        """True when every candidate's NodeClaim was deleted; False to look again shortly.
        Raises :class:`UnrecoverableError` when the command cannot succeed any more, and
        always once it has outlived its retry window (even after deleting)."""
        cmd = entry.command
        with self._lock:
            window = retry_duration(len(self._by_pid))
        created = cmd.creation_time or self.ctx.clock.now()
        elapsed = (self.ctx.clock.now() - created).total_seconds()
        done = self._step(entry)
        if elapsed > window:
            raise UnrecoverableError(f"command reached timeout after {elapsed:.0f}s")
        return done

    def _step(self, entry: _Entry) -> bool:
        cmd = entry.command
        waiting = False
        for i, name in enumerate(entry.replacement_names):
            if entry.initialized[i]:
                continue
            try:
                nc = self.ctx.kube.get(NODECLAIMS, name)
            except NotFound:
                if not self.cluster.nodeclaim_exists(name):
                    raise UnrecoverableError(f"replacement {name} was deleted") from None
                waiting = True
                continue
            self.ctx.recorder.publish(events.launching(nc, cmd.reason))
            cond = condition_of(nc, CONDITION_INITIALIZED)
            if cond is None or cond.get("status") != "True":
                self.ctx.recorder.publish(events.waiting_on_readiness(nc))
                waiting = True
                continue
            entry.initialized[i] = True
        if waiting:
            return False
        ok = True
        for c in cmd.candidates:
            try:
                self.ctx.kube.delete(NODECLAIMS, c.nodeclaim_name())
            except NotFound:
                continue
            except ApiError as e:
                log.warning("deleting nodeclaim %s for %s: %s", c.nodeclaim_name(), cmd, e)
                ok = False
                continue
            self.ctx.recorder.publish(
                *events.terminating(c.state_node.node, c.nodeclaim, cmd.reason)
            )
            self._count_disrupted(cmd, c)
        return ok

    def _count_disrupted(self, cmd: Command, c: Candidate) -> None:
        labels = disrupted_labels(c.nodeclaim.to_dict(), metric_reason(cmd.reason))
        if cmd.consolidation_type:
            disruption = c.nodepool.spec.disruption
            policy = (disruption.consolidation_policy if disruption is not None else None) or ""
            labels[metrics.LABEL_CONSOLIDATION_POLICY] = metric_reason(policy)
        metrics.NODECLAIMS_DISRUPTED_TOTAL.labels(**labels).inc()
        metrics.PODS_DISRUPTION_INITIATED_TOTAL.labels(**labels).inc(len(c.reschedulable_pods))

    def _fail(self, entry: _Entry, why: str) -> None:
        cmd = entry.command
        failed = sum(1 for ok in entry.initialized if not ok)
        metrics.VOLUNTARY_DISRUPTION_QUEUE_FAILURES_TOTAL.labels(
            decision=cmd.decision,
            reason=metric_reason(cmd.reason),
            consolidation_type=cmd.consolidation_type,
        ).inc(failed)
        problems = [why]
        for c in cmd.candidates:
            try:
                require_no_schedule_taint(self.ctx, c.state_node, False)
                clear_disruption_reason(self.ctx, c.state_node)
            except ApiError as e:
                problems.append(f"{c.name()}: {e}")
        log.error(
            "failed terminating nodes while executing a disruption command (%s): %s",
            cmd,
            "; ".join(problems),
        )
        self._complete(entry, succeeded=False)

    def _complete(self, entry: _Entry, *, succeeded: bool) -> None:
        pids = [c.provider_id() for c in entry.command.candidates]
        if not succeeded:
            self.cluster.unmark_for_deletion(*pids)
        with self._lock:
            for pid in pids:
                if self._by_pid.get(pid) is entry:
                    del self._by_pid[pid]

    def provider_ids(self) -> Sequence[str]:
        with self._lock:
            return sorted(self._by_pid)
