"""NodePools as the scheduler sees them: parsed once, and which ones may launch.

Stored NodePools arrive as the API server's JSON (from the informer cache); every pass of
the provisioner, the disruption simulation and ``karpenter schedule`` needs the same typed
:class:`~karpenter_core.apis.v1.NodePool`. :func:`parse_nodepool` reads each stored
version once (keyed by uid and resourceVersion, which change whenever the object does)
and hands out the same model afterwards, so a pass no longer parses every NodePool three
or four times. :func:`eligible_nodepools` is the one rule for "may this pool launch now",
shared by provisioning and disruption.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from attrs import frozen

from karpenter_core.apis.parsecache import VersionedParser
from karpenter_core.apis.v1 import APIError, NodePool
from karpenter_core.provisioning.scheduler.nodeclaimtemplate import TemplateError, template_base
from karpenter_core.state.cluster import is_managed_nodeclaim

__all__ = [
    "Ineligible",
    "eligible_nodepools",
    "manages",
    "parse_nodepool",
]

_PARSER: VersionedParser[NodePool] = VersionedParser(
    NodePool.from_dict, reparse=NodePool.from_dict_reusing
)


def parse_nodepool(obj: Mapping[str, Any]) -> NodePool:
    """The typed NodePool of a stored object, parsed once per version (see the module
    docstring and :class:`~karpenter_core.apis.parsecache.VersionedParser`: uid and
    resourceVersion find the earlier parse, the object's content confirms it). Raises
    :class:`~karpenter_core.apis.v1.APIError` naming the bad field."""
    return _PARSER(obj)


def manages(nodepool: NodePool, cloud_provider: Any) -> bool:
    """The pool names a NodeClass kind the provider supports (the operator's own pools;
    the NodeClaim rule of :func:`~karpenter_core.state.cluster.is_managed_nodeclaim`)."""
    ref = nodepool.spec.template.spec.node_class_ref
    spec = {"nodeClassRef": ref.to_dict() if ref is not None else {}}
    return is_managed_nodeclaim({"spec": spec}, cloud_provider)


@frozen
class Ineligible:
    """A NodePool left out of a pass, and why (for the log)."""

    name: str
    reason: str
    error: bool = False
    """The pool cannot be read (logged as an error), rather than simply not ready."""


def eligible_nodepools(
    objects: Iterable[Mapping[str, Any]], cloud_provider: Any
) -> tuple[list[NodePool], list[Ineligible]]:
    """The pools that may launch now — managed by this provider, not static, not being
    deleted, Ready, and readable as a NodeClaim template — and the others with why."""
    eligible: list[NodePool] = []
    left_out: list[Ineligible] = []
    for obj in objects:
        meta = obj.get("metadata")
        name = str(meta.get("name") or "") if isinstance(meta, Mapping) else ""
        try:
            np = parse_nodepool(obj)
        except (APIError, ValueError, TypeError) as e:
            left_out.append(Ineligible(name, str(e), error=True))
            continue
        if not manages(np, cloud_provider):
            continue  # another operator's pool: nothing to say
        if np.is_static or np.metadata.deletion_timestamp:
            continue
        if not np.ready():
            left_out.append(Ineligible(name, "not ready"))
            continue
        try:
            template_base(np)
        except TemplateError as e:
            left_out.append(Ineligible(name, str(e), error=True))
            continue
        eligible.append(np)
    return eligible, left_out
