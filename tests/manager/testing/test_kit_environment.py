"""The kit's Environment: the real controllers on a virtual clock take a pending pod to a
running one on a launched node, and a test chooses what runs."""

from __future__ import annotations

from datetime import timedelta

import pytest

from karpenter_core.apis import labels as wk
from karpenter_core.kube.client import NotFound
from karpenter_core.sim.kubelet import KubeletOptions
from karpenter_core.testing import Environment, FakeCloudProvider, fakecatalog
from karpenter_core.testing import builders as b
from karpenter_core.testing.expectations import (
    expect_condition,
    expect_nodeclaims,
    expect_provisioned,
    expect_scheduled,
)


def test_a_pending_pod_is_provisioned_onto_a_new_node_within_run_for() -> None:
    env = Environment()
    env.apply(b.nodepool())
    pod = env.apply(b.pod("web", cpu="1"))
    env.run_for(30)
    node = expect_scheduled(env, pod)
    [claim] = expect_nodeclaims(env, 1)
    for condition in ("Launched", "Registered", "Initialized"):
        expect_condition(claim, condition)
    assert node["metadata"]["name"] == claim["status"]["nodeName"]
    assert node["spec"]["providerID"] == claim["status"]["providerID"]
    assert env.get(pod)["status"]["phase"] == "Running"


def test_the_node_launched_is_the_cheapest_that_fits_what_the_pool_allows() -> None:
    env = Environment()
    env.apply(
        b.nodepool(requirements=[b.requirement(wk.CAPACITY_TYPE_LABEL_KEY, "In", "on-demand")])
    )
    nodes = expect_provisioned(env, b.pod("big", cpu="2500m"), b.pod("small", cpu="100m"))
    labels = nodes["big"]["metadata"]["labels"]
    assert labels[wk.CAPACITY_TYPE_LABEL_KEY] == "on-demand"
    # fake-it-2 has 3 vCPU less 100m kube-reserved: the smallest room for 2.6 CPU
    assert labels[wk.LABEL_INSTANCE_TYPE] == "fake-it-2"
    assert nodes["small"]["metadata"]["name"] == nodes["big"]["metadata"]["name"]


def test_nothing_happens_until_time_moves() -> None:
    env = Environment()
    env.apply(b.nodepool())
    env.apply(b.pod("web", cpu="1"))
    before = env.now()
    env.settle()
    assert env.now() == before
    assert env.nodeclaims() == []  # the batch window is still open
    env.run_for(timedelta(seconds=2))
    assert env.now() == before + timedelta(seconds=2)
    assert len(env.nodeclaims()) == 1


def test_controllers_names_the_packages_that_run() -> None:
    env = Environment(controllers=["state", "provisioning"], kube_scheduler=False, kubelet=False)
    assert env.controllers == (
        "provisioner",
        "provisioner.trigger.pod",
        "provisioner.trigger.node",
        "state.node",
        "state.nodeclaim",
        "state.pod",
        "state.daemonset",
        "state.nodepool",
        "state.pricing",
    )
    assert [name for name, _ in env.registration.registered] == ["provisioning", "state"]


def test_an_unknown_or_switched_off_package_is_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown controller packages \['provisoning'\]"):
        Environment(controllers=["provisoning"])
    with pytest.raises(ValueError, match=r"nodeoverlay \(feature gate NodeOverlay is off"):
        Environment(controllers=["nodeoverlay"])
    env = Environment(
        controllers=["nodeoverlay"], options={"FEATURE_GATES": "NodeOverlay=true"}, kubelet=False
    )
    assert "nodeoverlay.controller" in env.controllers


def test_any_cloud_provider_is_accepted() -> None:
    provider = FakeCloudProvider(fakecatalog.instance_types(2), kube=None)
    env = Environment(provider, kubelet=KubeletOptions(node_ready_delay=5))
    assert env.provider is provider
    env.apply(b.nodepool())
    env.apply(b.pod("web", cpu="1"))
    env.run_for(30)
    [claim] = env.nodeclaims()
    # this provider registers no Node, so the claim launches and waits for one
    expect_condition(claim, "Launched")
    expect_condition(claim, "Registered", "Unknown")
    assert provider.create_calls == [claim["metadata"]["name"]]
    assert env.nodes() == []


def test_apply_creates_then_updates_keeping_what_the_server_owns() -> None:
    env = Environment(controllers=(), kube_scheduler=False, kubelet=False)
    created = env.apply(b.node("n1", finalizers=["example.com/keep"]))
    updated = env.apply(b.node("n1", labels={"team": "a"}))
    assert updated["metadata"]["uid"] == created["metadata"]["uid"]
    assert updated["metadata"]["labels"] == {"team": "a"}
    assert updated["metadata"]["finalizers"] == ["example.com/keep"]
    assert env.apply(b.nodepool(ready=True))["status"]["conditions"][0]["type"] == (
        "ValidationSucceeded"
    )


def test_objects_are_read_deleted_and_bound_through_the_api() -> None:
    env = Environment(controllers=(), kube_scheduler=False, kubelet=False)
    env.apply(b.node("n1"))
    pod = env.apply(b.pod("p"))
    assert env.bind(pod, "n1")["spec"]["nodeName"] == "n1"
    assert env.exists("pods", "p", "default")
    env.delete(b.node("n1"))
    assert not env.exists(b.node("n1"))
    with pytest.raises(NotFound):
        env.get("nodes", "n1")
    with pytest.raises(TypeError, match="needs a name"):
        env.get("nodes")


def test_events_are_recorded_with_their_reason() -> None:
    env = Environment(controllers=(), kube_scheduler=False, kubelet=False)
    env.recorder.normal(b.node("n1"), "Hello", "there")
    assert [e.reason for e in env.events()] == ["Hello"]
    assert env.events("Other") == []


def test_a_provider_factory_gets_the_environment_to_build_on() -> None:
    env = Environment(lambda env: FakeCloudProvider(kube=env.kube), kubelet=False)
    assert isinstance(env.provider, FakeCloudProvider)
    assert env.provider.kube is env.kube


def test_a_restarted_operator_runs_on_the_same_server_and_clock() -> None:
    first = Environment(controllers=["state"], kube_scheduler=False, kubelet=False)
    first.apply(b.node("n1", provider_id="fake://n1"))
    first.run_for(5)
    first.close()
    again = Environment(
        controllers=["state"],
        kube_scheduler=False,
        kubelet=False,
        server=first.server,
        clock=first.clock,
    )
    assert again.now() == first.now()
    again.settle()
    assert [sn.name() for sn in again.cluster.state_nodes()] == ["n1"]
    with pytest.raises(TypeError, match="server and clock go together"):
        Environment(server=first.server)
