"""The scheduling benchmark's fixtures and output shape (it only prints; nothing is timed)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
from scheduler_helpers import fake_labels as fake_labels  # autouse fixture

BENCH = Path(__file__).resolve().parents[3] / "bench" / "scheduling.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_scheduling", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_scheduling"] = module
    spec.loader.exec_module(module)
    return module


def test_diverse_mix_is_five_even_kinds_with_generic_remainder() -> None:
    pods = _bench().PodFactory(42).diverse(12)
    assert len(pods) == 12
    spread = [p for p in pods if p.topology_spread_constraints]
    anti = [p for p in pods if (p.affinity or {}).get("podAntiAffinity")]
    affinity = [p for p in pods if (p.affinity or {}).get("podAffinity")]
    assert (len(spread), len(anti), len(affinity)) == (4, 2, 2)


def test_same_seed_gives_the_same_pods() -> None:
    bench = _bench()
    a = [dict(p.requests) for p in bench.PodFactory(42).diverse(50)]
    b = [dict(p.requests) for p in bench.PodFactory(42).diverse(50)]
    assert a == b


def test_json_output_has_the_documented_fields(capsys: pytest.CaptureFixture[str]) -> None:
    assert _bench().main(["--sizes", "10", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == ["diverse-10"]
    assert set(rows[0]) == {"name", "pods", "podsPerSecond", "nodeClaims", "peakRssMB"}
    assert rows[0]["pods"] == 10
    assert rows[0]["nodeClaims"] >= 2  # two hostname anti-affinity pods need two nodes


def test_bad_sizes_are_a_usage_error() -> None:
    with pytest.raises(SystemExit) as exc:
        _bench().main(["--sizes", "ten"])
    assert exc.value.code == 2


def test_diverse_mix_uses_the_fewest_nodeclaims_possible() -> None:
    """Each hostname anti-affinity pod needs its own node; the solve uses no more."""
    from karpenter_core.provisioning.scheduler import schedule
    from karpenter_core.provisioning.scheduler.fakecatalog import instance_types
    from karpenter_core.state.snapshot import ClusterSnapshot

    bench = _bench()
    pods = bench.PodFactory(42).diverse(500)
    anti = sum(1 for p in pods if (p.affinity or {}).get("podAntiAffinity"))
    results = schedule(
        ClusterSnapshot(pods=pods), pods, [bench.nodepool()], {"default": instance_types(400)}
    )
    assert results.pod_errors == {}
    assert len(results.new_nodeclaims) == anti
