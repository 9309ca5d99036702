"""KWOK launches animated by the simulated kubelet and kube-scheduler, on a virtual clock."""

from __future__ import annotations

from typing import Any

from karpenter_kwok.provider import KwokCloudProvider

from karpenter_core.sim.kubelet import KubeletOptions
from karpenter_core.testing import Environment

NODECLAIM: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodeClaim",
    "metadata": {"name": "default-x1", "labels": {"karpenter.sh/nodepool": "default"}},
    "spec": {
        "requirements": [
            {
                "key": "node.kubernetes.io/instance-type",
                "operator": "In",
                "values": ["c-4x-amd64-linux"],
            }
        ],
        "nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"},
        "resources": {"requests": {"cpu": "1", "pods": "1"}},
    },
}


def test_launched_node_becomes_ready_and_runs_a_pod_once_registered() -> None:
    env = Environment(
        lambda env: KwokCloudProvider.from_settings(
            {"launch-latency": "20s"}, environ={}, kube=env.kube, clock=env.clock
        ),
        controllers=(),  # no Karpenter: the test plays its part
        kubelet=KubeletOptions(node_ready_delay=10, pod_start_delay=1),
    )
    kube, manager, provider = env.server, env.manager, env.provider
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {
                "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]
            },
        }
    )
    launched = provider.create(NODECLAIM)
    manager.run_for(29)
    node = kube.get("nodes", launched.name)
    assert not any(c.get("type") == "Ready" for c in node["status"].get("conditions") or [])
    manager.run_for(1)
    node = kube.get("nodes", launched.name)
    assert any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"]["conditions"])
    assert kube.get("pods", "p", "default")["spec"].get("nodeName") is None  # still unregistered
    # Karpenter's registration would do this; here the test plays its part.
    kube.patch("nodes", launched.name, {"spec": {"taints": []}})
    manager.run_for(1)
    pod = kube.get("pods", "p", "default")
    assert pod["spec"]["nodeName"] == launched.name
    assert pod["status"]["phase"] == "Running"
