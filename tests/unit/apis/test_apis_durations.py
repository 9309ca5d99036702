"""Go durations, NillableDuration and budget cron schedules."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from karpenter_core.apis.durations import (
    HOUR,
    MILLISECOND,
    MINUTE,
    SECOND,
    CronError,
    DurationError,
    NillableDuration,
    format_go_duration,
    parse_cron,
    parse_go_duration,
)


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("0", 0),
        ("0s", 0),
        ("720h", 720 * HOUR),
        ("1h30m5s", HOUR + 30 * MINUTE + 5 * SECOND),
        ("1.5s", 1500 * MILLISECOND),
        ("300ms", 300 * MILLISECOND),
        ("-20m", -20 * MINUTE),
        ("+5s", 5 * SECOND),
        ("2h20m0s", 2 * HOUR + 20 * MINUTE),
        ("1us", 1000),
        ("1\u00b5s", 1000),
        ("7ns", 7),
        (".5h", 30 * MINUTE),
    ],
)
def test_parse_go_duration(text: str, nanos: int) -> None:
    assert parse_go_duration(text) == nanos


@pytest.mark.parametrize("text", ["", "1", "1hr", "FooNever", "Never", "h", "1.2.3s", "-", "1d"])
def test_parse_go_duration_rejects(text: str) -> None:
    with pytest.raises(DurationError, match="duration"):
        parse_go_duration(text)


@pytest.mark.parametrize(
    ("nanos", "text"),
    [
        (0, "0s"),
        (720 * HOUR, "720h0m0s"),
        (90 * SECOND, "1m30s"),
        (1500 * MILLISECOND, "1.5s"),
        (300 * MILLISECOND, "300ms"),
        (1000, "1\u00b5s"),
        (7, "7ns"),
        (-20 * MINUTE, "-20m0s"),
    ],
)
def test_format_go_duration_matches_go(nanos: int, text: str) -> None:
    assert format_go_duration(nanos) == text


@given(st.integers(min_value=-(2**62), max_value=2**62))
def test_format_then_parse_round_trips(nanos: int) -> None:
    assert parse_go_duration(format_go_duration(nanos)) == nanos


def test_nillable_duration_keeps_the_raw_string() -> None:
    d = NillableDuration.parse("60m")
    assert d.nanos == HOUR
    assert d.to_raw() == "60m"


def test_nillable_duration_never_is_nil() -> None:
    d = NillableDuration.parse("Never")
    assert d.is_never
    assert d.timedelta is None
    assert d.to_raw() == "Never"


def test_nillable_duration_built_in_code_formats_like_go() -> None:
    assert NillableDuration.of(720 * HOUR).to_raw() == "720h0m0s"
    assert NillableDuration(None).to_raw() == "Never"


def _t(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("spec", "after", "expected"),
    [
        ("* * * * *", "2026-03-01T10:00:30", "2026-03-01T10:01:00"),
        ("0 9 * * mon-fri", "2026-11-28T10:00:00", "2026-11-30T09:00:00"),  # Sat -> Mon
        ("@daily", "2026-03-01T10:00:00", "2026-03-02T00:00:00"),
        ("@hourly", "2026-03-01T10:00:00", "2026-03-01T11:00:00"),
        ("@annually", "2026-03-01T10:00:00", "2027-01-01T00:00:00"),
        ("@monthly", "2026-12-15T00:00:00", "2027-01-01T00:00:00"),
        ("@weekly", "2026-11-29T10:00:00", "2026-12-06T00:00:00"),  # Sunday
        ("*/15 * * * *", "2026-03-01T10:16:00", "2026-03-01T10:30:00"),
        ("0 0 29 2 *", "2026-03-01T00:00:00", "2028-02-29T00:00:00"),
        ("30 2 1,15 * *", "2026-03-02T00:00:00", "2026-03-15T02:30:00"),
        ("0 0 1 jan-mar sun", "2026-03-02T00:00:00", "2026-03-08T00:00:00"),  # dom OR dow
    ],
)
def test_cron_next(spec: str, after: str, expected: str) -> None:
    assert parse_cron(spec).next(_t(after)) == _t(expected)


@pytest.mark.parametrize(
    "spec",
    [
        "*",
        "* * * *",
        "* * * * * *",
        "60 * * * *",
        "a b c d e",
        "@fortnightly",
        "*/0 * * * *",
        "TZ=Europe/Paris 0 0 * * *",
        "5-1 * * * *",
        "* * * * 7",
    ],
)
def test_cron_rejects(spec: str) -> None:
    with pytest.raises(CronError):
        parse_cron(spec)
