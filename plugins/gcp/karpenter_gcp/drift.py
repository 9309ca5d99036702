"""The GCENodeClass drift hash (upstream ``GCENodeClass.Hash`` / ``GCENodeClassHashVersion``)
and the two drift checks the provider runs (upstream ``pkg/cloudprovider/drift.go``).

Upstream hashes the spec without ``imageSelectorTerms`` (``hash:"ignore"``: image changes
are caught by image drift, which compares the launched image with ``status.images``),
together with the resolved image family, ignoring zero values and comparing lists as sets.
This module does the same over the defaulted spec: absent fields, ``""``, empty lists or
maps and a ``false`` of upstream's non-pointer booleans (``autoGPUTaint``, a disk's
``boot``) do not count; lists are order-insensitive, and so is map key order. An explicit
``false`` or ``0`` of a pointer field (``shieldedInstanceConfig.enableVtpm: false``,
``kubeletConfiguration.maxPods: 0``) counts, as upstream.

The digest is SHA-256 based, not upstream's hashstructure FNV: the values differ from
upstream's, so a NodeClaim launched by upstream Karpenter and adopted by this one is only
compared when it carries *this* implementation's hash version, :data:`HASH_VERSION`
(``"py-v4"``: upstream's v4 field set, our algorithm). A NodeClaim stamped with another
version is never reported drifted by the hash; the status controller restamps it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from karpenter_gcp.labels import GROUP
from karpenter_gcp.nodeclass import GCENodeClass

__all__ = [
    "HASH_ANNOTATION",
    "HASH_IGNORED",
    "HASH_VERSION",
    "HASH_VERSION_ANNOTATION",
    "IMAGE_DRIFT",
    "NODECLASS_DRIFT",
    "hash_annotations",
    "image_drift",
    "nodeclass_hash",
    "static_drift",
]

HASH_VERSION = "py-v4"
"""Bump when a hashed field's default changes, a field with a set value enters the hash,
or a field leaves it (upstream's rules for ``GCENodeClassHashVersion``, now v4)."""
HASH_ANNOTATION = f"{GROUP}/gcenodeclass-hash"
HASH_VERSION_ANNOTATION = f"{GROUP}/gcenodeclass-hash-version"
HASH_IGNORED = frozenset({"imageSelectorTerms"})
NODECLASS_DRIFT = "NodeClassDrift"
IMAGE_DRIFT = "ImageDrift"


def _canonical(value: Any) -> Any:
    """Zero values dropped (None: absent), maps sorted, lists as sorted sets."""
    if isinstance(value, Mapping):
        out = {str(k): _canonical(v) for k, v in value.items()}
        return {k: v for k, v in sorted(out.items()) if v not in (None, {})} or None
    if isinstance(value, list | tuple):
        items = [_canonical(v) for v in value]
        items = [v for v in items if v is not None]
        if not items:
            return None
        encoded = sorted({json.dumps(v, sort_keys=True) for v in items})
        return [json.loads(v) for v in encoded]
    if value == "" or value is None:
        return None
    return value


def _without_false_values(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Upstream's non-pointer booleans at their zero value are ignored like absent ones."""
    out = dict(spec)
    if out.get("autoGPUTaint") is False:
        del out["autoGPUTaint"]
    if isinstance(out.get("disks"), list):
        out["disks"] = [
            {k: v for k, v in d.items() if not (k == "boot" and v is False)}
            if isinstance(d, Mapping)
            else d
            for d in out["disks"]
        ]
    return out


def nodeclass_hash(nodeclass: GCENodeClass) -> str:
    """The drift hash of ``nodeclass``'s (defaulted) spec and image family, a decimal
    string like upstream's."""
    spec = {k: v for k, v in nodeclass.spec.items() if k not in HASH_IGNORED}
    payload = {
        "spec": _canonical(_without_false_values(spec)) or {},
        "imageFamily": nodeclass.image_family,
    }
    digest = hashlib.sha256(
        json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
    ).digest()
    return str(int.from_bytes(digest[:8], "big"))


def hash_annotations(nodeclass: GCENodeClass) -> dict[str, str]:
    """The annotations the status controller keeps on the GCENodeClass (and launches
    stamp on NodeClaims)."""
    return {HASH_ANNOTATION: nodeclass_hash(nodeclass), HASH_VERSION_ANNOTATION: HASH_VERSION}


def static_drift(nodeclaim_annotations: Mapping[str, str], nodeclass: GCENodeClass) -> str:
    """``NodeClassDrift`` when the NodeClaim's launch-time hash of the same version differs
    from the GCENodeClass's current one; ``""`` otherwise (or when either is missing)."""
    claim_hash = nodeclaim_annotations.get(HASH_ANNOTATION)
    claim_version = nodeclaim_annotations.get(HASH_VERSION_ANNOTATION)
    if not claim_hash or claim_version != HASH_VERSION:
        return ""
    return NODECLASS_DRIFT if claim_hash != nodeclass_hash(nodeclass) else ""


def image_drift(image_id: str, nodeclass: GCENodeClass) -> str:
    """``ImageDrift`` when the NodeClaim's ``status.imageID`` ends with none of the
    GCENodeClass's resolved ``status.images[].sourceImage`` (upstream compares by suffix:
    the instance reports a full URL, the status a ``projects/...`` path); ``""`` otherwise.
    Like upstream, a NodeClass with no resolved images drifts every NodeClaim."""
    for image in nodeclass.images:
        source = str(image.get("sourceImage") or "")
        if source and image_id.endswith(source):
            return ""
    return IMAGE_DRIFT
