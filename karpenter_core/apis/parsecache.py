"""Parse each stored version of an API object once.

Objects arrive as the API server's JSON (watch events, periodic re-reads, the object a
create returned); the engine wants the typed model. A :class:`VersionedParser` remembers the
model of each stored version, keyed by uid and resourceVersion (both change whenever the
object does), and hands out the same model when the same version comes again.

The key finds the earlier parse; the object's content confirms it (a copy is kept to
compare with), because uids are unique only within one API server and one process may talk
to several (simulations, tests), and a caller may have changed the dict in place. An object
without a uid or a resourceVersion (hand-written, not stored) is parsed every time.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

__all__ = ["VersionedParser"]

M = TypeVar("M")

DEFAULT_MAX_ENTRIES = 4096


class VersionedParser(Generic[M]):
    """``parse(obj)``, once per stored version (see the module docstring); the newest
    ``max_entries`` versions are remembered. Errors of ``parse`` propagate and nothing is
    remembered for that object. Thread-safe."""

    def __init__(
        self, parse: Callable[[Mapping[str, Any]], M], *, max_entries: int = DEFAULT_MAX_ENTRIES
    ) -> None:
        self._parse = parse
        self._max = max_entries
        self._lock = threading.Lock()
        self._parsed: OrderedDict[tuple[str, str], tuple[Mapping[str, Any], M]] = OrderedDict()

    def __call__(self, obj: Mapping[str, Any]) -> M:
        meta = obj.get("metadata")
        key = ("", "")
        if isinstance(meta, Mapping):
            key = (str(meta.get("uid") or ""), str(meta.get("resourceVersion") or ""))
        if not all(key):
            return self._parse(obj)
        with self._lock:
            found = self._parsed.get(key)
            if found is not None:
                self._parsed.move_to_end(key)
        if found is not None and found[0] == obj:
            return found[1]
        model = self._parse(obj)
        with self._lock:
            self._parsed[key] = (copy.deepcopy(obj), model)
            while len(self._parsed) > self._max:
                self._parsed.popitem(last=False)
        return model

    def __len__(self) -> int:
        with self._lock:
            return len(self._parsed)

    def clear(self) -> None:
        with self._lock:
            self._parsed.clear()
