"""The NodePools of a solve as the solver launches from them: one
:class:`~.nodeclaimtemplate.NodeClaimTemplate` per NodePool with the instance types its
requirements allow, its DaemonSet overhead groups, and the NodePools dropped for having no
instance type left (with why).

A solve builds this from its NodePools and instance types; the many solves of one
disruption pass share one (:class:`NodePoolTemplates` holds no per-solve state: the
templates and the instance-type index only memoise answers that depend on the NodePools
and instance types, which a pass does not change).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from karpenter_core.apis.hostports import HostPortUsage
from karpenter_core.apis.objects import Pod
from karpenter_core.apis.v1 import NodePool
from karpenter_core.cloudprovider.types import InstanceType
from karpenter_core.provisioning.scheduler.daemons import (
    DaemonOverheadGroup,
    build_daemon_overhead_groups,
)
from karpenter_core.provisioning.scheduler.errors import PodError
from karpenter_core.provisioning.scheduler.instancetypes import InstanceTypeIndex, ITInfo
from karpenter_core.provisioning.scheduler.nodeclaim import filter_instance_types
from karpenter_core.provisioning.scheduler.nodeclaimtemplate import NodeClaimTemplate

__all__ = ["NO_TEMPLATES_ERROR", "NodePoolTemplates"]

NO_TEMPLATES_ERROR = PodError("nodepool requirements filtered out all available instance types")


class NodePoolTemplates:
    """See module docstring. ``nodepools`` in the order the solve tries them;
    ``instance_types`` by NodePool name; ``options`` the scheduler's (minValues policy,
    DRA); ``daemon_pods`` the DaemonSet pods whose overhead new NodeClaims carry;
    ``reference`` turns off the index's shortcuts (differential tests)."""

    def __init__(
        self,
        nodepools: Sequence[NodePool],
        instance_types: Mapping[str, Sequence[InstanceType]],
        options: Any,
        daemon_pods: Sequence[Pod] = (),
        reference: bool = False,
    ) -> None:
        from karpenter_core.provisioning.scheduler.scheduler import (
            MIN_VALUES_POLICY_BEST_EFFORT,
        )

        self.reference = reference
        self.index = InstanceTypeIndex()
        self.index.reference = reference
        self.relax_min_values = options.min_values_policy == MIN_VALUES_POLICY_BEST_EFFORT
        self.all_templates = [NodeClaimTemplate(np) for np in nodepools]
        self.prefer_no_schedule = any(t.has_prefer_no_schedule_taint() for t in self.all_templates)
        self.skipped_templates: dict[str, str] = {}
        self.skipped_for_min_values: set[str] = set()
        self.templates: list[NodeClaimTemplate] = []
        for t in self.all_templates:
            infos = self.index.wrap(instance_types.get(t.nodepool_name, ()))
            survivors, _, err = filter_instance_types(
                self.index,
                infos,
                t.requirements,
                _EMPTY_POD,
                {},
                [_single_group(infos)],
                {},
                self.relax_min_values,
                True,
            )
            if not survivors:
                # Upstream only emits an event here; keep the reason so pod errors can say
                # which pool was dropped and why.
                if err is not None and err.min_values_error is not None:
                    reason = err.min_values_error
                    self.skipped_for_min_values.add(t.nodepool_name)
                elif not infos:
                    reason = "no instance types"
                else:
                    reason = "requirements matched no instance type with an available offering"
                self.skipped_templates[t.nodepool_name] = reason
                continue
            t.set_instance_type_options(survivors)
            self.templates.append(t)
        self.no_templates_error = NO_TEMPLATES_ERROR
        if self.skipped_templates:
            detail = "; ".join(
                f"nodepool {json.dumps(name)}: {why}"
                for name, why in sorted(self.skipped_templates.items())
            )
            self.no_templates_error = PodError(f"{NO_TEMPLATES_ERROR.text} ({detail})")
        if options.ignore_dra_requests:
            daemon_pods = [p for p in daemon_pods if not getattr(p, "has_dra_requirements", False)]
        self.daemon_pods: Sequence[Pod] = daemon_pods
        self.daemon_groups: dict[str, list[DaemonOverheadGroup]] = {
            t.nodepool_name: build_daemon_overhead_groups(t, daemon_pods) for t in self.templates
        }


def _single_group(infos: Sequence[ITInfo]) -> DaemonOverheadGroup:
    g = DaemonOverheadGroup((), {}, HostPortUsage())
    g.instance_types = list(infos)
    g.members = {i.index for i in infos}
    return g


class _EmptyPod:
    key = ""
    host_ports = ()


_EMPTY_POD = _EmptyPod()
