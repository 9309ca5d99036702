"""A CloudProvider wrapper that asks before every call that changes the cloud.

``serve`` wraps its provider in one with the leader elector's check, so a replica that can
no longer prove it holds the lease (it was paused, or cut off from the API server) never
launches or terminates an instance: a standby may already be doing the same work. Reads
pass straight through; a refused call raises whatever the guard raises (an ``ApiError``,
which controllers retry quietly).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from karpenter_core.apis.v1 import NodeClaim
    from karpenter_core.cloudprovider.protocol import CloudProvider

__all__ = ["GuardedCloudProvider"]


class GuardedCloudProvider:
    """Delegates to ``inner``; runs ``guard()`` first in :meth:`create` and :meth:`delete`."""

    def __init__(self, inner: CloudProvider, guard: Callable[[], None]) -> None:
        self._inner = inner
        self._guard = guard

    @property
    def inner(self) -> CloudProvider:
        """The wrapped provider."""
        return self._inner

    def create(self, nodeclaim: NodeClaim) -> NodeClaim:
        self._guard()
        return self._inner.create(nodeclaim)

    def delete(self, nodeclaim: NodeClaim) -> None:
        self._guard()
        self._inner.delete(nodeclaim)

    def __getattr__(self, attr: str) -> Any:
        # only reached for what is not defined here; never for the wrapper's own fields
        if attr.startswith("__") or attr in ("_inner", "_guard"):
            raise AttributeError(attr)
        return getattr(self._inner, attr)

    def __repr__(self) -> str:
        return f"GuardedCloudProvider({self._inner!r})"
