"""What-if runs: the same starting state twice, once as it is and once changed.

A what-if is a change an operator considers making — a NodePool patch, a consolidation
policy, a disruption budget, a NodeOverlay price, a Deployment's size. ``karpenter
simulate --what-if`` runs the simulation twice from the same objects and seed: the
*baseline* (nothing changed) and the *what-if* (the changes made at the start, before
Karpenter starts), and reports both and the difference (:class:`Comparison`).

Each change is written ``TARGET=VALUE`` on the command line (and the same strings, or
object-event mappings, in a scenario's ``whatIf`` list)::

    nodepool/NAME=<JSON merge patch>              {"spec":{"limits":{"cpu":"100"}}}
    consolidation/NAME=WhenEmpty|WhenEmptyOrUnderutilized
    budget/NAME=<nodes>|<JSON list of budgets>    10%   or  [{"nodes":"0","reasons":["Drifted"]}]
    deployment/[NAMESPACE/]NAME=<replicas>
    nodeoverlay/NAME=<price adjustment>|<JSON spec>    -20% (every offering)  or  {"requirements":...}
    nodeoverlay=<file>                            a NodeOverlay manifest (YAML or JSON)

Each becomes a ``PatchObject`` or ``ApplyObject`` event
(:class:`~karpenter_core.sim.scenario.ScenarioEvent`), made as the scenario's own object
events are, so it is checked the same way and shows as a decision in the what-if run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from karpenter_core.apis.limits import shown_repr
from karpenter_core.sim.report import Report, format_offset, percentile
from karpenter_core.sim.scenario import (
    APPLY_OBJECT,
    PATCH_OBJECT,
    ScenarioError,
    ScenarioEvent,
    _object_event,
)

__all__ = [
    "Comparison",
    "WhatIf",
    "compare",
    "figures",
    "parse_what_if",
    "render_comparison_text",
    "what_if_entry",
]

_EVERY_INSTANCE_TYPE = {"key": "node.kubernetes.io/instance-type", "operator": "Exists"}
"""The requirement of an inline price adjustment: it applies to every offering."""
CONSOLIDATION_POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized")
NODEOVERLAY_GATE = "NodeOverlay"
SYNTAX = (
    "nodepool/NAME=<JSON merge patch>, consolidation/NAME=<policy>, budget/NAME=<nodes or "
    "JSON list>, deployment/[NAMESPACE/]NAME=<replicas>, nodeoverlay/NAME=<price adjustment "
    "or JSON spec>, nodeoverlay=<file>"
)


@frozen
class WhatIf:
    """One change: as written (``text``) and as the object event that makes it."""

    text: str
    event: ScenarioEvent

    @property
    def gate(self) -> str | None:
        """The feature gate the change needs to have any effect."""
        return NODEOVERLAY_GATE if self.event.kind == "NodeOverlay" else None


def _bad(where: str, text: str, why: str) -> ScenarioError:
    return ScenarioError(f"{where}: {shown_repr(text)}: {why} (expected {SYNTAX})")


def _json(value: str, where: str, text: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError as e:
        raise _bad(where, text, f"not JSON: {e.msg} at column {e.colno}") from None


def _patch(
    kind: str, name: str, patch: Any, where: str, namespace: str | None = None
) -> ScenarioEvent:
    entry: dict[str, Any] = {"kind": kind, "name": name, "patch": patch}
    if namespace is not None:
        entry["namespace"] = namespace
    return _object_event(entry, PATCH_OBJECT, 0.0, where)


def _overlay(name: str, spec: Any, where: str) -> ScenarioEvent:
    manifest = {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": name},
        "spec": spec,
    }
    return _object_event({"manifest": manifest}, APPLY_OBJECT, 0.0, where)


def _overlay_file(path: Path, where: str) -> ScenarioEvent:
    from karpenter_core.apis.manifests import ManifestError, parse_yaml, read_text

    try:
        docs = parse_yaml(read_text(str(path)), str(path))
    except ManifestError as e:
        raise ScenarioError(f"{where}: {e}") from None
    if len(docs) != 1 or not isinstance(docs[0], Mapping) or docs[0].get("kind") != "NodeOverlay":
        raise ScenarioError(f"{where}: {path}: expected one NodeOverlay manifest")
    return _object_event({"manifest": docs[0]}, APPLY_OBJECT, 0.0, where)


def parse_what_if(text: str, where: str = "--what-if", base: Path | None = None) -> WhatIf:
    """One ``TARGET=VALUE`` change (see the module docstring); a file it names is read
    relative to ``base``. Raises :class:`ScenarioError` with one line saying what is
    wrong and the syntax."""
    target, sep, value = text.partition("=")
    if not sep or not target or not value:
        raise _bad(where, text, "not TARGET=VALUE")
    what, _, rest = target.partition("/")
    names = rest.split("/") if rest else []
    if what == "nodeoverlay" and not names:
        path = Path(value)
        if base is not None and not path.is_absolute():
            path = base / path
        return WhatIf(text, _overlay_file(path, where))
    if not names or any(not n for n in names) or (len(names) > 1 and what != "deployment"):
        raise _bad(where, text, f"{what}/NAME expected")
    if what == "nodepool":
        patch = _json(value, where, text)
        return WhatIf(text, _patch("NodePool", names[0], patch, where))
    if what == "consolidation":
        if value not in CONSOLIDATION_POLICIES:
            raise _bad(
                where, text, f"a consolidation policy is one of {', '.join(CONSOLIDATION_POLICIES)}"
            )
        patch = {"spec": {"disruption": {"consolidationPolicy": value}}}
        return WhatIf(text, _patch("NodePool", names[0], patch, where))
    if what == "budget":
        budgets = (
            _json(value, where, text) if value.lstrip().startswith("[") else [{"nodes": value}]
        )
        patch = {"spec": {"disruption": {"budgets": budgets}}}
        return WhatIf(text, _patch("NodePool", names[0], patch, where))
    if what == "deployment":
        if len(names) > 2:
            raise _bad(where, text, "deployment/[NAMESPACE/]NAME expected")
        namespace, name = (names[0], names[1]) if len(names) == 2 else ("default", names[0])
        if not value.isdigit():
            raise _bad(where, text, "replicas must be a whole number")
        patch = {"spec": {"replicas": int(value)}}
        return WhatIf(text, _patch("Deployment", name, patch, where, namespace))
    if what == "nodeoverlay":
        spec = (
            _json(value, where, text)
            if value.lstrip().startswith("{")
            else {"requirements": [_EVERY_INSTANCE_TYPE], "priceAdjustment": value}
        )
        return WhatIf(text, _overlay(names[0], spec, where))
    raise _bad(where, text, f"unknown target {shown_repr(what)}")


def what_if_entry(entry: Any, where: str, base: Path | None = None) -> WhatIf:
    """One entry of a scenario's ``whatIf`` list: a ``TARGET=VALUE`` string, or an
    object change as the ``PatchObject`` (``kind``, ``name``, ``patch``...) and
    ``ApplyObject`` (``manifest``) events take it."""
    if isinstance(entry, str):
        return parse_what_if(entry, where, base)
    if not isinstance(entry, Mapping):
        raise ScenarioError(f"{where}: expected a TARGET=VALUE string or a mapping")
    etype = APPLY_OBJECT if "manifest" in entry else PATCH_OBJECT
    event = _object_event({**entry, "at": 0, "type": etype}, etype, 0.0, where)
    return WhatIf(f"{event.type} {event.describe()}", event)


# ---------------------------------------------------------------------------- comparing


FIGURES: tuple[tuple[str, str, str], ...] = (
    ("nodesAtStart", "nodes at start", "count"),
    ("nodesAtEnd", "nodes at end", "count"),
    ("nodesPeak", "nodes at peak", "count"),
    ("costPerHourAtEnd", "cost per hour at end", "dollars"),
    ("costTotal", "cost over the run", "dollars"),
    ("disruptedPods", "disrupted pods", "count"),
    ("pendingPodsAtEnd", "pending pods at end", "count"),
    ("pendingSecondsP50", "pending time p50", "seconds"),
    ("pendingSecondsMax", "pending time max", "seconds"),
    ("decisions", "Karpenter's decisions", "count"),
)
"""(JSON key, text label, unit) of each figure a comparison reports."""


def figures(report: Report) -> dict[str, float]:
    """The figures a what-if comparison puts side by side, from one run's report."""
    nodes = [s.nodes for s in report.samples] or [0]
    pending = report.pending_seconds
    return {
        "nodesAtStart": nodes[0],
        "nodesAtEnd": nodes[-1],
        "nodesPeak": max(nodes),
        "costPerHourAtEnd": round(report.cost_per_hour_at_end, 6),
        "costTotal": round(report.cost_total, 6),
        "disruptedPods": report.pods_disrupted,
        "pendingPodsAtEnd": report.pods_pending,
        "pendingSecondsP50": round(percentile(pending, 0.5), 3),
        "pendingSecondsMax": round(max(pending), 3) if pending else 0.0,
        "decisions": sum(1 for d in report.decisions if d.get("source") != "scenario"),
    }


@frozen
class Comparison:
    """A baseline run, the what-if run, and what changed between them."""

    changes: tuple[str, ...]
    baseline: Report
    what_if: Report
    source: str = ""
    """Where both runs started (the snapshot), for the heading."""

    def difference(self) -> dict[str, float]:
        """What-if minus baseline, figure by figure."""
        a, b = figures(self.baseline), figures(self.what_if)
        return {k: round(b[k] - a[k], 6) for k in a}

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "changes": list(self.changes),
            "from": self.source or None,
            "figures": {"baseline": figures(self.baseline), "whatIf": figures(self.what_if)},
            "difference": self.difference(),
            "baseline": self.baseline.to_json_dict(),
            "whatIf": self.what_if.to_json_dict(),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_json_dict(), indent=2)


def compare(
    changes: Sequence[WhatIf], baseline: Report, what_if: Report, source: str = ""
) -> Comparison:
    return Comparison(tuple(c.text for c in changes), baseline, what_if, source)


def show_figure(value: float, unit: str, *, signed: bool = False) -> str:
    """A figure as the comparison prints it (``$0.2172``, ``1m05s``, ``3``), with its
    sign when ``signed`` (a difference)."""
    sign = (
        ("+" if value > 0 else "-" if value < 0 else "") if signed else ("-" if value < 0 else "")
    )
    v = abs(value)
    if unit == "dollars":
        return f"{sign}${v:.4f}"
    if unit == "seconds":
        return f"{sign}{format_offset(v)}"
    return f"{sign}{v:g}"


def render_comparison_text(cmp: Comparison) -> str:
    """The comparison as a table: each figure for the baseline, the what-if and the
    difference, then the notes of either run."""
    a, b, d = figures(cmp.baseline), figures(cmp.what_if), cmp.difference()
    start = f" from {cmp.source}" if cmp.source else ""
    lines = [
        f"What-if{start} (seed {cmp.baseline.seed}, "
        f"{format_offset(cmp.baseline.duration_seconds)} of virtual time each):",
        *(f"  {c}" for c in cmp.changes),
        "",
        f"{'':24} {'baseline':>12} {'what-if':>12} {'difference':>12}",
    ]
    for key, label, unit in FIGURES:
        lines.append(
            f"{label:24} {show_figure(a[key], unit):>12} {show_figure(b[key], unit):>12} "
            f"{show_figure(d[key], unit, signed=True):>12}"
        )
    for title, report in (("baseline", cmp.baseline), ("what-if", cmp.what_if)):
        if report.notes:
            lines += ["", f"Notes ({title}):", *(f"  - {n}" for n in report.notes)]
    lines += ["", "Each run's decisions, nodes and timeline: -o json (baseline, whatIf)."]
    return "\n".join(lines) + "\n"
