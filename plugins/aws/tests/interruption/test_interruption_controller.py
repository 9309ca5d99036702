"""The ``interruption`` controller end to end: real EventBridge-shaped messages on a moto
SQS queue, NodeClaims in the in-memory API server (spec providers §1.7; upstream
``pkg/controllers/interruption/suite_test.go``)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.stub import Stubber
from karpenter_aws.capacityreservation import CapacityReservationProvider
from karpenter_aws.clients import AWSClients
from karpenter_aws.interruption import (
    INSTANCE_STATUS_NAME,
    NAME,
    RETRY_CAP,
    InterruptionController,
)
from karpenter_aws.interruption import controller as ctl
from karpenter_aws.interruption import messages as m
from karpenter_aws.labels import LABEL_CAPACITY_RESERVATION_ID
from karpenter_aws.settings import AWSSettings
from test_interruption_messages import (
    health,
    rebalance,
    reservation,
    spot,
    state_change,
)

from karpenter_core import metrics
from karpenter_core.apis import labels as wk
from karpenter_core.cloudprovider.unavailable import UnavailableOfferings
from karpenter_core.kube.client import InternalError, NotFound, create_with_status
from karpenter_core.runtime.clock import VirtualClock, WallClock
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.runtime.manager import Manager
from karpenter_core.runtime.reconciler import Result
from karpenter_core.sim.apiserver import InMemoryApiServer

QUEUE = "karpenter-interruption"
EVENT_TIME = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)  # the `time` of every test event
WAITED = 7.0
ZONE = "us-west-2a"
TYPE = "m5.large"

RECEIVED = "karpenter_interruption_received_messages_total"
DELETED = "karpenter_interruption_deleted_messages_total"
LATENCY_COUNT = "karpenter_interruption_message_queue_duration_seconds_count"
LATENCY_SUM = "karpenter_interruption_message_queue_duration_seconds_sum"
DISRUPTED = "karpenter_nodeclaims_disrupted_total"


def sample(name: str, **labels: str) -> float:
    return metrics.sample(name, labels) or 0.0


def disrupted(reason: str) -> float:
    return sum(v for lbl, v in metrics.samples(DISRUPTED) if lbl.get("reason") == reason)


class Env:
    """A queue on moto, NodeClaims on an in-memory API server, a virtual clock that reads
    ``WAITED`` seconds after the events were raised."""

    def __init__(self, clients: AWSClients, *, create_queue: bool = True) -> None:
        self.clock = VirtualClock(datetime.fromtimestamp(EVENT_TIME.timestamp() + WAITED, UTC))
        self.server = InMemoryApiServer(self.clock)
        self.recorder = EventRecorder(self.clock)
        self.ctx = ControllerContext(
            kube=self.server,
            clock=self.clock,
            cloud_provider=None,  # type: ignore[arg-type]
            recorder=self.recorder,
        )
        self.unavailable = UnavailableOfferings(self.clock)
        self.sqs = clients.sqs
        self.queue_url = self.sqs.create_queue(QueueName=QUEUE)["QueueUrl"] if create_queue else ""
        self.controller = InterruptionController(
            self.ctx, self.sqs, QUEUE, self.unavailable, wait_seconds=0
        )

    def send(self, *bodies: str) -> None:
        for body in bodies:
            self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=body)

    def queued(self) -> int:
        """Messages still on the queue, visible or in flight."""
        attrs = self.sqs.get_queue_attributes(
            QueueUrl=self.queue_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return int(attrs["ApproximateNumberOfMessages"]) + int(
            attrs["ApproximateNumberOfMessagesNotVisible"]
        )

    def nodeclaim(
        self,
        name: str,
        instance: str,
        *,
        capacity_type: str = wk.CAPACITY_TYPE_SPOT,
        finalizer: bool = False,
        labels: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "name": name,
            "labels": {
                wk.NODEPOOL_LABEL_KEY: "default",
                wk.CAPACITY_TYPE_LABEL_KEY: capacity_type,
                wk.LABEL_TOPOLOGY_ZONE: ZONE,
                wk.LABEL_INSTANCE_TYPE: TYPE,
                **(labels or {}),
            },
        }
        if finalizer:
            meta["finalizers"] = [wk.TERMINATION_FINALIZER]
        return create_with_status(
            self.server,
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodeClaim",
                "metadata": meta,
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

    def node(self, name: str, instance: str) -> dict[str, Any]:
        return self.server.create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name},
                "spec": {"providerID": f"aws:///{ZONE}/{instance}"},
            }
        )

    def exists(self, name: str) -> bool:
        try:
            self.server.get("nodeclaims", name)
        except NotFound:
            return False
        return True

    def reasons(self, kind: str, name: str) -> list[str]:
        return [e.reason for e in self.recorder.events if e.kind == kind and e.name == name]


@pytest.fixture
def env(clients: AWSClients) -> Env:
    return Env(clients)


def test_spot_interruption_deletes_the_nodeclaim_marks_the_offering_and_the_message(
    env: Env,
) -> None:
    env.nodeclaim("spot-1", "i-0000000000000000a")
    env.node("node-1", "i-0000000000000000a")
    env.send(spot("i-0000000000000000a"))
    received = sample(RECEIVED, message_type=m.SPOT_INTERRUPTED)
    deleted, latency_n, latency_sum = sample(DELETED), sample(LATENCY_COUNT), sample(LATENCY_SUM)
    disrupted_before = disrupted(m.SPOT_INTERRUPTED)

    env.controller.reconcile()

    assert not env.exists("spot-1")
    assert env.queued() == 0
    assert env.unavailable.is_unavailable(TYPE, ZONE, wk.CAPACITY_TYPE_SPOT)
    assert not env.unavailable.is_unavailable(TYPE, ZONE, wk.CAPACITY_TYPE_ON_DEMAND)
    assert sample(RECEIVED, message_type=m.SPOT_INTERRUPTED) == received + 1
    assert sample(DELETED) == deleted + 1
    assert sample(LATENCY_COUNT) == latency_n + 1
    assert sample(LATENCY_SUM) == pytest.approx(latency_sum + WAITED)
    assert disrupted(m.SPOT_INTERRUPTED) == disrupted_before + 1
    assert env.reasons("NodeClaim", "spot-1") == ["SpotInterrupted", "TerminatingOnInterruption"]
    assert env.reasons("Node", "node-1") == ["SpotInterrupted", "TerminatingOnInterruption"]


@pytest.mark.parametrize(
    ("body", "kind", "reason"),
    [
        (health("i-0000000000000000b"), m.SCHEDULED_CHANGE, "InstanceUnhealthy"),
        (state_change("stopping", "i-0000000000000000b"), m.INSTANCE_STOPPED, "InstanceStopping"),
        (state_change("stopped", "i-0000000000000000b"), m.INSTANCE_STOPPED, "InstanceStopping"),
        (
            state_change("shutting-down", "i-0000000000000000b"),
            m.INSTANCE_TERMINATED,
            "InstanceTerminating",
        ),
        (
            state_change("terminated", "i-0000000000000000b"),
            m.INSTANCE_TERMINATED,
            "InstanceTerminating",
        ),
        (
            reservation("i-0000000000000000b"),
            m.CAPACITY_RESERVATION_INTERRUPTED,
            "CapacityReservationInstanceInterrupted",
        ),
    ],
)
def test_deleting_kinds_delete_the_nodeclaim_and_the_message(
    env: Env, body: str, kind: str, reason: str
) -> None:
    env.nodeclaim("nc", "i-0000000000000000b", capacity_type=wk.CAPACITY_TYPE_ON_DEMAND)
    received = sample(RECEIVED, message_type=kind)
    before = disrupted(kind)
    env.send(body)

    env.controller.reconcile()

    assert not env.exists("nc")
    assert env.queued() == 0
    assert sample(RECEIVED, message_type=kind) == received + 1
    assert disrupted(kind) == before + 1
    assert env.reasons("NodeClaim", "nc") == [reason, "TerminatingOnInterruption"]
    # only a spot interruption says anything about spot capacity
    assert not env.unavailable.is_unavailable(TYPE, ZONE, wk.CAPACITY_TYPE_SPOT)


def test_rebalance_recommendation_only_publishes_an_event(env: Env) -> None:
    env.nodeclaim("nc", "i-0000000000000000c")
    env.node("node", "i-0000000000000000c")
    received = sample(RECEIVED, message_type=m.REBALANCE_RECOMMENDATION)
    env.send(rebalance("i-0000000000000000c"))

    env.controller.reconcile()

    assert env.exists("nc")
    assert env.queued() == 0
    assert sample(RECEIVED, message_type=m.REBALANCE_RECOMMENDATION) == received + 1
    assert env.reasons("NodeClaim", "nc") == ["SpotRebalanceRecommendation"]
    assert env.reasons("Node", "node") == ["SpotRebalanceRecommendation"]
    assert [e.type for e in env.recorder.events] == ["Normal", "Normal"]
    assert not env.unavailable.is_unavailable(TYPE, ZONE, wk.CAPACITY_TYPE_SPOT)


def test_state_change_to_an_unhandled_state_is_deleted_and_keeps_the_nodeclaim(
    env: Env,
) -> None:
    env.nodeclaim("nc", "i-0000000000000000d")
    received = sample(RECEIVED, message_type=m.NO_OP)
    env.send(state_change("running", "i-0000000000000000d"))

    env.controller.reconcile()

    assert env.exists("nc")
    assert env.queued() == 0
    assert sample(RECEIVED, message_type=m.NO_OP) == received + 1
    assert env.recorder.events == []


def test_unparseable_message_is_deleted_and_logged_without_counting_as_received(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    env.nodeclaim("nc", "i-0000000000000000e")
    before = sum(v for _, v in metrics.samples(RECEIVED))
    deleted = sample(DELETED)
    env.send("{this is not json")

    with caplog.at_level(logging.ERROR, logger="karpenter.aws.interruption"):
        result = env.controller.reconcile()

    assert result.requeue_after > 0 and not result.requeue
    assert env.exists("nc")
    assert env.queued() == 0
    assert sample(DELETED) == deleted + 1
    assert sum(v for _, v in metrics.samples(RECEIVED)) == before
    assert "cannot be parsed" in caplog.text and "not JSON" in caplog.text


def test_only_the_nodeclaim_of_the_named_instance_is_touched(env: Env) -> None:
    env.nodeclaim("target", "i-0000000000000001")
    env.nodeclaim("longer-id", "i-00000000000000011")  # same prefix, another instance
    env.nodeclaim("other", "i-0000000000000002")
    env.send(spot("i-0000000000000001"))

    env.controller.reconcile()

    assert not env.exists("target")
    assert env.exists("longer-id") and env.exists("other")


def test_a_message_for_an_instance_without_nodeclaim_is_just_deleted(env: Env) -> None:
    env.nodeclaim("nc", "i-0000000000000003")
    env.send(spot("i-0fffffffffffffff0"))

    env.controller.reconcile()

    assert env.exists("nc")
    assert env.queued() == 0
    assert len(env.unavailable) == 0  # nothing known about the instance's offering


def test_a_nodeclaim_already_deleting_is_not_deleted_or_counted_again(env: Env) -> None:
    env.nodeclaim("nc", "i-0000000000000004", finalizer=True)
    before = disrupted(m.INSTANCE_TERMINATED)
    env.send(state_change("shutting-down", "i-0000000000000004"))
    env.controller.reconcile()
    first = env.server.get("nodeclaims", "nc")["metadata"]["deletionTimestamp"]
    env.send(state_change("terminated", "i-0000000000000004"))

    env.controller.reconcile()

    assert env.server.get("nodeclaims", "nc")["metadata"]["deletionTimestamp"] == first
    assert disrupted(m.INSTANCE_TERMINATED) == before + 1
    assert env.queued() == 0


def test_interruption_deletes_are_graceful_without_a_termination_deadline(env: Env) -> None:
    """Interruption deletes are graceful: no termination deadline is set."""
    env.nodeclaim("nc", "i-0000000000000005", finalizer=True)
    env.send(spot("i-0000000000000005"))

    env.controller.reconcile()

    nc = env.server.get("nodeclaims", "nc")
    assert nc["metadata"]["deletionTimestamp"]
    assert wk.NODECLAIM_TERMINATION_TIMESTAMP_ANNOTATION_KEY not in (
        nc["metadata"].get("annotations") or {}
    )


def test_capacity_reservation_interruption_marks_only_that_reservation(env: Env) -> None:
    reservations = CapacityReservationProvider(None, env.clock)
    reservations.set_available("cr-56fac701cc1951b03", 3)
    reservations.set_available("cr-other", 2)  # same type and zone
    controller = InterruptionController(
        env.ctx, env.sqs, QUEUE, env.unavailable, reservations=reservations, wait_seconds=0
    )
    env.nodeclaim(
        "nc",
        "i-0000000000000006",
        capacity_type=wk.CAPACITY_TYPE_RESERVED,
        labels={LABEL_CAPACITY_RESERVATION_ID: "cr-56fac701cc1951b03"},
    )
    env.send(reservation("i-0000000000000006"))

    controller.reconcile()

    assert not env.exists("nc")
    assert reservations.available("cr-56fac701cc1951b03") == 0
    assert reservations.available("cr-other") == 2
    # the type and zone's reserved offerings (the other reservation) stay launchable
    assert not env.unavailable.is_unavailable(TYPE, ZONE, wk.CAPACITY_TYPE_RESERVED)
    assert not env.unavailable.is_unavailable(TYPE, ZONE, wk.CAPACITY_TYPE_SPOT)


def test_more_messages_than_one_receive_returns_are_drained_batch_by_batch(env: Env) -> None:
    instances = [f"i-{n:017x}" for n in range(1, 24)]
    for n, iid in enumerate(instances):
        env.nodeclaim(f"nc-{n}", iid)
    env.send(*(spot(iid) for iid in instances))
    deleted = sample(DELETED)

    results: list[Result] = []
    for _ in range(10):  # bounded: each pass receives at most 10
        results.append(env.controller.reconcile())
        if env.queued() == 0:
            break

    assert env.queued() == 0
    assert sample(DELETED) == deleted + len(instances)
    assert not any(env.exists(f"nc-{n}") for n in range(len(instances)))
    assert len(results) >= 3  # 23 messages need at least three receives of 10


def test_a_failed_delete_keeps_the_message_for_a_retry(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    env.nodeclaim("nc", "i-0000000000000007")
    env.send(spot("i-0000000000000007"))
    deleted = sample(DELETED)

    def unavailable(*args: Any, **kwargs: Any) -> None:
        raise InternalError("the server is currently unable to handle the request")

    monkeypatch.setattr(env.server, "delete", unavailable)
    result = env.controller.reconcile()

    assert result.requeue
    assert env.exists("nc")
    assert env.queued() == 1  # in flight until its visibility timeout, then received again
    assert sample(DELETED) == deleted


def test_missing_queue_is_logged_and_retried_not_raised(
    clients: AWSClients, caplog: pytest.LogCaptureFixture
) -> None:
    env = Env(clients, create_queue=False)
    with caplog.at_level(logging.ERROR, logger="karpenter.aws.interruption"):
        first = env.controller.reconcile()
        second = env.controller.reconcile()
    assert first.requeue and second.requeue
    assert QUEUE in caplog.text and "NonExistentQueue" in caplog.text
    assert caplog.text.count("is unavailable") == 1  # one report per problem, not per retry

    env.queue_url = env.sqs.create_queue(QueueName=QUEUE)["QueueUrl"]
    env.nodeclaim("nc", "i-0000000000000008")
    env.send(spot("i-0000000000000008"))
    env.controller.reconcile()
    assert not env.exists("nc")
    assert env.controller.queue_url == env.queue_url


def test_a_queue_url_is_used_as_it_is(env: Env) -> None:
    controller = InterruptionController(env.ctx, env.sqs, env.queue_url, env.unavailable)
    env.nodeclaim("nc", "i-0000000000000009")
    env.send(spot("i-0000000000000009"))
    with Stubber(env.sqs) as stub:  # no GetQueueUrl may be made: the stub has none queued
        stub.add_response(
            "receive_message",
            {"Messages": []},
            {
                "QueueUrl": env.queue_url,
                "MaxNumberOfMessages": 10,
                "VisibilityTimeout": 20,
                "WaitTimeSeconds": 0,
                "AttributeNames": ["SentTimestamp"],
                "MessageAttributeNames": ["All"],
            },
        )
        controller.reconcile()
        stub.assert_no_pending_responses()


def _receive_params(url: str, wait: int) -> dict[str, Any]:
    return {
        "QueueUrl": url,
        "MaxNumberOfMessages": ctl.MAX_MESSAGES,
        "VisibilityTimeout": ctl.VISIBILITY_TIMEOUT,
        "WaitTimeSeconds": wait,
        "AttributeNames": ["SentTimestamp"],
        "MessageAttributeNames": ["All"],
    }


def test_receive_long_polls_with_the_configured_wait_on_a_wall_clock(env: Env) -> None:
    ctx = ControllerContext(
        kube=env.server,
        clock=WallClock(),
        cloud_provider=None,  # type: ignore[arg-type]
        recorder=env.recorder,
    )
    controller = InterruptionController(ctx, env.sqs, env.queue_url, None, wait_seconds=1)
    with Stubber(env.sqs) as stub:
        stub.add_response("receive_message", {}, _receive_params(env.queue_url, 1))
        result = controller.reconcile()
        stub.assert_no_pending_responses()
    assert result == Result.after(ctl.NEXT_BATCH)  # the long poll itself paced it


def test_without_long_poll_a_wall_clock_waits_between_empty_receives(env: Env) -> None:
    ctx = ControllerContext(
        kube=env.server,
        clock=WallClock(),
        cloud_provider=None,  # type: ignore[arg-type]
        recorder=env.recorder,
    )
    controller = InterruptionController(ctx, env.sqs, env.queue_url, None, wait_seconds=0)
    with Stubber(env.sqs) as stub:
        stub.add_response("receive_message", {}, _receive_params(env.queue_url, 0))
        result = controller.reconcile()
    assert result.requeue_after >= 1.0  # not a tight loop on an empty queue


def test_receive_never_blocks_on_a_virtual_clock(env: Env) -> None:
    controller = InterruptionController(env.ctx, env.sqs, env.queue_url, None)  # default 20 s
    with Stubber(env.sqs) as stub:
        stub.add_response("receive_message", {}, _receive_params(env.queue_url, 0))
        result = controller.reconcile()
        stub.assert_no_pending_responses()
    # the next poll comes one long-poll period later in virtual time
    assert result == Result.after(float(ctl.WAIT_SECONDS))


def test_wait_outside_sqs_limits_is_rejected(env: Env) -> None:
    with pytest.raises(ValueError, match="wait_seconds"):
        InterruptionController(env.ctx, env.sqs, QUEUE, None, wait_seconds=21)


@pytest.mark.parametrize(
    ("code", "forgets_url"),
    [("AWS.SimpleQueueService.NonExistentQueue", True), ("AccessDenied", False)],
)
def test_receive_errors_are_logged_and_retried(
    env: Env, caplog: pytest.LogCaptureFixture, code: str, forgets_url: bool
) -> None:
    env.controller.queue_url = env.queue_url
    with Stubber(env.sqs) as stub, caplog.at_level(logging.WARNING):
        stub.add_client_error("receive_message", service_error_code=code, service_message="nope")
        result = env.controller.reconcile()
    assert result == Result.after(ctl.RETRY_AFTER)
    assert code in caplog.text
    assert (env.controller.queue_url is None) == forgets_url


def test_a_failed_delete_message_is_retried_by_redelivery(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    env.controller.queue_url = env.queue_url
    body = spot("i-000000000000000a")
    deleted = sample(DELETED)
    with Stubber(env.sqs) as stub, caplog.at_level(logging.WARNING):
        stub.add_response(
            "receive_message",
            {"Messages": [{"MessageId": "m-1", "ReceiptHandle": "rh-1", "Body": body}]},
        )
        stub.add_client_error("delete_message", service_error_code="ReceiptHandleIsInvalid")
        result = env.controller.reconcile()
    assert result.requeue
    assert sample(DELETED) == deleted
    assert "ReceiptHandleIsInvalid" in caplog.text


def register(
    manager: Manager,
    ctx: ControllerContext,
    clients: AWSClients,
    settings: AWSSettings,
    unavailable: UnavailableOfferings,
) -> None:
    """The plugin's interruption controllers, registered as the operator registers them:
    its karpenter_controllers specs, on a context whose base provider is the AWS one."""
    from karpenter_aws.controllers import CONTROLLERS
    from karpenter_aws.provider import AWSCloudProvider

    from karpenter_core.operator.controllers import register_all
    from karpenter_core.plugins import PluginContributions

    provider = AWSCloudProvider(
        clients, settings, ctx.kube, ctx.clock, ctx.recorder, unavailable=unavailable
    )
    wanted = tuple(spec for spec in CONTROLLERS if spec.name in (NAME, INSTANCE_STATUS_NAME))
    ctx.base_cloud_provider = provider
    ctx.plugins = PluginContributions(controllers=wanted)
    registration = register_all(manager, ctx, packages=[], strict=True)
    assert all(name in (NAME, INSTANCE_STATUS_NAME) for name in registration.controllers)


def test_register_adds_the_queue_controller_only_with_a_queue(clients: AWSClients) -> None:
    env = Env(clients)
    with_queue = Manager(env.clock, env.server)
    register(
        with_queue,
        env.ctx,
        clients,
        AWSSettings(cluster_name="test", interruption_queue=QUEUE),
        env.unavailable,
    )
    without = Manager(env.clock, env.server)
    register(without, env.ctx, clients, AWSSettings(cluster_name="test"), env.unavailable)

    assert {c.name for c in with_queue.controllers} == {NAME, INSTANCE_STATUS_NAME}
    assert {c.name for c in without.controllers} == {INSTANCE_STATUS_NAME}


def test_registered_controller_handles_messages_under_the_manager(clients: AWSClients) -> None:
    env = Env(clients)
    manager = Manager(env.clock, env.server)
    register(
        manager,
        env.ctx,
        clients,
        AWSSettings(cluster_name="test", interruption_queue=QUEUE),
        env.unavailable,
    )
    env.nodeclaim("nc", "i-000000000000000b")
    env.send(spot("i-000000000000000b"))

    manager.run_for(1.0)

    assert not env.exists("nc")
    assert env.queued() == 0
    assert manager.controller(NAME).errors == 0
    assert manager.controller(INSTANCE_STATUS_NAME).errors == 0


def test_a_queue_created_after_start_is_found_within_the_retry_cap(clients: AWSClients) -> None:
    env = Env(clients, create_queue=False)
    manager = Manager(env.clock, env.server)
    register(
        manager,
        env.ctx,
        clients,
        AWSSettings(cluster_name="test", interruption_queue=QUEUE),
        env.unavailable,
    )
    manager.run_for(3 * RETRY_CAP)  # backed off to the cap by now
    assert manager.controller(NAME).errors == 0  # retries are not reconcile errors

    env.queue_url = env.sqs.create_queue(QueueName=QUEUE)["QueueUrl"]
    env.nodeclaim("nc", "i-000000000000000c")
    env.send(spot("i-000000000000000c"))
    manager.run_for(RETRY_CAP + 1)

    assert not env.exists("nc")
    assert env.queued() == 0
