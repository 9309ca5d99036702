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

Waits poll with generous deadlines and assert on state, never on how long something took.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from serve_harness import APP_NS, WAIT, Cluster, Serve, wait_for

from karpenter_core.cli import main as cli_main
from karpenter_core.kube.client import AlreadyExists, ApiError, NotFound, create_with_status
from karpenter_core.plugins import cloud_providers, get_plugin_manager

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

log = logging.getLogger("gcp_harness")

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
NODECLAIM = ("karpenter.sh/v1", "NodeClaim")
NODEPOOL_LABEL = "karpenter.sh/nodepool"
UNREGISTERED_TAINT = "karpenter.sh/unregistered"
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
    spec = cloud_providers(get_plugin_manager()).get("gcp")
    return bool(spec is not None and spec.can_launch)


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
    """The Node the instance's kubelet registers.

    Labels: the NodeClaim's (``--node-labels`` / ``kube-labels`` in the metadata), the
    kubelet's own (arch, os, hostname) and the cloud node manager's (instance type, zone,
    region) read from the instance. Taints: ``karpenter.sh/unregistered`` and the
    NodeClaim's taints and startup taints (``--register-with-taints``). Capacity and
    allocatable: the NodeClaim's status, what the machine type it was launched as reports.
    """
    name = str(instance["name"])
    meta = nodeclaim.get("metadata") or {}
    spec = nodeclaim.get("spec") or {}
    status = nodeclaim.get("status") or {}
    labels = dict(meta.get("labels") or {})
    arch = labels.get("kubernetes.io/arch", "amd64")
    zone = zone_of(instance)
    labels.update(
        {
            "kubernetes.io/arch": arch,
            "kubernetes.io/os": "linux",
            "kubernetes.io/hostname": name,
            "node.kubernetes.io/instance-type": machine_type_of(instance),
            "topology.kubernetes.io/zone": zone,
            "topology.kubernetes.io/region": zone.rsplit("-", 1)[0],
        }
    )
    pool = (instance.get("labels") or {}).get(NODEPOOL_GCE_LABEL)
    if pool:
        labels[NODEPOOL_LABEL] = pool
    taints = [{"key": UNREGISTERED_TAINT, "effect": "NoExecute"}]
    taints += [dict(t) for t in spec.get("taints") or []]
    taints += [dict(t) for t in spec.get("startupTaints") or []]
    uid = str(instance.get("id") or name)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"providerID": kubelet_provider_id(instance), "taints": taints},
        "status": {
            "capacity": dict(status.get("capacity") or {}),
            "allocatable": dict(status.get("allocatable") or status.get("capacity") or {}),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                }
            ],
            "addresses": [{"type": "Hostname", "address": name}],
            "nodeInfo": {
                "architecture": arch,
                "operatingSystem": "linux",
                "kubeletVersion": "v1.33.0-gke.1000000",
                "machineID": uid,
                "systemUUID": uid,
                "bootID": uid,
                "kernelVersion": "",
                "osImage": "Container-Optimized OS from Google",
                "containerRuntimeVersion": "",
                "kubeProxyVersion": "",
            },
        },
    }


class NodeJoiner:
    """Plays the kubelets of Karpenter's instances (see the module docstring).

    Each instance joins at most once: a kubelet registers when its machine boots, and a
    Node Karpenter deleted while deleting the instance must not come back. An instance
    joins once it is ``RUNNING`` (one whose insert failed stays ``TERMINATED`` and never
    boots) and its NodeClaim names it; until then it waits for the next poll. A joined
    instance that is gone from GCE takes its Node with it (the cloud node lifecycle
    controller's part).
    """

    def __init__(self, gce: FakeGCE, kube: Any, interval: float = 0.25) -> None:
        self.gce = gce
        self.kube = kube
        self.interval = interval
        self.joined: dict[tuple[str, str], str] = {}  # (zone, instance) -> Node name
        self.removed: set[tuple[str, str]] = set()  # whose Node went with the instance
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _instances(self) -> dict[tuple[str, str], dict[str, Any]]:
        with self.gce.lock:
            return {
                key: copy.deepcopy(inst)
                for key, inst in self.gce.instances.items()
                if is_karpenters(inst)
            }

    def step(self) -> list[str]:
        """One poll: register the Nodes of running instances whose NodeClaim names them,
        delete the Nodes of joined instances that are gone; the names of Nodes created."""
        instances = self._instances()
        claims = {
            str((c.get("status") or {}).get("providerID")): c
            for c in self.kube.list(NODECLAIM).items
            if (c.get("status") or {}).get("providerID")
        }
        created = []
        for key, inst in sorted(instances.items()):
            if key in self.joined or inst.get("status") != "RUNNING":
                continue
            claim = claims.get(kubelet_provider_id(inst))
            if claim is None or claim["metadata"].get("deletionTimestamp"):
                continue
            node = node_for(inst, claim)
            with contextlib.suppress(AlreadyExists):
                create_with_status(self.kube, node)
                created.append(node["metadata"]["name"])
            self.joined[key] = node["metadata"]["name"]
        for key, node_name in self.joined.items():
            if key in instances or key in self.removed:
                continue
            with contextlib.suppress(NotFound):
                self.kube.delete("nodes", node_name)
            self.removed.add(key)
        return created

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.step()
            except Exception as e:  # keep joining: one failed poll is retried on the next
                self.errors.append(f"{type(e).__name__}: {e}")
                log.warning("node joiner: %s", e)

    def start(self) -> NodeJoiner:
        self._thread = threading.Thread(target=self._run, name="gcp-node-joiner", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)


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


class GCPServe(Serve):
    """A ``karpenter serve`` subprocess whose environment holds none of the developer's
    own Google settings: the clients must take the fake's endpoints."""

    def launch(self) -> GCPServe:
        saved = {k: os.environ.pop(k) for k in FOREIGN_VARS if k in os.environ}
        try:
            super().launch()
        finally:
            os.environ.update(saved)
        return self


# --------------------------------------------------------------------------- the GCP world


class GCP:
    """The cluster, the fake GCE, the node joiner and the ``karpenter serve`` processes."""

    def __init__(self, cluster: Cluster, gce: FakeGCE, workdir: Path) -> None:
        self.cluster = cluster
        self.kube = cluster.kube
        self.gce = gce
        self.workdir = workdir
        self.joiner = NodeJoiner(gce, self.kube)
        self.started: list[Serve] = []
        self.catalog = serve_bundled_machine_types(gce)
        self.images = ImageRoutes(gce)
        self.seed()

    def seed(self) -> None:
        """The GKE cluster, its source pool's template and the node images."""
        self.gce.add_cluster(cluster_body())
        self.gce.add_instance_template(template_body())
        for name in IMAGES:
            self.images.add(IMAGE_PROJECT, name)

    def install_crds(self) -> None:
        """The CRDs as users install them: ``karpenter crds --cloud-provider gcp``."""
        result = CliRunner().invoke(cli_main, ["crds", "--cloud-provider", "gcp"])
        assert result.exit_code == 0, result.output
        crds = [d for d in yaml.safe_load_all(result.stdout) if d]
        assert "gcenodeclasses.karpenter.k8s.gcp" in {c["metadata"]["name"] for c in crds}
        for crd in crds:
            with contextlib.suppress(AlreadyExists):
                self.kube.create(crd)
        for crd in crds:
            name = crd["metadata"]["name"]
            wait_for(functools.partial(self.cluster._established, name), f"the CRD {name}")

    def env(self) -> dict[str, str]:
        """The settings upstream requires, and the fake's endpoints."""
        return {
            **self.gce.env(),
            "PROJECT_ID": PROJECT,
            "CLUSTER_LOCATION": REGION,
            "CLUSTER_NAME": CLUSTER,
            "GCP_PRICING_CSV_ENDPOINT": self.catalog.prices_url,
        }

    def serve(self, name: str = "a", *extra: str, env: Mapping[str, str] | None = None) -> Serve:
        """``karpenter serve --cloud-provider gcp`` against the fake; ``env`` adds settings."""
        s = GCPServe(
            self.cluster,
            self.workdir,
            name,
            "--cloud-provider",
            "gcp",
            *extra,
            env={**self.env(), **(env or {})},
        ).start()
        self.started.append(s)
        return s

    def wait(self, predicate: Callable[[], Any], what: str, deadline: float = WAIT) -> Any:
        """:func:`wait_for` that gives up at once, with the log, when a ``karpenter serve``
        this test started has exited (nothing it waits for can happen then)."""

        def check() -> Any:
            for s in self.started:
                if s.exited():
                    raise AssertionError(
                        f"karpenter serve exited while waiting for {what}; log:\n{s.log_tail(30)}"
                    )
            return predicate()

        return wait_for(check, what, deadline)

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

    def apply_nodepool(
        self,
        name: str,
        nodeclass: str,
        *,
        types: tuple[str, ...] = ALLOWED_TYPES,
        zones: tuple[str, ...] | None = None,
        consolidation: str = "WhenEmpty",
    ) -> None:
        """An on-demand NodePool of ``types`` (in ``zones`` when given). It consolidates at
        once under ``consolidation`` (by default only empty nodes, so a test's snapshot of
        nodes and instances is not raced by a replacement), any number at a time."""
        requirements: list[dict[str, Any]] = [
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(types)},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        ]
        if zones is not None:
            requirements.append(
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": list(zones)}
            )
        self.kube.create(
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "metadata": {"name": name},
                "spec": {
                    "template": {
                        "spec": {
                            "nodeClassRef": {
                                "group": "karpenter.k8s.gcp",
                                "kind": "GCENodeClass",
                                "name": nodeclass,
                            },
                            "requirements": requirements,
                        }
                    },
                    "disruption": {
                        "consolidationPolicy": consolidation,
                        "consolidateAfter": "0s",
                        "budgets": [{"nodes": "100%"}],
                    },
                    "limits": {"cpu": "1000"},
                },
            }
        )

    def apply_deployment(self, name: str, replicas: int, *, cpu: str = "500m") -> None:
        """Pause pods labelled ``app=<name>`` requesting ``cpu`` and 256Mi."""
        self.kube.create(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "namespace": APP_NS},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": name}},
                    "template": {
                        "metadata": {"labels": {"app": name}},
                        "spec": {
                            "terminationGracePeriodSeconds": 0,
                            "containers": [
                                {
                                    "name": "app",
                                    "image": "registry.k8s.io/pause:3.10",
                                    "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}},
                                }
                            ],
                        },
                    },
                },
            }
        )

    def nodeclass(self, name: str) -> dict[str, Any]:
        return self.kube.get(GCENODECLASS, name)

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

    def report(self) -> None:
        """Printed at teardown (pytest shows it when the test failed)."""
        for s in self.started:
            print(f"--- {s.log.name} (last lines)\n{s.log_tail(80)}")
        if self.joiner.errors:
            print("--- node joiner errors:", self.joiner.errors[-10:])
        with contextlib.suppress(ApiError, OSError):
            print(
                "--- nodeclaims:",
                [
                    (c["metadata"]["name"], (c.get("status") or {}).get("providerID"))
                    for c in self.cluster.nodeclaims()
                ],
            )
        with contextlib.suppress(ApiError, OSError):
            for nc in self.kube.list(GCENODECLASS).items:
                print(f"--- GCENodeClass {nc['metadata']['name']} status:", nc.get("status"))
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
    env = GCP(cluster, fake_gce, tmp_path)
    env.install_crds()
    env.joiner.start()
    try:
        yield env
    finally:
        env.joiner.stop()
        for s in env.started:
            if not s.exited():
                s.kill9()
        env.report()


def claims_by_instance(gcp: GCP) -> dict[str, dict[str, Any]]:
    """Launched NodeClaims by the name of their instance (from the provider id)."""
    return {
        last(str(c["status"]["providerID"])): c
        for c in gcp.cluster.nodeclaims()
        if (c.get("status") or {}).get("providerID")
    }
