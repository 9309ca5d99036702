"""The one output convention of every command that prints results.

``-o table`` (the default, for people), ``-o wide`` (a table with more columns, where a
command has them: zones and capacity types, as ``kubectl get -o wide`` adds columns),
``-o json`` and ``-o yaml`` (the same document, camelCase keys, for programs), and
``-o html`` where a command renders a page. ``-o text``, the older name of ``table``, is
still accepted and not shown.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import click

from karpenter_core.apis import yamlio

__all__ = [
    "HTML",
    "JSON",
    "TABLE",
    "WIDE",
    "YAML",
    "OutputFormat",
    "dump",
    "output_option",
    "table_lines",
]

TABLE = "table"
WIDE = "wide"
JSON = "json"
YAML = "yaml"
HTML = "html"

ALIASES = {"text": TABLE}
"""Older spellings, accepted and not listed in ``--help``."""


class OutputFormat(click.Choice):  # type: ignore[type-arg]
    """A ``-o`` value: one of the command's formats, or an alias of one."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            value = ALIASES.get(value, value)
        return super().convert(value, param, ctx)


def output_option(
    *, wide: bool = False, html: bool = False, default: str = TABLE, help: str | None = None
) -> Callable[[Any], Any]:
    """The ``-o/--output`` option with the formats this command has."""
    formats = [TABLE, *([WIDE] if wide else []), JSON, YAML, *([HTML] if html else [])]
    described = {
        TABLE: "table: for people",
        WIDE: "wide: the table with zones and capacity types",
        JSON: "json/yaml: for programs, camelCase keys",
        HTML: "html: a page with charts",
    }
    text = help or "; ".join(described[f] for f in formats if f in described) + "."
    return click.option(
        "-o",
        "--output",
        type=OutputFormat(formats),
        default=default,
        show_default=True,
        help=text,
    )


def dump(document: Any, fmt: str) -> str:
    """``document`` as ``json`` (indented, UTF-8 kept) or ``yaml`` (keys in their order),
    ending in a newline."""
    if fmt == YAML:
        return yamlio.safe_dump(document, sort_keys=False, allow_unicode=True)
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def table_lines(
    headers: Sequence[str], rows: Sequence[Sequence[str]], *, gap: str = "  "
) -> list[str]:
    """Aligned columns, a header first; the last column is free text (not padded) and no
    line ends in spaces."""
    all_rows = [list(headers), *(list(r) for r in rows)]
    widths = [max(len(r[i]) for r in all_rows) for i in range(len(headers) - 1)]
    return [
        gap.join([*(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)), r[-1]]).rstrip()
        for r in all_rows
    ]
