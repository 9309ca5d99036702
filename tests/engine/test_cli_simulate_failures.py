"""``karpenter simulate`` with a controller that fails on every reconcile: the run finishes,
the report says which controller failed and how, and the exit code is 3 (docs/cli.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from karpenter_core.cli import main

SCENARIO_HEAD = """\
apiVersion: simulate.karpenter.sh/v1alpha1
kind: Scenario
until: 1m
nodePools:
  - apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata: {name: np}
    spec:
      template:
        spec:
          nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
          requirements: []
"""


def _write(tmp_path: Path, name: str, content: str | bytes | None) -> Path:
    path = tmp_path / name
    if content is None:
        path.mkdir()
        (path / "notes.txt").write_text("not a manifest\n")
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Exit code and everything printed; a crash (an exception other than exit) fails."""
    result = CliRunner().invoke(main, list(args), env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    text = result.stdout + result.stderr
    assert "Traceback" not in text
    return result.exit_code, text


def test_simulate_exits_3_and_reports_a_controller_failing_on_every_reconcile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from karpenter_core.controllers.nodepool import counter

    def broken(self: Any, key: Any) -> Any:
        raise RuntimeError("the counter is broken")

    monkeypatch.setattr(counter.Counter, "reconcile", broken)
    path = _write(tmp_path, "scenario.yaml", SCENARIO_HEAD)
    reports = {}
    for output in ("text", "json", "html"):
        code, text = _run("simulate", str(path), "-o", output, "--until", "5m")
        assert code == 3, text[-2000:]
        assert (
            text.rstrip().splitlines()[-1].startswith("Error: controller nodepool.counter failed ")
        ), text[-500:]
        assert "last error: RuntimeError: the counter is broken" in text
        reports[output] = text
    assert "Controller failures:" in reports["text"]
    assert "<h2>Controller failures</h2>" in reports["html"]
    document = json.loads(reports["json"][: reports["json"].rindex("}") + 1])
    [failure] = document["controllerFailures"]
    assert failure["controller"] == "nodepool.counter"
    assert failure["failures"] >= 3 and failure["failedRepeatedly"] is True
    assert failure["lastError"] == "RuntimeError: the counter is broken"


def test_simulate_without_controller_failures_reports_none(tmp_path: Path) -> None:
    path = _write(tmp_path, "scenario.yaml", SCENARIO_HEAD)
    result = CliRunner().invoke(main, ["simulate", str(path), "-o", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["controllerFailures"] == []
