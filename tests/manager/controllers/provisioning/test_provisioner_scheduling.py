"""The provisioner's use of the scheduler's structured results and options: the minValues
flag on skipped pools, pending pods by effective zone, and ``SCHEDULER_CONFIG``."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from provisioning_harness import make_env, pod

from karpenter_core import metrics
from karpenter_core.controllers.provisioning import events
from karpenter_core.runtime.options import Options
from karpenter_core.testing import Environment
from karpenter_core.testing import builders as b

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ZONE = "topology.kubernetes.io/zone"

SPREAD = """
podTopologySpread:
  defaultConstraints:
  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}
"""


def no_compatible_messages(env: Environment) -> list[str]:
    return [e.message for e in env.events(events.NO_COMPATIBLE_INSTANCE_TYPES)]


def test_a_pool_skipped_for_min_values_says_so_in_its_event() -> None:
    env = make_env()
    env.apply(
        b.nodepool(
            requirements=[
                {
                    "key": INSTANCE_TYPE,
                    "operator": "In",
                    "values": ["fake-it-0", "fake-it-1", "nope"],
                    "minValues": 3,
                }
            ],
            ready=True,
        )
    )
    env.create(pod("p"))
    env.run_for(1.5)
    assert env.nodeclaims() == []
    [message] = no_compatible_messages(env)
    assert message.endswith("due to minValues incompatibility")


def test_a_pool_skipped_for_other_reasons_does_not_blame_min_values() -> None:
    env = make_env()
    env.apply(
        b.nodepool(
            requirements=[{"key": INSTANCE_TYPE, "operator": "In", "values": ["nope"]}], ready=True
        )
    )
    env.create(pod("p"))
    env.run_for(1.5)
    [message] = no_compatible_messages(env)
    assert "minValues" not in message


def test_pending_pods_are_counted_by_effective_zone() -> None:
    env = make_env()
    env.apply(b.nodepool(ready=True))
    env.create(pod("anywhere"))
    env.create(pod("pinned", node_selector={ZONE: "test-zone-2"}))
    env.create(pod("pinned-too", node_selector={ZONE: "test-zone-2"}))
    env.run_for(1.5)
    by_zone = {
        labels["zone"]: value
        for labels, value in metrics.samples(
            "karpenter_scheduler_pending_pods_by_effective_zone_count"
        )
        if labels["controller"] == "provisioner"
    }
    assert by_zone == {"flexible": 1.0, "test-zone-2": 2.0}


def test_the_provisioners_solve_is_timed_under_its_name() -> None:
    env = make_env()
    env.apply(b.nodepool(ready=True))
    env.create(pod("p"))
    env.run_for(1.5)
    assert (
        metrics.sample(
            "karpenter_scheduler_scheduling_duration_seconds_count", {"controller": "provisioner"}
        )
        == 1.0
    )


def provisioner(env: Environment) -> object:
    assert env.ctx.provisioner is not None
    return env.ctx.provisioner


def test_an_inline_scheduler_config_gives_the_default_spreads() -> None:
    """Upstream's form: SCHEDULER_CONFIG holds the document (the chart's
    settings.schedulerConfig)."""
    env = make_env(options=Options.from_env({"SCHEDULER_CONFIG": SPREAD}))
    options = provisioner(env).scheduler_options()  # type: ignore[attr-defined]
    [constraint] = options.default_spread_constraints()
    assert constraint["topologyKey"] == ZONE


def test_an_at_file_scheduler_config_is_read_and_reread_every_pass(tmp_path: Path) -> None:
    path = tmp_path / "scheduler.yaml"
    path.write_text(SPREAD)
    env = make_env(options=Options(scheduler_config=f"@{path}"))
    options = provisioner(env).scheduler_options()  # type: ignore[attr-defined]
    [constraint] = options.default_spread_constraints()
    assert constraint["topologyKey"] == ZONE
    path.write_text(SPREAD.replace(ZONE, "kubernetes.io/hostname"))
    options = provisioner(env).scheduler_options()  # type: ignore[attr-defined]
    [constraint] = options.default_spread_constraints()
    assert constraint["topologyKey"] == "kubernetes.io/hostname"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "cannot read scheduler config"),
        (SPREAD.replace("maxSkew: 1", "maxSkew: 0"), "maxSkew"),
        ("podTopologySpread: [", "decoding scheduler config"),
    ],
)
def test_a_bad_scheduler_config_is_logged_once_and_provisioning_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, content: str | None, expected: str
) -> None:
    path = tmp_path / "scheduler.yaml"
    if content is not None:
        path.write_text(content)
    env = make_env(options=Options(scheduler_config=f"@{path}"))
    env.apply(b.nodepool(ready=True))
    with caplog.at_level(logging.ERROR, logger="karpenter.provisioner"):
        env.create(pod("a"))
        env.run_for(1.5)
        env.create(pod("b", cpu="100"))  # too big for any type: a second pass, no claim
        env.run_for(1.5)
    assert len(env.nodeclaims()) == 1
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    [line] = [m for m in errors if "scheduler config" in m]
    assert str(path) in line
    assert expected in line
    options = provisioner(env).scheduler_options()  # type: ignore[attr-defined]
    assert options.default_spread_constraints() == ()


def test_the_solve_times_out_after_a_minute_on_the_controller_clock() -> None:
    env = make_env()
    options = provisioner(env).scheduler_options()  # type: ignore[attr-defined]
    assert options.timeout_seconds == 60
    before = options.monotonic()
    env.clock.advance(30)
    # the virtual clock, not the machine's: a simulation sees the minute pass as it runs
    assert options.monotonic() == before + 30
