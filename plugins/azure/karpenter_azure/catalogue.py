"""The offline Azure catalogue: Resource SKUs and prices bundled as package data.

``karpenter instance-types --cloud-provider azure`` and ``karpenter schedule`` must work
with no credentials and no network, and ``karpenter serve`` must have prices when the
retail prices API is unreachable. Both read what this module loads from
``karpenter_azure/data/``:

``data/regions/<region>.json.gz``
    A region's snapshot: its virtual-machine Resource SKUs (the REST JSON of
    ``Microsoft.Compute/skus``, as ``az vm list-skus -o json`` prints it), on-demand and
    spot USD/hour per ARM SKU name, when the SKUs were recorded and when the prices were
    retrieved, and where both came from. :func:`load_snapshot` reads one;
    :data:`REGIONS` names them.
``data/prices.json.gz``
    On-demand USD/hour for every public region (column per region), the pricing
    fallback for regions that have no full snapshot (:func:`bundled_prices`).
``data/gpu-skus.json`` / ``data/known-skus.json.gz``
    The GPU VM sizes AKS supports (manufacturer, operating systems) and the VM sizes
    known to work, read by :mod:`karpenter_azure.instancetypes`.

Provenance of the bundled data (this machine had no access to live Azure APIs when it
was assembled, so nothing here was fetched live):

- Resource SKUs for **southcentralus** (20 SKUs, recorded 2025-06-03) and
  **westcentralus** (12 SKUs, recorded 2024-12-13) are the SKU records upstream
  karpenter-provider-azure keeps as test fixtures, recorded from Azure's Resource SKUs
  API (``pkg/fake/zz_generated.sku.<region>.go``), converted to the REST JSON shape. No
  fuller public dump of Resource SKUs was found; these are the bundled region set.
- On-demand prices (57 regions, retrieved 2026-06-18T03:43:41Z) are Azure's published
  retail prices (Linux, consumption, USD) as upstream's generated table
  ``pkg/providers/pricing/zz_generated.pricing.go`` records them.
- Spot prices: none were available offline, so the bundled snapshots have no spot
  table and :class:`karpenter_azure.pricing.PricingProvider` prices spot at the
  on-demand price until a live refresh, which is what upstream does with its
  generated table.
- The GPU table and the known VM sizes are upstream's ``pkg/utils/supported-gpus.yaml``
  and ``pkg/providers/instancetype/known_skus.yaml``.

Refreshing (with Azure credentials and network; ``DefaultAzureCredential`` as the
provider uses, so ``az login`` or a service principal's environment variables work)::

    python -m karpenter_azure.catalogue refresh --region eastus --region westus2 \\
        --subscription-id SUB [--output-dir karpenter_azure/data]

reads each region's Resource SKUs and retail prices (on-demand and spot) and rewrites
``data/regions/<region>.json.gz`` and the region's column of ``data/prices.json.gz``.
Without network at the place of the build, the same files come from saved responses::

    az vm list-skus --location eastus --resource-type virtualMachines -o json > skus.json
    curl -o p1.json "https://prices.azure.com/api/retail/prices?api-version=2023-01-01-preview&\\$filter=..."
    python -m karpenter_azure.catalogue import --region eastus --skus skus.json \\
        --prices p1.json p2.json ...

``python -m karpenter_azure.catalogue list`` prints the bundled regions.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from attrs import field, frozen

from karpenter_azure.skus import Sku, SkuError, skus_from_json
from karpenter_core.plugin_api import catalogue as bundled

__all__ = [
    "PRICE_REGIONS",
    "REGIONS",
    "SCHEMA",
    "CatalogueError",
    "PriceTable",
    "Snapshot",
    "bundled_prices",
    "data_dir",
    "gpu_skus",
    "known_skus",
    "load_snapshot",
    "main",
    "refresh_region",
    "write_snapshot",
]

log = logging.getLogger("karpenter.azure.catalogue")

SCHEMA = 1
"""Version of the snapshot file format."""

CatalogueError = bundled.CatalogueError
PriceTable = bundled.PriceTable

DATA = bundled.BundledData(
    "karpenter_azure",
    "Azure",
    "python -m karpenter_azure.catalogue refresh --region {region}",
)


def data_dir() -> Traversable:
    """The package's ``data/`` directory (a zip entry when installed zipped)."""
    return DATA.data_dir()


def _sku_tuple(value: Iterable[Sku]) -> tuple[Sku, ...]:
    return tuple(value)


@frozen
class Snapshot:
    """One region's bundled catalogue: SKUs and prices, and how old they are."""

    region: str
    skus: tuple[Sku, ...] = field(converter=_sku_tuple)
    on_demand: Mapping[str, float] = field(converter=dict)
    spot: Mapping[str, float] = field(converter=dict)
    generated_at: datetime
    """When the prices were retrieved (what the pricing provider reports as their age)."""
    skus_recorded_at: datetime
    provenance: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "region": self.region,
            "generatedAt": bundled.format_time(self.generated_at),
            "skusRecordedAt": bundled.format_time(self.skus_recorded_at),
            "provenance": self.provenance,
            "skus": [s.to_dict() for s in self.skus],
            "onDemand": dict(sorted(self.on_demand.items())),
            "spot": dict(sorted(self.spot.items())),
        }

    @classmethod
    def from_dict(cls, data: Any, where: str) -> Snapshot:
        if not isinstance(data, Mapping) or data.get("schema") != SCHEMA:
            raise CatalogueError(f"{where}: not a schema-{SCHEMA} Azure catalogue snapshot")
        try:
            skus = skus_from_json(data.get("skus"))
        except SkuError as err:
            raise CatalogueError(f"{where}: {err}") from None
        return cls(
            region=str(data.get("region", "")),
            skus=skus,
            on_demand=bundled.prices_from_json(data.get("onDemand")),
            spot=bundled.prices_from_json(data.get("spot")),
            generated_at=bundled.parse_time(data.get("generatedAt")),
            skus_recorded_at=bundled.parse_time(data.get("skusRecordedAt")),
            provenance=str(data.get("provenance", "")),
        )


def _region_entries() -> dict[str, Traversable]:
    return DATA.region_entries()


REGIONS: tuple[str, ...] = DATA.regions()
"""Regions with a bundled snapshot (SKUs and prices)."""

PRICE_REGIONS: tuple[str, ...] = DATA.price_regions("regions")
"""Regions with bundled on-demand prices (every region :data:`REGIONS` names, and more)."""


@functools.cache
def load_snapshot(region: str) -> Snapshot:
    """The bundled snapshot of ``region``. Raises :class:`CatalogueError` naming the
    bundled regions when there is none."""
    data, where = DATA.read_region(region)
    return Snapshot.from_dict(data, where)


def bundled_prices(region: str) -> PriceTable | None:
    """The bundled prices of ``region``: its snapshot's when it has one, else its column
    of the all-regions on-demand table; None when neither knows the region."""
    if region in _region_entries():
        snap = load_snapshot(region)
        return PriceTable(
            region=region,
            on_demand=snap.on_demand,
            spot=snap.spot,
            generated_at=snap.generated_at,
            provenance=snap.provenance,
        )
    return DATA.column_prices(region, "regions")


@functools.cache
def gpu_skus() -> Mapping[str, tuple[str, frozenset[str]]]:
    """Lower-case VM size -> (GPU manufacturer, operating systems AKS supports it on)."""
    entry = data_dir() / "gpu-skus.json"
    data = json.loads(entry.read_text(encoding="utf-8")) if entry.is_file() else {}
    return {
        str(name).lower(): (str(info.get("gpu", "")), frozenset(info.get("os") or ()))
        for name, info in (data.get("skus") or {}).items()
        if isinstance(info, Mapping)
    }


@functools.cache
def known_skus() -> frozenset[str]:
    """VM sizes known to work with AKS (others are priced last, as upstream)."""
    entry = data_dir() / "known-skus.json.gz"
    data = bundled.read_json_gz(entry) if entry.is_file() else {}
    return frozenset(str(n) for n in data.get("names") or ())


# --- writing ---------------------------------------------------------------------------------


def write_snapshot(snapshot: Snapshot, output_dir: str | Path) -> Path:
    """Write ``snapshot`` as ``<output_dir>/regions/<region>.json.gz`` and put its
    on-demand prices in ``<output_dir>/prices.json.gz``; returns the snapshot's path."""
    out = Path(output_dir)
    path = out / "regions" / f"{snapshot.region}{bundled.SUFFIX}"
    bundled.write_json_gz(path, snapshot.to_dict())
    bundled.update_price_table(
        out / "prices.json.gz",
        snapshot.region,
        {"regions": snapshot.on_demand},
        generated_at=snapshot.generated_at,
        provenance=snapshot.provenance,
        kinds=("regions",),
    )
    return path


# --- the command -----------------------------------------------------------------------------


def _default_output_dir() -> Path:
    return Path(str(data_dir()))


def refresh_region(
    region: str,
    compute_client: Any,
    *,
    pricing_endpoint: str | None = None,
    session: Any = None,
    clock: Any = None,
) -> Snapshot:
    """A fresh snapshot of ``region`` from the live APIs: its Resource SKUs through
    ``compute_client`` (``azure.mgmt.compute.ComputeManagementClient``) and its retail
    prices. Raises :class:`karpenter_azure.skus.SkuError` or
    :class:`karpenter_azure.pricing.PricingError`."""
    from karpenter_azure.pricing import fetch_prices
    from karpenter_azure.pricing import pricing_endpoint as default_endpoint
    from karpenter_azure.skus import list_skus

    endpoint = pricing_endpoint or default_endpoint()
    skus = list_skus(compute_client, region)
    on_demand, spot = fetch_prices(region, endpoint=endpoint, session=session)
    now = clock.now() if clock is not None else datetime.now(UTC)
    return Snapshot(
        region=region,
        skus=skus,
        on_demand=on_demand,
        spot=spot,
        generated_at=now,
        skus_recorded_at=now,
        provenance=(
            f"Resource SKUs (Microsoft.Compute/skus) and retail prices ({endpoint}) "
            f"read live on {bundled.format_time(now)}"
        ),
    )


def _refresh(args: argparse.Namespace) -> int:
    from karpenter_azure.clients import AzureClients
    from karpenter_azure.pricing import PricingError

    subscription = args.subscription_id or os.environ.get("AZURE_SUBSCRIPTION_ID", "")
    if not subscription:
        print("refresh: --subscription-id (or AZURE_SUBSCRIPTION_ID) is required", file=sys.stderr)
        return 2
    clients = AzureClients.create(subscription, resource_manager_endpoint=args.arm_endpoint or None)
    failed = 0
    for region in args.region:
        try:
            snapshot = refresh_region(
                region, clients.compute, pricing_endpoint=args.pricing_endpoint or None
            )
        except (SkuError, PricingError) as err:
            print(f"refresh {region}: {err}", file=sys.stderr)
            failed += 1
            continue
        path = write_snapshot(snapshot, args.output_dir)
        print(
            f"{region}: {len(snapshot.skus)} SKUs, {len(snapshot.on_demand)} on-demand and "
            f"{len(snapshot.spot)} spot prices -> {path}"
        )
    return 1 if failed else 0


def _import(args: argparse.Namespace) -> int:
    from karpenter_azure.pricing import PricingError, prices_from_pages

    try:
        skus = skus_from_json(json.loads(Path(args.skus).read_text(encoding="utf-8")))
    except (OSError, ValueError, SkuError) as err:
        print(f"import: {args.skus}: {err}", file=sys.stderr)
        return 1
    pages: list[Any] = []
    for page in args.prices or ():
        try:
            pages.append(json.loads(Path(page).read_text(encoding="utf-8")))
        except (OSError, ValueError) as err:
            print(f"import: {page}: {err}", file=sys.stderr)
            return 1
    try:
        on_demand, spot = prices_from_pages(pages, region=args.region)
    except PricingError as err:
        print(f"import: {err}", file=sys.stderr)
        return 1
    skus = [s for s in skus if s.resource_type.lower() == "virtualmachines"]
    now = datetime.now(UTC)
    recorded = bundled.parse_time(args.recorded_at) if args.recorded_at else now
    snapshot = Snapshot(
        region=args.region,
        skus=skus,
        on_demand=on_demand,
        spot=spot,
        generated_at=recorded,
        skus_recorded_at=recorded,
        provenance=args.provenance
        or f"imported from {Path(args.skus).name} and {len(pages)} saved retail-price pages",
    )
    path = write_snapshot(snapshot, args.output_dir)
    print(
        f"{args.region}: {len(skus)} SKUs, {len(on_demand)} on-demand and {len(spot)} spot prices -> {path}"
    )
    return 0


def _list(_: argparse.Namespace) -> int:
    for region in REGIONS:
        snap = load_snapshot(region)
        print(
            f"{region}: {len(snap.skus)} SKUs (recorded {bundled.format_time(snap.skus_recorded_at)}), "
            f"{len(snap.on_demand)} on-demand / {len(snap.spot)} spot prices "
            f"(retrieved {bundled.format_time(snap.generated_at)})"
        )
    print(f"on-demand prices for {len(PRICE_REGIONS)} regions")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m karpenter_azure.catalogue",
        description="The bundled Azure catalogue (Resource SKUs and prices).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    refresh = sub.add_parser("refresh", help="rewrite regions' snapshots from the live APIs")
    refresh.add_argument("--region", action="append", required=True, help="repeatable")
    refresh.add_argument("--subscription-id", default="")
    refresh.add_argument("--output-dir", type=Path, default=_default_output_dir())
    refresh.add_argument(
        "--arm-endpoint",
        default="",
        help="ARM endpoint (default: the cloud of AZURE_ENVIRONMENT_FILEPATH, else public)",
    )
    refresh.add_argument("--pricing-endpoint", default="")
    refresh.set_defaults(run=_refresh)
    imp = sub.add_parser("import", help="write a snapshot from saved API responses")
    imp.add_argument("--region", required=True)
    imp.add_argument("--skus", required=True, help="az vm list-skus -o json output")
    imp.add_argument("--prices", nargs="*", help="saved retail prices API pages")
    imp.add_argument("--recorded-at", default="", help="when the responses were saved (ISO)")
    imp.add_argument("--provenance", default="")
    imp.add_argument("--output-dir", type=Path, default=_default_output_dir())
    imp.set_defaults(run=_import)
    lst = sub.add_parser("list", help="print the bundled regions")
    lst.set_defaults(run=_list)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the catalogue command; returns the exit status."""
    args = _parser().parse_args(argv)
    run = args.run
    return int(run(args))


if __name__ == "__main__":
    sys.exit(main())
