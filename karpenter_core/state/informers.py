"""Moved: the state informers are :mod:`karpenter_core.controllers.state`; ``cluster_of`` and
``is_managed_nodepool`` are :mod:`karpenter_core.state.cluster`'s. This module keeps the two
names importable until the last callers move (it imports nothing else)."""

from __future__ import annotations

from karpenter_core.state.cluster import cluster_of, is_managed_nodepool

__all__ = ["cluster_of", "is_managed_nodepool"]
