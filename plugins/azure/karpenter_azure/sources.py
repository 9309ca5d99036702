"""Where the provider's instance types come from: live Azure or the bundled snapshot.

Serving (Azure clients present): the region's Resource SKUs from ARM and prices from the
retail prices API, both refreshed every 12 hours (``azure.catalogue.refresh``); when a
call fails, what was known is kept, and at start-up the bundled snapshot stands in (the
SKUs only when the region is bundled, the prices for every public region), so a pricing
outage never stops launches. Catalogue only (``karpenter instance-types`` /
``schedule``, no credentials): the bundled snapshot and nothing else — no network call,
no wait on a timeout.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from karpenter_azure.catalogue import REGIONS, CatalogueError, load_snapshot
from karpenter_azure.instancetypes import InstanceTypeProvider
from karpenter_azure.pricing import PricingProvider
from karpenter_azure.skus import Sku, list_skus

if TYPE_CHECKING:
    from karpenter_azure.clients import AzureClients
    from karpenter_azure.nodeclass import AKSNodeClass
    from karpenter_azure.settings import AzureSettings
    from karpenter_core.plugin_api import Clock, InstanceType, UnavailableOfferings

__all__ = ["CatalogueSource"]

log = logging.getLogger("karpenter.azure.catalogue")


class CatalogueSource:
    """Instance types for an AKSNodeClass (or the default view), priced; thread-safe."""

    def __init__(
        self,
        settings: AzureSettings,
        clients: AzureClients | None,
        clock: Clock,
        unavailable: UnavailableOfferings,
    ) -> None:
        self.region = settings.region or REGIONS[0]
        self._clients = clients
        self._lock = threading.Lock()
        self._skus_loaded = False
        self.pricing = PricingProvider(
            self.region,
            clock=clock,
            endpoint=settings.pricing_endpoint or None,
            fetch=clients is not None,
        )
        self.types = InstanceTypeProvider(
            self.region,
            self.pricing,
            clock=clock,
            unavailable=unavailable,
            network_plugin=settings.network_plugin,
            network_plugin_mode=settings.network_plugin_mode,
            vm_memory_overhead_percent=settings.vm_memory_overhead_percent,
            node_resource_group=settings.node_resource_group,
        )

    def _ensure_skus(self) -> None:
        with self._lock:
            if self._skus_loaded:
                return
            skus = self._initial_skus()
            self.types.update_skus(skus)
            self._skus_loaded = True

    def _initial_skus(self) -> Sequence[Sku]:
        if self._clients is None:
            return load_snapshot(self.region).skus  # CatalogueError names the bundled regions
        try:
            return list_skus(self._clients.compute, self.region)
        except Exception as e:
            if self.region in REGIONS:
                log.warning(
                    "azure: listing Resource SKUs in %s failed (%s); using the bundled "
                    "snapshot until the next refresh",
                    self.region,
                    e,
                )
                return load_snapshot(self.region).skus
            raise CatalogueError(f"azure: cannot list Resource SKUs in {self.region}: {e}") from e

    def instance_types(self, nodeclass: AKSNodeClass | None) -> list[InstanceType]:
        """The priced instance types ``nodeclass`` allows (every supported SKU for None)."""
        self._ensure_skus()
        return list(self.types.list(nodeclass))

    def capabilities(self, sku_name: str) -> Mapping[str, str] | None:
        """The Resource SKU's capabilities (name → value) the launch template reads for
        the OS disk placement; None for an unknown SKU."""
        self._ensure_skus()
        sku = self.types.get(sku_name)
        return sku.capability_map() if sku is not None else None

    def refresh(self) -> bool:
        """Re-list SKUs (live only) and prices; True when everything succeeded."""
        ok = self.pricing.refresh() if self._clients is not None else True
        if self._clients is not None:
            try:
                skus = list_skus(self._clients.compute, self.region)
            except Exception as e:
                log.warning("azure: refreshing Resource SKUs failed, keeping the last: %s", e)
                return False
            with self._lock:
                self.types.update_skus(skus)
                self._skus_loaded = True
        return ok
