"""The AWS catalogue series as upstream exports them, read back from the real Prometheus
exposition: per-type cpu and memory, per-offering price estimate and availability (the
``cloudprovider.metrics`` singleton), with a broken NodePool costing only its own series."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from karpenter_aws import catalogue
from karpenter_aws import metrics as aws_metrics
from karpenter_aws.controllers import CONTROLLERS
from karpenter_aws.provider import AWSCloudProvider
from karpenter_aws.settings import AWSSettings
from prometheus_client.parser import text_string_to_metric_families

from karpenter_core.plugin_api import InstanceType, VirtualClock, metrics
from karpenter_core.sim.apiserver import InMemoryApiServer

OFFERING_PRICE = "karpenter_cloudprovider_instance_type_offering_price_estimate"
OFFERING_AVAILABLE = "karpenter_cloudprovider_instance_type_offering_available"


@pytest.fixture(autouse=True)
def _fresh_metrics() -> Iterator[None]:
    metrics.reset()
    yield
    metrics.reset()


def _exposed(name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """``name``'s samples as the /metrics endpoint serves them, parsed back."""
    text = metrics.exposition().decode("utf-8")
    out: dict[tuple[tuple[str, str], ...], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                out[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def _key(instance_type: str, capacity_type: str, zone: str) -> tuple[tuple[str, str], ...]:
    return tuple(
        sorted(
            {"instance_type": instance_type, "capacity_type": capacity_type, "zone": zone}.items()
        )
    )


def _nodepool(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "requirements": [],
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "default",
                    },
                }
            }
        },
    }


class _Provider:
    """The offline provider's types for the ``good`` pool; ``broken`` fails."""

    def __init__(self, types: Sequence[InstanceType]) -> None:
        self.types = list(types)

    def get_instance_types(self, nodepool: Any) -> list[InstanceType]:
        if nodepool.name == "broken":
            raise ValueError("spec.kubelet cannot be decoded")
        return self.types


@pytest.fixture
def offline_types() -> list[InstanceType]:
    provider = AWSCloudProvider(
        catalogue.offline_clients("eu-west-1"), AWSSettings(cluster_name="-"), clock=VirtualClock()
    )
    return [it for it in provider.get_instance_types(None) if it.name in ("m5.large", "a1.large")]


def test_building_types_sets_cpu_and_memory_series(offline_types: list[InstanceType]) -> None:
    metrics.reset()
    AWSCloudProvider(
        catalogue.offline_clients("eu-west-1"), AWSSettings(cluster_name="-"), clock=VirtualClock()
    ).get_instance_types(None)
    cpu = _exposed("karpenter_cloudprovider_instance_type_cpu_cores")
    memory = _exposed("karpenter_cloudprovider_instance_type_memory_bytes")
    assert cpu[(("instance_type", "m5.large"),)] == 2
    assert memory[(("instance_type", "m5.large"),)] == 8192 * 1024 * 1024
    assert cpu[(("instance_type", "m5.24xlarge"),)] == 96


def test_offering_series_per_type_capacity_type_and_zone(
    offline_types: list[InstanceType],
) -> None:
    kube = InMemoryApiServer()
    kube.create(_nodepool("good"))
    kube.create(_nodepool("broken"))
    controller = aws_metrics.OfferingMetricsController(
        kube, _Provider(offline_types), reserved_capacity=True
    )
    result = controller.reconcile()
    assert result.requeue  # the broken NodePool is retried...
    price = _exposed(OFFERING_PRICE)  # ...and the good one's series are out anyway
    available = _exposed(OFFERING_AVAILABLE)
    m5 = next(it for it in offline_types if it.name == "m5.large")
    for offering in m5.offerings:
        key = _key("m5.large", offering.capacity_type, offering.zone)
        assert price[key] == pytest.approx(offering.price) and offering.price > 0
        assert available[key] == (1.0 if offering.available else 0.0)
    assert available[_key("m5.large", "on-demand", "eu-west-1a")] == 1.0
    # a1 cannot run the default AL2023: priced, never available
    assert available[_key("a1.large", "on-demand", "eu-west-1a")] == 0.0
    assert price[_key("a1.large", "on-demand", "eu-west-1a")] > 0
    # ReservedCapacity: a reserved dimension per zone, unavailable, priced 0
    assert available[_key("m5.large", "reserved", "eu-west-1b")] == 0.0
    assert price[_key("m5.large", "reserved", "eu-west-1b")] == 0.0


def test_without_the_reserved_capacity_gate_no_reserved_series(
    offline_types: list[InstanceType],
) -> None:
    kube = InMemoryApiServer()
    kube.create(_nodepool("good"))
    controller = aws_metrics.OfferingMetricsController(
        kube, _Provider(offline_types), reserved_capacity=False
    )
    assert controller.reconcile().requeue_after == aws_metrics.INTERVAL
    assert _exposed(OFFERING_AVAILABLE)
    assert not any(dict(k)["capacity_type"] == "reserved" for k in _exposed(OFFERING_AVAILABLE))


def test_the_controller_is_registered_as_upstreams_singleton() -> None:
    [spec] = [c for c in CONTROLLERS if c.name == "cloudprovider.metrics"]
    assert spec.singleton and spec.cloud_provider == "aws"
