"""The built-in KWOK catalogue: its shape, names, quantities and prices."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from karpenter_kwok.generate import (
    CPU_COUNTS,
    generate_instance_type_options,
    instance_type_name,
    main,
    on_demand_price,
)

GIB = 1024**3


@pytest.fixture(scope="module")
def catalogue() -> dict[str, dict]:
    return {e["name"]: e for e in generate_instance_type_options()}


def _price(entry: dict, capacity_type: str) -> float:
    """The one price every offering of ``capacity_type`` carries (all zones cost the same)."""
    prices = {
        o["Price"] for o in entry["offerings"] if o["Requirements"][0]["values"] == [capacity_type]
    }
    assert len(prices) == 1
    return prices.pop()


def test_catalogue_has_144_unique_types() -> None:
    names = [e["name"] for e in generate_instance_type_options()]
    assert len(names) == 144
    assert len(set(names)) == 144


def test_catalogue_order_matches_upstream_loop_nesting() -> None:
    names = [e["name"] for e in generate_instance_type_options()]
    assert names[:5] == [
        "c-1x-amd64-linux",
        "c-1x-arm64-linux",
        "c-1x-amd64-windows",
        "c-1x-arm64-windows",
        "s-1x-amd64-linux",
    ]
    assert names[-1] == "m-256x-arm64-windows"


@pytest.mark.parametrize(
    ("cpu", "gib_per_cpu", "arch", "os_name", "name"),
    [
        (1, 2, "amd64", "linux", "c-1x-amd64-linux"),
        (48, 4, "arm64", "windows", "s-48x-arm64-windows"),
        (256, 8, "amd64", "linux", "m-256x-amd64-linux"),
        (4, 3, "amd64", "linux", "e-4x-amd64-linux"),
    ],
)
def test_instance_type_name(cpu: int, gib_per_cpu: int, arch: str, os_name: str, name: str) -> None:
    assert instance_type_name(cpu, gib_per_cpu, arch, os_name) == name


@pytest.mark.parametrize(
    ("name", "cpu", "memory", "pods"),
    [
        ("c-1x-amd64-linux", "1", "2Gi", "16"),
        ("s-8x-arm64-linux", "8", "32Gi", "128"),
        ("m-48x-amd64-windows", "48", "384Gi", "768"),
        ("c-64x-arm64-linux", "64", "128Gi", "1024"),
        ("s-256x-amd64-linux", "256", "1Ti", "1024"),
        ("m-256x-arm64-windows", "256", "2Ti", "1024"),
    ],
)
def test_resources_of_sample_types(catalogue, name, cpu, memory, pods) -> None:
    assert catalogue[name]["resources"] == {
        "cpu": cpu,
        "memory": memory,
        "pods": pods,
        "ephemeral-storage": "20Gi",
    }


@pytest.mark.parametrize("name", ["c-1x-amd64-linux", "s-16x-arm64-windows", "m-192x-amd64-linux"])
def test_prices_follow_the_generator_formula(catalogue, name) -> None:
    fam, size, _arch, _os = name.split("-")
    cpu = int(size[:-1])
    mem_bytes = cpu * {"c": 2, "s": 4, "m": 8}[fam] * GIB
    expected = 0.025 * cpu + 0.001 * mem_bytes / 1e9
    assert _price(catalogue[name], "on-demand") == pytest.approx(expected, rel=1e-12)
    assert _price(catalogue[name], "spot") == pytest.approx(expected * 0.7, rel=1e-12)


def test_c_1x_prices_by_hand(catalogue) -> None:
    # 1 vCPU * 0.025 + 2 GiB (2,147,483,648 bytes) * 0.001 / 1e9 = 0.025 + 0.002147483648
    assert _price(catalogue["c-1x-amd64-linux"], "on-demand") == 0.027147483648
    # 0.7 * 0.027147483648 = 0.0190032385536 (float64: 0.019003238553599998)
    assert _price(catalogue["c-1x-amd64-linux"], "spot") == pytest.approx(0.0190032385536)


def test_m_256x_on_demand_price_by_hand(catalogue) -> None:
    # 256 * 0.025 = 6.4; 2 TiB = 2,199,023,255,552 bytes -> 2.199023255552
    assert _price(catalogue["m-256x-arm64-linux"], "on-demand") == pytest.approx(8.599023255552)


def test_every_type_offers_spot_and_on_demand_in_four_zones(catalogue) -> None:
    for entry in catalogue.values():
        pairs = Counter(
            (o["Requirements"][0]["values"][0], o["Requirements"][1]["values"][0])
            for o in entry["offerings"]
        )
        assert set(pairs) == {
            (ct, f"test-zone-{z}") for ct in ("spot", "on-demand") for z in "abcd"
        }
        assert set(pairs.values()) == {1}
        assert all(o["Available"] for o in entry["offerings"])


def test_pods_are_capped_at_1024() -> None:
    pods = {
        int(e["resources"]["pods"])
        for e in generate_instance_type_options()
        if e["resources"]["cpu"] == str(max(CPU_COUNTS))
    }
    assert pods == {1024}


def test_on_demand_price_is_linear_in_cpu_and_memory() -> None:
    assert on_demand_price(2, 0) == pytest.approx(0.05)
    assert on_demand_price(0, 10**9) == pytest.approx(0.001)


def test_main_prints_the_catalogue_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    main()
    printed = json.loads(capsys.readouterr().out)
    assert printed == generate_instance_type_options()
