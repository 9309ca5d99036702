"""The GCP provider's controllers, registered through the ``karpenter_controllers`` hook,
each running only with the ``gcp`` cloud provider selected:

- ``nodeclass.status``: GCENodeClass validation, images (listed from Compute when there
  are credentials), conditions and the drift-hash annotations;
- ``gcp.catalogue.refresh``: machine types and prices every 12 hours (5 minutes after a
  failure), as upstream's pricing and instance-type controllers;
- ``gcp.nodepooltemplate``: re-chooses the node pool whose instance template supplies the
  bootstrap every 5 minutes (upstream's nodepooltemplate controller);
- ``gcp.csr.approval``: approves the kubelet client certificate requests of the nodes
  Karpenter launched (:mod:`karpenter_gcp.csr`), which GKE's own approver leaves alone.
"""

from __future__ import annotations

import logging
from typing import Any

from karpenter_core.plugin_api import (
    ControllerContext,
    ControllerSpec,
    Reconciler,
    Result,
    SingletonReconciler,
)
from karpenter_gcp import csr, nodeclass_status
from karpenter_gcp.provider import NAME, GCPCloudProvider

__all__ = ["CATALOGUE_REFRESH", "CONTROLLERS", "NODEPOOL_TEMPLATE"]

log = logging.getLogger("karpenter.gcp")

CATALOGUE_REFRESH = "gcp.catalogue.refresh"
NODEPOOL_TEMPLATE = "gcp.nodepooltemplate"
REFRESH_INTERVAL = 12 * 3600.0
REFRESH_RETRY = 300.0
TEMPLATE_INTERVAL = 300.0


def _provider(ctx: ControllerContext) -> GCPCloudProvider:
    provider = ctx.base_cloud_provider
    if not isinstance(provider, GCPCloudProvider):
        raise TypeError(f"expected the gcp cloud provider, got {type(provider).__name__}")
    return provider


def _nodeclass_status(ctx: ControllerContext) -> Reconciler:
    provider = ctx.base_cloud_provider
    settings: dict[str, str] = {}
    options: dict[str, Any] = {}
    if isinstance(provider, GCPCloudProvider):
        s = provider.settings
        settings = {"kubernetes-version": s.kubernetes_version}
        clients = provider.clients
        if clients is not None:
            from karpenter_gcp.images import compute_image_lister, gke_channel_source

            options["image_lister"] = compute_image_lister(clients.images)
            options["channel_source"] = gke_channel_source(
                clients.cluster_manager,
                f"projects/{s.project_id}/locations/{s.cluster_location}",
                s.cluster_name,
            )
    return nodeclass_status.NodeClassStatusReconciler(
        ctx.kube, ctx.clock, ctx.recorder, settings, **options
    )


class _Refresh:
    """Machine types and prices, then the zones offerings may use: the cluster's node
    locations (upstream ``ResolveClusterZones``) rather than every zone of the region."""

    def __init__(self, catalogue: Any, gke: Any) -> None:
        self._catalogue = catalogue
        self._gke = gke

    def reconcile(self) -> Result:
        try:
            ok = bool(self._catalogue.refresh())
        except Exception as e:
            log.warning("gcp: refreshing the catalogue failed: %s", e)
            ok = False
        if self._gke is not None:
            try:
                self._catalogue.set_cluster_zones(self._gke.zones())
            except Exception as e:
                log.warning("gcp: reading the cluster's zones failed: %s", e)
                ok = False
        return Result.after(REFRESH_INTERVAL if ok else REFRESH_RETRY)


def _refresh(ctx: ControllerContext) -> SingletonReconciler:
    provider = _provider(ctx)
    return _Refresh(provider.catalogue, provider.gke)


class _Templates:
    def __init__(self, templates: Any) -> None:
        self._templates = templates

    def reconcile(self) -> Result:
        """Choose the source pool; when the cluster has none eligible, create upstream's
        ``karpenter-fallback`` pool (its template then supplies the bootstrap)."""
        if self._templates is None:
            return Result()
        from karpenter_gcp.nodepooltemplate import SourcePoolError

        try:
            self._templates.sync()
        except SourcePoolError as e:
            log.info("gcp: no eligible node pool (%s); ensuring the fallback pool", e)
            try:
                self._templates.ensure_fallback_pool()
            except Exception as e2:
                log.warning("gcp: creating the fallback node pool failed: %s", e2)
        except Exception as e:
            log.warning("gcp: choosing the bootstrap node pool failed: %s", e)
        return Result.after(TEMPLATE_INTERVAL)


def _nodepool_template(ctx: ControllerContext) -> SingletonReconciler:
    return _Templates(_provider(ctx).templates)


CONTROLLERS: tuple[ControllerSpec, ...] = (
    ControllerSpec(
        nodeclass_status.CONTROLLER_NAME,
        _nodeclass_status,
        watches=nodeclass_status.WATCHES,
        cloud_provider=NAME,
    ),
    ControllerSpec(CATALOGUE_REFRESH, _refresh, singleton=True, cloud_provider=NAME),
    ControllerSpec(NODEPOOL_TEMPLATE, _nodepool_template, singleton=True, cloud_provider=NAME),
    csr.CONTROLLER_SPEC,
)
"""Every controller the GCP plugin registers."""
