"""The Azure provider's controllers, registered through the ``karpenter_controllers`` hook,
each running only with the ``azure`` cloud provider selected:

- ``nodeclass.status``: AKSNodeClass validation, images, Kubernetes version, conditions
  and the drift-hash annotations;
- ``azure.catalogue.refresh``: Resource SKUs and retail prices every 12 hours (5 minutes
  after a failure), as upstream's pricing and instance-type refreshers;
- ``azure.nic.gc``: network interfaces this cluster created whose VM never came to be
  (upstream's ``networkinterface.garbagecollection``); VMs without a NodeClaim are the
  core's ``nodeclaim.garbagecollection`` (through the provider's ``list``).
"""

from __future__ import annotations

import logging
from typing import Any

from karpenter_azure import nodeclass_status
from karpenter_azure.provider import NAME, AzureCloudProvider
from karpenter_core.plugin_api import (
    ControllerContext,
    ControllerSpec,
    Reconciler,
    Result,
    SingletonReconciler,
)

__all__ = ["CATALOGUE_REFRESH", "CONTROLLERS", "NIC_GC"]

log = logging.getLogger("karpenter.azure")

CATALOGUE_REFRESH = "azure.catalogue.refresh"
NIC_GC = "azure.nic.gc"
REFRESH_INTERVAL = 12 * 3600.0
REFRESH_RETRY = 300.0
NIC_GC_INTERVAL = 120.0


def _provider(ctx: ControllerContext) -> AzureCloudProvider:
    provider = ctx.base_cloud_provider
    if not isinstance(provider, AzureCloudProvider):
        raise TypeError(f"expected the azure cloud provider, got {type(provider).__name__}")
    return provider


def _nodeclass_status(ctx: ControllerContext) -> Reconciler:
    provider = ctx.base_cloud_provider
    settings: dict[str, str] = {}
    if isinstance(provider, AzureCloudProvider):
        s = provider.settings
        settings = {
            "kubernetes-version": s.kubernetes_version,
            "node-image-version": s.node_image_version,
            "vnet-subnet-id": s.vnet_subnet_id,
        }
    return nodeclass_status.NodeClassStatusReconciler(ctx.kube, ctx.clock, ctx.recorder, settings)


class _Refresh:
    def __init__(self, catalogue: Any) -> None:
        self._catalogue = catalogue

    def reconcile(self) -> Result:
        try:
            ok = bool(self._catalogue.refresh())
        except Exception as e:
            log.warning("azure: refreshing the catalogue failed: %s", e)
            ok = False
        return Result.after(REFRESH_INTERVAL if ok else REFRESH_RETRY)


def _refresh(ctx: ControllerContext) -> SingletonReconciler:
    return _Refresh(_provider(ctx).catalogue)


class _NicGC:
    """Deletes this cluster's NICs that are attached to no VM and belong to no VM being
    created (a NIC whose VM name is an in-flight launch is left alone)."""

    def __init__(self, provider: AzureCloudProvider) -> None:
        self._provider = provider

    def reconcile(self) -> Result:
        vms = self._provider.vms
        if vms is None:
            return Result()
        try:
            live = {vm.name.lower() for vm in vms.list()}
            for nic in vms.list_nics():
                if nic.vm_id or nic.name.lower() in live:
                    continue
                if self._provider.launching(nic.name):
                    continue
                log.info("azure: deleting orphan network interface %s", nic.name)
                vms.delete_nic(nic.name)
        except Exception as e:
            log.warning("azure: network interface garbage collection failed: %s", e)
        return Result.after(NIC_GC_INTERVAL)


def _nic_gc(ctx: ControllerContext) -> SingletonReconciler:
    return _NicGC(_provider(ctx))


CONTROLLERS = (
    ControllerSpec(
        nodeclass_status.CONTROLLER_NAME,
        _nodeclass_status,
        watches=nodeclass_status.WATCHES,
        cloud_provider=NAME,
    ),
    ControllerSpec(CATALOGUE_REFRESH, _refresh, singleton=True, cloud_provider=NAME),
    ControllerSpec(NIC_GC, _nic_gc, singleton=True, cloud_provider=NAME),
)
"""Every controller the Azure plugin registers."""
