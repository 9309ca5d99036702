"""Fixtures for the KubeClient contract tests.

Every test in this directory runs once per backend: ``memory`` (the in-memory API server)
and ``kube`` (the adapter on the official client against a real etcd + kube-apiserver +
kube-controller-manager built from the pinned upstream modules, see
``tests/integration/controlplane.py``). The tests may only assert what a real API server
does, and both backends must agree. ``kube`` tests carry the ``controlplane`` marker
(``-m "not controlplane"`` deselects them; ``KARPENTER_SKIP_CONTROLPLANE=1`` skips them; a
missing Go toolchain or a failed build *fails* them).

Backends declare the kube-controller-manager loops they include as *capabilities*: the
in-memory server does the disruption controller's, garbage collector's and namespace
controller's work synchronously, a bare kube-apiserver does none of them. Tests that rely on
one call ``backend.require(...)`` and are skipped where it is missing.
"""

from __future__ import annotations

import contextlib
import itertools
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from contract_support import (
    DISRUPTION_CONTROLLER,
    GARBAGE_COLLECTOR,
    NAMESPACE_CONTROLLER,
    Backend,
)

from karpenter_core.kube.client import ApiError, KubeClient, NotFound
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.sim.apiserver import InMemoryApiServer

_INTEGRATION = str(Path(__file__).resolve().parents[1] / "integration")
if _INTEGRATION not in sys.path:
    sys.path.insert(0, _INTEGRATION)
import controlplane  # noqa: E402  (tests/integration/controlplane.py)


def pytest_collection_finish(session: pytest.Session) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    write = reporter.write_line if reporter is not None else print
    controlplane.prebuild(session.items, write)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    controlplane.stop_shared()


def _memory_backend() -> Backend:
    server = InMemoryApiServer(VirtualClock(), seed=1)
    return Backend(
        "memory",
        server,
        frozenset({DISRUPTION_CONTROLLER, GARBAGE_COLLECTOR, NAMESPACE_CONTROLLER}),
    )


_kube_client: KubeClient | None = None


def _kube_backend() -> Backend:
    """The adapter on this worker's shared control plane (one per pytest-xdist worker)."""
    global _kube_client
    if controlplane.skip_requested():
        pytest.skip(f"{controlplane.SKIP_ENV} is set: real-control-plane tests skipped")
    try:
        cp = controlplane.shared_control_plane()
    except controlplane.ControlPlaneError as e:
        controlplane.unavailable(e)
    cp.check_alive()
    if _kube_client is None:
        from karpenter_core.kube.adapter import KubernetesClient

        _kube_client = KubernetesClient.from_kubeconfig(str(cp.kubeconfig), qps=0)
    return Backend(
        "kube",
        _kube_client,
        frozenset({DISRUPTION_CONTROLLER, GARBAGE_COLLECTOR, NAMESPACE_CONTROLLER}),
    )


@pytest.fixture(
    params=["memory", pytest.param("kube", marks=pytest.mark.controlplane)],
)
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    if request.param == "memory":
        yield _memory_backend()
    elif request.param == "kube":
        yield _kube_backend()
    else:  # pragma: no cover
        raise AssertionError(f"unknown backend {request.param}")


@pytest.fixture
def kube_client(backend: Backend) -> KubeClient:
    return backend.client


_counter = itertools.count()


@pytest.fixture
def unique() -> Callable[[str], str]:
    """Names that do not collide on a shared cluster (for cluster-scoped objects)."""
    token = uuid.uuid4().hex[:6]

    def make(prefix: str) -> str:
        return f"{prefix}-{token}-{next(_counter)}"

    return make


@pytest.fixture
def namespace(kube_client: KubeClient, unique: Callable[[str], str]) -> Iterator[str]:
    """A fresh namespace for one test, deleted afterwards."""
    name = unique("ct")
    kube_client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    with contextlib.suppress(NotFound, ApiError):
        kube_client.delete("namespaces", name)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    controlplane.summarize_go_skips(terminalreporter)
