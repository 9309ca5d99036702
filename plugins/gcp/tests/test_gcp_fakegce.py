"""The fake GCE/GKE server itself, through the official clients: operations advance one
status per poll, failed operations carry GCE's error shape, faults fire once, filters and
paging of the aggregated list, disk lifecycle, added routes, and the subprocess
environment."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from fakegce import CLUSTER, LOCATION, PROJECT, FakeGCE, FakeRequest, Response
from google.api_core import exceptions as gexc
from google.cloud import compute_v1
from karpenter_gcp.clients import GCPClients

ZONE = "us-central1-a"


def insert(clients: GCPClients, name: str, zone: str = ZONE, **labels: str) -> compute_v1.Operation:
    body = compute_v1.Instance(
        name=name,
        labels=labels,
        disks=[
            compute_v1.AttachedDisk(
                boot=True,
                auto_delete=True,
                initialize_params=compute_v1.AttachedDiskInitializeParams(source_image="img"),
            )
        ],
    )
    return clients.instances.insert_unary(project=PROJECT, zone=zone, instance_resource=body)


def test_operation_goes_pending_running_done(gce: FakeGCE, gcp_clients: GCPClients) -> None:
    gce.operation_polls = 2
    op = insert(gcp_clients, "a")
    seen = [op.status]
    for _ in range(2):
        op = gcp_clients.zone_operations.get(project=PROJECT, zone=ZONE, operation=op.name)
        seen.append(op.status)
    S = compute_v1.Operation.Status
    assert seen == [S.PENDING, S.RUNNING, S.DONE]
    inst = gcp_clients.instances.get(project=PROJECT, zone=ZONE, instance="a")
    assert inst.status == "RUNNING"


def test_async_insert_fault_fails_in_the_operation(gce: FakeGCE, gcp_clients: GCPClients) -> None:
    gce.operation_polls = 1
    gce.fail_next_insert("ZONE_RESOURCE_POOL_EXHAUSTED", "no room", zone=ZONE, asynchronous=True)
    op = insert(gcp_clients, "a")
    done = gcp_clients.zone_operations.wait(project=PROJECT, zone=ZONE, operation=op.name)
    assert [(e.code, e.message) for e in done.error.errors] == [
        ("ZONE_RESOURCE_POOL_EXHAUSTED", "no room")
    ]
    assert (
        gcp_clients.instances.get(project=PROJECT, zone=ZONE, instance="a").status == "TERMINATED"
    )
    # The fault fired once: the next insert in the zone succeeds.
    op = insert(gcp_clients, "b")
    assert not gcp_clients.zone_operations.wait(
        project=PROJECT, zone=ZONE, operation=op.name
    ).error.errors


def test_sync_insert_fault_only_in_its_zone(gce: FakeGCE, gcp_clients: GCPClients) -> None:
    gce.fail_next_insert(
        "QUOTA_EXCEEDED", "Quota 'CPUS' exceeded", zone="us-central1-b", status=403
    )
    insert(gcp_clients, "a")  # another zone: unaffected
    with pytest.raises(gexc.Forbidden) as info:
        insert(gcp_clients, "b", zone="us-central1-b")
    assert info.value.errors[0]["reason"] == "QUOTA_EXCEEDED"
    with gce.lock:
        assert ("us-central1-b", "b") not in gce.instances


def test_duplicate_insert_conflicts(gce: FakeGCE, gcp_clients: GCPClients) -> None:
    insert(gcp_clients, "a")
    with pytest.raises(gexc.Conflict):
        insert(gcp_clients, "a")


def test_delete_removes_autodelete_disks_when_done(gce: FakeGCE, gcp_clients: GCPClients) -> None:
    gce.operation_polls = 1
    insert(gcp_clients, "a")
    with gce.lock:
        assert (ZONE, "a") in gce.disks
    op = gcp_clients.instances.delete_unary(project=PROJECT, zone=ZONE, instance="a")
    with gce.lock:
        assert gce.instances[(ZONE, "a")]["status"] == "STOPPING"
    gcp_clients.zone_operations.wait(project=PROJECT, zone=ZONE, operation=op.name)
    with gce.lock:
        assert gce.instances == {} and gce.disks == {}


def test_attached_disk_cannot_be_deleted(gce: FakeGCE, gcp_clients: GCPClients) -> None:
    insert(gcp_clients, "a")
    with pytest.raises(gexc.BadRequest, match="already being used"):
        gcp_clients.disks.delete_unary(project=PROJECT, zone=ZONE, disk="a")


def test_aggregated_list_filters_and_pages(gce: FakeGCE, gcp_clients: GCPClients) -> None:
    gce.page_size = 2
    for i in range(5):
        insert(
            gcp_clients, f"k{i}", zone=["us-central1-a", "us-central1-b"][i % 2], owner="karpenter"
        )
    insert(gcp_clients, "other", owner="someone")
    pager = gcp_clients.instances.aggregated_list(
        request={"project": PROJECT, "filter": "(labels.owner:karpenter AND labels.owner:*)"}
    )
    names = sorted(i.name for _, scoped in pager for i in scoped.instances)
    assert names == [f"k{i}" for i in range(5)]
    assert len(gce.requests_to("GET", r".*/aggregated/instances")) == 3
    by_name = gcp_clients.instances.aggregated_list(
        request={"project": PROJECT, "filter": 'name = "other"'}
    )
    assert [i.name for _, s in by_name for i in s.instances] == ["other"]


def test_unsupported_filter_is_a_bad_request(gce: FakeGCE, gcp_clients: GCPClients) -> None:
    with pytest.raises(gexc.BadRequest, match="unsupported filter"):
        list(
            gcp_clients.instances.aggregated_list(request={"project": PROJECT, "filter": "a OR b"})
        )


def test_throttle_fires_once(gce: FakeGCE, gcp_clients: GCPClients) -> None:
    insert(gcp_clients, "a")
    gce.throttle_next("GET", r".*/instances/a")
    with pytest.raises(gexc.TooManyRequests):
        gcp_clients.instances.get(project=PROJECT, zone=ZONE, instance="a")
    assert gcp_clients.instances.get(project=PROJECT, zone=ZONE, instance="a").name == "a"


def test_added_routes_override_and_can_be_removed(gce: FakeGCE, gcp_clients: GCPClients) -> None:
    def machine_type(req: FakeRequest) -> Response:
        return 200, {}, {"name": req.match["name"], "guestCpus": 4, "memoryMb": 16384}

    remove = gce.route(
        "GET", r"/compute/v1/projects/[^/]+/zones/[^/]+/machineTypes/(?P<name>[^/]+)", machine_type
    )
    got = gcp_clients.machine_types.get(project=PROJECT, zone=ZONE, machine_type="e2-standard-4")
    assert (got.name, got.guest_cpus) == ("e2-standard-4", 4)
    remove()
    with pytest.raises(gexc.NotFound):
        gcp_clients.machine_types.get(project=PROJECT, zone=ZONE, machine_type="e2-standard-4")


def test_gke_cluster_and_pools(gce: FakeGCE, gcp_clients: GCPClients) -> None:
    gce.add_cluster(
        {
            "name": CLUSTER,
            "locations": [ZONE],
            "nodePools": [{"name": "default-pool", "status": "RUNNING"}],
        }
    )
    path = f"projects/{PROJECT}/locations/{LOCATION}/clusters/{CLUSTER}"
    cluster = gcp_clients.cluster_manager.get_cluster(name=path)
    assert [p.name for p in cluster.node_pools] == ["default-pool"]
    pools = gcp_clients.cluster_manager.list_node_pools(parent=path).node_pools
    assert [p.status.name for p in pools] == ["RUNNING"]
    with pytest.raises(gexc.NotFound):
        gcp_clients.cluster_manager.get_node_pool(name=f"{path}/nodePools/none")


def test_a_subprocess_reaches_the_fake_by_environment_alone(gce: FakeGCE) -> None:
    code = (
        "from karpenter_gcp.clients import GCPClients\n"
        "c = GCPClients.create()\n"
        f"print(c.instances.get(project={PROJECT!r}, zone={ZONE!r}, instance='seeded').name)\n"
    )
    gce.add_instance(ZONE, {"name": "seeded"})
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOOGLE_")}
    env.update(gce.env())
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert out.stdout.strip() == "seeded"


def test_server_config_by_location(gce: FakeGCE, gcp_clients: GCPClients) -> None:
    gce.server_configs[LOCATION] = {
        "defaultClusterVersion": "1.31.5-gke.1023000",
        "channels": [
            {
                "channel": "REGULAR",
                "defaultVersion": "1.31.5-gke.1023000",
                "validVersions": ["1.31.5-gke.1023000", "1.30.9-gke.1"],
            }
        ],
    }
    config = gcp_clients.cluster_manager.get_server_config(
        name=f"projects/{PROJECT}/locations/{LOCATION}"
    )
    (channel,) = config.channels
    assert channel.channel.name == "REGULAR"
    assert list(channel.valid_versions) == ["1.31.5-gke.1023000", "1.30.9-gke.1"]
    with pytest.raises(gexc.NotFound):
        gcp_clients.cluster_manager.get_server_config(
            name=f"projects/{PROJECT}/locations/europe-west1"
        )
