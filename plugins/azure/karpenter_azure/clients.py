"""The Azure SDK clients the provider's launch path uses, built once per process.

Credentials follow ``azure.identity.DefaultAzureCredential`` (environment service
principal, workload identity, managed identity, CLI...), which is what a Karpenter pod
in AKS gets from its federated or kubelet identity. The ARM endpoint is Azure public
cloud unless ``AZURE_ENVIRONMENT_FILEPATH`` names a cloud-environment JSON file, the same
file upstream (``pkg/auth/environment.go``) and the Azure cloud provider read for
sovereign and custom clouds; its ``resourceManagerEndpoint`` and ``tokenAudience`` choose
the endpoint and the token scope. Tests point the file at their local fake ARM server, so a
``karpenter serve`` subprocess needs nothing but environment variables.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from attrs import frozen

__all__ = [
    "ARM_CLOUD_ENV",
    "AZURE_ENVIRONMENT_FILEPATH_ENV",
    "AZURE_PUBLIC_CLOUD",
    "PUBLIC_RESOURCE_MANAGER_ENDPOINT",
    "AzureClients",
    "AzureEnvironment",
    "load_environment",
    "resource_manager_endpoint",
]

AZURE_ENVIRONMENT_FILEPATH_ENV = "AZURE_ENVIRONMENT_FILEPATH"
ARM_CLOUD_ENV = "ARM_CLOUD"
PUBLIC_RESOURCE_MANAGER_ENDPOINT = "https://management.azure.com"
AZURE_PUBLIC_CLOUD = "AzurePublicCloud"

# Clouds whose ARM endpoint we know by name (upstream's ARM_CLOUD setting). Only the
# public-cloud family is needed to decide on the AKS billing extension; others must come
# from an environment file.
_KNOWN_CLOUDS: dict[str, str] = {
    "AZUREPUBLICCLOUD": PUBLIC_RESOURCE_MANAGER_ENDPOINT,
    "AZURECHINACLOUD": "https://management.chinacloudapi.cn",
    "AZUREUSGOVERNMENTCLOUD": "https://management.usgovcloudapi.net",
}
_CANONICAL_NAMES = {
    "AZUREPUBLICCLOUD": "AzurePublicCloud",
    "AZURECHINACLOUD": "AzureChinaCloud",
    "AZUREUSGOVERNMENTCLOUD": "AzureUSGovernmentCloud",
}


@frozen
class AzureEnvironment:
    """The cloud the clients talk to: its name (decides cloud-specific behaviour such as
    the AKS billing extension), ARM endpoint and token audience."""

    name: str
    resource_manager_endpoint: str
    token_audience: str

    @property
    def credential_scope(self) -> str:
        """The OAuth scope ARM tokens are requested for."""
        return self.token_audience.rstrip("/") + "/.default"


def _from_file(path: str) -> AzureEnvironment:
    """Parse a cloud-environment file; ``ValueError`` in one line naming the file."""
    where = f"{AZURE_ENVIRONMENT_FILEPATH_ENV}={path}"
    if not os.path.isabs(path):
        raise ValueError(f"{where}: the path must be absolute")
    try:
        raw = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ValueError(f"{where}: cannot read the environment file ({e.strerror})") from e
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ValueError(f"{where}: not valid JSON ({e.msg} at line {e.lineno})") from e
    if not isinstance(doc, dict):
        raise ValueError(f"{where}: expected a JSON object")
    endpoint = doc.get("resourceManagerEndpoint")
    if not isinstance(endpoint, str) or not endpoint.strip():
        raise ValueError(f"{where}: resourceManagerEndpoint is required")
    endpoint = endpoint.strip().rstrip("/")
    if not endpoint.startswith(("https://", "http://")):
        raise ValueError(f"{where}: resourceManagerEndpoint {endpoint!r} is not a URL")
    audience = doc.get("tokenAudience")
    name = doc.get("name")
    return AzureEnvironment(
        name=name if isinstance(name, str) and name else "AzureCustomCloud",
        resource_manager_endpoint=endpoint,
        token_audience=audience if isinstance(audience, str) and audience else endpoint,
    )


def load_environment(environ: dict[str, str] | None = None) -> AzureEnvironment:
    """The cloud environment by upstream's precedence: the environment file, then the
    ``ARM_CLOUD`` name, then Azure public cloud. ``ValueError`` for a bad file or an
    unknown cloud name."""
    env = os.environ if environ is None else environ
    path = env.get(AZURE_ENVIRONMENT_FILEPATH_ENV, "")
    if path:
        return _from_file(path)
    cloud = env.get(ARM_CLOUD_ENV, "").strip()
    if cloud:
        key = cloud.upper()
        if key not in _KNOWN_CLOUDS:
            known = ", ".join(_CANONICAL_NAMES.values())
            raise ValueError(f"{ARM_CLOUD_ENV}={cloud}: unknown cloud name (known: {known})")
        return AzureEnvironment(_CANONICAL_NAMES[key], _KNOWN_CLOUDS[key], _KNOWN_CLOUDS[key])
    return AzureEnvironment(
        AZURE_PUBLIC_CLOUD, PUBLIC_RESOURCE_MANAGER_ENDPOINT, PUBLIC_RESOURCE_MANAGER_ENDPOINT
    )


def resource_manager_endpoint(environ: dict[str, str] | None = None) -> str:
    """The ARM endpoint (no trailing slash) the clients call; see :func:`load_environment`."""
    return load_environment(environ).resource_manager_endpoint


@frozen
class AzureClients:
    """One SDK client per service the launch path calls (each is thread-safe)."""

    subscription_id: str
    compute: Any  # azure.mgmt.compute.ComputeManagementClient
    network: Any  # azure.mgmt.network.NetworkManagementClient
    resource_graph: Any  # azure.mgmt.resourcegraph.ResourceGraphClient
    environment: AzureEnvironment

    @classmethod
    def create(
        cls,
        subscription_id: str,
        *,
        credential: Any = None,
        resource_manager_endpoint: str | None = None,
        environment: AzureEnvironment | None = None,
    ) -> AzureClients:
        """Clients for ``subscription_id`` against the resolved cloud (or the given
        endpoint). ``ValueError`` for an empty subscription or a bad environment file:
        every ARM URL needs the subscription, and the SDK's own error would come only at
        the first call."""
        from azure.identity import DefaultAzureCredential
        from azure.mgmt.compute import ComputeManagementClient
        from azure.mgmt.network import NetworkManagementClient
        from azure.mgmt.resourcegraph import ResourceGraphClient

        if not subscription_id or not subscription_id.strip():
            raise ValueError("no Azure subscription id: set AZURE_SUBSCRIPTION_ID")
        env = environment or load_environment()
        if resource_manager_endpoint:
            endpoint = resource_manager_endpoint.rstrip("/")
            env = AzureEnvironment(env.name, endpoint, env.token_audience)
        cred = credential if credential is not None else DefaultAzureCredential()
        common: dict[str, Any] = {
            "base_url": env.resource_manager_endpoint,
            "credential_scopes": [env.credential_scope],
            "user_agent": "karpenter-core",
        }
        return cls(
            subscription_id=subscription_id,
            compute=ComputeManagementClient(cred, subscription_id, **common),
            network=NetworkManagementClient(cred, subscription_id, **common),
            resource_graph=ResourceGraphClient(cred, **common),
            environment=env,
        )
