"""Simulation: an in-memory API server (a KubeClient) to run the real engine against."""

from karpenter_core.sim.apiserver import (
    InMemoryApiServer,
    MemoryWatch,
    apply_json_patch,
    apply_merge_patch,
)

__all__ = ["InMemoryApiServer", "MemoryWatch", "apply_json_patch", "apply_merge_patch"]
