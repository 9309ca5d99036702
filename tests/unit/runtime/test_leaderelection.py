"""Leader election on a Lease: client-go semantics, on the in-memory API server and a
virtual clock (deterministic: time moves only when the test says)."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from karpenter_core.kube.client import ApiError, KubeClient
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.leaderelection import (
    DEFAULT_LEASE_DURATION,
    DEFAULT_RENEW_DEADLINE,
    DEFAULT_RETRY_PERIOD,
    LEASE,
    LeaderElectionConfig,
    LeaderElectionError,
    LeaderElector,
    LeadershipLost,
    own_namespace,
)
from karpenter_core.sim.apiserver import InMemoryApiServer

NS = "karpenter"


class Recorder:
    def __init__(self) -> None:
        self.started = 0
        self.stopped = 0
        self.leaders: list[str] = []


def elector(
    client: KubeClient, clock: VirtualClock, identity: str, **cfg: Any
) -> tuple[LeaderElector, Recorder]:
    rec = Recorder()

    def started() -> None:
        rec.started += 1

    def stopped() -> None:
        rec.stopped += 1

    e = LeaderElector(
        client,
        LeaderElectionConfig(namespace=NS, identity=identity, **cfg),
        clock,
        on_started_leading=started,
        on_stopped_leading=stopped,
        on_new_leader=rec.leaders.append,
        rng=random.Random(0),
    )
    return e, rec


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def server(clock: VirtualClock) -> InMemoryApiServer:
    server = InMemoryApiServer(clock)
    server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    return server


def lease(server: InMemoryApiServer) -> dict[str, Any]:
    return server.get(LEASE, "karpenter-leader-election", NS)


def test_first_candidate_creates_the_lease_with_upstream_defaults(
    server: InMemoryApiServer, clock: VirtualClock
) -> None:
    a, rec = elector(server, clock, "a")
    a.start()
    clock.advance(0)
    spec = lease(server)["spec"]
    assert a.is_leader
    assert rec.started == 1
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert spec["acquireTime"] == spec["renewTime"]


def test_leader_renews_every_retry_period_and_keeps_its_acquire_time(
    server: InMemoryApiServer, clock: VirtualClock
) -> None:
    a, _ = elector(server, clock, "a")
    a.start()
    clock.advance(0)
    first = lease(server)["spec"]
    clock.advance(2.0)
    second = lease(server)["spec"]
    assert second["acquireTime"] == first["acquireTime"]
    assert second["renewTime"] > first["renewTime"]
    assert a.attempts == 2


def test_standby_does_not_take_a_lease_that_is_being_renewed(
    server: InMemoryApiServer, clock: VirtualClock
) -> None:
    a, _ = elector(server, clock, "a")
    b, rec_b = elector(server, clock, "b")
    a.start()
    clock.advance(0)
    b.start()
    clock.advance(120.0)
    assert a.is_leader
    assert not b.is_leader
    assert rec_b.started == 0
    assert rec_b.leaders == ["a"]
    assert lease(server)["spec"]["holderIdentity"] == "a"


def test_standby_takes_over_only_after_the_lease_duration_when_the_leader_dies(
    server: InMemoryApiServer, clock: VirtualClock
) -> None:
    a, _ = elector(server, clock, "a", release_on_cancel=False)
    b, rec_b = elector(server, clock, "b")
    a.start()
    clock.advance(0)
    b.start()
    clock.advance(1.0)
    # The leader dies without releasing (kill -9): its timers stop, the lease stays.
    a.stop()
    died_at = clock.monotonic()
    while not b.is_leader:
        assert clock.step()
    waited = clock.monotonic() - died_at
    assert waited >= 15.0 - 2.0  # b first observed the record up to one renewal before
    assert waited <= 15.0 + 2.0 * (1 + 1.2)
    spec = lease(server)["spec"]
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1
    assert rec_b.started == 1


def test_expiry_uses_the_candidates_own_observation_not_the_record_timestamps(
    server: InMemoryApiServer, clock: VirtualClock
) -> None:
    # A holder whose clock is far behind wrote an ancient renewTime; it still gets its
    # full lease duration from the moment this candidate first sees the record.
    server.create(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "karpenter-leader-election", "namespace": NS},
            "spec": {
                "holderIdentity": "skewed",
                "leaseDurationSeconds": 15,
                "renewTime": "2000-01-01T00:00:00.000000Z",
                "acquireTime": "2000-01-01T00:00:00.000000Z",
                "leaseTransitions": 3,
            },
        }
    )
    b, _ = elector(server, clock, "b")
    assert not b.try_acquire_or_renew()
    clock.advance(14.0)
    assert not b.try_acquire_or_renew()
    clock.advance(1.0)
    assert b.try_acquire_or_renew()
    assert lease(server)["spec"]["leaseTransitions"] == 4


def test_graceful_stop_releases_the_lease_so_the_standby_takes_over_at_its_next_retry(
    server: InMemoryApiServer, clock: VirtualClock
) -> None:
    a, _ = elector(server, clock, "a")
    b, _ = elector(server, clock, "b")
    a.start()
    clock.advance(0)
    b.start()
    clock.advance(3.0)
    a.stop()
    spec = lease(server)["spec"]
    assert spec["holderIdentity"] in ("", None)
    assert spec["leaseDurationSeconds"] == 1
    stopped_at = clock.monotonic()
    while not b.is_leader:
        assert clock.step()
    assert clock.monotonic() - stopped_at <= 2.0 * (1 + 1.2)


def test_release_does_not_touch_a_lease_someone_else_holds(
    server: InMemoryApiServer, clock: VirtualClock
) -> None:
    a, _ = elector(server, clock, "a")
    b, _ = elector(server, clock, "b")
    assert a.try_acquire_or_renew()
    assert not b.release()
    assert lease(server)["spec"]["holderIdentity"] == "a"


class FailingClient:
    """Delegates to a server; ``fail`` makes every call an API error (a partition)."""

    def __init__(self, inner: InMemoryApiServer) -> None:
        self.inner = inner
        self.fail = False
        self.before_update: Callable[[], None] | None = None

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            if self.fail:
                raise ApiError("connection refused", code=503)
            if name == "update" and self.before_update is not None:
                hook, self.before_update = self.before_update, None
                hook()
            return attr(*args, **kwargs)

        return call


def test_leader_that_cannot_renew_for_the_renew_deadline_stops_leading(
    server: InMemoryApiServer, clock: VirtualClock
) -> None:
    client = FailingClient(server)
    a, rec = elector(client, clock, "a")  # type: ignore[arg-type]
    a.start()
    clock.advance(0)
    client.fail = True
    clock.advance(9.0)
    assert a.is_leader  # still inside the renew deadline
    clock.advance(4.0)
    assert not a.is_leader
    assert a.lost
    assert rec.stopped == 1
    # It does not campaign again: the process is expected to exit and restart.
    client.fail = False
    clock.advance(60.0)
    assert not a.is_leader
    assert rec.started == 1


def test_a_renewal_that_recovers_within_the_deadline_keeps_leadership(
    server: InMemoryApiServer, clock: VirtualClock
) -> None:
    client = FailingClient(server)
    a, rec = elector(client, clock, "a")  # type: ignore[arg-type]
    a.start()
    clock.advance(0)
    client.fail = True
    clock.advance(7.0)
    client.fail = False
    clock.advance(30.0)
    assert a.is_leader
    assert rec.stopped == 0


def test_of_two_candidates_racing_for_a_free_lease_exactly_one_wins(
    server: InMemoryApiServer, clock: VirtualClock
) -> None:
    a, _ = elector(server, clock, "a")
    assert a.try_acquire_or_renew()
    assert a.release()  # free for anyone
    client = FailingClient(server)
    b, _ = elector(client, clock, "b")  # type: ignore[arg-type]
    c, _ = elector(server, clock, "c")
    # c writes the lease between b's read and b's write: b's write conflicts.
    client.before_update = lambda: c.try_acquire_or_renew() and None
    assert not b.try_acquire_or_renew()
    assert lease(server)["spec"]["holderIdentity"] == "c"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"namespace": ""}, "set --leader-election-namespace"),
        ({"namespace": NS, "lease_duration": 10.0}, "must be greater than the renew deadline"),
        ({"namespace": NS, "retry_period": 9.0}, "x the retry period"),
        ({"namespace": NS, "retry_period": 0.0}, "retry_period must be positive"),
    ],
)
def test_inconsistent_configuration_is_rejected_with_the_reason(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(LeaderElectionError, match=message):
        LeaderElectionConfig(identity="x", **kwargs)


def test_own_namespace_prefers_pod_namespace_then_the_service_account_file(
    tmp_path: Path,
) -> None:
    ns_file = tmp_path / "namespace"
    assert own_namespace({}, ns_file) is None
    ns_file.write_text("from-file\n")
    assert own_namespace({}, ns_file) == "from-file"
    assert own_namespace({"POD_NAMESPACE": "from-env"}, ns_file) == "from-env"


# ------------------------------------------------------------------ proving leadership


def test_check_passes_while_the_last_renewal_is_within_the_renew_deadline(
    server: InMemoryApiServer, clock: VirtualClock
) -> None:
    a, _ = elector(server, clock, "a")
    a.start()
    clock.advance(0)
    clock.advance(30.0)  # renewing every retry period
    a.check()  # does not raise


def test_check_refuses_a_candidate_that_never_led(
    server: InMemoryApiServer, clock: VirtualClock
) -> None:
    a, _ = elector(server, clock, "a")
    a.start()
    clock.advance(0)
    b, rec = elector(server, clock, "b")
    b.start()
    clock.advance(0)
    with pytest.raises(LeadershipLost):
        b.check()
    assert rec.stopped == 0  # never led, so nothing was lost


def test_after_a_pause_past_the_renew_deadline_check_refuses_and_leadership_ends(
    server: InMemoryApiServer, clock: VirtualClock
) -> None:
    a, rec = elector(server, clock, "a")
    a.start()
    clock.advance(0)
    clock.sleep(10.5)  # SIGSTOP: time passes, no timer of this process runs
    with pytest.raises(LeadershipLost):
        a.check()
    assert a.lost and not a.is_leader
    assert rec.stopped == 1
    with pytest.raises(LeadershipLost):
        a.check()
    assert rec.stopped == 1  # reported once


def test_after_a_pause_the_first_tick_gives_up_without_another_attempt(
    server: InMemoryApiServer, clock: VirtualClock
) -> None:
    a, rec = elector(server, clock, "a")
    a.start()
    clock.advance(0)
    attempts = a.attempts
    clock.sleep(20.0)  # paused past the deadline (and past the lease duration)
    clock.advance(0)  # the overdue renew timer fires on waking
    assert a.attempts == attempts
    assert a.lost and rec.stopped == 1


def test_a_cut_off_leader_stops_acting_well_before_the_standby_takes_over(
    server: InMemoryApiServer, clock: VirtualClock
) -> None:
    """The invariant behind the write guard: the old leader's check refuses from at most
    ``renew_deadline`` after its last renewal, which is at least ``lease_duration -
    renew_deadline`` before any standby can hold the lease."""
    client = FailingClient(server)
    a, _ = elector(client, clock, "a")  # type: ignore[arg-type]
    a.start()
    clock.advance(0)
    b, b_rec = elector(server, clock, "b")
    b.start()
    clock.advance(0.1)
    client.fail = True  # a partition: a's renewals fail from now on
    cut_at = clock.monotonic()
    refused_at = None
    while b_rec.started == 0:
        clock.advance(0.25)
        if refused_at is None:
            try:
                a.check()
            except LeadershipLost:
                refused_at = clock.monotonic()
    assert refused_at is not None
    assert refused_at - cut_at <= DEFAULT_RENEW_DEADLINE + DEFAULT_RETRY_PERIOD
    assert clock.monotonic() - refused_at >= DEFAULT_LEASE_DURATION - DEFAULT_RENEW_DEADLINE - 0.5
