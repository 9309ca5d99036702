"""The snapshot file: one JSON document holding every object the engine needs from a cluster.

.. code-block:: json

    {"apiVersion": "snapshot.karpenter.sh/v1alpha1", "kind": "Snapshot",
     "takenAt": "2025-01-01T00:00:00Z",
     "source": {"server": "https://10.0.0.1:6443", "context": "prod"},
     "anonymised": false,
     "items": [{"apiVersion": "v1", "kind": "Node", ...}, ...]}

Written as plain JSON, or gzip-compressed when the path ends in ``.gz``; read from either
(gzip is recognised by its magic bytes, not the name), and from YAML (the reader takes a
document whose first character is not ``{`` as YAML; meant for small hand-written
snapshots, so it is read whole and bounded like every other input file).

Memory is the design constraint: a 150,000-pod cluster is about 600 MB of JSON, and the same
pods as Python dicts take five times that. So a :class:`Snapshot` keeps each item as its
compact UTF-8 JSON and decodes it only when asked (each accessor returns fresh dicts the
caller may change), the writer streams those bytes out one item per line, and the reader
parses the file incrementally, one item at a time, never holding the whole text.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import re
import stat
import sys
import zlib
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, Any

import yaml
from attrs import field, frozen

from karpenter_core.apis.limits import MAX_INPUT_BYTES, elide, one_line

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

API_VERSION = "snapshot.karpenter.sh/v1alpha1"
KIND = "Snapshot"

Obj = dict[str, Any]

_CHUNK_CHARS = 1 << 20
MAX_ITEM_CHARS = 64 << 20
"""An item whose JSON text is longer is refused (an object the API server stores is at
most about 1.5 MB; the bound keeps a file that never closes an item from being read whole
into memory before its error is reported)."""

_GZIP_MAGIC = b"\x1f\x8b"
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_decoder = json.JSONDecoder()


class SnapshotError(ValueError):
    """A snapshot file that cannot be read or written: one line naming the file and the
    problem."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


@frozen
class SnapshotSource:
    """Which cluster a snapshot was taken from: the API server (a host, or ``in-cluster``)
    and the kubeconfig context (empty in-cluster or when the default context was used)."""

    server: str = ""
    context: str = ""


def encode_item(obj: Mapping[str, Any]) -> bytes:
    """The compact UTF-8 JSON a snapshot keeps for one object."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def decode_item(data: bytes) -> Obj:
    """One object back from :func:`encode_item`'s bytes (a fresh dict every call)."""
    obj: Obj = json.loads(data)
    return obj


def item_problem(obj: Any) -> str | None:
    """Why ``obj`` cannot be a snapshot item, or None: it must be an object with a string
    ``apiVersion``, ``kind`` and ``metadata.name`` (all API-server objects have them)."""
    if not isinstance(obj, dict):
        return "is not an object"
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        return "has no kind"
    api_version = obj.get("apiVersion")
    if not isinstance(api_version, str) or not api_version:
        return f"({elide(kind, 60)}) has no apiVersion"
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        return f"({elide(kind, 60)}) has no metadata.name"
    return None


@frozen
class Snapshot:
    """A cluster's objects at one moment, grouped by kind (see the module docstring).

    Build one with :meth:`from_objects`, a :class:`SnapshotBuilder`, :func:`read_snapshot`
    or ``take_snapshot``. Every accessor decodes the stored JSON anew, so callers own the
    dicts they get and a snapshot never changes.
    """

    taken_at: str = ""
    """When it was taken (RFC 3339, UTC); empty when unknown."""
    source: SnapshotSource = field(factory=SnapshotSource)
    anonymised: bool = False
    encoded: Mapping[str, tuple[bytes, ...]] = field(factory=dict, repr=False)
    """Kind -> the items of that kind as compact JSON, kinds in the order they were added."""

    @classmethod
    def from_objects(
        cls,
        objects: Iterable[Mapping[str, Any]],
        *,
        taken_at: str = "",
        source: SnapshotSource | None = None,
        anonymised: bool = False,
    ) -> Snapshot:
        """A snapshot of ``objects`` (each needs apiVersion, kind and metadata.name)."""
        builder = SnapshotBuilder()
        for obj in objects:
            builder.add(obj)
        return builder.build(taken_at=taken_at, source=source, anonymised=anonymised)

    # ---------------------------------------------------------------- generic access

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds present, in the order they were added (the file's order)."""
        return tuple(self.encoded)

    def counts(self) -> dict[str, int]:
        """Number of items per kind, in :attr:`kinds` order."""
        return {kind: len(items) for kind, items in self.encoded.items()}

    def __len__(self) -> int:
        return sum(len(items) for items in self.encoded.values())

    def iter_objects(self, kind: str | None = None) -> Iterator[Obj]:
        """The items of ``kind`` (every item, kind by kind, when None), decoded one at a
        time: loading 150,000 pods into a server this way never holds them all as dicts."""
        groups = self.encoded.values() if kind is None else (self.encoded.get(kind, ()),)
        for items in groups:
            for data in items:
                yield decode_item(data)

    def objects(self, kind: str) -> list[Obj]:
        """The items of ``kind`` (e.g. ``"Pod"``), decoded."""
        return list(self.iter_objects(kind))

    # ---------------------------------------------------------------- by kind

    def namespaces(self) -> list[Obj]:
        return self.objects("Namespace")

    def nodes(self) -> list[Obj]:
        return self.objects("Node")

    def pods(self) -> list[Obj]:
        return self.objects("Pod")

    def nodepools(self) -> list[Obj]:
        return self.objects("NodePool")

    def nodeclaims(self) -> list[Obj]:
        return self.objects("NodeClaim")

    def daemonsets(self) -> list[Obj]:
        return self.objects("DaemonSet")

    def pdbs(self) -> list[Obj]:
        return self.objects("PodDisruptionBudget")

    def node_overlays(self) -> list[Obj]:
        return self.objects("NodeOverlay")

    def capacity_buffers(self) -> list[Obj]:
        return self.objects("CapacityBuffer")

    def pvcs(self) -> list[Obj]:
        return self.objects("PersistentVolumeClaim")

    def pvs(self) -> list[Obj]:
        return self.objects("PersistentVolume")

    def storage_classes(self) -> list[Obj]:
        return self.objects("StorageClass")

    def csinodes(self) -> list[Obj]:
        return self.objects("CSINode")

    def device_classes(self) -> list[Obj]:
        return self.objects("DeviceClass")

    def resource_claims(self) -> list[Obj]:
        return self.objects("ResourceClaim")

    def resource_slices(self) -> list[Obj]:
        return self.objects("ResourceSlice")

    def node_classes(self) -> list[Obj]:
        """Every provider's NodeClass objects (kinds named ``*NodeClass``: EC2NodeClass,
        KWOKNodeClass, ...)."""
        return [
            obj
            for kind in self.encoded
            if kind.endswith("NodeClass")
            for obj in self.iter_objects(kind)
        ]


class SnapshotBuilder:
    """Collects items kind by kind, encoding each as it comes (so the caller's dict can be
    dropped at once), then :meth:`build` makes the :class:`Snapshot`."""

    def __init__(self) -> None:
        self._groups: dict[str, list[bytes]] = {}

    def add(self, obj: Mapping[str, Any]) -> None:
        """Add one object; a ValueError when it is not an API object (see :func:`item_problem`)."""
        problem = item_problem(obj)
        if problem is not None:
            raise ValueError(f"snapshot item {problem}")
        self.add_encoded(str(obj["kind"]), encode_item(obj))

    def add_encoded(self, kind: str, data: bytes) -> None:
        """Add one object already encoded as compact JSON (trusted: not checked)."""
        group = self._groups.get(kind)
        if group is None:
            group = self._groups[kind] = []
        group.append(data)

    def __len__(self) -> int:
        return sum(len(items) for items in self._groups.values())

    def build(
        self,
        *,
        taken_at: str = "",
        source: SnapshotSource | None = None,
        anonymised: bool = False,
    ) -> Snapshot:
        groups = {kind: tuple(items) for kind, items in self._groups.items()}
        self._groups = {}
        return Snapshot(taken_at, source or SnapshotSource(), anonymised, groups)


# ------------------------------------------------------------------------------- writing


def _header(snapshot: Snapshot) -> bytes:
    return json.dumps(
        {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "takenAt": snapshot.taken_at,
            "source": {"server": snapshot.source.server, "context": snapshot.source.context},
            "anonymised": snapshot.anonymised,
        },
        ensure_ascii=False,
    ).encode()


def _write_to(snapshot: Snapshot, out: IO[bytes]) -> None:
    """The document, one item per line (greppable, and a reader can stream it)."""
    out.write(_header(snapshot)[:-1] + b',\n"items": [')
    sep = b"\n"
    for items in snapshot.encoded.values():
        for data in items:
            out.write(sep)
            out.write(data)
            sep = b",\n"
    out.write(b"\n]}\n")


def write_snapshot(snapshot: Snapshot, path: str | os.PathLike[str]) -> None:
    """Write ``snapshot`` to ``path`` (``-``: standard output), gzip-compressed when the
    name ends in ``.gz``. Items are streamed out as stored, so writing needs no second copy
    of them; a file is written under a temporary name and renamed into place, so a failed
    write never leaves a truncated snapshot behind."""
    name = os.fspath(path)
    if name == "-":
        stdout = sys.stdout.buffer
        _write_to(snapshot, stdout)
        stdout.flush()
        return
    directory, base = os.path.split(name)
    tmp = os.path.join(directory, f".{base}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as raw:
            if name.endswith(".gz"):
                # mtime=0: the same snapshot always compresses to the same bytes
                with (
                    gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0) as gz,
                    io.BufferedWriter(gz, 1 << 20) as out,
                ):
                    _write_to(snapshot, out)
            else:
                _write_to(snapshot, raw)
        os.replace(tmp, name)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise SnapshotError(f"{name}: cannot write: {e.strerror or e}") from None


# ------------------------------------------------------------------------------- reading


class _JsonStream:
    """Reads one JSON document from a text stream value by value (``raw_decode`` on a
    sliding buffer), tracking lines for error messages."""

    def __init__(self, text: IO[str], source: str) -> None:
        self._text = text
        self.source = source
        self._buf = ""
        self._pos = 0
        self._eof = False
        self._line = 1  # line number of self._buf[0]

    def _fill(self) -> bool:
        if self._eof:
            return False
        chunk = self._text.read(_CHUNK_CHARS)
        if not chunk:
            self._eof = True
            return False
        done = self._buf[: self._pos]
        self._line += done.count("\n")
        self._buf = self._buf[self._pos :] + chunk
        self._pos = 0
        return True

    def _where(self, pos: int) -> str:
        line = self._line + self._buf.count("\n", 0, pos)
        column = pos - self._buf.rfind("\n", 0, pos)
        return f"line {line}, column {column}"

    def error(self, problem: str, pos: int | None = None) -> SnapshotError:
        where = self._where(self._pos if pos is None else pos)
        return SnapshotError(f"{self.source}: {problem} ({where})")

    @property
    def position(self) -> int:
        """Where the next value starts in the buffer (for :meth:`error`)."""
        return self._pos

    def rest(self, limit: int) -> str:
        """Up to ``limit`` characters of what has not been consumed (the whole document,
        when nothing was)."""
        head = self._buf[self._pos :]
        self._buf, self._pos = "", 0
        return head + self._text.read(max(limit - len(head), 0))

    def peek(self) -> str:
        """The next character that is not whitespace ("" at the end), not consumed."""
        while True:
            match = _WHITESPACE.match(self._buf, self._pos)
            self._pos = match.end() if match else self._pos
            if self._pos < len(self._buf):
                return self._buf[self._pos]
            if not self._fill():
                return ""

    def take(self, expected: str, what: str) -> str:
        """Consume the next character, which must be one of ``expected``."""
        char = self.peek()
        if not char or char not in expected:
            found = repr(char) if char else "the end of the file"
            raise self.error(f"not valid JSON: expected {what}, found {found}")
        self._pos += 1
        return char

    def value(self) -> tuple[Any, str]:
        """The next value, decoded, and its text."""
        if not self.peek():
            raise self.error("not valid JSON: the file ends where a value was expected")
        while True:
            start = self._pos
            try:
                obj, end = _decoder.raw_decode(self._buf, start)
            except json.JSONDecodeError as e:
                # maybe only cut off by the end of the buffer: read on and try again
                if len(self._buf) - start <= MAX_ITEM_CHARS and self._fill():
                    continue
                raise self.error(f"not valid JSON: {e.msg}", e.pos) from None
            except RecursionError:
                raise self.error("not valid JSON: nested too deeply") from None
            if end == len(self._buf) and self._fill():
                continue  # a number may go on in the next chunk
            self._pos = end
            return obj, self._buf[start:end]


def _open_binary(name: str) -> io.BufferedReader:
    if name == "-":
        stdin: Any = sys.stdin.buffer
        return stdin if isinstance(stdin, io.BufferedReader) else io.BufferedReader(stdin)
    try:
        mode = os.stat(name).st_mode
        if stat.S_ISDIR(mode):
            raise SnapshotError(f"{name}: is a directory, expected a snapshot file")
        return open(name, "rb")  # closed by the caller
    except FileNotFoundError:
        raise SnapshotError(f"{name}: no such file") from None
    except OSError as e:
        raise SnapshotError(f"{name}: cannot read: {e.strerror or e}") from None


def _header_problem(key: str, value: Any) -> str | None:
    if key == "apiVersion" and value != API_VERSION:
        return f"apiVersion is {elide(repr(value), 80)}, expected {API_VERSION!r}"
    if key == "kind" and value != KIND:
        return f"kind is {elide(repr(value), 80)}, expected {KIND!r} (is this a snapshot?)"
    if key == "takenAt" and not isinstance(value, str):
        return "takenAt is not a string"
    if key == "anonymised" and not isinstance(value, bool):
        return "anonymised is not true or false"
    if key == "source" and not (
        isinstance(value, dict)
        and all(isinstance(value.get(k, ""), str) for k in ("server", "context"))
    ):
        return "source is not an object with string server and context"
    return None


def _finish(header: Mapping[str, Any], builder: SnapshotBuilder, source: str) -> Snapshot:
    for key, expected in (("apiVersion", API_VERSION), ("kind", KIND)):
        if key not in header:
            raise SnapshotError(f"{source}: no {key} (expected {key}: {expected})")
    src = header.get("source") or {}
    return builder.build(
        taken_at=str(header.get("takenAt") or ""),
        source=SnapshotSource(str(src.get("server") or ""), str(src.get("context") or "")),
        anonymised=bool(header.get("anonymised", False)),
    )


def _read_json(stream: _JsonStream) -> Snapshot:
    builder = SnapshotBuilder()
    header: dict[str, Any] = {}
    seen_items = False
    if stream.take("{", "'{'") and stream.peek() == "}":
        stream.take("}", "'}'")
    else:
        while True:
            at = stream.position
            key, _ = stream.value()
            if not isinstance(key, str):
                raise stream.error("not valid JSON: expected a field name in quotes", at)
            stream.take(":", "':'")
            if key == "items":
                if seen_items:
                    raise stream.error("items appears twice")
                seen_items = True
                _read_items(stream, builder)
            else:
                value, _ = stream.value()
                problem = _header_problem(key, value)
                if problem is not None:
                    raise SnapshotError(f"{stream.source}: {problem}")
                header[key] = value
            if stream.take(",}", "',' or '}'") == "}":
                break
    if stream.peek():
        raise stream.error("not valid JSON: more data after the document")
    if not seen_items:
        raise SnapshotError(f"{stream.source}: no items list")
    return _finish(header, builder, stream.source)


def _read_items(stream: _JsonStream, builder: SnapshotBuilder) -> None:
    stream.take("[", "'[' (items is a list)")
    if stream.peek() == "]":
        stream.take("]", "']'")
        return
    index = 0
    while True:
        obj, text = stream.value()
        problem = item_problem(obj)
        if problem is not None:
            raise SnapshotError(f"{stream.source}: items[{index}] {problem}")
        builder.add_encoded(obj["kind"], text.encode())
        index += 1
        if stream.take(",]", "',' or ']'") == "]":
            return


def _read_yaml(data: str, source: str) -> Snapshot:
    from karpenter_core.apis.manifests import iter_yaml, yaml_problem

    if len(data) > MAX_INPUT_BYTES:
        raise SnapshotError(
            f"{source}: a YAML snapshot larger than {MAX_INPUT_BYTES >> 20} MiB; "
            "large snapshots are JSON (as karpenter snapshot writes them)"
        )
    try:
        documents = [doc for doc in iter_yaml(data) if doc is not None]
    except yaml.YAMLError as e:
        raise SnapshotError(f"{source}: not valid YAML: {yaml_problem(e)}") from None
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise SnapshotError(f"{source}: expected one YAML document holding a Snapshot object")
    doc: dict[str, Any] = documents[0]
    header: dict[str, Any] = {}
    for key, value in doc.items():
        if key == "items":
            continue
        problem = _header_problem(key, value)
        if problem is not None:
            raise SnapshotError(f"{source}: {problem}")
        header[key] = value
    items = doc.get("items")
    if not isinstance(items, list):
        raise SnapshotError(f"{source}: no items list")
    builder = SnapshotBuilder()
    for index, obj in enumerate(items):
        problem = item_problem(obj)
        if problem is not None:
            raise SnapshotError(f"{source}: items[{index}] {problem}")
        builder.add_encoded(obj["kind"], encode_item(obj))
    return _finish(header, builder, source)


def read_snapshot(path: str | os.PathLike[str]) -> Snapshot:
    """Read a snapshot file (``-``: standard input): JSON, gzip-compressed JSON, or YAML.

    Problems are one :class:`SnapshotError` line naming the file: missing or unreadable,
    not gzip/UTF-8/JSON/YAML, another kind or apiVersion, an item without a kind."""
    name = os.fspath(path)
    source = "<stdin>" if name == "-" else name
    raw = _open_binary(name)
    try:
        binary: Any = raw
        if raw.peek(2)[:2] == _GZIP_MAGIC:
            binary = gzip.GzipFile(fileobj=raw, mode="rb")
        text = io.TextIOWrapper(binary, encoding="utf-8-sig", newline="")
        stream = _JsonStream(text, source)
        first = stream.peek()
        if not first:
            raise SnapshotError(f"{source}: empty file, expected a snapshot")
        if first in "{[":
            return _read_json(stream)
        return _read_yaml(stream.rest(MAX_INPUT_BYTES + 1), source)
    except UnicodeDecodeError:
        raise SnapshotError(f"{source}: not a UTF-8 text file") from None
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise SnapshotError(
            f"{source}: a damaged or truncated gzip file ({e or 'cut short'})"
        ) from None
    except OSError as e:
        raise SnapshotError(f"{source}: cannot read: {e.strerror or e}") from None
    finally:
        if name != "-":
            raw.close()
