"""``karpenter simulate -o html``: the report as one self-contained page.

Inline SVG and CSS only: no script, no font, nothing fetched, so the page opens the same
from a CI artifact, a mail attachment or a browser without network. It reads top down:
what happened (a few sentences from the report's figures), the totals, charts over time
(nodes and cost split by capacity type, pending pods) with the run's events marked on
their time axes, then the NodeClaims and the decisions; the controllers' events are
folded away in a ``<details>`` element.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from karpenter_core.sim.charts import MARKER_ROWS, Marker, Series, marker_glyph, step_chart
from karpenter_core.sim.records import Sample
from karpenter_core.sim.report import (
    Report,
    capacity_type_name,
    decision_subject,
    format_offset,
    offset_of,
    pods_note,
)

if TYPE_CHECKING:
    from karpenter_core.sim.whatif import Comparison

__all__ = [
    "MAX_HTML_EVENTS",
    "comparison_charts",
    "markers",
    "render_comparison_html",
    "render_html",
    "what_happened",
]

MAX_HTML_EVENTS = 500
"""Events listed in the page (all of them are in ``-o json``)."""

CAPACITY_COLORS = {
    "on-demand": "#1f77b4",
    "spot": "#ff7f0e",
    "reserved": "#8c6d31",
    "unknown": "#999999",
}
_OTHER_CAPACITY_COLORS = ("#17becf", "#7f7f7f", "#bcbd22")

CHANGE_COLOR = "#888888"
LAUNCH_COLOR = "#2ca02c"
INTERRUPTION_COLOR = "#d62728"
FAULT_COLOR = "#7f0000"
FAILURE_COLOR = "#000000"
DISRUPTION_COLORS = {
    "drifted": "#9467bd",
    "underutilized": "#e377c2",
    "empty": "#17becf",
    "expired": "#bcbd22",
}
_OTHER_DISRUPTION_COLORS = ("#8c564b", "#637939", "#7b4173", "#3182bd", "#843c39")

SCENARIO_CHANGES = frozenset(
    {"CreateWorkload", "ScaleWorkload", "DeleteWorkload", "PatchObject", "ApplyObject"}
)
SCENARIO_FAULTS = frozenset(
    {"NodeFailure", "NodeDeletion", "OfferingOutage", "OfferingRestored", "Restart"}
)
KARPENTER_FAILURES = frozenset({"LaunchFailed", "FailedScheduling", "NoCompatibleInstanceTypes"})
_SCENARIO_WORDS = {
    "CreateWorkload": ("workload created", "workloads created"),
    "ScaleWorkload": ("workload scaled", "workloads scaled"),
    "DeleteWorkload": ("workload deleted", "workloads deleted"),
    "PatchObject": ("object patched", "objects patched"),
    "ApplyObject": ("object applied", "objects applied"),
    "SpotInterruption": ("spot interruption", "spot interruptions"),
    "NodeFailure": ("node failure", "node failures"),
    "NodeDeletion": ("node deletion", "node deletions"),
    "OfferingOutage": ("offering outage", "offering outages"),
    "OfferingRestored": ("offering restored", "offerings restored"),
    "Restart": ("Karpenter restart", "Karpenter restarts"),
}


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _split(counts: Mapping[str, float], fmt: str = "{v:g} {k}") -> str:
    return ", ".join(fmt.format(k=k, v=v) for k, v in counts.items())


def what_happened(report: Report) -> list[str]:
    """The run in a few sentences, from the report's own figures (plain text)."""
    j = report.to_json_dict()
    out = []
    launched = report.nodes_launched_by_capacity_type()
    nodes = f"Karpenter launched {_count(report.nodes_launched, 'node', 'nodes')}"
    if report.nodes_at_start:
        nodes = f"The run started with {report.nodes_at_start} nodes; " + nodes
    if launched:
        nodes += f" ({_split(launched)})"
    nodes += f" and removed {report.nodes_removed}"
    reasons = report.removal_reasons()
    if reasons:
        nodes += f" ({_split(reasons, '{k}: {v}')})"
    out.append(nodes + ".")
    failed = j["nodeClaimsNotLaunched"]
    if failed:
        why = Counter(nc.reason or "not yet" for nc in report.nodeclaims if nc.launched is None)
        out.append(
            f"{_count(failed, 'NodeClaim', 'NodeClaims')} never launched "
            f"({_split(dict(why), '{k}: {v}')})."
        )
    methods = Counter(
        str(d.get("method") or d["reason"].split(":")[0])
        for d in report.decisions
        if d["action"] == "Disrupt"
    )
    if methods:
        out.append(
            f"The disruption controller started {_count(methods.total(), 'command', 'commands')}"
            f" ({_split(dict(methods), '{k}: {v}')})."
        )
    steps = Counter(d["action"] for d in report.decisions if d.get("source") == "scenario")
    if steps:
        parts = [
            f"{n} {_SCENARIO_WORDS.get(a, (a, a))[0 if n == 1 else 1]}" for a, n in steps.items()
        ]
        out.append("The scenario: " + ", ".join(parts) + ".")
    pods = j["pods"]
    ps = pods["pendingSeconds"]
    out.append(
        f"{_count(pods['created'], 'pod was', 'pods were')} created; at the end "
        f"{pods['bound']} ran, {pods['pending']} waited for a node and "
        f"{pods['succeeded']} had finished. The longest wait for a node was "
        f"{ps['max']:.0f}s (p50 {ps['p50']:.0f}s, p95 {ps['p95']:.0f}s)."
    )
    by_type = j["cost"]["byCapacityType"]
    cost = f"The instances cost ${j['cost']['total']:.4f} over {format_offset(report.duration_seconds)}"
    if len(by_type) > 1:
        cost += f" ({_split(by_type, '{k} ${v:.4f}')})"
    last = report.samples[-1] if report.samples else None
    running = (
        f"{_count(last.nodes, 'node', 'nodes')} running"
        + (f" ({_split(dict(_named(last.nodes_by_capacity_type)))})" if last.nodes else "")
        if last is not None
        else "no sample taken"
    )
    out.append(f"{cost}; ${j['cost']['perHourAtEnd']:.4f}/h at the end, {running}.")
    if report.controller_failures:
        out.append(
            f"{_count(len(report.controller_failures), 'controller', 'controllers')} had "
            "failing reconciles (below): the figures may not be trustworthy."
        )
    return out


def _named(pairs: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
    return [(capacity_type_name(k), v) for k, v in pairs]


def _disruption_colors(report: Report) -> dict[str, str]:
    """A colour per disruption reason: the well-known ones fixed, others in turn."""
    colors = dict(DISRUPTION_COLORS)
    spare = list(_OTHER_DISRUPTION_COLORS)
    for d in report.decisions:
        reason = _disruption_reason(d)
        if reason is not None and reason not in colors:
            colors[reason] = spare.pop(0) if spare else "#555555"
    return colors


def _disruption_reason(d: Mapping[str, Any]) -> str | None:
    """The reason a node-removing decision names (lower case), None for others."""
    if d["action"] == "Disrupt":
        return str(d.get("method") or d["reason"].split(":")[0]).lower()
    if d["action"] == "DeleteNodeClaim":
        return str(d["reason"]).lower()
    return None


def markers(report: Report) -> list[tuple[Marker, str]]:
    """Every marker the charts draw, with its legend entry: launches (from the
    NodeClaims, replacements included), disruptions by reason, spot interruptions,
    scenario changes and faults, and Karpenter's failures."""
    colors = _disruption_colors(report)
    out: list[tuple[Marker, str]] = []
    why: dict[str, str] = {}
    for d in report.decisions:
        if d["action"] == "Launch" and d.get("nodeClaim"):
            why[str(d["nodeClaim"])] = str(d["reason"]).split(":")[0]
        for name in d.get("replacements") or ():
            why[str(name)] = f"replaces {d.get('nodeClaim')} ({d.get('method')})"
    for nc in report.nodeclaims:
        if nc.launched is None:
            continue
        price = "unknown price" if nc.price is None else f"${nc.price:.4f}/h"
        text = (
            f"+{format_offset(nc.launched)} launched {nc.name}: {nc.instance_type} "
            f"({nc.capacity_type}, {nc.zone}) at {price}"
            + (f"; {why[nc.name]}" if nc.name in why else "")
        )
        out.append((Marker(nc.launched, "launch", LAUNCH_COLOR, text), "Launch"))
    for d in report.decisions:
        t = float(d["offsetSeconds"])
        text = f"{offset_of(report, d['time'])} {d['action']} {decision_subject(d)}: {d['reason']}"
        action = d["action"]
        reason = _disruption_reason(d)
        if reason is not None:
            m = Marker(t, "disruption", colors[reason], text)
            out.append((m, f"Disruption: {reason}"))
        elif action == "SpotInterruption":
            out.append((Marker(t, "interruption", INTERRUPTION_COLOR, text), "Spot interruption"))
        elif d.get("source") == "scenario" and action in SCENARIO_FAULTS:
            legend = "Fault (node failure, outage, restart)"
            out.append((Marker(t, "fault", FAULT_COLOR, text), legend))
        elif action in KARPENTER_FAILURES:
            legend = "Failure (launch, scheduling)"
            out.append((Marker(t, "fault", FAILURE_COLOR, text), legend))
        elif d.get("source") == "scenario":
            legend = "Scenario change (workload, object)"
            out.append((Marker(t, "change", CHANGE_COLOR, text), legend))
    return out


def _capacity_series(
    report: Report, pick: str, colors: dict[str, str]
) -> tuple[list[Series], list[str]]:
    """One series per capacity type seen in the samples (``pick``: nodes or cost)."""
    rows: list[dict[str, float]] = []
    for s in report.samples:
        pairs = s.nodes_by_capacity_type if pick == "nodes" else s.cost_by_capacity_type
        rows.append({capacity_type_name(k): float(v) for k, v in pairs})
    order = ["on-demand", "spot", "reserved"]
    seen = {k for r in rows for k in r}
    names = [k for k in order if k in seen] + sorted(seen - set(order))
    for name in names:
        if name not in colors:
            colors[name] = (
                CAPACITY_COLORS.get(name)
                or _OTHER_CAPACITY_COLORS[len(colors) % len(_OTHER_CAPACITY_COLORS)]
            )
    return [Series(n, colors[n], tuple(r.get(n, 0.0) for r in rows)) for n in names], names


def _charts(report: Report, marks: Sequence[Marker]) -> list[str]:
    samples = report.samples
    times = [s.t for s in samples]
    end = max(report.duration_seconds, times[-1] if times else 0.0)
    rows = sorted({m.row for m in marks}, key=MARKER_ROWS.index)
    colors: dict[str, str] = {}
    nodes, _ = _capacity_series(report, "nodes", colors)
    if not nodes:
        nodes = [Series("nodes", "#1f77b4", tuple(float(s.nodes) for s in samples))]
    cost, _ = _capacity_series(report, "cost", colors)
    if not cost:
        cost = [Series("cost", "#2ca02c", tuple(s.cost_per_hour for s in samples))]
    pending = [Series("pending pods", "#d62728", tuple(float(s.pending_pods) for s in samples))]
    common: dict[str, Any] = {"end": end, "markers": marks, "rows": rows}
    return [
        step_chart(
            "Nodes", "count", times, nodes, stacked=True, integer=True, legend=True, **common
        ),
        step_chart("Pending pods", "count", times, pending, integer=True, **common),
        step_chart("Cost", "$/h", times, cost, stacked=True, legend=True, **common),
    ]


def _legend(entries: Sequence[tuple[Marker, str]]) -> str:
    seen: dict[str, Marker] = {}
    for m, label in entries:
        seen.setdefault(label, m)
    ordered = sorted(seen.items(), key=lambda kv: (MARKER_ROWS.index(kv[1].row), kv[0]))
    return (
        '<div class="legend">Marks under each time axis (hover over one for what it was): '
        + "".join(
            f'<span class="key"><svg width="14" height="14" viewBox="0 0 14 14" '
            f'aria-hidden="true">{marker_glyph(m.row, m.color, 7, 7)}</svg>'
            f"{html.escape(label)}</span>"
            for label, m in ordered
        )
        + "</div>"
    )


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1000px;padding:0 1rem;color:#222}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}
table{border-collapse:collapse;width:100%;font-size:.85rem}
th,td{border-bottom:1px solid #ddd;padding:.25rem .4rem;text-align:left;vertical-align:top;overflow-wrap:break-word}
td:first-child{white-space:nowrap}
th{background:#f4f4f4}.num{text-align:right}
figure{margin:0 0 1rem 0}svg.chart{display:block;width:100%;height:auto;font-size:11px}
svg .grid{stroke:#e5e5e5}svg .axis{stroke:#999}svg .title{font-weight:600;font-size:13px}
.summary li{margin:.2rem 0}
.legend{font-size:.85rem;margin:.5rem 0 1rem}.legend .key{display:inline-block;white-space:nowrap;margin-right:1rem}
.legend svg{vertical-align:middle;margin-right:.25rem}
.cards{display:flex;flex-wrap:wrap;gap:.75rem}.card{border:1px solid #ddd;border-radius:6px;padding:.5rem .8rem;min-width:9rem}
.card b{display:block;font-size:1.2rem}.note{color:#8a5a00}.failed td{color:#b00020}
.wide{overflow-x:auto}.scenario td{color:#555}details{margin-top:1rem}summary{cursor:pointer}
"""


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], classes: Sequence[str]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        (f'<tr class="{cls}">' if cls else "<tr>")
        + "".join(f"<td>{html.escape(v)}</td>" for v in row)
        + "</tr>"
        for row, cls in zip(rows, classes, strict=True)
    )
    # a table wider than the window scrolls in its own box, not the page
    return f'<div class="wide"><table><tr>{head}</tr>{body}</table></div>'


def _decisions_table(report: Report) -> str:
    return _table(
        ["When", "By", "Action", "Object", "Reason"],
        [
            (
                offset_of(report, d["time"]),
                "scenario" if d.get("source") == "scenario" else "Karpenter",
                str(d["action"]),
                decision_subject(d),
                str(d["reason"]) + pods_note(d),
            )
            for d in report.decisions
        ],
        ["scenario" if d.get("source") == "scenario" else "" for d in report.decisions],
    )


def _head(title: str) -> str:
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>"
    )


def render_html(report: Report) -> str:
    """One self-contained HTML page: what happened, the totals, charts over time with
    the run's events marked, the NodeClaims and every decision."""
    j = report.to_json_dict()
    esc = html.escape
    ps = j["pods"]["pendingSeconds"]
    cards = [
        ("Nodes launched", str(j["nodesLaunched"])),
        ("Nodes removed", str(j["nodesRemoved"])),
        ("Pods bound", str(j["pods"]["bound"])),
        ("Pods pending", str(j["pods"]["pending"])),
        ("Pending p50 / p95 / max", f"{ps['p50']:.0f}s / {ps['p95']:.0f}s / {ps['max']:.0f}s"),
        ("Total cost", f"${j['cost']['total']:.4f}"),
        ("Cost at end", f"${j['cost']['perHourAtEnd']:.4f}/h"),
        (
            "Reserved CPU / memory",
            f"{j['utilization']['cpu'] * 100:.0f}% / {j['utilization']['memory'] * 100:.0f}%",
        ),
    ]
    if report.compute_charged is not None:
        cards.append(
            (
                f"Compute charged (x{report.compute_charged.scale:g})",
                f"{report.compute_charged.total_seconds:.1f}s",
            )
        )
    entries = markers(report)
    marks = [m for m, _ in entries]
    nodes = _table(
        [
            "NodeClaim",
            "NodePool",
            "Instance type",
            "Zone",
            "Capacity",
            "$/h",
            "Launched",
            "Removed",
            "Reason",
        ],
        [
            (
                nc.name,
                nc.nodepool,
                nc.instance_type or "-",
                nc.zone or "-",
                nc.capacity_type or "-",
                "-" if nc.price is None else f"{nc.price:.4f}",
                "-" if nc.launched is None else "+" + format_offset(nc.launched),
                "-" if nc.deleting is None else "+" + format_offset(nc.deleting),
                nc.reason or "",
            )
            for nc in report.nodeclaims
        ],
        [""] * len(report.nodeclaims),
    )
    decisions = _decisions_table(report)
    shown = report.events[:MAX_HTML_EVENTS]
    events = _table(
        ["When", "Type", "Reason", "Object", "Message"],
        [
            (
                offset_of(report, e["time"]),
                str(e.get("type") or ""),
                str(e["reason"]),
                str(e.get("object") or ""),
                str(e["message"]) + (f" [{e['pods']} pods]" if e.get("pods") else ""),
            )
            for e in shown
        ],
        [""] * len(shown),
    )
    more = len(report.events) - len(shown)
    failures = _table(
        ["Controller", "Failed", "Reconciles", "Last error"],
        [
            (f.controller, str(f.failures), str(f.reconciles), f.last_error)
            for f in report.controller_failures
        ],
        ["failed" if f.repeated else "" for f in report.controller_failures],
    )
    notes = "".join(f'<li class="note">{esc(n)}</li>' for n in report.notes)
    summary = "".join(f"<li>{esc(line)}</li>" for line in what_happened(report))
    return (
        _head(f"karpenter simulate: {report.scenario}")
        + f"<p>Seed {report.seed}; {esc(format_offset(report.duration_seconds))} of virtual time "
        f"({esc(report.start)} to {esc(report.end)}), {report.wall_seconds:.1f}s of wall time.</p>"
        f'<h2>What happened</h2><ul class="summary">{summary}</ul>'
        '<div class="cards">'
        + "".join(f'<div class="card">{esc(k)}<b>{esc(v)}</b></div>' for k, v in cards)
        + "</div>"
        + (f"<h2>Controller failures</h2>{failures}" if report.controller_failures else "")
        + "<h2>Over time</h2>"
        + (_legend(entries) if entries else "")
        + "".join(f"<figure>{c}</figure>" for c in _charts(report, marks))
        + f"<h2>Nodes</h2>{nodes}"
        + f"<h2>Decisions ({len(report.decisions)})</h2>{decisions}"
        + (
            f"<details><summary>Events from Karpenter's controllers ({len(report.events)})"
            f"</summary>{events}"
            + (f"<p>... {more} more in <code>-o json</code>.</p>" if more else "")
            + "</details>"
            if report.events
            else ""
        )
        + (f"<h2>Notes</h2><ul>{notes}</ul>" if notes else "")
        + "</body></html>\n"
    )


BASELINE_COLOR = "#7f7f7f"
WHAT_IF_COLOR = "#d62728"


def _at_times(
    report: Report, times: Sequence[float], value: Callable[[Sample], float]
) -> tuple[float, ...]:
    """``value`` of the report's last sample at or before each of ``times`` (0 before
    the first): two runs' samples on one time axis."""
    out: list[float] = []
    samples = report.samples
    i = -1
    for t in times:
        while i + 1 < len(samples) and samples[i + 1].t <= t:
            i += 1
        out.append(value(samples[i]) if i >= 0 else 0.0)
    return tuple(out)


def comparison_charts(cmp: Comparison) -> list[str]:
    """Nodes, pending pods and cost over time, the baseline and the what-if run as two
    series of each chart (the baseline dashed)."""
    runs = (cmp.baseline, cmp.what_if)
    times = sorted({s.t for r in runs for s in r.samples}) or [0.0]
    end = max([times[-1], *(r.duration_seconds for r in runs)])
    charts = []
    picks: tuple[tuple[str, str, Callable[[Sample], float], bool], ...] = (
        ("Nodes", "count", lambda s: float(s.nodes), True),
        ("Pending pods", "count", lambda s: float(s.pending_pods), True),
        ("Cost", "$/h", lambda s: s.cost_per_hour, False),
    )
    for title, unit, pick, integer in picks:
        series = [
            Series("baseline", BASELINE_COLOR, _at_times(cmp.baseline, times, pick), dashed=True),
            Series("what-if", WHAT_IF_COLOR, _at_times(cmp.what_if, times, pick)),
        ]
        charts.append(step_chart(title, unit, times, series, end=end, integer=integer, legend=True))
    return charts


def render_comparison_html(cmp: Comparison) -> str:
    """A what-if comparison as one self-contained page: the changes, each figure for
    both runs and the difference, both runs on each chart, then each run's decisions."""
    from karpenter_core.sim.whatif import FIGURES, figures, show_figure

    esc = html.escape
    a, b, d = figures(cmp.baseline), figures(cmp.what_if), cmp.difference()
    table = _table(
        ["", "Baseline", "What-if", "Difference"],
        [
            (
                label,
                show_figure(a[k], unit),
                show_figure(b[k], unit),
                show_figure(d[k], unit, signed=True),
            )
            for k, label, unit in FIGURES
        ],
        [""] * len(FIGURES),
    )
    changes = "".join(f"<li><code>{esc(c)}</code></li>" for c in cmp.changes)
    start = f" from <code>{esc(cmp.source)}</code>" if cmp.source else ""
    runs = "".join(
        f"<details><summary>Decisions of the {title} run ({len(r.decisions)})</summary>"
        f"{_decisions_table(r)}"
        + (
            "<ul>" + "".join(f'<li class="note">{esc(n)}</li>' for n in r.notes) + "</ul>"
            if r.notes
            else ""
        )
        + "</details>"
        for title, r in (("what-if", cmp.what_if), ("baseline", cmp.baseline))
    )
    return (
        _head(f"karpenter simulate: what-if ({cmp.baseline.scenario})")
        + f"<p>Two runs{start}, seed {cmp.baseline.seed}, "
        f"{esc(format_offset(cmp.baseline.duration_seconds))} of virtual time each "
        f"({esc(cmp.baseline.start)} to {esc(cmp.baseline.end)}): the baseline as it is, "
        "and the what-if with these changes made at the start:</p>"
        f"<ul>{changes}</ul><h2>Difference</h2>{table}<h2>Over time</h2>"
        + "".join(f"<figure>{c}</figure>" for c in comparison_charts(cmp))
        + f"<h2>Each run</h2>{runs}</body></html>\n"
    )
