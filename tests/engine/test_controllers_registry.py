"""register_all: upstream's registry, feature gates, and missing packages reported, not fatal."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
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


@pytest.fixture
def fake_package() -> Iterator[str]:
    name = "karpenter_test_fake_controllers"
    module = types.ModuleType(name)

    def register(manager: Manager, c: ControllerContext) -> None:
        manager.add_singleton("fake.one", _Noop())
        manager.add_singleton("fake.two", _Noop())

    module.register = register  # type: ignore[attr-defined]
    sys.modules[name] = module
    module.__spec__ = types.SimpleNamespace(name=name)  # type: ignore[assignment]
    yield name
    del sys.modules[name]


def test_a_package_registers_its_controllers(fake_package: str) -> None:
    c = ctx()
    manager = Manager(c.clock, c.kube)
    reg = register_all(manager, c, packages=[ControllerPackage("fake", fake_package, ())])
    assert reg.registered == (("fake", ("fake.one", "fake.two")),)
    assert reg.controllers == ("fake.one", "fake.two")
    assert reg.missing == () and reg.notes() == []


def test_a_missing_package_is_a_note_not_a_crash() -> None:
    c = ctx()
    manager = Manager(c.clock, c.kube)
    reg = register_all(
        manager, c, packages=[ControllerPackage("ghost", "karpenter_no_such_pkg", ())]
    )
    assert reg.registered == ()
    assert reg.notes() == ["controllers ghost not running: karpenter_no_such_pkg is not available"]


def test_strict_mode_refuses_a_missing_package() -> None:
    c = ctx()
    with pytest.raises(RegistrationError, match="ghost"):
        register_all(
            Manager(c.clock, c.kube),
            c,
            packages=[ControllerPackage("ghost", "karpenter_no_such_pkg", ())],
            strict=True,
        )


def test_a_register_that_raises_is_reported_with_the_error(fake_package: str) -> None:
    def boom(manager: Manager, c: ControllerContext) -> None:
        raise ValueError("bad wiring")

    sys.modules[fake_package].register = boom  # type: ignore[attr-defined]
    c = ctx()
    reg = register_all(
        Manager(c.clock, c.kube), c, packages=[ControllerPackage("f", fake_package, ())]
    )
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
    from karpenter_core.operator.controllers import plugin_extras
    from karpenter_core.plugins import KarpenterPluginManager, hookimpl

    class Plugin:
        @hookimpl
        def karpenter_disruption_methods(self) -> list[DisruptionMethodSpec]:
            return [DisruptionMethodSpec("plugin", 250, _PluginMethod)]

        @hookimpl
        def karpenter_instance_type_overlays(self) -> list[InstanceTypeOverlaySpec]:
            return [InstanceTypeOverlaySpec("same", 0, lambda np, its: list(its))]

    pm = KarpenterPluginManager()
    assert pm.register_plugin(Plugin(), "test-plugin") is None
    c = ctx()
    c.extras.update(plugin_extras(pm))
    manager = Manager(c.clock, c.kube)
    pkgs = [p for p in CONTROLLER_PACKAGES if p.name == "disruption"]
    reg = register_all(manager, c, packages=pkgs, strict=True)
    assert reg.registered and reg.registered[0][0] == "disruption"
    methods = [type(m).__name__ for m in c.extras["disruption"].methods]
    # between static drift and drift, as its order says
    assert methods.index("_PluginMethod") == methods.index("StaticDrift") + 1
    assert methods.index("_PluginMethod") == methods.index("Drift") - 1
    assert isinstance(c.cloud_provider, OverlayDecorator)


class _ProviderWithControllers(_Provider):
    """A cloud provider that adds its own controllers, as a NodeClass-owning provider does."""

    name = "fakecloud"

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.fail = fail
        self.seen: list[ControllerContext] = []

    def register_controllers(self, manager: Manager, c: ControllerContext) -> None:
        self.seen.append(c)
        if self.fail:
            raise RuntimeError("no credentials")
        manager.add_singleton("fakecloud.nodeclass.status", _Noop())


def test_a_provider_registers_its_own_controllers_after_the_core() -> None:
    from karpenter_core.cloudprovider.metrics import decorate

    provider = _ProviderWithControllers()
    c = ctx(provider=decorate(provider))  # reached through the metrics decorator, as in serve
    manager = Manager(c.clock, c.kube)
    reg = register_all(manager, c, packages=[])
    assert reg.registered == (("cloudprovider.fakecloud", ("fakecloud.nodeclass.status",)),)
    assert provider.seen == [c]
    assert [ctl.name for ctl in manager.controllers] == ["fakecloud.nodeclass.status"]


def test_a_provider_whose_controllers_fail_is_reported_and_strict_raises() -> None:
    c = ctx(provider=_ProviderWithControllers(fail=True))
    reg = register_all(Manager(c.clock, c.kube), c, packages=[])
    assert reg.missing == (
        ("cloudprovider.fakecloud", "registering failed: RuntimeError: no credentials"),
    )
    c = ctx(provider=_ProviderWithControllers(fail=True))
    with pytest.raises(RegistrationError, match=r"cloudprovider\.fakecloud"):
        register_all(Manager(c.clock, c.kube), c, packages=[], strict=True)
