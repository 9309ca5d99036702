"""Retail prices (karpenter_azure.pricing): the API's filter and paging against the fake
ARM's prices endpoint, spot vs on-demand, and falling back to the bundled snapshot."""

from __future__ import annotations

import logging

import pytest
from fakearm import FakeARM
from fakearm_catalog import PRICES_PATH, authorized_session, catalog_routes, price_item
from karpenter_azure import catalogue
from karpenter_azure.pricing import (
    DEFAULT_ENDPOINT,
    ENV_ENDPOINT,
    PricingError,
    PricingProvider,
    fetch_prices,
    price_filter,
    prices_from_pages,
    pricing_endpoint,
)

from karpenter_core.plugin_api import VirtualClock

REGION = "southcentralus"


def _live_items() -> list[dict[str, object]]:
    return [
        price_item("Standard_D2s_v3", 0.5, region=REGION),
        price_item("Standard_D2s_v3", 0.05, region=REGION, spot=True),
        price_item("Standard_D2s_v3", 9.0, region=REGION, windows=True),
        price_item("Standard_D2s_v3", 0.01, region=REGION, low_priority=True),
        price_item("Standard_D4s_v3", 1.0, region=REGION),
        price_item("Standard_D4s_v3", 0.1, region=REGION, spot=True),
        price_item("Standard_E4d_v5", 2.0, region=REGION),
        price_item("Standard_D2s_v3", 7.0, region="eastus"),
    ]


def test_the_filter_asks_for_the_regions_usd_vm_consumption_prices() -> None:
    assert price_filter("westus2") == (
        "priceType eq 'Consumption' and currencyCode eq 'USD' and serviceFamily eq "
        "'Compute' and serviceName eq 'Virtual Machines' and armRegionName eq 'westus2'"
    )


def test_the_endpoint_can_be_overridden_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_ENDPOINT, raising=False)
    assert pricing_endpoint() == DEFAULT_ENDPOINT
    monkeypatch.setenv(ENV_ENDPOINT, "https://prices.example/api/retail/prices")
    assert pricing_endpoint() == "https://prices.example/api/retail/prices"
    provider = PricingProvider(REGION, clock=VirtualClock(), fetch=False)
    assert provider.endpoint == "https://prices.example/api/retail/prices"


def test_fetch_follows_next_page_links_and_sorts_spot_from_on_demand(arm_env: FakeARM) -> None:
    routes = catalog_routes(arm_env)
    routes.prices.extend(_live_items())
    routes.price_page_size = 2
    on_demand, spot = fetch_prices(
        REGION, endpoint=routes.prices_endpoint, session=authorized_session(arm_env)
    )
    assert on_demand == {"Standard_D2s_v3": 0.5, "Standard_D4s_v3": 1.0, "Standard_E4d_v5": 2.0}
    assert spot == {"Standard_D2s_v3": 0.05, "Standard_D4s_v3": 0.1}
    assert routes.price_filters == [price_filter(REGION)]
    assert len(arm_env.requests_to("GET", PRICES_PATH)) == 4  # 7 items of the region, 2 a page


def test_the_newest_effective_price_wins() -> None:
    pages = [
        {"Items": [price_item("Standard_D2s_v3", 0.2, effective="2026-03-01T00:00:00Z")]},
        {"Items": [price_item("Standard_D2s_v3", 0.1, effective="2025-01-01T00:00:00Z")]},
    ]
    assert prices_from_pages(pages) == ({"Standard_D2s_v3": 0.2}, {})
    with pytest.raises(PricingError, match="page 1"):
        prices_from_pages([{"items": []}])


def test_fetch_fails_clearly_on_an_error_status(arm_env: FakeARM) -> None:
    routes = catalog_routes(arm_env)
    routes.prices.extend(_live_items())
    arm_env.fail_next("GET", PRICES_PATH, status=503, code="ServiceUnavailable")
    with pytest.raises(PricingError, match="status 503"):
        fetch_prices(REGION, endpoint=routes.prices_endpoint, session=authorized_session(arm_env))


def test_the_provider_starts_from_the_bundled_snapshot_with_spot_at_on_demand() -> None:
    snap = catalogue.load_snapshot(REGION)
    provider = PricingProvider(REGION, clock=VirtualClock(), fetch=False)
    name = "Standard_D2s_v3"
    assert provider.on_demand(name) == snap.on_demand[name]
    assert provider.spot(name) == snap.on_demand[name]
    assert provider.on_demand("Standard_Nonexistent_v9") is None
    assert provider.source == "snapshot"
    assert provider.on_demand_updated_at == snap.generated_at
    assert provider.refresh() is False  # fetch=False never calls out


def test_a_region_without_bundled_prices_borrows_eastus() -> None:
    eastus = catalogue.bundled_prices("eastus")
    assert eastus is not None
    provider = PricingProvider("mars-north", clock=VirtualClock(), fetch=False)
    assert provider.source == "borrowed"
    name = next(iter(sorted(eastus.on_demand)))
    assert provider.on_demand(name) == eastus.on_demand[name]


def test_refresh_replaces_snapshot_prices_with_live_ones(arm_env: FakeARM) -> None:
    routes = catalog_routes(arm_env)
    routes.prices.extend(_live_items())
    clock = VirtualClock()
    provider = PricingProvider(
        REGION, clock=clock, endpoint=routes.prices_endpoint, session=authorized_session(arm_env)
    )
    version = provider.version
    assert provider.refresh() is True
    assert provider.on_demand("Standard_D2s_v3") == 0.5
    assert provider.spot("Standard_D2s_v3") == 0.05
    assert provider.spot("Standard_E4d_v5") is None  # no spot meter: not spot-priced
    assert provider.version > version
    assert provider.source == "live"
    assert provider.on_demand_updated_at == clock.now()


def test_refresh_failures_keep_the_snapshot_and_are_logged_once(
    arm_env: FakeARM, caplog: pytest.LogCaptureFixture
) -> None:
    routes = catalog_routes(arm_env)
    snap = catalogue.load_snapshot(REGION)
    provider = PricingProvider(
        REGION,
        clock=VirtualClock(),
        endpoint=routes.prices_endpoint,
        session=authorized_session(arm_env),
    )
    arm_env.fail_next("GET", PRICES_PATH, status=500, times=2)
    with caplog.at_level(logging.DEBUG, logger="karpenter.azure.pricing"):
        assert provider.refresh() is False
        assert provider.refresh() is False
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "status 500" in warnings[0].getMessage()
    assert provider.on_demand("Standard_D2s_v3") == snap.on_demand["Standard_D2s_v3"]
    assert provider.last_error is not None and "status 500" in provider.last_error
    # an empty answer is a failure too: prices are never wiped
    assert provider.refresh() is False
    assert provider.on_demand("Standard_D2s_v3") == snap.on_demand["Standard_D2s_v3"]


def test_refresh_falls_back_when_the_endpoint_is_unreachable() -> None:
    provider = PricingProvider(
        REGION, clock=VirtualClock(), endpoint="https://127.0.0.1:9/api/retail/prices"
    )
    assert provider.refresh() is False
    assert provider.last_error and "retail prices API" in provider.last_error
    assert provider.on_demand("Standard_D2s_v3") is not None
