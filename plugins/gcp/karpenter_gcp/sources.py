"""Where the provider's instance types come from: live GCE or the bundled snapshot.

Serving (Google clients present): the region's machine types from
``machineTypes.aggregatedList`` and prices from the price table upstream reads, both
refreshed every 12 hours (upstream's instance-type and pricing controllers); when a call
fails, what was known is kept, and at start-up the bundled snapshot stands in (the
machine types only when the region is bundled, the prices for every region upstream
prices), so an outage of either never stops launches. Catalogue only (``karpenter
instance-types`` / ``schedule``, no credentials): the bundled snapshot and nothing else
— no network call, no wait on a timeout.

The settings it reads (attributes, or keys of a mapping of the plugin's settings):
``region`` (also ``cluster_location`` / ``cluster-location``; upstream's
``CLUSTER_LOCATION``), ``vm_memory_overhead_percent`` (``vm-memory-overhead-percent``,
0.07 by default), ``project_id`` (``project-id``) and ``pricing_endpoint``
(``pricing-endpoint``; default :func:`karpenter_gcp.pricing.pricing_endpoint`). The
clients it uses: ``machine_types`` (``compute_v1.MachineTypesClient``), optionally
``zones`` (``compute_v1.ZonesClient``; the zones offerings are made in), and
``project``/``project_id`` when the settings have none.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from karpenter_gcp.catalogue import REGIONS, CatalogueError, list_zones, load_snapshot
from karpenter_gcp.instancetypes import DEFAULT_VM_MEMORY_OVERHEAD_PERCENT, InstanceTypeProvider
from karpenter_gcp.machinetypes import MachineType, list_machine_types
from karpenter_gcp.pricing import PricingProvider

if TYPE_CHECKING:
    from karpenter_core.plugin_api import Clock, InstanceType, UnavailableOfferings

__all__ = ["CatalogueSource", "setting"]

log = logging.getLogger("karpenter.gcp.catalogue")


def setting(settings: Any, *names: str, default: Any = None) -> Any:
    """The first of ``names`` ``settings`` has, as an attribute or a mapping key (each
    name tried as written and with ``_`` spelled ``-``); ``default`` when none is set."""
    for name in names:
        for key in (name, name.replace("_", "-")):
            if isinstance(settings, Mapping):
                value = settings.get(key)
            else:
                value = getattr(settings, key, None)
            if value not in (None, ""):
                return value
    return default


class CatalogueSource:
    """Instance types for a GCENodeClass (or the default view), priced; thread-safe."""

    def __init__(
        self,
        settings: Any,
        clients: Any | None,
        clock: Clock,
        unavailable: UnavailableOfferings | None,
    ) -> None:
        self.region = str(setting(settings, "region", "cluster_location", default="") or "")
        if not self.region:
            self.region = REGIONS[0] if "us-central1" not in REGIONS else "us-central1"
        self.project = str(
            setting(settings, "project_id", default="")
            or setting(clients, "project", "project_id", default="")
            or ""
        )
        self._clients = clients
        self._lock = threading.Lock()
        self._loaded = False
        self._cluster_zones: list[str] | None = None
        overhead = float(
            setting(
                settings,
                "vm_memory_overhead_percent",
                default=DEFAULT_VM_MEMORY_OVERHEAD_PERCENT,
            )
        )
        self.pricing = PricingProvider(
            self.region,
            clock=clock,
            endpoint=setting(settings, "pricing_endpoint", default=None),
            fetch=clients is not None,
        )
        self.types = InstanceTypeProvider(
            self.region,
            self.pricing,
            clock=clock,
            unavailable=unavailable,
            vm_memory_overhead_percent=overhead,
        )

    @property
    def live(self) -> bool:
        """Whether machine types and prices are read from Google (clients present)."""
        return self._clients is not None

    def _machine_types_client(self) -> Any:
        return setting(self._clients, "machine_types", "machine_types_client")

    def _list_live(self) -> tuple[Sequence[MachineType], list[str] | None]:
        types = list_machine_types(self._machine_types_client(), self.project, self.region)
        zones_client = setting(self._clients, "zones", "zones_client")
        zones = None
        if zones_client is not None:
            try:
                zones = list_zones(zones_client, self.project, self.region) or None
            except Exception as e:
                log.warning(
                    "gcp: listing the zones of %s failed (%s); using the machine types' zones",
                    self.region,
                    e,
                )
        return types, zones

    def _ensure_loaded(self) -> None:
        with self._lock:
            if self._loaded:
                return
            types, zones = self._initial()
            self.types.update_machine_types(types)
            self.types.update_zones(self._cluster_zones or zones)
            self._loaded = True

    def set_cluster_zones(self, zones: Sequence[str] | None) -> None:
        """Offer only the cluster's node locations (upstream ``ResolveClusterZones``),
        whatever zones the region lists; None goes back to the region's."""
        with self._lock:
            self._cluster_zones = sorted(set(zones)) if zones else None
            if self._loaded:
                self.types.update_zones(self._cluster_zones)

    def _initial(self) -> tuple[Sequence[MachineType], list[str] | None]:
        if self._clients is None:
            # CatalogueError names the bundled regions.
            return load_snapshot(self.region).machine_types, None
        try:
            return self._list_live()
        except Exception as e:
            if self.region in REGIONS:
                log.warning(
                    "gcp: listing machine types in %s failed (%s); using the bundled "
                    "snapshot until the next refresh",
                    self.region,
                    e,
                )
                return load_snapshot(self.region).machine_types, None
            raise CatalogueError(f"gcp: cannot list machine types in {self.region}: {e}") from e

    def instance_types(self, nodeclass: Any | None) -> list[InstanceType]:
        """The priced instance types ``nodeclass`` allows (upstream's defaults for None)."""
        self._ensure_loaded()
        return list(self.types.list(nodeclass))

    def machine_type(self, name: str) -> MachineType | None:
        """The machine type named ``name`` (its GPUs and local SSDs, for launching)."""
        self._ensure_loaded()
        return self.types.get(name)

    def refresh(self) -> bool:
        """Re-list machine types and zones (live only) and prices; True when everything
        succeeded. With no clients it does nothing and returns True."""
        if self._clients is None:
            return True
        ok = self.pricing.refresh()
        try:
            types, zones = self._list_live()
        except Exception as e:
            log.warning("gcp: refreshing machine types failed, keeping the last: %s", e)
            return False
        with self._lock:
            self.types.update_machine_types(types)
            self.types.update_zones(self._cluster_zones or zones)
            self._loaded = True
        return ok
