"""``karpenter snapshot``: a copy of a live cluster's objects in one file, for ``simulate
--from`` and ``explain`` to work on offline.

:mod:`~karpenter_core.snapshot.fileformat` reads and writes the file (the format is
documented in ``docs/snapshot.md``).
"""

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

__all__ = [
    "API_VERSION",
    "KIND",
    "Snapshot",
    "SnapshotBuilder",
    "SnapshotError",
    "SnapshotSource",
    "decode_item",
    "encode_item",
    "read_snapshot",
    "write_snapshot",
]
