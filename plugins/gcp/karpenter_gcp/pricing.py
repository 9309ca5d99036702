"""Machine-type prices: the bundled ones, refreshed from the price table upstream reads.

Karpenter launches the cheapest offering that fits, so every offering needs a price.
Upstream (``pkg/providers/pricing``) does not call the Cloud Billing catalog API: it
starts from its bundled ``initial-prices.json`` and every 12 hours downloads
gcloud-compute.com's public ``machine-types-regions.csv`` (one row per machine type and
region; columns ``name``, ``region``, ``hour`` = on-demand USD/hour, ``hourSpot`` =
spot USD/hour, matched case-insensitively), keeping the rows of its region with a
non-zero on-demand price. GCE prices are regional, so a zone does not change a price.
A spot price it does not know is 40 % of the on-demand price. A failed refresh keeps
the previous prices.

:class:`PricingProvider` does the same, seeded from the bundled snapshot
(:func:`karpenter_gcp.catalogue.bundled_prices`). One difference: upstream drops its
bundled spot prices at start and prices spot at 40 % of on-demand until the first
refresh; the bundled spot prices are used here (they are the same published prices,
only older). A region without bundled prices starts empty, so its types have no
offerings until a refresh succeeds (upstream refuses to start there).

The CSV's location can be changed (a mirror, or the tests' fake server) with the
``GCP_PRICING_CSV_ENDPOINT`` environment variable or the ``endpoint`` argument.
"""

from __future__ import annotations

import csv
import io
import logging
import math
import os
import threading
from collections.abc import Callable
from datetime import datetime

import requests

from karpenter_core.plugin_api import Clock
from karpenter_gcp import catalogue

__all__ = [
    "DEFAULT_ENDPOINT",
    "ENV_ENDPOINT",
    "PRICING_UPDATE_PERIOD",
    "SPOT_FRACTION",
    "PricingError",
    "PricingProvider",
    "fetch_prices",
    "prices_from_csv",
    "pricing_endpoint",
]

log = logging.getLogger("karpenter.gcp.pricing")

DEFAULT_ENDPOINT = "https://gcloud-compute.com/machine-types-regions.csv"
ENV_ENDPOINT = "GCP_PRICING_CSV_ENDPOINT"
"""Environment variable overriding :data:`DEFAULT_ENDPOINT`."""
PRICING_UPDATE_PERIOD = 12 * 60 * 60.0
"""Seconds between refreshes (upstream: 12 hours)."""
SPOT_FRACTION = 0.4
"""Spot price of a type without a known spot price, as a fraction of on-demand."""

_TIMEOUT = 30.0
_COLUMNS = {"name": "name", "region": "region", "hour": "on_demand", "hourspot": "spot"}

Prices = tuple[dict[str, float], dict[str, float]]


class PricingError(RuntimeError):
    """Prices could not be read (the message says where and why)."""


def pricing_endpoint() -> str:
    """The price table's URL: ``$GCP_PRICING_CSV_ENDPOINT`` or gcloud-compute.com's."""
    return os.environ.get(ENV_ENDPOINT, "").strip() or DEFAULT_ENDPOINT


def _price(value: str) -> float | None:
    try:
        price = float(value)
    except ValueError:
        return None
    return price if math.isfinite(price) and price > 0 else None


def prices_from_csv(text: str) -> dict[str, Prices]:
    """region -> (on-demand, spot) USD/hour by machine type from the CSV's text. Rows
    without a positive on-demand price are skipped (spot is kept only when positive).
    Raises :class:`PricingError` when a required column is missing."""
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None:
        raise PricingError("price table is empty")
    index = {}
    for i, title in enumerate(header):
        key = _COLUMNS.get(title.strip().lower())
        if key is not None and key not in index:
            index[key] = i
    missing = [
        k for k in ("name", "region", "hour", "hourSpot") if _COLUMNS[k.lower()] not in index
    ]
    if missing:
        raise PricingError(
            f"price table lacks the column(s) {', '.join(missing)} (header: {header[:12]})"
        )
    width = max(index.values())
    out: dict[str, Prices] = {}
    for row in reader:
        if len(row) <= width:
            continue
        on_demand = _price(row[index["on_demand"]])
        if on_demand is None:
            continue
        name, region = row[index["name"]], row[index["region"]]
        od, spot = out.setdefault(region, ({}, {}))
        od[name] = on_demand
        spot_price = _price(row[index["spot"]])
        if spot_price is not None:
            spot[name] = spot_price
    return out


def fetch_prices(
    region: str,
    *,
    endpoint: str | None = None,
    session: requests.Session | None = None,
    timeout: float = _TIMEOUT,
) -> Prices:
    """(on-demand, spot) USD/hour of ``region`` from the price table at ``endpoint``.

    Raises :class:`PricingError` on a transport error, a non-200 status or a table
    without the required columns. A region the table does not list gives empty tables.
    """
    url = endpoint or pricing_endpoint()
    http = session or requests.Session()
    try:
        response = http.get(url, timeout=timeout)
    except requests.RequestException as err:
        raise PricingError(f"price table {url}: {type(err).__name__}: {err}") from err
    finally:
        if session is None:
            http.close()
    if response.status_code != 200:
        raise PricingError(f"price table {url}: HTTP {response.status_code}")
    on_demand, spot = prices_from_csv(response.text).get(region, ({}, {}))
    return on_demand, spot


class PricingProvider:
    """A region's on-demand and spot prices: the bundled ones, then live ones.

    ``fetch=False`` never calls out (the offline catalogue commands); with
    ``fetch=True`` :meth:`refresh` reads the price table and, when that fails for any
    reason, keeps the prices it had (the snapshot's, at first) and says so once.
    Thread-safe.
    """

    def __init__(
        self,
        region: str,
        *,
        clock: Clock,
        fetch: bool = True,
        endpoint: str | None = None,
        session: requests.Session | None = None,
        fetcher: Callable[[str], Prices] | None = None,
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
            log.warning("no bundled prices for %s; types are unpriced until a refresh", region)
        self._on_demand: dict[str, float] = dict(table.on_demand) if table else {}
        self._spot: dict[str, float] = dict(table.spot) if table else {}
        self.updated_at: datetime | None = table.generated_at if table else None
        self.source = "snapshot" if table else "none"
        self.last_error: str | None = None
        """Why the last refresh failed; None after a successful one (or none yet)."""

    @property
    def version(self) -> int:
        """Grows whenever prices change (cached offerings are then stale)."""
        return self._version

    def on_demand(self, machine_type: str) -> float | None:
        """On-demand USD/hour of ``machine_type``; None when unknown."""
        return self._on_demand.get(machine_type)

    def spot(self, machine_type: str) -> float | None:
        """Spot USD/hour of ``machine_type`` (40 % of on-demand when no spot price is
        known); None when neither is known."""
        price = self._spot.get(machine_type)
        if price is not None:
            return price
        on_demand = self._on_demand.get(machine_type)
        return on_demand * SPOT_FRACTION if on_demand is not None else None

    def instance_types(self) -> frozenset[str]:
        """Every machine type with an on-demand price."""
        return frozenset(self._on_demand)

    def _fetch(self) -> Prices:
        if self._fetcher is not None:
            return self._fetcher(self.region)
        return fetch_prices(self.region, endpoint=self.endpoint, session=self._session)

    def refresh(self) -> bool:
        """Fetch current prices; True when they came from the price table.

        On any failure (unreachable, an error status, a malformed table, no prices for
        the region) the prices in use stay; the first failure is logged as a warning,
        later ones at debug until one succeeds again.
        """
        if not self.fetch:
            return False
        try:
            on_demand, spot = self._fetch()
            if not on_demand:
                raise PricingError(f"the price table has no prices for {self.region}")
        except Exception as err:  # any failure means "keep what we have"
            message = " ".join(str(err).split())[:300] or type(err).__name__
            self.last_error = message
            if not self._failure_logged:
                self._failure_logged = True
                log.warning(
                    "pricing refresh for %s failed, using %s prices from %s: %s",
                    self.region,
                    self.source,
                    self.updated_at.isoformat() if self.updated_at else "-",
                    message,
                )
            else:
                log.debug("pricing refresh for %s failed again: %s", self.region, message)
            return False
        with self._lock:
            changed = on_demand != self._on_demand or spot != self._spot
            self._on_demand = dict(on_demand)
            self._spot = dict(spot)
            self.updated_at = self._clock.now()
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
