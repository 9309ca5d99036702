"""Harness for ``karpenter serve --cloud-provider gcp`` end to end on a real control plane,
with Compute Engine and GKE played by the GCP plugin's fake server.

What runs where:

- **Google Cloud**: ``FakeGCE`` (``plugins/gcp/tests/fakegce.py``) in the test process, one
  per test: a plain-HTTP server the official ``google-cloud-compute`` and
  ``google-cloud-container`` clients in the Karpenter subprocess talk to (instances and
  their zone operations, disks, region instance templates, the GKE cluster and its node
  pools), with an inventory the tests read and fault injection
  (:meth:`FakeGCE.fail_next_insert`). Its directory is put on ``sys.path`` here because
  pytest's rootdir-relative imports do not reach it from ``tests/integration``. Seeded per
  test (:meth:`GCP.seed`): the GKE cluster (:func:`cluster_body`, its zones
  :data:`ZONES`) with a RUNNING ``default-pool`` and that pool's regional instance
  template (:func:`template_body`, the bootstrap metadata Karpenter copies), the region's
  machine types (the plugin's bundled us-central1 records, served paged by
  ``fakegce_catalog`` in the fake's zones), and the node images a GCENodeClass may name
  (:data:`IMAGES`, answered by the images route this module adds: with credentials the
  status controller looks every image up in Compute). The price table's path has no
  table, so prices come from the bundled snapshot (the documented fallback) without
  waiting on the internet.
- **Karpenter**: ``karpenter serve --cloud-provider gcp`` subprocesses (:class:`GCPServe`,
  serve_harness's :class:`Serve` without the developer's own Google settings in its
  environment) reaching the fake through ``FakeGCE.env()`` (``GCP_COMPUTE_ENDPOINT`` /
  ``GCP_CONTAINER_ENDPOINT``: plain http, so anonymous credentials) and given the settings
  upstream requires (``PROJECT_ID``, ``CLUSTER_LOCATION``, ``CLUSTER_NAME``).
- **The instances' kubelets**: :class:`NodeJoiner`. A GKE node's kubelet registers a Node
  named after its instance with the provider id the GCE cloud provider gives it
  (``gce://<project>/<zone>/<name>``), the labels and taints Karpenter put in its
  ``kube-env`` / ``kube-labels`` metadata, and the cloud node manager adds the instance
  type, zone and region. The joiner polls the fake's inventory and registers that Node for
  each RUNNING Karpenter instance whose NodeClaim names it, taking labels, taints and
  resources from the NodeClaim (what the metadata carries); when an instance disappears
  from GCE its Node is deleted, as the cloud node lifecycle controller does. From then on
  serve_harness's fake kubelet keeps the Node Ready and runs the pods the real
  kube-scheduler binds to it.

The cloud-independent parts (the serve wrapper, ``wait``, the NodePool and Deployment
manifests, the joiner's loop, the Node a kubelet registers, the teardown report) are
``cloud_harness``'s; this module gives what is Google Cloud's.

Waits poll with generous deadlines and assert on state, never on how long something took.
"""

from __future__ import annotations

import copy
import sys
import threading
from collections.abc import Hashable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest
from cloud_harness import (
    CloudWorld,
    ScrubbedServe,
    can_launch,
    claims_by_machine,
    kubelet_node,
    running,
)
from cloud_harness import NodeJoiner as CloudNodeJoiner
from serve_harness import Cluster, Serve

FAKEGCE_DIR = Path(__file__).resolve().parents[2] / "plugins" / "gcp" / "tests"
if str(FAKEGCE_DIR) not in sys.path:
    sys.path.insert(0, str(FAKEGCE_DIR))

from fakegce import (  # noqa: E402 -- needs FAKEGCE_DIR on sys.path
    CLUSTER,
    PROJECT,
    REGION,
    ZONES,
    FakeGCE,
    FakeRequest,
    Response,
    gce_error,
)
from fakegce_catalog import CatalogRoutes, catalog_routes  # noqa: E402 -- the same

CLUSTER_ID = "c0ffee00" + "1" * 56
"""The GKE cluster's id (hex): its base32 form is a GCE label, its prefix a network tag."""
KUBE_ENV = (
    "CLUSTER_NAME: test-cluster\n"
    "ZONE: us-central1-x\n"
    "KUBERNETES_MASTER_NAME: 10.0.0.2\n"
    "KUBELET_ARGS: --v=2 --cloud-provider=external --max-pods=110 "
    "--node-labels=cloud.google.com/gke-nodepool=default-pool\n"
)
SERVICE_ACCOUNT = "karpenter-nodes@test-project.iam.gserviceaccount.com"
SOURCE_POOL = "default-pool"
# Two x86-64 machine types of the bundled us-central1 catalogue.
ALLOWED_TYPES = ("e2-standard-2", "e2-standard-4")

IMAGE_PROJECT = "gke-node-images"
IMAGES = (
    "gke-1330-gke1000000-cos-121-18867-90-4-c-pre",
    "gke-1330-gke1100000-cos-121-18867-90-12-c-pre",
)
"""Node images the fake's images route knows (both amd64); GCENodeClasses name them by
``id`` terms (:func:`image_id`)."""

GCENODECLASS = ("karpenter.k8s.gcp/v1alpha1", "GCENodeClass")
PROVIDER_ID_PREFIX = "gce://"
# Upstream's GCE labels on Karpenter's instances (karpenter.sh/nodepool sanitised).
NODEPOOL_GCE_LABEL = "karpenter-sh-nodepool"
NODECLASS_GCE_LABEL = "karpenter-k8s-gcp-gcenodeclass"
CLUSTER_NAME_GCE_LABEL = "goog-k8s-cluster-name"
CLUSTER_LOCATION_GCE_LABEL = "goog-k8s-cluster-location"

# Settings of the developer's environment that would send the clients elsewhere.
FOREIGN_VARS = (
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_CLOUD_PROJECT",
    "CLOUDSDK_CONFIG",
    "GOOGLE_API_USE_CLIENT_CERTIFICATE",
    "GOOGLE_CLOUD_UNIVERSE_DOMAIN",
    "GCP_PRICING_CSV_ENDPOINT",
)


def gcp_can_launch() -> bool:
    """Whether the installed GCP plugin says it can launch (its CloudProviderSpec)."""
    return can_launch("gcp")


def image_id(name: str) -> str:
    """The ``projects/<p>/global/images/<name>`` path of one of :data:`IMAGES`."""
    return f"projects/{IMAGE_PROJECT}/global/images/{name}"


def last(url: str) -> str:
    return str(url).rstrip("/").rsplit("/", 1)[-1]


# --------------------------------------------------------------------------- instances


def zone_of(instance: Mapping[str, Any]) -> str:
    """The zone name of an instance (GCE answers a zone URL)."""
    return last(str(instance.get("zone") or ""))


def machine_type_of(instance: Mapping[str, Any]) -> str:
    return last(str(instance.get("machineType") or ""))


def kubelet_provider_id(instance: Mapping[str, Any]) -> str:
    """The provider id the GCE cloud provider gives an instance's Node."""
    return f"{PROVIDER_ID_PREFIX}{PROJECT}/{zone_of(instance)}/{instance['name']}"


def metadata_of(instance: Mapping[str, Any]) -> dict[str, str]:
    """The instance's metadata items as a dict."""
    items = (instance.get("metadata") or {}).get("items") or []
    return {str(i.get("key")): str(i.get("value") or "") for i in items}


def is_karpenters(instance: Mapping[str, Any]) -> bool:
    """Labelled with a NodePool (Karpenter's instances; nothing else is in the fake)."""
    return NODEPOOL_GCE_LABEL in (instance.get("labels") or {})


# --------------------------------------------------------------------------- node joiner


def node_for(instance: Mapping[str, Any], nodeclaim: Mapping[str, Any]) -> dict[str, Any]:
    """The Node the instance's kubelet registers (:func:`cloud_harness.kubelet_node`):
    named after the instance, with the machine type, zone and region the cloud node manager
    reads from it and the NodePool of its GCE label (``kube-labels`` in the metadata carry
    the NodeClaim's labels)."""
    name = str(instance["name"])
    zone = zone_of(instance)
    return kubelet_node(
        name,
        kubelet_provider_id(instance),
        nodeclaim,
        instance_type=machine_type_of(instance),
        zone=zone,
        region=zone.rsplit("-", 1)[0],
        pool=(instance.get("labels") or {}).get(NODEPOOL_GCE_LABEL),
        machine_id=str(instance.get("id") or name),
        kubelet_version="v1.33.0-gke.1000000",
        os_image="Container-Optimized OS from Google",
    )


class NodeJoiner(CloudNodeJoiner):
    """Plays the kubelets of Karpenter's instances (see the module docstring), keyed by
    (zone, instance name). An instance boots once it is ``RUNNING`` (one whose insert
    failed stays ``TERMINATED`` and never boots)."""

    thread_name = "gcp-node-joiner"

    def __init__(self, gce: FakeGCE, kube: Any, interval: float = 0.25) -> None:
        super().__init__(kube, interval)
        self.gce = gce

    def machines(self) -> dict[Hashable, dict[str, Any]]:
        with self.gce.lock:
            return {
                key: copy.deepcopy(inst)
                for key, inst in self.gce.instances.items()
                if is_karpenters(inst)
            }

    def booted(self, machine: Mapping[str, Any]) -> bool:
        return machine.get("status") == "RUNNING"

    def provider_id(self, machine: Mapping[str, Any]) -> str:
        return kubelet_provider_id(machine)

    def node_for(self, machine: Mapping[str, Any], nodeclaim: Mapping[str, Any]) -> dict[str, Any]:
        return node_for(machine, nodeclaim)


# --------------------------------------------------------------------------- the fake's seed


def cluster_body() -> dict[str, Any]:
    """The GKE cluster as the GKE REST API answers it, with a RUNNING ``default-pool``."""
    return {
        "name": CLUSTER,
        "id": CLUSTER_ID,
        "location": REGION,
        "locations": list(ZONES),
        "network": "default",
        "subnetwork": "default",
        "networkConfig": {
            "network": f"projects/{PROJECT}/global/networks/default",
            "subnetwork": f"projects/{PROJECT}/regions/{REGION}/subnetworks/default",
        },
        "ipAllocationPolicy": {"useIpAliases": True, "clusterSecondaryRangeName": "gke-pods"},
        "currentMasterVersion": "1.33.0-gke.1000000",
        "currentNodeVersion": "1.33.0-gke.1000000",
        "endpoint": "10.0.0.2",
        "nodePools": [{"name": SOURCE_POOL, "status": "RUNNING"}],
    }


def template_body() -> dict[str, Any]:
    """The regional instance template GKE made for ``default-pool``: its label names the
    pool, its ``cluster-name`` metadata the cluster, and it holds the bootstrap."""
    return {
        "name": f"gke-{CLUSTER}-{SOURCE_POOL}-0a1b2c3d",
        "properties": {
            "labels": {"goog-k8s-node-pool-name": SOURCE_POOL, "goog-gke-node": ""},
            "metadata": {
                "items": [
                    {"key": "cluster-name", "value": CLUSTER},
                    {"key": "cluster-location", "value": REGION},
                    {"key": "kube-env", "value": KUBE_ENV},
                    {
                        "key": "kube-labels",
                        "value": f"cloud.google.com/gke-nodepool={SOURCE_POOL},"
                        "cloud.google.com/gke-netd-ready=true",
                    },
                    {"key": "configure-sh", "value": "#!/bin/bash\necho configure\n"},
                    {"key": "user-data", "value": "#cloud-config\n"},
                ]
            },
        },
    }


def serve_bundled_machine_types(gce: FakeGCE) -> CatalogRoutes:
    """Make the fake answer ``machineTypes.aggregatedList`` with the plugin's bundled
    us-central1 records in the fake's zones (200 a page, so the client's paging runs) and
    list those zones."""
    from fakegce_catalog import machine_type_json
    from karpenter_gcp.catalogue import load_snapshot

    routes = catalog_routes(gce)
    records = [
        machine_type_json(
            mt.name,
            zone,
            cpus=mt.guest_cpus,
            memory_mb=mt.memory_mb,
            architecture=mt.architecture or None,
            accelerators=[(a.type, a.count) for a in mt.accelerators],
            local_ssd_partitions=mt.local_ssd_partitions,
            shared_cpu=mt.is_shared_cpu,
        )
        for mt in load_snapshot(REGION).machine_types
        if not mt.deprecated
        for zone in ZONES
        if zone in mt.zones
    ]
    routes.add_machine_types(records)
    with routes.lock:
        routes.zones = list(ZONES)
        routes.page_size = 200
    return routes


class ImageRoutes:
    """``GET /compute/v1/projects/{p}/global/images`` answering the ``name=<name>`` /
    ``name=<prefix>*`` filters image resolution sends, from :attr:`images`."""

    def __init__(self, gce: FakeGCE) -> None:
        self.lock = threading.Lock()
        self.images: dict[tuple[str, str], dict[str, Any]] = {}
        gce.route("GET", r"/compute/v1/projects/(?P<project>[^/]+)/global/images", self.list_images)

    def add(self, project: str, name: str, *, architecture: str = "X86_64") -> None:
        with self.lock:
            self.images[(project, name)] = {
                "kind": "compute#image",
                "name": name,
                "architecture": architecture,
                "creationTimestamp": "2026-01-01T00:00:00.000-08:00",
                "status": "READY",
            }

    def list_images(self, req: FakeRequest) -> Response:
        project = req.match["project"]
        text = req.query.get("filter", "").strip()
        if text and not text.startswith("name="):
            return gce_error(400, "invalid", f"unsupported filter {text!r}")
        wanted = text.removeprefix("name=").strip().strip('"')
        with self.lock:
            items = [
                copy.deepcopy(body)
                for (p, name), body in sorted(self.images.items())
                if p == project
                and (
                    not wanted
                    or (name.startswith(wanted[:-1]) if wanted.endswith("*") else name == wanted)
                )
            ]
        return 200, {}, {"kind": "compute#imageList", "items": items}


# --------------------------------------------------------------------------- serve


class GCPServe(ScrubbedServe):
    """A ``karpenter serve`` subprocess whose environment holds none of the developer's
    own Google settings: the clients must take the fake's endpoints."""

    foreign_vars = FOREIGN_VARS


# --------------------------------------------------------------------------- the GCP world


class GCP(CloudWorld):
    """The cluster, the fake GCE, the node joiner and the ``karpenter serve`` processes."""

    provider = "gcp"
    nodeclass_crd = "gcenodeclasses.karpenter.k8s.gcp"
    nodeclass_api = GCENODECLASS
    serve_class: ClassVar[type[Serve]] = GCPServe
    allowed_types = ALLOWED_TYPES

    def __init__(self, cluster: Cluster, gce: FakeGCE, workdir: Path) -> None:
        super().__init__(cluster, workdir)
        self.gce = gce
        self.joiner = NodeJoiner(gce, self.kube)
        self.catalog = serve_bundled_machine_types(gce)
        self.images = ImageRoutes(gce)
        self.seed()

    def seed(self) -> None:
        """The GKE cluster, its source pool's template and the node images."""
        self.gce.add_cluster(cluster_body())
        self.gce.add_instance_template(template_body())
        for name in IMAGES:
            self.images.add(IMAGE_PROJECT, name)

    def env(self) -> dict[str, str]:
        """The settings upstream requires, and the fake's endpoints."""
        return {
            **self.gce.env(),
            "PROJECT_ID": PROJECT,
            "CLUSTER_LOCATION": REGION,
            "CLUSTER_NAME": CLUSTER,
            "GCP_PRICING_CSV_ENDPOINT": self.catalog.prices_url,
        }

    # -- objects

    def apply_nodeclass(self, name: str, image: str = IMAGES[0], **spec: Any) -> None:
        """A GCENodeClass booting ``image`` (an ``id`` term) with the nodes' service
        account; ``spec`` sets more fields."""
        self.kube.create(
            {
                "apiVersion": "karpenter.k8s.gcp/v1alpha1",
                "kind": "GCENodeClass",
                "metadata": {"name": name},
                "spec": {
                    "imageSelectorTerms": [{"id": image_id(image)}],
                    "serviceAccount": SERVICE_ACCOUNT,
                    **spec,
                },
            }
        )

    # -- the fake's inventory (copies, read under its lock)

    def instances(self) -> dict[str, dict[str, Any]]:
        """Karpenter's instances (labelled with a NodePool) by name."""
        with self.gce.lock:
            return {
                name: copy.deepcopy(inst)
                for (_, name), inst in self.gce.instances.items()
                if is_karpenters(inst)
            }

    def all_instance_keys(self) -> set[tuple[str, str]]:
        """(zone, name) of every instance in the fake."""
        with self.gce.lock:
            return set(self.gce.instances)

    def disk_keys(self) -> set[tuple[str, str]]:
        """(zone, name) of every disk in the fake."""
        with self.gce.lock:
            return set(self.gce.disks)

    def report_cloud(self) -> None:
        with self.gce.lock:
            print(
                "--- instances:",
                [
                    (name, machine_type_of(i), zone, i.get("status"))
                    for (zone, name), i in self.gce.instances.items()
                ],
            )
            print("--- disks:", sorted(self.gce.disks))


@pytest.fixture(name="fake_gce")
def fake_gce_fixture() -> Iterator[FakeGCE]:
    """A fresh fake Compute/GKE server for one test."""
    gce = FakeGCE().start()
    try:
        yield gce
    finally:
        gce.stop()


@pytest.fixture(name="gcp")
def gcp_fixture(cluster: Cluster, fake_gce: FakeGCE, tmp_path: Path) -> Iterator[GCP]:
    """The GCP CRDs installed, the fake seeded and the node joiner running;
    ``gcp.serve()`` starts ``karpenter serve --cloud-provider gcp`` against the fake."""
    yield from running(GCP(cluster, fake_gce, tmp_path))


def claims_by_instance(gcp: GCP) -> dict[str, dict[str, Any]]:
    """Launched NodeClaims by the name of their instance (from the provider id)."""
    return claims_by_machine(gcp.cluster, last)
