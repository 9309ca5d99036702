"""The offline EC2 catalogue: instance types, their zones and prices bundled as package data.

``karpenter instance-types --cloud-provider aws --region R`` and ``karpenter schedule
--cloud-provider aws`` must work with no credentials and no network, and ``karpenter
serve`` must have prices when the pricing API is unreachable (isolated VPCs, GovCloud,
China, an outage). Both read what this module loads from ``karpenter_aws/data/``:

``data/instance-types.json.gz``
    ``DescribeInstanceTypes`` records (boto3's ``InstanceTypeInfo`` dicts, only the fields
    :mod:`karpenter_aws.instancetypes` reads) keyed by name; one table for every region
    (EC2 describes a type the same way wherever it is sold).
``data/regions/<region>.json.gz``
    A region's zones (name -> zone id) and which instance types each zone offers
    (``DescribeInstanceTypeOfferings``, location type ``availability-zone``), when they
    were recorded and where they came from. :func:`load_region` reads one;
    :data:`REGIONS` names them.
``data/prices.json.gz``
    On-demand USD/hour (CNY in China, as the pricing API answers there) per region, a
    column per region. A region without a column is priced from ``us-east-1``'s, as
    upstream does with its generated tables (:func:`initial_prices`).

Spot: nothing is bundled. As upstream, a type's spot price is its on-demand price until
the first successful ``DescribeSpotPriceHistory`` (:class:`karpenter_aws.pricing.
PricingProvider`), so spot offerings are usable offline and ordered sensibly.

Provenance of the bundled data (this machine had no AWS credentials, so nothing was read
from AWS itself):

- Instance types and per-zone offerings of the 30 regions moto 5.2.5 records
  (``moto/ec2/resources/instance_types.json.gz`` and
  ``instance_type_offerings/availability-zone/<region>.json.gz``, recorded from EC2 by
  moto's maintainers), read through moto's EC2 server with the ``refresh`` command below,
  zone ids included.
- On-demand prices of us-east-1, us-gov-east-1, us-gov-west-1 and cn-north-1 (the regions
  upstream generates tables for) are upstream karpenter-provider-aws's generated tables
  (``pkg/providers/pricing/zz_generated.pricing_aws*.go``), read with ``import-prices``.
- cn-north-1, us-gov-east-1 and us-gov-west-1 have no offering records in moto: their
  types are those priced there that the instance-type table knows, listed in every zone
  moto gives the region (cn-north-1a/b, us-gov-*-a/b/c): per-zone availability is an
  approximation there until a refresh with credentials.

Refreshing (with AWS credentials; boto3's usual chain)::

    python -m karpenter_aws.catalogue refresh --region us-east-1 --region eu-west-1 \\
        [--output-dir karpenter_aws/data] [--endpoint-url URL] [--skip-prices]

reads the instance types, offerings and zones from EC2 and the region's on-demand prices
from the pricing API and rewrites the region's file, its column of the price table and
the instance-type records it read. Without network where the data is built, the same
files come from saved responses::

    aws ec2 describe-instance-types --region R --output json > types.json
    aws ec2 describe-instance-type-offerings --location-type availability-zone \\
        --region R --output json > offerings.json
    aws ec2 describe-availability-zones --region R --output json > zones.json
    python -m karpenter_aws.catalogue import --region R --instance-types types.json \\
        --offerings offerings.json --zones zones.json
    python -m karpenter_aws.catalogue import-prices --prices prices.json --region R

``--prices`` reads a ``price-list-file`` JSON object, saved ``pricing get-products``
output, or one of upstream's generated price tables (the regions are named inside).
``python -m karpenter_aws.catalogue list`` prints the bundled regions.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from attrs import evolve, field, frozen

from karpenter_aws.clients import AWSClients
from karpenter_aws.instancetypes import Catalogue
from karpenter_core.plugin_api import catalogue as bundled

__all__ = [
    "DATA",
    "PRICE_FALLBACK_REGION",
    "PRICE_REGIONS",
    "REGIONS",
    "SCHEMA",
    "CatalogueError",
    "OfflineError",
    "RegionSnapshot",
    "bundled_prices",
    "initial_prices",
    "instance_type_infos",
    "is_offline",
    "load_catalogue",
    "load_region",
    "main",
    "offline_clients",
    "prices_from_file",
    "refresh_region",
    "trim_info",
    "write_prices",
    "write_region",
]

log = logging.getLogger("karpenter.aws.catalogue")

SCHEMA = 1
"""Version of the data file format."""

CatalogueError = bundled.CatalogueError

DATA = bundled.BundledData(
    "karpenter_aws", "AWS", "python -m karpenter_aws.catalogue refresh --region {region}"
)

PRICE_FALLBACK_REGION = "us-east-1"
"""The region whose prices stand in for a region without its own (upstream's choice)."""

_ON_DEMAND = "onDemand"
_TYPES_FILE = "instance-types.json.gz"

_INFO_KEYS = frozenset(
    {
        "InstanceType",
        "BareMetal",
        "BurstablePerformanceSupported",
        "CurrentGeneration",
        "EbsInfo",
        "FpgaInfo",
        "GpuInfo",
        "Hypervisor",
        "InferenceAcceleratorInfo",
        "InstanceStorageInfo",
        "InstanceStorageSupported",
        "MediaAcceleratorInfo",
        "MemoryInfo",
        "NetworkInfo",
        "NeuronInfo",
        "NitroEnclavesSupport",
        "ProcessorInfo",
        "SupportedUsageClasses",
        "SupportedVirtualizationTypes",
        "VCpuInfo",
    }
)
"""What of an ``InstanceTypeInfo`` is bundled: what building an instance type reads."""

_DROPPED_NETWORK_KEYS = ("ConnectionTrackingConfiguration",)


def trim_info(info: Mapping[str, Any]) -> dict[str, Any]:
    """``info`` with only the fields instance types are built from (a third the size)."""
    out = {k: v for k, v in info.items() if k in _INFO_KEYS}
    network = out.get("NetworkInfo")
    if isinstance(network, Mapping):
        out["NetworkInfo"] = {k: v for k, v in network.items() if k not in _DROPPED_NETWORK_KEYS}
    return out


def _launchable(info: Mapping[str, Any]) -> bool:
    """hvm and x86_64/arm64: what the live catalogue asks EC2 for (its filters)."""
    virt = info.get("SupportedVirtualizationTypes")
    archs = (info.get("ProcessorInfo") or {}).get("SupportedArchitectures") or ()
    return (virt is None or "hvm" in virt) and any(a in ("x86_64", "arm64") for a in archs)


def _zone_tuple(value: Iterable[str]) -> frozenset[str]:
    return frozenset(value)


def _offerings(value: Mapping[str, Iterable[str]]) -> Mapping[str, frozenset[str]]:
    return {str(k): frozenset(v) for k, v in value.items()}


def _zones(value: Mapping[str, str]) -> Mapping[str, str]:
    return dict(value)


@frozen
class RegionSnapshot:
    """One region's bundled catalogue: its zones and what each zone offers."""

    region: str
    zones: Mapping[str, str] = field(converter=_zones)
    """Zone name -> zone id ("" when unknown)."""
    offerings: Mapping[str, frozenset[str]] = field(converter=_offerings)
    """Instance type -> the zones that offer it."""
    recorded_at: datetime
    provenance: str = ""

    def to_dict(self) -> dict[str, Any]:
        by_zone: dict[str, list[str]] = {z: [] for z in self.zones}
        for name, zones in self.offerings.items():
            for zone in zones:
                by_zone.setdefault(zone, []).append(name)
        return {
            "schema": SCHEMA,
            "region": self.region,
            "recordedAt": bundled.format_time(self.recorded_at),
            "provenance": self.provenance,
            "zones": dict(sorted(self.zones.items())),
            "offerings": {z: sorted(names) for z, names in sorted(by_zone.items())},
        }

    @classmethod
    def from_dict(cls, data: Any, where: str) -> RegionSnapshot:
        if not isinstance(data, Mapping) or data.get("schema") != SCHEMA:
            raise CatalogueError(f"{where}: not a schema-{SCHEMA} AWS catalogue region")
        offerings: dict[str, set[str]] = {}
        for zone, names in (data.get("offerings") or {}).items():
            if not isinstance(names, list):
                raise CatalogueError(f"{where}: offerings of {zone!r} are not a list")
            for name in names:
                offerings.setdefault(str(name), set()).add(str(zone))
        zones = data.get("zones") or {}
        if not isinstance(zones, Mapping):
            raise CatalogueError(f"{where}: zones are not an object")
        return cls(
            region=str(data.get("region", "")),
            zones={str(k): str(v or "") for k, v in zones.items()},
            offerings=offerings,
            recorded_at=bundled.parse_time(data.get("recordedAt")),
            provenance=str(data.get("provenance", "")),
        )


REGIONS: tuple[str, ...] = DATA.regions()
"""Regions with a bundled catalogue (instance types and zones)."""

PRICE_REGIONS: tuple[str, ...] = DATA.price_regions(_ON_DEMAND)
"""Regions with their own bundled on-demand prices (the others use us-east-1's)."""


@functools.cache
def instance_type_infos() -> Mapping[str, Mapping[str, Any]]:
    """Every bundled ``InstanceTypeInfo`` by name."""
    entry = DATA.data_dir() / _TYPES_FILE
    if not entry.is_file():
        return {}
    data = bundled.read_json_gz(entry)
    infos = data.get("instanceTypes") if isinstance(data, Mapping) else None
    return dict(infos) if isinstance(infos, Mapping) else {}


@functools.cache
def load_region(region: str) -> RegionSnapshot:
    """The bundled catalogue of ``region``; :class:`CatalogueError` naming the bundled
    regions when there is none."""
    data, where = DATA.read_region(region)
    return RegionSnapshot.from_dict(data, where)


def load_region_file(path: str | Path) -> RegionSnapshot:
    """A region file outside the package (what the commands just wrote)."""
    return RegionSnapshot.from_dict(bundled.read_json_gz(Path(path)), str(path))


@functools.cache
def load_catalogue(region: str) -> Catalogue:
    """``region``'s bundled catalogue in the shape EC2's gives
    (:func:`karpenter_aws.instancetypes.describe_catalogue`)."""
    snap = load_region(region)
    infos = instance_type_infos()
    known = {name: infos[name] for name in snap.offerings if name in infos}
    if not known:
        raise CatalogueError(f"bundled catalogue {region}: no instance type it offers is known")
    return Catalogue(
        region=region,
        infos=known,
        zones_by_type={name: snap.offerings[name] for name in known},
        zone_ids={z: i for z, i in snap.zones.items() if i},
    )


def bundled_prices(region: str) -> bundled.PriceTable | None:
    """``region``'s own bundled on-demand prices; None when none are bundled for it."""
    on_demand = DATA.price_column(_ON_DEMAND, region)
    if on_demand is None:
        return None
    table = DATA.price_table
    return bundled.PriceTable(
        region=region,
        on_demand=on_demand,
        spot={},
        generated_at=bundled.parse_time((table.get("generatedAtByRegion") or {}).get(region)),
        provenance=str(table.get("provenance", "")),
    )


def initial_prices(region: str) -> bundled.PriceTable | None:
    """The prices to start from in ``region``: its own bundled ones, else us-east-1's (as
    upstream: the relative order of types is what matters before the first refresh);
    None only when nothing is bundled at all."""
    own = bundled_prices(region)
    if own is not None:
        return own
    return bundled_prices(PRICE_FALLBACK_REGION)


# --- catalogue-only clients ------------------------------------------------------------------


class OfflineError(RuntimeError):
    """An AWS API was called on a provider built for the offline catalogue."""


class _OfflineService:
    """Stands in for a boto3 client where no AWS call may be made: any call raises."""

    def __init__(self, service: str) -> None:
        self.service = service

    def __getattr__(self, name: str) -> Any:
        raise OfflineError(
            f"aws: {self.service}.{name} called on a provider built for the offline catalogue "
            "(no cluster, no credentials): only listing instance types works"
        )


def offline_clients(region: str) -> AWSClients:
    """Clients for a provider that never reaches AWS (catalogue commands)."""
    return AWSClients(
        region=region,
        ec2=_OfflineService("ec2"),
        ssm=_OfflineService("ssm"),
        iam=_OfflineService("iam"),
        pricing=_OfflineService("pricing"),
        sqs=_OfflineService("sqs"),
        eks=_OfflineService("eks"),
    )


def is_offline(clients: AWSClients) -> bool:
    """Whether ``clients`` came from :func:`offline_clients`."""
    return isinstance(clients.ec2, _OfflineService)


# --- writing ---------------------------------------------------------------------------------


def write_region(
    snapshot: RegionSnapshot, infos: Mapping[str, Mapping[str, Any]], output_dir: str | Path
) -> Path:
    """Write ``snapshot`` as ``<output_dir>/regions/<region>.json.gz`` and merge ``infos``
    (trimmed) into the instance-type table; returns the region file's path.

    Types the price table there prices neither for the region nor for us-east-1 are left
    out (said in a warning): offline they could never launch, as an offering without a
    price is unavailable, and every bundled type is meant to be usable."""
    out = Path(output_dir)
    path = out / "regions" / f"{snapshot.region}{bundled.SUFFIX}"
    priced = priced_names(out, snapshot.region)
    if priced is not None:
        unpriced = sorted(set(snapshot.offerings) - priced)
        if unpriced:
            log.warning(
                "%s: %d instance types have no bundled price and are left out: %s",
                snapshot.region,
                len(unpriced),
                ", ".join(unpriced[:10]) + (" ..." if len(unpriced) > 10 else ""),
            )
            snapshot = evolve(
                snapshot,
                offerings={n: z for n, z in snapshot.offerings.items() if n in priced},
            )
    bundled.write_json_gz(path, snapshot.to_dict())
    types_path = out / _TYPES_FILE
    table: dict[str, Any] = {}
    if types_path.is_file():
        table = dict(bundled.read_json_gz(types_path).get("instanceTypes") or {})
    table.update({name: trim_info(info) for name, info in infos.items()})
    bundled.write_json_gz(
        types_path, {"schema": SCHEMA, "instanceTypes": dict(sorted(table.items()))}
    )
    return path


def priced_names(output_dir: str | Path, region: str) -> set[str] | None:
    """The types the price table in ``output_dir`` prices for ``region`` (its own column,
    else us-east-1's); None when there is no table to judge by."""
    path = Path(output_dir) / "prices.json.gz"
    if not path.is_file():
        return None
    data = bundled.read_json_gz(path)
    names = data.get("names") or []
    columns = data.get(_ON_DEMAND) or {}
    column = columns.get(region) or columns.get(PRICE_FALLBACK_REGION)
    if not isinstance(column, list):
        return None
    return {n for n, p in zip(names, column, strict=False) if p is not None}


def write_prices(
    region: str,
    on_demand: Mapping[str, float],
    output_dir: str | Path,
    *,
    generated_at: datetime,
    provenance: str,
) -> Path:
    """Put ``region``'s on-demand prices into ``<output_dir>/prices.json.gz``."""
    path = Path(output_dir) / "prices.json.gz"
    dates: dict[str, str] = {}
    if path.is_file():
        dates = dict(bundled.read_json_gz(path).get("generatedAtByRegion") or {})
    bundled.update_price_table(
        path,
        region,
        {_ON_DEMAND: on_demand},
        generated_at=generated_at,
        provenance=provenance,
        kinds=(_ON_DEMAND,),
    )
    data = bundled.read_json_gz(path)
    dates[region] = bundled.format_time(generated_at)
    data["generatedAtByRegion"] = dict(sorted(dates.items()))
    bundled.write_json_gz(path, data)
    return path


# --- reading saved responses -------------------------------------------------------------------


def _load_json(path: str | Path) -> Any:
    p = Path(path)
    if p.name.endswith(".gz"):
        return bundled.read_json_gz(p)
    return json.loads(p.read_text(encoding="utf-8"))


def infos_from_json(data: Any) -> dict[str, Mapping[str, Any]]:
    """``InstanceTypeInfo`` records by name from ``describe-instance-types`` output (one
    page or a list of pages), a list of records, or an object keyed by name."""
    if isinstance(data, Mapping) and "InstanceTypes" in data:
        records: Iterable[Any] = data.get("InstanceTypes") or ()
    elif (
        isinstance(data, list)
        and data
        and isinstance(data[0], Mapping)
        and ("InstanceTypes" in data[0])
    ):
        records = [r for page in data for r in page.get("InstanceTypes") or ()]
    elif isinstance(data, Mapping):
        records = data.values()
    elif isinstance(data, list):
        records = data
    else:
        raise CatalogueError("not a list of InstanceTypeInfo records")
    out: dict[str, Mapping[str, Any]] = {}
    for record in records:
        if not isinstance(record, Mapping) or not record.get("InstanceType"):
            raise CatalogueError("an instance type record has no InstanceType")
        if _launchable(record):
            out[str(record["InstanceType"])] = record
    return out


def offerings_from_json(data: Any) -> dict[str, set[str]]:
    """Instance type -> zones from ``describe-instance-type-offerings`` output (location
    type ``availability-zone``) or a list of ``{InstanceType, Location}`` records."""
    records = data.get("InstanceTypeOfferings") if isinstance(data, Mapping) else data
    if not isinstance(records, list):
        raise CatalogueError("not a list of InstanceTypeOffering records")
    out: dict[str, set[str]] = {}
    for record in records:
        if not isinstance(record, Mapping) or not record.get("InstanceType"):
            raise CatalogueError("an offering record has no InstanceType")
        location_type = record.get("LocationType", "availability-zone")
        if location_type == "availability-zone" and record.get("Location"):
            out.setdefault(str(record["InstanceType"]), set()).add(str(record["Location"]))
    return out


def zones_from_json(data: Any) -> dict[str, str]:
    """Zone name -> id from ``describe-availability-zones`` output (availability zones
    only: no Local or Wavelength Zones, which the provider does not launch in)."""
    records = data.get("AvailabilityZones") if isinstance(data, Mapping) else data
    if not isinstance(records, list):
        raise CatalogueError("not a list of AvailabilityZone records")
    return {
        str(z["ZoneName"]): str(z.get("ZoneId") or "")
        for z in records
        if isinstance(z, Mapping)
        and z.get("ZoneName")
        and z.get("ZoneType", "availability-zone") == "availability-zone"
    }


_GO_REGION = re.compile(r'^\s*"([a-z]{2}(?:-[a-z]+)+-\d+)":\s*\{', re.MULTILINE)
_GO_PRICE = re.compile(r'"([a-z0-9][a-z0-9-]*\.[a-z0-9-]+)":\s*([0-9]+(?:\.[0-9]+)?)')


def _prices_from_go_table(text: str) -> dict[str, dict[str, float]]:
    """Region -> prices from upstream's generated price table (its region blocks are
    ``"us-east-1": {`` followed by ``"type": price`` pairs); read as data."""
    starts = list(_GO_REGION.finditer(text))
    out: dict[str, dict[str, float]] = {}
    for i, match in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        block = text[match.end() : end]
        out[match.group(1)] = {name: float(p) for name, p in _GO_PRICE.findall(block)}
    return out


def prices_from_file(path: str | Path, region: str | None) -> dict[str, dict[str, float]]:
    """Region -> on-demand prices from a saved file: a ``price-list-file`` JSON object
    (needs ``region``), saved ``pricing get-products`` output (one page, or a list of
    pages; needs ``region``), or one of upstream's generated Go tables (names its regions).
    Raises :class:`CatalogueError`."""
    from karpenter_aws.pricing import PriceListError, load_price_list, parse_price_item

    p = Path(path)
    text = p.read_text(encoding="utf-8")
    if p.suffix == ".go":
        table = _prices_from_go_table(text)
        if not table:
            raise CatalogueError(f"{p.name}: no region block found")
        return {r: prices for r, prices in table.items() if region is None or r == region}
    if not region:
        raise CatalogueError(f"{p.name}: --region is required for this kind of price file")
    data = json.loads(text)
    pages = data if isinstance(data, list) else [data]
    if pages and all(isinstance(page, Mapping) and "PriceList" in page for page in pages):
        currency = "CNY" if region.startswith("cn-") else "USD"
        prices: dict[str, float] = {}
        for page in pages:
            for raw in page.get("PriceList") or ():
                parsed = parse_price_item(raw, currency)
                if parsed is not None:
                    prices[parsed[0]] = parsed[1]
        return {region: prices}
    try:
        return {region: load_price_list(p)}
    except PriceListError as err:
        raise CatalogueError(str(err)) from None


# --- refreshing from AWS -----------------------------------------------------------------------


def refresh_region(
    clients: AWSClients, *, clock: Any = None
) -> tuple[RegionSnapshot, Mapping[str, Mapping[str, Any]]]:
    """``clients.region``'s catalogue read from EC2 (instance types, offerings, zones):
    the snapshot and the instance-type records. Raises
    :class:`karpenter_aws.instancetypes.CatalogueError`."""
    from karpenter_aws.instancetypes import describe_catalogue

    live = describe_catalogue(clients)
    zones = dict.fromkeys(live.all_zones, "")
    zones.update(live.zone_ids)
    now = clock.now() if clock is not None else datetime.now(UTC)
    snapshot = RegionSnapshot(
        region=clients.region,
        zones=zones,
        offerings=live.zones_by_type,
        recorded_at=now,
        provenance=(
            "EC2 DescribeInstanceTypes, DescribeInstanceTypeOfferings and "
            f"DescribeAvailabilityZones read live on {bundled.format_time(now)}"
        ),
    )
    return snapshot, live.infos


def _refresh(args: argparse.Namespace) -> int:
    from karpenter_aws.instancetypes import CatalogueError as EC2Error
    from karpenter_aws.pricing import PricingError, fetch_on_demand

    failed = 0
    for region in args.region:
        try:
            clients = AWSClients.create(region, endpoint_url=args.endpoint_url or None)
            snapshot, infos = refresh_region(clients)
            if args.provenance:
                snapshot = evolve(snapshot, provenance=args.provenance)
        except (EC2Error, ValueError) as err:
            print(f"refresh {region}: {err}", file=sys.stderr)
            failed += 1
            continue
        if not args.skip_prices:
            try:
                on_demand = fetch_on_demand(clients.pricing, region)
            except PricingError as err:
                print(f"refresh {region}: prices not refreshed: {err}", file=sys.stderr)
                failed += 1
            else:
                now = datetime.now(UTC)
                write_prices(
                    region,
                    on_demand,
                    args.output_dir,
                    generated_at=now,
                    provenance=f"AWS Price List API read live on {bundled.format_time(now)}",
                )
                print(f"{region}: {len(on_demand)} on-demand prices")
        path = write_region(snapshot, infos, args.output_dir)
        kept = len(load_region_file(path).offerings)
        print(f"{region}: {kept} instance types in {len(snapshot.zones)} zones -> {path}")
    return 1 if failed else 0


def _import(args: argparse.Namespace) -> int:
    try:
        infos = infos_from_json(_load_json(args.instance_types))
        zones = zones_from_json(_load_json(args.zones)) if args.zones else {}
        if args.offerings:
            offerings = offerings_from_json(_load_json(args.offerings))
        else:  # every priced type in every zone: an approximation, said in the provenance
            if not zones:
                raise CatalogueError("--zones is needed when --offerings is not given")
            own = bundled_prices(args.region)
            if own is None:
                raise CatalogueError(f"no bundled prices for {args.region}: import them first")
            offerings = {name: set(zones) for name in own.on_demand}
    except (OSError, ValueError) as err:
        print(f"import: {err}", file=sys.stderr)
        return 1
    offerings = {name: z for name, z in offerings.items() if name in infos}
    for zone in {z for zs in offerings.values() for z in zs}:
        zones.setdefault(zone, "")
    recorded = bundled.parse_time(args.recorded_at) if args.recorded_at else datetime.now(UTC)
    snapshot = RegionSnapshot(
        region=args.region,
        zones=zones,
        offerings=offerings,
        recorded_at=recorded,
        provenance=args.provenance
        or f"imported from {Path(args.instance_types).name}"
        + (f" and {Path(args.offerings).name}" if args.offerings else ""),
    )
    path = write_region(snapshot, {n: infos[n] for n in offerings}, args.output_dir)
    kept = len(load_region_file(path).offerings)
    print(f"{args.region}: {kept} instance types in {len(zones)} zones -> {path}")
    return 0


def _import_prices(args: argparse.Namespace) -> int:
    try:
        table = prices_from_file(args.prices, args.region or None)
    except (OSError, ValueError) as err:
        print(f"import-prices: {args.prices}: {err}", file=sys.stderr)
        return 1
    if not table:
        print(f"import-prices: {args.prices}: no prices for {args.region}", file=sys.stderr)
        return 1
    recorded = bundled.parse_time(args.recorded_at) if args.recorded_at else datetime.now(UTC)
    for region, prices in sorted(table.items()):
        write_prices(
            region,
            prices,
            args.output_dir,
            generated_at=recorded,
            provenance=args.provenance or f"imported from {Path(args.prices).name}",
        )
        print(f"{region}: {len(prices)} on-demand prices")
    return 0


def _list(_: argparse.Namespace) -> int:
    for region in REGIONS:
        snap = load_region(region)
        own = bundled_prices(region)
        prices = (
            f"{len(own.on_demand)} on-demand prices"
            if own is not None
            else f"{PRICE_FALLBACK_REGION}'s prices"
        )
        print(
            f"{region}: {len(snap.offerings)} instance types in {len(snap.zones)} zones "
            f"(recorded {bundled.format_time(snap.recorded_at)}), {prices}"
        )
    print(f"{len(instance_type_infos())} instance types; own prices for {', '.join(PRICE_REGIONS)}")
    return 0


def _default_output_dir() -> Path:
    return Path(str(DATA.data_dir()))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m karpenter_aws.catalogue",
        description="The bundled EC2 catalogue (instance types, zones, on-demand prices).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    refresh = sub.add_parser("refresh", help="rewrite regions from the EC2 and pricing APIs")
    refresh.add_argument("--region", action="append", required=True, help="repeatable")
    refresh.add_argument("--endpoint-url", default="", help="EC2/pricing endpoint (testing)")
    refresh.add_argument("--skip-prices", action="store_true", help="leave prices as they are")
    refresh.add_argument("--provenance", default="", help="say where the data came from")
    refresh.add_argument("--output-dir", type=Path, default=_default_output_dir())
    refresh.set_defaults(run=_refresh)
    imp = sub.add_parser("import", help="write a region from saved EC2 responses")
    imp.add_argument("--region", required=True)
    imp.add_argument("--instance-types", required=True, help="describe-instance-types output")
    imp.add_argument("--offerings", default="", help="describe-instance-type-offerings output")
    imp.add_argument("--zones", default="", help="describe-availability-zones output")
    imp.add_argument("--recorded-at", default="", help="when the responses were saved (ISO)")
    imp.add_argument("--provenance", default="")
    imp.add_argument("--output-dir", type=Path, default=_default_output_dir())
    imp.set_defaults(run=_import)
    imp_prices = sub.add_parser("import-prices", help="write on-demand prices from a file")
    imp_prices.add_argument("--prices", required=True)
    imp_prices.add_argument("--region", default="", help="required unless the file names it")
    imp_prices.add_argument("--recorded-at", default="", help="when the prices were read (ISO)")
    imp_prices.add_argument("--provenance", default="")
    imp_prices.add_argument("--output-dir", type=Path, default=_default_output_dir())
    imp_prices.set_defaults(run=_import_prices)
    lst = sub.add_parser("list", help="print the bundled regions")
    lst.set_defaults(run=_list)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the catalogue command; returns the exit status."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
