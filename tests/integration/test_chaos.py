"""Chaos: ``karpenter serve`` through faults of the API server and the network.

Each test runs real ``karpenter serve`` replicas against a real control plane
(``serve_harness.py``), provisions a Deployment of 200 pods, injects one fault
mid-provisioning and then asserts what an operator of a production cluster needs:

* every pod is bound to a Karpenter node within a bound after the fault ends;
* no duplicate NodeClaims (consolidation is off, so a duplicate would stay as a node
  running none of the pods) and no two NodeClaims for one node;
* no NodeClaim without a Node two minutes after the pods settle, and no Node without a
  NodeClaim (nothing leaked); every NodeClaim registered with its Node;
* readiness tells the truth while the fault lasts (``/readyz`` is not 200 while the
  API server cannot be reached);
* the log volume during the fault is bounded (rate-limited warnings, no tracebacks).

The faults: kube-apiserver killed with SIGKILL and restarted on the same etcd; a
fault-injecting TCP proxy between the operator and the API server (latency, truncated
bodies, resets, half-open connections); the leader stopped with SIGSTOP while a standby
waits, with the API server's audit log proving the two never wrote at once; and a 60 s
outage. Replicas that exit (losing the lease exits 1, as upstream) are restarted by a
:class:`Supervisor` playing the kubelet's ``restartPolicy: Always`` with its
CrashLoopBackOff delays.

Each test prints one ``CHAOS`` line with its measured recovery time and counts (``pytest
-s`` shows them).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from faultproxy import FaultProxy
from serve_harness import (
    Cluster,
    Serve,
    http_get,
    metric,
    running_cluster,
    wait_for,
)

from karpenter_core.kube.client import ApiError

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

APP = "web"
PODS = 200
CPU = "250m"  # about fourteen pods to a 4-vCPU node: some fifteen nodes
SETTLE = 240.0
"""Bound on the time from the end of a fault to every pod bound."""
NODE_GRACE = 120.0
"""No NodeClaim may be without its Node for longer than this once pods settle."""
FAULT_LOG_LINES = 120
"""Bound on the lines one replica logs while a fault lasts (about one a second at most)."""
FROZEN = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"}


# --------------------------------------------------------------------------- helpers


class Supervisor:
    """Restarts a replica when it exits, as the kubelet does for ``restartPolicy: Always``:
    after 10 s, doubling per restart up to 5 minutes (CrashLoopBackOff)."""

    def __init__(self, replica: Serve) -> None:
        self.replica = replica
        self.exits: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Supervisor:
        self._thread.start()
        return self

    def _run(self) -> None:
        delay = 10.0
        while not self._stop.wait(0.2):
            proc = self.replica.proc
            if proc is None or proc.poll() is None:
                continue
            self.exits.append(proc.returncode)
            if self._stop.wait(delay):
                return
            delay = min(delay * 2, 300.0)
            self.replica.launch()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


class Prober:
    """Samples a replica's ``/readyz`` twice a second: (monotonic time, HTTP status), 0 when
    nothing answers (the process is down)."""

    def __init__(self, replica: Serve) -> None:
        self.replica = replica
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            status, _ = http_get(self.replica.health_port, "/readyz")
            self.samples.append((time.monotonic(), status))

    def between(self, start: float, end: float) -> list[int]:
        return [status for t, status in self.samples if start <= t <= end]

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(15)


class LogWindow:
    """Counts the lines a replica logs between :meth:`open` and :meth:`close`."""

    def __init__(self, replica: Serve) -> None:
        self.replica = replica
        self._start = 0
        self.text = ""

    def _size(self) -> int:
        try:
            return self.replica.log.stat().st_size
        except FileNotFoundError:
            return 0

    def open(self) -> None:
        self._start = self._size()

    def close(self) -> int:
        with self.replica.log.open("rb") as f:
            f.seek(self._start)
            self.text = f.read().decode(errors="replace")
        return len(self.text.splitlines())


@contextlib.contextmanager
def replicas(cluster: Cluster, log_dir: Path) -> Iterator[Callable[..., Serve]]:
    """``start(name, *flags, env=..., supervise=True)``: replicas killed at the end, their
    log tails printed (pytest shows them when a test fails)."""
    started: list[tuple[Serve, Supervisor | None]] = []

    def start(
        name: str, *extra: str, env: dict[str, str] | None = None, supervise: bool = True
    ) -> Serve:
        replica = Serve(cluster, log_dir, name, *extra, env=env)
        replica.start()
        supervisor = Supervisor(replica).start() if supervise else None
        started.append((replica, supervisor))
        return replica

    try:
        yield start
    finally:
        for replica, supervisor in started:
            if supervisor is not None:
                supervisor.stop()
            with contextlib.suppress(Exception):
                if replica.proc is not None:
                    os.kill(replica.proc.pid, signal.SIGCONT)
            if not replica.exited():
                replica.kill9()
            print(f"--- {replica.log.name} (last lines)\n{replica.log_tail(60)}")
        for process in cluster.cp.processes:
            print(f"--- {process.name} (last lines)\n{process.log_tail(25)}")


def provisioning_started(cluster: Cluster) -> bool:
    """Some NodeClaims exist and some pods are still pending: the middle of provisioning."""
    return bool(cluster.nodeclaims()) and bool(cluster.pending_pods())


def settle(cluster: Cluster, since: float, replicas: int = PODS) -> float:
    """Wait until every pod is bound; returns the seconds since ``since``."""

    def bound() -> bool:
        try:
            return cluster.all_bound_to_karpenter_nodes(APP, replicas)
        except ApiError:  # the test's own reads right after a restart: ask again
            return False

    try:
        wait_for(bound, f"all {replicas} pods bound", deadline=SETTLE)
    except AssertionError:
        print(describe(cluster))
        raise
    return time.monotonic() - since


def describe(cluster: Cluster) -> str:
    """What a failed wait needs to be understood: pending pods and why, nodes, NodeClaims."""
    lines = []
    for p in cluster.pods(APP):
        if (p.get("spec") or {}).get("nodeName"):
            continue
        conds = {c["type"]: c for c in (p.get("status") or {}).get("conditions") or []}
        sched = conds.get("PodScheduled") or {}
        lines.append(
            f"pending {p['metadata']['name']}: {sched.get('reason')} {sched.get('message')} "
            f"nominated={(p.get('status') or {}).get('nominatedNodeName')}"
        )
    for n in cluster.karpenter_nodes():
        ready = [
            c.get("status")
            for c in (n.get("status") or {}).get("conditions") or []
            if c.get("type") == "Ready"
        ]
        taints = [t.get("key") for t in (n.get("spec") or {}).get("taints") or []]
        lines.append(f"node {n['metadata']['name']}: ready={ready} taints={taints}")
    for c in cluster.nodeclaims():
        conds = {
            x["type"]: f"{x.get('status')}@{x.get('lastTransitionTime')}"
            for x in (c.get("status") or {}).get("conditions") or []
        }
        lines.append(
            f"nodeclaim {c['metadata']['name']} created {c['metadata'].get('creationTimestamp')}"
            f" node={(c.get('status') or {}).get('nodeName')}: {conds}"
        )
    return "\n".join(lines[:120])


def log_lines_naming(log_dir: Path, names: list[str], limit: int = 80) -> str:
    """Every replica's log lines that name one of ``names`` (a failure's evidence: who
    created, launched and registered the NodeClaims in question, and when)."""
    out = []
    for log in sorted(log_dir.glob("serve-*.log")):
        for line in log.read_text(errors="replace").splitlines():
            if any(n in line for n in names):
                out.append(f"{log.name}: {line[:400]}")
    return "\n".join(out[-limit:])


def check_nothing_duplicated_or_leaked(
    cluster: Cluster, replicas: int = PODS, log_dir: Path | None = None
) -> int:
    """The invariants of the module docstring; returns the number of NodeClaims. A failure
    prints the NodeClaims' history and, given ``log_dir``, the replicas' log lines about
    the NodeClaims at fault."""
    try:
        return _check_nothing_duplicated_or_leaked(cluster, replicas)
    except AssertionError as e:
        print(describe(cluster))
        if log_dir is not None:
            names = re.findall(r"default-[a-z0-9]{5}", str(e))
            print(f"--- log lines naming {names}\n{log_lines_naming(log_dir, names)}")
        raise


def _check_nothing_duplicated_or_leaked(cluster: Cluster, replicas: int) -> int:

    def every_claim_has_its_node() -> bool:
        claims = cluster.nodeclaims()
        provider_ids = {n["spec"].get("providerID") for n in cluster.karpenter_nodes()}
        return all((c.get("status") or {}).get("providerID") in provider_ids for c in claims)

    wait_for(every_claim_has_its_node, "every NodeClaim to have its Node", deadline=NODE_GRACE)
    claims = cluster.nodeclaims()
    nodes = cluster.karpenter_nodes()
    claim_ids = [c["status"]["providerID"] for c in claims]
    assert len(claim_ids) == len(set(claim_ids)), "two NodeClaims for one node"
    assert sorted(n["spec"]["providerID"] for n in nodes) == sorted(claim_ids), "leaked nodes"
    unregistered = [c["metadata"]["name"] for c in claims if not c["status"].get("nodeName")]
    assert unregistered == [], f"NodeClaims with a Node but never registered: {unregistered}"
    used = {p["spec"]["nodeName"] for p in cluster.pods(APP)}
    idle = [c["metadata"]["name"] for c in claims if c["status"].get("nodeName") not in used]
    assert idle == [], f"NodeClaims running none of the pods (duplicates): {idle}"
    assert len(cluster.pods(APP)) == replicas
    return len(claims)


def check_log(window: LogWindow, lines: int) -> None:
    assert lines <= FAULT_LOG_LINES, f"{lines} log lines during the fault:\n{window.text[-3000:]}"
    assert "Traceback" not in window.text, window.text[-3000:]


def report(name: str, **figures: Any) -> None:
    shown = ", ".join(
        f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}" for k, v in figures.items()
    )
    print(f"CHAOS {name}: {shown}")


# --------------------------------------------------------------------------- the faults


def test_kube_apiserver_killed_and_restarted_mid_provisioning(tmp_path: Path) -> None:
    """The stall this suite was written for: with the API server gone for ~16 s the
    operator's watches broke and its relists found its own NodeClaims already cached, so
    the launch controller was never told of them and nothing was launched again."""
    with running_cluster() as cluster, replicas(cluster, tmp_path) as start:
        # one replica without leader election: the informers alone must recover (with
        # election on, losing the lease would exit and a restart would hide a stall)
        op = start("a", "--disable-leader-election")
        prober = Prober(op)
        cluster.apply_nodepool("default", disruption=FROZEN)
        cluster.apply_deployment(APP, PODS, cpu=CPU)
        wait_for(lambda: provisioning_started(cluster), "provisioning to start")
        window = LogWindow(op)
        window.open()
        killed = time.monotonic()
        cluster.cp.kill_apiserver()
        time.sleep(16)
        cluster.cp.start_apiserver()
        restarted = time.monotonic()
        lines = window.close()
        recovered = settle(cluster, restarted)
        prober.stop()
        claims = check_nothing_duplicated_or_leaked(cluster, log_dir=tmp_path)
        down = prober.between(killed + 3, restarted - 1)
        assert down and all(s != 200 for s in down), f"/readyz while the API was down: {down}"
        assert http_get(op.health_port, "/readyz")[0] == 200
        assert not op.exited()
        check_log(window, lines)
        report(
            "apiserver-kill",
            down_s=restarted - killed,
            recovered_s=recovered,
            nodeclaims=claims,
            readyz_samples_down=len(down),
            log_lines=lines,
        )


def test_network_faults_between_operator_and_api_server(tmp_path: Path) -> None:
    """Latency, response bodies cut off mid-read, resets and half-open connections, one
    after another while the operator provisions through the proxy."""
    with running_cluster() as cluster, replicas(cluster, tmp_path) as start:
        proxy = FaultProxy(("127.0.0.1", cluster.cp.api_port))
        try:
            kubeconfig = cluster.cp.kubeconfig_for(
                "admin", server=f"https://127.0.0.1:{proxy.port}"
            )
            op = start(
                "a",
                "--kubeconfig",
                str(kubeconfig),
                env={"KARPENTER_WATCH_IDLE_TIMEOUT": "10"},
            )
            cluster.apply_nodepool("default", disruption=FROZEN)
            cluster.apply_deployment(APP, PODS, cpu=CPU)
            wait_for(lambda: provisioning_started(cluster), "provisioning to start")
            window = LogWindow(op)
            window.open()
            began = time.monotonic()
            proxy.latency(0.2)
            time.sleep(5)
            proxy.heal()
            truncated = proxy.truncate(after_bytes=150)
            time.sleep(5)
            reset = proxy.reset()
            time.sleep(5)
            before = proxy.stats["connections"]
            half_open = proxy.blackhole()  # watches must notice within the idle timeout
            time.sleep(15)
            # the silent watches were given up and reopened on fresh connections
            reopened = proxy.stats["connections"] - before
            ended = time.monotonic()
            lines = window.close()
            recovered = settle(cluster, ended)
            claims = check_nothing_duplicated_or_leaked(cluster, log_dir=tmp_path)
            assert truncated and reset and half_open
            assert proxy.stats["truncated"] >= 1
            assert reopened >= 5, f"only {reopened} connections replaced the half-open ones"
            check_log(window, lines)
            wait_for(op.ready, "readiness after the faults")
            report(
                "network-faults",
                faults_s=ended - began,
                recovered_s=recovered,
                nodeclaims=claims,
                cut_streams=proxy.stats["truncated"],
                resets=proxy.stats["reset"],
                half_open=half_open,
                reopened=reopened,
                log_lines=lines,
            )
        finally:
            proxy.stop()


def test_a_60s_api_outage(tmp_path: Path) -> None:
    """Nothing reaches the API server for 60 s: the leader loses its lease and exits
    (as upstream), is restarted with CrashLoopBackOff's delays, and finishes the job."""
    with running_cluster() as cluster, replicas(cluster, tmp_path) as start:
        proxy = FaultProxy(("127.0.0.1", cluster.cp.api_port))
        try:
            kubeconfig = cluster.cp.kubeconfig_for(
                "admin", server=f"https://127.0.0.1:{proxy.port}"
            )
            op = start("a", "--kubeconfig", str(kubeconfig))
            prober = Prober(op)
            cluster.apply_nodepool("default", disruption=FROZEN)
            cluster.apply_deployment(APP, PODS, cpu=CPU)
            wait_for(lambda: provisioning_started(cluster), "provisioning to start")
            window = LogWindow(op)
            window.open()
            began = time.monotonic()
            proxy.refuse()
            time.sleep(60)
            proxy.heal()
            ended = time.monotonic()
            lines = window.close()
            recovered = settle(cluster, ended)
            prober.stop()
            claims = check_nothing_duplicated_or_leaked(cluster, log_dir=tmp_path)
            during = prober.between(began + 3, ended)
            assert during and all(s != 200 for s in during), f"/readyz during the outage: {during}"
            check_log(window, lines)
            report(
                "60s-outage",
                outage_s=ended - began,
                recovered_s=recovered,
                nodeclaims=claims,
                readyz_samples_down=len(during),
                log_lines=lines,
            )
        finally:
            proxy.stop()


def _time(event: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(str(event["requestReceivedTimestamp"]))


def _writes(events: list[dict[str, Any]], user: str) -> list[dict[str, Any]]:
    return [e for e in events if (e.get("user") or {}).get("username") == user]


def test_a_leader_stopped_with_sigstop_never_writes_after_the_standby_took_over(
    tmp_path: Path,
) -> None:
    """Two replicas with their own users, the API server auditing every write. The leader
    is frozen just as new pods arrive; the standby takes over and launches for them; the
    old leader is thawed with its queues full of that work and must write nothing."""
    users = ("replica-a", "replica-b")
    with (
        running_cluster(users=users, audit_writes=True) as cluster,
        replicas(cluster, tmp_path) as start,
    ):
        cp = cluster.cp
        a = start("a", "--kubeconfig", str(cp.kubeconfig_for("replica-a")), supervise=False)
        wait_for(a.leading, "replica a to lead")
        b = start("b", "--kubeconfig", str(cp.kubeconfig_for("replica-b")), supervise=False)
        cluster.apply_nodepool("default", disruption=FROZEN)
        cluster.apply_deployment(APP, 40, cpu=CPU)
        wait_for(lambda: cluster.all_bound_to_karpenter_nodes(APP, 40), "40 pods bound")
        assert _writes(cp.audit_events(), "replica-a"), "the leader wrote nothing"

        def a_quiet() -> bool:  # not mid-write when frozen (lease renewals aside)
            last = [
                _time(e)
                for e in _writes(cp.audit_events(), "replica-a")
                if (e.get("objectRef") or {}).get("resource") != "leases"
            ]
            return not last or (datetime.now(last[-1].tzinfo) - max(last)).total_seconds() > 3

        wait_for(a_quiet, "replica a to be idle")
        assert a.proc is not None
        cluster.scale(APP, PODS)
        os.kill(a.proc.pid, signal.SIGSTOP)
        frozen = time.monotonic()
        wait_for(b.leading, "the standby to take over", deadline=120)
        took_over = time.monotonic()
        settle(cluster, took_over)
        os.kill(a.proc.pid, signal.SIGCONT)
        thawed = time.monotonic()
        code = a.proc.wait(60)
        claims = check_nothing_duplicated_or_leaked(cluster, log_dir=tmp_path)
        events = cp.audit_events()
        b_leases = [
            e
            for e in _writes(events, "replica-b")
            if (e.get("objectRef") or {}).get("resource") == "leases"
            and (e.get("responseStatus") or {}).get("code", 500) < 300
        ]
        assert b_leases, "the standby never wrote the lease"
        b_acquired = _time(b_leases[0])
        # a lease renewal already prepared when the process froze may still go out on
        # waking; it fails (409), and is harmless: the optimistic lock refuses it
        overlap = [
            f"{e['verb']} {(e.get('objectRef') or {}).get('resource')} at {e['requestReceivedTimestamp']}"
            for e in _writes(events, "replica-a")
            if _time(e) >= b_acquired
            and (
                (e.get("objectRef") or {}).get("resource") != "leases"
                or (e.get("responseStatus") or {}).get("code", 500) < 300
            )
        ]
        assert overlap == [], f"the old leader wrote after the standby took over: {overlap}"
        b_claims = [
            e
            for e in _writes(events, "replica-b")
            if (e.get("objectRef") or {}).get("resource") == "nodeclaims" and e["verb"] == "create"
        ]
        assert b_claims, "the new leader launched nothing for the new pods"
        assert code == 1, f"the thawed leader should exit 1, got {code}"
        assert "leader election lost" in a.log.read_text(errors="replace")
        report(
            "sigstop-leader",
            frozen_to_takeover_s=took_over - frozen,
            thawed_to_exit_s=time.monotonic() - thawed,
            old_leader_writes_after_takeover=len(overlap),
            new_leader_nodeclaim_creates=len(b_claims),
            nodeclaims=claims,
        )
        assert metric(b.metrics(), "leader_election_master_status") == 1.0
