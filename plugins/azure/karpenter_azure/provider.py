"""A placeholder Azure CloudProvider: it exists so ``serve --cloud-provider azure`` fails with
an honest message instead of "unknown provider", and so the plugin's labels and
NodeClass kind are already registered for validation.

Every operation raises NotImplementedError until Azure support (Resource SKUs, VM
creation, retail prices) is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NoReturn

from karpenter_azure.labels import AKS_NODE_CLASS

if TYPE_CHECKING:
    from karpenter_core.plugin_api import DriftReason, NodeClassKind, RepairPolicy

NAME = "azure"


class AzureCloudProvider:
    """Holds its settings and refuses every call; see the module docstring."""

    def __init__(self, settings: Mapping[str, str]) -> None:
        self.settings = dict(settings)

    @property
    def name(self) -> str:
        return NAME

    def _unsupported(self, operation: str) -> NoReturn:
        raise NotImplementedError(
            f"the {NAME} cloud provider cannot launch yet: {operation}() is not implemented "
            f"(karpenter-azure is a catalogue-only skeleton)"
        )

    def create(self, nodeclaim: object) -> NoReturn:
        self._unsupported("create")

    def delete(self, nodeclaim: object) -> NoReturn:
        self._unsupported("delete")

    def get(self, provider_id: str) -> NoReturn:
        self._unsupported("get")

    def list(self) -> NoReturn:
        self._unsupported("list")

    def get_instance_types(self, nodepool: object) -> NoReturn:
        self._unsupported("get_instance_types")

    def is_drifted(self, nodeclaim: object) -> DriftReason:
        self._unsupported("is_drifted")

    def repair_policies(self) -> Sequence[RepairPolicy]:
        self._unsupported("repair_policies")

    def supported_node_classes(self) -> Sequence[NodeClassKind]:
        return (AKS_NODE_CLASS,)
