"""Kubernetes events: what controllers tell users about objects.

The recorder keeps every published event in memory (``recorder.events``, handy for
``karpenter simulate`` reports and tests) and, when given a KubeClient, also writes each one
as an ``events.k8s.io/v1`` Event so ``kubectl describe`` shows it. Writing is best-effort:
a failed write is logged, never raised, because recording an event must not fail the
reconcile that emits it.

Deduplication follows upstream Karpenter: an event carrying ``dedupe_values`` is dropped
when an event with the key ``lower(reason)-values...`` was published within its timeout
(default 2 minutes). Events without dedupe values are deduplicated when they are identical
(same object, type, reason and message) within the same window.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections import deque
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from attrs import field, frozen

from karpenter_core.kube.client import ApiError, KubeClient
from karpenter_core.runtime.clock import Clock, format_micro_time
from karpenter_core.runtime.logthrottle import LogThrottle, held_back

__all__ = ["NORMAL", "WARNING", "Event", "EventRecorder", "RecordedEvent", "object_reference"]

log = logging.getLogger("karpenter.events")

# an API outage fails every queued event: one warning per status code per interval
_WRITE_FAILURES = LogThrottle(30.0)

NORMAL = "Normal"
WARNING = "Warning"
DEFAULT_DEDUPE_TIMEOUT = 120.0
_PRUNE_AT = 40_000
"""How many dedupe keys the recorder holds before it drops those past their window."""
_MAX_NOTE = 1024


def object_reference(obj: Mapping[str, Any]) -> dict[str, str]:
    """The ObjectReference of an API object dict (apiVersion, kind, namespace, name, uid)."""
    meta = obj.get("metadata") or {}
    ref = {
        "apiVersion": str(obj.get("apiVersion") or ""),
        "kind": str(obj.get("kind") or ""),
        "name": str(meta.get("name") or obj.get("name") or ""),
    }
    namespace = meta.get("namespace") or obj.get("namespace")
    if namespace:
        ref["namespace"] = str(namespace)
    uid = meta.get("uid") or obj.get("uid")
    if uid:
        ref["uid"] = str(uid)
    return ref


def _tuple(values: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in values)


@frozen
class Event:
    """An event to publish about ``involved_object`` (an object dict or an ObjectReference)."""

    involved_object: Mapping[str, Any]
    type: str
    reason: str
    message: str
    dedupe_values: tuple[str, ...] = field(default=(), converter=_tuple)
    dedupe_timeout: float | None = None

    def __attrs_post_init__(self) -> None:
        if self.type not in (NORMAL, WARNING):
            raise ValueError(f"event type must be {NORMAL!r} or {WARNING!r}, got {self.type!r}")
        if not self.reason:
            raise ValueError("an event needs a reason")


@frozen
class RecordedEvent:
    """An event as it was recorded."""

    time: datetime
    regarding: dict[str, str]
    type: str
    reason: str
    message: str

    @property
    def kind(self) -> str:
        return self.regarding.get("kind", "")

    @property
    def name(self) -> str:
        return self.regarding.get("name", "")


class EventRecorder:
    """Publishes events to memory and, optionally, to the API server."""

    def __init__(
        self,
        clock: Clock,
        client: KubeClient | None = None,
        *,
        component: str = "karpenter",
        instance: str | None = None,
        dedupe_timeout: float = DEFAULT_DEDUPE_TIMEOUT,
        max_events: int = 10_000,
        asynchronous: bool = False,
    ) -> None:
        self.clock = clock
        self.client = client
        self.asynchronous = asynchronous
        """Write events to the API server from a background thread (``karpenter serve``):
        each write is a rate-limited API call, and a controller publishing one per pod of a
        large batch must not wait for them. :meth:`close` writes what is still queued."""
        self._pending: deque[tuple[RecordedEvent, int]] = deque()
        self._pending_cond = threading.Condition()
        self._writer: threading.Thread | None = None
        self._closed = False
        self.component = component
        self.instance = instance or f"{component}-{socket.gethostname()}"
        self.dedupe_timeout = dedupe_timeout
        self._events: deque[RecordedEvent] = deque(maxlen=max_events)
        self._seen: dict[Any, float] = {}
        self._prune_at = _PRUNE_AT
        self._lock = threading.Lock()
        self._seq = 0
        self.dropped = 0
        self.write_errors = 0

    def publish(self, *events: Event) -> None:
        """Record each event unless it is a duplicate within its dedupe window."""
        for event in events:
            self._publish(event)

    def normal(
        self, obj: Mapping[str, Any], reason: str, message: str, *dedupe_values: str
    ) -> None:
        self.publish(Event(obj, NORMAL, reason, message, dedupe_values))

    def warning(
        self, obj: Mapping[str, Any], reason: str, message: str, *dedupe_values: str
    ) -> None:
        self.publish(Event(obj, WARNING, reason, message, dedupe_values))

    @property
    def events(self) -> list[RecordedEvent]:
        with self._lock:
            return list(self._events)

    def for_object(self, kind: str, name: str, namespace: str | None = None) -> list[RecordedEvent]:
        """Events recorded about one object."""
        return [
            e
            for e in self.events
            if e.kind == kind
            and e.name == name
            and (namespace is None or e.regarding.get("namespace") == namespace)
        ]

    def _key(self, event: Event, ref: Mapping[str, str]) -> Any:
        if event.dedupe_values:
            return f"{event.reason.lower()}-{'-'.join(event.dedupe_values)}"
        ident = ref.get("uid") or (ref.get("kind"), ref.get("namespace"), ref.get("name"))
        return (ident, event.type, event.reason, event.message)

    def _publish(self, event: Event) -> None:
        ref = object_reference(event.involved_object)
        timeout = self.dedupe_timeout if event.dedupe_timeout is None else event.dedupe_timeout
        now = self.clock.monotonic()
        key = self._key(event, ref)
        with self._lock:
            last = self._seen.get(key)
            if last is not None and now - last < timeout:
                self.dropped += 1
                return
            self._seen[key] = now
            if len(self._seen) > self._prune_at:
                self._prune(now)
            recorded = RecordedEvent(self.clock.now(), ref, event.type, event.reason, event.message)
            self._events.append(recorded)
            self._seq += 1
            seq = self._seq
        log.debug(
            "event %s %s/%s: %s %s",
            event.type,
            ref.get("kind"),
            ref.get("name"),
            event.reason,
            event.message,
        )
        if self.client is None:
            return
        if not self.asynchronous:
            self._write(recorded, seq)
            return
        with self._pending_cond:
            if self._closed:
                return
            self._pending.append((recorded, seq))
            if self._writer is None:
                self._writer = threading.Thread(
                    target=self._drain, name="event-writer", daemon=True
                )
                self._writer.start()
            self._pending_cond.notify()

    def _prune(self, now: float) -> None:
        """Drop the keys past their window. The next prune waits until the dict has doubled
        what is left: a burst of distinct events inside one window (a condition change on
        each of 45,000 pods) would otherwise rebuild the dict on every event."""
        self._seen = {k: t for k, t in self._seen.items() if now - t < self.dedupe_timeout}
        self._prune_at = max(_PRUNE_AT, 2 * len(self._seen))

    def _drain(self) -> None:
        while True:
            with self._pending_cond:
                while not self._pending and not self._closed:
                    self._pending_cond.wait()
                if not self._pending:
                    return
                recorded, seq = self._pending.popleft()
            try:
                self._write(recorded, seq)
            except Exception:  # never let one write stop the writer
                log.exception("writing event %s failed", recorded.reason)

    def close(self, timeout: float = 5.0) -> None:
        """Stop accepting asynchronous writes and wait up to ``timeout`` seconds for the
        queued ones (idempotent; nothing to do for a synchronous recorder)."""
        with self._pending_cond:
            self._closed = True
            self._pending_cond.notify_all()
            writer = self._writer
        if writer is not None:
            writer.join(timeout)

    def _write(self, event: RecordedEvent, seq: int) -> None:
        assert self.client is not None
        when = event.time
        nanos = int(when.timestamp()) * 1_000_000_000 + when.microsecond * 1000 + seq
        obj = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {
                "name": f"{event.name or 'unknown'}.{nanos:x}",
                "namespace": event.regarding.get("namespace") or "default",
            },
            "eventTime": format_micro_time(when),
            "reportingController": self.component,
            "reportingInstance": self.instance,
            "action": event.reason,
            "reason": event.reason,
            "regarding": dict(event.regarding),
            "note": event.message[:_MAX_NOTE],
            "type": event.type,
        }
        try:
            self.client.create(obj)
        except ApiError as e:
            with self._lock:
                self.write_errors += 1
            held = _WRITE_FAILURES.admit(e.code)
            if held is None:
                return
            log.warning(
                "could not write event %s for %s %s: %s%s",
                event.reason,
                event.kind,
                event.name,
                e,
                held_back(held),
            )
