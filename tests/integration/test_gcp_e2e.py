"""``karpenter serve --cloud-provider gcp`` end to end: a real control plane, the official
Google clients against the GCP plugin's fake Compute/GKE server, and a node joiner playing
the instances' kubelets.

Covered: launching GCE instances with the GCENodeClass Ready, upstream's labels on
NodeClaims and Nodes, the source node pool's bootstrap metadata rewritten for each node
and the cluster's GCE labels on the instance; scale to zero deleting every instance and
disk; a GCENodeClass change drifting and replacing every node (a hashed field:
``NodeClassDrift``; the image selector: ``ImageDrift``); a zonal stockout
(``ZONE_RESOURCE_POOL_EXHAUSTED``, answered at once or at the end of the insert's zone
operation) falling back to another zone without leaving the failed attempt's instance or
disk behind.

``gcp_harness.py`` says what runs where. Machine types are the plugin's bundled
us-central1 records served by the fake; prices come from the bundled snapshot.

The provider tests are skipped while the GCP plugin's CloudProviderSpec says it cannot
launch (``can_launch`` False); the node joiner's own tests run regardless.
"""

from __future__ import annotations

from typing import Any

import pytest
from cloud_harness import (
    NODECLAIM,
    NODEPOOL_LABEL,
    UNREGISTERED_TAINT,
    condition,
    is_true,
    launched_nodeclaim,
    launches_settled,
    node_gone,
)
from gcp_harness import (
    ALLOWED_TYPES,
    CLUSTER,
    CLUSTER_LOCATION_GCE_LABEL,
    CLUSTER_NAME_GCE_LABEL,
    GCENODECLASS,
    GCP,
    IMAGES,
    NODECLASS_GCE_LABEL,
    NODEPOOL_GCE_LABEL,
    PROJECT,
    REGION,
    SERVICE_ACCOUNT,
    ZONES,
    FakeGCE,
    NodeJoiner,
    claims_by_instance,
    fake_gce_fixture,  # noqa: F401 -- the `fake_gce` fixture
    gcp_can_launch,
    gcp_fixture,  # noqa: F401 -- the `gcp` fixture
    image_id,
    kubelet_provider_id,
    machine_type_of,
    metadata_of,
    node_for,
    zone_of,
)
from serve_harness import (
    NODEPOOL,
    Cluster,
    cluster_fixture,  # noqa: F401 -- the `cluster` fixture
    wait_for,
)

from karpenter_core.kube.client import create_with_status

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

# Upstream's label and annotation keys (karpenter-provider-gcp pkg/apis/v1alpha1).
LABEL_INSTANCE_FAMILY = "karpenter.k8s.gcp/instance-family"
LABEL_INSTANCE_CPU = "karpenter.k8s.gcp/instance-cpu"
LABEL_INSTANCE_MEMORY = "karpenter.k8s.gcp/instance-memory"
HASH_ANNOTATION = "karpenter.k8s.gcp/gcenodeclass-hash"
HASH_VERSION_ANNOTATION = "karpenter.k8s.gcp/gcenodeclass-hash-version"
INSERT_PATH = r"/compute/v1/projects/[^/]+/zones/(?P<zone>[^/]+)/instances"
DELETE_PATH = r"/compute/v1/projects/[^/]+/zones/[^/]+/instances/(?P<name>[^/]+)"

needs_provider = pytest.mark.skipif(
    not gcp_can_launch(),
    reason="the gcp plugin's CloudProviderSpec has can_launch=False (provider not finished)",
)


def machine_shape(name: str) -> tuple[int, int]:
    """(vCPUs, memory MiB) of ``name`` in the bundled us-central1 catalogue."""
    from karpenter_gcp.catalogue import load_snapshot

    for mt in load_snapshot(REGION).machine_types:
        if mt.name == name:
            return mt.guest_cpus, mt.memory_mb
    raise AssertionError(f"{name} is not in the bundled {REGION} catalogue")


def gce_instance(
    name: str, *, zone: str = ZONES[1], status: str = "RUNNING", pool: str | None = "default"
) -> dict[str, Any]:
    """An instance as the fake's inventory holds one Karpenter inserted (or a foreign one)."""
    labels = (
        {NODEPOOL_GCE_LABEL: pool, NODECLASS_GCE_LABEL: "default", CLUSTER_NAME_GCE_LABEL: CLUSTER}
        if pool
        else {"owner": "someone"}
    )
    zone_link = f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/zones/{zone}"
    return {
        "name": name,
        "id": str(1000 + len(name)),
        "zone": zone_link,
        "machineType": f"{zone_link}/machineTypes/e2-standard-2",
        "status": status,
        "labels": labels,
    }


def nodeclaim_for(name: str, instance: dict[str, Any] | None) -> dict[str, Any]:
    """A launched NodeClaim as Karpenter writes it (status from the provider's create)."""
    status = (
        None
        if instance is None
        else {
            "providerID": kubelet_provider_id(instance),
            "capacity": {"cpu": "2", "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": "1930m", "memory": "6Gi", "pods": "110"},
        }
    )
    ref = {"group": "karpenter.k8s.gcp", "kind": "GCENodeClass", "name": "default"}
    return launched_nodeclaim(name, ref, "e2-standard-2", status)


# --------------------------------------------------------------------------- the node joiner


def test_node_for_registers_the_nodeclaims_labels_taints_and_resources() -> None:
    inst = gce_instance("karpenter-default-abcde", zone=ZONES[2])
    claim = nodeclaim_for("default-abcde", inst)
    node = node_for(inst, claim)
    # The GCE cloud provider's provider id: project, zone, instance name.
    assert node["spec"]["providerID"] == f"gce://{PROJECT}/{ZONES[2]}/karpenter-default-abcde"
    assert node["metadata"]["name"] == "karpenter-default-abcde"
    labels = node["metadata"]["labels"]
    assert labels["team"] == "payments"  # kube-labels from the NodeClaim
    assert labels[NODEPOOL_LABEL] == "default"
    assert labels["node.kubernetes.io/instance-type"] == "e2-standard-2"
    assert labels["topology.kubernetes.io/zone"] == ZONES[2]
    assert labels["topology.kubernetes.io/region"] == REGION
    assert labels["kubernetes.io/hostname"] == "karpenter-default-abcde"
    taints = {t["key"] for t in node["spec"]["taints"]}
    assert taints == {UNREGISTERED_TAINT, "dedicated", "cni.example/not-ready"}
    assert node["status"]["allocatable"] == claim["status"]["allocatable"]
    assert node["status"]["capacity"] == claim["status"]["capacity"]


def test_node_joiner_registers_running_karpenter_instances_with_a_nodeclaim_and_removes_gone_ones(
    cluster: Cluster, fake_gce: FakeGCE
) -> None:
    claimed = gce_instance("karpenter-claimed")
    unclaimed = gce_instance("karpenter-unclaimed")  # its NodeClaim has no provider id yet
    failed = gce_instance("karpenter-failed", status="TERMINATED")  # its insert failed
    foreign = gce_instance("someone-else", pool=None)  # not Karpenter's
    with fake_gce.lock:
        for inst in (claimed, unclaimed, failed, foreign):
            fake_gce.instances[(zone_of(inst), inst["name"])] = inst
    create_with_status(cluster.kube, nodeclaim_for("claimed", claimed))
    create_with_status(cluster.kube, nodeclaim_for("unclaimed", None))
    create_with_status(cluster.kube, nodeclaim_for("failed", failed))
    joiner = NodeJoiner(fake_gce, cluster.kube)
    assert joiner.step() == ["karpenter-claimed"]
    nodes = cluster.kube.list("nodes", label_selector="team=payments").items
    assert [n["spec"]["providerID"] for n in nodes] == [kubelet_provider_id(claimed)]
    wait_for(
        lambda: is_true(cluster.kube.get("nodes", "karpenter-claimed"), "Ready"),
        "the joined node's Ready condition",
    )
    # Once the NodeClaim names its instance the second one joins.
    cluster.kube.patch(
        NODECLAIM,
        "unclaimed",
        {"status": nodeclaim_for("unclaimed", unclaimed)["status"]},
        subresource="status",
    )
    assert joiner.step() == ["karpenter-unclaimed"]
    # A Node deleted while its instance lives stays gone (its kubelet registered once).
    cluster.kube.delete("nodes", "karpenter-unclaimed")
    wait_for(lambda: node_gone(cluster, "karpenter-unclaimed"), "the deleted node to go")
    assert joiner.step() == []
    assert node_gone(cluster, "karpenter-unclaimed")
    # An instance gone from GCE takes its Node with it.
    with fake_gce.lock:
        del fake_gce.instances[(zone_of(claimed), "karpenter-claimed")]
    assert joiner.step() == []
    wait_for(lambda: node_gone(cluster, "karpenter-claimed"), "the gone instance's node to go")
    names = {n["metadata"]["name"] for n in cluster.kube.list("nodes").items}
    assert names.isdisjoint(
        {"karpenter-claimed", "karpenter-unclaimed", "karpenter-failed", "someone-else"}
    )


# --------------------------------------------------------------------------- the provider


def nodeclass_ready(gcp: GCP, name: str) -> bool:
    return is_true(gcp.nodeclass(name), "Ready")


def settled(gcp: GCP) -> bool:
    """Every NodeClaim launched, none being deleted, each on a RUNNING instance, and no
    other Karpenter instance: an extra NodeClaim from a second provisioning pass may have
    been launched and, empty, consolidated away; this waits until it is gone."""
    return launches_settled(
        gcp.cluster,
        claims_by_instance(gcp),
        gcp.instances(),
        lambda inst: inst.get("status") == "RUNNING",
    )


def assert_no_leaks(gcp: GCP) -> None:
    """Every instance is a NodeClaim's, every disk an instance's boot disk (same name and
    zone), nothing else in the fake."""
    claims = set(claims_by_instance(gcp))
    keys = gcp.all_instance_keys()
    instances = gcp.instances()
    assert {name for _, name in keys} == set(instances), "an instance without a NodePool label"
    assert set(instances) == claims, (
        f"instances {sorted(instances)} != NodeClaims' {sorted(claims)}"
    )
    assert gcp.disk_keys() == keys, f"disks {sorted(gcp.disk_keys())} != instances {sorted(keys)}"


@needs_provider
def test_every_pod_runs_on_a_node_backed_by_a_gce_instance_with_upstreams_labels_and_bootstrap(
    gcp: GCP,
) -> None:
    gcp.serve()
    gcp.apply_nodeclass("default")
    gcp.apply_nodepool("default", "default")
    gcp.apply_deployment("web", 6)

    gcp.wait(lambda: nodeclass_ready(gcp, "default"), "the GCENodeClass to be Ready")
    images = {i["sourceImage"] for i in gcp.nodeclass("default")["status"].get("images") or []}
    assert images == {image_id(IMAGES[0])}

    gcp.wait(lambda: gcp.cluster.all_running_on_karpenter_nodes("web", 6), "6 pods running")
    gcp.wait(lambda: settled(gcp), "every NodeClaim on a RUNNING instance, none being deleted")
    claims = claims_by_instance(gcp)
    instances = gcp.instances()
    nodes = {n["metadata"]["name"]: n for n in gcp.cluster.karpenter_nodes()}
    by_provider_id = {n["spec"]["providerID"]: n for n in nodes.values()}
    for pod in gcp.cluster.pods("web"):
        node = nodes[pod["spec"]["nodeName"]]
        assert node["spec"]["providerID"].rsplit("/", 1)[-1] in claims

    hashes = gcp.nodeclass("default")["metadata"].get("annotations") or {}
    assert hashes.get(HASH_ANNOTATION)
    for name, claim in claims.items():
        inst = instances[name]
        machine_type = machine_type_of(inst)
        zone = zone_of(inst)
        # Upstream's instance name and the provider id the GCE cloud provider writes.
        assert name == f"karpenter-{claim['metadata']['name']}"
        assert claim["status"]["providerID"] == f"gce://{PROJECT}/{zone}/{name}"
        node = by_provider_id[claim["status"]["providerID"]]
        assert claim["status"].get("nodeName") == node["metadata"]["name"]
        assert zone in ZONES, f"{name}: placed in {zone!r}, not one of the cluster's {ZONES}"
        assert machine_type in ALLOWED_TYPES
        cpus, memory_mb = machine_shape(machine_type)
        expected = {
            "node.kubernetes.io/instance-type": machine_type,
            "topology.kubernetes.io/zone": zone,
            "karpenter.sh/capacity-type": "on-demand",
            "kubernetes.io/arch": "amd64",
            NODEPOOL_LABEL: "default",
            LABEL_INSTANCE_FAMILY: machine_type.split("-", 1)[0],
            LABEL_INSTANCE_CPU: str(cpus),
            LABEL_INSTANCE_MEMORY: str(memory_mb),
        }
        for obj in (claim, node):
            labels = obj["metadata"]["labels"]
            assert {k: labels.get(k) for k in expected} == expected, obj["metadata"]["name"]
        # The cluster's GCE labels and Karpenter's ownership labels on the instance.
        gce_labels = inst.get("labels") or {}
        assert gce_labels.get(CLUSTER_NAME_GCE_LABEL) == CLUSTER, name
        assert gce_labels.get(CLUSTER_LOCATION_GCE_LABEL) == REGION, name
        assert gce_labels.get(NODEPOOL_GCE_LABEL) == "default", name
        assert gce_labels.get(NODECLASS_GCE_LABEL) == "default", name
        assert f"gke-{CLUSTER}-node" in (inst.get("tags") or {}).get("items", [])
        # The source pool's bootstrap, rewritten for this node.
        meta = metadata_of(inst)
        assert meta.get("cluster-name") == CLUSTER
        assert meta.get("configure-sh", "").startswith("#!/bin/bash")
        kube_env = meta.get("kube-env", "")
        assert f"ZONE: {zone}" in kube_env, kube_env
        assert f"{UNREGISTERED_TAINT}=true:NoExecute" in kube_env, kube_env
        assert f"{NODEPOOL_LABEL}=default" in kube_env, kube_env
        assert f"{NODEPOOL_LABEL}=default" in meta.get("kube-labels", ""), meta.get("kube-labels")
        # The GCENodeClass's image and service account.
        boot = next(d for d in inst["disks"] if d.get("boot"))
        assert boot["initializeParams"]["sourceImage"] == image_id(IMAGES[0])
        # The launched image is the NodeClaim's (image drift compares against it).
        assert str(claim["status"].get("imageID", "")).endswith(image_id(IMAGES[0]))
        accounts = [a.get("email") for a in inst.get("serviceAccounts") or []]
        assert accounts == [SERVICE_ACCOUNT]
        assert inst.get("machineType", "").endswith(f"zones/{zone}/machineTypes/{machine_type}")
        # The NodeClaim carries the GCENodeClass's hash (drift compares against it).
        annotations = claim["metadata"].get("annotations") or {}
        assert annotations.get(HASH_ANNOTATION) == hashes[HASH_ANNOTATION]
        assert annotations.get(HASH_VERSION_ANNOTATION) == hashes[HASH_VERSION_ANNOTATION]
    # Nothing changed since the launch, so nothing is drifted.
    assert not [c for c in gcp.cluster.nodeclaims() if is_true(c, "Drifted")]
    assert_no_leaks(gcp)


@needs_provider
def test_scaling_to_zero_deletes_every_instance_and_disk(gcp: GCP) -> None:
    gcp.serve()
    gcp.apply_nodeclass("default")
    gcp.apply_nodepool("default", "default")
    gcp.apply_deployment("web", 4, cpu="1")
    gcp.wait(lambda: gcp.cluster.all_running_on_karpenter_nodes("web", 4), "4 pods running")
    launched = set(gcp.instances())
    assert launched
    assert gcp.disk_keys()

    gcp.cluster.scale("web", 0)
    gcp.wait(lambda: not gcp.cluster.nodeclaims(), "every NodeClaim to be deleted")
    gcp.wait(lambda: not gcp.all_instance_keys(), "no instance left in the fake GCE")
    gcp.wait(lambda: not gcp.disk_keys(), "no disk left in the fake GCE")
    assert not gcp.cluster.karpenter_nodes()
    deleted = {r.path.rsplit("/", 1)[-1] for r in gcp.gce.requests_to("DELETE", DELETE_PATH)}
    assert launched <= deleted

    # With the NodePool gone too, nothing comes back.
    gcp.kube.delete(NODEPOOL, "default")
    gcp.wait(lambda: not gcp.kube.list(NODEPOOL).items, "the NodePool to be deleted")
    assert not gcp.all_instance_keys() and not gcp.disk_keys()


def boot_disk_sizes(gcp: GCP) -> set[str]:
    with gcp.gce.lock:
        return {str(d["sizeGb"]) for d in gcp.gce.disks.values()}


def boot_images(gcp: GCP) -> set[str]:
    return {
        d["initializeParams"]["sourceImage"]
        for inst in gcp.instances().values()
        for d in inst["disks"]
        if d.get("boot")
    }


@needs_provider
@pytest.mark.parametrize("change", ["boot-disk", "image"])
def test_a_gcenodeclass_change_drifts_and_replaces_every_node(gcp: GCP, change: str) -> None:
    """A hashed field (the boot disk's size) drifts by the hash (``NodeClassDrift``); a new
    image selector term (not hashed, as upstream) drifts by the resolved image
    (``ImageDrift``). Either way every node is replaced by one built from the new spec."""
    gcp.serve()
    gcp.apply_nodeclass("default")
    gcp.apply_nodepool("default", "default")
    gcp.apply_deployment("web", 3)
    gcp.wait(lambda: gcp.cluster.all_running_on_karpenter_nodes("web", 3), "3 pods running")
    gcp.wait(lambda: settled(gcp), "every NodeClaim on a RUNNING instance")
    old = set(claims_by_instance(gcp))
    assert old
    assert boot_disk_sizes(gcp) == {"100"}
    assert boot_images(gcp) == {image_id(IMAGES[0])}
    old_hash = gcp.nodeclass("default")["metadata"]["annotations"][HASH_ANNOTATION]

    if change == "boot-disk":
        spec: dict[str, Any] = {"disks": [{"boot": True, "sizeGiB": 60, "category": "pd-balanced"}]}
        reason, sizes, images = "NodeClassDrift", {"60"}, {image_id(IMAGES[0])}
    else:
        spec = {"imageSelectorTerms": [{"id": image_id(IMAGES[1])}]}
        reason, sizes, images = "ImageDrift", {"100"}, {image_id(IMAGES[1])}
    gcp.kube.patch(GCENODECLASS, "default", {"spec": spec})

    def status_current() -> bool:
        nc = gcp.nodeclass("default")
        resolved = {i["sourceImage"] for i in (nc.get("status") or {}).get("images") or []}
        hash_ = nc["metadata"]["annotations"][HASH_ANNOTATION]
        return resolved == images and (hash_ != old_hash) == (change == "boot-disk")

    gcp.wait(status_current, "the GCENodeClass's hash and images to follow the change")

    def drift_reasons() -> set[str]:
        return {
            str((condition(c, "Drifted") or {}).get("reason"))
            for c in gcp.cluster.nodeclaims()
            if is_true(c, "Drifted")
        }

    assert gcp.wait(drift_reasons, "the old NodeClaims to be Drifted") == {reason}

    def replaced() -> bool:
        claims = set(claims_by_instance(gcp))
        return (
            bool(claims)
            and not claims & old
            and not {name for _, name in gcp.all_instance_keys()} & old
            and not {name for _, name in gcp.disk_keys()} & old
            and gcp.cluster.all_running_on_karpenter_nodes("web", 3)
        )

    gcp.wait(replaced, "every node to be replaced")
    gcp.wait(lambda: settled(gcp), "the replacements on RUNNING instances")
    assert boot_disk_sizes(gcp) == sizes
    assert boot_images(gcp) == images
    new_hash = gcp.nodeclass("default")["metadata"]["annotations"][HASH_ANNOTATION]
    for claim in claims_by_instance(gcp).values():
        assert claim["metadata"]["annotations"][HASH_ANNOTATION] == new_hash
        assert str(claim["status"].get("imageID", "")).endswith(next(iter(images)))
        assert not is_true(claim, "Drifted")
    assert_no_leaks(gcp)


@needs_provider
@pytest.mark.parametrize("asynchronous", [False, True], ids=["at-once", "in-the-operation"])
def test_a_zonal_stockout_falls_back_to_another_zone_without_leaks(
    gcp: GCP, asynchronous: bool
) -> None:
    """The first insert fails ``ZONE_RESOURCE_POOL_EXHAUSTED`` in whichever zone it tried
    (answered at once with nothing created, or at the end of the zone operation, leaving a
    TERMINATED instance and its disk as GCE does): the zone is marked unavailable for the
    machine type, the NodeClaim is replaced and launches the same type in another zone,
    never that one again, and the failed attempt's instance and disk are deleted."""
    machine_type = ALLOWED_TYPES[0]
    gcp.gce.fail_next_insert(
        "ZONE_RESOURCE_POOL_EXHAUSTED",
        f"The zone does not have enough resources available to fulfill the request. "
        f"Try a different zone, or try again later. ({machine_type})",
        asynchronous=asynchronous,
    )
    gcp.serve()
    gcp.apply_nodeclass("default")
    gcp.apply_nodepool("default", "default", types=(machine_type,), zones=ZONES)
    gcp.apply_deployment("web", 1)
    gcp.wait(lambda: gcp.cluster.all_running_on_karpenter_nodes("web", 1), "the pod running")
    gcp.wait(lambda: settled(gcp), "the NodeClaim on a RUNNING instance")

    inserts = gcp.gce.requests_to("POST", INSERT_PATH)
    assert len(inserts) >= 2, [r.path for r in inserts]
    first = inserts[0]
    failed_zone = first.path.rstrip("/").split("/")[-2]
    failed_name = first.json["name"]
    assert failed_zone in ZONES
    retried = [r.path.rstrip("/").split("/")[-2] for r in inserts[1:]]
    assert failed_zone not in retried, (failed_zone, retried)

    claims = claims_by_instance(gcp)
    assert len(claims) == 1
    (name,) = claims
    assert name != failed_name
    inst = gcp.instances()[name]
    assert machine_type_of(inst) == machine_type
    assert zone_of(inst) in ZONES
    assert zone_of(inst) != failed_zone
    assert claims[name]["metadata"]["labels"]["topology.kubernetes.io/zone"] == zone_of(inst)
    # Nothing of the failed attempt is left.
    assert (failed_zone, failed_name) not in gcp.all_instance_keys()
    assert (failed_zone, failed_name) not in gcp.disk_keys()
    assert_no_leaks(gcp)
