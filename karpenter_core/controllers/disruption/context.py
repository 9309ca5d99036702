"""What a disruption method's factory is called with (the ``DisruptionContext`` of the
:class:`~karpenter_core.hookspecs.DisruptionMethodSpec` contract)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from attrs import define

if TYPE_CHECKING:
    from karpenter_core.cloudprovider.protocol import CloudProvider
    from karpenter_core.controllers.provisioning.provisioner import Provisioner
    from karpenter_core.disruption.snapshot import DisruptionSnapshot
    from karpenter_core.kube.client import KubeClient
    from karpenter_core.runtime.clock import Clock
    from karpenter_core.runtime.context import ControllerContext
    from karpenter_core.runtime.events import EventRecorder
    from karpenter_core.runtime.options import Options
    from karpenter_core.state.cluster import Cluster

__all__ = ["DisruptionContext", "QueueView"]


class QueueView(Protocol):
    """What the controller asks the orchestration queue about."""

    def has_any(self, *provider_ids: str) -> bool: ...

    def provider_ids(self) -> Sequence[str]: ...


@define
class DisruptionContext:
    """What every disruption method's factory is called with.

    ``ctx`` is the operator's :class:`ControllerContext` (kube client, clock, cloud
    provider, event recorder, options — read feature gates with ``ctx.options.gate``);
    ``cluster`` the in-memory cluster state; ``queue`` the orchestration queue;
    ``provisioner`` the provisioner (its scheduler options and NodePool/instance-type
    reads are what the snapshot's simulation inputs are made of).

    A method decides on the pass's snapshot, which it is given; ``snapshot`` is that
    snapshot while a pass runs, for methods written before snapshots (their
    ``simulate_scheduling(context, ...)`` simulates on it)."""

    ctx: ControllerContext
    cluster: Cluster
    queue: QueueView
    provisioner: Provisioner
    snapshot: DisruptionSnapshot | None = None

    @property
    def clock(self) -> Clock:
        return self.ctx.clock

    @property
    def recorder(self) -> EventRecorder:
        return self.ctx.recorder

    @property
    def kube(self) -> KubeClient:
        return self.ctx.kube

    @property
    def cloud_provider(self) -> CloudProvider:
        return self.ctx.cloud_provider

    @property
    def options(self) -> Options:
        return self.ctx.options
