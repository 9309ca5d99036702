"""A unit test builds no Manager, starts no thread and runs no controllers (docs/testing.md).

Every module under ``tests/unit/`` (tests, helpers, conftest) is read with ``ast`` and refused
if it imports or names a Manager, the kit's Environment (or its ``karpenter_env`` fixtures),
threads, the wall clock, sockets or HTTP servers, or starts processes. Such a test belongs
in ``tests/manager/`` or ``tests/wallclock/``, at the same path. ``conftest.py`` checks the
same while each test runs (``unit_guard.py``), for what no name in a module shows.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

UNIT = Path(__file__).resolve().parent

MANAGER = "builds a Manager"
ENVIRONMENT = "runs controllers on the kit's Environment"
THREADS = "starts threads"
WALL_CLOCK = "runs on the wall clock"
SOCKETS = "opens sockets"
PROCESSES = "starts processes"

BANNED_MODULES = {
    "karpenter_core.runtime.manager": MANAGER,
    "karpenter_core.testing.environment": ENVIRONMENT,
    "karpenter_core.testing.pytest_plugin": ENVIRONMENT,
    "threading": THREADS,
    "_thread": THREADS,
    "concurrent.futures": THREADS,
    "asyncio": THREADS,
    "multiprocessing": PROCESSES,
    "subprocess": PROCESSES,
    "socket": SOCKETS,
    "socketserver": SOCKETS,
    "http.server": SOCKETS,
    "http.client": SOCKETS,
    "urllib.request": SOCKETS,
    "moto.server": SOCKETS,
}
BANNED_NAMES = {
    "Manager": MANAGER,
    "Environment": ENVIRONMENT,
    "karpenter_env": ENVIRONMENT,
    "make_karpenter_env": ENVIRONMENT,
    "Thread": THREADS,
    "ThreadPoolExecutor": THREADS,
    "WallClock": WALL_CLOCK,
    "HttpServer": SOCKETS,
    "ThreadedMotoServer": SOCKETS,
    "Popen": PROCESSES,
}
OS_PROCESS_CALLS = {"fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp"}
OS_PROCESS_PREFIXES = ("spawn", "exec")

# Modules under tests/unit/ that may break the rule, each with the reason. Keep it short.
ALLOWED: dict[str, str] = {
    # The runtime guard wraps Manager.__init__, Thread.start, socket and Popen to catch what
    # a unit test does through code no name shows; it starts none of them itself.
    "unit_guard.py": "the runtime guard itself",
}


def _banned_module(name: str) -> str | None:
    for module, reason in BANNED_MODULES.items():
        if name == module or name.startswith(module + "."):
            return reason
    return None


def _os_process_call(name: str) -> bool:
    return name in OS_PROCESS_CALLS or name.startswith(OS_PROCESS_PREFIXES)


def violations(source: str) -> list[str]:
    """Why a module with this source is not a unit test module, one line per finding."""
    found: list[str] = []

    def add(node: ast.AST, what: str, reason: str) -> None:
        found.append(f"line {getattr(node, 'lineno', '?')}: {what} ({reason})")

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if reason := _banned_module(alias.name):
                    add(node, f"imports {alias.name}", reason)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if reason := _banned_module(node.module):
                add(node, f"imports from {node.module}", reason)
            for alias in node.names:
                reason = _banned_module(f"{node.module}.{alias.name}")
                reason = reason or BANNED_NAMES.get(alias.name)
                if node.module == "os" and _os_process_call(alias.name):
                    reason = PROCESSES
                if reason:
                    add(node, f"imports {alias.name} from {node.module}", reason)
        elif isinstance(node, ast.Name) and node.id in BANNED_NAMES:
            add(node, f"uses {node.id}", BANNED_NAMES[node.id])
        elif isinstance(node, ast.Attribute):
            if node.attr in BANNED_NAMES:
                add(node, f"uses .{node.attr}", BANNED_NAMES[node.attr])
            elif (
                isinstance(node.value, ast.Name)
                and node.value.id == "os"
                and _os_process_call(node.attr)
            ):
                add(node, f"calls os.{node.attr}", PROCESSES)
        elif isinstance(node, ast.arg) and node.arg in BANNED_NAMES:
            add(node, f"takes the fixture {node.arg}", BANNED_NAMES[node.arg])
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, (ast.Name, ast.Attribute))
            and (getattr(node.func, "id", None) or getattr(node.func, "attr", None))
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and (reason := _banned_module(node.args[0].value))
        ):
            add(node, f"imports {node.args[0].value}", reason)
    return found


def offenders(root: Path, allowed: dict[str, str] | None = None) -> dict[str, list[str]]:
    """Each module under ``root`` that breaks the rule (outside ``allowed``), with why."""
    allowed = allowed or {}
    out: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative in allowed:
            continue
        if found := violations(path.read_text(encoding="utf-8")):
            out[relative] = found
    return out


def test_no_unit_test_module_builds_a_manager_starts_threads_or_runs_controllers() -> None:
    found = offenders(UNIT, ALLOWED)
    report = "\n".join(
        f"tests/unit/{path}: " + "; ".join(lines) for path, lines in sorted(found.items())
    )
    assert not found, (
        "not unit tests: move each to tests/manager/ (a Manager or the kit's Environment) or "
        "tests/wallclock/ (threads, the wall clock, sockets, processes) at the same path "
        "(docs/testing.md)\n" + report
    )


def test_the_scan_reads_the_whole_unit_tree() -> None:
    scanned = {p.relative_to(UNIT).as_posix() for p in UNIT.rglob("*.py")}
    assert {
        "conftest.py",
        "test_unit_is_unit.py",
        "provisioning/scheduler/scheduler_helpers.py",
        "disruption/test_disruption_budgets.py",
    } <= scanned
    assert len(scanned) > 50


def test_every_allowed_module_exists_and_still_needs_its_exemption() -> None:
    for relative in ALLOWED:
        path = UNIT / relative
        assert path.is_file(), f"ALLOWED names {relative}, which is gone"
        assert violations(path.read_text(encoding="utf-8")), (
            f"{relative} breaks no rule any more: drop it from ALLOWED"
        )


CASES = {
    "environment": ("from karpenter_core.testing import Environment\n", ENVIRONMENT),
    "environment-attribute": (
        "from karpenter_core import testing\nenv = testing.Environment()\n",
        ENVIRONMENT,
    ),
    "karpenter_env-fixture": (
        "def test_x(karpenter_env):\n    karpenter_env.settle()\n",
        ENVIRONMENT,
    ),
    "karpenter_env-marker": (
        "import pytest\n@pytest.mark.karpenter_env(controllers=[])\ndef test_x(): ...\n",
        ENVIRONMENT,
    ),
    "manager": ("from karpenter_core.runtime.manager import Manager\n", MANAGER),
    "manager-module": ("from karpenter_core.runtime import manager\n", MANAGER),
    "manager-module-alias": ("import karpenter_core.runtime.manager as m\n", MANAGER),
    "threading": ("import threading\n", THREADS),
    "thread-pool": ("from concurrent.futures import ThreadPoolExecutor\n", THREADS),
    "import_module": ("import importlib\nimportlib.import_module('threading')\n", THREADS),
    "wall-clock": (
        "from karpenter_core.runtime.clock import VirtualClock, WallClock\n",
        WALL_CLOCK,
    ),
    "socket": ("import socket\n", SOCKETS),
    "http-server": ("from http.server import ThreadingHTTPServer\n", SOCKETS),
    "probe-server": ("from karpenter_core.operator.health import HttpServer\n", SOCKETS),
    "subprocess": ("import subprocess\n", PROCESSES),
    "os-system": ("import os\nos.system('true')\n", PROCESSES),
    "os-exec": ("from os import execv\n", PROCESSES),
}


@pytest.mark.parametrize(("source", "reason"), list(CASES.values()), ids=list(CASES))
def test_a_module_that_breaks_the_rule_is_reported_when_added(
    tmp_path: Path, source: str, reason: str
) -> None:
    root = tmp_path / "unit"
    (root / "controllers" / "nodeclaim").mkdir(parents=True)
    (root / "controllers" / "nodeclaim" / "test_pure.py").write_text(
        "from karpenter_core.runtime.clock import VirtualClock\n\n"
        "def test_pure() -> None:\n    assert VirtualClock().now()\n"
    )
    (root / "controllers" / "nodeclaim" / "test_added.py").write_text(source)
    found = offenders(root)
    assert list(found) == ["controllers/nodeclaim/test_added.py"]
    assert any(reason in line for line in found["controllers/nodeclaim/test_added.py"])


def test_names_in_strings_and_comments_are_not_uses() -> None:
    source = '"""No Manager, no threading here."""\n# import threading\nTEXT = "Environment"\n'
    assert violations(source) == []
