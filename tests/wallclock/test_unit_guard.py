"""tests/unit's runtime guard (``tests/unit/conftest.py`` with ``unit_guard.py``) fails a unit
test that builds a Manager, starts a thread, opens a socket or starts a subprocess, even
through code no name in the test shows (``karpenter simulate`` through click's CliRunner);
a pure test passes. A copy of the guard runs in a pytest process of its own (pytester),
whose tests do exactly that: hence here, not in tests/unit."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

UNIT = Path(__file__).resolve().parents[1] / "unit"

PURE = """
def test_pure():
    assert 1 + 1 == 2
"""


@pytest.fixture
def unit_tree(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest((UNIT / "conftest.py").read_text(encoding="utf-8"))
    pytester.makepyfile(unit_guard=(UNIT / "unit_guard.py").read_text(encoding="utf-8"))
    return pytester


IMPURE = {
    "thread": (
        "import threading\n\ndef test_it():\n"
        "    t = threading.Thread(target=lambda: None)\n    t.start()\n    t.join()\n",
        "started a thread",
    ),
    "environment": (
        "from karpenter_core.testing import Environment\n\n"
        "def test_it():\n    Environment(controllers=())\n",
        "built a Manager",
    ),
    "socket": (
        "import socket\n\ndef test_it():\n    socket.socket().close()\n",
        "created a socket",
    ),
    "subprocess": (
        "import subprocess, sys\n\ndef test_it():\n"
        "    subprocess.run([sys.executable, '-c', 'pass'], check=True)\n",
        "started a subprocess",
    ),
    # nothing in this test names a Manager: `karpenter simulate` builds one
    "simulate": (
        "from click.testing import CliRunner\nfrom karpenter_core.cli import main\n\n"
        "def test_it(tmp_path):\n"
        "    scenario = tmp_path / 's.yaml'\n"
        "    scenario.write_text('apiVersion: simulate.karpenter.sh/v1alpha1\\n"
        "kind: Scenario\\nuntil: 1m\\n')\n"
        "    result = CliRunner().invoke(main, ['simulate', str(scenario)])\n"
        "    assert result.exit_code == 0, result.output\n",
        "built a Manager",
    ),
}


def test_a_unit_test_doing_any_of_it_fails_and_says_where_it_belongs(
    unit_tree: pytest.Pytester,
) -> None:
    unit_tree.makepyfile(
        test_pure=PURE, **{f"test_{name}": body for name, (body, _) in IMPURE.items()}
    )
    # a pytest process of its own: the tests it runs start threads and processes
    result = unit_tree.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist")
    result.assert_outcomes(passed=1 + len(IMPURE), errors=len(IMPURE))
    result.stdout.fnmatch_lines_random(
        [
            f"*test_{name}.py::test_it {what}*: that is not a unit test. Move it to tests/manager/*"
            for name, (_, what) in IMPURE.items()
        ]
    )
    assert "test_pure.py::test_pure" not in result.stdout.str()


def test_a_pure_unit_test_passes(unit_tree: pytest.Pytester) -> None:
    unit_tree.makepyfile(test_pure=PURE)
    result = unit_tree.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist")
    result.assert_outcomes(passed=1)
