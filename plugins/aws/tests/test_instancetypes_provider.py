"""InstanceTypeProvider: zones from the NodeClass's subnets, offerings (price, ICE,
compatibility), caching, and the catalogue's refresh, over moto's catalogue."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import boto3
import pytest
from botocore.stub import Stubber
from karpenter_aws import labels as aws_labels
from karpenter_aws.clients import AWSClients
from karpenter_aws.instancetypes import (
    CATALOGUE_TTL,
    DISCOVERED_CAPACITY_TTL,
    Catalogue,
    CatalogueError,
    InstanceTypeError,
    InstanceTypeProvider,
    describe_catalogue,
)
from karpenter_aws.nodeclass import AMIStatus, EC2NodeClass, KubeletConfiguration, SubnetStatus
from karpenter_aws.pricing import PricingProvider
from karpenter_aws.settings import AWSSettings

from karpenter_core.apis import labels as core_labels
from karpenter_core.cloudprovider.types import InstanceType, Offering
from karpenter_core.cloudprovider.unavailable import UNAVAILABLE_OFFERINGS_TTL, UnavailableOfferings
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.scheduling.requirements import IN, Requirement, Requirements

REGION = "us-west-2"
PRICES = {"m5.large": 0.096, "m5.xlarge": 0.192, "c6g.large": 0.068, "a1.large": 0.051}

NODECLASS = EC2NodeClass(
    name="default",
    ami_family="AL2023",
    subnets=(
        SubnetStatus(id="subnet-a1", zone="us-west-2a", zone_id="usw2-az2"),
        SubnetStatus(id="subnet-a2", zone="us-west-2a", zone_id="usw2-az2"),
        SubnetStatus(id="subnet-b1", zone="us-west-2b", zone_id="usw2-az1"),
    ),
)


@pytest.fixture(scope="module")
def aws(moto_endpoint: str) -> AWSClients:
    """Module-wide clients: these tests only read moto or answer through a Stubber."""
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )
    return AWSClients.create(REGION, endpoint_url=moto_endpoint, session=session)


# A slice of moto's catalogue: building all 1,300+ types for every test would cost
# half a second each; the full catalogue is exercised by test_catalogue_is_read_lazily...
SUBSET = (
    "m5.large",
    "m5.xlarge",
    "m5.2xlarge",
    "c6g.large",
    "a1.large",
    "g4dn.xlarge",
    "hpc7g.16xlarge",
    "t3.micro",
)


@pytest.fixture(scope="module")
def catalogue(aws: AWSClients) -> Iterator[Catalogue]:
    yield describe_catalogue(aws, instance_types=SUBSET)


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def settings(tmp_path: Path) -> AWSSettings:
    path = tmp_path / "prices.json"
    path.write_text(__import__("json").dumps(PRICES))
    return AWSSettings(cluster_name="test", price_list_file=str(path))


@pytest.fixture
def ice(clock: VirtualClock) -> UnavailableOfferings:
    return UnavailableOfferings(clock)


@pytest.fixture
def pricing(aws: AWSClients, settings: AWSSettings, clock: VirtualClock) -> PricingProvider:
    return PricingProvider(aws, settings, clock, bundled=False)


@pytest.fixture
def provider(
    aws: AWSClients,
    settings: AWSSettings,
    pricing: PricingProvider,
    ice: UnavailableOfferings,
    clock: VirtualClock,
    catalogue: Catalogue,
) -> InstanceTypeProvider:
    return InstanceTypeProvider(aws, settings, pricing, ice, clock, catalogue=catalogue)


def by_name(types: list[InstanceType]) -> dict[str, InstanceType]:
    return {it.name: it for it in types}


def offering(it: InstanceType, zone: str, capacity_type: str) -> Offering:
    [found] = [o for o in it.offerings if o.zone == zone and o.capacity_type == capacity_type]
    return found


def available(it: InstanceType) -> set[tuple[str, str]]:
    return {(o.zone, o.capacity_type) for o in it.offerings if o.available}


# --- zones and offerings ----------------------------------------------------------------------


def test_lists_every_catalogue_type_with_nodeclass_zones(
    provider: InstanceTypeProvider, catalogue: Catalogue
) -> None:
    types = by_name(provider.list(NODECLASS))
    assert set(types) == set(catalogue.infos) == set(SUBSET)
    m5 = types["m5.large"]
    assert m5.requirements.get(core_labels.LABEL_TOPOLOGY_ZONE).values == {
        "us-west-2a",
        "us-west-2b",
    }
    assert m5.requirements.get(aws_labels.LABEL_TOPOLOGY_ZONE_ID).values == {"usw2-az2", "usw2-az1"}
    assert m5.capacity["pods"] == 29_000  # built with the NodeClass's family (AL2023)


def test_offerings_cover_every_zone_but_only_nodeclass_zones_are_available(
    provider: InstanceTypeProvider,
) -> None:
    m5 = by_name(provider.list(NODECLASS))["m5.large"]
    zones = {"us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"}
    assert {(o.zone, o.capacity_type) for o in m5.offerings} == {
        (z, ct) for z in zones for ct in ("on-demand", "spot")
    }
    assert available(m5) == {
        (z, ct) for z in ("us-west-2a", "us-west-2b") for ct in ("on-demand", "spot")
    }
    od = offering(m5, "us-west-2a", "on-demand")
    assert od.price == pytest.approx(0.096)
    assert od.requirements.get(aws_labels.LABEL_TOPOLOGY_ZONE_ID).values == {"usw2-az2"}
    reservation = od.requirements.get(aws_labels.LABEL_CAPACITY_RESERVATION_ID)
    assert not reservation.complement and not reservation.values  # DoesNotExist
    # outside the NodeClass's zones: no zone id, not available
    assert not offering(m5, "us-west-2c", "spot").requirements.has(
        aws_labels.LABEL_TOPOLOGY_ZONE_ID
    )


def test_types_without_a_price_are_unavailable_and_the_log_says_so_once(
    provider: InstanceTypeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="karpenter.aws.instancetypes"):
        types = by_name(provider.list(NODECLASS))
    assert available(types["m5.2xlarge"]) == set()  # not in the price list
    [on_demand] = [r.getMessage() for r in caplog.records if "no on-demand price" in r.getMessage()]
    assert "m5.2xlarge" in on_demand and "m5.large" not in on_demand
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="karpenter.aws.instancetypes"):
        provider.list(attrs.evolve(NODECLASS, kubelet=KubeletConfiguration(max_pods=50)))
    assert "price" not in caplog.text


def test_spot_prices_per_zone_after_the_spot_refresh(
    provider: InstanceTypeProvider, pricing: PricingProvider, aws: AWSClients, clock: VirtualClock
) -> None:
    before = by_name(provider.list(NODECLASS))["m5.large"]
    assert offering(before, "us-west-2b", "spot").price == pytest.approx(0.096)  # = on-demand
    row: dict[str, Any] = {
        "AvailabilityZone": "us-west-2a",
        "InstanceType": "m5.large",
        "ProductDescription": "Linux/UNIX",
        "SpotPrice": "0.031",
        "Timestamp": datetime(2026, 1, 1, tzinfo=UTC),
    }
    with Stubber(aws.ec2) as stub:
        stub.add_response("describe_spot_price_history", {"SpotPriceHistory": [row]})
        pricing.refresh_spot()
    after = by_name(provider.list(NODECLASS))["m5.large"]
    assert offering(after, "us-west-2a", "spot").price == pytest.approx(0.031)
    assert offering(after, "us-west-2a", "spot").available
    assert not offering(after, "us-west-2b", "spot").available  # no spot price in that zone
    assert offering(after, "us-west-2b", "on-demand").available


# --- ICE -----------------------------------------------------------------------------------


def test_ice_mark_makes_one_offering_unavailable_until_it_expires(
    provider: InstanceTypeProvider, ice: UnavailableOfferings, clock: VirtualClock
) -> None:
    assert offering(by_name(provider.list(NODECLASS))["m5.large"], "us-west-2a", "spot").available
    ice.mark("m5.large", "us-west-2a", "spot", "InsufficientInstanceCapacity")
    m5 = by_name(provider.list(NODECLASS))["m5.large"]
    assert not offering(m5, "us-west-2a", "spot").available
    assert offering(m5, "us-west-2a", "on-demand").available
    assert offering(m5, "us-west-2b", "spot").available
    clock.advance(UNAVAILABLE_OFFERINGS_TTL)
    assert offering(by_name(provider.list(NODECLASS))["m5.large"], "us-west-2a", "spot").available


def test_capacity_type_mark_turns_off_every_spot_offering(
    provider: InstanceTypeProvider, ice: UnavailableOfferings
) -> None:
    ice.mark_capacity_type("spot")
    types = provider.list(NODECLASS)
    assert all(not o.available for it in types for o in it.offerings if o.capacity_type == "spot")
    assert offering(by_name(types)["m5.large"], "us-west-2a", "on-demand").available


def test_zone_is_unavailable_when_all_its_subnets_are_out_of_ips(
    provider: InstanceTypeProvider, ice: UnavailableOfferings
) -> None:
    ice.mark_subnet("subnet-a1")
    assert ("us-west-2a", "on-demand") in available(by_name(provider.list(NODECLASS))["m5.large"])
    ice.mark_subnet("subnet-a2")
    m5 = by_name(provider.list(NODECLASS))["m5.large"]
    assert {z for z, _ in available(m5)} == {"us-west-2b"}


def test_a1_types_are_unavailable_with_al2023_only(provider: InstanceTypeProvider) -> None:
    assert available(by_name(provider.list(NODECLASS))["a1.large"]) == set()
    al2 = attrs.evolve(NODECLASS, ami_family="AL2")
    assert ("us-west-2a", "on-demand") in available(by_name(provider.list(al2))["a1.large"])


# --- caching --------------------------------------------------------------------------------


def test_unchanged_calls_return_the_same_types_and_settings_changes_rebuild(
    provider: InstanceTypeProvider,
) -> None:
    first = by_name(provider.list(NODECLASS))
    again = by_name(provider.list(NODECLASS))
    assert again["m5.large"] is first["m5.large"]
    limited = by_name(
        provider.list(attrs.evolve(NODECLASS, kubelet=KubeletConfiguration(max_pods=8)))
    )
    assert limited["m5.large"].capacity["pods"] == 8_000
    windows = by_name(provider.list(attrs.evolve(NODECLASS, ami_family="Windows2022")))
    assert windows["m5.large"].requirements.get(core_labels.LABEL_OS).values == {"windows"}
    one_zone = attrs.evolve(NODECLASS, subnets=NODECLASS.subnets[2:])
    m5 = by_name(provider.list(one_zone))["m5.large"]
    assert m5.requirements.get(core_labels.LABEL_TOPOLOGY_ZONE).values == {"us-west-2b"}
    assert {z for z, _ in available(m5)} == {"us-west-2b"}


def test_a_price_change_rebuilds_offerings(
    provider: InstanceTypeProvider, pricing: PricingProvider, aws: AWSClients
) -> None:
    first = by_name(provider.list(NODECLASS))["m5.large"]
    with Stubber(aws.ec2) as stub:
        stub.add_response(
            "describe_spot_price_history",
            {
                "SpotPriceHistory": [
                    {
                        "AvailabilityZone": "us-west-2a",
                        "InstanceType": "m5.large",
                        "SpotPrice": "0.02",
                        "Timestamp": datetime(2026, 1, 1, tzinfo=UTC),
                    }
                ]
            },
        )
        pricing.refresh_spot()
    second = by_name(provider.list(NODECLASS))["m5.large"]
    assert second is not first
    assert offering(second, "us-west-2a", "spot").price == pytest.approx(0.02)


# --- errors and the catalogue ------------------------------------------------------------------


def test_nodeclass_without_subnets_is_an_error(provider: InstanceTypeProvider) -> None:
    with pytest.raises(CatalogueError, match="no resolved subnets"):
        provider.list(attrs.evolve(NODECLASS, subnets=()))


def test_bad_kubelet_value_is_an_error_naming_it(provider: InstanceTypeProvider) -> None:
    bad = attrs.evolve(NODECLASS, kubelet=KubeletConfiguration(kube_reserved={"memory": "lots"}))
    with pytest.raises(InstanceTypeError, match=r"spec\.kubelet\.kubeReserved\.memory"):
        provider.list(bad)


def test_catalogue_is_read_lazily_from_ec2(
    aws: AWSClients, settings: AWSSettings, pricing: PricingProvider, ice: UnavailableOfferings
) -> None:
    provider = InstanceTypeProvider(aws, settings, pricing, ice, VirtualClock())
    types = by_name(provider.list(NODECLASS))
    assert len(types) > 1000  # moto's us-west-2: every hvm x86_64/arm64 type
    assert "m5.large" in types and "c6g.large" in types


def test_failed_refresh_keeps_the_previous_catalogue(
    provider: InstanceTypeProvider,
    aws: AWSClients,
    clock: VirtualClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    provider.list(NODECLASS)
    clock.advance(CATALOGUE_TTL)
    with Stubber(aws.ec2) as stub, caplog.at_level(logging.WARNING):
        stub.add_client_error("describe_instance_types", "RequestLimitExceeded", "slow down")
        types = by_name(provider.list(NODECLASS))
        stub.assert_no_pending_responses()
    assert "m5.large" in types
    assert "RequestLimitExceeded" in caplog.text


def test_no_catalogue_at_all_is_an_error_where_none_is_bundled(
    aws: AWSClients, settings: AWSSettings, pricing: PricingProvider, ice: UnavailableOfferings
) -> None:
    unbundled = attrs.evolve(aws, region="xx-nowhere-1")
    provider = InstanceTypeProvider(unbundled, settings, pricing, ice, VirtualClock())
    with Stubber(aws.ec2) as stub:
        stub.add_client_error("describe_instance_types", "UnauthorizedOperation", "no")
        with pytest.raises(
            CatalogueError, match="describing instance types: UnauthorizedOperation"
        ):
            provider.list(NODECLASS)


def test_kubelet_errors_are_catalogue_errors_for_callers() -> None:
    assert issubclass(InstanceTypeError, CatalogueError)


def test_get_returns_one_listed_type(provider: InstanceTypeProvider) -> None:
    m5 = provider.get(NODECLASS, "m5.large")
    assert m5 is not None and m5.name == "m5.large" and m5.offerings
    assert provider.get(NODECLASS, "x9.nonexistent") is None


def test_zone_ids_come_from_the_catalogue_when_subnets_lack_them(
    provider: InstanceTypeProvider,
) -> None:
    bare = attrs.evolve(NODECLASS, subnets=(SubnetStatus(id="subnet-c", zone="us-west-2c"),))
    m5 = by_name(provider.list(bare))["m5.large"]
    assert m5.requirements.get(aws_labels.LABEL_TOPOLOGY_ZONE_ID).values == {"usw2-az3"}


# --- discovered capacity -------------------------------------------------------------------------

ARM_AMI = AMIStatus(
    id="ami-arm",
    requirements=Requirements(Requirement.new(core_labels.LABEL_ARCH, IN, ["arm64"])),
)
AMD_AMI = AMIStatus(
    id="ami-amd",
    requirements=Requirements(Requirement.new(core_labels.LABEL_ARCH, IN, ["amd64"])),
)
WITH_AMIS = attrs.evolve(NODECLASS, amis=(ARM_AMI, AMD_AMI))
M5_NODE = {core_labels.LABEL_INSTANCE_TYPE: "m5.large", core_labels.LABEL_ARCH: "amd64"}
MI = 1024 * 1024 * 1000


def test_observed_node_memory_replaces_the_estimate(provider: InstanceTypeProvider) -> None:
    assert by_name(provider.list(WITH_AMIS))["m5.large"].capacity["memory"] == 7577 * MI
    assert provider.update_capacity_from_node(WITH_AMIS, M5_NODE, "ami-amd", 7400 * MI)
    m5 = by_name(provider.list(WITH_AMIS))["m5.large"]
    assert m5.capacity["memory"] == 7400 * MI
    assert by_name(provider.list(WITH_AMIS))["m5.xlarge"].capacity["memory"] != 7400 * MI
    # a higher figure later does not replace the lower one (upstream keeps the minimum)
    assert not provider.update_capacity_from_node(WITH_AMIS, M5_NODE, "ami-amd", 7500 * MI)
    assert by_name(provider.list(WITH_AMIS))["m5.large"].capacity["memory"] == 7400 * MI


def test_observed_memory_from_another_ami_is_ignored(provider: InstanceTypeProvider) -> None:
    # the NodeClass would launch m5.large (amd64) from ami-amd, so a node of ami-arm says nothing
    assert not provider.update_capacity_from_node(WITH_AMIS, M5_NODE, "ami-arm", 7000 * MI)
    assert by_name(provider.list(WITH_AMIS))["m5.large"].capacity["memory"] == 7577 * MI


def test_observed_memory_expires_after_sixty_days(
    aws: AWSClients,
    settings: AWSSettings,
    pricing: PricingProvider,
    ice: UnavailableOfferings,
    clock: VirtualClock,
    catalogue: Catalogue,
) -> None:
    provider = InstanceTypeProvider(
        aws, settings, pricing, ice, clock, catalogue=catalogue, catalogue_ttl=float("inf")
    )
    provider.update_capacity_from_node(WITH_AMIS, M5_NODE, "ami-amd", 7400 * MI)
    clock.advance(DISCOVERED_CAPACITY_TTL)
    assert by_name(provider.list(WITH_AMIS))["m5.large"].capacity["memory"] == 7577 * MI
