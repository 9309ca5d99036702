"""The bundled catalogue (karpenter_gcp.catalogue): every bundled region loads and builds
priced instance types, unknown regions fail naming the bundled ones, and the refresh and
import commands write snapshots that load back."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from fakegce import PROJECT, REGION, FakeGCE
from fakegce_catalog import CatalogRoutes, catalog_routes, machine_type_json, price_csv
from karpenter_gcp import catalogue
from karpenter_gcp.clients import GCPClients
from karpenter_gcp.instancetypes import build_instance_types
from karpenter_gcp.pricing import PricingProvider

from karpenter_core.plugin_api import VirtualClock


def test_there_are_bundled_regions() -> None:
    assert "us-central1" in catalogue.REGIONS
    assert set(catalogue.REGIONS) <= set(catalogue.PRICE_REGIONS)


@pytest.mark.parametrize("region", catalogue.REGIONS)
def test_every_bundled_region_loads_and_builds_priced_instance_types(region: str) -> None:
    snap = catalogue.load_snapshot(region)
    assert snap.region == region
    assert snap.zones and all(z.startswith(f"{region}-") for z in snap.zones)
    assert snap.machine_types
    for mt in snap.machine_types:
        assert mt.zones and set(mt.zones) <= set(snap.zones), mt.name
        assert mt.guest_cpus > 0 and mt.memory_mb > 0, mt.name
    assert snap.generated_at.tzinfo is not None
    assert snap.machine_types_recorded_at.tzinfo is not None
    assert snap.provenance
    pricing = PricingProvider(region, clock=VirtualClock(), fetch=False)
    types = build_instance_types(snap.machine_types, pricing, region=region)
    assert len(types) == len(snap.machine_types)  # every bundled type is priced
    for it in types:
        assert it.offerings.available()


def test_an_unknown_region_names_the_bundled_ones() -> None:
    with pytest.raises(catalogue.CatalogueError) as err:
        catalogue.load_snapshot("antarctica-east1")
    message = str(err.value)
    assert "antarctica-east1" in message
    for region in catalogue.REGIONS:
        assert region in message
    assert "refresh --region antarctica-east1" in message


def test_disk_types_per_family() -> None:
    assert "pd-balanced" in (catalogue.disk_types("n2") or ())
    assert catalogue.disk_types("zz9") is None


def _seed(gce: FakeGCE) -> CatalogRoutes:
    routes = catalog_routes(gce)
    routes.zones = ["us-central1-a", "us-central1-b", "us-east1-b"]
    routes.add_machine_types(
        [
            machine_type_json("n2-standard-4", "us-central1-a", cpus=4, memory_mb=16384),
            machine_type_json("n2-standard-4", "us-central1-b", cpus=4, memory_mb=16384),
            machine_type_json("e2-standard-2", "us-central1-b", cpus=2, memory_mb=8192),
        ]
    )
    routes.csv = price_csv(
        [("n2-standard-4", REGION, 0.19, 0.05), ("e2-standard-2", REGION, 0.067, 0.02)]
    )
    return routes


def test_refresh_region_writes_a_snapshot_that_loads_back(
    gce: FakeGCE, gcp_clients: GCPClients, tmp_path: Path
) -> None:
    routes = _seed(gce)
    clock = VirtualClock()
    snap = catalogue.refresh_region(
        REGION,
        PROJECT,
        gcp_clients.machine_types,
        zones_client=gcp_clients.zones,
        pricing_endpoint=routes.prices_url,
        clock=clock,
    )
    assert snap.zones == ("us-central1-a", "us-central1-b")
    assert [mt.name for mt in snap.machine_types] == ["e2-standard-2", "n2-standard-4"]
    assert snap.on_demand == {"n2-standard-4": 0.19, "e2-standard-2": 0.067}
    assert snap.generated_at == clock.now()

    path = catalogue.write_snapshot(snap, tmp_path)
    assert path == tmp_path / "regions" / f"{REGION}.json.gz"
    again = catalogue.Snapshot.from_dict(json.loads(gzip.decompress(path.read_bytes())), "written")
    assert again == snap
    table = json.loads(gzip.decompress((tmp_path / "prices.json.gz").read_bytes()))
    column = dict(zip(table["names"], table["onDemand"][REGION], strict=True))
    assert column == {"e2-standard-2": 0.067, "n2-standard-4": 0.19}


def test_the_refresh_command_against_the_fake(gce: FakeGCE, tmp_path: Path) -> None:
    routes = _seed(gce)
    status = catalogue.main(
        [
            "refresh",
            "--region",
            REGION,
            "--project",
            PROJECT,
            "--output-dir",
            str(tmp_path),
            "--compute-endpoint",
            gce.url,
            "--pricing-endpoint",
            routes.prices_url,
        ]
    )
    assert status == 0
    assert (tmp_path / "regions" / f"{REGION}.json.gz").is_file()
    assert catalogue.main(["refresh", "--region", REGION, "--output-dir", str(tmp_path)]) == 2


def test_import_from_gcloud_output_and_a_saved_price_table(tmp_path: Path) -> None:
    listing = tmp_path / "mt.json"
    listing.write_text(
        json.dumps(
            [
                machine_type_json("n2-standard-2", "us-east1-b"),
                machine_type_json("n2-standard-2", "us-east1-c"),
                machine_type_json("n2-standard-2", "us-west1-a"),  # another region
            ]
        )
    )
    prices = tmp_path / "prices.csv"
    prices.write_text(price_csv([("n2-standard-2", "us-east1", 0.097, 0.023)]))
    out = tmp_path / "data"
    status = catalogue.main(
        [
            "import",
            "--region",
            "us-east1",
            "--machine-types",
            str(listing),
            "--prices",
            str(prices),
            "--recorded-at",
            "2026-01-02T03:04:05Z",
            "--output-dir",
            str(out),
        ]
    )
    assert status == 0
    snap = catalogue.Snapshot.from_dict(
        json.loads(gzip.decompress((out / "regions" / "us-east1.json.gz").read_bytes())), "x"
    )
    (mt,) = snap.machine_types
    assert mt.zones == ("us-east1-b", "us-east1-c")
    assert snap.zones == ("us-east1-b", "us-east1-c")
    assert snap.on_demand == {"n2-standard-2": 0.097}
    assert snap.spot == {"n2-standard-2": 0.023}
    assert snap.generated_at.isoformat() == "2026-01-02T03:04:05+00:00"


def test_the_list_command_runs_as_a_module() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "karpenter_gcp.catalogue", "list"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    for region in catalogue.REGIONS:
        assert region in result.stdout
