"""A simulation that starts from a cluster's snapshot: the objects are seeded with their
uids, ages and statuses, the KWOK provider adopts the nodes, and Karpenter carries on
from there (``karpenter simulate --from``)."""

from __future__ import annotations

from typing import Any

from crafted_snapshot import NODES, TAKEN_AT, as_aws, crafted_objects, crafted_state

from karpenter_core.sim.engine import Simulation
from karpenter_core.sim.report import Report
from karpenter_core.sim.scenario import parse_scenario
from karpenter_core.sim.whatif import compare, parse_what_if

HALF_HOUR = 1800.0


def _run(
    objects: list[dict[str, Any]] | None = None, until: float = HALF_HOUR, **kw: Any
) -> tuple[Simulation, Report]:
    sim = Simulation(parse_scenario({"name": "crafted"}), initial=crafted_state(objects), **kw)
    return sim, sim.run(until)


def _karpenter(report: Report, action: str) -> list[dict[str, Any]]:
    return [d for d in report.decisions if d["action"] == action and d["source"] == "karpenter"]


def test_the_underutilised_node_of_a_snapshot_is_consolidated_and_its_pod_moves() -> None:
    sim, report = _run()
    j = report.to_json_dict()
    assert j["start"] == "2025-06-01T12:00:00Z"  # the clock starts when the snapshot was taken
    assert j["nodesAtStart"] == 3 and j["nodesLaunched"] == 0
    assert j["nodesRemoved"] == 1 and j["removalReasons"] == {"underutilized": 1}
    disrupt = _karpenter(report, "Disrupt")
    assert [d["nodeClaim"] for d in disrupt] == ["default-cx2yz"]  # the node with one pod
    assert disrupt[0]["method"] == "Underutilized" and disrupt[0]["decision"] == "delete"
    assert j["pods"]["disrupted"] == 1 and j["pods"]["bound"] == 5 and j["pods"]["pending"] == 0
    assert report.samples[0].nodes == 3 and report.samples[-1].nodes == 2
    # the pod that moved was replaced by its own ReplicaSet, no other was made
    replicasets = sim.server.list("replicasets", "default").items
    assert [rs["metadata"]["name"] for rs in replicasets] == ["web-5d8f7c9b6"]
    pods = [
        p
        for p in sim.server.list("pods", "default").items
        if p["metadata"].get("labels", {}).get("app") == "web"
    ]
    assert len(pods) == 5
    assert {p["spec"]["nodeName"] for p in pods} <= set(NODES[:2])


def test_seeded_objects_keep_uids_ages_and_status_and_nodes_are_adopted() -> None:
    sim = Simulation(parse_scenario({"name": "crafted"}), initial=crafted_state())
    assert sim.seeded is not None and sim.seeded.nodeclaims == {
        "default-ax0yz",
        "default-bx1yz",
        "default-cx2yz",
    }
    pod = sim.server.get("pods", "web-5d8f7c9b6-p0", "default")
    assert pod["metadata"]["uid"] == "00000000-0000-4000-8000-000000000400"
    assert pod["metadata"]["creationTimestamp"] == "2025-06-01T10:00:00Z"
    assert pod["status"]["phase"] == "Running" and pod["spec"]["nodeName"] == NODES[0]
    node = sim.server.get("nodes", NODES[0])
    claim = sim.server.get("nodeclaims", "default-ax0yz")
    # a foreign provider id becomes the KWOK instance's, in both objects
    assert node["spec"]["providerID"] == f"kwok://{NODES[0]}"
    assert claim["status"]["providerID"] == f"kwok://{NODES[0]}"
    assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    assert sim.provider.get(f"kwok://{NODES[0]}").status.node_name == NODES[0]
    # the snapshot's Event is a kind the simulated server serves: it is kept
    assert sim.seeded.created["Pod"] == 5 and sim.seeded.created["Node"] == 3


def test_ages_count_from_the_real_creation_so_expiry_comes_when_it_would() -> None:
    objects = crafted_objects(pods_per_node=(1, 1, 1))
    for obj in objects:
        if obj["kind"] == "NodeClaim":
            obj["spec"]["expireAfter"] = "5h10m"  # created 5 h before the snapshot
    _, report = _run(objects, until=900.0)
    expired = [d for d in report.decisions if d["action"] == "DeleteNodeClaim"]
    assert expired and all(d["reason"] == "expired" for d in expired)
    assert {round(d["offsetSeconds"]) for d in expired} == {600}


def test_pending_pods_of_the_snapshot_stay_pending_until_karpenter_launches_for_them() -> None:
    _, report = _run(crafted_objects(pods_per_node=(3, 3, 3), pending=4), until=600.0)
    launches = _karpenter(report, "Launch")
    assert launches, report.decisions
    assert report.samples[0].pending_pods == 4
    assert report.to_json_dict()["pods"]["pending"] == 0
    assert report.nodes_launched >= 1 and report.nodes_at_start == 3


def test_an_instance_type_missing_from_the_catalogue_is_kept_unpriced_and_reported() -> None:
    objects = crafted_objects(pods_per_node=(2, 2, 2))
    for obj in objects:
        if obj["kind"] in ("NodeClaim", "Node") and obj["metadata"]["name"] in (
            "default-ax0yz",
            NODES[0],
        ):
            obj["metadata"]["labels"]["node.kubernetes.io/instance-type"] = "m5.large"
        if obj["kind"] == "NodePool":
            obj["spec"]["template"]["spec"]["requirements"][0]["values"].append("m5.large")
    _, report = _run(objects, until=60.0)
    assert any("m5.large" in n and "no price" in n for n in report.notes), report.notes
    by_name = {nc.name: nc for nc in report.nodeclaims}
    assert by_name["default-ax0yz"].price is None and by_name["default-bx1yz"].price is not None
    assert report.samples[0].nodes == 3
    # then Karpenter does what it would do with a type its provider does not offer
    assert [d["reason"] for d in _karpenter(report, "Disrupt")] == [
        "Drifted: delete (estimated savings $0.0000/h)"
    ]


def test_objects_being_deleted_are_left_out_and_said_so() -> None:
    objects = crafted_objects()
    gone = next(o for o in objects if o["kind"] == "Pod")
    gone["metadata"]["deletionTimestamp"] = TAKEN_AT.strftime("%Y-%m-%dT%H:%M:%SZ")
    sim = Simulation(parse_scenario({"name": "crafted"}), initial=crafted_state(objects))
    assert sim.seeded is not None and sim.seeded.created["Pod"] == 4
    assert any("1 objects being deleted" in n for n in sim.observer.notes)


def test_what_if_when_empty_keeps_the_underutilised_node_the_baseline_removes() -> None:
    change = parse_what_if("consolidation/default=WhenEmpty")
    _, baseline = _run()
    _, changed = _run(what_if=[change.event])
    cmp = compare([change], baseline, changed, "crafted.json")
    diff = cmp.difference()
    assert diff["nodesAtStart"] == 0
    assert diff["nodesAtEnd"] == 1 and diff["disruptedPods"] == -1 and diff["decisions"] == -1
    assert diff["costPerHourAtEnd"] > 0
    patch = [d for d in changed.decisions if d["action"] == "PatchObject"]
    assert patch and patch[0]["offsetSeconds"] == 0.0 and patch[0]["applied"] is True
    assert not _karpenter(changed, "Disrupt")


def test_what_if_scaling_the_deployment_launches_for_the_new_pods() -> None:
    change = parse_what_if("deployment/default/web=12")
    _, baseline = _run(until=600.0)
    _, changed = _run(until=600.0, what_if=[change.event])
    diff = compare([change], baseline, changed).difference()
    assert diff["nodesPeak"] >= 1 and diff["costTotal"] > 0
    assert changed.to_json_dict()["pods"]["bound"] == 12


def _statefulset_and_job() -> list[dict[str, Any]]:
    """A StatefulSet ``db`` (1 replica) whose pod is alone on the third node, and a Job
    ``etl`` (2 in parallel) whose 2 pods run on the first: their controllers are in the
    snapshot, so the simulation runs them."""
    web = crafted_objects(pods_per_node=(2, 2, 0))
    db_labels = {"app": "db", "apps.kubernetes.io/pod-index": "0"}
    etl_labels = {"batch.kubernetes.io/job-name": "etl", "job-name": "etl"}
    spec = {
        "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "500m"}}}],
        "restartPolicy": "Never",
    }

    def owner(kind: str, name: str, uid: str) -> dict[str, Any]:
        version = "batch/v1" if kind == "Job" else "apps/v1"
        return {"apiVersion": version, "kind": kind, "name": name, "uid": uid, "controller": True}

    def pod(name: str, uid: str, labels: dict[str, str], ref: dict[str, Any], node: str) -> Any:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": uid, "labels": labels,
                         "creationTimestamp": "2025-06-01T10:00:00Z", "ownerReferences": [ref]},
            "spec": {**spec, "nodeName": node},
            "status": {"phase": "Running"},
        }  # fmt: skip

    sts_ref, job_ref = owner("StatefulSet", "db", "uid-db"), owner("Job", "etl", "uid-etl")
    return [
        *web,
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "default", "uid": "uid-db"},
            "spec": {
                "replicas": 1,
                "serviceName": "db",
                "selector": {"matchLabels": {"app": "db"}},
                "template": {"metadata": {"labels": {"app": "db"}}, "spec": spec},
            },
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "etl", "namespace": "default", "uid": "uid-etl"},
            "spec": {
                "parallelism": 2,
                "completions": 2,
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "uid-etl"}},
                "template": {"metadata": {"labels": etl_labels}, "spec": spec},
            },
            "status": {"active": 2},
        },
        pod("a1f3", "uid-db-0", db_labels, sts_ref, NODES[2]),  # an anonymised name
        *(pod(f"etl-{c}", f"uid-etl-{c}", etl_labels, job_ref, NODES[0]) for c in "xy"),
    ]


def test_controllers_from_the_snapshot_own_its_pods_and_replace_what_is_evicted() -> None:
    sim, report = _run(_statefulset_and_job())
    assert sim.seeded is not None and not any("owner" in n for n in sim.seeded.notes)
    j = report.to_json_dict()
    # the third node held only the StatefulSet's pod: consolidation drains it
    assert j["nodesRemoved"] == 1 and j["pods"]["disrupted"] == 1
    assert report.samples[0].nodes == 3 and report.samples[-1].nodes == 2
    pods = {p["metadata"]["name"]: p for p in sim.server.list("pods", "default").items}
    # no controller made a pod at t=0 for replicas its pods already held; the Job's pods
    # are its own, the StatefulSet's came back once, under the name it had
    assert sorted(n for n in pods if not n.startswith("web-")) == ["a1f3", "etl-x", "etl-y"]
    assert sim.workloads.pods_created == sim.workloads.pods_replaced == 1
    db = pods["a1f3"]
    assert db["metadata"]["uid"] != "uid-db-0" and db["spec"]["nodeName"] in NODES[:2]
    assert db["metadata"]["ownerReferences"][0]["uid"] == "uid-db"
    assert len([n for n in pods if n.startswith("web-")]) == 4  # the ReplicaSet's, unchanged


def test_what_if_scaling_the_snapshots_deployment_changes_the_node_count() -> None:
    change = parse_what_if("deployment/default/web=20")
    _, baseline = _run(until=900.0)
    sim, changed = _run(until=900.0, what_if=[change.event])
    assert baseline.samples[-1].nodes == 2
    # 20 pods of 1 CPU on 4-CPU nodes (3.9 allocatable): at least 7 nodes
    assert changed.samples[-1].nodes >= 7 > baseline.samples[-1].nodes
    web = [
        p
        for p in sim.server.list("pods", "default").items
        if p["metadata"]["labels"].get("app") == "web"
    ]
    # the new pods are the snapshot's ReplicaSet's, next to its 5
    assert len(web) == 20
    assert {p["metadata"]["ownerReferences"][0]["name"] for p in web} == {"web-5d8f7c9b6"}


def test_a_snapshot_of_an_aws_cluster_simulates_on_the_offline_aws_catalogue() -> None:
    """``cloudProvider: aws`` with a region: KWOK launches the bundled EC2 catalogue's types
    for the EC2NodeClass the snapshot holds, so the snapshot's m5.xlarge nodes are priced and
    kept (on KWOK's own catalogue they would be unknown and replaced as drifted), and the
    underutilised one is consolidated as on the KWOK cluster."""
    scenario = parse_scenario(
        {"name": "aws", "cloudProvider": {"name": "aws", "settings": {"region": "us-west-2"}}}
    )
    objects = as_aws(crafted_objects())
    sim = Simulation(scenario, initial=crafted_state(objects))
    report = sim.run(HALF_HOUR)
    j = report.to_json_dict()
    assert not [n for n in report.notes if "no price" in n], report.notes
    prices = {nc.name: nc.price for nc in report.nodeclaims if nc.existing}
    assert set(prices) == {"default-ax0yz", "default-bx1yz", "default-cx2yz"}
    assert all(p is not None and 0.15 < p < 0.25 for p in prices.values()), prices  # m5.xlarge
    assert j["nodesAtStart"] == 3 and j["nodesRemoved"] == 1
    assert j["removalReasons"] == {"underutilized": 1}
    assert "Drifted" not in str(_karpenter(report, "Disrupt"))
    types = {it.name for it in sim.provider.get_instance_types(None)}
    assert {"m5.xlarge", "c6g.large"} <= types and not any(t.startswith("c-") for t in types)


def test_a_scenario_on_the_aws_catalogue_launches_what_its_ec2nodeclass_allows() -> None:
    """No snapshot: the scenario's own EC2NodeClass (a Windows AMI alias) decides the
    types, as on a real cluster, and KWOK launches one of them."""
    nodeclass = as_aws([])[0]
    nodeclass["spec"]["amiSelectorTerms"] = [{"alias": "windows2022@latest"}]
    del nodeclass["status"]  # none given: the stand-in treats the class as Ready
    windows = {"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}
    scenario = parse_scenario(
        {
            "name": "aws-windows",
            "cloudProvider": {"name": "aws", "settings": {"region": "us-west-2"}},
            "nodePools": [
                {
                    "apiVersion": "karpenter.sh/v1",
                    "kind": "NodePool",
                    "metadata": {"name": "win"},
                    "spec": {
                        "template": {
                            "spec": {
                                "nodeClassRef": {
                                    "group": "karpenter.k8s.aws",
                                    "kind": "EC2NodeClass",
                                    "name": "default",
                                },
                                "requirements": [windows],
                            }
                        }
                    },
                }
            ],
            "objects": [nodeclass],
            "workloads": [{"deployment": "web", "replicas": 4, "requests": {"cpu": "1"}}],
        }
    )
    sim = Simulation(scenario)
    report = sim.run(300.0)
    j = report.to_json_dict()
    assert j["pods"]["bound"] == 4 and j["nodesLaunched"] >= 1
    launched = {nc.instance_type for nc in report.nodeclaims}
    offered = {it.name: it for it in sim.provider.get_instance_types(None)}
    for name in launched:
        assert name in offered and not name.startswith("c-"), launched
        arch = offered[name].requirements.get("kubernetes.io/arch")
        assert arch.has("amd64") and not arch.has("arm64"), name  # Windows: no Graviton
    nodes = sim.server.list("nodes").items
    assert {n["metadata"]["labels"]["kubernetes.io/os"] for n in nodes} == {"windows"}
