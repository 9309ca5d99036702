"""Copying API objects (JSON-like values), for every layer: the API models' parse cache
keeps private copies, the clients hand out copies of what they cache."""

from __future__ import annotations

from typing import Any

__all__ = ["deep_copy"]


_ATOMS = frozenset((str, int, float, bool, type(None)))
"""Leaf types, returned as they are without a call (most of an API object's values)."""


def deep_copy(value: Any) -> Any:
    """Copy a JSON-like value (dicts, lists, scalars); tuples become lists.

    Several times faster than ``copy.deepcopy`` on API objects, which matters when thousands
    of pods are listed (from the in-memory server or from an informer's cache). Leaves are
    taken as they are without a call per leaf, which halved the cost of copying a pod.
    """
    kind = type(value)
    if kind is dict:
        return {k: v if type(v) in _ATOMS else deep_copy(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [v if type(v) in _ATOMS else deep_copy(v) for v in value]
    if isinstance(value, dict):
        return {k: deep_copy(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [deep_copy(v) for v in value]
    return value
