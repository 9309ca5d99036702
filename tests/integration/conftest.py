"""Fixtures for tests on a real control plane (see ``controlplane.py`` next to this file).

One control plane per test process: under pytest-xdist each worker starts its own etcd +
kube-apiserver + kube-controller-manager (a few seconds, ~0.5 GB each) on free loopback
ports, so workers never see each other's objects or watch events; the *build* is shared
through the user cache and a file lock. Tests isolate themselves further with a fresh
namespace (``namespace``) and unique names for cluster-scoped objects (``unique``).

``KARPENTER_SKIP_CONTROLPLANE=1`` skips these tests explicitly. Without Go (and no cached
or prebuilt binaries) they are skipped with a loud reason and a summary line, unless
``KARPENTER_REQUIRE_CONTROLPLANE=1`` (set by ``make test``, so CI cannot go quietly green)
makes that a failure; a failed build always fails them with the reason.
"""

from __future__ import annotations

import contextlib
import itertools
import uuid
from collections.abc import Callable, Iterator

import pytest

import controlplane
from karpenter_core.kube.adapter import KubernetesClient
from karpenter_core.kube.client import ApiError


def pytest_collection_finish(session: pytest.Session) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    write = reporter.write_line if reporter is not None else print
    controlplane.prebuild(session.items, write)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    controlplane.stop_shared()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    controlplane.summarize_go_skips(terminalreporter)


@pytest.fixture(scope="session")
def control_plane() -> controlplane.ControlPlane:
    if controlplane.skip_requested():
        pytest.skip(f"{controlplane.SKIP_ENV} is set: real-control-plane tests skipped")
    try:
        cp = controlplane.shared_control_plane()
    except controlplane.ControlPlaneError as e:
        controlplane.unavailable(e)
    return cp


@pytest.fixture
def kube(control_plane: controlplane.ControlPlane) -> Iterator[KubernetesClient]:
    control_plane.check_alive()
    client = KubernetesClient.from_kubeconfig(str(control_plane.kubeconfig), qps=0)
    yield client
    client.close()


_counter = itertools.count()


@pytest.fixture
def unique() -> Callable[[str], str]:
    token = uuid.uuid4().hex[:6]
    return lambda prefix: f"{prefix}-{token}-{next(_counter)}"


@pytest.fixture
def namespace(kube: KubernetesClient, unique: Callable[[str], str]) -> Iterator[str]:
    name = unique("it")
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    with contextlib.suppress(ApiError):
        kube.delete("namespaces", name)
