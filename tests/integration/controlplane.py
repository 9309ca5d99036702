"""A real Kubernetes control plane for tests: etcd + kube-apiserver (+ optional
kube-controller-manager and kube-scheduler), built from their published Go modules.

Why build instead of download: the repo pins exact upstream versions in
``controlplane/*/go.mod`` (with go.sum), so the binaries are reproducible from the module
proxy with nothing but the machine's Go toolchain — the same path locally and in CI.

Binaries land in ``$XDG_CACHE_HOME/karpenter-core/controlplane/<versions>/`` (default
``~/.cache``). A stamp file holds a fingerprint of the module sources; when it matches, the
build is skipped (a warm run takes milliseconds). A file lock makes parallel pytest workers
wait for one build instead of racing.

Starting a control plane (:class:`ControlPlane`) picks free loopback ports, starts etcd on
a throwaway data directory, starts kube-apiserver with a token-auth admin user (serving
certificates are self-signed by the API server into ``--cert-dir``; the service-account
signing key is generated with ``openssl``), waits for ``/readyz``, and writes a kubeconfig.
kube-scheduler runs from a KubeSchedulerConfiguration file whose client QPS/burst can be
raised (``scheduler_qps``/``scheduler_burst``) for benchmarks of pod bursts.
Children get ``PR_SET_PDEATHSIG`` so a killed test run does not leak servers.

Command line: ``python tests/integration/controlplane.py build`` builds (or finds) the
binaries and prints their directory; ``... run`` starts a control plane and waits for
Ctrl-C, printing the kubeconfig path.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import http.client
import json
import math
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

ROOT = Path(__file__).resolve().parents[2]
MODULES = ROOT / "controlplane"
KUBERNETES_MODULE = MODULES / "kubernetes"
ETCD_MODULE = MODULES / "etcd"
KUBE_BINARIES = ("kube-apiserver", "kube-scheduler", "kube-controller-manager")
ALL_BINARIES = ("etcd", *KUBE_BINARIES)

SKIP_ENV = "KARPENTER_SKIP_CONTROLPLANE"
# A directory holding prebuilt etcd / kube-* binaries to use instead of building.
BINARIES_ENV = "KARPENTER_CONTROLPLANE_BIN"

# The kube-controller-manager loops the contract tests rely on, the ones the in-memory
# server simulates (karpenter_core/sim/controllermanager.py); the rest (node lifecycle, pod
# GC of pods on missing nodes, service accounts, ...) would act on the tests' fake nodes.
DEFAULT_CONTROLLERS = (
    "garbage-collector-controller",
    "namespace-controller",
    "disruption-controller",
    "resourceclaim-controller",
)


class ControlPlaneError(RuntimeError):
    """The control plane could not be built or started; the message says what to do."""


class GoMissing(ControlPlaneError):
    """No Go toolchain to build the control plane with (and no cached or prebuilt one)."""


REQUIRE_ENV = "KARPENTER_REQUIRE_CONTROLPLANE"
"""Set (``make test`` and CI do) to make a missing Go toolchain fail the real-control-plane
tests; unset, they are skipped with a loud reason, so a contributor without Go can still
run the rest."""


def require_requested() -> bool:
    return os.environ.get(REQUIRE_ENV, "").strip().lower() in ("1", "true", "yes")


def summarize_go_skips(reporter: Any) -> None:
    """A loud line at the end of the session when tests were skipped for want of Go."""
    skipped = [r for r in reporter.stats.get("skipped", []) if "no Go toolchain" in str(r.longrepr)]
    if skipped:
        reporter.write_sep(
            "!",
            f"{len(skipped)} real-control-plane tests SKIPPED: no Go toolchain to build "
            f"kube-apiserver (install Go 1.24+; {REQUIRE_ENV}=1 makes this a failure)",
            red=True,
            bold=True,
        )


def unavailable(e: ControlPlaneError) -> NoReturn:
    """End the current test for a control plane that cannot be had: a skip with the
    reason when only Go is missing and nobody required the control plane, else a failure."""
    import pytest

    if isinstance(e, GoMissing) and not require_requested():
        pytest.skip(f"no Go toolchain, real-control-plane test skipped: {e}")
    pytest.fail(f"the real control plane is unavailable: {e}", pytrace=False)


# --------------------------------------------------------------------------- kube-scheduler


def scheduler_config(
    kubeconfig: Path, qps: float | None = None, burst: int | None = None
) -> dict[str, Any]:
    """The KubeSchedulerConfiguration the fixture's kube-scheduler runs with.

    A config file, not flags: kube-scheduler v1.34 still accepts ``--kube-api-qps`` and
    ``--kube-api-burst`` but lists them as deprecated (and ignores them once ``--config``
    is given), so ``clientConnection.qps``/``burst`` is the mechanism that will last. The
    client limit matters to anything timing provisioning: each pod kube-scheduler marks
    unschedulable costs it a status write and an event, so at its own default (50 QPS,
    burst 100) 1,000 pending pods take it ~20 s. ``None`` leaves a field out, so
    kube-scheduler applies its own default. Leader election is off: one replica.
    """
    if qps is not None and (
        isinstance(qps, bool)
        or not isinstance(qps, int | float)
        or not math.isfinite(qps)
        or qps <= 0
    ):
        raise ControlPlaneError(f"kube-scheduler client QPS must be a positive number, not {qps!r}")
    if burst is not None and (isinstance(burst, bool) or not isinstance(burst, int) or burst < 1):
        raise ControlPlaneError(
            f"kube-scheduler client burst must be a whole number of at least 1, not {burst!r}"
        )
    connection: dict[str, Any] = {"kubeconfig": str(kubeconfig)}
    if qps is not None:
        connection["qps"] = float(qps)
    if burst is not None:
        connection["burst"] = burst
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": connection,
        "leaderElection": {"leaderElect": False},
    }


# --------------------------------------------------------------------------- versions / cache


def _required_version(go_mod: Path, module: str) -> str:
    text = go_mod.read_text()
    m = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", text, re.MULTILINE)
    if m is None:
        raise ControlPlaneError(f"{go_mod}: does not require {module}")
    return m.group(1)


def versions() -> dict[str, str]:
    """The pinned upstream versions, read from the committed go.mod files."""
    return {
        "kubernetes": _required_version(KUBERNETES_MODULE / "go.mod", "k8s.io/kubernetes"),
        "etcd": _required_version(ETCD_MODULE / "go.mod", "go.etcd.io/etcd/server/v3"),
    }


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "karpenter-core" / "controlplane"


def binaries_dir() -> Path:
    v = versions()
    return cache_root() / f"kubernetes-{v['kubernetes']}_etcd-{v['etcd']}"


def fingerprint() -> str:
    """A hash of everything that decides the binaries: the module files we commit."""
    h = hashlib.sha256()
    for module in (KUBERNETES_MODULE, ETCD_MODULE):
        for path in sorted(module.rglob("*")):
            if path.is_file() and (path.suffix == ".go" or path.name in ("go.mod", "go.sum")):
                h.update(str(path.relative_to(MODULES)).encode())
                h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _stamp_ok(directory: Path) -> bool:
    stamp = directory / "STAMP"
    return (
        stamp.is_file()
        and stamp.read_text().strip() == fingerprint()
        and all(os.access(directory / b, os.X_OK) for b in ALL_BINARIES)
    )


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise GoMissing(
            "the Go toolchain (`go`, 1.24 or newer) is not on PATH: it is needed to build etcd "
            "and kube-apiserver for the real-control-plane tests (install it from "
            f"https://go.dev/dl), or set {SKIP_ENV}=1 to skip those tests"
        )
    return go


def _run_go(args: Sequence[str], cwd: Path, log: Callable[[str], None]) -> None:
    env = dict(
        os.environ, GOFLAGS="-mod=readonly", GOTOOLCHAIN=os.environ.get("GOTOOLCHAIN", "local")
    )
    log(f"$ (cd {cwd.relative_to(ROOT)} && {shlex.join(args)})")
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-25:])
        raise ControlPlaneError(
            f"building the control plane failed: `{' '.join(args)}` in "
            f"{cwd.relative_to(ROOT)} exited {proc.returncode}:\n{tail}"
        )


def _version_ldflags(version: str) -> str:
    m = re.match(r"v(\d+)\.(\d+)", version)
    major, minor = (m.group(1), m.group(2)) if m else ("", "")
    pkg = "k8s.io/component-base/version"
    return " ".join(
        [
            f"-X {pkg}.gitVersion={version}",
            f"-X {pkg}.gitMajor={major}",
            f"-X {pkg}.gitMinor={minor}",
            f"-X {pkg}.gitTreeState=clean",
            "-s",
            "-w",
        ]
    )


def ensure_binaries(log: Callable[[str], None] = lambda _m: None) -> Path:
    """Build the binaries unless the cache already holds them; returns their directory."""
    override = os.environ.get(BINARIES_ENV)
    if override:
        missing = [b for b in ALL_BINARIES if not os.access(Path(override) / b, os.X_OK)]
        if missing:
            raise ControlPlaneError(
                f"{BINARIES_ENV}={override}: no executable {', '.join(missing)} there"
            )
        return Path(override)
    target = binaries_dir()
    if _stamp_ok(target):
        return target
    with _file_lock(cache_root() / f".{target.name}.lock"):
        if _stamp_ok(target):  # another worker built it while we waited
            return target
        go = _go()
        started = time.monotonic()
        prefix = f".build-{target.name}-"
        for stale in cache_root().glob(prefix + "*"):  # left by an interrupted build
            shutil.rmtree(stale, ignore_errors=True)
        work = Path(tempfile.mkdtemp(prefix=prefix, dir=cache_root()))
        try:
            ldflags = _version_ldflags(versions()["kubernetes"])
            _run_go(
                [go, "build", "-trimpath", "-ldflags", ldflags, "-o", str(work) + "/"]
                + [f"./{b}" for b in KUBE_BINARIES],
                KUBERNETES_MODULE,
                log,
            )
            _run_go(
                [go, "build", "-trimpath", "-ldflags", "-s -w", "-o", str(work / "etcd"), "."],
                ETCD_MODULE,
                log,
            )
            (work / "STAMP").write_text(fingerprint() + "\n")
            if target.exists():
                shutil.rmtree(target)
            work.rename(target)
        finally:
            if work.exists():
                shutil.rmtree(work, ignore_errors=True)
        log(f"built the control plane in {time.monotonic() - started:.0f}s into {target}")
    return target


# --------------------------------------------------------------------------- running


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    """Ask Linux to SIGTERM the child when the test process dies (no leaked servers)."""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    os.setsid()


def _openssl_rsa_key(path: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise ControlPlaneError(
            "`openssl` is not on PATH: it generates the throwaway service-account key "
            "for the test kube-apiserver"
        )
    proc = subprocess.run(
        [openssl, "genrsa", "-out", str(path), "2048"], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise ControlPlaneError(f"openssl genrsa failed: {proc.stderr.strip()}")


class _Process:
    def __init__(self, name: str, args: Sequence[str], log_path: Path) -> None:
        self.name = name
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.proc = subprocess.Popen(
            list(args),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent,
        )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout)
        self._log.close()


class ControlPlane:
    """etcd + kube-apiserver (+ kube-controller-manager, kube-scheduler) on loopback."""

    def __init__(
        self,
        binaries: Path,
        *,
        controller_manager: bool = True,
        controllers: Sequence[str] = DEFAULT_CONTROLLERS,
        scheduler: bool = False,
        scheduler_qps: float | None = None,
        scheduler_burst: int | None = None,
        workdir: Path | None = None,
        users: Sequence[str] = (),
        audit_writes: bool = False,
    ) -> None:
        """``scheduler_qps``/``scheduler_burst`` set kube-scheduler's client rate limit
        (``None``: kube-scheduler's own default, 50 QPS and burst 100); checked here, so a
        bad value fails before any server starts. ``users`` are more cluster admins, each
        with its own token and kubeconfig (:meth:`kubeconfig_for`), so an audit log tells
        their requests apart; ``audit_writes`` makes kube-apiserver log every write to
        :attr:`audit_log` (:meth:`audit_events` reads it)."""
        self.binaries = binaries
        self.with_controller_manager = controller_manager
        self.controllers = tuple(controllers)
        self.with_scheduler = scheduler
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="karpenter-controlplane-"))
        self.kubeconfig = self.workdir / "kubeconfig"
        self.scheduler_qps = scheduler_qps
        self.scheduler_burst = scheduler_burst
        try:
            scheduler_config(self.kubeconfig, scheduler_qps, scheduler_burst)
        except ControlPlaneError:
            if workdir is None:
                shutil.rmtree(self.workdir, ignore_errors=True)
            raise
        self._own_workdir = workdir is None
        self.token = secrets.token_hex(16)
        self.user_tokens = {user: secrets.token_hex(16) for user in users}
        self.audit_writes = audit_writes
        self.audit_log = self.workdir / "audit.log"
        self.processes: list[_Process] = []
        self.api_port = 0
        self.etcd_port = 0
        self.scheduler_port = 0
        self._metrics_conn: http.client.HTTPSConnection | None = None

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.api_port}"

    # ------------------------------------------------------------------ start

    def start(self, timeout: float = 120.0) -> ControlPlane:
        try:
            self._start_etcd()
            self._start_apiserver()
            self._wait_ready(timeout)
            self._write_kubeconfig()
            if self.with_controller_manager:
                self._start_controller_manager()
            if self.with_scheduler:
                self._start_scheduler()
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, name: str, args: Sequence[str]) -> _Process:
        p = _Process(name, args, self.workdir / f"{name}.log")
        self.processes.append(p)
        return p

    def _start_etcd(self) -> None:
        self.etcd_port = _free_port()
        peer = _free_port()
        data = self.workdir / "etcd-data"
        client_url = f"http://127.0.0.1:{self.etcd_port}"
        self._spawn(
            "etcd",
            [
                str(self.binaries / "etcd"),
                "--name=test",
                f"--data-dir={data}",
                f"--listen-client-urls={client_url}",
                f"--advertise-client-urls={client_url}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=test=http://127.0.0.1:{peer}",
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
        )

    def _start_apiserver(self) -> None:
        self.api_port = self.api_port or _free_port()
        sa_key = self.workdir / "sa.key"
        if not sa_key.exists():
            _openssl_rsa_key(sa_key)
        tokens = self.workdir / "tokens.csv"
        lines = [f'{self.token},admin,admin-uid,"system:masters"']
        lines += [f'{t},{u},{u}-uid,"system:masters"' for u, t in self.user_tokens.items()]
        tokens.write_text("\n".join(lines) + "\n")
        certs = self.workdir / "certs"
        certs.mkdir(exist_ok=True)
        args = [
            str(self.binaries / "kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.api_port}",
            f"--cert-dir={certs}",
            f"--token-auth-file={tokens}",
            "--authorization-mode=RBAC",
            f"--service-account-key-file={sa_key}",
            f"--service-account-signing-key-file={sa_key}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--disable-admission-plugins=ServiceAccount",
            "--allow-privileged=true",
            "--watch-cache=true",
            "--v=0",
        ]
        if self.audit_writes:
            policy = self.workdir / "audit-policy.yaml"
            # JSON is YAML: every write at Metadata level (who, what, when, answer), no reads
            policy.write_text(
                json.dumps(
                    {
                        "apiVersion": "audit.k8s.io/v1",
                        "kind": "Policy",
                        "omitStages": ["RequestReceived"],
                        "rules": [
                            {
                                "level": "Metadata",
                                "verbs": [
                                    "create",
                                    "update",
                                    "patch",
                                    "delete",
                                    "deletecollection",
                                ],
                            },
                            {"level": "None"},
                        ],
                    }
                )
            )
            args += [
                f"--audit-policy-file={policy}",
                f"--audit-log-path={self.audit_log}",
                "--audit-log-mode=blocking",
                "--audit-log-format=json",
            ]
        self._spawn("kube-apiserver", args)

    def kill_apiserver(self) -> None:
        """kill -9 kube-apiserver (etcd and every client stay); see :meth:`start_apiserver`."""
        api = next(p for p in self.processes if p.name == "kube-apiserver")
        api.proc.kill()
        api.proc.wait(30)
        api.stop()
        self.processes.remove(api)

    def start_apiserver(self, timeout: float = 120.0) -> None:
        """Start kube-apiserver again on the same port, etcd, certificates and tokens."""
        self._start_apiserver()
        self._wait_ready(timeout)

    def kubeconfig_for(self, user: str, server: str | None = None) -> Path:
        """A kubeconfig for one of ``users`` (or ``admin``), optionally through another
        address (a proxy in front of kube-apiserver)."""
        token = self.token if user == "admin" else self.user_tokens[user]
        via = "" if server is None else "-via-" + server.rsplit(":", 1)[-1].strip("/")
        path = self.workdir / f"kubeconfig-{user}{via}"
        self._write_kubeconfig(path, user=user, token=token, server=server)
        return path

    def audit_events(self) -> list[dict[str, Any]]:
        """The audit log so far (only with ``audit_writes``), oldest first."""
        try:
            text = self.audit_log.read_text()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def _ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            for p in self.processes:
                if not p.alive():
                    raise ControlPlaneError(
                        f"{p.name} exited with {p.proc.returncode} while starting; its log "
                        f"({p.log_path}) ends:\n{p.log_tail()}"
                    )
            req = urllib.request.Request(
                f"{self.server}/readyz", headers={"Authorization": f"Bearer {self.token}"}
            )
            try:
                with urllib.request.urlopen(req, timeout=5, context=self._ssl_context()) as r:
                    if r.status == 200:
                        return
            except urllib.error.HTTPError as e:
                last = f"HTTP {e.code}"
            except OSError as e:
                last = str(e)
            time.sleep(0.25)
        api = next(p for p in self.processes if p.name == "kube-apiserver")
        raise ControlPlaneError(
            f"kube-apiserver was not ready within {timeout:.0f}s (last /readyz: {last}); its "
            f"log ends:\n{api.log_tail()}"
        )

    def _write_kubeconfig(
        self,
        path: Path | None = None,
        *,
        user: str = "admin",
        token: str | None = None,
        server: str | None = None,
    ) -> None:
        ca = self.workdir / "certs" / "apiserver.crt"
        cluster: dict[str, Any] = {"server": server or self.server}
        if ca.is_file():
            cluster["certificate-authority"] = str(ca)
        else:
            cluster["insecure-skip-tls-verify"] = True
        import yaml

        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "test", "cluster": cluster}],
            "users": [{"name": user, "user": {"token": token or self.token}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": user}}],
            "current-context": "test",
        }
        (path or self.kubeconfig).write_text(yaml.safe_dump(config))

    def _start_controller_manager(self) -> None:
        self._spawn(
            "kube-controller-manager",
            [
                str(self.binaries / "kube-controller-manager"),
                f"--kubeconfig={self.kubeconfig}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={_free_port()}",
                f"--cert-dir={self.workdir / 'kcm-certs'}",
                f"--controllers={','.join(self.controllers)}",
                "--concurrent-gc-syncs=5",
                "--v=0",
            ],
        )

    def scheduler_args(self) -> list[str]:
        """kube-scheduler's command line; writes its config file (see
        :func:`scheduler_config`) into the work directory. ``/metrics`` is readable
        without credentials (this plane runs no delegated authentication for it), so a
        test can see which events kube-scheduler has handled (:meth:`scheduler_metrics`)."""
        config = self.workdir / "kube-scheduler.yaml"
        self.scheduler_port = _free_port()
        # JSON is YAML: kube-scheduler reads it as is, with no YAML writer needed here
        config.write_text(
            json.dumps(
                scheduler_config(self.kubeconfig, self.scheduler_qps, self.scheduler_burst),
                indent=2,
            )
        )
        return [
            str(self.binaries / "kube-scheduler"),
            f"--config={config}",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.scheduler_port}",
            f"--cert-dir={self.workdir / 'scheduler-certs'}",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            "--v=0",
        ]

    def scheduler_metrics(self) -> str:
        """kube-scheduler's ``/metrics`` (Prometheus text), over one kept-alive connection:
        a TLS handshake per read would cost ten times the read."""
        try:
            return self._read_scheduler_metrics()
        except (OSError, http.client.HTTPException):
            self._close_metrics()  # the server dropped the idle connection: a fresh one
            return self._read_scheduler_metrics()

    def _read_scheduler_metrics(self) -> str:
        if self._metrics_conn is None:
            self._metrics_conn = http.client.HTTPSConnection(
                "127.0.0.1", self.scheduler_port, timeout=10, context=self._ssl_context()
            )
        self._metrics_conn.request("GET", "/metrics")
        response = self._metrics_conn.getresponse()
        body = response.read().decode()
        if response.status != 200:
            raise ControlPlaneError(f"kube-scheduler /metrics: HTTP {response.status}")
        return body

    def _close_metrics(self) -> None:
        if self._metrics_conn is not None:
            self._metrics_conn.close()
            self._metrics_conn = None

    def _start_scheduler(self) -> None:
        self._spawn("kube-scheduler", self.scheduler_args())

    # ------------------------------------------------------------------ stop

    def check_alive(self) -> None:
        for p in self.processes:
            if not p.alive():
                raise ControlPlaneError(
                    f"{p.name} died (exit {p.proc.returncode}); its log ends:\n{p.log_tail()}"
                )

    def stop(self) -> None:
        self._close_metrics()
        for p in reversed(self.processes):
            p.stop()
        self.processes.clear()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --------------------------------------------------------------------------- shared instance

_shared: ControlPlane | None = None
_shared_failure: ControlPlaneError | None = None
_shared_lock = threading.Lock()


def skip_requested() -> bool:
    return os.environ.get(SKIP_ENV, "").strip().lower() in ("1", "true", "yes")


def shared_control_plane() -> ControlPlane:
    """The one control plane of this test process (each pytest-xdist worker has its own),
    started on first use with the karpenter CRDs installed; stopped by :func:`stop_shared`
    or at interpreter exit."""
    global _shared, _shared_failure
    with _shared_lock:
        if _shared_failure is not None:  # fail every test fast, not one build per test
            raise _shared_failure
        if _shared is None:
            try:
                binaries = ensure_binaries(log=lambda m: print(m, file=sys.stderr))
                cp = ControlPlane(binaries).start()
                try:
                    install_crds(cp)
                except BaseException:
                    cp.stop()
                    raise
            except ControlPlaneError as e:
                _shared_failure = e
                raise
            _shared = cp
            import atexit

            atexit.register(stop_shared)
        return _shared


def prebuild(items: Sequence[Any], write: Callable[[str], None]) -> None:
    """Build the binaries before any test runs when a collected test needs them — from a
    collection hook, so a cold build (minutes) is not charged to one test's timeout. A
    failure is remembered and reported by every real-control-plane test."""
    global _shared_failure
    if skip_requested() or not any(i.get_closest_marker("controlplane") for i in items):
        return
    if not os.environ.get(BINARIES_ENV) and _stamp_ok(binaries_dir()):
        return
    write(f"karpenter: building the test control plane into {binaries_dir()} (first run)")
    try:
        ensure_binaries(log=write)
    except ControlPlaneError as e:
        with _shared_lock:
            _shared_failure = e


def stop_shared() -> None:
    global _shared
    with _shared_lock:
        if _shared is not None:
            _shared.stop()
            _shared = None


def install_crds(cp: ControlPlane, timeout: float = 60.0) -> None:
    """Create the karpenter CRDs and wait until each is Established."""
    from karpenter_core.apis.crds import crd_manifests
    from karpenter_core.kube.adapter import KubernetesClient
    from karpenter_core.kube.client import AlreadyExists

    client = KubernetesClient.from_kubeconfig(str(cp.kubeconfig))
    names = []
    for crd in crd_manifests():
        with contextlib.suppress(AlreadyExists):
            client.create(crd)
        names.append(crd["metadata"]["name"])
    deadline = time.monotonic() + timeout
    for name in names:
        while True:
            got = client.get(("apiextensions.k8s.io/v1", "CustomResourceDefinition"), name)
            conditions = (got.get("status") or {}).get("conditions") or []
            if any(
                c.get("type") == "Established" and c.get("status") == "True" for c in conditions
            ):
                break
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"CRD {name} was not Established within {timeout:.0f}s")
            time.sleep(0.1)
    client.close()


def main(argv: Sequence[str]) -> int:
    command = argv[0] if argv else "build"
    try:
        if command == "build":
            print(ensure_binaries(log=lambda m: print(m, file=sys.stderr)))
            return 0
        if command == "run":
            cp = shared_control_plane()
            print(f"kubeconfig: {cp.kubeconfig}", flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                while True:
                    cp.check_alive()
                    time.sleep(1)
            stop_shared()
            return 0
    except ControlPlaneError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"usage: {Path(sys.argv[0]).name} [build|run]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
