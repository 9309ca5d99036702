"""Cluster state the scheduler and disruption read: snapshots of objects and StateNodes."""

from karpenter_core.state.snapshot import ClusterSnapshot
from karpenter_core.state.statenode import StateNode

__all__ = ["ClusterSnapshot", "StateNode"]
