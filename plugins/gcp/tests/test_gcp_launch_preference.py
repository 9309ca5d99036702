"""GCP's offering choice honours a NodeClaim's launch preference (an instance-type
scorer's order) and is the cheapest offering without one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from karpenter_gcp.provider import select

from karpenter_core.scheduling.requirements import Requirements
from karpenter_core.testing.fakecatalog import default_offerings, instance_type, registered_labels


@pytest.fixture(autouse=True)
def _labels() -> Iterator[None]:
    with registered_labels():
        yield


def test_cheapest_without_a_preference_and_best_ranked_with_one() -> None:
    types = [
        instance_type("e2-standard-2", cpu=2, offerings=default_offerings(0.07)),
        instance_type("n2-standard-2", cpu=2, offerings=default_offerings(0.10)),
        instance_type("e2-standard-4", cpu=4, offerings=default_offerings(0.13)),
    ]
    it, _ = select(types, Requirements(), {"cpu": 1000})
    assert it.name == "e2-standard-2"
    it, offering = select(types, Requirements(), {"cpu": 1000}, preference={"n2-standard-2": 0})
    assert (it.name, offering.price) == ("n2-standard-2", 0.10)
    # the preferred type is too small: the rest by price
    it, _ = select(types, Requirements(), {"cpu": 3000}, preference={"n2-standard-2": 0})
    assert it.name == "e2-standard-4"
