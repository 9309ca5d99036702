"""The KWOK CloudProvider: upstream's simulated provider, whose "instances" are Nodes.

There is no machine behind a KWOK node: ``create`` picks an instance type and offering,
and writes a Node object (after the KWOKNodeClass ``nodeRegistrationDelay``) for a
simulated kubelet (the KWOK controller, or :mod:`karpenter_core.sim.kubelet`) to animate.
``get`` and ``list`` read those Nodes back; ``delete`` deletes the NodeClaim object and
reports the instance gone, exactly as upstream does (the core deletes the Node itself).

Behaviour follows upstream ``kwok/cloudprovider`` including its oddities, kept on purpose
so simulations match a real KWOK cluster:

- the Node's ``capacity`` is the NodeClaim's *requests*, and ``allocatable`` is those
  requests overlaid with the instance type's allocatable;
- ``kubernetes.io/hostname`` is the NodeClaim name, not the Node name;
- a missing KWOKNodeClass is an ``InsufficientCapacityError``, a KWOKNodeClass whose
  ``Ready`` condition is False a ``NodeClassNotReadyError``.

Where this differs from upstream, deliberately:

- **No KWOKNodeClass at all** in the cluster: the launch goes ahead as if a default,
  Ready KWOKNodeClass with no registration delay existed, so a simulation does not need
  one. As soon as any KWOKNodeClass exists, the named one must exist.
- The Node is created by a timer on the provider's clock (``clock.call_later``), never a
  thread or a sleep, so virtual time drives it; ``delete`` cancels a registration that is
  still pending, so a Node never appears for a NodeClaim already gone.
- A type with no compatible available offering is skipped (upstream would crash), and a
  launch where no type has one is an ``InsufficientCapacityError``.
- An offering that raised insufficient capacity is reported unavailable by
  ``get_instance_types`` for ``unavailable-offerings-ttl`` (3 minutes by default, like the
  AWS provider's cache), so the scheduler picks another offering next time, and so does
  ``create``.
- Failure injection (:mod:`karpenter_kwok.faults`): insufficient capacity for chosen
  offerings, launch latency, and instances whose Node never appears.

Random choices (the name suffix, ties between equally cheap offerings) come from one
``random.Random(seed)``: the same launches in the same order give the same Nodes.

Without a cluster client (``karpenter instance-types``, ``karpenter schedule``) the
catalogue works and ``create``/``delete``/``get``/``list`` raise
:class:`ClusterRequiredError`.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import json
import logging
import os
import random
import string
import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import attrs

from karpenter_core.plugin_api import (
    IN,
    Adoption,
    AlreadyExists,
    ApiError,
    DriftReason,
    DurationError,
    InstanceType,
    InsufficientCapacityError,
    LogThrottle,
    NodeClaim,
    NodeClaimNotFoundError,
    NodeClaimStatus,
    NodeClassKind,
    NodeClassNotReadyError,
    NotFound,
    ObjectMeta,
    Offering,
    OfferingOutage,
    RepairPolicy,
    Requirements,
    VirtualClock,
    api_reader,
    condition_of,
    get_cloud_provider,
    held_back,
    launch_preference,
    parse_go_duration,
    preference_rank,
    shared_list,
)
from karpenter_core.plugin_api import labels as wk
from karpenter_core.plugin_api import resources as res
from karpenter_kwok.dra import CONFIG_ENV as DRA_CONFIG_ENV
from karpenter_kwok.dra import CONFIG_SETTING as DRA_CONFIG_SETTING
from karpenter_kwok.dra import DRAConfig, DRAConfigError, load_config, set_active_config
from karpenter_kwok.faults import (
    FaultRule,
    FaultSettingError,
    KwokFaults,
    parse_duration_seconds,
    parse_rules,
)
from karpenter_kwok.instance_types import load_instance_types
from karpenter_kwok.labels import (
    KWOK_LABEL_KEY,
    KWOK_LABEL_VALUE,
    KWOK_NODE_CLASS,
    KWOK_PARTITION_LABEL_KEY,
    NODE_VIEWER_LABEL_KEY,
    PROVIDER_ID_PREFIX,
)

if TYPE_CHECKING:
    from karpenter_core.plugin_api import (
        Clock,
        EventRecorder,
        KubeClient,
        ProviderContext,
        TimerHandle,
    )

log = logging.getLogger("karpenter.kwok")

# an unreachable API server fails the lookup of every NodeClaim at once
_LOOKUP_FAILURES = LogThrottle(30.0)

NAME = "kwok"
INSTANCE_TYPES_FILE_SETTING = "instance-types-file-path"
INSTANCE_TYPES_FILE_ENV = "INSTANCE_TYPES_FILE_PATH"
SEED_SETTING = "seed"
LAUNCH_LATENCY_SETTING = "launch-latency"
LAUNCH_LATENCY_JITTER_SETTING = "launch-latency-jitter"
INSUFFICIENT_CAPACITY_SETTING = "insufficient-capacity"
NEVER_REGISTER_SETTING = "never-register"
UNAVAILABLE_OFFERINGS_TTL_SETTING = "unavailable-offerings-ttl"
CATALOGUE_PROVIDER_SETTING = "catalogue-provider"
CATALOGUE_SETTINGS_SETTING = "catalogue-provider-settings"
DEFAULT_UNAVAILABLE_OFFERINGS_TTL = 180.0

KWOK_PARTITIONS = ("a",)
"""Upstream spreads nodes over pre-created KWOK partitions; it ships only one."""

NODECLASS_RESOURCE = (KWOK_NODE_CLASS.api_version, KWOK_NODE_CLASS.kind)

REPAIR_POLICIES: tuple[RepairPolicy, ...] = (
    RepairPolicy("Ready", "False", timedelta(minutes=10)),
    RepairPolicy("Ready", "Unknown", timedelta(minutes=10)),
)
"""Kubelet's Ready condition, False or Unknown for 10 minutes, as upstream."""

_REGISTRATION_BACKOFF = (0.01, 0.05, 0.25, 1.25)
"""client-go's retry.DefaultBackoff (10 ms, x5, 4 steps), for creating the Node..."""
_REGISTRATION_MAX_BACKOFF = 7.0
"""...and after those, every 7 s at most, for as long as the instance lives: a kubelet
never stops trying to register its Node (its own back-off caps at 7 s), so an instance
launched while the API server was away still joins when it returns."""

_WORDS_A = (
    "amber", "brave", "calm", "dusty", "eager", "fuzzy", "gentle", "hazy", "icy", "jolly",
    "keen", "lucky", "misty", "noble", "odd", "proud", "quiet", "rusty", "shy", "tidy",
)  # fmt: skip
_WORDS_B = (
    "badger", "crane", "dingo", "eagle", "ferret", "gecko", "heron", "ibis", "jackal",
    "koala", "lemur", "marten", "newt", "otter", "panda", "quail", "raven", "stoat",
    "tapir", "walrus",
)  # fmt: skip
_ALNUM = string.ascii_lowercase + string.digits


class ClusterRequiredError(RuntimeError):
    """A launch operation was called on a provider built without a cluster client."""


class KwokLaunchError(Exception):
    """A NodeClaim the KWOK provider cannot turn into a Node (a core bug or a bad object);
    the core reports it as ``LaunchFailed`` and retries."""


@attrs.frozen
class _Choice:
    instance_type: InstanceType
    offering: Offering


class KwokCloudProvider:
    """Launches KWOK Nodes; see the module docstring for the exact behaviour."""

    def __init__(
        self,
        instance_types: Sequence[InstanceType],
        *,
        kube: KubeClient | None = None,
        clock: Clock | None = None,
        recorder: EventRecorder | None = None,
        faults: KwokFaults | None = None,
        seed: int = 0,
        unavailable_offerings_ttl: float = DEFAULT_UNAVAILABLE_OFFERINGS_TTL,
        dra_config: DRAConfig | None = None,
        catalogue: Any = None,
    ) -> None:
        self._instance_types = tuple(instance_types)
        # another provider whose instance types (per NodePool and NodeClass) KWOK launches
        self.catalogue = catalogue
        self._by_pool: dict[str, dict[str, InstanceType]] = {}
        self.dra_config = dra_config or DRAConfig()
        """The KWOK DRA driver's configuration (:mod:`karpenter_kwok.dra`)."""
        self._by_name = {it.name: it for it in self._instance_types}
        self.kube = kube
        self.clock = clock
        self.recorder = recorder
        self._faults = faults or KwokFaults()
        self._attempts: dict[tuple[str, int], int] = {}
        self._rng = random.Random(seed)
        self._sequence = 0
        self._lock = threading.RLock()
        self._started = clock.monotonic() if clock is not None else 0.0
        self._unavailable_ttl = unavailable_offerings_ttl
        self._unavailable: dict[tuple[str, str, str], float] = {}
        self._view_key: frozenset[tuple[str, str, str]] = frozenset()
        self._view: tuple[InstanceType, ...] = self._instance_types
        self._pending: dict[str, TimerHandle] = {}
        # launched by this process, Node not yet created (by NodeClaim name)
        self._instances: dict[str, dict[str, Any]] = {}

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_context(cls, context: ProviderContext) -> KwokCloudProvider:
        """The spec's factory: settings (see :meth:`from_settings`) plus the cluster
        client, clock and recorder of the context. With ``catalogue-provider``, that
        provider's offline catalogue (its settings from ``catalogue-provider-settings``, a
        JSON object; the context's NodeClass manifests passed on) replaces KWOK's: KWOK
        launches its instance types, so ``karpenter simulate`` can run a cluster of
        another cloud's types without that cloud."""
        provider = cls.from_settings(
            context.settings, kube=context.kube, clock=context.clock, recorder=context.recorder
        )
        name = (context.settings.get(CATALOGUE_PROVIDER_SETTING) or "").strip()
        if name:
            raw = context.settings.get(CATALOGUE_SETTINGS_SETTING) or "{}"
            try:
                settings = json.loads(raw)
            except ValueError as e:
                raise FaultSettingError(
                    f"setting {CATALOGUE_SETTINGS_SETTING}: not a JSON object: {e}"
                ) from None
            if not isinstance(settings, dict):
                raise FaultSettingError(f"setting {CATALOGUE_SETTINGS_SETTING}: not a JSON object")
            catalogue = get_cloud_provider(
                name,
                {str(k): str(v) for k, v in settings.items()},
                node_classes=context.node_classes,
            )
            # read it now: a region without a bundled catalogue fails at start, by name
            provider._learn(list(catalogue.get_instance_types(None)))
            provider.catalogue = catalogue
        return provider

    @classmethod
    def from_settings(
        cls,
        settings: Mapping[str, str],
        environ: Mapping[str, str] | None = None,
        *,
        kube: KubeClient | None = None,
        clock: Clock | None = None,
        recorder: EventRecorder | None = None,
    ) -> KwokCloudProvider:
        """Build from plugin settings.

        The catalogue comes from ``instance-types-file-path``, else the
        ``INSTANCE_TYPES_FILE_PATH`` environment variable, else the built-in one; a file
        that cannot be loaded raises ``InstanceTypesFileError`` naming it. The other
        settings (seed, failure injection) raise ``FaultSettingError`` naming the setting
        when malformed.
        """
        env = os.environ if environ is None else environ
        path = settings.get(INSTANCE_TYPES_FILE_SETTING) or env.get(INSTANCE_TYPES_FILE_ENV) or None
        faults = faults_from_settings(settings)
        seed_text = settings.get(SEED_SETTING, "") or "0"
        try:
            seed = int(seed_text)
        except ValueError:
            raise FaultSettingError(
                f"setting {SEED_SETTING}: expected an integer, got {seed_text!r}"
            ) from None
        ttl_text = settings.get(UNAVAILABLE_OFFERINGS_TTL_SETTING, "") or "3m"
        ttl = parse_duration_seconds(ttl_text, f"setting {UNAVAILABLE_OFFERINGS_TTL_SETTING}")
        try:
            dra_config = load_config(
                settings.get(DRA_CONFIG_SETTING) or env.get(DRA_CONFIG_ENV),
                f"setting {DRA_CONFIG_SETTING}",
            )
        except DRAConfigError as e:
            raise FaultSettingError(str(e)) from None
        # the DRA drivers the plugin's hook registers are those of this provider's settings
        set_active_config(dra_config)
        return cls(
            load_instance_types(path),
            kube=kube,
            clock=clock,
            recorder=recorder,
            faults=faults,
            seed=seed,
            unavailable_offerings_ttl=ttl,
            dra_config=dra_config,
        )

    # ------------------------------------------------------------------ catalogue

    @property
    def name(self) -> str:
        return NAME

    @property
    def faults(self) -> KwokFaults:
        return self._faults

    def set_faults(self, faults: KwokFaults) -> None:
        """Replace the injected failures (attempt counters start again)."""
        with self._lock:
            self._faults = faults
            self._attempts.clear()

    def add_offering_outage(self, outage: OfferingOutage) -> None:
        """:class:`~karpenter_core.cloudprovider.protocol.InjectsOfferingOutages`: one more
        insufficient-capacity rule, for the outage's offerings and window."""
        rule = FaultRule(
            instance_types=(outage.instance_type,) if outage.instance_type else (),
            zones=(outage.zone,) if outage.zone else (),
            capacity_types=(outage.capacity_type,) if outage.capacity_type else (),
            start=outage.start,
            end=outage.end,
        )
        with self._lock:
            self._faults = attrs.evolve(
                self._faults, insufficient_capacity=(*self._faults.insufficient_capacity, rule)
            )

    @property
    def simulated_node_annotation(self) -> tuple[str, str]:
        """:class:`~karpenter_core.cloudprovider.protocol.SimulatesNodes`: the annotation
        every KWOK Node carries, by which the KWOK controller (and a simulation's kubelet)
        knows the nodes it plays."""
        return (KWOK_LABEL_KEY, KWOK_LABEL_VALUE)

    def get_instance_types(self, nodepool: object | None = None) -> list[InstanceType]:
        """Every instance type, whatever the NodePool (KWOK has no per-NodeClass
        filtering); offerings that recently ran out of capacity are unavailable.

        Standing in for a catalogue provider: that provider's types for the NodePool (its
        NodeClass decides them), which KWOK then knows how to launch."""
        if self.catalogue is not None:
            types = list(self.catalogue.get_instance_types(nodepool))
            with self._lock:
                self._learn(types)
                name = getattr(nodepool, "name", None)
                if name:  # what a NodeClaim of this pool launches (its NodeClass's variant)
                    self._by_pool[name] = {it.name: it for it in types}
                marks = frozenset(self._unavailable)
                return [_mark_unavailable(it, marks) for it in types] if marks else types
        with self._lock:
            return list(self._current_view())

    def _learn(self, types: Sequence[InstanceType]) -> None:
        """Add the catalogue's types KWOK has not seen to the ones it launches (by name;
        a NodeClass-specific variant of a known name keeps the first one seen)."""
        new = [it for it in types if it.name not in self._by_name]
        if not new:
            return
        for it in new:
            self._by_name[it.name] = it
        self._instance_types = self._instance_types + tuple(new)
        self._view_key = frozenset({("", "", "")})  # no real mark set: rebuild on next read

    def is_drifted(self, nodeclaim: object) -> DriftReason:
        """KWOK instances never drift on the provider side."""
        return ""

    def repair_policies(self) -> Sequence[RepairPolicy]:
        return REPAIR_POLICIES

    def supported_node_classes(self) -> Sequence[NodeClassKind]:
        """KWOKNodeClass; standing in for a catalogue provider, that provider's kinds
        instead, implicit (a NodePool naming a class the cluster lacks behaves as if a
        Ready one existed, as for KWOKNodeClass) so a scenario need not write one."""
        if self.catalogue is not None:
            return tuple(
                attrs.evolve(k, implicit=True, default_status=KWOK_NODE_CLASS.default_status)
                for k in self.catalogue.supported_node_classes()
            )
        return (KWOK_NODE_CLASS,)

    # ------------------------------------------------------------------ launching

    def create(self, nodeclaim: NodeClaim | Mapping[str, Any]) -> NodeClaim:
        """Choose an instance type and offering, and register a Node for them later."""
        kube = self._require_kube("create")
        nc = _as_nodeclaim(nodeclaim)
        existing = self._existing_instance(kube, nc.name)
        if existing is not None:
            # A launch retried after a crash (the instance was created, the NodeClaim's
            # status never said so): the same instance, not a second one to leak.
            log.info(
                "kwok: nodeclaim %s already has instance %s",
                nc.name,
                existing["metadata"]["name"],
            )
            return _to_nodeclaim(existing)
        register_now = False
        any_type = self._static_without_instance_types(kube, nc)
        with self._lock:
            choice = self._choose(nc, any_type=any_type)
            node = self._to_node(nc, choice)
            delay = self._registration_delay(kube, nc)
            self._inject_insufficient_capacity(choice)
            if self._take(self._faults.never_register, "never-register", choice):
                log.info(
                    "kwok: instance %s for nodeclaim %s will never register (injected)",
                    node["metadata"]["name"],
                    nc.name,
                )
            else:
                delay += self._launch_latency()
                # On a wall clock with no delay the Node exists before the launch is
                # reported, so an operator killed right after this call finds the instance
                # when it retries instead of launching a second one (upstream registers
                # from a goroutine and accepts that loss). A simulation keeps upstream's
                # order: the Node appears just after the launch, at the same instant.
                wall = self.clock is not None and not isinstance(self.clock, VirtualClock)
                if wall and delay <= 0:
                    register_now = True
                else:
                    if self.clock is not None:
                        self._instances[nc.name] = node
                    self._schedule_registration(kube, nc.name, node, delay)
        if register_now:
            try:
                kube.create(node)
            except AlreadyExists:
                pass
            except ApiError as e:
                # nothing was launched: fail the launch, which the core retries
                raise KwokLaunchError(f"kwok: creating node {node['metadata']['name']}: {e}") from e
        return _to_nodeclaim(node)

    def _existing_instance(self, kube: KubeClient, nodeclaim: str) -> dict[str, Any] | None:
        """The instance already launched for ``nodeclaim``: one this process is about to
        register, or a live kwok Node whose hostname is the NodeClaim's name."""
        with self._lock:
            node = self._instances.get(nodeclaim)
        if node is not None:
            return node
        selector = f"{wk.LABEL_HOSTNAME}={nodeclaim},{KWOK_LABEL_KEY}={KWOK_LABEL_VALUE}"
        try:
            # from the API server, not a cache: a Node created by a request whose answer
            # was lost (the API server went away) is missing from a cache whose watch broke
            # at the same moment, and a second instance would be launched and leaked
            nodes = api_reader(kube).list("nodes", label_selector=selector).items
        except ApiError as e:  # cannot tell: launch, as before this check existed
            suppressed = _LOOKUP_FAILURES.admit(e.code)
            if suppressed is not None:
                log.warning(
                    "kwok: cannot look for nodeclaim %s's instance: %s%s",
                    nodeclaim,
                    e,
                    held_back(suppressed),
                )
            return None
        live = [n for n in nodes if not (n.get("metadata") or {}).get("deletionTimestamp")]
        return live[0] if live else None

    def delete(self, nodeclaim: NodeClaim | Mapping[str, Any]) -> None:
        """Delete the NodeClaim object and report the instance gone (upstream's way);
        a Node still waiting to register is cancelled.

        An instance no NodeClaim accounts for — as :meth:`list` reports it, named after its
        Node — is terminated by deleting its Node: garbage collection's way to end a leak
        (upstream's KWOK deletes only the NodeClaim object, which such an instance lacks,
        so its Node stayed for good)."""
        kube = self._require_kube("delete")
        nc = _as_nodeclaim(nodeclaim)
        with self._lock:
            pending = self._pending.pop(nc.name, None)
            self._instances.pop(nc.name, None)
        if pending is not None:
            pending.cancel()
        try:
            kube.delete("nodeclaims", nc.name)
        except NotFound as e:
            if self._terminate_orphan(kube, nc):
                raise NodeClaimNotFoundError("instance terminated") from e
            raise NodeClaimNotFoundError(e) from e
        raise NodeClaimNotFoundError("instance terminated")

    def _terminate_orphan(self, kube: KubeClient, nc: NodeClaim) -> bool:
        """Delete the Node of ``nc`` when ``nc`` is an instance's own view (named after the
        Node its provider ID names); whether it was one."""
        node_name = nc.provider_id.removeprefix(PROVIDER_ID_PREFIX)
        if not nc.provider_id.startswith(PROVIDER_ID_PREFIX) or node_name != nc.name:
            return False
        with contextlib.suppress(NotFound):
            kube.delete("nodes", node_name)
        log.info("kwok: terminated instance %s (no NodeClaim accounts for it)", node_name)
        return True

    def get(self, provider_id: str) -> NodeClaim:
        """The NodeClaim view of the Node behind ``provider_id``; NotFound when the Node
        is missing or being deleted."""
        kube = self._require_kube("get")
        name = provider_id.replace(PROVIDER_ID_PREFIX, "")
        try:
            node = kube.get("nodes", name)
        except NotFound as e:
            raise NodeClaimNotFoundError(e) from e
        if (node.get("metadata") or {}).get("deletionTimestamp"):
            raise NodeClaimNotFoundError(f"node {name!r} is being deleted")
        return _to_nodeclaim(node)

    def list(self) -> list[NodeClaim]:
        """Every Node with a ``kwok://`` provider id, as NodeClaims (instances whose Node
        has not appeared yet are not listed, as upstream)."""
        kube = self._require_kube("list")
        # read-only here: uncopied where the client can (a cache, the in-memory server)
        out = []
        for node in shared_list(kube)("nodes"):
            provider_id = str((node.get("spec") or {}).get("providerID") or "")
            if provider_id.startswith(PROVIDER_ID_PREFIX):
                out.append(_to_nodeclaim(node))
        return out

    def adopt_instances(
        self, nodes: Sequence[Mapping[str, Any]], nodeclaims: Sequence[Mapping[str, Any]]
    ) -> Adoption:
        """:class:`~karpenter_core.cloudprovider.protocol.AdoptsInstances`: make a
        snapshot's Nodes KWOK instances, so a simulation starting from a real cluster can
        disrupt them. A KWOK instance *is* its Node, so adopting one is rewriting: the
        Node of each launched NodeClaim gets the provider id ``kwok://<node name>`` (in
        both objects) and every Node the annotation the simulated kubelet manages. Nodes
        no NodeClaim owns keep their provider id (they are not Karpenter's to delete) but
        still run their pods. A NodeClaim's instance type, zone and capacity type stay
        those of its labels; a type missing from the catalogue is counted in
        ``unknown_instance_types`` (the node stays, unpriced)."""
        if self.catalogue is not None:  # the catalogue's types (default view) are known
            types = list(self.catalogue.get_instance_types(None))
            with self._lock:
                self._learn(types)
        known = {it.name for it in self._instance_types}
        claimed: dict[str, Mapping[str, Any]] = {}  # node name or provider id -> NodeClaim
        for nc in nodeclaims:
            status = nc.get("status") or {}
            for key in (status.get("nodeName"), status.get("providerID")):
                if key:
                    claimed[str(key)] = nc
        renamed: dict[str, str] = {}
        unknown: dict[str, int] = {}
        out_nodes = []
        for node in nodes:
            node = copy.deepcopy(dict(node))
            meta = node.setdefault("metadata", {})
            spec = node.setdefault("spec", {})
            name = str(meta.get("name") or "")
            old = str(spec.get("providerID") or "")
            meta["annotations"] = _with_kwok_annotation(meta.get("annotations"))
            owner = claimed.get(name) or (claimed.get(old) if old else None)
            if owner is not None:
                if not old.startswith(PROVIDER_ID_PREFIX):
                    spec["providerID"] = PROVIDER_ID_PREFIX + name
                    renamed[old or name] = spec["providerID"]
                labels = (owner.get("metadata") or {}).get("labels") or {}
                itype = str(labels.get(wk.LABEL_INSTANCE_TYPE) or "")
                if itype not in known:
                    unknown[itype] = unknown.get(itype, 0) + 1
            out_nodes.append(node)
        out_claims = []
        for nc in nodeclaims:
            nc = copy.deepcopy(dict(nc))
            status = nc.get("status")
            if isinstance(status, dict):
                old = str(status.get("providerID") or "")
                new = renamed.get(old) or renamed.get(str(status.get("nodeName") or ""))
                if old and new:
                    status["providerID"] = new
            out_claims.append(nc)
        return Adoption(tuple(out_nodes), tuple(out_claims), dict(sorted(unknown.items())))

    def pending_registrations(self) -> builtins.list[str]:
        """NodeClaim names whose Node is still to be created (sorted)."""
        with self._lock:
            return sorted(n for n, h in self._pending.items() if not h.cancelled and not h.fired)

    # ------------------------------------------------------------------ internals

    def _require_kube(self, operation: str) -> KubeClient:
        if self.kube is None:
            raise ClusterRequiredError(
                f"the {NAME} cloud provider needs a cluster client for {operation}(): it was "
                "built without one (get_cloud_provider(..., kube=client)); only the "
                "instance-type catalogue is available"
            )
        return self.kube

    def _elapsed(self) -> float:
        return self.clock.monotonic() - self._started if self.clock is not None else 0.0

    def _now(self) -> float:
        return self.clock.monotonic() if self.clock is not None else 0.0

    def _current_view(self) -> tuple[InstanceType, ...]:
        now = self._now()
        for key in [k for k, until in self._unavailable.items() if until <= now]:
            del self._unavailable[key]
        marks = frozenset(self._unavailable)
        if marks != self._view_key:
            self._view_key = marks
            self._view = (
                tuple(_mark_unavailable(it, marks) for it in self._instance_types)
                if marks
                else self._instance_types
            )
        return self._view

    def _static_without_instance_types(self, kube: KubeClient, nc: NodeClaim) -> bool:
        """The NodeClaim has no instance-type requirement and belongs to a static NodePool
        (``spec.replicas``): its claims are the bare template, the provider picks the type.
        Any other NodeClaim without one is still a launch error (the scheduler always
        resolves instance types for dynamic pools)."""
        if any(r.key == wk.LABEL_INSTANCE_TYPE for r in nc.spec.requirements):
            return False
        pool = nc.metadata.labels.get(wk.NODEPOOL_LABEL_KEY)
        if not pool:
            return False
        try:
            nodepool = kube.get("nodepools", pool)
        except NotFound:
            return False
        return (nodepool.get("spec") or {}).get("replicas") is not None

    def _choose(self, nc: NodeClaim, *, any_type: bool = False) -> _Choice:
        """Upstream's choice: over the instance-type requirement's values, the type whose
        cheapest available compatible offering is cheapest (first one wins a tie between
        types; a seeded random pick between equally cheap offerings of one type). When
        the core wrote a launch preference (an instance-type scorer other than price), the
        best-ranked type with an available compatible offering wins instead, at its
        cheapest such offering.

        ``any_type`` (a static NodePool's claim, which names no instance types): the same
        choice over every catalogue type whose labels the NodeClaim's requirements allow."""
        if any_type:
            return self._choose_any(nc)
        raw = [r for r in nc.spec.requirements if r.key == wk.LABEL_INSTANCE_TYPE]
        if not raw:
            raise KwokLaunchError(
                f"nodeclaim {nc.name!r}: no {wk.LABEL_INSTANCE_TYPE} requirement to choose "
                "an instance type from"
            )
        if raw[0].operator != IN:
            raise KwokLaunchError(
                f"nodeclaim {nc.name!r}: the {wk.LABEL_INSTANCE_TYPE} requirement must use "
                f"operator In (the scheduler resolves instance types), got {raw[0].operator}"
            )
        try:
            reqs = Requirements.from_node_selector_requirements(nc.spec.requirements)
        except ValueError as e:
            raise KwokLaunchError(f"nodeclaim {nc.name!r}: bad requirements: {e}") from None
        view = {it.name: it for it in self._current_view()}
        pool = self._by_pool.get(nc.metadata.labels.get(wk.NODEPOOL_LABEL_KEY, ""))
        if pool:  # a stand-in's NodePool: its NodeClass's variant of each type
            marks = frozenset(self._unavailable)
            view.update({n: _mark_unavailable(it, marks) for n, it in pool.items()})
        named = []
        for value in raw[0].values:
            it = view.get(value)
            if it is None:
                raise KwokLaunchError(
                    f"nodeclaim {nc.name!r}: instance type {value!r} is not in the kwok catalogue"
                )
            named.append(it)
        best = self._cheapest(named, reqs, launch_preference(nc.metadata.annotations))
        if best is None:
            raise InsufficientCapacityError(
                f"no available offering of instance types {', '.join(raw[0].values)} is "
                f"compatible with nodeclaim {nc.name!r}"
            )
        return best

    def _choose_any(self, nc: NodeClaim) -> _Choice:
        try:
            reqs = Requirements.from_node_selector_requirements(nc.spec.requirements)
        except ValueError as e:
            raise KwokLaunchError(f"nodeclaim {nc.name!r}: bad requirements: {e}") from None
        allowed = (it for it in self._current_view() if it.requirements.intersects(reqs) is None)
        best = self._cheapest(allowed, reqs)
        if best is None:
            raise InsufficientCapacityError(
                f"no available offering of any instance type is compatible with nodeclaim "
                f"{nc.name!r}"
            )
        return best

    def _cheapest(
        self,
        its: Iterable[InstanceType],
        reqs: Requirements,
        preference: Mapping[str, int] | None = None,
    ) -> _Choice | None:
        """The type whose cheapest available offering compatible with ``reqs`` is cheapest
        (the first wins a tie between types; a seeded random pick between equally cheap
        offerings of one type); with a ``preference`` (the NodeClaim's launch order), the
        best-ranked such type, at its cheapest offering."""
        best: _Choice | None = None
        best_key = (0, 0.0)
        for it in its:
            offerings = it.offerings.available().compatible(reqs)
            if not offerings:
                continue
            price = min(o.price for o in offerings)
            key = (preference_rank(preference or {}, it.name), price)
            if best is None or key < best_key:
                best_key = key
                cheapest = [o for o in offerings if o.price == price]
                pick = (
                    cheapest[self._rng.randrange(len(cheapest))]
                    if len(cheapest) > 1
                    else cheapest[0]
                )
                best = _Choice(it, pick)
        return best

    def _random_name(self) -> str:
        self._sequence += 1
        rng = self._rng
        silly = rng.choice(_WORDS_A) + rng.choice(_WORDS_B)
        suffix = "".join(rng.choice(_ALNUM) for _ in range(10))
        return f"{silly}-{self._sequence}-{suffix}"

    def _to_node(self, nc: NodeClaim, choice: _Choice) -> dict[str, Any]:
        name = f"kwok-{nc.name}-{self._random_name()}-{self._rng.getrandbits(32)}"
        labels: dict[str, str] = dict(nc.metadata.labels)
        for r in nc.spec.requirements:
            if r.operator == IN and len(r.values) == 1:
                labels[r.key] = r.values[0]
        labels[wk.LABEL_INSTANCE_TYPE] = choice.instance_type.name
        for reqs in (choice.instance_type.requirements, choice.offering.requirements):
            for req in reqs.values():
                if req.operator() == IN and len(req.values) == 1:
                    labels[req.key] = next(iter(req.values))
        labels[NODE_VIEWER_LABEL_KEY] = f"{choice.offering.price:f}"
        labels[KWOK_PARTITION_LABEL_KEY] = KWOK_PARTITIONS[
            self._rng.randrange(len(KWOK_PARTITIONS))
        ]
        labels[wk.LABEL_HOSTNAME] = nc.name
        labels[KWOK_LABEL_KEY] = KWOK_LABEL_VALUE
        requests = res.parse_resource_list(
            nc.spec.resources.requests if nc.spec.resources is not None else None
        )
        allocatable = res.merge_over(requests, choice.instance_type.allocatable())
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": labels,
                "annotations": _with_kwok_annotation(nc.metadata.annotations),
            },
            "spec": {
                "providerID": PROVIDER_ID_PREFIX + name,
                "taints": [{"key": wk.UNREGISTERED_TAINT_KEY, "effect": "NoExecute"}],
            },
            "status": {
                "capacity": res.format_resource_list(requests),
                "allocatable": res.format_resource_list(allocatable),
                "phase": "Pending",
            },
        }

    def _registration_delay(self, kube: KubeClient, nc: NodeClaim) -> float:
        """The KWOKNodeClass's ``nodeRegistrationDelay``; raises the launch errors of a
        missing or not-ready NodeClass (see the module docstring for "none at all")."""
        ref = nc.spec.node_class_ref
        ref_name = ref.name if ref is not None else ""
        try:
            nodeclass = kube.get(NODECLASS_RESOURCE, ref_name) if ref_name else None
        except NotFound:
            nodeclass = None
        if nodeclass is None:
            if len(kube.list(NODECLASS_RESOURCE)) == 0:
                return 0.0
            raise InsufficientCapacityError(
                f"resolving node class from nodeclaim, {KWOK_NODE_CLASS.kind} "
                f"{ref_name!r} not found"
            )
        ready = condition_of(nodeclass, "Ready")
        if ready is not None and ready.get("status") == "False":
            raise NodeClassNotReadyError(str(ready.get("message") or ""))
        text = (nodeclass.get("spec") or {}).get("nodeRegistrationDelay")
        if not text:
            return 0.0
        try:
            return parse_go_duration(str(text)) / 1e9
        except DurationError as e:
            raise KwokLaunchError(
                f"{KWOK_NODE_CLASS.kind} {ref_name!r}: spec.nodeRegistrationDelay: {e}"
            ) from None

    def _take(self, rules: Sequence[FaultRule], family: str, choice: _Choice) -> bool:
        """True (and one attempt used) when an active rule of ``rules`` hits ``choice``."""
        elapsed = self._elapsed()
        for i, rule in enumerate(rules):
            if not rule.active_at(elapsed) or not rule.matches(
                choice.instance_type.name, choice.offering.zone, choice.offering.capacity_type
            ):
                continue
            used = self._attempts.get((family, i), 0)
            if rule.attempts is not None and used >= rule.attempts:
                continue
            self._attempts[(family, i)] = used + 1
            return True
        return False

    def _inject_insufficient_capacity(self, choice: _Choice) -> None:
        if not self._take(self._faults.insufficient_capacity, "insufficient-capacity", choice):
            return
        it, o = choice.instance_type.name, choice.offering
        if self._unavailable_ttl > 0:
            self._unavailable[(it, o.zone, o.capacity_type)] = self._now() + self._unavailable_ttl
        raise InsufficientCapacityError(
            f"no {o.capacity_type} capacity for {it} in {o.zone} (injected)"
        )

    def _launch_latency(self) -> float:
        f = self._faults
        jitter = f.launch_latency_jitter * self._rng.random() if f.launch_latency_jitter else 0.0
        return f.launch_latency + jitter

    def _schedule_registration(
        self, kube: KubeClient, nodeclaim: str, node: dict[str, Any], delay: float
    ) -> None:
        if self.clock is None:
            if delay > 0:
                raise KwokLaunchError(
                    f"a registration delay of {delay}s needs a clock: build the {NAME} "
                    "provider with one (get_cloud_provider(..., clock=clock))"
                )
            self._register(kube, nodeclaim, node, 0)
            return
        clock = self.clock

        def fire() -> None:
            self._register(kube, nodeclaim, node, 0)

        self._pending[nodeclaim] = clock.call_later(delay, fire)

    def _register(
        self, kube: KubeClient, nodeclaim: str, node: dict[str, Any], attempt: int
    ) -> None:
        """Create the Node, retrying failed writes as a kubelet does: client-go's default
        back-off, then every :data:`_REGISTRATION_MAX_BACKOFF` seconds until it succeeds
        or the instance is deleted (which cancels the pending retry)."""
        try:
            kube.create(node)
        except AlreadyExists:
            pass
        except ApiError as e:
            if self.clock is not None:
                clock = self.clock
                delay = (
                    _REGISTRATION_BACKOFF[attempt]
                    if attempt < len(_REGISTRATION_BACKOFF)
                    else _REGISTRATION_MAX_BACKOFF
                )
                if attempt == len(_REGISTRATION_BACKOFF):
                    log.warning(
                        "kwok: node %s of nodeclaim %s cannot register yet, retrying every "
                        "%.0fs: %s",
                        node["metadata"]["name"],
                        nodeclaim,
                        _REGISTRATION_MAX_BACKOFF,
                        e,
                    )

                def retry() -> None:
                    with self._lock:
                        if nodeclaim not in self._instances:
                            return  # deleted meanwhile: the machine is gone
                    self._register(kube, nodeclaim, node, attempt + 1)

                with self._lock:
                    if nodeclaim in self._instances:
                        self._pending[nodeclaim] = clock.call_later(delay, retry)
                return
            log.error(
                "kwok: failed creating node %s from nodeclaim %s: %s",
                node["metadata"]["name"],
                nodeclaim,
                e,
            )
        with self._lock:
            self._pending.pop(nodeclaim, None)
            self._instances.pop(nodeclaim, None)


def faults_from_settings(settings: Mapping[str, str]) -> KwokFaults:
    """The failure injection the settings ask for (none by default)."""
    latency = parse_duration_seconds(
        settings.get(LAUNCH_LATENCY_SETTING, "") or "0", f"setting {LAUNCH_LATENCY_SETTING}"
    )
    jitter = parse_duration_seconds(
        settings.get(LAUNCH_LATENCY_JITTER_SETTING, "") or "0",
        f"setting {LAUNCH_LATENCY_JITTER_SETTING}",
    )
    return KwokFaults(
        insufficient_capacity=parse_rules(
            settings.get(INSUFFICIENT_CAPACITY_SETTING, ""), INSUFFICIENT_CAPACITY_SETTING
        ),
        never_register=parse_rules(
            settings.get(NEVER_REGISTER_SETTING, ""), NEVER_REGISTER_SETTING
        ),
        launch_latency=latency,
        launch_latency_jitter=jitter,
    )


def _mark_unavailable(it: InstanceType, marks: frozenset[tuple[str, str, str]]) -> InstanceType:
    if not any(m[0] == it.name for m in marks):
        return it
    return it.with_offerings(
        attrs.evolve(o, available=False)
        if (it.name, o.zone, o.capacity_type) in marks and o.available
        else o
        for o in it.offerings
    )


def _as_nodeclaim(nodeclaim: NodeClaim | Mapping[str, Any]) -> NodeClaim:
    if isinstance(nodeclaim, NodeClaim):
        return nodeclaim
    if isinstance(nodeclaim, Mapping):
        return NodeClaim.from_dict(nodeclaim)
    raise TypeError(f"expected a NodeClaim, got {type(nodeclaim).__name__}")


def _with_kwok_annotation(annotations: Mapping[str, str] | None) -> dict[str, str]:
    out = dict(annotations or {})
    out[KWOK_LABEL_KEY] = KWOK_LABEL_VALUE
    return out


def _to_nodeclaim(node: Mapping[str, Any]) -> NodeClaim:
    """The NodeClaim view of a KWOK Node (named after the Node, as upstream)."""
    meta = node.get("metadata") or {}
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    return NodeClaim(
        metadata=ObjectMeta(
            name=str(meta.get("name") or ""),
            labels=dict(meta.get("labels") or {}),
            annotations=_with_kwok_annotation(meta.get("annotations")),
        ),
        status=NodeClaimStatus(
            node_name=str(meta.get("name") or ""),
            provider_id=str(spec.get("providerID") or ""),
            capacity=dict(status.get("capacity") or {}),
            allocatable=dict(status.get("allocatable") or {}),
        ),
    )
