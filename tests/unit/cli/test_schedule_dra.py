"""`karpenter schedule` and DRA (issue 11 item 5): DeviceClasses, ResourceClaims,
ResourceClaimTemplates and ResourceSlices read from the manifests; pods' claims simulated
with ``IGNORE_DRA_REQUESTS=false`` (flag or environment variable) against them and the
installed drivers' template devices; podErrors that name the claim and the request."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from karpenter_core.cli.schedule import command, read_input

GPU = "gpu.example.com"

NODEPOOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: kubernetes.io/os, operator: In, values: [linux]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
"""

DEVICE_CLASS = f"""
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: gpu}}
spec:
  selectors:
  - cel: {{expression: 'device.driver == "{GPU}"'}}
"""


def claim_yaml(name: str, count: int = 1, kind: str = "ResourceClaim") -> str:
    spec = f"""
    devices:
      requests:
      - name: gpus
        exactly: {{deviceClassName: gpu, count: {count}}}
"""
    if kind == "ResourceClaimTemplate":
        body = "spec:\n  spec:" + textwrap.indent(spec, "  ")
    else:
        body = "spec:" + spec
    return f"apiVersion: resource.k8s.io/v1\nkind: {kind}\nmetadata: {{name: {name}, namespace: default}}\n{body}"


def pod_yaml(name: str, *, claim: str | None = None, template: str | None = None) -> str:
    entry = (
        f"resourceClaimName: {claim}"
        if claim is not None
        else f"resourceClaimTemplateName: {template}"
    )
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  resourceClaims:
  - {{name: gpu, {entry}}}
  containers:
  - name: c
    image: pause
    resources:
      requests: {{cpu: "1", memory: 1Gi}}
      claims: [{{name: gpu}}]
"""


CLUSTER_WIDE_SLICE = f"""
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: shared}}
spec:
  driver: {GPU}
  allNodes: true
  pool: {{name: shared, generation: 1, resourceSliceCount: 1}}
  devices:
  - {{name: gpu-0}}
  - {{name: gpu-1}}
"""

KWOK_DRA_CONFIG = f"""
apiVersion: test.karpenter.sh/v1alpha1
kind: DRAConfig
metadata: {{name: gpus}}
spec:
  driver: {GPU}
  pools:
  - name: a100
    nodeSelectorTerms:
    - matchExpressions:
      - {{key: karpenter.kwok.sh/instance-family, operator: In, values: [c]}}
    resourceSlices:
    - devices:
      - {{name: gpu-0}}
      - {{name: gpu-1}}
"""


@pytest.fixture(autouse=True)
def _kwok_dra_config_from_the_environment() -> Iterator[None]:
    from karpenter_kwok import dra

    dra.set_active_config(None)
    yield
    dra.set_active_config(None)


def write(tmp_path: Path, *docs: str) -> Path:
    p = tmp_path / "in.yaml"
    p.write_text("\n---\n".join(textwrap.dedent(d).strip() for d in docs) + "\n")
    return p


def run(path: Path, *args: str, env: Mapping[str, str] | None = None) -> Result:
    return CliRunner().invoke(command, ["-f", str(path), *args], env=dict(env or {}))


def output(result: Result) -> dict[str, Any]:
    assert result.exit_code == 0, result.output
    text = result.stdout
    return json.loads(text[text.index("{") :])


def test_the_dra_kinds_are_read_not_ignored(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        NODEPOOL,
        DEVICE_CLASS,
        claim_yaml("c"),
        claim_yaml("t", kind="ResourceClaimTemplate"),
        CLUSTER_WIDE_SLICE,
    )
    inp = read_input([str(path)])
    assert inp.ignored_kinds == {}
    dra = inp.dra_inputs()
    assert set(dra.device_classes) == {"gpu"}
    assert set(dra.resource_claims) == {("default", "c")}
    assert set(dra.claim_templates) == {("default", "t")}
    assert [s.metadata.name for s in dra.resource_slices] == ["shared"]


def test_a_bad_dra_object_is_bad_input_naming_file_object_and_field(tmp_path: Path) -> None:
    path = write(tmp_path, NODEPOOL, claim_yaml("c").replace("count: 1", "count: many"))
    result = run(path)
    assert result.exit_code == 1
    assert "ResourceClaim default/c" in result.output
    assert "spec.devices.requests[0].exactly.count" in result.output


def test_by_default_dra_pods_are_reported_not_simulated(tmp_path: Path) -> None:
    path = write(tmp_path, NODEPOOL, DEVICE_CLASS, claim_yaml("c"), pod_yaml("p", claim="c"))
    result = run(path, "-o", "json")
    doc = output(result)
    assert doc["nodeClaims"] == []
    assert "Dynamic Resource Allocation requirements" in doc["podErrors"]["default/p"]
    assert "--ignore-dra-requests=false to simulate them" in result.stderr


@pytest.mark.parametrize("how", ["env", "flag"])
def test_claims_are_simulated_against_cluster_wide_devices(tmp_path: Path, how: str) -> None:
    path = write(
        tmp_path,
        NODEPOOL,
        DEVICE_CLASS,
        CLUSTER_WIDE_SLICE,
        claim_yaml("c", count=2),
        pod_yaml("p", claim="c"),
    )
    if how == "env":
        result = run(path, "-o", "json", env={"IGNORE_DRA_REQUESTS": "false"})
    else:
        result = run(path, "-o", "json", "--ignore-dra-requests=false")
    doc = output(result)
    assert doc["podErrors"] == {}
    [nc] = doc["nodeClaims"]
    assert nc["pods"] == ["default/p"]
    assert "ResourceClaims" not in result.stderr


def test_pod_errors_explain_unsatisfiable_claims(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        NODEPOOL,
        DEVICE_CLASS,
        CLUSTER_WIDE_SLICE,
        claim_yaml("c", count=3),
        pod_yaml("too-many", claim="c"),
        pod_yaml("missing", claim="nope"),
    )
    doc = output(run(path, "-o", "json", "--ignore-dra-requests=false"))
    assert doc["nodeClaims"] == []
    too_many = doc["podErrors"]["default/too-many"]
    assert 'claim "c" request "gpus": no instance type can satisfy the allocation' in too_many
    assert "needs 3 device(s), at most 2" in too_many
    assert doc["podErrors"]["default/missing"] == 'resourceclaim "default/nope" not found'


def test_the_installed_drivers_give_instance_types_their_devices(tmp_path: Path) -> None:
    """The KWOK plugin's DRA driver (configured by KWOK_DRA_CONFIG) describes two GPUs on
    the c family: a Deployment whose pods each claim two (from a template) gets one node
    per pod, of that family only."""
    deployment = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: trainer, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: trainer}}
  template:
    metadata: {labels: {app: trainer}}
    spec:
      resourceClaims:
      - {name: gpu, resourceClaimTemplateName: two-gpus}
      containers:
      - name: c
        image: pause
        resources:
          requests: {cpu: "1"}
          claims: [{name: gpu}]
"""
    path = write(
        tmp_path,
        NODEPOOL,
        DEVICE_CLASS,
        claim_yaml("two-gpus", count=2, kind="ResourceClaimTemplate"),
        deployment,
    )
    env = {"IGNORE_DRA_REQUESTS": "false", "KWOK_DRA_CONFIG": KWOK_DRA_CONFIG}
    doc = output(run(path, "-o", "json", env=env))
    assert doc["podErrors"] == {}
    assert len(doc["nodeClaims"]) == 2
    for nc in doc["nodeClaims"]:
        assert nc["instanceTypes"]
        assert all(name.startswith("c-") for name in nc["instanceTypes"])
    # Without the driver no instance type has devices: the pods wait, told why.
    doc = output(run(path, "-o", "json", env={"IGNORE_DRA_REQUESTS": "false"}))
    assert doc["nodeClaims"] == []
    assert all('request "gpus"' in e for e in doc["podErrors"].values())


def test_an_existing_nodes_published_devices_take_the_pod(tmp_path: Path) -> None:
    node = """
apiVersion: v1
kind: Node
metadata:
  name: gpu-node
  labels:
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
    kubernetes.io/hostname: gpu-node
status:
  capacity: {cpu: "4", memory: 16Gi, pods: "110"}
  allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
"""
    local = f"""
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: gpu-node-gpus
  ownerReferences: [{{apiVersion: v1, kind: Node, name: gpu-node, uid: u}}]
spec:
  driver: {GPU}
  nodeName: gpu-node
  pool: {{name: gpu-node, generation: 1, resourceSliceCount: 1}}
  devices: [{{name: gpu-0}}]
"""
    path = write(
        tmp_path, NODEPOOL, DEVICE_CLASS, node, local, claim_yaml("c"), pod_yaml("p", claim="c")
    )
    doc = output(run(path, "-o", "json", "--ignore-dra-requests=false"))
    assert doc["podErrors"] == {}
    assert doc["nodeClaims"] == []
    assert doc["existingNodes"] == [{"name": "gpu-node", "pods": ["default/p"]}]
