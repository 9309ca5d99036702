"""Inline SVG charts for the simulation's HTML report.

A reader takes a chart's values from its gridlines, so every gridline sits exactly at the
value it is labelled with, and the labels are round: value axes step by 1, 2 or 5 times a
power of ten (counts by whole numbers), time axes by the steps a clock shows (15 s, 5 m,
1 h...). The page carries no script, so everything here is static markup: step series
(stacked when they split one total, e.g. nodes by capacity type), and event markers in
rows under the time axis, each with a ``<title>`` a browser shows as a tooltip.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

from attrs import frozen

__all__ = [
    "MARKER_ROWS",
    "Marker",
    "Series",
    "TimeAxis",
    "ValueAxis",
    "marker_glyph",
    "step_chart",
    "time_axis",
    "time_label",
    "value_axis",
]

_MULTIPLIERS = (1, 2, 5, 10)


@frozen
class ValueAxis:
    """A value axis from 0 to ``top`` with a gridline every ``step``, where ``step`` is
    ``mantissa`` x 10^``exponent`` (mantissa 1, 2 or 5)."""

    mantissa: int
    exponent: int
    intervals: int

    @property
    def decimals(self) -> int:
        return max(0, -self.exponent)

    @property
    def step(self) -> float:
        return round(self.mantissa * 10.0**self.exponent, self.decimals)

    @property
    def top(self) -> float:
        return self.ticks[-1]

    @property
    def ticks(self) -> tuple[float, ...]:
        # computed from integers and rounded, so 3 x 0.1 is 0.3, not 0.30000000000000004
        return tuple(
            round(i * self.mantissa * 10.0**self.exponent, self.decimals)
            for i in range(self.intervals + 1)
        )

    def label(self, value: float) -> str:
        return f"{value:.{self.decimals}f}"


def value_axis(v_max: float, *, max_intervals: int = 5, integer: bool = False) -> ValueAxis:
    """The axis with the largest round step that covers ``[0, v_max]`` in at most
    ``max_intervals`` steps (integer axes step by at least 1). An empty or all-zero
    series gets the axis 0..1."""
    if not math.isfinite(v_max) or v_max <= 0:
        return ValueAxis(1, 0, 1)
    raw = v_max / max_intervals
    exponent = math.floor(math.log10(raw))
    mantissa = 10
    for m in _MULTIPLIERS:
        if m * 10.0**exponent >= raw * (1 - 1e-9):
            mantissa = m
            break
    if mantissa == 10:
        mantissa, exponent = 1, exponent + 1
    if integer and exponent < 0:
        mantissa, exponent = 1, 0
    step = mantissa * 10.0**exponent
    intervals = max(1, math.ceil(v_max / step - 1e-9))
    return ValueAxis(mantissa, exponent, intervals)


TIME_STEPS = (
    1,
    2,
    5,
    10,
    15,
    30,
    60,
    120,
    300,
    600,
    900,
    1800,
    3600,
    7200,
    10800,
    21600,
    43200,
    86400,
    172800,
    604800,
)
"""Steps of a time axis, in seconds: what a clock's face suggests, not 1/2/5 x 10^k
(a tick every 500 s would be labelled 8m20s)."""


@frozen
class TimeAxis:
    """A time axis over ``[0, end]`` seconds with a tick every ``step`` seconds."""

    step: int
    end: float

    @property
    def ticks(self) -> tuple[int, ...]:
        count = int(self.end // self.step + 1e-9)
        return tuple(i * self.step for i in range(count + 1))


def time_axis(end: float, *, max_intervals: int = 6) -> TimeAxis:
    """The smallest clock step that needs at most ``max_intervals`` ticks over the run."""
    end = max(end, 1.0)
    for step in TIME_STEPS:
        if end / step <= max_intervals:
            return TimeAxis(step, end)
    week = TIME_STEPS[-1]
    return TimeAxis(week * math.ceil(end / week / max_intervals), end)


def time_label(seconds: float) -> str:
    """A compact offset for an axis: ``0``, ``45s``, ``5m``, ``1m30s``, ``2h``, ``1h30m``."""
    s = round(seconds)
    if s == 0:
        return "0"
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    parts = [f"{v}{unit}" for v, unit in ((h, "h"), (m, "m"), (sec, "s")) if v]
    return "".join(parts)


@frozen
class Series:
    """One step series of a chart: its value at each sample time."""

    name: str
    color: str
    values: tuple[float, ...]
    dashed: bool = False
    """Drawn dashed (and so still seen where another series' line lies over it)."""


MARKER_ROWS = ("change", "launch", "disruption", "interruption", "fault")
"""The marker rows under a chart's time axis, top to bottom: scenario changes (workloads,
patches), launches, disruptions (colour by reason), spot interruptions, faults (node
failures, outages, restarts, launches or scheduling that failed)."""

_SHAPES = {
    "change": "circle",
    "launch": "up",
    "disruption": "down",
    "interruption": "diamond",
    "fault": "cross",
}


@frozen
class Marker:
    """Something that happened at ``t``: drawn in its ``row`` with its colour, and
    ``text`` as the tooltip."""

    t: float
    row: str
    color: str
    text: str


def marker_glyph(row: str, color: str, cx: float, cy: float, r: float = 4.5) -> str:
    """The SVG shape of a marker row, centred on (cx, cy)."""
    shape = _SHAPES.get(row, "circle")
    if shape == "up":
        d = f"M{cx:.1f},{cy - r:.1f}L{cx + r:.1f},{cy + r * 0.8:.1f}L{cx - r:.1f},{cy + r * 0.8:.1f}Z"
        return f'<path d="{d}" fill="{color}"/>'
    if shape == "down":
        d = f"M{cx:.1f},{cy + r:.1f}L{cx + r:.1f},{cy - r * 0.8:.1f}L{cx - r:.1f},{cy - r * 0.8:.1f}Z"
        return f'<path d="{d}" fill="{color}"/>'
    if shape == "diamond":
        d = f"M{cx:.1f},{cy - r:.1f}L{cx + r:.1f},{cy:.1f}L{cx:.1f},{cy + r:.1f}L{cx - r:.1f},{cy:.1f}Z"
        return f'<path d="{d}" fill="{color}"/>'
    if shape == "cross":
        a = r * 0.8
        d = f"M{cx - a:.1f},{cy - a:.1f}L{cx + a:.1f},{cy + a:.1f}M{cx - a:.1f},{cy + a:.1f}L{cx + a:.1f},{cy - a:.1f}"
        return f'<path d="{d}" stroke="{color}" stroke-width="2.2" fill="none"/>'
    return f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r * 0.8:.1f}" fill="{color}"/>'


MAX_TOOLTIP_LINES = 12
_WIDTH, _PAD_L, _PAD_R, _PAD_T = 720, 52, 26, 34
_PLOT_H, _ROW_H, _LABEL_H = 150, 12, 20
_MARK_SPAN = 6.0
"""Marks of a row this close (in chart units) are drawn as one."""


def _step_points(
    times: Sequence[float], values: Sequence[float], end: float
) -> list[tuple[float, float]]:
    """The corners of a step line: flat at each value until the sample that changed it."""
    out = [(times[0], values[0])]
    last = values[0]
    for t, v in zip(times[1:], values[1:], strict=True):
        if v != last:
            out += [(t, last), (t, v)]
            last = v
    out.append((end, last))
    return out


def _legend(series: Sequence[Series], y: float) -> str:
    """Swatches and names, right-aligned on the title's line (widths estimated from the
    text: 6.6 px per character of the 11 px font is generous)."""
    x = float(_WIDTH - _PAD_R)
    parts = []
    for s in reversed(series):
        text_w = 6.6 * len(s.name)
        x -= text_w
        parts.append(f'<text x="{x:.1f}" y="{y:.1f}" class="key">{html.escape(s.name)}</text>')
        x -= 14
        parts.append(f'<rect x="{x:.1f}" y="{y - 9:.1f}" width="10" height="10" fill="{s.color}"/>')
        x -= 12
    return "".join(parts)


def _tooltip(lines: Sequence[str]) -> str:
    shown = list(lines[:MAX_TOOLTIP_LINES])
    if len(lines) > MAX_TOOLTIP_LINES:
        shown.append(f"... {len(lines) - MAX_TOOLTIP_LINES} more")
    return html.escape("\n".join(shown))


def step_chart(
    title: str,
    unit: str,
    times: Sequence[float],
    series: Sequence[Series],
    *,
    end: float,
    stacked: bool = False,
    integer: bool = False,
    markers: Sequence[Marker] = (),
    rows: Sequence[str] = (),
    legend: bool = False,
) -> str:
    """One chart as an inline ``<svg>``: step series over ``[0, end]`` seconds (stacked
    into filled bands when ``stacked``, their top edge the ``total`` line), gridlines at
    round values, time ticks, and ``markers`` in ``rows`` under the time axis; with
    ``legend``, the series' names and colours beside the title."""
    if not times:
        times = [0.0]
        series = [Series(s.name, s.color, (0.0,)) for s in series] or [
            Series(title, "#1f77b4", (0.0,))
        ]
    bands: list[tuple[Series, list[float], list[float]]] = []
    base = [0.0] * len(times)
    for s in series:
        lower = base if stacked else [0.0] * len(times)
        upper = [lo + v for lo, v in zip(lower, s.values, strict=True)]
        bands.append((s, lower, upper))
        if stacked:
            base = upper
    tops = [max(upper) for _, _, upper in bands]
    axis = value_axis(max(tops, default=0.0), integer=integer)
    xaxis = time_axis(end)
    plot_bottom = _PAD_T + _PLOT_H
    used_rows = [r for r in MARKER_ROWS if r in rows]
    label_y = plot_bottom + 16
    rows_top = plot_bottom + _LABEL_H + 2
    height = rows_top + _ROW_H * len(used_rows) + 4

    def x(t: float) -> float:
        return _PAD_L + (_WIDTH - _PAD_L - _PAD_R) * min(max(t, 0.0), xaxis.end) / xaxis.end

    def y(v: float) -> float:
        return plot_bottom - _PLOT_H * v / axis.top

    def pts(corners: Sequence[tuple[float, float]]) -> str:
        return " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in corners)

    out = [
        f'<svg class="chart" viewBox="0 0 {_WIDTH} {height}" role="img" '
        f'aria-label="{html.escape(title)}">',
        f'<text x="{_PAD_L}" y="18" class="title">{html.escape(title)} ({html.escape(unit)})</text>',
    ]
    if legend:
        out.append(_legend(series, 18))
    for v in axis.ticks:
        out.append(
            f'<line x1="{_PAD_L}" x2="{_WIDTH - _PAD_R}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
            f'class="grid"/><text x="{_PAD_L - 6}" y="{y(v) + 4:.1f}" text-anchor="end" '
            f'class="tick y">{axis.label(v)}</text>'
        )
    banded = stacked and len(series) > 1
    for s, lower, upper in bands:
        top_line = _step_points(times, upper, end)
        if banded:
            bottom_line = _step_points(times, lower, end)
            out.append(
                f'<polygon class="band" fill="{s.color}" fill-opacity="0.35" stroke="none" '
                f'points="{pts(top_line + bottom_line[::-1])}"/>'
            )
        # a lone series is its own total: the line the chart's maximum is read from
        total = ' class="total"' if len(series) == 1 else ""
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        out.append(
            f'<polyline{total} fill="none" stroke="{s.color}" stroke-width="2"{dash} '
            f'data-series="{html.escape(s.name)}" points="{pts(top_line)}"/>'
        )
    if banded:
        out.append(
            '<polyline class="total" fill="none" stroke="#333" stroke-width="1" '
            f'points="{pts(_step_points(times, bands[-1][2], end))}"/>'
        )
    out.append(
        f'<line x1="{_PAD_L}" x2="{_WIDTH - _PAD_R}" y1="{plot_bottom}" y2="{plot_bottom}" '
        'class="axis baseline"/>'
    )
    # marks of one row and colour closer than a glyph's width share one glyph (and
    # tooltip): a pass launching ten NodeClaims is one triangle listing them
    groups: list[list[Marker]] = []
    open_group: dict[tuple[str, str], list[Marker]] = {}
    for m in sorted(markers, key=lambda m: m.t):
        if m.row not in used_rows:
            continue
        group = open_group.get((m.row, m.color))
        if group is None or x(m.t) - x(group[0].t) > _MARK_SPAN:
            group = []
            groups.append(group)
            open_group[(m.row, m.color)] = group
        group.append(m)
    for ms in groups:
        row, color = ms[0].row, ms[0].color
        cy = rows_top + _ROW_H * used_rows.index(row) + _ROW_H / 2
        cx = sum(x(m.t) for m in ms) / len(ms)
        out.append(
            f'<g class="marker {row}" data-row="{row}"><title>{_tooltip([m.text for m in ms])}'
            f"</title>{marker_glyph(row, color, cx, cy)}</g>"
        )
    for t in xaxis.ticks:
        out.append(
            f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{plot_bottom}" y2="{plot_bottom + 4}" '
            f'class="axis"/><text x="{x(t):.1f}" y="{label_y}" text-anchor="middle" '
            f'class="tick x">{time_label(t)}</text>'
        )
    out.append("</svg>")
    return "".join(out)
