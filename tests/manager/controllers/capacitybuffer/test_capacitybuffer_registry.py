"""The operator's registry runs the capacitybuffer package only with its gate on, with a
status-condition metrics controller unless cluster-state observability is off."""

from __future__ import annotations

from karpenter_core.operator.controllers import CONTROLLER_PACKAGES, register_all
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.options import Options
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.testing.builders import START
from karpenter_core.testing.fake import FakeCloudProvider


def registered(env: dict[str, str]) -> tuple[str, ...]:
    clock = VirtualClock(START)
    kube = InMemoryApiServer(clock)
    ctx = ControllerContext(
        kube=kube,
        clock=clock,
        cloud_provider=FakeCloudProvider(),  # type: ignore[arg-type]
        recorder=EventRecorder(clock),
        options=Options.from_env(env),
    )
    packages = [p for p in CONTROLLER_PACKAGES if p.name == "capacitybuffer"]
    reg = register_all(Manager(clock, kube), ctx, packages=packages)
    assert reg.missing == ()
    return reg.controllers


def test_gate_on_registers_the_controller_and_its_status_metrics() -> None:
    assert set(registered({"FEATURE_GATES": "CapacityBuffer=true"})) == {
        "capacitybuffer",
        "operatorpkg.capacitybuffer.status",
    }


def test_observability_off_drops_the_status_metrics() -> None:
    env = {"FEATURE_GATES": "CapacityBuffer=true", "DISABLE_CLUSTER_STATE_OBSERVABILITY": "true"}
    assert registered(env) == ("capacitybuffer",)


def test_gate_off_registers_nothing() -> None:
    assert registered({}) == ()
