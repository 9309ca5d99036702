"""Where the ``--scheduler-config`` (``SCHEDULER_CONFIG``) document comes from.

Upstream passes the document itself: its chart writes ``settings.schedulerConfig`` into
the environment variable, and the operator decodes it once at start-up. This operator
does the same, and additionally reads the document from a file when the value is
``@PATH`` (a ConfigMap mounted into the pod, say), re-reading it every provisioning pass
so an edited file takes effect without a restart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from karpenter_core.apis.manifests import ManifestError, parse_yaml, read_text
from karpenter_core.provisioning.scheduler.topology import (
    SchedulerConfigError,
    parse_scheduler_config,
)

FILE_PREFIX = "@"
INLINE_SOURCE = "scheduler-config"
"""How messages name an inline document: the flag, as other option errors do."""


def scheduler_config_file(value: str) -> str | None:
    """The path of a ``@PATH`` value; None when ``value`` is the document itself (or empty)."""
    return value[len(FILE_PREFIX) :] if value.startswith(FILE_PREFIX) else None


def scheduler_config_source(value: str) -> str:
    """How messages name the config ``value`` gives: its file, or the option."""
    path = scheduler_config_file(value)
    return INLINE_SOURCE if path is None else path


def decode_scheduler_config(text: str, source: str) -> Mapping[str, Any] | None:
    """The one YAML/JSON mapping of a scheduler config (None when empty), validated as
    kube-scheduler validates its defaults. Raises :class:`SchedulerConfigError`, a line
    starting with ``source``.

    A value that decodes to a plain string is most likely a path written without ``@``
    (this operator read the variable as a path before it followed upstream), so the
    message says how to name a file."""
    try:
        docs = parse_yaml(text, "decoding scheduler config")
    except ManifestError as e:
        raise SchedulerConfigError(f"{source}: {e}") from None
    if not docs:
        return None
    if len(docs) > 1 or not isinstance(docs[0], Mapping):
        hint = ""
        if len(docs) == 1 and isinstance(docs[0], str) and source == INLINE_SOURCE:
            hint = (
                f" (the value is the document itself, as upstream's; to read a file, "
                f"give {FILE_PREFIX}{docs[0]})"
            )
        raise SchedulerConfigError(
            f"{source}: scheduler config: expected one mapping (podTopologySpread: ...){hint}"
        )
    try:
        parse_scheduler_config(docs[0])
    except SchedulerConfigError as e:
        raise SchedulerConfigError(f"{source}: {e}") from None
    return docs[0]


def load_scheduler_config(value: str) -> Mapping[str, Any] | None:
    """The document ``value`` (an option's value) gives: decoded from the value itself, or
    read from ``@PATH`` and decoded. None when empty. Raises :class:`SchedulerConfigError`
    naming the file or the option."""
    if not value.strip():
        return None
    path = scheduler_config_file(value)
    if path is None:
        return decode_scheduler_config(value, INLINE_SOURCE)
    if not path or path == "-":  # read_text("-") is standard input: not a config's place
        raise SchedulerConfigError(
            f"{INLINE_SOURCE}: {value!r}: {FILE_PREFIX!r} must be followed by a file's path"
        )
    try:
        text = read_text(path)
    except ManifestError as e:
        reason = str(e).removeprefix(f"{path}: ")
        raise SchedulerConfigError(f"{path}: cannot read scheduler config: {reason}") from None
    return decode_scheduler_config(text, path)


def check_scheduler_config_option(value: str) -> None:
    """Start-up check of the option, as upstream's options parsing fails fast: an inline
    document must decode and validate, and ``@`` must name a file. The file itself is
    only read by the provisioner (every pass; its problems are logged there), so it may
    appear or be fixed while the operator runs."""
    path = scheduler_config_file(value)
    if path is None or not path or path == "-":
        load_scheduler_config(value)
