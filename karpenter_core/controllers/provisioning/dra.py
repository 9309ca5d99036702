"""Reading the cluster's DRA objects for a solve (upstream ``provisioning/dra.go``'s
listing; the solve filters and allocates, :mod:`karpenter_core.provisioning.scheduler.dra`).

Each pass lists DeviceClasses, ResourceClaims, ResourceClaimTemplates and ResourceSlices
through the controllers' client (the informer cache under ``serve`` when it holds them) and
parses each object once per resourceVersion. A cluster without the ``resource.k8s.io/v1``
API (or a client that does not know the kinds) has no DRA objects: that is said once in the
log, and pods with claims then wait with "not found" errors rather than failing every
provisioning pass. An object that cannot be parsed is left out, with a warning naming it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from karpenter_core.apis.accessors import meta_of
from karpenter_core.apis.base import APIError
from karpenter_core.apis.resource import (
    API_VERSION,
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from karpenter_core.kube.client import KubeClient, NotFound, UnknownResourceError, resource_for
from karpenter_core.provisioning.scheduler import DRAInputs

__all__ = ["DRA_KINDS", "DRAReader"]

log = logging.getLogger("karpenter.provisioner")

DRA_KINDS = ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice")

_PARSERS: dict[str, Callable[[Any], Any]] = {
    "DeviceClass": DeviceClass.from_dict,
    "ResourceClaim": ResourceClaim.from_dict,
    "ResourceClaimTemplate": ResourceClaimTemplate.from_dict,
    "ResourceSlice": ResourceSlice.from_dict,
}


class DRAReader:
    """Lists and parses the DRA kinds for each solve (one per provisioner)."""

    def __init__(self, kube: KubeClient) -> None:
        self.kube = kube
        # kind -> (namespace, name) -> (resourceVersion, parsed object or None if unreadable)
        self._parsed: dict[str, dict[tuple[str, str], tuple[str, Any]]] = {}
        self._unavailable: set[str] = set()

    def read(self, deleting_pod_uids: Iterable[str] = ()) -> DRAInputs:
        """The cluster's DRA objects now; ``deleting_pod_uids`` are the pods being moved off
        nodes that are going away. Raises the client's ``ApiError`` when a list fails for
        another reason than the API being absent."""
        objects = {kind: self._list(kind) for kind in DRA_KINDS}
        return DRAInputs.of(
            objects["DeviceClass"],
            objects["ResourceClaim"],
            objects["ResourceClaimTemplate"],
            objects["ResourceSlice"],
            deleting_pod_uids,
        )

    def _list(self, kind: str) -> list[Any]:
        try:
            rt = resource_for((API_VERSION, kind))
            items = self.kube.list(rt).items
        except (UnknownResourceError, NotFound) as e:
            if kind not in self._unavailable:
                self._unavailable.add(kind)
                log.warning(
                    "%s: %s is not available (%s); pods' ResourceClaims cannot be simulated "
                    "against it",
                    API_VERSION,
                    kind,
                    e,
                )
            return []
        self._unavailable.discard(kind)
        cache = self._parsed.setdefault(kind, {})
        seen: dict[tuple[str, str], tuple[str, Any]] = {}
        out: list[Any] = []
        for obj in items:
            meta = meta_of(obj)
            key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
            rv = str(meta.get("resourceVersion") or "")
            hit = cache.get(key)
            if hit is None or hit[0] != rv or not rv:
                hit = (rv, self._parse(kind, key, obj))
            seen[key] = hit
            if hit[1] is not None:
                out.append(hit[1])
        self._parsed[kind] = seen
        return out

    @staticmethod
    def _parse(kind: str, key: tuple[str, str], obj: Any) -> Any:
        try:
            return _PARSERS[kind](obj)
        except (APIError, ValueError, TypeError) as e:
            where = f"{key[0]}/{key[1]}" if key[0] else key[1]
            log.warning("ignoring %s %s: %s", kind, where, e)
            return None
