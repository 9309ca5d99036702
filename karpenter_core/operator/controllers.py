"""The controller registry: every controller Karpenter runs, in one place.

This mirrors upstream's ``pkg/controllers/controllers.go``: a fixed list of controller
packages, some always on, some behind a feature gate or an option, registered on one
:class:`~karpenter_core.runtime.manager.Manager` from one
:class:`~karpenter_core.runtime.context.ControllerContext`. ``karpenter serve`` and
``karpenter simulate`` both call :func:`register_all`, so the simulator runs exactly the
controllers the operator would.

Each package exposes ``register(manager, ctx)``, imported here like any other function.
After the core's packages come the plugins' controllers (``karpenter_controllers``
registrations in ``ctx.plugins.controllers``). :class:`Registration` says what ran and
what did not and why, so a simulation report can state which behaviour was missing
instead of silently showing less; ``serve`` passes ``strict=True`` so a part that should
run but cannot be built stops it with one line.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from attrs import field, frozen

from karpenter_core.cloudprovider.overlay import install_overlays
from karpenter_core.controllers import (
    capacitybuffer,
    disruption,
    metrics,
    nodeclaim,
    nodeoverlay,
    nodepool,
    provisioning,
    state,
    static,
    status,
)
from karpenter_core.controllers.node import health, termination
from karpenter_core.hookspecs import ControllerSpec
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


def _device_allocation(manager: Manager, ctx: ControllerContext) -> None:
    """Upstream's ``dynamicresources.deviceallocation`` controller indexes the devices the
    cluster's ResourceClaims hold, for the provisioner. Here the provisioner reads the
    claims themselves each pass (``controllers/provisioning/dra.py``: from the informer
    cache under ``serve``, which keeps ResourceClaims with ``IGNORE_DRA_REQUESTS=false``,
    each parsed once per resourceVersion), so there is nothing more to run."""


Register = Callable[[Manager, ControllerContext], None]


@frozen
class ControllerPackage:
    """One package of controllers: its ``register`` function and when it runs
    (``register=None``: not built yet; reported as missing whenever it should run)."""

    name: str
    register: Register | None
    controllers: tuple[str, ...]
    """Upstream's controller names this package provides (for documentation and notes)."""
    gate: Gate | None = None
    optional: bool = False
    """True for packages upstream also runs only conditionally."""


CONTROLLER_PACKAGES: tuple[ControllerPackage, ...] = (
    ControllerPackage(
        "provisioning",
        provisioning.register,
        ("provisioner", "provisioner.trigger.pod", "provisioner.trigger.node"),
    ),
    ControllerPackage(
        "disruption",
        disruption.register,
        ("disruption", "disruption.queue"),
    ),
    ControllerPackage(
        "nodepool",
        nodepool.register,
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
        state.register,
        (
            "state.daemonset",
            "state.node",
            "state.pod",
            "state.nodepool",
            "state.nodeclaim",
            "state.pricing",
        ),
    ),
    ControllerPackage("state.nodeclaimgc", state.nodeclaimgc.register, ("state.nodeclaimgc",)),
    ControllerPackage(
        "node.termination",
        termination.register,
        ("node.termination", "eviction-queue"),
    ),
    ControllerPackage(
        "nodeclaim",
        nodeclaim.register,
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
        metrics.register,
        ("metrics.pod", "metrics.node", "metrics.nodepool"),
        gate=_observability,
        optional=True,
    ),
    ControllerPackage(
        "status",
        status.register,
        ("operatorpkg.nodeclaim.status", "operatorpkg.nodepool.status", "operatorpkg.node.status"),
        gate=_observability,
        optional=True,
    ),
    ControllerPackage(
        "dynamicresources",
        _device_allocation,  # the provisioner reads the claims' allocations itself
        (),
        gate=_dra,
        optional=True,
    ),
    ControllerPackage(
        "node.health",
        health.register,
        ("node.health",),
        gate=_node_repair,
        optional=True,
    ),
    ControllerPackage(
        "static",
        static.register,
        ("static.provisioning", "static.deprovisioning"),
        gate=_feature_gate("StaticCapacity"),
        optional=True,
    ),
    ControllerPackage(
        "nodeoverlay",
        nodeoverlay.register,
        ("nodeoverlay.controller",),
        gate=_feature_gate("NodeOverlay"),
        optional=True,
    ),
    ControllerPackage(
        "capacitybuffer",
        capacitybuffer.register,
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


def register_all(
    manager: Manager,
    ctx: ControllerContext,
    *,
    packages: Sequence[ControllerPackage] = CONTROLLER_PACKAGES,
    strict: bool = False,
) -> Registration:
    """Register every controller package that should run for ``ctx`` on ``manager``, then
    the plugins' controllers.

    The overlay step goes on ``ctx.cloud_provider`` first, so every controller captures
    the provider with overlays applied. Gated packages whose gate is off are skipped. A
    package that should run but is not built or fails while registering is reported in
    :attr:`Registration.missing` (and logged); with ``strict`` that raises
    :class:`RegistrationError` instead.
    """
    registered: list[tuple[str, tuple[str, ...]]] = []
    skipped: list[tuple[str, str]] = []
    missing: list[tuple[str, str]] = []

    def problem(name: str, why: str) -> None:
        log.warning("controllers %s not running: %s", name, why)
        missing.append((name, why))
        if strict:
            raise RegistrationError(f"controllers {name}: {why}")

    install_overlays(ctx)
    for pkg in packages:
        why = pkg.gate(ctx) if pkg.gate is not None else None
        if why is not None:
            skipped.append((pkg.name, why))
            continue
        if pkg.register is None:
            problem(pkg.name, "not implemented in this version")
            continue
        before = {c.name for c in manager.controllers}
        try:
            pkg.register(manager, ctx)
        except Exception as e:
            problem(pkg.name, f"registering failed: {type(e).__name__}: {e}")
            continue
        registered.append(
            (pkg.name, tuple(c.name for c in manager.controllers if c.name not in before))
        )
    for spec in ctx.plugins.controllers:
        why, outcome = _register_plugin_controller(manager, ctx, spec)
        if outcome == "registered":
            registered.append((spec.name, (spec.name,)))
        elif outcome == "skipped":
            skipped.append((spec.name, why))
        else:
            problem(spec.name, why)
    return Registration(tuple(registered), tuple(skipped), tuple(missing))


def _provider_name(ctx: ControllerContext) -> str:
    provider = ctx.base_cloud_provider or ctx.cloud_provider
    return str(getattr(provider, "name", "") or "")


def _register_plugin_controller(
    manager: Manager, ctx: ControllerContext, spec: ControllerSpec
) -> tuple[str, str]:
    """Add one plugin controller; returns (why, "registered" | "skipped" | "missing")."""
    if spec.cloud_provider is not None and spec.cloud_provider != _provider_name(ctx):
        return f"only with cloud provider {spec.cloud_provider}", "skipped"
    try:
        reconciler = spec.factory(ctx)
    except Exception as e:
        return f"building it failed: {type(e).__name__}: {e}", "missing"
    if reconciler is None:
        return "not needed with these settings", "skipped"
    try:
        limiter = spec.rate_limiter() if spec.rate_limiter is not None else None
        if spec.singleton:
            manager.add_singleton(spec.name, reconciler, rate_limiter=limiter)  # type: ignore[arg-type]
        else:
            manager.add_controller(
                spec.name,
                reconciler,  # type: ignore[arg-type]
                watches=spec.watches,
                workers=spec.workers,
                rate_limiter=limiter,
            )
    except Exception as e:
        return f"registering failed: {type(e).__name__}: {e}", "missing"
    return "", "registered"
