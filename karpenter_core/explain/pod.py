"""``explain pod``: why a pod is pending, or where it went, and what each NodePool offered.

The verdict is the provisioning scheduler's own: every pending pod of the input is
scheduled together (pods compete for the same new nodes, so one pod alone would not be
the same answer), exactly as ``karpenter schedule`` does, and the pod's line of that
result is the verdict. Around it, each NodePool is checked with the scheduler's
predicates in the scheduler's order — eligibility, taints, the pod's strict node
requirements against the template, then each instance type's requirements, offerings,
NodePool limits and resources (pod requests plus the DaemonSets that would run there) —
and the first failing check is the NodePool's (or the type's) reason. Preferred affinity
is not an exclusion: the scheduler relaxes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from attrs import frozen

from karpenter_core.apis import labels as wk
from karpenter_core.apis.objects import Pod
from karpenter_core.apis.taints import tolerates
from karpenter_core.apis.v1 import NodePool
from karpenter_core.cloudprovider.types import InstanceType
from karpenter_core.explain.inputs import ExplainInput
from karpenter_core.explain.reasons import Reason
from karpenter_core.provisioning.scheduler import resourcelist as rl
from karpenter_core.provisioning.scheduler.daemons import is_daemon_compatible
from karpenter_core.provisioning.scheduler.instancetypes import ITInfo
from karpenter_core.provisioning.scheduler.nodeclaimtemplate import (
    NodeClaimTemplate,
    TemplateError,
)
from karpenter_core.scheduling.requirements import Requirements, strict_pod_requirements

__all__ = [
    "ExplainError",
    "InstanceTypeVerdict",
    "NodePoolVerdict",
    "PodExplanation",
    "explain_pod",
]

# Reason codes (docs/explain.md lists them).
NODES = "nodes"  # the NodePool-limits pseudo-resource counting nodes

BOUND = "bound"
LAUNCH = "launch"
EXISTING_NODE = "existing-node"
UNSCHEDULABLE = "unschedulable"
INVALID = "invalid"
STATIC = "static"
DELETING = "deleting"
NOT_READY = "not-ready"
TAINTS = "taints"
REQUIREMENTS = "requirements"
NO_INSTANCE_TYPE = "no-instance-type"
OFFERING = "offering"
LIMITS = "limits"
RESOURCES = "resources"


class ExplainError(LookupError):
    """The object to explain is not in the input (the message names it)."""


@frozen
class InstanceTypeVerdict:
    """One instance type of a NodePool for this pod: ``reason`` None when it would do;
    ``shortfall`` what it lacks (resource -> milli-units) when resources excluded it."""

    name: str
    price: float | None
    reason: Reason | None = None
    shortfall: Mapping[str, int] = {}
    wanted: Mapping[str, int] = {}
    """With ``shortfall``: what the pod and the daemons that would run there request."""

    def missing_fraction(self) -> float:
        """The largest share of a request this type cannot meet (0 when it fits)."""
        return max(
            (v / self.wanted[k] for k, v in self.shortfall.items() if self.wanted.get(k)),
            default=0.0,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "price": self.price}
        if self.reason is not None:
            out["reason"] = self.reason.to_json()
        if self.shortfall:
            out["shortfall"] = rl.format_list(dict(self.shortfall))
        return out


@frozen
class NodePoolVerdict:
    """One NodePool for this pod: ``reason`` None when some instance type would host it;
    ``fitting`` how many would (``cheapest`` the cheapest of them); ``closest`` the type
    that came nearest when none would; ``types`` every type's verdict."""

    nodepool: str
    reason: Reason | None
    fitting: int = 0
    cheapest: InstanceTypeVerdict | None = None
    closest: InstanceTypeVerdict | None = None
    types: tuple[InstanceTypeVerdict, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"nodePool": self.nodepool, "fitting": self.fitting}
        if self.reason is not None:
            out["reason"] = self.reason.to_json()
        if self.cheapest is not None:
            out["cheapest"] = self.cheapest.to_json()
        if self.closest is not None:
            out["closestMiss"] = self.closest.to_json()
        out["instanceTypes"] = [t.to_json() for t in self.types]
        return out


@frozen
class PodExplanation:
    """The scheduler's verdict on the pod and every NodePool's verdict."""

    pod: str
    verdict: Reason
    node: str = ""
    nodepools: tuple[NodePoolVerdict, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "PodExplanation",
            "pod": self.pod,
            "verdict": self.verdict.to_json(),
            "node": self.node,
            "nodePools": [v.to_json() for v in self.nodepools],
        }


def find_pod(ei: ExplainInput, key: str) -> Pod:
    """The pod ``NAMESPACE/NAME`` (``NAME`` alone: namespace ``default``)."""
    namespace, _, name = key.rpartition("/")
    namespace = namespace or "default"
    pod = ei.inp.snapshot.pod(namespace, name)
    if pod is None:
        raise ExplainError(f"pod {namespace}/{name} is not in the input")
    return pod


def explain_pod(ei: ExplainInput, key: str) -> PodExplanation:
    """Explain the pod ``key`` (``NAMESPACE/NAME``); raises :class:`ExplainError` when it
    is not in the input."""
    pod = find_pod(ei, key)
    verdict, node = _verdict(ei, pod)
    pools = [_nodepool_verdict(ei, pod, np) for np in ei.inp.nodepools]
    pools += [
        NodePoolVerdict(name, Reason(INVALID, message))
        for name, message in sorted(ei.inp.invalid_nodepools.items())
    ]
    return PodExplanation(pod.key, verdict, node, tuple(pools))


# --- the scheduler's verdict ------------------------------------------------------------------


def _verdict(ei: ExplainInput, pod: Pod) -> tuple[Reason, str]:
    if pod.node_name:
        node = ei.inp.snapshot.node(pod.node_name)
        where = ""
        if node is not None:
            pool = node.labels.get(wk.NODEPOOL_LABEL_KEY)
            it = node.labels.get(wk.LABEL_INSTANCE_TYPE)
            where = ", ".join(
                part
                for part in (
                    f"NodePool {pool}" if pool else "not managed by Karpenter",
                    f"instance type {it}" if it else "",
                    node.labels.get(wk.CAPACITY_TYPE_LABEL_KEY, ""),
                    node.labels.get(wk.LABEL_TOPOLOGY_ZONE, ""),
                )
                if part
            )
        text = f"bound to node {pod.node_name}" + (f" ({where})" if where else "")
        return Reason(BOUND, text), pod.node_name
    from karpenter_core.cli.schedule import _cheapest, schedule_input

    result = schedule_input(ei.inp, ei.instance_types, ei.options)
    for nc in result["nodeClaims"]:
        if pod.key in nc["pods"]:
            name, price = _cheapest(nc, ei.instance_types)
            priced = f" at ${price:.4f}/h" if price is not None else ""
            others = len(nc["pods"]) - 1
            return (
                Reason(
                    LAUNCH,
                    f"pending: Karpenter would launch a NodeClaim from NodePool "
                    f"{nc['nodePool']} for it (first choice {name}{priced}, "
                    f"{len(nc['instanceTypes'])} types allowed, {others} other pod(s))",
                ),
                "",
            )
    for existing in result["existingNodes"]:
        if pod.key in existing["pods"]:
            return (
                Reason(
                    EXISTING_NODE,
                    f"pending: fits on existing node {existing['name']}; kube-scheduler "
                    "should bind it there (Karpenter launches nothing for it)",
                ),
                existing["name"],
            )
    error = result["podErrors"].get(pod.key, "not scheduled")
    return Reason(UNSCHEDULABLE, f"pending and unschedulable: {error}"), ""


# --- each NodePool ------------------------------------------------------------------------------


def _nodepool_verdict(ei: ExplainInput, pod: Pod, np: NodePool) -> NodePoolVerdict:
    name = np.name
    if np.is_static:
        return NodePoolVerdict(name, Reason(STATIC, "static NodePool: launches no nodes for pods"))
    if np.metadata.deletion_timestamp:
        return NodePoolVerdict(name, Reason(DELETING, "NodePool is being deleted"))
    ready = np.condition("Ready")
    if ready is not None and not ready.is_true:
        why = ready.message or ready.reason or "Ready is not True"
        return NodePoolVerdict(name, Reason(NOT_READY, f"NodePool is not ready: {why}"))
    try:
        template = NodeClaimTemplate(np)
    except TemplateError as e:
        return NodePoolVerdict(name, Reason(INVALID, str(e)))
    taint_error = tolerates(template.taints, pod.tolerations)
    if taint_error is not None:
        return NodePoolVerdict(name, Reason(TAINTS, str(taint_error)))
    strict = strict_pod_requirements(pod.node_selector, pod.affinity)
    error = template.requirements.compatible(strict, frozenset(wk.WELL_KNOWN_LABELS))
    if error is not None:
        return NodePoolVerdict(name, Reason(REQUIREMENTS, f"incompatible requirements, {error}"))
    combined = template.requirements.copy()
    combined.add(*strict.values())
    remaining = _remaining(ei, np, template)
    daemons = ei.inp.snapshot.daemonset_pods()
    types = [
        _type_verdict(template, info, pod, combined, remaining, daemons)
        for info in (ITInfo(it, i) for i, it in enumerate(ei.instance_types.get(name, ())))
    ]
    fitting = [t for t in types if t.reason is None]
    if fitting:
        cheapest = min(fitting, key=lambda t: (t.price is None, t.price or 0.0, t.name))
        return NodePoolVerdict(name, None, len(fitting), cheapest=cheapest, types=tuple(types))
    if not types:
        return NodePoolVerdict(name, Reason(NO_INSTANCE_TYPE, "the NodePool has no instance types"))
    counts: dict[str, int] = {}
    for t in types:
        assert t.reason is not None
        counts[t.reason.code] = counts.get(t.reason.code, 0) + 1
    summary = ", ".join(
        f"{n} by {code}" for code, n in sorted(counts.items(), key=lambda kv: -kv[1])
    )
    return NodePoolVerdict(
        name,
        Reason(NO_INSTANCE_TYPE, f"no instance type would host it ({len(types)} types: {summary})"),
        closest=_closest(types),
        types=tuple(types),
    )


def _remaining(ei: ExplainInput, np: NodePool, template: NodeClaimTemplate) -> dict[str, int]:
    """What the NodePool's limits still allow (only the limited resources)."""
    if not template.limits:
        return {}
    used = ei.inp.snapshot.nodepool_resources(np.name)
    return {k: v - used.get(k, 0) for k, v in template.limits.items()}


def _type_verdict(
    template: NodeClaimTemplate,
    info: ITInfo,
    pod: Pod,
    combined: Requirements,
    remaining: Mapping[str, int],
    daemons: Sequence[Pod],
) -> InstanceTypeVerdict:
    it: InstanceType = info.it
    offerings = it.offerings.available().compatible(combined)
    cheapest = offerings.cheapest()
    price = cheapest.price if cheapest is not None else None
    error = it.requirements.intersects(combined)
    if error is not None:
        return InstanceTypeVerdict(
            it.name, price, Reason(REQUIREMENTS, f"incompatible requirements, {error}")
        )
    if cheapest is None:
        return InstanceTypeVerdict(
            it.name,
            None,
            Reason(OFFERING, "no available offering in the zones and capacity types allowed"),
        )
    over = {
        k: it.capacity.get(k, 0) - left
        for k, left in remaining.items()
        if k != NODES and it.capacity.get(k, 0) > left
    }
    if NODES in remaining and remaining[NODES] <= 0:
        over[NODES] = 1000 - remaining[NODES]  # milli-units: one node more than allowed
    if over:
        return InstanceTypeVerdict(
            it.name,
            price,
            Reason(LIMITS, f"exceeds the NodePool's limits by {_shown(over)}"),
        )
    overhead = [d.scheduling_requests for d in daemons if is_daemon_compatible(template, info, d)]
    wanted = rl.add(rl.total(overhead) if overhead else {}, pod.scheduling_requests)
    allocatable = it.allocatable()
    short = {k: v - allocatable.get(k, 0) for k, v in wanted.items() if v > allocatable.get(k, 0)}
    if short:
        return InstanceTypeVerdict(
            it.name,
            price,
            Reason(
                RESOURCES,
                f"not enough resources: short of {_shown(short)} "
                f"(pod and daemons request {_shown(wanted)})",
            ),
            shortfall=short,
            wanted=wanted,
        )
    return InstanceTypeVerdict(it.name, price)


def _shown(resources: Mapping[str, int]) -> str:
    """``cpu 8100m, memory 4Gi``: resources as quantities, by name."""
    return ", ".join(f"{k} {v}" for k, v in sorted(rl.format_list(dict(resources)).items()))


def _closest(types: Sequence[InstanceTypeVerdict]) -> InstanceTypeVerdict | None:
    """The nearest miss: among the types only resources excluded, the one missing the
    smallest share of the request it falls shortest of, then the cheapest."""
    short = [t for t in types if t.reason is not None and t.reason.code == RESOURCES]
    if not short:
        return None
    return min(short, key=lambda t: (t.missing_fraction(), t.price or 0.0, t.name))
