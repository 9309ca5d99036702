"""``nodeclass.status`` for GCENodeClasses (upstream ``pkg/controllers/nodeclass/status`` and
``pkg/controllers/nodeclass/hash``).

Each reconcile of a GCENodeClass:

* keeps the drift-hash annotations (``karpenter.k8s.gcp/gcenodeclass-hash`` /
  ``-hash-version``) current; when the hash version changes, the class's NodeClaims that
  have not drifted get the new hash and version first, so a hash change alone drifts
  nothing (as the AWS and Azure hash controllers do; upstream GCP only restamps the class);
* validates the spec (:mod:`karpenter_gcp.nodeclass`): an invalid one gets
  ``ValidationSucceeded=False`` (reason ``InvalidSpec``, the message naming every field)
  and a Warning event; nothing else is resolved and the controller does not raise;
* resolves ``status.images`` from the image selector terms (:mod:`karpenter_gcp.images`)
  for the cluster's Kubernetes version: ``ImagesReady`` True (requeue after five minutes,
  as upstream), False ``ImagesNotFound`` (no image matched; no requeue) or False
  ``ImageResolutionFailed`` (the terms cannot be resolved, message cut to 256 characters;
  requeue after a minute);
* sets ``Ready`` (the conjunction), stamped with the generation.

The Kubernetes version comes from the ``kubernetes_version`` option, else the API server's
``/version`` when the kube client offers ``server_version()``, else the optional
``kubernetes-version`` setting. Images are listed through the ``image_lister`` option
(:func:`karpenter_gcp.images.compute_image_lister`); without one only explicit terms
resolve (see :mod:`karpenter_gcp.images`); channel terms read the GKE server config through
the ``channel_source`` option (:func:`karpenter_gcp.images.gke_channel_source`). Errors of
those clients propagate, so the runtime retries with backoff (upstream returns them).

Status is written with the merge patch :meth:`ConditionSet.status_patch` builds (carrying
the ``resourceVersion`` read), plus the images. Upstream also adds the
``karpenter.k8s.gcp/termination`` finalizer here; this provider has no NodeClass
termination controller to remove it, so it does not add it.
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

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
from karpenter_gcp.drift import HASH_ANNOTATION, HASH_VERSION_ANNOTATION, hash_annotations
from karpenter_gcp.images import (
    ChannelSource,
    ImageLister,
    ImageResolutionError,
    status_images,
)
from karpenter_gcp.labels import GCE_NODE_CLASS
from karpenter_gcp.nodeclass import (
    CONDITION_IMAGES_READY,
    CONDITION_VALIDATION_SUCCEEDED,
    NODECLASS_RESOURCE,
    READY_CONDITIONS,
    GCENodeClass,
    NodeClassError,
)

__all__ = [
    "CONTROLLER_NAME",
    "REQUEUE",
    "REQUEUE_RESOLUTION_FAILED",
    "WATCHES",
    "NodeClassStatusReconciler",
    "parse_version",
]

log = logging.getLogger("karpenter.gcp.nodeclass")

CONTROLLER_NAME = "nodeclass.status"
REQUEUE = 300.0
"""Images are re-resolved every five minutes (upstream's requeue after success)."""
REQUEUE_RESOLUTION_FAILED = 60.0
"""A term that cannot be resolved is retried after a minute (upstream)."""
_MESSAGE_LIMIT = 256
_NODECLAIMS = ("karpenter.sh/v1", "NodeClaim")
WATCHES = (Watch(NODECLASS_RESOURCE),)


def parse_version(version: Mapping[str, Any] | str) -> str:
    """``1.31.2`` from ``/version``'s body (``gitVersion: v1.31.2-gke.100``) or a setting
    (``v1.31`` -> ``1.31``); ``""`` when it is not a version."""
    text = str(version.get("gitVersion", "")) if isinstance(version, Mapping) else version
    m = re.match(r"^v?(\d+\.\d+(?:\.\d+)?)", text.strip())
    return m[1] if m else ""


class NodeClassStatusReconciler:
    """Reconciles one GCENodeClass at a time (see the module docstring)."""

    def __init__(
        self,
        kube: KubeClient,
        clock: Clock,
        recorder: EventRecorder,
        settings: Mapping[str, str],
        *,
        kubernetes_version: str | Callable[[], str] | None = None,
        image_lister: ImageLister | None = None,
        channel_source: ChannelSource | None = None,
    ) -> None:
        """``kubernetes_version`` overrides discovery; ``image_lister`` lists Compute
        Engine images (None: offline, explicit terms only); ``channel_source`` reads the
        GKE server config for channel terms (None: channel terms cannot resolve)."""
        self.kube = kube
        self.clock = clock
        self.recorder = recorder
        self.settings = dict(settings)
        self._kubernetes_version = kubernetes_version
        self.image_lister = image_lister
        self.channel_source = channel_source

    # ------------------------------------------------------------------ entry point

    def reconcile(self, key: ObjectKey) -> Result:
        try:
            obj = self.kube.get(NODECLASS_RESOURCE, key.name)
        except NotFound:
            return Result()
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            return Result()
        try:
            nodeclass: GCENodeClass | None = GCENodeClass.from_dict(obj)
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
        conditions.set_true(CONDITION_VALIDATION_SUCCEEDED)
        after = self._images_ready(nodeclass, conditions, extra)
        return self._write(obj, conditions, extra) or after

    # ------------------------------------------------------------------ hash

    def _ensure_hash(self, obj: dict[str, Any], nodeclass: GCENodeClass) -> dict[str, Any] | None:
        """The object with current hash annotations (None: a write conflicted, retry)."""
        return ensure_hash_annotations(
            self.kube,
            NODECLASS_RESOURCE,
            obj,
            hash_annotations(nodeclass),
            hash_key=HASH_ANNOTATION,
            version_key=HASH_VERSION_ANNOTATION,
            kind=GCE_NODE_CLASS.kind,
        )

    # ------------------------------------------------------------------ images

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

    def _images_ready(
        self, nodeclass: GCENodeClass, conditions: ConditionSet, extra: dict[str, Any]
    ) -> Result:
        try:
            images = status_images(
                nodeclass, self._discover_version(), self.image_lister, self.channel_source
            )
        except ImageResolutionError as e:
            log.info("GCENodeClass %s: resolving images: %s", nodeclass.name, e)
            conditions.set_false(
                CONDITION_IMAGES_READY, "ImageResolutionFailed", str(e)[:_MESSAGE_LIMIT]
            )
            return Result.after(REQUEUE_RESOLUTION_FAILED)
        extra["images"] = images
        if not images:
            conditions.set_false(
                CONDITION_IMAGES_READY, "ImagesNotFound", "ImageSelector did not match any Images"
            )
            return Result()
        conditions.set_true(CONDITION_IMAGES_READY)
        return Result.after(REQUEUE)

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
