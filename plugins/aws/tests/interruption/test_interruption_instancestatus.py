"""The ``interruption.instancestatus`` health poller (spec providers §1.7; upstream
``instancestatus_controller.go`` and ``pkg/providers/instancestatus``).

moto ignores DescribeInstanceStatus filters and reports every instance ``ok``, so the
unhealthy responses come from ``botocore.stub.Stubber`` on the real EC2 client; one test
runs against moto itself to show a healthy fleet is left alone.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.stub import Stubber
from karpenter_aws.clients import AWSClients
from karpenter_aws.interruption import messages as m
from karpenter_aws.interruption.instancestatus import (
    EVENT_STATUS,
    FILTER_SETS,
    INSTANCE_STATUS,
    INTERVAL,
    SYSTEM_STATUS,
    UNHEALTHY_THRESHOLD,
    InstanceStatusController,
    Unhealthy,
    unhealthy_categories,
    unhealthy_instances,
)

from karpenter_core import metrics
from karpenter_core.apis import labels as wk
from karpenter_core.kube.client import NotFound, create_with_status
from karpenter_core.runtime.clock import VirtualClock, format_time
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.runtime.reconciler import Result
from karpenter_core.sim.apiserver import InMemoryApiServer

T0 = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
ZONE = "us-west-2a"
DEADLINE = wk.NODECLAIM_TERMINATION_TIMESTAMP_ANNOTATION_KEY
UNHEALTHY = "karpenter_interruption_instance_status_unhealthy_total"
DISRUPTED = "karpenter_nodeclaims_disrupted_total"
LONG_AGO = T0 - timedelta(seconds=UNHEALTHY_THRESHOLD + 60)
JUST_NOW = T0 - timedelta(seconds=UNHEALTHY_THRESHOLD - 60)


def unhealthy_count(category: str) -> float:
    return metrics.sample(UNHEALTHY, {"category": category}) or 0.0


def disrupted(reason: str) -> float:
    return sum(v for lbl, v in metrics.samples(DISRUPTED) if lbl.get("reason") == reason)


def summary(status: str, detail: str, since: datetime | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"Name": "reachability", "Status": detail}
    if since is not None:
        d["ImpairedSince"] = since
    return {"Status": status, "Details": [d]}


def entry(
    instance: str,
    *,
    instance_status: dict[str, Any] | None = None,
    system_status: dict[str, Any] | None = None,
    events: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "InstanceId": instance,
        "AvailabilityZone": ZONE,
        "InstanceState": {"Code": 16, "Name": "running"},
        "InstanceStatus": instance_status or summary("ok", "passed"),
        "SystemStatus": system_status or summary("ok", "passed"),
    }
    if events is not None:
        out["Events"] = events
    return out


def retirement(description: str = "The instance is scheduled for retirement") -> dict[str, Any]:
    return {
        "InstanceEventId": "instance-event-0abc",
        "Code": "instance-retirement",
        "Description": description,
        "NotBefore": T0 + timedelta(days=7),
    }


# --------------------------------------------------------------------- pure decisions


@pytest.mark.parametrize(
    ("status", "categories"),
    [
        (entry("i-1"), ()),
        (entry("i-1", instance_status=summary("impaired", "failed", LONG_AGO)), (INSTANCE_STATUS,)),
        (entry("i-1", system_status=summary("impaired", "failed", LONG_AGO)), (SYSTEM_STATUS,)),
        # a failure younger than the threshold may still heal
        (entry("i-1", system_status=summary("impaired", "failed", JUST_NOW)), ()),
        # exactly at the threshold counts
        (
            entry(
                "i-1",
                instance_status=summary(
                    "impaired", "failed", T0 - timedelta(seconds=UNHEALTHY_THRESHOLD)
                ),
            ),
            (INSTANCE_STATUS,),
        ),
        # a failed check whose start is unknown counts
        (entry("i-1", instance_status=summary("impaired", "failed")), (INSTANCE_STATUS,)),
        (entry("i-1", instance_status=summary("initializing", "initializing")), ()),
        (entry("i-1", instance_status=summary("insufficient-data", "insufficient-data")), ()),
        # a scheduled event counts at once, however far away it is
        (entry("i-1", events=[retirement()]), (EVENT_STATUS,)),
        (entry("i-1", events=[{**retirement(), "Code": "system-maintenance"}]), (EVENT_STATUS,)),
        # finished or cancelled events no longer threaten the instance
        (entry("i-1", events=[retirement("[Completed] The instance is running")]), ()),
        (entry("i-1", events=[retirement("[Canceled] Retirement cancelled")]), ()),
        (
            entry(
                "i-1",
                system_status=summary("impaired", "failed", LONG_AGO),
                instance_status=summary("impaired", "failed", LONG_AGO),
                events=[retirement()],
            ),
            (INSTANCE_STATUS, SYSTEM_STATUS, EVENT_STATUS),
        ),
    ],
)
def test_unhealthy_categories(status: dict[str, Any], categories: tuple[str, ...]) -> None:
    assert unhealthy_categories(status, T0) == categories


def test_unhealthy_categories_ignores_malformed_parts() -> None:
    status = {
        "InstanceId": "i-1",
        "InstanceStatus": "impaired",
        "SystemStatus": {"Details": ["failed", None]},
        "Events": [None, {"Code": 7}],
    }
    assert unhealthy_categories(status, T0) == ()


def test_unhealthy_instances_keeps_the_first_entry_of_each_instance() -> None:
    bad = entry("i-1", system_status=summary("impaired", "failed", LONG_AGO))
    statuses = [bad, entry("i-1"), entry("i-2"), {"InstanceStatus": {}}]
    assert unhealthy_instances(statuses, T0) == [Unhealthy("i-1", (SYSTEM_STATUS,))]


# --------------------------------------------------------------------- the controller


class Env:
    def __init__(self, clients: AWSClients) -> None:
        self.clock = VirtualClock(T0)
        self.server = InMemoryApiServer(self.clock)
        self.recorder = EventRecorder(self.clock)
        self.ctx = ControllerContext(
            kube=self.server,
            clock=self.clock,
            cloud_provider=None,  # type: ignore[arg-type]
            recorder=self.recorder,
        )
        self.ec2 = clients.ec2
        self.controller = InstanceStatusController(self.ctx, self.ec2)

    def nodeclaim(self, name: str, instance: str, **annotations: str) -> None:
        create_with_status(
            self.server,
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodeClaim",
                "metadata": {
                    "name": name,
                    "labels": {
                        wk.NODEPOOL_LABEL_KEY: "default",
                        wk.CAPACITY_TYPE_LABEL_KEY: wk.CAPACITY_TYPE_ON_DEMAND,
                    },
                    "annotations": dict(annotations),
                    "finalizers": [wk.TERMINATION_FINALIZER],
                },
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "default",
                    },
                    "requirements": [],
                },
                "status": {"providerID": f"aws:///{ZONE}/{instance}"},
            },
        )

    def get(self, name: str) -> dict[str, Any]:
        return self.server.get("nodeclaims", name)

    def poll(self, *pages: list[dict[str, Any]]) -> Result:
        """One reconcile answering the three filtered calls with ``pages`` (the first
        filter set gets them all, the other two nothing)."""
        with Stubber(self.ec2) as stub:
            for n, statuses in enumerate(pages):
                params: dict[str, Any] = {"Filters": list(FILTER_SETS[0])}
                response: dict[str, Any] = {"InstanceStatuses": statuses}
                if n:
                    params["NextToken"] = f"page-{n}"
                if n + 1 < len(pages):
                    response["NextToken"] = f"page-{n + 1}"
                stub.add_response("describe_instance_status", response, params)
            for filters in FILTER_SETS[1:]:
                stub.add_response(
                    "describe_instance_status", {"InstanceStatuses": []}, {"Filters": list(filters)}
                )
            result = self.controller.reconcile()
            stub.assert_no_pending_responses()
        return result


@pytest.fixture
def env(clients: AWSClients) -> Env:
    return Env(clients)


def test_the_three_filter_sets_are_upstreams() -> None:
    assert FILTER_SETS == (
        ({"Name": "instance-status.status", "Values": ["impaired"]},),
        ({"Name": "system-status.status", "Values": ["impaired"]},),
        (
            {
                "Name": "event.code",
                "Values": [
                    "instance-reboot",
                    "system-reboot",
                    "system-maintenance",
                    "instance-retirement",
                    "instance-stop",
                ],
            },
        ),
    )


@pytest.mark.parametrize(
    ("category", "kind", "field"),
    [
        (SYSTEM_STATUS, m.SYSTEM_STATUS, "system_status"),
        (INSTANCE_STATUS, m.INSTANCE_STATUS, "instance_status"),
    ],
)
def test_failed_status_check_deletes_forcefully(
    env: Env, category: str, kind: str, field: str
) -> None:
    env.nodeclaim("nc", "i-0aaa")
    env.nodeclaim("healthy", "i-0bbb")
    before, counted = disrupted(kind), unhealthy_count(category)

    result = env.poll(
        [entry("i-0aaa", **{field: summary("impaired", "failed", LONG_AGO)}), entry("i-0bbb")]
    )

    assert result == Result.after(INTERVAL)
    nc = env.get("nc")
    assert nc["metadata"]["deletionTimestamp"]
    assert nc["metadata"]["annotations"][DEADLINE] == format_time(T0)
    assert not env.get("healthy")["metadata"].get("deletionTimestamp")
    assert disrupted(kind) == before + 1
    assert unhealthy_count(category) == counted + 1
    reasons = [e.reason for e in env.recorder.events if e.name == "nc"]
    assert reasons == ["InstanceUnhealthy", "TerminatingOnInterruption"]


def test_scheduled_event_deletes_gracefully(env: Env) -> None:
    env.nodeclaim("nc", "i-0aaa")
    before = disrupted(m.EVENT_STATUS)

    env.poll([entry("i-0aaa", events=[retirement()])])

    nc = env.get("nc")
    assert nc["metadata"]["deletionTimestamp"]
    assert DEADLINE not in (nc["metadata"].get("annotations") or {})
    assert disrupted(m.EVENT_STATUS) == before + 1


def test_broken_and_scheduled_instance_gets_the_forceful_delete_once(env: Env) -> None:
    env.nodeclaim("nc", "i-0aaa")
    system, event = disrupted(m.SYSTEM_STATUS), disrupted(m.EVENT_STATUS)

    env.poll(
        [
            entry(
                "i-0aaa",
                system_status=summary("impaired", "failed", LONG_AGO),
                events=[retirement()],
            )
        ]
    )

    nc = env.get("nc")
    assert nc["metadata"]["annotations"][DEADLINE] == format_time(T0)
    assert disrupted(m.SYSTEM_STATUS) == system + 1
    assert disrupted(m.EVENT_STATUS) == event  # already deleting: not deleted twice


def test_a_failure_younger_than_the_threshold_is_left_alone(env: Env) -> None:
    env.nodeclaim("nc", "i-0aaa")
    env.poll([entry("i-0aaa", system_status=summary("impaired", "failed", JUST_NOW))])
    assert not env.get("nc")["metadata"].get("deletionTimestamp")


def test_an_unhealthy_instance_is_counted_once_while_it_stays_unhealthy(env: Env) -> None:
    env.nodeclaim("nc", "i-0aaa")
    bad = [entry("i-0aaa", system_status=summary("impaired", "failed", LONG_AGO))]
    counted = unhealthy_count(SYSTEM_STATUS)

    env.poll(bad)
    annotated = env.get("nc")["metadata"]["annotations"][DEADLINE]
    env.clock.advance(INTERVAL)
    env.poll(bad)

    assert unhealthy_count(SYSTEM_STATUS) == counted + 1
    assert env.get("nc")["metadata"]["annotations"][DEADLINE] == annotated  # not moved

    env.poll([])  # healthy again (or gone): forgotten
    env.poll(bad)
    assert unhealthy_count(SYSTEM_STATUS) == counted + 2


def test_an_instance_without_a_nodeclaim_is_not_counted(env: Env) -> None:
    counted = unhealthy_count(INSTANCE_STATUS)
    env.poll([entry("i-0fff", instance_status=summary("impaired", "failed", LONG_AGO))])
    assert unhealthy_count(INSTANCE_STATUS) == counted
    assert env.recorder.events == []


def test_an_existing_past_deadline_is_kept(env: Env) -> None:
    earlier = format_time(T0 - timedelta(hours=1))
    env.nodeclaim("nc", "i-0aaa", **{DEADLINE: earlier})
    env.poll([entry("i-0aaa", system_status=summary("impaired", "failed", LONG_AGO))])
    assert env.get("nc")["metadata"]["annotations"][DEADLINE] == earlier


def test_every_page_is_read(env: Env) -> None:
    env.nodeclaim("first", "i-0aaa")
    env.nodeclaim("second", "i-0bbb")
    bad = summary("impaired", "failed", LONG_AGO)

    env.poll([entry("i-0aaa", system_status=bad)], [entry("i-0bbb", system_status=bad)])

    assert env.get("first")["metadata"].get("deletionTimestamp")
    assert env.get("second")["metadata"].get("deletionTimestamp")


def test_missing_permission_stops_polling_with_a_logged_error(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    with Stubber(env.ec2) as stub, caplog.at_level(logging.ERROR):
        stub.add_client_error("describe_instance_status", "UnauthorizedOperation", "denied")
        result = env.controller.reconcile()
    assert result == Result()
    assert "ec2:DescribeInstanceStatus" in caplog.text and "UnauthorizedOperation" in caplog.text


def test_other_errors_are_retried_with_back_off(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    with Stubber(env.ec2) as stub, caplog.at_level(logging.WARNING):
        stub.add_client_error("describe_instance_status", "RequestLimitExceeded", "slow down")
        result = env.controller.reconcile()
    assert result.requeue
    assert "RequestLimitExceeded" in caplog.text


def test_a_failed_delete_is_retried(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    env.nodeclaim("nc", "i-0aaa")

    def gone(*args: Any, **kwargs: Any) -> None:
        raise NotFound('nodeclaims "nc" not found')

    monkeypatch.setattr(env.server, "patch", gone)  # vanished between list and patch
    result = env.poll([entry("i-0aaa", system_status=summary("impaired", "failed", LONG_AGO))])
    assert result == Result.after(INTERVAL)  # a NodeClaim already gone is not a failure

    def down(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("api server unreachable")

    monkeypatch.setattr(env.server, "patch", down)
    result = env.poll([entry("i-0aaa", system_status=summary("impaired", "failed", LONG_AGO))])
    assert result.requeue


def test_healthy_instances_on_moto_are_left_alone(env: Env, clients: AWSClients) -> None:
    """moto ignores the filters and returns every running instance as ``ok``."""
    launched = clients.ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1)
    iid = launched["Instances"][0]["InstanceId"]
    env.nodeclaim("nc", iid)

    assert env.controller.describe()  # the filters were not applied...
    assert env.controller.reconcile() == Result.after(INTERVAL)
    assert not env.get("nc")["metadata"].get("deletionTimestamp")  # ...and nothing happened
