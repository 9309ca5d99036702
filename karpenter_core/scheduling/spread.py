"""Topology spread constraints: the one implementation of the Kubernetes rules.

Both schedulers read constraints through :class:`SpreadConstraint` and measure skew with
:func:`global_minimum` and :func:`skew_limit`: the provisioning scheduler
(:mod:`karpenter_core.provisioning.scheduler.topologygroup`, as upstream Karpenter's
``topologygroup.go``) and the simulated kube-scheduler (:mod:`karpenter_core.sim.kubescheduler`,
kube-scheduler's PodTopologySpread filter).

The rules (``k8s.io/api`` ``TopologySpreadConstraint``, kube-scheduler's
``podtopologyspread``):

* a pod may go to a domain when ``matching pods there + 1 (if the pod matches its own
  selector) - global minimum <= maxSkew``, the global minimum being the smallest count among
  the *eligible* domains, or 0 while fewer than ``minDomains`` domains are eligible;
* a node's domain is eligible when the node has the key and passes the inclusion policies:
  ``nodeAffinityPolicy`` (default ``Honor``: the node must match the pod's nodeSelector and
  required node affinity) and ``nodeTaintsPolicy`` (default ``Ignore``; ``Honor``: the pod
  must tolerate the node's taints) — :func:`node_included`;
* ``matchLabelKeys`` adds ``key in (value)`` with the pod's own label values to the
  selector (when ``labelSelector`` is set);
* only ``whenUnsatisfiable: DoNotSchedule`` constraints filter; ``ScheduleAnyway`` ones
  only score.

Where the schedulers deliberately differ, each keeps its upstream's rule:

* domains: kube-scheduler knows the domains of existing nodes only; Karpenter adds every
  domain its NodePools could launch into, and takes the global minimum of a hostname spread
  as 0 (it can always launch another node);
* minDomains: kube-scheduler reads an unset ``minDomains`` as 1; Karpenter applies it only
  when set (the two agree except with no eligible domain at all, where both allow the pod);
* taints under ``Honor``: kube-scheduler looks at ``NoSchedule``/``NoExecute`` taints only,
  Karpenter at every taint, ``PreferNoSchedule`` included;
* an empty selector (``{}``): kube-scheduler counts no existing pod for it (its
  ``countPodsMatchSelector``) although the pod still matches itself; Karpenter counts every
  pod in the namespace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from attrs import frozen

from karpenter_core.apis.labelselector import IN, LabelSelector, SelectorError, requirement

__all__ = [
    "DO_NOT_SCHEDULE",
    "HONOR",
    "IGNORE",
    "MAX_INT32",
    "SCHEDULE_ANYWAY",
    "SpreadConstraint",
    "global_minimum",
    "node_included",
    "skew_limit",
    "spread_constraints",
]

DO_NOT_SCHEDULE: Final = "DoNotSchedule"
SCHEDULE_ANYWAY: Final = "ScheduleAnyway"
HONOR: Final = "Honor"
IGNORE: Final = "Ignore"
MAX_INT32: Final = 2**31 - 1


def _int_or(value: Any, default: int | None) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return default


@frozen
class SpreadConstraint:
    """One ``topologySpreadConstraints`` entry, parsed for the pod that declares it.

    ``selector`` has ``matchLabelKeys`` merged in (a selector that does not parse selects
    nothing); ``min_domains`` is None when unset; the policies carry their defaults.
    """

    topology_key: str
    max_skew: int
    when_unsatisfiable: str
    selector: LabelSelector
    min_domains: int | None = None
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE

    @property
    def hard(self) -> bool:
        """A ``DoNotSchedule`` constraint: it filters nodes, not only scores them."""
        return self.when_unsatisfiable == DO_NOT_SCHEDULE

    @classmethod
    def from_dict(cls, tsc: Mapping[str, Any], pod_labels: Mapping[str, str]) -> SpreadConstraint:
        """A constraint declared by a pod with ``pod_labels``."""
        raw_selector = tsc.get("labelSelector")
        selector = LabelSelector.compile(raw_selector)
        keys = tsc.get("matchLabelKeys")
        if isinstance(raw_selector, Mapping) and isinstance(keys, list | tuple):
            extra = []
            for key in keys:
                if isinstance(key, str) and key in pod_labels:
                    try:
                        extra.append(requirement(key, IN, (pod_labels[key],)))
                    except SelectorError:
                        continue  # an invalid label value cannot be selected on
            selector = selector.with_requirements(*extra)
        return cls(
            topology_key=str(tsc.get("topologyKey") or ""),
            max_skew=_int_or(tsc.get("maxSkew"), 1) or 1,
            when_unsatisfiable=str(tsc.get("whenUnsatisfiable") or DO_NOT_SCHEDULE),
            selector=selector,
            min_domains=_int_or(tsc.get("minDomains"), None),
            node_affinity_policy=str(tsc.get("nodeAffinityPolicy") or HONOR),
            node_taints_policy=str(tsc.get("nodeTaintsPolicy") or IGNORE),
        )


def spread_constraints(
    tscs: Iterable[Any], pod_labels: Mapping[str, str], *, hard_only: bool = False
) -> tuple[SpreadConstraint, ...]:
    """A pod's constraints with a topology key (only the ``DoNotSchedule`` ones with
    ``hard_only``)."""
    out = []
    for tsc in tscs:
        if not isinstance(tsc, Mapping) or not tsc.get("topologyKey"):
            continue
        constraint = SpreadConstraint.from_dict(tsc, pod_labels)
        if hard_only and not constraint.hard:
            continue
        out.append(constraint)
    return tuple(out)


def node_included(
    node_affinity_policy: str,
    node_taints_policy: str,
    matches_node_affinity: Callable[[], bool],
    tolerates_taints: Callable[[], bool],
) -> bool:
    """Whether a node's domain takes part in a spread under the inclusion policies. The
    checks are callables, run only when their policy is ``Honor``."""
    if node_affinity_policy == HONOR and not matches_node_affinity():
        return False
    return not (node_taints_policy == HONOR and not tolerates_taints())


def global_minimum(counts: Iterable[int], min_domains: int | None) -> int:
    """The count the skew is measured against: the smallest of the eligible domains'
    ``counts``, or 0 while fewer than ``min_domains`` domains are eligible (``MAX_INT32``
    when there is no domain and no ``min_domains``)."""
    lowest = MAX_INT32
    domains = 0
    for count in counts:
        domains += 1
        if count < lowest:
            lowest = count
    if min_domains is not None and domains < min_domains:
        return 0
    return lowest


def skew_limit(minimum: int, max_skew: int, matches_itself: bool) -> int:
    """The most matching pods a domain may already hold for the pod to go there:
    ``count + (1 if the pod matches itself) - minimum <= max_skew``."""
    return minimum + max_skew - (1 if matches_itself else 0)
