"""Prices (karpenter_gcp.pricing): the price table upstream reads (CSV columns, skipped
rows), fetched from the fake server, and the provider seeded from the bundled snapshot,
refreshed live, keeping its prices when a refresh fails, and pricing unknown spot at 40 %
of on-demand."""

from __future__ import annotations

import pytest
from fakegce import REGION, FakeGCE
from fakegce_catalog import PRICES_PATH, catalog_routes, price_csv
from karpenter_gcp import catalogue
from karpenter_gcp.pricing import (
    ENV_ENDPOINT,
    SPOT_FRACTION,
    PricingError,
    PricingProvider,
    fetch_prices,
    prices_from_csv,
    pricing_endpoint,
)

from karpenter_core.plugin_api import VirtualClock


def test_the_csv_gives_prices_per_region_skipping_unpriced_rows() -> None:
    text = (
        "Name,Region,Hour,HourSpot\n"
        "n2-standard-2,us-central1,0.0971,0.0231\n"
        "n2-standard-2,europe-west4,0.1068,\n"
        "n2-standard-4,us-central1,0,0.04\n"  # no on-demand price: skipped
        "n2-standard-8,us-central1,n/a,0.09\n"
        "short,us-central1\n"
    )
    table = prices_from_csv(text)
    assert table["us-central1"] == ({"n2-standard-2": 0.0971}, {"n2-standard-2": 0.0231})
    assert table["europe-west4"] == ({"n2-standard-2": 0.1068}, {})


def test_a_csv_without_the_price_columns_is_an_error() -> None:
    with pytest.raises(PricingError, match="hourSpot"):
        prices_from_csv("name,region,hour\nn2-standard-2,us-central1,0.1\n")
    with pytest.raises(PricingError):
        prices_from_csv("")


def test_the_endpoint_can_be_set_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_ENDPOINT, "http://mirror.example/prices.csv")
    assert pricing_endpoint() == "http://mirror.example/prices.csv"
    monkeypatch.delenv(ENV_ENDPOINT)
    assert pricing_endpoint().startswith("https://")


def test_fetches_the_regions_prices_from_the_table(gce: FakeGCE) -> None:
    routes = catalog_routes(gce)
    routes.csv = price_csv(
        [("n2-standard-2", REGION, 0.1, 0.03), ("n2-standard-2", "us-east1", 0.2, 0.05)]
    )
    assert fetch_prices(REGION, endpoint=routes.prices_url) == (
        {"n2-standard-2": 0.1},
        {"n2-standard-2": 0.03},
    )
    assert fetch_prices("asia-east1", endpoint=routes.prices_url) == ({}, {})


def test_an_error_status_is_a_pricing_error(gce: FakeGCE) -> None:
    routes = catalog_routes(gce)  # no table: 404
    with pytest.raises(PricingError, match="404"):
        fetch_prices(REGION, endpoint=routes.prices_url)


def test_starts_from_the_bundled_snapshot_without_calling_out(gce: FakeGCE) -> None:
    routes = catalog_routes(gce)
    snap = catalogue.load_snapshot("us-central1")
    provider = PricingProvider(
        "us-central1", clock=VirtualClock(), fetch=False, endpoint=routes.prices_url
    )
    name = "n2-standard-4"
    assert provider.on_demand(name) == snap.on_demand[name]
    assert provider.spot(name) == snap.spot[name]
    assert provider.instance_types() == frozenset(snap.on_demand)
    assert provider.refresh() is False
    assert gce.requests_to("GET", PRICES_PATH) == []


def test_a_region_without_a_snapshot_uses_the_all_regions_table() -> None:
    others = sorted(set(catalogue.PRICE_REGIONS) - set(catalogue.REGIONS))
    assert others
    table = catalogue.bundled_prices(others[0])
    assert table is not None and table.on_demand
    provider = PricingProvider(others[0], clock=VirtualClock(), fetch=False)
    name = next(iter(table.on_demand))
    assert provider.on_demand(name) == table.on_demand[name]


def test_an_unknown_region_starts_without_prices() -> None:
    assert catalogue.bundled_prices("antarctica-east1") is None
    provider = PricingProvider("antarctica-east1", clock=VirtualClock(), fetch=False)
    assert provider.on_demand("n2-standard-4") is None
    assert provider.spot("n2-standard-4") is None


def test_refresh_replaces_prices_and_spot_defaults_to_a_fraction_of_on_demand(
    gce: FakeGCE,
) -> None:
    routes = catalog_routes(gce)
    routes.csv = price_csv([("n2-standard-4", REGION, 0.5, 0.2), ("e2-medium", REGION, 0.04, None)])
    clock = VirtualClock()
    provider = PricingProvider(REGION, clock=clock, endpoint=routes.prices_url)
    before = provider.version
    assert provider.refresh() is True
    assert provider.version == before + 1
    assert provider.source == "live"
    assert provider.updated_at == clock.now()
    assert provider.on_demand("n2-standard-4") == 0.5
    assert provider.spot("n2-standard-4") == 0.2
    assert provider.spot("e2-medium") == pytest.approx(0.04 * SPOT_FRACTION)
    # A type the table no longer lists has no price any more.
    assert provider.on_demand("n2-standard-8") is None
    # The same table again changes nothing.
    assert provider.refresh() is True
    assert provider.version == before + 1


def test_a_failed_refresh_keeps_the_prices_in_use(gce: FakeGCE) -> None:
    routes = catalog_routes(gce)
    provider = PricingProvider(REGION, clock=VirtualClock(), endpoint=routes.prices_url)
    bundled = provider.on_demand("n2-standard-4")
    assert bundled is not None
    assert provider.refresh() is False  # 404
    assert provider.last_error and "404" in provider.last_error
    assert provider.on_demand("n2-standard-4") == bundled
    routes.csv = price_csv([("n2-standard-4", "us-east1", 0.3, 0.1)])  # not our region
    assert provider.refresh() is False
    assert provider.on_demand("n2-standard-4") == bundled
    assert provider.source == "snapshot"
