"""state.pricing and the state informers feeding ClusterCost, on an in-memory API server
and a virtual clock; ``karpenter_nodepools_cost_total`` and the error counter are read
from the real Prometheus exposition."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from karpenter_core import metrics
from karpenter_core.apis.labels import (
    CAPACITY_TYPE_LABEL_KEY,
    LABEL_INSTANCE_TYPE,
    LABEL_TOPOLOGY_ZONE,
    NODEPOOL_LABEL_KEY,
)
from karpenter_core.cloudprovider.types import InstanceType
from karpenter_core.controllers.state import pricing
from karpenter_core.runtime.options import Options
from karpenter_core.runtime.reconciler import Result
from karpenter_core.state.cost import ClusterCost, cluster_cost_of, existing_cluster_cost
from karpenter_core.testing import Environment, FakeCloudProvider, fakecatalog
from karpenter_core.testing import builders as b
from karpenter_core.testing.expectations import metric_samples

ZONE = "test-zone-1"
COST = "karpenter_nodepools_cost_total"
ERRORS = "karpenter_nodepools_cost_tracker_errors_total"


@pytest.fixture(autouse=True)
def _clean_metrics() -> Iterator[None]:
    metrics.reset()
    yield
    metrics.reset()


def catalog(spot: float = 1.5, on_demand: float = 3.0) -> list[InstanceType]:
    return [
        fakecatalog.instance_type(
            "test-instance",
            offerings=[
                fakecatalog.offering("spot", ZONE, spot),
                fakecatalog.offering("on-demand", ZONE, on_demand),
            ],
        )
    ]


def nodepool(name: str, group: str = "karpenter.kwok.sh") -> dict[str, Any]:
    return b.nodepool(name, node_class={"group": group, "kind": "KWOKNodeClass", "name": "d"})


def nodeclaim(name: str, pool: str = "default", capacity_type: str = "spot") -> dict[str, Any]:
    labels = {CAPACITY_TYPE_LABEL_KEY: capacity_type, LABEL_INSTANCE_TYPE: "test-instance"}
    return b.nodeclaim(name, nodepool=pool, labels={**labels, LABEL_TOPOLOGY_ZONE: ZONE})


class Env(Environment):
    """The state package and the metrics controllers on the kit's Environment, over a
    one-type catalogue; ``cost`` is the state package's cost tracker."""

    def __init__(
        self,
        options: Options | None = None,
        controllers: tuple[str, ...] | None = ("state", "metrics"),
    ) -> None:
        super().__init__(
            FakeCloudProvider(catalog()),
            options=options,
            controllers=controllers,
            kube_scheduler=False,
            kubelet=False,
        )
        found = existing_cluster_cost(self.ctx)
        assert found is not None
        self.cost: ClusterCost = found


def by_pool(name: str) -> dict[str, float]:
    """``name``'s samples in what ``/metrics`` serves now, by nodepool label."""
    return {labels["nodepool"]: value for labels, value in metric_samples(name)}


# -- the singleton ---------------------------------------------------------------------------------


def test_state_package_registers_the_pricing_singleton_sharing_one_tracker() -> None:
    env = Env()
    controller = env.manager.controller(pricing.NAME)
    assert controller.singleton
    assert isinstance(controller.reconciler, pricing.PricingController)
    assert controller.reconciler.cost is env.cost is cluster_cost_of(env.ctx)


def test_a_pass_reprices_every_managed_pool_and_comes_back_in_an_hour() -> None:
    env = Env()
    env.kube.create(nodepool("default"))
    env.kube.create(nodepool("other"))
    assert env.cost.update_nodeclaim(nodeclaim("a")) is None
    assert (
        env.cost.update_nodeclaim(nodeclaim("b", pool="other", capacity_type="on-demand")) is None
    )
    env.provider.its = catalog(spot=2.0, on_demand=5.0)
    result = pricing.PricingController(env.ctx, env.cost).reconcile()
    assert result == Result.after(pricing.REFRESH_SECONDS)
    assert env.cost.nodepool_cost("default") == pytest.approx(2.0)
    assert env.cost.nodepool_cost("other") == pytest.approx(5.0)


def test_a_pool_whose_catalogue_fails_is_retried_and_the_others_still_repriced(
    caplog: pytest.LogCaptureFixture,
) -> None:
    env = Env()
    env.kube.create(nodepool("default"))
    env.kube.create(nodepool("broken"))
    env.cost.update_nodeclaim(nodeclaim("a"))
    env.cost.update_nodeclaim(nodeclaim("b", pool="broken"))
    env.provider.its = catalog(spot=2.0)
    env.provider.fail_for.add("broken")
    with caplog.at_level(logging.WARNING, logger="karpenter.state.pricing"):
        result = pricing.PricingController(env.ctx, env.cost).reconcile()
    assert result == Result(requeue=True)
    assert env.cost.nodepool_cost("default") == pytest.approx(2.0)
    assert env.cost.nodepool_cost("broken") == pytest.approx(1.5)  # last known price
    assert any("nodepool broken" in r.getMessage() for r in caplog.records)


def test_nodepools_of_another_provider_are_not_priced() -> None:
    env = Env()
    env.kube.create(nodepool("foreign", group="karpenter.k8s.aws"))
    before = env.provider.calls
    assert pricing.PricingController(env.ctx, env.cost).reconcile() == Result.after(3600)
    assert env.provider.calls == before


def test_prices_change_on_the_hour_not_before() -> None:
    env = Env()
    env.kube.create(nodepool("default"))
    env.kube.create(nodeclaim("a"))
    env.run_for(60)
    assert env.cost.nodepool_cost("default") == pytest.approx(1.5)
    env.provider.its = catalog(spot=4.0)
    env.run_for(pricing.REFRESH_SECONDS - 120)
    assert env.cost.nodepool_cost("default") == pytest.approx(1.5)
    env.run_for(120)
    assert env.cost.nodepool_cost("default") == pytest.approx(4.0)


# -- the informers --------------------------------------------------------------------------------


def test_nodeclaims_are_counted_and_uncounted_as_the_api_changes() -> None:
    env = Env()
    env.kube.create(nodepool("default"))
    env.kube.create(nodeclaim("a"))
    env.kube.create(nodeclaim("b", capacity_type="on-demand"))
    env.run_for(1)
    assert env.cost.nodepool_cost("default") == pytest.approx(1.5 + 3.0)
    env.kube.delete("nodeclaims", "b")
    env.run_for(1)
    assert env.cost.nodepool_cost("default") == pytest.approx(1.5)
    env.kube.delete("nodeclaims", "a")
    env.run_for(1)
    assert env.cost.nodepools() == []


def test_a_nodeclaim_gets_counted_when_its_launch_labels_arrive() -> None:
    env = Env()
    env.kube.create(nodepool("default"))
    unlabelled = nodeclaim("a")
    unlabelled["metadata"]["labels"] = {NODEPOOL_LABEL_KEY: "default"}
    env.kube.create(unlabelled)
    env.run_for(1)
    assert not env.cost.is_tracked("a")
    env.kube.patch(
        "nodeclaims", "a", {"metadata": {"labels": nodeclaim("a")["metadata"]["labels"]}}
    )
    env.run_for(1)
    assert env.cost.nodepool_cost("default") == pytest.approx(1.5)


def test_a_nodeclaim_of_a_missing_nodepool_is_an_error_retried_until_it_exists() -> None:
    env = Env()
    env.kube.create(nodeclaim("a", pool="late"))
    env.run_for(5)
    assert by_pool(ERRORS).get("late", 0.0) >= 1.0
    assert not env.cost.is_tracked("a")
    env.kube.create(nodepool("late"))
    env.run_for(1200)  # the back-off retry, at most its cap later
    assert env.cost.nodepool_cost("late") == pytest.approx(1.5)


def test_a_deleted_nodepool_leaves_the_tracker() -> None:
    env = Env()
    env.kube.create(nodepool("default"))
    env.kube.create(nodeclaim("a"))
    env.run_for(1)
    assert env.cost.is_tracked("a")
    env.kube.delete("nodepools", "default")
    env.run_for(1)
    assert env.cost.nodepools() == []
    assert not env.cost.is_tracked("a")


# -- karpenter_nodepools_cost_total ---------------------------------------------------------------


def test_the_cost_gauge_follows_nodeclaims_per_nodepool() -> None:
    env = Env()
    env.kube.create(nodepool("default"))
    env.kube.create(nodepool("other"))
    env.run_for(11)
    assert by_pool(COST) == {"default": 0.0, "other": 0.0}
    env.kube.create(nodeclaim("a"))
    env.kube.create(nodeclaim("b", capacity_type="on-demand"))
    env.kube.create(nodeclaim("c", pool="other"))
    env.run_for(11)
    assert by_pool(COST) == pytest.approx({"default": 4.5, "other": 1.5})
    env.kube.delete("nodeclaims", "b")
    env.run_for(11)
    assert by_pool(COST) == pytest.approx({"default": 1.5, "other": 1.5})


def test_the_cost_gauge_of_a_deleted_nodepool_goes() -> None:
    env = Env()
    env.kube.create(nodepool("default"))
    env.kube.create(nodepool("other"))
    env.kube.create(nodeclaim("a", pool="other"))
    env.run_for(11)
    env.kube.delete("nodepools", "other")
    env.run_for(11)
    assert by_pool(COST) == {"default": 0.0}


def test_the_cost_gauge_follows_repricing() -> None:
    env = Env()
    env.kube.create(nodepool("default"))
    env.kube.create(nodeclaim("a"))
    env.run_for(11)
    assert by_pool(COST) == pytest.approx({"default": 1.5})
    env.provider.its = catalog(spot=0.25)
    env.run_for(pricing.REFRESH_SECONDS)
    assert by_pool(COST) == pytest.approx({"default": 0.25})


def test_without_cluster_state_observability_there_is_no_gauge_but_still_a_tracker() -> None:
    # the whole registry: it is what leaves the metrics controllers out
    env = Env(Options(disable_cluster_state_observability=True), controllers=None)
    env.kube.create(nodepool("default"))
    env.kube.create(nodeclaim("a"))
    env.run_for(11)
    assert by_pool(COST) == {}
    assert env.cost.nodepool_cost("default") == pytest.approx(1.5)
