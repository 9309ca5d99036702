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
    from karpenter_core.runtime.clock import Clock
    from karpenter_core.runtime.events import EventRecorder


@attrs.define(slots=True)
class ControllerContext:
    """The shared singletons of one operator process.

    ``cluster`` is the in-memory cluster state (``karpenter_core.state.cluster.Cluster``);
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
    extras: dict[str, Any] = attrs.field(factory=dict)
