"""Batched EC2 calls against moto's server (and botocore's Stubber where moto cannot
answer as EC2 does): how merged calls are split back per item, and a 200-node burst's
EC2 call count with and without batching, counted on the real boto3 client."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import attrs
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from karpenter_aws.clients import AWSClients
from karpenter_aws.ec2batch import EC2Batcher
from karpenter_aws.instance import Instance, InstanceProvider, LaunchRequest, launch_tags
from karpenter_aws.launchtemplate import LaunchTemplateProvider
from test_instance import (
    CLUSTER,
    Network,
    _fleet_error,
    _template_exists,
    on_demand,
    request,
)

from karpenter_core.cloudprovider.errors import InsufficientCapacityError
from karpenter_core.cloudprovider.unavailable import UnavailableOfferings
from karpenter_core.runtime.clock import VirtualClock

BURST = 200


class FakeClock:
    """The batchers' monotonic clock: it moves only when the test moves it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def net(clients: AWSClients) -> Network:
    return Network(clients.ec2)


@pytest.fixture
def api_calls(clients: AWSClients) -> Counter[str]:
    """EC2 API calls the client sends, by operation name (botocore's ``before-call``)."""
    counts: Counter[str] = Counter()
    lock = threading.Lock()

    def count(model: Any, **_: Any) -> None:
        with lock:
            counts[model.name] += 1

    clients.ec2.meta.events.register("before-call.ec2", count)
    return counts


def launch(net: Network, nodeclaim: str = "default-abcde") -> LaunchRequest:
    """A NodeClaim's launch as the provider makes it: launch tags without its name."""
    types = [on_demand("m5.large", 0.096), on_demand("c5.large", 0.085)]
    tags = launch_tags(CLUSTER, "default", {"team": "a"}, "default")
    return attrs.evolve(request(net, types, nodeclaim=nodeclaim), tags=tags)


def run_gated(
    fn: Callable[[Any], Any], args: Sequence[Any], batcher: EC2Batcher | None, clock: FakeClock
) -> list[Future[Any]]:
    """``fn`` for each arg at once, on a thread each. With a batcher, its windows close
    only when every unfinished call waits in one of them (then the fake clock jumps past
    every deadline): the burst arrives within one window whatever the machine's speed,
    so the call counts are exact. Without one the calls run one after another: each is
    its own EC2 call whatever the concurrency, and moto's server is not safe under
    hundreds of concurrent launches into one subnet."""
    if batcher is None:
        done: list[Future[Any]] = []
        for a in args:
            f: Future[Any] = Future()
            try:
                f.set_result(fn(a))
            except Exception as e:
                f.set_exception(e)
            done.append(f)
        return done
    with ThreadPoolExecutor(max_workers=len(args)) as pool:
        futures = [pool.submit(fn, a) for a in args]
        while not all(f.done() for f in futures):
            unfinished = sum(not f.done() for f in futures)
            if sum(b.pending() for b in batcher.batchers) == unfinished:
                clock.now += 10.0
            time.sleep(0.005)
    return futures


# --- splitting merged answers --------------------------------------------------------------


def test_a_merged_create_fleet_asks_for_one_instance_per_request_and_hands_each_its_own(
    clients: AWSClients, net: Network, api_calls: Counter[str]
) -> None:
    lts = LaunchTemplateProvider(clients.ec2)
    seen: list[dict[str, Any]] = []
    clients.ec2.meta.events.register(
        "provide-client-params.ec2.CreateFleet", lambda params, **_: seen.append(params)
    )
    batcher = EC2Batcher(clients.ec2, threaded=False)
    req = launch(net)
    spec = req.template.spec(net.ami, 29, "on-demand")
    name = lts.ensure(spec)
    fleet = {
        "Type": "instant",
        "TargetCapacitySpecification": {
            "TotalTargetCapacity": 1,
            "DefaultTargetCapacityType": "on-demand",
        },
        "LaunchTemplateConfigs": [
            {
                "LaunchTemplateSpecification": {"LaunchTemplateName": name, "Version": "$Latest"},
                "Overrides": [{"InstanceType": "m5.large", "SubnetId": net.subnets["us-west-2a"]}],
            }
        ],
    }
    futures = [batcher.fleets.submit(fleet) for _ in range(3)]
    batcher.flush_due()  # not due yet: the window is still open
    assert not any(f.done() for f in futures)
    batcher.fleets.flush()
    assert api_calls["CreateFleet"] == 1
    assert seen[0]["TargetCapacitySpecification"]["TotalTargetCapacity"] == 3
    ids = [f.result()["Instances"][0]["InstanceIds"] for f in futures]
    assert all(len(i) == 1 for i in ids) and len({i[0] for i in ids}) == 3


def test_a_partly_filled_fleet_launches_some_nodeclaims_and_fails_the_rest_with_its_errors(
    clients: AWSClients, net: Network
) -> None:
    unavailable = UnavailableOfferings(VirtualClock())
    clock = FakeClock()
    batcher = EC2Batcher(clients.ec2, monotonic=clock)
    provider = InstanceProvider(clients.ec2, CLUSTER, unavailable, calls=batcher)
    ice = _fleet_error("InsufficientInstanceCapacity", "c5.large", "us-west-2b")
    with Stubber(clients.ec2) as stub:
        _template_exists(stub)
        stub.add_response(
            "create_fleet",
            {
                "FleetId": "fleet-1",
                "Errors": [ice],
                "Instances": [
                    {
                        "InstanceIds": ["i-0000000000000000a", "i-0000000000000000b"],
                        "InstanceType": "m5.large",
                        "LaunchTemplateAndOverrides": {
                            "Overrides": {
                                "InstanceType": "m5.large",
                                "AvailabilityZone": "us-west-2a",
                                "SubnetId": net.subnets["us-west-2a"],
                            }
                        },
                        "Lifecycle": "on-demand",
                    }
                ],
            },
            None,
        )
        futures = run_gated(
            provider.create, [launch(net, f"nc-{i}") for i in range(3)], batcher, clock
        )
        stub.assert_no_pending_responses()
    launched = sorted(f.result().id for f in futures if f.exception() is None)
    failed = [f.exception() for f in futures if f.exception() is not None]
    assert launched == ["i-0000000000000000a", "i-0000000000000000b"]
    assert len(failed) == 1 and isinstance(failed[0], InsufficientCapacityError)
    assert "InsufficientInstanceCapacity" in str(failed[0])
    assert unavailable.is_unavailable("c5.large", "us-west-2b", "on-demand")


def _launch_n(clients: AWSClients, net: Network, n: int) -> list[str]:
    lts = LaunchTemplateProvider(clients.ec2)
    name = lts.ensure(launch(net).template.spec(net.ami, 29, "on-demand"))
    out = clients.ec2.create_fleet(
        Type="instant",
        TargetCapacitySpecification={
            "TotalTargetCapacity": n,
            "DefaultTargetCapacityType": "on-demand",
        },
        LaunchTemplateConfigs=[
            {
                "LaunchTemplateSpecification": {"LaunchTemplateName": name, "Version": "$Latest"},
                "Overrides": [{"InstanceType": "m5.large", "SubnetId": net.subnets["us-west-2a"]}],
            }
        ],
    )
    return [i for fi in out["Instances"] for i in fi["InstanceIds"]]


def test_an_unknown_id_fails_only_its_own_describe(
    clients: AWSClients, net: Network, api_calls: Counter[str]
) -> None:
    known = _launch_n(clients, net, 2)
    unknown = "i-0123456789abcdef0"
    batcher = EC2Batcher(clients.ec2, threaded=False)
    api_calls.clear()
    futures = [
        batcher.describes.submit({"InstanceIds": [i], "Filters": []}) for i in (*known, unknown)
    ]
    batcher.describes.flush()
    for instance_id, f in zip(known, futures, strict=False):
        [reservation] = f.result()["Reservations"]
        assert [i["InstanceId"] for i in reservation["Instances"]] == [instance_id]
    with pytest.raises(ClientError) as e:
        futures[2].result()
    assert e.value.response["Error"]["Code"] == "InvalidInstanceID.NotFound"
    # the merged call failed on the unknown id; each id was then asked for alone
    assert api_calls["DescribeInstances"] == 1 + 3


def test_merged_describes_and_terminations_answer_each_id(
    clients: AWSClients, net: Network, api_calls: Counter[str]
) -> None:
    ids = _launch_n(clients, net, 3)
    batcher = EC2Batcher(clients.ec2, threaded=False)
    api_calls.clear()
    described = [batcher.describes.submit({"InstanceIds": [i], "Filters": []}) for i in ids]
    batcher.describes.flush()
    terminated = [batcher.terminates.submit({"InstanceIds": [i]}) for i in ids]
    batcher.terminates.flush()
    assert api_calls == {"DescribeInstances": 1, "TerminateInstances": 1}
    for instance_id, d, t in zip(ids, described, terminated, strict=True):
        assert d.result()["Reservations"][0]["Instances"][0]["InstanceId"] == instance_id
        [change] = t.result()["TerminatingInstances"]
        assert change["InstanceId"] == instance_id
        assert change["CurrentState"]["Name"] in ("shutting-down", "terminated")


# --- the instance cache -----------------------------------------------------------------


def test_a_just_launched_instance_is_answered_from_the_cache(
    clients: AWSClients, net: Network, api_calls: Counter[str]
) -> None:
    provider = InstanceProvider(clients.ec2, CLUSTER, UnavailableOfferings(VirtualClock()))
    launched = provider.create(launch(net))
    before = api_calls["DescribeInstances"]
    assert provider.get(launched.id) == launched
    assert api_calls["DescribeInstances"] == before
    fresh = provider.get(launched.id, skip_cache=True)
    assert fresh.id == launched.id and api_calls["DescribeInstances"] == before + 1
    # a listing that misses it (eventual consistency) keeps a launch this recent
    provider.cache.replace([])
    assert provider.get(launched.id).id == launched.id


def test_a_listing_forgets_instances_ec2_no_longer_reports(clients: AWSClients) -> None:
    now = [0.0]
    provider = InstanceProvider(clients.ec2, CLUSTER, UnavailableOfferings(VirtualClock()))
    provider.cache = type(provider.cache)(monotonic=lambda: now[0])
    gone = Instance(id="i-1", instance_type="m5.large", zone="us-west-2a", state="running",
                    capacity_type="on-demand")  # fmt: skip
    provider.cache.launched(gone)
    now[0] += 61
    assert provider.list() == []
    assert provider.cache.get("i-1") is None


# --- a 200-node burst ---------------------------------------------------------------------


@pytest.mark.parametrize("batched", [False, True], ids=["one-call-each", "batched"])
def test_a_200_node_burst_makes_few_ec2_calls_when_batched(
    clients: AWSClients, net: Network, api_calls: Counter[str], batched: bool
) -> None:
    """200 NodeClaims launched, looked up afresh and terminated at once, as the
    controllers' threads would: one EC2 call each without batching, one call per
    operation when the burst fits one window."""
    clock = FakeClock()
    batcher = EC2Batcher(clients.ec2, monotonic=clock) if batched else None
    provider = InstanceProvider(
        clients.ec2, CLUSTER, UnavailableOfferings(VirtualClock()), calls=batcher, batch=batched
    )
    launches = [launch(net, f"default-{i:03d}") for i in range(BURST)]

    created = [f.result() for f in run_gated(provider.create, launches, batcher, clock)]
    ids = [i.id for i in created]
    assert len(set(ids)) == BURST
    assert api_calls["CreateFleet"] == (1 if batched else BURST)
    assert api_calls["DescribeLaunchTemplates"] == 1  # one lookup of the shared template

    before = api_calls["DescribeInstances"]
    cached = [provider.get(i) for i in ids]  # answered from the instance cache
    assert cached == created and api_calls["DescribeInstances"] == before

    def fresh(instance_id: str) -> Instance:
        return provider.get(instance_id, skip_cache=True)

    assert [f.result().id for f in run_gated(fresh, ids, batcher, clock)] == ids
    assert api_calls["DescribeInstances"] == (1 if batched else BURST)

    for f in run_gated(provider.delete, ids, batcher, clock):
        f.result()
    assert api_calls["DescribeInstances"] == (2 if batched else 2 * BURST)
    assert api_calls["TerminateInstances"] == (1 if batched else BURST)
    states = {
        i["State"]["Name"]
        for r in clients.ec2.describe_instances(InstanceIds=ids)["Reservations"]
        for i in r["Instances"]
    }
    assert states <= {"shutting-down", "terminated"}
    if batcher is not None:
        batcher.close()
