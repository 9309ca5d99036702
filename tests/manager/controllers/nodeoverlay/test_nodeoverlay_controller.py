"""``nodeoverlay.controller`` on an in-memory API server and a virtual clock: the
``ValidationSucceeded`` verdicts, the store swap, failure isolation between NodePools, the
watches, the decorator installed on the context, and provisioning waiting for evaluation."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from nodeoverlay_harness import (
    CAPACITY_TYPE,
    IT,
    Env,
    FakeProvider,
    by_name,
    catalog,
    nodepool_manifest,
    offering_prices,
    overlay_manifest,
    pod,
    ready,
    req,
)

from karpenter_core.apis.v1 import NodePool
from karpenter_core.cloudprovider import metrics as cp_metrics
from karpenter_core.cloudprovider.errors import UnevaluatedNodePoolError
from karpenter_core.cloudprovider.overlay import OverlayDecorator, install_overlays
from karpenter_core.cloudprovider.types import adjusted_price
from karpenter_core.controllers import nodeoverlay
from karpenter_core.controllers.nodeoverlay.controller import (
    CONFLICT_MESSAGE,
    REQUEUE_SECONDS,
    NodeOverlayController,
)
from karpenter_core.hookspecs import InstanceTypeOverlaySpec
from karpenter_core.operator.controllers import (
    CONTROLLER_PACKAGES,
    ControllerPackage,
    register_all,
)
from karpenter_core.plugins import PluginContributions, builtin_contributions
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.options import Options
from karpenter_core.state.cluster import cluster_of

FUSE = "smarter-devices/fuse"


def install(ctx: Any) -> tuple[nodeoverlay.InstanceTypeStore, Any]:
    """The overlay step on the context: the store, and the provider below NodeOverlays."""
    below = install_overlays(ctx)
    return nodeoverlay.store_of(ctx), below


def with_overlays(env: Env, *specs: InstanceTypeOverlaySpec) -> None:
    """The built-in overlays plus ``specs``, as a plugin manager would collect them."""
    env.ctx.plugins = PluginContributions(
        instance_type_overlays=(*builtin_contributions().instance_type_overlays, *specs)
    )


def served(env: Env, name: str = "default") -> dict[str, Any]:
    """What every other controller gets from the context's provider for the pool."""
    np = NodePool.from_dict(env.kube.get("nodepools", name))
    return by_name(env.ctx.cloud_provider.get_instance_types(np))


def controller(env: Env) -> NodeOverlayController:
    reconciler = env.manager.controller(nodeoverlay.NAME).reconciler
    assert isinstance(reconciler, NodeOverlayController)
    return reconciler


# --- verdicts ---------------------------------------------------------------------------------


def test_a_valid_overlay_is_validation_succeeded_and_ready_and_applied() -> None:
    env = Env()
    env.create(ready(nodepool_manifest()))
    env.create(overlay_manifest("cheap-small", requirements=[req(IT, "In", "small")], price="0.5"))
    env.settle()
    cond = env.overlay_condition("cheap-small")
    assert cond is not None and cond["status"] == "True"
    status = env.kube.get("nodeoverlays", "cheap-small")["status"]
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"
    its = served(env)
    assert set(offering_prices(its["small"]).values()) == {0.5}
    assert offering_prices(its["large"]) == offering_prices(by_name(catalog())["large"])


@pytest.mark.parametrize(
    ("manifest", "in_message"),
    [
        (overlay_manifest("bad", capacity={"cpu": "1"}), "cpu"),
        (overlay_manifest("bad", requirements=[req(IT, "NotIn")]), "NotIn"),
        # the in-memory API server does not run the CRD's pattern; the controller does
        (overlay_manifest("bad", price="cheap"), "spec.price"),
    ],
)
def test_an_invalid_overlay_is_false_with_reason_runtime_validation_and_ignored(
    manifest: dict[str, Any], in_message: str, caplog: pytest.LogCaptureFixture
) -> None:
    env = Env()
    env.create(ready(nodepool_manifest()))
    env.create(manifest)
    env.create(overlay_manifest("fine", price_adjustment="+1"))
    with caplog.at_level(logging.WARNING, "karpenter.nodeoverlay"):
        env.settle()
    cond = env.overlay_condition("bad")
    assert cond is not None
    assert (cond["status"], cond["reason"]) == ("False", "RuntimeValidation")
    assert in_message in cond["message"]
    assert "nodeoverlay bad is invalid" in caplog.text
    fine = env.overlay_condition("fine")
    assert fine is not None and fine["status"] == "True"
    for name, it in served(env).items():
        base = offering_prices(by_name(catalog())[name])
        assert offering_prices(it) == {k: pytest.approx(v + 1) for k, v in base.items()}
        assert FUSE not in it.capacity


def test_a_conflicting_overlay_is_false_with_reason_conflict_and_applied_nowhere() -> None:
    env = Env()
    env.create(ready(nodepool_manifest()))
    env.create(overlay_manifest("b", requirements=[req(IT, "In", "small")], weight=5, price="1"))
    env.create(overlay_manifest("a", weight=5, price="2"))
    env.settle()
    cond = env.overlay_condition("a")
    assert cond is not None
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False",
        "Conflict",
        CONFLICT_MESSAGE,
    )
    winner = env.overlay_condition("b")
    assert winner is not None and winner["status"] == "True"
    its = served(env)
    assert set(offering_prices(its["small"]).values()) == {1.0}
    assert not its["large"].is_pricing_overlay_applied()


def test_fixing_a_conflict_turns_the_verdict_true() -> None:
    env = Env()
    env.create(ready(nodepool_manifest()))
    env.create(overlay_manifest("b", weight=5, price="1"))
    env.create(overlay_manifest("a", weight=5, price="2"))
    env.settle()
    a = env.kube.get("nodeoverlays", "a")
    a["spec"]["weight"] = 6
    env.kube.update(a)
    env.settle()
    cond = env.overlay_condition("a")
    assert cond is not None and cond["status"] == "True"
    assert {p for it in served(env).values() for p in offering_prices(it).values()} == {2.0}


# --- the store and the reconcile result -----------------------------------------------------


def test_a_healthy_reconcile_requeues_after_six_hours() -> None:
    env = Env()
    env.create(ready(nodepool_manifest()))
    result = controller(env).reconcile()
    assert result.requeue_after == REQUEUE_SECONDS == 6 * 3600


def test_the_controller_runs_again_after_six_hours_and_not_before() -> None:
    env = Env()
    env.create(ready(nodepool_manifest()))
    env.settle()
    ctrl = env.manager.controller(nodeoverlay.NAME)
    env.create(overlay_manifest("x", price="1"))
    done = ctrl.reconciles
    env.settle()
    # one reconcile for the new overlay; its own status write does not wake it again
    assert ctrl.reconciles == done + 1
    assert env.overlay_condition("x") is not None
    done = ctrl.reconciles
    env.run_for(6 * 3600 - 60)
    assert ctrl.reconciles == done
    env.run_for(120)
    assert ctrl.reconciles == done + 1


def test_a_nodepool_whose_instance_types_fail_stays_unevaluated_while_others_are_served(
    caplog: pytest.LogCaptureFixture,
) -> None:
    provider = FakeProvider()
    provider.fail_for.add("broken")
    env = Env(provider=provider)
    env.create(ready(nodepool_manifest("default")))
    env.create(ready(nodepool_manifest("broken")))
    env.create(overlay_manifest("all", price="3"))
    with caplog.at_level(logging.WARNING, "karpenter.nodeoverlay"):
        result = controller(env).reconcile()
    assert result.requeue and result.requeue_after == 0
    assert "broken" in caplog.text and "KWOKNodeClass not found" in caplog.text
    assert {p for it in served(env).values() for p in offering_prices(it).values()} == {3.0}
    with pytest.raises(UnevaluatedNodePoolError):
        env.store.apply_all("broken", catalog())
    # transient failure resolved: the next reconcile serves both
    provider.fail_for.clear()
    assert controller(env).reconcile().requeue_after == REQUEUE_SECONDS
    assert {p for it in served(env, "broken").values() for p in offering_prices(it).values()} == {
        3.0
    }


def test_an_evaluation_marks_cluster_state_unconsolidated() -> None:
    env = Env()
    env.create(ready(nodepool_manifest()))
    env.settle()
    cluster = cluster_of(env.ctx)
    env.clock.advance(90)
    assert cluster.consolidation_state() < env.clock.now()
    controller(env).reconcile()
    assert cluster.consolidation_state() == env.clock.now()


def test_a_status_write_conflict_reevaluates_before_storing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from karpenter_core.kube.client import Conflict

    env = Env(with_nodeoverlay=False)
    store, undecorated = install(env.ctx)
    env.create(ready(nodepool_manifest()))
    env.create(overlay_manifest("x", price="1"))

    def conflict(*args: Any, **kwargs: Any) -> Any:
        raise Conflict("the object has been modified")

    monkeypatch.setattr(env.kube, "patch", conflict)
    result = NodeOverlayController(env.ctx, undecorated, store).reconcile()
    assert result.requeue
    assert not store.is_evaluated("default")


# --- watches --------------------------------------------------------------------------------


def test_a_nodepool_created_later_is_evaluated_by_the_watch() -> None:
    env = Env()
    env.create(ready(nodepool_manifest("first")))
    env.settle()
    env.create(ready(nodepool_manifest("second")))
    env.settle()
    assert env.store.is_evaluated("second")


def test_an_overlay_changed_later_is_reevaluated_by_the_watch() -> None:
    env = Env()
    env.create(ready(nodepool_manifest()))
    env.create(overlay_manifest("x", price="1"))
    env.settle()
    x = env.kube.get("nodeoverlays", "x")
    x["spec"]["price"] = "2"
    env.kube.update(x)
    env.settle()
    assert {p for it in served(env).values() for p in offering_prices(it).values()} == {2.0}


def test_a_deleted_overlay_stops_applying() -> None:
    env = Env()
    env.create(ready(nodepool_manifest()))
    env.create(overlay_manifest("x", capacity={FUSE: "1"}))
    env.settle()
    assert all(FUSE in it.capacity for it in served(env).values())
    env.kube.delete("nodeoverlays", "x")
    env.settle()
    assert not any(FUSE in it.capacity for it in served(env).values())


# --- wiring -----------------------------------------------------------------------------------


def test_register_decorates_the_context_provider_as_metrics_over_overlay() -> None:
    env = Env(with_nodeoverlay=False)
    env.ctx.cloud_provider = cp_metrics.decorate(env.provider)  # type: ignore[arg-type]
    store, undecorated = install(env.ctx)
    decorated = env.ctx.cloud_provider
    assert isinstance(decorated, cp_metrics.MetricsDecorator)
    assert isinstance(decorated.inner, OverlayDecorator)
    assert decorated.inner.inner is env.provider
    assert [o.name for o in decorated.inner.overlays] == ["nodeoverlay"]
    # the controller reads the provider as it was, without the NodeOverlay step
    assert isinstance(undecorated, cp_metrics.MetricsDecorator)
    assert undecorated.inner is env.provider
    # installing again changes nothing
    assert install(env.ctx) == (store, undecorated)
    assert env.ctx.cloud_provider is decorated


def test_with_the_gate_off_the_package_is_not_registered_and_overlays_have_no_effect() -> None:
    env = Env(with_nodeoverlay=False)
    env.ctx.options = Options()
    assert not env.ctx.options.gate("NodeOverlay")
    provider = env.ctx.cloud_provider
    manager = Manager(env.clock, env.kube)
    pkgs = [p for p in CONTROLLER_PACKAGES if p.name == "nodeoverlay"]
    reg = register_all(manager, env.ctx, packages=pkgs)
    assert reg.skipped == (("nodeoverlay", "feature gate NodeOverlay is off"),)
    assert env.ctx.cloud_provider is provider
    env.create(ready(nodepool_manifest()))
    env.create(overlay_manifest("x", price="1"))
    env.settle()
    assert env.overlay_condition("x") is None
    for name, it in served(env).items():
        assert offering_prices(it) == offering_prices(by_name(catalog())[name])


def test_with_the_gate_on_register_all_registers_the_controller() -> None:
    env = Env(with_nodeoverlay=False)
    manager = Manager(env.clock, env.kube)
    pkgs = [p for p in CONTROLLER_PACKAGES if p.name == "nodeoverlay"]
    reg = register_all(manager, env.ctx, packages=pkgs)
    assert reg.registered == (("nodeoverlay", (nodeoverlay.NAME,)),)
    assert isinstance(env.ctx.cloud_provider, OverlayDecorator)


def test_plugin_overlays_apply_beneath_nodeoverlays() -> None:
    def double(np: Any, its: Any) -> list[Any]:
        return [
            it.with_offerings(o.with_price_overlay("+100%") for o in it.offerings) for it in its
        ]

    env = Env(with_nodeoverlay=False)
    with_overlays(env, InstanceTypeOverlaySpec("double", 0, double))
    nodeoverlay.register(env.manager, env.ctx)
    env.create(ready(nodepool_manifest()))
    env.create(overlay_manifest("plus-one", price_adjustment="+1"))
    env.settle()
    for name, it in served(env).items():
        base = offering_prices(by_name(catalog())[name])
        # doubled by the plugin first, then +1 by the NodeOverlay: 2p + 1, not 2(p + 1)
        assert offering_prices(it) == {k: pytest.approx(2 * v + 1) for k, v in base.items()}


def _double(np: Any, its: Any) -> list[Any]:
    return [it.with_offerings(o.with_price_overlay("+100%") for o in it.offerings) for it in its]


def test_with_the_gate_off_register_all_still_applies_plugin_overlays() -> None:
    env = Env(with_nodeoverlay=False)
    env.ctx.options = Options()
    with_overlays(env, InstanceTypeOverlaySpec("double", 0, _double))
    register_all(Manager(env.clock, env.kube), env.ctx, packages=[])
    env.create(ready(nodepool_manifest()))
    for name, it in served(env).items():
        base = offering_prices(by_name(catalog())[name])
        assert offering_prices(it) == {k: pytest.approx(2 * v) for k, v in base.items()}


def test_register_all_installs_the_overlay_step_before_any_package_captures_the_provider() -> None:
    env = Env(with_nodeoverlay=False)
    seen: list[Any] = []
    pkgs = [ControllerPackage("captures", lambda manager, ctx: seen.append(ctx.cloud_provider), ())]
    register_all(Manager(env.clock, env.kube), env.ctx, packages=pkgs)
    # a package registered before nodeoverlay's (disruption is) already sees the step
    assert isinstance(seen[0], OverlayDecorator) or isinstance(
        getattr(seen[0], "inner", None), OverlayDecorator
    )


def test_a_failing_plugin_overlay_is_skipped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(np: Any, its: Any) -> list[Any]:
        raise KeyError("price table")

    env = Env(with_nodeoverlay=False)
    with_overlays(env, InstanceTypeOverlaySpec("broken", 0, broken))
    nodeoverlay.register(env.manager, env.ctx)
    env.create(ready(nodepool_manifest()))
    with caplog.at_level(logging.WARNING, "karpenter.cloudprovider"):
        env.settle()
        its = served(env)
    assert "instance type overlay broken failed for nodepool default" in caplog.text
    assert set(its) == {"small", "large"}


# --- provisioning waits for the evaluation ----------------------------------------------------


def test_the_provisioner_skips_a_nodepool_until_it_is_evaluated() -> None:
    env = Env(with_provisioning=True, with_nodeoverlay=False)
    store, undecorated = install(env.ctx)  # the step is there, the controller not
    env.create(ready(nodepool_manifest()))
    env.create(pod("p1", cpu="1"))
    env.run_for(60)
    assert env.nodeclaims() == []
    assert not store.is_evaluated("default")
    NodeOverlayController(env.ctx, undecorated, store).reconcile()
    env.run_for(60)
    assert len(env.nodeclaims()) == 1


def test_the_provisioner_launches_with_overlaid_capacity() -> None:
    env = Env(with_provisioning=True)
    env.create(ready(nodepool_manifest()))
    env.create(
        overlay_manifest(
            "fuse-on-large",
            requirements=[req(IT, "In", "large"), req(CAPACITY_TYPE, "In", "on-demand")],
            capacity={FUSE: "1"},
        )
    )
    p = pod("needs-fuse")
    p["spec"]["containers"][0]["resources"]["requests"][FUSE] = "1"
    env.create(p)
    env.run_for(60)
    (nc,) = env.nodeclaims()
    types = next(
        r["values"] for r in nc["spec"]["requirements"] if r["key"] == IT and r["operator"] == "In"
    )
    assert types == ["large"]


def test_adjusted_price_is_what_the_decorator_serves() -> None:
    env = Env()
    env.create(ready(nodepool_manifest()))
    env.create(overlay_manifest("pct", price_adjustment="-25%"))
    env.settle()
    for name, it in served(env).items():
        base = offering_prices(by_name(catalog())[name])
        assert offering_prices(it) == {
            k: pytest.approx(adjusted_price(v, "-25%")) for k, v in base.items()
        }
