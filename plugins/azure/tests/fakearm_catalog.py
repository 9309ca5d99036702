"""Catalogue routes for the fake ARM server: Resource SKUs and the retail prices API.

Installed once per :class:`fakearm.FakeARM` (routes cannot be removed) by
:func:`catalog_routes`; tests then set :attr:`CatalogRoutes.skus` /
:attr:`CatalogRoutes.prices` and the page sizes. Both endpoints page as Azure does, so
the clients' paging is exercised for real:

- ``GET /subscriptions/{sub}/providers/Microsoft.Compute/skus`` answers
  ``{"value": [...], "nextLink": <absolute URL>}`` pages, honouring ARM's
  ``$filter=location eq '<region>'``;
- ``GET /api/retail/prices`` answers ``{"Items": [...], "NextPageLink": ..., "Count"}``
  pages, honouring the ``armRegionName eq '<region>'`` term of ``$filter``.

The fake checks the bearer token on every route it serves, the retail prices API
included (Azure's is anonymous): pricing clients in tests therefore send the fake's token
(:func:`authorized_session`).
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

import requests
from fakearm import ACCESS_TOKEN, FakeARM, FakeRequest, Response, arm_error

__all__ = [
    "PRICES_PATH",
    "CatalogRoutes",
    "authorized_session",
    "catalog_routes",
    "price_item",
    "sku_json",
]

PRICES_PATH = "/api/retail/prices"
_SKUS = r"/subscriptions/(?P<sub>[^/]+)/providers/Microsoft\.Compute/skus"
_LOCATION_FILTER = re.compile(r"location\s+eq\s+'(?P<location>[^']*)'", re.IGNORECASE)
_REGION_FILTER = re.compile(r"armRegionName\s+eq\s+'(?P<region>[^']*)'", re.IGNORECASE)


def authorized_session(arm: FakeARM) -> requests.Session:
    """A ``requests`` session carrying the fake's token. It trusts the fake's certificate
    through ``REQUESTS_CA_BUNDLE`` (the ``arm_env`` fixture): requests lets that variable
    override a session's own ``verify``."""
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {ACCESS_TOKEN}"
    return session


def sku_json(
    name: str,
    *,
    location: str = "westus2",
    vcpus: int = 2,
    memory_gib: float = 8,
    zones: Sequence[str] = ("1", "2", "3"),
    architecture: str = "x64",
    low_priority: bool = True,
    restrictions: Sequence[Mapping[str, Any]] = (),
    resource_type: str = "virtualMachines",
    extra: Mapping[str, str] | None = None,
    zone_details: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """A virtual-machine Resource SKU in ARM's REST shape (``size`` from the name)."""
    capabilities = {
        "vCPUs": str(vcpus),
        "MemoryGB": str(memory_gib),
        "CpuArchitectureType": architecture,
        "LowPriorityCapable": "True" if low_priority else "False",
        "HyperVGenerations": "V1,V2",
        "PremiumIO": "True",
        "AcceleratedNetworkingEnabled": "True",
        **(extra or {}),
    }
    return {
        "resourceType": resource_type,
        "name": name,
        "tier": "Standard",
        "size": name.removeprefix("Standard_"),
        "family": "standardFakeFamily",
        "locations": [location],
        "locationInfo": [
            {"location": location, "zones": list(zones), "zoneDetails": list(zone_details)}
        ],
        "capabilities": [{"name": k, "value": v} for k, v in capabilities.items()],
        "restrictions": list(restrictions),
    }


def price_item(
    sku: str,
    price: float,
    *,
    region: str = "westus2",
    spot: bool = False,
    windows: bool = False,
    low_priority: bool = False,
    effective: str = "2026-01-01T00:00:00Z",
) -> dict[str, Any]:
    """One retail price item as the API returns it for a VM meter."""
    size = sku.removeprefix("Standard_").replace("_", " ")
    suffix = " Spot" if spot else (" Low Priority" if low_priority else "")
    return {
        "currencyCode": "USD",
        "retailPrice": price,
        "unitPrice": price,
        "armRegionName": region,
        "location": region,
        "effectiveStartDate": effective,
        "meterName": f"{size}{suffix}",
        "productName": f"Virtual Machines {size} Series{' Windows' if windows else ''}",
        "skuName": f"{size}{suffix}",
        "serviceName": "Virtual Machines",
        "serviceFamily": "Compute",
        "unitOfMeasure": "1 Hour",
        "type": "Consumption",
        "armSkuName": sku,
    }


class CatalogRoutes:
    """The data the catalogue routes serve, and what they were asked."""

    def __init__(self, arm: FakeARM) -> None:
        self.arm = arm
        self.lock = threading.Lock()
        self.skus: list[dict[str, Any]] = []
        self.prices: list[dict[str, Any]] = []
        self.sku_page_size = 2
        self.price_page_size = 2
        self.sku_filters: list[str] = []
        self.price_filters: list[str] = []

    def reset(self) -> CatalogRoutes:
        """Empty data, default page sizes, nothing recorded."""
        with self.lock:
            self.skus.clear()
            self.prices.clear()
            self.sku_page_size = 2
            self.price_page_size = 2
            self.sku_filters.clear()
            self.price_filters.clear()
        return self

    @property
    def prices_endpoint(self) -> str:
        return self.arm.url + PRICES_PATH

    def install(self) -> None:
        self.arm.route("GET", _SKUS, self._skus)
        self.arm.route("GET", PRICES_PATH, self._prices)

    @staticmethod
    def _offset(raw: str | None) -> int | None:
        try:
            return int(raw) if raw is not None else 0
        except ValueError:
            return None

    def _skus(self, req: FakeRequest) -> Response:
        if not req.query.get("api-version"):
            return arm_error(400, "MissingApiVersionParameter", "api-version is required")
        offset = self._offset(req.query.get("$skiptoken"))
        if offset is None:
            return arm_error(400, "InvalidSkipToken", "bad $skiptoken")
        flt = req.query.get("$filter", "")
        with self.lock:
            if offset == 0:
                self.sku_filters.append(flt)
            match = _LOCATION_FILTER.search(flt)
            items = [
                s
                for s in self.skus
                if match is None
                or any(loc.lower() == match["location"].lower() for loc in s.get("locations", []))
            ]
            size = max(self.sku_page_size, 1)
        page: dict[str, Any] = {"value": items[offset : offset + size]}
        if offset + size < len(items):
            query = {k: v for k, v in req.query.items() if k != "$skiptoken"}
            query["$skiptoken"] = str(offset + size)
            page["nextLink"] = f"{self.arm.url}{req.path}?{urlencode(query)}"
        return 200, {}, page

    def _prices(self, req: FakeRequest) -> Response:
        offset = self._offset(req.query.get("$skip"))
        if offset is None:
            return 400, {}, {"Error": "bad $skip"}
        flt = req.query.get("$filter", "")
        with self.lock:
            if offset == 0:
                self.price_filters.append(flt)
            match = _REGION_FILTER.search(flt)
            items = [
                p for p in self.prices if match is None or p.get("armRegionName") == match["region"]
            ]
            size = max(self.price_page_size, 1)
        chunk = items[offset : offset + size]
        page: dict[str, Any] = {
            "BillingCurrency": "USD",
            "CustomerEntityId": "Default",
            "CustomerEntityType": "Retail",
            "Items": chunk,
            "NextPageLink": None,
            "Count": len(chunk),
        }
        if offset + size < len(items):
            query = {k: v for k, v in req.query.items() if k != "$skip"}
            query["$skip"] = str(offset + size)
            page["NextPageLink"] = f"{self.arm.url}{req.path}?{urlencode(query)}"
        return 200, {}, page


_INSTALLED: weakref.WeakKeyDictionary[FakeARM, CatalogRoutes] = weakref.WeakKeyDictionary()
_INSTALL_LOCK = threading.Lock()


def catalog_routes(arm: FakeARM) -> CatalogRoutes:
    """The catalogue routes of ``arm`` (installed on first use), reset."""
    with _INSTALL_LOCK:
        routes = _INSTALLED.get(arm)
        if routes is None:
            routes = CatalogRoutes(arm)
            routes.install()
            _INSTALLED[arm] = routes
    return routes.reset()
