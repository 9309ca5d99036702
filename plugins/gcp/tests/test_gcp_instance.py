"""InstanceProvider against the fake GCE server through the official google-cloud-compute
client: insert bodies as upstream builds them, spot scheduling, zone-operation waiting,
capacity errors → unavailable marks, cleanup after every failure path, get/list/delete."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from fakegce import CLUSTER, LOCATION, PROJECT, REGION, FakeGCE, FakeRequest, Response, gce_error
from karpenter_gcp.clients import (
    COMPUTE_ENDPOINT_ENV,
    CONTAINER_ENDPOINT_ENV,
    GCPClients,
    GCPCredentialsError,
    endpoint_overrides,
)
from karpenter_gcp.gceerrors import GCECapacityError
from karpenter_gcp.gke import ClusterInfo
from karpenter_gcp.instance import (
    CLOUD_PLATFORM_SCOPE,
    LABEL_CLUSTER_LOCATION,
    LABEL_CLUSTER_NAME,
    LABEL_NODECLASS,
    LABEL_NODEPOOL,
    LABEL_PROVISIONING_MODEL,
    AttachedDiskSpec,
    Instance,
    InstanceProvider,
    LaunchRequest,
    build_launch_request,
    instance_labels,
    instance_name,
    network_tags,
    nodeclaim_name,
    orphaned,
    parse_provider_id,
    pod_cidr_size,
    provider_id,
    sanitize_label,
)

from karpenter_core.plugin_api import (
    CreateError,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    UnavailableOfferings,
    VirtualClock,
)

ZONE = "us-central1-a"
OTHER_ZONE = "us-central1-b"
IMAGE = "projects/gke-node-images/global/images/gke-1314-cos-121-18867-90-4-c-pre"
SUBNET = f"projects/{PROJECT}/regions/{REGION}/subnetworks/default"
NETWORK = f"projects/{PROJECT}/global/networks/default"
CLUSTER_ID = "0123456789abcdef0123456789abcdef"
SA = "nodes@test-project.iam.gserviceaccount.com"


@pytest.fixture
def unavailable() -> UnavailableOfferings:
    return UnavailableOfferings(VirtualClock())


@pytest.fixture
def instances(gcp_clients: GCPClients, unavailable: UnavailableOfferings) -> InstanceProvider:
    return InstanceProvider(
        gcp_clients,
        PROJECT,
        unavailable,
        cluster_name=CLUSTER,
        cluster_location=LOCATION,
        region=REGION,
        retry_initial=0.01,
        retry_deadline=2.0,
    )


def request(nodeclaim: str = "default-abcde", **kw: object) -> LaunchRequest:
    capacity_type = str(kw.pop("capacity_type", "on-demand"))
    base: dict[str, object] = {
        "name": instance_name(nodeclaim),
        "zone": ZONE,
        "machine_type": "e2-standard-4",
        "capacity_type": capacity_type,
        "image": IMAGE,
        "boot_disk_size_gb": 80,
        "boot_disk_type": "pd-ssd",
        "network": NETWORK,
        "subnetwork": SUBNET,
        "pod_range_name": "pods",
        "max_pods": 32,
        "labels": instance_labels(
            cluster_name=CLUSTER,
            cluster_location=LOCATION,
            nodepool="default",
            nodeclass="default",
            capacity_type=capacity_type,
            cluster_id=CLUSTER_ID,
            nodeclass_labels={"team": "a"},
        ),
        "metadata": {"kube-env": "ZONE: us-central1-a", "kube-labels": "a=b"},
        "tags": network_tags(CLUSTER, CLUSTER_ID, ["extra"]),
        "service_account": SA,
    }
    base.update(kw)
    return LaunchRequest(**base)  # type: ignore[arg-type]


def assert_no_leak(gce: FakeGCE) -> None:
    with gce.lock:
        assert gce.instances == {}
        assert gce.disks == {}


# ---------------------------------------------------------------------------- pure helpers


def test_names_and_provider_ids_round_trip() -> None:
    assert instance_name("default-abcde") == "karpenter-default-abcde"
    assert nodeclaim_name("karpenter-default-abcde") == "default-abcde"
    pid = provider_id(PROJECT, ZONE, "karpenter-x")
    assert pid == f"gce://{PROJECT}/{ZONE}/karpenter-x"
    assert parse_provider_id(pid) == (PROJECT, ZONE, "karpenter-x")
    with pytest.raises(ValueError, match="gce://<project>/<zone>/<name>"):
        parse_provider_id("aws:///us-east-1a/i-123")


def test_label_keys_are_sanitized_as_upstream() -> None:
    assert sanitize_label("karpenter.sh/nodepool") == LABEL_NODEPOOL == "karpenter-sh-nodepool"
    assert LABEL_NODECLASS == "karpenter-k8s-gcp-gcenodeclass"


@pytest.mark.parametrize(
    ("max_pods", "prefix"), [(8, 28), (16, 27), (32, 26), (64, 25), (110, 24), (256, 23)]
)
def test_pod_range_follows_flexible_pod_cidr(max_pods: int, prefix: int) -> None:
    assert pod_cidr_size(max_pods) == prefix


def test_instance_labels_karpenter_keys_win_over_nodeclass_labels() -> None:
    labels = instance_labels(
        cluster_name="c",
        cluster_location="us-central1",
        nodepool="np",
        nodeclass="nc",
        capacity_type="spot",
        cluster_id="00ff",
        nodeclass_labels={LABEL_NODEPOOL: "spoofed", "team": "a"},
    )
    assert labels[LABEL_NODEPOOL] == "np"
    assert labels["team"] == "a"
    assert labels[LABEL_PROVISIONING_MODEL] == "spot"
    assert (
        labels["goog-gke-cluster-id-base32"] == "ad7q"
    )  # base32 of bytes 00 ff, unpadded, lower case
    assert labels["goog-gke-node"] == ""


def test_network_tags_include_cluster_id_tag_only_when_known() -> None:
    assert network_tags("c", CLUSTER_ID, ["x", "gke-c-node"]) == [
        "gke-c-node",
        "gke-c-01234567-node",
        "x",
    ]
    assert network_tags("c", "short") == ["gke-c-node"]


def test_launch_request_rejects_bad_capacity_type() -> None:
    with pytest.raises(ValueError, match="capacity type"):
        request(capacity_type="reserved")


# ---------------------------------------------------------------------------- create


def test_create_inserts_upstream_body_and_waits_for_the_operation(
    gce: FakeGCE, instances: InstanceProvider
) -> None:
    inst = instances.create(request())
    assert inst.provider_id == f"gce://{PROJECT}/{ZONE}/karpenter-default-abcde"
    assert inst.machine_type == "e2-standard-4"
    assert inst.capacity_type == "on-demand"
    assert inst.image == IMAGE
    assert inst.status == "RUNNING"  # read after the operation finished
    assert inst.nodepool == "default"
    assert inst.created is not None

    (body,) = gce.inserted_bodies()
    assert body["machineType"] == f"zones/{ZONE}/machineTypes/e2-standard-4"
    (boot,) = body["disks"]
    assert boot["boot"] is True and boot["autoDelete"] is True
    assert boot["initializeParams"] == {
        "sourceImage": IMAGE,
        "diskSizeGb": "80",
        "diskType": f"projects/{PROJECT}/zones/{ZONE}/diskTypes/pd-ssd",
    }
    (nic,) = body["networkInterfaces"]
    assert nic["subnetwork"] == SUBNET and nic["network"] == NETWORK
    assert nic["aliasIpRanges"] == [{"ipCidrRange": "/26", "subnetworkRangeName": "pods"}]
    assert "accessConfigs" not in nic
    assert body["serviceAccounts"] == [{"email": SA, "scopes": [CLOUD_PLATFORM_SCOPE]}]
    assert body["tags"]["items"] == [
        "gke-test-cluster-node",
        "gke-test-cluster-01234567-node",
        "extra",
    ]
    assert body["labels"][LABEL_CLUSTER_NAME] == CLUSTER
    assert body["labels"][LABEL_PROVISIONING_MODEL] == "on-demand"
    assert body["metadata"]["items"] == [
        {"key": "kube-env", "value": "ZONE: us-central1-a"},
        {"key": "kube-labels", "value": "a=b"},
    ]
    assert "provisioningModel" not in body.get("scheduling", {})
    # The operation was waited on until DONE (the fake reports one status per wait).
    waits = gce.requests_to("POST", r".*/zones/us-central1-a/operations/[^/]+/wait")
    assert len(waits) == gce.operation_polls


def test_spot_sets_provisioning_model_and_delete_on_preemption(
    gce: FakeGCE, instances: InstanceProvider
) -> None:
    inst = instances.create(request(capacity_type="spot"))
    assert inst.capacity_type == "spot"
    (body,) = gce.inserted_bodies()
    assert body["scheduling"] == {
        "provisioningModel": "SPOT",
        "preemptible": True,
        "automaticRestart": False,
        "onHostMaintenance": "TERMINATE",
        "instanceTerminationAction": "DELETE",
    }
    assert body["labels"][LABEL_PROVISIONING_MODEL] == "spot"


def test_secondary_and_local_ssd_disks_and_external_ip(
    gce: FakeGCE, instances: InstanceProvider
) -> None:
    disks = (
        AttachedDiskSpec(source_image="projects/p/global/images/cache", device_name="cache"),
        AttachedDiskSpec(local_ssd=True),
    )
    instances.create(request(disks=disks, external_ip=True, arm64=True, secure_boot=True))
    (body,) = gce.inserted_bodies()
    boot, cache, ssd = body["disks"]
    assert boot["initializeParams"]["architecture"] == "ARM64"
    assert cache["deviceName"] == "cache"
    assert cache["initializeParams"]["sourceImage"] == "projects/p/global/images/cache"
    assert ssd["type"] == "SCRATCH" and ssd["interface"] == "NVME"
    assert ssd["initializeParams"]["diskType"].endswith("/diskTypes/local-ssd")
    assert body["networkInterfaces"][0]["accessConfigs"] == [
        {"type": "ONE_TO_ONE_NAT", "name": "External NAT"}
    ]
    assert body["shieldedInstanceConfig"] == {"enableSecureBoot": True}
    with gce.lock:
        assert (ZONE, "cache") in gce.disks


def test_existing_instance_is_adopted_not_reinserted(
    gce: FakeGCE, instances: InstanceProvider
) -> None:
    first = instances.create(request())
    again = instances.create(request(image="projects/x/global/images/other"))
    assert again.provider_id == first.provider_id
    assert again.image == IMAGE  # the adopted instance's, from its boot disk
    assert len(gce.inserted_bodies()) == 1


def test_throttled_insert_is_retried(gce: FakeGCE, instances: InstanceProvider) -> None:
    gce.throttle_next("POST", r".*/zones/[^/]+/instances")
    inst = instances.create(request())
    assert inst.status == "RUNNING"
    assert len(gce.inserted_bodies()) == 2  # the throttled one and the retry


def test_throttled_operation_wait_is_retried(gce: FakeGCE, instances: InstanceProvider) -> None:
    gce.throttle_next("POST", r".*/operations/[^/]+/wait")
    assert instances.create(request()).status == "RUNNING"


# ---------------------------------------------------------------------------- failures


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "in-operation"])
@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("ZONE_RESOURCE_POOL_EXHAUSTED", "ZoneResourcePoolExhausted"),
        ("ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", "ZoneResourcePoolExhausted"),
        ("IP_SPACE_EXHAUSTED", "IPSpaceExhausted"),
        ("QUOTA_EXCEEDED", "QuotaExceeded"),
    ],
)
def test_capacity_errors_mark_the_offering_and_leave_nothing(
    gce: FakeGCE,
    instances: InstanceProvider,
    unavailable: UnavailableOfferings,
    code: str,
    reason: str,
    asynchronous: bool,
) -> None:
    gce.fail_next_insert(code, f"{code}: no room", zone=ZONE, asynchronous=asynchronous)
    with pytest.raises(InsufficientCapacityError) as info:
        instances.create(request(capacity_type="spot"))
    assert isinstance(info.value, GCECapacityError)
    assert info.value.gce_code == code and info.value.reason == reason
    assert ZONE in str(info.value) and "e2-standard-4" in str(info.value)
    assert unavailable.is_unavailable("e2-standard-4", ZONE, "spot")
    assert not unavailable.is_unavailable("e2-standard-4", ZONE, "on-demand")
    assert not unavailable.is_unavailable("e2-standard-4", OTHER_ZONE, "spot")
    assert_no_leak(gce)


def test_other_zone_still_launches_after_exhaustion(
    gce: FakeGCE, instances: InstanceProvider
) -> None:
    gce.fail_next_insert("ZONE_RESOURCE_POOL_EXHAUSTED", zone=ZONE, asynchronous=True)
    with pytest.raises(InsufficientCapacityError):
        instances.create(request())
    inst = instances.create(request(zone=OTHER_ZONE))
    assert inst.zone == OTHER_ZONE
    with gce.lock:
        assert list(gce.instances) == [(OTHER_ZONE, "karpenter-default-abcde")]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "in-operation"])
def test_other_errors_are_one_line_create_errors(
    gce: FakeGCE, instances: InstanceProvider, unavailable: UnavailableOfferings, asynchronous: bool
) -> None:
    gce.fail_next_insert(
        "RESOURCE_NOT_FOUND",
        "The resource 'projects/p/global/images/nope'\nwas not found",
        asynchronous=asynchronous,
        status=400,
    )
    with pytest.raises(CreateError) as info:
        instances.create(request(disks=(AttachedDiskSpec(device_name="data", size_gb=10),)))
    assert not isinstance(info.value, InsufficientCapacityError)
    assert "\n" not in str(info.value)
    assert "RESOURCE_NOT_FOUND" in str(info.value) or "was not found" in str(info.value)
    assert len(unavailable) == 0  # nothing marked
    assert_no_leak(gce)


def test_permission_denied_is_a_create_error_and_not_retried(
    gce: FakeGCE, instances: InstanceProvider
) -> None:
    gce.fail_next(
        "POST", r".*/zones/[^/]+/instances", status=403, reason="forbidden", message="no perm"
    )
    with pytest.raises(CreateError, match="no perm"):
        instances.create(request())
    assert len(gce.requests_to("POST", r".*/zones/[^/]+/instances")) == 1
    assert_no_leak(gce)


def test_operation_timeout_deletes_the_instance(gce: FakeGCE, instances: InstanceProvider) -> None:
    instances.operation_timeout = 0  # the first wait answer is not DONE, so time is up
    with pytest.raises(CreateError, match="not done"):
        instances.create(request())
    instances.operation_timeout = 120
    # The cleanup's own delete was waited on; nothing is left.
    assert_no_leak(gce)


def test_insert_accepted_but_answered_5xx_is_cleaned_up(
    gce: FakeGCE, instances: InstanceProvider
) -> None:
    """GCE created the instance but every answer to the insert is a 500: the retries run
    out, the launch fails, and the instance the first attempt made is deleted."""

    def accept_then_fail(req: FakeRequest) -> Response:
        gce._insert(req)
        return gce_error(500, "backendError", "internal error")

    remove = gce.route(
        "POST",
        r"/compute/v1/projects/(?P<project>[^/]+)/zones/(?P<zone>[^/]+)/instances",
        accept_then_fail,
    )
    try:
        with pytest.raises(CreateError, match="internal error"):
            instances.create(request())
    finally:
        remove()
    assert_no_leak(gce)


def test_retried_insert_that_went_through_is_adopted(
    gce: FakeGCE, instances: InstanceProvider
) -> None:
    """The first insert is accepted but answered 503 without a capacity code; the retry
    gets 409 alreadyExists, so the instance is the node's and is adopted."""
    answers: list[int] = []

    def accept_once_then_fail(req: FakeRequest) -> Response:
        answers.append(1)
        status, headers, body = gce._insert(req)
        if len(answers) == 1:
            return gce_error(503, "backendError", "try again")
        return status, headers, body

    remove = gce.route(
        "POST",
        r"/compute/v1/projects/(?P<project>[^/]+)/zones/(?P<zone>[^/]+)/instances",
        accept_once_then_fail,
    )
    try:
        inst = instances.create(request())
    finally:
        remove()
    assert inst.name == "karpenter-default-abcde"
    assert inst.image == IMAGE
    assert len(answers) == 2
    with gce.lock:
        assert list(gce.instances) == [(ZONE, "karpenter-default-abcde")]


def test_failure_reading_the_new_instance_deletes_it(
    gce: FakeGCE, instances: InstanceProvider
) -> None:
    """The insert succeeded but the instance cannot be read back (here: permission denied
    on the second get): the launch fails and the instance is deleted."""
    pattern = r".*/zones/[^/]+/instances/karpenter-default-abcde"
    calls: list[int] = []
    original = gce._get_instance

    def second_get_forbidden(req: FakeRequest) -> Response:
        calls.append(1)
        if len(calls) == 2:
            return gce_error(403, "forbidden", "denied")
        return original(req)

    remove = gce.route(
        "GET",
        r"/compute/v1/projects/(?P<project>[^/]+)/zones/(?P<zone>[^/]+)/instances/(?P<name>[^/]+)",
        second_get_forbidden,
    )
    try:
        with pytest.raises(CreateError, match="denied"):
            instances.create(request())
    finally:
        remove()
    assert len(gce.requests_to("DELETE", pattern)) == 1
    assert_no_leak(gce)


def test_failed_operation_with_leftover_non_autodelete_disk_is_cleaned(
    gce: FakeGCE, instances: InstanceProvider
) -> None:
    """A disk GCE keeps after the instance is gone (e.g. detached) is deleted too."""
    gce.fail_next_insert("ZONE_RESOURCE_POOL_EXHAUSTED", asynchronous=True)
    original = gce._delete_instance

    def keep_disks(req: FakeRequest) -> Response:
        with gce.lock:
            inst = gce.instances.get((req.match["zone"], req.match["name"]))
            for d in (inst or {}).get("disks") or []:
                d["autoDelete"] = False
        return original(req)

    remove = gce.route(
        "DELETE",
        r"/compute/v1/projects/(?P<project>[^/]+)/zones/(?P<zone>[^/]+)/instances/(?P<name>[^/]+)",
        keep_disks,
    )
    try:
        with pytest.raises(InsufficientCapacityError):
            instances.create(request(disks=(AttachedDiskSpec(device_name="data", size_gb=10),)))
    finally:
        remove()
    assert_no_leak(gce)
    deleted = {r.path.rsplit("/", 1)[-1] for r in gce.requests_to("DELETE", r".*/disks/[^/]+")}
    assert deleted == {"karpenter-default-abcde", "data"}


# ---------------------------------------------------------------------------- get / list / delete


def test_get_by_provider_id_and_by_name(gce: FakeGCE, instances: InstanceProvider) -> None:
    created = instances.create(request())
    by_id = instances.get(created.provider_id)
    assert by_id.name == created.name
    assert by_id.image == IMAGE  # read from the boot disk: GCE does not echo initializeParams
    assert by_id.status == "RUNNING" and by_id.capacity_type == "on-demand"
    assert instances.get(created.name).provider_id == created.provider_id
    with pytest.raises(NodeClaimNotFoundError):
        instances.get(provider_id(PROJECT, ZONE, "karpenter-missing"))
    with pytest.raises(NodeClaimNotFoundError):
        instances.get("karpenter-missing")


def test_list_finds_the_clusters_instances_across_zones_and_pages(
    gce: FakeGCE, instances: InstanceProvider
) -> None:
    gce.page_size = 2
    for i, zone in enumerate(["us-central1-a", "us-central1-b", "us-central1-f"] * 2):
        instances.create(request(f"default-{i}", zone=zone))
    mine = instance_labels(
        cluster_name=CLUSTER,
        cluster_location=LOCATION,
        nodepool="np",
        nodeclass="nc",
        capacity_type="on-demand",
    )
    gce.add_instance(
        ZONE, {"name": "other-cluster", "labels": {**mine, LABEL_CLUSTER_NAME: "other"}}
    )
    gce.add_instance(ZONE, {"name": "not-karpenter", "labels": {LABEL_CLUSTER_NAME: CLUSTER}})
    gce.add_instance(
        ZONE, {"name": "other-location", "labels": {**mine, LABEL_CLUSTER_LOCATION: "europe-west1"}}
    )
    gce.add_instance(
        ZONE,
        {
            "name": "old-karpenter",
            "labels": {k: v for k, v in mine.items() if k != LABEL_CLUSTER_LOCATION},
        },
    )
    gce.add_instance("europe-west1-b", {"name": "other-region", "labels": mine})

    names = sorted(i.name for i in instances.list())
    assert names == sorted([f"karpenter-default-{i}" for i in range(6)] + ["old-karpenter"])
    pages = gce.requests_to("GET", r".*/aggregated/instances")
    assert len(pages) > 1
    assert all(p.query.get("filter") for p in pages)


def test_list_needs_the_cluster_name(
    gcp_clients: GCPClients, unavailable: UnavailableOfferings
) -> None:
    with pytest.raises(ValueError, match="cluster name"):
        InstanceProvider(gcp_clients, PROJECT, unavailable).list()


def test_delete_removes_instance_and_disks_then_reports_not_found(
    gce: FakeGCE, instances: InstanceProvider
) -> None:
    created = instances.create(request())
    instances.delete(created.provider_id)
    assert_no_leak(gce)
    with pytest.raises(NodeClaimNotFoundError):
        instances.delete(created.provider_id)
    with pytest.raises(NodeClaimNotFoundError):
        instances.delete("karpenter-missing")


def test_delete_of_a_stopping_instance_does_not_send_another_delete(
    gce: FakeGCE, instances: InstanceProvider
) -> None:
    created = instances.create(request())
    instances.delete(created.provider_id, wait=False)
    instances.delete(created.provider_id)
    assert len(gce.requests_to("DELETE", r".*/instances/[^/]+")) == 1


def test_clients_reach_the_fake_by_environment_alone(gce_env: FakeGCE) -> None:
    clients = GCPClients.create()
    assert clients.compute_endpoint == gce_env.url
    assert clients.container_endpoint == gce_env.url


# ---------------------------------------------------------------------------- assembling a request

TEMPLATE = {
    "cluster-name": CLUSTER,
    "configure-sh": "#!/bin/bash",
    "kube-env": "CLUSTER_NAME: test-cluster\nKUBELET_ARGS: --v=2 --max-pods=110",
    "kube-labels": "cloud.google.com/gke-nodepool=default-pool",
    "goog-k8s-node-pool-name": "default-pool",
}


def cluster(private: bool = True) -> ClusterInfo:
    return ClusterInfo(
        name=CLUSTER,
        id=CLUSTER_ID,
        location=LOCATION,
        network=NETWORK,
        subnetwork=SUBNET,
        pod_range_name="gke-pods",
        private_nodes=private,
    )


def built(**kw: object) -> LaunchRequest:
    base: dict[str, object] = {
        "nodeclaim": "default-xyz",
        "nodepool": "default",
        "nodeclass": "gce",
        "zone": ZONE,
        "machine_type": "a2-highgpu-1g",
        "capacity_type": "spot",
        "image": IMAGE,
        "cluster": cluster(),
        "cluster_location": LOCATION,
        "source_metadata": TEMPLATE,
        "service_account": SA,
        "max_pods": 64,
        "extra_network_tags": ["web"],
        "gpu": True,
    }
    base.update(kw)
    return build_launch_request(**base)  # type: ignore[arg-type]


def test_build_launch_request_follows_the_cluster_and_template() -> None:
    r = built()
    assert r.name == "karpenter-default-xyz"
    assert (r.network, r.subnetwork, r.pod_range_name) == (NETWORK, SUBNET, "gke-pods")
    assert r.external_ip is False  # private nodes
    assert r.on_host_maintenance == "TERMINATE"
    assert r.labels[LABEL_NODEPOOL] == "default" and r.labels[LABEL_CLUSTER_LOCATION] == LOCATION
    assert r.tags == ("gke-test-cluster-node", "gke-test-cluster-01234567-node", "web")
    assert "goog-k8s-node-pool-name" not in r.metadata
    assert "ZONE: us-central1-a" in r.metadata["kube-env"]
    assert "--max-pods=64" in r.metadata["kube-env"]
    public = built(cluster=cluster(private=False), subnetwork="projects/p/regions/r/subnetworks/x")
    assert public.external_ip is True
    assert public.subnetwork == "projects/p/regions/r/subnetworks/x"


def test_build_launch_request_passes_shielded_and_kms_settings(
    gce: FakeGCE, instances: InstanceProvider
) -> None:
    key = "projects/p/locations/l/keyRings/r/cryptoKeys/k"
    instances.create(built(secure_boot=True, vtpm=False, disk_kms_key=key))
    (body,) = gce.inserted_bodies()
    assert body["shieldedInstanceConfig"] == {"enableSecureBoot": True, "enableVtpm": False}
    assert body["disks"][0]["diskEncryptionKey"] == {"kmsKeyName": key}


def test_build_launch_request_needs_a_service_account() -> None:
    with pytest.raises(ValueError, match="no service account"):
        built(service_account="")


def test_built_request_launches(gce: FakeGCE, instances: InstanceProvider) -> None:
    inst = instances.create(built())
    assert inst.capacity_type == "spot" and inst.cluster_location == LOCATION
    (body,) = gce.inserted_bodies()
    assert body["scheduling"]["onHostMaintenance"] == "TERMINATE"
    items = {i["key"]: i["value"] for i in body["metadata"]["items"]}
    assert items["configure-sh"] == "#!/bin/bash"
    assert "karpenter.sh/unregistered=true:NoExecute" in items["kube-env"]


# ---------------------------------------------------------------------------- clients


def test_endpoint_overrides_are_validated() -> None:
    assert endpoint_overrides({}) == ("", "")
    assert endpoint_overrides(
        {COMPUTE_ENDPOINT_ENV: "http://127.0.0.1:1/", CONTAINER_ENDPOINT_ENV: "https://c.example"}
    ) == ("http://127.0.0.1:1", "https://c.example")
    with pytest.raises(ValueError, match="GCP_COMPUTE_ENDPOINT=localhost:1"):
        endpoint_overrides({COMPUTE_ENDPOINT_ENV: "localhost:1"})


def test_explicit_endpoints_win_over_the_environment(gce_env: FakeGCE) -> None:
    clients = GCPClients.create(
        compute_endpoint="http://127.0.0.1:9", container_endpoint="http://127.0.0.1:10"
    )
    assert clients.compute_endpoint == "http://127.0.0.1:9"
    assert clients.container_endpoint == "http://127.0.0.1:10"


def test_missing_credentials_are_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without an endpoint override the clients need ADC; a credentials file that does not
    exist is reported in one line naming how to provide credentials."""
    monkeypatch.delenv(COMPUTE_ENDPOINT_ENV, raising=False)
    monkeypatch.delenv(CONTAINER_ENDPOINT_ENV, raising=False)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    with pytest.raises(GCPCredentialsError, match="no usable Google Cloud credentials") as info:
        GCPClients.create()
    assert "\n" not in str(info.value)


def test_update_labels_merges_with_the_fingerprint(
    gce: FakeGCE, instances: InstanceProvider
) -> None:
    created = instances.create(request())
    updated = instances.update_labels(
        created.provider_id, {"karpenter-sh-nodeclaim": "default-abcde"}
    )
    assert updated.labels["karpenter-sh-nodeclaim"] == "default-abcde"
    assert updated.labels[LABEL_NODEPOOL] == "default"  # kept
    (call,) = gce.requests_to("POST", r".*/instances/[^/]+/setLabels")
    assert call.json["labelFingerprint"] == "fp"
    # Nothing new to set: no call.
    instances.update_labels(created.provider_id, {"team": "a"})
    assert len(gce.requests_to("POST", r".*/instances/[^/]+/setLabels")) == 1


def test_update_labels_retries_once_on_a_stale_fingerprint(
    gce: FakeGCE, instances: InstanceProvider
) -> None:
    created = instances.create(request())
    gce.fail_next("POST", r".*/setLabels", status=412, reason="conditionNotMet", message="stale")
    updated = instances.update_labels(created.provider_id, {"x": "1"})
    assert updated.labels["x"] == "1"
    assert len(gce.requests_to("POST", r".*/instances/[^/]+/setLabels")) == 2
    with pytest.raises(NodeClaimNotFoundError):
        instances.update_labels(provider_id(PROJECT, ZONE, "karpenter-missing"), {"x": "1"})


# ---------------------------------------------------------------------------- garbage collection


def test_orphaned_follows_upstream_rules() -> None:
    now = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)
    labels = {LABEL_CLUSTER_LOCATION: LOCATION}

    def inst(name: str, age_s: float | None, **kw: object) -> Instance:
        created = None if age_s is None else now - dt.timedelta(seconds=age_s)
        base: dict[str, object] = {
            "name": name,
            "project": PROJECT,
            "zone": ZONE,
            "machine_type": "e2-medium",
            "capacity_type": "on-demand",
            "labels": labels,
            "created": created,
        }
        base.update(kw)
        return Instance(**base)  # type: ignore[arg-type]

    candidates = [
        inst("old-orphan", 600),
        inst("young-orphan", 60),
        inst("claimed", 600),
        inst("pre-location-label", 600, labels={}),
        inst("unknown-age", None),
    ]
    known = [provider_id(PROJECT, ZONE, "claimed")]
    assert [i.name for i in orphaned(candidates, known, now)] == ["old-orphan"]
    assert [i.name for i in orphaned(candidates, known, now, grace=30)] == [
        "old-orphan",
        "young-orphan",
    ]


def test_orphans_of_a_listing_are_deleted(gce: FakeGCE, instances: InstanceProvider) -> None:
    kept = instances.create(request("kept"))
    gone = instances.create(request("gone"))
    later = max(i.created for i in instances.list() if i.created) + dt.timedelta(hours=1)
    for orphan in orphaned(instances.list(), [kept.provider_id], later):
        instances.delete(orphan.provider_id)
    assert [i.name for i in instances.list()] == [kept.name]
    with pytest.raises(NodeClaimNotFoundError):
        instances.get(gone.provider_id)
