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
    from karpenter_core.kube.client import KubeClient
    from karpenter_core.plugins import PluginContributions
    from karpenter_core.runtime.clock import Clock
    from karpenter_core.runtime.events import EventRecorder

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
    ``extras`` holds shared singletons later controllers add (the provisioner, the
    disruption queue...) under a name, so one controller can reach another's without a
    global.
    """

    kube: KubeClient
    clock: Clock
    cloud_provider: CloudProvider
    recorder: EventRecorder
    options: Options = attrs.field(factory=Options)
    cluster: Any = None
    plugins: PluginContributions = attrs.field(factory=_builtin_contributions)
    base_cloud_provider: CloudProvider | None = None
    extras: dict[str, Any] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        if self.base_cloud_provider is None:
            self.base_cloud_provider = self.cloud_provider
