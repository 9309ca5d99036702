"""One parse of each stored pod version, shared by every component that reads it.

Cluster state, the provisioner, its pod trigger and (in a simulation) the simulated
kube-scheduler each parse the pods they read. Where the objects come uncopied from a
shared cache (the informers under ``serve``, the in-memory API server in a simulation),
they all hold the same dict for the same version, so the parsed :class:`Pod` of that
dict can be shared too: in a 150,000-pod scale-out each new pod was parsed three times,
a tenth of the run. Parsed pods are frozen and read-only everywhere (cluster state
already hands its own to the provisioner).

The cache is keyed by the object's identity (the parsed pod holds the object, so an id
is not reused while its entry lives) and bounded (least recently used dropped first), so
it holds at most :data:`MAX_ENTRIES` versions that nothing else still holds.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from karpenter_core.apis.objects import Pod

__all__ = ["MAX_ENTRIES", "clear", "parsed_pod"]

MAX_ENTRIES = 32_768
"""Pod versions remembered; enough for a provisioning batch's new pods to be read by the
other components before they are dropped."""

_lock = threading.Lock()
_parsed: OrderedDict[int, Pod] = OrderedDict()


def parsed_pod(obj: Mapping[str, Any], earlier: Pod | None = None) -> Pod:
    """``Pod.from_dict(obj)`` (``earlier.refreshed(obj)`` when an earlier version's parse
    is at hand), or the same parse made before of this very object. Raises
    :class:`~karpenter_core.apis.objects.ObjectError` as they do (nothing is kept then)."""
    key = id(obj)
    with _lock:
        hit = _parsed.get(key)
        if hit is not None and hit.raw is obj:
            _parsed.move_to_end(key)
            return hit
    pod = earlier.refreshed(obj) if earlier is not None else Pod.from_dict(obj)
    with _lock:
        _parsed[key] = pod
        _parsed.move_to_end(key)
        while len(_parsed) > MAX_ENTRIES:
            _parsed.popitem(last=False)
    return pod


def clear() -> None:
    """Forget every parse (tests)."""
    with _lock:
        _parsed.clear()
