"""Finding, loading and querying plugins.

:func:`get_plugin_manager` registers, in order: the built-in plugin
(:mod:`karpenter_core.builtins`), then every entry point of the ``karpenter`` group that
``KARPENTER_PLUGINS`` allows, then runs ``check_pending()`` so a hookimpl whose name
matches no hook fails loudly instead of being silently ignored (tox 4 does the same).

A plugin that cannot be loaded (import error, unknown hook, bad hookimpl signature) does
not take the process down: it is left unregistered and recorded in
:attr:`KarpenterPluginManager.load_errors`, so ``karpenter plugins`` can show *which*
plugin is broken and why. Code that needs a particular plugin (``get_cloud_provider``)
mentions those errors in its own message. ``strict=True`` turns the first such error into
an exception instead.

``KARPENTER_PLUGINS``: unset means every installed plugin; otherwise a comma-separated
list of entry-point names (``kwok,aws``) — only those load. An empty value loads none
but the built-ins. A listed name nobody provides is reported as a load error.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import pluggy
import yaml
from attrs import frozen

from karpenter_core import hookspecs
from karpenter_core.apis import labels, yamlio
from karpenter_core.hookspecs import (
    HOOK_SPEC_TYPES,
    PROJECT_NAME,
    CloudProviderSpec,
    ControllerSpec,
    DisruptionMethodSpec,
    DRADriverSpec,
    InstanceTypeOverlaySpec,
    InstanceTypeScorerSpec,
    NodeLifecycleHookSpec,
    ProviderContext,
)

if TYPE_CHECKING:
    from karpenter_core.cloudprovider.protocol import CloudProvider, NodeClassKind
    from karpenter_core.kube.client import KubeClient
    from karpenter_core.runtime.clock import Clock
    from karpenter_core.runtime.events import EventRecorder

hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
"""Mark a plugin function as an implementation of the hook of the same name."""

ENTRY_POINT_GROUP = PROJECT_NAME
PLUGINS_ENV_VAR = "KARPENTER_PLUGINS"
BUILTIN_PLUGIN_NAME = "builtins"
CORE_DISTRIBUTION = "karpenter-core"

_SpecT = TypeVar("_SpecT")


class PluginError(Exception):
    """A plugin is missing, broken or inconsistent; the message says which and why."""


@frozen
class PluginLoadError:
    """A plugin that could not be registered, kept as a value for reporting."""

    name: str
    distribution: str | None
    version: str | None
    error: str

    def __str__(self) -> str:
        return f"plugin {self.name!r}{_dist_suffix(self.distribution, self.version)}: {self.error}"


@frozen
class PluginInfo:
    """Where a registered plugin came from."""

    name: str
    distribution: str | None
    version: str | None


def _dist_suffix(distribution: str | None, version: str | None) -> str:
    if distribution is None:
        return ""
    return f" ({distribution} {version})" if version else f" ({distribution})"


class KarpenterPluginManager(pluggy.PluginManager):
    """A pluggy PluginManager that also remembers plugin origins and load failures."""

    def __init__(self) -> None:
        super().__init__(PROJECT_NAME)
        self.add_hookspecs(hookspecs)
        self.load_errors: list[PluginLoadError] = []
        self.plugin_info: dict[str, PluginInfo] = {}

    def register_plugin(
        self,
        plugin: object,
        name: str,
        distribution: str | None = None,
        version: str | None = None,
    ) -> PluginLoadError | None:
        """Register ``plugin`` under ``name`` after validating its hookimpls.

        Returns the problem (also appended to ``load_errors``) instead of raising, and
        leaves a rejected plugin unregistered.
        """
        problem = self._register_checked(plugin, name)
        if problem is not None:
            err = PluginLoadError(name, distribution, version, problem)
            self.load_errors.append(err)
            return err
        self.plugin_info[name] = PluginInfo(name, distribution, version)
        return None

    def _register_checked(self, plugin: object, name: str) -> str | None:
        if self.has_plugin(name):
            other = self.plugin_info.get(name)
            where = _dist_suffix(other.distribution, other.version) if other else ""
            return f"a plugin named {name!r} is already registered{where}"
        try:
            self.register(plugin, name=name)
        except pluggy.PluginValidationError as exc:
            return f"invalid hook implementation: {exc}"
        except ValueError as exc:
            return str(exc)
        unknown = _unknown_hooks(self, plugin)
        if unknown:
            self.unregister(plugin)
            return "; ".join(unknown)
        return None

    def hook_families(self, name: str) -> list[str]:
        """The hooks plugin ``name`` implements, in hookspec order."""
        plugin = self.get_plugin(name)
        if plugin is None:
            return []
        callers = self.get_hookcallers(plugin) or []
        names = {c.name for c in callers}
        return [h for h in HOOK_SPEC_TYPES if h in names]


def _unknown_hooks(pm: pluggy.PluginManager, plugin: object) -> list[str]:
    """Messages for each hookimpl of ``plugin`` that matches no hookspec (a typo)."""
    messages = []
    for caller in pm.get_hookcallers(plugin) or []:
        if caller.has_spec():
            continue
        if any(impl.plugin is plugin and impl.optionalhook for impl in caller.get_hookimpls()):
            continue
        close = difflib.get_close_matches(caller.name, list(HOOK_SPEC_TYPES), n=1)
        hint = (
            f"; did you mean {close[0]!r}?"
            if close
            else f"; known hooks: {', '.join(HOOK_SPEC_TYPES)}"
        )
        messages.append(f"implements unknown hook {caller.name!r}{hint}")
    return messages


def _entry_points() -> Iterable[importlib.metadata.EntryPoint]:
    """Installed entry points of the ``karpenter`` group (a seam for tests)."""
    return importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)


def allowed_plugin_names(environ: Mapping[str, str]) -> frozenset[str] | None:
    """The names ``KARPENTER_PLUGINS`` allows, or None for "all of them"."""
    raw = environ.get(PLUGINS_ENV_VAR)
    if raw is None:
        return None
    return frozenset(part.strip() for part in raw.split(",") if part.strip())


def get_plugin_manager(
    environ: Mapping[str, str] | None = None, *, strict: bool = False
) -> KarpenterPluginManager:
    """Build the plugin manager: built-ins, then entry points, then ``check_pending()``.

    ``environ`` defaults to ``os.environ`` and is read only for ``KARPENTER_PLUGINS``.
    With ``strict`` the first plugin that fails to load raises :class:`PluginError`.
    """
    from karpenter_core import builtins

    env = os.environ if environ is None else environ
    pm = KarpenterPluginManager()
    broken = pm.register_plugin(builtins, BUILTIN_PLUGIN_NAME, CORE_DISTRIBUTION, _core_version())
    if broken is not None:  # a bug in karpenter-core itself: never limp on without it
        raise PluginError(str(broken))

    allowed = allowed_plugin_names(env)
    seen: set[str] = set()
    for ep in sorted(_entry_points(), key=lambda e: e.name):
        seen.add(ep.name)
        if allowed is not None and ep.name not in allowed:
            continue
        dist = ep.dist.name if ep.dist is not None else None
        version = ep.dist.version if ep.dist is not None else None
        try:
            plugin = ep.load()
        except Exception as exc:  # any import-time failure is the plugin's, not ours
            detail = f"{type(exc).__name__}: {exc}"
            pm.load_errors.append(
                PluginLoadError(ep.name, dist, version, f"failed to import {ep.value!r}: {detail}")
            )
            continue
        pm.register_plugin(plugin, ep.name, dist, version)

    for missing in sorted((allowed or frozenset()) - seen):
        installed = ", ".join(sorted(seen)) or "none"
        pm.load_errors.append(
            PluginLoadError(
                missing,
                None,
                None,
                f"listed in {PLUGINS_ENV_VAR} but no installed package provides it "
                f"(installed plugins: {installed})",
            )
        )

    # Every plugin was validated on registration; this catches anything registered
    # around that path (and keeps the tox-style guarantee explicit).
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(str(exc)) from exc

    if strict and pm.load_errors:
        raise PluginError(str(pm.load_errors[0]))
    return pm


def _core_version() -> str:
    from karpenter_core import __version__

    return str(__version__)


# --- Collecting registrations ----------------------------------------------------------------


@frozen
class HookResult:
    """What one plugin's implementation of one hook returned, or why it failed."""

    plugin_name: str
    specs: tuple[Any, ...]
    error: str | None = None


def call_each(pm: pluggy.PluginManager, hook_name: str) -> list[HookResult]:
    """Call ``hook_name`` on each plugin separately, in registration order (built-ins first).

    Calling per plugin (rather than ``pm.hook.x()``) lets every error name the plugin at
    fault: one that raises, returns a non-list, or returns the wrong registration type.
    Errors are returned as values so a report can go on past a broken plugin.
    """
    expected = HOOK_SPEC_TYPES[hook_name]
    caller = getattr(pm.hook, hook_name)
    results: list[HookResult] = []
    # get_hookimpls() is in registration order; pluggy would *call* them LIFO.
    for impl in caller.get_hookimpls():
        name = impl.plugin_name
        try:
            result = impl.function()
        except Exception as exc:  # a plugin's bug must not hide the others
            error = f"plugin {name!r}: {hook_name}() raised {type(exc).__name__}: {exc}"
            results.append(HookResult(name, (), error))
            continue
        if result is None:
            result = []
        if not isinstance(result, list | tuple):
            error = (
                f"plugin {name!r}: {hook_name}() must return a list of "
                f"{expected.__name__}, got {type(result).__name__}"
            )
            results.append(HookResult(name, (), error))
            continue
        wrong = [item for item in result if not isinstance(item, expected)]
        if wrong:
            error = (
                f"plugin {name!r}: {hook_name}() returned a {type(wrong[0]).__name__}, "
                f"expected {expected.__name__}"
            )
            results.append(HookResult(name, (), error))
            continue
        results.append(HookResult(name, tuple(result)))
    return results


def collect(pm: pluggy.PluginManager, hook_name: str) -> list[tuple[str, Any]]:
    """``(plugin name, spec)`` for every registration of ``hook_name``, in registration
    order; the first misbehaving plugin is a :class:`PluginError` naming it."""
    pairs: list[tuple[str, Any]] = []
    for result in call_each(pm, hook_name):
        if result.error is not None:
            raise PluginError(result.error)
        pairs.extend((result.plugin_name, spec) for spec in result.specs)
    return pairs


def _unique_by_name(
    pairs: list[tuple[str, _SpecT]],
    what: str,
    name_of: Callable[[_SpecT], str],
    *,
    builtins_replaceable: bool = False,
) -> dict[str, tuple[str, _SpecT]]:
    """Name -> (plugin, spec). Two plugins registering one name is a :class:`PluginError`,
    except that with ``builtins_replaceable`` an installed plugin may register a name the
    built-ins registered, replacing the built-in (once: two replacements still clash)."""
    out: dict[str, tuple[str, _SpecT]] = {}
    replaced: set[str] = set()
    for plugin_name, spec in pairs:
        name = name_of(spec)
        if name in out:
            first = out[name][0]
            if builtins_replaceable and first == BUILTIN_PLUGIN_NAME and name not in replaced:
                replaced.add(name)
                out[name] = (plugin_name, spec)
                continue
            raise PluginError(
                f"{what} {name!r} is registered twice: by plugin {first!r} and by plugin "
                f"{plugin_name!r}; uninstall one or limit {PLUGINS_ENV_VAR}"
            )
        out[name] = (plugin_name, spec)
    return out


def register_provider_labels(spec: CloudProviderSpec) -> None:
    """Extend the global label sets with a provider's well-known keys and domains.

    :func:`get_cloud_provider` does this for the provider it builds — the one in use,
    as upstream compiles exactly one provider's labels in. Listing providers does not:
    with several provider plugins installed, registering all of them would make e.g.
    ``karpenter.k8s.aws/instance-family`` "well known" (allowed undefined) while
    scheduling on kwok, and restrict domains the active provider never owns.
    """
    labels.register_well_known_labels(spec.well_known_labels)
    labels.register_restricted_label_domains(spec.restricted_label_domains)


def cloud_providers_by_plugin(pm: pluggy.PluginManager) -> dict[str, tuple[str, CloudProviderSpec]]:
    """Provider name -> (plugin name, spec). A duplicate name is a :class:`PluginError`."""
    return _unique_by_name(
        collect(pm, "karpenter_cloud_providers"), "cloud provider", lambda s: s.name
    )


def cloud_providers(pm: pluggy.PluginManager) -> dict[str, CloudProviderSpec]:
    """Every loaded cloud provider by name. A duplicate name is a :class:`PluginError`.

    A pure listing: it does not touch the global label sets (see
    :func:`register_provider_labels`).
    """
    return {name: spec for name, (_, spec) in cloud_providers_by_plugin(pm).items()}


def instance_type_overlays(pm: pluggy.PluginManager) -> list[InstanceTypeOverlaySpec]:
    """Every overlay, in the order to apply them: ascending weight, then name. An
    installed plugin's overlay named like a built-in one replaces it."""
    found = _unique_by_name(
        collect(pm, "karpenter_instance_type_overlays"),
        "instance type overlay",
        lambda s: s.name,
        builtins_replaceable=True,
    )
    return sorted((spec for _, spec in found.values()), key=lambda s: (s.weight, s.name))


def disruption_methods(pm: pluggy.PluginManager) -> list[DisruptionMethodSpec]:
    """Every disruption method, in the order the controller tries them. An installed
    plugin's method named like a built-in one (``drift``...) replaces it."""
    found = _unique_by_name(
        collect(pm, "karpenter_disruption_methods"),
        "disruption method",
        lambda s: s.name,
        builtins_replaceable=True,
    )
    return sorted((spec for _, spec in found.values()), key=lambda s: (s.order, s.name))


def dra_drivers(pm: pluggy.PluginManager) -> dict[str, DRADriverSpec]:
    """Every DRA driver by driver name."""
    found = _unique_by_name(collect(pm, "karpenter_dra_drivers"), "DRA driver", lambda s: s.name)
    return {name: spec for name, (_, spec) in found.items()}


def controllers(pm: pluggy.PluginManager) -> list[ControllerSpec]:
    """Every plugin controller, in plugin registration order. Controller names share one
    namespace with the core's; a clash is reported when they are registered.

    Controllers of different cloud providers may share a name (each provider has its own
    ``nodeclass.status``, as upstream's providers do): only the selected provider's run,
    so two of them never meet in one operator. Within one provider, or among controllers
    for every provider, a name is still taken once."""

    def key(spec: ControllerSpec) -> str:
        if spec.cloud_provider is None:
            return spec.name
        return f"{spec.name} (cloud provider {spec.cloud_provider})"

    found = _unique_by_name(collect(pm, "karpenter_controllers"), "controller", key)
    return [spec for _, spec in found.values()]


def node_lifecycle_hooks(pm: pluggy.PluginManager) -> list[NodeLifecycleHookSpec]:
    """Every node lifecycle hook, in plugin registration order."""
    found = _unique_by_name(
        collect(pm, "karpenter_node_lifecycle_hooks"), "node lifecycle hook", lambda s: s.name
    )
    return [spec for _, spec in found.values()]


def instance_type_scorers(pm: pluggy.PluginManager) -> list[InstanceTypeScorerSpec]:
    """Every instance-type scorer, by name. An installed plugin's scorer named like a
    built-in one (``price``...) replaces it."""
    found = _unique_by_name(
        collect(pm, "karpenter_instance_type_scorers"),
        "instance type scorer",
        lambda s: s.name,
        builtins_replaceable=True,
    )
    return [found[name][1] for name in sorted(found)]


@frozen
class PluginContributions:
    """What the plugins (the built-ins first) add to the controllers, collected once.

    ``karpenter serve`` and ``karpenter simulate`` collect them from the plugin manager
    (:func:`plugin_contributions`) into the controller context, so a plugin behaves the
    same in both; a context built without a plugin manager (a test, an embedding program)
    gets the built-ins only (:func:`builtin_contributions`)."""

    instance_type_overlays: tuple[InstanceTypeOverlaySpec, ...] = ()
    disruption_methods: tuple[DisruptionMethodSpec, ...] = ()
    controllers: tuple[ControllerSpec, ...] = ()
    node_lifecycle_hooks: tuple[NodeLifecycleHookSpec, ...] = ()
    dra_drivers: tuple[DRADriverSpec, ...] = ()
    instance_type_scorers: tuple[InstanceTypeScorerSpec, ...] = ()


def plugin_contributions(pm: pluggy.PluginManager) -> PluginContributions:
    """Everything ``pm``'s plugins contribute to the controllers; a misbehaving plugin is
    a :class:`PluginError` naming it."""
    return PluginContributions(
        instance_type_overlays=tuple(instance_type_overlays(pm)),
        disruption_methods=tuple(disruption_methods(pm)),
        controllers=tuple(controllers(pm)),
        node_lifecycle_hooks=tuple(node_lifecycle_hooks(pm)),
        dra_drivers=tuple(dra_drivers(pm).values()),
        instance_type_scorers=tuple(instance_type_scorers(pm)),
    )


_BUILTINS: PluginContributions | None = None


def builtin_contributions() -> PluginContributions:
    """What the built-in plugin alone contributes (collected once per process)."""
    global _BUILTINS
    if _BUILTINS is None:
        from karpenter_core import builtins

        pm = KarpenterPluginManager()
        broken = pm.register_plugin(builtins, BUILTIN_PLUGIN_NAME, CORE_DISTRIBUTION)
        if broken is not None:
            raise PluginError(str(broken))
        _BUILTINS = plugin_contributions(pm)
    return _BUILTINS


def resolve_settings(spec: CloudProviderSpec, settings: Mapping[str, str]) -> dict[str, str]:
    """Check ``settings`` against the provider's declared settings and fill defaults.

    Errors name the provider and the setting, and list what is accepted.
    """
    declared = {s.name: s for s in spec.settings}
    unknown = sorted(set(settings) - set(declared))
    if unknown:
        accepted = ", ".join(sorted(declared)) or "none"
        raise PluginError(
            f"cloud provider {spec.name!r}: unknown setting(s) {', '.join(unknown)} "
            f"(accepted: {accepted})"
        )
    resolved: dict[str, str] = {}
    missing = []
    for s in spec.settings:
        if s.name in settings:
            resolved[s.name] = settings[s.name]
        elif s.default is not None:
            resolved[s.name] = s.default
        elif s.required:
            missing.append(s.name + (f" (env {s.env})" if s.env else ""))
    if missing:
        raise PluginError(
            f"cloud provider {spec.name!r}: missing required setting(s) {', '.join(missing)}"
        )
    return resolved


def unknown_cloud_provider_message(
    name: str, providers: Iterable[str], manager: KarpenterPluginManager
) -> str:
    """Why ``name`` is not an installed cloud provider, and what to do about it: the
    installed names, and the plugins that failed to load (the usual reason a provider is
    "missing") or else the extra that would install it."""
    installed = ", ".join(sorted(providers)) or "none"
    msg = f"unknown cloud provider {name!r} (installed: {installed})"
    if manager.load_errors:
        return (
            msg + "; plugins that failed to load: " + "; ".join(str(e) for e in manager.load_errors)
        )
    return msg + f"; is karpenter-core[{name}] installed?"


def get_cloud_provider(
    name: str,
    settings: Mapping[str, str] | None = None,
    pm: KarpenterPluginManager | None = None,
    *,
    kube: KubeClient | None = None,
    clock: Clock | None = None,
    recorder: EventRecorder | None = None,
    node_classes: Sequence[Mapping[str, Any]] = (),
) -> CloudProvider:
    """Build the cloud provider called ``name`` with ``settings``.

    ``kube``, ``clock`` and ``recorder`` reach the factory in its
    :class:`~karpenter_core.hookspecs.ProviderContext`; leave them None where there is no
    cluster (``karpenter instance-types``, ``karpenter schedule``): the catalogue still
    works, launching does not. ``node_classes`` are NodeClass manifests for such a
    provider to resolve NodePools' ``nodeClassRef`` against (see
    :class:`~karpenter_core.hookspecs.ProviderContext`).

    Selecting a provider registers its well-known labels and restricted label domains
    (before its factory runs), so requirements and validation treat its keys the way its
    upstream counterpart does. An unknown name is a :class:`PluginError` listing the installed providers and any
    plugin that failed to load (the usual reason a provider is "missing").
    """
    manager = pm if pm is not None else get_plugin_manager()
    providers = cloud_providers(manager)
    spec = providers.get(name)
    if spec is None:
        raise PluginError(unknown_cloud_provider_message(name, providers, manager))
    resolved = resolve_settings(spec, settings or {})
    register_provider_labels(spec)
    context = ProviderContext(
        settings=resolved,
        kube=kube,
        clock=clock,
        recorder=recorder,
        node_classes=tuple(node_classes),
    )
    return spec.factory(context)


# --- CRDs a cloud provider ships -------------------------------------------------------------

CRD_API_VERSION = "apiextensions.k8s.io/v1"
CRD_KIND = "CustomResourceDefinition"


@frozen
class ProviderCRD:
    """One CRD a cloud provider ships: the file's text, printed as is, and the parsed
    manifest (to filter by kind and to check it serves the provider's NodeClasses)."""

    provider: str
    file: str
    text: str
    manifest: Mapping[str, Any]

    @property
    def name(self) -> str:
        """The CRD's name, ``<plural>.<group>``."""
        return str(self.manifest["metadata"]["name"])


def _non_empty_str(value: object) -> bool:
    return isinstance(value, str) and bool(value)


def crd_problem(manifest: object) -> str | None:
    """Why ``manifest`` is not a CustomResourceDefinition, or None.

    Checks what the core reads from it and the mistakes the API server would refuse
    with a less helpful message (a name that is not ``<plural>.<group>``); the schema
    itself is the API server's business.
    """
    if not isinstance(manifest, dict):
        return f"expected a {CRD_KIND} object, got a {type(manifest).__name__}"
    api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
    if api_version != CRD_API_VERSION or kind != CRD_KIND:
        return f"expected apiVersion {CRD_API_VERSION} kind {CRD_KIND}, got {api_version} {kind}"
    metadata, spec = manifest.get("metadata"), manifest.get("spec")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not _non_empty_str(name):
        return "metadata.name is missing"
    if not isinstance(spec, dict):
        return "spec is missing"
    group, names = spec.get("group"), spec.get("names")
    if not _non_empty_str(group):
        return "spec.group is missing"
    if not isinstance(names, dict) or not all(
        _non_empty_str(names.get(k)) for k in ("kind", "plural")
    ):
        return "spec.names needs a kind and a plural"
    for key in ("singular", "listKind"):
        if key in names and not _non_empty_str(names[key]):
            return f"spec.names.{key} must be a non-empty string"
    short = names.get("shortNames", [])
    if not isinstance(short, list) or not all(_non_empty_str(s) for s in short):
        return "spec.names.shortNames must be a list of strings"
    expected = f"{names['plural']}.{group}"
    if name != expected:
        return f"metadata.name is {name!r}, must be {expected!r} (<spec.names.plural>.<spec.group>)"
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        return "spec.versions must be a non-empty list"
    for i, version in enumerate(versions):
        if not isinstance(version, dict) or not _non_empty_str(version.get("name")):
            return f"spec.versions[{i}].name is missing"
        if not isinstance(version.get("served"), bool):
            return f"spec.versions[{i}].served must be true or false"
    return None


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def cloud_provider_crds(spec: CloudProviderSpec) -> list[ProviderCRD]:
    """Read and check the CRD files ``spec`` ships, in the order it lists them.

    A file that cannot be read, is not YAML, or is not exactly one
    CustomResourceDefinition is a :class:`PluginError` naming the provider and the file:
    printing a broken manifest would only move the error to ``kubectl apply``.
    """
    out: list[ProviderCRD] = []
    for file in spec.crds:
        where = f"cloud provider {spec.name!r}: CRD file {file.name}"
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise PluginError(f"{where}: cannot read it: {_one_line(exc)}") from exc
        try:
            docs = [d for d in yamlio.safe_load_all(text) if d is not None]
        except yaml.YAMLError as exc:
            raise PluginError(f"{where}: not valid YAML: {_one_line(exc)}") from exc
        if len(docs) != 1:
            raise PluginError(
                f"{where}: expected exactly one {CRD_KIND}, found {len(docs)} YAML documents"
            )
        problem = crd_problem(docs[0])
        if problem is not None:
            raise PluginError(f"{where}: {problem}")
        out.append(ProviderCRD(spec.name, file.name, text, docs[0]))
    return out


def serves(crd: Mapping[str, Any], node_class: NodeClassKind) -> bool:
    """Whether a (checked) CRD serves ``node_class``: same group and kind, and the
    NodeClass's version among its served versions (any, when the version is unknown)."""
    spec = crd["spec"]
    if spec["group"] != node_class.group or spec["names"]["kind"] != node_class.kind:
        return False
    served = {v["name"] for v in spec["versions"] if v["served"]}
    return node_class.version in served if node_class.version else bool(served)


def node_classes_without_crd(
    spec: CloudProviderSpec, crds: Iterable[ProviderCRD]
) -> list[NodeClassKind]:
    """The provider's NodeClass kinds that none of ``crds`` serves, in declaration order:
    their CRDs must come from somewhere else (the provider's own release)."""
    manifests = [c.manifest for c in crds]
    return [nc for nc in spec.node_classes if not any(serves(m, nc) for m in manifests)]


__all__ = [
    "BUILTIN_PLUGIN_NAME",
    "CRD_API_VERSION",
    "CRD_KIND",
    "ENTRY_POINT_GROUP",
    "PLUGINS_ENV_VAR",
    "HookResult",
    "KarpenterPluginManager",
    "PluginContributions",
    "PluginError",
    "PluginInfo",
    "PluginLoadError",
    "ProviderCRD",
    "allowed_plugin_names",
    "builtin_contributions",
    "call_each",
    "cloud_provider_crds",
    "cloud_providers",
    "cloud_providers_by_plugin",
    "collect",
    "controllers",
    "crd_problem",
    "disruption_methods",
    "dra_drivers",
    "get_cloud_provider",
    "get_plugin_manager",
    "hookimpl",
    "instance_type_overlays",
    "instance_type_scorers",
    "node_classes_without_crd",
    "node_lifecycle_hooks",
    "plugin_contributions",
    "register_provider_labels",
    "resolve_settings",
    "serves",
    "unknown_cloud_provider_message",
]
