"""The common parts of an API object's JSON, read tolerantly.

Code that works on stored objects as JSON (patches, watch predicates and mappers, the
in-memory API server, provider plugins) reads ``metadata``, ``spec``, ``status``, labels,
annotations, name and namespace with these instead of ``(obj.get("metadata") or {})``
chains and private copies of the same few lines (upstream reads them with
``GetLabels()``-style accessors on typed objects).

Each is total: a part that is missing, null or not the expected shape reads as an empty,
read-only mapping (or ``""``), never an error. A part that is there is returned as it is
(no copy), typed read-only; copy it before changing it. Validation belongs to the parsers
(:mod:`karpenter_core.apis.objects`, :mod:`karpenter_core.apis.v1`), not here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

__all__ = [
    "EMPTY",
    "annotations_of",
    "labels_of",
    "meta_of",
    "name_of",
    "namespace_of",
    "spec_of",
    "status_of",
]

EMPTY: Final[Mapping[str, Any]] = MappingProxyType({})
"""The read-only empty mapping a missing part reads as."""


# Each reads its part inline (no shared helper): the in-memory API server calls these on every
# request. isinstance checks dict (every decoded object) before the slower Mapping ABC.


def meta_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``metadata``."""
    value = obj.get("metadata")
    return value if isinstance(value, (dict, Mapping)) else EMPTY


def spec_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``spec``."""
    value = obj.get("spec")
    return value if isinstance(value, (dict, Mapping)) else EMPTY


def status_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``status``."""
    value = obj.get("status")
    return value if isinstance(value, (dict, Mapping)) else EMPTY


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    """``metadata.labels``."""
    meta = obj.get("metadata")
    value = meta.get("labels") if isinstance(meta, (dict, Mapping)) else None
    return value if isinstance(value, (dict, Mapping)) else EMPTY


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    """``metadata.annotations``."""
    meta = obj.get("metadata")
    value = meta.get("annotations") if isinstance(meta, (dict, Mapping)) else None
    return value if isinstance(value, (dict, Mapping)) else EMPTY


def name_of(obj: Mapping[str, Any]) -> str:
    """``metadata.name`` ("" when unset)."""
    meta = obj.get("metadata")
    return str(meta.get("name") or "") if isinstance(meta, (dict, Mapping)) else ""


def namespace_of(obj: Mapping[str, Any]) -> str:
    """``metadata.namespace`` ("" when unset: cluster-scoped, or not given)."""
    meta = obj.get("metadata")
    return str(meta.get("namespace") or "") if isinstance(meta, (dict, Mapping)) else ""
