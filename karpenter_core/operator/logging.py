"""Structured JSON logs, shaped like upstream Karpenter's zap output.

One JSON object per line with ``level`` (``DEBUG``/``INFO``/``WARN``/``ERROR``), ``time``
(RFC 3339, milliseconds, UTC), ``logger``, ``message``, ``commit`` and any ``extra``
fields a call passes (``controller``, ``NodeClaim``...), so the log pipelines people built
for upstream keep working. ``caller`` (file:line) is added only at debug level, as
upstream does. The level comes from ``LOG_LEVEL`` (``--log-level``): ``debug``, ``info``
(``""`` means info) or ``error``; output goes to ``LOG_OUTPUT_PATHS`` (comma-separated:
``stdout``, ``stderr`` or file paths).

At debug level the cloud SDKs and HTTP clients print requests with their credentials
(botocore shows the ``Authorization`` header, the session token and the SigV4 signature).
Every handler :func:`configure_logging` installs therefore carries a
:class:`RedactingFilter`, and the formatter redacts exception text too, so a secret never
reaches the output whatever a library logs; the chattiest library loggers are also capped
(:data:`LIBRARY_LEVELS`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import sys
import traceback
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import IO, Any

__all__ = [
    "LIBRARY_LEVELS",
    "REDACTED",
    "JsonFormatter",
    "RedactingFilter",
    "configure_logging",
    "configured_logging",
    "level_for",
    "redact",
]

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

REDACTED = "REDACTED"

# Names whose value is a credential, in any of the shapes libraries print them: HTTP
# headers, dict reprs of headers and request params, query strings and form bodies,
# AWS config files, credential-provider JSON, Python reprs of credential objects.
_SECRET_KEYS = (
    r"authorization|proxy-authorization|cookie|set-cookie|x-api-key"
    r"|x-amz-security-token|x-amz-signature|x-amz-credential"
    r"|aws_secret_access_key|aws_session_token|aws_security_token"
    r"|secret_?access_?key|secret_key|session_?token|security_?token|web_?identity_?token"
    r"|client_secret|password|token"
)
_KEY = rf"(?<![\w-])(?:{_SECRET_KEYS})"
_SCHEMES = r"(?:Bearer|Basic|Digest|Negotiate|AWS4-HMAC-SHA256)"

_REDACTIONS: tuple[tuple[re.Pattern[str], str], ...] = (
    # "Bearer eyJ...", "Basic dXNlcjpw...": a token has a digit, a symbol or a lower-case
    # letter before a capital; a word of prose has none
    (
        re.compile(
            r"(?<![\w-])((?:Bearer|Basic)\s+)"
            r"(?=[\w\-.~+/]*(?:[\d\-.~+/=]|(?-i:[a-z][A-Z])))[\w\-.~+/]{8,}=*",
            re.IGNORECASE,
        ),
        rf"\1{REDACTED}",
    ),
    # 'Authorization': b'AWS4-HMAC-SHA256 Credential=..., Signature=...'   "Token": "..."
    (
        re.compile(
            rf"""(["']?{_KEY}["']?\s*[:=]\s*b?)(["'])(?:\\.|(?!\2).)*\2""",
            re.IGNORECASE | re.DOTALL,
        ),
        rf"\1\2{REDACTED}\2",
    ),
    # x-amz-security-token:VALUE (SigV4 canonical request), X-Amz-Signature=VALUE&... and
    # a quoted value cut off before its closing quote
    (
        re.compile(
            rf"""({_KEY}["']?\s*[:=]\s*(?:b?["'])?)(?:{_SCHEMES}\s+)?[^\s&,;'"<>]+""",
            re.IGNORECASE,
        ),
        rf"\1{REDACTED}",
    ),
    # the parts of a SigV4 Authorization value or presigned URL printed on their own
    (
        re.compile(r"""(?<![\w-])((?:Credential|Signature)=)[^\s&,;'"<>]+"""),
        rf"\1{REDACTED}",
    ),
    # botocore.auth prints the signature on the line after "Signature:"
    (re.compile(r"(Signature:\s*)[0-9a-fA-F]{16,}"), rf"\1{REDACTED}"),
    # STS and IMDS responses: <SecretAccessKey>...</SecretAccessKey>
    (
        re.compile(r"(<(SecretAccessKey|SessionToken|Token)>)[^<]*(</\2>)", re.IGNORECASE),
        rf"\1{REDACTED}\3",
    ),
)

LIBRARY_LEVELS: dict[str, int] = {
    "urllib3": logging.WARNING,  # every API request of the Kubernetes client
    "kubernetes": logging.WARNING,  # response bodies (Secrets among them)
    "botocore.auth": logging.INFO,  # canonical requests, strings to sign, signatures
    "botocore.hooks": logging.INFO,  # an event line per hook per call
    "botocore.loaders": logging.INFO,
    "botocore.regions": logging.INFO,
    "botocore.endpoint_provider": logging.INFO,
    "botocore.configprovider": logging.INFO,
    "botocore.utils": logging.INFO,
    "botocore.parsers": logging.INFO,  # whole response bodies
    "s3transfer": logging.INFO,
}
"""The least severe level each library logger may emit: at ``LOG_LEVEL=debug`` botocore
still logs each request it makes and sends (``botocore.endpoint``), not its internals."""


def redact(text: str) -> str:
    """``text`` with every credential value replaced by ``REDACTED``."""
    for pattern, replacement in _REDACTIONS:
        text = pattern.sub(replacement, text)
    return text


class RedactingFilter(logging.Filter):
    """Redacts credentials from a record's message and string fields, in place, so every
    later handler and formatter sees only the redacted text."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: let the handler report it as logging does
            return True
        record.msg = redact(message)
        record.args = None
        for key, value in vars(record).items():
            if key not in _RESERVED and isinstance(value, str):
                setattr(record, key, redact(value))
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


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
            # an exception's text can quote a request; it bypasses the record's filter
            out["error"] = redact(str(record.exc_info[1]))
            stack = "".join(traceback.format_exception(*record.exc_info)).rstrip()
            out["stacktrace"] = redact(stack)
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
    """Route every log record through a :class:`RedactingFilter` and a
    :class:`JsonFormatter` at ``level``, with library loggers capped at
    :data:`LIBRARY_LEVELS`.

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
    redacting = RedactingFilter()
    streams = [_open(p) for p in paths]
    for handler in list(logger.handlers):
        if getattr(handler, _HANDLER_MARK, False):
            _remove(logger, handler)
    for stream in streams:
        handler = logging.StreamHandler(stream)
        handler.setFormatter(formatter)
        handler.addFilter(redacting)
        setattr(handler, _HANDLER_MARK, True)
        logger.addHandler(handler)
    logger.setLevel(numeric)
    # Client libraries are chatty at debug; upstream also mutes its manager's debug events.
    for name, floor in LIBRARY_LEVELS.items():
        logging.getLogger(name).setLevel(max(numeric, floor))
    return logger


def _remove(logger: logging.Logger, handler: logging.Handler) -> None:
    logger.removeHandler(handler)
    handler.close()
    stream = getattr(handler, "stream", None)
    if stream is not None and stream not in (sys.stdout, sys.stderr):
        stream.close()  # a StreamHandler leaves the file it was given open


@contextlib.contextmanager
def configured_logging(
    level: str = "info",
    output_paths: str | Sequence[str] = "stdout",
    *,
    commit: str = "",
    root: logging.Logger | None = None,
) -> Iterator[logging.Logger]:
    """:func:`configure_logging` for the length of a ``with`` block (tests, programs that
    embed the operator): afterwards the handlers it added are gone and the levels of the
    logger and of :data:`LIBRARY_LEVELS` are what they were."""
    logger = root if root is not None else logging.getLogger()
    before = set(logger.handlers)
    levels = {name: logging.getLogger(name).level for name in LIBRARY_LEVELS}
    level_before = logger.level
    try:
        yield configure_logging(level, output_paths, commit=commit, root=logger)
    finally:
        for handler in list(logger.handlers):
            if handler not in before:
                _remove(logger, handler)
        logger.setLevel(level_before)
        for name, lvl in levels.items():
            logging.getLogger(name).setLevel(lvl)
