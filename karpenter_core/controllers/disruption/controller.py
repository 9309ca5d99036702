"""The ``disruption`` singleton: one pass over the disruption methods every 10 seconds
(upstream ``controller.go``; spec disruption §3).

Each pass: wait for cluster state to be synced; undo what a crash may have left behind (the
disrupted taint and ``DisruptionReason`` on nodes no command owns); take the pass's
:class:`~karpenter_core.disruption.snapshot.DisruptionSnapshot` (the only time a pass lists
from the API server); then try the methods in order — emptiness, static drift, drift,
multi-node and single-node consolidation, and plugin methods at their ``order`` — and stop
at the first one that starts a command, coming back at once for the next.

For each method the controller builds the candidates of its disruption class (once per
class and pass), keeps those it wants, computes the budgets of its reason and asks it for
commands — all functions of the snapshot (:mod:`karpenter_core.disruption`) that return
notices next to their answers; publishing those as events, reserving node counts and
starting commands through the orchestration queue is the controller's part. The snapshot
gets the scheduling simulation's inputs only when a method has candidates to decide on.

Validation does not sleep. A method whose commands must be re-checked after a wait
(:class:`~karpenter_core.disruption.types.ValidatingMethod`) has its command *held*: the
pass ends, the controller returns when the validation period is over — meanwhile every
other controller runs, so pods bind and nodes change as they would during upstream's
blocking wait — and then validates it against a new snapshot and starts it, or, if it no
longer holds, carries on with the methods after it, as upstream does within one pass.
Nothing is tainted while a command is held.

A command may hold node counts (static drift's replacements), reserved when its method
decided; they are given back by the provisioner once it attempts them, so every command
this controller drops before handing it to the queue — a no-op, one that fails validation,
the rest of a batch cut short by an error — gives them back here
(:func:`~karpenter_core.disruption.replacements.release_reservations`).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Sequence

import attrs
from attrs import define

from karpenter_core import metrics
from karpenter_core.apis.labels import DISRUPTED_TAINT_KEY
from karpenter_core.controllers.disruption import events
from karpenter_core.controllers.disruption.context import DisruptionContext
from karpenter_core.controllers.disruption.legacy import adapt, method_name
from karpenter_core.controllers.disruption.queue import (
    Queue,
    QueueError,
    clear_disruption_reason,
    require_no_schedule_taint,
)
from karpenter_core.controllers.disruption.snapshot import take_snapshot, with_simulation
from karpenter_core.disruption.budgets import budget_errors, budget_mapping
from karpenter_core.disruption.candidates import CandidateSet, filter_candidates, get_candidates
from karpenter_core.disruption.notices import Notice
from karpenter_core.disruption.replacements import release_reservations, reserve_replacements
from karpenter_core.disruption.snapshot import DisruptionSnapshot
from karpenter_core.disruption.types import (
    DECISION_NOOP,
    Command,
    Decision,
    Method,
    PassAware,
    RecordedReplacement,
    ValidatingMethod,
    ValidationError,
)
from karpenter_core.disruption.validation import VALIDATION_PERIOD
from karpenter_core.kube.client import ApiError, Conflict
from karpenter_core.runtime.logthrottle import LogThrottle, held_back
from karpenter_core.runtime.reconciler import Result
from karpenter_core.state.statenode import StateNode

__all__ = [
    "ABNORMAL_RUN_GAP",
    "IMMEDIATELY",
    "NAME",
    "POLLING_PERIOD",
    "DisruptionController",
]

log = logging.getLogger("karpenter.disruption")

_API_FAILURES = LogThrottle(30.0)

NAME = "disruption"
POLLING_PERIOD = 10.0
UNSYNCED_REQUEUE = 1.0
IMMEDIATELY = 0.001
"""A pass that started a command comes back at once (upstream ``RequeueImmediately``)."""
ABNORMAL_RUN_GAP = 15 * 60.0
STARTED_KEPT = 1000
_ID_NAMESPACE = uuid.UUID("6c1f0c2e-6f57-4f39-9d2d-6b1c4e0a5d11")


@define
class _Held:
    """Commands waiting out the validation period."""

    index: int
    method: ValidatingMethod
    commands: list[Command]
    ready_at: float


class _Pass:
    """What one pass's methods share: its snapshot (given the simulation's inputs when a
    method first has candidates) and each disruption class's candidates."""

    def __init__(self, dctx: DisruptionContext, snapshot: DisruptionSnapshot) -> None:
        self.dctx = dctx
        self.snapshot = snapshot
        self._candidates: dict[str, CandidateSet] = {}

    def candidates(self, disruption_class: str) -> tuple[CandidateSet, bool]:
        """The class's candidates, and whether they were just built (their notices are
        then still to be published)."""
        found = self._candidates.get(disruption_class)
        if found is not None:
            return found, False
        found = self._candidates[disruption_class] = get_candidates(self.snapshot, disruption_class)
        return found, True

    def simulating(self) -> DisruptionSnapshot:
        """The snapshot with the simulation's inputs (listed the first time)."""
        self.snapshot = with_simulation(self.dctx, self.snapshot)
        return self.snapshot


def _unpack(decision: Decision | Sequence[Command]) -> tuple[list[Command], list[Notice]]:
    if isinstance(decision, Decision):
        return list(decision.commands), list(decision.notices)
    return list(decision), []


def _has_disrupted_taint(sn: StateNode) -> bool:
    if sn.node is None:
        return False
    return any(t.key == DISRUPTED_TAINT_KEY for t in sn.node.taints)


def _has_disruption_reason(sn: StateNode) -> bool:
    view = sn.nodeclaim_view
    return view is not None and view.has_disruption_reason


class DisruptionController:
    """The ``disruption`` singleton reconciler. ``methods`` written before snapshots are
    adapted (:mod:`.legacy`)."""

    def __init__(
        self,
        dctx: DisruptionContext,
        queue: Queue,
        methods: Sequence[Method],
        *,
        validation_period: float = VALIDATION_PERIOD,
    ) -> None:
        self.dctx = dctx
        self.queue = queue
        self.methods: list[Method] = [adapt(m, dctx) for m in methods]
        self.validation_period = validation_period
        self._held: _Held | None = None
        self._last_run: dict[str, float] = {}
        self._ids = 0
        self.started: deque[Command] = deque(maxlen=STARTED_KEPT)
        """The latest commands this controller started (newest last), for reports and
        tests; bounded so a long-running operator does not keep them all, and kept without
        their scheduling simulation (``results``), which holds the solver's view of the
        whole cluster at that pass (a thousand of those grew a 5,000-node simulation by
        gigabytes), and with their replacements recorded (:class:`RecordedReplacement`),
        not the solver's NodeClaims, which hold that pass's instance-type index."""
        self._on_start: list[Callable[[Command], None]] = []

    def on_start(self, fn: Callable[[Command], None]) -> None:
        """Call ``fn(command)`` after each command starts (reports)."""
        self._on_start.append(fn)

    # ------------------------------------------------------------------ the pass

    def reconcile(self) -> Result:
        clock = self.dctx.clock
        self._log_abnormal_runs()
        self._last_run["disruption-loop"] = clock.monotonic()
        if not self.dctx.cluster.synced():
            return Result.after(UNSYNCED_REQUEUE)
        try:
            self._cleanup()
        except Conflict:
            return Result(requeue=True)
        start = 0
        snapshot: DisruptionSnapshot | None = None
        if self._held is not None:
            held = self._held
            wait = held.ready_at - clock.monotonic()
            if wait > 0:
                return Result.after(wait)
            self._held = None
            validated, snapshot = self._validate(held)
            if validated:
                return self._start(held.method, validated)
            start = held.index + 1
        if snapshot is None:
            try:
                snapshot = take_snapshot(self.dctx)
            except ApiError as e:
                log.error("disruption: listing nodepools and budgets: %s", e)
                return Result(requeue=True)
        # else the methods after a command that failed validation decide on the snapshot
        # it was validated against: nothing ran in between (upstream's next method reads
        # cluster state again at that same moment)
        self._log_invalid_budgets(snapshot)
        pass_ = _Pass(self.dctx, snapshot)
        for index in range(start, len(self.methods)):
            method = self.methods[index]
            name = method_name(method)
            self._last_run[name] = clock.monotonic()
            try:
                commands = self._compute(method, pass_)
            except ApiError as e:
                if e.code < 500 and e.code != 429:
                    log.warning("disruption method %s failed: %s", name, e)
                    continue
                # the API server, not the method, failed: the other methods would too
                suppressed = _API_FAILURES.admit(e.code)
                if suppressed is not None:
                    log.warning(
                        "disruption method %s: %s; retrying%s", name, e, held_back(suppressed)
                    )
                return Result(requeue=True)
            except Exception:
                log.exception("disruption method %s failed", name)
                continue
            if not commands:
                continue
            if isinstance(method, ValidatingMethod):
                if self.validation_period > 0:
                    self._held = _Held(
                        index, method, commands, clock.monotonic() + self.validation_period
                    )
                    return Result.after(self.validation_period)
                commands, _ = self._validate(_Held(index, method, commands, 0.0))
                if not commands:
                    continue
            return self._start(method, commands)
        return Result.after(POLLING_PERIOD)

    def _compute(self, method: Method, pass_: _Pass) -> list[Command]:
        """Candidates, budgets and the method's decision (upstream ``disrupt``, up to
        starting the commands), with the node counts its commands need reserved."""
        reason = method.reason.lower()
        started = time.perf_counter()
        try:
            return self._decide(method, pass_)
        finally:
            metrics.VOLUNTARY_DISRUPTION_DECISION_EVALUATION_DURATION_SECONDS.labels(
                reason=reason, consolidation_type=method.consolidation_type
            ).observe(time.perf_counter() - started)

    def _decide(self, method: Method, pass_: _Pass) -> list[Command]:
        snapshot = pass_.snapshot
        every, fresh = pass_.candidates(method.disruption_class)
        if fresh:
            self._publish(every.notices)
        if isinstance(method, PassAware):
            method.begin_pass(snapshot, every.candidates)
        notices: list[Notice] = []
        candidates = filter_candidates(
            every.candidates, lambda c: method.should_disrupt(snapshot, c), notices
        )
        self._publish(notices)
        metrics.VOLUNTARY_DISRUPTION_ELIGIBLE_NODES.labels(reason=method.reason.lower()).set(
            len(candidates)
        )
        if not candidates:
            return []
        snapshot = pass_.simulating()
        budgets = budget_mapping(snapshot, method.reason)
        self._publish(budgets.notices)
        commands, notices = _unpack(
            method.compute_commands(snapshot, budgets.remaining, candidates)
        )
        self._publish(notices)
        kept = [c for c in commands if c.decision != DECISION_NOOP]
        return reserve_replacements(self.dctx.cluster.nodepool_state, kept)

    def _publish(self, notices: Iterable[Notice]) -> None:
        recorder = self.dctx.recorder
        for notice in notices:
            recorder.publish(*events.render(notice))

    def _release(self, commands: Sequence[Command]) -> None:
        """Give back what dropped commands hold reserved (they never reach the queue)."""
        state = self.dctx.cluster.nodepool_state
        for cmd in commands:
            release_reservations(state, cmd.replacements)

    def _drop_noops(self, commands: Sequence[Command]) -> list[Command]:
        kept = [c for c in commands if c.decision != DECISION_NOOP]
        if len(kept) != len(commands):
            self._release([c for c in commands if c.decision == DECISION_NOOP])
        return kept

    def _validate(self, held: _Held) -> tuple[list[Command], DisruptionSnapshot]:
        """The held commands that still hold, against a snapshot taken now (returned too)."""
        try:
            snapshot = take_snapshot(self.dctx, simulation=True)
        except BaseException:
            self._release(held.commands)
            raise
        out: list[Command] = []
        for i, cmd in enumerate(held.commands):
            try:
                validated = held.method.validate(snapshot, cmd)
            except ValidationError as e:
                self._publish(e.notices)
                self._release([cmd])
                log.debug(
                    "abandoning %s command, it is no longer valid (%s): %s",
                    held.method.reason,
                    e.kind,
                    e.message,
                )
                continue
            except BaseException:
                self._release([*out, *held.commands[i:]])
                raise
            if isinstance(validated, Command):
                out.append(validated)
                continue
            commands, notices = _unpack(validated)
            self._publish(notices)
            out.extend(commands)
        return self._drop_noops(out), snapshot

    def _start(self, method: Method, commands: Sequence[Command]) -> Result:
        now = self.dctx.clock.now()
        failed = False
        handed = 0  # commands given to the queue (which then owns their reservations)
        try:
            for cmd in commands:
                self._ids += 1
                stamped = attrs.evolve(
                    cmd,
                    method=method,
                    creation_time=now,
                    id=str(uuid.uuid5(_ID_NAMESPACE, f"{now.isoformat()}/{self._ids}")),
                )
                handed += 1
                try:
                    queued = self.queue.start_command(stamped)
                except (QueueError, ApiError) as e:
                    log.error("disrupting candidates (%s): %s", stamped, e)
                    failed = True
                    continue
                recorded = tuple(RecordedReplacement.of(r) for r in queued.replacements)
                self.started.append(attrs.evolve(queued, results=None, replacements=recorded))
                for fn in self._on_start:
                    try:
                        fn(queued)
                    except Exception:
                        log.exception("disruption start listener failed")
        finally:
            self._release(commands[handed:])
        if failed:
            return Result(requeue=True)
        return Result.after(IMMEDIATELY)

    # ------------------------------------------------------------------ housekeeping

    def _cleanup(self) -> None:
        """Remove the disrupted taint and ``DisruptionReason`` from nodes no command owns
        (a crash between tainting and enqueuing, or a command that was rolled back while
        a write failed). Only nodes whose cached state shows either are written."""
        queued = set(self.queue.provider_ids())
        # find them reading the nodes in place; copy only those to write (outside the lock)
        with self.dctx.cluster.state_nodes_view() as nodes:
            stale = [
                (sn.copy(), _has_disrupted_taint(sn), _has_disruption_reason(sn))
                for sn in nodes
                if not sn.marked_for_deletion
                and sn.provider_id() not in queued
                and (_has_disrupted_taint(sn) or _has_disruption_reason(sn))
            ]
        for sn, tainted, reasoned in stale:
            if tainted:
                require_no_schedule_taint(self.dctx.ctx, sn, False)
            if reasoned:
                clear_disruption_reason(self.dctx.ctx, sn)

    def _log_abnormal_runs(self) -> None:
        now = self.dctx.clock.monotonic()
        for name, at in self._last_run.items():
            if now - at > ABNORMAL_RUN_GAP:
                log.debug("abnormal time between runs: %s (%.0fs)", name, now - at)

    def _log_invalid_budgets(self, snapshot: DisruptionSnapshot) -> None:
        problems = []
        for name in sorted(snapshot.nodepools):
            errors = budget_errors(snapshot.nodepools[name], snapshot.now)
            if errors:
                problems.append(
                    f"invalid disruption budgets in nodepool {name}, {'; '.join(errors)}"
                )
        if problems:
            log.error("detected disruption budget errors: %s", " ".join(problems))
