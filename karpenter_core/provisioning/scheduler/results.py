"""What a solve decided: new NodeClaims, pods placed on existing nodes, and per-pod errors."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from attrs import define, field

from karpenter_core.provisioning.scheduler.errors import (
    PodError,
    is_reserved_offering_error,
    min_values_message,
)
from karpenter_core.provisioning.scheduler.instancetypes import min_values_check

if TYPE_CHECKING:  # the solver modules import Results; these names are for the types only
    from karpenter_core.provisioning.scheduler.existingnode import ExistingNode
    from karpenter_core.provisioning.scheduler.nodeclaim import NodeClaim
    from karpenter_core.scheduling.dynamicresources import ResourceClaimAllocationMetadata
    from karpenter_core.scoring import Scoring


@define
class Results:
    new_nodeclaims: list[NodeClaim]
    existing_nodes: list[ExistingNode]
    pod_errors: dict[str, object]
    pods_by_key: Mapping[str, Any] = field(factory=dict, repr=False)
    skipped_nodepools: dict[str, str] = field(factory=dict)
    """NodePools the solve could not use at all, with the reason (for events and errors)."""
    min_values_skipped_nodepools: frozenset[str] = field(factory=frozenset)
    """Those of :attr:`skipped_nodepools` dropped because no instance-type set meets their
    minValues (upstream's NoCompatibleInstanceTypes event says so)."""
    effective_zones: dict[str, str] = field(factory=dict)
    """Pending pod key -> the zone its constraints leave it: a zone name, ``flexible`` or
    ``none`` (``scheduler_pending_pods_by_effective_zone_count``)."""
    dra_claim_allocations: dict[tuple[str, str], ResourceClaimAllocationMetadata] = field(
        factory=dict
    )
    """What the solve allocated to each ResourceClaim ``(namespace, name)``: the NodeClaim
    (hostname placeholder, or the existing node's provider ID) and its devices per instance
    type (upstream's ``DRAClaimAllocationMetadata``); empty unless DRA is simulated."""

    def pending_pods_by_effective_zone(self) -> dict[str, int]:
        """How many pending pods each effective zone has."""
        out: dict[str, int] = {}
        for zone in self.effective_zones.values():
            out[zone] = out.get(zone, 0) + 1
        return out

    def truncate_instance_types(
        self, max_instance_types: int, strict_min_values: bool, scoring: Scoring | None = None
    ) -> None:
        """Cap every NodeClaim's options at the first ``max_instance_types`` in launch order
        (cheapest first, or as ``scoring`` ranks them for the NodeClaim's NodePool); a
        NodeClaim whose capped options break minValues (Strict) is dropped and its pods get
        an error."""
        kept = []
        for nc in self.new_nodeclaims:
            if scoring is not None:
                nc.set_scorer(scoring)
            ordered = nc.instance_types_ranked()
            truncated = ordered[:max_instance_types]
            if strict_min_values and len(truncated) < len(ordered):
                deficient = min_values_check(truncated, nc.requirements)
                if deficient:
                    # Upstream's text, typographic apostrophes included, so searches match.
                    err = PodError(
                        "pod didn\u2019t schedule because NodePool couldn\u2019t meet minValues "
                        "requirements, validating minValues",
                        f"{min_values_message(deficient)} (nodepool {json.dumps(nc.nodepool_name)})",
                    )
                    for p in nc.pods:
                        self.pod_errors[p.key] = err
                    continue
            nc.set_options(truncated, ranked=True)
            kept.append(nc)
        self.new_nodeclaims = kept

    def pod_error_messages(self) -> dict[str, str]:
        return {k: str(v) for k, v in sorted(self.pod_errors.items())}

    def reserved_offering_errors(self) -> dict[str, object]:
        return {k: v for k, v in self.pod_errors.items() if is_reserved_offering_error(v)}

    def _non_pending_errors(self) -> dict[str, object]:
        out = {}
        for key, err in self.pod_errors.items():
            pod = self.pods_by_key.get(key)
            if pod is not None and pod.is_provisionable():
                continue
            out[key] = err
        return out

    def all_non_pending_pods_scheduled(self) -> bool:
        """Every pod that was running somewhere (e.g. on a consolidation candidate) found a
        place; pods that were already pending may stay pending (upstream semantics)."""
        return not self._non_pending_errors()

    def non_pending_pod_scheduling_errors(self, max_errors: int = 5) -> str:
        """Why running pods would not reschedule, for disruption decisions (upstream text)."""
        errs = self._non_pending_errors()
        if not errs:
            return "No Pod Scheduling Errors"
        parts = [f"{k} => {errs[k]}" for k in sorted(errs)[:max_errors]]
        msg = "not all pods would schedule, " + " ".join(parts)
        if len(errs) > max_errors:
            msg += f"  and {len(errs) - max_errors} other(s)"
        return msg

    def nodepool_to_pods(self) -> dict[str, list[str]]:
        """Pod keys per NodePool, across new NodeClaims and existing managed nodes."""
        out: dict[str, list[str]] = {}
        for nc in self.new_nodeclaims:
            out.setdefault(nc.nodepool_name, []).extend(p.key for p in nc.pods)
        for node in self.existing_nodes:
            pool = node.state_node.nodepool_name()
            if node.pods and pool:
                out.setdefault(pool, []).extend(p.key for p in node.pods)
        return out

    def to_json_dict(self) -> dict[str, Any]:
        """The ``karpenter schedule -o json`` shape: NodeClaims, existing-node placements
        (only nodes receiving pods) and pod errors, all deterministically ordered."""
        claims = []
        for nc in self.new_nodeclaims:
            reqs = nc.launch_requirements()
            claim: dict[str, Any] = {"nodePool": nc.nodepool_name}
            if nc.scorer is not None:  # absent under the default (price) order
                claim["instanceTypeScorer"] = nc.scorer.name
            claims.append(
                {
                    **claim,
                    "instanceTypes": [i.name for i in nc.instance_types_ranked()],
                    "requirements": sorted(
                        reqs.to_node_selector_requirements(),
                        key=lambda r: (r["key"], r["operator"]),
                    ),
                    "pods": sorted(p.key for p in nc.pods),
                }
            )
        existing = [
            {"name": n.name, "pods": sorted(p.key for p in n.pods)}
            for n in self.existing_nodes
            if n.pods
        ]
        return {
            "nodeClaims": claims,
            "existingNodes": existing,
            "podErrors": self.pod_error_messages(),
        }
