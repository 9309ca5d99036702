"""``interruption``: long-poll the interruption queue and act on each message.

One reconcile is one ``ReceiveMessage`` (up to 10 messages, 20 s visibility, 20 s long
poll) followed by handling every message it returned. A message is deleted from the
queue once it has been handled, and also when it cannot be parsed (it would never parse
later either); a message whose handling failed (an API error) is left on the queue and
comes back after its visibility timeout, so no interruption is lost to a transient error.

The queue URL is resolved once with ``GetQueueUrl``. A queue that does not exist (yet) is
logged and retried with back-off: the rest of Karpenter keeps working without
interruption handling, as it would without the setting.

On a virtual clock (``karpenter simulate``) the long poll would stall the whole
simulation, so the wait is 0 and the next poll is scheduled one wait period later in
virtual time instead.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from karpenter_aws.interruption import messages as m
from karpenter_aws.interruption import metrics as im
from karpenter_aws.interruption.handler import (
    InstanceIndex,
    InterruptionHandler,
    ReservationsLike,
    UnavailableOfferingsLike,
)
from karpenter_core.plugin_api import ControllerContext, Result, VirtualClock

__all__ = [
    "MAX_MESSAGES",
    "NAME",
    "VISIBILITY_TIMEOUT",
    "WAIT_SECONDS",
    "InterruptionController",
    "aws_error",
]

log = logging.getLogger("karpenter.aws.interruption")

NAME = "interruption"
MAX_MESSAGES = 10
VISIBILITY_TIMEOUT = 20
WAIT_SECONDS = 20
"""SQS's longest long poll: a quiet queue costs one request per 20 s."""
NEXT_BATCH = 0.001
"""Delay before polling again after a batch (a requeue needs a positive delay; the long
poll, not this, paces a quiet queue)."""
RETRY_AFTER = 10.0
"""How long to wait after a failed ReceiveMessage before trying again."""

_MISSING_QUEUE_CODES = frozenset({"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"})


def aws_error(err: Exception) -> str:
    """A one-line description of a boto3 error (code and message, no traceback)."""
    if isinstance(err, ClientError):
        error = err.response.get("Error") or {}
        return f"{error.get('Code') or 'error'}: {error.get('Message') or err}"
    return f"{type(err).__name__}: {err}"


def _error_code(err: Exception) -> str:
    if isinstance(err, ClientError):
        return str((err.response.get("Error") or {}).get("Code") or "")
    return ""


def _sent_time(raw: dict[str, Any]) -> datetime | None:
    """``SentTimestamp`` (epoch milliseconds) of a received message, if readable."""
    try:
        millis = int(str((raw.get("Attributes") or {}).get("SentTimestamp")))
    except ValueError:
        return None
    return datetime.fromtimestamp(millis / 1000.0, tz=UTC)


class InterruptionController:
    """The singleton behind ``interruption`` (see the module docstring)."""

    def __init__(
        self,
        ctx: ControllerContext,
        sqs: Any,
        queue_name: str,
        unavailable: UnavailableOfferingsLike | None,
        *,
        reservations: ReservationsLike | None = None,
        wait_seconds: int = WAIT_SECONDS,
    ) -> None:
        if not 0 <= wait_seconds <= WAIT_SECONDS:
            raise ValueError(f"wait_seconds must be within 0..{WAIT_SECONDS}, got {wait_seconds}")
        self.ctx = ctx
        self.sqs = sqs
        self.queue_name = queue_name
        self.queue_url: str | None = None
        self.wait_seconds = wait_seconds
        self.handler = InterruptionHandler(ctx, unavailable, reservations)
        self._queue_error: str | None = None

    @property
    def _virtual(self) -> bool:
        return isinstance(self.ctx.clock, VirtualClock)

    def _idle_delay(self) -> float:
        """When to poll again after an empty receive: at once on a wall clock (the long
        poll already waited), one wait period later on a virtual clock."""
        if self._virtual:
            return float(max(self.wait_seconds, 1))
        # without a long poll an empty queue would be polled in a tight loop
        return NEXT_BATCH if self.wait_seconds > 0 else 1.0

    def _resolve_queue(self) -> str | None:
        if self.queue_url is not None:
            return self.queue_url
        if self.queue_name.startswith(("https://", "http://")):
            self.queue_url = self.queue_name  # a URL was given: nothing to look up
            return self.queue_url
        try:
            out = self.sqs.get_queue_url(QueueName=self.queue_name)
        except (ClientError, BotoCoreError) as err:
            problem = aws_error(err)
            if problem != self._queue_error:  # once per distinct problem, not every retry
                log.error(
                    "interruption queue %r is unavailable, interruption handling is paused "
                    "until it can be found (%s)",
                    self.queue_name,
                    problem,
                )
                self._queue_error = problem
            return None
        self.queue_url = str(out["QueueUrl"])
        self._queue_error = None
        log.info("watching interruption queue %s", self.queue_name)
        return self.queue_url

    def receive(self, queue_url: str) -> list[dict[str, Any]]:
        """One ReceiveMessage call (raises boto3's errors)."""
        wait = 0 if self._virtual else self.wait_seconds
        out = self.sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=MAX_MESSAGES,
            VisibilityTimeout=VISIBILITY_TIMEOUT,
            WaitTimeSeconds=wait,
            AttributeNames=["SentTimestamp"],
            MessageAttributeNames=["All"],
        )
        return list(out.get("Messages") or [])

    def reconcile(self) -> Result:
        queue_url = self._resolve_queue()
        if queue_url is None:
            return Result(requeue=True)  # back off exponentially, never crash
        try:
            received = self.receive(queue_url)
        except (ClientError, BotoCoreError) as err:
            if _error_code(err) in _MISSING_QUEUE_CODES:
                self.queue_url = None  # deleted under us: look it up again
            log.warning(
                "receiving from interruption queue %s failed: %s", self.queue_name, aws_error(err)
            )
            return Result.after(RETRY_AFTER)
        if not received:
            return Result.after(self._idle_delay())
        failed = self.handle_batch(queue_url, received)
        if failed:
            return Result(requeue=True)
        return Result.after(NEXT_BATCH)

    def handle_batch(self, queue_url: str, received: list[dict[str, Any]]) -> int:
        """Handle and delete each received message; returns how many failed (and stay on
        the queue to be retried after their visibility timeout)."""
        try:
            index = InstanceIndex.load(self.ctx)
        except Exception as err:
            log.warning("listing nodeclaims for interruption messages failed: %s", err)
            return len(received)
        failed = 0
        for raw in received:
            if not self._handle_one(queue_url, raw, index):
                failed += 1
        return failed

    def _handle_one(self, queue_url: str, raw: dict[str, Any], index: InstanceIndex) -> bool:
        message_id = str(raw.get("MessageId") or "")
        body = raw.get("Body")
        parsed = m.parse(body if isinstance(body, str) else "")
        if isinstance(parsed, m.ParseError):
            log.error(
                "interruption message %s cannot be parsed, deleting it: %s", message_id, parsed
            )
            return self._delete(queue_url, raw)
        im.RECEIVED_MESSAGES.labels(message_type=parsed.kind).inc()
        try:
            self.handler.handle(parsed, index)
        except Exception as err:
            log.warning(
                "handling interruption message %s (%s for %s) failed, it will be retried: %s",
                message_id,
                parsed.kind,
                ", ".join(parsed.instance_ids),
                err,
            )
            return False
        started = parsed.time or _sent_time(raw)
        if started is not None:
            waited = (self.ctx.clock.now() - started).total_seconds()
            im.MESSAGE_LATENCY.observe(max(waited, 0.0))
        return self._delete(queue_url, raw)

    def _delete(self, queue_url: str, raw: dict[str, Any]) -> bool:
        try:
            self.sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=raw["ReceiptHandle"])
        except (ClientError, BotoCoreError, KeyError) as err:
            log.warning(
                "deleting interruption message %s failed (it will be received again): %s",
                raw.get("MessageId"),
                aws_error(err),
            )
            return False
        im.DELETED_MESSAGES.inc()
        return True
