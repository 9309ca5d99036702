"""What a unit test may not do, caught while it runs (see docs/testing.md, "The tiers").

``test_unit_is_unit.py`` reads every module under ``tests/unit/`` and refuses the names of
Managers, threads, sockets and subprocesses; this catches what no name in a test shows: a
``karpenter simulate`` run through click's CliRunner builds a Manager, a library call may
open a socket. ``conftest.py`` runs every unit test inside :func:`forbid_impurity` and fails
the test when it built a Manager (the kit's Environment builds one), started a thread,
created a socket or started a subprocess. Only what the test's own thread does counts: a
daemon thread some other tier's test left running in the same pytest-xdist worker is not
this test's doing.
"""

from __future__ import annotations

import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from karpenter_core.runtime.manager import Manager

# (class, method, what a unit test did when it called it)
_WATCHED: tuple[tuple[type, str, str], ...] = (
    (Manager, "__init__", "built a Manager (the kit's Environment builds one)"),
    (threading.Thread, "start", "started a thread"),
    (socket.socket, "__init__", "created a socket"),
    (subprocess.Popen, "__init__", "started a subprocess"),
)


@contextmanager
def forbid_impurity() -> Iterator[list[str]]:
    """Record, in the list it yields, each watched thing the calling thread does inside."""
    owner = threading.get_ident()
    seen: list[str] = []
    originals = [(cls, name, cls.__dict__[name]) for cls, name, _ in _WATCHED]

    def watch(original: Callable[..., Any], what: str) -> Callable[..., Any]:
        def watched(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() == owner and what not in seen:
                seen.append(what)
            return original(*args, **kwargs)

        return watched

    for (cls, name, what), (_, _, original) in zip(_WATCHED, originals, strict=True):
        setattr(cls, name, watch(original, what))
    try:
        yield seen
    finally:
        for cls, name, original in originals:
            setattr(cls, name, original)
