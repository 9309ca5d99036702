"""register_all: upstream's registry, feature gates, and missing packages reported, not fatal."""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.operator.controllers import (
    CONTROLLER_PACKAGES,
    ControllerPackage,
    RegistrationError,
    register_all,
)
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.options import Options
from karpenter_core.runtime.reconciler import Result
from karpenter_core.sim.apiserver import InMemoryApiServer


class _Noop:
    def reconcile(self) -> Result:
        return Result()


class _Provider:
    def __init__(self, policies: tuple[Any, ...] = ()) -> None:
        self._policies = policies

    def repair_policies(self) -> tuple[Any, ...]:
        return self._policies


def ctx(options: Options | None = None, provider: Any = None) -> ControllerContext:
    clock = VirtualClock()
    server = InMemoryApiServer(clock)
    return ControllerContext(
        kube=server,
        clock=clock,
        cloud_provider=provider or _Provider(),
        recorder=EventRecorder(clock),
        options=options or Options(),
    )


def _register_two(manager: Manager, c: ControllerContext) -> None:
    manager.add_singleton("fake.one", _Noop())
    manager.add_singleton("fake.two", _Noop())


def test_a_package_registers_its_controllers() -> None:
    c = ctx()
    manager = Manager(c.clock, c.kube)
    reg = register_all(manager, c, packages=[ControllerPackage("fake", _register_two, ())])
    assert reg.registered == (("fake", ("fake.one", "fake.two")),)
    assert reg.controllers == ("fake.one", "fake.two")
    assert reg.missing == () and reg.notes() == []


def test_a_package_not_built_yet_is_a_note_not_a_crash() -> None:
    c = ctx()
    manager = Manager(c.clock, c.kube)
    reg = register_all(manager, c, packages=[ControllerPackage("ghost", None, ())])
    assert reg.registered == ()
    assert reg.notes() == ["controllers ghost not running: not implemented in this version"]


def test_strict_mode_refuses_a_package_that_should_run_but_is_not_built() -> None:
    c = ctx()
    with pytest.raises(RegistrationError, match="ghost"):
        register_all(
            Manager(c.clock, c.kube),
            c,
            packages=[ControllerPackage("ghost", None, ())],
            strict=True,
        )


def test_dynamic_resource_allocation_needs_no_controller_of_its_own() -> None:
    """Upstream's deviceallocation index of allocated devices is the provisioner's own
    reading of the claims here: asking for DRA registers the package, and nothing runs."""
    c = ctx(Options(ignore_dra_requests=False))
    dra = [p for p in CONTROLLER_PACKAGES if p.name == "dynamicresources"]
    manager = Manager(c.clock, c.kube)
    reg = register_all(manager, c, packages=dra, strict=True)
    assert (reg.registered, reg.missing) == ((("dynamicresources", ()),), ())
    assert manager.controllers == []


def test_a_register_that_raises_is_reported_with_the_error() -> None:
    def boom(manager: Manager, c: ControllerContext) -> None:
        raise ValueError("bad wiring")

    c = ctx()
    reg = register_all(Manager(c.clock, c.kube), c, packages=[ControllerPackage("f", boom, ())])
    assert "ValueError: bad wiring" in reg.notes()[0]


@pytest.mark.parametrize(
    ("gates", "provider_policies", "expect_on"),
    [
        ("", (), set()),
        ("NodeRepair=true", (), set()),  # no repair policies: node.health stays off
        ("NodeRepair=true", ("Ready",), {"node.health"}),
        (
            "StaticCapacity=true,NodeOverlay=true,CapacityBuffer=true",
            (),
            {"static", "nodeoverlay", "capacitybuffer"},
        ),
    ],
)
def test_feature_gated_packages_follow_their_gates(
    gates: str, provider_policies: tuple[str, ...], expect_on: set[str]
) -> None:
    options = Options.from_env({"FEATURE_GATES": gates} if gates else {})
    c = ctx(options, _Provider(provider_policies))
    gated = [
        p
        for p in CONTROLLER_PACKAGES
        if p.name in {"node.health", "static", "nodeoverlay", "capacitybuffer"}
    ]
    reg = register_all(Manager(c.clock, c.kube), c, packages=gated)
    skipped = {name for name, _ in reg.skipped}
    assert {p.name for p in gated} - skipped == expect_on


def test_observability_off_skips_metrics_controllers() -> None:
    c = ctx(Options(disable_cluster_state_observability=True))
    metrics = [p for p in CONTROLLER_PACKAGES if p.name == "metrics"]
    reg = register_all(Manager(c.clock, c.kube), c, packages=metrics)
    assert reg.skipped == (("metrics", "DISABLE_CLUSTER_STATE_OBSERVABILITY is set"),)


def test_registry_names_upstreams_always_on_controllers() -> None:
    names = {n for p in CONTROLLER_PACKAGES if not p.optional for n in p.controllers}
    for upstream in (
        "provisioner",
        "disruption",
        "nodeclaim.lifecycle",
        "nodeclaim.garbagecollection",
        "node.termination",
        "state.node",
        "state.nodeclaimgc",
        "nodepool.counter",
        "nodepool.validation",
    ):
        assert upstream in names


def test_the_registry_names_every_controller_the_installed_packages_register() -> None:
    from engine_helpers import make_scenario

    from karpenter_core.sim.engine import Simulation

    sim = Simulation(make_scenario())
    declared = {p.name: set(p.controllers) for p in CONTROLLER_PACKAGES}
    assert sim.registration.registered  # the core packages are installed
    for package, names in sim.registration.registered:
        assert set(names) <= declared[package], (package, sorted(set(names) - declared[package]))


class _PluginMethod:
    reason = "plugin"
    disruption_class = "graceful"
    consolidation_type = ""

    def __init__(self, dctx: Any) -> None:
        self.dctx = dctx

    def should_disrupt(self, candidate: Any) -> bool:
        return False

    def compute_commands(self, budgets: Any, *candidates: Any) -> list[Any]:
        return []


def test_a_plugins_disruption_method_and_overlay_reach_the_controllers() -> None:
    from karpenter_core.cloudprovider.overlay import OverlayDecorator
    from karpenter_core.hookspecs import DisruptionMethodSpec, InstanceTypeOverlaySpec
    from karpenter_core.plugins import get_plugin_manager, hookimpl, plugin_contributions

    class Plugin:
        @hookimpl
        def karpenter_disruption_methods(self) -> list[DisruptionMethodSpec]:
            return [DisruptionMethodSpec("plugin", 250, _PluginMethod)]

        @hookimpl
        def karpenter_instance_type_overlays(self) -> list[InstanceTypeOverlaySpec]:
            return [InstanceTypeOverlaySpec("same", 0, lambda np, its: list(its))]

    pm = get_plugin_manager({"KARPENTER_PLUGINS": ""})  # the built-ins only
    assert pm.register_plugin(Plugin(), "test-plugin") is None
    c = ctx()
    c.plugins = plugin_contributions(pm)
    manager = Manager(c.clock, c.kube)
    pkgs = [p for p in CONTROLLER_PACKAGES if p.name == "disruption"]
    reg = register_all(manager, c, packages=pkgs, strict=True)
    assert reg.registered and reg.registered[0][0] == "disruption"
    assert c.disruption is not None
    methods = [type(m).__name__ for m in c.disruption.methods]
    # between static drift and drift, as its order says, among all the built-ins
    assert methods == [
        "Emptiness",
        "StaticDrift",
        "_PluginMethod",
        "Drift",
        "MultiNodeConsolidation",
        "SingleNodeConsolidation",
    ]
    assert isinstance(c.cloud_provider, OverlayDecorator)
    assert [o.name for o in c.cloud_provider.overlays] == ["same"]  # NodeOverlay gate off


def _controllers(*specs: Any) -> Any:
    from karpenter_core.plugins import PluginContributions

    return PluginContributions(controllers=tuple(specs))


class _NamedProvider(_Provider):
    name = "fakecloud"


def test_a_plugins_controllers_register_after_the_core_with_the_context() -> None:
    from karpenter_core.cloudprovider.metrics import decorate
    from karpenter_core.hookspecs import ControllerSpec
    from karpenter_core.runtime.reconciler import Watch

    seen: list[ControllerContext] = []

    def build(c: ControllerContext) -> Any:
        seen.append(c)
        return _Noop()

    provider = _NamedProvider()
    c = ctx(provider=decorate(provider))  # reached through the metrics decorator, as in serve
    c.base_cloud_provider = provider
    c.plugins = _controllers(
        ControllerSpec(
            "fakecloud.nodeclass.status", build, singleton=True, cloud_provider="fakecloud"
        ),
        ControllerSpec("anycloud.watcher", lambda c: _Noop(), watches=[Watch("nodes")]),
        ControllerSpec("othercloud.thing", build, singleton=True, cloud_provider="othercloud"),
    )
    manager = Manager(c.clock, c.kube)
    reg = register_all(manager, c, packages=[ControllerPackage("fake", _register_two, ())])
    assert [ctl.name for ctl in manager.controllers] == [
        "fake.one",
        "fake.two",
        "fakecloud.nodeclass.status",
        "anycloud.watcher",
    ]
    assert seen == [c]
    assert reg.skipped == (("othercloud.thing", "only with cloud provider othercloud"),)


def test_a_plugin_controller_that_fails_to_build_is_reported_and_strict_raises() -> None:
    from karpenter_core.hookspecs import ControllerSpec

    def broken(c: ControllerContext) -> Any:
        raise RuntimeError("no credentials")

    c = ctx(provider=_NamedProvider())
    c.plugins = _controllers(ControllerSpec("fakecloud.status", broken, singleton=True))
    reg = register_all(Manager(c.clock, c.kube), c, packages=[])
    assert reg.missing == (
        ("fakecloud.status", "building it failed: RuntimeError: no credentials"),
    )
    c = ctx(provider=_NamedProvider())
    c.plugins = _controllers(ControllerSpec("fakecloud.status", broken, singleton=True))
    with pytest.raises(RegistrationError, match=r"fakecloud\.status"):
        register_all(Manager(c.clock, c.kube), c, packages=[], strict=True)


def test_a_plugin_controller_named_like_a_core_one_is_reported() -> None:
    from karpenter_core.hookspecs import ControllerSpec

    c = ctx(provider=_NamedProvider())
    c.plugins = _controllers(ControllerSpec("fake.one", lambda c: _Noop(), singleton=True))
    reg = register_all(
        Manager(c.clock, c.kube), c, packages=[ControllerPackage("fake", _register_two, ())]
    )
    assert reg.missing and "already registered" in reg.missing[0][1]
