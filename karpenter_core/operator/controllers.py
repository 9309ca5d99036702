"""The controller registry: every controller Karpenter runs, in one place.

This mirrors upstream's ``pkg/controllers/controllers.go``: a fixed list of controller
packages, some always on, some behind a feature gate or an option, registered on one
:class:`~karpenter_core.runtime.manager.Manager` from one
:class:`~karpenter_core.runtime.context.ControllerContext`. ``karpenter serve`` and
``karpenter simulate`` both call :func:`register_all`, so the simulator runs exactly the
controllers the operator would.

Each package exposes ``register(manager, ctx)``. Packages are imported lazily: a package
that is not installed (or is switched off) is *skipped* with a reason rather than failing
the whole operator, and :class:`Registration` says what ran and what did not, so a
simulation report can state which behaviour was missing instead of silently showing less.
``serve`` passes ``strict=True`` to turn any missing always-on package into an error.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from collections.abc import Callable, Sequence
from typing import Any

from attrs import field, frozen

from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.manager import Manager

__all__ = [
    "CONTROLLER_PACKAGES",
    "ControllerPackage",
    "Registration",
    "RegistrationError",
    "register_all",
]

log = logging.getLogger("karpenter.operator")

Gate = Callable[[ControllerContext], "str | None"]
"""Returns why a package is off for this context, or None when it should run."""


class RegistrationError(RuntimeError):
    """A controller package that must run could not be registered (strict mode)."""


def _feature_gate(name: str) -> Gate:
    def gate(ctx: ControllerContext) -> str | None:
        if ctx.options.gate(name):
            return None
        return f"feature gate {name} is off"

    return gate


def _observability(ctx: ControllerContext) -> str | None:
    if ctx.options.disable_cluster_state_observability:
        return "DISABLE_CLUSTER_STATE_OBSERVABILITY is set"
    return None


def _node_repair(ctx: ControllerContext) -> str | None:
    if not ctx.options.gate("NodeRepair"):
        return "feature gate NodeRepair is off"
    policies = getattr(ctx.cloud_provider, "repair_policies", None)
    try:
        has_policies = bool(policies()) if callable(policies) else False
    except Exception as e:  # a provider bug must not stop the operator
        return f"the cloud provider's repair_policies() failed: {e}"
    if not has_policies:
        return "the cloud provider declares no repair policies"
    return None


def _dra(ctx: ControllerContext) -> str | None:
    if ctx.options.ignore_dra_requests:
        return "IGNORE_DRA_REQUESTS is true"
    return None


@frozen
class ControllerPackage:
    """One package of controllers: its module (with ``register``) and when it runs."""

    name: str
    module: str
    controllers: tuple[str, ...]
    """Upstream's controller names this package provides (for documentation and notes)."""
    gate: Gate | None = None
    optional: bool = False
    """True for packages upstream also runs only conditionally."""


CONTROLLER_PACKAGES: tuple[ControllerPackage, ...] = (
    ControllerPackage(
        "provisioning",
        "karpenter_core.controllers.provisioning",
        ("provisioner", "provisioner.trigger.pod", "provisioner.trigger.node"),
    ),
    ControllerPackage(
        "disruption",
        "karpenter_core.controllers.disruption",
        ("disruption", "disruption.queue"),
    ),
    ControllerPackage(
        "nodepool",
        "karpenter_core.controllers.nodepool",
        (
            "nodepool.hash",
            "nodepool.readiness",
            "nodepool.registrationhealth",
            "nodepool.counter",
            "nodepool.validation",
        ),
    ),
    ControllerPackage(
        "state",
        "karpenter_core.state.informers",
        (
            "state.daemonset",
            "state.node",
            "state.pod",
            "state.nodepool",
            "state.nodeclaim",
            "state.pricing",
        ),
    ),
    ControllerPackage(
        "state.nodeclaimgc", "karpenter_core.state.nodeclaimgc", ("state.nodeclaimgc",)
    ),
    ControllerPackage(
        "node.termination",
        "karpenter_core.controllers.node.termination",
        ("node.termination", "eviction-queue"),
    ),
    ControllerPackage(
        "nodeclaim",
        "karpenter_core.controllers.nodeclaim",
        (
            "nodeclaim.lifecycle",
            "nodeclaim.garbagecollection",
            "nodeclaim.consistency",
            "nodeclaim.podevents",
            "nodeclaim.expiration",
            "nodeclaim.disruption",
            "nodeclaim.hydration",
            "node.hydration",
        ),
    ),
    ControllerPackage(
        "metrics",
        "karpenter_core.controllers.metrics",
        ("metrics.pod", "metrics.node", "metrics.nodepool"),
        gate=_observability,
        optional=True,
    ),
    ControllerPackage(
        "status",
        "karpenter_core.controllers.status",
        ("operatorpkg.nodeclaim.status", "operatorpkg.nodepool.status", "operatorpkg.node.status"),
        gate=_observability,
        optional=True,
    ),
    ControllerPackage(
        "dynamicresources",
        "karpenter_core.controllers.dynamicresources",
        ("dynamicresources.deviceallocation",),
        gate=_dra,
        optional=True,
    ),
    ControllerPackage(
        "node.health",
        "karpenter_core.controllers.node.health",
        ("node.health",),
        gate=_node_repair,
        optional=True,
    ),
    ControllerPackage(
        "static",
        "karpenter_core.controllers.static",
        ("static.provisioning", "static.deprovisioning"),
        gate=_feature_gate("StaticCapacity"),
        optional=True,
    ),
    ControllerPackage(
        "nodeoverlay",
        "karpenter_core.controllers.nodeoverlay",
        ("nodeoverlay.controller",),
        gate=_feature_gate("NodeOverlay"),
        optional=True,
    ),
    ControllerPackage(
        "capacitybuffer",
        "karpenter_core.controllers.capacitybuffer",
        ("capacitybuffer",),
        gate=_feature_gate("CapacityBuffer"),
        optional=True,
    ),
)
"""Upstream's registry, in upstream's order (which is also the virtual Manager's
round-robin order)."""


@frozen
class Registration:
    """What :func:`register_all` did."""

    registered: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(package, controller names it added), in registration order."""
    skipped: tuple[tuple[str, str], ...] = ()
    """(package, why) for packages switched off."""
    missing: tuple[tuple[str, str], ...] = field(default=())
    """(package, why) for packages that should run but could not be registered."""

    @property
    def controllers(self) -> tuple[str, ...]:
        return tuple(name for _, names in self.registered for name in names)

    def notes(self) -> list[str]:
        """One line per package that is not running, for logs and reports."""
        return [f"controllers {pkg} not running: {why}" for pkg, why in self.missing]


def _module_exists(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


PLUGIN_OVERLAYS_KEY = "instance_type_overlays"
"""``ctx.extras`` key of the installed plugins' instance-type overlays (the operator's
main and the simulation engine put them there)."""

PLUGIN_DISRUPTION_METHODS_KEY = "disruption.methods"
"""``ctx.extras`` key of the installed plugins' disruption methods (a plugin method with a
built-in's name replaces it)."""


def plugin_extras(pm: Any) -> dict[str, Any]:
    """What the installed plugins add to the controllers, as ``ctx.extras`` entries:
    instance-type overlays and disruption methods. ``karpenter serve`` and ``karpenter
    simulate`` both call this, so a plugin behaves the same in both."""
    from karpenter_core.plugins import disruption_methods, instance_type_overlays

    return {
        PLUGIN_OVERLAYS_KEY: list(instance_type_overlays(pm)),
        PLUGIN_DISRUPTION_METHODS_KEY: list(disruption_methods(pm)),
    }


def install_overlays(ctx: ControllerContext) -> None:
    """Put the overlay step on ``ctx.cloud_provider`` before any controller captures it.

    With the NodeOverlay gate on, the NodeOverlay package installs its store (plugin
    overlays beneath NodeOverlays); with it off, plugin overlays
    (``ctx.extras["instance_type_overlays"]``) still apply. Either way every controller --
    provisioning, disruption, drift -- reads the same instance types.
    """
    plugin_overlays = tuple(ctx.extras.get(PLUGIN_OVERLAYS_KEY) or ())
    if ctx.options.gate("NodeOverlay"):
        try:
            from karpenter_core.controllers.nodeoverlay import install
        except ImportError as e:  # reported when the package itself is registered
            log.debug("nodeoverlay not installed before registration: %s", e)
            return
        install(ctx)
    elif plugin_overlays:
        from karpenter_core.cloudprovider.overlay import decorate

        ctx.cloud_provider = decorate(ctx.cloud_provider, None, plugin_overlays=plugin_overlays)


def register_all(
    manager: Manager,
    ctx: ControllerContext,
    *,
    packages: Sequence[ControllerPackage] = CONTROLLER_PACKAGES,
    strict: bool = False,
) -> Registration:
    """Register every controller package that should run for ``ctx`` on ``manager``.

    Gated packages whose gate is off are skipped. A package that should run but is not
    installed, fails to import, has no ``register`` or fails while registering is reported
    in :attr:`Registration.missing` (and logged); with ``strict`` that raises
    :class:`RegistrationError` instead.
    """
    registered: list[tuple[str, tuple[str, ...]]] = []
    skipped: list[tuple[str, str]] = []
    missing: list[tuple[str, str]] = []
    # looked up before the overlay step wraps the provider (the metrics decorator forwards)
    provider_hook = getattr(ctx.cloud_provider, "register_controllers", None)
    install_overlays(ctx)
    for pkg in packages:
        why = pkg.gate(ctx) if pkg.gate is not None else None
        if why is not None:
            skipped.append((pkg.name, why))
            continue
        problem: str | None = None
        before = {c.name for c in manager.controllers}
        if not _module_exists(pkg.module):
            problem = f"{pkg.module} is not available"
        else:
            try:
                module = importlib.import_module(pkg.module)
                register = getattr(module, "register", None)
                if not callable(register):
                    problem = f"{pkg.module} has no register(manager, ctx)"
                else:
                    register(manager, ctx)
            except Exception as e:
                problem = f"{pkg.module}: registering failed: {type(e).__name__}: {e}"
        added = tuple(c.name for c in manager.controllers if c.name not in before)
        if problem is not None:
            log.warning("controllers %s not running: %s", pkg.name, problem)
            missing.append((pkg.name, problem))
            if strict:
                raise RegistrationError(f"controllers {pkg.name}: {problem}")
            continue
        registered.append((pkg.name, added))
    if callable(provider_hook):
        _register_provider_controllers(manager, ctx, provider_hook, registered, missing, strict)
    return Registration(tuple(registered), tuple(skipped), tuple(missing))


def _register_provider_controllers(
    manager: Manager,
    ctx: ControllerContext,
    hook: Callable[[Manager, ControllerContext], None],
    registered: list[tuple[str, tuple[str, ...]]],
    missing: list[tuple[str, str]],
    strict: bool,
) -> None:
    """Let the cloud provider add its own controllers (NodeClass status, interruption
    handling, ...) through its optional ``register_controllers(manager, ctx)`` method.

    Called after the core's packages, so a provider's controllers see the same context
    (and the overlay-decorated provider in ``ctx.cloud_provider``); a failure is reported
    like a core package's, never fatal unless ``strict``.
    """
    name = f"cloudprovider.{getattr(ctx.cloud_provider, 'name', 'unknown')}"
    before = {c.name for c in manager.controllers}
    try:
        hook(manager, ctx)
    except Exception as e:
        problem = f"registering failed: {type(e).__name__}: {e}"
        log.warning("controllers %s not running: %s", name, problem)
        missing.append((name, problem))
        if strict:
            raise RegistrationError(f"controllers {name}: {problem}") from e
        return
    registered.append((name, tuple(c.name for c in manager.controllers if c.name not in before)))
