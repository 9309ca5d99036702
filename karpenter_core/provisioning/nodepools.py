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

import copy
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

from attrs import frozen

from karpenter_core.apis.v1 import APIError, NodePool
from karpenter_core.provisioning.scheduler.nodeclaimtemplate import TemplateError, template_base
from karpenter_core.state.cluster import is_managed_nodeclaim

__all__ = [
    "Ineligible",
    "eligible_nodepools",
    "manages",
    "parse_nodepool",
]

_PARSED: OrderedDict[tuple[str, str], tuple[Mapping[str, Any], NodePool]] = OrderedDict()
_LOCK = threading.Lock()
_MAX_PARSED = 4096


def parse_nodepool(obj: Mapping[str, Any]) -> NodePool:
    """The typed NodePool of a stored object, parsed once per version (see the module
    docstring). Raises :class:`~karpenter_core.apis.v1.APIError` naming the bad field.

    uid and resourceVersion find the earlier parse; the object's content confirms it (a
    copy is kept to compare with), because uids are unique only within one API server and
    one process may talk to several (simulations, tests), and a caller may have changed
    the dict in place."""
    meta = obj.get("metadata")
    key = ("", "")
    if isinstance(meta, Mapping):
        key = (str(meta.get("uid") or ""), str(meta.get("resourceVersion") or ""))
    if all(key):
        with _LOCK:
            found = _PARSED.get(key)
            if found is not None:
                _PARSED.move_to_end(key)
        if found is not None and found[0] == obj:
            return found[1]
    model = NodePool.from_dict(obj)
    if all(key):
        with _LOCK:
            _PARSED[key] = (copy.deepcopy(obj), model)
            while len(_PARSED) > _MAX_PARSED:
                _PARSED.popitem(last=False)
    return model


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
