"""``karpenter simulate --from SNAPSHOT`` and ``--what-if`` on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from crafted_snapshot import write_crafted

from karpenter_core.cli import main
from karpenter_core.cli.exits import EXIT_BAD_INPUT, EXIT_USAGE


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    return write_crafted(tmp_path / "cluster.json.gz")


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["simulate", *args])
    return result.exit_code, result.stdout, result.stderr


def test_from_alone_runs_half_an_hour_of_nothing_changing(snapshot: Path) -> None:
    code, out, err = _invoke("--from", str(snapshot), "-o", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["virtualSeconds"] == 1800.0
    assert report["start"] == "2025-06-01T12:00:00Z"
    assert report["nodesAtStart"] == 3 and report["removalReasons"] == {"underutilized": 1}


def test_what_if_prints_both_runs_and_the_difference(snapshot: Path) -> None:
    code, out, err = _invoke(
        "--from", str(snapshot), "--what-if", "consolidation/default=WhenEmpty", "-o", "json"
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["changes"] == ["consolidation/default=WhenEmpty"]
    assert data["figures"]["baseline"]["nodesAtEnd"] == 2
    assert data["figures"]["whatIf"]["nodesAtEnd"] == 3
    assert data["difference"]["nodesAtEnd"] == 1 and data["difference"]["disruptedPods"] == -1
    assert data["baseline"]["nodesRemoved"] == 1 and data["whatIf"]["nodesRemoved"] == 0
    assert data["whatIf"]["decisions"][0]["action"] == "PatchObject"


def test_what_if_text_table(snapshot: Path) -> None:
    code, out, err = _invoke(
        "--from", str(snapshot), "--what-if", "consolidation/default=WhenEmpty", "--until", "10m"
    )
    assert code == 0, err
    rows = {line[:24].strip(): line[24:].split() for line in out.splitlines() if len(line) > 24}
    assert rows["nodes at end"] == ["2", "3", "+1"]
    assert rows["disrupted pods"] == ["1", "0", "-1"]
    assert "consolidation/default=WhenEmpty" in out


def test_a_scenario_may_start_from_a_snapshot_and_list_its_what_ifs(
    tmp_path: Path, snapshot: Path
) -> None:
    (tmp_path / "s.yaml").write_text(
        "name: from-file\n"
        f"from: {snapshot.name}\n"  # relative to the scenario's directory
        "until: 10m\n"
        "whatIf:\n"
        "  - budget/default=0\n"
        "  - {kind: Deployment, namespace: default, name: web, patch: {spec: {replicas: 6}}}\n",
        encoding="utf-8",
    )
    code, out, err = _invoke(str(tmp_path / "s.yaml"), "-o", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["changes"] == ["budget/default=0", "PatchObject Deployment default/web"]
    # no disruption is allowed, so the underutilised node stays; the sixth pod is bound
    assert data["figures"]["whatIf"]["disruptedPods"] == 0
    assert data["whatIf"]["pods"]["bound"] == 6


def test_what_if_html_draws_both_runs_on_each_chart(snapshot: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    code, _, err = _invoke(
        "--from",
        str(snapshot),
        "--what-if",
        "consolidation/default=WhenEmpty",
        "--until",
        "10m",
        "-o",
        "html",
        "--out",
        str(out),
    )
    assert code == 0, err
    page = out.read_text()
    assert page.count('<svg class="chart"') == 3
    assert page.count('data-series="baseline"') == 3 and page.count('data-series="what-if"') == 3
    assert page.count('stroke-dasharray="6 4"') == 3  # the baseline is dashed


@pytest.mark.parametrize(
    ("what_if", "says"),
    [
        ("consolidation/default", "not TARGET=VALUE"),
        ("consolidation/default=Sometimes", "a consolidation policy is one of"),
        ("nodepool/default={spec:", "not JSON"),
        ("deployment/default/web=many", "replicas must be a whole number"),
        ("machine/x=1", "unknown target 'machine'"),
    ],
)
def test_bad_what_if_is_one_line_and_exit_1(snapshot: Path, what_if: str, says: str) -> None:
    code, out, err = _invoke("--from", str(snapshot), "--what-if", what_if)
    assert code == EXIT_BAD_INPUT
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: --what-if: ") and says in lines[0]


def test_a_what_if_on_a_missing_object_fails_before_running(snapshot: Path) -> None:
    code, _, err = _invoke("--from", str(snapshot), "--what-if", "consolidation/nope=WhenEmpty")
    assert code == EXIT_BAD_INPUT
    assert err.strip() == (
        "Error: --what-if consolidation/nope=WhenEmpty: not applied: no NodePool named 'nope'"
    )


def test_neither_scenario_nor_snapshot_is_a_usage_error() -> None:
    code, _, err = _invoke("-o", "json")
    assert code == EXIT_USAGE and "--from SNAPSHOT" in err


def test_an_unreadable_snapshot_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "Nope"}', encoding="utf-8")
    code, _, err = _invoke("--from", str(bad))
    assert code == EXIT_BAD_INPUT
    assert len(err.strip().splitlines()) == 1 and str(bad) in err


def test_cloud_provider_and_region_simulate_an_aws_snapshot_offline(tmp_path: Path) -> None:
    from crafted_snapshot import as_aws, crafted_objects

    path = write_crafted(tmp_path / "aws.json", as_aws(crafted_objects()))
    args = ["--from", str(path), "--until", "2m", "-o", "json"]
    code, out, err = _invoke(*args, "--cloud-provider", "aws", "--region", "us-west-2")
    assert code == 0, err
    report = json.loads(out)
    assert report["nodesAtStart"] == 3 and not report["notes"], report["notes"]
    assert {n["zone"] for n in report["nodes"]} <= {"us-west-2a", "us-west-2b", "us-west-2c"}
    assert all(n["pricePerHour"] for n in report["nodes"])
    # on KWOK's own catalogue the same snapshot's types are unknown
    code, out, err = _invoke(*args)
    assert code == 0, err
    assert any("m5.xlarge" in n for n in json.loads(out)["notes"])
    code, _, err = _invoke(*args, "--region", "us-west-2")  # kwok has no regions
    assert code == EXIT_BAD_INPUT and "has no regions" in err
