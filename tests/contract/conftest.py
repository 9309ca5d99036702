"""Fixtures for the KubeClient contract tests.

Every test in this directory runs once per backend. Today the only backend is the
in-memory API server; a real kube-apiserver (envtest style) will be added as another
parameter of ``backend``, so the tests may only assert what a real API server does.

Backends declare the kube-controller-manager loops they include as *capabilities*: the
in-memory server does the disruption controller's, garbage collector's and namespace
controller's work synchronously, a bare kube-apiserver does none of them. Tests that rely on
one call ``backend.require(...)`` and are skipped where it is missing.
"""

from __future__ import annotations

import contextlib
import itertools
import uuid
from collections.abc import Callable, Iterator

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


def _memory_backend() -> Backend:
    server = InMemoryApiServer(VirtualClock(), seed=1)
    return Backend(
        "memory",
        server,
        frozenset({DISRUPTION_CONTROLLER, GARBAGE_COLLECTOR, NAMESPACE_CONTROLLER}),
    )


@pytest.fixture(params=["memory"])
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    if request.param == "memory":
        yield _memory_backend()
    else:  # pragma: no cover - more backends arrive with the real API server
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
