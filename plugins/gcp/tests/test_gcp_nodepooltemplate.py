"""Source node pool selection, template matching, the fallback pool and the GKE cluster
reading, pure and against the fake GKE/Compute server with the official clients."""

from __future__ import annotations

import json

import pytest
from fakegce import CLUSTER, LOCATION, PROJECT, REGION, FakeGCE, FakeRequest, Response
from google.cloud import container_v1
from karpenter_gcp.clients import GCPClients
from karpenter_gcp.gke import ClusterInfo, GKEAPIError, GKEProvider, cluster_info, region_of
from karpenter_gcp.nodepooltemplate import (
    DEFAULT_POOL,
    FALLBACK_POOL,
    NODE_POOL_NAME_LABEL,
    NodePoolTemplateProvider,
    SourcePoolError,
    TemplateRef,
    fallback_node_pool,
    find_template,
    select_source_pool,
)

CLUSTER_ID = "f00dbabe" + "0" * 56
KUBE_ENV = "CLUSTER_NAME: test-cluster\nKUBELET_ARGS: --v=2 --max-pods=110"


def cluster_body(**kw: object) -> dict[str, object]:
    """An upstream-shaped GKE cluster (fields as the GKE REST API answers them)."""
    body: dict[str, object] = {
        "name": CLUSTER,
        "id": CLUSTER_ID,
        "location": LOCATION,
        "locations": ["us-central1-f", "us-central1-a"],
        "network": "default",
        "subnetwork": "default",
        "networkConfig": {
            "network": f"projects/{PROJECT}/global/networks/default",
            "subnetwork": f"projects/{PROJECT}/regions/{REGION}/subnetworks/default",
        },
        "ipAllocationPolicy": {"useIpAliases": True, "clusterSecondaryRangeName": "gke-pods"},
        "privateClusterConfig": {"enablePrivateNodes": True},
        "workloadIdentityConfig": {"workloadPool": f"{PROJECT}.svc.id.goog"},
        "currentMasterVersion": "1.31.5-gke.1023000",
        "currentNodeVersion": "1.31.5-gke.1023000",
        "endpoint": "10.0.0.2",
        "nodePools": [
            {"name": DEFAULT_POOL, "status": "RUNNING"},
            {"name": "gpu", "status": "PROVISIONING"},
        ],
    }
    body.update(kw)
    return body


def template_body(name: str, pool: str, cluster: str = CLUSTER) -> dict[str, object]:
    return {
        "name": name,
        "properties": {
            "labels": {NODE_POOL_NAME_LABEL: pool, "goog-gke-node": ""},
            "metadata": {
                "items": [
                    {"key": "cluster-name", "value": cluster},
                    {"key": "kube-env", "value": KUBE_ENV},
                    {"key": "kube-labels", "value": f"cloud.google.com/gke-nodepool={pool}"},
                ]
            },
        },
    }


@pytest.fixture
def gke(gcp_clients: GCPClients) -> GKEProvider:
    return GKEProvider(gcp_clients, PROJECT, LOCATION, CLUSTER)


@pytest.fixture
def templates(gcp_clients: GCPClients, gke: GKEProvider) -> NodePoolTemplateProvider:
    return NodePoolTemplateProvider(
        gcp_clients, gke, PROJECT, REGION, CLUSTER, service_account="sa@x"
    )


# ---------------------------------------------------------------------------- pure


def test_region_of_zone_and_region() -> None:
    assert region_of("us-central1-a") == "us-central1"
    assert region_of("us-central1") == "us-central1"


@pytest.mark.parametrize(
    ("pools", "preferred", "expected"),
    [
        ([("a", "RUNNING"), (DEFAULT_POOL, "RUNNING")], "", DEFAULT_POOL),
        ([("b", "RUNNING"), ("a", "RUNNING_WITH_ERROR"), (DEFAULT_POOL, "STOPPING")], "", "a"),
        ([(FALLBACK_POOL, "RUNNING"), ("z", "RUNNING")], "", "z"),
        ([(FALLBACK_POOL, "RUNNING")], "", FALLBACK_POOL),
        ([(DEFAULT_POOL, "RUNNING"), ("mine", "RUNNING")], "mine", "mine"),
    ],
)
def test_select_source_pool_follows_upstream_order(
    pools: list[tuple[str, str]], preferred: str, expected: str
) -> None:
    assert select_source_pool(pools, preferred) == expected


def test_select_source_pool_errors() -> None:
    with pytest.raises(SourcePoolError, match="no eligible node pool"):
        select_source_pool([("a", "PROVISIONING")])
    with pytest.raises(SourcePoolError, match="'mine' not found"):
        select_source_pool([(DEFAULT_POOL, "RUNNING")], "mine")
    with pytest.raises(SourcePoolError, match="status ERROR"):
        select_source_pool([("mine", container_v1.NodePool.Status.ERROR)], "mine")


def test_find_template_needs_cluster_and_pool() -> None:
    refs = [
        TemplateRef("t-other", {NODE_POOL_NAME_LABEL: "p"}, {"cluster-name": "other"}),
        TemplateRef("t-wrong-pool", {NODE_POOL_NAME_LABEL: "q"}, {"cluster-name": CLUSTER}),
        TemplateRef("t-ok", {NODE_POOL_NAME_LABEL: "p"}, {"cluster-name": CLUSTER}),
    ]
    found = find_template(refs, CLUSTER, "p")
    assert found is not None and found.name == "t-ok"
    assert find_template(refs, CLUSTER, "none") is None


def test_cluster_info_from_an_upstream_shaped_cluster() -> None:
    cluster = container_v1.Cluster.from_json(json.dumps(cluster_body()), ignore_unknown_fields=True)
    info = cluster_info(cluster)
    assert info.id == CLUSTER_ID
    assert info.locations == ("us-central1-a", "us-central1-f")
    assert info.subnetwork == f"projects/{PROJECT}/regions/{REGION}/subnetworks/default"
    assert info.pod_range_name == "gke-pods"
    assert info.private_nodes is True
    assert info.workload_pool == f"{PROJECT}.svc.id.goog"
    bare = container_v1.Cluster(name="c", location="europe-west1", subnetwork="nodes")
    assert cluster_info(bare).subnetwork == "regions/europe-west1/subnetworks/nodes"
    assert cluster_info(bare).private_nodes is False


def test_fallback_pool_follows_cluster_settings() -> None:
    info = ClusterInfo(name=CLUSTER, private_nodes=True, workload_pool="p.svc.id.goog")
    pool = fallback_node_pool(info, "sa@x")
    assert pool.name == FALLBACK_POOL and pool.initial_node_count == 0
    assert pool.autoscaling.enabled is False
    assert pool.config.image_type == "COS_CONTAINERD"
    assert pool.config.service_account == "sa@x"
    assert pool.config.shielded_instance_config.enable_secure_boot is True
    assert pool.config.metadata["block-project-ssh-keys"] == "true"
    assert pool.config.workload_metadata_config.mode.name == "GKE_METADATA"
    assert pool.network_config.enable_private_nodes is True
    minimal = fallback_node_pool(None)
    assert "workload_metadata_config" not in minimal.config
    assert "network_config" not in minimal


# ---------------------------------------------------------------------------- over HTTP


def test_gke_provider_reads_and_caches_the_cluster(gce: FakeGCE, gke: GKEProvider) -> None:
    gce.add_cluster(cluster_body())
    assert gke.info().id == CLUSTER_ID
    assert gke.zones() == ["us-central1-a", "us-central1-f"]
    assert len(gce.requests_to("GET", r"/v1/projects/.*/clusters/[^/]+")) == 1


def test_gke_provider_missing_cluster_is_one_line(gce: FakeGCE, gke: GKEProvider) -> None:
    with pytest.raises(GKEAPIError, match="getting GKE cluster") as info:
        gke.cluster()
    assert "\n" not in str(info.value)


def test_source_metadata_from_the_default_pools_template(
    gce: FakeGCE, templates: NodePoolTemplateProvider
) -> None:
    gce.add_cluster(cluster_body())
    gce.add_instance_template(template_body("gke-other-cluster", DEFAULT_POOL, cluster="other"))
    gce.add_instance_template(template_body("gke-test-cluster-default-pool-1", DEFAULT_POOL))
    meta = templates.source_metadata()
    assert templates.source_pool == DEFAULT_POOL
    assert meta["kube-env"] == KUBE_ENV
    assert meta["cluster-name"] == CLUSTER


def test_source_metadata_without_template_is_an_error(
    gce: FakeGCE, templates: NodePoolTemplateProvider
) -> None:
    gce.add_cluster(cluster_body())
    with pytest.raises(SourcePoolError, match="no instance template"):
        templates.source_metadata()


def test_ensure_fallback_pool_creates_it_once(
    gce: FakeGCE, templates: NodePoolTemplateProvider
) -> None:
    gce.add_cluster(cluster_body())
    assert templates.ensure_fallback_pool() is True
    (create,) = gce.requests_to("POST", r"/v1/projects/.*/clusters/[^/]+/nodePools")
    # The REST transport sends enums as numbers: read the body back as the API type.
    pool = container_v1.NodePool.from_json(json.dumps(create.json["nodePool"]))
    assert pool.name == FALLBACK_POOL
    assert pool.config.workload_metadata_config.mode.name == "GKE_METADATA"
    assert pool.network_config.enable_private_nodes is True
    assert templates.ensure_fallback_pool() is False
    assert len(gce.requests_to("POST", r"/v1/projects/.*/clusters/[^/]+/nodePools")) == 1


def test_kubernetes_version_and_zone_fallback_to_the_region(
    gce: FakeGCE, gcp_clients: GCPClients
) -> None:
    """A cluster without node locations launches in every zone of its region (the zones
    list of the project, filtered by the region prefix)."""

    def zones(req: FakeRequest) -> Response:
        names = ["us-central1-c", "us-central1-a", "europe-west1-b"]
        return 200, {}, {"items": [{"name": n} for n in names]}

    gce.add_cluster(cluster_body(locations=[]))
    remove = gce.route("GET", r"/compute/v1/projects/[^/]+/zones", zones)
    try:
        gke = GKEProvider(gcp_clients, PROJECT, LOCATION, CLUSTER)
        assert gke.zones() == ["us-central1-a", "us-central1-c"]
        assert gke.zones() == ["us-central1-a", "us-central1-c"]  # cached
    finally:
        remove()
    assert len(gce.requests_to("GET", r"/compute/v1/projects/[^/]+/zones")) == 1
    assert gke.kubernetes_version() == "1.31.5-gke.1023000"
