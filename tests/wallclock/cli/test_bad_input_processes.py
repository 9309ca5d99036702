"""Input that is not a regular file, or that would expand without bound, refused by the real
CLI: a device, a FIFO and an alias bomb in a process of its own with 1 GiB of address space
(a regression that reads without end fails instead of taking the machine), and a UNIX
socket in a directory of manifests (see test_bad_input.py for the rest of issue 18)."""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from karpenter_core.cli import main

NODEPOOL_HEAD = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: np}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
"""
REQS = "      requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]\n"
GOOD_NODEPOOL = NODEPOOL_HEAD + REQS


def _write(tmp_path: Path, name: str, content: str | bytes | None) -> Path:
    path = tmp_path / name
    if content is None:
        path.mkdir()
        (path / "notes.txt").write_text("not a manifest\n")
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Exit code and everything printed; a crash (an exception other than exit) fails."""
    result = CliRunner().invoke(main, list(args), env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    text = result.stdout + result.stderr
    assert "Traceback" not in text
    return result.exit_code, text


# --- hostile input: one clear line, never a traceback, a hang or a memory blow-up ------------
#
# Issue 18 probed the CLI as a user would and found each class below; a row per class and
# command. The fuzz (test_fuzz_input.py) covers their combinations.

PYTHON_CLI = [sys.executable, "-c", "from karpenter_core.cli import main; main()"]


def _run_cli_process(args: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real CLI in its own process, with 1 GiB of address space: a regression that
    reads without end or expands without bound fails here instead of taking the machine
    (the timeout is a guard against a hang, far beyond the second such a run takes)."""

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    return subprocess.run(
        [*PYTHON_CLI, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=limit_memory,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
@pytest.mark.parametrize(
    "args",
    [
        ["validate", "-f", "/dev/zero"],
        ["simulate", "/dev/zero"],
        ["instance-types", "--instance-types", "/dev/zero"],
        ["schedule", "-f", "-", "--scheduler-config", "/dev/zero"],
    ],
    ids=["validate", "simulate", "instance-types", "scheduler-config"],
)
def test_a_device_is_refused_without_reading_it(args: list[str]) -> None:
    done = _run_cli_process(args)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "Traceback" not in output
    assert "/dev/zero" in output and "a character device, not a regular file" in output


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "scenario.yaml"
    os.mkfifo(fifo)
    done = _run_cli_process(["simulate", str(fifo)])
    assert done.returncode == 1, done.stderr
    assert (
        done.stderr.strip()
        == f"Error: {fifo}: a FIFO (named pipe), not a regular file; use - to read standard input"
    )


def test_an_alias_bomb_never_expands(tmp_path: Path) -> None:
    """Twelve levels of ten: 10^12 values once expanded, far past any memory."""
    bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 12)
    )
    path = _write(tmp_path, "bomb.yaml", GOOD_NODEPOOL + "---\n" + bomb)
    done = _run_cli_process(["schedule", "-f", str(path)])
    assert done.returncode == 1, done.stderr
    assert "aliases expand to more than 100,000 values" in done.stderr


@pytest.mark.parametrize("command", ["validate", "schedule"])
def test_a_socket_in_a_directory_is_refused(tmp_path: Path, command: str) -> None:
    directory = tmp_path / "manifests"
    directory.mkdir()
    _write(directory, "a.yaml", GOOD_NODEPOOL)
    sock = socket.socket(socket.AF_UNIX)
    try:
        try:
            sock.bind(str(directory / "b.yaml"))
        except OSError as e:  # a UNIX socket's path is limited to about 100 bytes
            pytest.skip(f"cannot make a socket here: {e}")
        code, text = _run(command, "-f", str(directory))
    finally:
        sock.close()
    assert code == 1
    assert f"{directory / 'b.yaml'}:" in text and "not a regular file" in text, text
