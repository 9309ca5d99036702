"""A CloudProvider wrapper that times every call and counts its failures.

Upstream wraps the provider once (``metrics(overlay(provider))``) so every controller's
calls are measured the same way: ``karpenter_cloudprovider_duration_seconds`` by
controller, method and provider, and ``karpenter_cloudprovider_errors_total`` with the
error's kind as the ``error`` label. Wrap a provider once only, or calls are counted twice.

The ``controller`` label comes from :data:`CURRENT_CONTROLLER`, a context variable the
runtime sets around every reconcile (:mod:`karpenter_core.runtime.scope`, re-exported
here); Go reads the same thing from the request context.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from karpenter_core import metrics
from karpenter_core.cloudprovider.errors import (
    is_insufficient_capacity,
    is_node_class_not_ready,
    is_nodeclaim_not_found,
)
from karpenter_core.runtime.scope import CURRENT_CONTROLLER, controller_scope

if TYPE_CHECKING:
    from karpenter_core.apis.v1 import NodeClaim, NodePool
    from karpenter_core.cloudprovider.protocol import (
        CloudProvider,
        DriftReason,
        NodeClassKind,
        RepairPolicy,
    )
    from karpenter_core.cloudprovider.types import InstanceType

__all__ = [
    "CURRENT_CONTROLLER",
    "MetricsDecorator",
    "controller_scope",
    "decorate",
    "error_type_label",
]

_T = TypeVar("_T")


def error_type_label(err: BaseException) -> str:
    """The ``error`` label: the well-known error kind, or ``""`` for anything else."""
    if is_insufficient_capacity(err):
        return metrics.ERROR_INSUFFICIENT_CAPACITY
    if is_nodeclaim_not_found(err):
        return metrics.ERROR_NODECLAIM_NOT_FOUND
    if is_node_class_not_ready(err):
        return metrics.ERROR_NODECLASS_NOT_READY
    return metrics.ERROR_UNKNOWN


class MetricsDecorator:
    """Delegates to ``inner`` and records duration and errors of the measured methods.

    ``timer`` returns seconds; it measures the real time a call took (default
    ``time.perf_counter``), which is what the histogram is about even in a simulation
    where the virtual clock stands still during a call. Attributes the protocol does not
    name (provider extras such as lifecycle hooks) pass straight through.
    """

    def __init__(
        self, inner: CloudProvider, timer: Callable[[], float] = time.perf_counter
    ) -> None:
        self._inner = inner
        self._timer = timer

    @property
    def inner(self) -> CloudProvider:
        """The wrapped provider."""
        return self._inner

    @property
    def name(self) -> str:
        return self._inner.name

    def _measure(self, method: str, call: Callable[[], _T]) -> _T:
        controller = CURRENT_CONTROLLER.get()
        provider = self._inner.name
        start = self._timer()
        try:
            return call()
        except Exception as err:
            metrics.CLOUDPROVIDER_ERRORS_TOTAL.labels(
                controller=controller,
                method=method,
                provider=provider,
                error=error_type_label(err),
            ).inc()
            raise
        finally:
            metrics.CLOUDPROVIDER_DURATION_SECONDS.labels(
                controller=controller, method=method, provider=provider
            ).observe(max(0.0, self._timer() - start))

    def create(self, nodeclaim: NodeClaim) -> NodeClaim:
        return self._measure("Create", lambda: self._inner.create(nodeclaim))

    def delete(self, nodeclaim: NodeClaim) -> None:
        self._measure("Delete", lambda: self._inner.delete(nodeclaim))

    def get(self, provider_id: str) -> NodeClaim:
        return self._measure("Get", lambda: self._inner.get(provider_id))

    def list(self) -> Sequence[NodeClaim]:
        return self._measure("List", self._inner.list)

    def get_instance_types(self, nodepool: NodePool | None) -> Sequence[InstanceType]:
        return self._measure("GetInstanceTypes", lambda: self._inner.get_instance_types(nodepool))

    def is_drifted(self, nodeclaim: NodeClaim) -> DriftReason:
        return self._measure("IsDrifted", lambda: self._inner.is_drifted(nodeclaim))

    def repair_policies(self) -> Sequence[RepairPolicy]:
        return self._inner.repair_policies()

    def supported_node_classes(self) -> Sequence[NodeClassKind]:
        return self._inner.supported_node_classes()

    def __getattr__(self, attr: str) -> Any:
        # Only reached for attributes not defined here: provider-specific extras.
        if attr.startswith("__") or attr in ("_inner", "_timer"):
            raise AttributeError(attr)
        return getattr(self._inner, attr)

    def __repr__(self) -> str:
        return f"MetricsDecorator({self._inner!r})"


def decorate(provider: CloudProvider) -> CloudProvider:
    """``provider`` wrapped with metrics; an already-wrapped provider is returned as is,
    so a second wrap cannot double-count."""
    if isinstance(provider, MetricsDecorator):
        return provider
    return MetricsDecorator(provider)
