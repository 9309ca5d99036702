"""``karpenter snapshot``: a copy of a live cluster's objects in one file, for ``simulate
--from`` and ``explain`` to work on offline.

:mod:`~karpenter_core.snapshot.fileformat` reads and writes the file (the format is
documented in ``docs/snapshot.md``), :mod:`~karpenter_core.snapshot.take` lists a cluster
into one, :mod:`~karpenter_core.snapshot.anonymise` hides its names.
"""

from karpenter_core.snapshot.anonymise import Anonymiser, anonymise
from karpenter_core.snapshot.fileformat import (
    API_VERSION,
    KIND,
    Snapshot,
    SnapshotBuilder,
    SnapshotError,
    SnapshotSource,
    decode_item,
    encode_item,
    read_snapshot,
    write_snapshot,
)
from karpenter_core.snapshot.take import snapshot_kinds, take_snapshot

__all__ = [
    "API_VERSION",
    "KIND",
    "Anonymiser",
    "Snapshot",
    "SnapshotBuilder",
    "SnapshotError",
    "SnapshotSource",
    "anonymise",
    "decode_item",
    "encode_item",
    "read_snapshot",
    "snapshot_kinds",
    "take_snapshot",
    "write_snapshot",
]
