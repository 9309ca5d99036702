"""Template devices from DRA drivers (``DRADriverSpec.describe_devices``) attached to
instance types: asked once per NodePool version and instance type, parsed into the
allocator's ``ResourceSliceTemplate``, a broken driver logged once and treated as none."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import pytest

from karpenter_core.apis.resource import Device
from karpenter_core.apis.v1 import NodePool
from karpenter_core.cloudprovider.dynamicresources import (
    DeviceTemplates,
    DriverError,
    dynamic_resources_of,
    parse_template,
    template_drivers,
    templates_of,
)
from karpenter_core.cloudprovider.types import InstanceType
from karpenter_core.hookspecs import DRADriverSpec
from karpenter_core.scheduling.dynamicresources import DynamicResources, ResourceSliceTemplate
from karpenter_core.testing import builders as b
from karpenter_core.testing.fakecatalog import instance_type

GPU = "gpu.example.com"


def nodepool(name: str = "default", generation: int = 1) -> NodePool:
    raw = b.nodepool(name)
    raw["metadata"].update(uid=f"uid-{name}", generation=generation)
    return NodePool.from_dict(raw, defaults=True)


class GPUDriver:
    """Two GPUs on types with 8 CPUs or more, none below; counts its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def __call__(self, it: InstanceType, np: NodePool) -> Sequence[Mapping[str, Any]]:
        self.calls.append((it.name, np.name))
        if it.capacity["cpu"] < 8000:
            return []
        return [
            {
                "driver": GPU,
                "pool": {"name": it.name},
                "devices": [
                    {"name": f"gpu-{i}", "attributes": {"model": {"string": "a100"}}}
                    for i in range(2)
                ],
            }
        ]


def spec(fn: Any, name: str = GPU) -> DRADriverSpec:
    return DRADriverSpec(name=name, describe_devices=fn)


def test_a_drivers_devices_become_templates_of_the_instance_type() -> None:
    driver = GPUDriver()
    big, small = instance_type("big", cpu=8), instance_type("small", cpu=2)
    out = DeviceTemplates([spec(driver)]).attach(nodepool(), [big, small])
    [t] = templates_of(out[0])
    assert (t.driver, t.pool) == (GPU, "big")
    assert [d.name for d in t.devices] == ["gpu-0", "gpu-1"]
    assert t.devices[0].attributes["model"].value == "a100"
    assert template_drivers(out[0]) == {GPU}
    assert driver.calls == [("big", "default"), ("small", "default")]


def test_an_instance_type_without_devices_is_returned_unchanged() -> None:
    small = instance_type("small", cpu=2)
    [out] = DeviceTemplates([spec(GPUDriver())]).attach(nodepool(), [small])
    assert out is small
    assert templates_of(out) == ()


def test_without_drivers_nothing_changes() -> None:
    its = [instance_type("big", cpu=8)]
    out = DeviceTemplates([]).attach(nodepool(), its)
    assert out[0] is its[0]


def test_answers_are_cached_per_nodepool_version_and_instance_type() -> None:
    driver = GPUDriver()
    templates = DeviceTemplates([spec(driver)])
    big = instance_type("big", cpu=8)
    first = templates.attach(nodepool(), [big])
    again = templates.attach(nodepool(), [big])
    assert again[0] is first[0], "the same attached object, so per-type caches keep working"
    assert driver.calls == [("big", "default")]
    templates.attach(nodepool(generation=2), [big])
    assert len(driver.calls) == 2, "a new NodePool generation asks again"


def test_a_new_instance_type_object_with_the_same_shape_is_not_asked_again() -> None:
    driver = GPUDriver()
    templates = DeviceTemplates([spec(driver)])
    templates.attach(nodepool(), [instance_type("big", cpu=8)])
    [out] = templates.attach(nodepool(), [instance_type("big", cpu=8)])
    assert templates_of(out), "still attached"
    assert len(driver.calls) == 1
    templates.attach(nodepool(), [instance_type("big", cpu=16)])
    assert len(driver.calls) == 2, "a changed capacity asks again"


def test_the_providers_own_templates_are_kept() -> None:
    own = ResourceSliceTemplate("nic.example.com", "nics", (Device(name="nic-0"),))
    big = attrs.evolve(
        instance_type("big", cpu=8),
        dynamic_resources=DynamicResources(resource_slice_templates=(own,)),
    )
    [out] = DeviceTemplates([spec(GPUDriver())]).attach(nodepool(), [big])
    assert [t.driver for t in templates_of(out)] == ["nic.example.com", GPU]
    assert dynamic_resources_of(big).resource_slice_templates == (own,)


def test_every_driver_is_asked() -> None:
    def nics(it: InstanceType, np: NodePool) -> list[dict[str, Any]]:
        return [{"pool": {"name": "nics"}, "devices": [{"name": "nic-0"}]}]

    [out] = DeviceTemplates([spec(GPUDriver()), spec(nics, "nic.example.com")]).attach(
        nodepool(), [instance_type("big", cpu=8)]
    )
    assert template_drivers(out) == {GPU, "nic.example.com"}
    assert templates_of(out)[1].driver == "nic.example.com", "driver defaults to the spec's"


def test_a_driver_that_raises_is_logged_once_and_gives_no_devices(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(it: InstanceType, np: NodePool) -> list[dict[str, Any]]:
        raise RuntimeError("catalogue unavailable")

    # The second driver answers for another driver's name: an error too.
    templates = DeviceTemplates([spec(broken), spec(GPUDriver(), "other.example.com")])
    with caplog.at_level(logging.ERROR, logger="karpenter.dra"):
        out = templates.attach(nodepool(), [instance_type("a", cpu=8), instance_type("b", cpu=8)])
    assert [templates_of(it) for it in out] == [(), ()]
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2, messages  # once per driver, not once per instance type
    assert "RuntimeError: catalogue unavailable" in messages[0]
    assert "is not this driver ('other.example.com')" in messages[1]


def test_an_answer_that_is_not_a_list_of_slices_is_an_error_naming_the_field(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def bad(it: InstanceType, np: NodePool) -> Any:
        return [{"driver": GPU, "pool": {"name": "p"}, "devices": [{"name": "g", "capacity": 3}]}]

    with caplog.at_level(logging.ERROR, logger="karpenter.dra"):
        [out] = DeviceTemplates([spec(bad)]).attach(nodepool(), [instance_type("a")])
    assert templates_of(out) == ()
    [record] = caplog.records
    assert "[0].devices[0].capacity" in record.getMessage()
    assert "instance type a" in record.getMessage()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"driver": "other", "pool": {"name": "p"}}, "not this driver"),
        ({"devices": [{"name": "a"}]}, "pool.name: required"),
        ({"pool": {"name": "p"}, "devices": [{"name": "a"}, {"name": "a"}]}, "duplicate"),
        ({"pool": {"name": "p"}, "devices": [{}]}, "devices[0].name: required"),
        ("slice", "expected a ResourceSlice spec"),
    ],
)
def test_parse_template_rejects(raw: Any, message: str) -> None:
    with pytest.raises(DriverError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_template(GPU, raw, "[0]")


def test_parse_template_reads_a_whole_resource_slice_and_ignores_node_selection() -> None:
    t = parse_template(
        GPU,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "spec": {
                "driver": GPU,
                "nodeName": "ignored",
                "pool": {"name": "p", "generation": 3, "resourceSliceCount": 1},
                "devices": [{"name": "g0"}],
                "sharedCounters": [{"name": "mem", "counters": {"memory": {"value": "80Gi"}}}],
            },
        },
    )
    assert (t.driver, t.pool, [d.name for d in t.devices]) == (GPU, "p", ["g0"])
    assert [c.name for c in t.shared_counters] == ["mem"]
