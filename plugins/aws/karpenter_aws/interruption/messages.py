"""EventBridge interruption messages: what arrives on the SQS queue, as plain values.

The queue receives EventBridge events; which one a message is follows from the envelope's
(``version``, ``source``, ``detail-type``) triple, as upstream dispatches it. Anything
Karpenter does not act on (another source, a Health event for another service, a state
change to ``running``...) becomes a ``no_op`` message, which is simply deleted. A body
that is not an EventBridge envelope at all is a :class:`ParseError`, also deleted (a
message that can never be understood must not come back every 20 seconds), but logged.

:func:`parse` never raises: the queue is written by other AWS services and by whoever
else can send to it, so every body is untrusted input.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from attrs import frozen

__all__ = [
    "CAPACITY_RESERVATION_INTERRUPTED",
    "DELETING_KINDS",
    "EVENT_STATUS",
    "FORCEFUL_KINDS",
    "INSTANCE_STATUS",
    "INSTANCE_STOPPED",
    "INSTANCE_TERMINATED",
    "KINDS",
    "NO_OP",
    "REBALANCE_RECOMMENDATION",
    "SCHEDULED_CHANGE",
    "SPOT_INTERRUPTED",
    "SYSTEM_STATUS",
    "Message",
    "ParseError",
    "parse",
]

# Message kinds: upstream's names, which are also the ``message_type`` metric label and
# the ``reason`` of ``karpenter_nodeclaims_disrupted_total``.
SPOT_INTERRUPTED = "spot_interrupted"
REBALANCE_RECOMMENDATION = "rebalance_recommendation"
SCHEDULED_CHANGE = "scheduled_change"
INSTANCE_STOPPED = "instance_stopped"
INSTANCE_TERMINATED = "instance_terminated"
CAPACITY_RESERVATION_INTERRUPTED = "capacity_reservation_interrupted"
NO_OP = "no_op"
# Kinds the DescribeInstanceStatus poller produces (never parsed from the queue).
INSTANCE_STATUS = "instance_status"
SYSTEM_STATUS = "system_status"
EVENT_STATUS = "event_status"

KINDS = (
    SPOT_INTERRUPTED,
    REBALANCE_RECOMMENDATION,
    SCHEDULED_CHANGE,
    INSTANCE_STOPPED,
    INSTANCE_TERMINATED,
    CAPACITY_RESERVATION_INTERRUPTED,
    NO_OP,
)
"""Every kind :func:`parse` can return."""

FORCEFUL_KINDS = frozenset({INSTANCE_STATUS, SYSTEM_STATUS})
"""Kinds whose NodeClaim is deleted with a termination deadline of now: the instance is
already broken, so waiting for a graceful drain only prolongs the outage."""

DELETING_KINDS = frozenset(
    {
        SPOT_INTERRUPTED,
        SCHEDULED_CHANGE,
        INSTANCE_STOPPED,
        INSTANCE_TERMINATED,
        CAPACITY_RESERVATION_INTERRUPTED,
        EVENT_STATUS,
    }
    | FORCEFUL_KINDS
)
"""Kinds whose NodeClaim is deleted (cordon and drain, then terminate); the rest
(rebalance recommendations) are only reported as events."""

_ENVELOPE_VERSION = "0"
_EC2 = "aws.ec2"
_HEALTH = "aws.health"

_SPOT_WARNING = "EC2 Spot Instance Interruption Warning"
_REBALANCE = "EC2 Instance Rebalance Recommendation"
_STATE_CHANGE = "EC2 Instance State-change Notification"
_CAPACITY_RESERVATION_WARNING = "EC2 Capacity Reservation Instance Interruption Warning"
_HEALTH_EVENT = "AWS Health Event"

_STOPPED_STATES = frozenset({"stopping", "stopped"})
_TERMINATED_STATES = frozenset({"shutting-down", "terminated"})


@frozen
class Message:
    """One understood queue message.

    ``instance_ids`` are the EC2 instances it is about (none for ``no_op``);
    ``time`` is the event's own timestamp (when AWS raised it), from which the time spent
    on the queue is measured; ``id``/``source``/``detail_type`` identify it in logs.
    """

    kind: str
    instance_ids: tuple[str, ...] = ()
    time: datetime | None = None
    id: str = ""
    source: str = ""
    detail_type: str = ""


@frozen
class ParseError:
    """A body that is not an EventBridge event Karpenter can read, and why."""

    reason: str

    def __str__(self) -> str:
        return self.reason


def _time(raw: Any) -> datetime | None:
    """The envelope's RFC 3339 ``time`` (None when absent); ValueError when unreadable."""
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str):
        raise ValueError(f"time: expected an RFC 3339 string, got {type(raw).__name__}")
    text = raw.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"time: {raw!r} is not an RFC 3339 timestamp") from None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def _str_field(obj: Mapping[str, Any], key: str, where: str) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{where}{key}: expected a string, got {type(value).__name__}")
    return value


def _detail(envelope: Mapping[str, Any]) -> Mapping[str, Any]:
    detail = envelope.get("detail")
    if detail is None:
        return {}
    if not isinstance(detail, Mapping):
        raise ValueError(f"detail: expected an object, got {type(detail).__name__}")
    return detail


def _instance_id(detail: Mapping[str, Any]) -> tuple[str, ...]:
    instance_id = _str_field(detail, "instance-id", "detail.").strip()
    if not instance_id:
        raise ValueError("detail.instance-id is missing")
    return (instance_id,)


def _affected_instances(detail: Mapping[str, Any]) -> tuple[str, ...]:
    entities = detail.get("affectedEntities")
    if entities is None:
        return ()
    if not isinstance(entities, list):
        raise ValueError(f"detail.affectedEntities: expected a list, got {type(entities).__name__}")
    ids: list[str] = []
    for i, entity in enumerate(entities):
        if not isinstance(entity, Mapping):
            raise ValueError(f"detail.affectedEntities[{i}]: expected an object")
        value = _str_field(entity, "entityValue", f"detail.affectedEntities[{i}].").strip()
        if value:
            ids.append(value)
    return tuple(ids)


def _kind_and_instances(
    source: str, detail_type: str, detail: Mapping[str, Any]
) -> tuple[str, tuple[str, ...]]:
    """The dispatch table (spec §1.7); raises ValueError naming a malformed field."""
    if source == _EC2:
        if detail_type == _SPOT_WARNING:
            return SPOT_INTERRUPTED, _instance_id(detail)
        if detail_type == _REBALANCE:
            return REBALANCE_RECOMMENDATION, _instance_id(detail)
        if detail_type == _CAPACITY_RESERVATION_WARNING:
            return CAPACITY_RESERVATION_INTERRUPTED, _instance_id(detail)
        if detail_type == _STATE_CHANGE:
            state = _str_field(detail, "state", "detail.").strip().lower()
            if state in _STOPPED_STATES:
                return INSTANCE_STOPPED, _instance_id(detail)
            if state in _TERMINATED_STATES:
                return INSTANCE_TERMINATED, _instance_id(detail)
            return NO_OP, ()  # pending, running...: nothing to react to
    if source == _HEALTH and detail_type == _HEALTH_EVENT:
        # only EC2's scheduled changes (maintenance, retirement) concern nodes
        service = _str_field(detail, "service", "detail.")
        category = _str_field(detail, "eventTypeCategory", "detail.")
        if service == "EC2" and category == "scheduledChange":
            return SCHEDULED_CHANGE, _affected_instances(detail)
        return NO_OP, ()
    return NO_OP, ()


def parse(body: str) -> Message | ParseError:
    """The message a queue body holds, or why it cannot be read (never raises).

    An empty body is a ``no_op``; so is a well-formed envelope no parser claims.
    """
    if not body or not body.strip():
        return Message(NO_OP)
    try:
        envelope = json.loads(body)
    except (ValueError, RecursionError) as err:
        return ParseError(f"body is not JSON: {err}")
    if not isinstance(envelope, dict):
        return ParseError(
            f"body is a JSON {type(envelope).__name__}, not an EventBridge event object"
        )
    source = detail_type = ""
    try:
        version = _str_field(envelope, "version", "")
        source = _str_field(envelope, "source", "")
        detail_type = _str_field(envelope, "detail-type", "")
        event_id = _str_field(envelope, "id", "")
        when = _time(envelope.get("time"))
        if version != _ENVELOPE_VERSION:
            return Message(NO_OP, (), when, event_id, source, detail_type)
        kind, instance_ids = _kind_and_instances(source, detail_type, _detail(envelope))
    except ValueError as err:
        what = f"{source} {detail_type!r}" if source or detail_type else "event"
        return ParseError(f"{what}: {err}")
    if kind == NO_OP:
        instance_ids = ()
    return Message(kind, instance_ids, when, event_id, source, detail_type)
