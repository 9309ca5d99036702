"""What every controller is built from.

Controllers take one :class:`ControllerContext` instead of a long argument list. Only the
``kube`` client and the ``clock`` differ between ``karpenter serve`` (API server, wall
clock) and ``karpenter simulate`` (in-memory server, virtual clock).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from karpenter_core.runtime.options import Options

if TYPE_CHECKING:
    from karpenter_core.cloudprovider.protocol import CloudProvider
    from karpenter_core.controllers.capacitybuffer.virtualpods import VirtualPodCache
    from karpenter_core.controllers.disruption.controller import DisruptionController
    from karpenter_core.controllers.disruption.queue import Queue as DisruptionQueue
    from karpenter_core.controllers.node.termination.eviction import EvictionQueue
    from karpenter_core.controllers.nodeclaim.nodepoolhealth import NodePoolHealth
    from karpenter_core.controllers.nodeoverlay.store import InstanceTypeStore
    from karpenter_core.controllers.provisioning.provisioner import Provisioner
    from karpenter_core.kube.client import KubeClient
    from karpenter_core.plugins import PluginContributions
    from karpenter_core.runtime.clock import Clock
    from karpenter_core.runtime.events import EventRecorder
    from karpenter_core.state.cost import ClusterCost

__all__ = ["ControllerContext"]


def _builtin_contributions() -> PluginContributions:
    from karpenter_core.plugins import builtin_contributions

    return builtin_contributions()


@attrs.define(slots=True)
class ControllerContext:
    """The shared singletons of one operator process.

    ``cluster`` is the in-memory cluster state (``karpenter_core.state.cluster.Cluster``);
    ``plugins`` what the plugins contribute (the built-ins' alone unless the caller
    collected them from a plugin manager); ``base_cloud_provider`` the provider as its
    factory built it, before the core wrapped it in ``cloud_provider`` (metrics, overlays,
    the leader guard) — a provider's own controllers reach its clients through it.

    The rest are the process's shared singletons, typed, as upstream's
    ``controllers.NewControllers`` holds them in locals: each is made once, by the
    composition root (:func:`~karpenter_core.operator.controllers.register_all`) or on
    first use by the package that owns it (``provisioner_of(ctx)``...), so one controller
    reaches another's without a global and without a bag of names.
    """

    kube: KubeClient
    clock: Clock
    cloud_provider: CloudProvider
    recorder: EventRecorder
    options: Options = attrs.field(factory=Options)
    cluster: Any = None
    plugins: PluginContributions = attrs.field(factory=_builtin_contributions)
    base_cloud_provider: CloudProvider | None = None

    provisioner: Provisioner | None = None
    """The Provisioner (disruption launches replacements through it)."""
    disruption: DisruptionController | None = None
    disruption_queue: DisruptionQueue | None = None
    """The orchestration queue of started disruption commands."""
    eviction_queue: EvictionQueue | None = None
    """Node termination's PDB-aware eviction queue."""
    nodepool_health: NodePoolHealth | None = None
    """Each NodePool's recent registration outcomes (NodeRegistrationHealthy)."""
    cost: ClusterCost | None = None
    """The cluster cost tracker (``karpenter_nodepools_cost_total``)."""
    overlay_store: InstanceTypeStore | None = None
    """What the NodeOverlay controller evaluated, applied by the NodeOverlay overlay."""
    below_nodeoverlays: CloudProvider | None = None
    """The provider as seen below the NodeOverlay overlay (set once overlays are on)."""
    virtual_pods: VirtualPodCache | None = None
    """CapacityBuffer's virtual pods, shared by its controller and the provisioner."""
    state_resync_seconds: float | None = attrs.field(default=None)
    """How often cluster state re-reads what it tracks: None for the clock's default (a
    minute on a wall clock, never on a virtual one), 0 for never."""

    @state_resync_seconds.validator
    def _check_resync(self, attribute: Any, value: float | None) -> None:
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ValueError(
                f"state_resync_seconds must be a non-negative number of seconds or None, "
                f"got {value!r}"
            )

    def __attrs_post_init__(self) -> None:
        if self.base_cloud_provider is None:
            self.base_cloud_provider = self.cloud_provider
