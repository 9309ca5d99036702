"""The Python port of Go's ``sort.Slice`` against Go itself.

Builds the small program in ``gosort/`` with the local Go toolchain, sorts the same key lists
in both and requires the same permutation, ties included: the scheduler's choice among
in-flight NodeClaims with equal pod counts depends on that exact order. Without Go the test
is skipped with a loud reason, as nothing else checks the port against Go.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from karpenter_core.provisioning.scheduler.queue import sort_slice

PROGRAM = Path(__file__).resolve().parent / "gosort"

pytestmark = pytest.mark.slow


def _cases() -> list[list[int]]:
    rng = random.Random(20260217)
    cases: list[list[int]] = [[], [0], [1, 0], list(range(100, 0, -1)), [5] * 200]
    lengths = [*range(2, 70), 99, 100, 101, 128, 257, 600, 1500]
    for n in lengths:
        for spread in (1, 2, 3, 5, n):
            cases.append([rng.randrange(spread + 1) for _ in range(n)])
        ordered = sorted(rng.randrange(6) for _ in range(n))
        # What the scheduler hands Go: sorted, then one element grew or one was appended.
        bumped = list(ordered)
        bumped[rng.randrange(n)] += 1
        cases.append(bumped)
        cases.append([*ordered, rng.randrange(3)])
        cases.append(ordered[::-1])
        cases.append([(i % 7) for i in range(n)])  # sawtooth: uneven partitions
    return cases


def test_sort_slice_matches_go(tmp_path: Path) -> None:
    go = shutil.which("go")
    if go is None:
        pytest.skip(
            "NOT CHECKED: the Go toolchain (`go`) is not on PATH, so the sort.Slice port "
            "was not compared with Go's own sort"
        )
    binary = tmp_path / "gosortparity"
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-mod=mod", CGO_ENABLED="0")
    build = subprocess.run(
        [go, "build", "-o", str(binary), "."],
        cwd=PROGRAM,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, f"building {PROGRAM.name} failed:\n{build.stderr}"
    cases = _cases()
    run = subprocess.run(
        [str(binary)], input=json.dumps(cases), capture_output=True, text=True, check=True
    )
    expected = json.loads(run.stdout)
    assert len(expected) == len(cases)
    for keys, want in zip(cases, expected, strict=True):
        got = list(range(len(keys)))
        sort_slice(got, keys.__getitem__)
        assert got == want, f"keys={keys}"
