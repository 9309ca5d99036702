"""The offline GCE catalogue: machine types and prices bundled as package data.

``karpenter instance-types --cloud-provider gcp`` and ``karpenter schedule`` must work
with no credentials and no network, and ``karpenter serve`` must have prices when the
price source is unreachable. Both read what this module loads from
``karpenter_gcp/data/``:

``data/regions/<region>.json.gz``
    A region's snapshot: its zones, its machine types (REST field names of
    ``compute#machineType`` — ``guestCpus``, ``memoryMb``, ``accelerators``,
    ``bundledLocalSsds``, ``architecture``, ``isSharedCpu`` — one record per name with the
    ``zones`` that offer it), on-demand and spot USD/hour per machine type, when both were
    recorded and where they came from. :func:`load_snapshot` reads one; :data:`REGIONS`
    names them.
``data/prices.json.gz``
    On-demand and spot USD/hour for every region upstream prices (a column per region),
    the pricing fallback for regions without a full snapshot (:func:`bundled_prices`).
``data/disk-compatibility.json``
    Persistent-disk types per machine family (the ``disk-type.gke.io/<type>`` labels).

Provenance of the bundled data (assembled without access to live Google APIs, converted
by a one-off script that is not part of the package):

- Bundled regions: **us-central1** (zones a, b, c, f; 516 machine types),
  **us-east1** (b, c, d; 493) and **europe-west4** (a, b, c; 488).
- Prices (on-demand and spot, USD/hour, 43 regions, retrieved 2026-08-03) are Google's
  published Compute Engine prices as upstream karpenter-provider-gcp bundles them
  (``pkg/providers/pricing/initial-prices.json``, generated from gcloud-compute.com's
  ``machine-types-regions.csv``, the source upstream also reads live).
- Machine types are every type priced in the region. Their vCPUs, memory, local SSD
  capacity and GPUs come from the public machine table of
  github.com/Cyclenerd/google-cloud-pricing-cost-calculator (``build/gcp.yml``, recorded
  2026-08-20; the table upstream cites for local SSD sizes), not from a
  ``machineTypes.aggregatedList`` dump: none was found. Hence three approximations,
  corrected by the first refresh with credentials: **every type is listed in every zone
  of its region** (per-zone availability was not available offline); the architecture is
  ``ARM64`` for the t2a, c4a and n4a families and ``X86_64`` otherwise; the shared-core
  e2-micro/e2-small/e2-medium report 2 vCPUs as the API does, and fractional G4 GPU
  shares are left out of ``accelerators``. Memory is the table's GB x 1024 MB (the API's
  ``memoryMb`` for predefined types).
- Disk compatibility is the GCE PD CSI driver's ``machine-pd-compatibility.json`` as
  upstream vendors it (``pkg/providers/disktype/pdcsi``).

Refreshing (with Google credentials — Application Default Credentials, e.g.
``gcloud auth application-default login`` — and network)::

    python -m karpenter_gcp.catalogue refresh --region us-central1 --region us-east1 \\
        --project P [--output-dir karpenter_gcp/data]

lists each region's machine types (``machineTypes.aggregatedList``) and zones, reads the
prices upstream reads (:mod:`karpenter_gcp.pricing`), and rewrites
``data/regions/<region>.json.gz`` and the region's columns of ``data/prices.json.gz``.
Without network at the place of the build, the same files come from saved responses::

    gcloud compute machine-types list --filter="zone ~ ^us-central1-" --format=json > mt.json
    curl -o prices.csv https://gcloud-compute.com/machine-types-regions.csv
    python -m karpenter_gcp.catalogue import --region us-central1 --machine-types mt.json \\
        --prices prices.csv

``python -m karpenter_gcp.catalogue list`` prints the bundled regions.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from attrs import evolve, field, frozen

from karpenter_core.plugin_api import catalogue as bundled
from karpenter_gcp.machinetypes import MachineType, MachineTypeError, machine_types_from_json

__all__ = [
    "PRICE_REGIONS",
    "REGIONS",
    "SCHEMA",
    "CatalogueError",
    "PriceTable",
    "Snapshot",
    "bundled_prices",
    "data_dir",
    "disk_types",
    "load_snapshot",
    "main",
    "refresh_region",
    "write_snapshot",
]

log = logging.getLogger("karpenter.gcp.catalogue")

SCHEMA = 1
"""Version of the snapshot file format."""

CatalogueError = bundled.CatalogueError
PriceTable = bundled.PriceTable

DATA = bundled.BundledData(
    "karpenter_gcp",
    "GCP",
    "python -m karpenter_gcp.catalogue refresh --region {region} --project PROJECT",
)


def data_dir() -> Traversable:
    """The package's ``data/`` directory (a zip entry when installed zipped)."""
    return DATA.data_dir()


def _types_tuple(value: Iterable[MachineType]) -> tuple[MachineType, ...]:
    return tuple(value)


def _zones_tuple(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(set(value)))


@frozen
class Snapshot:
    """One region's bundled catalogue: zones, machine types and prices, and their age."""

    region: str
    zones: tuple[str, ...] = field(converter=_zones_tuple)
    machine_types: tuple[MachineType, ...] = field(converter=_types_tuple)
    on_demand: Mapping[str, float] = field(converter=dict)
    spot: Mapping[str, float] = field(converter=dict)
    generated_at: datetime
    """When the prices were retrieved (what the pricing provider reports as their age)."""
    machine_types_recorded_at: datetime
    provenance: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "region": self.region,
            "zones": list(self.zones),
            "generatedAt": bundled.format_time(self.generated_at),
            "machineTypesRecordedAt": bundled.format_time(self.machine_types_recorded_at),
            "provenance": self.provenance,
            "machineTypes": [mt.to_dict() for mt in self.machine_types],
            "onDemand": dict(sorted(self.on_demand.items())),
            "spot": dict(sorted(self.spot.items())),
        }

    @classmethod
    def from_dict(cls, data: Any, where: str) -> Snapshot:
        if not isinstance(data, Mapping) or data.get("schema") != SCHEMA:
            raise CatalogueError(f"{where}: not a schema-{SCHEMA} GCP catalogue snapshot")
        try:
            types = machine_types_from_json(data.get("machineTypes") or [])
        except MachineTypeError as err:
            raise CatalogueError(f"{where}: {err}") from None
        zones = [str(z) for z in data.get("zones") or ()] or sorted(
            {z for mt in types for z in mt.zones}
        )
        return cls(
            region=str(data.get("region", "")),
            zones=zones,
            machine_types=types,
            on_demand=bundled.prices_from_json(data.get("onDemand")),
            spot=bundled.prices_from_json(data.get("spot")),
            generated_at=bundled.parse_time(data.get("generatedAt")),
            machine_types_recorded_at=bundled.parse_time(data.get("machineTypesRecordedAt")),
            provenance=str(data.get("provenance", "")),
        )


def _region_entries() -> dict[str, Traversable]:
    return DATA.region_entries()


REGIONS: tuple[str, ...] = DATA.regions()
"""Regions with a bundled snapshot (machine types and prices)."""

PRICE_REGIONS: tuple[str, ...] = DATA.price_regions("onDemand")
"""Regions with bundled prices (every region :data:`REGIONS` names, and more)."""


@functools.cache
def load_snapshot(region: str) -> Snapshot:
    """The bundled snapshot of ``region``. Raises :class:`CatalogueError` naming the
    bundled regions when there is none."""
    data, where = DATA.read_region(region)
    return Snapshot.from_dict(data, where)


def bundled_prices(region: str) -> PriceTable | None:
    """The bundled prices of ``region``: its snapshot's when it has one, else its columns
    of the all-regions table; None when neither knows the region."""
    if region in _region_entries():
        snap = load_snapshot(region)
        return PriceTable(
            region=region,
            on_demand=snap.on_demand,
            spot=snap.spot,
            generated_at=snap.generated_at,
            provenance=snap.provenance,
        )
    return DATA.column_prices(region, "onDemand", "spot")


@functools.cache
def _disk_families() -> Mapping[str, tuple[str, ...]]:
    entry = data_dir() / "disk-compatibility.json"
    data = json.loads(entry.read_text(encoding="utf-8")) if entry.is_file() else {}
    return {
        str(family): tuple(str(t) for t in types)
        for family, types in (data.get("families") or {}).items()
        if isinstance(types, list)
    }


def disk_types(family: str) -> tuple[str, ...] | None:
    """Persistent-disk types machine ``family`` (``n2``) supports; None for a family the
    compatibility table does not know."""
    return _disk_families().get(family)


# --- writing ---------------------------------------------------------------------------------


def write_snapshot(snapshot: Snapshot, output_dir: str | Path) -> Path:
    """Write ``snapshot`` as ``<output_dir>/regions/<region>.json.gz`` and put its prices
    in ``<output_dir>/prices.json.gz``; returns the snapshot's path."""
    out = Path(output_dir)
    path = out / "regions" / f"{snapshot.region}{bundled.SUFFIX}"
    bundled.write_json_gz(path, snapshot.to_dict())
    bundled.update_price_table(
        out / "prices.json.gz",
        snapshot.region,
        {"onDemand": snapshot.on_demand, "spot": snapshot.spot},
        generated_at=snapshot.generated_at,
        provenance=snapshot.provenance,
        kinds=("onDemand", "spot"),
    )
    return path


# --- the command -----------------------------------------------------------------------------


def _default_output_dir() -> Path:
    return Path(str(data_dir()))


def list_zones(zones_client: Any, project: str, region: str) -> list[str]:
    """The zones of ``region`` that are UP, through ``compute_v1.ZonesClient``."""
    out = []
    for zone in zones_client.list(request={"project": project}):
        region_of = str(zone.region).rstrip("/").rsplit("/", 1)[-1]
        if region_of == region and (not zone.status or zone.status == "UP"):
            out.append(zone.name)
    return sorted(out)


def refresh_region(
    region: str,
    project: str,
    machine_types_client: Any,
    *,
    zones_client: Any = None,
    pricing_endpoint: str | None = None,
    session: Any = None,
    clock: Any = None,
) -> Snapshot:
    """A fresh snapshot of ``region`` from the live APIs: machine types through
    ``machine_types_client`` (``compute_v1.MachineTypesClient``), zones through
    ``zones_client`` (``compute_v1.ZonesClient``; without one, the zones the machine types
    name) and prices from :func:`karpenter_gcp.pricing.fetch_prices`. Raises
    :class:`karpenter_gcp.machinetypes.MachineTypeError` or
    :class:`karpenter_gcp.pricing.PricingError`."""
    from karpenter_gcp.machinetypes import list_machine_types
    from karpenter_gcp.pricing import fetch_prices
    from karpenter_gcp.pricing import pricing_endpoint as default_endpoint

    endpoint = pricing_endpoint or default_endpoint()
    types = list_machine_types(machine_types_client, project, region)
    zones = (
        list_zones(zones_client, project, region)
        if zones_client is not None
        else sorted({z for mt in types for z in mt.zones})
    )
    on_demand, spot = fetch_prices(region, endpoint=endpoint, session=session)
    now = clock.now() if clock is not None else datetime.now(UTC)
    return Snapshot(
        region=region,
        zones=zones,
        machine_types=types,
        on_demand=on_demand,
        spot=spot,
        generated_at=now,
        machine_types_recorded_at=now,
        provenance=(
            f"machine types (machineTypes.aggregatedList, project {project}) and prices "
            f"({endpoint}) read live on {bundled.format_time(now)}"
        ),
    )


def _refresh(args: argparse.Namespace) -> int:
    from google.cloud import compute_v1

    from karpenter_gcp.pricing import PricingError

    if not args.project:
        print("refresh: --project is required", file=sys.stderr)
        return 2
    options: dict[str, Any] = {}
    if args.compute_endpoint:
        from google.api_core.client_options import ClientOptions
        from google.auth.credentials import AnonymousCredentials

        options["client_options"] = ClientOptions(api_endpoint=args.compute_endpoint)
        if args.compute_endpoint.startswith("http://"):
            options["credentials"] = AnonymousCredentials()
    machine_types = compute_v1.MachineTypesClient(**options)
    zones = compute_v1.ZonesClient(**options)
    failed = 0
    for region in args.region:
        try:
            snapshot = refresh_region(
                region,
                args.project,
                machine_types,
                zones_client=zones,
                pricing_endpoint=args.pricing_endpoint or None,
            )
        except (MachineTypeError, PricingError) as err:
            print(f"refresh {region}: {err}", file=sys.stderr)
            failed += 1
            continue
        except Exception as err:  # the zones call, credentials
            print(f"refresh {region}: {type(err).__name__}: {err}", file=sys.stderr)
            failed += 1
            continue
        path = write_snapshot(snapshot, args.output_dir)
        print(
            f"{region}: {len(snapshot.machine_types)} machine types in {len(snapshot.zones)} "
            f"zones, {len(snapshot.on_demand)} on-demand and {len(snapshot.spot)} spot "
            f"prices -> {path}"
        )
    return 1 if failed else 0


def _import(args: argparse.Namespace) -> int:
    from karpenter_gcp.pricing import PricingError, prices_from_csv

    try:
        data = json.loads(Path(args.machine_types).read_text(encoding="utf-8"))
        prefix = f"{args.region}-"
        types = []
        for mt in machine_types_from_json(data):
            zones = tuple(z for z in mt.zones if z.startswith(prefix))
            if zones:
                types.append(evolve(mt, zones=zones))
    except (OSError, ValueError, MachineTypeError) as err:
        print(f"import: {args.machine_types}: {err}", file=sys.stderr)
        return 1
    on_demand: dict[str, float] = {}
    spot: dict[str, float] = {}
    if args.prices:
        try:
            table = prices_from_csv(Path(args.prices).read_text(encoding="utf-8"))
        except (OSError, PricingError) as err:
            print(f"import: {args.prices}: {err}", file=sys.stderr)
            return 1
        on_demand, spot = table.get(args.region, ({}, {}))
    now = datetime.now(UTC)
    recorded = bundled.parse_time(args.recorded_at) if args.recorded_at else now
    snapshot = Snapshot(
        region=args.region,
        zones=sorted({z for mt in types for z in mt.zones}),
        machine_types=types,
        on_demand=on_demand,
        spot=spot,
        generated_at=recorded,
        machine_types_recorded_at=recorded,
        provenance=args.provenance
        or f"imported from {Path(args.machine_types).name}"
        + (f" and {Path(args.prices).name}" if args.prices else ""),
    )
    path = write_snapshot(snapshot, args.output_dir)
    print(
        f"{args.region}: {len(types)} machine types, {len(on_demand)} on-demand and "
        f"{len(spot)} spot prices -> {path}"
    )
    return 0


def _list(_: argparse.Namespace) -> int:
    for region in REGIONS:
        snap = load_snapshot(region)
        print(
            f"{region}: {len(snap.machine_types)} machine types in {', '.join(snap.zones)} "
            f"(recorded {bundled.format_time(snap.machine_types_recorded_at)}), "
            f"{len(snap.on_demand)} on-demand / {len(snap.spot)} spot prices "
            f"(retrieved {bundled.format_time(snap.generated_at)})"
        )
    print(f"prices for {len(PRICE_REGIONS)} regions")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m karpenter_gcp.catalogue",
        description="The bundled GCP catalogue (machine types and prices).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    refresh = sub.add_parser("refresh", help="rewrite regions' snapshots from the live APIs")
    refresh.add_argument("--region", action="append", required=True, help="repeatable")
    refresh.add_argument("--project", default="", help="project whose machine types to list")
    refresh.add_argument("--output-dir", type=Path, default=_default_output_dir())
    refresh.add_argument(
        "--compute-endpoint",
        default="",
        help="Compute API endpoint (default Google's; http:// uses anonymous credentials)",
    )
    refresh.add_argument("--pricing-endpoint", default="")
    refresh.set_defaults(run=_refresh)
    imp = sub.add_parser("import", help="write a snapshot from saved API responses")
    imp.add_argument("--region", required=True)
    imp.add_argument(
        "--machine-types",
        required=True,
        help="gcloud compute machine-types list --format=json output (or aggregatedList)",
    )
    imp.add_argument("--prices", default="", help="saved machine-types-regions.csv")
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
