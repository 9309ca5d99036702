"""The report's charts: axes at round values whose labels are the exact values of their
gridlines, time ticks a clock would show, step lines, and event marks."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from decimal import Decimal
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from karpenter_core.sim.charts import (
    TIME_STEPS,
    Marker,
    Series,
    step_chart,
    time_axis,
    time_label,
    value_axis,
)

SVG = "{http://www.w3.org/2000/svg}"


@pytest.mark.parametrize(
    ("v_max", "integer", "labels"),
    [
        (8.0, True, ["0", "2", "4", "6", "8"]),
        (8.25, False, ["0", "2", "4", "6", "8", "10"]),  # was a gridline at 8.25 labelled 8
        (26.0, True, ["0", "10", "20", "30"]),
        (3.0, True, ["0", "1", "2", "3"]),
        (0.9, True, ["0", "1"]),  # counts never step by a fraction
        (0.3041, False, ["0.0", "0.1", "0.2", "0.3", "0.4"]),
        (0.6082, False, ["0.0", "0.2", "0.4", "0.6", "0.8"]),
        (0.07, False, ["0.00", "0.02", "0.04", "0.06", "0.08"]),
        (1234.0, False, ["0", "500", "1000", "1500"]),
        (0.0, True, ["0", "1"]),
    ],
)
def test_value_axes_step_by_one_two_or_five_times_a_power_of_ten(
    v_max: float, integer: bool, labels: list[str]
) -> None:
    axis = value_axis(v_max, integer=integer)
    assert [axis.label(v) for v in axis.ticks] == labels


@given(
    st.floats(min_value=1e-6, max_value=1e9, allow_nan=False),
    st.integers(min_value=2, max_value=8),
    st.booleans(),
)
def test_every_axis_covers_its_data_in_round_equal_steps(
    v_max: float, max_intervals: int, integer: bool
) -> None:
    axis = value_axis(v_max, max_intervals=max_intervals, integer=integer)
    labels = [Decimal(axis.label(v)) for v in axis.ticks]
    # (a maximum within a billionth of a gridline is on it: float noise, not data)
    assert labels[0] == 0 and axis.top >= v_max * (1 - 1e-9)
    steps = {b - a for a, b in pairwise(labels)}
    assert len(steps) == 1
    (step,) = steps
    mantissa = step.scaleb(-step.adjusted())
    assert mantissa in (1, 2, 5)
    # the gridline is drawn at the value its label reads
    assert all(float(label) == v for label, v in zip(labels, axis.ticks, strict=True))
    if integer:
        assert step >= 1
    else:
        assert len(labels) - 1 <= max_intervals
        assert axis.top - float(step) < v_max  # no empty interval on top


@pytest.mark.parametrize(
    ("end", "step", "last"),
    [(1800, 300, 1800), (2700, 600, 2400), (45, 10, 40), (7200, 1800, 7200), (86400, 21600, 86400)],
)
def test_time_axes_tick_at_clock_steps_within_the_run(end: float, step: int, last: int) -> None:
    axis = time_axis(end)
    assert axis.step == step and axis.step in TIME_STEPS
    assert axis.ticks[0] == 0 and axis.ticks[-1] == last
    assert len(axis.ticks) - 1 <= 6


@pytest.mark.parametrize(
    ("seconds", "label"),
    [(0, "0"), (45, "45s"), (300, "5m"), (90, "1m30s"), (7200, "2h"), (5400, "1h30m")],
)
def test_time_labels_are_compact(seconds: float, label: str) -> None:
    assert time_label(seconds) == label


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg.replace("<svg ", f'<svg xmlns="{SVG[1:-1]}" ', 1))


def chart(**kwargs: object) -> ET.Element:
    defaults: dict[str, object] = {
        "times": [0.0, 10.0, 20.0, 30.0],
        "series": [Series("spot", "#f00", (0.0, 3.0, 8.25, 8.25))],
        "end": 1800.0,
    }
    defaults.update(kwargs)
    return parse(step_chart("Nodes", "count", **defaults))  # type: ignore[arg-type]


def test_each_gridline_has_its_label_at_its_height() -> None:
    root = chart()
    grid = [
        float(line.get("y1", "")) for line in root.iter(f"{SVG}line") if line.get("class") == "grid"
    ]
    labels = [t for t in root.iter(f"{SVG}text") if t.get("class") == "tick y"]
    assert [t.text for t in labels] == ["0", "2", "4", "6", "8", "10"]
    for y, text in zip(grid, labels, strict=True):
        assert float(text.get("y", "")) - y == pytest.approx(4.0)  # baseline under centre
    # heights are linear in the labelled values: 0 at the bottom, 10 at the top
    bottom, top = grid[0], grid[-1]
    for y, text in zip(grid, labels, strict=True):
        assert y == pytest.approx(bottom + (top - bottom) * float(text.text or "") / 10, abs=0.06)


def test_the_total_line_steps_only_where_the_value_changes_and_reaches_the_end() -> None:
    root = chart(series=[Series("n", "#f00", (1.0, 1.0, 2.0, 2.0))])
    (total,) = [p for p in root.iter(f"{SVG}polyline") if p.get("class") == "total"]
    points = [tuple(map(float, p.split(","))) for p in (total.get("points") or "").split()]
    assert len(points) == 4  # start, along at 1, up to 2, along to the end
    xs = [x for x, _ in points]
    axis = [line for line in root.iter(f"{SVG}line") if "baseline" in (line.get("class") or "")]
    assert xs[-1] == pytest.approx(float(axis[0].get("x2", "")))


def test_stacked_series_are_bands_whose_top_is_the_total() -> None:
    root = chart(
        series=[
            Series("on-demand", "#00f", (1.0, 1.0, 1.0, 1.0)),
            Series("spot", "#f80", (0.0, 2.0, 2.0, 3.0)),
        ],
        stacked=True,
        legend=True,
    )
    bands = [p for p in root.iter(f"{SVG}polygon") if p.get("class") == "band"]
    assert [b.get("fill") for b in bands] == ["#00f", "#f80"]
    labels = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "tick y"]
    assert labels[-1] == "4"  # the total (1 + 3), not the largest series
    assert [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "key"] == [
        "spot",
        "on-demand",
    ]


def test_marks_sit_in_their_rows_with_their_tooltips_and_close_ones_share_one() -> None:
    marks = [
        Marker(60.0, "launch", "#0a0", "+1m launched a"),
        Marker(61.0, "launch", "#0a0", "+1m01s launched b"),
        Marker(900.0, "interruption", "#d00", "+15m reclaimed a"),
    ]
    root = chart(markers=marks, rows=["launch", "interruption"])
    groups = [g for g in root.iter(f"{SVG}g") if "marker" in (g.get("class") or "")]
    titles = {g.get("data-row"): g.find(f"{SVG}title") for g in groups}
    assert len(groups) == 2
    assert (titles["launch"].text or "").splitlines() == ["+1m launched a", "+1m01s launched b"]  # type: ignore[union-attr]
    assert titles["interruption"].text == "+15m reclaimed a"  # type: ignore[union-attr]


def test_no_samples_still_draw_an_axis() -> None:
    root = chart(times=[], series=[])
    labels = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "tick y"]
    assert labels == ["0", "1"]
    assert len([t for t in root.iter(f"{SVG}text") if t.get("class") == "tick x"]) == 7
