"""One warning per kind of failure per interval, counting the ones held back.

When the API server goes away every controller, every informer and the event writer fail
at once, each on every retry: the log would say the same thing hundreds of times a second
and bury the line that matters. A :class:`LogThrottle` lets the first line of a kind
through, holds back the rest for ``interval`` seconds, and lets the next line say how many
it held back, so nothing is hidden and the volume stays bounded.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable

__all__ = ["LogThrottle", "held_back"]


class LogThrottle:
    """Admits one line per ``key`` per ``interval`` seconds (thread-safe)."""

    def __init__(
        self,
        interval: float = 30.0,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = 1024,
    ) -> None:
        self.interval = interval
        self._clock = clock
        self._max_keys = max_keys
        self._last: dict[Hashable, float] = {}
        self._held: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    def admit(self, key: Hashable) -> int | None:
        """None to hold this line back; else how many lines of ``key`` were held back
        since the last one admitted."""
        now = self._clock()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self.interval:
                self._held[key] = self._held.get(key, 0) + 1
                return None
            if last is None and len(self._last) >= self._max_keys:
                # many distinct keys: forget the oldest rather than grow without bound
                oldest = min(self._last, key=self._last.__getitem__)
                del self._last[oldest]
                self._held.pop(oldest, None)
            self._last[key] = now
            return self._held.pop(key, 0)


def held_back(count: int) -> str:
    """The suffix a line admitted by :meth:`LogThrottle.admit` carries."""
    return f" ({count} more like this in the last interval were not logged)" if count else ""
