"""`karpenter instance-types` and `karpenter schedule` with ``--cloud-provider aws`` and no
credentials, no network and no launch settings: the bundled EC2 catalogue, with every
``karpenter.k8s.aws/*`` requirement respected.

The NodePools and workloads below restate the requirements of upstream
karpenter-provider-aws's ``examples/v1`` NodePools and ``examples/workloads`` (large
instances, general purpose, arm64, NVIDIA GPUs, spot). The unit tier's guard fails any
test that opens a socket, so passing here means nothing reached for the network.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from karpenter_core.apis import labels
from karpenter_core.cli.instance_types import command as instance_types_command
from karpenter_core.cli.schedule import command as schedule_command

NODECLASS = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-example
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: example}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: example}}]
  amiSelectorTerms: [{alias: al2023@latest}]
"""


def _nodepool(name: str, requirements: list[dict[str, Any]]) -> str:
    pool = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "requirements": requirements,
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "default",
                    },
                }
            }
        },
    }
    return json.dumps(pool)


def _deployment(
    name: str,
    replicas: int,
    requests: dict[str, str],
    node_selector: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
) -> str:
    container: dict[str, Any] = {
        "name": name,
        "image": "pause",
        "resources": {"requests": requests},
    }
    if limits:
        container["resources"]["limits"] = limits
    spec: dict[str, Any] = {"containers": [container]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    return json.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
            },
        }
    )


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No credentials anywhere boto3 looks, no region, no cluster settings; the AWS label
    sets the provider registers are put back afterwards."""
    for var in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "CLUSTER_NAME",
        "CLUSTER_ENDPOINT",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    well_known, domains = set(labels.WELL_KNOWN_LABELS), set(labels.RESTRICTED_LABEL_DOMAINS)
    yield
    labels.WELL_KNOWN_LABELS.clear()
    labels.WELL_KNOWN_LABELS.update(well_known)
    labels.RESTRICTED_LABEL_DOMAINS.clear()
    labels.RESTRICTED_LABEL_DOMAINS.update(domains)


def _value(requirements: list[dict[str, Any]], key: str) -> str | None:
    for r in requirements:
        if r["key"] == key and r["operator"] == "In" and len(r.get("values") or ()) == 1:
            return str(r["values"][0])
    return None


def _listed(region: str) -> dict[str, dict[str, Any]]:
    """``instance-types --cloud-provider aws --region REGION -o json``, by name."""
    result = CliRunner().invoke(
        instance_types_command,
        ["--cloud-provider", "aws", "--region", region, "-o", "json"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    return {it["name"]: it for it in json.loads(result.stdout)}


@pytest.fixture
def catalogue() -> dict[str, dict[str, Any]]:
    """``instance-types --cloud-provider aws --region us-east-1 -o json``, by name (per
    test, inside ``_offline``: the provider registers AWS labels that must not outlive
    the test)."""
    return _listed("us-east-1")


def _cpu(it: dict[str, Any]) -> int:
    value = _value(it["requirements"], "karpenter.k8s.aws/instance-cpu")
    assert value is not None, it["name"]
    return int(value)


def test_instance_types_lists_the_bundled_catalogue_priced(
    catalogue: dict[str, dict[str, Any]],
) -> None:
    assert len(catalogue) > 500
    m5 = catalogue["m5.large"]
    reqs = m5["requirements"]
    assert _value(reqs, "karpenter.k8s.aws/instance-family") == "m5"
    assert _value(reqs, "karpenter.k8s.aws/instance-category") == "m"
    assert _value(reqs, "karpenter.k8s.aws/instance-generation") == "5"
    assert _value(reqs, "karpenter.k8s.aws/instance-size") == "large"
    assert _value(reqs, "topology.kubernetes.io/region") == "us-east-1"
    assert _cpu(m5) == 2
    offerings = m5["offerings"]
    assert {o["capacityType"] for o in offerings} == {"on-demand", "spot"}
    assert all(o["price"] > 0 for o in offerings)
    # available exactly in the zones EC2 offers the type in (us-east-1e does not have it)
    zones = next(r["values"] for r in reqs if r["key"] == "topology.kubernetes.io/zone")
    assert {o["zone"] for o in offerings if o["available"]} == set(zones)
    assert "us-east-1e" not in zones and "us-east-1e" in {o["zone"] for o in offerings}
    # before any spot refresh, spot is priced at on-demand (upstream's stand-in)
    assert {o["price"] for o in offerings} == {offerings[0]["price"]}
    assert all(
        any(o["available"] for o in it["offerings"])
        for it in catalogue.values()
        if not it["name"].startswith("a1.")
    )


def test_an_unknown_region_names_the_bundled_ones() -> None:
    result = CliRunner().invoke(
        instance_types_command, ["--cloud-provider", "aws", "--region", "xx-nowhere-1"]
    )
    assert result.exit_code != 0
    assert "xx-nowhere-1" in result.output
    assert "us-east-1" in result.output and "us-gov-west-1" in result.output


def _schedule(tmp_path: Path, *documents: str, region: str = "us-east-1") -> dict[str, Any]:
    path = tmp_path / "input.yaml"
    path.write_text("\n---\n".join((NODECLASS, *documents)))
    result = CliRunner().invoke(
        schedule_command,
        ["--cloud-provider", "aws", "--region", region, "-f", str(path), "-o", "json"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def _launched(out: dict[str, Any]) -> list[str]:
    assert out["nodeClaims"], out
    return [name for nc in out["nodeClaims"] for name in nc["instanceTypes"]]


def test_large_instances_never_get_fewer_than_four_cores(
    tmp_path: Path, catalogue: dict[str, dict[str, Any]]
) -> None:
    pool = _nodepool(
        "large-instances",
        [
            {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["3"]},
            {"key": "karpenter.k8s.aws/instance-memory", "operator": "Gt", "values": ["8191"]},
        ],
    )
    out = _schedule(tmp_path, pool, _deployment("inflate", 3, {"cpu": "1", "memory": "256M"}))
    names = _launched(out)
    assert not out["podErrors"]
    for name in names:
        it = catalogue[name]
        assert _cpu(it) >= 4, name
        memory = _value(it["requirements"], "karpenter.k8s.aws/instance-memory")
        assert memory is not None and int(memory) > 8191, name


def test_general_purpose_keeps_to_its_categories_and_generations(
    tmp_path: Path, catalogue: dict[str, dict[str, Any]]
) -> None:
    pool = _nodepool(
        "general-purpose",
        [
            {
                "key": "karpenter.k8s.aws/instance-category",
                "operator": "In",
                "values": ["c", "m", "r"],
            },
            {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["2"]},
        ],
    )
    names = _launched(_schedule(tmp_path, pool, _deployment("inflate", 2, {"cpu": "1"})))
    for name in names:
        reqs = catalogue[name]["requirements"]
        assert _value(reqs, "karpenter.k8s.aws/instance-category") in {"c", "m", "r"}, name
        generation = _value(reqs, "karpenter.k8s.aws/instance-generation")
        assert generation is not None and int(generation) > 2, name


def test_an_arm64_workload_gets_graviton_and_spot_pools_get_spot(
    tmp_path: Path, catalogue: dict[str, dict[str, Any]]
) -> None:
    pool = _nodepool(
        "spot",
        [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]},
        ],
    )
    out = _schedule(
        tmp_path,
        pool,
        _deployment("arm", 1, {"cpu": "1"}, node_selector={"kubernetes.io/arch": "arm64"}),
    )
    for name in _launched(out):
        assert _value(catalogue[name]["requirements"], "kubernetes.io/arch") == "arm64", name
    for nc in out["nodeClaims"]:
        assert _value(nc["requirements"], "karpenter.sh/capacity-type") == "spot"


def test_an_nvidia_gpu_workload_gets_nvidia_gpu_types(
    tmp_path: Path, catalogue: dict[str, dict[str, Any]]
) -> None:
    pool = _nodepool(
        "gpu",
        [
            {
                "key": "karpenter.k8s.aws/instance-gpu-manufacturer",
                "operator": "In",
                "values": ["nvidia"],
            },
        ],
    )
    gpu = {"nvidia.com/gpu": "1"}
    names = _launched(
        _schedule(tmp_path, pool, _deployment("gpu", 1, {"cpu": "1", **gpu}, limits=gpu))
    )
    for name in names:
        reqs = catalogue[name]["requirements"]
        assert _value(reqs, "karpenter.k8s.aws/instance-gpu-manufacturer") == "nvidia", name


def test_schedule_uses_the_region_given(
    tmp_path: Path, catalogue: dict[str, dict[str, Any]]
) -> None:
    here = set(_listed("me-south-1"))
    assert here < set(catalogue)  # a smaller region than us-east-1
    pool = _nodepool("default", [])
    out = _schedule(tmp_path, pool, _deployment("inflate", 1, {"cpu": "1"}), region="me-south-1")
    assert set(_launched(out)) <= here


def _run(tmp_path: Path, *documents: str) -> Any:
    path = tmp_path / "classes.yaml"
    path.write_text("\n---\n".join(documents))
    return CliRunner().invoke(
        schedule_command,
        ["--cloud-provider", "aws", "--region", "us-east-1", "-f", str(path), "-o", "json"],
        catch_exceptions=False,
    )


def _classed_pool(name: str, nodeclass: str, requirements: list[dict[str, Any]]) -> str:
    pool = json.loads(_nodepool(name, requirements))
    pool["spec"]["template"]["spec"]["nodeClassRef"]["name"] = nodeclass
    return json.dumps(pool)


WINDOWS_NODECLASS = NODECLASS.replace("{name: default}", "{name: windows}").replace(
    "al2023@latest", "windows2022@latest"
)


def test_a_windows_nodeclass_given_offline_launches_windows_capable_amd64_types(
    tmp_path: Path, catalogue: dict[str, dict[str, Any]]
) -> None:
    """Upstream's windows-20xx examples: the NodePool asks for ``kubernetes.io/os In
    [windows]``; only the EC2NodeClass's alias makes the catalogue Windows. Without reading
    it, every type would be Linux and the pods unschedulable."""
    pool = _classed_pool(
        "windows", "windows", [{"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]
    )
    result = _run(tmp_path, WINDOWS_NODECLASS, pool, _deployment("win", 2, {"cpu": "1"}))
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert not out["podErrors"], out["podErrors"]
    assert "ignored objects" not in result.stderr  # the EC2NodeClass was read
    for nc in out["nodeClaims"]:
        assert _value(nc["requirements"], "kubernetes.io/os") == "windows"
    for name in _launched(out):
        assert _value(catalogue[name]["requirements"], "kubernetes.io/arch") == "amd64", name
    # the same pool on the AL2023 class offers nothing: the OS comes from the class
    linux = _classed_pool(
        "windows", "default", [{"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]
    )
    result = _run(tmp_path, NODECLASS, linux, _deployment("win", 2, {"cpu": "1"}))
    assert result.exit_code == 0, result.output
    assert not json.loads(result.stdout)["nodeClaims"]


def test_the_nodeclass_kubelet_max_pods_caps_pods_per_node(tmp_path: Path) -> None:
    capped = NODECLASS.replace("{name: default}", "{name: capped}") + "  kubelet: {maxPods: 3}\n"
    pool = _classed_pool("capped", "capped", [])
    result = _run(tmp_path, capped, pool, _deployment("tiny", 7, {"cpu": "10m"}))
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert not out["podErrors"], out["podErrors"]
    assert sorted(len(nc["pods"]) for nc in out["nodeClaims"]) == [1, 3, 3]
    result = _run(
        tmp_path, NODECLASS, _nodepool("default", []), _deployment("tiny", 7, {"cpu": "10m"})
    )
    assert [len(nc["pods"]) for nc in json.loads(result.stdout)["nodeClaims"]] == [7]


def test_a_nodeclass_missing_from_the_input_is_named_and_the_default_view_used(
    tmp_path: Path,
) -> None:
    pool = _classed_pool("other", "not-given", [])
    result = _run(tmp_path, pool, _deployment("inflate", 1, {"cpu": "1"}))
    assert result.exit_code == 0, result.output
    assert "NodePool other: EC2NodeClass 'not-given' is not in the input" in result.stderr
    assert json.loads(result.stdout)["nodeClaims"]


def test_a_malformed_nodeclass_is_bad_input_naming_the_field(tmp_path: Path) -> None:
    broken = NODECLASS.replace("al2023@latest", "al2023")
    result = _run(tmp_path, broken, _nodepool("default", []), _deployment("x", 1, {"cpu": "1"}))
    assert result.exit_code == 1, result.output
    assert "EC2NodeClass 'default'" in result.stderr
    assert "amiSelectorTerms[0].alias" in result.stderr
