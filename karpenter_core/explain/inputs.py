"""What an explanation is computed from: the cluster's objects, read once.

The objects come from manifests or a ``karpenter snapshot`` file (read the way ``karpenter
schedule -f`` reads them: same validation, NodeOverlays applied, NodeClasses passed to the
provider) and the instance types from the provider's offline catalogue, so an explanation
needs no credentials and can be reproduced from the file alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from attrs import frozen

from karpenter_core.cloudprovider.types import InstanceType
from karpenter_core.provisioning.scheduler import DEFAULT_OPTIONS, SchedulerOptions

if TYPE_CHECKING:  # the CLI imports this package: import its reader lazily
    from karpenter_core.cli.schedule import ScheduleInput
    from karpenter_core.snapshot import Snapshot

__all__ = ["ExplainInput", "load_explain_input"]


@frozen
class ExplainInput:
    """The cluster as read (``schedule``'s parsed input), each NodePool's instance types
    after overlays, the scheduler options and the instant the explanation is for."""

    inp: ScheduleInput
    instance_types: Mapping[str, Sequence[InstanceType]]
    now: datetime
    options: SchedulerOptions = DEFAULT_OPTIONS


def load_explain_input(
    paths: Sequence[str] = (),
    *,
    snapshot: Snapshot | None = None,
    cloud_provider: str | None = None,
    region: str | None = None,
    instance_types_file: str | None = None,
    now: datetime | None = None,
    options: SchedulerOptions | None = None,
) -> ExplainInput:
    """Read ``paths`` (or the objects of ``snapshot``) and the provider's catalogue;
    raises ``InputError`` on bad input. ``now`` defaults to the snapshot's ``takenAt``
    (the instant it describes), else the current time."""
    from karpenter_core.apis.manifests import LoadedObject
    from karpenter_core.apis.v1 import APIError, parse_time
    from karpenter_core.cli.schedule import (
        _plugin_manager,
        input_instance_types,
        read_input,
        read_objects,
        with_scoring,
    )

    if snapshot is not None:
        where = snapshot.source.server or "snapshot"
        inp = read_objects(
            [LoadedObject(where, i, obj) for i, obj in enumerate(snapshot.iter_objects())]
        )
        if now is None and snapshot.taken_at:
            try:
                now = parse_time(snapshot.taken_at)
            except APIError:
                now = None
    else:
        inp = read_input(paths)
    pm = _plugin_manager()
    types, _, _ = input_instance_types(inp, pm, cloud_provider, instance_types_file, region)
    # the operator's scorers (INSTANCE_TYPE_SCORER, NodePool annotations): the verdict's
    # NodeClaim is ordered as serve would order it
    scored = with_scoring(options or DEFAULT_OPTIONS, None, pm, lambda _note: None)
    return ExplainInput(
        inp=inp,
        instance_types=types,
        now=now or datetime.now(UTC),
        options=scored,
    )
