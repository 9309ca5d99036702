"""The ``disruption`` singleton: one pass over the disruption methods every 10 seconds
(upstream ``controller.go``; spec disruption §3).

Each pass: wait for cluster state to be synced; undo what a crash may have left behind (the
disrupted taint and ``DisruptionReason`` on nodes no command owns); then try the methods in
order — emptiness, static drift, drift, multi-node and single-node consolidation, and
plugin methods at their ``order`` — and stop at the first one that starts a command,
coming back at once for the next.

Validation does not sleep. A method whose commands must be re-checked after a wait
(:class:`~.types.ValidatingMethod`) has its command *held*: the pass ends, the controller
returns when the validation period is over — meanwhile every other controller runs, so pods
bind and nodes change as they would during upstream's blocking wait — and then validates
and starts it, or, if it no longer holds, carries on with the methods after it, as upstream
does within one pass. Nothing is tainted while a command is held.

A command may hold node counts reserved by its method (static drift's replacements); they
are given back by the provisioner once it attempts them, so every command this controller
drops before handing it to the queue — a no-op, one that fails validation, the rest of a
batch cut short by an error — gives them back here (:func:`release_reservations`).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import attrs
from attrs import define

from karpenter_core import metrics
from karpenter_core.apis.labels import DISRUPTED_TAINT_KEY
from karpenter_core.apis.v1 import CONDITION_DISRUPTION_REASON
from karpenter_core.controllers.disruption.budgets import budget_errors, build_budget_mapping
from karpenter_core.controllers.disruption.candidates import (
    NodePoolCatalog,
    build_nodepool_catalog,
    get_candidates,
)
from karpenter_core.controllers.disruption.queue import (
    Queue,
    QueueError,
    clear_disruption_reason,
    require_no_schedule_taint,
)
from karpenter_core.controllers.disruption.simulation import pass_scope
from karpenter_core.controllers.disruption.staticdrift import release_reservations
from karpenter_core.controllers.disruption.types import (
    DECISION_NOOP,
    Command,
    DisruptionContext,
    Method,
    PassAware,
    ValidatingMethod,
    ValidationError,
)
from karpenter_core.controllers.disruption.validation import VALIDATION_PERIOD
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
    method: Any
    commands: list[Command]
    ready_at: float


def _has_disrupted_taint(sn: StateNode) -> bool:
    if sn.node is None:
        return False
    return any(t.key == DISRUPTED_TAINT_KEY for t in sn.node.taints)


def _has_disruption_reason(sn: StateNode) -> bool:
    nc = sn.nodeclaim
    return nc is not None and nc.condition(CONDITION_DISRUPTION_REASON) is not None


class DisruptionController:
    """The ``disruption`` singleton reconciler."""

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
        self.methods = list(methods)
        self.validation_period = validation_period
        self._held: _Held | None = None
        self._last_run: dict[str, float] = {}
        self._ids = 0
        self.started: deque[Command] = deque(maxlen=STARTED_KEPT)
        """The latest commands this controller started (newest last), for reports and
        tests; bounded so a long-running operator does not keep them all."""
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
        if self._held is not None:
            held = self._held
            wait = held.ready_at - clock.monotonic()
            if wait > 0:
                return Result.after(wait)
            self._held = None
            validated = self._validate(held)
            if validated:
                return self._start(held.method, validated)
            start = held.index + 1
        try:
            catalog = build_nodepool_catalog(self.dctx)
        except ApiError as e:
            log.error("disruption: listing nodepools: %s", e)
            return Result(requeue=True)
        self._log_invalid_budgets(catalog)
        for index in range(start, len(self.methods)):
            method = self.methods[index]
            self._last_run[type(method).__name__] = clock.monotonic()
            try:
                commands = self._compute(method, catalog)
            except ApiError as e:
                if e.code < 500 and e.code != 429:
                    log.warning("disruption method %s failed: %s", type(method).__name__, e)
                    continue
                # the API server, not the method, failed: the other methods would too
                suppressed = _API_FAILURES.admit(e.code)
                if suppressed is not None:
                    log.warning(
                        "disruption method %s: %s; retrying%s",
                        type(method).__name__,
                        e,
                        held_back(suppressed),
                    )
                return Result(requeue=True)
            except Exception:
                log.exception("disruption method %s failed", type(method).__name__)
                continue
            if not commands:
                continue
            if isinstance(method, ValidatingMethod):
                if self.validation_period > 0:
                    self._held = _Held(
                        index, method, commands, clock.monotonic() + self.validation_period
                    )
                    return Result.after(self.validation_period)
                commands = self._validate(_Held(index, method, commands, 0.0))
                if not commands:
                    continue
            return self._start(method, commands)
        return Result.after(POLLING_PERIOD)

    def _compute(self, method: Method, catalog: NodePoolCatalog) -> list[Command]:
        """Candidates, budgets and the method's decision (upstream ``disrupt``, up to
        starting the commands). The NodePools and their instance types are read once per
        pass; cluster state afresh for every method."""
        reason = method.reason.lower()
        started = time.perf_counter()
        try:
            with pass_scope(self.dctx):
                return self._decide(method, catalog)
        finally:
            metrics.VOLUNTARY_DISRUPTION_DECISION_EVALUATION_DURATION_SECONDS.labels(
                reason=reason, consolidation_type=method.consolidation_type
            ).observe(time.perf_counter() - started)

    def _decide(self, method: Method, catalog: NodePoolCatalog) -> list[Command]:
        state_nodes = self.dctx.cluster.state_nodes()
        every = get_candidates(
            self.dctx, method.disruption_class, state_nodes=state_nodes, catalog=catalog
        )
        if isinstance(method, PassAware):
            method.begin_pass(every, state_nodes)
        candidates = [c for c in every if method.should_disrupt(c)]
        metrics.VOLUNTARY_DISRUPTION_ELIGIBLE_NODES.labels(reason=method.reason.lower()).set(
            len(candidates)
        )
        if not candidates:
            return []
        budgets = build_budget_mapping(self.dctx, method.reason, catalog, state_nodes)
        commands = method.compute_commands(budgets, candidates)
        return self._drop_noops(commands)

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

    def _validate(self, held: _Held) -> list[Command]:
        out = []
        for i, cmd in enumerate(held.commands):
            try:
                out.append(held.method.validate(cmd))
            except ValidationError as e:
                self._release([cmd])
                log.debug(
                    "abandoning %s command, it is no longer valid (%s): %s",
                    held.method.reason,
                    e.kind,
                    e.message,
                )
            except BaseException:
                self._release([*out, *held.commands[i:]])
                raise
        return self._drop_noops(out)

    def _start(self, method: Any, commands: Sequence[Command]) -> Result:
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
                self.started.append(queued)
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
        queue = self.queue
        for sn in self.dctx.cluster.state_nodes():
            if sn.marked_for_deletion or queue.has_any(sn.provider_id()):
                continue
            if _has_disrupted_taint(sn):
                require_no_schedule_taint(self.dctx.ctx, sn, False)
            if _has_disruption_reason(sn):
                clear_disruption_reason(self.dctx.ctx, sn)

    def _log_abnormal_runs(self) -> None:
        now = self.dctx.clock.monotonic()
        for name, at in self._last_run.items():
            if now - at > ABNORMAL_RUN_GAP:
                log.debug("abnormal time between runs: %s (%.0fs)", name, now - at)

    def _log_invalid_budgets(self, catalog: NodePoolCatalog) -> None:
        now = self.dctx.clock.now()
        problems = []
        for name in sorted(catalog.nodepools):
            errors = budget_errors(catalog.nodepools[name], now)
            if errors:
                problems.append(
                    f"invalid disruption budgets in nodepool {name}, {'; '.join(errors)}"
                )
        if problems:
            log.error("detected disruption budget errors: %s", " ".join(problems))
