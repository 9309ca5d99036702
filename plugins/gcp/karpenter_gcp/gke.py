"""The GKE cluster Karpenter serves, read through the GKE API (``google-cloud-container``).

As upstream (``pkg/providers/gke``), the launch path needs from the cluster: its id (the
base32 GCE label and the firewall network tag), network and subnetwork, the pods'
secondary range, whether nodes are private (no external IP), its node locations (the
zones Karpenter may launch in; the region's zones when the cluster names none), and its
versions (release-channel versions for images are resolved in
:mod:`karpenter_gcp.images` from the location's server config). The cluster is read once and cached for ``ttl`` seconds (upstream: 30 min), so
a launch does not cost a GKE call.

:func:`cluster_info` is pure (a ``container_v1.Cluster`` in, a :class:`ClusterInfo` out);
:class:`GKEProvider` does the calls.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from attrs import field, frozen

from karpenter_gcp.clients import GCPClients

__all__ = [
    "CLUSTER_TTL",
    "ClusterInfo",
    "GKEAPIError",
    "GKEProvider",
    "cluster_info",
    "cluster_path",
    "region_of",
]

CLUSTER_TTL = 30 * 60.0


class GKEAPIError(RuntimeError):
    """A GKE or Compute call about the cluster failed; one line naming the call."""


def region_of(location: str) -> str:
    """The region of a location: ``us-central1-a`` → ``us-central1``; a region is
    returned as is."""
    parts = location.split("-")
    return "-".join(parts[:2]) if len(parts) == 3 else location


def cluster_path(project: str, location: str, name: str) -> str:
    """``projects/<p>/locations/<l>/clusters/<name>``, the GKE resource name."""
    return f"projects/{project}/locations/{location}/clusters/{name}"


def _strs(value: Any) -> tuple[str, ...]:
    return tuple(value)


@frozen
class ClusterInfo:
    """What launching needs of the cluster (see the module docstring)."""

    name: str
    id: str = ""
    location: str = ""
    locations: tuple[str, ...] = field(default=(), converter=_strs)
    network: str = ""
    subnetwork: str = ""
    pod_range_name: str = ""
    private_nodes: bool = False
    workload_pool: str = ""
    master_version: str = ""
    node_version: str = ""
    endpoint: str = ""


def cluster_info(cluster: Any) -> ClusterInfo:
    """A :class:`ClusterInfo` from a ``container_v1.Cluster``. Network and subnetwork are
    made ``projects/...`` paths when GKE answers short names (``default``), since the
    instance's network interface wants a path or URL."""
    net = cluster.network_config
    network = net.network or (f"global/networks/{cluster.network}" if cluster.network else "")
    subnetwork = net.subnetwork or cluster.subnetwork or ""
    if subnetwork and "/" not in subnetwork:
        subnetwork = f"regions/{region_of(cluster.location)}/subnetworks/{subnetwork}"
    private = bool(net.default_enable_private_nodes) or bool(
        cluster.private_cluster_config.enable_private_nodes
    )
    return ClusterInfo(
        name=cluster.name,
        id=cluster.id,
        location=cluster.location,
        locations=sorted(cluster.locations),
        network=network,
        subnetwork=subnetwork,
        pod_range_name=cluster.ip_allocation_policy.cluster_secondary_range_name,
        private_nodes=private,
        workload_pool=cluster.workload_identity_config.workload_pool,
        master_version=cluster.current_master_version,
        node_version=cluster.current_node_version,
        endpoint=cluster.endpoint,
    )


class GKEProvider:
    """Reads the cluster (cached), its zones and its node pools."""

    def __init__(
        self,
        clients: GCPClients,
        project: str,
        location: str,
        cluster_name: str,
        *,
        ttl: float = CLUSTER_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clients = clients
        self.project = project
        self.location = location
        self.cluster_name = cluster_name
        self._ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._cached: tuple[float, Any] | None = None
        self._zones: tuple[float, list[str]] | None = None

    @property
    def path(self) -> str:
        return cluster_path(self.project, self.location, self.cluster_name)

    def _guard(self, what: str, fn: Callable[[], Any]) -> Any:
        from google.api_core.exceptions import GoogleAPICallError

        from karpenter_gcp.gceerrors import describe

        try:
            return fn()
        except GoogleAPICallError as e:
            raise GKEAPIError(f"{what}: {describe(e)}") from e

    def cluster(self) -> Any:
        """The ``container_v1.Cluster`` (cached for ``ttl``)."""
        now = self._clock()
        with self._lock:
            if self._cached is not None and now - self._cached[0] < self._ttl:
                return self._cached[1]
        found = self._guard(
            f"getting GKE cluster {self.path}",
            lambda: self._clients.cluster_manager.get_cluster(name=self.path),
        )
        with self._lock:
            self._cached = (now, found)
        return found

    def info(self) -> ClusterInfo:
        """:func:`cluster_info` of the cached cluster."""
        return cluster_info(self.cluster())

    def zones(self) -> list[str]:
        """The zones nodes may go to: the cluster's node locations, else every zone of
        its region (upstream ``ResolveClusterZones``), sorted."""
        cluster = self.cluster()
        if cluster.locations:
            return sorted(cluster.locations)
        now = self._clock()
        with self._lock:
            if self._zones is not None and now - self._zones[0] < self._ttl:
                return list(self._zones[1])
        prefix = region_of(self.location) + "-"
        names = self._guard(
            f"listing zones of project {self.project}",
            lambda: sorted(
                z.name
                for z in self._clients.zones.list(project=self.project)
                if z.name.startswith(prefix)
            ),
        )
        if not names:
            raise GKEAPIError(f"no zones found for region {region_of(self.location)}")
        with self._lock:
            self._zones = (now, names)
        return list(names)

    def kubernetes_version(self) -> str:
        """The control plane's version (``currentMasterVersion``), e.g. ``1.31.5-gke.1023000``."""
        return str(self.cluster().current_master_version)

    def node_pools(self) -> list[Any]:
        """The cluster's ``container_v1.NodePool`` list (not cached: pools change)."""
        resp = self._guard(
            f"listing node pools of {self.path}",
            lambda: self._clients.cluster_manager.list_node_pools(parent=self.path),
        )
        return list(resp.node_pools)

    def node_pool(self, name: str) -> Any | None:
        """The node pool ``name``, None when GKE does not know it."""
        from google.api_core.exceptions import NotFound

        try:
            return self._guard(
                f"getting node pool {name} of {self.path}",
                lambda: self._clients.cluster_manager.get_node_pool(
                    name=f"{self.path}/nodePools/{name}"
                ),
            )
        except GKEAPIError as e:
            if isinstance(e.__cause__, NotFound):
                return None
            raise

    def create_node_pool(self, node_pool: Any) -> None:
        """Ask GKE to create ``node_pool`` (a ``container_v1.NodePool``); the operation is
        not waited on (the pool's template appears when GKE is done)."""
        self._guard(
            f"creating node pool {node_pool.name} in {self.path}",
            lambda: self._clients.cluster_manager.create_node_pool(
                parent=self.path, node_pool=node_pool
            ),
        )
