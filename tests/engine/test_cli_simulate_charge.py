"""``karpenter simulate --charge-compute-time`` / ``--compute-time-scale``: the flags win
over the scenario, the report carries what was charged, and a scale that would change
nothing is a one-line error. (The figures themselves are measured CPU time, so only
their shape is checked here; exact charging is tested with a fake meter elsewhere.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from karpenter_core.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["simulate", *args])
    return result.exit_code, result.output


def test_the_flag_charges_karpenters_controllers_and_reports_it() -> None:
    code, out = run(
        str(EXAMPLES / "quickstart.yaml"), "-o", "json", "--until", "5m", "--charge-compute-time"
    )
    assert code == 0, out
    data = json.loads(out)
    charged = data["computeCharged"]
    assert set(charged) == {"scale", "totalSeconds", "controllers"}
    assert charged["scale"] == 1.0
    assert charged["controllers"]
    assert set(charged["controllers"]) <= set(data["controllers"])
    assert charged["totalSeconds"] == pytest.approx(
        sum(charged["controllers"].values()), abs=0.001 * len(charged["controllers"])
    )
    assert data["virtualSeconds"] >= 300.0  # the last reconcile may end past --until
    assert data["pods"]["bound"] > 0


def test_the_no_flag_wins_over_the_scenario(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: s\nchargeComputeTime: true\ncomputeTimeScale: 3\n")
    code, out = run(str(scenario), "-o", "json", "--until", "1m", "--no-charge-compute-time")
    assert code == 0, out
    assert json.loads(out)["computeCharged"] is None
    code, out = run(str(scenario), "-o", "json", "--until", "1m")
    assert code == 0, out
    assert json.loads(out)["computeCharged"]["scale"] == 3.0
    code, out = run(str(scenario), "-o", "json", "--until", "1m", "--compute-time-scale", "0.5")
    assert code == 0, out
    assert json.loads(out)["computeCharged"]["scale"] == 0.5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--compute-time-scale", "2"], "--compute-time-scale: has no effect while charging"),
        (["--charge-compute-time", "--compute-time-scale", "x"], "expected a positive number"),
        (["--charge-compute-time", "--compute-time-scale", "-1"], "must be above 0"),
    ],
)
def test_a_useless_or_bad_scale_is_a_one_line_error(
    tmp_path: Path, args: list[str], message: str
) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: s\n")
    code, out = run(str(scenario), *args)
    assert code == 1
    assert message in out
    assert out.strip().count("\n") == 0
