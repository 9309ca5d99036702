"""The scheduling benchmark's fixtures and output shape (it only prints; nothing is timed)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from scheduler_helpers import fake_labels as fake_labels  # autouse fixture

BENCH = Path(__file__).resolve().parents[4] / "bench" / "scheduling.py"


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
    from karpenter_core.state.snapshot import ClusterSnapshot
    from karpenter_core.testing.fakecatalog import instance_types

    bench = _bench()
    pods = bench.PodFactory(42).diverse(500)
    anti = sum(1 for p in pods if (p.affinity or {}).get("podAntiAffinity"))
    results = schedule(
        ClusterSnapshot(pods=pods), pods, [bench.nodepool()], {"default": instance_types(400)}
    )
    assert results.pod_errors == {}
    assert len(results.new_nodeclaims) == anti


def _solve_count(bench: ModuleType, pods: list[Any], its: list[Any]) -> int:
    from karpenter_core.provisioning.scheduler import schedule
    from karpenter_core.state.snapshot import ClusterSnapshot

    results = schedule(ClusterSnapshot(pods=pods), pods, [bench.nodepool()], {"default": its})
    assert results.pod_errors == {}
    return len(results.new_nodeclaims)


def test_ffd_gives_each_hostname_anti_affinity_pod_its_own_node() -> None:
    from karpenter_core.testing.fakecatalog import instance_types

    bench = _bench()
    assert (
        bench.ffd_node_count(
            bench.PodFactory(1).anti_affinity(7, bench.HOSTNAME), instance_types(4)
        )
        == 7
    )


def test_ffd_packs_small_pods_into_one_node() -> None:
    from karpenter_core.testing.fakecatalog import instance_types

    bench = _bench()
    assert bench.ffd_node_count(bench.PodFactory(1).generic(20), instance_types(400)) == 1


def test_ffd_opens_a_node_when_the_largest_type_is_full() -> None:
    from karpenter_core.testing.fakecatalog import instance_types

    bench = _bench()
    factory = bench.PodFactory(1)
    # fake-it-1: 2 vCPU minus 100m overhead holds two 900m pods; a third needs a second node.
    pods = [factory.pod({}, {"cpu": "900m"}) for _ in range(3)]
    assert bench.ffd_node_count(pods, instance_types(2)) == 2


def test_ffd_hostname_spread_allows_max_skew_selected_pods_per_node() -> None:
    from karpenter_core.testing.fakecatalog import instance_types

    bench = _bench()
    factory = bench.PodFactory(1)
    tsc = [
        {
            "maxSkew": 1,
            "topologyKey": bench.HOSTNAME,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "s"}},
        }
    ]
    pods = [factory.pod({"app": "s"}, {"cpu": "100m"}, tsc=tsc) for _ in range(4)]
    assert bench.ffd_node_count(pods, instance_types(400)) == 4


@pytest.mark.parametrize(("kind", "count"), [("generic", 300), ("diverse", 300)])
def test_scheduler_needs_no_more_nodeclaims_than_ffd(kind: str, count: int) -> None:
    from karpenter_core.testing.fakecatalog import instance_types

    bench = _bench()
    its = instance_types(400)
    pods = getattr(bench.PodFactory(7), kind)(count)
    assert _solve_count(bench, pods, its) <= bench.ffd_node_count(pods, its)


def test_table_output_shows_the_ffd_column(capsys: pytest.CaptureFixture[str]) -> None:
    assert _bench().main(["--sizes", "10"]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split()[4] == "ffd"
    assert row.split()[0] == "diverse-10" and row.split()[4] == "2"


def test_dra_cases_place_every_pod_and_every_claim(capsys: pytest.CaptureFixture[str]) -> None:
    """``--dra``: a quarter of the types carry GPUs, a fifth of the pods claim 1-4 of one
    model; every pod is placed in the three cases, and every claim is allocated."""
    bench = _bench()
    assert bench.main(["--dra", "--sizes", "50", "--repeat", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == ["dra-off-50", "dra-on-noclaims-50", "dra-claims-50"]
    assert [r["claims"] for r in rows] == [0, 0, 10]
    its = bench.dra_catalogue(bench.instance_types(400))
    assert sum(1 for it in its if it.dynamic_resources is not None) == 100
    pods, claims = bench.with_claims(bench.PodFactory(42).diverse(50), 0.2)
    *_, results = bench.run_dra("c", pods, its, ignore_dra_requests=False, claims=claims)
    assert results.pod_errors == {}
    assert set(results.dra_claim_allocations) == {c.key for c in claims}
