"""The Manager runs controllers: in threads against a wall clock, or as a deterministic
discrete-event loop against a :class:`VirtualClock`.

Both modes share everything that matters: the same :class:`WorkQueue` semantics, the same
result handling, the same watch-to-key wiring. On a virtual clock a single thread does all
the work: deliver pending watch events, run one ready reconcile, and when nothing is ready,
jump the clock to the next timer (a delayed requeue, a back-off, a sim kubelet's timer).
The order is fixed by registration order (round-robin over controllers with ready work),
or by a seeded shuffle when ``seed`` is given — the same inputs and seed give the same run.

By default a reconcile takes no virtual time. Given a :class:`ComputeCharge`, the virtual
Manager charges each reconcile's measured compute to the clock ("faithful time"): its
controllers share one worker, as the loop above already runs them one at a time, and a
reconcile that computes for 10 s ends 10 s later; timers falling due meanwhile (a requeue,
another component's timer) fire after it ends, at its end time.

On a wall clock, a Manager given ``informers`` feeds its controllers from those shared
caches instead of opening a watch per controller: against a real API server the process
then keeps one list+watch per resource, and reads served from the same caches
(:class:`~karpenter_core.kube.cache.CachedClient`) see every object a controller is
woken for.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Hashable, Iterable
from datetime import datetime
from typing import Any

from karpenter_core.kube.client import ApiError, Gone, KubeClient, WatchEvent, WatchStream
from karpenter_core.kube.informer import Handler, Informer, SharedInformers
from karpenter_core.runtime.clock import Clock, ComputeCharge, VirtualClock
from karpenter_core.runtime.logthrottle import LogThrottle, held_back
from karpenter_core.runtime.reconciler import Reconciler, Result, SingletonReconciler, Watch
from karpenter_core.runtime.scope import controller_scope
from karpenter_core.runtime.workqueue import RateLimiter, ShutDown, WorkQueue

__all__ = ["Controller", "LivelockError", "Manager"]

log = logging.getLogger("karpenter.runtime")

BOOKMARK = "BOOKMARK"
GUARD_RETRY = 1.0
WATCH_BACKOFF = 0.5
WATCH_MAX_BACKOFF = 10.0

_OUTAGE_FAILURES = LogThrottle(30.0)


class LivelockError(RuntimeError):
    """Controllers kept reconciling without virtual time moving on."""


class Controller:
    """One reconciler with its queue, workers and counters."""

    def __init__(
        self,
        name: str,
        reconciler: Reconciler | SingletonReconciler,
        queue: WorkQueue[Any],
        *,
        singleton: bool,
        workers: int,
        watches: tuple[Watch, ...],
        charged: bool = True,
    ) -> None:
        self.name = name
        self.charged = charged
        """Whether a Manager's :class:`ComputeCharge` applies to this controller."""
        self.reconciler = reconciler
        self.queue = queue
        self.singleton = singleton
        self.workers = workers
        self.watches = watches
        self.reconciles = 0
        self.errors = 0
        self.charged_seconds = 0.0
        """Virtual time charged for this controller's compute (see :class:`ComputeCharge`)."""
        self.last_error: BaseException | None = None
        self._lock = threading.Lock()

    @property
    def singleton_key(self) -> str:
        return f"singleton:{self.name}"

    def enqueue(self, key: Hashable) -> None:
        self.queue.add(key)

    def trigger(self) -> None:
        """Run a singleton as soon as possible (e.g. when a batch window opens)."""
        if not self.singleton:
            raise TypeError(f"controller {self.name!r} is keyed: enqueue a key instead")
        self.queue.add(self.singleton_key)

    def run_one(self, key: Any) -> Result | None:
        """Reconcile ``key`` and requeue it according to the outcome; never raises.

        The reconcile runs inside :func:`controller_scope` with this controller's name, so
        metrics recorded below it (cloud-provider calls, scheduling simulations) carry the
        ``controller`` label without the controller having to set it."""
        with self._lock:
            self.reconciles += 1
        try:
            with controller_scope(self.name):
                if self.singleton:
                    result = self.reconciler.reconcile()  # type: ignore[call-arg]
                else:
                    result = self.reconciler.reconcile(key)  # type: ignore[call-arg]
            if result is None:
                result = Result()
            if not isinstance(result, Result):
                raise TypeError(
                    f"controller {self.name!r}: reconcile returned {type(result).__name__}, expected Result"
                )
        except Exception as e:
            with self._lock:
                self.errors += 1
                self.last_error = e
            self._log_failure(key, e)
            self.queue.add_rate_limited(key)
            return None
        if result.requeue_after > 0:
            self.queue.forget(key)
            self.queue.add_after(key, result.requeue_after)
        elif result.requeue:
            self.queue.add_rate_limited(key)
        else:
            self.queue.forget(key)
        return result

    def _log_failure(self, key: Any, e: Exception) -> None:
        # An unreachable or overloaded API server fails every key of every controller at
        # once: one line per controller and status per interval. An API error is no bug
        # of ours, so it gets no traceback even when wrapped. Anything else is a problem
        # of this object, worth its own line and its traceback.
        api = _api_error_in(e)
        if api is not None and (api.code >= 500 or api.code == 429):
            held = _OUTAGE_FAILURES.admit((self.name, api.code))
            if held is None:
                return
            log.warning(
                "controller %s: reconcile %s failed: %s%s", self.name, key, e, held_back(held)
            )
            return
        log.warning(
            "controller %s: reconcile %s failed: %s",
            self.name,
            key,
            e,
            exc_info=api is None,
        )


def _api_error_in(e: BaseException) -> ApiError | None:
    """The API error ``e`` is or was raised from (its ``__cause__``/``__context__`` chain)."""
    seen: set[int] = set()
    current: BaseException | None = e
    while current is not None and id(current) not in seen:
        if isinstance(current, ApiError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


class _Feed:
    """One watch of one controller: the stream, where it got to, and how to map events."""

    def __init__(self, controller: Controller, spec: Watch) -> None:
        self.controller = controller
        self.spec = spec
        self.stream: WatchStream | None = None
        self.resource_version: str | None = None
        self.events = 0

    def open(self, client: KubeClient) -> None:
        try:
            self.stream = self._watch(client, self.resource_version)
        except Gone:
            self.resource_version = None
            self.stream = self._watch(client, None)

    def _watch(self, client: KubeClient, rv: str | None) -> WatchStream:
        return client.watch(
            self.spec.resource,
            self.spec.namespace,
            resource_version=rv,
            label_selector=self.spec.label_selector,
            field_selector=self.spec.field_selector,
            allow_watch_bookmarks=True,
        )

    def handle(self, event: WatchEvent) -> None:
        rv = (event.object.get("metadata") or {}).get("resourceVersion")
        if rv:
            self.resource_version = str(rv)
        if event.type == BOOKMARK:
            return
        self.events += 1
        spec = self.spec
        if spec.predicate is not None and not spec.predicate(event.type, event.object):
            return
        for key in spec.mapper(event.type, event.object):
            self.controller.enqueue(key)


class Manager:
    """Registers controllers and runs them (see the module docstring)."""

    def __init__(
        self,
        clock: Clock,
        client: KubeClient | None = None,
        *,
        seed: int | None = None,
        max_reconciles_per_instant: int = 10_000_000,
        max_reconciles_per_key: int = 1_000,
        informers: SharedInformers | None = None,
        guard: Callable[[], None] | None = None,
        charge: ComputeCharge | None = None,
    ) -> None:
        """``guard`` (wall clock only) runs before every reconcile; when it raises, the
        key waits :data:`GUARD_RETRY` seconds instead of being reconciled (``serve`` passes
        the leader elector's check, so a replica that lost its lease acts on nothing).

        ``charge`` (virtual clock only) charges each reconcile's measured compute to the
        clock; several Managers may share one to total their charges (a restarted one)."""
        if charge is not None and not isinstance(clock, VirtualClock):
            raise ValueError(
                "charging compute time needs a VirtualClock (a wall clock already does)"
            )
        self.clock = clock
        self.charge = charge
        self._guard = guard
        self.client = client
        self.informers = informers
        self.virtual = isinstance(clock, VirtualClock)
        self._rng = random.Random(seed) if seed is not None else None
        self._controllers: list[Controller] = []
        self._by_name: dict[str, Controller] = {}
        self._feeds: list[_Feed] = []
        self._pumped_at: tuple[int, int] | None = None
        self._handlers: list[tuple[Informer, Handler]] = []
        self._started = False
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._rr = 0
        # Livelock detection on a virtual clock: one key reconciled over and over without
        # time moving on and without the cluster changing in between. Counted per key, so
        # a burst of many distinct keys at one instant (150,000 pods created at once) is
        # not mistaken for one; a key that other controllers' writes keep waking (the
        # kube-scheduler's pass while 4,500 pods are evicted one by one) starts its count
        # again after every watch event, as it is making progress; the total is a backstop
        # for loops that write.
        self._max_per_instant = max_reconciles_per_instant
        self._max_per_key = max_reconciles_per_key
        self._instant = -1
        self._instant_count = 0
        self._instant_keys: dict[tuple[str, Hashable], tuple[int, int]] = {}
        self._events_handled = 0
        self._charged_ns = 0

    # ------------------------------------------------------------------ registration

    def add_controller(
        self,
        name: str,
        reconciler: Reconciler,
        *,
        watches: Iterable[Watch] = (),
        workers: int = 1,
        rate_limiter: RateLimiter | None = None,
        charged: bool = True,
    ) -> Controller:
        """Register a keyed controller fed by ``watches`` (and by :meth:`enqueue`).

        ``charged=False`` keeps it out of the Manager's :class:`ComputeCharge`: for a
        bookkeeping controller that is no part of the system being timed."""
        return self._add(
            name,
            reconciler,
            singleton=False,
            watches=tuple(watches),
            workers=workers,
            rate_limiter=rate_limiter,
            charged=charged,
        )

    def add_singleton(
        self, name: str, reconciler: SingletonReconciler, *, rate_limiter: RateLimiter | None = None
    ) -> Controller:
        """Register a singleton: reconciled once at start, then as its results ask."""
        return self._add(
            name, reconciler, singleton=True, watches=(), workers=1, rate_limiter=rate_limiter
        )

    def _add(
        self,
        name: str,
        reconciler: Reconciler | SingletonReconciler,
        *,
        singleton: bool,
        watches: tuple[Watch, ...],
        workers: int,
        rate_limiter: RateLimiter | None,
        charged: bool = True,
    ) -> Controller:
        if not name:
            raise ValueError("a controller needs a name")
        if name in self._by_name:
            raise ValueError(f"a controller named {name!r} is already registered")
        if workers < 1:
            raise ValueError(f"controller {name!r}: workers must be at least 1, got {workers}")
        if not callable(getattr(reconciler, "reconcile", None)):
            raise TypeError(
                f"controller {name!r}: {type(reconciler).__name__} has no reconcile() method"
            )
        if watches and self.client is None:
            raise ValueError(
                f"controller {name!r} watches resources but the manager has no KubeClient"
            )
        if self._started:
            raise RuntimeError(f"cannot add controller {name!r}: the manager has already started")
        queue: WorkQueue[Any] = WorkQueue(self.clock, rate_limiter, name=name)
        controller = Controller(
            name,
            reconciler,
            queue,
            singleton=singleton,
            workers=workers,
            watches=watches,
            charged=charged,
        )
        self._controllers.append(controller)
        self._by_name[name] = controller
        return controller

    def controller(self, name: str) -> Controller:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no controller named {name!r}; have {sorted(self._by_name)}") from None

    @property
    def controllers(self) -> list[Controller]:
        return list(self._controllers)

    def enqueue(self, controller: str, key: Hashable) -> None:
        """Queue ``key`` for the named controller (e.g. from another controller)."""
        self.controller(controller).enqueue(key)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Open the watches and queue the singletons; on a wall clock, start the threads."""
        if self._started:
            return
        self._started = True
        shared = self.informers if not self.virtual else None
        for controller in self._controllers:
            for spec in controller.watches:
                if shared is not None:
                    # one list+watch per resource for the whole process, feeding every
                    # controller and the cache reads are served from
                    inf = shared.informer(
                        spec.resource,
                        spec.namespace,
                        label_selector=spec.label_selector,
                        field_selector=spec.field_selector,
                    )
                    self._handlers.append((inf, inf.feed(spec, controller.enqueue)))
                else:
                    self._feeds.append(_Feed(controller, spec))
            if controller.singleton:
                controller.enqueue(controller.singleton_key)
        if self.virtual:
            assert self.client is not None or not self._feeds
            for feed in self._feeds:
                feed.open(self.client)  # type: ignore[arg-type]
            return
        for feed in self._feeds:
            t = threading.Thread(
                target=self._watch_loop,
                args=(feed,),
                name=f"watch-{feed.controller.name}",
                daemon=True,
            )
            self._threads.append(t)
        for controller in self._controllers:
            for i in range(controller.workers):
                t = threading.Thread(
                    target=self._worker,
                    args=(controller,),
                    name=f"{controller.name}-{i}",
                    daemon=True,
                )
                self._threads.append(t)
        for t in self._threads:
            t.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop watches and queues and wait (up to ``timeout`` each) for the threads."""
        self._stopping.set()
        for inf, handler in self._handlers:
            inf.remove_handler(handler)
        for feed in self._feeds:
            if feed.stream is not None:
                feed.stream.stop()
        for controller in self._controllers:
            controller.queue.shut_down()
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(timeout)

    def __enter__(self) -> Manager:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ real time

    def _worker(self, controller: Controller) -> None:
        while not self._stopping.is_set():
            try:
                key = controller.queue.get()
            except ShutDown:
                return
            try:
                if self._guard is not None:
                    try:
                        self._guard()
                    except Exception:
                        controller.queue.add_after(key, GUARD_RETRY)
                        continue
                controller.run_one(key)
            finally:
                controller.queue.done(key)

    def _watch_loop(self, feed: _Feed) -> None:
        assert self.client is not None
        backoff = WATCH_BACKOFF
        while not self._stopping.is_set():
            try:
                feed.open(self.client)
                assert feed.stream is not None
                if self._stopping.is_set():  # stop() may have run while this opened
                    feed.stream.stop()
                    return
                for event in feed.stream:
                    feed.handle(event)
                    backoff = WATCH_BACKOFF
                    if self._stopping.is_set():
                        break
            except Gone:
                feed.resource_version = None
            except Exception as e:
                held = _OUTAGE_FAILURES.admit(("watch", feed.controller.name))
                if held is not None:
                    log.warning(
                        "watch for controller %s failed: %s; retrying%s",
                        feed.controller.name,
                        e,
                        held_back(held),
                    )
                self._stopping.wait(backoff)
                backoff = min(backoff * 2, WATCH_MAX_BACKOFF)

    # ------------------------------------------------------------------ virtual time

    def _require_virtual(self) -> VirtualClock:
        if not isinstance(self.clock, VirtualClock):
            raise RuntimeError(
                "step/run_until need a VirtualClock; on a wall clock use start()/stop()"
            )
        if not self._started:
            self.start()
        return self.clock

    def pump_watches(self) -> int:
        """Deliver every watch event that has arrived; returns how many were handled."""
        handled = 0
        assert self.client is not None or not self._feeds
        # a server that counts its watches' activity (the in-memory one): nothing to do
        # while the count and the feeds are what they were after the last full pump
        activity = getattr(self.client, "watch_activity", None)
        if activity is not None:
            stamp = (activity, len(self._feeds))
            if stamp == self._pumped_at:
                return 0
        for feed in self._feeds:
            if feed.stream is None or feed.stream.stopped:
                feed.open(self.client)  # type: ignore[arg-type]
            assert feed.stream is not None
            # handlers only map events to keys (as they do on the shared informer objects
            # on a wall clock), so a stream that can hand out its objects uncopied does
            poll_shared = getattr(feed.stream, "poll_shared", None)
            try:
                events = poll_shared() if poll_shared is not None else feed.stream.poll(0)
            except Gone:
                feed.resource_version = None
                feed.open(self.client)  # type: ignore[arg-type]
                continue
            for event in events:
                feed.handle(event)
                handled += 1
        self._events_handled += handled
        if activity is not None:
            # as it was before polling: events a handler caused are polled next time
            self._pumped_at = (activity, len(self._feeds))
        return handled

    def _pick(self) -> Controller | None:
        if self._rng is not None:
            ready = [c for c in self._controllers if c.queue.has_ready()]
            return ready[self._rng.randrange(len(ready))] if ready else None
        n = len(self._controllers)
        for offset in range(n):
            idx = (self._rr + offset) % n
            c = self._controllers[idx]
            if c.queue.has_ready():
                self._rr = (idx + 1) % n
                return c
        return None

    def _run_ready(self, clock: VirtualClock) -> bool:
        controller = self._pick()
        if controller is None:
            return False
        key = controller.queue.get_nowait()
        if key is None:  # pragma: no cover - _pick saw an item
            return False
        now = clock.monotonic()
        # Charged compute is not time "moving on": a reconciler that requeues at once
        # would otherwise escape the check by the microseconds each reconcile costs.
        instant = round(now * 1_000_000_000) - self._charged_ns
        if instant != self._instant:
            self._instant, self._instant_count = instant, 0
            self._instant_keys.clear()
        self._instant_count += 1
        seen, events = self._instant_keys.get((controller.name, key), (0, -1))
        seen = seen + 1 if events == self._events_handled else 1
        self._instant_keys[(controller.name, key)] = (seen, self._events_handled)
        if seen > self._max_per_key or self._instant_count > self._max_per_instant:
            controller.queue.done(key)
            what = (
                f"key {key} reconciled more than {self._max_per_key} times with nothing "
                "watched changing"
                if seen > self._max_per_key
                else f"more than {self._max_per_instant} reconciles"
            )
            raise LivelockError(
                f"{what} at virtual time {now:.6f}s without time moving on (last: controller "
                f"{controller.name!r}, key {key}); a reconciler that requeues immediately needs "
                "a requeue_after on a virtual clock"
            )
        try:
            if self.charge is None or not controller.charged:
                controller.run_one(key)
            else:
                self._run_charged(clock, self.charge, controller, key)
        finally:
            controller.queue.done(key)
        return True

    def _run_charged(
        self, clock: VirtualClock, charge: ComputeCharge, controller: Controller, key: Any
    ) -> None:
        with clock.charging(charge.meter, charge.scale) as span:
            controller.run_one(key)
        charge.add(controller.name, span)
        controller.charged_seconds += span.seconds
        self._charged_ns += span.nanoseconds

    def step(self) -> bool:
        """Do one thing: deliver watch events and run one ready reconcile, or else fire the
        next timer. Returns False when there is nothing left to do at all."""
        clock = self._require_virtual()
        self.pump_watches()
        if self._run_ready(clock):
            return True
        return clock.step()

    def run_until(self, t: datetime | float) -> int:
        """Run everything due up to virtual time ``t`` (a datetime, or a reading of
        ``clock.monotonic()``), leaving the clock at ``t``. Returns the reconciles run."""
        clock = self._require_virtual()
        target = clock.target_monotonic(t)
        ran = 0
        while True:
            self.pump_watches()
            if self._run_ready(clock):
                ran += 1
                continue
            nxt = clock.next_timer()
            if nxt is None or nxt > target:
                clock.run_until(max(target, clock.monotonic()))
                self.pump_watches()
                if self._run_ready(clock):
                    ran += 1
                    continue
                return ran
            clock.step()

    def run_for(self, seconds: float) -> int:
        """Run for ``seconds`` of virtual time."""
        clock = self._require_virtual()
        return self.run_until(clock.monotonic() + seconds)

    def settle(self, limit: int | None = None) -> int:
        """Run whatever is ready now (at most ``limit`` reconciles) without firing timers;
        returns the reconciles run. Only charged compute moves the clock here."""
        clock = self._require_virtual()
        ran = 0
        while limit is None or ran < limit:
            self.pump_watches()
            if not self._run_ready(clock):
                return ran
            ran += 1
        return ran
