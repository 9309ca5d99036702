"""The provisioner and DRA (issue 11): the installed drivers' ``describe_devices`` supply the
template devices of the instance types it schedules against, only while DRA requests are
simulated (``IGNORE_DRA_REQUESTS=false``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from provisioning_harness import make_env, pod

from karpenter_core.cloudprovider.dynamicresources import templates_of
from karpenter_core.hookspecs import DRADriverSpec
from karpenter_core.plugins import PluginContributions
from karpenter_core.runtime.options import Options
from karpenter_core.testing import Environment
from karpenter_core.testing import builders as b

GPU = "gpu.example.com"


class CountingDriver:
    """One GPU per instance type, recording who asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def __call__(self, it: Any, np: Any) -> Sequence[Mapping[str, Any]]:
        self.calls.append((it.name, np.name))
        return [{"driver": GPU, "pool": {"name": it.name}, "devices": [{"name": "gpu-0"}]}]


def env_with(driver: CountingDriver, *, ignore_dra_requests: bool) -> Environment:
    from karpenter_core.testing import FakeCloudProvider

    plugins = PluginContributions(dra_drivers=(DRADriverSpec(GPU, driver),))
    env = Environment(
        FakeCloudProvider(),
        plugins=plugins,
        options=Options(ignore_dra_requests=ignore_dra_requests),
        controllers=["state", "provisioning"],
        kube_scheduler=False,
        kubelet=False,
    )
    env.apply(b.nodepool(ready=True))
    return env


def test_the_provisioner_asks_every_driver_for_template_devices() -> None:
    driver = CountingDriver()
    env = env_with(driver, ignore_dra_requests=False)
    env.create(pod("p"))
    env.run_for(1.5)
    assert len(env.nodeclaims()) == 1
    provider_types = {it.name for it in env.provider.get_instance_types(None)}
    assert {name for name, _ in driver.calls} == provider_types
    assert {np for _, np in driver.calls} == {"default"}
    [np] = env.ctx.provisioner.dynamic_nodepools()
    for it in env.ctx.provisioner.instance_types([np])["default"]:
        assert [t.driver for t in templates_of(it)] == [GPU]


def test_drivers_are_not_asked_while_dra_requests_are_ignored() -> None:
    driver = CountingDriver()
    env = env_with(driver, ignore_dra_requests=True)
    env.create(pod("p"))
    env.run_for(1.5)
    assert len(env.nodeclaims()) == 1
    assert driver.calls == []


def test_a_second_pass_asks_no_driver_again() -> None:
    driver = CountingDriver()
    env = env_with(driver, ignore_dra_requests=False)
    env.create(pod("a"))
    env.run_for(1.5)
    first = len(driver.calls)
    env.create(pod("b", cpu="100"))  # fits nowhere: another pass over the same types
    env.run_for(1.5)
    assert first > 0
    assert len(driver.calls) == first


def test_make_env_still_runs_without_drivers() -> None:
    env = make_env(options=Options(ignore_dra_requests=False))
    env.apply(b.nodepool(ready=True))
    env.create(pod("p"))
    env.run_for(1.5)
    assert len(env.nodeclaims()) == 1
