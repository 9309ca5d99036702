"""Fixtures for the Azure plugin's tests against the fake ARM server (tests/fakearm.py).

``fake_arm`` is one HTTPS server per test module (starting one costs a certificate);
``arm`` hands it to a test with an empty inventory and no pending faults. ``arm_env``
puts the server's environment variables (CA bundle, managed-identity endpoint, cloud
environment file) into ``os.environ`` for the test, exactly what a ``karpenter serve``
subprocess would get, and removes credentials of the developer's own environment that
``DefaultAzureCredential`` would otherwise try first.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fakearm import SUBSCRIPTION, FakeARM
from karpenter_azure.clients import AzureClients

# Environment credentials DefaultAzureCredential tries before managed identity.
_FOREIGN_CREDENTIAL_VARS = (
    "AZURE_CLIENT_ID",
    "AZURE_CLIENT_SECRET",
    "AZURE_TENANT_ID",
    "AZURE_CLIENT_CERTIFICATE_PATH",
    "AZURE_USERNAME",
    "AZURE_PASSWORD",
    "AZURE_FEDERATED_TOKEN_FILE",
    "MSI_ENDPOINT",
    "MSI_SECRET",
    "IDENTITY_SERVER_THUMBPRINT",
    "IMDS_ENDPOINT",
    "ARM_CLOUD",
)


@pytest.fixture(scope="module")
def fake_arm() -> Iterator[FakeARM]:
    server = FakeARM().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def arm(fake_arm: FakeARM) -> Iterator[FakeARM]:
    """The module's fake ARM with an empty inventory and no faults."""
    fake_arm.reset()
    yield fake_arm


@pytest.fixture
def arm_env(arm: FakeARM, monkeypatch: pytest.MonkeyPatch) -> FakeARM:
    """``arm`` with its environment variables set for in-process SDK clients."""
    for name in _FOREIGN_CREDENTIAL_VARS:
        monkeypatch.delenv(name, raising=False)
    for name, value in arm.env().items():
        monkeypatch.setenv(name, value)
    return arm


@pytest.fixture
def azure_clients(arm_env: FakeARM) -> AzureClients:
    """Clients built from the environment alone (DefaultAzureCredential, the
    environment file's endpoint), as ``karpenter serve`` builds them."""
    return AzureClients.create(SUBSCRIPTION)
