"""Machine types (karpenter_gcp.machinetypes): listed live through the official client
against the fake Compute server (aggregated list, region filter, paging, merged zones),
read from the JSON forms gcloud and the API print, and local SSD sizes."""

from __future__ import annotations

import json

import pytest
from fakegce import PROJECT, REGION, FakeGCE
from fakegce_catalog import catalog_routes, machine_type_json
from karpenter_gcp.clients import GCPClients
from karpenter_gcp.machinetypes import (
    Accelerator,
    MachineType,
    MachineTypeError,
    list_machine_types,
    local_ssd_gib,
    machine_types_from_json,
    region_filter,
)


def _seed(gce: FakeGCE) -> None:
    routes = catalog_routes(gce)
    records = []
    for zone in ("us-central1-a", "us-central1-b", "us-central1-f"):
        records.append(machine_type_json("n2-standard-4", zone, cpus=4, memory_mb=16384))
    records.append(
        machine_type_json(
            "a2-highgpu-2g",
            "us-central1-b",
            cpus=24,
            memory_mb=174080,
            accelerators=[("nvidia-tesla-a100", 2)],
        )
    )
    records.append(
        machine_type_json(
            "c4a-standard-4-lssd",
            "us-central1-a",
            cpus=4,
            memory_mb=16384,
            architecture="ARM64",
            local_ssd_partitions=1,
        )
    )
    # Another region whose zone name shares the prefix "us-central1": filtered out.
    records.append(machine_type_json("n2-standard-4", "us-east1-b", cpus=4, memory_mb=16384))
    records.append(machine_type_json("m1-ultramem-40", "us-central10-a", cpus=40))
    routes.add_machine_types(records)


def test_lists_the_regions_machine_types_one_per_name_with_their_zones(
    gce: FakeGCE, gcp_clients: GCPClients
) -> None:
    _seed(gce)
    catalog_routes(gce).page_size = 2  # several pages: the client's pager follows them
    types = {mt.name: mt for mt in list_machine_types(gcp_clients.machine_types, PROJECT, REGION)}

    assert set(types) == {"n2-standard-4", "a2-highgpu-2g", "c4a-standard-4-lssd"}
    n2 = types["n2-standard-4"]
    assert n2.zones == ("us-central1-a", "us-central1-b", "us-central1-f")
    assert (n2.guest_cpus, n2.memory_mb, n2.architecture) == (4, 16384, "X86_64")
    assert types["a2-highgpu-2g"].accelerators == (Accelerator("nvidia-tesla-a100", 2),)
    assert types["a2-highgpu-2g"].gpu_count == 2
    c4a = types["c4a-standard-4-lssd"]
    assert (c4a.architecture, c4a.local_ssd_partitions, c4a.local_ssd_gib) == ("ARM64", 1, 375)
    requests = gce.requests_to("GET", r"/compute/v1/projects/[^/]+/aggregated/machineTypes")
    assert len(requests) > 1
    assert {r.query.get("filter") for r in requests} == {region_filter(REGION)}


def test_a_failed_listing_raises_naming_the_region(gce: FakeGCE, gcp_clients: GCPClients) -> None:
    _seed(gce)
    gce.fail_next("GET", r".*/aggregated/machineTypes", status=403, reason="forbidden", times=5)
    with pytest.raises(MachineTypeError, match=REGION):
        list_machine_types(gcp_clients.machine_types, PROJECT, REGION)


def test_an_empty_region_is_an_error(gce: FakeGCE, gcp_clients: GCPClients) -> None:
    catalog_routes(gce)
    with pytest.raises(MachineTypeError, match="no machine types"):
        list_machine_types(gcp_clients.machine_types, PROJECT, REGION)


def test_reads_gcloud_list_output_merging_zones() -> None:
    data = [
        machine_type_json("e2-medium", "us-central1-a", cpus=2, memory_mb=4096, shared_cpu=True),
        machine_type_json("e2-medium", "us-central1-c", cpus=2, memory_mb=4096, shared_cpu=True),
        {"name": "broken", "zone": "us-central1-a"},  # no shape: skipped, as upstream
    ]
    data[0]["zone"] = "https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-a"
    (mt,) = machine_types_from_json(json.loads(json.dumps(data)))
    assert mt.name == "e2-medium"
    assert mt.zones == ("us-central1-a", "us-central1-c")
    assert mt.is_shared_cpu


def test_reads_an_aggregated_list_response_and_round_trips_the_snapshot_form() -> None:
    response = {
        "items": {
            "zones/us-east1-b": {
                "machineTypes": [
                    {
                        "name": "g2-standard-4",
                        "guestCpus": 4,
                        "memoryMb": 16384,
                        "accelerators": [
                            {"guestAcceleratorType": "nvidia-l4", "guestAcceleratorCount": 1}
                        ],
                    }
                ]
            },
            "zones/us-east1-c": {"warning": {"code": "NO_RESULTS_ON_PAGE"}},
        }
    }
    (mt,) = machine_types_from_json(response)
    assert mt.zones == ("us-east1-b",)
    assert mt.accelerators == (Accelerator("nvidia-l4", 1),)
    assert machine_types_from_json([mt.to_dict()]) == [mt]


@pytest.mark.parametrize(
    "data",
    [
        {"kind": "compute#machineType"},
        [1, 2],
        [{"guestCpus": 2, "memoryMb": 1}],
        [{"name": "x", "guestCpus": "many", "memoryMb": 1}],
    ],
)
def test_malformed_json_is_an_error(data: object) -> None:
    with pytest.raises(MachineTypeError):
        machine_types_from_json(data)


def test_local_ssd_capacity_follows_the_partition_sizes() -> None:
    assert local_ssd_gib("n2-standard-8", 0) == 0
    assert local_ssd_gib("c3-standard-8-lssd", 2) == 2 * 375
    assert local_ssd_gib("z3-highmem-16-highlssd", 2) == 2 * 3000
    # The API's partition count is wrong for these; the total is known per type.
    assert local_ssd_gib("c4d-highmem-8-lssd", 1) == 2250
    assert (
        MachineType("c4-standard-288-lssd-metal", 288, 1, local_ssd_partitions=1).local_ssd_gib
        == 18000
    )
