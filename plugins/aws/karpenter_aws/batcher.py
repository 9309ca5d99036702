"""Batching of one-item API calls into one call for many items (upstream ``pkg/batcher``).

EC2 throttles per account and per API; a burst of 200 NodeClaims launched, described or
terminated one call each spends 200 tokens of the same bucket. A :class:`Batcher`
collects the items callers hand it for a short *window* and then makes one call per
*bucket*, handing each caller its own share of the answer:

- **Window.** It opens with the first item and closes when no item came for ``idle``
  seconds, when ``max_wait`` seconds passed since it opened, or when it holds
  ``max_items`` items, whichever comes first. All buckets of a window go out together.
- **Buckets.** Items whose requests are the same but for the per-item part (which
  instance, how many) hash alike (:func:`request_hash`) and are merged into one call; the
  rest wait in the same window but go out as calls of their own.
- **Fan-out.** The executor returns one result per item, in order: a value or the
  exception that item failed with, so one failed item does not fail the others. An
  executor that raises fails every item of its bucket; one that returns too few results
  fails the items left without one.

Callers run on the operator's controller threads and block on their item's
:class:`~concurrent.futures.Future`. A daemon thread closes windows and a worker pool
runs the buckets' calls. Built with ``threaded=False`` there is neither: whoever drives
it calls :meth:`Batcher.flush_due` with an injected clock, which makes every window
decision deterministic for tests.

Metrics are upstream's: ``karpenter_cloudprovider_batcher_batch_time_seconds`` (how
long each window stayed open) and ``karpenter_cloudprovider_batcher_batch_size`` (items
per call), both labelled ``batcher``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Generic, TypeVar

from attrs import frozen

from karpenter_core.plugin_api import metrics

__all__ = [
    "BATCH_SIZE",
    "BATCH_TIME",
    "BatchOptions",
    "Batcher",
    "one_bucket",
    "request_hash",
]

log = logging.getLogger("karpenter.aws.batcher")

T = TypeVar("T")
U = TypeVar("U")

_LABEL = "batcher"
SIZE_BUCKETS: tuple[float, ...] = (
    1, 2, 4, 5, 10, 15, 20, 25, 30, 40, 50, 60, 70, 80, 90, 100, 125, 150, 175, 200,
    225, 250, 275, 300, 350, 400, 450, 500, 550, 600, 700, 800, 900, 1000,
)  # fmt: skip
"""Upstream's size buckets for ``batch_size``."""

BATCH_TIME = metrics.histogram(
    "karpenter_cloudprovider_batcher_batch_time_seconds",
    "Duration of the batching window per batcher",
    (_LABEL,),
)
BATCH_SIZE = metrics.histogram(
    "karpenter_cloudprovider_batcher_batch_size",
    "Size of the request batch per batcher",
    (_LABEL,),
    buckets=SIZE_BUCKETS,
)

DEFAULT_WORKERS = 100
"""Concurrent calls of one batcher at most (upstream's default request workers)."""


@frozen
class BatchOptions:
    """A batcher's name (its metrics label) and window (seconds, items)."""

    name: str
    idle: float
    max_wait: float
    max_items: int


Executor = Callable[[list[T]], Sequence["U | BaseException"]]
"""Makes one call for a bucket's items; one result (value or exception) per item."""
Hasher = Callable[[T], str]
"""The bucket of an item: equal for items one call may serve together."""


def _canonical(value: Any) -> Any:
    """``value`` with mappings sorted by key and lists treated as sets (sorted by their
    canonical JSON), as upstream hashes requests: two requests listing the same
    overrides or filters in another order are the same request."""
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_canonical(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, default=str))
    return value


def request_hash(request: Any) -> str:
    """A digest of ``request`` that ignores key and list order."""
    doc = json.dumps(_canonical(request), sort_keys=True, default=str)
    return hashlib.sha256(doc.encode()).hexdigest()


def one_bucket(_: Any) -> str:
    """Every item in one bucket: for calls whose items differ only by their id."""
    return ""


class _Window(Generic[T, U]):
    """The items of one open window, by bucket, and when it opened / last grew."""

    def __init__(self, opened: float) -> None:
        self.opened = opened
        self.last = opened
        self.count = 0
        self.buckets: dict[str, list[tuple[T, Future[U]]]] = {}


class Batcher(Generic[T, U]):
    """Merges items into calls (see the module docstring)."""

    def __init__(
        self,
        options: BatchOptions,
        executor: Executor[T, U],
        hasher: Hasher[T] = request_hash,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        threaded: bool = True,
        workers: int = DEFAULT_WORKERS,
    ) -> None:
        self.options = options
        self._executor = executor
        self._hasher = hasher
        self._monotonic = monotonic
        self._threaded = threaded
        self._workers = workers
        self._cond = threading.Condition()
        self._window: _Window[T, U] | None = None
        self._thread: threading.Thread | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._closed = False

    # ------------------------------------------------------------------ callers

    def submit(self, item: T) -> Future[U]:
        """Queue ``item`` in the open window (opening one); its result arrives in the
        future once the window's call for its bucket returns."""
        future: Future[U] = Future()
        key = self._hasher(item)
        with self._cond:
            if self._closed:
                raise RuntimeError(f"batcher {self.options.name} is closed")
            now = self._monotonic()
            if self._window is None:
                self._window = _Window(now)
            window = self._window
            window.buckets.setdefault(key, []).append((item, future))
            window.count += 1
            window.last = now
            if self._threaded and self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name=f"batcher-{self.options.name}", daemon=True
                )
                self._thread.start()
            self._cond.notify_all()
        return future

    def call(self, item: T) -> U:
        """``item``'s result, waiting for its window; raises what its call failed with.

        Without the window thread nobody else would send the window: it is sent at once.
        """
        future = self.submit(item)
        if not self._threaded:
            self.flush()
        return future.result()

    # ------------------------------------------------------------------ windows

    def pending(self) -> int:
        """How many items wait in the open window."""
        with self._cond:
            return self._window.count if self._window is not None else 0

    def deadline(self) -> float | None:
        """When the open window closes (monotonic seconds), None when none is open."""
        with self._cond:
            return self._deadline()

    def _deadline(self) -> float | None:
        w = self._window
        if w is None:
            return None
        if self.options.max_items and w.count >= self.options.max_items:
            return w.last
        return min(w.opened + self.options.max_wait, w.last + self.options.idle)

    def flush_due(self) -> bool:
        """Send the open window's calls if it is due to close; whether it was."""
        with self._cond:
            due = self._deadline()
            if due is None or self._monotonic() < due:
                return False
            window = self._take()
        self._dispatch(window)
        return True

    def flush(self) -> None:
        """Send the open window's calls now, due or not."""
        with self._cond:
            window = self._take()
        if window is not None:
            self._dispatch(window)

    def close(self) -> None:
        """Send what is queued, stop the window thread and wait for running calls."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join()
        self.flush()
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def _take(self) -> _Window[T, U] | None:
        window, self._window = self._window, None
        if window is not None:
            BATCH_TIME.labels(self.options.name).observe(
                max(0.0, self._monotonic() - window.opened)
            )
        return window

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._closed:
                    due = self._deadline()
                    if due is not None:
                        wait = due - self._monotonic()
                        if wait <= 0:
                            break
                        self._cond.wait(wait)
                    else:
                        self._cond.wait()
                if self._closed:
                    return
                window = self._take()
            self._dispatch(window)

    # ------------------------------------------------------------------ calls

    def _dispatch(self, window: _Window[T, U] | None) -> None:
        if window is None:
            return
        for bucket in window.buckets.values():
            if not self._threaded:
                self._execute(bucket)
                continue
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=self._workers, thread_name_prefix=f"batcher-{self.options.name}"
                )
            self._pool.submit(self._execute, bucket)

    def _execute(self, bucket: list[tuple[T, Future[U]]]) -> None:
        BATCH_SIZE.labels(self.options.name).observe(len(bucket))
        items = [item for item, _ in bucket]
        try:
            results: Sequence[U | BaseException] = self._executor(items)
        except Exception as e:  # every item of the call failed alike
            results = [e] * len(items)
        for i, (_, future) in enumerate(bucket):
            if i >= len(results):
                future.set_exception(
                    RuntimeError(f"batcher {self.options.name}: the call returned no result")
                )
            elif isinstance(results[i], BaseException):
                future.set_exception(results[i])  # type: ignore[arg-type]
            else:
                future.set_result(results[i])  # type: ignore[arg-type]
