"""VM prices from Azure's retail prices API, with the bundled snapshot as the fallback.

Karpenter launches the cheapest offering that fits, so every offering needs a price.
Upstream (``pkg/providers/pricing``) starts from a generated table, then asks the public,
unauthenticated retail prices API (``https://prices.azure.com/api/retail/prices``) every
12 hours for the region's ``Virtual Machines`` consumption prices in USD, following
``NextPageLink`` page by page. An item whose ``skuName`` ends in `` Spot`` is a spot
price, other items on-demand, keyed by ``armSkuName``; Windows products and the
retired `` Low Priority`` meters are skipped. Until the first spot refresh, spot prices
are the on-demand ones. A failed refresh keeps the previous prices.

:class:`PricingProvider` does the same, seeded from the bundled snapshot
(:func:`karpenter_azure.catalogue.bundled_prices`; a region without bundled prices
borrows ``eastus``'s, as upstream). The endpoint can be pointed elsewhere (a proxy, or
the tests' fake server) with the ``AZURE_RETAIL_PRICES_ENDPOINT`` environment variable
or the ``endpoint`` argument.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

import requests

from karpenter_azure import catalogue
from karpenter_core.plugin_api import Clock

__all__ = [
    "API_VERSION",
    "DEFAULT_ENDPOINT",
    "DEFAULT_REGION",
    "ENV_ENDPOINT",
    "MISSING_PRICE",
    "PRICING_UPDATE_PERIOD",
    "PricingError",
    "PricingProvider",
    "fetch_prices",
    "price_filter",
    "prices_from_pages",
    "pricing_endpoint",
]

log = logging.getLogger("karpenter.azure.pricing")

DEFAULT_ENDPOINT = "https://prices.azure.com/api/retail/prices"
API_VERSION = "2023-01-01-preview"
ENV_ENDPOINT = "AZURE_RETAIL_PRICES_ENDPOINT"
"""Environment variable overriding :data:`DEFAULT_ENDPOINT` (no query string)."""
DEFAULT_REGION = "eastus"
"""Whose bundled prices a region without its own borrows (upstream's choice)."""
MISSING_PRICE = 999.0
"""What an offering without a known price costs: launched only when nothing else fits
(upstream's ``MissingPrice``)."""
PRICING_UPDATE_PERIOD = 12 * 60 * 60.0
"""Seconds between refreshes (upstream: 12 hours)."""

_MAX_PAGES = 10_000
_TIMEOUT = 30.0


class PricingError(RuntimeError):
    """Prices could not be read (the message says where and why)."""


def pricing_endpoint() -> str:
    """The retail prices endpoint: ``$AZURE_RETAIL_PRICES_ENDPOINT`` or Azure's."""
    return os.environ.get(ENV_ENDPOINT, "").strip() or DEFAULT_ENDPOINT


def price_filter(region: str) -> str:
    """The OData ``$filter`` for a region's VM consumption prices in USD."""
    terms = (
        ("priceType", "Consumption"),
        ("currencyCode", "USD"),
        ("serviceFamily", "Compute"),
        ("serviceName", "Virtual Machines"),
        ("armRegionName", region),
    )
    return " and ".join(f"{field} eq '{value}'" for field, value in terms)


def _first_url(endpoint: str, region: str) -> str:
    query = urlencode({"api-version": API_VERSION, "$filter": price_filter(region)})
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"


class _Collector:
    """Prices from price items: spot or on-demand by SKU name, newest effective date wins."""

    def __init__(self, region: str | None) -> None:
        self.region = region
        self.on_demand: dict[str, tuple[str, float]] = {}
        self.spot: dict[str, tuple[str, float]] = {}

    def add(self, items: Any) -> None:
        for item in items if isinstance(items, list) else ():
            if not isinstance(item, Mapping):
                continue
            if str(item.get("productName", "")).endswith(" Windows"):
                continue
            if str(item.get("meterName", "")).endswith(" Low Priority"):
                continue  # retired Batch low-priority meters, not spot
            if self.region and item.get("armRegionName") not in (None, self.region):
                continue
            name = item.get("armSkuName")
            price = item.get("retailPrice")
            if not isinstance(name, str) or not name:
                continue
            if isinstance(price, bool) or not isinstance(price, int | float):
                continue
            if not math.isfinite(price) or price < 0:
                continue
            table = self.spot if str(item.get("skuName", "")).endswith(" Spot") else self.on_demand
            effective = str(item.get("effectiveStartDate", ""))
            known = table.get(name)
            if known is None or effective >= known[0]:
                table[name] = (effective, float(price))

    def result(self) -> tuple[dict[str, float], dict[str, float]]:
        return (
            {k: v for k, (_, v) in self.on_demand.items()},
            {k: v for k, (_, v) in self.spot.items()},
        )


def prices_from_pages(
    pages: Iterable[Any], *, region: str | None = None
) -> tuple[dict[str, float], dict[str, float]]:
    """(on-demand, spot) USD/hour by ARM SKU name from retail prices API pages
    (``{"Items": [...], "NextPageLink": ...}``), e.g. saved with ``curl``. Raises
    :class:`PricingError` when a page is not such an object."""
    collector = _Collector(region)
    for i, page in enumerate(pages):
        if not isinstance(page, Mapping) or not isinstance(page.get("Items"), list):
            raise PricingError(f"price page {i + 1} is not a retail prices page (no Items list)")
        collector.add(page["Items"])
    return collector.result()


def fetch_prices(
    region: str,
    *,
    endpoint: str | None = None,
    session: requests.Session | None = None,
    timeout: float = _TIMEOUT,
) -> tuple[dict[str, float], dict[str, float]]:
    """(on-demand, spot) USD/hour of ``region`` from the retail prices API, every page.

    Raises :class:`PricingError` on a transport error, a non-200 status, a body that is
    not a prices page, or a paging loop.
    """
    if session is None:
        with requests.Session() as own:
            return fetch_prices(region, endpoint=endpoint, session=own, timeout=timeout)
    http = session
    url: str | None = _first_url(endpoint or pricing_endpoint(), region)
    seen: set[str] = set()
    collector = _Collector(region)
    pages = 0
    while url:
        if url in seen or pages >= _MAX_PAGES:
            raise PricingError(f"retail prices API: paging does not end (at {url})")
        seen.add(url)
        pages += 1
        try:
            response = http.get(url, timeout=timeout)
        except requests.RequestException as err:
            raise PricingError(f"retail prices API: {type(err).__name__}: {err}") from err
        if response.status_code != 200:
            raise PricingError(f"retail prices API: status {response.status_code} for page {pages}")
        try:
            page = response.json()
        except ValueError:
            raise PricingError(f"retail prices API: page {pages} is not JSON") from None
        if not isinstance(page, Mapping) or not isinstance(page.get("Items"), list):
            raise PricingError(f"retail prices API: page {pages} has no Items list")
        collector.add(page["Items"])
        link = page.get("NextPageLink")
        url = link if isinstance(link, str) and link else None
    return collector.result()


class PricingProvider:
    """A region's on-demand and spot prices: the bundled ones, then live ones.

    ``fetch=False`` never calls the API (the offline catalogue commands); with
    ``fetch=True`` :meth:`refresh` asks the API and, when that fails for any reason,
    keeps the prices it had (the snapshot's, at first) and says so once. Thread-safe.
    """

    def __init__(
        self,
        region: str,
        *,
        clock: Clock,
        endpoint: str | None = None,
        fetch: bool = True,
        session: requests.Session | None = None,
        fetcher: Callable[[str], tuple[dict[str, float], dict[str, float]]] | None = None,
    ) -> None:
        self.region = region
        self._clock = clock
        self.endpoint = endpoint or pricing_endpoint()
        self.fetch = fetch
        self._session = session
        self._fetcher = fetcher
        self._lock = threading.Lock()
        self._version = 0
        self._failure_logged = False
        table = catalogue.bundled_prices(region)
        if table is None:
            table = catalogue.bundled_prices(DEFAULT_REGION)
            log.info("no bundled prices for %s; starting from %s's", region, DEFAULT_REGION)
        self._on_demand: dict[str, float] = dict(table.on_demand) if table else {}
        # Spot is priced as on-demand until a spot table exists (upstream's start).
        self._spot: dict[str, float] = dict(table.spot) if table and table.spot else {}
        self._spot_from_on_demand = not self._spot
        self.on_demand_updated_at: datetime | None = table.generated_at if table else None
        self.spot_updated_at: datetime | None = table.generated_at if table else None
        self.source = "snapshot" if table and table.region == region else "borrowed"
        self.last_error: str | None = None
        """Why the last refresh failed; None after a successful one (or none yet)."""

    # --- reading --------------------------------------------------------------------------

    @property
    def version(self) -> int:
        """Grows whenever prices change (cached offerings are then stale)."""
        return self._version

    def on_demand(self, sku: str) -> float | None:
        """On-demand USD/hour of the VM size ``sku``; None when unknown."""
        return self._on_demand.get(sku)

    def spot(self, sku: str) -> float | None:
        """Spot USD/hour of ``sku`` (its on-demand price until spot prices are known);
        None when unknown."""
        if self._spot_from_on_demand:
            return self._on_demand.get(sku)
        return self._spot.get(sku)

    def instance_types(self) -> frozenset[str]:
        """Every SKU some price is known for."""
        return frozenset(self._on_demand) | frozenset(self._spot)

    # --- refreshing -----------------------------------------------------------------------

    def _fetch(self) -> tuple[dict[str, float], dict[str, float]]:
        if self._fetcher is not None:
            return self._fetcher(self.region)
        return fetch_prices(self.region, endpoint=self.endpoint, session=self._session)

    def refresh(self) -> bool:
        """Fetch current prices; True when they came from the API.

        On any failure (unreachable, an error status, a malformed page, no prices at all)
        the prices in use stay (the bundled ones until a refresh succeeds); the first
        failure is logged as a warning, later ones at debug until one succeeds again.
        """
        if not self.fetch:
            return False
        try:
            on_demand, spot = self._fetch()
            if not on_demand:
                raise PricingError(
                    f"retail prices API returned no on-demand prices for {self.region}"
                )
        except Exception as err:  # any failure means "keep what we have"
            message = " ".join(str(err).split())[:300] or type(err).__name__
            self.last_error = message
            if not self._failure_logged:
                self._failure_logged = True
                log.warning(
                    "pricing refresh for %s failed, using %s prices from %s: %s",
                    self.region,
                    self.source,
                    self.on_demand_updated_at.isoformat() if self.on_demand_updated_at else "-",
                    message,
                )
            else:
                log.debug("pricing refresh for %s failed again: %s", self.region, message)
            return False
        now = self._clock.now()
        with self._lock:
            changed = on_demand != self._on_demand
            self._on_demand = on_demand
            self.on_demand_updated_at = now
            if spot:
                changed = changed or spot != self._spot or self._spot_from_on_demand
                self._spot = spot
                self._spot_from_on_demand = False
                self.spot_updated_at = now
            else:
                log.warning("no spot prices for %s, keeping the previous ones", self.region)
            self.source = "live"
            self.last_error = None
            self._failure_logged = False
            if changed:
                self._version += 1
        if changed:
            log.info(
                "updated pricing for %s: %d on-demand, %d spot prices",
                self.region,
                len(on_demand),
                len(spot),
            )
        return True
