"""Bundled provider catalogues: the package-data plumbing every provider plugin shares.

``karpenter instance-types --cloud-provider NAME`` and ``karpenter schedule`` must work
with no credentials and no network, and ``karpenter serve`` must keep prices when a
provider's price API is unreachable; so the AWS, Azure and GCP plugins ship a snapshot of
their catalogue as package data. What they share lives here, so the three read and write
their files the same way:

- compact, deterministic gzip JSON (:func:`read_json_gz`, :func:`write_json_gz`: the same
  content always gives the same bytes, so a refresh that changed nothing leaves git clean);
- one ``data/regions/<region>.json.gz`` per bundled region (:class:`BundledData` finds
  them and says which regions exist when asked for one that does not);
- a ``data/prices.json.gz`` price table: one list of names and, per price kind, a column
  per region (:meth:`BundledData.price_column`, :func:`update_price_table`);
- timestamps as ``YYYY-MM-DDTHH:MM:SSZ`` (:func:`parse_time`, :func:`format_time`).

What a region file holds (SKUs, machine types, EC2 instance-type infos) is the plugin's.
"""

from __future__ import annotations

import functools
import gzip
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from attrs import field, frozen

from karpenter_core.apis.base import format_time

__all__ = [
    "SUFFIX",
    "BundledData",
    "CatalogueError",
    "PriceTable",
    "format_time",
    "parse_time",
    "prices_from_json",
    "read_json_gz",
    "update_price_table",
    "write_json_gz",
]

SUFFIX = ".json.gz"
"""The ending of every bundled data file."""


class CatalogueError(ValueError):
    """No bundled catalogue for a region, or a bundled file that cannot be used.

    A ValueError so the CLI reports it in one line."""


def read_json_gz(entry: Traversable | Path) -> Any:
    """The JSON document in a gzip file (a package resource or a path)."""
    with entry.open("rb") as raw:
        return json.loads(gzip.decompress(raw.read()).decode("utf-8"))


def write_json_gz(path: Path, data: Any) -> None:
    """Write ``data`` as compact, key-sorted gzip JSON with mtime 0 (same content, same
    bytes), atomically (a reader never sees half a file)."""
    text = json.dumps(data, separators=(",", ":"), sort_keys=True).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(gzip.compress(text, compresslevel=9, mtime=0))
    tmp.replace(path)


def parse_time(value: Any) -> datetime:
    """An ISO timestamp (``Z`` allowed; naive read as UTC); the epoch when unusable, so an
    old or hand-written file still loads and simply looks very old."""
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return datetime.fromtimestamp(0, UTC)


def prices_from_json(value: Any) -> dict[str, float]:
    """``{name: price}`` from a JSON object, keeping only non-negative numbers."""
    if not isinstance(value, Mapping):
        return {}
    return {
        str(k): float(v)
        for k, v in value.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and v >= 0
    }


def _freeze_prices(value: Mapping[str, float]) -> Mapping[str, float]:
    return dict(value)


@frozen
class PriceTable:
    """Bundled prices of one region (spot empty when none were bundled)."""

    region: str
    on_demand: Mapping[str, float] = field(converter=_freeze_prices)
    spot: Mapping[str, float] = field(converter=_freeze_prices)
    generated_at: datetime
    provenance: str = ""


class BundledData:
    """The ``data/`` folder of one provider package: its region files and price table.

    ``label`` names the provider in messages (``AWS``); ``refresh_hint`` is the command
    that adds a region, with ``{region}`` where the region goes.
    """

    def __init__(self, package: str, label: str, refresh_hint: str) -> None:
        self.package = package
        self.label = label
        self.refresh_hint = refresh_hint

    def data_dir(self) -> Traversable:
        """The package's ``data/`` directory (a zip entry when installed zipped)."""
        return files(self.package) / "data"

    def region_entries(self) -> dict[str, Traversable]:
        """Region name -> its bundled file."""
        folder = self.data_dir() / "regions"
        if not folder.is_dir():
            return {}
        return {
            entry.name[: -len(SUFFIX)]: entry
            for entry in folder.iterdir()
            if entry.name.endswith(SUFFIX)
        }

    def regions(self) -> tuple[str, ...]:
        """The regions with a bundled file, sorted."""
        return tuple(sorted(self.region_entries()))

    def unknown_region(self, region: str) -> CatalogueError:
        """The error for a region with no bundled file: it names the bundled ones and the
        command that adds one."""
        hint = self.refresh_hint.format(region=region or "REGION")
        return CatalogueError(
            f"no bundled {self.label} catalogue for region {region!r}; bundled regions: "
            f"{', '.join(self.regions()) or 'none'} (add one with: {hint})"
        )

    def read_region(self, region: str) -> tuple[Any, str]:
        """The decoded region file of ``region`` and a ``where`` for error messages.
        Raises :class:`CatalogueError` (naming the bundled regions when there is none)."""
        entry = self.region_entries().get(region)
        if entry is None:
            raise self.unknown_region(region)
        where = f"bundled catalogue {region}"
        try:
            return read_json_gz(entry), where
        except (OSError, ValueError) as err:
            raise CatalogueError(f"{where}: cannot be read: {err}") from None

    @functools.cached_property
    def price_table(self) -> Mapping[str, Any]:
        """The decoded ``prices.json.gz`` (empty when the package has none)."""
        entry = self.data_dir() / "prices.json.gz"
        if not entry.is_file():
            return {}
        data = read_json_gz(entry)
        return data if isinstance(data, Mapping) else {}

    def price_regions(self, kind: str) -> tuple[str, ...]:
        """The regions the price table has a ``kind`` column for, sorted."""
        return tuple(sorted((self.price_table.get(kind) or {}).keys()))

    def price_column(self, kind: str, region: str) -> dict[str, float] | None:
        """``region``'s ``kind`` prices from the price table; None when it has no such
        column (or a malformed one)."""
        table = self.price_table
        names = table.get("names") or []
        column = (table.get(kind) or {}).get(region)
        if not isinstance(column, list) or len(column) != len(names):
            return None
        return {n: float(p) for n, p in zip(names, column, strict=True) if p is not None}

    def column_prices(
        self, region: str, on_demand_kind: str, spot_kind: str | None = None
    ) -> PriceTable | None:
        """``region``'s prices from the price table (on-demand from the
        ``on_demand_kind`` column, spot from ``spot_kind``'s when given), dated and sourced
        as the table is; None when the table has no on-demand column for the region."""
        on_demand = self.price_column(on_demand_kind, region)
        if on_demand is None:
            return None
        table = self.price_table
        return PriceTable(
            region=region,
            on_demand=on_demand,
            spot=(self.price_column(spot_kind, region) or {}) if spot_kind else {},
            generated_at=parse_time(table.get("generatedAt")),
            provenance=str(table.get("provenance", "")),
        )


def update_price_table(
    path: Path,
    region: str,
    columns: Mapping[str, Mapping[str, float]],
    *,
    generated_at: datetime,
    provenance: str,
    kinds: tuple[str, ...],
) -> None:
    """Put ``region``'s prices (``columns``: kind -> prices) into the price table at
    ``path``, keeping every other region's; ``kinds`` are the table's columns. The table's
    date and provenance are kept when it has them (they describe the bulk of it)."""
    table: dict[str, dict[str, dict[str, float]]] = {kind: {} for kind in kinds}
    meta: dict[str, Any] = {}
    if path.is_file():
        data = read_json_gz(path)
        names = data.get("names") or []
        for kind in kinds:
            for other, column in (data.get(kind) or {}).items():
                table[kind][other] = {
                    n: p for n, p in zip(names, column, strict=False) if p is not None
                }
        meta = {k: data[k] for k in ("generatedAt", "provenance") if k in data}
    for kind, prices in columns.items():
        table.setdefault(kind, {})[region] = dict(prices)
    names = sorted({n for regions in table.values() for c in regions.values() for n in c})
    write_json_gz(
        path,
        {
            "schema": 1,
            "generatedAt": meta.get("generatedAt", format_time(generated_at)),
            "provenance": meta.get("provenance", provenance),
            "names": names,
            **{
                kind: {r: [c.get(n) for n in names] for r, c in sorted(regions.items())}
                for kind, regions in table.items()
            },
        },
    )
