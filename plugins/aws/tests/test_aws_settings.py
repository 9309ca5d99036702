"""AWSSettings: typed values from the resolved settings, bad values named."""

from __future__ import annotations

import pytest
from karpenter_aws.settings import AWSSettings, SettingsError


def test_defaults_match_upstream() -> None:
    s = AWSSettings.from_mapping({"cluster-name": "prod"})
    assert s == AWSSettings(cluster_name="prod")
    assert (s.reserved_enis, s.vm_memory_overhead_percent, s.isolated_vpc) == (0, 0.075, False)


def test_values_are_parsed() -> None:
    s = AWSSettings.from_mapping(
        {
            "cluster-name": " prod ",
            "isolated-vpc": "true",
            "reserved-enis": "1",
            "vm-memory-overhead-percent": "0.1",
            "interruption-queue": "prod-q",
        }
    )
    assert (s.cluster_name, s.isolated_vpc, s.reserved_enis) == ("prod", True, 1)
    assert (s.vm_memory_overhead_percent, s.interruption_queue) == (0.1, "prod-q")


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({}, "cluster-name is required"),
        ({"cluster-name": "c", "isolated-vpc": "maybe"}, "isolated-vpc: 'maybe' is not a boolean"),
        ({"cluster-name": "c", "reserved-enis": "two"}, "reserved-enis: 'two' is not an integer"),
        ({"cluster-name": "c", "reserved-enis": "-1"}, "reserved-enis: -1 is below 0"),
        ({"cluster-name": "c", "vm-memory-overhead-percent": "7.5"}, "not a fraction"),
        ({"cluster-name": "c", "vm-memory-overhead-percent": "x"}, "'x' is not a number"),
    ],
)
def test_bad_values_are_named(settings: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        AWSSettings.from_mapping(settings)
