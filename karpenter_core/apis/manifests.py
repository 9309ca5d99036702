"""Load Kubernetes manifests the way ``kubectl apply -f`` does.

Paths may be files or directories (``.yaml``, ``.yml`` and ``.json`` files, in name order;
sub-directories only with ``recursive``), ``-`` for standard input; files may hold several
YAML documents; ``List`` objects (``kind: List`` or ``kind: NodePoolList``...) are expanded
into their items. Problems are raised as :class:`ManifestError` with one line naming the file
and document, never a traceback.

YAML is read like Kubernetes reads it: timestamps stay strings (``creationTimestamp`` is a
``metav1.Time`` string, not a Python datetime) and a key repeated in one mapping is an error
(``kubectl`` rejects duplicate fields too).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml
from attrs import frozen

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


class ManifestError(ValueError):
    """A file that cannot be read as manifests; the message names the file (and document)."""


@frozen
class LoadedObject:
    """One object read from ``source``; ``index`` counts objects within that source."""

    source: str
    index: int
    obj: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind", ""))

    @property
    def api_version(self) -> str:
        return str(self.obj.get("apiVersion", ""))

    @property
    def name(self) -> str:
        meta = self.obj.get("metadata")
        if isinstance(meta, dict):
            name = meta.get("name") or meta.get("generateName")
            if isinstance(name, str) and name:
                return name
        return f"<unnamed #{self.index + 1}>"

    @property
    def display(self) -> str:
        """``Kind/name`` as kubectl prints it."""
        return f"{self.kind or '<no kind>'}/{self.name}"


class _KubeLoader(yaml.SafeLoader):
    """SafeLoader without timestamp resolution and with duplicate-key detection."""


_KubeLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _construct_mapping(loader: _KubeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "found an unhashable mapping key", key_node.start_mark
            ) from None
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen[key] = key_node
    return dict(loader.construct_pairs(node, deep=True))


_KubeLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse_documents(text: str, source: str) -> list[LoadedObject]:
    """Parse the YAML/JSON ``text`` of ``source`` into objects (Lists expanded)."""
    out: list[LoadedObject] = []
    doc_no = 0
    try:
        # _KubeLoader is a SafeLoader subclass: no arbitrary Python objects.
        for doc in yaml.load_all(text, Loader=_KubeLoader):
            doc_no += 1
            if doc is None:
                continue
            where = f"{source}: document {doc_no}"
            if not isinstance(doc, dict):
                raise ManifestError(
                    f"{where}: expected a Kubernetes object (a mapping), got {_kind_of(doc)}"
                )
            for obj in _expand(doc, where):
                out.append(LoadedObject(source, len(out), obj))
    except yaml.YAMLError as e:
        raise ManifestError(
            f"{source}: invalid YAML in document {doc_no + 1}: {_yaml_problem(e)}"
        ) from None
    return out


def _kind_of(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__


def _yaml_problem(e: yaml.YAMLError) -> str:
    problem = getattr(e, "problem", None) or str(e).splitlines()[0]
    mark = getattr(e, "problem_mark", None)
    if mark is not None:
        return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
    return str(problem)


def _is_list(doc: dict[str, Any]) -> bool:
    kind = doc.get("kind")
    return isinstance(kind, str) and kind.endswith("List") and "items" in doc


def _expand(doc: dict[str, Any], where: str) -> Iterator[dict[str, Any]]:
    if not _is_list(doc):
        yield doc
        return
    items = doc.get("items")
    if items is None:
        return
    if not isinstance(items, list):
        raise ManifestError(f"{where}: {doc['kind']}.items must be a list")
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ManifestError(f"{where}: {doc['kind']}.items[{i}] is not an object")
        yield from _expand(item, f"{where}: items[{i}]")


def manifest_files(paths: Iterable[str], recursive: bool = False) -> list[str]:
    """The files ``paths`` name, kubectl-style; raises :class:`ManifestError` for a missing path."""
    files: list[str] = []
    for raw in paths:
        if raw == "-":
            files.append("-")
            continue
        path = Path(raw)
        if path.is_dir():
            pattern = "**/*" if recursive else "*"
            found = sorted(
                p
                for p in path.glob(pattern)
                if p.is_file() and p.suffix.lower() in MANIFEST_SUFFIXES
            )
            files.extend(str(p) for p in found)
        elif path.is_file():
            files.append(str(path))
        elif path.exists():
            raise ManifestError(f"{raw}: not a regular file or directory")
        else:
            raise ManifestError(f"{raw}: no such file or directory")
    return files


def load_file(path: str) -> list[LoadedObject]:
    """Objects in one file (``-`` reads standard input)."""
    if path == "-":
        return parse_documents(sys.stdin.read(), "<stdin>")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ManifestError(f"{path}: not a UTF-8 text file") from None
    except OSError as e:
        raise ManifestError(f"{path}: cannot read: {e.strerror or e}") from None
    return parse_documents(text, path)


def load_manifests(paths: Iterable[str], recursive: bool = False) -> list[LoadedObject]:
    """Every object in ``paths`` (files, directories, ``-``), in order."""
    out: list[LoadedObject] = []
    for f in manifest_files(paths, recursive):
        out.extend(load_file(f))
    return out


__all__ = [
    "LoadedObject",
    "ManifestError",
    "load_file",
    "load_manifests",
    "manifest_files",
    "parse_documents",
]
