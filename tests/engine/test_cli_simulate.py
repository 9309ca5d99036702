"""``karpenter simulate`` on the command line: formats, files, and one-line errors."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from karpenter_core.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_json_report_has_the_public_shape() -> None:
    result = CliRunner().invoke(
        main, ["simulate", str(EXAMPLES / "quickstart.yaml"), "-o", "json", "--until", "12m"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["virtualSeconds"] == 720.0
    assert isinstance(data["nodesLaunched"], int) and data["nodesLaunched"] > 0
    assert isinstance(data["nodesRemoved"], int)
    assert data["pods"]["bound"] > 0
    assert set(data["pods"]["pendingSeconds"]) == {"p50", "p95", "max"}
    assert data["cost"]["total"] > 0 and data["cost"]["perHourAtEnd"] > 0
    assert {"time", "action", "reason"} <= set(data["decisions"][0])


def test_html_report_is_written_to_the_out_file(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = CliRunner().invoke(
        main,
        [
            "simulate",
            str(EXAMPLES / "quickstart.yaml"),
            "-o",
            "html",
            "--out",
            str(out),
            "--until",
            "5m",
        ],
    )
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count('<svg class="chart"') == 3


def test_seed_option_changes_nothing_but_what_is_random() -> None:
    args = [
        "simulate",
        str(EXAMPLES / "quickstart.yaml"),
        "-o",
        "json",
        "--until",
        "3m",
        "--seed",
        "5",
    ]
    first = json.loads(CliRunner().invoke(main, args).output)
    second = json.loads(CliRunner().invoke(main, args).output)
    assert first["seed"] == 5
    first.pop("wallSeconds"), second.pop("wallSeconds")
    assert first == second


def test_bad_scenario_is_one_line_exit_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nworkloads:\n  - deployment: web\n    replicas: lots\n")
    result = CliRunner().invoke(main, ["simulate", str(bad)])
    assert result.exit_code == 1
    assert result.output.strip().count("\n") == 0
    assert "workloads[0].replicas" in result.output
    assert "Traceback" not in result.output


def test_bad_until_and_unknown_option_are_errors(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["simulate", str(EXAMPLES / "quickstart.yaml"), "--until", "soon"]
    )
    assert result.exit_code == 1 and "--until" in result.output
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: x\noptions: {NOT_AN_OPTION: '1'}\n")
    result = CliRunner().invoke(main, ["simulate", str(scenario)])
    assert result.exit_code == 1 and "options.NOT_AN_OPTION: unknown option" in result.output


def test_quickstart_tells_its_story() -> None:
    result = CliRunner().invoke(main, ["simulate", str(EXAMPLES / "quickstart.yaml"), "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["virtualSeconds"] == 1800.0
    # the reclaimed spot node, and after the scale-in the node consolidation empties
    assert data["removalReasons"] == {"spot interruption": 1, "underutilized": 1}
    assert data["pods"]["succeeded"] == 8  # the nightly report Job completed
    assert data["pods"]["bound"] == 15 and data["pods"]["pending"] == 0
    assert data["pods"]["pendingSeconds"]["p50"] >= 45.0  # the 45 s instance boot
    # one line per decision: each launch with its pods and offering, the consolidation;
    # the scenario's steps say what caused them
    story = [(d["source"], d["action"], d.get("nodeClaim")) for d in data["decisions"]]
    launched = [n["name"] for n in data["nodes"]]
    consolidated = next(n["name"] for n in data["nodes"] if n["removalReason"] == "underutilized")
    reclaimed = next(n["name"] for n in data["nodes"] if n["removalReason"] == "spot interruption")
    assert story == [
        ("scenario", "CreateWorkload", None),
        ("karpenter", "Launch", launched[0]),
        ("scenario", "CreateWorkload", None),
        ("karpenter", "Launch", launched[1]),
        ("scenario", "ScaleWorkload", None),
        ("karpenter", "Launch", launched[2]),
        ("scenario", "SpotInterruption", reclaimed),
        ("scenario", "ScaleWorkload", None),
        ("karpenter", "Disrupt", consolidated),
    ]
    for d in data["decisions"]:
        if d["action"] == "Launch":
            assert d["reason"].startswith(f"{d['pods']} pending pod")
            assert f"({d['capacityType']}, {d['zone']})" in d["reason"]
    (disrupt,) = [d for d in data["decisions"] if d["action"] == "Disrupt"]
    assert disrupt["reason"].startswith("Underutilized: delete")


def test_controller_chatter_is_under_events_not_decisions() -> None:
    result = CliRunner().invoke(main, ["simulate", str(EXAMPLES / "quickstart.yaml"), "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    chatter = {"Nominated", "DisruptionBlocked", "Unconsolidatable", "Evicted", "FailedDraining"}
    assert not chatter & {d["action"] for d in data["decisions"]}
    assert chatter <= {e["reason"] for e in data["events"]}
    for e in data["events"]:
        assert set(e) >= {"time", "offsetSeconds", "type", "reason", "message", "object"}
    nominated = [e for e in data["events"] if e["reason"] == "Nominated"]
    # pod events are folded per instant and message, with the number of pods
    assert sum(e["pods"] for e in nominated) >= 10 and len(nominated) < 10


SHIPPED = [EXAMPLES / "quickstart.yaml", *sorted((EXAMPLES / "scenarios").glob("*.yaml"))]


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_every_shipped_scenario_runs_and_explains_itself(path: Path) -> None:
    result = CliRunner().invoke(main, ["simulate", str(path), "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["nodesLaunched"] > 0 and data["pods"]["pending"] == 0
    removed = [n for n in data["nodes"] if n["removed"] is not None]
    assert all(n["removalReason"] for n in removed), removed
    assert sum(data["removalReasons"].values()) == data["nodesRemoved"]
    assert all(d["action"] and d["reason"] for d in data["decisions"])


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_progress_off_a_terminal_and_a_bar_on_one_unless_quiet(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from karpenter_core.cli import progress

    def run(*extra: str) -> str:
        result = CliRunner().invoke(
            main, ["simulate", str(EXAMPLES / "quickstart.yaml"), "--until", "5m", *extra]
        )
        assert result.exit_code == 0, result.output
        return result.stderr

    assert run() == ""
    terminal = _Terminal()
    monkeypatch.setattr(progress, "stderr", lambda: terminal)
    assert run() == ""
    shown = terminal.getvalue()
    assert "simulating" in shown
    assert "+5m00s of 5m00s" in shown
    assert "pod(s) pending" in shown and "node(s)" in shown
    quiet = _Terminal()
    monkeypatch.setattr(progress, "stderr", lambda: quiet)
    run("-q")
    assert quiet.getvalue() == ""
