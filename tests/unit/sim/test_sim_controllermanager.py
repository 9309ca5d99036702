"""The simulated kube-controller-manager's registration: a server runs its three loops by
default, none when built without them, and all three from the moment they are registered
(taking in what the server already stores). What the loops do is pinned by
``test_sim_apiserver.py`` and the contract tests."""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.kube.client import NotFound
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim import controllermanager
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.testing import builders as b


def owned_configmap(name: str, owner: dict[str, Any]) -> dict[str, Any]:
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"]}
    ref["uid"] = owner["metadata"]["uid"]
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "ownerReferences": [ref]},
    }


def configmap(name: str, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
    }


def ready_pod(server: InMemoryApiServer, name: str) -> None:
    pod = server.create(b.pod(name, node_name="n1", labels={"app": "x"}))
    pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    server.update_status(pod)


def budget() -> dict[str, Any]:
    return b.pdb("budget", labels={"app": "x"}, max_unavailable=1)


def test_a_server_runs_the_loops_by_default() -> None:
    server = InMemoryApiServer(VirtualClock())
    assert server.controller_manager is not None
    owner = server.create(configmap("owner"))
    server.create(owned_configmap("dependent", owner))
    server.delete("configmaps", "owner", "default")
    with pytest.raises(NotFound):
        server.get("configmaps", "dependent", "default")


def test_without_the_loops_nothing_cascades_and_no_budget_status_is_written() -> None:
    server = InMemoryApiServer(VirtualClock(), kube_controller_manager=False)
    assert server.controller_manager is None
    owner = server.create(configmap("owner"))
    server.create(owned_configmap("dependent", owner))
    server.delete("configmaps", "owner", "default")
    assert server.get("configmaps", "dependent", "default")["metadata"]["ownerReferences"]
    server.create(budget())
    ready_pod(server, "p")
    assert "status" not in server.get("poddisruptionbudgets", "budget", "default")
    server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    server.create(configmap("left", "team"))
    server.delete("namespaces", "team")
    assert server.get("namespaces", "team")["status"]["phase"] == "Terminating"
    assert server.get("configmaps", "left", "team")


def test_registered_loops_take_in_what_the_server_already_stores() -> None:
    server = InMemoryApiServer(VirtualClock(), kube_controller_manager=False)
    server.create(budget())
    ready_pod(server, "p1")
    ready_pod(server, "p2")
    owner = server.create(configmap("owner"))
    server.create(owned_configmap("dependent", owner))
    controllermanager.register(server)
    status = server.get("poddisruptionbudgets", "budget", "default")["status"]
    assert (status["currentHealthy"], status["disruptionsAllowed"]) == (2, 1)
    server.delete("configmaps", "owner", "default")
    with pytest.raises(NotFound):
        server.get("configmaps", "dependent", "default")


def test_a_server_runs_the_loops_once() -> None:
    server = InMemoryApiServer(VirtualClock())
    with pytest.raises(ValueError, match="already runs"):
        controllermanager.register(server)
