"""The provisioning scheduler: decide where pending pods go (spec scheduling.md §8).

For each pod, largest first: an existing node (initialised first), else a NodeClaim already
planned in this solve (fewest pods first, ties in upstream's exact order), else a new
NodeClaim from the heaviest NodePool that can take it. A pod that fits nowhere gives up one
preference and tries again; a pod that still fits nowhere goes to the back of the queue, and
the solve ends after a full pass without progress. The structure mirrors upstream
``scheduler.go`` so behaviour can be compared line by line; speed comes from caching, not
from a different algorithm.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import filterfalse
from typing import Any

from attrs import field, frozen

from karpenter_core.apis.labels import (
    LABEL_HOSTNAME,
    NODECLAIM_MIN_VALUES_RELAXED_ANNOTATION_KEY,
    NODEPOOL_LABEL_KEY,
    REQUESTED_DRA_DRIVERS_ANNOTATION_KEY,
)
from karpenter_core.apis.objects import Pod
from karpenter_core.apis.resource import ResourceClaim
from karpenter_core.apis.v1 import NodePool
from karpenter_core.cloudprovider.types import InstanceType
from karpenter_core.provisioning.scheduler import resourcelist as rl
from karpenter_core.provisioning.scheduler.dra import ClaimError, DRASimulation
from karpenter_core.provisioning.scheduler.errors import (
    CombinedError,
    DRAError,
    NodePoolError,
    PodError,
    is_reserved_offering_error,
)
from karpenter_core.provisioning.scheduler.existingcapacity import (
    ExistingCapacity,
    daemon_requests_for,
    existing_node_order,
)
from karpenter_core.provisioning.scheduler.existingnode import ExistingNode
from karpenter_core.provisioning.scheduler.instancetypes import (
    ITInfo,
    OptionSet,
)
from karpenter_core.provisioning.scheduler.nodeclaim import (
    NodeClaim,
    Placement,
)
from karpenter_core.provisioning.scheduler.nodeclaimtemplate import (
    MAX_INSTANCE_TYPES,
    NodeClaimTemplate,
)
from karpenter_core.provisioning.scheduler.podinfo import PodData, pod_data
from karpenter_core.provisioning.scheduler.preferences import PodSchedulingView, Preferences
from karpenter_core.provisioning.scheduler.queue import (
    Queue,
    sort_slice,
    stable_after_one_change,
)
from karpenter_core.provisioning.scheduler.reservations import ReservationManager
from karpenter_core.provisioning.scheduler.results import Results
from karpenter_core.provisioning.scheduler.solvemetrics import SolveGauges, effective_zone
from karpenter_core.provisioning.scheduler.templates import NodePoolTemplates
from karpenter_core.provisioning.scheduler.topology import Topology, parse_scheduler_config
from karpenter_core.provisioning.scheduler.topologyadapter import TopologyAdapter
from karpenter_core.runtime.scope import current_controller
from karpenter_core.scheduling.requirements import Requirements
from karpenter_core.scoring import Scoring
from karpenter_core.state.statenode import StateNode

PREFERENCE_POLICY_RESPECT = "Respect"
PREFERENCE_POLICY_IGNORE = "Ignore"
MIN_VALUES_POLICY_STRICT = "Strict"
MIN_VALUES_POLICY_BEST_EFFORT = "BestEffort"

NODES_RESOURCE = "nodes"
DRA_ERROR = DRAError(
    "pod has Dynamic Resource Allocation requirements that are not yet supported by Karpenter"
)
TIMEOUT_ERROR = PodError("scheduling simulation timed out before this pod was placed")
# Strike existing nodes found full out of later scans for the same requests (off in
# reference mode; tests switch it off to compare).
SKIP_FULL_NODES = True


def _check_choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)} (got {value!r})")


@frozen
class SchedulerOptions:
    """Knobs upstream exposes as flags/feature gates.

    ``reserved_capacity`` is the ReservedCapacity feature gate; ``strict_reserved_offerings``
    is the provisioner's mode (a pod compatible with exhausted reservations waits rather than
    falling back). ``max_instance_types`` caps each NodeClaim's options after the solve.
    ``ignore_dra_requests`` (upstream ``IGNORE_DRA_REQUESTS``, default on) reports pods that
    use ResourceClaims as unschedulable instead of simulating device allocation.
    ``timeout_seconds`` bounds the solve (the provisioner uses 60, as upstream): placements
    made so far are kept and pods not yet placed report that the simulation timed out. It
    is measured on ``monotonic`` (the controller's clock, so a simulation that charges
    compute time to its virtual clock times out as a real controller would).
    ``scoring`` orders each new NodeClaim's instance types before the cap (the NodePools'
    instance-type scorers, :mod:`karpenter_core.scoring`); None is upstream's price order.
    ``scheduler_config`` is the ``--scheduler-config`` (``SCHEDULER_CONFIG``) document, as
    YAML text or already decoded: its ``podTopologySpread.defaultConstraints`` are stamped
    onto pending pods that declare no spread of their own (spec §10.7). It is validated
    here, so a bad document fails when the options are built, not mid-solve.
    """

    preference_policy: str = PREFERENCE_POLICY_RESPECT
    min_values_policy: str = MIN_VALUES_POLICY_STRICT
    reserved_capacity: bool = True
    strict_reserved_offerings: bool = True
    max_instance_types: int = MAX_INSTANCE_TYPES
    ignore_dra_requests: bool = True
    timeout_seconds: float | None = None
    scheduler_config: str | Mapping[str, Any] | None = field(default=None, hash=False)
    scoring: Scoring | None = field(default=None, eq=False, hash=False, repr=False)
    monotonic: Callable[[], float] = field(default=time.monotonic, eq=False, hash=False, repr=False)

    def __attrs_post_init__(self) -> None:
        parse_scheduler_config(self.scheduler_config)
        _check_choice(
            "preference policy",
            self.preference_policy,
            (PREFERENCE_POLICY_RESPECT, PREFERENCE_POLICY_IGNORE),
        )
        _check_choice(
            "min-values policy",
            self.min_values_policy,
            (MIN_VALUES_POLICY_STRICT, MIN_VALUES_POLICY_BEST_EFFORT),
        )
        if self.timeout_seconds is not None and self.timeout_seconds <= 0:
            raise ValueError(f"timeout must be positive (got {self.timeout_seconds})")
        if self.max_instance_types < 1:
            raise ValueError(
                f"max instance types must be at least 1 (got {self.max_instance_types})"
            )

    def default_spread_constraints(self) -> tuple[dict[str, Any], ...]:
        """The validated default topology-spread constraints (empty without a config)."""
        return parse_scheduler_config(self.scheduler_config)


DEFAULT_OPTIONS = SchedulerOptions()


def pod_identity(pod: Any) -> str:
    """How the solve keys a pod (and its relaxed views): the UID, else ``namespace/name``."""
    return str(pod.uid or pod.key)


class Scheduler:
    """One scheduling simulation (upstream ``NewScheduler`` + ``Solve``).

    Built from NodePools (heaviest first), their instance types, existing capacity
    (state nodes), DaemonSet pods and the solve's ``Topology``; ``solve(pods)`` places the
    pods and returns :class:`Results`. Shortcuts that skip work never change a decision;
    ``reference=True`` disables them for differential tests.
    """

    def __init__(
        self,
        nodepools: Sequence[NodePool],
        instance_types: Mapping[str, Sequence[InstanceType]],
        state_nodes: Sequence[StateNode] = (),
        daemon_pods: Sequence[Pod] = (),
        topology: Topology | None = None,
        options: SchedulerOptions = DEFAULT_OPTIONS,
        volume_requirements: Mapping[str, Sequence[Requirements]] | None = None,
        pod_volumes: Any | None = None,
        reference: bool = False,
        under_consolidate_after: Callable[[Any], bool] | None = None,
        deleting_node_names: Iterable[str] = (),
        controller: str | None = None,
        dra: DRASimulation | None = None,
        existing: ExistingCapacity | None = None,
        excluded_nodes: Iterable[str] = (),
        pools: NodePoolTemplates | None = None,
    ) -> None:
        """``reference=True`` turns off every shortcut (memoised topology answers, skipped
        NodeClaims, bisected instance-type filtering) so tests can check that the shortcuts
        never change a decision.

        Consolidation simulations (upstream ``IsConsolidationSimulation``) pass
        ``under_consolidate_after`` (is this state node still inside its pool's
        consolidateAfter?) and the names of nodes being deleted: running pods are not moved
        onto such recently changed nodes, except pods leaving deleting nodes.

        ``controller`` labels the solve's metrics; by default the controller whose
        reconcile is running (:func:`karpenter_core.runtime.scope.current_controller`).

        ``dra`` simulates the pods' ResourceClaims (:mod:`.dra`); without it, and with
        ``ignore_dra_requests`` off, their claims are not looked at.

        ``existing`` replaces ``state_nodes`` (and ``under_consolidate_after``, which it
        has applied) by capacity prepared once for many solves (:mod:`.existingcapacity`),
        less the nodes named in ``excluded_nodes``: its nodes are shared, and copied only
        when this solve places a pod on one. ``pools`` are the NodePools' templates
        prepared the same way (:class:`.templates.NodePoolTemplates`, built from
        ``nodepools``, ``instance_types`` and ``daemon_pods`` when not given)."""
        self.options = options
        self.dra = dra if not options.ignore_dra_requests else None
        self._pods: dict[str, Any] = {}
        self.controller = current_controller() if controller is None else controller
        self.reference = reference
        if pools is None:
            pools = NodePoolTemplates(nodepools, instance_types, options, daemon_pods, reference)
        elif pools.reference != reference:
            raise ValueError("prepared NodePool templates were built for another reference mode")
        self.index = pools.index
        self.topology = TopologyAdapter(topology, reference=reference)
        self.ignore_preferences = options.preference_policy == PREFERENCE_POLICY_IGNORE
        self.relax_min_values = pools.relax_min_values
        self.volume_requirements = dict(volume_requirements or {})
        self.pod_volumes = pod_volumes
        self.pod_data: dict[str, PodData] = {}
        self._pod_data_cache: dict[Any, PodData] = {}
        templates = pools.all_templates
        self.prefer_no_schedule = pools.prefer_no_schedule
        self.preferences = Preferences(
            tolerate_prefer_no_schedule=self.prefer_no_schedule,
            policy=options.preference_policy,
        )
        self.skipped_templates = pools.skipped_templates
        self.skipped_for_min_values = pools.skipped_for_min_values
        self.templates = pools.templates
        self._no_templates_error = pools.no_templates_error
        daemon_pods = pools.daemon_pods
        self.daemon_groups = pools.daemon_groups
        self.remaining: dict[str, dict[str, int]] = {}
        for t in templates:
            if t.limits:
                self.remaining[t.nodepool_name] = dict(t.limits)
        self.reservations = ReservationManager(instance_types)
        # Pool -> (the remaining-limits dict it was computed for, affordable options, index).
        self._affordable: dict[str, tuple[Mapping[str, int], list[ITInfo], OptionSet | None]] = {}
        self.new_nodeclaims: list[NodeClaim] = []
        # The same NodeClaims in upstream's ``newNodeClaims`` slice order (see _sort_inflight).
        self._inflight: list[NodeClaim] = []
        # The NodeClaims that gained a pod since _inflight was last sorted, each with whether
        # it was new (appended) and, when the scan knew it, its index in _inflight.
        self._changed: list[tuple[NodeClaim, bool, int | None]] = []
        # How many in-flight NodeClaims hold each pod count (index = count).
        self._sizes: list[int] = [0]
        # Each in-flight NodeClaim's current signature, for skipping shared rejections.
        self._sig_of: dict[NodeClaim, int] = {}
        # Hostname anti-affinity counts -> in-flight NodeClaims they do not rule out.
        self._blocker_index: dict[int, tuple[dict[str, int], dict[NodeClaim, None]]] = {}
        self.deleting_node_names = frozenset(deleting_node_names)
        self.existing_nodes: list[ExistingNode] = []
        self._existing = existing
        self._slots: list[ExistingNode] = []
        # shared prepared node (by id; existing_nodes keeps it alive) -> this solve's copy
        self._owned: dict[int, ExistingNode] = {}
        self._excluded_nodes = frozenset(excluded_nodes)
        # Requests dicts -> the existing nodes that may still have room for them.
        self._roomy: dict[int, _Roomy] = {}
        self._full_inflight: dict[int, tuple[Mapping[str, int], set[NodeClaim]]] = {}
        if existing is not None:
            if state_nodes:
                raise ValueError("give the scheduler state nodes or prepared capacity, not both")
            self._use_existing(existing)
            return
        for sn in state_nodes:
            taints = sn.taints()
            labels = Requirements.from_labels(sn.labels())
            node = ExistingNode(
                sn,
                self.topology,
                taints,
                daemon_requests_for(taints, labels, daemon_pods),
                self.dra,
                requirements=labels,
            )
            node.under_consolidate_after = bool(
                under_consolidate_after is not None and under_consolidate_after(sn)
            )
            self.existing_nodes.append(node)
            pool = sn.nodepool_name()
            if pool in self.remaining:
                self.remaining[pool] = rl.subtract(self.remaining[pool], sn.capacity())
        self.existing_nodes.sort(key=existing_node_order)

    def _use_existing(self, existing: ExistingCapacity) -> None:
        """Take the prepared nodes, less the excluded ones, into this solve."""
        excluded = self._excluded_nodes
        existing.scope.topology = self.topology
        existing.scope.dra = self.dra
        self._slots = list(existing.nodes)
        self.existing_nodes = existing.without(excluded)
        self.topology.register_all(LABEL_HOSTNAME, existing.hostnames(excluded))
        for pool, limits in self.remaining.items():
            self.remaining[pool] = rl.subtract(limits, existing.nodepool_capacity(pool, excluded))

    # -- pod data --

    def _pod_data(self, pod: Any) -> PodData:
        ident = pod_identity(pod)
        volumes = self.volume_requirements.get(ident, ())
        key = (
            _freeze(pod.node_selector),
            _freeze(pod.affinity),
            _freeze(pod.scheduling_requests),
            id(volumes) if volumes else None,
        )
        data = self._pod_data_cache.get(key)
        if data is None:
            data = pod_data(pod, self.ignore_preferences, volumes)
            self._pod_data_cache[key] = data
        return data

    # -- the solve loop --

    def solve(self, pods: Sequence[Any]) -> Results:
        errors: dict[str, object] = {}
        by_ident: dict[str, Any] = {}
        schedulable = []
        self._pods = by_ident
        for p in pods:
            ident = pod_identity(p)
            by_ident[ident] = p
            try:
                self.pod_data[ident] = self._pod_data(p)
            except ValueError as e:
                # A malformed node selector term is the pod's problem, not the solve's.
                errors[ident] = PodError("invalid pod requirements", e)
                continue
            schedulable.append(p)

        def sort_key(p: Any) -> tuple[int, int, float, str]:
            r = self.pod_data[pod_identity(p)].requests
            return (-r.get("cpu", 0), -r.get("memory", 0), p.creation_timestamp or 0.0, str(p.uid))

        zones = self.effective_zones(schedulable)
        queue: Queue[Any] = Queue(schedulable, sort_key, pod_identity)
        gauges = SolveGauges(self.controller)
        deadline = (
            self.options.monotonic() + self.options.timeout_seconds
            if self.options.timeout_seconds is not None
            else None
        )
        while True:
            gauges.tick(len(queue))
            if deadline is not None and self.options.monotonic() > deadline:
                for waiting in queue.items():
                    errors.setdefault(pod_identity(waiting), TIMEOUT_ERROR)
                break
            pod = queue.pop()
            if pod is None:
                break
            ident = pod_identity(pod)
            try:
                err = self._try_schedule(PodSchedulingView.of(pod), ident)
            except ValueError as e:
                # Only reachable for terms first parsed during relaxation: give up on the pod.
                errors[ident] = PodError("invalid pod requirements", e)
                continue
            if err is None:
                errors.pop(ident, None)
                continue
            errors[ident] = err
            # Retry later from the unrelaxed original: all preferences come back.
            self.topology.update(PodSchedulingView.of(pod))
            self.pod_data[ident] = self._pod_data(pod)
            queue.push(pod)
        gauges.finish()
        for nc in self.new_nodeclaims:
            if self.dra is not None:
                drivers = self.dra.drivers(nc.hostname)
                if drivers:
                    nc.annotations[REQUESTED_DRA_DRIVERS_ANNOTATION_KEY] = ",".join(drivers)
            nc.finalize()
        return Results(
            new_nodeclaims=list(self.new_nodeclaims),
            existing_nodes=self._existing_nodes_now(),
            pod_errors={by_ident[i].key: e for i, e in errors.items()},
            pods_by_key={p.key: p for p in pods},
            skipped_nodepools=dict(self.skipped_templates),
            min_values_skipped_nodepools=frozenset(self.skipped_for_min_values),
            effective_zones=zones,
            dra_claim_allocations=self.dra.claim_allocations() if self.dra is not None else {},
        )

    def effective_zones(self, pods: Sequence[Any]) -> dict[str, str]:
        """Each pending pod's effective zone (see :func:`.solvemetrics.effective_zone`), by pod
        key, from its unrelaxed constraints: what the pod itself asks for, not what this
        solve managed to give it."""
        topology = self.topology.topology
        out: dict[str, str] = {}
        for pod in pods:
            if pod.phase != "Pending":
                continue
            data = self.pod_data[pod_identity(pod)]
            spread: set[str] | None = None
            satisfiable = True
            if topology is not None:
                spread, satisfiable = topology.get_topology_zone_constraints(
                    PodSchedulingView.of(pod), data.requirements
                )
            out[pod.key] = effective_zone(
                data.strict_requirements, data.volume_requirements, spread, satisfiable
            )
        return out

    def _try_schedule(self, view: PodSchedulingView, ident: str) -> object | None:
        while True:
            err = self._add(view, ident)
            if err is None:
                return None
            if is_reserved_offering_error(err) or isinstance(err, DRAError | ClaimError):
                # Neither goes away by giving up a preference.
                return err
            if not self.preferences.relax(view):
                return err
            self.topology.update(view)
            self.pod_data[ident] = self._pod_data(view)

    def _add(self, pod: Any, ident: str) -> object | None:
        data = self.pod_data[ident]
        claims: Sequence[ResourceClaim] = ()
        if getattr(pod, "has_dra_requirements", False):
            if self.options.ignore_dra_requests:
                return DRA_ERROR
            if self.dra is not None:
                resolved = self.dra.claims(self._pods.get(ident, pod), ident)
                if isinstance(resolved, ClaimError):
                    return resolved
                claims = resolved
        self.topology.begin_scan(pod)
        if self._add_to_existing_node(pod, data, claims):
            return None
        self._sort_inflight()
        if self._add_to_inflight_nodeclaim(pod, data, claims):
            return None
        if not self.templates:
            return self._no_templates_error
        return self._add_to_new_nodeclaim(pod, data, claims)

    def _add_to_existing_node(
        self, pod: Any, data: PodData, claims: Sequence[ResourceClaim] = ()
    ) -> bool:
        if not self.existing_nodes:
            return False
        volumes = self.pod_volumes(pod) if self.pod_volumes is not None else None
        blockers = [] if self.reference else self.topology.hostname_blockers(pod)
        moving = pod.phase != "Pending" and pod.node_name not in self.deleting_node_names
        if self.reference or not SKIP_FULL_NODES:
            candidates: Iterable[tuple[int, ExistingNode]] = (
                self._prepared_candidates(data)
                if self._existing is not None
                else enumerate(self.existing_nodes)
            )
        else:
            candidates = self._roomy_candidates(data)
        for i, node in candidates:
            if node.under_consolidate_after and moving:
                continue
            if blockers and any(b.get(node.hostname) for b in blockers):
                continue
            result = node.can_add(pod, data, volumes, claims)
            if isinstance(result, Placement):
                if node.shared:
                    node = self._own(i, node)
                node.add(pod, data, result, volumes)
                return True
        return False

    def _roomy_candidates(self, data: PodData) -> Iterator[tuple[int, ExistingNode]]:
        """The existing nodes in order, less those already found without room for the pod.

        A node only loses room during a solve (placing a pod subtracts its requests; nothing
        gives any back), so once a node cannot fit some requests it refuses every later pod
        asking for the same: :meth:`ExistingNode.can_add` would say "exceeds node resources".
        Each requests dict keeps the nodes not yet found full for it and a scan strikes out
        the full ones it passes, so a solve that fills many nodes stops asking each of them
        again for every pod. The nodes left, and their order, are the plain scan's."""
        requests = data.requests
        roomy = self._roomy.get(id(requests))
        if roomy is None or roomy.requests is not requests:
            start = (
                self._prepared_candidates(data)
                if self._existing is not None
                else enumerate(self.existing_nodes)
            )
            roomy = _Roomy(requests, [i for i, _ in start])
            self._roomy[id(requests)] = roomy
        elif roomy.struck * 2 > len(roomy.slots):
            roomy.slots = [i for i in roomy.slots if i >= 0]
            roomy.struck = 0
        slots = roomy.slots
        nodes = self._slots if self._existing is not None else self.existing_nodes
        for pos, i in enumerate(slots):
            if i < 0:
                continue
            node = nodes[i]
            if not rl.fits(requests, node.remaining):
                slots[pos] = -1
                roomy.struck += 1
                continue
            yield i, node

    def _prepared_candidates(self, data: PodData) -> Iterator[tuple[int, ExistingNode]]:
        """Over prepared capacity, the existing nodes in order (by slot) less the excluded
        ones and those whose CPU or memory cannot take the pod (they would refuse it)."""
        assert self._existing is not None
        slots = self._slots
        excluded = self._excluded_nodes
        for i in self._existing.may_fit(data.requests):
            node = slots[i]
            if not (excluded and node.name in excluded):
                yield i, node

    def _own(self, slot: int, shared: ExistingNode) -> ExistingNode:
        """This solve's own copy of a shared node, in its slot; :attr:`existing_nodes`
        takes the copies when the results are built (finding a node's place in that list
        for each copy was a scan of every node)."""
        mine = shared.clone()
        self._slots[slot] = mine
        self._owned[id(shared)] = mine
        return mine

    def _existing_nodes_now(self) -> list[ExistingNode]:
        """:attr:`existing_nodes` with this solve's copies in place of the shared nodes."""
        owned = self._owned
        if owned:
            self.existing_nodes = [owned.get(id(n), n) for n in self.existing_nodes]
            owned.clear()
        return list(self.existing_nodes)

    def _sort_inflight(self) -> None:
        """Order the in-flight NodeClaims as upstream does before it tries them for a pod:
        ``sort.Slice`` by pod count on the slice as the last pod left it, so equal counts
        keep whatever order Go's unstable sort gives (:mod:`.queue` reproduces it).

        Since the previous sort at most one NodeClaim changed: it gained a pod, or it is new
        and was appended. Sorting an already sorted slice changes nothing in Go, so the sort
        is skipped when that change kept the order; when Go's sort provably ends as a stable
        one (:func:`.queue.stable_after_one_change`) the NodeClaim is moved to where the
        pod-count histogram puts it.
        Otherwise, and always with ``reference=True``, Go's algorithm runs in full."""
        order = self._inflight
        changed = self._changed
        if self.reference:
            changed.clear()
            sort_slice(order, _pod_count)
            return
        if not changed:
            return
        if len(changed) > 1:
            changed.clear()
            sort_slice(order, _pod_count)
            return
        nc, appended, known = changed.pop()
        size = len(nc.pods)
        n = len(order)
        sizes = self._sizes
        if appended:
            p = n - 1
        elif known is not None:
            p = known
        else:
            # Only this NodeClaim is out of place, and it sits among those with one pod
            # fewer, usually first (the scan takes the first that fits).
            p = order.index(nc, sum(sizes[: size - 1]))
        if appended:
            if n < 2 or len(order[-2].pods) <= size:
                return
        elif p + 1 >= n or len(order[p + 1].pods) >= size:
            return

        def less(i: int, j: int) -> bool:
            return len(order[i].pods) < len(order[j].pods)

        if not stable_after_one_change(n, less, p):
            sort_slice(order, _pod_count)
            return
        del order[p]
        if appended:
            # A new NodeClaim goes after every other NodeClaim with as few pods.
            order.insert(sum(sizes[: size + 1]) - 1, nc)
        else:
            # One that gained a pod goes before every NodeClaim that already had as many.
            order.insert(sum(sizes[:size]), nc)

    def _unblocked(self, pod: Any) -> list[NodeClaim] | None:
        """In-flight NodeClaims not ruled out by hostname anti-affinity counts, in scan order,
        or None when no such rule applies to ``pod``."""
        blockers = self.topology.hostname_blockers(pod)
        if not blockers:
            return None
        if self.reference:
            return list(self._inflight)
        entries = []
        for domains in blockers:
            entry = self._blocker_index.get(id(domains))
            if entry is None or entry[0] is not domains:
                unblocked = {nc: None for nc in self.new_nodeclaims if not domains.get(nc.hostname)}
                entry = (domains, unblocked)
                self._blocker_index[id(domains)] = entry
            entries.append(entry[1])
        entries.sort(key=len)
        picked = [nc for nc in self._inflight if nc in entries[0]] if entries[0] else []
        for others in entries[1:]:
            picked = [nc for nc in picked if nc in others]
        return picked

    def _add_to_inflight_nodeclaim(
        self, pod: Any, data: PodData, claims: Sequence[ResourceClaim] = ()
    ) -> bool:
        """First in-flight NodeClaim that takes the pod, in upstream's order (fewest pods
        first, ties as Go's sort left them: see :meth:`_sort_inflight`). NodeClaims whose
        signature already gave a shared rejection for this pod are skipped: they would say
        the same. A rejection by devices is never shared (the devices left differ per
        NodeClaim): the allocation comes after every check whose answer is.

        NodeClaims found full for the pod's requests (:attr:`NodeClaim.full_for_requests`)
        are skipped for every later pod asking the same: a scale-out opens a NodeClaim
        only after every open one refused the pod, so without this each new NodeClaim
        asked all the full ones again (1,400 NodeClaims: a million refusals per solve)."""
        shareable = not data.requirements.has(LABEL_HOSTNAME) and not self.reference
        rejected: set[int] = set()
        full = self._full_inflight_for(data.requests)
        unblocked = self._unblocked(pod)
        scan: list[NodeClaim] = self._inflight if unblocked is None else unblocked
        # The full ones are passed over in C: in a scale-out nearly every NodeClaim is full
        # for the pod's requests (600 of 600 on average in a 30,000-pod solve), and walking
        # them in Python was a sixth of the scale-out. The rest are taken lazily, so a
        # NodeClaim found full or a signature rejected on the way is skipped from then on.
        sig_of = self._sig_of
        for nc in filterfalse(full.__contains__, scan):
            if rejected and sig_of[nc] in rejected:
                continue
            result = nc.can_add(pod, data, False, want_error=False, claims=claims)
            if isinstance(result, Placement):
                # its position, for the sort: found in C, once per pod placed
                self._commit(nc, pod, data, result, scan.index(nc) if unblocked is None else None)
                return True
            if shareable and nc.reject_shared:
                rejected.add(nc.signature())
            elif nc.full_for_requests:
                full.add(nc)
        return False

    def _full_inflight_for(self, requests: Mapping[str, int]) -> set[NodeClaim]:
        """The in-flight NodeClaims found full for ``requests`` so far in this solve (pods
        asking the same share one interned requests dict, as for :meth:`_roomy_candidates`)."""
        entry = self._full_inflight.get(id(requests))
        if entry is None or entry[0] is not requests:
            entry = self._full_inflight[id(requests)] = (requests, set())
        return entry[1]

    def _commit(
        self,
        nc: NodeClaim,
        pod: Any,
        data: PodData,
        placement: Placement,
        position: int | None = None,
    ) -> None:
        """Add the pod; ``position`` is the NodeClaim's index in ``_inflight`` if known."""
        before = len(nc.pods)
        nc.add(pod, data, placement)
        self._changed.append((nc, before == 0, position))
        self._sig_of[nc] = nc.signature()
        sizes = self._sizes
        if before:
            sizes[before] -= 1
        after = len(nc.pods)
        while len(sizes) <= after:
            sizes.append(0)
        sizes[after] += 1
        for domains, unblocked in self._blocker_index.values():
            if domains.get(nc.hostname):
                unblocked.pop(nc, None)
            elif before == 0:
                unblocked[nc] = None

    def _affordable_options(
        self, template: NodeClaimTemplate, remaining: Mapping[str, int]
    ) -> tuple[list[ITInfo], OptionSet | None]:
        """The pool's options its remaining limits can still afford, with their index.

        The answer only changes when a NodeClaim from the pool changes ``remaining`` (which
        is then replaced, never mutated), so it is computed once per limits state rather than
        once per pod attempt: with a pool at its limits, re-filtering hundreds of instance
        types for every pending pod, relaxation and queue pass dominated the solve."""
        name = template.nodepool_name
        entry = self._affordable.get(name)
        if entry is not None and entry[0] is remaining and not self.reference:
            return entry[1], entry[2]
        options: list[ITInfo] = template.instance_type_options
        optset: OptionSet | None = None
        if rl.exceeds_any(template.max_capacity, remaining):
            options = [i for i in options if not rl.exceeds_any(i.capacity, remaining)]
            if options and not self.reference:
                # A subset of options vetted under the template's requirements: the same
                # compatibility signature still holds.
                sig = template.optset.sig if template.optset is not None else None
                optset = OptionSet(options, sig=sig)
        self._affordable[name] = (remaining, options, optset)
        return options, optset

    def _add_to_new_nodeclaim(
        self, pod: Any, data: PodData, claims: Sequence[ResourceClaim] = ()
    ) -> object | None:
        errors: list[object] = []
        for template in self.templates:
            options: list[ITInfo] = template.instance_type_options
            optset: OptionSet | None = None
            remaining = self.remaining.get(template.nodepool_name)
            if remaining is not None:
                if remaining.get(NODES_RESOURCE, 1) <= 0 and NODES_RESOURCE in remaining:
                    errors.append(
                        NodePoolError(template.nodepool_name, "node limits have been exhausted")
                    )
                    continue
                options, optset = self._affordable_options(template, remaining)
                if not options:
                    errors.append(
                        NodePoolError(
                            template.nodepool_name,
                            "all available instance types exceed limits for nodepool",
                        )
                    )
                    continue
            nc = NodeClaim(
                template,
                self.topology,
                self.daemon_groups[template.nodepool_name],
                options,
                self.reservations,
                self.index,
                self.options.reserved_capacity,
                self.options.strict_reserved_offerings,
                optset,
                self.dra,
            )
            result = nc.can_add(pod, data, self.relax_min_values, want_error=True, claims=claims)
            if not isinstance(result, Placement):
                errors.append(NodePoolError(template.nodepool_name, result))
                if is_reserved_offering_error(result):
                    # Compatible reservations exist but are taken: wait for them rather than
                    # falling back to a lighter pool.
                    break
                continue
            relaxed = any(
                r.min_values is not None
                and result.requirements.get(k).min_values is not None
                and (result.requirements.get(k).min_values or 0) < r.min_values
                for k, r in nc.requirements.items()
            )
            nc.annotations[NODECLAIM_MIN_VALUES_RELAXED_ANNOTATION_KEY] = (
                "true" if relaxed else "false"
            )
            self._commit(nc, pod, data, result)
            self.new_nodeclaims.append(nc)
            self._inflight.append(nc)
            if remaining is not None:
                # Pessimistically assume the largest candidate launches (upstream subtractMax).
                if nc.options is template.instance_type_options:
                    largest = template.max_capacity
                else:
                    largest = template.max_capacity_of(nc.options, remaining)
                self.remaining[template.nodepool_name] = {
                    k: v - largest.get(k, 0) for k, v in remaining.items()
                }
            return None
        if len(errors) == 1:
            return errors[0]
        return CombinedError(errors)


class _Roomy:
    """For one requests dict in one solve: the existing nodes (by index) that may still
    have room for it, in scan order, with -1 for those struck out as full."""

    __slots__ = ("requests", "slots", "struck")

    def __init__(self, requests: Mapping[str, int], slots: list[int]) -> None:
        self.requests = requests
        self.slots = slots
        self.struck = 0


def _pod_count(nc: NodeClaim) -> int:
    """Upstream's sort key for in-flight NodeClaims."""
    return len(nc.pods)


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


__all__ = [
    "DEFAULT_OPTIONS",
    "MIN_VALUES_POLICY_BEST_EFFORT",
    "MIN_VALUES_POLICY_STRICT",
    "NODEPOOL_LABEL_KEY",
    "PREFERENCE_POLICY_IGNORE",
    "PREFERENCE_POLICY_RESPECT",
    "Scheduler",
    "SchedulerOptions",
]
