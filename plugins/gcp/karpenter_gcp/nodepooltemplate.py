"""The GKE node pool whose instance template gives Karpenter nodes their bootstrap.

Karpenter on GKE does not write a node bootstrap of its own: as upstream
(``pkg/providers/nodepooltemplate``), it picks a *source* node pool of the cluster and
copies the metadata (``kube-env``, ``kube-labels``, ``configure-sh``, ``user-data``...) of
that pool's instance template, which :func:`karpenter_gcp.metadata.node_metadata` then
rewrites for each node.

The source pool is, in order: the configured preferred pool (it must exist and be
``RUNNING`` or ``RUNNING_WITH_ERROR``, else an error), ``default-pool`` when eligible,
else the first eligible pool by name with Karpenter's own ``karpenter-fallback`` pool last.
The template is the region's instance template whose ``cluster-name`` metadata is the
cluster and whose ``goog-k8s-node-pool-name`` label is the pool.

When a cluster has no usable pool, Karpenter creates ``karpenter-fallback``: zero nodes,
no autoscaling, ``COS_CONTAINERD``, shielded (secure boot, integrity monitoring), legacy
kubelet read-only port off, project SSH keys blocked, the GKE metadata server when the
cluster uses workload identity, and private nodes when the cluster's nodes are private.

Selection and template matching are pure functions; :class:`NodePoolTemplateProvider`
does the calls.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from attrs import field, frozen

from karpenter_gcp.clients import GCPClients
from karpenter_gcp.gke import ClusterInfo, GKEAPIError, GKEProvider

__all__ = [
    "DEFAULT_POOL",
    "FALLBACK_POOL",
    "FALLBACK_POOL_IMAGE_TYPE",
    "NODE_POOL_NAME_LABEL",
    "NodePoolTemplateProvider",
    "SourcePoolError",
    "TemplateRef",
    "fallback_node_pool",
    "find_template",
    "is_pool_eligible",
    "select_source_pool",
]

DEFAULT_POOL = "default-pool"
FALLBACK_POOL = "karpenter-fallback"
FALLBACK_POOL_IMAGE_TYPE = "COS_CONTAINERD"
NODE_POOL_NAME_LABEL = "goog-k8s-node-pool-name"
_CLUSTER_NAME_KEY = "cluster-name"
_ELIGIBLE = frozenset({"RUNNING", "RUNNING_WITH_ERROR"})


class SourcePoolError(RuntimeError):
    """No node pool (or no template of it) can supply the bootstrap; one line."""


def _status_name(status: Any) -> str:
    return str(getattr(status, "name", status))


def is_pool_eligible(status: Any) -> bool:
    """A pool can be a source when ``RUNNING`` or ``RUNNING_WITH_ERROR`` (a string or the
    ``container_v1.NodePool.Status`` enum)."""
    return _status_name(status) in _ELIGIBLE


def select_source_pool(pools: Iterable[tuple[str, Any]], preferred: str = "") -> str:
    """The source pool's name from (name, status) pairs (see the module docstring);
    ``SourcePoolError`` when none is eligible."""
    listed = list(pools)
    if preferred:
        status = next((s for n, s in listed if n == preferred), None)
        if status is None:
            raise SourcePoolError(f"preferred node pool {preferred!r} not found")
        if not is_pool_eligible(status):
            raise SourcePoolError(
                f"preferred node pool {preferred!r} has status {_status_name(status)} "
                "(must be RUNNING or RUNNING_WITH_ERROR)"
            )
        return preferred
    eligible = [n for n, s in listed if is_pool_eligible(s)]
    if DEFAULT_POOL in eligible:
        return DEFAULT_POOL
    if not eligible:
        raise SourcePoolError(
            "no eligible node pool in the cluster (pools must be RUNNING or RUNNING_WITH_ERROR)"
        )
    return sorted(eligible, key=lambda n: (n == FALLBACK_POOL, n))[0]


def _map(value: Mapping[str, str]) -> Mapping[str, str]:
    return dict(value)


@frozen
class TemplateRef:
    """An instance template reduced to what matching needs."""

    name: str
    labels: Mapping[str, str] = field(factory=dict, converter=_map)
    metadata: Mapping[str, str] = field(factory=dict, converter=_map)

    @classmethod
    def from_api(cls, template: Any) -> TemplateRef:
        """From a ``compute_v1.InstanceTemplate``."""
        props = template.properties
        return cls(
            name=template.name,
            labels=dict(props.labels),
            metadata={i.key: i.value for i in props.metadata.items if i.key},
        )


def find_template(
    templates: Iterable[TemplateRef], cluster_name: str, pool: str
) -> TemplateRef | None:
    """The first template of ``pool`` in ``cluster_name`` (its ``cluster-name`` metadata
    and ``goog-k8s-node-pool-name`` label), None when there is none."""
    for t in templates:
        if (
            t.metadata.get(_CLUSTER_NAME_KEY) == cluster_name
            and t.labels.get(NODE_POOL_NAME_LABEL) == pool
        ):
            return t
    return None


def fallback_node_pool(cluster: ClusterInfo | None, service_account: str = "") -> Any:
    """The ``container_v1.NodePool`` Karpenter creates when the cluster has no usable
    pool (see the module docstring); ``cluster`` None gives the minimal defaults."""
    from google.cloud import container_v1

    config = container_v1.NodeConfig(
        image_type=FALLBACK_POOL_IMAGE_TYPE,
        service_account=service_account,
        shielded_instance_config=container_v1.ShieldedInstanceConfig(
            enable_secure_boot=True, enable_integrity_monitoring=True
        ),
        kubelet_config=container_v1.NodeKubeletConfig(insecure_kubelet_readonly_port_enabled=False),
        metadata={"block-project-ssh-keys": "true"},
    )
    if cluster is not None and cluster.workload_pool:
        config.workload_metadata_config = container_v1.WorkloadMetadataConfig(
            mode=container_v1.WorkloadMetadataConfig.Mode.GKE_METADATA
        )
    pool = container_v1.NodePool(
        name=FALLBACK_POOL,
        autoscaling=container_v1.NodePoolAutoscaling(enabled=False),
        initial_node_count=0,
        config=config,
    )
    if cluster is not None and cluster.private_nodes:
        pool.network_config = container_v1.NodeNetworkConfig(enable_private_nodes=True)
    return pool


class NodePoolTemplateProvider:
    """Chooses the source pool (:meth:`sync`) and reads its template's metadata."""

    def __init__(
        self,
        clients: GCPClients,
        gke: GKEProvider,
        project: str,
        region: str,
        cluster_name: str,
        *,
        preferred_pool: str = "",
        service_account: str = "",
    ) -> None:
        self._clients = clients
        self._gke = gke
        self.project = project
        self.region = region
        self.cluster_name = cluster_name
        self.preferred_pool = preferred_pool
        self.service_account = service_account
        self._lock = threading.Lock()
        self._source = ""

    @property
    def source_pool(self) -> str:
        """The pool chosen by the last :meth:`sync` ("" before the first)."""
        with self._lock:
            return self._source

    def sync(self) -> str:
        """Choose the source pool from the cluster's pools now; returns its name."""
        pools = [(p.name, p.status) for p in self._gke.node_pools()]
        chosen = select_source_pool(pools, self.preferred_pool)
        with self._lock:
            self._source = chosen
        return chosen

    def source_metadata(self) -> dict[str, str]:
        """The metadata items of the source pool's instance template (syncing first
        when no pool was chosen yet); ``SourcePoolError`` when no template matches."""
        from google.api_core.exceptions import GoogleAPICallError

        from karpenter_gcp.gceerrors import describe

        pool = self.source_pool or self.sync()
        try:
            templates = [
                TemplateRef.from_api(t)
                for t in self._clients.region_instance_templates.list(
                    project=self.project, region=self.region
                )
            ]
        except GoogleAPICallError as e:
            raise SourcePoolError(
                f"listing instance templates of {self.project}/{self.region}: {describe(e)}"
            ) from e
        found = find_template(templates, self.cluster_name, pool)
        if found is None:
            raise SourcePoolError(
                f"no instance template with label {NODE_POOL_NAME_LABEL}={pool} for "
                f"cluster {self.cluster_name} in {self.region}"
            )
        return dict(found.metadata)

    def ensure_fallback_pool(self) -> bool:
        """Create ``karpenter-fallback`` unless it exists; True when it was created. The
        cluster is read for its settings; when that fails the minimal pool is created."""
        from google.api_core.exceptions import AlreadyExists

        if self._gke.node_pool(FALLBACK_POOL) is not None:
            return False
        try:
            info: ClusterInfo | None = self._gke.info()
        except GKEAPIError:
            info = None
        try:
            self._gke.create_node_pool(fallback_node_pool(info, self.service_account))
        except GKEAPIError as e:
            if isinstance(e.__cause__, AlreadyExists):
                return False  # created concurrently
            raise
        return True
