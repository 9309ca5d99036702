"""The KWOK DRA driver (karpenter_kwok.dra): its configuration, the devices it predicts per
instance type (describe_devices), the hooks, and the ResourceSlices it publishes for KWOK
nodes (upstream's dra-kwok-driver, issue 11)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from karpenter_kwok import dra, plugin
from karpenter_kwok.dra import (
    DRAConfig,
    DRAConfigError,
    ResourceSlices,
    describe,
    load_config,
    parse_config,
    slices_for_node,
)
from karpenter_kwok.instance_types import load_instance_types
from karpenter_kwok.provider import KwokCloudProvider

from karpenter_core.apis.v1 import NodePool
from karpenter_core.kube.client import ObjectList
from karpenter_core.plugin_api import ObjectKey
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.sim.kubelet import KubeletOptions
from karpenter_core.testing import Environment
from karpenter_core.testing import builders as b

DRIVER = "gpu.example.com"
FAMILY = "karpenter.kwok.sh/instance-family"

GPU_CONFIG = f"""
apiVersion: test.karpenter.sh/v1alpha1
kind: DRAConfig
metadata: {{name: gpus}}
spec:
  driver: {DRIVER}
  pools:
  - name: a100
    nodeSelectorTerms:
    - matchExpressions:
      - {{key: {FAMILY}, operator: In, values: [c]}}
    resourceSlices:
    - devices:
      - name: gpu-0
        attributes: {{model: {{string: a100}}}}
      - name: gpu-1
        attributes: {{model: {{string: a100}}}}
"""

CATALOGUE = {it.name: it for it in load_instance_types(None)}


@pytest.fixture(autouse=True)
def _no_active_config() -> Iterator[None]:
    """Each test starts from the environment's configuration (none)."""
    dra.set_active_config(None)
    yield
    dra.set_active_config(None)


def config(text: str = GPU_CONFIG) -> DRAConfig:
    return load_config(text)


def kwok_node(name: str = "n1", *, ready: bool = True, **labels: str) -> dict[str, Any]:
    node = b.node(name, labels={FAMILY: "c", **labels}, ready=ready)
    node["metadata"]["annotations"] = {"kwok.x-k8s.io/node": "fake"}
    return node


def published(server: InMemoryApiServer) -> dict[str, dict[str, Any]]:
    return {s["metadata"]["name"]: s for s in server.list("resourceslices").items}


# ------------------------------------------------------------------ configuration


def test_the_config_reads_upstreams_draconfig_objects() -> None:
    [driver] = config().drivers
    assert driver.driver == DRIVER
    [pool] = driver.pools
    assert pool.name == "a100"
    assert [d["name"] for d in pool.resource_slices[0]] == ["gpu-0", "gpu-1"]


def test_bare_specs_lists_and_several_documents_merge_by_driver() -> None:
    pool = {
        "name": "p",
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Exists"}]}],
        "resourceSlices": [{"devices": [{"name": "d"}]}],
    }
    other = {**pool, "name": "q", "resourceSlices": [{"devices": [{"name": "e"}]}]}
    parsed = parse_config(
        [
            [{"driver": DRIVER, "pools": [pool]}],
            {"kind": "DRAConfig", "spec": {"driver": DRIVER, "pools": [other]}},
            {"driver": "nic.example.com", "pools": [pool]},
        ]
    )
    assert [(d.driver, [p.name for p in d.pools]) for d in parsed.drivers] == [
        (DRIVER, ["p", "q"]),
        ("nic.example.com", ["p"]),
    ]


def test_the_config_may_be_a_file(tmp_path: Path) -> None:
    path = tmp_path / "dra.yaml"
    path.write_text(GPU_CONFIG)
    assert load_config(str(path)) == config()


def test_no_config_is_no_drivers() -> None:
    assert not load_config("")
    assert not load_config(None)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("driver: Not_A_Name\npools: []", "driver: expected a DNS subdomain"),
        (f"driver: {DRIVER}\npools: []", "pools: expected a non-empty list"),
        (
            f"driver: {DRIVER}\npools: [{{name: p, nodeSelectorTerms: [{{}}], "
            "resourceSlices: [{devices: [{name: d}]}]}]",
            "nodeSelectorTerms[0]: expected matchExpressions or matchFields",
        ),
        (
            f"driver: {DRIVER}\npools: [{{name: p, nodeSelectorTerms: "
            "[{matchFields: [{key: metadata.name, operator: In, values: [n]}]}], "
            "resourceSlices: [{devices: [{name: d}, {name: d}]}]}]",
            "duplicate device 'd'",
        ),
        (
            f"driver: {DRIVER}\npools: [{{name: p, nodeSelectorTerms: "
            "[{matchFields: [{key: metadata.name, operator: In, values: [n]}]}], "
            "resourceSlices: [{devices: [{name: d, attributes: {a: {int: 1, bool: true}}}]}]}]",
            "must set exactly one of int, bool, string, version",
        ),
        ("/no/such/file.yaml", "no/such/file.yaml"),
    ],
)
def test_a_bad_config_says_where(text: str, error: str) -> None:
    with pytest.raises(DRAConfigError, match=error.replace("[", r"\[").replace("(", r"\(")):
        load_config(text)


# ------------------------------------------------------------------ prediction


def nodepool(**kw: Any) -> NodePool:
    return NodePool.from_dict(b.nodepool("gpu", **kw))


def test_types_of_the_selected_family_get_the_devices() -> None:
    [driver] = config().drivers
    [template] = describe(driver, CATALOGUE["c-4x-amd64-linux"], nodepool())
    assert template["driver"] == DRIVER
    assert [d["name"] for d in template["devices"]] == ["gpu-0", "gpu-1"]
    assert describe(driver, CATALOGUE["m-4x-amd64-linux"], nodepool()) == []


def test_devices_a_node_might_not_get_are_not_promised() -> None:
    zonal = GPU_CONFIG.replace(
        f"{{key: {FAMILY}, operator: In, values: [c]}}",
        "{key: topology.kubernetes.io/zone, operator: In, values: [test-zone-a]}",
    )
    [driver] = config(zonal).drivers
    assert describe(driver, CATALOGUE["c-4x-amd64-linux"], nodepool()) == []


def test_the_nodepools_labels_and_requirements_count() -> None:
    labelled = GPU_CONFIG.replace(
        f"{{key: {FAMILY}, operator: In, values: [c]}}", "{key: accelerator, operator: Exists}"
    )
    [driver] = config(labelled).drivers
    it = CATALOGUE["m-4x-amd64-linux"]
    assert describe(driver, it, nodepool()) == []
    assert describe(driver, it, nodepool(labels={"accelerator": "gpu"})) != []
    zone = [b.requirement("topology.kubernetes.io/zone", "In", "test-zone-a")]
    zonal = GPU_CONFIG.replace(
        f"{{key: {FAMILY}, operator: In, values: [c]}}",
        "{key: topology.kubernetes.io/zone, operator: In, values: [test-zone-a]}",
    )
    [driver] = config(zonal).drivers
    assert describe(driver, CATALOGUE["c-4x-amd64-linux"], nodepool(requirements=zone)) != []


# ------------------------------------------------------------------ hooks


def test_the_hook_registers_the_drivers_of_the_providers_settings() -> None:
    assert plugin.karpenter_dra_drivers() == []
    KwokCloudProvider.from_settings({"dra-config": GPU_CONFIG}, environ={})
    [spec] = plugin.karpenter_dra_drivers()
    assert spec.name == DRIVER
    [template] = spec.describe_devices(CATALOGUE["c-4x-amd64-linux"], nodepool())
    assert len(template["devices"]) == 2
    KwokCloudProvider.from_settings({}, environ={})
    assert plugin.karpenter_dra_drivers() == []


def test_without_a_provider_the_hook_reads_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KWOK_DRA_CONFIG", GPU_CONFIG)
    assert [s.name for s in plugin.karpenter_dra_drivers()] == [DRIVER]


def test_a_bad_setting_fails_the_provider() -> None:
    with pytest.raises(ValueError, match="setting dra-config"):
        KwokCloudProvider.from_settings({"dra-config": "driver: x\npools: []"}, environ={})


def test_the_publisher_runs_only_when_drivers_are_configured() -> None:
    [spec] = plugin.karpenter_controllers()
    assert spec.name == "kwok.dra.resourceslices" and spec.cloud_provider == "kwok"


# ------------------------------------------------------------------ publishing


def test_a_kwok_nodes_slices_are_upstreams() -> None:
    [s] = slices_for_node(config(), kwok_node("n1"))
    assert s["metadata"]["name"] == "gpu-example-com-n1-a100"
    assert s["metadata"]["labels"] == {
        "test.karpenter.sh/managed-by": "dra-kwok-driver",
        "test.karpenter.sh/node": "n1",
        "test.karpenter.sh/pool": "a100",
        "test.karpenter.sh/driver": DRIVER,
    }
    assert s["metadata"]["ownerReferences"][0]["kind"] == "Node"
    assert s["spec"]["nodeName"] == "n1"
    assert s["spec"]["pool"] == {
        "name": f"{DRIVER}/n1",
        "generation": 0,
        "resourceSliceCount": 1,
    }


def test_matching_pools_share_one_pool_per_driver_and_node() -> None:
    text = (
        GPU_CONFIG
        + """
  - name: nics
    nodeSelectorTerms:
    - matchExpressions:
      - {key: kubernetes.io/os, operator: In, values: [linux]}
    resourceSlices:
    - devices: [{name: nic-0}]
    - devices: [{name: nic-1}]
"""
    )
    slices = slices_for_node(config(text), kwok_node("n1", **{"kubernetes.io/os": "linux"}))
    assert sorted(s["metadata"]["name"] for s in slices) == [
        "gpu-example-com-n1-a100",
        "gpu-example-com-n1-nics-0",
        "gpu-example-com-n1-nics-1",
    ]
    assert {s["spec"]["pool"]["resourceSliceCount"] for s in slices} == {3}


@pytest.fixture
def server() -> InMemoryApiServer:
    return InMemoryApiServer(VirtualClock())


def reconcile(server: InMemoryApiServer, cfg: DRAConfig, node: str = "n1") -> None:
    ResourceSlices(server, cfg).reconcile(ObjectKey("", node))


def test_a_ready_kwok_node_publishes_and_its_slices_go_with_it(
    server: InMemoryApiServer,
) -> None:
    server.create(kwok_node("n1"))
    reconcile(server, config())
    assert list(published(server)) == ["gpu-example-com-n1-a100"]
    server.delete("nodes", "n1")
    assert published(server) == {}  # the garbage collector follows the owner reference
    reconcile(server, config())
    assert published(server) == {}


def test_nothing_is_published_before_the_node_is_ready_or_for_other_nodes(
    server: InMemoryApiServer,
) -> None:
    server.create(kwok_node("n1", ready=False))
    server.create(b.node("n2", labels={FAMILY: "c"}))
    reconcile(server, config(), "n1")
    reconcile(server, config(), "n2")
    assert published(server) == {}


def test_a_change_moves_the_whole_pool_to_a_new_generation(server: InMemoryApiServer) -> None:
    server.create(kwok_node("n1"))
    reconcile(server, config())
    reconcile(server, config())  # nothing changed: nothing written
    [before] = published(server).values()
    assert before["spec"]["pool"]["generation"] == 0
    bigger = config(GPU_CONFIG + "      - name: gpu-2\n")
    reconcile(server, bigger)
    [after] = published(server).values()
    assert after["spec"]["pool"]["generation"] == 1
    assert [d["name"] for d in after["spec"]["devices"]] == ["gpu-0", "gpu-1", "gpu-2"]


def test_slices_no_longer_wanted_are_deleted(server: InMemoryApiServer) -> None:
    server.create(kwok_node("n1"))
    reconcile(server, config())
    node = server.get("nodes", "n1")
    node["metadata"]["labels"][FAMILY] = "m"
    server.update(node)
    reconcile(server, config())
    assert published(server) == {}


def test_a_list_failure_is_the_reconciles_error() -> None:
    class Broken(InMemoryApiServer):
        def list(self, *a: Any, **kw: Any) -> ObjectList:
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        reconcile(Broken(VirtualClock()), config())


# ------------------------------------------------------------------ in a running operator


def test_nodes_launched_by_karpenter_publish_their_devices_once_ready() -> None:
    env = Environment(
        "kwok",
        provider_settings={"dra-config": GPU_CONFIG},
        plugin_manager=_plugin_manager(),
        controllers=["provisioning", "state", "nodeclaim", "nodepool"],
        kubelet=KubeletOptions(node_ready_delay=10),
    )
    env.apply(b.nodepool(requirements=[b.requirement(FAMILY, "In", "c")]))
    env.apply(b.pod("web", cpu="1"))
    env.run_for(5)
    [nc] = env.nodeclaims()
    assert published(env.server) == {}  # the node is not Ready yet
    env.run_for(30)
    node_name = nc["status"]["nodeName"]
    [s] = published(env.server).values()
    assert s["spec"]["nodeName"] == node_name
    assert s["spec"]["pool"]["name"] == f"{DRIVER}/{node_name}"
    # a slice deleted by someone else comes back
    env.server.delete("resourceslices", s["metadata"]["name"])
    env.settle()
    assert list(published(env.server)) == [s["metadata"]["name"]]


def _plugin_manager() -> Any:
    from karpenter_core.plugins import get_plugin_manager

    return get_plugin_manager()
