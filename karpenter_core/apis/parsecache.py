"""Parse each stored version of an API object once.

Objects arrive as the API server's JSON (watch events, periodic re-reads, the object a
create returned); the engine wants the typed model. A :class:`VersionedParser` remembers,
per object (uid), the model of the newest version it parsed (its resourceVersion changes
whenever the object does) and hands out that same model when that version comes again.

The uid and resourceVersion find the earlier parse; the content confirms it: the object
must equal a private copy of the one parsed, because uids are unique only within one API
server and one process may talk to several (simulations, tests), and a caller may have
changed the dict in place. (Comparing dicts runs in C; the model's ``to_dict()``, used to
confirm before, cost more than a NodeClaim's whole drift check.) Keeping only the newest
version per object bounds the cache by the objects seen, not their versions; the kinds
parsed this way, NodeClaims and NodePools, number in the thousands at most. An object
without a uid or a resourceVersion (hand-written, not stored) is parsed every time.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from karpenter_core.apis.copying import deep_copy

__all__ = ["DEFAULT_MAX_ENTRIES", "VersionedParser"]

DEFAULT_MAX_ENTRIES = 65_536
"""Objects (uids) remembered; the least recently seen is forgotten first. Above the largest
cluster's live NodeClaims: readers visit every NodeClaim in turn (each disruption-condition
reconcile parses one), so a bound below the live count would make every parse a miss.
Owners :meth:`~VersionedParser.forget` deleted objects, so the bound is seldom reached."""


class _RoundTrips(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


M = TypeVar("M", bound=_RoundTrips)


class VersionedParser(Generic[M]):
    """``parse(obj)``, once per stored version (see the module docstring). ``parse`` must
    return a model whose ``to_dict()`` gives back the object it read (the API models'
    round trip is lossless). With ``reparse``, a new version of an object parsed before is
    parsed from the earlier one (what did not change is kept). Errors of ``parse`` propagate
    and nothing is remembered for that version. Thread-safe."""

    def __init__(
        self,
        parse: Callable[[Mapping[str, Any]], M],
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        reparse: Callable[[Mapping[str, Any], M, Mapping[str, Any]], M] | None = None,
    ) -> None:
        self._parse = parse
        # reparse(obj, model, parsed): parse(obj), given model = parse(parsed), an earlier
        # version of the same object (see Model.from_dict_reusing)
        self._reparse = reparse
        self._max = max_entries
        self._lock = threading.Lock()
        # uid -> (rv, a private copy of the object parsed, its model)
        self._parsed: OrderedDict[str, tuple[str, Any, M]] = OrderedDict()

    def __call__(self, obj: Mapping[str, Any]) -> M:
        meta = obj.get("metadata")
        if not isinstance(meta, Mapping):
            return self._parse(obj)
        uid = str(meta.get("uid") or "")
        rv = str(meta.get("resourceVersion") or "")
        if not uid or not rv:
            return self._parse(obj)
        with self._lock:
            found = self._parsed.get(uid)
            if found is not None:
                self._parsed.move_to_end(uid)
        if found is not None and found[0] == rv and found[1] == obj:
            return found[2]
        if found is not None and self._reparse is not None:
            model = self._reparse(obj, found[2], found[1])
        else:
            model = self._parse(obj)
        with self._lock:
            self._parsed[uid] = (rv, deep_copy(obj), model)
            self._parsed.move_to_end(uid)
            while len(self._parsed) > self._max:
                self._parsed.popitem(last=False)
        return model

    def forget(self, uid: str) -> None:
        """Drop what is remembered for ``uid`` (the object was deleted)."""
        with self._lock:
            self._parsed.pop(uid, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._parsed)

    def clear(self) -> None:
        with self._lock:
            self._parsed.clear()
