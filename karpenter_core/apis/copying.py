"""Copying API objects (JSON-like values), for every layer: the API models' parse cache
keeps private copies, the clients hand out copies of what they cache."""

from __future__ import annotations

from typing import Any

__all__ = ["deep_copy"]


def deep_copy(value: Any) -> Any:
    """Copy a JSON-like value (dicts, lists, scalars); tuples become lists.

    Several times faster than ``copy.deepcopy`` on API objects, which matters when thousands
    of pods are listed (from the in-memory server or from an informer's cache).
    """
    if isinstance(value, dict):
        return {k: deep_copy(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [deep_copy(v) for v in value]
    return value
