"""The extension contract of karpenter-core: every pluggy hook, and what it returns.

A plugin is a module (or object) with functions marked ``@hookimpl`` (from
:mod:`karpenter_core.plugins`) whose names match the hooks below. Each hook takes no
arguments and returns a *list of registration objects* (the conda style): plain, typed,
frozen values the core can validate, list and pick from without calling into the plugin
again. That keeps a plugin's import cheap and side-effect free: nothing talks to a cloud
until the core calls a ``factory``.

The hooks:

- :func:`karpenter_cloud_providers` -> :class:`CloudProviderSpec`
- :func:`karpenter_instance_type_overlays` -> :class:`InstanceTypeOverlaySpec`
- :func:`karpenter_disruption_methods` -> :class:`DisruptionMethodSpec`
- :func:`karpenter_dra_drivers` -> :class:`DRADriverSpec`
- :func:`karpenter_controllers` -> :class:`ControllerSpec`
- :func:`karpenter_node_lifecycle_hooks` -> :class:`NodeLifecycleHookSpec`
- :func:`karpenter_instance_type_scorers` -> :class:`InstanceTypeScorerSpec`

The core's own features register through the same hooks (:mod:`karpenter_core.builtins`:
emptiness, drift and consolidation, the NodeOverlay overlay, the ``price``,
``least-waste`` and ``priority`` instance-type scorers), so a plugin can do
everything a built-in does, and replace a built-in by registering its name.

``docs/plugin-hooks.md`` documents every hook with its exact signature; a unit test
keeps the two in step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib.resources.abc import Traversable
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import pluggy
from attrs import field, frozen

from karpenter_core.runtime.reconciler import Watch

if TYPE_CHECKING:
    from karpenter_core.apis.v1 import NodeClaim, NodePool
    from karpenter_core.cloudprovider.protocol import (
        CloudProvider,
        NodeClassKind,
        NodeLifecycleHookResult,
    )
    from karpenter_core.cloudprovider.types import InstanceType
    from karpenter_core.controllers.disruption.context import DisruptionContext
    from karpenter_core.disruption.types import Method
    from karpenter_core.kube.client import KubeClient
    from karpenter_core.runtime.clock import Clock
    from karpenter_core.runtime.context import ControllerContext
    from karpenter_core.runtime.events import EventRecorder
    from karpenter_core.runtime.reconciler import Reconciler, SingletonReconciler
    from karpenter_core.runtime.workqueue import RateLimiter
    from karpenter_core.scheduling.requirements import Requirements

PROJECT_NAME = "karpenter"
"""The pluggy project name; also the entry-point group plugins register under."""

hookspec = pluggy.HookspecMarker(PROJECT_NAME)

# --- Registration objects ------------------------------------------------------------------


def _non_empty(instance: object, attribute: Any, value: str) -> None:
    """attrs validator: a registration needs a name users can type and read."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{type(instance).__name__}.{attribute.name} must be a non-empty string")


def _str_set(value: Iterable[str]) -> frozenset[str]:
    """attrs converter: a set of label keys / domains (a bare string is a mistake, not
    a set of characters)."""
    if isinstance(value, str):
        raise TypeError(f"expected a collection of strings, got the string {value!r}")
    return frozenset(value)


def _node_classes(value: Iterable[NodeClassKind]) -> tuple[NodeClassKind, ...]:
    return tuple(value)


def _settings(value: Iterable[ProviderSetting]) -> tuple[ProviderSetting, ...]:
    return tuple(value)


def _crd_files(value: Iterable[Traversable]) -> tuple[Traversable, ...]:
    """attrs converter: CRD manifests are files (package data), not their names or text.

    A string is refused rather than guessed at: relative to what would a path be read,
    and is it a path or a manifest? ``importlib.resources.files(pkg) / "x.yaml"`` says
    both, and keeps working from a wheel.
    """
    if isinstance(value, str | bytes):
        raise TypeError(f"crds: expected a collection of files, got the string {value!r}")
    files = tuple(value)
    for item in files:
        if not isinstance(item, Traversable):
            raise TypeError(
                "crds: expected files such as importlib.resources.files(package) / "
                f"'crds/x.yaml' (or a pathlib.Path), got {type(item).__name__} {item!r}"
            )
    return files


@frozen
class ProviderSetting:
    """One setting a cloud provider accepts (``region``, ``cluster-name`` ...).

    The core resolves settings before calling the provider's factory: unknown keys are
    rejected, missing required ones reported, defaults filled in, so a factory only ever
    sees a complete ``Mapping[str, str]``. ``env`` names the environment variable
    ``karpenter serve`` reads the value from (upstream compatible names such as
    ``CLUSTER_NAME``), when there is one.
    """

    name: str = field(validator=_non_empty)
    description: str = ""
    default: str | None = None
    required: bool = False
    env: str | None = None


def _settings_map(value: Mapping[str, str]) -> Mapping[str, str]:
    """attrs converter: a private, read-only copy so a provider cannot change what the
    core resolved (nor see later changes to the caller's dict)."""
    return MappingProxyType(dict(value))


def _manifests(value: Iterable[Mapping[str, Any]]) -> tuple[Mapping[str, Any], ...]:
    return tuple(value)


@frozen
class ProviderContext:
    """Everything a cloud provider factory may use to build its provider.

    - ``settings``: the provider's resolved settings (unknown keys rejected, defaults
      filled in, required ones present), read-only.
    - ``kube``: a client for the cluster the provider serves, or None when there is no
      cluster (``karpenter instance-types``, ``karpenter schedule``). A provider whose
      launching writes to the cluster (KWOK creates Nodes) needs it for ``create`` /
      ``delete`` / ``get`` / ``list``; without it those calls must fail with a clear
      error while the catalogue calls keep working.
    - ``clock``: the time source (a virtual clock under ``karpenter simulate``); a
      provider schedules delayed work with ``clock.call_later`` and never sleeps or
      reads wall time itself. None outside a running operator.
    - ``recorder``: the Kubernetes event recorder, or None.
    - ``node_classes``: NodeClass manifests given without a cluster (``karpenter schedule
      -f`` passes the input's objects of the provider's NodeClass kinds), so a provider
      built with ``kube`` None can answer ``get_instance_types(nodepool)`` for the class
      the NodePool names (its AMI family, kubelet settings, storage) rather than a default
      view. Empty when there is a cluster: the cluster's NodeClasses are then the truth.

    A context rather than positional arguments so that adding a capability later does not
    break every installed plugin's factory signature.
    """

    settings: Mapping[str, str] = field(factory=dict, converter=_settings_map)
    kube: KubeClient | None = None
    clock: Clock | None = None
    recorder: EventRecorder | None = None
    node_classes: tuple[Mapping[str, Any], ...] = field(default=(), converter=_manifests)


@frozen
class CloudProviderSpec:
    """A cloud provider a plugin offers; ``karpenter serve --cloud-provider NAME`` picks one.

    - ``factory(context)`` builds the provider (a
      :class:`karpenter_core.cloudprovider.protocol.CloudProvider`) from a
      :class:`ProviderContext` (resolved settings, and the cluster client, clock and
      event recorder when there is a cluster); it is called only when this provider is
      selected, so a plugin may defer heavy SDK imports to it.
    - ``node_classes``: the NodeClass kinds a NodePool's ``nodeClassRef`` may name.
    - ``well_known_labels`` / ``restricted_label_domains`` extend
      :mod:`karpenter_core.apis.labels` when this provider is selected
      (``get_cloud_provider``), exactly as upstream providers extend
      ``v1.WellKnownLabels`` and ``v1.RestrictedLabelDomains``.
    - ``can_launch``: False for a catalogue-only provider (it can describe instance types
      but not create instances yet); ``karpenter plugins`` shows it so nobody is surprised.
    - ``crds``: the CustomResourceDefinitions the provider needs in the cluster (its
      NodeClass kinds), as YAML files of package data, one CRD per file.
      ``karpenter crds`` prints them after the core's, so ``karpenter crds | kubectl
      apply -f -`` installs everything the provider reads. Files, not parsed manifests,
      so that the hook stays cheap (nothing is read until printed) and the text users
      apply is the file the plugin ships, comments included.
    """

    name: str = field(validator=_non_empty)
    factory: Callable[[ProviderContext], CloudProvider]
    node_classes: tuple[NodeClassKind, ...] = field(default=(), converter=_node_classes)
    well_known_labels: frozenset[str] = field(default=frozenset(), converter=_str_set)
    restricted_label_domains: frozenset[str] = field(default=frozenset(), converter=_str_set)
    settings: tuple[ProviderSetting, ...] = field(default=(), converter=_settings)
    can_launch: bool = True
    description: str = ""
    crds: tuple[Traversable, ...] = field(default=(), converter=_crd_files)


InstanceTypeOverlayFn = Callable[["NodePool", Sequence["InstanceType"]], Sequence["InstanceType"]]
"""``apply(nodepool, instance_types) -> instance_types``: receives a NodePool and the
provider's InstanceTypes for it, returns the adjusted list. It must not mutate its inputs
(InstanceTypes are shared between NodePools); build new values with ``attrs.evolve``. It
may raise :class:`~karpenter_core.cloudprovider.errors.UnevaluatedNodePoolError` to say
the NodePool cannot be offered anything yet (the NodeOverlay overlay does, until its
controller has evaluated the pool); any other exception skips the overlay with a warning."""

OverlayBinder = Callable[["ControllerContext"], "InstanceTypeOverlayFn | None"]
"""``bind(context) -> apply | None``: for an overlay that needs the running operator (a
store its own controller fills, the options): called once per operator with the
:class:`~karpenter_core.runtime.context.ControllerContext`; None means "not active here"
(a feature gate off)."""


def _one_of_apply_or_bind(instance: InstanceTypeOverlaySpec, attribute: Any, value: Any) -> None:
    if (instance.apply is None) == (instance.bind is None):
        raise ValueError(
            f"InstanceTypeOverlaySpec {instance.name!r}: give exactly one of apply and bind"
        )


@frozen
class InstanceTypeOverlaySpec:
    """A transformation of the instance types a provider returns, per NodePool.

    Overlays run in ascending ``weight`` order (ties broken by ``name``) so that the
    heaviest overlay runs last and has the final word, as with NodeOverlay weights. The
    NodeOverlay CRD support is itself a built-in overlay registered through this hook, at
    :data:`WEIGHT_NODEOVERLAY`, so the cluster's NodeOverlay objects have the last word.

    A stateless overlay gives ``apply``; one that needs the running operator gives
    ``bind`` instead (see :data:`OverlayBinder`).
    """

    name: str = field(validator=_non_empty)
    weight: int
    apply: InstanceTypeOverlayFn | None = None
    bind: OverlayBinder | None = field(default=None, validator=_one_of_apply_or_bind)


WEIGHT_NODEOVERLAY = 1_000_000
"""The built-in NodeOverlay overlay's weight: after every plugin overlay of lower weight."""


# Disruption classes (upstream ``GracefulDisruptionClass`` / ``EventualDisruptionClass``): a
# method's ``disruption_class``.
CLASS_GRACEFUL = "graceful"
"""Always honours PDBs and do-not-disrupt pods (emptiness, consolidation)."""
CLASS_EVENTUAL = "eventual"
"""Bounded by the NodeClaim's terminationGracePeriod: with one set, pods that block eviction
do not keep the node from being a candidate (drift, static drift)."""

# A method's ``consolidation_type``: the label of the voluntary-disruption metrics.
CONSOLIDATION_TYPE_EMPTY = "empty"
CONSOLIDATION_TYPE_SINGLE = "single"
CONSOLIDATION_TYPE_MULTI = "multi"
CONSOLIDATION_TYPE_NONE = ""
"""Drift, static drift and plugin methods that are not consolidation carry no type."""

# Positions of the built-in disruption methods (upstream order). A plugin method picks an
# ``order`` relative to these; e.g. 450 runs between multi- and single-node consolidation.
ORDER_EMPTINESS = 100
ORDER_STATIC_DRIFT = 200
ORDER_DRIFT = 300
ORDER_MULTI_NODE_CONSOLIDATION = 400
ORDER_SINGLE_NODE_CONSOLIDATION = 500


DisruptionMethodFactory = Callable[["DisruptionContext"], "Method"]
"""``factory(context) -> method``: builds a :class:`~karpenter_core.disruption.types.Method`
given the :class:`~karpenter_core.controllers.disruption.context.DisruptionContext` (clock,
options, cloud provider, cluster state, provisioner, queue)."""


@frozen
class DisruptionMethodSpec:
    """A disruption method (emptiness, drift, consolidation, or a plugin's own).

    The disruption controller tries methods in ascending ``order`` (ties broken by
    ``name``); the first one that starts a command ends the pass. ``factory(context)``
    is called once per controller and returns an object with the
    :class:`~karpenter_core.disruption.types.Method` interface, a function of each pass's
    :class:`~karpenter_core.disruption.snapshot.DisruptionSnapshot`:
    ``should_disrupt(snapshot, candidate)``, ``compute_commands(snapshot, budgets,
    candidates)`` (one sequence of candidates; returns a ``Decision`` or a list of
    commands), ``reason``, ``disruption_class``, ``consolidation_type``. Methods written
    before snapshots (``should_disrupt(candidate)``, ``compute_commands(budgets,
    candidates)``) still run. A plugin method with a built-in's name replaces the built-in.
    """

    name: str = field(validator=_non_empty)
    order: int
    factory: DisruptionMethodFactory


DescribeDevicesFn = Callable[["InstanceType", "NodePool"], Sequence[Mapping[str, Any]]]
"""``describe_devices(instance_type, nodepool) -> resource slice templates``: the
node-local ResourceSlices (``resource.k8s.io/v1`` shape: ``{"driver", "pool": {"name"},
"devices": [...]}``) a node of this instance type would publish once initialized."""


@frozen
class DRADriverSpec:
    """A DRA driver, so the scheduler can simulate ResourceClaim allocation on nodes
    that do not exist yet. ``name`` is the driver name (``gpu.example.com``)."""

    name: str = field(validator=_non_empty)
    describe_devices: DescribeDevicesFn


ControllerFactory = Callable[["ControllerContext"], "Reconciler | SingletonReconciler | None"]
"""``factory(context) -> reconciler | None``: builds the controller from the operator's
:class:`~karpenter_core.runtime.context.ControllerContext`; None means "not needed here"
(a setting left unset, say), and the controller is reported as not running."""


def _watches(value: Iterable[Watch]) -> tuple[Watch, ...]:
    items = tuple(value)
    for item in items:
        if not isinstance(item, Watch):
            raise TypeError(
                f"watches: expected karpenter_core.runtime.reconciler.Watch values, got "
                f"{type(item).__name__}"
            )
    return items


def _positive(instance: object, attribute: Any, value: int) -> None:
    if value < 1:
        raise ValueError(f"{type(instance).__name__}.{attribute.name} must be at least 1")


@frozen
class ControllerSpec:
    """A controller a plugin runs in the operator (and in simulations), beside the core's.

    - ``factory(context)`` builds the reconciler (``reconcile(key)``, or ``reconcile()``
      for a ``singleton``) from the typed controller context: the cluster client, clock,
      recorder, options, cluster state, the cloud provider as the controllers see it
      (``cloud_provider``) and as its factory built it (``base_cloud_provider``).
    - ``watches``: the resources whose changes enqueue keys (a keyed controller only).
    - ``singleton``: reconciled once at start, then as its results ask
      (``Result.after(seconds)``).
    - ``workers``: concurrent reconciles (keyed controllers).
    - ``cloud_provider``: run only when this provider is the one selected (a provider's
      NodeClass status controller, say); None runs it with any provider.
    - ``rate_limiter``: a factory of the work queue's rate limiter (default: the core's
      exponential back-off).

    Controllers register after the core's, in plugin order; a factory that raises is
    reported (``karpenter serve`` then refuses to start, ``karpenter simulate`` says so).
    """

    name: str = field(validator=_non_empty)
    factory: ControllerFactory
    watches: tuple[Watch, ...] = field(default=(), converter=_watches)
    singleton: bool = False
    workers: int = field(default=1, validator=_positive)
    cloud_provider: str | None = None
    rate_limiter: Callable[[], RateLimiter] | None = None

    def __attrs_post_init__(self) -> None:
        if self.singleton and self.watches:
            raise ValueError(f"ControllerSpec {self.name!r}: a singleton has no watches")


RegisteredHookFn = Callable[["NodeClaim"], "NodeLifecycleHookResult"]
"""``registered(nodeclaim) -> NodeLifecycleHookResult``: whether registration may finish."""


@frozen
class NodeLifecycleHookSpec:
    """Gates a NodeClaim's registration, as upstream's ``NodeLifecycleHook``.

    Once a launched NodeClaim's Node has joined and been synced, registration completes
    (the ``karpenter.sh/unregistered`` taint comes off, ``Registered=True``) only when
    every hook's ``registered(nodeclaim)`` returns a done
    :class:`~karpenter_core.cloudprovider.protocol.NodeLifecycleHookResult`; a hook asking
    to requeue holds the Node unregistered and is asked again. ``cloud_provider``: apply
    only when this provider is selected (None: always).
    """

    name: str = field(validator=_non_empty)
    registered: RegisteredHookFn
    cloud_provider: str | None = None


@frozen
class ScoringRequest:
    """What an instance-type scorer sees: one NodeClaim the scheduler decided to launch.

    - ``nodepool``: the NodePool the NodeClaim comes from (its annotations configure
      scorers such as ``priority``).
    - ``instance_types``: the NodeClaim's feasible options (every one fits all its pods
      and meets its requirements), cheapest first.
    - ``prices``: each option's cheapest available offering compatible with
      ``requirements``, in the same order (``inf`` when it has none).
    - ``requirements``: the NodeClaim's requirements (zones, capacity types...).
    - ``requests``: what the NodeClaim's pods and daemons ask for, in milli-units
      (``cpu`` 1500 is 1.5 cores, ``memory`` is bytes times 1000), as the instance types'
      ``capacity`` and ``allocatable()`` are.
    - ``pod_count``: how many pods the NodeClaim holds.

    Scoring happens once per NodeClaim, after feasibility filtering, so a scorer never
    decides *whether* pods fit, only which of the fitting types is preferred.
    """

    nodepool: NodePool
    instance_types: tuple[InstanceType, ...]
    prices: tuple[float, ...]
    requirements: Requirements
    requests: Mapping[str, int]
    pod_count: int = 0


InstanceTypeScoreFn = Callable[[ScoringRequest], Sequence[float]]
"""``score(request) -> scores``: one number per ``request.instance_types``, in that order;
lower is better. The core sorts the options by score and breaks ties by price (the
request's order), so a scorer that returns equal scores leaves the price order alone. A
scorer that raises, or returns the wrong number of scores or a NaN, is ignored for that
NodeClaim: it launches by price and the NodePool gets a warning event."""


@frozen
class InstanceTypeScorerSpec:
    """An instance-type scorer (Cluster Autoscaler calls these expanders).

    It orders the instance types a NodeClaim may launch as, after the scheduler has kept
    only those that fit: the order decides which types survive the cap on a NodeClaim's
    instance types (``max_instance_types``), and which type the cloud provider launches
    (the core writes it to the NodeClaim's ``karpenter.sh/instance-type-preference``
    annotation, which providers honour; within the chosen type the cheapest compatible
    offering still wins).

    The operator option ``INSTANCE_TYPE_SCORER`` (default ``price``) picks the scorer for
    every NodePool; a NodePool's ``karpenter.sh/instance-type-scorer`` annotation picks
    its own. A plugin scorer named like a built-in one replaces it.
    """

    name: str = field(validator=_non_empty)
    score: InstanceTypeScoreFn
    description: str = ""


# --- Hooks ----------------------------------------------------------------------------------


@hookspec
def karpenter_cloud_providers() -> list[CloudProviderSpec]:
    """Return the cloud providers this plugin offers (usually one).

    Provider names must be unique across all installed plugins; a duplicate is an error
    naming both plugins.
    """
    raise NotImplementedError  # pragma: no cover - a specification, never called


@hookspec
def karpenter_instance_type_overlays() -> list[InstanceTypeOverlaySpec]:
    """Return overlays applied to every provider's instance types, per NodePool, in
    ascending weight order."""
    raise NotImplementedError  # pragma: no cover - a specification, never called


@hookspec
def karpenter_disruption_methods() -> list[DisruptionMethodSpec]:
    """Return disruption methods; the controller runs all methods in ascending order. A
    method named like a built-in (``emptiness``, ``drift``...) replaces it."""
    raise NotImplementedError  # pragma: no cover - a specification, never called


@hookspec
def karpenter_dra_drivers() -> list[DRADriverSpec]:
    """Return DRA drivers whose devices the scheduler simulates on new nodes."""
    raise NotImplementedError  # pragma: no cover - a specification, never called


@hookspec
def karpenter_controllers() -> list[ControllerSpec]:
    """Return controllers to run beside the core's (a NodeClass status controller, an
    interruption queue poller...)."""
    raise NotImplementedError  # pragma: no cover - a specification, never called


@hookspec
def karpenter_node_lifecycle_hooks() -> list[NodeLifecycleHookSpec]:
    """Return hooks that gate NodeClaim registration."""
    raise NotImplementedError  # pragma: no cover - a specification, never called


@hookspec
def karpenter_instance_type_scorers() -> list[InstanceTypeScorerSpec]:
    """Return instance-type scorers; the operator option or a NodePool annotation picks
    one by name. A scorer named like a built-in one (``price``, ``least-waste``,
    ``priority``) replaces it."""
    raise NotImplementedError  # pragma: no cover - a specification, never called


HOOK_SPEC_TYPES: Mapping[str, type] = {
    "karpenter_cloud_providers": CloudProviderSpec,
    "karpenter_instance_type_overlays": InstanceTypeOverlaySpec,
    "karpenter_disruption_methods": DisruptionMethodSpec,
    "karpenter_dra_drivers": DRADriverSpec,
    "karpenter_controllers": ControllerSpec,
    "karpenter_node_lifecycle_hooks": NodeLifecycleHookSpec,
    "karpenter_instance_type_scorers": InstanceTypeScorerSpec,
}
"""Every hook and the registration object each of its results must be."""

__all__ = [
    "CLASS_EVENTUAL",
    "CLASS_GRACEFUL",
    "CONSOLIDATION_TYPE_EMPTY",
    "CONSOLIDATION_TYPE_MULTI",
    "CONSOLIDATION_TYPE_NONE",
    "CONSOLIDATION_TYPE_SINGLE",
    "HOOK_SPEC_TYPES",
    "ORDER_DRIFT",
    "ORDER_EMPTINESS",
    "ORDER_MULTI_NODE_CONSOLIDATION",
    "ORDER_SINGLE_NODE_CONSOLIDATION",
    "ORDER_STATIC_DRIFT",
    "PROJECT_NAME",
    "WEIGHT_NODEOVERLAY",
    "CloudProviderSpec",
    "ControllerFactory",
    "ControllerSpec",
    "DRADriverSpec",
    "DescribeDevicesFn",
    "DisruptionMethodFactory",
    "DisruptionMethodSpec",
    "InstanceTypeOverlayFn",
    "InstanceTypeOverlaySpec",
    "InstanceTypeScoreFn",
    "InstanceTypeScorerSpec",
    "NodeLifecycleHookSpec",
    "OverlayBinder",
    "ProviderContext",
    "ProviderSetting",
    "RegisteredHookFn",
    "ScoringRequest",
    "hookspec",
    "karpenter_cloud_providers",
    "karpenter_controllers",
    "karpenter_disruption_methods",
    "karpenter_dra_drivers",
    "karpenter_instance_type_overlays",
    "karpenter_instance_type_scorers",
    "karpenter_node_lifecycle_hooks",
]
