"""``nodeclass.status`` for AKSNodeClasses (upstream ``pkg/controllers/nodeclass/status`` and
``pkg/controllers/nodeclass/hash``), from what is available without Azure access.

Each reconcile of an AKSNodeClass:

* keeps the drift-hash annotations (``karpenter.azure.com/aksnodeclass-hash`` /
  ``-hash-version``) current; when the hash version changes, the class's NodeClaims that
  have not drifted get the new hash and version first, so a hash change alone drifts
  nothing (upstream's hash controller);
* validates the spec (:mod:`karpenter_azure.nodeclass`): an invalid one gets
  ``ValidationSucceeded=False`` (reason ``InvalidSpec``, the message naming every field)
  and a Warning event; nothing else is resolved and the controller does not raise;
* resolves the Kubernetes version (``status.kubernetesVersion``) from the API server's
  ``/version`` when the kube client offers ``server_version()``, else from the
  ``kubernetes-version`` setting; ``KubernetesVersionReady``;
* resolves the images (``status.images``) from the bundled image-family table
  (:mod:`karpenter_azure.images`) for that version; ``ImagesReady`` (False with
  ``SIGRequiredForFIPS`` for FIPS, as upstream without the AKS-managed gallery);
* checks the subnet id (the spec's ``vnetSubnetID`` or the ``vnet-subnet-id`` setting)
  parses as an ARM subnet id; ``SubnetsReady`` (False with ``SubnetIDInvalid``). Whether
  the subnet exists needs Azure and is not checked;
* sets ``ValidationSucceeded`` and ``Ready`` (the conjunction), stamped with the generation.

Status is written with the merge patch :meth:`ConditionSet.status_patch` builds (carrying
the ``resourceVersion`` read), plus the images and version.
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

from karpenter_azure.drift import HASH_ANNOTATION, HASH_VERSION_ANNOTATION, hash_annotations
from karpenter_azure.images import FIPS_NEEDS_SIG, status_images
from karpenter_azure.labels import AKS_NODE_CLASS
from karpenter_azure.nodeclass import (
    CONDITION_IMAGES_READY,
    CONDITION_KUBERNETES_VERSION_READY,
    CONDITION_SUBNETS_READY,
    CONDITION_VALIDATION_SUCCEEDED,
    NODECLASS_RESOURCE,
    READY_CONDITIONS,
    AKSNodeClass,
    NodeClassError,
)
from karpenter_core.plugin_api import (
    ApiError,
    Clock,
    ConditionSet,
    Conflict,
    EventRecorder,
    KubeClient,
    NotFound,
    ObjectKey,
    Result,
    Watch,
    ensure_hash_annotations,
)

__all__ = ["CONTROLLER_NAME", "REQUEUE", "WATCHES", "NodeClassStatusReconciler", "parse_version"]

log = logging.getLogger("karpenter.azure.nodeclass")

CONTROLLER_NAME = "nodeclass.status"
REQUEUE = 300.0
"""The Kubernetes version (and with it the images) is re-read every five minutes."""
_NODECLAIMS = ("karpenter.sh/v1", "NodeClaim")
_SUBNET_ID = re.compile(
    r"(?i)^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Network/"
    r"virtualNetworks/[^/]+/subnets/[^/]+$"
)
WATCHES = (Watch(NODECLASS_RESOURCE),)


def parse_version(version: Mapping[str, Any] | str) -> str:
    """``1.31.2`` from ``/version``'s body (``gitVersion: v1.31.2+abc``) or a setting
    (``v1.31`` -> ``1.31``); ``""`` when it is not a version."""
    text = str(version.get("gitVersion", "")) if isinstance(version, Mapping) else version
    m = re.match(r"^v?(\d+\.\d+(?:\.\d+)?)", text.strip())
    return m[1] if m else ""


class NodeClassStatusReconciler:
    """Reconciles one AKSNodeClass at a time (see the module docstring)."""

    def __init__(
        self,
        kube: KubeClient,
        clock: Clock,
        recorder: EventRecorder,
        settings: Mapping[str, str],
        *,
        kubernetes_version: str | Callable[[], str] | None = None,
    ) -> None:
        """``kubernetes_version`` overrides discovery (tests); otherwise the API server's
        ``/version``, then the ``kubernetes-version`` setting."""
        self.kube = kube
        self.clock = clock
        self.recorder = recorder
        self.settings = dict(settings)
        self._kubernetes_version = kubernetes_version

    # ------------------------------------------------------------------ entry point

    def reconcile(self, key: ObjectKey) -> Result:
        try:
            obj = self.kube.get(NODECLASS_RESOURCE, key.name)
        except NotFound:
            return Result()
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            return Result()
        try:
            nodeclass: AKSNodeClass | None = AKSNodeClass.from_dict(obj)
            error = ""
        except NodeClassError as e:
            nodeclass, error = None, str(e)
        if nodeclass is not None:
            updated = self._ensure_hash(obj, nodeclass)
            if updated is None:
                return Result(requeue=True)
            obj = updated
        status_obj = copy.deepcopy(obj)
        conditions = ConditionSet(status_obj, self.clock, dependents=READY_CONDITIONS)
        extra: dict[str, Any] = {}
        if nodeclass is None:
            conditions.set_false(CONDITION_VALIDATION_SUCCEEDED, "InvalidSpec", error)
            self.recorder.warning(obj, "InvalidSpec", error)
            return self._write(obj, conditions, extra) or Result()
        version = self._kubernetes_version_ready(conditions, extra)
        self._images_ready(nodeclass, version, conditions, extra)
        self._subnets_ready(nodeclass, conditions)
        conditions.set_true(CONDITION_VALIDATION_SUCCEEDED)
        return self._write(obj, conditions, extra) or Result.after(REQUEUE)

    # ------------------------------------------------------------------ hash

    def _ensure_hash(self, obj: dict[str, Any], nodeclass: AKSNodeClass) -> dict[str, Any] | None:
        """The object with current hash annotations (None: a write conflicted, retry)."""
        return ensure_hash_annotations(
            self.kube,
            NODECLASS_RESOURCE,
            obj,
            hash_annotations(nodeclass),
            hash_key=HASH_ANNOTATION,
            version_key=HASH_VERSION_ANNOTATION,
            kind=AKS_NODE_CLASS.kind,
        )

    # ------------------------------------------------------------------ conditions

    def _discover_version(self) -> str:
        if self._kubernetes_version is not None:
            v = self._kubernetes_version
            return parse_version(v() if callable(v) else v)
        server_version = getattr(self.kube, "server_version", None)
        if callable(server_version):
            try:
                found = parse_version(server_version())
            except (ApiError, OSError) as e:
                log.debug("GET /version failed: %s", e)
                found = ""
            if found:
                return found
        return parse_version(self.settings.get("kubernetes-version") or "")

    def _kubernetes_version_ready(self, conditions: ConditionSet, extra: dict[str, Any]) -> str:
        version = self._discover_version()
        if not version:
            conditions.set_false(
                CONDITION_KUBERNETES_VERSION_READY,
                "KubernetesVersionNotFound",
                "the API server's /version is not available and the kubernetes-version "
                "setting is empty",
            )
            return ""
        extra["kubernetesVersion"] = version
        conditions.set_true(CONDITION_KUBERNETES_VERSION_READY)
        return version

    def _images_ready(
        self,
        nodeclass: AKSNodeClass,
        version: str,
        conditions: ConditionSet,
        extra: dict[str, Any],
    ) -> None:
        if not version:
            conditions.set_false(
                CONDITION_IMAGES_READY,
                "KubernetesVersionNotReady",
                "images depend on the Kubernetes version, which is not resolved",
            )
            return
        if nodeclass.fips:
            conditions.set_false(CONDITION_IMAGES_READY, "SIGRequiredForFIPS", FIPS_NEEDS_SIG)
            extra["images"] = []
            return
        images = status_images(
            nodeclass, version, self.settings.get("node-image-version") or "latest"
        )
        if not images:
            conditions.set_false(
                CONDITION_IMAGES_READY, "ImagesNotFound", "ImageSelectors did not match any Images"
            )
        else:
            conditions.set_true(CONDITION_IMAGES_READY)
        extra["images"] = images

    def _subnets_ready(self, nodeclass: AKSNodeClass, conditions: ConditionSet) -> None:
        subnet = nodeclass.vnet_subnet_id or self.settings.get("vnet-subnet-id") or ""
        where = "spec.vnetSubnetID" if nodeclass.vnet_subnet_id else "the vnet-subnet-id setting"
        if not _SUBNET_ID.match(subnet):
            conditions.set_false(
                CONDITION_SUBNETS_READY,
                "SubnetIDInvalid",
                f"{where}: {subnet!r} is not an ARM subnet id "
                "(/subscriptions/<sub>/resourceGroups/<rg>/providers/Microsoft.Network/"
                "virtualNetworks/<vnet>/subnets/<subnet>)",
            )
            return
        conditions.set_true(CONDITION_SUBNETS_READY)

    # ------------------------------------------------------------------ write

    def _write(
        self, obj: dict[str, Any], conditions: ConditionSet, extra: Mapping[str, Any]
    ) -> Result | None:
        status = obj.get("status") or {}
        patch = conditions.status_patch()
        changed = {k: v for k, v in extra.items() if status.get(k) != v}
        if patch is None and not changed:
            return None
        if patch is None:
            patch = {"status": {}}
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if rv:
                patch["metadata"] = {"resourceVersion": rv}
        patch["status"].update(copy.deepcopy(changed))
        try:
            self.kube.patch(
                NODECLASS_RESOURCE, obj["metadata"]["name"], patch, subresource="status"
            )
        except NotFound:
            return Result()
        except Conflict:
            return Result(requeue=True)
        return None
