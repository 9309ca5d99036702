"""The Google Cloud clients the GCP provider's launch path uses, built once per process.

Normally the clients authenticate with Application Default Credentials (workload identity
for a Karpenter pod on GKE, ``GOOGLE_APPLICATION_CREDENTIALS``, gcloud's user credentials)
and call the public endpoints ``compute.googleapis.com`` / ``container.googleapis.com``.

Two environment variables (ours: upstream's Go SDK honours none) point them elsewhere:

``GCP_COMPUTE_ENDPOINT``
    Base URL of the Compute Engine API (e.g. ``http://127.0.0.1:8080`` or a
    Private Service Connect endpoint ``https://compute-xyz.p.googleapis.com``).
``GCP_CONTAINER_ENDPOINT``
    Base URL of the GKE API.

When an override is a plain ``http://`` URL the clients use anonymous credentials (a
local emulator or test fake cannot check tokens, and ADC may not exist there), so a
``karpenter serve`` subprocess reaches a fake through the environment alone. Both clients
use the REST transport: it is what Compute offers, and it keeps GKE calls on HTTP/1.1
through the same proxies.

Zone operations are waited on through :attr:`GCPClients.zone_operations`, built with the
same endpoint: the ``insert()`` extended-operation helper of the library builds its own
operations client that ignores ``api_endpoint``, so the launch path calls
``insert_unary`` and waits itself (as upstream polls ``ZoneOperations.Get``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from attrs import frozen

__all__ = [
    "COMPUTE_ENDPOINT_ENV",
    "CONTAINER_ENDPOINT_ENV",
    "GCPClients",
    "GCPCredentialsError",
    "endpoint_overrides",
]

COMPUTE_ENDPOINT_ENV = "GCP_COMPUTE_ENDPOINT"
CONTAINER_ENDPOINT_ENV = "GCP_CONTAINER_ENDPOINT"


class GCPCredentialsError(ValueError):
    """No usable Application Default Credentials; one line saying how to provide them."""


def endpoint_overrides(environ: Mapping[str, str] | None = None) -> tuple[str, str]:
    """The (compute, container) endpoint overrides from the environment, "" when unset;
    ``ValueError`` in one line for a value that is not an http(s) URL."""
    env = os.environ if environ is None else environ
    out = []
    for name in (COMPUTE_ENDPOINT_ENV, CONTAINER_ENDPOINT_ENV):
        value = env.get(name, "").strip().rstrip("/")
        if value and not value.startswith(("http://", "https://")):
            raise ValueError(f"{name}={value}: expected an http:// or https:// URL")
        out.append(value)
    return out[0], out[1]


@frozen
class GCPClients:
    """One client per API the launch path calls (each is thread-safe)."""

    instances: Any  # compute_v1.InstancesClient
    disks: Any  # compute_v1.DisksClient
    zone_operations: Any  # compute_v1.ZoneOperationsClient
    region_instance_templates: Any  # compute_v1.RegionInstanceTemplatesClient
    machine_types: Any  # compute_v1.MachineTypesClient
    images: Any  # compute_v1.ImagesClient
    zones: Any  # compute_v1.ZonesClient
    cluster_manager: Any  # container_v1.ClusterManagerClient
    compute_endpoint: str = ""
    container_endpoint: str = ""

    @classmethod
    def create(
        cls,
        *,
        credentials: Any = None,
        compute_endpoint: str | None = None,
        container_endpoint: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> GCPClients:
        """Clients from ADC and the public endpoints, or the given / environment
        endpoint overrides (see the module docstring). ``credentials`` wins over both.
        ``GCPCredentialsError`` when ADC is needed and missing or unreadable (the
        library would otherwise fail with a multi-line message)."""
        from google.auth.exceptions import DefaultCredentialsError

        try:
            return cls._create(credentials, compute_endpoint, container_endpoint, environ)
        except DefaultCredentialsError as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise GCPCredentialsError(
                "no usable Google Cloud credentials (Application Default Credentials: "
                f"workload identity, GOOGLE_APPLICATION_CREDENTIALS or gcloud): {first}"
            ) from e

    @classmethod
    def _create(
        cls,
        credentials: Any,
        compute_endpoint: str | None,
        container_endpoint: str | None,
        environ: Mapping[str, str] | None,
    ) -> GCPClients:
        from google.api_core.client_options import ClientOptions
        from google.cloud import compute_v1, container_v1

        env_compute, env_container = endpoint_overrides(environ)
        compute_ep = (compute_endpoint if compute_endpoint is not None else env_compute).rstrip("/")
        container_ep = (
            container_endpoint if container_endpoint is not None else env_container
        ).rstrip("/")

        def creds(endpoint: str) -> Any:
            if credentials is not None:
                return credentials
            if endpoint.startswith("http://"):
                from google.auth.credentials import AnonymousCredentials

                return AnonymousCredentials()  # type: ignore[no-untyped-call]
            return None  # the library resolves Application Default Credentials

        def opts(endpoint: str) -> ClientOptions | None:
            return ClientOptions(api_endpoint=endpoint) if endpoint else None

        def compute(kind: Any) -> Any:
            return kind(
                credentials=creds(compute_ep),
                client_options=opts(compute_ep),
                transport="rest",
            )

        return cls(
            instances=compute(compute_v1.InstancesClient),
            disks=compute(compute_v1.DisksClient),
            zone_operations=compute(compute_v1.ZoneOperationsClient),
            region_instance_templates=compute(compute_v1.RegionInstanceTemplatesClient),
            machine_types=compute(compute_v1.MachineTypesClient),
            images=compute(compute_v1.ImagesClient),
            zones=compute(compute_v1.ZonesClient),
            cluster_manager=container_v1.ClusterManagerClient(
                credentials=creds(container_ep),
                client_options=opts(container_ep),
                transport="rest",
            ),
            compute_endpoint=compute_ep,
            container_endpoint=container_ep,
        )
