"""`karpenter schedule`: manifests in, Karpenter's decision out (json shape and table)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from karpenter_core.cli.exits import EXIT_INVALID_NODEPOOLS
from karpenter_core.cli.schedule import (
    NO_NODEPOOLS_ERROR,
    command,
    load_instance_types,
    read_input,
)
from karpenter_core.scheduling.requirements import Requirements
from karpenter_core.snapshot import Snapshot, write_snapshot

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "schedule"

NODEPOOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: kubernetes.io/os, operator: In, values: [linux]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
"""


def pod_yaml(name: str, cpu: str = "1", memory: str = "1Gi", extra: str = "") -> str:
    return (
        textwrap.dedent(
            f"""
        apiVersion: v1
        kind: Pod
        metadata: {{name: {name}, namespace: default}}
        spec:
          containers:
            - name: c
              resources: {{requests: {{cpu: "{cpu}", memory: {memory}}}}}
        """
        )
        + extra
    )


def write(tmp_path: Path, name: str, *docs: str) -> Path:
    p = tmp_path / name
    p.write_text("\n---\n".join(textwrap.dedent(d) for d in docs))
    return p


def run(*args: str) -> Result:
    return CliRunner().invoke(command, list(args), catch_exceptions=False)


def run_json(*args: str) -> dict[str, Any]:
    result = run(*args, "-o", "json")
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.stdout)
    return out


# --- the documented JSON shape -------------------------------------------------------------


def test_example_json_has_exactly_the_documented_shape() -> None:
    out = run_json("-f", str(EXAMPLE))
    assert list(out) == ["nodeClaims", "existingNodes", "podErrors", "invalidNodePools"]
    assert out["invalidNodePools"] == {}
    assert out["nodeClaims"]
    for nc in out["nodeClaims"]:
        assert set(nc) == {"nodePool", "instanceTypes", "requirements", "pods"}
        assert isinstance(nc["nodePool"], str)
        assert nc["instanceTypes"] and all(isinstance(t, str) for t in nc["instanceTypes"])
        for r in nc["requirements"]:
            assert set(r) == {"key", "operator", "values"}
            assert all(isinstance(v, str) for v in r["values"])
        assert nc["pods"] == sorted(nc["pods"])
    assert isinstance(out["existingNodes"], list)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in out["podErrors"].items())


def test_example_schedules_workload_pods_and_reports_the_oversized_pod() -> None:
    out = run_json("-f", str(EXAMPLE))
    scheduled = [p for nc in out["nodeClaims"] for p in nc["pods"]]
    assert sum(p.startswith("shop/web-") for p in scheduled) == 4
    assert sum(p.startswith("data/etl-") for p in scheduled) == 2
    assert list(out["podErrors"]) == ["shop/in-memory-db"]
    assert "no instance type has enough resources" in out["podErrors"]["shop/in-memory-db"]
    pools = {
        nc["nodePool"] for nc in out["nodeClaims"] if any(p.startswith("data/") for p in nc["pods"])
    }
    assert pools == {"arm"}


def test_example_statefulset_volume_pins_the_zone() -> None:
    out = run_json("-f", str(EXAMPLE))
    (nc,) = [nc for nc in out["nodeClaims"] if "shop/cache-0" in nc["pods"]]
    zones = [r["values"] for r in nc["requirements"] if r["key"] == "topology.kubernetes.io/zone"]
    assert zones == [["test-zone-a"]]


def test_unschedulable_pods_still_exit_zero(tmp_path: Path) -> None:
    f = write(tmp_path, "m.yaml", NODEPOOL, pod_yaml("huge", cpu="100000"))
    result = run("-f", str(f), "-o", "json")
    assert result.exit_code == 0
    assert list(json.loads(result.stdout)["podErrors"]) == ["default/huge"]


def _price(it: Any, reqs: Requirements) -> float:
    o = it.offerings.available().compatible(reqs).cheapest()
    assert o is not None
    return float(o.price)


def test_instance_types_are_cheapest_first() -> None:
    out = run_json("-f", str(EXAMPLE))
    inp = read_input([str(EXAMPLE)])
    catalogue = load_instance_types(inp.nodepools)
    for nc in out["nodeClaims"]:
        by_name = {it.name: it for it in catalogue[nc["nodePool"]]}
        reqs = Requirements.from_node_selector_requirements(nc["requirements"])
        prices = [_price(by_name[n], reqs) for n in nc["instanceTypes"]]
        assert prices == sorted(prices)


def test_output_is_deterministic() -> None:
    assert (
        run("-f", str(EXAMPLE), "-o", "json").stdout == run("-f", str(EXAMPLE), "-o", "json").stdout
    )


def test_bound_pods_are_not_scheduled_again(tmp_path: Path) -> None:
    f = write(
        tmp_path,
        "m.yaml",
        NODEPOOL,
        pod_yaml("bound", extra="  nodeName: somewhere\n"),
        pod_yaml("free"),
    )
    out = run_json("-f", str(f))
    assert [p for nc in out["nodeClaims"] for p in nc["pods"]] == ["default/free"]


NODE = """
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{kubernetes.io/arch: amd64, kubernetes.io/os: linux, kubernetes.io/hostname: {name}}}
spec:
  providerID: fake://{name}
  {taints}
status:
  capacity: {{cpu: "4", memory: 8Gi, pods: "110"}}
  allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}
"""


def test_existing_nodes_lists_only_nodes_receiving_pods(tmp_path: Path) -> None:
    f = write(
        tmp_path,
        "m.yaml",
        NODEPOOL,
        NODE.format(name="free-node", taints=""),
        NODE.format(name="tainted-node", taints="taints: [{key: x, effect: NoSchedule}]"),
        pod_yaml("small"),
    )
    out = run_json("-f", str(f))
    assert out["existingNodes"] == [{"name": "free-node", "pods": ["default/small"]}]
    assert out["nodeClaims"] == []


def test_multiple_files_and_list_objects(tmp_path: Path) -> None:
    write(tmp_path, "pool.yaml", NODEPOOL)
    lst = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            json.loads(
                json.dumps(
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {"name": n},
                        "spec": {"containers": [{"name": "c"}]},
                    }
                )
            )
            for n in ("a", "b")
        ],
    }
    (tmp_path / "pods.json").write_text(json.dumps(lst))
    out = run_json("-f", str(tmp_path / "pool.yaml"), "-f", str(tmp_path / "pods.json"))
    assert sorted(p for nc in out["nodeClaims"] for p in nc["pods"]) == ["default/a", "default/b"]


def test_pods_karpenter_must_ignore_are_reported(tmp_path: Path) -> None:
    f = write(
        tmp_path,
        "m.yaml",
        NODEPOOL,
        pod_yaml("pinned", extra="  nodeSelector: {kubernetes.io/hostname: n1}\n"),
    )
    out = run_json("-f", str(f))
    assert out["nodeClaims"] == []
    assert out["podErrors"]["default/pinned"].startswith("ignoring pod, ")
    assert "kubernetes.io/hostname" in out["podErrors"]["default/pinned"]


def test_pod_with_missing_pvc_is_reported(tmp_path: Path) -> None:
    extra = "  volumes: [{name: data, persistentVolumeClaim: {claimName: nope}}]\n"
    f = write(tmp_path, "m.yaml", NODEPOOL, pod_yaml("db", extra=extra))
    out = run_json("-f", str(f))
    assert "PersistentVolumeClaim default/nope not found" in out["podErrors"]["default/db"]


def test_no_nodepools_means_no_dynamic_nodepools(tmp_path: Path) -> None:
    f = write(tmp_path, "m.yaml", pod_yaml("a"))
    assert run_json("-f", str(f))["podErrors"] == {"default/a": "no dynamic nodepools found"}


def test_node_overlay_price_changes_the_cheapest_type(tmp_path: Path) -> None:
    overlay = """
    apiVersion: karpenter.sh/v1alpha1
    kind: NodeOverlay
    metadata: {name: cheap-m}
    spec:
      requirements:
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m-2x-amd64-linux]}
      price: "0.0001"
    """
    f = write(tmp_path, "m.yaml", NODEPOOL, pod_yaml("a", cpu="100m", memory="100Mi"))
    before = run_json("-f", str(f))["nodeClaims"][0]["instanceTypes"][0]
    g = write(tmp_path, "overlay.yaml", overlay)
    after = run_json("-f", str(f), "-f", str(g))["nodeClaims"][0]["instanceTypes"][0]
    assert before != "m-2x-amd64-linux"
    assert after == "m-2x-amd64-linux"


def _overlay(name: str, instance_type: str, weight: int, body: str) -> str:
    return f"""
    apiVersion: karpenter.sh/v1alpha1
    kind: NodeOverlay
    metadata: {{name: {name}}}
    spec:
      weight: {weight}
      requirements:
        - {{key: node.kubernetes.io/instance-type, operator: In, values: [{instance_type}]}}
      {body}
    """


def test_table_price_includes_overlays(tmp_path: Path) -> None:
    f = write(tmp_path, "m.yaml", NODEPOOL, pod_yaml("a", cpu="100m", memory="100Mi"))
    g = write(tmp_path, "overlay.yaml", _overlay("cheap", "m-2x-amd64-linux", 1, 'price: "0.0001"'))
    row = run("-f", str(f), "-f", str(g)).stdout.splitlines()[1].split()
    assert row == ["default", "m-2x-amd64-linux", "$0.0001/h", "1"]


def test_equal_weight_conflict_skips_the_later_overlay(tmp_path: Path) -> None:
    """Ties are evaluated by name descending: "two" records its price first, so "one"
    (same weight, same offerings) conflicts and is not applied."""
    f = write(tmp_path, "m.yaml", NODEPOOL, pod_yaml("a", cpu="100m", memory="100Mi"))
    g = write(
        tmp_path,
        "overlays.yaml",
        _overlay("one", "m-2x-amd64-linux", 5, 'price: "0.0001"'),
        _overlay("two", "m-2x-amd64-linux", 5, 'price: "99"'),
    )
    its = run_json("-f", str(f), "-f", str(g))["nodeClaims"][0]["instanceTypes"]
    assert its[-1] == "m-2x-amd64-linux"


def test_heavier_overlay_wins_over_a_lighter_one(tmp_path: Path) -> None:
    f = write(tmp_path, "m.yaml", NODEPOOL, pod_yaml("a", cpu="100m", memory="100Mi"))
    g = write(
        tmp_path,
        "overlays.yaml",
        _overlay("heavy", "m-2x-amd64-linux", 9, 'price: "0.0001"'),
        _overlay("light", "m-2x-amd64-linux", 1, 'price: "99"'),
    )
    assert (
        run_json("-f", str(f), "-f", str(g))["nodeClaims"][0]["instanceTypes"][0]
        == "m-2x-amd64-linux"
    )


def test_capacity_overlay_adds_an_extended_resource(tmp_path: Path) -> None:
    gpu_pod = pod_yaml("trainer", cpu="1").replace(
        "memory: 1Gi}", 'memory: 1Gi, example.com/gpu: "1"}'
    )
    f = write(tmp_path, "m.yaml", NODEPOOL, gpu_pod)
    assert "default/trainer" in run_json("-f", str(f))["podErrors"]
    g = write(
        tmp_path,
        "overlay.yaml",
        _overlay("gpus", "c-8x-amd64-linux", 1, 'capacity: {example.com/gpu: "2"}'),
    )
    out = run_json("-f", str(f), "-f", str(g))
    assert out["podErrors"] == {}
    assert out["nodeClaims"][0]["instanceTypes"] == ["c-8x-amd64-linux"]


KWOK_TYPES = [
    {
        "name": name,
        "architecture": "amd64",
        "operatingSystems": ["linux"],
        "resources": {"cpu": cpu, "memory": mem, "pods": "110"},
        "offerings": [
            {
                "Price": price,
                "Available": True,
                "Requirements": [
                    {
                        "key": "karpenter.sh/capacity-type",
                        "operator": "In",
                        "values": ["on-demand"],
                    },
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-1"]},
                ],
            }
        ],
    }
    for name, cpu, mem, price in [("tiny", "2", "4Gi", 0.1), ("large", "16", "64Gi", 1.0)]
]


def test_instance_types_from_a_kwok_json_file(tmp_path: Path) -> None:
    types = tmp_path / "types.json"
    types.write_text(json.dumps(KWOK_TYPES))
    f = write(tmp_path, "m.yaml", NODEPOOL, pod_yaml("a", cpu="4"))
    out = run_json("-f", str(f), "--instance-types", str(types))
    assert out["nodeClaims"][0]["instanceTypes"] == ["large"]


# --- bad input: exit 1, one line naming file, object and field ---------------------------------


def _one_line_error(result: Result, code: int = 1) -> str:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_bad_quantity_in_a_deployment_names_file_object_and_field(tmp_path: Path) -> None:
    deploy = """
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web, namespace: shop}
    spec:
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec:
          containers: [{name: c, resources: {requests: {cpu: lots}}}]
    """
    f = write(tmp_path, "deploy.yaml", NODEPOOL, deploy)
    line = _one_line_error(run("-f", str(f)))
    assert str(f) in line
    assert "Deployment shop/web" in line
    assert "spec.template.spec.containers[0].resources.requests.cpu" in line


def test_bad_pod_names_the_field(tmp_path: Path) -> None:
    f = write(tmp_path, "pod.yaml", pod_yaml("p", memory="lots"))
    line = _one_line_error(run("-f", str(f)))
    assert str(f) in line and "Pod default/p" in line and "resources.requests.memory" in line


def test_invalid_nodepool_is_reported_in_one_line_and_left_out(tmp_path: Path) -> None:
    bad = NODEPOOL.replace("operator: In, values: [amd64]", "operator: Maybe, values: [amd64]")
    f = write(tmp_path, "pool.yaml", bad, pod_yaml("a"))
    result = run("-f", str(f))
    line = _one_line_error(result, EXIT_INVALID_NODEPOOLS)
    assert str(f) in line and "NodePool default" in line and "requirements" in line
    assert "NodePool ignored" in line
    # nothing else to schedule on: the pod says so, as with no NodePool at all
    assert "default/a" in result.stdout and NO_NODEPOOLS_ERROR in result.stdout


def test_the_valid_nodepools_are_scheduled_on_when_one_is_invalid(tmp_path: Path) -> None:
    bad = NODEPOOL.replace("name: default", "name: broken").replace(
        "operator: In, values: [amd64]", "operator: Maybe, values: [amd64]"
    )
    f = write(tmp_path, "pools.yaml", NODEPOOL, bad, pod_yaml("a"))
    result = run("-f", str(f), "-o", "json")
    assert result.exit_code == EXIT_INVALID_NODEPOOLS, result.output
    out = json.loads(result.stdout)
    assert [(nc["nodePool"], nc["pods"]) for nc in out["nodeClaims"]] == [
        ("default", ["default/a"])
    ]
    assert list(out["invalidNodePools"]) == ["broken"]
    assert out["invalidNodePools"]["broken"].startswith(f"{f}: NodePool broken: spec.template")
    assert f"Error: {out['invalidNodePools']['broken']}" in result.stderr


def test_an_invalid_nodepool_does_not_change_a_valid_run(tmp_path: Path) -> None:
    bad = NODEPOOL.replace("name: default", "name: broken") + "  limits: {cpu: many}\n"
    alone = run_json("-f", str(EXAMPLE))
    with_bad = run("-f", str(EXAMPLE), "-f", str(write(tmp_path, "bad.yaml", bad)), "-o", "json")
    assert with_bad.exit_code == EXIT_INVALID_NODEPOOLS
    out = json.loads(with_bad.stdout)
    assert out.pop("invalidNodePools").keys() == {"broken"}
    alone.pop("invalidNodePools")
    assert out == alone


def test_unsupported_api_version_is_bad_input(tmp_path: Path) -> None:
    f = write(tmp_path, "pool.yaml", NODEPOOL.replace("karpenter.sh/v1", "karpenter.sh/v1beta1"))
    line = _one_line_error(run("-f", str(f)))
    assert "NodePool default" in line and "apiVersion" in line


def test_invalid_yaml_names_the_file(tmp_path: Path) -> None:
    f = tmp_path / "broken.yaml"
    f.write_text("kind: Pod\nmetadata: [unclosed\n")
    assert str(f) in _one_line_error(run("-f", str(f)))


def test_missing_file_is_bad_input(tmp_path: Path) -> None:
    assert "nope.yaml" in _one_line_error(run("-f", str(tmp_path / "nope.yaml")))


def test_unknown_cloud_provider_is_bad_input(tmp_path: Path) -> None:
    f = write(tmp_path, "m.yaml", NODEPOOL)
    assert "no-such-cloud" in _one_line_error(
        run("-f", str(f), "--cloud-provider", "no-such-cloud")
    )


def test_region_for_a_provider_without_regions_is_bad_input(tmp_path: Path) -> None:
    f = write(tmp_path, "m.yaml", NODEPOOL)
    assert "'kwok' has no regions" in _one_line_error(run("-f", str(f), "--region", "eastus"))


def test_cloud_provider_and_instance_types_are_exclusive(tmp_path: Path) -> None:
    f = write(tmp_path, "m.yaml", NODEPOOL)
    result = run("-f", str(f), "--cloud-provider", "kwok", "--instance-types", str(f))
    assert result.exit_code == 2


def _pod_with(spec_extra: str) -> str:
    return pod_yaml("p", extra=textwrap.indent(textwrap.dedent(spec_extra).strip(), "  ") + "\n")


_NODE_TERM = (
    "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
    "{nodeSelectorTerms: [{matchExpressions: [%s]}]}}}"
)
_POD_TERM = (
    "affinity: {%s: {requiredDuringSchedulingIgnoredDuringExecution: "
    "[{topologyKey: kubernetes.io/hostname, labelSelector: {matchExpressions: [%s]}}]}}"
)
_TSC = (
    "topologySpreadConstraints: [{maxSkew: %s, topologyKey: topology.kubernetes.io/zone, "
    "whenUnsatisfiable: %s, labelSelector: {matchExpressions: [%s]}}]"
)
_WORKLOAD = """
apiVersion: apps/v1
kind: %s
metadata: {name: w}
spec:
  replicas: %s
  selector: {matchExpressions: [%s]}
  template:
    metadata: {labels: {app: w}}
    spec:
      containers: [{name: c, resources: {requests: {cpu: "%s"}}}]
"""
_EXPR = "{key: app, operator: In, values: [w]}"

# (id, document, object named, field named)
BAD_INPUT = [
    (
        "pod-quantity",
        pod_yaml("p", cpu="1.5x"),
        "Pod default/p",
        "spec.containers[0].resources.requests.cpu",
    ),
    (
        "pod-node-affinity-operator",
        _pod_with(_NODE_TERM % "{key: a, operator: Near, values: [b]}"),
        "Pod default/p",
        "nodeSelectorTerms[0].matchExpressions[0].operator",
    ),
    (
        "pod-node-affinity-gt-not-integer",
        _pod_with(_NODE_TERM % "{key: a, operator: Gt, values: [ten]}"),
        "Pod default/p",
        "matchExpressions[0].values[0]",
    ),
    (
        "pod-affinity-selector-operator",
        _pod_with(_POD_TERM % ("podAffinity", "{key: a, operator: Like, values: [b]}")),
        "Pod default/p",
        "podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector",
    ),
    (
        "pod-anti-affinity-selector-operator",
        _pod_with(_POD_TERM % ("podAntiAffinity", "{key: a, operator: Gt, values: ['1']}")),
        "Pod default/p",
        "podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector",
    ),
    (
        "pod-spread-max-skew",
        _pod_with(_TSC % ("0", "DoNotSchedule", _EXPR)),
        "Pod default/p",
        "spec.topologySpreadConstraints[0].maxSkew",
    ),
    (
        "pod-spread-when-unsatisfiable",
        _pod_with(_TSC % ("1", "Sometimes", _EXPR)),
        "Pod default/p",
        "spec.topologySpreadConstraints[0].whenUnsatisfiable",
    ),
    (
        "pod-spread-selector-operator",
        _pod_with(_TSC % ("1", "DoNotSchedule", "{key: a, operator: Exist}")),
        "Pod default/p",
        "spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0].operator",
    ),
    (
        "pod-toleration-operator",
        _pod_with("tolerations: [{key: a, operator: Matches, effect: NoSchedule}]"),
        "Pod default/p",
        "spec.tolerations[0]",
    ),
    (
        "deployment-quantity",
        _WORKLOAD % ("Deployment", "2", _EXPR, "lots"),
        "Deployment default/w",
        "spec.template.spec.containers[0].resources.requests.cpu",
    ),
    (
        "deployment-replicas",
        _WORKLOAD % ("Deployment", "two", _EXPR, "1"),
        "Deployment default/w",
        "spec.replicas",
    ),
    (
        "replicaset-selector-operator",
        _WORKLOAD % ("ReplicaSet", "1", "{key: app, operator: Is, values: [w]}", "1"),
        "ReplicaSet default/w",
        "spec.selector.matchExpressions[0].operator",
    ),
    (
        "daemonset-affinity-operator",
        """
        apiVersion: apps/v1
        kind: DaemonSet
        metadata: {name: ds}
        spec:
          selector: {matchLabels: {app: ds}}
          template:
            metadata: {labels: {app: ds}}
            spec:
              containers: [{name: c}]
              affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:
                {nodeSelectorTerms: [{matchExpressions: [{key: a, operator: Near}]}]}}}
        """,
        "DaemonSet default/ds",
        "spec.template.spec.affinity.nodeAffinity",
    ),
    (
        "persistentvolume-affinity-operator",
        """
        apiVersion: v1
        kind: PersistentVolume
        metadata: {name: pv}
        spec:
          nodeAffinity: {required: {nodeSelectorTerms:
            [{matchExpressions: [{key: topology.kubernetes.io/zone, operator: Within}]}]}}
        """,
        "PersistentVolume pv",
        "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator",
    ),
    (
        "node-quantity",
        "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {memory: 4Gb}}\n",
        "Node n",
        "status.allocatable.memory",
    ),
    (
        "pvc-quantity",
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\n"
        "spec: {resources: {requests: {storage: big}}}\n",
        "PersistentVolumeClaim default/c",
        "spec.resources.requests.storage",
    ),
    (
        "namespace-labels",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: n, labels: [team]}\n",
        "Namespace n",
        "metadata.labels",
    ),
    (
        "service-selector",
        "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {selector: [app]}\n",
        "Service default/s",
        "spec.selector",
    ),
    (
        "nodepool-operator",
        NODEPOOL.replace("operator: In, values: [amd64]", "operator: Near, values: [amd64]"),
        "NodePool default",
        "spec.template.spec.requirements[0].operator",
    ),
    (
        "nodepool-limit-quantity",
        NODEPOOL + "  limits: {cpu: many}\n",
        "NodePool default",
        "spec.limits",
    ),
    (
        "nodepool-taint-effect",
        NODEPOOL + "      taints: [{key: a, effect: Sometimes}]\n",
        "NodePool default",
        "spec.template.spec.taints[0].effect",
    ),
]


@pytest.mark.parametrize(
    ("document", "obj", "field"),
    [pytest.param(doc, obj, fld, id=name) for name, doc, obj, fld in BAD_INPUT],
)
def test_bad_input_is_one_line_naming_file_object_and_field(
    tmp_path: Path, document: str, obj: str, field: str
) -> None:
    docs = [document] if "kind: NodePool" in document else [NODEPOOL, document]
    f = write(tmp_path, "bad.yaml", *docs)
    result = CliRunner().invoke(command, ["-f", str(f), "-o", "json"])
    assert isinstance(result.exception, SystemExit), result.exception
    # an invalid NodePool is left out and the run goes on (exit 4); the rest is bad input
    line = _one_line_error(result, EXIT_INVALID_NODEPOOLS if obj.startswith("NodePool") else 1)
    assert line.startswith(f"Error: {f}: {obj}: ")
    assert field in line


def test_scheduler_error_about_a_nodepool_names_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import karpenter_core.provisioning.scheduler as scheduler_pkg

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("nodepool 'default': spec.limits: unreadable")

    monkeypatch.setattr(scheduler_pkg, "schedule", broken)
    f = write(tmp_path, "pools.yaml", NODEPOOL, pod_yaml("a"))
    line = _one_line_error(CliRunner().invoke(command, ["-f", str(f)]))
    assert line == f"Error: {f}: NodePool default: nodepool 'default': spec.limits: unreadable"


def test_bad_scheduler_config_names_the_file(tmp_path: Path) -> None:
    f = write(tmp_path, "m.yaml", NODEPOOL, pod_yaml("a"))
    cfg = tmp_path / "scheduler.yaml"
    cfg.write_text(
        "podTopologySpread:\n  defaultConstraints:\n"
        "  - {maxSkew: 1, topologyKey: 'bad key!', whenUnsatisfiable: DoNotSchedule}\n"
    )
    line = _one_line_error(run("-f", str(f), "--scheduler-config", str(cfg)))
    assert line.startswith(f"Error: {cfg}: ") and "topologyKey" in line


def test_unreadable_instance_types_file_is_bad_input(tmp_path: Path) -> None:
    f = write(tmp_path, "m.yaml", NODEPOOL)
    types = tmp_path / "types.json"
    types.write_text("{not json")
    assert str(types) in _one_line_error(run("-f", str(f), "--instance-types", str(types)))


# --- the table view --------------------------------------------------------------------------


def test_table_shows_claims_with_price_and_unschedulable_pods() -> None:
    result = run("-f", str(EXAMPLE))
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["NODEPOOL", "INSTANCE", "TYPE", "PRICE", "PODS"]
    claims = run_json("-f", str(EXAMPLE))["nodeClaims"]
    rows = lines[1 : 1 + len(claims)]
    for row, nc in zip(rows, claims, strict=True):
        cells = row.split()
        assert cells[0] == nc["nodePool"]
        assert cells[1] == nc["instanceTypes"][0]
        assert cells[2].startswith("$") and cells[2].endswith("/h")
        assert cells[3] == str(len(nc["pods"]))
    assert any(line.startswith("UNSCHEDULABLE POD") for line in lines)
    assert any(line.startswith("shop/in-memory-db ") for line in lines)


def test_table_lists_existing_nodes_receiving_pods(tmp_path: Path) -> None:
    f = write(tmp_path, "m.yaml", NODEPOOL, NODE.format(name="n1", taints=""), pod_yaml("small"))
    out = run("-f", str(f)).stdout
    assert "No new NodeClaims." in out
    assert any(line.split() == ["n1", "1"] for line in out.splitlines())


def test_ignored_kinds_are_noted_on_stderr(tmp_path: Path) -> None:
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {}\n"
    f = write(tmp_path, "m.yaml", NODEPOOL, cm)
    result = run("-f", str(f), "-o", "json")
    assert result.exit_code == 0
    assert "ConfigMap (1)" in result.stderr
    json.loads(result.stdout)


@pytest.mark.parametrize("flag", ["-o", "--output"])
def test_output_flag_spellings(flag: str) -> None:
    assert json.loads(run("-f", str(EXAMPLE), flag, "json").stdout)["nodeClaims"]


MANAGED_NODE = """
apiVersion: v1
kind: Node
metadata:
  name: kwok-1
  labels:
    karpenter.sh/nodepool: default
    karpenter.sh/registered: "true"
    node.kubernetes.io/instance-type: c-4x-amd64-linux
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
    kubernetes.io/hostname: kwok-1
    {initialized}
spec:
  providerID: kwok://kwok-1
  taints: [{{key: node.kubernetes.io/not-ready, effect: NoExecute}}]
status:
  capacity: {{cpu: "4", memory: 8Gi, pods: "110"}}
  allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}
"""

NODECLAIM = """
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: default-abcde
  labels: {karpenter.sh/nodepool: default}
spec:
  nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
  requirements:
    - {key: node.kubernetes.io/instance-type, operator: In, values: [c-4x-amd64-linux]}
status:
  providerID: kwok://kwok-1
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
"""


def test_uninitialized_managed_node_ignores_its_ephemeral_taint(tmp_path: Path) -> None:
    node = MANAGED_NODE.format(initialized="")
    f = write(tmp_path, "m.yaml", NODEPOOL, node, NODECLAIM, pod_yaml("a"))
    out = run_json("-f", str(f))
    assert out["existingNodes"] == [{"name": "kwok-1", "pods": ["default/a"]}]
    assert out["nodeClaims"] == []


def test_initialized_node_with_the_taint_gets_a_new_nodeclaim(tmp_path: Path) -> None:
    node = MANAGED_NODE.format(initialized='karpenter.sh/initialized: "true"')
    f = write(tmp_path, "m.yaml", NODEPOOL, node, NODECLAIM, pod_yaml("a"))
    out = run_json("-f", str(f))
    assert out["existingNodes"] == []
    assert [nc["pods"] for nc in out["nodeClaims"]] == [["default/a"]]


def test_bound_pods_use_up_existing_capacity(tmp_path: Path) -> None:
    node = NODE.format(name="n1", taints="")
    busy = pod_yaml("busy", cpu="3500m", extra="  nodeName: n1\n")
    f = write(tmp_path, "m.yaml", NODEPOOL, node, busy, pod_yaml("a"))
    out = run_json("-f", str(f))
    assert out["existingNodes"] == []
    assert [nc["pods"] for nc in out["nodeClaims"]] == [["default/a"]]


def test_csi_volume_limits_of_existing_nodes_are_respected(tmp_path: Path) -> None:
    """Spec scenario: CSINode limit 10, six pods with two new PVCs each -> five fit the
    existing node, the sixth needs a new NodeClaim."""
    docs = [
        NODEPOOL,
        NODE.format(name="n1", taints=""),
        """
        apiVersion: storage.k8s.io/v1
        kind: CSINode
        metadata: {name: n1}
        spec:
          drivers: [{name: csi.example.com, nodeID: n1, allocatable: {count: 10}}]
        """,
        """
        apiVersion: storage.k8s.io/v1
        kind: StorageClass
        metadata: {name: disk}
        provisioner: csi.example.com
        volumeBindingMode: WaitForFirstConsumer
        """,
    ]
    for i in range(6):
        for v in ("a", "b"):
            docs.append(
                f"""
                apiVersion: v1
                kind: PersistentVolumeClaim
                metadata: {{name: p{i}-{v}, namespace: default}}
                spec: {{storageClassName: disk}}
                """
            )
        volumes = f"  volumes: [{{name: a, persistentVolumeClaim: {{claimName: p{i}-a}}}}, {{name: b, persistentVolumeClaim: {{claimName: p{i}-b}}}}]\n"
        docs.append(pod_yaml(f"p{i}", cpu="10m", memory="10Mi", extra=volumes))
    f = write(tmp_path, "m.yaml", *docs)
    out = run_json("-f", str(f))
    assert out["podErrors"] == {}
    assert [len(n["pods"]) for n in out["existingNodes"]] == [5]
    assert [len(nc["pods"]) for nc in out["nodeClaims"]] == [1]


# --- default spreads (--scheduler-config), Services and Namespaces ---------------------------

HOSTNAME_DEFAULT = """
podTopologySpread:
  defaultConstraints:
  - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule}
"""

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, resources: {requests: {cpu: 100m}}}]
"""


def _pods_per_claim(out: dict[str, Any]) -> list[int]:
    return sorted(len(nc["pods"]) for nc in out["nodeClaims"])


@pytest.mark.parametrize(("with_config", "expected"), [(True, [1, 1, 1]), (False, [3])])
def test_scheduler_config_spreads_deployment_pods(
    tmp_path: Path, with_config: bool, expected: list[int]
) -> None:
    f = write(tmp_path, "m.yaml", NODEPOOL, DEPLOYMENT)
    cfg = tmp_path / "scheduler.yaml"
    cfg.write_text(HOSTNAME_DEFAULT)
    args = ["-f", str(f)] + (["--scheduler-config", str(cfg)] if with_config else [])
    assert _pods_per_claim(run_json(*args)) == expected


@pytest.mark.parametrize(("with_service", "expected"), [(True, [1, 1]), (False, [2])])
def test_services_in_the_manifests_give_bare_pods_a_default_spread(
    tmp_path: Path, with_service: bool, expected: list[int]
) -> None:
    pods = [
        pod_yaml(n, cpu="100m").replace(
            "namespace: default}", "namespace: default, labels: {app: api}}"
        )
        for n in ("a", "b")
    ]
    svc = "apiVersion: v1\nkind: Service\nmetadata: {name: api}\nspec: {selector: {app: api}}\n"
    f = write(tmp_path, "m.yaml", NODEPOOL, *pods, *([svc] if with_service else []))
    cfg = tmp_path / "scheduler.yaml"
    cfg.write_text(HOSTNAME_DEFAULT)
    assert _pods_per_claim(run_json("-f", str(f), "--scheduler-config", str(cfg))) == expected


@pytest.mark.parametrize(("team", "claims"), [("data", 2), ("web", 1)])
def test_namespace_labels_from_the_manifests_drive_namespace_selectors(
    tmp_path: Path, team: str, claims: int
) -> None:
    db = pod_yaml("db", cpu="100m").replace(
        "namespace: default}", "namespace: storage, labels: {app: db}}"
    )
    anti = """
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - topologyKey: kubernetes.io/hostname
              labelSelector: {matchLabels: {app: db}}
              namespaceSelector: {matchLabels: {team: data}}
    """
    client = pod_yaml(
        "client", cpu="100m", extra=textwrap.indent(textwrap.dedent(anti).strip() + "\n", "  ")
    )
    ns = f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: storage, labels: {{team: {team}}}}}\n"
    f = write(tmp_path, "m.yaml", NODEPOOL, db, client, ns)
    out = run_json("-f", str(f))
    assert out["podErrors"] == {}
    assert len(out["nodeClaims"]) == claims


# --- generic ephemeral volumes -------------------------------------------------------------------

ZONAL_DEFAULT_CLASS = """
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: zonal
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
  - matchLabelExpressions: [{key: topology.kubernetes.io/zone, values: [test-zone-b]}]
"""

EPHEMERAL = """
  volumes:
    - name: scratch
      ephemeral:
        volumeClaimTemplate:
          spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
"""


def _zones(claim: dict[str, Any]) -> list[str]:
    (zone,) = [r for r in claim["requirements"] if r["key"] == "topology.kubernetes.io/zone"]
    return list(zone["values"])


def test_ephemeral_volume_claims_are_created_with_the_default_class(tmp_path: Path) -> None:
    f = write(tmp_path, "m.yaml", NODEPOOL, ZONAL_DEFAULT_CLASS, pod_yaml("a", extra=EPHEMERAL))
    out = run_json("-f", str(f))
    assert out["podErrors"] == {}
    assert _zones(out["nodeClaims"][0]) == ["test-zone-b"]


def test_deployment_pods_with_ephemeral_volumes_get_their_claims(tmp_path: Path) -> None:
    deploy = DEPLOYMENT.replace("replicas: 3", "replicas: 2") + textwrap.indent(EPHEMERAL, "    ")
    f = write(tmp_path, "m.yaml", NODEPOOL, ZONAL_DEFAULT_CLASS, deploy)
    out = run_json("-f", str(f))
    assert out["podErrors"] == {}
    assert [_zones(nc) for nc in out["nodeClaims"]] == [["test-zone-b"]]


def test_bad_ephemeral_volume_template_names_the_field(tmp_path: Path) -> None:
    bad = EPHEMERAL.replace("storage: 1Gi", "storage: lots")
    f = write(tmp_path, "m.yaml", NODEPOOL, pod_yaml("a", extra=bad))
    line = _one_line_error(run("-f", str(f)))
    assert line.startswith(f"Error: {f}: Pod default/a: spec.volumes[0].ephemeral")
    assert "resources.requests.storage" in line


# --- a snapshot holding workloads and their pods ------------------------------------------


def _snapshot_workloads(web_replicas: int, db_replicas: int) -> list[dict[str, Any]]:
    """A Deployment with its ReplicaSet (named by a cluster's hash) and 3 of its pods, and a
    StatefulSet whose 2 pods have anonymised names (their ordinals are labels), all bound
    to ``n1``, as ``karpenter snapshot`` writes them."""

    def ref(kind: str, name: str, uid: str) -> dict[str, Any]:
        return {"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": uid, "controller": True}

    def tmpl(labels: dict[str, str]) -> dict[str, Any]:
        return {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]},
        }

    def workload(kind: str, name: str, uid: str, replicas: int, labels: dict[str, str]) -> Any:
        return {
            "apiVersion": "apps/v1",
            "kind": kind,
            "metadata": {"name": name, "namespace": "default", "uid": uid},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": labels},
                "template": tmpl(labels),
            },
        }

    def pod(name: str, labels: dict[str, str], owner: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": "default",
                "labels": labels,
                "ownerReferences": [owner],
            },
            "spec": {**tmpl(labels)["spec"], "nodeName": "n1"},
            "status": {"phase": "Running"},
        }

    hashed = {"app": "web", "pod-template-hash": "5d8f"}
    rs = workload("ReplicaSet", "web-5d8f", "rs", web_replicas, hashed)
    rs["metadata"]["ownerReferences"] = [ref("Deployment", "web", "dep")]
    objects = [
        yaml.safe_load(NODEPOOL),
        yaml.safe_load(NODE.format(name="n1", taints="")),
        workload("Deployment", "web", "dep", web_replicas, {"app": "web"}),
        rs,
        workload("StatefulSet", "db", "sts", db_replicas, {"app": "db"}),
    ]
    objects += [pod(f"web-5d8f-{c}", hashed, ref("ReplicaSet", "web-5d8f", "rs")) for c in "abc"]
    objects += [
        pod(f"a9e{i}", {"app": "db", "apps.kubernetes.io/pod-index": str(i)},
            ref("StatefulSet", "db", "sts"))
        for i in range(2)
    ]  # fmt: skip
    return objects


def _scheduled(out: dict[str, Any]) -> list[str]:
    pods = [p for n in out["existingNodes"] for p in n["pods"]]
    return sorted(pods + [p for nc in out["nodeClaims"] for p in nc["pods"]])


def test_a_snapshot_with_workloads_and_their_pods_invents_no_pod(tmp_path: Path) -> None:
    path = tmp_path / "snap.json"
    write_snapshot(Snapshot.from_objects(_snapshot_workloads(3, 2), taken_at="T"), path)
    out = run_json("-f", str(path))
    assert _scheduled(out) == [] and out["nodeClaims"] == []
    # what the replicas lack is added, to the ReplicaSet and ordinal the controllers would use
    write_snapshot(Snapshot.from_objects(_snapshot_workloads(4, 3), taken_at="T"), path)
    new = _scheduled(run_json("-f", str(path)))
    assert len(new) == 2 and "default/db-2" in new
    (web,) = [p for p in new if p != "default/db-2"]
    assert web.startswith("default/web-5d8f-")


def test_plain_manifests_still_expand_to_every_replica(tmp_path: Path) -> None:
    objects = [
        o
        for o in _snapshot_workloads(3, 2)
        if o["kind"] in ("NodePool", "Deployment", "StatefulSet")
    ]
    for o in objects:
        o["metadata"].pop("uid", None)
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    new = _scheduled(run_json("-f", str(path)))
    assert len(new) == 5 and {"default/db-0", "default/db-1"} < set(new)
