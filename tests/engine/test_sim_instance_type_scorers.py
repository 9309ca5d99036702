"""Instance-type scorers in a simulation: the real provisioner, the kwok provider's launch,
the NodePool condition and events, and ``karpenter simulate --instance-type-scorer``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from engine_helpers import make_scenario, nodepool, web

from karpenter_core.cli import main
from karpenter_core.sim.engine import Simulation, SimulationError

PRIORITY = "karpenter.sh/instance-type-priority"
SCORER = "karpenter.sh/instance-type-scorer"


def pool(annotations: dict[str, str]) -> dict[str, Any]:
    np = nodepool()
    np["metadata"]["annotations"] = annotations
    return np


def launched_types(annotations: dict[str, str], **options: str) -> tuple[Simulation, list[str]]:
    sim = Simulation(
        make_scenario(
            nodePools=[pool(annotations)],
            workloads=[web(2, cpu="3", memory="3Gi")],
            options=options,
        )
    )
    report = sim.run(300)
    return sim, [n["instanceType"] for n in report.to_json_dict()["nodes"] if n["launched"]]


def test_default_launches_the_cheapest_type() -> None:
    _, types = launched_types({PRIORITY: "m"})
    assert types and all(t.startswith("c-") for t in types)


def test_priority_option_launches_the_listed_family() -> None:
    _, types = launched_types({PRIORITY: "m"}, INSTANCE_TYPE_SCORER="priority")
    assert types and all(t.startswith("m-") for t in types)


def test_a_nodepool_annotation_selects_its_scorer() -> None:
    sim, types = launched_types({PRIORITY: "s", SCORER: "priority"})
    assert types and all(t.startswith("s-") for t in types)
    status = sim.server.get("nodepools", "default")["status"]
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["InstanceTypeScorerResolved"]["status"] == "True"
    assert conditions["Ready"]["status"] == "True"
    nodeclaim = sim.server.list("nodeclaims").items[0]
    assert nodeclaim["metadata"]["annotations"]["karpenter.sh/instance-type-preference"].startswith(
        "s-"
    )


def test_an_unknown_annotation_is_a_condition_and_an_event_and_price_applies() -> None:
    sim, types = launched_types({SCORER: "fastest"})
    assert types and all(t.startswith("c-") for t in types)
    status = sim.server.get("nodepools", "default")["status"]
    conditions = {c["type"]: c for c in status["conditions"]}
    cond = conditions["InstanceTypeScorerResolved"]
    assert (cond["status"], cond["reason"]) == ("False", "UnknownInstanceTypeScorer")
    assert "'fastest'" in cond["message"] and "using 'price'" in cond["message"]
    assert conditions["Ready"]["status"] == "True"  # the pool keeps launching
    warnings = [e for e in sim.recorder.events if e.reason == "UnknownInstanceTypeScorer"]
    assert warnings and warnings[0].type == "Warning"


def test_pools_without_the_annotation_carry_no_scorer_condition() -> None:
    sim, _ = launched_types({})
    status = sim.server.get("nodepools", "default")["status"]
    assert "InstanceTypeScorerResolved" not in {c["type"] for c in status["conditions"]}


def test_an_unknown_option_refuses_to_start() -> None:
    with pytest.raises(SimulationError, match="instance-type-scorer: unknown instance-type"):
        Simulation(make_scenario(options={"INSTANCE_TYPE_SCORER": "fastest"}))


def test_simulate_flag_overrides_the_scenario(tmp_path: Path) -> None:
    scenario = {
        "apiVersion": "simulate.karpenter.sh/v1alpha1",
        "kind": "Scenario",
        "name": "scorers",
        "nodePools": [pool({PRIORITY: "m"})],
        "workloads": [web(2, cpu="3", memory="3Gi")],
        "options": {"INSTANCE_TYPE_SCORER": "price"},
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario))
    args = ["simulate", str(path), "-o", "json", "--until", "3m", "-q"]

    def types(*extra: str) -> list[str]:
        result = CliRunner().invoke(main, [*args, *extra])
        assert result.exit_code == 0, result.output
        return [n["instanceType"] for n in json.loads(result.stdout)["nodes"]]

    assert all(t.startswith("c-") for t in types())
    assert all(t.startswith("m-") for t in types("--instance-type-scorer", "priority"))
    bad = CliRunner().invoke(main, [*args, "--instance-type-scorer", "fastest"])
    assert bad.exit_code == 1
    assert "instance-type-scorer: unknown instance-type scorer 'fastest'" in bad.stderr
