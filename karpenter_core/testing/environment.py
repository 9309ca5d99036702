"""An operator in a box: the real controllers on a virtual clock against an in-memory cluster.

:class:`Environment` is what ``karpenter simulate`` runs, cut down to what a test needs
and opened up for a test to drive: one :class:`~karpenter_core.sim.apiserver.InMemoryApiServer`,
one :class:`~karpenter_core.runtime.clock.VirtualClock`, an event recorder, a cloud provider
(the kit's :class:`~karpenter_core.testing.fake.FakeCloudProvider` unless a test passes its
own), and Karpenter's controllers registered by the operator's own registry, so a test
exercises exactly what ``karpenter serve`` would run. By default the Kubernetes side is
simulated too (kube-scheduler and kubelet), so a pending pod ends up Running on a launched
node; tests of one controller ask for only the packages they need and turn that off.

Nothing runs on its own: time moves only in :meth:`Environment.run_for`, and
:meth:`Environment.settle` runs whatever is ready now. The same test gives the same run.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from karpenter_core import metrics
from karpenter_core.kube.client import (
    KubeClient,
    NotFound,
    ResourceLike,
    create_with_status,
    resource_of,
)
from karpenter_core.operator.controllers import (
    CONTROLLER_PACKAGES,
    ControllerPackage,
    Registration,
    register_all,
)
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.events import EventRecorder, RecordedEvent
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.options import Options
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.testing.builders import START
from karpenter_core.testing.fake import FakeCloudProvider

if TYPE_CHECKING:
    from karpenter_core.plugins import PluginContributions
    from karpenter_core.sim.kubelet import Kubelet, KubeletOptions
    from karpenter_core.sim.kubescheduler import KubeScheduler, KubeSchedulerOptions

__all__ = ["CONTROLLER_PACKAGE_NAMES", "Environment"]

CONTROLLER_PACKAGE_NAMES = tuple(p.name for p in CONTROLLER_PACKAGES)
"""What ``Environment(controllers=...)`` accepts: the operator registry's package names."""


class Environment:
    """One operator on a virtual clock (see the module docstring).

    ``cloud_provider``: any CloudProvider; the name of an installed provider plugin, built
    by its factory with ``provider_settings`` and this environment's client, clock and
    recorder (found through ``plugin_manager``, default the installed plugins); or a
    function of the environment returning a provider. ``plugin_manager`` also brings its
    plugins' contributions (overlays, disruption methods, controllers, node lifecycle
    hooks), as ``serve`` does; ``plugins`` gives them directly (default: the built-ins'
    alone). Default: a
    :class:`FakeCloudProvider` that registers the Nodes of what it launches. ``options``: :class:`Options`, or the
    environment variables ``serve`` reads (``{"FEATURE_GATES": "NodeOverlay=true"}``).
    ``controllers``: names of the registry's packages to run (``("state",
    "provisioning")``; see :data:`CONTROLLER_PACKAGE_NAMES`), default every package the
    options switch on; ``()`` runs none, for tests that call reconcilers by hand.
    ``kube_scheduler``/``kubelet``: simulate those (or pass their options,
    :class:`~karpenter_core.sim.kubescheduler.KubeSchedulerOptions` and
    :class:`~karpenter_core.sim.kubelet.KubeletOptions`). ``kube``: wraps the API server
    for the controllers (a client that fails on cue). ``server`` and ``clock``: run on an
    existing API server and its clock, as an operator restarted against the same cluster
    (``start`` is then ignored).
    Metrics are reset unless ``reset_metrics`` is False: they are process-global.

    Attributes: ``clock``, ``server`` (the API server), ``kube`` (what controllers call),
    ``recorder``, ``provider`` (as given), ``manager``, ``ctx``, ``cluster`` (cluster
    state), ``registration`` (what ran), ``kubelet`` and ``kube_scheduler`` (or None).
    """

    def __init__(
        self,
        cloud_provider: Any = None,
        *,
        provider_settings: Mapping[str, str] | None = None,
        plugin_manager: Any = None,
        plugins: PluginContributions | None = None,
        options: Options | Mapping[str, str] | None = None,
        controllers: Iterable[str] | None = None,
        kube_scheduler: bool | KubeSchedulerOptions = True,
        kubelet: bool | KubeletOptions = True,
        start: datetime = START,
        seed: int | None = None,
        server: InMemoryApiServer | None = None,
        clock: VirtualClock | None = None,
        kube: Callable[[InMemoryApiServer], KubeClient] | None = None,
        reset_metrics: bool = True,
    ) -> None:
        if (server is None) != (clock is None):
            raise TypeError("server and clock go together: the clock the server stamps with")
        if reset_metrics:
            metrics.reset()
        self.clock = clock if clock is not None else VirtualClock(start)
        self.server = (
            server if server is not None else InMemoryApiServer(self.clock, seed=seed or 0)
        )
        self.kube: KubeClient = kube(self.server) if kube is not None else self.server
        self.recorder = EventRecorder(self.clock)
        self.options = options if isinstance(options, Options) else Options.from_env(options or {})
        self.provider: Any = self._provider(cloud_provider, provider_settings, plugin_manager)
        self.manager = Manager(self.clock, self.kube, seed=seed)
        packages = _packages(controllers)
        if plugins is None and plugin_manager is not None:
            from karpenter_core.plugins import plugin_contributions

            plugins = plugin_contributions(plugin_manager)
        self.ctx, self.registration = _compose(self, packages, plugins)
        _check_registration(self.registration, controllers)
        self.kube_scheduler: KubeScheduler | None = None
        self.kubelet: Kubelet | None = None
        if kube_scheduler is not False:
            from karpenter_core.sim import kubescheduler

            scheduler_options = None if kube_scheduler is True else kube_scheduler
            self.kube_scheduler = kubescheduler.register(self.manager, self.ctx, scheduler_options)
        if kubelet is not False:
            from karpenter_core.sim import kubelet as sim_kubelet

            options_ = None if kubelet is True else kubelet
            self.kubelet = sim_kubelet.register(self.manager, self.ctx, options_)

    def _provider(self, given: Any, settings: Mapping[str, str] | None, plugin_manager: Any) -> Any:
        if given is None:
            return FakeCloudProvider(kube=self.kube)
        if isinstance(given, str):
            from karpenter_core.plugins import get_cloud_provider

            return get_cloud_provider(
                given,
                settings,
                plugin_manager,
                kube=self.kube,
                clock=self.clock,
                recorder=self.recorder,
            )
        if callable(given) and not hasattr(given, "create"):
            return given(self)
        return given

    # ------------------------------------------------------------------ what runs

    @property
    def cluster(self) -> Any:
        """Karpenter's in-memory cluster state (``karpenter_core.state.cluster.Cluster``)."""
        return self.ctx.cluster

    @property
    def cloud_provider(self) -> Any:
        """The provider as the controllers see it (wrapped with metrics and overlays)."""
        return self.ctx.cloud_provider

    @property
    def controllers(self) -> tuple[str, ...]:
        """Names of every controller running, Karpenter's and the simulated cluster's."""
        return tuple(c.name for c in self.manager.controllers)

    # ------------------------------------------------------------------ time

    def settle(self) -> int:
        """Run every reconcile that is ready now, without moving the clock; returns how
        many ran."""
        return self.manager.settle()

    def run_for(self, duration: float | timedelta) -> int:
        """Move the clock ``duration`` (seconds or a timedelta) forward, running every
        reconcile and timer due on the way; returns how many reconciles ran."""
        seconds = duration.total_seconds() if isinstance(duration, timedelta) else duration
        return self.manager.run_for(seconds)

    def run_until(self, when: datetime) -> int:
        """Run up to virtual time ``when``."""
        return self.manager.run_until(when)

    def now(self) -> datetime:
        return self.clock.now()

    # ------------------------------------------------------------------ objects

    def apply(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Create ``obj``, or replace the stored object of that name with it (keeping what
        the server and controllers own: uid, finalizers, owners); a ``status`` it carries
        is written through the status subresource, as controllers would. Returns what
        the API server stores (upstream's ``ExpectApplied``)."""
        rt = resource_of(obj)
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        ns = str(meta.get("namespace") or "default") if rt.namespaced else None
        try:
            current = self.kube.get(rt, name, ns)
        except NotFound:
            return create_with_status(self.kube, obj)
        merged_meta = {**current["metadata"], **meta}
        for owned in ("finalizers", "ownerReferences"):
            if owned not in meta and owned in current["metadata"]:
                merged_meta[owned] = current["metadata"][owned]
        body = {k: v for k, v in obj.items() if k != "status"}
        stored = self.kube.update({**body, "metadata": merged_meta})
        status = obj.get("status")
        if status and rt.status_subresource:
            stored = self.kube.patch(rt, name, {"status": status}, ns, subresource="status")
        return stored

    def apply_all(self, *objs: Mapping[str, Any]) -> builtins.list[dict[str, Any]]:
        """:meth:`apply` each, in order."""
        return [self.apply(o) for o in objs]

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Create ``obj`` (failing if it exists), its ``status`` written as :meth:`apply`
        writes it."""
        return create_with_status(self.kube, obj)

    def get(
        self,
        obj: Mapping[str, Any] | ResourceLike,
        name: str | None = None,
        namespace: str | None = None,
    ) -> dict[str, Any]:
        """The stored version of ``obj`` (an object, or a resource with a name); raises
        NotFound."""
        rt, name_, ns = _locate(obj, name, namespace)
        return self.kube.get(rt, name_, ns)

    def exists(
        self,
        obj: Mapping[str, Any] | ResourceLike,
        name: str | None = None,
        namespace: str | None = None,
    ) -> bool:
        try:
            self.get(obj, name, namespace)
        except NotFound:
            return False
        return True

    def delete(self, obj: Mapping[str, Any], **options: Any) -> dict[str, Any] | None:
        """Delete ``obj``; returns it when finalizers or a grace period keep it."""
        rt, name, ns = _locate(obj, None, None)
        return self.kube.delete(rt, name, ns, **options)

    def list(
        self, resource: ResourceLike, namespace: str | None = None
    ) -> builtins.list[dict[str, Any]]:
        """Every stored object of ``resource`` (``"pods"``, ``"nodeclaims"``...)."""
        return list(self.kube.list(resource, namespace).items)

    def pods(self, namespace: str | None = None) -> builtins.list[dict[str, Any]]:
        return self.list("pods", namespace)

    def nodes(self) -> builtins.list[dict[str, Any]]:
        return self.list("nodes")

    def nodeclaims(self) -> builtins.list[dict[str, Any]]:
        return self.list("nodeclaims")

    def set_status(self, obj: Mapping[str, Any], status: Mapping[str, Any]) -> dict[str, Any]:
        """Merge ``status`` into the stored object's status (the status subresource)."""
        rt, name, ns = _locate(obj, None, None)
        return self.kube.patch(rt, name, {"status": dict(status)}, ns, subresource="status")

    def bind(self, pod: Mapping[str, Any], node: Mapping[str, Any] | str) -> dict[str, Any]:
        """Bind ``pod`` to ``node`` as the kube-scheduler would; returns the bound pod."""
        meta = pod["metadata"]
        ns = str(meta.get("namespace") or "default")
        node_name = node if isinstance(node, str) else str(node["metadata"]["name"])
        self.kube.bind(str(meta["name"]), ns, node_name)
        return self.kube.get("pods", str(meta["name"]), ns)

    # ------------------------------------------------------------------ reading

    def events(self, reason: str | None = None) -> builtins.list[RecordedEvent]:
        """Events recorded so far (with ``reason`` only, when given)."""
        return [e for e in self.recorder.events if reason is None or e.reason == reason]

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Stop the controllers' watches and queues."""
        self.manager.stop()

    def __enter__(self) -> Environment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _compose(
    env: Environment, packages: tuple[ControllerPackage, ...], plugins: PluginContributions | None
) -> tuple[ControllerContext, Registration]:
    """Build Karpenter's controllers for ``env`` the way the operator's main does.

    The kit's only use of the operator's composition entry point (the controller context
    and :func:`register_all`): when that changes, this function is all that follows it.
    """
    from karpenter_core.cloudprovider.metrics import decorate
    from karpenter_core.state.cluster import Cluster

    ctx = ControllerContext(
        kube=env.kube,
        clock=env.clock,
        cloud_provider=decorate(env.provider),
        recorder=env.recorder,
        options=env.options,
        cluster=Cluster(env.kube, env.clock, env.provider),
        base_cloud_provider=env.provider,
    )
    if plugins is not None:
        ctx.plugins = plugins
    registration = register_all(env.manager, ctx, packages=packages, strict=True)
    return ctx, registration


def _packages(names: Iterable[str] | None) -> tuple[ControllerPackage, ...]:
    if names is None:
        return CONTROLLER_PACKAGES
    wanted = list(names)
    unknown = [n for n in wanted if n not in CONTROLLER_PACKAGE_NAMES]
    if unknown:
        raise ValueError(
            f"unknown controller packages {unknown} (known: {', '.join(CONTROLLER_PACKAGE_NAMES)})"
        )
    return tuple(p for p in CONTROLLER_PACKAGES if p.name in wanted)


def _check_registration(registration: Registration, asked: Iterable[str] | None) -> None:
    """A package a test names must run: a gate that is off is the test's mistake."""
    if asked is None:
        return
    wanted = set(asked)
    off = [f"{name} ({why})" for name, why in registration.skipped if name in wanted]
    if off:
        raise ValueError("controller packages asked for but switched off: " + "; ".join(off))


def _locate(
    obj: Mapping[str, Any] | ResourceLike, name: str | None, namespace: str | None
) -> tuple[Any, str, str | None]:
    if isinstance(obj, Mapping):
        rt = resource_of(obj)
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        namespace = str(meta.get("namespace") or "default") if rt.namespaced else None
        return rt, name, namespace
    if name is None:
        raise TypeError("a resource needs a name: get('pods', 'web-1', 'default')")
    return obj, name, namespace
