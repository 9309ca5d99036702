"""The bundled examples/scenarios/dra-gpus.yaml (issue 11): GPU pods asking for devices
through a ResourceClaimTemplate get nodes of the only family the KWOK DRA driver gives
GPUs, their claims are allocated from those nodes' published devices, and consolidation
after the scale-down never puts a GPU pod where no GPU is free."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from karpenter_core.sim.engine import Simulation
from karpenter_core.sim.scenario import load_scenario

SCENARIO = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "dra-gpus.yaml"
DRIVER = "gpu.example.com"
FAMILY = "karpenter.kwok.sh/instance-family"


def _trainers(sim: Simulation) -> list[dict[str, Any]]:
    return [
        p
        for p in sim.server.list("pods", "default", label_selector="app=trainer").items
        if not p["metadata"].get("deletionTimestamp")
    ]


def _check_devices(sim: Simulation) -> list[str]:
    """Every bound trainer is on an m node and holds a device its node publishes, no two
    trainers the same device. Returns the nodes of the bound trainers."""
    nodes = {n["metadata"]["name"]: n for n in sim.server.list("nodes").items}
    slices = sim.server.list("resourceslices").items
    devices = {
        (s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"]): s["spec"]["nodeName"]
        for s in slices
        for d in s["spec"]["devices"]
    }
    held: Counter[tuple[str, str, str]] = Counter()
    placed = []
    for pod in _trainers(sim):
        node_name = pod["spec"].get("nodeName")
        if not node_name:
            continue
        where = f"{pod['metadata']['name']} on {node_name}"
        assert nodes[node_name]["metadata"]["labels"][FAMILY] == "m", where
        [status] = pod["status"]["resourceClaimStatuses"]
        claim = sim.server.get("resourceclaims", status["resourceClaimName"], "default")
        [result] = claim["status"]["allocation"]["devices"]["results"]
        device = (result["driver"], result["pool"], result["device"])
        assert devices.get(device) == node_name, where
        assert pod["metadata"]["uid"] in {r["uid"] for r in claim["status"]["reservedFor"]}
        held[device] += 1
        placed.append(node_name)
    assert all(n == 1 for n in held.values()), held
    return placed


@pytest.fixture(scope="module")
def run() -> tuple[Simulation, list[list[str]]]:
    """The scenario, checked minute by minute; returns the simulation at its end and the
    nodes of the bound trainers at each minute."""
    sim = Simulation(load_scenario(SCENARIO))
    minutes = []
    for minute in range(1, 41):
        sim.run_until(minute * 60)
        minutes.append(_check_devices(sim))
    return sim, minutes


def test_the_trainers_get_gpu_nodes_and_their_devices(
    run: tuple[Simulation, list[list[str]]],
) -> None:
    sim, minutes = run
    placed = minutes[9]  # 10 minutes in, before the scale-down
    assert len(placed) == 6
    # two GPUs per node: at least three nodes, and never three trainers on one
    assert len(set(placed)) >= 3
    assert max(Counter(placed).values()) <= 2
    claims = {
        c["metadata"]["name"]: c for c in sim.server.list(("karpenter.sh/v1", "NodeClaim")).items
    }
    for claim in claims.values():
        family = claim["metadata"]["labels"].get(FAMILY)
        annotations = claim["metadata"].get("annotations") or {}
        if family == "m" and claim["status"].get("nodeName") in placed:
            assert annotations.get("karpenter.sh/requested-dra-drivers") == DRIVER


def test_after_the_scale_down_consolidation_keeps_gpu_pods_on_gpus(
    run: tuple[Simulation, list[list[str]]],
) -> None:
    sim, minutes = run
    report = sim.report().to_json_dict()
    assert len(minutes[-1]) == 2  # both remaining trainers bound, on m nodes, with devices
    assert report["pods"]["pending"] == 0  # the web pods too
    gpu_nodes = [
        n for n in sim.server.list("nodes").items if n["metadata"]["labels"][FAMILY] == "m"
    ]
    assert 1 <= len(gpu_nodes) <= 2
    assert report["removalReasons"]  # consolidation removed nodes after the scale-down
    # and did not churn: each removal is a decision that stood
    assert report["nodesLaunched"] <= 12, report["removalReasons"]


def test_the_report_is_reproducible() -> None:
    first = Simulation(load_scenario(SCENARIO)).run().to_json_dict()
    second = Simulation(load_scenario(SCENARIO)).run().to_json_dict()
    for report in (first, second):
        report.pop("wallSeconds")
    assert first == second
