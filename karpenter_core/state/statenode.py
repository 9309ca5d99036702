"""StateNode: one piece of existing capacity, a Node and/or its NodeClaim merged by provider id.

Mirrors upstream ``pkg/controllers/state/statenode.go``. Which half answers a question
depends on the lifecycle: until a managed node registers, its NodeClaim is the truth for
name, labels and taints; until it initialises, known ephemeral taints and the NodeClaim's
startup taints are ignored (they will go away, so pods may count on the node) and missing
capacity is filled in from the NodeClaim's status.

A StateNode owns mutable usage (pod requests, host ports, volumes); the scheduler gets its own
copies via :meth:`StateNode.copy` so a simulation never leaks into the snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, TypeVar

from attrs import frozen

from karpenter_core.apis.hostports import HostPort, HostPortUsage
from karpenter_core.apis.labels import (
    LABEL_HOSTNAME,
    NODE_INITIALIZED_LABEL_KEY,
    NODE_REGISTERED_LABEL_KEY,
    NODEPOOL_LABEL_KEY,
)
from karpenter_core.apis.objects import ONE, Node, ObjectError, Pod, _resources, _timestamp
from karpenter_core.apis.taints import Taint, is_known_ephemeral
from karpenter_core.apis.v1 import (
    CONDITION_DISRUPTION_REASON,
    CONDITION_INSTANCE_TERMINATING,
    NodeClaim,
)
from karpenter_core.apis.v1 import Taint as ModelTaint
from karpenter_core.scheduling.requirements import Requirements
from karpenter_core.scheduling.volumes import VolumeUsage

_T = TypeVar("_T")

__all__ = ["NODES_RESOURCE", "NodeClaimView", "StateNode"]

NODES_RESOURCE = "nodes"
"""A StateNode's capacity always carries ``nodes: 1`` so NodePool node-count limits add up."""


def _taints(taints: Iterable[ModelTaint], path: str) -> tuple[Taint, ...]:
    """The model's taints as scheduling taints (which also insist on a key and a known
    effect, as the API server does)."""
    out = []
    for i, t in enumerate(taints):
        try:
            out.append(Taint.from_dict(t.to_dict()))
        except (ValueError, TypeError, KeyError) as e:
            raise ObjectError(f"{path}[{i}]", str(e)) from None
    return tuple(out)


@frozen(eq=False)
class NodeClaimView:
    """A typed NodeClaim with the facts cluster state reads on every question derived
    once: taints as scheduling taints, capacity and allocatable as integers (the model keeps
    quantities as written), whether it is deleting or its instance terminating.

    Name, labels and annotations are the model's own (no copy). Building one raises
    :class:`~karpenter_core.apis.objects.ObjectError` naming the field a taint, quantity or
    deletion timestamp cannot be read from."""

    nodeclaim: NodeClaim
    name: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    taints: tuple[Taint, ...]
    startup_taints: tuple[Taint, ...]
    provider_id: str
    capacity: Mapping[str, int]
    allocatable: Mapping[str, int]
    deleting: bool
    instance_terminating: bool
    has_disruption_reason: bool = False
    """A ``DisruptionReason`` condition is set (the disruption controller asks this of every
    node at every pass, to clear what no command owns)."""

    @classmethod
    def of(cls, nodeclaim: NodeClaim) -> NodeClaimView:
        meta = nodeclaim.metadata
        spec = nodeclaim.spec
        status = nodeclaim.status
        capacity: Mapping[str, str | int | float] = status.capacity if status else {}
        allocatable: Mapping[str, str | int | float] = status.allocatable if status else {}
        deleted_at = _timestamp(meta.deletion_timestamp, "metadata.deletionTimestamp")
        return cls(
            nodeclaim=nodeclaim,
            name=nodeclaim.name,
            labels=meta.labels,
            annotations=meta.annotations,
            taints=_taints(spec.taints, "spec.taints"),
            startup_taints=_taints(spec.startup_taints, "spec.startupTaints"),
            provider_id=nodeclaim.provider_id,
            capacity=_resources(capacity, "status.capacity"),
            allocatable=_resources(allocatable, "status.allocatable"),
            deleting=deleted_at is not None,
            # every condition of the type counts, duplicates included
            instance_terminating=any(
                c.type == CONDITION_INSTANCE_TERMINATING and c.status == "True"
                for c in nodeclaim.conditions
            ),
            has_disruption_reason=nodeclaim.condition(CONDITION_DISRUPTION_REASON) is not None,
        )


def _same_taint(a: Taint, b: Taint) -> bool:
    """Kubernetes ``MatchTaint``: key and effect identify a taint, the value does not."""
    return bool(a.key == b.key and a.effect == b.effect)


class StateNode:
    """Existing capacity as the scheduler sees it (see module docstring)."""

    __slots__ = (
        "_daemonset_requests",
        "_derived",
        "_host_port_usage",
        "_label_requirements",
        "_marked",
        "_nominated_until",
        "_pod_requests",
        "_pod_requests_total",
        "_shared",
        "_usage_shared",
        "_view",
        "_volume_usage",
        "node",
        "pods",
    )

    def __init__(
        self,
        node: Node | None = None,
        nodeclaim: NodeClaim | NodeClaimView | None = None,
        *,
        pods: Iterable[Pod] = (),
        volume_limits: Mapping[str, int] | None = None,
        pod_volumes: Mapping[str, Mapping[str, frozenset[str]]] | None = None,
        marked_for_deletion: bool = False,
    ) -> None:
        """``node`` is the Node, ``nodeclaim`` the typed NodeClaim (or its
        :class:`NodeClaimView`, when one was already derived). ``pods`` are the non-terminal
        pods bound to the node; ``pod_volumes`` maps pod key -> {driver: PVC ids} for
        volume-limit tracking and ``volume_limits`` is the node's CSINode per-driver limit."""
        if node is None and nodeclaim is None:
            raise ValueError("a StateNode needs a Node or a NodeClaim")
        self.node = node
        self._view: NodeClaimView | None = (
            nodeclaim
            if nodeclaim is None or isinstance(nodeclaim, NodeClaimView)
            else NodeClaimView.of(nodeclaim)
        )
        self._marked = marked_for_deletion
        self._nominated_until = 0.0
        self.pods: list[Pod] = []
        self._pod_requests: dict[str, Mapping[str, int]] = {}
        self._daemonset_requests: dict[str, Mapping[str, int]] = {}
        self._pod_requests_total: dict[str, int] | None = None
        # the pod list and request dicts are shared with a copy (or the original) until
        # either changes them: see copy
        self._shared = False
        self._usage_shared = False
        self._derived: dict[str, Any] = {}
        # one cell shared with every copy (see label_requirements)
        self._label_requirements: list[tuple[Mapping[str, str], Requirements] | None] = [None]
        self._host_port_usage = HostPortUsage()
        self._volume_usage = VolumeUsage(volume_limits)
        pod_volumes = pod_volumes or {}
        for pod in pods:
            self.add_pod(pod, pod_volumes.get(pod.key, {}))

    # -- usage --

    def add_pod(self, pod: Pod, volumes: Mapping[str, frozenset[str]] | None = None) -> None:
        """Account for a pod bound to this node (upstream ``updateForPod``); a pod already
        counted here is replaced, so re-adding an updated pod never double-counts it."""
        if pod.key in self._pod_requests:
            self.remove_pod(pod.key)
        if self._shared:
            self._own()
        reqs = pod.scheduling_requests
        self.pods.append(pod)
        self._derived = {}
        self._pod_requests[pod.key] = reqs
        if pod.is_owned_by_daemonset():
            self._daemonset_requests[pod.key] = reqs
        self._pod_requests_total = None
        self.reserve(pod.key, pod.host_ports, volumes or {})

    def remove_pod(self, pod_key: str) -> bool:
        """Stop counting a pod (upstream ``cleanupForPod``); False if it was not counted."""
        if pod_key not in self._pod_requests:
            return False
        if self._shared:
            self._own()
        del self._pod_requests[pod_key]
        self._daemonset_requests.pop(pod_key, None)
        self.pods = [p for p in self.pods if p.key != pod_key]
        self._derived = {}
        self._pod_requests_total = None
        if pod_key in self._host_port_usage or pod_key in self._volume_usage:
            if self._usage_shared:
                self._own_usage()
            self._host_port_usage.delete_pod(pod_key)
            self._volume_usage.delete_pod(pod_key)
        return True

    def reserve(
        self,
        pod_key: str,
        host_ports: Iterable[HostPort],
        volumes: Mapping[str, frozenset[str]] | None,
    ) -> None:
        """Claim ``pod_key``'s host ports and (unless None) volumes on this node, replacing
        what it claimed before: a pod the scheduler places here, or one bound to it. Most
        pods claim neither, and then nothing shared with a copy is copied."""
        ports = tuple(host_ports)
        ports_change = bool(ports) or pod_key in self._host_port_usage
        volumes_change = volumes is not None and (bool(volumes) or pod_key in self._volume_usage)
        if not (ports_change or volumes_change):
            return
        if self._usage_shared:
            self._own_usage()
        if ports_change:
            self._host_port_usage.add(pod_key, ports)
        if volumes_change:
            assert volumes is not None
            self._volume_usage.add(pod_key, volumes)

    def from_pods(self, key: str, compute: Callable[[Sequence[Pod]], _T]) -> _T:
        """``compute(self.pods)``, kept under ``key`` until the pods change and shared
        with copies holding the same pods: what disruption derives from each node's pods
        (which of them reschedule, what evicting them costs) is then worked out once per
        change of the node, not at every pass. ``compute`` must depend on the pods alone;
        two threads may both compute it, and either answer is kept."""
        try:
            found: _T = self._derived[key]
        except KeyError:
            found = self._derived[key] = compute(self.pods)
        return found

    def has_pod(self, pod_key: str) -> bool:
        return pod_key in self._pod_requests

    def copy(self) -> StateNode:
        """An independent copy: usage can be changed without touching this node.

        Every provisioning and disruption snapshot copies every node, and most copies are
        only read, so the pod list and the per-pod requests (one entry per pod) are shared
        until the copy or this node adds or removes a pod (:meth:`_own`). ``pods`` is read
        by everyone but changed only here."""
        n = StateNode.__new__(StateNode)
        n.node = self.node
        n._view = self._view
        n._marked = self._marked
        n._nominated_until = self._nominated_until
        n.pods = self.pods
        n._derived = self._derived
        n._label_requirements = self._label_requirements
        n._pod_requests = self._pod_requests
        n._daemonset_requests = self._daemonset_requests
        n._shared = self._shared = True
        n._pod_requests_total = self._pod_requests_total
        # host-port and volume usage alike, until either side reserves or releases
        n._host_port_usage = self._host_port_usage
        n._volume_usage = self._volume_usage
        n._usage_shared = self._usage_shared = True
        return n

    def _own_usage(self) -> None:
        self._host_port_usage = self._host_port_usage.copy()
        self._volume_usage = self._volume_usage.copy()
        self._usage_shared = False

    def _own(self) -> None:
        """Take private copies of what :meth:`copy` shared, before changing them."""
        self.pods = list(self.pods)
        self._pod_requests = dict(self._pod_requests)
        self._daemonset_requests = dict(self._daemonset_requests)
        self._shared = False

    def pod_requests(self) -> dict[str, int]:
        """Summed requests of the bound pods (each including ``pods: 1``)."""
        if self._pod_requests_total is None:
            total: dict[str, int] = {}
            for reqs in self._pod_requests.values():
                for k, v in reqs.items():
                    total[k] = total.get(k, 0) + v
            self._pod_requests_total = total
        return dict(self._pod_requests_total)

    def daemonset_requests(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for reqs in self._daemonset_requests.values():
            for k, v in reqs.items():
                total[k] = total.get(k, 0) + v
        return total

    def host_port_usage(self) -> HostPortUsage:
        """The host ports claimed here, to read: it may be shared with copies of this node
        (claim through :meth:`reserve`)."""
        return self._host_port_usage

    def volume_usage(self) -> VolumeUsage:
        """The volumes attached here, to read (see :meth:`host_port_usage`)."""
        return self._volume_usage

    def volume_limits(self) -> Mapping[str, int]:
        """Per-CSI-driver attachable-volume limits from the node's CSINode (empty: none)."""
        return self._volume_usage.limits

    # -- the NodeClaim --

    @property
    def nodeclaim(self) -> NodeClaim | None:
        """The NodeClaim (None for a node Karpenter did not launch, or whose NodeClaim is
        gone)."""
        view = self._view
        return view.nodeclaim if view is not None else None

    @nodeclaim.setter
    def nodeclaim(self, nodeclaim: NodeClaim | None) -> None:
        self._view = NodeClaimView.of(nodeclaim) if nodeclaim is not None else None

    @property
    def nodeclaim_view(self) -> NodeClaimView | None:
        """The NodeClaim with the facts state reads derived (see :class:`NodeClaimView`);
        setting it sets the NodeClaim."""
        return self._view

    @nodeclaim_view.setter
    def nodeclaim_view(self, view: NodeClaimView | None) -> None:
        self._view = view

    # -- identity and lifecycle --

    def managed(self) -> bool:
        """Karpenter launched it (a NodeClaim is known)."""
        return self._view is not None

    # The identity readers below (registered, initialized, name, labels, annotations) run
    # for every node several times a disruption pass (candidates, budgets, topology): each
    # reads the two slots and calls nothing, as the calls of a chain of small methods cost
    # more than the reads themselves. The NodeClaim answers for identity while there is no
    # Node or a managed Node is not yet registered; otherwise the Node does.

    def registered(self) -> bool:
        node = self.node
        if self._view is None:
            return True  # not managed
        return node is not None and node.labels.get(NODE_REGISTERED_LABEL_KEY) == "true"

    def initialized(self) -> bool:
        node = self.node
        if self._view is None:
            return True  # not managed
        return node is not None and node.labels.get(NODE_INITIALIZED_LABEL_KEY) == "true"

    def name(self) -> str:
        node = self.node
        view = self._view
        if node is None or (
            view is not None and node.labels.get(NODE_REGISTERED_LABEL_KEY) != "true"
        ):
            assert view is not None
            return view.name
        return node.name

    def provider_id(self) -> str:
        if self.node is None:
            assert self._view is not None
            return self._view.provider_id
        return self.node.provider_id

    def labels(self) -> Mapping[str, str]:
        node = self.node
        view = self._view
        if node is None or (
            view is not None and node.labels.get(NODE_REGISTERED_LABEL_KEY) != "true"
        ):
            assert view is not None
            return view.labels
        return node.labels

    def label_requirements(self) -> Requirements:
        """:meth:`labels` as requirements (each ``key In [value]``), to read.

        Built once per set of labels and shared with every copy, both ways: snapshots
        copy every node and it is mostly the copies that ask (each solve's view of each
        existing node starts from them; the solver copies before it narrows them), so a
        memo kept on the copy alone was rebuilt at every pass. The cell holds one
        (labels, requirements) pair, replaced whole; a new labels object with the same
        content (a re-parsed NodeClaim whose status changed) keeps the requirements."""
        labels = self.labels()
        cell = self._label_requirements
        kept = cell[0]
        if kept is not None and (kept[0] is labels or kept[0] == labels):
            if kept[0] is not labels:
                cell[0] = (labels, kept[1])
            return kept[1]
        reqs = Requirements.from_labels(labels)
        cell[0] = (labels, reqs)
        return reqs

    def annotations(self) -> Mapping[str, str]:
        node = self.node
        view = self._view
        if node is None or (
            view is not None and node.labels.get(NODE_REGISTERED_LABEL_KEY) != "true"
        ):
            assert view is not None
            return view.annotations
        return node.annotations

    def hostname(self) -> str:
        return self.labels().get(LABEL_HOSTNAME) or self.name()

    def nodepool_name(self) -> str:
        return self.labels().get(NODEPOOL_LABEL_KEY, "")

    def taints(self) -> tuple[Taint, ...]:
        """Taints pods must tolerate to land here.

        A managed node that is not yet initialised drops known ephemeral taints and its
        NodeClaim's startup taints: they are expected to go away, and counting them would make
        Karpenter launch a second node for pods that will fit on this one."""
        nc = self._view
        if (nc is not None and not self.registered()) or self.node is None:
            assert nc is not None
            taints = nc.taints
        else:
            taints = tuple(self.node.taints)
        if nc is not None and not self.initialized():
            return tuple(
                t
                for t in taints
                if not is_known_ephemeral(t)
                and not any(_same_taint(s, t) for s in nc.startup_taints)
            )
        return taints

    def capacity(self) -> dict[str, int]:
        out = self._resources("capacity")
        out[NODES_RESOURCE] = ONE
        return out

    def allocatable(self) -> dict[str, int]:
        return self._resources("allocatable")

    def _resources(self, which: Literal["capacity", "allocatable"]) -> dict[str, int]:
        """The Node's ``capacity``/``allocatable``; until the node is initialised the Node may
        not report every resource yet, so the NodeClaim's estimate fills the zeros and gaps
        (and stands alone while there is no Node)."""
        nc = self._view
        if nc is None or self.initialized():
            return dict(getattr(self.node, which))
        if self.node is None:
            return dict(getattr(nc, which))
        out: dict[str, int] = dict(getattr(self.node, which))
        for k, v in getattr(nc, which).items():
            if not out.get(k):
                out[k] = v
        return out

    def available(self) -> dict[str, int]:
        """Allocatable minus what bound pods request (only allocatable's resources)."""
        used = self.pod_requests()
        return {k: v - used.get(k, 0) for k, v in self.allocatable().items()}

    def deleted(self) -> bool:
        nc = self._view
        if nc is not None:
            return nc.deleting or nc.instance_terminating
        return self.node is not None and self.node.deletion_timestamp is not None

    @property
    def marked_for_deletion(self) -> bool:
        """Explicitly marked (disruption in progress) or already deleting."""
        return self._marked or self.deleted()

    def mark_for_deletion(self, marked: bool = True) -> None:
        self._marked = marked

    def inherit_intent(self, other: StateNode) -> None:
        """Take over Karpenter's intentions for ``other`` (its explicit deletion mark and
        nomination) when cluster state replaces it with a rebuilt StateNode."""
        self._marked = other._marked
        self._nominated_until = other._nominated_until

    def nominate(self, now: float, window: float) -> None:
        """A pending pod was planned onto this node: keep it from being disrupted until
        ``now + window`` (monotonic seconds); a later nomination extends the window."""
        self._nominated_until = max(self._nominated_until, now + window)

    def nominated(self, now: float) -> bool:
        return now < self._nominated_until

    def __repr__(self) -> str:
        return f"StateNode({self.name()!r}, pods={len(self.pods)})"
