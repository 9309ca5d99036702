"""Read a user's files safely, and load Kubernetes manifests the way ``kubectl apply -f`` does.

This is the one loader every command uses for the files it is given (``validate``,
``schedule``, ``simulate``, ``instance-types`` and the ``--scheduler-config`` file), so
every command refuses the same hostile input with the same one line:

* :func:`read_text` reads a regular file (or ``-``, standard input) of at most
  :data:`~karpenter_core.apis.limits.MAX_INPUT_BYTES`; a directory, device, FIFO or socket
  is refused without reading it (``/dev/zero`` never ends, a FIFO blocks until a writer
  comes).
* :func:`parse_yaml` parses YAML (and so JSON) into plain JSON values: mapping keys are
  strings, as kubectl makes them; a key repeated in one mapping is an error (kubectl rejects
  duplicate fields too); timestamps stay strings (``creationTimestamp`` is a ``metav1.Time``
  string, not a Python datetime); only JSON's types exist (no ``!!binary``, ``!!set`` or
  Python tags); nesting, alias expansion and integer length are bounded (see
  :mod:`karpenter_core.apis.limits`); aliases are expanded into copies, as Kubernetes sees
  them.
* :func:`parse_json` does the same for files that must be JSON.

For manifests, paths may be files or directories (``.yaml``, ``.yml`` and ``.json`` files,
in name order; sub-directories only with ``recursive``), ``-`` for standard input; files may
hold several YAML documents; ``List`` objects (``kind: List`` or ``kind: NodePoolList``...)
are expanded into their items. Problems are raised as :class:`ManifestError` with one line
naming the file and document, never a traceback.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
from collections.abc import Hashable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from attrs import frozen
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import AliasEvent, Event
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from karpenter_core.apis.limits import (
    MAX_ALIAS_NODES,
    MAX_INPUT_BYTES,
    MAX_INTEGER_DIGITS,
    MAX_NESTING_DEPTH,
    elide,
)
from karpenter_core.apis.shapes import describe

try:  # libyaml scans and parses about five times faster than PyYAML's pure-Python parser
    from yaml._yaml import CParser as _Parser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml.parser import Parser as _PyParser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Parser(Reader, Scanner, _PyParser):  # type: ignore[no-redef]
        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            _PyParser.__init__(self)


MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


class ManifestError(ValueError):
    """A file that cannot be read or parsed; the message is one line naming the file (and
    document)."""


# --- reading -----------------------------------------------------------------------------------

_MIB = 1024 * 1024


def _file_type(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _check_regular(mode: int, path: str) -> None:
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise ManifestError(f"{path}: is a directory, expected a file")
    raise ManifestError(
        f"{path}: {_file_type(mode)}, not a regular file; use - to read standard input"
    )


def _too_large(source: str) -> ManifestError:
    return ManifestError(f"{source}: larger than the {MAX_INPUT_BYTES // _MIB} MiB input limit")


def _read_bounded(fd: int, source: str) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = os.read(fd, min(1 << 20, MAX_INPUT_BYTES + 1 - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_INPUT_BYTES:
            raise _too_large(source)


def _decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ManifestError(f"{source}: not a UTF-8 text file") from None


def _read_stdin() -> str:
    source = "<stdin>"
    binary = getattr(sys.stdin, "buffer", None)
    if binary is None:  # a text stream standing in for stdin (tests)
        text = sys.stdin.read(MAX_INPUT_BYTES + 1)
        if len(text) > MAX_INPUT_BYTES:
            raise _too_large(source)
        return text
    data = binary.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise _too_large(source)
    return _decode(data, source)


def read_text(path: str) -> str:
    """The UTF-8 text of the regular file ``path`` (``-``: standard input), at most
    :data:`~karpenter_core.apis.limits.MAX_INPUT_BYTES`.

    The file is opened without blocking and checked before anything is read: a directory,
    device, FIFO or socket is a :class:`ManifestError`, as are a missing or unreadable file."""
    if path == "-":
        return _read_stdin()
    try:
        _check_regular(os.stat(path).st_mode, path)  # before opening: a socket cannot be
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        if e.errno == errno.ENOENT:
            raise ManifestError(f"{path}: no such file or directory") from None
        if e.errno == errno.EISDIR:
            raise ManifestError(f"{path}: is a directory, expected a file") from None
        raise ManifestError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        info = os.fstat(fd)
        _check_regular(info.st_mode, path)  # again: the path may have changed meanwhile
        if info.st_size > MAX_INPUT_BYTES:
            raise _too_large(path)
        try:
            data = _read_bounded(fd, path)
        except OSError as e:
            raise ManifestError(f"{path}: cannot read: {e.strerror or e}") from None
    finally:
        os.close(fd)
    return _decode(data, path)


# --- parsing -----------------------------------------------------------------------------------


class _LimitError(ConstructorError):
    """A limit of :mod:`karpenter_core.apis.limits` was exceeded while loading."""


class _BoundedComposer(Composer):
    """Composes YAML nodes, refusing nesting deeper than the limit while it goes (the
    composer recurses once per level) and measuring what aliases expand to per document."""

    depth: int = 0
    aliases: int = 0
    alias_nodes: int = 0

    if TYPE_CHECKING:  # provided by the parser this is mixed with

        def check_event(self, *choices: type[Event]) -> bool: ...
        def peek_event(self) -> Event: ...

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(AliasEvent):
            self.aliases += 1
        self.depth += 1
        try:
            if self.depth > MAX_NESTING_DEPTH:
                raise _LimitError(
                    None,
                    None,
                    f"nested more than {MAX_NESTING_DEPTH} levels deep",
                    self.peek_event().start_mark,  # type: ignore[arg-type]  # libyaml's Mark
                )
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def compose_document(self) -> Node | None:
        aliases = self.aliases
        node = super().compose_document()
        if node is not None and self.aliases > aliases:
            self._measure(node)  # without aliases, compose_node has checked everything
        return node

    def _measure(self, root: Node) -> None:
        """Check the document as aliases expand it: its depth, no alias inside itself, and
        the values aliases add (a count kept over the whole stream)."""
        size: dict[int, int] = {}
        depth: dict[int, int] = {}
        distinct = 0
        on_path: set[int] = set()
        stack: list[tuple[Node, bool]] = [(root, False)]
        while stack:
            node, done = stack.pop()
            key = id(node)
            children = _children(node)
            if done:
                on_path.discard(key)
                size[key] = 1 + sum(size[id(c)] for c in children)
                depth[key] = 1 + max((depth[id(c)] for c in children), default=0)
                distinct += 1
                continue
            if key in size:
                continue
            if key in on_path:
                raise _LimitError(None, None, "an alias refers to itself", node.start_mark)
            on_path.add(key)
            stack.append((node, True))
            stack.extend((c, False) for c in children if id(c) not in size)
        if depth[id(root)] > MAX_NESTING_DEPTH:
            raise _LimitError(
                None,
                None,
                f"aliases expand to values nested more than {MAX_NESTING_DEPTH} levels deep",
                root.start_mark,
            )
        self.alias_nodes += size[id(root)] - distinct
        if self.alias_nodes > MAX_ALIAS_NODES:
            raise _LimitError(
                None,
                None,
                f"aliases expand to more than {MAX_ALIAS_NODES:,} values",
                root.start_mark,
            )


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


class _JsonValues(SafeConstructor):
    """Builds JSON values only, the way kubectl converts YAML to JSON."""

    def construct_yaml_int(self, node: ScalarNode) -> int:
        digits = len(str(node.value).lstrip("+-").replace("_", ""))
        if digits > MAX_INTEGER_DIGITS:
            raise _LimitError(
                None,
                None,
                f"an integer of {digits:,} digits (at most {MAX_INTEGER_DIGITS} are read)",
                node.start_mark,
            )
        return super().construct_yaml_int(node)

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        self.flatten_mapping(node)
        out: dict[Hashable, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, list | dict):
                raise ConstructorError(
                    None, None, "a mapping key must be a string", key_node.start_mark
                )
            name = _json_key(key)
            if name in out:
                raise ConstructorError(
                    None, None, f"duplicate key {elide(repr(name))}", key_node.start_mark
                )
            out[name] = self.construct_object(value_node, deep=deep)
        return out


def _json_key(key: Any) -> str:
    """A scalar key as JSON has it: a string (``true``, ``1``, ``null`` become their text)."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return str(key)


def _unsupported_tag(loader: _JsonValues, node: Node) -> Any:
    raise ConstructorError(
        None,
        None,
        f"unsupported tag {elide(str(node.tag).replace('tag:yaml.org,2002:', '!!'))} "
        "(a manifest holds JSON values only)",
        node.start_mark,
    )


_JSON_TAGS = ("null", "bool", "float", "str", "seq", "map")
_JsonValues.yaml_constructors = {
    **{
        tag: constructor
        for tag, constructor in SafeConstructor.yaml_constructors.items()
        if tag is not None and tag.rsplit(":", 1)[-1] in _JSON_TAGS
    },
    "tag:yaml.org,2002:int": _JsonValues.construct_yaml_int,
    None: _unsupported_tag,  # any other tag, ``!!binary``, ``!!set`` or ``!!python/...``
}
_JsonValues.yaml_multi_constructors = {}


class _KubeResolver(Resolver):
    """YAML 1.1's implicit types without timestamps (Kubernetes keeps them as strings)."""


_KubeResolver.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in Resolver.yaml_implicit_resolvers.items()
}


class _KubeLoader(_BoundedComposer, _Parser, _JsonValues, _KubeResolver):
    """libyaml's parser, then the bounded composer, JSON values and Kubernetes' resolver."""

    def __init__(self, stream: str) -> None:
        _Parser.__init__(self, stream)
        _BoundedComposer.__init__(self)
        _JsonValues.__init__(self)
        _KubeResolver.__init__(self)


def _unshare(value: Any) -> Any:
    """A copy of ``value`` in which no mapping or list appears twice (an alias makes the
    loader return one object at each place it is used; Kubernetes sees separate copies)."""
    if isinstance(value, dict):
        return {k: _unshare(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unshare(v) for v in value]
    return value


def yaml_problem(error: yaml.YAMLError) -> str:
    """One line describing a YAML error, with its line and column when known."""
    problem = getattr(error, "problem", None) or (str(error).splitlines() or [""])[0]
    mark = getattr(error, "problem_mark", None)
    text = elide(" ".join(str(problem).split()))
    if mark is not None:
        return f"{text} (line {mark.line + 1}, column {mark.column + 1})"
    return text


def iter_yaml(text: str) -> Iterator[Any]:
    """The documents of ``text`` as JSON values (None for an empty document), within the
    limits; raises :class:`yaml.YAMLError` at the first problem."""
    loader = _KubeLoader(text)
    try:
        while loader.check_node():
            aliases = loader.aliases
            document = loader.construct_document(loader.get_node())
            yield _unshare(document) if loader.aliases > aliases else document
    finally:
        loader.dispose()


def parse_yaml(text: str, source: str) -> list[Any]:
    """The non-empty documents of ``text``; a problem is one :class:`ManifestError` line
    naming ``source`` and the document."""
    return [doc for _, doc in _numbered_documents(text, source)]


def _numbered_documents(text: str, source: str) -> Iterator[tuple[int, Any]]:
    """(1-based document number, document) for the non-empty documents of ``text``."""
    doc_no = 0
    try:
        for doc in iter_yaml(text):
            doc_no += 1
            if doc is not None:
                yield doc_no, doc
    except yaml.YAMLError as e:
        raise ManifestError(
            f"{source}: invalid YAML in document {doc_no + 1}: {yaml_problem(e)}"
        ) from None


def parse_json(text: str, source: str) -> Any:
    """``text`` as one JSON value, within the same limits as YAML; problems are one
    :class:`ManifestError` line naming ``source``."""

    def bounded_int(digits: str) -> int:
        if len(digits.lstrip("-")) > MAX_INTEGER_DIGITS:
            raise ValueError(
                f"an integer of {len(digits.lstrip('-')):,} digits "
                f"(at most {MAX_INTEGER_DIGITS} are read)"
            )
        return int(digits)

    try:
        value = json.loads(text, parse_int=bounded_int)
    except json.JSONDecodeError as e:
        raise ManifestError(
            f"{source}: not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})"
        ) from None
    except RecursionError:
        raise ManifestError(
            f"{source}: not valid JSON: nested more than {MAX_NESTING_DEPTH} levels deep"
        ) from None
    except ValueError as e:
        raise ManifestError(f"{source}: not valid JSON: {e}") from None
    if _depth(value) > MAX_NESTING_DEPTH:
        raise ManifestError(
            f"{source}: not valid JSON: nested more than {MAX_NESTING_DEPTH} levels deep"
        )
    return value


def _depth(value: Any) -> int:
    """How deeply ``value`` nests (a scalar is 1), without recursing."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return deepest


# --- manifests ---------------------------------------------------------------------------------


@frozen
class LoadedObject:
    """One object read from ``source``; ``index`` counts objects within that source."""

    source: str
    index: int
    obj: dict[str, Any]

    @property
    def kind(self) -> str:
        kind = self.obj.get("kind")
        return kind if isinstance(kind, str) else ""

    @property
    def api_version(self) -> str:
        version = self.obj.get("apiVersion")
        return version if isinstance(version, str) else ""

    @property
    def name(self) -> str:
        meta = self.obj.get("metadata")
        if isinstance(meta, dict):
            name = meta.get("name") or meta.get("generateName")
            if isinstance(name, str) and name:
                return elide(name)
        return f"<unnamed #{self.index + 1}>"

    @property
    def display(self) -> str:
        """``Kind/name`` as kubectl prints it."""
        return f"{elide(self.kind) or '<no kind>'}/{self.name}"


def parse_documents(text: str, source: str) -> list[LoadedObject]:
    """Parse the YAML/JSON ``text`` of ``source`` into objects (Lists expanded)."""
    out: list[LoadedObject] = []
    for doc_no, doc in _numbered_documents(text, source):
        where = f"{source}: document {doc_no}"
        if not isinstance(doc, dict):
            raise ManifestError(
                f"{where}: expected a Kubernetes object (a mapping), got {describe(doc)}"
            )
        for obj in _expand(doc, where):
            out.append(LoadedObject(source, len(out), obj))
    return out


SNAPSHOT_GROUP = "snapshot.karpenter.sh"


def _is_list(doc: dict[str, Any]) -> bool:
    """A ``List`` (``kind: List``, ``NodePoolList``...) or a ``karpenter snapshot`` file
    (``kind: Snapshot`` of the snapshot group), whose ``items`` are the objects."""
    kind = doc.get("kind")
    if kind == "Snapshot" and str(doc.get("apiVersion") or "").startswith(SNAPSHOT_GROUP + "/"):
        return "items" in doc
    return isinstance(kind, str) and kind.endswith("List") and "items" in doc


def _expand(doc: dict[str, Any], where: str) -> Iterator[dict[str, Any]]:
    if not _is_list(doc):
        yield doc
        return
    items = doc.get("items")
    if items is None:
        return
    kind = elide(str(doc["kind"]))
    if not isinstance(items, list):
        raise ManifestError(f"{where}: {kind}.items must be a list")
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ManifestError(f"{where}: {kind}.items[{i}] is not an object")
        yield from _expand(item, f"{where}: items[{i}]")


def manifest_files(paths: Iterable[str], recursive: bool = False) -> list[str]:
    """The files ``paths`` name, kubectl-style; raises :class:`ManifestError` for a missing
    path. A directory's ``.yaml``/``.yml``/``.json`` entries are all returned, whatever their
    type: :func:`read_text` refuses the ones that are not regular files."""
    files: list[str] = []
    for raw in paths:
        if raw == "-":
            files.append("-")
            continue
        path = Path(raw)
        try:
            is_dir = path.is_dir()
        except OSError as e:
            raise ManifestError(f"{raw}: cannot read: {e.strerror or e}") from None
        if is_dir:
            pattern = "**/*" if recursive else "*"
            try:
                found = sorted(
                    p
                    for p in path.glob(pattern)
                    if p.suffix.lower() in MANIFEST_SUFFIXES and not p.is_dir()
                )
            except OSError as e:
                raise ManifestError(f"{raw}: cannot list: {e.strerror or e}") from None
            files.extend(str(p) for p in found)
        elif path.exists() or path.is_symlink():
            files.append(str(path))
        else:
            raise ManifestError(f"{raw}: no such file or directory")
    return files


def load_file(path: str) -> list[LoadedObject]:
    """Objects in one file (``-`` reads standard input)."""
    return parse_documents(read_text(path), "<stdin>" if path == "-" else path)


def load_manifests(paths: Iterable[str], recursive: bool = False) -> list[LoadedObject]:
    """Every object in ``paths`` (files, directories, ``-``), in order."""
    out: list[LoadedObject] = []
    for f in manifest_files(paths, recursive):
        out.extend(load_file(f))
    return out


__all__ = [
    "LoadedObject",
    "ManifestError",
    "iter_yaml",
    "load_file",
    "load_manifests",
    "manifest_files",
    "parse_documents",
    "parse_json",
    "parse_yaml",
    "read_text",
    "yaml_problem",
]
