"""The packages of karpenter_core import each other without circles, and the disruption
decisions import nothing that talks to an API server (ARCHITECTURE §2: "provisioning/ and
disruption/ are pure decisions over state/ + cloudprovider/; only kube/ and sim/ talk to an
API server").

The graph is read from the source with ``ast``: every module's top-level imports, those
inside ``try``/``if`` blocks included, ``if TYPE_CHECKING:`` blocks and imports inside
functions left out (neither runs when the module is imported). Importing ``a.b.c`` also
runs ``a.b``'s ``__init__``, as Python does.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "karpenter_core"

PURE = ("karpenter_core.disruption",)
"""Decisions computed from a snapshot (``karpenter_core.disruption``)."""

ABOVE_THE_DECISIONS = (
    "karpenter_core.controllers",
    "karpenter_core.operator",
    "karpenter_core.sim",
    "karpenter_core.cli",
    "karpenter_core.testing",
    "karpenter_core.plugins",
    "karpenter_core.builtins",
    "karpenter_core.plugin_api",
)
"""What the decisions must not reach, even through other modules."""

TALK_TO_A_CLIENT = (
    "karpenter_core.kube",
    "karpenter_core.sim",
    "karpenter_core.state.cluster",
    "karpenter_core.state.cost",
    "karpenter_core.runtime.context",
    "karpenter_core.runtime.manager",
    "karpenter_core.runtime.events",
)
"""Modules that hold or are an API client (the client, the in-memory server, cluster
state and the cost tracker, which list; the controller context, the manager, the event
recorder): the decisions import none of them."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def _modules() -> Mapping[str, Path]:
    return {_module_name(p): p for p in sorted((ROOT / PACKAGE).rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _top_level_imports(module: str, tree: ast.Module, is_package: bool) -> Iterator[str]:
    """The modules ``module``'s top-level statements import (absolute names)."""

    def visit(body: list[ast.stmt]) -> Iterator[str]:
        for stmt in body:
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    yield alias.name
            elif isinstance(stmt, ast.ImportFrom):
                if stmt.level:
                    base = module.split(".")
                    if not is_package:
                        base.pop()
                    base = base[: len(base) - (stmt.level - 1)]
                    target = ".".join([*base, stmt.module] if stmt.module else base)
                else:
                    target = stmt.module or ""
                yield target
                for alias in stmt.names:  # ``from package import submodule``
                    yield f"{target}.{alias.name}"
            elif isinstance(stmt, ast.If):
                if not _is_type_checking(stmt.test):
                    yield from visit(stmt.body)
                yield from visit(stmt.orelse)
            elif isinstance(stmt, ast.Try):
                yield from visit(stmt.body)
                for handler in stmt.handlers:
                    yield from visit(handler.body)
                yield from visit(stmt.orelse)
                yield from visit(stmt.finalbody)

    yield from visit(tree.body)


@cache
def _graph() -> Mapping[str, frozenset[str]]:
    """Module -> the karpenter_core modules importing it runs (parent packages included)."""
    modules = _modules()
    out: dict[str, frozenset[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets: set[str] = set()
        for imported in _top_level_imports(name, tree, path.name == "__init__.py"):
            parts = imported.split(".")
            for i in range(1, len(parts) + 1):
                candidate = ".".join(parts[:i])
                if candidate in modules and candidate != name:
                    targets.add(candidate)
        out[name] = frozenset(targets)
    return out


def _layer(module: str) -> str | None:
    """The package a module belongs to, for the cycle check (None: the root package)."""
    parts = module.split(".")
    if len(parts) == 1:
        return None
    if parts[1] == "controllers" and len(parts) > 2:
        return ".".join(parts[1:3])
    return parts[1]


def _package_edges() -> dict[str, dict[str, list[tuple[str, str]]]]:
    """Package -> imported package -> the module imports behind the edge."""
    edges: dict[str, dict[str, list[tuple[str, str]]]] = {}
    for module, targets in _graph().items():
        source = _layer(module)
        for target in targets:
            dest = _layer(target)
            if source is None or dest is None or dest == source:
                continue
            edges.setdefault(source, {}).setdefault(dest, []).append((module, target))
    return edges


def _cycles(edges: Mapping[str, Mapping[str, object]]) -> list[list[str]]:
    """The strongly connected components with more than one package (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return found


def _reachable(start: str) -> dict[str, str]:
    """Every module importing ``start`` runs, with the module that imports it."""
    graph = _graph()
    via: dict[str, str] = {}
    todo = [start]
    while todo:
        module = todo.pop()
        for target in graph.get(module, ()):
            if target not in via and target != start:
                via[target] = module
                todo.append(target)
    return via


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _chain(via: Mapping[str, str], start: str, end: str) -> str:
    path = [end]
    while path[-1] != start:
        path.append(via[path[-1]])
    return " -> ".join(reversed(path))


def test_the_graph_sees_the_packages() -> None:
    modules = _modules()
    assert "karpenter_core.disruption.candidates" in modules
    assert "karpenter_core.controllers.disruption.controller" in modules
    graph = _graph()
    assert "karpenter_core.disruption.snapshot" in graph["karpenter_core.disruption.candidates"]
    # TYPE_CHECKING imports are not edges: hookspecs names the method types only for mypy
    assert not any(m.startswith("karpenter_core.disruption") for m in graph[f"{PACKAGE}.hookspecs"])


def test_no_import_cycle_between_packages() -> None:
    edges = _package_edges()
    explained = []
    for cycle in _cycles(edges):
        lines = [f"cycle between {', '.join(cycle)}:"]
        for source in cycle:
            for dest in cycle:
                for module, target in sorted(edges.get(source, {}).get(dest, []))[:3]:
                    lines.append(f"  {module} imports {target}")
        explained.append("\n".join(lines))
    assert explained == []


@pytest.mark.parametrize("pure", PURE)
def test_the_decisions_reach_nothing_above_them(pure: str) -> None:
    offending = []
    for module in sorted(m for m in _modules() if _within(m, (pure,))):
        via = _reachable(module)
        for target in sorted(via):
            if _within(target, ABOVE_THE_DECISIONS):
                offending.append(_chain(via, module, target))
                break
    assert offending == []


@pytest.mark.parametrize("pure", PURE)
def test_the_decisions_import_nothing_that_talks_to_a_client(pure: str) -> None:
    graph = _graph()
    offending = [
        f"{module} imports {target}"
        for module in sorted(graph)
        if _within(module, (pure,))
        for target in sorted(graph[module])
        if _within(target, TALK_TO_A_CLIENT)
    ]
    assert offending == []


def test_a_cycle_is_found_and_named() -> None:
    edges = {"a": {"b": []}, "b": {"c": []}, "c": {"a": []}, "d": {"a": []}}
    assert _cycles(edges) == [["a", "b", "c"]]
