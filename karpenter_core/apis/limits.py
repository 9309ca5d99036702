"""Limits on what a user's file may hold, and how a bad value is shown in an error line.

Every command that reads a file (``validate``, ``schedule``, ``simulate``,
``instance-types``) reads it through :mod:`karpenter_core.apis.manifests`, which enforces the
limits below while loading, so a hostile file is one clear line instead of a traceback, a
hang or gigabytes of memory. The numbers are far above anything a real manifest needs:

* :data:`MAX_INPUT_BYTES` - a file (or standard input) larger than this is refused before
  it is parsed; YAML parsing costs about half a second and ten times the file's size in
  memory per MiB, so this bounds both.
* :data:`MAX_NESTING_DEPTH` - mappings and lists nested deeper than this (Kubernetes
  objects nest about 15 levels) would exhaust Python's recursion limit in whatever walks
  them next.
* :data:`MAX_ALIAS_NODES` - YAML aliases (``*name``) may add at most this many values to a
  file once expanded: a "billion laughs" file is a few hundred bytes that expand to
  gigabytes.
* :data:`MAX_INTEGER_DIGITS` - Kubernetes integers are 64-bit (19 digits); Python refuses to
  print integers over 4,300 digits and computes with huge ones slowly.

Error lines quote the offending value; :func:`shown` and :func:`elide` cut it to
:data:`MAX_SHOWN_CHARS` and say how much was left out, and :func:`one_line` bounds a whole
line at :data:`MAX_LINE_CHARS`, so a 10 MB value never becomes a 10 MB error line.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_INPUT_BYTES",
    "MAX_INTEGER_DIGITS",
    "MAX_LINE_CHARS",
    "MAX_NESTING_DEPTH",
    "MAX_SHOWN_CHARS",
    "MAX_SHOWN_KEY_CHARS",
    "TOTAL_ANNOTATION_SIZE_LIMIT",
    "elide",
    "one_line",
    "shown",
    "shown_repr",
]

MAX_INPUT_BYTES = 16 * 1024 * 1024
MAX_NESTING_DEPTH = 100
MAX_ALIAS_NODES = 100_000
MAX_INTEGER_DIGITS = 100

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
"""The API server's limit on the summed size of an object's annotation keys and values
(apimachinery ``TotalAnnotationSizeLimitB``)."""

MAX_SHOWN_CHARS = 200
MAX_SHOWN_KEY_CHARS = 317
"""Label and annotation keys are shown whole up to the longest valid one (a 253-character
DNS prefix, ``/`` and a 63-character name), so an error about a valid-length key quotes it."""
MAX_LINE_CHARS = 1000


def elide(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """``text`` if it is at most ``limit`` characters, else its start and how much is cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit:,} more characters)"


def shown(value: Any, limit: int = MAX_SHOWN_CHARS) -> str:
    """``value`` as JSON (a Python repr where JSON has no form for it), elided past ``limit``.

    Never raises: an integer too long for Python to print is described by its size."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4000:
        return f"<an integer of about {int(value.bit_length() * 0.30103):,} digits>"
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        try:
            text = repr(value)
        except (ValueError, RecursionError):
            text = f"<{type(value).__name__}>"
    return elide(text, limit)


def shown_repr(value: Any, limit: int = MAX_SHOWN_CHARS) -> str:
    """``repr(value)`` (Python's quoting, ``'in'``), elided past ``limit``; never raises."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4000:
        return f"<an integer of about {int(value.bit_length() * 0.30103):,} digits>"
    try:
        return elide(repr(value), limit)
    except (ValueError, RecursionError):
        return f"<{type(value).__name__}>"


def one_line(text: str, limit: int = MAX_LINE_CHARS) -> str:
    """``text`` on one line (line breaks become spaces), elided past ``limit`` characters.

    The last guard before an error is printed: the values inside a message are elided where
    the message is made, this keeps a message built from many of them bounded too."""
    return elide(" ".join(text.split()), limit)
