"""Fixtures for the AWS provider's tests: boto3 against moto's server.

One moto server per test process (``ThreadedMotoServer`` serves moto's HTTP API on a free
loopback port), reset before each test so no state leaks between tests. The provider talks
to it through real boto3 clients, as it would to EC2.

moto ignores ``DryRun`` on ``CreateFleet`` (it launches): the ``clients`` fixture's EC2
client answers such requests as EC2 does (:mod:`ec2_dry_run`).
"""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import Iterator

import pytest
from ec2_dry_run import dry_run_create_fleet_as_ec2
from karpenter_aws.clients import AWSClients
from moto.server import ThreadedMotoServer

REGION = "us-west-2"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """The URL of a moto server running for this test process."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=_free_port(), verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dummy credentials so boto3 never looks for real ones (or reaches IMDS)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def clients(moto_endpoint: str, aws_env: None) -> AWSClients:
    """Fresh AWS state (moto reset) and clients for it, in ``REGION``."""
    req = urllib.request.Request(f"{moto_endpoint}/moto-api/reset", method="POST")
    urllib.request.urlopen(req, timeout=10).close()
    made = AWSClients.create(REGION, endpoint_url=moto_endpoint)
    dry_run_create_fleet_as_ec2(made.ec2)
    return made
