"""Go-style durations, ``NillableDuration`` and the cron schedules of disruption budgets.

Karpenter's API stores durations as Go ``time.Duration`` strings (``"720h"``, ``"1h30m"``),
and some fields accept the word ``"Never"``. We keep durations as integer nanoseconds, the
unit Go uses, so arithmetic and formatting match upstream exactly, and we keep the string the
user wrote so that re-serialising an object never produces a spurious GitOps diff.

Budget schedules use the five-field cron syntax of ``robfig/cron`` (``ParseStandard``),
always in UTC; :func:`parse_cron` and :meth:`CronSchedule.next` implement the subset that
syntax allows (ranges, steps, lists, month/day names, ``?`` and the ``@`` descriptors).
"""

from __future__ import annotations

import calendar
import re
from datetime import UTC, datetime, timedelta

from attrs import frozen

from karpenter_core.apis.limits import shown_repr

NEVER = "Never"

NANOSECOND = 1
MICROSECOND = 1_000
MILLISECOND = 1_000_000
SECOND = 1_000_000_000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

_UNITS: dict[str, int] = {
    "ns": NANOSECOND,
    "us": MICROSECOND,
    "\u00b5s": MICROSECOND,  # micro sign
    "\u03bcs": MICROSECOND,  # Greek mu
    "ms": MILLISECOND,
    "s": SECOND,
    "m": MINUTE,
    "h": HOUR,
}
_COMPONENT = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")
_MAX_INT64 = (1 << 63) - 1


class DurationError(ValueError):
    """A string that is not a Go duration; the message quotes it."""


def parse_go_duration(value: str) -> int:
    """Parse a Go duration string (``"1h30m"``, ``"-1.5s"``, ``"300ms"``) to nanoseconds.

    Follows ``time.ParseDuration``: an optional sign, then one or more decimal numbers each
    followed by a unit; ``"0"`` alone is allowed.
    """
    if not isinstance(value, str):
        raise DurationError(f"invalid duration {shown_repr(value)}: not a string")
    orig = value
    sign = 1
    if value[:1] in ("-", "+"):
        sign = -1 if value[0] == "-" else 1
        value = value[1:]
    if value == "0":
        return 0
    if value == "":
        raise DurationError(f'invalid duration "{orig}"')
    total = 0
    pos = 0
    while pos < len(value):
        m = _COMPONENT.match(value, pos)
        if m is None or m.end() == pos:
            raise DurationError(f'invalid duration "{orig}"')
        whole, frac, unit = m.group(1), m.group(2), m.group(3)
        if not whole and not frac:
            raise DurationError(f'invalid duration "{orig}"')
        if not unit:
            raise DurationError(f'missing unit in duration "{orig}"')
        scale = _UNITS.get(unit)
        if scale is None:
            raise DurationError(f'unknown unit "{unit}" in duration "{orig}"')
        amount = int(whole or "0") * scale
        if frac:
            amount += int(frac) * scale // (10 ** len(frac))
        total += amount
        if total > _MAX_INT64:
            raise DurationError(f'invalid duration "{orig}": out of range')
        pos = m.end()
    return sign * total


def format_go_duration(nanos: int) -> str:
    """Format nanoseconds the way Go's ``Duration.String`` does (``"720h0m0s"``, ``"1.5s"``)."""
    if nanos == 0:
        return "0s"
    neg = nanos < 0
    u = -nanos if neg else nanos
    if u < SECOND:
        if u < MICROSECOND:
            body = f"{u}ns"
        elif u < MILLISECOND:
            body = _frac(u, MICROSECOND) + "\u00b5s"
        else:
            body = _frac(u, MILLISECOND) + "ms"
    else:
        hours, rem = divmod(u, HOUR)
        minutes, rem = divmod(rem, MINUTE)
        secs = _frac(rem, SECOND) + "s"
        if hours:
            body = f"{hours}h{minutes}m{secs}"
        elif minutes:
            body = f"{minutes}m{secs}"
        else:
            body = secs
    return ("-" if neg else "") + body


def _frac(value: int, unit: int) -> str:
    whole, rest = divmod(value, unit)
    if rest == 0:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}." + str(rest).rjust(digits, "0").rstrip("0")


@frozen
class NillableDuration:
    """A duration that may be disabled with ``"Never"``; remembers what the user wrote.

    ``nanos`` is ``None`` for ``Never``. ``raw`` is the original string (``None`` when the
    value was built in code), and :meth:`to_raw` returns it unchanged so round trips are
    byte-for-byte.
    """

    nanos: int | None
    raw: str | None = None

    @classmethod
    def parse(cls, value: str) -> NillableDuration:
        """Parse ``"Never"`` or a Go duration string; raises :class:`DurationError`."""
        if value == NEVER:
            return cls(None, value)
        return cls(parse_go_duration(value), value)

    @classmethod
    def never(cls) -> NillableDuration:
        return cls(None, NEVER)

    @classmethod
    def of(cls, nanos: int) -> NillableDuration:
        return cls(nanos, None)

    @property
    def is_never(self) -> bool:
        return self.nanos is None

    @property
    def timedelta(self) -> timedelta | None:
        """The duration as a ``timedelta`` (microsecond precision), ``None`` for Never."""
        if self.nanos is None:
            return None
        return timedelta(microseconds=self.nanos // MICROSECOND)

    @property
    def seconds(self) -> float | None:
        return None if self.nanos is None else self.nanos / SECOND

    def to_raw(self) -> str:
        if self.raw is not None:
            return self.raw
        if self.nanos is None:
            return NEVER
        return format_go_duration(self.nanos)

    def __str__(self) -> str:
        return self.to_raw()


# --- cron -----------------------------------------------------------------------------------

_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MONTH_NAMES = {n.lower(): i for i, n in enumerate(calendar.month_abbr) if n}
_DOW_NAMES = {"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}


class CronError(ValueError):
    """A budget schedule that the cron parser rejects; the message says which field."""


@frozen
class CronSchedule:
    """A parsed five-field cron expression, evaluated in UTC."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days_of_month: frozenset[int]
    months: frozenset[int]
    days_of_week: frozenset[int]
    dom_star: bool
    dow_star: bool

    def _day_matches(self, t: datetime) -> bool:
        dom = t.day in self.days_of_month
        dow = ((t.weekday() + 1) % 7) in self.days_of_week
        if self.dom_star or self.dow_star:
            return dom and dow
        return dom or dow

    def next(self, after: datetime) -> datetime:
        """The first activation strictly after ``after`` (whole minutes, UTC)."""
        t = after.astimezone(UTC).replace(second=0, microsecond=0) + timedelta(minutes=1)
        limit = t.year + 5
        while t.year <= limit:
            if t.month not in self.months:
                t = _first_of_next_month(t)
                continue
            if not self._day_matches(t):
                t = (t + timedelta(days=1)).replace(hour=0, minute=0)
                continue
            if t.hour not in self.hours:
                t = (t + timedelta(hours=1)).replace(minute=0)
                continue
            if t.minute not in self.minutes:
                t += timedelta(minutes=1)
                continue
            return t
        raise CronError("schedule never fires")


def _first_of_next_month(t: datetime) -> datetime:
    if t.month == 12:
        return t.replace(year=t.year + 1, month=1, day=1, hour=0, minute=0)
    return t.replace(month=t.month + 1, day=1, hour=0, minute=0)


def _field_value(token: str, names: dict[str, int], field: str) -> int:
    low = token.lower()
    if low in names:
        return names[low]
    if not token.isdigit():
        raise CronError(f'invalid value "{token}" in {field} field')
    return int(token)


def _parse_field(
    text: str, lo: int, hi: int, field: str, names: dict[str, int] | None = None
) -> tuple[frozenset[int], bool]:
    names = names or {}
    values: set[int] = set()
    star = False
    for part in text.split(","):
        rng, _, step_s = part.partition("/")
        step = 1
        if step_s:
            if not step_s.isdigit() or int(step_s) == 0:
                raise CronError(f'invalid step "{step_s}" in {field} field')
            step = int(step_s)
        if rng in ("*", "?"):
            start, end = lo, hi
            star = star or step == 1
        else:
            first, dash, last = rng.partition("-")
            start = _field_value(first, names, field)
            end = _field_value(last, names, field) if dash else (hi if step_s else start)
        if start < lo or end > hi or start > end:
            raise CronError(f'value out of range [{lo}-{hi}] in {field} field: "{part}"')
        values.update(range(start, end + 1, step))
    return frozenset(values), star


def parse_cron(spec: str) -> CronSchedule:
    """Parse a standard cron spec (5 fields or an ``@`` descriptor) like ``robfig/cron``."""
    spec = spec.strip()
    if spec.startswith("TZ=") or spec.startswith("CRON_TZ="):
        raise CronError("time zones are not supported; budget schedules are always UTC")
    if spec.startswith("@"):
        expanded = _DESCRIPTORS.get(spec)
        if expanded is None:
            raise CronError(f'unrecognized descriptor "{spec}"')
        spec = expanded
    fields = spec.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: {shown_repr(spec)}")
    minutes, _ = _parse_field(fields[0], 0, 59, "minute")
    hours, _ = _parse_field(fields[1], 0, 23, "hour")
    dom, dom_star = _parse_field(fields[2], 1, 31, "day-of-month")
    months, _ = _parse_field(fields[3], 1, 12, "month", _MONTH_NAMES)
    dow, dow_star = _parse_field(fields[4], 0, 6, "day-of-week", _DOW_NAMES)
    return CronSchedule(minutes, hours, dom, months, dow, dom_star, dow_star)
