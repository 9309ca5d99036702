"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's semantics.

Several ``karpenter serve`` replicas may run; only one may act (launch, delete, drain), or
two replicas would both launch capacity for the same pending pods. Like client-go's
``leaderelection`` package (which controller-runtime, and so upstream Karpenter, uses):

* a candidate reads the Lease; it may take it when nobody holds it, when it already holds
  it, or when the holder has not renewed it for ``leaseDurationSeconds`` *as observed by
  this candidate's own clock* (the record's timestamps are written by other machines and
  are never compared with local time, so clock skew cannot steal a lease);
* writes go through optimistic concurrency (the Lease's ``resourceVersion``), so of two
  candidates racing for an expired lease exactly one wins and the other sees a Conflict;
* a candidate retries every ``retry_period`` with up to 1.2x jitter (client-go's
  ``JitterFactor``) so replicas do not retry in lock-step;
* the leader renews every ``retry_period``; once ``renew_deadline`` has passed since the
  start of its last successful renewal it stops leading (the operator then exits, as
  controller-runtime's manager does, and a restart rejoins as a candidate). The deadline is
  counted from the last *success*, on the monotonic clock, so a process that was paused
  (SIGSTOP, a VM freeze, a long GC) gives up at the first look after waking, without
  another attempt, as client-go's renew loop does;
* :meth:`LeaderElector.check` is the same test on demand: ``serve`` calls it before
  every write it sends and every reconcile it starts, so a leader that cannot prove its
  lease is still its own stops acting ``lease_duration - renew_deadline`` (5 s by default)
  before any standby may take the lease over — a standby waits a full
  ``lease_duration`` after it last saw the record change;
* on a graceful stop the leader releases the Lease (empty holder, 1 s duration) so a
  standby takes over at its next retry instead of waiting out the lease.

Defaults are upstream's: lease ``karpenter-leader-election``, 15 s lease, 10 s renew
deadline, 2 s retry period.

The elector is driven only by :class:`~karpenter_core.runtime.clock.Clock` timers, so tests
run it deterministically on a ``VirtualClock`` against the in-memory API server, and
``serve`` runs it on its own ``WallClock`` (a dedicated timer thread, so slow lease calls
never delay controller timers, and controller work never delays a renewal).
"""

from __future__ import annotations

import logging
import os
import random
import socket
import threading
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from attrs import field, frozen

from karpenter_core.kube.client import ApiError, Conflict, KubeClient, NotFound, Obj
from karpenter_core.runtime.clock import Clock, TimerHandle, format_micro_time

__all__ = [
    "DEFAULT_LEASE_DURATION",
    "DEFAULT_LEASE_NAME",
    "DEFAULT_RENEW_DEADLINE",
    "DEFAULT_RETRY_PERIOD",
    "JITTER_FACTOR",
    "LEASE",
    "LeaderElectionConfig",
    "LeaderElectionError",
    "LeaderElector",
    "LeadershipLost",
    "default_identity",
    "own_namespace",
]

log = logging.getLogger("karpenter.leaderelection")

LEASE = ("coordination.k8s.io/v1", "Lease")
DEFAULT_LEASE_NAME = "karpenter-leader-election"
DEFAULT_LEASE_DURATION = 15.0
DEFAULT_RENEW_DEADLINE = 10.0
DEFAULT_RETRY_PERIOD = 2.0
JITTER_FACTOR = 1.2
RELEASED_LEASE_DURATION = 1

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


class LeaderElectionError(ValueError):
    """Leader election is misconfigured (no namespace, inconsistent timings)."""


class LeadershipLost(ApiError):
    """This replica does not (or can no longer prove it does) hold the lease: the write or
    reconcile asked for must not happen."""

    code = 503
    reason = "LeadershipLost"


def own_namespace(
    environ: Mapping[str, str] | None = None, namespace_file: Path = SERVICE_ACCOUNT_NAMESPACE
) -> str | None:
    """The namespace this process runs in: ``POD_NAMESPACE`` (the chart sets it from the
    downward API), else the service account's namespace file, else None (not in a pod)."""
    env = os.environ if environ is None else environ
    ns = (env.get("POD_NAMESPACE") or "").strip()
    if ns:
        return ns
    try:
        text = namespace_file.read_text().strip()
    except OSError:
        return None
    return text or None


def default_identity() -> str:
    """``<hostname>_<uuid>`` as controller-runtime does: the pod name plus a per-process
    suffix, so a restarted container never mistakes the old holder's lease for its own."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def _check_positive(instance: Any, attribute: Any, value: float) -> None:
    if value <= 0:
        raise LeaderElectionError(
            f"leader election: {attribute.name} must be positive, got {value}"
        )


@frozen
class LeaderElectionConfig:
    """Where the Lease lives, who we are, and client-go's three timings (seconds)."""

    namespace: str
    identity: str = field(factory=default_identity)
    name: str = DEFAULT_LEASE_NAME
    lease_duration: float = field(default=DEFAULT_LEASE_DURATION, validator=_check_positive)
    renew_deadline: float = field(default=DEFAULT_RENEW_DEADLINE, validator=_check_positive)
    retry_period: float = field(default=DEFAULT_RETRY_PERIOD, validator=_check_positive)
    release_on_cancel: bool = True
    labels: Mapping[str, str] = field(factory=dict)

    def __attrs_post_init__(self) -> None:
        if not self.namespace:
            raise LeaderElectionError(
                "leader election needs a namespace: set --leader-election-namespace "
                "(LEADER_ELECTION_NAMESPACE) or run in a pod (POD_NAMESPACE)"
            )
        if not self.identity:
            raise LeaderElectionError("leader election needs a non-empty identity")
        # client-go's NewLeaderElector checks, with its messages' meaning.
        if self.lease_duration <= self.renew_deadline:
            raise LeaderElectionError(
                f"leader election: lease duration ({self.lease_duration}s) must be greater "
                f"than the renew deadline ({self.renew_deadline}s)"
            )
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise LeaderElectionError(
                f"leader election: renew deadline ({self.renew_deadline}s) must be greater "
                f"than {JITTER_FACTOR} x the retry period ({self.retry_period}s)"
            )


Callback = Callable[[], None]


class LeaderElector:
    """Campaigns for, holds and releases one Lease (see the module docstring).

    ``on_started_leading`` / ``on_stopped_leading`` run on the clock's timer thread and
    should only signal (set an event); ``on_new_leader(identity)`` reports every change of
    holder this candidate observes. After it stops leading the elector does not campaign
    again: the process is expected to exit, as upstream's does.
    """

    def __init__(
        self,
        client: KubeClient,
        config: LeaderElectionConfig,
        clock: Clock,
        *,
        on_started_leading: Callback | None = None,
        on_stopped_leading: Callback | None = None,
        on_new_leader: Callable[[str], None] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.config = config
        self.clock = clock
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._rng = rng or random.Random()
        self._lock = threading.RLock()
        self._leading = False
        self._stopped = False
        self._lost = False
        self._timer: TimerHandle | None = None
        self._observed_spec: dict[str, Any] | None = None
        self._observed_rv: str | None = None
        self._observed_at: float = 0.0
        self._renewed_at: float | None = None
        """Monotonic start of the last successful acquire/renew while leading."""
        self._reported_leader: str | None = None
        self.attempts = 0

    # ------------------------------------------------------------------ state

    @property
    def is_leader(self) -> bool:
        with self._lock:
            return self._leading

    @property
    def lost(self) -> bool:
        """True once this elector held the lease and then failed to renew it."""
        with self._lock:
            return self._lost

    @property
    def leader(self) -> str | None:
        """The holder this candidate last observed ("" or None when nobody holds it)."""
        with self._lock:
            if self._observed_spec is None:
                return None
            return str(self._observed_spec.get("holderIdentity") or "") or None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Campaign now (and keep going on the clock's timers)."""
        with self._lock:
            if self._stopped:
                raise RuntimeError("a stopped LeaderElector cannot be restarted")
            self._schedule(0.0)

    def stop(self) -> None:
        """Stop campaigning/renewing; release the Lease if held and ``release_on_cancel``."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            if self._timer is not None:
                self._timer.cancel()
            was_leading = self._leading
            self._leading = False
        if was_leading and self.config.release_on_cancel:
            self.release()

    def _schedule(self, delay: float) -> None:
        self._timer = self.clock.call_later(delay, self._tick)

    def _jittered(self, period: float) -> float:
        return period * (1.0 + self._rng.random() * JITTER_FACTOR)

    def _expired(self, now: float) -> bool:
        """Leading, but the last successful renewal started ``renew_deadline`` ago or more."""
        renewed = self._renewed_at
        return renewed is None or now - renewed >= self.config.renew_deadline

    def _lose(self) -> bool:
        """Stop leading for good (under the lock); True when this call made the change."""
        if not self._leading:
            return False
        self._leading = False
        self._lost = True
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
        return True

    def _report_lost(self, why: str) -> None:
        log.error(
            "leader election lost: lease %s/%s %s", self.config.namespace, self.config.name, why
        )
        if self._on_stopped is not None:
            self._on_stopped()

    def check(self) -> None:
        """Raise :class:`LeadershipLost` unless this replica leads and its last successful
        renewal started less than ``renew_deadline`` ago. A failed check after leading ends
        the leadership at once (callbacks run on the caller's thread)."""
        now = self.clock.monotonic()
        with self._lock:
            if self._leading and not self._expired(now):
                return
            was_leading = self._lose()
            renewed = self._renewed_at
        if was_leading:
            self._report_lost(
                f"not renewed for {now - (renewed or now):.1f}s (deadline "
                f"{self.config.renew_deadline:.0f}s): this process was paused or cut off"
            )
        raise LeadershipLost(
            f"not the leader of lease {self.config.namespace}/{self.config.name}",
        )

    def _tick(self) -> None:
        started_at = self.clock.monotonic()
        with self._lock:
            if self._stopped:
                return
            leading = self._leading
            # woken after a pause past the deadline: give up without another attempt
            late = leading and self._expired(started_at)
            if late:
                self._lose()
        if late:
            self._report_lost(
                f"not renewed within {self.config.renew_deadline:.0f}s (this process was "
                "paused or its renewals kept failing)"
            )
            return
        ok = self.try_acquire_or_renew()
        now = self.clock.monotonic()
        started = stopped = False
        with self._lock:
            if self._stopped:
                return
            if ok:
                self._renewed_at = started_at
                if not leading:
                    self._leading = True
                    started = True
                self._schedule(self.config.retry_period)
            elif not leading:
                self._schedule(self._jittered(self.config.retry_period))
            elif self._expired(now):
                stopped = self._lose()
            else:
                self._schedule(self.config.retry_period)
        if started:
            log.info("successfully acquired lease %s/%s", self.config.namespace, self.config.name)
            if self._on_started is not None:
                self._on_started()
        if stopped:
            self._report_lost(f"could not be renewed for {self.config.renew_deadline:.0f}s")

    # ------------------------------------------------------------------ one attempt

    def _spec(self, *, transitions: int, acquire: str) -> dict[str, Any]:
        now = format_micro_time(self.clock.now())
        return {
            "holderIdentity": self.config.identity,
            "leaseDurationSeconds": round(self.config.lease_duration),
            "acquireTime": acquire or now,
            "renewTime": now,
            "leaseTransitions": transitions,
        }

    def _observe(self, lease: Obj) -> None:
        spec = dict(lease.get("spec") or {})
        rv = str((lease.get("metadata") or {}).get("resourceVersion") or "")
        with self._lock:
            if spec != self._observed_spec:
                self._observed_spec = spec
                self._observed_at = self.clock.monotonic()
            self._observed_rv = rv
            holder = str(spec.get("holderIdentity") or "")
            changed = holder != self._reported_leader
            self._reported_leader = holder
        if changed and holder:
            if holder != self.config.identity:
                log.info("new leader elected: %s", holder)
            if self._on_new_leader is not None:
                self._on_new_leader(holder)

    def try_acquire_or_renew(self) -> bool:
        """One attempt, as client-go's ``tryAcquireOrRenew``: True when we hold the Lease."""
        self.attempts += 1
        cfg = self.config
        try:
            lease = self.client.get(LEASE, cfg.name, cfg.namespace)
        except NotFound:
            return self._create()
        except ApiError as e:
            log.warning("error retrieving lease %s/%s: %s", cfg.namespace, cfg.name, e)
            return False
        except Exception as e:  # transport errors must not kill the timer thread
            log.warning("error retrieving lease %s/%s: %s", cfg.namespace, cfg.name, e)
            return False
        self._observe(lease)
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        now = self.clock.monotonic()
        with self._lock:
            i_hold = holder == cfg.identity
            duration = float(spec.get("leaseDurationSeconds") or 0)
            valid = self._observed_at + duration > now
        if holder and not i_hold and valid:
            return False
        transitions = int(spec.get("leaseTransitions") or 0)
        if i_hold:
            new_spec = self._spec(
                transitions=transitions, acquire=str(spec.get("acquireTime") or "")
            )
        else:
            new_spec = self._spec(transitions=transitions + 1, acquire="")
        updated = dict(lease)
        updated["metadata"] = dict(lease.get("metadata") or {})
        updated["spec"] = new_spec
        try:
            result = self.client.update(updated)
        except Conflict:
            return False
        except Exception as e:
            log.warning("failed to update lease %s/%s: %s", cfg.namespace, cfg.name, e)
            return False
        self._observe(result)
        return True

    def _create(self) -> bool:
        cfg = self.config
        meta: dict[str, Any] = {"name": cfg.name, "namespace": cfg.namespace}
        if cfg.labels:
            meta["labels"] = dict(cfg.labels)
        lease = {
            "apiVersion": LEASE[0],
            "kind": LEASE[1],
            "metadata": meta,
            "spec": self._spec(transitions=0, acquire=""),
        }
        try:
            created = self.client.create(lease)
        except ApiError as e:  # AlreadyExists when another candidate won the race
            log.debug("could not create lease %s/%s: %s", cfg.namespace, cfg.name, e)
            return False
        except Exception as e:
            log.warning("could not create lease %s/%s: %s", cfg.namespace, cfg.name, e)
            return False
        self._observe(created)
        return True

    def release(self) -> bool:
        """Give the Lease up if we still hold it: empty holder and a 1 s duration, so the
        next candidate takes it at its next retry. Returns True when released."""
        cfg = self.config
        try:
            lease = self.client.get(LEASE, cfg.name, cfg.namespace)
        except Exception as e:
            log.warning("could not release lease %s/%s: %s", cfg.namespace, cfg.name, e)
            return False
        spec = lease.get("spec") or {}
        if str(spec.get("holderIdentity") or "") != cfg.identity:
            return False
        now = format_micro_time(self.clock.now())
        updated = dict(lease)
        updated["spec"] = {
            "holderIdentity": "",
            "leaseDurationSeconds": RELEASED_LEASE_DURATION,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": int(spec.get("leaseTransitions") or 0),
        }
        try:
            self.client.update(updated)
        except Exception as e:
            log.warning("could not release lease %s/%s: %s", cfg.namespace, cfg.name, e)
            return False
        log.info("released lease %s/%s", cfg.namespace, cfg.name)
        return True
