"""PricingProvider: the price-list file, pricing:GetProducts (Stubber: moto answers 404)
and DescribeSpotPriceHistory (moto, dummy prices)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from karpenter_aws.clients import AWSClients
from karpenter_aws.pricing import (
    PriceListError,
    PricingError,
    PricingProvider,
    load_price_list,
    on_demand_filters,
)
from karpenter_aws.settings import AWSSettings

from karpenter_core.runtime.clock import VirtualClock

REGION = "us-west-2"


@pytest.fixture(scope="module")
def clients(moto_endpoint: str) -> AWSClients:
    """One set of clients for the module: these tests only read moto (spot history) or
    answer through a Stubber, so they need neither a reset nor fresh clients."""
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )
    return AWSClients.create(REGION, endpoint_url=moto_endpoint, session=session)


def price_item(instance_type: str, price: str, currency: str = "USD") -> str:
    """One GetProducts PriceList entry, shaped as the Price List API returns it."""
    sku = f"SKU{abs(hash(instance_type)) % 10**8:08d}"
    return json.dumps(
        {
            "product": {
                "productFamily": "Compute Instance",
                "attributes": {
                    "instanceType": instance_type,
                    "regionCode": REGION,
                    "operatingSystem": "Linux",
                    "tenancy": "Shared",
                    "preInstalledSw": "NA",
                    "capacitystatus": "Used",
                    "marketoption": "OnDemand",
                    "servicecode": "AmazonEC2",
                },
                "sku": sku,
            },
            "serviceCode": "AmazonEC2",
            "terms": {
                "OnDemand": {
                    f"{sku}.JRTCKXETXF": {
                        "priceDimensions": {
                            f"{sku}.JRTCKXETXF.6YS6EN2CT7": {
                                "unit": "Hrs",
                                "endRange": "Inf",
                                "description": f"$x per On Demand Linux {instance_type} Instance Hour",
                                "appliesTo": [],
                                "rateCode": f"{sku}.JRTCKXETXF.6YS6EN2CT7",
                                "beginRange": "0",
                                "pricePerUnit": {currency: price},
                            }
                        },
                        "sku": sku,
                        "effectiveDate": "2025-11-01T00:00:00Z",
                        "offerTermCode": "JRTCKXETXF",
                        "termAttributes": {},
                    }
                }
            },
            "version": "20251101000000",
            "publicationDate": "2025-11-01T00:00:00Z",
        }
    )


def products_params(
    region: str, tenancy: str, family: str, token: str | None = None
) -> dict[str, Any]:
    params: dict[str, Any] = {
        "ServiceCode": "AmazonEC2",
        "Filters": on_demand_filters(region, tenancy, family),
        "MaxResults": 100,
    }
    if token:
        params["NextToken"] = token
    return params


def settings(**kwargs: Any) -> AWSSettings:
    return AWSSettings(cluster_name="test", **kwargs)


def write(tmp_path: Path, content: str) -> str:
    path = tmp_path / "prices.json"
    path.write_text(content)
    return str(path)


def test_on_demand_filters_match_the_spec() -> None:
    filters = {
        f["Field"]: f["Value"] for f in on_demand_filters(REGION, "Shared", "Compute Instance")
    }
    assert filters == {
        "regionCode": REGION,
        "serviceCode": "AmazonEC2",
        "preInstalledSw": "NA",
        "operatingSystem": "Linux",
        "capacitystatus": "Used",
        "marketoption": "OnDemand",
        "tenancy": "Shared",
        "productFamily": "Compute Instance",
    }
    assert all(f["Type"] == "TERM_MATCH" for f in on_demand_filters(REGION, "Shared", "x"))


def test_on_demand_refresh_reads_both_passes_across_pages(clients: AWSClients) -> None:
    pricing = PricingProvider(clients, settings(), VirtualClock(), bundled=False)
    assert pricing.on_demand("m5.large") is None
    with Stubber(clients.pricing) as stub:
        stub.add_response(
            "get_products",
            {"PriceList": [price_item("m5.large", "0.0960000000")], "NextToken": "page-2"},
            products_params(REGION, "Shared", "Compute Instance"),
        )
        stub.add_response(
            "get_products",
            {"PriceList": [price_item("c6g.large", "0.0680000000")]},
            products_params(REGION, "Shared", "Compute Instance", "page-2"),
        )
        stub.add_response(
            "get_products",
            {"PriceList": [price_item("m5.metal", "4.6080000000")]},
            products_params(REGION, "Dedicated", "Compute Instance (bare metal)"),
        )
        version = pricing.version
        assert pricing.refresh_on_demand() is True
        stub.assert_no_pending_responses()
    assert pricing.on_demand("m5.large") == pytest.approx(0.096)
    assert pricing.on_demand("c6g.large") == pytest.approx(0.068)
    assert pricing.on_demand("m5.metal") == pytest.approx(4.608)
    assert pricing.version > version
    # no spot refresh yet: spot is the on-demand price, in every zone
    assert pricing.spot("m5.large", "us-west-2a") == pytest.approx(0.096)


def test_zero_and_unparsable_prices_are_ignored(clients: AWSClients) -> None:
    pricing = PricingProvider(clients, settings(), VirtualClock(), bundled=False)
    with Stubber(clients.pricing) as stub:
        stub.add_response(
            "get_products",
            {
                "PriceList": [
                    price_item("m5.large", "0.0960000000"),
                    price_item("m5.xlarge", "0.0000000000"),
                    price_item("m5.2xlarge", "n/a"),
                    "not json",
                ]
            },
            products_params(REGION, "Shared", "Compute Instance"),
        )
        stub.add_response(
            "get_products",
            {"PriceList": [price_item("m5.metal", "4.608")]},
            products_params(REGION, "Dedicated", "Compute Instance (bare metal)"),
        )
        pricing.refresh_on_demand()
    assert pricing.on_demand("m5.large") == pytest.approx(0.096)
    assert pricing.on_demand("m5.xlarge") is None
    assert pricing.on_demand("m5.2xlarge") is None


def test_china_regions_read_cny(moto_endpoint: str) -> None:
    session = boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing")
    cn = AWSClients.create("cn-north-1", endpoint_url=moto_endpoint, session=session)
    pricing = PricingProvider(cn, settings(), VirtualClock(), bundled=False)
    with Stubber(cn.pricing) as stub:
        stub.add_response(
            "get_products",
            {"PriceList": [price_item("m5.large", "0.6500000000", currency="CNY")]},
            products_params("cn-north-1", "Shared", "Compute Instance"),
        )
        stub.add_response(
            "get_products",
            {"PriceList": [price_item("m5.metal", "31.0", currency="CNY")]},
            products_params("cn-north-1", "Dedicated", "Compute Instance (bare metal)"),
        )
        pricing.refresh_on_demand()
    assert pricing.on_demand("m5.large") == pytest.approx(0.65)


def test_api_failure_keeps_previous_prices(clients: AWSClients, tmp_path: Path) -> None:
    pricing = PricingProvider(
        clients, settings(price_list_file=write(tmp_path, '{"m5.large": 0.1}')), VirtualClock()
    )
    with Stubber(clients.pricing) as stub:
        stub.add_client_error("get_products", "AccessDeniedException", "not authorized")
        with pytest.raises(PricingError, match="AccessDeniedException"):
            pricing.refresh_on_demand()
    assert pricing.on_demand("m5.large") == pytest.approx(0.1)


def test_empty_pass_is_an_error(clients: AWSClients) -> None:
    pricing = PricingProvider(clients, settings(), VirtualClock(), bundled=False)
    with Stubber(clients.pricing) as stub:
        stub.add_response(
            "get_products", {"PriceList": []}, products_params(REGION, "Shared", "Compute Instance")
        )
        with pytest.raises(PricingError, match="no on-demand pricing found"):
            pricing.refresh_on_demand()


def test_refresh_tries_both_logs_each_failure_and_raises_one_error(
    clients: AWSClients, caplog: pytest.LogCaptureFixture
) -> None:
    pricing = PricingProvider(clients, settings(), VirtualClock(), bundled=False)
    with Stubber(clients.pricing) as pstub, Stubber(clients.ec2) as estub:
        pstub.add_client_error("get_products", "ThrottlingException", "slow down")
        estub.add_client_error("describe_spot_price_history", "RequestLimitExceeded", "slow")
        with (
            caplog.at_level(logging.WARNING, logger="karpenter.aws.pricing"),
            pytest.raises(PricingError, match=r"on-demand: .*ThrottlingException.*; spot: "),
        ):
            pricing.refresh()
        pstub.assert_no_pending_responses()
        estub.assert_no_pending_responses()
    assert "on-demand price refresh failed" in caplog.text and "ThrottlingException" in caplog.text
    assert "spot price refresh failed" in caplog.text and "RequestLimitExceeded" in caplog.text


def test_isolated_vpc_never_calls_the_pricing_api(clients: AWSClients, tmp_path: Path) -> None:
    pricing = PricingProvider(
        clients,
        settings(isolated_vpc=True, price_list_file=write(tmp_path, '{"m5.large": 0.096}')),
        VirtualClock(),
    )
    with Stubber(clients.pricing) as stub:  # no responses queued: any call would fail
        assert pricing.refresh_on_demand() is False
        stub.assert_no_pending_responses()
    assert pricing.on_demand("m5.large") == pytest.approx(0.096)


# --- price-list file -------------------------------------------------------------------------


def test_price_list_file_seeds_and_the_api_overrides_what_it_knows(
    clients: AWSClients, tmp_path: Path
) -> None:
    path = write(tmp_path, json.dumps({"m5.large": 0.5, "x9.huge": 12}))
    pricing = PricingProvider(
        clients, settings(price_list_file=path), VirtualClock(), bundled=False
    )
    assert pricing.price_list_error is None
    assert pricing.on_demand("m5.large") == 0.5
    assert pricing.spot("x9.huge", "us-west-2b") == 12.0
    with Stubber(clients.pricing) as stub:
        stub.add_response(
            "get_products",
            {"PriceList": [price_item("m5.large", "0.096")]},
            products_params(REGION, "Shared", "Compute Instance"),
        )
        stub.add_response(
            "get_products",
            {"PriceList": [price_item("m5.metal", "4.608")]},
            products_params(REGION, "Dedicated", "Compute Instance (bare metal)"),
        )
        pricing.refresh_on_demand()
    assert pricing.on_demand("m5.large") == pytest.approx(0.096)
    assert pricing.on_demand("x9.huge") == 12.0  # the API does not know it: the file's stays


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ('["m5.large", 0.096]', "expected a JSON object"),
        ('{"m5.large": "cheap"}', "m5.large: price must be a number"),
        ('{"m5.large": -1}', "m5.large: price must be a finite non-negative number"),
        ('{"m5.large": true}', "m5.large: price must be a number"),
    ],
)
def test_malformed_price_list_file_is_a_clear_error_not_a_crash(
    clients: AWSClients,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    content: str,
    message: str,
) -> None:
    path = write(tmp_path, content)
    with pytest.raises(PriceListError, match=message):
        load_price_list(path)
    with caplog.at_level(logging.ERROR, logger="karpenter.aws.pricing"):
        pricing = PricingProvider(
            clients, settings(price_list_file=path), VirtualClock(), bundled=False
        )
    assert pricing.price_list_error is not None and message in pricing.price_list_error
    assert path in caplog.text and message in caplog.text
    assert pricing.on_demand("m5.large") is None


def test_missing_price_list_file(clients: AWSClients, tmp_path: Path) -> None:
    path = str(tmp_path / "absent.json")
    with pytest.raises(PriceListError, match="cannot be read"):
        load_price_list(path)
    pricing = PricingProvider(
        clients, settings(price_list_file=path), VirtualClock(), bundled=False
    )
    assert pricing.price_list_error is not None and "absent.json" in pricing.price_list_error


# --- spot ------------------------------------------------------------------------------------------


def test_spot_refresh_from_moto_replaces_the_on_demand_stand_in(
    clients: AWSClients, tmp_path: Path
) -> None:
    path = write(tmp_path, '{"m5.large": 0.096}')
    pricing = PricingProvider(
        clients, settings(price_list_file=path), VirtualClock(), bundled=False
    )
    assert not pricing.spot_updated
    assert pricing.spot("m5.large", "us-west-2a") == pytest.approx(0.096)
    assert pricing.spot("c6g.large", "us-west-2a") is None  # no price from any source
    version = pricing.version
    pricing.refresh_spot()
    assert pricing.spot_updated
    assert pricing.version > version
    assert pricing.spot("m5.large", "us-west-2a") == pytest.approx(0.00001)  # moto's dummy
    assert pricing.spot("c6g.large", "us-west-2d") == pytest.approx(0.00001)
    assert pricing.spot("m5.large", "us-west-2z") is None  # no spot price for that zone
    assert pricing.on_demand("m5.large") == pytest.approx(0.096)  # untouched


def test_spot_keeps_the_newest_price_per_type_and_zone(clients: AWSClients) -> None:
    clock = VirtualClock()
    pricing = PricingProvider(clients, settings(), clock, bundled=False)

    def row(zone: str, price: str, hour: int) -> dict[str, Any]:
        return {
            "AvailabilityZone": zone,
            "InstanceType": "m5.large",
            "ProductDescription": "Linux/UNIX",
            "SpotPrice": price,
            "Timestamp": datetime(2026, 1, 1, hour, tzinfo=UTC),
        }

    with Stubber(clients.ec2) as stub:
        stub.add_response(
            "describe_spot_price_history",
            {
                "SpotPriceHistory": [
                    row("us-west-2a", "0.040", 2),
                    row("us-west-2a", "0.030", 1),
                    row("us-west-2b", "bad", 1),
                    row("us-west-2c", "0.035", 1),
                ]
            },
            {
                "ProductDescriptions": ["Linux/UNIX", "Linux/UNIX (Amazon VPC)"],
                "StartTime": clock.now(),
                "MaxResults": 1000,
            },
        )
        pricing.refresh_spot()
    assert pricing.spot("m5.large", "us-west-2a") == pytest.approx(0.040)
    assert pricing.spot("m5.large", "us-west-2b") is None
    assert pricing.spot("m5.large", "us-west-2c") == pytest.approx(0.035)


def test_empty_spot_history_is_an_error(clients: AWSClients) -> None:
    pricing = PricingProvider(clients, settings(), VirtualClock(), bundled=False)
    with Stubber(clients.ec2) as stub:
        stub.add_response("describe_spot_price_history", {"SpotPriceHistory": []})
        with pytest.raises(PricingError, match="no spot pricing found"):
            pricing.refresh_spot()
    assert not pricing.spot_updated


def test_an_html_error_page_is_summarised_not_repeated(clients: AWSClients) -> None:
    pricing = PricingProvider(clients, settings(), VirtualClock(), bundled=False)
    page = "<!doctype html>\n<html lang=en>\n<title>500 Internal Server Error</title>" + "x" * 500
    with Stubber(clients.pricing) as stub:
        stub.add_client_error("get_products", "500", page, http_status_code=500)
        with pytest.raises(PricingError) as err:
            pricing.refresh_on_demand()
    assert str(err.value) == (
        "getting on-demand pricing data: 500: the endpoint answered with an HTML error page"
    )
