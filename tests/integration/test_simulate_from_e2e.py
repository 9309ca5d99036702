"""``karpenter simulate --from`` on a snapshot of the real control plane: ``karpenter
serve`` (KWOK) scales a Deployment out, the cluster is snapshotted with
``take_snapshot``, and a short simulation from that snapshot starts with, and keeps, the
cluster's nodes (``serve_harness.py`` runs the control plane and the operator)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from serve_harness import (
    Cluster,
    Serve,
    cluster_fixture,  # noqa: F401 -- the `cluster` fixture
    serve_fixture,  # noqa: F401 -- the `serve` fixture
    wait_for,
)

from karpenter_core.cli import main
from karpenter_core.snapshot import write_snapshot
from karpenter_core.snapshot.take import take_snapshot

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]


def test_a_snapshot_of_the_cluster_simulates_to_its_node_count(
    cluster: Cluster, serve: Callable[..., Serve], tmp_path: Path
) -> None:
    serve()
    cluster.apply_nodepool("default")
    cluster.apply_deployment("web", 7)
    wait_for(lambda: cluster.all_running_on_karpenter_nodes("web", 7), "7 pods running")
    wait_for(lambda: not cluster.pending_pods(), "no pod pending")
    nodes = len(cluster.karpenter_nodes())
    assert nodes >= 3  # three 1-vCPU pods per 4-vCPU node

    path = tmp_path / "cluster.json.gz"
    write_snapshot(take_snapshot(cluster.kube), path)
    result = CliRunner().invoke(
        main, ["simulate", "--from", str(path), "--until", "2m", "-o", "json", "-q"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["nodesAtStart"] == nodes
    assert report["timeline"][0]["nodes"] >= nodes  # Karpenter's, and the cluster's own
    assert report["timeline"][-1]["nodes"] == report["timeline"][0]["nodes"]
    assert report["pods"]["pending"] == 0 and report["pods"]["bound"] >= 7
    assert report["nodesLaunched"] == 0
