"""The solver's narrow view of ``Topology`` (owned by topology.py).

Keeps the solver independent of how topology reports an unsatisfiable constraint (an error
value or an exception) and lets a solve run without topology at all (``None``), where every
call is a no-op that leaves requirements unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from karpenter_core.scheduling.requirements import Requirements


class TopologyAdapter:
    __slots__ = ("topology",)

    def __init__(self, topology: Any | None) -> None:
        self.topology = topology

    def add_requirements(
        self,
        pod: Any,
        taints: Sequence[Any],
        strict_requirements: Requirements,
        node_requirements: Requirements,
        allow_undefined: Any = None,
    ) -> Requirements | object:
        """Node requirements narrowed by topology, or the reason topology rules the node out."""
        if self.topology is None:
            return node_requirements
        try:
            result = self.topology.add_requirements(
                pod, taints, strict_requirements, node_requirements, allow_undefined
            )
        except ValueError as e:  # an unsatisfiable constraint reported as an exception
            return e
        return result

    def record(
        self,
        pod: Any,
        taints: Sequence[Any],
        requirements: Requirements,
        allow_undefined: Any = None,
    ) -> None:
        if self.topology is not None:
            self.topology.record(pod, taints, requirements, allow_undefined)

    def register(self, key: str, domain: str) -> None:
        if self.topology is not None:
            self.topology.register(key, domain)

    def update(self, pod: Any) -> None:
        if self.topology is not None:
            self.topology.update(pod)
