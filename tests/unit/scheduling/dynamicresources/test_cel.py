"""CEL device selectors: Kubernetes' DRA environment on the Rust engine, errors as values."""

from __future__ import annotations

import pytest
from dra_builders import device

from karpenter_core.apis.resource import Device, DeviceAttribute
from karpenter_core.scheduling.dynamicresources.cel import (
    COMPILE,
    RUNTIME,
    CELError,
    compile_selector,
    device_matches,
)

DRIVER = "gpu.example.com"
GPU = Device(
    name="gpu-0",
    attributes={
        "model": DeviceAttribute.of("a100"),
        "index": DeviceAttribute.of(2),
        "mig": DeviceAttribute.of(False),
        "driverVersion": DeviceAttribute.of("1.2.3", version=True),
        "other.example.com/family": DeviceAttribute.of("ampere"),
    },
    capacity=device("x", capacity={"memory": "80Gi"}).capacity,
)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('device.driver == "gpu.example.com"', True),
        ('device.attributes["gpu.example.com"].model == "a100"', True),
        ('device.attributes["gpu.example.com"].index < 4', True),
        ('device.attributes["gpu.example.com"].mig', False),
        ('device.attributes["other.example.com"].family == "ampere"', True),
        ('device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0', True),
        ('device.capacity["gpu.example.com"].memory.isLessThan(quantity("40Gi"))', False),
        ('device.capacity["gpu.example.com"].memory == quantity("81920Mi")', True),
        (
            'device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.2.3-rc.1"))',
            True,
        ),
        ('device.attributes["gpu.example.com"].driverVersion == semver("1.2.3+build.7")', True),
        ('device.attributes["gpu.example.com"].driverVersion.major() == 1', True),
        ('has(device.attributes["gpu.example.com"].model)', True),
        ('has(device.attributes["gpu.example.com"].nope)', False),
        ('has(device.attributes["unknown.example.com"].model)', False),
        ('"model" in device.attributes["unknown.example.com"]', False),
        ('device.attributes["gpu.example.com"].model in ["a100", "h100"]', True),
        ('device.attributes["gpu.example.com"].model.upperAscii().startsWith("A1")', True),
        ('device.attributes["gpu.example.com"].model.matches("^a[0-9]+$")', True),
        (
            'cel.bind(g, device.attributes["gpu.example.com"], g.model == "a100" && g.index == 2)',
            True,
        ),
        ("device.allowMultipleAllocations", False),
        ('isQuantity("1Gi") && !isQuantity("1 Gi")', True),
    ],
)
def test_upstream_environment(expression: str, expected: bool) -> None:
    assert device_matches(expression, DRIVER, GPU) is expected


@pytest.mark.parametrize(
    ("expression", "kind", "says"),
    [
        ("device.driver ==", COMPILE, "Syntax error"),
        ("foo(device)", COMPILE, "undeclared reference to 'foo'"),
        ('device.attributes["gpu.example.com"].missing == 1', RUNTIME, "no such key"),
        ('device.attributes["unknown.example.com"].model == "x"', RUNTIME, "no such key"),
        ('quantity("lots") == quantity("1")', RUNTIME, "quantity()"),
        ('device.attributes["gpu.example.com"].model', RUNTIME, "must evaluate to a boolean"),
    ],
)
def test_errors_are_values_naming_the_expression(expression: str, kind: str, says: str) -> None:
    result = device_matches(expression, DRIVER, GPU)
    assert isinstance(result, CELError)
    assert result.kind == kind and result.expression == expression
    assert says in str(result) and expression in str(result)


def test_compiles_once_per_expression() -> None:
    a = compile_selector('device.driver == "x"')
    assert compile_selector('device.driver == "x"') is a
