"""Parsing EventBridge interruption messages (spec providers §1.7; upstream
``pkg/controllers/interruption/messages``): the dispatch on (version, source,
detail-type), the instance ids each kind carries, and bad bodies as values."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from karpenter_aws.interruption import KINDS, Message, ParseError, parse
from karpenter_aws.interruption import messages as m

INSTANCE = "i-0123456789abcdef0"


def envelope(source: str, detail_type: str, detail: Any, **extra: Any) -> str:
    """An EventBridge event as EventBridge delivers it to SQS (the body is the event)."""
    body: dict[str, Any] = {
        "version": "0",
        "id": "7bf73129-1428-4cd3-a780-95db273d1602",
        "detail-type": detail_type,
        "source": source,
        "account": "123456789012",
        "time": "2026-11-30T10:00:00Z",
        "region": "us-west-2",
        "resources": [f"arn:aws:ec2:us-west-2:123456789012:instance/{INSTANCE}"],
        "detail": detail,
    }
    body.update(extra)
    return json.dumps(body)


def spot(instance: str = INSTANCE) -> str:
    return envelope(
        "aws.ec2",
        "EC2 Spot Instance Interruption Warning",
        {"instance-id": instance, "instance-action": "terminate"},
    )


def rebalance(instance: str = INSTANCE) -> str:
    return envelope("aws.ec2", "EC2 Instance Rebalance Recommendation", {"instance-id": instance})


def state_change(state: str, instance: str = INSTANCE) -> str:
    return envelope(
        "aws.ec2",
        "EC2 Instance State-change Notification",
        {"instance-id": instance, "state": state},
    )


def reservation(instance: str = INSTANCE) -> str:
    return envelope(
        "aws.ec2",
        "EC2 Capacity Reservation Instance Interruption Warning",
        {"instance-id": instance, "instance-action": "terminate"},
    )


def health(*instances: str, service: str = "EC2", category: str = "scheduledChange") -> str:
    return envelope(
        "aws.health",
        "AWS Health Event",
        {
            "eventArn": "arn:aws:health:us-west-2::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/x",
            "service": service,
            "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
            "eventTypeCategory": category,
            "startTime": "Mon, 30 Nov 2026 12:00:00 GMT",
            "eventDescription": [{"language": "en_US", "latestDescription": "retiring"}],
            "affectedEntities": [{"entityValue": i} for i in instances],
        },
    )


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (spot(), m.SPOT_INTERRUPTED),
        (rebalance(), m.REBALANCE_RECOMMENDATION),
        (reservation(), m.CAPACITY_RESERVATION_INTERRUPTED),
        (health(INSTANCE), m.SCHEDULED_CHANGE),
        (state_change("stopping"), m.INSTANCE_STOPPED),
        (state_change("stopped"), m.INSTANCE_STOPPED),
        (state_change("shutting-down"), m.INSTANCE_TERMINATED),
        (state_change("terminated"), m.INSTANCE_TERMINATED),
    ],
)
def test_each_event_type_parses_to_its_kind_and_instance(body: str, kind: str) -> None:
    msg = parse(body)
    assert isinstance(msg, Message)
    assert msg.kind == kind
    assert msg.instance_ids == (INSTANCE,)
    assert msg.time == datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    assert msg.id == "7bf73129-1428-4cd3-a780-95db273d1602"


def test_every_kind_in_the_spec_table_is_reachable() -> None:
    bodies = [spot(), rebalance(), reservation(), health(INSTANCE), state_change("stopped")]
    bodies += [state_change("terminated"), envelope("aws.s3", "Object Created", {})]
    kinds = set()
    for body in bodies:
        msg = parse(body)
        assert isinstance(msg, Message)
        kinds.add(msg.kind)
    assert kinds == set(KINDS)


def test_scheduled_change_lists_every_affected_instance() -> None:
    msg = parse(health("i-aaa", "i-bbb"))
    assert isinstance(msg, Message)
    assert msg.instance_ids == ("i-aaa", "i-bbb")


@pytest.mark.parametrize(
    "body",
    [
        health(INSTANCE, service="RDS"),
        health(INSTANCE, category="issue"),
        health(INSTANCE, category="accountNotification"),
    ],
)
def test_health_events_for_other_services_or_categories_are_no_ops(body: str) -> None:
    msg = parse(body)
    assert isinstance(msg, Message)
    assert msg.kind == m.NO_OP
    assert msg.instance_ids == ()


@pytest.mark.parametrize("state", ["pending", "running", "creating"])
def test_state_changes_karpenter_does_not_react_to_are_no_ops(state: str) -> None:
    msg = parse(state_change(state))
    assert isinstance(msg, Message)
    assert msg.kind == m.NO_OP
    assert msg.instance_ids == ()


def test_state_is_matched_case_insensitively() -> None:
    msg = parse(state_change("Stopping"))
    assert isinstance(msg, Message)
    assert msg.kind == m.INSTANCE_STOPPED


@pytest.mark.parametrize(
    "body",
    [
        "",
        "   ",
        envelope("aws.s3", "Object Created", {"bucket": {"name": "b"}}),
        envelope("aws.ec2", "EC2 AMI State Change", {"ImageId": "ami-1"}),
        # a known detail-type under another envelope version is not what the parsers know
        envelope("aws.ec2", "EC2 Spot Instance Interruption Warning", {}, version="1"),
        json.dumps({"field1": "value1", "field2": "value2"}),
    ],
)
def test_unknown_or_empty_messages_are_no_ops(body: str) -> None:
    msg = parse(body)
    assert isinstance(msg, Message)
    assert msg.kind == m.NO_OP
    assert msg.instance_ids == ()


@pytest.mark.parametrize(
    ("body", "names"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "JSON list"),
        ('"a string"', "JSON str"),
        ("null", "JSON NoneType"),
        (envelope("aws.ec2", "EC2 Spot Instance Interruption Warning", "x"), "detail"),
        (envelope("aws.ec2", "EC2 Spot Instance Interruption Warning", {}), "instance-id"),
        (
            envelope("aws.ec2", "EC2 Spot Instance Interruption Warning", {"instance-id": 7}),
            "instance-id",
        ),
        (envelope("aws.ec2", "EC2 Instance Rebalance Recommendation", {}), "instance-id"),
        (
            envelope(
                "aws.health",
                "AWS Health Event",
                {"service": "EC2", "eventTypeCategory": "scheduledChange", "affectedEntities": {}},
            ),
            "affectedEntities",
        ),
        (spot().replace("2026-11-30T10:00:00Z", "yesterday"), "time"),
        (json.dumps({"version": 0, "source": "aws.ec2"}), "version"),
    ],
)
def test_malformed_bodies_are_parse_errors_naming_the_problem(body: str, names: str) -> None:
    result = parse(body)
    assert isinstance(result, ParseError)
    assert names in str(result)


def test_parse_never_raises_on_deeply_nested_json() -> None:
    result = parse("[" * 100_000 + "]" * 100_000)
    assert isinstance(result, ParseError)


def test_time_with_offset_is_kept_as_an_aware_datetime() -> None:
    msg = parse(spot().replace("2026-11-30T10:00:00Z", "2026-11-30T12:00:00+02:00"))
    assert isinstance(msg, Message)
    assert msg.time == datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


def test_missing_time_is_none() -> None:
    body = json.loads(spot())
    del body["time"]
    msg = parse(json.dumps(body))
    assert isinstance(msg, Message)
    assert msg.kind == m.SPOT_INTERRUPTED
    assert msg.time is None
