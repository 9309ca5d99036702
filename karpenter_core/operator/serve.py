"""``karpenter serve``: the operator's main, as upstream's ``operator.NewOperator`` + provider
main.

Start-up order (spec operator-and-lifecycle §1), each step failing with one line that says
what to fix (:class:`ServeError`) rather than a traceback:

1. options (flags over environment variables) — already parsed by the CLI;
2. JSON logging at ``LOG_LEVEL``;
3. the API server: the kubeconfig (or in-cluster config), a main client at
   ``KUBE_CLIENT_QPS``/``KUBE_CLIENT_BURST`` and a *separate* lease client at client-go's
   default 5 qps / burst 10, so a scale-up that saturates the main client's rate limiter
   can never starve lease renewals; then a reachability check (``/version``) and the CRD
   check (NodePool, NodeClaim and the provider's NodeClass kinds must be served);
4. the cloud provider chosen with ``--cloud-provider`` (settings from its declared
   environment variables and ``--provider-setting``);
5. metrics (``:METRICS_PORT/metrics``) and probes (``:HEALTH_PROBE_PORT/healthz``,
   ``/readyz``) servers, and the shared informer caches — on *every* replica. ``/readyz``
   fails while any cache is unsynced or its list/watch is failing (the cache may be
   stale); ``/healthz`` fails only for what a restart cures: an informer loop that died or
   has done nothing for far longer than any of its timeouts allows;
6. leader election on the ``LEADER_ELECTION_NAME`` Lease (unless
   ``DISABLE_LEADER_ELECTION``); once leading and every shared cache has synced, cluster
   state, every controller of
   :func:`~karpenter_core.operator.controllers.register_all` on a Manager with a wall clock,
   fed by the shared informers and reading the cached kinds from them
   (:class:`~karpenter_core.kube.cache.CachedClient`), so reads do not spend the client's
   rate limit that NodeClaim creates need. Every write the main client sends, every
   cloud-provider create/delete and every reconcile first asks the elector whether this
   replica can still prove it leads (:meth:`LeaderElector.check`), so a replica that was
   paused or cut off stops acting before a standby may take over;
7. SIGTERM/SIGINT: stop the controllers, release the Lease, stop informers and servers,
   exit 0. Losing the Lease exits 1, as controller-runtime's manager does, so the
   replica restarts as a fresh candidate instead of acting on a stale view.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from attrs import field, frozen

from karpenter_core import __version__
from karpenter_core.kube.client import (
    ApiError,
    KubeClient,
    ResourceType,
    UnknownResourceError,
    resource_for,
    resource_types,
)
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.options import Options
from karpenter_core.scoring import scorer_problem

__all__ = [
    "LEASE_CLIENT_BURST",
    "LEASE_CLIENT_QPS",
    "Operator",
    "ServeConfig",
    "ServeError",
    "freeze_heap",
    "provider_settings",
    "run",
]

log = logging.getLogger("karpenter.operator")

POOL_SIZE = 64

WATCH_IDLE_TIMEOUT_ENV = "KARPENTER_WATCH_IDLE_TIMEOUT"
"""Seconds a watch may stay silent before it is reopened (default 90; see kube.adapter)."""

LIVENESS_GRACE = 120.0
"""Beyond an informer's own timeouts, how long its loop may do nothing before /healthz
fails (a wedged thread; an API outage never makes the loop idle, only failing)."""

# client-go's defaults for a rest.Config without QPS/Burst: the lease client keeps them.
LEASE_CLIENT_QPS = 5.0
LEASE_CLIENT_BURST = 10

REQUIRED_KINDS = (("karpenter.sh/v1", "NodePool"), ("karpenter.sh/v1", "NodeClaim"))

# The caches every replica keeps warm (upstream's manager cache runs before election).
CACHED_KINDS = (
    ("karpenter.sh/v1", "NodePool"),
    ("karpenter.sh/v1", "NodeClaim"),
    ("v1", "Node"),
    ("v1", "Pod"),
    ("apps/v1", "DaemonSet"),
)
"""Also the kinds controllers read from memory (:class:`CachedClient`) rather than the API."""

DRA_KINDS = (
    ("resource.k8s.io/v1", "ResourceSlice"),
    ("resource.k8s.io/v1", "ResourceClaim"),
    ("resource.k8s.io/v1", "ResourceClaimTemplate"),
    ("resource.k8s.io/v1", "DeviceClass"),
)
"""Cached as well while DRA requests are simulated (``IGNORE_DRA_REQUESTS=false``): every
scheduling pass reads the published devices, the claims holding them, the templates of
claims not created yet and the classes (upstream's manager cache watches them then; the
API server must serve resource.k8s.io/v1, GA since Kubernetes 1.34)."""


def cached_kinds(options: Options) -> tuple[tuple[str, str], ...]:
    """The kinds whose informers every replica keeps warm with these options."""
    return CACHED_KINDS + (() if options.ignore_dra_requests else DRA_KINDS)


def dra_api_problem(client: KubeClient) -> str | None:
    """None when the API server serves the DRA kinds (needed with
    ``IGNORE_DRA_REQUESTS=false``: their caches would never sync otherwise), else why not.
    A client without discovery (the in-memory server) serves them."""
    has_resource: Callable[[ResourceType], bool] | None = getattr(client, "has_resource", None)
    if has_resource is None:
        return None
    for kind in DRA_KINDS:
        rt = resource_for(kind)
        try:
            served = has_resource(rt)
        except ApiError as e:
            return f"cannot check {rt.api_version} {rt.kind}: {e}"
        if not served:
            return (
                f"IGNORE_DRA_REQUESTS=false needs the API server to serve {rt.api_version} "
                f"{rt.kind} (Kubernetes 1.34 or newer); it does not"
            )
    return None


def _leader_gauge() -> Any:
    """controller-runtime's ``leader_election_master_status{name}``: 1 on the replica that
    holds the Lease, 0 on standbys (dashboards and the e2e tests tell replicas apart by it)."""
    from prometheus_client import Gauge

    from karpenter_core import metrics

    existing = getattr(metrics.REGISTRY, "_names_to_collectors", {}).get(
        "leader_election_master_status"
    )
    if existing is not None:
        return existing
    return Gauge(
        "leader_election_master_status",
        "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
        "backup, 1 indicates master. 'name' is the string used to identify the lease.",
        ["name"],
        registry=metrics.REGISTRY,
    )


def freeze_heap() -> None:
    """Leave everything allocated so far — with a large cluster, mostly the caches just
    listed — out of every later cyclic garbage collection (``gc.freeze``).

    A full collection walks every tracked object; with 150,000 pods cached that is tens of
    millions, a pause of seconds, and the burst of work when the controllers start triggers
    several: on a busy machine long enough to miss a lease renewal (seen in
    ``bench/serve.py --scale``). Cached objects are plain JSON data without reference
    cycles, so reference counting frees each one when the watch replaces it; only cyclic
    garbage among what is frozen would stay, and the start-up leaves little."""
    gc.freeze()


class ServeError(RuntimeError):
    """The operator cannot start or keep running; the message is one actionable line."""


@frozen
class ServeConfig:
    """Everything ``karpenter serve`` was asked to do."""

    options: Options = field(factory=Options)
    cloud_provider: str = "kwok"
    kubeconfig: str | None = None
    provider_settings: Mapping[str, str] = field(factory=dict)
    identity: str | None = None
    """Leader-election identity; ``<hostname>_<uuid>`` when None."""


def provider_settings(
    spec: Any, environ: Mapping[str, str], explicit: Mapping[str, str]
) -> dict[str, str]:
    """A provider's settings: each declared setting's environment variable (``CLUSTER_NAME``
    ...), then ``explicit`` ones (``--provider-setting``), which win."""
    settings: dict[str, str] = {}
    for s in getattr(spec, "settings", ()):
        if s.env and s.env in environ:
            settings[s.name] = environ[s.env]
    settings.update(explicit)
    return settings


def _crd_name(rt: ResourceType) -> str:
    return f"{rt.plural}.{rt.group}" if rt.group else rt.plural


def _node_class_types(provider: Any) -> list[ResourceType]:
    """The registered resource types of the provider's NodeClass kinds."""
    out: list[ResourceType] = []
    try:
        kinds = list(provider.supported_node_classes())
    except Exception as e:
        raise ServeError(f"cloud provider: supported_node_classes() failed: {e}") from None
    for nc in kinds:
        matches = [rt for rt in resource_types() if rt.group == nc.group and rt.kind == nc.kind]
        version = getattr(nc, "version", "")
        exact = [rt for rt in matches if rt.version == version]
        if exact or matches:
            out.append((exact or matches)[0])
    return out


def crd_problem(client: KubeClient, kinds: Sequence[ResourceType]) -> str | None:
    """None when the API server serves every kind in ``kinds``, else which CRD is missing."""
    has_resource: Callable[[ResourceType], bool] | None = getattr(client, "has_resource", None)
    for rt in kinds:
        if has_resource is not None:
            try:
                served = has_resource(rt)
            except ApiError as e:
                return f"cannot check CRD {_crd_name(rt)}: {e}"
        else:  # a KubeClient without discovery (the in-memory server): try listing
            try:
                client.list(rt)
                served = True
            except (ApiError, UnknownResourceError):
                served = False
        if not served:
            return (
                f"CRD {_crd_name(rt)} ({rt.api_version} {rt.kind}) is not installed on the "
                "API server"
            )
    return None


def _crd_hint(rt_group: str) -> str:
    if rt_group in ("karpenter.sh", "autoscaling.x-k8s.io"):
        return "; install the CRDs with `karpenter crds | kubectl apply -f -` (or the Helm chart)"
    return "; install the cloud provider's NodeClass CRD"


class Operator:
    """One ``karpenter serve`` process (see the module docstring).

    ``client`` / ``lease_client`` may be injected (tests, or an embedding program); by
    default both are built from the kubeconfig. :meth:`run` blocks until ``stop`` is set
    or leadership is lost and returns the exit code.
    """

    def __init__(
        self,
        config: ServeConfig,
        *,
        client: KubeClient | None = None,
        lease_client: KubeClient | None = None,
        environ: Mapping[str, str] | None = None,
        configure_logs: bool = True,
        host: str = "",
    ) -> None:
        self.config = config
        self.options = config.options
        self.environ = dict(os.environ if environ is None else environ)
        self.configure_logs = configure_logs
        self.host = host
        self.client = client
        self.lease_client = lease_client
        self.provider: Any = None
        self.provider_client: Any = None
        self.registration: Any = None
        self.manager: Any = None
        self.informers: Any = None
        self.reader: Any = None
        self.plugin_manager: Any = None
        self.elector: Any = None
        self.metrics_server: Any = None
        self.health_server: Any = None
        self.leading = threading.Event()
        self.lost = threading.Event()
        self.controllers_started = threading.Event()
        self._settled_frozen = False
        self._cluster: Any = None
        self._wake = threading.Event()
        self._crd_kinds: list[ResourceType] = []
        self._cached: list[Any] = []
        self._leader_status: Any = None

    # ------------------------------------------------------------------ start-up steps

    def _connect(self) -> None:
        if self.client is not None:
            if self.lease_client is None:
                self.lease_client = self.client
            return
        from karpenter_core.kube.adapter import KubernetesClient
        from karpenter_core.kube.config import KubeConfigError, load_config

        try:
            loaded = load_config(self.config.kubeconfig)
        except KubeConfigError as e:
            raise ServeError(str(e)) from None
        ua = f"karpenter/{__version__}"
        # One pooled connection per concurrently reconciling worker, not the client's
        # default of 5 x CPUs (extra requests would open and drop connections).
        configuration = loaded.configuration
        configuration.connection_pool_maxsize = max(
            int(getattr(configuration, "connection_pool_maxsize", 0) or 0), POOL_SIZE
        )
        self.client = KubernetesClient(
            loaded.configuration,
            qps=self.options.kube_client_qps,
            burst=self.options.kube_client_burst,
            user_agent=ua,
            watch_idle_timeout=self._watch_idle_timeout(),
        )
        self.lease_client = KubernetesClient(
            loaded.configuration,
            qps=LEASE_CLIENT_QPS,
            burst=LEASE_CLIENT_BURST,
            user_agent=ua + " leader-election",
            request_timeout=5.0,
        )
        log.info("using %s", loaded.source)

    def _watch_idle_timeout(self) -> float:
        from karpenter_core.kube.adapter import WATCH_IDLE_TIMEOUT

        raw = self.environ.get(WATCH_IDLE_TIMEOUT_ENV, "").strip()
        if not raw:
            return WATCH_IDLE_TIMEOUT
        try:
            value = float(raw)
        except ValueError:
            value = -1.0
        if not 0 < value <= 3600:
            raise ServeError(
                f"{WATCH_IDLE_TIMEOUT_ENV}={raw[:40]!r}: expected seconds between 0 and 3600"
            )
        return value

    def _check_reachable(self) -> None:
        assert self.client is not None
        version = getattr(self.client, "server_version", None)
        if version is None:
            return
        host = getattr(self.client, "host", "the API server")
        try:
            info = version()
        except ApiError as e:
            raise ServeError(f"cannot reach the Kubernetes API server at {host}: {e}") from None
        except Exception as e:
            raise ServeError(
                f"cannot reach the Kubernetes API server at {host}: {type(e).__name__}: {e}"
            ) from None
        log.info("connected to the API server %s (%s)", host, info.get("gitVersion", "unknown"))

    def _build_provider(self) -> None:
        from karpenter_core.kube.cache import CacheListingClient
        from karpenter_core.plugins import PluginError, cloud_providers, get_cloud_provider

        name = self.config.cloud_provider
        assert self.client is not None
        # lists from the informer caches once they exist (see CacheListingClient)
        self.provider_client = CacheListingClient(self.client)
        try:
            from karpenter_core.plugins import get_plugin_manager

            pm = get_plugin_manager(self.environ)
            self.plugin_manager = pm
            spec = cloud_providers(pm).get(name)
            settings = provider_settings(spec, self.environ, self.config.provider_settings)
            self.provider = get_cloud_provider(
                name,
                settings,
                pm,
                kube=self.provider_client,
                clock=self.clock,
                recorder=self.recorder,
            )
        except PluginError as e:
            raise ServeError(f"--cloud-provider {name}: {e}") from None
        except Exception as e:
            raise ServeError(f"--cloud-provider {name}: {type(e).__name__}: {e}") from None

    def _check_crds(self) -> None:
        assert self.client is not None
        kinds = [resource_for(k) for k in REQUIRED_KINDS] + _node_class_types(self.provider)
        self._crd_kinds = kinds
        problem = crd_problem(self.client, kinds)
        if problem is not None:
            missing = next((rt for rt in kinds if _crd_name(rt) in problem), kinds[0])
            raise ServeError(problem + _crd_hint(missing.group))
        if not self.options.ignore_dra_requests:
            problem = dra_api_problem(self.client)
            if problem is not None:
                raise ServeError(problem)

    def _start_servers(self) -> None:
        from karpenter_core import metrics
        from karpenter_core.operator.health import HttpServer, metrics_routes, probe_routes

        opts = self.options
        self.metrics_server = HttpServer(
            "metrics",
            opts.metrics_port,
            metrics_routes(metrics.REGISTRY),
            opts.metrics_bind_address or self.host,
        ).start()
        self.health_server = HttpServer(
            "health",
            opts.health_probe_port,
            probe_routes(self.ready_checks(), self.live_checks()),
            opts.health_probe_bind_address or self.host,
        ).start()
        log.info(
            "serving metrics on :%d/metrics and probes on :%d/healthz, /readyz",
            self.metrics_server.port,
            self.health_server.port,
        )

    def _informer_healths(self) -> list[Any]:
        informers = self.informers
        return [] if informers is None else [inf.health() for inf in informers.all()]

    def ready_checks(self) -> dict[str, Callable[[], str | None]]:
        """Upstream's readiness: caches synced, and the CRDs resolve; and, beyond upstream,
        every cache current: a replica whose list/watch is failing serves stale reads."""

        def caches() -> str | None:
            if self.informers is None:
                return "caches not started"
            waiting = [str(inf.resource) for inf in self._cached if not inf.has_synced()]
            return f"waiting for caches: {', '.join(sorted(waiting))}" if waiting else None

        def fresh() -> str | None:
            stale = [
                f"{h.resource} (list/watch failing for {h.failing_for:.0f}s: {h.last_error})"
                for h in self._informer_healths()
                if h.failing_for is not None
            ]
            return f"caches may be stale: {'; '.join(sorted(stale))}" if stale else None

        def crds() -> str | None:
            assert self.client is not None
            return crd_problem(self.client, self._crd_kinds[: len(REQUIRED_KINDS)])

        return {"informer-sync": caches, "informer-fresh": fresh, "crds": crds}

    def live_checks(self) -> dict[str, Callable[[], str | None]]:
        """``/healthz``: an informer loop that died or is wedged is cured by a restart; an
        API outage is not (every replica would restart at once), so it only fails
        readiness."""
        client = self.client
        bound = (
            float(getattr(client, "watch_idle_timeout", 0) or 0)
            + float(getattr(client, "request_timeout", 0) or 0)
            + LIVENESS_GRACE
        )

        def informers() -> str | None:
            bad = []
            for h in self._informer_healths():
                if not h.running:
                    bad.append(f"{h.resource} (its loop has exited)")
                elif h.since_heartbeat > bound:
                    bad.append(f"{h.resource} (no progress for {h.since_heartbeat:.0f}s)")
            return f"informers stuck: {', '.join(sorted(bad))}" if bad else None

        return {"informers": informers}

    def _start_informers(self) -> None:
        from karpenter_core.kube.cache import CachedClient
        from karpenter_core.kube.informer import SharedInformers, SharingCompactor

        assert self.client is not None
        # slim cached objects, their alike parts held once: with a large cluster they are
        # most of the operator's memory
        self.informers = SharedInformers(self.client, transform=SharingCompactor())
        kinds = cached_kinds(self.options)
        self._cached = [self.informers.informer(kind) for kind in kinds]
        self.reader = CachedClient(self.client, self.informers, kinds)
        if self.provider_client is not None:
            self.provider_client.attach(self.reader)
        self.informers.start()

    def _start_election(self) -> None:
        from karpenter_core.runtime.clock import WallClock
        from karpenter_core.runtime.leaderelection import (
            LeaderElectionConfig,
            LeaderElectionError,
            LeaderElector,
            default_identity,
            own_namespace,
        )

        opts = self.options
        if opts.disable_leader_election:
            log.info("leader election disabled: running controllers")
            self.leading.set()
            self._wake.set()
            return
        self._leader_status = _leader_gauge().labels(name=opts.leader_election_name)
        self._leader_status.set(0)
        namespace = opts.leader_election_namespace or own_namespace(self.environ) or ""
        try:
            cfg = LeaderElectionConfig(
                namespace=namespace,
                identity=self.config.identity or default_identity(),
                name=opts.leader_election_name,
            )
        except LeaderElectionError as e:
            raise ServeError(str(e)) from None
        assert self.lease_client is not None

        def started() -> None:
            self._leader_status.set(1)
            self.leading.set()
            self._wake.set()

        def stopped() -> None:
            self._leader_status.set(0)
            self.lost.set()
            self._wake.set()

        # Its own timer thread: lease calls never wait behind controller timers.
        self.elector = LeaderElector(
            self.lease_client,
            cfg,
            WallClock(),
            on_started_leading=started,
            on_stopped_leading=stopped,
        )
        # the main client is the one controllers, the recorder and the provider write with
        from karpenter_core.kube.adapter import KubernetesClient

        if isinstance(self.client, KubernetesClient):
            self.client.write_guard = self.elector.check
        log.info(
            "attempting to acquire leader lease %s/%s as %s", namespace, cfg.name, cfg.identity
        )
        self.elector.start()

    def _start_controllers(self) -> None:
        from karpenter_core.cloudprovider.metrics import decorate
        from karpenter_core.operator.controllers import RegistrationError, register_all
        from karpenter_core.runtime.manager import Manager
        from karpenter_core.state.cluster import Cluster

        assert self.reader is not None
        guard = self.elector.check if self.elector is not None else None
        provider = self.provider
        if guard is not None:
            from karpenter_core.cloudprovider.guard import GuardedCloudProvider

            provider = GuardedCloudProvider(provider, guard)
        ctx = ControllerContext(
            kube=self.reader,
            clock=self.clock,
            # wrapped once, as upstream's main does: karpenter_cloudprovider_* metrics
            cloud_provider=decorate(provider),
            recorder=self.recorder,
            options=self.options,
            cluster=Cluster(self.reader, self.clock, self.provider),
            base_cloud_provider=self.provider,
        )
        self._cluster = ctx.cluster
        if self.plugin_manager is not None:
            from karpenter_core.plugins import PluginError, plugin_contributions

            try:
                ctx.plugins = plugin_contributions(self.plugin_manager)
            except PluginError as e:
                raise ServeError(f"plugins: {e}") from None
        problem = scorer_problem(ctx)
        if problem is not None:
            raise ServeError(problem)
        # watches come from the shared informers, whose caches the reader serves
        self.manager = Manager(self.clock, self.reader, informers=self.informers, guard=guard)
        try:
            self.registration = register_all(self.manager, ctx, strict=True)
        except RegistrationError as e:
            raise ServeError(str(e)) from None
        self.manager.start()
        self.controllers_started.set()
        log.info(
            "started %d controllers: %s",
            len(self.registration.controllers),
            ", ".join(self.registration.controllers),
        )

    # ------------------------------------------------------------------ run

    def start(self) -> None:
        """Steps 2-6 of the module docstring; raises :class:`ServeError`."""
        from karpenter_core.runtime.clock import WallClock
        from karpenter_core.runtime.events import EventRecorder

        if self.configure_logs:
            from karpenter_core.operator.logging import configure_logging

            try:
                configure_logging(self.options.log_level, self.options.log_output_paths)
            except ValueError as e:
                raise ServeError(str(e)) from None
        self._connect()
        assert self.client is not None
        self._check_reachable()
        self.clock = WallClock()
        self.recorder = EventRecorder(self.clock, self.client, asynchronous=True)
        self._build_provider()
        self._check_crds()
        from karpenter_core.operator.health import ServeError as PortError

        try:
            self._start_servers()
        except PortError as e:
            raise ServeError(str(e)) from None
        self._start_informers()
        self._start_election()

    def run(self, stop: threading.Event) -> int:
        """Start, then wait for leadership / ``stop`` / loss; returns the exit code."""
        try:
            self.start()
        except BaseException:
            self.shutdown()
            raise
        code = 0
        try:
            while not stop.is_set():
                if self.lost.is_set():
                    code = 1
                    break
                if (
                    self.leading.is_set()
                    and not self.controllers_started.is_set()
                    and self._caches_synced()
                ):
                    freeze_heap()
                    self._start_controllers()
                if not self._settled_frozen and self._first_burst_done():
                    # cluster state's models of every pod and node, made since the caches
                    # synced, are the next tens of millions of long-lived objects
                    self._settled_frozen = True
                    freeze_heap()
                self._wake.wait(0.2)
                self._wake.clear()
        finally:
            self.shutdown()
        return code

    def _first_burst_done(self) -> bool:
        """Controllers started, cluster state synced and no controller has work ready: the
        start-up's reconcile of every cached object is over."""
        manager = self.manager
        if manager is None or self._cluster is None or not self._cluster.has_synced():
            return False
        return not any(c.queue.has_ready() for c in manager.controllers)

    def _caches_synced(self) -> bool:
        """Controllers start once every shared cache has listed, as controller-runtime's
        do: a controller reading a kind whose cache has not synced reads the API server,
        and cluster state would keep those uncached copies (with a large cluster, a second
        copy of most pods)."""
        informers = self.informers
        return informers is None or informers.has_synced()

    def wake(self) -> None:
        """Make :meth:`run` look at its events now (signal handlers call this)."""
        self._wake.set()

    def shutdown(self) -> None:
        """Stop controllers, release the Lease, stop caches and servers (idempotent)."""
        started = any(
            x is not None for x in (self.manager, self.elector, self.informers, self.health_server)
        )
        if self.manager is not None:
            self.manager.stop()
            self.manager = None
        if self.elector is not None:
            self.elector.stop()
            self.elector = None
            self._leader_status.set(0)
        if self.informers is not None:
            self.informers.stop()
        recorder = getattr(self, "recorder", None)  # absent if start failed early
        if recorder is not None:
            recorder.close()
        for server in (self.health_server, self.metrics_server):
            if server is not None:
                server.stop()
        self.health_server = self.metrics_server = None
        self.informers = None
        if started:
            log.info("stopped")


def run(
    config: ServeConfig,
    stop: threading.Event,
    *,
    environ: Mapping[str, str] | None = None,
    on_start: Callable[[Operator], None] | None = None,
) -> int:
    """Run the operator until ``stop`` is set; raises :class:`ServeError` on start-up."""
    operator = Operator(config, environ=environ)
    if on_start is not None:
        on_start(operator)
    return operator.run(stop)
