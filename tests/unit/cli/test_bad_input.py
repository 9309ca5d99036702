"""Bad input to the file-reading commands: one clear line, exit code 1, never a traceback.

Issue 2's rule: "a malformed manifest, an unknown operator, a bad quantity or a broken
instance-types file gets one clear line naming the file, the object and the field, and exit
code 1". Each row writes one file, runs one command on it and checks the line it prints.
Issue 18 added hostile input (the second half of this file): limits on size, nesting,
aliases and integers, files that are not regular, wrong types, oversized annotations, and
the exit codes of ``docs/cli.md``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from karpenter_core.apis.limits import MAX_INPUT_BYTES
from karpenter_core.cli import main
from karpenter_core.cli.exits import EXIT_INVALID_NODEPOOLS

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
POD = """\
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, resources: {requests: {cpu: "%s"}}}]
"""
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  replicas: %s
  selector: {matchLabels: {app: d}}
  template:
    metadata: {labels: {app: d}}
    spec: {containers: [{name: c}]}
"""
SCENARIO_HEAD = """\
apiVersion: simulate.karpenter.sh/v1alpha1
kind: Scenario
until: 1m
nodePools:
  - apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata: {name: np}
    spec:
      template:
        spec:
          nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
          requirements: []
"""

# (id, file content (str, bytes, or None for "a directory with no YAML"), expected fragments)
MANIFEST_CASES: list[tuple[str, str | bytes | None, tuple[str, ...]]] = [
    ("tab-indented", "apiVersion: v1\n\tkind: NodePool\n", ("invalid YAML", "line 2")),
    ("binary-garbage", bytes(range(128, 256)) * 3, ("not a UTF-8 text file",)),
    ("top-level-list", "- a\n- b\n", ("document 1", "got a list")),
    ("top-level-string", "just words\n", ("document 1", "got a string")),
    ("unterminated-json", '{"apiVersion": "v1", "kind": "Pod"', ("invalid YAML",)),
    ("python-tag", "a: !!python/object:os.system x\n", ("invalid YAML",)),
    ("duplicate-key", "kind: Pod\nkind: Node\n", ("duplicate key 'kind'",)),
    ("list-with-broken-item", "apiVersion: v1\nkind: List\nitems:\n- 5\n", ("items[0]",)),
    (
        "list-with-invalid-nodepool",
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: karpenter.sh/v1\n"
        "  kind: NodePool\n  metadata: {name: x}\n  spec: 3\n",
        ("NodePool", "x", "spec"),
    ),
    (
        "requirements-is-a-string",
        NODEPOOL_HEAD + '      requirements: "kubernetes.io/arch In amd64"\n',
        ("NodePool", "np", "spec.template.spec.requirements", "array"),
    ),
    (
        "operator-in-lower-case",
        NODEPOOL_HEAD + "      requirements: [{key: a, operator: in, values: [x]}]\n",
        ("NodePool", "np", "spec.template.spec.requirements[0].operator", '"in"'),
    ),
    (
        "unknown-operator",
        NODEPOOL_HEAD + "      requirements: [{key: a, operator: Near, values: [x]}]\n",
        ("NodePool", "np", "requirements[0].operator", '"Near"'),
    ),
    (
        "bad-limit-quantity",
        GOOD_NODEPOOL + "  limits: {cpu: 5zz}\n",
        ("NodePool", "np", "spec.limits[cpu]", "5zz"),
    ),
    (
        "infinite-limit",
        GOOD_NODEPOOL + "  limits: {cpu: .inf}\n",
        ("NodePool", "np", "spec.limits[cpu]"),
    ),
    (
        "huge-weight",
        GOOD_NODEPOOL + "  weight: 99999999999999999999999\n",
        ("NodePool", "np", "spec.weight", "100"),
    ),
    (
        "unicode-weight",
        GOOD_NODEPOOL + "  weight: \u00fcn\u00ef\n",
        ("NodePool", "np", "spec.weight", "integer"),
    ),
    (
        "non-string-requirement-values",
        NODEPOOL_HEAD + "      requirements: [{key: a, operator: In, values: [1]}]\n",
        ("NodePool", "np", "requirements[0].values[0]", "string"),
    ),
    (
        "requirement-values-a-number",
        NODEPOOL_HEAD + "      requirements: [{key: a, operator: In, values: 1.5}]\n",
        ("NodePool", "np", "requirements[0].values", "array"),
    ),
    (
        "metadata-not-a-mapping",
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: 5\nspec: {}\n",
        ("NodePool", "metadata", "object"),
    ),
]


INVALID_NODEPOOL_CASES = {
    "list-with-invalid-nodepool",
    "requirements-is-a-string",
    "operator-in-lower-case",
    "unknown-operator",
    "bad-limit-quantity",
    "infinite-limit",
    "huge-weight",
    "unicode-weight",
    "non-string-requirement-values",
    "requirement-values-a-number",
    "metadata-not-a-mapping",
}
"""Cases that parse into a NodePool which fails validation: ``schedule`` leaves it out and
schedules on the others (exit 4) instead of stopping (exit 1)."""


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


def _problem_lines(text: str) -> list[str]:
    """The lines that report a problem (not validate's FAILED summary)."""
    return [line for line in text.splitlines() if line and not line.startswith("FAILED:")]


@pytest.mark.parametrize(
    ("content", "expected"),
    [pytest.param(c, e, id=i) for i, c, e in MANIFEST_CASES],
)
def test_validate_reports_bad_manifest_in_one_line(
    tmp_path: Path, content: str | bytes, expected: tuple[str, ...]
) -> None:
    path = _write(tmp_path, "in.yaml", content)
    code, text = _run("validate", "-f", str(path))
    assert code == 1
    lines = _problem_lines(text)
    assert lines, text
    assert all(line.startswith(str(path)) for line in lines), text
    assert any(all(frag in line for frag in expected) for line in lines), text


@pytest.mark.parametrize(
    ("content", "expected"),
    [pytest.param(c, e, id=i) for i, c, e in MANIFEST_CASES if i not in INVALID_NODEPOOL_CASES],
)
def test_schedule_reports_bad_manifest_in_one_line(
    tmp_path: Path, content: str | bytes, expected: tuple[str, ...]
) -> None:
    good = _write(tmp_path, "good.yaml", GOOD_NODEPOOL + "---\n" + POD % "1")
    path = _write(tmp_path, "in.yaml", content)
    code, text = _run("schedule", "-f", str(good), "-f", str(path))
    assert code == 1
    lines = _problem_lines(text)
    assert len(lines) == 1, text
    assert lines[0].startswith(f"Error: {path}")
    assert all(frag in lines[0] for frag in expected), text


@pytest.mark.parametrize(
    ("content", "expected"),
    [pytest.param(c, e, id=i) for i, c, e in MANIFEST_CASES if i in INVALID_NODEPOOL_CASES],
)
def test_schedule_ignores_an_invalid_nodepool_in_one_line_and_schedules_on_the_others(
    tmp_path: Path, content: str, expected: tuple[str, ...]
) -> None:
    good = _write(
        tmp_path, "good.yaml", GOOD_NODEPOOL.replace("name: np", "name: good") + "---\n" + POD % "1"
    )
    path = _write(tmp_path, "in.yaml", content)
    result = CliRunner().invoke(main, ["schedule", "-f", str(good), "-f", str(path), "-o", "json"])
    assert result.exit_code == EXIT_INVALID_NODEPOOLS, result.output
    out = json.loads(result.stdout)
    assert [nc["nodePool"] for nc in out["nodeClaims"]] == ["good"]
    assert out["podErrors"] == {}
    (reason,) = out["invalidNodePools"].values()
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"Error: {path}: NodePool ")
    assert reason in lines[0] and "NodePool ignored" in lines[0]
    assert all(frag in lines[0] for frag in expected), result.stderr


@pytest.mark.parametrize(
    ("args", "content", "expected"),
    [
        pytest.param(("validate", "-f"), "", "no objects found", id="validate-empty-file"),
        pytest.param(("validate", "-f"), None, "no manifest files", id="validate-dir-no-yaml"),
        pytest.param(("schedule", "-f"), "", "no objects found", id="schedule-empty-file"),
        pytest.param(("schedule", "-f"), None, "no objects found", id="schedule-dir-no-yaml"),
        pytest.param(("simulate",), "", "found 0", id="simulate-empty-file"),
    ],
)
def test_nothing_to_read_is_an_error(
    tmp_path: Path, args: tuple[str, ...], content: str | None, expected: str
) -> None:
    path = _write(tmp_path, "in.yaml" if content is not None else "manifests", content)
    code, text = _run(*args, str(path))
    assert code == 1
    assert len(_problem_lines(text)) == 1, text
    assert expected in text
    assert str(path) in text


@pytest.mark.parametrize("command", ["validate", "schedule"])
def test_missing_file_is_one_line(tmp_path: Path, command: str) -> None:
    missing = tmp_path / "nope.yaml"
    code, text = _run(command, "-f", str(missing))
    assert code == 1
    assert _problem_lines(text) == [f"Error: {missing}: no such file or directory"]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        pytest.param(
            POD % "-1",
            ("Pod default/p", "requests.cpu", "greater than or equal to 0"),
            id="negative-request",
        ),
        pytest.param(POD % "abc", ("Pod default/p", "requests.cpu", '"abc"'), id="bad-request"),
        pytest.param(
            DEPLOYMENT % "99999999999999",
            ("Deployment default/d", "spec.replicas", "more than"),
            id="huge-replicas",
        ),
        pytest.param(
            DEPLOYMENT % "-2", ("Deployment default/d", "spec.replicas", "-2"), id="neg-replicas"
        ),
        pytest.param(
            POD.replace(
                "containers: [",
                "affinity: {nodeAffinity: "
                "{requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: "
                "[{matchExpressions: [{key: a, operator: in, values: [x]}]}]}}}\n"
                "  containers: [",
            )
            % "1",
            ("Pod default/p", "matchExpressions[0].operator", "'in'"),
            id="pod-affinity-operator-lower-case",
        ),
    ],
)
def test_schedule_reports_bad_workload_in_one_line(
    tmp_path: Path, extra: str, expected: tuple[str, ...]
) -> None:
    path = _write(tmp_path, "in.yaml", GOOD_NODEPOOL + "---\n" + extra)
    code, text = _run("schedule", "-f", str(path))
    assert code == 1
    lines = _problem_lines(text)
    assert len(lines) == 1, text
    assert lines[0].startswith(f"Error: {path}")
    assert all(frag in lines[0] for frag in expected), text


def _entry(**over: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": "x-1",
        "architecture": "amd64",
        "operatingSystems": ["linux"],
        "resources": {"cpu": "1", "memory": "1Gi", "pods": "10"},
        "offerings": [
            {
                "Price": 0.5,
                "Available": True,
                "Requirements": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]},
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
                ],
            }
        ],
    }
    entry.update(over)
    return entry


def _offering(**over: Any) -> list[dict[str, Any]]:
    offering = dict(_entry()["offerings"][0])
    offering.update(over)
    return [offering]


INSTANCE_TYPE_CASES: list[tuple[str, str | bytes | None, tuple[str, ...]]] = [
    ("empty-file", "", ("not valid JSON",)),
    ("binary-garbage", bytes(range(128, 256)), ("not a UTF-8 text file",)),
    ("yaml-not-json", "- name: x\n", ("not valid JSON",)),
    ("an-object", "{}", ("must be a JSON list",)),
    ("entry-not-object", "[5]", ("entry 0", "must be an object")),
    ("no-name", json.dumps([_entry(name=None)]), ("entry 0", "name")),
    (
        "unknown-field",
        json.dumps([_entry(zone="a")]),
        ("entry 0", "unknown field 'zone'"),
    ),
    (
        "bad-quantity",
        json.dumps([_entry(resources={"cpu": "abc", "memory": "1Gi"})]),
        ('"x-1"', "resources.cpu", '"abc"'),
    ),
    (
        "negative-quantity",
        json.dumps([_entry(resources={"cpu": "-4", "memory": "1Gi"})]),
        ('"x-1"', "resources.cpu", "negative"),
    ),
    (
        "operator-in-lower-case",
        json.dumps(
            [
                _entry(
                    offerings=_offering(
                        Requirements=[{"key": "k", "operator": "in", "values": ["a"]}]
                    )
                )
            ]
        ),
        ('"x-1"', "offerings[0].Requirements[0]", '"in"'),
    ),
    (
        "requirements-a-string",
        json.dumps([_entry(offerings=_offering(Requirements="zone=a"))]),
        ('"x-1"', "offerings[0].Requirements", "list"),
    ),
    (
        "price-a-string",
        json.dumps([_entry(offerings=_offering(Price="cheap"))]),
        ('"x-1"', "offerings[0].Price", "number"),
    ),
    (
        "price-infinite",
        '[{"name": "x-1", "architecture": "amd64", "operatingSystems": ["linux"], '
        '"resources": {"cpu": "1", "memory": "1Gi"}, "offerings": [{"Price": 1e400, '
        '"Available": true, "Requirements": [{"key": "topology.kubernetes.io/zone", '
        '"operator": "In", "values": ["a"]}, {"key": "karpenter.sh/capacity-type", '
        '"operator": "In", "values": ["spot"]}]}]}]',
        ('"x-1"', "offerings[0].Price", "finite"),
    ),
    (
        "price-negative",
        json.dumps([_entry(offerings=_offering(Price=-1))]),
        ('"x-1"', "offerings[0].Price", "negative"),
    ),
    (
        "available-a-string",
        json.dumps([_entry(offerings=_offering(Available="yes"))]),
        ('"x-1"', "offerings[0].Available", "boolean"),
    ),
    (
        "reservation-capacity-negative",
        json.dumps([_entry(offerings=_offering(ReservationCapacity=-1))]),
        ('"x-1"', "offerings[0].ReservationCapacity", "negative"),
    ),
    (
        "duplicate-name",
        json.dumps([_entry(), _entry()]),
        ("entry 1", "duplicates entry 0"),
    ),
    ("directory", None, ("could not read", "directory")),
]


@pytest.mark.parametrize(
    ("content", "expected"),
    [pytest.param(c, e, id=i) for i, c, e in INSTANCE_TYPE_CASES],
)
def test_instance_types_file_problem_is_one_line(
    tmp_path: Path, content: str | bytes | None, expected: tuple[str, ...]
) -> None:
    path = _write(tmp_path, "types.json", content)
    code, text = _run("instance-types", "--instance-types", str(path))
    assert code == 1
    lines = _problem_lines(text)
    assert len(lines) == 1, text
    assert str(path) in lines[0]
    assert all(frag in lines[0] for frag in expected), text


def test_instance_types_file_from_environment_reports_the_same_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "types.json", json.dumps([_entry(offerings=_offering(Price=-1))]))
    code, text = _run("instance-types", env={"INSTANCE_TYPES_FILE_PATH": str(path)})
    assert code == 1
    assert _problem_lines(text) == [
        f'Error: {path}: entry 0 "x-1": offerings[0].Price: must not be negative, got -1'
    ]


def test_schedule_reports_broken_instance_types_file(tmp_path: Path) -> None:
    manifests = _write(tmp_path, "in.yaml", GOOD_NODEPOOL + "---\n" + POD % "1")
    types = _write(tmp_path, "types.json", json.dumps([_entry(offerings=_offering(Price="x"))]))
    code, text = _run("schedule", "-f", str(manifests), "--instance-types", str(types))
    assert code == 1
    lines = _problem_lines(text)
    assert len(lines) == 1, text
    assert str(types) in lines[0] and "offerings[0].Price" in lines[0]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param("\tname: x\n", ("invalid YAML",), id="tab"),
        pytest.param("- a\n", ("a scenario is a mapping",), id="list"),
        pytest.param(
            SCENARIO_HEAD.replace("requirements: []", 'requirements: "abc"'),
            ("nodePools[0] (np)", "spec.template.spec.requirements"),
            id="requirements-a-string",
        ),
        pytest.param(
            SCENARIO_HEAD.replace(
                "requirements: []", "requirements: [{key: a, operator: in, values: [x]}]"
            ),
            ("nodePools[0] (np)", "requirements[0].operator", '"in"'),
            id="operator-lower-case",
        ),
        pytest.param(
            SCENARIO_HEAD + "workloads:\n  - deployment: d\n    requests: {cpu: zz}\n",
            ("workloads[0].requests.cpu", '"zz"'),
            id="bad-request",
        ),
        pytest.param(
            SCENARIO_HEAD + 'workloads:\n  - deployment: d\n    requests: {cpu: "-1"}\n',
            ("workloads[0] (d)", "requests.cpu", "greater than or equal to 0"),
            id="negative-request",
        ),
        pytest.param(
            SCENARIO_HEAD + "workloads:\n  - deployment: d\n    replicas: 99999999999\n",
            ("workloads[0] (d)", "replicas", "more than"),
            id="huge-replicas",
        ),
        pytest.param(
            SCENARIO_HEAD
            + "workloads:\n  - deployment: d\n    scale: [{at: 1m, replicas: 99999999999}]\n",
            ("workloads[0] (d)", "scale[0].replicas", "more than"),
            id="huge-scale-step",
        ),
    ],
)
def test_simulate_reports_bad_scenario_in_one_line(
    tmp_path: Path, body: str, expected: tuple[str, ...]
) -> None:
    path = _write(tmp_path, "scenario.yaml", body)
    code, text = _run("simulate", str(path))
    assert code == 1
    lines = _problem_lines(text)
    assert len(lines) == 1, text
    assert lines[0].startswith(f"Error: {path}")
    assert all(frag in lines[0] for frag in expected), text


def test_simulate_binary_scenario_is_one_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "scenario.yaml", bytes(range(128, 256)))
    code, text = _run("simulate", str(path))
    assert code == 1
    lines = _problem_lines(text)
    assert len(lines) == 1 and str(path) in lines[0], text


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(bytes(range(128, 256)), "not a UTF-8 text file", id="binary"),
        pytest.param(None, "cannot read scheduler config", id="directory"),
        pytest.param("a: [\n", "scheduler config", id="broken-yaml"),
    ],
)
def test_schedule_reports_broken_scheduler_config(
    tmp_path: Path, content: str | bytes | None, expected: str
) -> None:
    manifests = _write(tmp_path, "in.yaml", GOOD_NODEPOOL + "---\n" + POD % "1")
    config = _write(tmp_path, "config", content)
    code, text = _run("schedule", "-f", str(manifests), "--scheduler-config", str(config))
    assert code == 1
    lines = _problem_lines(text)
    assert len(lines) == 1, text
    assert lines[0].startswith(f"Error: {config}: ") and expected in lines[0]


def test_schedule_reports_deployment_whose_metadata_is_not_a_mapping(tmp_path: Path) -> None:
    body = (DEPLOYMENT % "1").replace("metadata: {name: d}", "metadata: oops", 1)
    path = _write(tmp_path, "in.yaml", GOOD_NODEPOOL + "---\n" + body)
    code, text = _run("schedule", "-f", str(path))
    assert code == 1
    lines = _problem_lines(text)
    assert len(lines) == 1 and lines[0].startswith(f"Error: {path}"), text
    assert "metadata" in lines[0]


@pytest.mark.parametrize(
    ("selector", "field"),
    [
        ("{matchLabels: true}", "spec.selector.matchLabels"),
        ("{matchExpressions: 5}", "spec.selector.matchExpressions"),
    ],
)
def test_schedule_reports_deployment_selector_of_the_wrong_shape(
    tmp_path: Path, selector: str, field: str
) -> None:
    body = (DEPLOYMENT % "1").replace("selector: {matchLabels: {app: d}}", f"selector: {selector}")
    path = _write(tmp_path, "in.yaml", GOOD_NODEPOOL + "---\n" + body)
    code, text = _run("schedule", "-f", str(path))
    assert code == 1
    lines = _problem_lines(text)
    assert len(lines) == 1, text
    assert lines[0].startswith(f"Error: {path}: Deployment default/d: {field}:"), text


def test_schedule_accepts_an_overlay_with_a_signed_capacity_as_the_crd_does(
    tmp_path: Path,
) -> None:
    overlay = (
        "apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: o}\n"
        'spec:\n  requirements: []\n  capacity: {example.com/fuse: "-1"}\n'
    )
    path = _write(tmp_path, "in.yaml", GOOD_NODEPOOL + "---\n" + POD % "1" + "---\n" + overlay)
    code, text = _run("schedule", "-f", str(path))
    assert code == 0, text


def _args(command: str, path: Path | str) -> list[str]:
    """The arguments that make ``command`` read ``path`` as its input file."""
    return {
        "validate": ["validate", "-f", str(path)],
        "schedule": ["schedule", "-f", str(path)],
        "simulate": ["simulate", str(path)],
        "instance-types": ["instance-types", "--instance-types", str(path)],
    }[command]


def _one_error(tmp_path: Path, command: str, content: str | bytes, *fragments: str) -> str:
    """Run ``command`` on a file holding ``content``: exit 1 and one problem line naming
    the file and holding every fragment; returns that line."""
    path = _write(tmp_path, "in.json" if command == "instance-types" else "in.yaml", content)
    code, text = _run(*_args(command, path))
    assert code == 1, text
    lines = _problem_lines(text)
    assert len(lines) == 1, text
    assert str(path) in lines[0]
    assert all(f in lines[0] for f in fragments), lines[0]
    return lines[0]


DEEP_FLOW = "[" * 150 + "]" * 150
DEEP_BLOCK = "".join("  " * i + f"k{i}:\n" for i in range(120)) + "  " * 120 + "v\n"
DEEP_JSON = '{"a": ' * 2000 + "1" + "}" * 2000
YAML_COMMANDS = ["validate", "schedule", "simulate"]


@pytest.mark.parametrize("command", YAML_COMMANDS)
@pytest.mark.parametrize(
    "content",
    [DEEP_FLOW, DEEP_BLOCK, DEEP_JSON, SCENARIO_HEAD + "description: " + DEEP_FLOW + "\n"],
    ids=["flow", "block", "json", "inside-a-document"],
)
def test_deep_nesting_is_refused_while_loading(tmp_path: Path, command: str, content: str) -> None:
    _one_error(tmp_path, command, content, "nested more than 100 levels deep")


def test_deep_json_instance_types_are_refused(tmp_path: Path) -> None:
    _one_error(tmp_path, "instance-types", "[" * 5000 + "]" * 5000, "nested more than 100 levels")


BIG = "9" * 5000


@pytest.mark.parametrize(
    ("command", "content"),
    [
        ("validate", GOOD_NODEPOOL + f"  weight: {BIG}\n"),
        ("schedule", GOOD_NODEPOOL + f"  weight: {BIG}\n"),
        ("schedule", GOOD_NODEPOOL.replace("[amd64]", f"[{BIG}]")),
        ("simulate", SCENARIO_HEAD + f"seed: {BIG}\n"),
        ("instance-types", f"[{BIG}]"),
    ],
    ids=["validate-weight", "schedule-weight", "requirement-value", "scenario-seed", "json"],
)
def test_an_integer_of_thousands_of_digits_is_refused_while_loading(
    tmp_path: Path, command: str, content: str
) -> None:
    _one_error(tmp_path, command, content, "an integer of 5,000 digits (at most 100 are read)")


@pytest.mark.parametrize(
    ("command", "content", "field"),
    [
        (
            "validate",
            NODEPOOL_HEAD + f'      requirements: [{{key: a, operator: Gt, values: ["{BIG}"]}}]\n',
            "requirements[0]",
        ),
        (
            "schedule",
            GOOD_NODEPOOL
            + "---\n"
            + (POD % "1").replace(
                "  containers:",
                "  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
                f'{{nodeSelectorTerms: [{{matchExpressions: [{{key: a, operator: Gt, values: ["{BIG}"]}}]}}]}}}}}}\n'
                "  containers:",
            ),
            "matchExpressions[0].values",
        ),
        (
            "schedule",
            GOOD_NODEPOOL
            + "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: b}\n"
            + f'spec: {{minAvailable: "{BIG}", selector: {{matchLabels: {{a: b}}}}}}\n',
            "spec.minAvailable",
        ),
    ],
    ids=["nodepool-gt", "pod-affinity-gt", "pdb-min-available"],
)
def test_a_string_of_thousands_of_digits_where_an_integer_goes_is_one_line(
    tmp_path: Path, command: str, content: str, field: str
) -> None:
    line = _one_error(tmp_path, command, content, field)
    assert len(line) < 1000  # the 5,000 digits are elided or not quoted


ALIAS_BOMB = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 9)
)


@pytest.mark.parametrize("command", YAML_COMMANDS)
@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (ALIAS_BOMB, "aliases expand to more than 100,000 values"),
        ("a: &a [x, *a]\n", "an alias refers to itself"),
    ],
    ids=["billion-laughs", "self-reference"],
)
def test_yaml_aliases_are_bounded(
    tmp_path: Path, command: str, content: str, expected: str
) -> None:
    _one_error(tmp_path, command, content, expected)


def test_aliases_within_the_limit_are_expanded_into_copies(tmp_path: Path) -> None:
    """What a real manifest uses anchors for still works, and each use is its own copy."""
    text = (
        "apiVersion: v1\nkind: List\nitems:\n"
        "- {apiVersion: karpenter.sh/v1, kind: NodePool, metadata: {name: a}, spec: &spec "
        "{template: {spec: {nodeClassRef: {group: g, kind: K, name: n}, requirements: []}}}}\n"
        "- {apiVersion: karpenter.sh/v1, kind: NodePool, metadata: {name: b}, spec: *spec}\n"
    )
    path = _write(tmp_path, "in.yaml", text)
    code, text = _run("validate", "-f", str(path))
    assert code == 0, text
    assert "OK: 2 object(s) valid" in text


def test_simulate_on_a_directory_is_bad_input_not_a_usage_error(tmp_path: Path) -> None:
    directory = tmp_path / "scenarios"
    directory.mkdir()
    _write(directory, "a.yaml", SCENARIO_HEAD)
    code, text = _run("simulate", str(directory))
    assert code == 1
    assert _problem_lines(text) == [f"Error: {directory}: is a directory, expected a file"]


@pytest.mark.parametrize("command", ["validate", "schedule", "simulate", "instance-types"])
def test_a_file_over_the_size_limit_is_refused_before_it_is_read(
    tmp_path: Path, command: str
) -> None:
    path = tmp_path / "big.yaml"
    with path.open("wb") as f:
        f.truncate(MAX_INPUT_BYTES + 1)  # sparse: nothing written, nothing to read
    code, text = _run(*_args(command, path))
    assert code == 1
    lines = _problem_lines(text)
    assert len(lines) == 1 and "larger than the 16 MiB input limit" in lines[0], text


def test_standard_input_over_the_size_limit_is_refused() -> None:
    result = CliRunner().invoke(main, ["validate", "-f", "-"], input="#" * (MAX_INPUT_BYTES + 1))
    assert result.exit_code == 1
    assert _problem_lines(result.output) == ["<stdin>: larger than the 16 MiB input limit"]


STORAGE_CLASS = """\
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: ebs.csi.aws.com
"""
STATEFULSET = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: pause}]}
"""
DAEMONSET = """\
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: c, image: pause}]}
"""


@pytest.mark.parametrize(
    ("manifest", "line"),
    [
        (
            STORAGE_CLASS + "allowedTopologies: [{matchLabelExpressions: abc}]\n",
            "StorageClass fast: allowedTopologies[0].matchLabelExpressions: expected a list, "
            "got a string",
        ),
        (
            STORAGE_CLASS + "allowedTopologies: [{matchLabelExpressions: [{key: k, values: v}]}]\n",
            "StorageClass fast: allowedTopologies[0].matchLabelExpressions[0].values: expected "
            "a list, got a string",
        ),
        (
            STATEFULSET + "  volumeClaimTemplates: [{metadata: {name: v}, spec: 5}]\n",
            "StatefulSet default/db: spec.volumeClaimTemplates[0].spec: expected an object, "
            "got an integer",
        ),
        (
            STATEFULSET.replace("replicas: 1", "replicas: '1'"),
            "StatefulSet default/db: spec.replicas: expected an integer, got a string",
        ),
        (
            DAEMONSET.replace("metadata: {labels: {app: agent}}", "metadata: {labels: 5}"),
            "DaemonSet default/agent: spec.template.metadata.labels: expected an object, got an "
            "integer",
        ),
        (
            DAEMONSET.replace("image: pause}", "image: pause, ports: [{hostPort: '80'}]}"),
            "DaemonSet default/agent: spec.template.spec.containers[0].ports[0].hostPort: "
            "expected an integer, got a string",
        ),
        (
            (POD % "1").replace("containers:", "tolerations: [null]\n  containers:"),
            "Pod default/p: spec.tolerations[0]: expected an object, got null",
        ),
        (
            "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\n"
            "spec: {nodeAffinity: {required: {nodeSelectorTerms: {a: b}}}}\n",
            "PersistentVolume pv: spec.nodeAffinity.required.nodeSelectorTerms: expected a "
            "list, got an object",
        ),
    ],
    ids=[
        "storageclass-expressions",
        "storageclass-values",
        "statefulset-claim-spec",
        "statefulset-replicas",
        "daemonset-template-labels",
        "daemonset-host-port",
        "pod-null-toleration",
        "pv-terms",
    ],
)
def test_schedule_type_checks_every_object_with_the_field_path(
    tmp_path: Path, manifest: str, line: str
) -> None:
    path = _write(tmp_path, "in.yaml", GOOD_NODEPOOL + "---\n" + manifest)
    code, text = _run("schedule", "-f", str(path))
    assert code == 1
    assert _problem_lines(text) == [f"Error: {path}: {line}"]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (
            "objects:\n  - "
            + STORAGE_CLASS.replace("\n", "\n    ")
            + "allowedTopologies: [{matchLabelExpressions: abc}]\n",
            "objects[0] (StorageClass fast): allowedTopologies[0].matchLabelExpressions: "
            "expected a list, got a string",
        ),
        (
            "objects:\n  - "
            + DAEMONSET.replace("\n", "\n    ").replace("image: pause", "image: 5"),
            "objects[0] (DaemonSet agent): spec.template.spec.containers[0].image: expected a "
            "string, got an integer",
        ),
        (
            "workloads:\n  - manifest:\n      " + (DEPLOYMENT % "1").replace("\n", "\n      "),
            "workloads[0] (d): spec.template.spec.containers[0].image: Required value",
        ),
        (
            "events:\n  - at: 10s\n    type: ApplyObject\n    manifest:\n      "
            + STATEFULSET.replace("\n", "\n      ").replace("replicas: 1", "replicas: [1]"),
            "events[0].manifest (db): spec.replicas: expected an integer, got a list",
        ),
    ],
    ids=["object", "daemonset-object", "workload-without-image", "applied-manifest"],
)
def test_simulate_type_checks_every_object_before_the_run(
    tmp_path: Path, body: str, fragment: str
) -> None:
    _one_error(tmp_path, "simulate", SCENARIO_HEAD + body, fragment)


def test_simulate_refuses_duplicate_keys_in_a_scenario(tmp_path: Path) -> None:
    _one_error(tmp_path, "simulate", SCENARIO_HEAD + "until: 2m\n", "duplicate key 'until'")


TEN_MB = "x" * 10_000_000


@pytest.mark.parametrize(
    ("command", "content", "field"),
    [
        (
            "validate",
            GOOD_NODEPOOL.replace("{name: np}", f"{{name: np, annotations: {{a: {TEN_MB}}}}}"),
            "metadata.annotations: Too long: may not be more than 262144 bytes",
        ),
        (
            "validate",
            GOOD_NODEPOOL.replace(
                "  template:\n", f"  template:\n    metadata: {{annotations: {{a: {TEN_MB}}}}}\n"
            ),
            "spec.template.metadata.annotations: Too long: may not be more than 262144 bytes",
        ),
        (
            "schedule",
            GOOD_NODEPOOL
            + "---\n"
            + (POD % "1").replace("{name: p}", f"{{name: p, annotations: {{a: {TEN_MB}}}}}"),
            "Pod default/p: metadata.annotations: Too long: may not be more than 262144 bytes",
        ),
        (
            "simulate",
            SCENARIO_HEAD + f"workloads:\n  - deployment: d\n    annotations: {{a: {TEN_MB}}}\n",
            "spec.template.metadata.annotations: Too long: may not be more than 262144 bytes",
        ),
        (
            "schedule",
            GOOD_NODEPOOL
            + "---\n"
            + (POD % "1").replace("{name: p}", "{name: p, labels: {a: b c}}"),
            "Pod default/p: metadata.labels[a]: Invalid value:",
        ),
    ],
    ids=["nodepool", "nodepool-template", "pod", "scenario-workload", "label-value"],
)
def test_annotations_and_labels_follow_the_api_server_limits(
    tmp_path: Path, command: str, content: str, field: str
) -> None:
    line = _one_error(tmp_path, command, content, field)
    assert len(line) < 1000


def test_annotations_just_under_the_limit_are_accepted(tmp_path: Path) -> None:
    value = "x" * (256 * 1024 - 1)  # key "a" + value = exactly 256 KiB
    path = _write(
        tmp_path,
        "in.yaml",
        GOOD_NODEPOOL.replace("{name: np}", f"{{name: np, annotations: {{a: {value}}}}}"),
    )
    code, text = _run("validate", "-f", str(path))
    assert code == 0, text[-500:]


@pytest.mark.parametrize(
    ("command", "content"),
    [
        (
            "validate",
            NODEPOOL_HEAD
            + f"      requirements: [{{key: a, operator: {'Q' * 5000}, values: [x]}}]\n",
        ),
        (
            "schedule",
            NODEPOOL_HEAD
            + f"      requirements: [{{key: a, operator: {'Q' * 5000}, values: [x]}}]\n",
        ),
        ("schedule", GOOD_NODEPOOL + "---\n" + POD % ("9" * 5000 + "zz")),
        (
            "simulate",
            SCENARIO_HEAD + f"workloads:\n  - deployment: d\n    requests: {{cpu: {'z' * 5000}}}\n",
        ),
        ("instance-types", json.dumps([_entry(resources={"cpu": "z" * 5000, "memory": "1Gi"})])),
    ],
    ids=["validate-operator", "schedule-operator", "pod-request", "scenario-request", "catalogue"],
)
def test_an_error_quoting_a_huge_value_elides_it(
    tmp_path: Path, command: str, content: str
) -> None:
    path = _write(tmp_path, "in.json" if command == "instance-types" else "in.yaml", content)
    code, text = _run(*_args(command, path))
    # schedule leaves an invalid NodePool out and goes on (exit 4); the rest is bad input
    # (the schedule case whose only document is the NodePool with the huge operator)
    invalid_nodepool = command == "schedule" and "operator: QQQ" in content
    assert code == (EXIT_INVALID_NODEPOOLS if invalid_nodepool else 1)
    lines = _problem_lines(text)
    assert lines, text
    for line in lines:
        assert len(line) <= 1100, len(line)
    assert any("more characters)" in line for line in lines), text


def test_validate_refuses_a_document_without_api_version_or_kind(tmp_path: Path) -> None:
    path = _write(tmp_path, "in.yaml", "metadata: {name: x}\nspec: {}\n")
    code, text = _run("validate", "-f", str(path))
    assert code == 1
    assert _problem_lines(text) == [
        f"{path}: <no kind>/x: apiVersion: Required value",
        f"{path}: <no kind>/x: kind: Required value",
    ]


@pytest.mark.parametrize("charset", ["latin-1", "cp1252"])
def test_table_output_escapes_names_the_terminal_cannot_show(tmp_path: Path, charset: str) -> None:
    pod = (POD % "1000").replace("{name: p}", "{name: \u540d\u524d-\u00f6}")
    path = _write(tmp_path, "in.yaml", GOOD_NODEPOOL + "---\n" + pod)
    result = CliRunner(charset=charset).invoke(main, ["schedule", "-f", str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert result.exit_code == 0
    assert "default/\\u540d\\u524d-" in result.stdout


def test_instance_types_table_escapes_names_the_terminal_cannot_show(tmp_path: Path) -> None:
    path = _write(tmp_path, "types.json", json.dumps([_entry(name="\u540d-1")]))
    result = CliRunner(charset="latin-1").invoke(
        main, ["instance-types", "--instance-types", str(path)]
    )
    assert result.exit_code == 0, result.output
    assert "\\u540d-1" in result.stdout


@pytest.mark.parametrize(
    ("body", "args", "fragment"),
    [
        (SCENARIO_HEAD.replace("until: 1m", "until: 100000h"), (), "until: at most 744h"),
        (SCENARIO_HEAD, ("--until", "1e12"), "--until: at most 744h"),
        (
            SCENARIO_HEAD.replace("until: 1m", "until: 700h\nsampleInterval: 0.1s"),
            (),
            "more than 300,000; use a larger sampleInterval",
        ),
    ],
    ids=["until", "--until", "samples"],
)
def test_simulate_refuses_runs_that_would_not_finish(
    tmp_path: Path, body: str, args: tuple[str, ...], fragment: str
) -> None:
    path = _write(tmp_path, "scenario.yaml", body)
    code, text = _run("simulate", str(path), *args)
    assert code == 1
    lines = _problem_lines(text)
    assert len(lines) == 1 and fragment in lines[0], text


def test_an_unexpected_error_is_one_line_with_exit_70(monkeypatch: pytest.MonkeyPatch) -> None:
    from karpenter_core.cli import validate as validate_cli

    def broken(*_: Any, **__: Any) -> Any:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(validate_cli, "manifest_files", broken)
    monkeypatch.delenv("KARPENTER_TRACEBACK", raising=False)
    code, text = _run("validate", "-f", "x.yaml")
    assert code == 70
    [line] = _problem_lines(text)
    assert line.startswith("Error: internal error in karpenter validate: ZeroDivisionError: a bug")
