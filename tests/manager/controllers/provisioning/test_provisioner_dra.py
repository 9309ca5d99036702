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


# ---------------------------------------------------------------------- pods with claims


class BigTypeGPUs:
    """Two GPUs on fake-it-3 and fake-it-4 (4 and 5 CPUs), none on the smaller types."""

    def __call__(self, it: Any, np: Any) -> Sequence[Mapping[str, Any]]:
        if it.capacity["cpu"] < 4000:
            return []
        return [
            {
                "driver": GPU,
                "pool": {"name": it.name},
                "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}],
            }
        ]


def dra_env(*, ignore_dra_requests: bool = False) -> Environment:
    from karpenter_core.testing import FakeCloudProvider

    plugins = PluginContributions(dra_drivers=(DRADriverSpec(GPU, BigTypeGPUs()),))
    env = Environment(
        FakeCloudProvider(),
        plugins=plugins,
        options=Options(ignore_dra_requests=ignore_dra_requests),
        controllers=["state", "provisioning"],
        kube_scheduler=False,
        kubelet=False,
    )
    env.apply(b.nodepool(ready=True))
    env.apply(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU}"'}}]},
        }
    )
    return env


def gpu_claim(name: str, count: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "devices": {
                "requests": [
                    {"name": "gpus", "exactly": {"deviceClassName": "gpu", "count": count}}
                ]
            }
        },
    }


def gpu_pod(name: str, claim: str) -> dict[str, Any]:
    return pod(
        name,
        spec={
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
            "containers": [
                {
                    "name": "c",
                    "image": "pause",
                    "resources": {"requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]},
                }
            ],
        },
    )


def test_a_gpu_claim_pod_gets_a_nodeclaim_of_a_type_with_gpus() -> None:
    """Upstream dra_test.go "should restrict instance types to those providing the requested
    device (A2)", end to end through the provisioner: the driver's template devices decide,
    and the NodeClaim names the driver for the initialization gate."""
    env = dra_env()
    env.create(gpu_claim("gpu-claim", count=2))
    env.create(gpu_pod("p", "gpu-claim"))
    env.run_for(1.5)
    [nc] = env.nodeclaims()
    [types] = [
        r["values"]
        for r in nc["spec"]["requirements"]
        if r["key"] == "node.kubernetes.io/instance-type"
    ]
    assert sorted(types) == ["fake-it-3", "fake-it-4"]
    assert nc["metadata"]["annotations"]["karpenter.sh/requested-dra-drivers"] == GPU


def test_an_instance_type_without_devices_cannot_take_the_pod() -> None:
    """Issue 11 item 4: a type no driver gives devices cannot take a pod whose claim needs
    that driver; with a claim no type can meet the pod waits, told why."""
    env = dra_env()
    env.create(gpu_claim("gpu-claim", count=3))
    env.create(gpu_pod("p", "gpu-claim"))
    env.run_for(1.5)
    assert env.nodeclaims() == []
    [event] = env.events("FailedScheduling")
    assert 'claim "gpu-claim" request "gpus": no instance type can satisfy' in event.message
    assert "needs 3 device(s), at most 2" in event.message


def test_a_pod_whose_claim_is_missing_waits() -> None:
    """Upstream dra_test.go "should defer a pod whose ResourceClaim does not exist yet (U1)"."""
    env = dra_env()
    env.create(gpu_pod("p", "missing"))
    env.run_for(1.5)
    assert env.nodeclaims() == []
    [event] = env.events("FailedScheduling")
    assert 'resourceclaim "default/missing" not found' in event.message


def test_ignoring_dra_requests_leaves_dra_pods_pending() -> None:
    """Upstream dra_test.go "should reject DRA pods with a DRAError when IgnoreDRARequests is
    enabled (N1)"."""
    env = dra_env(ignore_dra_requests=True)
    env.create(gpu_claim("gpu-claim"))
    env.create(gpu_pod("p", "gpu-claim"))
    env.run_for(1.5)
    assert env.nodeclaims() == []
    [event] = env.events("FailedScheduling")
    assert "Dynamic Resource Allocation requirements" in event.message
