"""Catalogue routes for the fake Compute server: machine types, zones and the price table.

Installed once per :class:`fakegce.FakeGCE` (the routes stay across ``reset()``) by
:func:`catalog_routes`; tests seed machine types in the fake's own
:attr:`FakeGCE.machine_types` (keyed by (zone, name), as its ``machineTypes.get`` route
reads them) with :func:`machine_type_json`, and set :attr:`CatalogRoutes.zones` /
:attr:`CatalogRoutes.csv` / :attr:`CatalogRoutes.page_size`. The endpoints answer as
Google's do, so the official client's paging is exercised for real:

- ``GET /compute/v1/projects/{p}/aggregated/machineTypes`` answers
  ``{"items": {"zones/<z>": {"machineTypes": [...]}}, "nextPageToken"}`` pages, honouring
  the ``zone eq <regex>`` filter Karpenter sends (other filters are a 400);
- ``GET /compute/v1/projects/{p}/zones`` lists :attr:`CatalogRoutes.zones`;
- ``GET /pricing/machine-types-regions.csv`` serves :attr:`CatalogRoutes.csv` (the price
  table upstream downloads; :func:`price_csv` writes one).
"""

from __future__ import annotations

import copy
import re
import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import define, field
from fakegce import FakeGCE, FakeRequest, Response, gce_error

__all__ = [
    "PRICES_PATH",
    "CatalogRoutes",
    "catalog_routes",
    "machine_type_json",
    "price_csv",
]

PRICES_PATH = "/pricing/machine-types-regions.csv"
_C = r"/compute/v1/projects/(?P<project>[^/]+)"
_ZONE_FILTER = re.compile(r"^\(?\s*zone\s+eq\s+(?P<regex>[^\s()]+)\s*\)?$")


def machine_type_json(
    name: str,
    zone: str,
    *,
    cpus: int = 2,
    memory_mb: int = 8192,
    architecture: str | None = "X86_64",
    accelerators: Sequence[tuple[str, int]] = (),
    local_ssd_partitions: int = 0,
    shared_cpu: bool = False,
    base_url: str = "https://www.googleapis.com",
    project: str = "test-project",
) -> dict[str, Any]:
    """A ``compute#machineType`` as the API returns it in one zone."""
    zone_url = f"{base_url}/compute/v1/projects/{project}/zones/{zone}"
    out: dict[str, Any] = {
        "kind": "compute#machineType",
        "id": str(abs(hash((name, zone))) % 10**12),
        "name": name,
        "description": f"{cpus} vCPUs, {memory_mb / 1024:g} GB RAM",
        "guestCpus": cpus,
        "memoryMb": memory_mb,
        "maximumPersistentDisks": 128,
        "maximumPersistentDisksSizeGb": "263168",
        "zone": zone,
        "selfLink": f"{zone_url}/machineTypes/{name}",
        "isSharedCpu": shared_cpu,
    }
    if architecture:
        out["architecture"] = architecture
    if accelerators:
        out["accelerators"] = [
            {"guestAcceleratorType": t, "guestAcceleratorCount": c} for t, c in accelerators
        ]
    if local_ssd_partitions:
        out["bundledLocalSsds"] = {
            "defaultInterface": "NVME",
            "partitionCount": local_ssd_partitions,
        }
    return out


def price_csv(rows: Sequence[tuple[str, str, float, float | None]]) -> str:
    """The price table's CSV (a subset of its columns, in its header order) from
    (machine type, region, on-demand, spot) rows."""
    lines = ["name,series,family,vCpus,memoryGB,region,hour,hourSpot,month"]
    for name, region, hour, spot in rows:
        family = name.split("-", 1)[0]
        lines.append(
            f"{name},{family.upper()},General purpose,2,8,{region},{hour},"
            f"{'' if spot is None else spot},{hour * 730:.2f}"
        )
    return "\n".join(lines) + "\n"


@define
class CatalogRoutes:
    """State of the catalogue routes of one fake (see the module docstring)."""

    gce: FakeGCE
    zones: list[str] = field(factory=list)
    csv: str | None = None
    page_size: int = 500
    lock: threading.Lock = field(factory=threading.Lock)

    def reset(self) -> None:
        with self.lock:
            self.zones = []
            self.csv = None
            self.page_size = 500

    @property
    def prices_url(self) -> str:
        return self.gce.url + PRICES_PATH

    def add_machine_types(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Seed the fake's machine types (records of :func:`machine_type_json`)."""
        with self.gce.lock:
            for r in records:
                self.gce.machine_types[(str(r["zone"]).rsplit("/", 1)[-1], str(r["name"]))] = dict(
                    r
                )

    # --- handlers ---------------------------------------------------------------------------

    def aggregated_machine_types(self, req: FakeRequest) -> Response:
        text = req.query.get("filter", "").strip()
        regex: re.Pattern[str] | None = None
        if text:
            m = _ZONE_FILTER.match(text)
            if m is None:
                return gce_error(400, "invalid", f"unsupported filter {text!r}")
            regex = re.compile(m["regex"])
        with self.gce.lock:
            rows = sorted(
                (zone, name, copy.deepcopy(mt))
                for (zone, name), mt in self.gce.machine_types.items()
                if regex is None or regex.fullmatch(str(mt.get("zone", zone)))
            )
        with self.lock:
            size = self.page_size
        if req.query.get("maxResults"):
            size = min(size, int(req.query["maxResults"]))
        start = int(req.query.get("pageToken") or 0)
        page = rows[start : start + size]
        items: dict[str, dict[str, Any]] = {}
        for zone, _, mt in page:
            items.setdefault(f"zones/{zone}", {"machineTypes": []})["machineTypes"].append(mt)
        body: dict[str, Any] = {"kind": "compute#machineTypeAggregatedList", "items": items}
        if start + size < len(rows):
            body["nextPageToken"] = str(start + size)
        return 200, {}, body

    def list_zones(self, req: FakeRequest) -> Response:
        project = req.match["project"]
        with self.lock:
            zones = list(self.zones)
        items = [
            {
                "kind": "compute#zone",
                "name": z,
                "status": "UP",
                "region": f"{self.gce.url}/compute/v1/projects/{project}/regions/{z.rsplit('-', 1)[0]}",
            }
            for z in zones
        ]
        return 200, {}, {"kind": "compute#zoneList", "items": items}

    def prices(self, req: FakeRequest) -> Response:
        with self.lock:
            text = self.csv
        if text is None:
            return 404, {"Content-Type": "text/plain"}, "no price table"
        return 200, {"Content-Type": "text/csv"}, text


_INSTALLED: weakref.WeakKeyDictionary[FakeGCE, CatalogRoutes] = weakref.WeakKeyDictionary()


def catalog_routes(gce: FakeGCE) -> CatalogRoutes:
    """The catalogue routes of ``gce``, installed on first use and reset every call."""
    routes = _INSTALLED.get(gce)
    if routes is None:
        routes = CatalogRoutes(gce)
        gce.route("GET", _C + r"/aggregated/machineTypes", routes.aggregated_machine_types)
        gce.route("GET", _C + r"/zones", routes.list_zones)
        gce.route("GET", re.escape(PRICES_PATH), routes.prices)
        _INSTALLED[gce] = routes
    routes.reset()
    return routes
