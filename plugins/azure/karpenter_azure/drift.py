"""The AKSNodeClass drift hash (upstream ``AKSNodeClass.Hash`` / ``AKSNodeClassHashVersion``).

Upstream hashes the whole spec except ``tags`` (``hash:"ignore"``: tags are updated in
place, not by replacing nodes), ignoring zero values and comparing lists as sets. This
module does the same over the defaulted spec: absent fields, ``""`` and empty lists or
maps do not count, lists are order-insensitive, and so is map key order. An explicit
``false`` or ``0`` counts (upstream's pointer fields are non-zero when set).

The digest is SHA-256 based, not upstream's hashstructure FNV: the values differ from
upstream's, so a NodeClaim launched by upstream Karpenter and adopted by this one is only
compared when it carries *this* implementation's hash version, :data:`HASH_VERSION`
(``"py-v3"``: upstream's v3 field set, our algorithm). A NodeClaim stamped with another
version is never reported drifted by the hash; the status controller restamps it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from karpenter_azure.labels import GROUP
from karpenter_azure.nodeclass import AKSNodeClass

__all__ = [
    "HASH_ANNOTATION",
    "HASH_IGNORED",
    "HASH_VERSION",
    "HASH_VERSION_ANNOTATION",
    "NODECLASS_DRIFT",
    "hash_annotations",
    "nodeclass_hash",
    "static_drift",
]

HASH_VERSION = "py-v3"
"""Bump when a hashed field's default changes, a field with a set value enters the hash,
or a field leaves it (upstream's rules for ``AKSNodeClassHashVersion``, now v3)."""
HASH_ANNOTATION = f"{GROUP}/aksnodeclass-hash"
HASH_VERSION_ANNOTATION = f"{GROUP}/aksnodeclass-hash-version"
HASH_IGNORED = frozenset({"tags"})
NODECLASS_DRIFT = "NodeClassDrift"


def _canonical(value: Any) -> Any:
    """Zero values dropped (None: absent), maps sorted, lists as sorted sets."""
    if isinstance(value, Mapping):
        out = {str(k): _canonical(v) for k, v in value.items()}
        return {k: v for k, v in sorted(out.items()) if v is not None}
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


def _drop_empty(value: Any) -> Any:
    if isinstance(value, dict):
        out = {k: _drop_empty(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [])} or None
    return value


def nodeclass_hash(nodeclass: AKSNodeClass) -> str:
    """The drift hash of ``nodeclass``'s (defaulted) spec, a decimal string like upstream's."""
    spec = {k: v for k, v in nodeclass.spec.items() if k not in HASH_IGNORED}
    payload = _drop_empty(_canonical(spec)) or {}
    digest = hashlib.sha256(
        json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
    ).digest()
    return str(int.from_bytes(digest[:8], "big"))


def hash_annotations(nodeclass: AKSNodeClass) -> dict[str, str]:
    """The annotations the status controller keeps on the AKSNodeClass (and launches will
    stamp on NodeClaims)."""
    return {HASH_ANNOTATION: nodeclass_hash(nodeclass), HASH_VERSION_ANNOTATION: HASH_VERSION}


def static_drift(nodeclaim_annotations: Mapping[str, str], nodeclass: AKSNodeClass) -> str:
    """``NodeClassDrift`` when the NodeClaim's launch-time hash of the same version differs
    from the AKSNodeClass's current one; ``""`` otherwise (or when either is missing)."""
    claim_hash = nodeclaim_annotations.get(HASH_ANNOTATION)
    claim_version = nodeclaim_annotations.get(HASH_VERSION_ANNOTATION)
    if not claim_hash or claim_version != HASH_VERSION:
        return ""
    return NODECLASS_DRIFT if claim_hash != nodeclass_hash(nodeclass) else ""
