"""Fixtures for the GCP plugin's tests against the fake Compute/GKE server (tests/fakegce.py).

``fake_gce`` is one plain-HTTP server per test module; ``gce`` hands it to a test with an
empty inventory and no pending faults. ``gce_env`` puts the server's environment variables
into ``os.environ`` for the test, exactly what a ``karpenter serve`` subprocess would get,
and removes the developer's own credential and endpoint settings. ``gcp_clients`` are the
official clients built from that environment alone.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fakegce import FakeGCE
from karpenter_gcp.clients import GCPClients

# Settings of the developer's environment that would send the clients elsewhere.
_FOREIGN_VARS = (
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_CLOUD_PROJECT",
    "CLOUDSDK_CONFIG",
    "GOOGLE_API_USE_CLIENT_CERTIFICATE",
    "GOOGLE_CLOUD_UNIVERSE_DOMAIN",
)


@pytest.fixture(scope="module")
def fake_gce() -> Iterator[FakeGCE]:
    server = FakeGCE().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def gce(fake_gce: FakeGCE) -> Iterator[FakeGCE]:
    """The module's fake GCE with an empty inventory and no faults."""
    fake_gce.reset()
    yield fake_gce


@pytest.fixture
def gce_env(gce: FakeGCE, monkeypatch: pytest.MonkeyPatch) -> FakeGCE:
    """``gce`` with its environment variables set for in-process clients."""
    for name in _FOREIGN_VARS:
        monkeypatch.delenv(name, raising=False)
    for name, value in gce.env().items():
        monkeypatch.setenv(name, value)
    return gce


@pytest.fixture
def gcp_clients(gce_env: FakeGCE) -> GCPClients:
    """Clients built from the environment alone, as ``karpenter serve`` builds them."""
    return GCPClients.create()
