"""A marker for tests that need the in-memory server to deliver node watch events."""

from __future__ import annotations

import pytest

from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer


def cluster_scoped_watches_see_changes() -> bool:
    """Whether the in-memory server delivers changes to cluster-scoped watches (nodes)."""
    server = InMemoryApiServer(VirtualClock())
    watch = server.watch("nodes")
    server.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "probe"}})
    seen = bool(watch.poll(0))
    watch.stop()
    return seen


needs_node_events = pytest.mark.xfail(
    not cluster_scoped_watches_see_changes(),
    reason="InMemoryApiServer: watches on cluster-scoped kinds drop every change "
    "(MemoryWatch.matches compares namespace '' with None); runs normally once fixed",
    strict=True,
)
