"""The bundled EC2 catalogue (karpenter_aws.catalogue): every bundled region loads and
builds priced instance types, unknown regions fail naming the bundled ones, the commands
write data that loads back (refresh against moto's EC2 server), and serving falls back
to the bundled catalogue and prices when AWS cannot be reached."""

from __future__ import annotations

import gzip
import json
import logging
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from botocore.stub import Stubber
from karpenter_aws import catalogue
from karpenter_aws.clients import AWSClients
from karpenter_aws.instancetypes import InstanceTypeProvider
from karpenter_aws.nodeclass import EC2NodeClass, SubnetStatus
from karpenter_aws.pricing import PricingError, PricingProvider
from karpenter_aws.settings import AWSSettings

from karpenter_core.plugin_api import UnavailableOfferings, VirtualClock

UPSTREAM_PRICED = ("us-east-1", "us-gov-east-1", "us-gov-west-1", "cn-north-1")


def _nodeclass(region: str) -> EC2NodeClass:
    zones = catalogue.load_region(region).zones
    return EC2NodeClass(
        name="default",
        ami_family="AL2023",
        subnets=tuple(SubnetStatus(id=f"subnet-{z}", zone=z, zone_id=i) for z, i in zones.items()),
    )


def test_the_regions_upstream_prices_are_bundled_with_their_own_prices() -> None:
    for region in UPSTREAM_PRICED:
        assert region in catalogue.REGIONS
        assert region in catalogue.PRICE_REGIONS


@pytest.mark.parametrize("region", catalogue.REGIONS)
def test_every_bundled_region_loads_and_prices_every_type(region: str) -> None:
    snap = catalogue.load_region(region)
    assert snap.region == region and snap.zones and snap.provenance
    assert all(z.startswith(region) for z in snap.zones)
    cat = catalogue.load_catalogue(region)
    assert set(cat.infos) == set(snap.offerings)  # every offered type is described
    clients = catalogue.offline_clients(region)
    pricing = PricingProvider(clients, AWSSettings(cluster_name="-"), VirtualClock())
    for name in cat.infos:
        assert pricing.on_demand(name) is not None, name
    types = InstanceTypeProvider(
        clients,
        AWSSettings(cluster_name="-"),
        pricing,
        UnavailableOfferings(VirtualClock()),
        VirtualClock(),
    ).list(_nodeclass(region))
    assert {it.name for it in types} == set(cat.infos)
    usable = [it for it in types if it.offerings.available()]
    # a1 cannot run AL2023: those alone are listed without an available offering
    assert {it.name for it in types} - {it.name for it in usable} <= {
        n for n in cat.infos if n.startswith("a1.")
    }


def test_a_region_without_its_own_prices_is_priced_from_us_east_1() -> None:
    assert "eu-west-1" in catalogue.REGIONS and "eu-west-1" not in catalogue.PRICE_REGIONS
    own = catalogue.bundled_prices("us-east-1")
    assert own is not None and catalogue.bundled_prices("eu-west-1") is None
    table = catalogue.initial_prices("eu-west-1")
    assert table is not None and table.region == "us-east-1"
    assert table.on_demand["m5.large"] == own.on_demand["m5.large"]


def test_china_and_govcloud_prices_are_their_own() -> None:
    us = catalogue.bundled_prices("us-east-1")
    cn = catalogue.bundled_prices("cn-north-1")
    gov = catalogue.bundled_prices("us-gov-west-1")
    assert us is not None and cn is not None and gov is not None
    assert cn.on_demand["m5.large"] != us.on_demand["m5.large"]  # CNY
    assert gov.on_demand["m5.large"] > us.on_demand["m5.large"]


def test_an_unknown_region_names_the_bundled_ones() -> None:
    with pytest.raises(catalogue.CatalogueError) as err:
        catalogue.load_region("xx-nowhere-1")
    message = str(err.value)
    assert "xx-nowhere-1" in message and "refresh --region xx-nowhere-1" in message
    for region in catalogue.REGIONS:
        assert region in message


def test_the_bundled_data_stays_small() -> None:
    root = Path(str(catalogue.DATA.data_dir()))
    assert sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) < 300_000


def test_bundled_records_keep_only_what_instance_types_are_built_from() -> None:
    info = catalogue.instance_type_infos()["m5.large"]
    assert info["VCpuInfo"]["DefaultVCpus"] == 2 and info["MemoryInfo"]["SizeInMiB"] == 8192
    assert "PlacementGroupInfo" not in info
    assert "ConnectionTrackingConfiguration" not in info["NetworkInfo"]


# --- the commands ------------------------------------------------------------------------------


def _read(path: Path) -> dict[str, object]:
    data = json.loads(gzip.decompress(path.read_bytes()))
    assert isinstance(data, dict)
    return data


def _info(name: str, vcpus: int) -> dict[str, object]:
    return {
        "InstanceType": name,
        "VCpuInfo": {"DefaultVCpus": vcpus},
        "MemoryInfo": {"SizeInMiB": vcpus * 4096},
        "ProcessorInfo": {"SupportedArchitectures": ["x86_64"]},
        "SupportedVirtualizationTypes": ["hvm"],
        "SupportedUsageClasses": ["on-demand", "spot"],
        "PlacementGroupInfo": {"SupportedStrategies": ["cluster"]},
        "NetworkInfo": {"MaximumNetworkInterfaces": 3, "Ipv4AddressesPerInterface": 10},
    }


def test_import_writes_a_region_and_prices_that_load_back(tmp_path: Path) -> None:
    saved = tmp_path / "saved"
    saved.mkdir()
    (saved / "types.json").write_text(
        json.dumps({"InstanceTypes": [_info("zz1.large", 2), _info("zz1.xlarge", 4)]})
    )
    (saved / "offerings.json").write_text(
        json.dumps(
            {
                "InstanceTypeOfferings": [
                    {"InstanceType": "zz1.large", "Location": "xx-test-1a"},
                    {"InstanceType": "zz1.large", "Location": "xx-test-1b"},
                    {"InstanceType": "zz1.xlarge", "Location": "xx-test-1b"},
                ]
            }
        )
    )
    (saved / "zones.json").write_text(
        json.dumps(
            {
                "AvailabilityZones": [
                    {
                        "ZoneName": "xx-test-1a",
                        "ZoneId": "xxt1-az1",
                        "ZoneType": "availability-zone",
                    },
                    {
                        "ZoneName": "xx-test-1b",
                        "ZoneId": "xxt1-az2",
                        "ZoneType": "availability-zone",
                    },
                    {"ZoneName": "xx-test-1-lz", "ZoneId": "xxt1-lz1", "ZoneType": "local-zone"},
                ]
            }
        )
    )
    (saved / "prices.json").write_text(json.dumps({"zz1.large": 0.05}))
    out = tmp_path / "data"
    assert (
        catalogue.main(
            [
                "import-prices",
                "--prices",
                str(saved / "prices.json"),
                "--region",
                "xx-test-1",
                "--output-dir",
                str(out),
            ]
        )
        == 0
    )
    assert (
        catalogue.main(
            [
                "import",
                "--region",
                "xx-test-1",
                "--instance-types",
                str(saved / "types.json"),
                "--offerings",
                str(saved / "offerings.json"),
                "--zones",
                str(saved / "zones.json"),
                "--recorded-at",
                "2026-01-02T03:04:05Z",
                "--output-dir",
                str(out),
            ]
        )
        == 0
    )
    snap = catalogue.load_region_file(out / "regions" / "xx-test-1.json.gz")
    assert snap.zones == {"xx-test-1a": "xxt1-az1", "xx-test-1b": "xxt1-az2"}
    # zz1.xlarge has no price in the region (nor a us-east-1 column there): left out
    assert dict(snap.offerings) == {"zz1.large": frozenset({"xx-test-1a", "xx-test-1b"})}
    assert snap.recorded_at.isoformat() == "2026-01-02T03:04:05+00:00"
    infos = _read(out / "instance-types.json.gz")["instanceTypes"]
    assert isinstance(infos, dict) and "PlacementGroupInfo" not in infos["zz1.large"]
    prices = _read(out / "prices.json.gz")
    assert prices["names"] == ["zz1.large"] and prices["onDemand"] == {"xx-test-1": [0.05]}


def test_import_prices_reads_upstreams_generated_table_and_saved_get_products(
    tmp_path: Path,
) -> None:
    table = tmp_path / "zz_generated.pricing_test.go"
    table.write_text(
        "package pricing\n\nvar InitialOnDemandPricesTest = map[string]map[string]float64{\n"
        '\t// xx-test-1\n\t"xx-test-1": {\n\t\t// m5 family\n'
        '\t\t"m5.large": 0.096000, "m5.xlarge": 0.192000,\n\t},\n'
        '\t"xx-test-2": {\n\t\t"m5.large": 0.1,\n\t},\n}\n'
    )
    assert catalogue.prices_from_file(table, None) == {
        "xx-test-1": {"m5.large": 0.096, "m5.xlarge": 0.192},
        "xx-test-2": {"m5.large": 0.1},
    }
    item = {
        "product": {"attributes": {"instanceType": "c5.large"}},
        "terms": {
            "OnDemand": {"t": {"priceDimensions": {"d": {"pricePerUnit": {"USD": "0.085"}}}}}
        },
    }
    page = tmp_path / "products.json"
    page.write_text(json.dumps([{"PriceList": [json.dumps(item)]}]))
    assert catalogue.prices_from_file(page, "xx-test-1") == {"xx-test-1": {"c5.large": 0.085}}
    with pytest.raises(catalogue.CatalogueError, match="--region is required"):
        catalogue.prices_from_file(page, None)


def test_import_reports_an_unreadable_dump(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "types.json"
    bad.write_text("{not json")
    code = catalogue.main(
        [
            "import",
            "--region",
            "xx-test-1",
            "--instance-types",
            str(bad),
            "--output-dir",
            str(tmp_path / "out"),
        ]
    )
    assert code == 1 and "import:" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_refresh_reads_ec2_through_moto_and_reports_the_pricing_failure(
    clients: AWSClients, moto_endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "data"
    code = catalogue.main(
        [
            "refresh",
            "--region",
            "eu-west-3",
            "--endpoint-url",
            moto_endpoint,
            "--output-dir",
            str(out),
        ]
    )
    captured = capsys.readouterr()
    # moto has no pricing API: the region is written, the failure said, the status 1
    assert code == 1 and "prices not refreshed" in captured.err
    snap = catalogue.load_region_file(out / "regions" / "eu-west-3.json.gz")
    assert set(snap.zones) == {"eu-west-3a", "eu-west-3b", "eu-west-3c"}
    assert all(snap.zones.values())  # zone ids from DescribeAvailabilityZones
    assert snap.offerings["m5.large"] == frozenset(snap.zones)
    assert "DescribeInstanceTypeOfferings" in snap.provenance
    infos = _read(out / "instance-types.json.gz")["instanceTypes"]
    assert isinstance(infos, dict) and set(snap.offerings) <= set(infos)
    assert not (out / "prices.json.gz").exists()


def test_refresh_keeps_only_types_the_price_table_prices(
    clients: AWSClients, moto_endpoint: str, tmp_path: Path
) -> None:
    out = tmp_path / "data"
    catalogue.write_prices(
        "us-east-1",
        {"m5.large": 0.096, "c5.large": 0.085},
        out,
        generated_at=catalogue.bundled.parse_time("2026-01-01T00:00:00Z"),
        provenance="test",
    )
    code = catalogue.main(
        [
            "refresh",
            "--region",
            "eu-west-3",
            "--endpoint-url",
            moto_endpoint,
            "--skip-prices",
            "--output-dir",
            str(out),
        ]
    )
    assert code == 0
    snap = catalogue.load_region_file(out / "regions" / "eu-west-3.json.gz")
    assert set(snap.offerings) == {"m5.large", "c5.large"}  # priced via us-east-1's column


def test_list_prints_every_bundled_region(capsys: pytest.CaptureFixture[str]) -> None:
    assert catalogue.main(["list"]) == 0
    out = capsys.readouterr().out
    for region in catalogue.REGIONS:
        assert f"{region}:" in out


def test_the_module_runs_as_a_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "karpenter_aws.catalogue", "list"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "us-east-1:" in done.stdout


# --- serving: the bundled data stands in for AWS -------------------------------------------


def test_an_unreachable_pricing_api_keeps_the_bundled_prices_and_says_so_once(
    clients: AWSClients, caplog: pytest.LogCaptureFixture
) -> None:
    pricing = PricingProvider(clients, AWSSettings(cluster_name="test"), VirtualClock())
    bundled_price = catalogue.initial_prices(clients.region)
    assert bundled_price is not None
    assert pricing.on_demand("m5.large") == bundled_price.on_demand["m5.large"]
    with caplog.at_level(logging.WARNING, logger="karpenter.aws.pricing"):
        for _ in range(3):
            with Stubber(clients.pricing) as stub:
                stub.add_client_error("get_products", "EndpointConnectionError", "unreachable")
                with pytest.raises(PricingError):
                    pricing.refresh_on_demand()
    said = [
        r.getMessage() for r in caplog.records if "pricing API is unreachable" in r.getMessage()
    ]
    assert len(said) == 1
    assert (
        "bundled us-east-1 prices" in said[0]
        and f"none are bundled for {clients.region}" in said[0]
    )
    assert pricing.on_demand("m5.large") == bundled_price.on_demand["m5.large"]
    assert pricing.spot("m5.large", f"{clients.region}a") == bundled_price.on_demand["m5.large"]


def test_a_price_list_file_wins_over_the_bundled_prices(
    clients: AWSClients, tmp_path: Path
) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"m5.large": 1.5}))
    pricing = PricingProvider(
        clients, AWSSettings(cluster_name="test", price_list_file=str(path)), VirtualClock()
    )
    assert pricing.on_demand("m5.large") == 1.5
    assert pricing.on_demand("c5.large") is not None  # still from the bundled table


def test_instance_types_fall_back_to_the_bundled_catalogue_when_ec2_fails_at_start(
    clients: AWSClients, caplog: pytest.LogCaptureFixture
) -> None:
    settings = AWSSettings(cluster_name="test")
    clock = VirtualClock()
    pricing = PricingProvider(clients, settings, clock)
    provider = InstanceTypeProvider(clients, settings, pricing, UnavailableOfferings(clock), clock)
    with (
        Stubber(clients.ec2) as stub,
        caplog.at_level(logging.WARNING, logger="karpenter.aws.instancetypes"),
    ):
        stub.add_client_error("describe_instance_types", "UnauthorizedOperation", "no")
        cat = provider.catalogue()
    assert cat == catalogue.load_catalogue(clients.region)
    assert "using the bundled" in caplog.text
    # EC2 is asked again later, not on every listing
    with Stubber(clients.ec2) as stub:
        assert provider.catalogue() is cat
        stub.assert_no_pending_responses()
    clock.advance(301.0)  # past BUNDLED_RETRY
    fresh = provider.catalogue()  # moto answers now
    assert fresh is not cat and "m5.large" in fresh.infos


def test_offline_clients_refuse_every_call() -> None:
    clients = catalogue.offline_clients("us-east-1")
    assert catalogue.is_offline(clients)
    with pytest.raises(catalogue.OfflineError, match=r"ec2\.run_instances"):
        clients.ec2.run_instances()
    assert not catalogue.is_offline(attrs.evolve(clients, ec2=object()))


def test_after_the_api_answered_a_failure_does_not_claim_bundled_prices(
    clients: AWSClients, caplog: pytest.LogCaptureFixture
) -> None:
    pricing = PricingProvider(clients, AWSSettings(cluster_name="test"), VirtualClock())
    item = {
        "product": {"attributes": {"instanceType": "m5.large"}},
        "terms": {"OnDemand": {"t": {"priceDimensions": {"d": {"pricePerUnit": {"USD": "0.5"}}}}}},
    }
    with Stubber(clients.pricing) as stub:
        for _ in range(2):  # the shared and the bare-metal pass
            stub.add_response("get_products", {"PriceList": [json.dumps(item)]})
        assert pricing.refresh_on_demand() is True
    with (
        caplog.at_level(logging.WARNING, logger="karpenter.aws.pricing"),
        Stubber(clients.pricing) as stub,
    ):
        stub.add_client_error("get_products", "ThrottlingException", "slow down")
        with pytest.raises(PricingError):
            pricing.refresh_on_demand()
    assert "pricing API is unreachable" not in caplog.text
    assert pricing.on_demand("m5.large") == 0.5
