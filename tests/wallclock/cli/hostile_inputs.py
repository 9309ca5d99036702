"""Hostile files for the commands that read them: hypothesis strategies, and a runner that
reports how a command handled one.

A fuzz input starts from a valid file for one command (NodePools for ``validate``, a
cluster's worth of manifests for ``schedule``, a scenario for ``simulate``, a KWOK catalogue
for ``instance-types``), changes a few values in its tree (a wrong type, a huge or deeply
nested value, a hostile string, a deleted or unknown field), writes it as YAML or JSON, and
sometimes damages the text itself (a repeated key, an alias bomb, a truncation, bytes that
are not UTF-8). :func:`run_guarded` runs the real command in-process on it and returns an
:class:`Outcome` the tests check against ``docs/cli.md``.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from attrs import frozen
from click.testing import CliRunner
from hypothesis import strategies as st

# --- valid starting points ------------------------------------------------------------------

NODEPOOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "general", "labels": {"team": "a"}, "annotations": {"note": "x"}},
    "spec": {
        "weight": 10,
        "limits": {"cpu": "1000", "memory": "1000Gi"},
        "disruption": {
            "consolidationPolicy": "WhenEmptyOrUnderutilized",
            "consolidateAfter": "30s",
            "budgets": [{"nodes": "10%"}, {"nodes": "0", "schedule": "@daily", "duration": "1h"}],
        },
        "template": {
            "metadata": {"labels": {"tier": "web"}, "annotations": {"a": "b"}},
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.kwok.sh",
                    "kind": "KWOKNodeClass",
                    "name": "default",
                },
                "expireAfter": "720h",
                "taints": [{"key": "dedicated", "value": "web", "effect": "NoSchedule"}],
                "startupTaints": [{"key": "init", "effect": "NoExecute"}],
                "requirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    {
                        "key": "karpenter.sh/capacity-type",
                        "operator": "In",
                        "values": ["spot", "on-demand"],
                        "minValues": 1,
                    },
                    {"key": "karpenter.kwok.sh/instance-cpu", "operator": "Lt", "values": ["33"]},
                ],
            },
        },
    },
}

POD_SPEC: dict[str, Any] = {
    "containers": [
        {
            "name": "app",
            "image": "registry.k8s.io/pause:3.9",
            "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}},
            "ports": [{"containerPort": 8080, "hostPort": 8080}],
        }
    ],
    "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "1"}}}],
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "web"}],
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
                        ]
                    }
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 10,
                    "preference": {
                        "matchExpressions": [
                            {
                                "key": "karpenter.sh/capacity-type",
                                "operator": "In",
                                "values": ["spot"],
                            }
                        ]
                    },
                }
            ],
        },
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 50,
                    "podAffinityTerm": {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {"matchLabels": {"app": "web"}},
                    },
                }
            ]
        },
    },
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {
                "matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]
            },
        }
    ],
    "volumes": [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
        {
            "name": "scratch",
            "ephemeral": {
                "volumeClaimTemplate": {
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    }
                }
            },
        },
    ],
}


def _template(app: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app}, "annotations": {"a": "b"}},
        "spec": copy.deepcopy(POD_SPEC),
    }


def _workload(kind: str, version: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": version,
        "kind": kind,
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


CLUSTER: list[dict[str, Any]] = [
    NODEPOOL,
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-0", "namespace": "default", "labels": {"app": "web"}},
        "spec": copy.deepcopy(POD_SPEC),
    },
    _workload(
        "Deployment",
        "apps/v1",
        "web",
        {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": _template("web")},
    ),
    _workload(
        "StatefulSet",
        "apps/v1",
        "db",
        {
            "replicas": 1,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": _template("db"),
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "vol"},
                    "spec": {
                        "storageClassName": "zonal",
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "10Gi"}},
                    },
                }
            ],
        },
    ),
    _workload(
        "DaemonSet",
        "apps/v1",
        "agent",
        {"selector": {"matchLabels": {"app": "agent"}}, "template": _template("agent")},
    ),
    _workload(
        "Job",
        "batch/v1",
        "batch",
        {"parallelism": 2, "completions": 4, "template": _template("batch")},
    ),
    _workload(
        "ReplicaSet",
        "apps/v1",
        "rs",
        {"replicas": 1, "selector": {"matchLabels": {"app": "rs"}}, "template": _template("rs")},
    ),
    {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}},
    },
    {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": "zonal",
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": "csi.example.com",
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowedTopologies": [
            {
                "matchLabelExpressions": [
                    {"key": "topology.kubernetes.io/zone", "values": ["test-zone-a"]}
                ]
            }
        ],
    },
    {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": "data",
            "namespace": "default",
            "annotations": {"pv.kubernetes.io/bind-completed": "yes"},
        },
        "spec": {
            "storageClassName": "zonal",
            "volumeName": "pv-1",
            "resources": {"requests": {"storage": "1Gi"}},
        },
        "status": {"phase": "Bound"},
    },
    {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "pv-1"},
        "spec": {
            "storageClassName": "zonal",
            "csi": {"driver": "csi.example.com", "volumeHandle": "v"},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "topology.kubernetes.io/zone",
                                    "operator": "In",
                                    "values": ["test-zone-a"],
                                }
                            ]
                        }
                    ]
                }
            },
        },
    },
    {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": "node-1"},
        "spec": {"drivers": [{"name": "csi.example.com", "allocatable": {"count": 10}}]},
    },
    {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "node-1",
            "labels": {"kubernetes.io/arch": "amd64", "topology.kubernetes.io/zone": "test-zone-a"},
        },
        "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
        "status": {
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
        },
    },
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "labels": {"a": "b"}}},
    {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}},
    },
    {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": "discount"},
        "spec": {
            "weight": 10,
            "priceAdjustment": "-10%",
            "requirements": [
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}
            ],
        },
    },
]

VALIDATE: list[dict[str, Any]] = [
    NODEPOOL,
    {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": "claim"},
        "spec": {
            "nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "d"},
            "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
            "resources": {"requests": {"cpu": "1"}},
        },
    },
    CLUSTER[-1],
    {
        "apiVersion": "autoscaling.x-k8s.io/v1beta1",
        "kind": "CapacityBuffer",
        "metadata": {"name": "buffer", "namespace": "default"},
        "spec": {"scalableRef": {"kind": "Deployment", "name": "web"}, "replicas": 2},
    },
    CLUSTER[1],
]

SCENARIO: dict[str, Any] = {
    "apiVersion": "simulate.karpenter.sh/v1alpha1",
    "kind": "Scenario",
    "name": "fuzz",
    "until": "2m",
    "seed": 1,
    "sampleInterval": "10s",
    "nodePools": [NODEPOOL],
    "nodeOverlays": [CLUSTER[-1]],
    "objects": [CLUSTER[7], CLUSTER[8], CLUSTER[4], CLUSTER[14]],
    "workloads": [
        {
            "deployment": "web",
            "replicas": 3,
            "requests": {"cpu": "500m", "memory": "256Mi"},
            "labels": {"tier": "web"},
            "annotations": {"a": "b"},
            "podSpec": {"tolerations": [{"key": "dedicated", "operator": "Exists"}]},
            "scale": [{"at": "30s", "replicas": 5}],
        },
        {"job": "batch", "parallelism": 2, "completions": 2, "runFor": "20s"},
        {"pod": "solo", "requests": {"cpu": "1"}, "deleteAt": "90s"},
        {
            "manifest": _workload(
                "Deployment",
                "apps/v1",
                "api",
                {
                    "replicas": 2,
                    "selector": {"matchLabels": {"app": "api"}},
                    "template": {
                        "metadata": {"labels": {"app": "api"}},
                        "spec": {
                            "containers": [
                                {
                                    "name": "c",
                                    "image": "pause",
                                    "resources": {"requests": {"cpu": "1"}},
                                }
                            ]
                        },
                    },
                },
            )
        },
    ],
    "events": [
        {"at": "40s", "type": "SpotInterruption", "count": 1},
        {"at": "50s", "type": "NodeFailure", "nodePool": "general", "mode": "InstanceGone"},
        {
            "at": "20s",
            "type": "OfferingOutage",
            "zone": "test-zone-a",
            "capacityType": "spot",
            "duration": "30s",
        },
        {
            "at": "60s",
            "type": "PatchObject",
            "kind": "NodePool",
            "name": "general",
            "patch": {"spec": {"weight": 20}},
        },
        {"at": "70s", "type": "ApplyObject", "manifest": CLUSTER[14]},
        {"at": "80s", "type": "KarpenterRestart"},
    ],
}

INSTANCE_TYPES: list[dict[str, Any]] = [
    {
        "name": f"t-{size}x",
        "architecture": "amd64",
        "operatingSystems": ["linux"],
        "resources": {"cpu": str(size), "memory": f"{size * 4}Gi", "pods": "110"},
        "offerings": [
            {
                "Price": 0.05 * size,
                "Available": True,
                "ReservationCapacity": 0,
                "Requirements": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]},
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [ct]},
                ],
            }
            for ct in ("spot", "on-demand")
        ],
    }
    for size in (1, 4)
]

SCHEDULER_CONFIG: dict[str, Any] = {
    "podTopologySpread": {
        "defaultConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
            }
        ]
    }
}

# --- changes ----------------------------------------------------------------------------------

HOSTILE_SCALARS: list[Any] = [
    None,
    True,
    0,
    -1,
    2**31,
    2**63,
    10**30,
    -(10**19),
    0.5,
    1e308,
    float("inf"),
    float("nan"),
    "",
    " ",
    "-1",
    "1e400",
    "0x1F",
    "99999999999999999999999",
    "In",
    "Gt",
    "*",
    "%",
    "200%",
    "Never",
    "1h30m",
    "@every 5m",
    "x" * 300,
    "x" * 70_000,
    "p\u00f6d-\u00e9",
    "\u540d\u524d",
    "\U0001f600",
    "\u202eevil",
    "\x1b[31mred",
    "a\nb",
    "a/b/c",
    "karpenter.sh/nodepool",
    "kubernetes.io/hostname",
    "NoSchedule",
    "9" * 5000,
]

RAW_TEXTS: list[str] = [
    "9" * 101,
    "9" * 5000,
    "-" + "1" * 4400,
    "[" * 99 + "]" * 99,
    "[" * 150 + "]" * 150,
    "[" * 2000 + "]" * 2000,
    "{a: " * 120 + "1" + "}" * 120,
    "[&a0 [x,x,x,x,x,x,x,x,x,x], "
    + ", ".join(f"&a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 8))
    + "]",
    "[&s0 {k: v}, *s0, *s0]",
    "&self [*self]",
    "*undefined",
    "!!binary aGVsbG8=",
    "!!set {a, b}",
    "!!python/object/apply:os.system [echo]",
    "!!timestamp 2001-12-14",
    "!custom x",
    ".nan",
    "-.inf",
    "0o777",
    "1_000_000",
    "190:20:30",
    '"\\ud800"',
    "'" + "q" * 300_000 + "'",
    "{? [a, b] : c}",
    "{1: a, 2: b}",
    "{true: a, ~: b}",
    "|\n  block\n  text",
]


@frozen
class Change:
    """One change to a tree: at the ``target``-th node (in walk order), do ``op``."""

    target: int
    op: str
    value: Any = None


def _paths(tree: Any) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(tree, ())]
    while stack:
        node, path = stack.pop()
        out.append(path)
        if isinstance(node, dict):
            stack.extend((v, (*path, k)) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(node))
    return out


def _nest(depth: int, leaf: Any) -> Any:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"n": value}
    return value


def apply_change(tree: Any, change: Change, raws: list[str]) -> Any:
    """``tree`` with ``change`` made (a copy); raw-text values become placeholders whose
    text :func:`render` puts in place after dumping."""
    tree = copy.deepcopy(tree)
    paths = _paths(tree)
    path = paths[change.target % len(paths)]
    if not path:
        return tree if change.op in ("delete", "add") else _replaced(tree, change, raws)
    parent = tree
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if change.op == "delete":
        del parent[last]
    elif change.op == "add":
        target = parent[last]
        if isinstance(target, dict):
            target[f"unknown{change.target}"] = change.value
        elif isinstance(target, list):
            target.append(change.value)
        else:
            parent[last] = _replaced(target, change, raws)
    else:
        parent[last] = _replaced(parent[last], change, raws)
    return tree


def _replaced(current: Any, change: Change, raws: list[str]) -> Any:
    if change.op == "raw":
        raws.append(str(change.value))
        return f"@@RAW{len(raws) - 1}@@"
    if change.op == "wrap":
        return [current] if change.value else {"x": current}
    if change.op == "nest":
        depth = change.value if isinstance(change.value, int) else 120
        return _nest(abs(depth) % 150, current)
    if change.op == "duplicate-item" and isinstance(current, list) and current:
        return [*current, current[0]]
    return change.value


changes = st.builds(
    Change,
    target=st.integers(min_value=0, max_value=10_000),
    op=st.sampled_from(
        ["set", "set", "set", "delete", "add", "wrap", "nest", "raw", "duplicate-item"]
    ),
    value=st.one_of(
        st.sampled_from(HOSTILE_SCALARS),
        # small numbers only: a legitimately huge cluster (50,000 replicas) is slow, not hostile
        st.integers(min_value=-10, max_value=100),
        st.text(max_size=30),
        st.sampled_from(RAW_TEXTS),
        st.integers(min_value=2, max_value=140),
        st.lists(st.sampled_from(HOSTILE_SCALARS), max_size=3),
        st.dictionaries(st.text(max_size=8), st.sampled_from(HOSTILE_SCALARS), max_size=3),
    ),
)


@frozen
class Damage:
    """A change to the text after it is written."""

    op: str
    at: int = 0


damages = st.integers(min_value=0, max_value=9).flatmap(
    # most files are written as they are: their changes, not broken text, are the test
    lambda n: (
        st.just(Damage("none"))
        if n < 7
        else st.builds(
            Damage,
            op=st.sampled_from(
                [
                    "duplicate-key",
                    "truncate",
                    "tab",
                    "nul",
                    "latin-1",
                    "bom",
                    "empty",
                    "only-separators",
                    "json-as-yaml",
                ]
            ),
            at=st.integers(min_value=0, max_value=100_000),
        )
    )
)


def render(
    documents: Sequence[Any], raws: list[str], target: Target, fmt: str, damage: Damage
) -> bytes:
    """The file: the documents as YAML (``---`` between them) or as the target's JSON
    value, raw texts put in place, then ``damage`` done to the text."""
    if fmt == "json":
        text = json.dumps(target.as_json(list(documents)), indent=1, ensure_ascii=False)
    else:
        parts = [
            yaml.safe_dump(d, sort_keys=False, allow_unicode=True, width=1 << 20) for d in documents
        ]
        text = "---\n".join(parts)
    for i, raw in enumerate(raws):
        for quoted in (f"'@@RAW{i}@@'", f'"@@RAW{i}@@"', f"@@RAW{i}@@"):
            text = text.replace(quoted, raw)
    data = text.encode("utf-8", "surrogatepass")
    if damage.op == "duplicate-key":
        first = text.split("\n", 1)[0]
        if ":" in first and not first.startswith((" ", "-", "{", "[")):
            data = (text + first + "\n").encode("utf-8", "surrogatepass")
    elif damage.op == "truncate":
        data = data[: damage.at % (len(data) + 1)]
    elif damage.op == "tab":
        at = damage.at % (len(data) + 1)
        data = data[:at] + b"\t" + data[at:]
    elif damage.op == "nul":
        at = damage.at % (len(data) + 1)
        data = data[:at] + b"\x00" + data[at:]
    elif damage.op == "latin-1":
        data = text.encode("latin-1", "replace") + b"\xe9\xff"
    elif damage.op == "bom":
        data = b"\xef\xbb\xbf" + data
    elif damage.op == "empty":
        data = b""
    elif damage.op == "only-separators":
        data = b"---\n# nothing\n---\n"
    elif damage.op == "json-as-yaml":
        data = json.dumps(list(documents), default=str).encode()
    return data


@st.composite
def hostile_file(draw: st.DrawFn, target: Target) -> bytes:
    """A file for ``target``: its documents with one to four changes, written in one of its
    formats, perhaps damaged."""
    tree: Any = list(copy.deepcopy(target.documents))
    raws: list[str] = []
    for change in draw(st.lists(changes, min_size=1, max_size=4)):
        tree = apply_change(tree, change, raws)
    docs = tree if isinstance(tree, list) else [tree]
    fmt = draw(st.sampled_from(target.formats))
    return render(docs, raws, target, fmt, draw(damages))


# --- running -----------------------------------------------------------------------------------

WALL_GUARD_SECONDS = 120.0
"""How long one input may run before the fuzz calls it a hang: far beyond any real run of
these small inputs (a second or two), so only a command that never finishes trips it."""

MAX_OUTPUT_LINE = 2000
"""The longest line any command may print for these inputs: an error line is bounded at
1,000 characters (plus the elision note), report and table rows are far shorter."""


@frozen
class Outcome:
    """What one run did: exit code (None when it never finished), everything printed, and
    the exception that escaped the command, if any."""

    exit_code: int | None
    output: str
    crash: str | None

    @property
    def hung(self) -> bool:
        return self.exit_code is None

    @property
    def traceback(self) -> bool:
        return self.crash is not None or "Traceback" in self.output or self.exit_code == 70

    def long_lines(self) -> list[int]:
        return [len(line) for line in self.output.splitlines() if len(line) > MAX_OUTPUT_LINE]


def run_guarded(
    args: Sequence[str],
    *,
    guard: float = WALL_GUARD_SECONDS,
    charset: str = "utf-8",
) -> Outcome:
    """Run ``karpenter ARGS`` in-process (click's CliRunner) on a worker thread; a run that
    does not finish within ``guard`` seconds is reported as a hang instead of hanging the
    test (the thread is left behind: it is a daemon and the test fails)."""
    from karpenter_core.cli import main

    box: list[Outcome] = []

    def work() -> None:
        result = CliRunner(charset=charset).invoke(main, list(args), catch_exceptions=True)
        crash = None
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            crash = f"{type(result.exception).__name__}: {result.exception}"[:500]
        box.append(Outcome(result.exit_code, result.stdout + result.stderr, crash))

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(guard)
    if not box:
        return Outcome(None, "", None)
    return box[0]


@frozen
class Target:
    """A command that reads a user's file: the documents its fuzz input starts from, how
    they are one JSON value, the formats it reads, its arguments for a file, and the exit
    codes ``docs/cli.md`` allows it for a file's content (2 is for a wrong command line,
    which the fuzz never gives)."""

    documents: tuple[Any, ...]
    as_json: Callable[[list[Any]], Any]
    formats: tuple[str, ...]
    args: Callable[[Path], list[str]]
    exit_codes: frozenset[int]


def _as_list(docs: list[Any]) -> Any:
    return {"apiVersion": "v1", "kind": "List", "items": docs}


def _single(docs: list[Any]) -> Any:
    return docs[0] if len(docs) == 1 else docs


TARGETS: dict[str, Target] = {
    "validate": Target(
        tuple(VALIDATE),
        _as_list,
        ("yaml", "yaml", "json"),
        lambda f: ["validate", "-f", str(f)],
        frozenset({0, 1}),
    ),
    "schedule": Target(
        tuple(CLUSTER),
        _as_list,
        ("yaml", "yaml", "json"),
        lambda f: ["schedule", "-f", str(f)],
        frozenset({0, 1, 4}),  # 4: an invalid NodePool left out
    ),
    "schedule-json": Target(
        tuple(CLUSTER),
        _as_list,
        ("yaml",),
        lambda f: ["schedule", "-f", str(f), "-o", "json"],
        frozenset({0, 1, 4}),  # 4: an invalid NodePool left out
    ),
    "scheduler-config": Target(
        (SCHEDULER_CONFIG,),
        _single,
        ("yaml", "json"),
        lambda f: ["schedule", "-f", str(f.parent / "cluster.yaml"), "--scheduler-config", str(f)],
        frozenset({0, 1}),
    ),
    # --until keeps each run to two virtual minutes whatever the scenario's own until says
    "simulate": Target(
        (SCENARIO,),
        _single,
        ("yaml", "yaml", "json"),
        lambda f: ["simulate", str(f), "--until", "2m"],
        frozenset({0, 1, 3}),
    ),
    "instance-types": Target(
        tuple(INSTANCE_TYPES),
        list,
        ("json",),
        lambda f: ["instance-types", "--instance-types", str(f)],
        frozenset({0, 1}),
    ),
    "schedule-instance-types": Target(
        tuple(INSTANCE_TYPES),
        list,
        ("json",),
        lambda f: ["schedule", "-f", str(f.parent / "cluster.yaml"), "--instance-types", str(f)],
        frozenset({0, 1}),
    ),
}
"""Every command that reads a user's file, once per kind of file it reads (``crds``,
``plugins`` and ``serve`` read none). Targets reading ``cluster.yaml`` beside the fuzzed
file expect :func:`write_cluster` to have written it."""


def write_cluster(directory: Path) -> Path:
    """A valid ``cluster.yaml`` (the :data:`CLUSTER` manifests) in ``directory``."""
    path = directory / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(CLUSTER, sort_keys=False), encoding="utf-8")
    return path
