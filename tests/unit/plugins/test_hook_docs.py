"""docs/plugin-hooks.md must document every hook, with the signature the code declares.

The doc's python code blocks are parsed: an undecorated ``def karpenter_*`` is a hook's
documented signature, a ``@hookimpl``-decorated one is an example. Both must match
``inspect.signature`` of the hookspec, every hook needs exactly one documented signature,
and every field of every registration object must be mentioned.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import attrs
import pytest

from karpenter_core import hookspecs
from karpenter_core.hookspecs import HOOK_SPEC_TYPES, ProviderSetting

DOC = Path(__file__).resolve().parents[3] / "docs" / "plugin-hooks.md"
HOOK_PREFIX = "karpenter_"


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)


def _hookspec_names() -> list[str]:
    return [
        name
        for name, obj in vars(hookspecs).items()
        if name.startswith(HOOK_PREFIX) and callable(obj) and hasattr(obj, "karpenter_spec")
    ]


def _signature_text(params: list[tuple[str, str, str | None]], returns: str | None) -> str:
    inner = ", ".join(
        f"{kind}{name}: {ann}" if ann else f"{kind}{name}" for kind, name, ann in params
    )
    return f"({inner}) -> {returns}"


def _code_signature(func: object) -> str:
    sig = inspect.signature(func)  # type: ignore[arg-type]
    kinds = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    params = []
    for p in sig.parameters.values():
        ann = None if p.annotation is inspect.Parameter.empty else str(p.annotation)
        params.append((kinds.get(p.kind, ""), p.name, ann))
    returns = (
        None if sig.return_annotation is inspect.Signature.empty else str(sig.return_annotation)
    )
    return _signature_text(params, returns)


def _doc_signature(node: ast.FunctionDef) -> str:
    a = node.args
    params = [
        ("", arg.arg, ast.unparse(arg.annotation) if arg.annotation else None)
        for arg in [*a.posonlyargs, *a.args]
    ]
    if a.vararg:
        params.append(
            ("*", a.vararg.arg, ast.unparse(a.vararg.annotation) if a.vararg.annotation else None)
        )
    params += [
        ("", arg.arg, ast.unparse(arg.annotation) if arg.annotation else None)
        for arg in a.kwonlyargs
    ]
    if a.kwarg:
        params.append(
            ("**", a.kwarg.arg, ast.unparse(a.kwarg.annotation) if a.kwarg.annotation else None)
        )
    return _signature_text(params, ast.unparse(node.returns) if node.returns else None)


def _documented_defs() -> list[tuple[ast.FunctionDef, bool]]:
    """(def node, is_example) for every ``karpenter_*`` def in the doc's code blocks."""
    found = []
    for block in _python_blocks(DOC.read_text()):
        tree = ast.parse(block)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name.startswith(HOOK_PREFIX):
                found.append((node, bool(node.decorator_list)))
    return found


def test_hookspecs_are_discovered() -> None:
    # Guards the tests below against silently checking nothing.
    assert set(_hookspec_names()) == set(HOOK_SPEC_TYPES)


def test_every_code_block_is_valid_python() -> None:
    blocks = _python_blocks(DOC.read_text())
    assert blocks
    for block in blocks:
        ast.parse(block)


@pytest.mark.parametrize("hook", sorted(HOOK_SPEC_TYPES))
def test_hook_signature_is_documented_exactly(hook: str) -> None:
    documented = [node for node, example in _documented_defs() if node.name == hook and not example]
    assert len(documented) == 1, f"{hook} needs exactly one documented signature in {DOC.name}"
    assert _doc_signature(documented[0]) == _code_signature(getattr(hookspecs, hook))


@pytest.mark.parametrize("hook", sorted(HOOK_SPEC_TYPES))
def test_hook_has_an_example_hookimpl(hook: str) -> None:
    examples = [node for node, example in _documented_defs() if node.name == hook and example]
    assert examples, f"{hook} needs an example @hookimpl in {DOC.name}"


def test_documented_hooks_all_exist_with_matching_signatures() -> None:
    for node, _ in _documented_defs():
        assert node.name in HOOK_SPEC_TYPES, f"{DOC.name} documents unknown hook {node.name}"
        assert _doc_signature(node) == _code_signature(getattr(hookspecs, node.name)), node.name


@pytest.mark.parametrize(
    "spec_type", [*HOOK_SPEC_TYPES.values(), ProviderSetting], ids=lambda t: t.__name__
)
def test_every_registration_field_is_documented(spec_type: type) -> None:
    text = DOC.read_text()
    missing = [f.name for f in attrs.fields(spec_type) if f"`{f.name}`" not in text]
    assert not missing, f"{spec_type.__name__} fields not documented: {missing}"


def test_doc_signature_comparison_detects_a_difference() -> None:
    node = ast.parse(
        "def karpenter_cloud_providers(region: str) -> list[CloudProviderSpec]: ..."
    ).body[0]
    assert isinstance(node, ast.FunctionDef)
    assert _doc_signature(node) != _code_signature(hookspecs.karpenter_cloud_providers)
