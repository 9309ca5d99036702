"""DaemonSet overhead for new NodeClaims (spec scheduling.md §8.6).

A DaemonSet pod lands on a new node if it tolerates the pool's taints (PreferNoSchedule is
always tolerated: daemons ignore preferences) and some required node-affinity OR-term is
compatible with the template and intersects the instance type. Instance types that run the
same set of daemons form one group with one summed overhead and the daemons' host ports.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from karpenter_core.apis.hostports import HostPortUsage
from karpenter_core.apis.labels import WELL_KNOWN_LABELS
from karpenter_core.apis.taints import Toleration, tolerates
from karpenter_core.provisioning.scheduler import resourcelist as rl
from karpenter_core.provisioning.scheduler.instancetypes import ITInfo
from karpenter_core.provisioning.scheduler.nodeclaimtemplate import NodeClaimTemplate
from karpenter_core.scheduling.requirements import Requirements, strict_pod_requirements

PREFER_NO_SCHEDULE_TOLERATION = Toleration.from_dict(
    {"operator": "Exists", "effect": "PreferNoSchedule"}
)


class DaemonOverheadGroup:
    __slots__ = ("daemon_keys", "host_port_usage", "instance_types", "members", "overhead")

    def __init__(
        self,
        daemon_keys: tuple[str, ...],
        overhead: dict[str, int],
        host_port_usage: HostPortUsage,
    ) -> None:
        self.daemon_keys = daemon_keys
        self.overhead = overhead
        self.host_port_usage = host_port_usage
        self.instance_types: list[ITInfo] = []
        self.members: set[int] = set()

    def copy_for_nodeclaim(self) -> DaemonOverheadGroup:
        g = DaemonOverheadGroup(self.daemon_keys, self.overhead, self.host_port_usage.copy())
        g.instance_types = self.instance_types
        g.members = self.members
        return g


def _affinity_terms(affinity: Any) -> list[Any]:
    if not affinity:
        return []
    required = (affinity.get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    return list(required.get("nodeSelectorTerms") or [])


def daemon_requirement_alternatives(pod: Any) -> list[Requirements]:
    """The daemon's strict requirements for each required node-affinity OR-term, in order."""
    terms = _affinity_terms(pod.affinity)
    if len(terms) <= 1:
        return [strict_pod_requirements(pod.node_selector, pod.affinity)]
    out = []
    for i in range(len(terms)):
        affinity = dict(pod.affinity)
        node_affinity = dict(affinity.get("nodeAffinity") or {})
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": terms[i:]
        }
        affinity["nodeAffinity"] = node_affinity
        out.append(strict_pod_requirements(pod.node_selector, affinity))
    return out


def daemon_tolerations(pod: Any) -> tuple[Any, ...]:
    return (*tuple(pod.tolerations), PREFER_NO_SCHEDULE_TOLERATION)


def is_daemon_compatible(template: NodeClaimTemplate, info: ITInfo, pod: Any) -> bool:
    if tolerates(template.taints, daemon_tolerations(pod)) is not None:
        return False
    allow = frozenset(WELL_KNOWN_LABELS)
    for reqs in daemon_requirement_alternatives(pod):
        if (
            template.requirements.is_compatible(reqs, allow)
            and info.requirements.intersects(reqs) is None
        ):
            return True
    return False


def build_daemon_overhead_groups(
    template: NodeClaimTemplate, daemon_pods: Sequence[Any]
) -> list[DaemonOverheadGroup]:
    allow = frozenset(WELL_KNOWN_LABELS)
    # Per daemon, the OR-term alternatives that suit the template; only the instance-type
    # intersection differs between instance types.
    candidates: list[tuple[Any, list[Requirements]]] = []
    for p in daemon_pods:
        if tolerates(template.taints, daemon_tolerations(p)) is not None:
            continue
        alts = [
            r
            for r in daemon_requirement_alternatives(p)
            if template.requirements.is_compatible(r, allow)
        ]
        if alts:
            candidates.append((p, alts))
    groups: dict[tuple[str, ...], DaemonOverheadGroup] = {}
    for info in template.instance_type_options:
        compatible = [
            p
            for p, alts in candidates
            if any(info.requirements.intersects(r) is None for r in alts)
        ]
        key = tuple(sorted(p.key for p in compatible))
        g = groups.get(key)
        if g is None:
            overhead = rl.total(p.scheduling_requests for p in compatible) if compatible else {}
            usage = HostPortUsage()
            for p in compatible:
                usage.add(p.key, list(p.host_ports))
            g = DaemonOverheadGroup(key, overhead, usage)
            groups[key] = g
        g.instance_types.append(info)
        g.members.add(info.index)
    return list(groups.values())
