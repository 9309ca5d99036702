"""Launch-template cache hydration at start-up and deletion of templates no launch used
for the cache's lifetime, against moto's EC2."""

from __future__ import annotations

from typing import Any

from karpenter_aws.clients import AWSClients
from karpenter_aws.instance import launch_tags
from karpenter_aws.launchtemplate import (
    CACHE_TTL_SECONDS,
    SWEEP_INTERVAL_SECONDS,
    LaunchTemplateCleanup,
    LaunchTemplateProvider,
    LaunchTemplateSpec,
)
from test_instance import CLUSTER, Network, template

from karpenter_core.plugin_api import Result


def spec(net: Network, cluster: str, max_pods: int) -> LaunchTemplateSpec:
    tags = launch_tags(cluster, "default", {}, "default")
    return template(net, tags).spec(net.ami, max_pods, "on-demand")


def names(ec2: Any) -> set[str]:
    return {lt["LaunchTemplateName"] for lt in ec2.describe_launch_templates()["LaunchTemplates"]}


def test_a_restarted_provider_deletes_the_cluster_templates_no_launch_uses_within_a_minute(
    clients: AWSClients,
) -> None:
    net = Network(clients.ec2)
    before = LaunchTemplateProvider(clients.ec2)  # an earlier process made these
    used = before.ensure(spec(net, CLUSTER, 29))
    stale = before.ensure(spec(net, CLUSTER, 58))
    foreign = before.ensure(spec(net, "other-cluster", 29))

    now = [1000.0]
    lts = LaunchTemplateProvider(clients.ec2, monotonic=lambda: now[0])
    assert lts.hydrate(CLUSTER) == 2
    assert lts.sweep() == []  # nothing expired yet
    now[0] += 30
    assert lts.ensure(spec(net, CLUSTER, 29)) == used  # a launch renews it, from the cache
    now[0] += 40  # the hydrated entries expired 10 s ago, the renewed one has 20 s left
    assert lts.sweep() == [stale]
    assert names(clients.ec2) == {used, foreign}
    now[0] += CACHE_TTL_SECONDS
    assert lts.sweep() == [used]
    assert names(clients.ec2) == {foreign}  # another cluster's template is not ours
    # a later launch makes the template again
    assert lts.ensure(spec(net, CLUSTER, 29)) == used and used in names(clients.ec2)


def test_the_cleanup_singleton_hydrates_once_then_sweeps_every_minute(
    clients: AWSClients,
) -> None:
    net = Network(clients.ec2)
    old = LaunchTemplateProvider(clients.ec2).ensure(spec(net, CLUSTER, 29))
    now = [0.0]
    lts = LaunchTemplateProvider(clients.ec2, monotonic=lambda: now[0])
    cleanup = LaunchTemplateCleanup(lts, CLUSTER)
    assert cleanup.reconcile() == Result.after(SWEEP_INTERVAL_SECONDS)  # hydrates
    assert old in names(clients.ec2)
    now[0] += CACHE_TTL_SECONDS
    assert cleanup.reconcile() == Result.after(SWEEP_INTERVAL_SECONDS)  # sweeps
    assert old not in names(clients.ec2)
