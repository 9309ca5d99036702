"""The simulation's HTML report as a person sees it: laid out by headless Chromium.

Each bundled report below is rendered to a file, opened in Chromium (driven over the
DevTools protocol, ``headless_chromium.py``), measured with the page's own layout boxes
at a desktop and a narrow width, and screenshotted. The assertions are about what a
reader sees, never about pixels (fonts differ between machines): the page loads with no
error and fetches nothing, every chart lies inside the window, every label inside its
chart and apart from its neighbours, each gridline's label reads the value the gridline
is drawn at (checked against the data's own maximum), time labels sit at their times,
and the event marks are there, in their rows, at their times, with tooltips.

Without Chromium the tests are skipped with the reason (``make browser`` installs it where
it can). ``python tests/wallclock/sim/test_report_browser.py FILE.png`` writes the
screenshot of the quickstart's report that ``docs/simulate.md`` shows.
"""

from __future__ import annotations

import re
import struct
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from attrs import frozen
from headless_chromium import CHROMIUM_ENV, Browser, chromium, find_chromium

from karpenter_core.sim.charts import MARKER_ROWS
from karpenter_core.sim.engine import Simulation
from karpenter_core.sim.report_html import render_html
from karpenter_core.sim.scenario import load_scenario

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SCENARIOS = ["quickstart.yaml", "scenarios/spot-and-outage.yaml"]
WIDE, NARROW, HEIGHT = 1280, 640, 900
NO_CHROMIUM = (
    "NOT TESTED: the HTML report in a real browser needs Chromium, and none was found "
    f"(${CHROMIUM_ENV}, or chromium / google-chrome on the PATH). Install it with "
    "`make browser` (Debian's chromium package, as root) or point "
    f"{CHROMIUM_ENV} at a Chromium or Chrome binary."
)

MEASURE = r"""
(() => {
  const box = e => {
    const b = e.getBoundingClientRect();
    return {left: b.left + scrollX, right: b.right + scrollX, top: b.top + scrollY,
            bottom: b.bottom + scrollY, width: b.width, height: b.height};
  };
  const shown = e => {
    const s = getComputedStyle(e);
    return s.visibility === 'visible' && s.display !== 'none' && parseFloat(s.opacity) > 0;
  };
  const charts = [...document.querySelectorAll('svg.chart')].map(svg => ({
    title: svg.getAttribute('aria-label'),
    box: box(svg),
    texts: [...svg.querySelectorAll('text')].map(t => ({
      text: t.textContent, cls: t.getAttribute('class') || '', box: box(t), shown: shown(t)})),
    grid: [...svg.querySelectorAll('line.grid')].map(box),
    baseline: box(svg.querySelector('line.baseline')),
    total: box(svg.querySelector('polyline.total')),
    marks: [...svg.querySelectorAll('g.marker')].map(g => ({
      row: g.dataset.row, title: g.querySelector('title').textContent, box: box(g),
      shown: shown(g)})),
  }));
  return {
    width: document.documentElement.clientWidth,
    scrollWidth: document.documentElement.scrollWidth,
    scrollHeight: document.documentElement.scrollHeight,
    headings: [...document.querySelectorAll('h2')].map(h => ({text: h.textContent, box: box(h)})),
    summary: [...document.querySelectorAll('ul.summary li')].map(li => li.textContent),
    legend: [...document.querySelectorAll('.legend .key')].map(k => k.textContent),
    charts,
  };
})()
"""


@frozen
class Rendered:
    """One report: its JSON, the page's layout at two widths, what the page reported,
    and the screenshot."""

    data: Mapping[str, Any]
    layouts: Mapping[int, Mapping[str, Any]]
    problems: Sequence[str]
    requests: Sequence[str]
    url: str
    screenshot: bytes


def render(browser: Browser, scenario: Path, out_dir: Path) -> Rendered:
    report = Simulation(load_scenario(str(scenario))).run()
    page_file = out_dir / "report.html"
    page_file.write_text(render_html(report), encoding="utf-8")
    page = browser.new_page(WIDE, HEIGHT)
    url = page_file.resolve().as_uri()
    page.open(url)
    layouts = {WIDE: page.evaluate(MEASURE)}
    shot = page.screenshot()
    page.resize(NARROW, HEIGHT)
    layouts[NARROW] = page.evaluate(MEASURE)
    return Rendered(report.to_json_dict(), layouts, page.problems(), page.requests(), url, shot)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    executable = find_chromium()
    if executable is None:
        pytest.skip(NO_CHROMIUM)
    with chromium(executable, tmp_path_factory.mktemp("chromium")) as b:
        yield b


@pytest.fixture(scope="module", params=SCENARIOS, ids=[Path(s).stem for s in SCENARIOS])
def rendered(
    request: pytest.FixtureRequest, browser: Browser, tmp_path_factory: pytest.TempPathFactory
) -> Rendered:
    return render(browser, EXAMPLES / request.param, tmp_path_factory.mktemp("report"))


def charts(r: Rendered) -> Iterator[tuple[int, Mapping[str, Any]]]:
    for width, layout in r.layouts.items():
        for chart in layout["charts"]:
            yield width, chart


def ticks(chart: Mapping[str, Any], axis: str) -> list[Mapping[str, Any]]:
    return [t for t in chart["texts"] if t["cls"] == f"tick {axis}"]


def centre_x(box: Mapping[str, float]) -> float:
    return (box["left"] + box["right"]) / 2


def centre_y(box: Mapping[str, float]) -> float:
    return (box["top"] + box["bottom"]) / 2


def seconds(label: str) -> float:
    """``0``, ``45s``, ``5m``, ``1h30m``, ``+15m00s`` -> seconds."""
    parts = re.findall(r"(\d+)([hms])", label)
    if not parts:
        assert label.lstrip("+") == "0", label
    return float(sum(int(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in parts))


def test_the_page_loads_without_errors_and_fetches_nothing(rendered: Rendered) -> None:
    assert rendered.problems == []
    assert rendered.requests == [rendered.url]


def test_what_happened_comes_first(rendered: Rendered) -> None:
    layout = rendered.layouts[WIDE]
    assert layout["headings"][0]["text"] == "What happened"
    assert layout["headings"][0]["box"]["top"] < layout["charts"][0]["box"]["top"]
    launched = rendered.data["nodesLaunched"]
    assert layout["summary"][0].startswith(f"Karpenter launched {launched} node")


def test_every_chart_is_drawn_inside_the_window(rendered: Rendered) -> None:
    for width, layout in rendered.layouts.items():
        assert layout["width"] == width
        assert layout["scrollWidth"] <= width  # nothing sticks out sideways
        assert [c["title"] for c in layout["charts"]] == ["Nodes", "Pending pods", "Cost"]
        for chart in layout["charts"]:
            box = chart["box"]
            assert box["width"] > 0.5 * width and box["height"] > 100, (width, chart["title"])
            assert box["left"] >= 0 and box["right"] <= width, (width, chart["title"])


def test_every_label_is_visible_inside_its_chart_and_apart_from_the_next(
    rendered: Rendered,
) -> None:
    for width, chart in charts(rendered):
        svg = chart["box"]
        for t in chart["texts"]:
            b = t["box"]
            where = (width, chart["title"], t["text"])
            assert t["shown"] and b["width"] > 0 and b["height"] > 0, where
            assert svg["left"] <= b["left"] and b["right"] <= svg["right"], where
            assert svg["top"] <= b["top"] and b["bottom"] <= svg["bottom"], where
        for axis, (lo, hi) in (("x", ("left", "right")), ("y", ("top", "bottom"))):
            boxes = sorted((t["box"] for t in ticks(chart, axis)), key=lambda b: b[lo])
            for a, b in pairwise(boxes):
                assert a[hi] <= b[lo], (width, chart["title"], axis)


def test_each_gridline_is_at_the_value_its_label_reads(rendered: Rendered) -> None:
    peaks = {
        "Nodes": max(s["nodes"] for s in rendered.data["timeline"]),
        "Pending pods": max(s["pendingPods"] for s in rendered.data["timeline"]),
        "Cost": max(s["costPerHour"] for s in rendered.data["timeline"]),
    }
    for width, chart in charts(rendered):
        where = (width, chart["title"])
        labels = ticks(chart, "y")
        values = [Decimal(t["text"]) for t in labels]
        ys = [centre_y(g) for g in chart["grid"]]
        assert len(ys) == len(values) >= 2, where
        # round values, evenly spaced, from 0
        steps = {b - a for a, b in pairwise(values)}
        assert values[0] == 0 and len(steps) == 1, where
        (step,) = steps
        assert step.scaleb(-step.adjusted()) in (1, 2, 5), where
        # each label beside its gridline, which is where its value maps to on the axis
        for t, y in zip(labels, ys, strict=True):
            assert t["box"]["top"] <= y <= t["box"]["bottom"], where
        per_px = float(values[-1]) / (ys[0] - ys[-1])
        for v, y in zip(values, ys, strict=True):
            assert float(v) == pytest.approx((ys[0] - y) * per_px, abs=0.75 * per_px), where
        assert ys[0] == pytest.approx(centre_y(chart["baseline"]), abs=0.75), where
        # ... and the data's highest value is drawn at the height the labels give it
        top = (ys[0] - chart["total"]["top"]) * per_px
        assert top == pytest.approx(peaks[chart["title"]], abs=1.0 * per_px), where
        assert peaks[chart["title"]] <= float(values[-1]), where


def test_time_labels_sit_at_their_times_and_the_last_one_is_whole(rendered: Rendered) -> None:
    end = rendered.data["virtualSeconds"]
    for width, chart in charts(rendered):
        where = (width, chart["title"])
        left, right = chart["baseline"]["left"], chart["baseline"]["right"]
        labels = ticks(chart, "x")
        assert len(labels) >= 4, where
        times = [seconds(t["text"]) for t in labels]
        assert times[0] == 0 and times[-1] <= end and end - times[-1] < times[1], where
        for t, at in zip(labels, times, strict=True):
            assert centre_x(t["box"]) == pytest.approx(left + (right - left) * at / end, abs=1.0), (
                where
            )
        # the data runs the whole axis: the total line ends at the end of the run
        assert chart["total"]["right"] == pytest.approx(right, abs=1.0), where


def test_event_marks_are_in_their_rows_at_their_times_with_tooltips(rendered: Rendered) -> None:
    data = rendered.data
    launched = [n["name"] for n in data["nodes"] if n["launched"] is not None]
    disruptions = [d for d in data["decisions"] if d["action"] == "Disrupt"]
    interruptions = [d for d in data["decisions"] if d["action"] == "SpotInterruption"]
    assert launched and disruptions and interruptions  # what these scenarios are about
    end = data["virtualSeconds"]
    for width, chart in charts(rendered):
        where = (width, chart["title"])
        marks = chart["marks"]
        titles = {
            row: "\n".join(m["title"] for m in marks if m["row"] == row) for row in MARKER_ROWS
        }
        assert all(f"launched {name}:" in titles["launch"] for name in launched), where
        for d in disruptions:
            assert f"Disrupt {d['nodeClaim']}: {d['reason']}" in titles["disruption"], where
        assert titles["interruption"].count("SpotInterruption") == len(interruptions), where
        left, right = chart["baseline"]["left"], chart["baseline"]["right"]
        below = max(t["box"]["bottom"] for t in ticks(chart, "x"))
        rows = sorted({m["row"] for m in marks}, key=MARKER_ROWS.index)
        row_y = {}
        for m in marks:
            b = m["box"]
            assert m["shown"] and b["width"] > 0 and b["height"] > 0, where
            assert b["top"] >= below - 0.5, where  # under the time labels, not on them
            assert chart["box"]["bottom"] >= b["bottom"], where
            row_y.setdefault(m["row"], []).append(centre_y(b))
            lines = [line for line in m["title"].splitlines() if line.startswith("+")]
            at = sum(seconds(line.split(" ")[0]) for line in lines) / len(lines)
            assert centre_x(b) == pytest.approx(left + (right - left) * at / end, abs=2.0), (
                *where,
                m["title"],
            )
        # one height per row, rows in their order top to bottom
        centres = [sum(row_y[r]) / len(row_y[r]) for r in rows]
        assert all(max(row_y[r]) - min(row_y[r]) < 1.0 for r in rows), where
        assert centres == sorted(centres), where


def test_the_legends_name_every_kind_of_mark_and_capacity_type(rendered: Rendered) -> None:
    data = rendered.data
    layout = rendered.layouts[WIDE]
    legend = layout["legend"]
    assert "Launch" in legend and "Spot interruption" in legend
    removed = {n["removalReason"] for n in data["nodes"] if n["launched"] is not None}
    for reason in removed - {None, "spot interruption"}:
        assert f"Disruption: {reason}" in legend
    capacity = set(data["nodesLaunchedByCapacityType"])
    for chart in layout["charts"]:
        keys = {t["text"] for t in chart["texts"] if t["cls"] == "key"}
        if chart["title"] == "Nodes":
            assert keys == capacity
        if chart["title"] == "Cost":
            assert keys == set(data["cost"]["byCapacityType"])


def png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    width, height = struct.unpack(">II", png[16:24])
    return width, height


def test_the_screenshot_is_the_whole_page(rendered: Rendered) -> None:
    width, height = png_size(rendered.screenshot)
    assert width == WIDE
    assert height == rendered.layouts[WIDE]["scrollHeight"] > HEIGHT


COMPARE = r"""
(() => {
  const box = e => {
    const b = e.getBoundingClientRect();
    return {left: b.left, right: b.right, top: b.top, bottom: b.bottom, width: b.width,
            height: b.height};
  };
  const shown = e => {
    const s = getComputedStyle(e);
    return s.visibility === 'visible' && s.display !== 'none' && parseFloat(s.opacity) > 0;
  };
  return [...document.querySelectorAll('svg.chart')].map(svg => ({
    title: svg.getAttribute('aria-label'),
    box: box(svg),
    keys: [...svg.querySelectorAll('text.key')].map(t => ({text: t.textContent, box: box(t),
                                                         shown: shown(t)})),
    swatches: [...svg.querySelectorAll('rect')].map(r => r.getAttribute('fill')),
    lines: [...svg.querySelectorAll('polyline[data-series]')].map(p => ({
      series: p.dataset.series, stroke: p.getAttribute('stroke'), box: box(p), shown: shown(p),
      points: p.getAttribute('points').trim().split(/\s+/).length})),
  }));
})()
"""


def test_a_what_if_page_draws_both_runs_on_each_chart_with_a_legend(
    browser: Browser, tmp_path: Path
) -> None:
    from karpenter_core.sim.report_html import render_comparison_html
    from karpenter_core.sim.whatif import compare, parse_what_if

    scenario = load_scenario(str(EXAMPLES / "quickstart.yaml"))
    change = parse_what_if("consolidation/default=WhenEmpty")
    baseline = Simulation(scenario).run()
    changed = Simulation(scenario, what_if=[change.event]).run()
    page_file = tmp_path / "what-if.html"
    page_file.write_text(render_comparison_html(compare([change], baseline, changed)), "utf-8")
    page = browser.new_page(WIDE, HEIGHT)
    page.open(page_file.resolve().as_uri())
    found = page.evaluate(COMPARE)
    assert page.problems() == [] and [u for u in page.requests() if not u.startswith("file:")] == []
    assert [c["title"] for c in found] == ["Nodes", "Pending pods", "Cost"]
    for chart in found:
        keys = {k["text"]: k for k in chart["keys"]}
        assert set(keys) == {"baseline", "what-if"}, chart["title"]
        for key in keys.values():  # each legend entry is visible, inside its chart
            assert key["shown"] and key["box"]["width"] > 0
            assert (
                chart["box"]["left"]
                <= key["box"]["left"]
                <= key["box"]["right"]
                <= chart["box"]["right"]
            )
        lines = {ln["series"]: ln for ln in chart["lines"]}
        assert set(lines) == {"baseline", "what-if"}
        assert lines["baseline"]["stroke"] != lines["what-if"]["stroke"]
        assert set(chart["swatches"]) >= {lines["baseline"]["stroke"], lines["what-if"]["stroke"]}
        for line in lines.values():  # drawn across the chart, not a dot
            assert line["shown"] and line["points"] >= 2
            assert line["box"]["width"] > chart["box"]["width"] / 2
    # the two series are two different runs: the baseline consolidated a node away
    assert baseline.samples[-1].nodes < changed.samples[-1].nodes


def main(argv: Sequence[str]) -> int:
    """Write the quickstart report's screenshot (``docs/images/simulate-report.png``)."""
    if len(argv) != 1:
        print(f"usage: {sys.argv[0]} OUT.png", file=sys.stderr)
        return 2
    executable = find_chromium()
    if executable is None:
        print(NO_CHROMIUM, file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp, chromium(executable, Path(tmp)) as b:
        shot = render(b, EXAMPLES / SCENARIOS[0], Path(tmp)).screenshot
    Path(argv[0]).write_bytes(shot)
    print(f"wrote {argv[0]} ({len(shot)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
