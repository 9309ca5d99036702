"""Which offering a NodeClaim launches as (upstream's allocation strategy): the cheapest
available, compatible offering of a type that fits; spot first at equal price; an error
naming what was asked for when nothing is left."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from karpenter_azure import labels as az_labels
from karpenter_azure.allocation import select
from karpenter_azure.provider import AzureCloudProvider
from karpenter_azure.settings import AzureSettings

from karpenter_core.apis import labels as wk
from karpenter_core.cloudprovider.errors import InsufficientCapacityError
from karpenter_core.scheduling.requirements import Requirements

REGION = "southcentralus"


@pytest.fixture(autouse=True)
def _azure_labels() -> Iterator[None]:
    """The Azure well-known labels, as selecting the provider registers them."""
    saved = set(wk.WELL_KNOWN_LABELS)
    wk.WELL_KNOWN_LABELS.update(az_labels.WELL_KNOWN_LABELS)
    yield
    wk.WELL_KNOWN_LABELS.clear()
    wk.WELL_KNOWN_LABELS.update(saved)


def _types() -> list:  # type: ignore[type-arg]
    provider = AzureCloudProvider(AzureSettings.from_mapping({"region": REGION}))
    return provider.get_instance_types(None)


def _reqs(**values: list[str]) -> Requirements:
    keys = {
        "types": wk.LABEL_INSTANCE_TYPE,
        "zones": wk.LABEL_TOPOLOGY_ZONE,
        "capacity": wk.CAPACITY_TYPE_LABEL_KEY,
    }
    return Requirements.from_node_selector_requirements(
        [{"key": keys[k], "operator": "In", "values": v} for k, v in values.items()]
    )


def test_the_cheapest_fitting_type_wins() -> None:
    types = _types()
    allowed = ["Standard_D4s_v3", "Standard_D2s_v3", "Standard_D64s_v3"]
    sel = select(types, _reqs(types=allowed, capacity=["on-demand"]), {"cpu": 1000})
    assert sel.instance_type.name == "Standard_D2s_v3"
    assert sel.capacity_type == "on-demand"
    # a request too big for the 2-vCPU type moves to the next cheapest
    sel = select(types, _reqs(types=allowed, capacity=["on-demand"]), {"cpu": 3000})
    assert sel.instance_type.name == "Standard_D4s_v3"


def test_at_equal_price_spot_and_a_zone_come_first() -> None:
    # the bundled snapshot has no spot prices: spot is priced as on-demand, so the tie
    # is broken by capacity type (spot) and then placement (a zone before regional "0")
    sel = select(_types(), _reqs(types=["Standard_D2s_v3"]), {}, random.Random(1))
    assert sel.capacity_type == "spot"
    assert sel.zone.startswith(f"{REGION}-")


def test_regional_placement_never_wins_a_tie_with_a_zone() -> None:
    # zone "0" is the regional placement (upstream's label): at equal price and capacity
    # type a real zone is always chosen, whatever the random draw
    for seed in range(40):
        sel = select(_types(), _reqs(types=["Standard_D2s_v3"]), {}, random.Random(seed))
        assert sel.zone != "0"
    # with only the regional placement allowed, it is taken
    only = select(_types(), _reqs(types=["Standard_D2s_v3"], zones=["0"]), {})
    assert only.zone == "0"


def test_zones_of_equal_rank_are_chosen_at_random() -> None:
    zones = {
        select(_types(), _reqs(types=["Standard_D2s_v3"]), {}, random.Random(seed)).zone
        for seed in range(30)
    }
    assert len(zones) > 1


def test_nothing_available_names_the_request() -> None:
    with pytest.raises(InsufficientCapacityError) as e:
        select(_types(), _reqs(types=["Standard_D2s_v3"], zones=["nowhere-9"]), {})
    assert "Standard_D2s_v3" in str(e.value) and "nowhere-9" in str(e.value)


def test_a_launch_preference_picks_the_best_ranked_type_at_its_cheapest_offering() -> None:
    types = _types()
    allowed = ["Standard_D4s_v3", "Standard_D2s_v3", "Standard_D64s_v3"]
    reqs = _reqs(types=allowed, capacity=["on-demand"])
    preference = {"Standard_D4s_v3": 0, "Standard_D2s_v3": 1}
    sel = select(types, reqs, {"cpu": 1000}, preference=preference)
    assert sel.instance_type.name == "Standard_D4s_v3"
    # a preferred type too small for the requests is passed over for the next one
    sel = select(types, reqs, {"cpu": 5000}, preference={"Standard_D2s_v3": 0})
    assert sel.instance_type.name == "Standard_D64s_v3"
