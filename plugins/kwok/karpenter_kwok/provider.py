"""The KWOK CloudProvider: upstream's simulated provider, whose "instances" are KWOK Nodes.

What is here describes capacity: the instance-type catalogue (the same list for every
NodePool), the repair policies, the NodeClass kind, and no provider-specific drift.
Launching (``create`` writes a Node for the KWOK controller to animate; ``delete``,
``get`` and ``list`` read Nodes back) needs a Kubernetes client and arrives with the
launch work; until then those calls raise ``NotImplementedError`` saying so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, NoReturn

from karpenter_core.cloudprovider.protocol import DriftReason, NodeClassKind, RepairPolicy
from karpenter_kwok.instance_types import load_instance_types
from karpenter_kwok.labels import KWOK_NODE_CLASS

if TYPE_CHECKING:
    from karpenter_core.cloudprovider.types import InstanceType
    from karpenter_core.hookspecs import ProviderContext

NAME = "kwok"
INSTANCE_TYPES_FILE_SETTING = "instance-types-file-path"
INSTANCE_TYPES_FILE_ENV = "INSTANCE_TYPES_FILE_PATH"

REPAIR_POLICIES: tuple[RepairPolicy, ...] = (
    RepairPolicy("Ready", "False", timedelta(minutes=10)),
    RepairPolicy("Ready", "Unknown", timedelta(minutes=10)),
)
"""Kubelet's Ready condition, False or Unknown for 10 minutes, as upstream."""


class KwokCloudProvider:
    """Serves a fixed instance-type catalogue; see the module docstring for what is missing."""

    def __init__(self, instance_types: Sequence[InstanceType]) -> None:
        self._instance_types = tuple(instance_types)

    @classmethod
    def from_context(cls, context: ProviderContext) -> KwokCloudProvider:
        """The spec's factory: the catalogue from the context's settings (see
        :meth:`from_settings`)."""
        return cls.from_settings(context.settings)

    @classmethod
    def from_settings(
        cls, settings: Mapping[str, str], environ: Mapping[str, str] | None = None
    ) -> KwokCloudProvider:
        """Build from plugin settings: ``instance-types-file-path``, else the
        ``INSTANCE_TYPES_FILE_PATH`` environment variable, else the built-in catalogue.

        A file that cannot be loaded raises ``InstanceTypesFileError`` naming it.
        """
        env = os.environ if environ is None else environ
        path = settings.get(INSTANCE_TYPES_FILE_SETTING) or env.get(INSTANCE_TYPES_FILE_ENV) or None
        return cls(load_instance_types(path))

    @property
    def name(self) -> str:
        return NAME

    def get_instance_types(self, nodepool: object | None = None) -> list[InstanceType]:
        """Every instance type, whatever the NodePool (KWOK has no per-NodeClass filtering)."""
        return list(self._instance_types)

    def is_drifted(self, nodeclaim: object) -> DriftReason:
        """KWOK instances never drift on the provider side."""
        return ""

    def repair_policies(self) -> Sequence[RepairPolicy]:
        return REPAIR_POLICIES

    def supported_node_classes(self) -> Sequence[NodeClassKind]:
        return (KWOK_NODE_CLASS,)

    def _cannot_launch(self, operation: str) -> NoReturn:
        raise NotImplementedError(
            f"the {NAME} cloud provider cannot launch nodes yet: {operation}() is not "
            "implemented (it serves instance types only)"
        )

    def create(self, nodeclaim: object) -> NoReturn:
        self._cannot_launch("create")

    def delete(self, nodeclaim: object) -> NoReturn:
        self._cannot_launch("delete")

    def get(self, provider_id: str) -> NoReturn:
        self._cannot_launch("get")

    def list(self) -> NoReturn:
        self._cannot_launch("list")
