"""``karpenter schedule --instance-type-scorer``: the scorer changes the type shown (and
its order in ``instanceTypes``); unknown names are bad input or warnings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from test_schedule import NODEPOOL, pod_yaml

from karpenter_core.cli.schedule import command


def manifests(tmp_path: Path, annotations: dict[str, str] | None = None) -> str:
    """The CLI tests' NodePool (kwok, on-demand amd64 linux) with NodePool ``annotations``,
    and one pending pod of 3 CPUs and 3Gi."""
    pool = NODEPOOL.replace(
        "  name: default\n", f"  name: default\n  annotations: {json.dumps(annotations or {})}\n"
    )
    path = tmp_path / "in.yaml"
    path.write_text(pool + "\n---\n" + pod_yaml("p", cpu="3", memory="3Gi"))
    return str(path)


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(command, [*args, "-q"], env=env, catch_exceptions=False)


def claim(result: Result) -> dict[str, Any]:
    assert result.exit_code == 0, result.output
    [nc] = json.loads(result.stdout)["nodeClaims"]
    out: dict[str, Any] = nc
    return out


PRIORITY_M = {"karpenter.sh/instance-type-priority": "m"}


def test_default_is_price(tmp_path: Path) -> None:
    nc = claim(run("-f", manifests(tmp_path, PRIORITY_M), "-o", "json"))
    assert nc["instanceTypes"][0] == "c-4x-amd64-linux"
    assert "instanceTypeScorer" not in nc


def test_priority_flag_launches_the_listed_family(tmp_path: Path) -> None:
    path = manifests(tmp_path, PRIORITY_M)
    nc = claim(run("-f", path, "-o", "json", "--instance-type-scorer", "priority"))
    assert nc["instanceTypeScorer"] == "priority"
    assert nc["instanceTypes"][0] == "m-4x-amd64-linux"
    table = run("-f", path, "--instance-type-scorer", "priority").stdout
    assert "m-4x-amd64-linux" in table.splitlines()[1]


def test_the_env_variable_and_the_nodepool_annotation_select_too(tmp_path: Path) -> None:
    env_nc = claim(
        run(
            "-f",
            manifests(tmp_path, PRIORITY_M),
            "-o",
            "json",
            env={"INSTANCE_TYPE_SCORER": "priority"},
        )
    )
    assert env_nc["instanceTypes"][0] == "m-4x-amd64-linux"
    annotated = {**PRIORITY_M, "karpenter.sh/instance-type-scorer": "priority"}
    nc = claim(run("-f", manifests(tmp_path, annotated), "-o", "json"))
    assert nc["instanceTypes"][0] == "m-4x-amd64-linux"


def test_an_unknown_scorer_flag_is_one_line_of_bad_input(tmp_path: Path) -> None:
    result = run("-f", manifests(tmp_path), "--instance-type-scorer", "fastest")
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "Error: instance-type-scorer: unknown instance-type scorer 'fastest' "
        "(known: least-waste, price, priority)"
    )


def test_an_unknown_annotation_is_a_warning_and_price_applies(tmp_path: Path) -> None:
    path = manifests(tmp_path, {"karpenter.sh/instance-type-scorer": "fastest"})
    result = run("-f", path, "-o", "json")
    assert claim(result)["instanceTypes"][0] == "c-4x-amd64-linux"
    assert "warning: NodePool default: karpenter.sh/instance-type-scorer: unknown" in (
        result.stderr
    )


@pytest.mark.parametrize("scorer", ["price", "least-waste"])
def test_kwok_prices_follow_size_so_least_waste_agrees_with_price_here(
    tmp_path: Path, scorer: str
) -> None:
    # kwok's catalogue prices every type by its CPU and memory: the snuggest fit is the
    # cheapest too (the crafted catalogues of the scheduler tests show them differ)
    nc = claim(run("-f", manifests(tmp_path), "-o", "json", "--instance-type-scorer", scorer))
    assert nc["instanceTypes"][0] == "c-4x-amd64-linux"
