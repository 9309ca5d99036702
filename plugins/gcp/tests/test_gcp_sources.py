"""Where instance types come from (karpenter_gcp.sources.CatalogueSource): the bundled
snapshot with no network call when there are no clients; live machine types, zones and
prices from the fake Compute server when there are; the snapshot standing in when a live
listing fails in a bundled region; refresh picking up changes."""

from __future__ import annotations

import pytest
from fakegce import PROJECT, REGION, FakeGCE
from fakegce_catalog import PRICES_PATH, CatalogRoutes, catalog_routes, machine_type_json, price_csv
from karpenter_gcp import catalogue
from karpenter_gcp.clients import GCPClients
from karpenter_gcp.sources import CatalogueSource, setting

from karpenter_core.plugin_api import UnavailableOfferings, VirtualClock, labels, resources

_LIST = r".*/aggregated/machineTypes"


def _source(settings: object, clients: GCPClients | None) -> CatalogueSource:
    clock = VirtualClock()
    return CatalogueSource(settings, clients, clock, UnavailableOfferings(clock))


def test_settings_are_read_as_attributes_or_plugin_keys() -> None:
    class Settings:
        region = "us-east1"
        vm_memory_overhead_percent = 0.1

    assert setting(Settings(), "region", "cluster_location") == "us-east1"
    assert setting({"cluster-location": "europe-west4"}, "region", "cluster_location") == (
        "europe-west4"
    )
    assert setting({}, "region", default="x") == "x"


def test_without_clients_the_snapshot_serves_and_nothing_is_called(gce: FakeGCE) -> None:
    source = _source({"cluster-location": "us-central1"}, None)
    types = source.instance_types(None)
    snap = catalogue.load_snapshot("us-central1")
    assert {t.name for t in types} == {mt.name for mt in snap.machine_types}
    assert source.refresh() is True
    assert not source.live
    assert gce.requests == []  # nothing reached the (only) server


def test_the_overhead_setting_changes_memory() -> None:
    default = _source({"cluster-location": "us-central1"}, None).instance_types(None)
    more = _source(
        {"cluster-location": "us-central1", "vm-memory-overhead-percent": "0.5"}, None
    ).instance_types(None)
    by_name = {t.name: t for t in more}
    t = next(t for t in default if t.name == "n2-standard-4")
    assert by_name[t.name].capacity[resources.MEMORY] < t.capacity[resources.MEMORY]


def test_without_clients_an_unbundled_region_fails_naming_the_bundled_ones() -> None:
    source = _source({"cluster-location": "asia-east1"}, None)
    with pytest.raises(catalogue.CatalogueError, match="us-central1"):
        source.instance_types(None)


def _seed(gce: FakeGCE) -> CatalogRoutes:
    routes = catalog_routes(gce)
    routes.zones = ["us-central1-a", "us-central1-b"]
    routes.add_machine_types(
        [
            machine_type_json("n2-standard-4", z, cpus=4, memory_mb=16384)
            for z in ("us-central1-a", "us-central1-b", "us-central1-c")
        ]
    )
    routes.csv = price_csv([("n2-standard-4", REGION, 0.25, 0.07)])
    return routes


def _live_settings(routes: CatalogRoutes) -> dict[str, str]:
    return {
        "cluster-location": REGION,
        "project-id": PROJECT,
        "pricing-endpoint": routes.prices_url,
    }


def test_with_clients_machine_types_and_zones_are_live(
    gce: FakeGCE, gcp_clients: GCPClients
) -> None:
    routes = _seed(gce)
    source = _source(_live_settings(routes), gcp_clients)
    (it,) = source.instance_types(None)
    assert it.name == "n2-standard-4"
    # Offered in the zones that are listed for it and are the region's (ZonesClient).
    assert set(it.requirements.get(labels.LABEL_TOPOLOGY_ZONE).values) == {
        "us-central1-a",
        "us-central1-b",
    }
    assert source.machine_type("n2-standard-4") is not None
    # Prices start from the snapshot; a refresh reads the table.
    assert source.refresh() is True
    (it,) = source.instance_types(None)
    assert {o.price for o in it.offerings} == {0.25, 0.07}
    assert gce.requests_to("GET", PRICES_PATH)


def test_a_failed_listing_in_a_bundled_region_falls_back_to_the_snapshot(
    gce: FakeGCE, gcp_clients: GCPClients
) -> None:
    routes = _seed(gce)
    gce.fail_next("GET", _LIST, status=403, reason="forbidden", times=10)
    source = _source(_live_settings(routes), gcp_clients)
    types = source.instance_types(None)
    assert len(types) == len(catalogue.load_snapshot(REGION).machine_types)


def test_a_failed_listing_in_an_unbundled_region_is_an_error(
    gce: FakeGCE, gcp_clients: GCPClients
) -> None:
    routes = _seed(gce)
    gce.fail_next("GET", _LIST, status=403, reason="forbidden", times=10)
    source = _source({**_live_settings(routes), "cluster-location": "asia-east1"}, gcp_clients)
    with pytest.raises(catalogue.CatalogueError, match="asia-east1"):
        source.instance_types(None)


def test_refresh_picks_up_new_machine_types_and_keeps_them_when_listing_fails(
    gce: FakeGCE, gcp_clients: GCPClients
) -> None:
    routes = _seed(gce)
    source = _source(_live_settings(routes), gcp_clients)
    assert [t.name for t in source.instance_types(None)] == ["n2-standard-4"]
    routes.add_machine_types([machine_type_json("n2-standard-8", "us-central1-a", cpus=8)])
    routes.csv = price_csv(
        [("n2-standard-4", REGION, 0.25, 0.07), ("n2-standard-8", REGION, 0.5, 0.14)]
    )
    assert source.refresh() is True
    assert [t.name for t in source.instance_types(None)] == ["n2-standard-4", "n2-standard-8"]
    gce.fail_next("GET", _LIST, status=500, times=10)
    assert source.refresh() is False
    assert [t.name for t in source.instance_types(None)] == ["n2-standard-4", "n2-standard-8"]
