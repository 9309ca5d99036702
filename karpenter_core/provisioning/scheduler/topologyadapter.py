"""The solver's narrow view of ``Topology`` (owned by topology.py).

Keeps the solver independent of how topology reports an unsatisfiable constraint (an error
value or an exception) and lets a solve run without topology at all (``None``), where every
call is a no-op that leaves requirements unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from karpenter_core.apis.labels import LABEL_HOSTNAME
from karpenter_core.provisioning.scheduler.topologygroup import TopologyType
from karpenter_core.provisioning.scheduler.topologynodefilter import MATCH_ALL
from karpenter_core.scheduling.requirements import Requirements


class TopologyAdapter:
    """See module docstring. One *scan* is one pod's search for a place; topology state does
    not change during a scan, so answers are memoised by what they depend on: the node's
    requirements for the topology keys involved (plus taints and the compatibility mode)."""

    __slots__ = ("_keys", "_memo", "_relevant", "hostname_free", "reference", "topology")

    def __init__(self, topology: Any | None, reference: bool = False) -> None:
        self.topology = topology
        self.reference = reference
        self._relevant = True
        self._keys: tuple[str, ...] | None = None
        self._memo: dict[Any, Any] = {}
        # True when this scan's topology answers cannot depend on a node's hostname.
        self.hostname_free = False

    def begin_scan(self, pod: Any) -> None:
        """Start placing ``pod``: work out which topology keys can affect its answers."""
        self._memo = {}
        self.hostname_free = False
        topology = self.topology
        if topology is None:
            self._relevant = False
            self._keys = None
            self.hostname_free = True
            return
        if self.reference:
            self._relevant = True
            self._keys = None
            return
        owned = topology.groups_owned_by(pod)
        # Inverse groups only matter to pods they count, and (with the always-true node
        # filter anti-affinity uses) they count exactly the pods they select.
        inverse = list(topology.inverse_topology_groups.values())
        filtered = [tg for tg in inverse if tg.node_filter is not MATCH_ALL]
        inverse = [tg for tg in inverse if tg.node_filter is MATCH_ALL and tg.selects(pod)]
        self._relevant = bool(owned or inverse or filtered)
        keys = {tg.key for tg in owned} | {tg.key for tg in inverse}
        if filtered:
            # Inverse groups that filter nodes read all requirements: no memo.
            self._keys = None
        else:
            self._keys = tuple(sorted(keys))
            self.hostname_free = LABEL_HOSTNAME not in keys

    def add_requirements(
        self,
        pod: Any,
        taints: Sequence[Any],
        strict_requirements: Requirements,
        node_requirements: Requirements,
        allow_undefined: Any = None,
    ) -> Requirements | object:
        """Node requirements narrowed by topology, or the reason topology rules the node out."""
        topology = self.topology
        if topology is None or not self._relevant:
            return node_requirements
        keys = self._keys
        memo_key = None
        if keys is not None:
            memo_key = (
                id(taints),
                allow_undefined is None,
                tuple(node_requirements.get(k) for k in keys),
            )
            hit = self._memo.get(memo_key)
            if hit is not None:
                if not isinstance(hit, tuple):
                    answer: object = hit
                    return answer
                narrowed = node_requirements.copy()
                for k, r in hit:
                    narrowed[k] = r
                return narrowed
        result: Requirements | object
        try:
            result = topology.add_requirements(
                pod, taints, strict_requirements, node_requirements, allow_undefined
            )
        except ValueError as e:  # an unsatisfiable constraint reported as an exception
            result = e
        if memo_key is not None and keys is not None:
            if isinstance(result, Requirements):
                self._memo[memo_key] = tuple((k, result.get(k)) for k in keys if result.has(k))
            else:
                self._memo[memo_key] = result
        return result

    def hostname_blockers(self, pod: Any) -> list[dict[str, int]]:
        """Per-hostname counts that rule a host out for ``pod`` whenever they are non-zero.

        Hostname pod anti-affinity (the pod's own, or another placed pod's that selects it)
        allows a single-host node only while that host's count is zero, and counts only grow
        during a solve. The solver checks these counts first and skips such nodes without
        running the full pipeline, which would reject them with the same answer. Errors from
        skipped candidates are discarded by the solver, so skipping changes nothing else.
        """
        topology = self.topology
        if topology is None:
            return []
        blockers = [
            tg.domains
            for tg in topology.groups_owned_by(pod)
            if tg.type is TopologyType.POD_ANTI_AFFINITY and tg.key == LABEL_HOSTNAME
        ]
        for tg in topology.inverse_topology_groups.values():
            if (
                tg.key == LABEL_HOSTNAME
                and tg.type is TopologyType.POD_ANTI_AFFINITY
                and tg.node_filter is MATCH_ALL
                and tg.selects(pod)
            ):
                blockers.append(tg.domains)
        return blockers

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

    def register_all(self, key: str, domains: AbstractSet[str]) -> None:
        if self.topology is not None:
            self.topology.register_all(key, domains)

    def update(self, pod: Any) -> None:
        if self.topology is not None:
            self.topology.update(pod)
