"""The bundled catalogue (karpenter_azure.catalogue): every bundled region loads and builds
instance types, unknown regions fail naming the bundled ones, and the refresh and
import commands write snapshots that load back."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from fakearm import FakeARM
from fakearm_catalog import authorized_session, catalog_routes, price_item, sku_json
from karpenter_azure import catalogue
from karpenter_azure.clients import AzureClients
from karpenter_azure.instancetypes import build_instance_types
from karpenter_azure.pricing import PricingProvider

from karpenter_core.plugin_api import VirtualClock

SUBSCRIPTION = "00000000-0000-0000-0000-00000000cafe"


def test_there_are_bundled_regions() -> None:
    assert catalogue.REGIONS
    assert set(catalogue.REGIONS) <= set(catalogue.PRICE_REGIONS)


@pytest.mark.parametrize("region", catalogue.REGIONS)
def test_every_bundled_region_loads_and_builds_priced_instance_types(region: str) -> None:
    snap = catalogue.load_snapshot(region)
    assert snap.region == region
    assert snap.skus
    for sku in snap.skus:
        assert any(loc.lower() == region for loc in sku.locations)
        assert sku.vcpus is not None and sku.memory_gib is not None
    assert snap.generated_at.tzinfo is not None and snap.skus_recorded_at.tzinfo is not None
    assert snap.provenance
    pricing = PricingProvider(region, clock=VirtualClock(), fetch=False)
    types = build_instance_types(snap.skus, pricing, region=region)
    assert types
    for it in types:
        assert pricing.on_demand(it.name) is not None, it.name
        assert it.offerings.available()


def test_an_unknown_region_names_the_bundled_ones() -> None:
    with pytest.raises(catalogue.CatalogueError) as err:
        catalogue.load_snapshot("antarctica-east")
    message = str(err.value)
    assert "antarctica-east" in message
    for region in catalogue.REGIONS:
        assert region in message
    assert "refresh --region antarctica-east" in message


def test_regions_without_a_snapshot_still_have_bundled_prices() -> None:
    others = sorted(set(catalogue.PRICE_REGIONS) - set(catalogue.REGIONS))
    assert others
    table = catalogue.bundled_prices(others[0])
    assert table is not None and table.on_demand and table.spot == {}
    assert catalogue.bundled_prices("antarctica-east") is None


def test_the_bundled_data_stays_small() -> None:
    root = Path(str(catalogue.data_dir()))
    assert sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) < 1_000_000


def test_gpu_and_known_size_tables_load() -> None:
    assert catalogue.gpu_skus()["standard_nc24ads_a100_v4"][0] == "nvidia"
    assert "Standard_D2s_v3" in catalogue.known_skus()


def _read(path: Path) -> dict[str, object]:
    data = json.loads(gzip.decompress(path.read_bytes()))
    assert isinstance(data, dict)
    return data


def test_import_writes_a_snapshot_from_saved_responses(tmp_path: Path) -> None:
    skus = [
        sku_json("Standard_D2s_v9", location="eastus"),
        sku_json("Premium_LRS", location="eastus", resource_type="disks"),
    ]
    (tmp_path / "skus.json").write_text(json.dumps(skus))
    pages = [
        {"Items": [price_item("Standard_D2s_v9", 0.2, region="eastus")], "NextPageLink": "x"},
        {"Items": [price_item("Standard_D2s_v9", 0.02, region="eastus", spot=True)]},
    ]
    for i, page in enumerate(pages):
        (tmp_path / f"p{i}.json").write_text(json.dumps(page))
    out = tmp_path / "data"
    status = catalogue.main(
        [
            "import",
            "--region",
            "eastus",
            "--skus",
            str(tmp_path / "skus.json"),
            "--prices",
            str(tmp_path / "p0.json"),
            str(tmp_path / "p1.json"),
            "--recorded-at",
            "2026-01-02T03:04:05Z",
            "--output-dir",
            str(out),
        ]
    )
    assert status == 0
    snap = catalogue.Snapshot.from_dict(_read(out / "regions" / "eastus.json.gz"), "test")
    assert [s.name for s in snap.skus] == ["Standard_D2s_v9"]
    assert snap.on_demand == {"Standard_D2s_v9": 0.2}
    assert snap.spot == {"Standard_D2s_v9": 0.02}
    assert snap.generated_at.isoformat() == "2026-01-02T03:04:05+00:00"
    table = _read(out / "prices.json.gz")
    assert table["names"] == ["Standard_D2s_v9"]
    assert table["regions"] == {"eastus": [0.2]}


def test_import_reports_an_unreadable_dump(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "skus.json").write_text("not json")
    status = catalogue.main(
        [
            "import",
            "--region",
            "eastus",
            "--skus",
            str(tmp_path / "skus.json"),
            "--output-dir",
            str(tmp_path),
        ]
    )
    assert status == 1
    assert "skus.json" in capsys.readouterr().err


def test_refresh_reads_skus_and_prices_from_the_live_apis(arm_env: FakeARM, tmp_path: Path) -> None:
    routes = catalog_routes(arm_env)
    routes.skus.extend(
        sku_json(f"Standard_D{n}s_v9", location="westus2", vcpus=n) for n in (2, 4, 8)
    )
    routes.prices.extend(
        [
            price_item("Standard_D2s_v9", 0.1),
            price_item("Standard_D4s_v9", 0.2),
            price_item("Standard_D4s_v9", 0.05, spot=True),
        ]
    )
    clients = AzureClients.create(SUBSCRIPTION)
    clock = VirtualClock()
    snap = catalogue.refresh_region(
        "westus2",
        clients.compute,
        pricing_endpoint=routes.prices_endpoint,
        session=authorized_session(arm_env),
        clock=clock,
    )
    assert [s.name for s in snap.skus] == ["Standard_D2s_v9", "Standard_D4s_v9", "Standard_D8s_v9"]
    assert snap.on_demand == {"Standard_D2s_v9": 0.1, "Standard_D4s_v9": 0.2}
    assert snap.spot == {"Standard_D4s_v9": 0.05}
    assert snap.generated_at == clock.now()
    path = catalogue.write_snapshot(snap, tmp_path)
    assert catalogue.Snapshot.from_dict(_read(path), "test") == snap


def test_refresh_without_a_subscription_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AZURE_SUBSCRIPTION_ID", raising=False)
    assert catalogue.main(["refresh", "--region", "eastus"]) == 2
    assert "AZURE_SUBSCRIPTION_ID" in capsys.readouterr().err


def test_list_prints_every_bundled_region(capsys: pytest.CaptureFixture[str]) -> None:
    assert catalogue.main(["list"]) == 0
    out = capsys.readouterr().out
    for region in catalogue.REGIONS:
        assert f"{region}: {len(catalogue.load_snapshot(region).skus)} SKUs" in out


def test_the_refresh_command_reads_arm_from_the_environment_and_reports_failures(
    arm_env: FakeARM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command builds its clients as the provider does (managed identity, the cloud
    environment file's ARM endpoint); a region whose prices cannot be read is reported
    and nothing is written for it (the fake's prices route wants a token the anonymous
    retail prices client never sends)."""
    routes = catalog_routes(arm_env)
    routes.skus.append(sku_json("Standard_D2s_v9", location="westus2"))
    status = catalogue.main(
        [
            "refresh",
            "--region",
            "westus2",
            "--subscription-id",
            SUBSCRIPTION,
            "--pricing-endpoint",
            routes.prices_endpoint,
            "--output-dir",
            str(tmp_path),
        ]
    )
    assert status == 1
    assert "refresh westus2: retail prices API: status 401" in capsys.readouterr().err
    assert routes.sku_filters == ["location eq 'westus2'"]
    assert not list(tmp_path.rglob("*.json.gz"))


def test_the_module_runs_as_a_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "karpenter_azure.catalogue", "list"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    for region in catalogue.REGIONS:
        assert region in result.stdout
