"""A cloud provider for controller tests (upstream's ``pkg/cloudprovider/fake``, reduced).

It serves a fixed catalogue and launches nothing: tests that need nodes create the Node
and NodeClaim objects themselves, so what is under test is the controller, not a launch
path. Provider plugins may use it too, e.g. to test an instance-type overlay against a
known catalogue.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from karpenter_core.cloudprovider.errors import NodeClaimNotFoundError
from karpenter_core.cloudprovider.protocol import NodeClassKind, RepairPolicy
from karpenter_core.cloudprovider.types import InstanceType

__all__ = ["KWOK_NODE_CLASS", "FakeCloudProvider"]

KWOK_NODE_CLASS = NodeClassKind(
    group="karpenter.kwok.sh",
    kind="KWOKNodeClass",
    version="v1alpha1",
    implicit=True,  # as the KWOK provider declares it (see NodeClassKind)
    default_status={"conditions": [{"type": "Ready", "status": "True", "reason": "Ready"}]},
)
"""The NodeClass kind the fake claims, so the test NodePools of the KWOK examples are its."""


class FakeCloudProvider:
    """Serves ``instance_types`` (upstream's five-type fake catalogue by default).

    ``fail_for`` holds NodePool names whose catalogue cannot be read (``get_instance_types``
    raises ``RuntimeError(fail_message)``); ``calls`` counts catalogue reads. ``create``
    is not supported; ``delete`` and ``get`` report the instance gone; ``list`` is empty.
    """

    name = "fake"

    def __init__(
        self,
        instance_types: Sequence[InstanceType] | None = None,
        *,
        node_classes: Sequence[NodeClassKind] = (KWOK_NODE_CLASS,),
        repair_policies: Sequence[RepairPolicy] = (),
        fail_message: str = "catalogue unavailable",
    ) -> None:
        if instance_types is None:
            from karpenter_core.provisioning.scheduler import fakecatalog

            instance_types = fakecatalog.instance_types(5)
        self.its = list(instance_types)
        self.node_classes = list(node_classes)
        self.policies = list(repair_policies)
        self.fail_for: set[str] = set()
        self.fail_message = fail_message
        self.drift_reason = ""
        self.calls = 0

    def get_instance_types(self, nodepool: Any) -> list[InstanceType]:
        self.calls += 1
        if nodepool is not None and nodepool.name in self.fail_for:
            raise RuntimeError(self.fail_message)
        return list(self.its)

    def supported_node_classes(self) -> list[NodeClassKind]:
        return list(self.node_classes)

    def create(self, nodeclaim: Any) -> Any:
        raise NotImplementedError("the fake cloud provider launches nothing")

    def delete(self, nodeclaim: Any) -> None:
        raise NodeClaimNotFoundError("gone")

    def get(self, provider_id: str) -> Any:
        raise NodeClaimNotFoundError(provider_id)

    def list(self) -> list[Any]:
        return []

    def is_drifted(self, nodeclaim: Any) -> str:
        return self.drift_reason

    def repair_policies(self) -> builtins.list[RepairPolicy]:
        return list(self.policies)
