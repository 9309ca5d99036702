"""On-demand and spot prices of EC2 instance types (upstream ``pkg/providers/pricing``).

Karpenter orders launches and consolidation by price, and an offering without a price is
never launched (upstream's ``hasPrice``). Prices come from:

- the bundled table (:mod:`karpenter_aws.catalogue`): the region's on-demand prices, or
  us-east-1's for a region without its own, as upstream seeds from its generated tables.
  This is what a provider without AWS access (``karpenter instance-types``/``schedule``)
  prices with, and what ``serve`` keeps when the pricing API is unreachable (said once);
- the ``price-list-file`` setting, a JSON object ``{"m5.large": 0.096, ...}`` of on-demand
  USD/hour, read once over the bundled seed (its prices win). A file that cannot be used
  is reported once, clearly, and ignored;
- the AWS Price List API (``pricing:GetProducts``), Linux, shared tenancy, on-demand, in
  two passes (``Compute Instance`` shared, ``Compute Instance (bare metal)`` dedicated);
  prices it returns replace the seed's, types it does not know keep theirs. Skipped in
  an isolated VPC (``isolated-vpc``) and in GovCloud, where the API is unreachable;
- ``DescribeSpotPriceHistory`` for spot, per type and zone. Until the first spot refresh
  a type's spot price is its on-demand price (so spot is usable from the start); after
  it, a type/zone without a spot price has none.

``version`` grows with every change so caches of priced offerings know to rebuild.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from karpenter_aws.clients import AWSClients
from karpenter_aws.settings import AWSSettings
from karpenter_core.plugin_api import Clock, format_time

__all__ = [
    "SPOT_PRODUCT_DESCRIPTIONS",
    "PriceListError",
    "PricingError",
    "PricingProvider",
    "describe_error",
    "fetch_on_demand",
    "load_price_list",
    "on_demand_filters",
    "parse_price_item",
]

log = logging.getLogger("karpenter.aws.pricing")

SPOT_PRODUCT_DESCRIPTIONS = ("Linux/UNIX", "Linux/UNIX (Amazon VPC)")


class PriceListError(ValueError):
    """The ``price-list-file`` cannot be used; the message names the file and the problem."""


class PricingError(RuntimeError):
    """A price refresh failed; the previous prices stay in use."""


def load_price_list(path: str | Path) -> dict[str, float]:
    """Read a price-list file: a JSON object of instance type -> on-demand USD/hour.

    Raises :class:`PriceListError` naming the file and what is wrong with it (missing,
    unreadable, not JSON, not an object, a price that is not a non-negative number).
    """
    where = f"price-list-file {str(path)!r}"
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise PriceListError(f"{where}: cannot be read: {err.strerror or err}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise PriceListError(
            f"{where}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})"
        ) from None
    if not isinstance(data, dict):
        raise PriceListError(
            f'{where}: expected a JSON object like {{"m5.large": 0.096}}, got {type(data).__name__}'
        )
    prices: dict[str, float] = {}
    for name, price in data.items():
        if not name:
            raise PriceListError(f"{where}: an instance type name is empty")
        if isinstance(price, bool) or not isinstance(price, int | float):
            raise PriceListError(f"{where}: {name}: price must be a number, got {price!r}")
        if not math.isfinite(price) or price < 0:
            raise PriceListError(
                f"{where}: {name}: price must be a finite non-negative number, got {price!r}"
            )
        prices[name] = float(price)
    return prices


def on_demand_filters(region: str, tenancy: str, product_family: str) -> list[dict[str, str]]:
    """The GetProducts filters for one pass (Linux, no pre-installed software, used
    capacity, on-demand) in ``region``."""
    fields = (
        ("regionCode", region),
        ("serviceCode", "AmazonEC2"),
        ("preInstalledSw", "NA"),
        ("operatingSystem", "Linux"),
        ("capacitystatus", "Used"),
        ("marketoption", "OnDemand"),
        ("tenancy", tenancy),
        ("productFamily", product_family),
    )
    return [{"Type": "TERM_MATCH", "Field": f, "Value": v} for f, v in fields]


_ON_DEMAND_PASSES = (("Shared", "Compute Instance"), ("Dedicated", "Compute Instance (bare metal)"))


def describe_error(err: Exception) -> str:
    """A one-line account of a boto3/botocore error: ``Code: message`` when AWS sent one.

    Bodies that are HTML pages (a proxy's, or a mock's 404/500) are not repeated: they
    would flood the log without saying more than the status code.
    """
    response = getattr(err, "response", None)
    if isinstance(response, Mapping):
        error = response.get("Error") or {}
        code = str(error.get("Code") or "")
        message = " ".join(str(error.get("Message") or "").split())
        if message.startswith("<"):
            message = "the endpoint answered with an HTML error page"
        if len(message) > 300:
            message = message[:297] + "..."
        if code:
            return f"{code}: {message}" if message else code
    return " ".join(str(err).split())[:300] or type(err).__name__


def parse_price_item(raw: Any, currency: str) -> tuple[str, float] | None:
    """(instance type, price) from one GetProducts PriceList entry, None when it has none."""
    try:
        item = json.loads(raw) if isinstance(raw, str | bytes) else raw
    except (TypeError, ValueError):
        log.debug("skipping a price list entry that is not JSON")
        return None
    if not isinstance(item, Mapping):
        return None
    attributes = (item.get("product") or {}).get("attributes") or {}
    instance_type = attributes.get("instanceType") if isinstance(attributes, Mapping) else None
    if not instance_type:
        return None
    found: float | None = None
    terms = (item.get("terms") or {}).get("OnDemand") or {}
    for term in terms.values() if isinstance(terms, Mapping) else ():
        dimensions = term.get("priceDimensions") if isinstance(term, Mapping) else None
        for dimension in dimensions.values() if isinstance(dimensions, Mapping) else ():
            per_unit = dimension.get("pricePerUnit") if isinstance(dimension, Mapping) else None
            value = per_unit.get(currency) if isinstance(per_unit, Mapping) else None
            try:
                price = float(value) if value is not None else 0.0
            except (TypeError, ValueError):
                continue
            if price > 0 and math.isfinite(price):
                found = price
    return (str(instance_type), found) if found is not None else None


def _fetch_pass(pricing: Any, filters: list[dict[str, str]], currency: str) -> dict[str, float]:
    prices: dict[str, float] = {}
    try:
        pages = pricing.get_paginator("get_products").paginate(
            ServiceCode="AmazonEC2", Filters=filters, PaginationConfig={"PageSize": 100}
        )
        for page in pages:
            for raw in page.get("PriceList", []):
                parsed = parse_price_item(raw, currency)
                if parsed is not None:
                    prices[parsed[0]] = parsed[1]
    except Exception as err:  # botocore raises many kinds; all mean "no prices now"
        raise PricingError(f"getting on-demand pricing data: {describe_error(err)}") from err
    return prices


def fetch_on_demand(pricing: Any, region: str) -> dict[str, float]:
    """``region``'s on-demand prices from the pricing API client ``pricing``, both passes
    (shared instances, bare metal). Raises :class:`PricingError` when a pass fails or
    finds nothing."""
    currency = "CNY" if region.startswith("cn-") else "USD"
    fetched: dict[str, float] = {}
    for tenancy, family in _ON_DEMAND_PASSES:
        found = _fetch_pass(pricing, on_demand_filters(region, tenancy, family), currency)
        if not found:
            raise PricingError(f"no on-demand pricing found for {region} ({tenancy} {family})")
        fetched.update(found)
    return fetched


class PricingProvider:
    """Current prices, refreshed by :meth:`refresh_on_demand` / :meth:`refresh_spot`.

    Thread-safe: readers see either the old or the new table, never half of one.
    ``bundled=False`` starts from no prices at all (the price-list file only): for tests
    of the API paths alone.
    """

    def __init__(
        self,
        clients: AWSClients,
        settings: AWSSettings,
        clock: Clock,
        *,
        bundled: bool = True,
    ) -> None:
        from karpenter_aws.catalogue import initial_prices, is_offline

        self._clients = clients
        self._settings = settings
        self._clock = clock
        self._region = clients.region
        self._offline = is_offline(clients)
        self._lock = threading.Lock()
        self._on_demand: dict[str, float] = {}
        self._spot: dict[str, dict[str, float]] = {}
        self._spot_updated = False
        self._version = 0
        self._skip_logged = False
        self._bundled_said = False
        self._fetched = False
        self.seed: str = ""
        """Where the starting prices came from ("" for none): the bundled table, said in
        the once-only message when the pricing API cannot be reached."""
        self.price_list_error: str | None = None
        """Why the price-list file was ignored, None when it was used (or not set)."""
        table = initial_prices(self._region) if bundled else None
        if table is not None:
            self._on_demand = dict(table.on_demand)
            self.seed = (
                f"the bundled {table.region} prices of {format_time(table.generated_at)}"
                + (
                    ""
                    if table.region == self._region
                    else f" (none are bundled for {self._region})"
                )
            )
        if settings.price_list_file:
            try:
                listed = load_price_list(settings.price_list_file)
            except PriceListError as err:
                self.price_list_error = str(err)
                log.error("%s; starting without its prices", err)
            else:
                self._on_demand.update(listed)
                self.seed = (self.seed + " and " if self.seed else "") + (
                    f"price-list-file {settings.price_list_file}"
                )
                log.info(
                    "loaded %d on-demand prices from %s",
                    len(listed),
                    settings.price_list_file,
                )

    def _say_bundled_once(self) -> None:
        """The pricing API failed: say once which prices stand in (upstream keeps its
        static table the same way)."""
        if self._bundled_said or self._fetched or not self.seed:
            return  # once; and not after the API answered (its prices are in use then)
        self._bundled_said = True
        log.warning(
            "aws: the pricing API is unreachable; on-demand prices are %s until it answers",
            self.seed,
        )

    # --- reading --------------------------------------------------------------------------

    @property
    def version(self) -> int:
        """Grows whenever a price changes."""
        return self._version

    @property
    def spot_updated(self) -> bool:
        """True once spot prices came from EC2 (before that spot = on-demand)."""
        return self._spot_updated

    def on_demand(self, instance_type: str) -> float | None:
        """The on-demand USD/hour of ``instance_type``; None when no source knows it."""
        return self._on_demand.get(instance_type)

    def spot(self, instance_type: str, zone: str) -> float | None:
        """The spot USD/hour of ``instance_type`` in ``zone``; None when unknown."""
        if not self._spot_updated:
            return self._on_demand.get(instance_type)
        return self._spot.get(instance_type, {}).get(zone)

    def instance_types(self) -> frozenset[str]:
        """Every type some price is known for."""
        return frozenset(self._on_demand) | frozenset(self._spot)

    # --- refreshing -----------------------------------------------------------------------

    def _on_demand_skipped(self) -> str | None:
        if self._offline:
            return "no AWS access (offline catalogue)"
        if self._settings.isolated_vpc:
            return "running in an isolated VPC"
        if self._region.startswith("us-gov"):
            return "the pricing API is not available in GovCloud"
        return None

    def refresh_on_demand(self) -> bool:
        """Fetch on-demand prices from the pricing API; False when skipped (isolated VPC,
        GovCloud). Raises :class:`PricingError` when the API fails or returns nothing,
        keeping the previous prices."""
        reason = self._on_demand_skipped()
        if reason is not None:
            if not self._skip_logged:
                self._skip_logged = True
                log.info("%s: on-demand prices will not be refreshed", reason)
            return False
        try:
            fetched = fetch_on_demand(self._clients.pricing, self._region)
        except PricingError:
            self._say_bundled_once()
            raise
        self._fetched = True
        with self._lock:
            merged = {**self._on_demand, **fetched}
            changed = merged != self._on_demand
            self._on_demand = merged
            if changed:
                self._version += 1
        if changed:
            log.info("updated on-demand pricing: %d instance types", len(merged))
        return True

    def refresh_spot(self) -> None:
        """Fetch current spot prices per type and zone. Raises :class:`PricingError` when
        EC2 fails or returns nothing, keeping the previous prices. Offline, nothing: spot
        stays at the on-demand stand-in, as upstream before its first spot refresh."""
        if self._offline:
            return
        latest: dict[tuple[str, str], tuple[datetime | None, float]] = {}
        try:
            pages = self._clients.ec2.get_paginator("describe_spot_price_history").paginate(
                ProductDescriptions=list(SPOT_PRODUCT_DESCRIPTIONS),
                StartTime=self._clock.now(),
                PaginationConfig={"PageSize": 1000},
            )
            for page in pages:
                _collect_spot(page.get("SpotPriceHistory", []), latest)
        except Exception as err:
            raise PricingError(f"retrieving spot pricing data: {describe_error(err)}") from err
        if not latest:
            raise PricingError("no spot pricing found")
        with self._lock:
            spot = {k: dict(v) for k, v in self._spot.items()}
            for (instance_type, zone), (_, price) in latest.items():
                spot.setdefault(instance_type, {})[zone] = price
            changed = spot != self._spot or not self._spot_updated
            self._spot = spot
            self._spot_updated = True
            if changed:
                self._version += 1
        if changed:
            log.info(
                "updated spot pricing: %d instance types, %d offerings",
                len(spot),
                sum(len(z) for z in spot.values()),
            )

    def refresh(self) -> None:
        """Refresh both, the second even when the first fails; each failure is logged
        with its reason, then :class:`PricingError` names them all so a periodic caller
        can retry sooner. The prices that could be refreshed are in use either way."""
        failures = []
        for what, refresh in (("on-demand", self.refresh_on_demand), ("spot", self.refresh_spot)):
            try:
                refresh()
            except PricingError as err:
                log.warning("%s price refresh failed, keeping previous prices: %s", what, err)
                failures.append(f"{what}: {err}")
        if failures:
            raise PricingError("; ".join(failures))


def _collect_spot(
    rows: Iterable[Mapping[str, Any]], latest: dict[tuple[str, str], tuple[datetime | None, float]]
) -> None:
    """Keep the newest price per (type, zone); rows without a parsable price or a
    timestamp are skipped, as upstream."""
    for row in rows:
        timestamp = row.get("Timestamp")
        if timestamp is None:
            continue
        try:
            price = float(row.get("SpotPrice", ""))
        except (TypeError, ValueError):
            log.debug("unable to parse spot price record %r", row)
            continue
        key = (str(row.get("InstanceType", "")), str(row.get("AvailabilityZone", "")))
        if not all(key):
            continue
        previous = latest.get(key)
        if previous is None or previous[0] is None or timestamp >= previous[0]:
            latest[key] = (timestamp, price)
