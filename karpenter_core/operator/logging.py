"""Structured JSON logs, shaped like upstream Karpenter's zap output.

One JSON object per line with ``level`` (``DEBUG``/``INFO``/``WARN``/``ERROR``), ``time``
(RFC 3339, milliseconds, UTC), ``logger``, ``message``, ``commit`` and any ``extra``
fields a call passes (``controller``, ``NodeClaim``...), so the log pipelines people built
for upstream keep working. ``caller`` (file:line) is added only at debug level, as
upstream does. The level comes from ``LOG_LEVEL`` (``--log-level``): ``debug``, ``info``
(``""`` means info) or ``error``; output goes to ``LOG_OUTPUT_PATHS`` (comma-separated:
``stdout``, ``stderr`` or file paths).
"""

from __future__ import annotations

import json
import logging
import sys
import traceback
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import IO, Any

__all__ = ["JsonFormatter", "configure_logging", "level_for"]

_LEVEL_NAMES = {
    logging.DEBUG: "DEBUG",
    logging.INFO: "INFO",
    logging.WARNING: "WARN",
    logging.ERROR: "ERROR",
    logging.CRITICAL: "FATAL",
}

# Attributes every LogRecord has; anything else came from ``extra=`` and is a field.
_RESERVED = frozenset(
    vars(logging.LogRecord("", 0, "", 0, "", None, None)).keys() | {"message", "asctime"}
)

_HANDLER_MARK = "_karpenter_json_handler"


def level_for(name: str) -> int:
    """``LOG_LEVEL`` to a :mod:`logging` level (values already checked by Options)."""
    return {"debug": logging.DEBUG, "": logging.INFO, "info": logging.INFO}.get(name, logging.ERROR)


def _logger_name(name: str) -> str:
    # "karpenter.kube.informer" -> "kube.informer"; upstream's root logger is "controller".
    if name in ("", "root", "karpenter"):
        return "controller"
    return name.removeprefix("karpenter.")


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON line (see the module docstring)."""

    def __init__(self, *, commit: str = "", caller: bool = False) -> None:
        super().__init__()
        self.commit = commit
        self.caller = caller

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "level": _LEVEL_NAMES.get(record.levelno, record.levelname),
            "time": datetime.fromtimestamp(record.created, UTC).strftime("%Y-%m-%dT%H:%M:%S.")
            + f"{int(record.msecs):03d}Z",
            "logger": _logger_name(record.name),
        }
        if self.caller:
            out["caller"] = f"{record.filename}:{record.lineno}"
        out["message"] = record.getMessage()
        if self.commit:
            out["commit"] = self.commit
        for key, value in vars(record).items():
            if key not in _RESERVED and not key.startswith("_"):
                out[key] = value if isinstance(value, (str, int, float, bool)) else str(value)
        if record.exc_info and record.exc_info[1] is not None:
            out["error"] = str(record.exc_info[1])
            out["stacktrace"] = "".join(traceback.format_exception(*record.exc_info)).rstrip()
        return json.dumps(out, default=str, separators=(",", ":"))


def _open(path: str) -> IO[str]:
    if path == "stdout":
        return sys.stdout
    if path == "stderr":
        return sys.stderr
    try:
        return open(path, "a", buffering=1, encoding="utf-8")
    except OSError as e:
        raise ValueError(f"log-output-paths: cannot open {path!r}: {e.strerror}") from None


def configure_logging(
    level: str = "info",
    output_paths: str | Sequence[str] = "stdout",
    *,
    commit: str = "",
    root: logging.Logger | None = None,
) -> logging.Logger:
    """Route every log record through a :class:`JsonFormatter` at ``level``.

    Replaces handlers a previous call installed (so calling twice does not double every
    line) and leaves other handlers alone. Raises ValueError naming a path that cannot be
    opened."""
    logger = root if root is not None else logging.getLogger()
    paths = (
        [p.strip() for p in output_paths.split(",") if p.strip()]
        if isinstance(output_paths, str)
        else list(output_paths)
    ) or ["stdout"]
    numeric = level_for(level)
    formatter = JsonFormatter(commit=commit, caller=numeric <= logging.DEBUG)
    streams = [_open(p) for p in paths]
    for handler in list(logger.handlers):
        if getattr(handler, _HANDLER_MARK, False):
            logger.removeHandler(handler)
    for stream in streams:
        handler = logging.StreamHandler(stream)
        handler.setFormatter(formatter)
        setattr(handler, _HANDLER_MARK, True)
        logger.addHandler(handler)
    logger.setLevel(numeric)
    # Client libraries are chatty at debug; upstream also mutes its manager's debug events.
    for noisy in ("urllib3", "kubernetes"):
        logging.getLogger(noisy).setLevel(max(numeric, logging.WARNING))
    return logger
