"""Scenarios for ``karpenter simulate``: what the cluster holds and what happens to it, when.

A scenario is one YAML (or JSON) mapping; the format is documented in ``docs/simulate.md``::

    apiVersion: simulate.karpenter.sh/v1alpha1   # optional
    kind: Scenario
    name: quickstart
    until: 30m                 # how long to run (virtual time); --until overrides
    seed: 1                    # --seed overrides
    chargeComputeTime: true    # charge each reconcile's CPU time to the virtual clock
    computeTimeScale: 2        # ... twice over (a controller half this machine's speed)
    nodePools: [<NodePool>]    # karpenter.sh/v1 manifests, validated like the CRDs
    nodeOverlays: [<NodeOverlay>]
    objects: [<any manifest>]  # namespaces, PDBs, DaemonSets, NodeClasses... created at t=0
    workloads:
      - deployment: web        # shorthand (deployment | job | pod) ...
        replicas: 10
        requests: {cpu: 500m, memory: 512Mi}
        scale: [{at: 10m, replicas: 30}]
      - manifest: <Deployment | ReplicaSet | Job | Pod manifest>   # ... or a full manifest
    events:
      - {at: 12m, type: SpotInterruption, count: 1}
      - {at: 15m, type: NodeFailure, nodePool: default}
      - {at: 5m, type: OfferingOutage, zone: test-zone-a, capacityType: spot, duration: 10m}
      - {at: 20m, type: KarpenterRestart}
      - {at: 25m, type: PatchObject, kind: NodePool, name: default, patch: <merge patch>}
      - {at: 30m, type: ApplyObject, manifest: <any manifest>}

Everything is parsed and checked here, before any controller runs, so a mistake is one
line naming the file, the entry and the field instead of a confusing simulation. Times are
offsets from the start of the simulation: Go durations (``90s``, ``1h30m``) or plain
numbers of seconds.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attrs import field, frozen

from karpenter_core.apis.durations import DurationError, parse_go_duration
from karpenter_core.apis.limits import shown_repr
from karpenter_core.apis.quantity import QuantityError, parse_quantity

if TYPE_CHECKING:
    from karpenter_core.sim.whatif import WhatIf

__all__ = [
    "EVENT_TYPES",
    "ScaleStep",
    "Scenario",
    "ScenarioError",
    "ScenarioEvent",
    "Workload",
    "check_compute_time_scale",
    "check_run_length",
    "load_scenario",
    "manifest_problem",
    "parse_duration",
    "parse_scenario",
]

API_VERSION = "simulate.karpenter.sh/v1alpha1"
KIND = "Scenario"

NODE_FAILURE = "NodeFailure"
SPOT_INTERRUPTION = "SpotInterruption"
OFFERING_OUTAGE = "OfferingOutage"
NODE_DELETION = "NodeDeletion"
KARPENTER_RESTART = "KarpenterRestart"
PATCH_OBJECT = "PatchObject"
APPLY_OBJECT = "ApplyObject"
EVENT_TYPES = (
    NODE_FAILURE,
    SPOT_INTERRUPTION,
    OFFERING_OUTAGE,
    NODE_DELETION,
    KARPENTER_RESTART,
    PATCH_OBJECT,
    APPLY_OBJECT,
)
"""Events a scenario can inject (see ``docs/simulate.md`` for what each one does)."""

RUN_FOR_ANNOTATION = "sim.karpenter.sh/run-seconds"
"""On a pod (template): seconds it runs before it succeeds, the simulated kubelet's stand-in
for the work a real container would do (see ``karpenter_core.sim.kubelet``)."""

WORKLOAD_KINDS: Mapping[str, str] = {
    "Deployment": "apps/v1",
    "ReplicaSet": "apps/v1",
    "Job": "batch/v1",
    "Pod": "v1",
}
_SHORTHAND = {"deployment": "Deployment", "job": "Job", "pod": "Pod", "replicaset": "ReplicaSet"}

_TOP_KEYS = frozenset(
    {
        "apiVersion",
        "kind",
        "name",
        "description",
        "seed",
        "until",
        "sampleInterval",
        "chargeComputeTime",
        "computeTimeScale",
        "options",
        "cloudProvider",
        "nodePools",
        "nodeOverlays",
        "objects",
        "workloads",
        "events",
        "from",
        "whatIf",
    }
)
_WORKLOAD_KEYS = frozenset(
    {
        "manifest",
        "deployment",
        "job",
        "pod",
        "replicaset",
        "namespace",
        "replicas",
        "completions",
        "parallelism",
        "runFor",
        "requests",
        "labels",
        "annotations",
        "podSpec",
        "at",
        "scale",
        "deleteAt",
    }
)
_EVENT_KEYS = frozenset(
    {
        "at",
        "type",
        "node",
        "nodePool",
        "count",
        "zone",
        "capacityType",
        "instanceType",
        "duration",
        "mode",
        "apiVersion",
        "kind",
        "name",
        "namespace",
        "patch",
        "manifest",
    }
)
_OBJECT_EVENT_KEYS: Mapping[str, frozenset[str]] = {
    PATCH_OBJECT: frozenset({"at", "type", "apiVersion", "kind", "name", "namespace", "patch"}),
    APPLY_OBJECT: frozenset({"at", "type", "manifest"}),
}
"""The fields each object-changing event takes (every other field is an error)."""
_OBJECT_FIELDS = frozenset({"apiVersion", "kind", "name", "namespace", "patch", "manifest"})
NODE_FAILURE_MODES = ("NotReady", "InstanceGone")

DEFAULT_SAMPLE_INTERVAL = 10.0
MIN_SAMPLE_INTERVAL = 0.1
MIN_DEFAULT_UNTIL = 600.0
SETTLE_AFTER_LAST = 600.0
MAX_VIRTUAL_SECONDS = 31 * 24 * 3600.0
"""The longest time a scenario may name (31 days): a simulated day takes about twenty
seconds of wall time, so ``until: 100000h`` would run for days rather than fail."""
MAX_SAMPLES = 300_000
"""Most samples one run may take (``until`` / ``sampleInterval``): 31 days at the default
10 s is 267,840; each is kept in memory and written to the report."""


class ScenarioError(ValueError):
    """The scenario cannot be run; the message is one line naming file, entry and field."""


MAX_COMPUTE_TIME_SCALE = 1000.0
"""The most a scenario may multiply charged compute by (a controller 1000x slower)."""


def check_compute_time_scale(value: Any, where: str) -> float:
    """A ``computeTimeScale``: a number in (0, :data:`MAX_COMPUTE_TIME_SCALE`]."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScenarioError(f"{where}: expected a positive number, got {shown_repr(value)}")
    scale = float(value)
    if not math.isfinite(scale) or scale <= 0 or scale > MAX_COMPUTE_TIME_SCALE:
        raise ScenarioError(
            f"{where}: must be above 0 and at most {MAX_COMPUTE_TIME_SCALE:g}, got {shown_repr(value)}"
        )
    return scale


def parse_duration(value: Any, where: str) -> float:
    """Seconds from a Go duration string or a plain number (seconds); negative is an error."""
    if isinstance(value, bool) or value is None:
        raise ScenarioError(
            f"{where}: expected a duration like 90s or 1h30m, got {shown_repr(value)}"
        )
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        try:
            seconds = float(text)
        except ValueError:
            try:
                seconds = parse_go_duration(text) / 1e9
            except DurationError as e:
                raise ScenarioError(f"{where}: {e}") from None
    else:
        raise ScenarioError(
            f"{where}: expected a duration like 90s or 1h30m, got {shown_repr(value)}"
        )
    if not math.isfinite(seconds) or seconds < 0:
        raise ScenarioError(
            f"{where}: a duration must be a finite, non-negative time, got {shown_repr(value)}"
        )
    if seconds > MAX_VIRTUAL_SECONDS:
        raise ScenarioError(
            f"{where}: at most {MAX_VIRTUAL_SECONDS / 3600:g}h (31 days) of virtual time can be "
            f"simulated, got {shown_repr(value)}"
        )
    return seconds


def check_run_length(scenario: Scenario, until: float | None) -> None:
    """Refuse a run that would take more than :data:`MAX_SAMPLES` samples (``until``, or
    the scenario's default, over its ``sampleInterval``)."""
    seconds = scenario.default_until() if until is None else until
    samples = seconds / scenario.sample_interval
    if samples > MAX_SAMPLES:
        raise ScenarioError(
            f"{scenario.source}: sampleInterval: {scenario.sample_interval:g}s over "
            f"{seconds:g}s is {samples:,.0f} samples, more than {MAX_SAMPLES:,}; use a larger "
            "sampleInterval"
        )


@frozen
class ScaleStep:
    """At ``at`` seconds, set the workload's replica count (a Job's parallelism)."""

    at: float
    replicas: int


@frozen
class Workload:
    """A Deployment, ReplicaSet, Job or a group of bare Pods, and how its size changes.

    ``manifest`` is the object created at ``at`` (for bare pods, the pod template: the
    simulator creates ``replicas`` pods named ``<name>-<i>``).
    """

    kind: str
    namespace: str
    name: str
    manifest: dict[str, Any]
    replicas: int
    at: float = 0.0
    scale: tuple[ScaleStep, ...] = ()
    delete_at: float | None = None

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"


@frozen
class ScenarioEvent:
    """Something that happens to the cluster at ``at`` seconds (see :data:`EVENT_TYPES`)."""

    at: float
    type: str
    node: str | None = None
    nodepool: str | None = None
    count: int = 1
    zone: str | None = None
    capacity_type: str | None = None
    instance_type: str | None = None
    duration: float | None = None
    mode: str = "NotReady"
    kind: str | None = None
    api_version: str | None = None
    name: str | None = None
    namespace: str | None = None
    patch: dict[str, Any] | None = None
    manifest: dict[str, Any] | None = None

    def describe(self) -> str:
        """One human line: what is hit."""
        if self.type in (PATCH_OBJECT, APPLY_OBJECT):
            where = f"{self.namespace}/" if self.namespace else ""
            return f"{self.kind} {where}{self.name}"
        if self.type == KARPENTER_RESTART:
            return "the Karpenter controller"
        if self.type == OFFERING_OUTAGE:
            parts = [
                f"{k}={v}"
                for k, v in (
                    ("zone", self.zone),
                    ("capacityType", self.capacity_type),
                    ("instanceType", self.instance_type),
                )
                if v
            ]
            window = f" for {self.duration:g}s" if self.duration else ""
            return f"offerings {' '.join(parts) or '(all)'} unavailable{window}"
        target = self.node or (f"nodePool {self.nodepool}" if self.nodepool else "any node")
        return f"{self.count} x {target}" if not self.node else target


@frozen
class Scenario:
    """A parsed, checked scenario (see the module docstring)."""

    name: str
    source: str = "<scenario>"
    description: str = ""
    seed: int | None = None
    until: float | None = None
    sample_interval: float = DEFAULT_SAMPLE_INTERVAL
    charge_compute_time: bool = False
    compute_time_scale: float = 1.0
    options: dict[str, str] = field(factory=dict)
    cloud_provider: str = "kwok"
    provider_settings: dict[str, str] = field(factory=dict)
    nodepools: tuple[dict[str, Any], ...] = ()
    nodeoverlays: tuple[dict[str, Any], ...] = ()
    objects: tuple[dict[str, Any], ...] = ()
    workloads: tuple[Workload, ...] = ()
    events: tuple[ScenarioEvent, ...] = ()
    from_path: str | None = None
    """The snapshot the run starts from (``from``, resolved against the scenario's
    directory), or None for an empty cluster."""
    what_if: tuple[WhatIf, ...] = ()
    """Changes to compare with doing nothing (``whatIf``; see :mod:`karpenter_core.sim.whatif`)."""

    def last_scheduled(self) -> float:
        """The latest time anything is scheduled to happen."""
        times = [0.0]
        for w in self.workloads:
            times.append(w.at)
            times.extend(s.at for s in w.scale)
            if w.delete_at is not None:
                times.append(w.delete_at)
        for e in self.events:
            times.append(e.at + (e.duration or 0.0))
        return max(times)

    def default_until(self) -> float:
        """``until`` if given, else 10 minutes after the last scheduled change (at least 10 m)."""
        if self.until is not None:
            return self.until
        return max(MIN_DEFAULT_UNTIL, self.last_scheduled() + SETTLE_AFTER_LAST)


# ---------------------------------------------------------------------------- loading


def load_scenario(path: str | Path) -> Scenario:
    """Read and check a scenario file; raises :class:`ScenarioError` naming what is wrong.

    The file is read by the manifest loader, with its limits: a regular file of bounded
    size, YAML without duplicate keys, bounded nesting, aliases and integers."""
    from karpenter_core.apis.manifests import ManifestError, parse_yaml, read_text

    source = str(path)
    try:
        docs = parse_yaml(read_text(source), source)
    except ManifestError as e:
        raise ScenarioError(str(e)) from None
    if len(docs) != 1:
        raise ScenarioError(
            f"{source}: expected exactly one YAML document (the scenario), found {len(docs)}"
        )
    return parse_scenario(docs[0], source)


def parse_scenario(data: Any, source: str = "<scenario>") -> Scenario:
    """Check a scenario mapping (as loaded from YAML) and build a :class:`Scenario`."""
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{source}: a scenario is a mapping, got {_type(data)}")
    unknown = sorted(str(k) for k in data if k not in _TOP_KEYS)
    if unknown:
        raise ScenarioError(
            f"{source}: unknown field {shown_repr(unknown[0])} (known: {', '.join(sorted(_TOP_KEYS))})"
        )
    api_version, kind = data.get("apiVersion", API_VERSION), data.get("kind", KIND)
    if api_version != API_VERSION or kind != KIND:
        raise ScenarioError(
            f"{source}: expected apiVersion {API_VERSION} and kind {KIND} (or neither), "
            f"got {shown_repr(api_version)} {shown_repr(kind)}"
        )
    name = data.get("name", Path(source).stem if source != "<scenario>" else "scenario")
    if not isinstance(name, str) or not name:
        raise ScenarioError(f"{source}: name: expected a non-empty string")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise ScenarioError(f"{source}: description: expected a string")
    seed = data.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ScenarioError(f"{source}: seed: expected an integer, got {shown_repr(seed)}")
    until = None if data.get("until") is None else parse_duration(data["until"], f"{source}: until")
    sample = DEFAULT_SAMPLE_INTERVAL
    if data.get("sampleInterval") is not None:
        sample = parse_duration(data["sampleInterval"], f"{source}: sampleInterval")
        if sample < MIN_SAMPLE_INTERVAL:
            raise ScenarioError(
                f"{source}: sampleInterval: must be at least {MIN_SAMPLE_INTERVAL:g}s, got {sample:g}s"
            )
    charge = data.get("chargeComputeTime", False)
    if not isinstance(charge, bool):
        raise ScenarioError(
            f"{source}: chargeComputeTime: expected true or false, got {shown_repr(charge)}"
        )
    scale = check_compute_time_scale(
        data.get("computeTimeScale", 1.0), f"{source}: computeTimeScale"
    )
    options = _string_map(data.get("options"), f"{source}: options")
    provider, settings = _cloud_provider(data.get("cloudProvider"), source)

    nodepools = tuple(
        _manifests(data.get("nodePools"), f"{source}: nodePools", "karpenter.sh/v1", "NodePool")
    )
    overlays = tuple(
        _manifests(
            data.get("nodeOverlays"),
            f"{source}: nodeOverlays",
            "karpenter.sh/v1alpha1",
            "NodeOverlay",
        )
    )
    _check_unique(nodepools, f"{source}: nodePools")
    _check_unique(overlays, f"{source}: nodeOverlays")
    for where, objs in ((f"{source}: nodePools", nodepools), (f"{source}: nodeOverlays", overlays)):
        for i, obj in enumerate(objs):
            _validate_api_object(obj, f"{where}[{i}] ({obj['metadata']['name']})")
    objects = tuple(_manifests(data.get("objects"), f"{source}: objects", None, None))
    for i, obj in enumerate(objects):
        _check_manifest(obj, f"{source}: objects[{i}] ({obj['kind']} {obj['metadata']['name']})")
    workloads = tuple(_workloads(data.get("workloads"), f"{source}: workloads"))
    seen: dict[str, int] = {}
    for i, w in enumerate(workloads):
        if w.key in seen:
            raise ScenarioError(
                f"{source}: workloads[{i}]: {w.kind} {w.namespace}/{w.name} is already "
                f"defined by workloads[{seen[w.key]}]"
            )
        seen[w.key] = i
    events = tuple(_events(data.get("events"), f"{source}: events"))
    base = Path(source).parent if source != "<scenario>" else None
    from_path = data.get("from")
    if from_path is not None:
        if not isinstance(from_path, str) or not from_path:
            raise ScenarioError(f"{source}: from: expected the path of a snapshot file")
        if base is not None and not Path(from_path).is_absolute():
            from_path = str(base / from_path)
    from karpenter_core.sim.whatif import what_if_entry

    what_if = tuple(
        what_if_entry(entry, f"{source}: whatIf[{i}]", base)
        for i, entry in enumerate(_list(data.get("whatIf"), f"{source}: whatIf"))
    )
    return Scenario(
        name=name,
        source=source,
        description=description,
        seed=seed,
        until=until,
        sample_interval=sample,
        charge_compute_time=charge,
        compute_time_scale=scale,
        options=options,
        cloud_provider=provider,
        provider_settings=settings,
        nodepools=nodepools,
        nodeoverlays=overlays,
        objects=objects,
        workloads=workloads,
        events=events,
        from_path=from_path,
        what_if=what_if,
    )


def _type(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the string {shown_repr(value)}"
    return f"{type(value).__name__} {shown_repr(value)}"


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ScenarioError(f"{where}: expected a list, got {_type(value)}")
    return value


def _string_map(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{where}: expected a mapping of names to values, got {_type(value)}")
    out: dict[str, str] = {}
    for k, v in value.items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        if not isinstance(v, str | int | float):
            raise ScenarioError(f"{where}.{k}: expected a string, got {_type(v)}")
        out[str(k)] = str(v)
    return out


def _cloud_provider(value: Any, source: str) -> tuple[str, dict[str, str]]:
    where = f"{source}: cloudProvider"
    if value is None:
        return "kwok", {}
    if isinstance(value, str):
        return value, {}
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{where}: expected a provider name or {{name, settings}}")
    unknown = sorted(str(k) for k in value if k not in ("name", "settings"))
    if unknown:
        raise ScenarioError(
            f"{where}: unknown field {shown_repr(unknown[0])} (known: name, settings)"
        )
    name = value.get("name", "kwok")
    if not isinstance(name, str) or not name:
        raise ScenarioError(f"{where}.name: expected a provider name")
    return name, _string_map(value.get("settings"), f"{where}.settings")


def _manifests(
    value: Any, where: str, api_version: str | None, kind: str | None
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, obj in enumerate(_list(value, where)):
        here = f"{where}[{i}]"
        if not isinstance(obj, Mapping):
            raise ScenarioError(f"{here}: expected a Kubernetes object, got {_type(obj)}")
        obj = copy.deepcopy(dict(obj))
        if kind is not None:
            obj.setdefault("apiVersion", api_version)
            obj.setdefault("kind", kind)
            if obj["kind"] != kind:
                raise ScenarioError(f"{here}: kind: expected {kind}, got {shown_repr(obj['kind'])}")
        for key in ("apiVersion", "kind"):
            if not isinstance(obj.get(key), str) or not obj[key]:
                raise ScenarioError(f"{here}: {key}: required")
        meta = obj.get("metadata")
        if (
            not isinstance(meta, Mapping)
            or not isinstance(meta.get("name"), str)
            or not meta["name"]
        ):
            raise ScenarioError(f"{here}: metadata.name: required")
        out.append(obj)
    return out


def _check_unique(objs: Sequence[Mapping[str, Any]], where: str) -> None:
    seen: set[str] = set()
    for i, obj in enumerate(objs):
        name = obj["metadata"]["name"]
        if name in seen:
            raise ScenarioError(f"{where}[{i}]: metadata.name: {shown_repr(name)} is defined twice")
        seen.add(name)


def _validate_api_object(obj: Mapping[str, Any], where: str) -> None:
    from karpenter_core.apis.validation import validate

    errors = validate(obj)
    if errors:
        raise ScenarioError(f"{where}: {errors[0]}")


def _check_manifest(obj: Mapping[str, Any], where: str) -> None:
    """Karpenter's kinds against their CRDs, any other kind with :func:`manifest_problem`."""
    from karpenter_core.apis.validation import is_supported

    if is_supported(obj):
        _validate_api_object(obj, where)
        return
    problem = manifest_problem(obj)
    if problem is not None:
        raise ScenarioError(f"{where}: {problem}")


_TEMPLATE_KINDS = frozenset(
    {"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "ReplicationController"}
)


def manifest_problem(obj: Mapping[str, Any]) -> str | None:
    """What the simulated API server, or a controller reading the object, would refuse in a
    core object, as ``path: message`` (None when nothing): a field of the wrong type, bad
    labels or annotations, what ``karpenter schedule``'s parsers refuse (quantities,
    selectors, affinity operators...), and a pod or pod template whose containers lack a
    name or an image (the API server requires both). Checked for every object a scenario
    creates, so a mistake is one line before the run rather than a controller failing on
    every reconcile during it."""
    from karpenter_core.apis.objects import (
        CORE_PARSERS,
        ObjectError,
        Pod,
        parse_core_object,
        validate_pod_scheduling,
    )
    from karpenter_core.apis.shapes import manifest_errors

    problems = manifest_errors(obj)
    if problems:
        return problems[0]
    kind = str(obj.get("kind"))
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    pod_spec, prefix = obj.get("spec"), "spec"
    try:
        if kind in CORE_PARSERS:
            parse_core_object(kind, obj)
        if kind in _TEMPLATE_KINDS:
            spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
            assert isinstance(spec, Mapping)
            template = spec.get("template")
            if not isinstance(template, Mapping):
                return "spec.template: Required value"
            pod_spec, prefix = template.get("spec"), "spec.template.spec"
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "template", "namespace": meta.get("namespace") or "default"},
                "spec": pod_spec,
            }
            try:
                Pod.from_dict(pod)
            except ObjectError as e:
                return f"spec.template.{e}"
            validate_pod_scheduling(pod_spec, prefix)
    except ObjectError as e:
        return str(e)
    if kind == "Pod" or kind in _TEMPLATE_KINDS:
        return _containers_problem(pod_spec, prefix)
    return None


def _containers_problem(pod_spec: Any, prefix: str) -> str | None:
    containers = pod_spec.get("containers") if isinstance(pod_spec, Mapping) else None
    if not isinstance(containers, list) or not containers:
        return f"{prefix}.containers: Required value (a pod needs at least one container)"
    for i, c in enumerate(containers):
        for key in ("name", "image"):
            if not isinstance(c, Mapping) or not c.get(key):
                return f"{prefix}.containers[{i}].{key}: Required value"
    return None


# ---------------------------------------------------------------------------- workloads


def _workloads(value: Any, where: str) -> list[Workload]:
    return [_workload(w, f"{where}[{i}]") for i, w in enumerate(_list(value, where))]


def _int(value: Any, where: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ScenarioError(
            f"{where}: expected an integer of at least {minimum}, got {shown_repr(value)}"
        )
    return value


def _workload(entry: Any, where: str) -> Workload:
    if not isinstance(entry, Mapping):
        raise ScenarioError(f"{where}: expected a mapping, got {_type(entry)}")
    unknown = sorted(str(k) for k in entry if k not in _WORKLOAD_KEYS)
    if unknown:
        raise ScenarioError(
            f"{where}: unknown field {shown_repr(unknown[0])} (known: {', '.join(sorted(_WORKLOAD_KEYS))})"
        )
    short = [k for k in _SHORTHAND if k in entry]
    if "manifest" in entry and short:
        raise ScenarioError(f"{where}: give either manifest or {short[0]}, not both")
    if len(short) > 1:
        raise ScenarioError(
            f"{where}: give one of {', '.join(_SHORTHAND)}, found {', '.join(short)}"
        )
    if "manifest" in entry:
        for key in ("requests", "labels", "annotations", "podSpec", "namespace"):
            if key in entry:
                raise ScenarioError(
                    f"{where}: {key} is shorthand; with a manifest, set it in the manifest"
                )
        manifest = _full_manifest(entry["manifest"], f"{where}.manifest")
    elif short:
        manifest = _shorthand_manifest(entry, short[0], where)
    else:
        raise ScenarioError(f"{where}: needs manifest or one of {', '.join(_SHORTHAND)}")

    kind = manifest["kind"]
    meta = manifest["metadata"]
    namespace = str(meta.get("namespace") or "default")
    meta["namespace"] = namespace
    name = str(meta["name"])
    spec = manifest.setdefault("spec", {})
    if not isinstance(spec, dict):
        raise ScenarioError(f"{where}: spec: expected a mapping")
    if kind == "Pod":
        replicas = _int(entry.get("replicas", 1), f"{where}.replicas")
    elif kind == "Job":
        if "replicas" in entry:
            raise ScenarioError(f"{where}.replicas: a Job has parallelism and completions")
        replicas = _int(spec.get("parallelism", 1), f"{where}: spec.parallelism")
        _int(spec.get("completions", replicas), f"{where}: spec.completions")
    else:
        if "replicas" in entry and "manifest" in entry:
            raise ScenarioError(f"{where}.replicas: set spec.replicas in the manifest")
        replicas = _int(spec.get("replicas", 1), f"{where}: spec.replicas")
    if kind != "Pod":
        _check_template(spec, where)
    at = parse_duration(entry.get("at", 0), f"{where}.at")
    steps: list[ScaleStep] = []
    for j, step in enumerate(_list(entry.get("scale"), f"{where}.scale")):
        here = f"{where}.scale[{j}]"
        if not isinstance(step, Mapping) or set(step) - {"at", "replicas"}:
            raise ScenarioError(f"{here}: expected {{at, replicas}}")
        if "at" not in step or "replicas" not in step:
            raise ScenarioError(f"{here}: needs both at and replicas")
        t = parse_duration(step["at"], f"{here}.at")
        if t < at:
            raise ScenarioError(f"{here}.at: {t:g}s is before the workload is created ({at:g}s)")
        steps.append(ScaleStep(t, _int(step["replicas"], f"{here}.replicas")))
    steps.sort(key=lambda s: s.at)
    delete_at = None
    if entry.get("deleteAt") is not None:
        delete_at = parse_duration(entry["deleteAt"], f"{where}.deleteAt")
        if delete_at < at:
            raise ScenarioError(f"{where}.deleteAt: before the workload is created")
    _check_manifest(manifest, f"{where} ({name})")
    return Workload(kind, namespace, name, manifest, replicas, at, tuple(steps), delete_at)


def _full_manifest(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{where}: expected a Kubernetes object, got {_type(value)}")
    manifest = copy.deepcopy(dict(value))
    kind = manifest.get("kind")
    if not isinstance(kind, str) or kind not in WORKLOAD_KINDS:
        raise ScenarioError(
            f"{where}: kind: expected one of {', '.join(WORKLOAD_KINDS)}, got {shown_repr(kind)}"
        )
    manifest.setdefault("apiVersion", WORKLOAD_KINDS[kind])
    if manifest["apiVersion"] != WORKLOAD_KINDS[kind]:
        raise ScenarioError(
            f"{where}: apiVersion: {kind} is {WORKLOAD_KINDS[kind]}, got {shown_repr(manifest['apiVersion'])}"
        )
    meta = manifest.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise ScenarioError(f"{where}: metadata.name: required")
    if kind == "Pod":
        spec = manifest.get("spec")
        if not isinstance(spec, Mapping) or not isinstance(spec.get("containers"), list):
            raise ScenarioError(f"{where}: spec.containers: required")
    return manifest


def _check_template(spec: Mapping[str, Any], where: str) -> None:
    template = spec.get("template")
    if not isinstance(template, Mapping):
        raise ScenarioError(f"{where}: spec.template: required")
    pod_spec = template.get("spec")
    if not isinstance(pod_spec, Mapping) or not isinstance(pod_spec.get("containers"), list):
        raise ScenarioError(f"{where}: spec.template.spec.containers: required")
    if not pod_spec["containers"]:
        raise ScenarioError(f"{where}: spec.template.spec.containers: needs at least one container")


def _shorthand_manifest(entry: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    kind = _SHORTHAND[key]
    name = entry[key]
    if not isinstance(name, str) or not name:
        raise ScenarioError(f"{where}.{key}: expected the workload's name")
    namespace = entry.get("namespace", "default")
    if not isinstance(namespace, str) or not namespace:
        raise ScenarioError(f"{where}.namespace: expected a namespace name")
    requests = entry.get("requests") or {}
    if not isinstance(requests, Mapping):
        raise ScenarioError(f"{where}.requests: expected a mapping like {{cpu: 500m}}")
    for res, qty in requests.items():
        try:
            parse_quantity(qty)
        except (QuantityError, TypeError, ValueError) as e:
            raise ScenarioError(f"{where}.requests.{res}: {e}") from None
    labels = {"app": name, **_string_map(entry.get("labels"), f"{where}.labels")}
    annotations = _string_map(entry.get("annotations"), f"{where}.annotations")
    pod_spec_extra = entry.get("podSpec") or {}
    if not isinstance(pod_spec_extra, Mapping):
        raise ScenarioError(f"{where}.podSpec: expected a mapping (pod spec fields)")
    container: dict[str, Any] = {"name": "app", "image": "registry.k8s.io/pause:3.9"}
    if requests:
        container["resources"] = {"requests": {str(k): str(v) for k, v in requests.items()}}
    pod_spec: dict[str, Any] = {"containers": [container]}
    pod_spec.update(copy.deepcopy(dict(pod_spec_extra)))
    if kind in ("Job",):
        pod_spec.setdefault("restartPolicy", "Never")
    if kind != "Job":
        for k in ("completions", "parallelism", "runFor"):
            if k in entry:
                raise ScenarioError(f"{where}.{k}: only for a job")
    template_annotations = dict(annotations)
    if kind == "Job" and entry.get("runFor") is not None:
        run_for = parse_duration(entry["runFor"], f"{where}.runFor")
        template_annotations[RUN_FOR_ANNOTATION] = f"{run_for:g}"
    template_meta: dict[str, Any] = {"labels": dict(labels)}
    if template_annotations:
        template_meta["annotations"] = template_annotations
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels)}
    if kind == "Pod":
        if annotations:
            meta["annotations"] = annotations
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec}
    template = {"metadata": template_meta, "spec": pod_spec}
    if kind == "Job":
        parallelism = _int(entry.get("parallelism", 1), f"{where}.parallelism")
        completions = _int(entry.get("completions", parallelism), f"{where}.completions")
        spec: dict[str, Any] = {
            "parallelism": parallelism,
            "completions": completions,
            "template": template,
        }
    else:
        replicas = _int(entry.get("replicas", 1), f"{where}.replicas")
        spec = {
            "replicas": replicas,
            "selector": {"matchLabels": dict(labels)},
            "template": template,
        }
    return {"apiVersion": WORKLOAD_KINDS[kind], "kind": kind, "metadata": meta, "spec": spec}


# ---------------------------------------------------------------------------- events


def _events(value: Any, where: str) -> list[ScenarioEvent]:
    out = [_event(e, f"{where}[{i}]") for i, e in enumerate(_list(value, where))]
    # stable: equal times keep file order
    return sorted(out, key=lambda e: e.at)


def _opt_str(entry: Mapping[str, Any], key: str, where: str) -> str | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ScenarioError(f"{where}.{key}: expected a non-empty string, got {_type(value)}")
    return value


def _event(entry: Any, where: str) -> ScenarioEvent:
    if not isinstance(entry, Mapping):
        raise ScenarioError(f"{where}: expected a mapping, got {_type(entry)}")
    unknown = sorted(str(k) for k in entry if k not in _EVENT_KEYS)
    if unknown:
        raise ScenarioError(
            f"{where}: unknown field {shown_repr(unknown[0])} (known: {', '.join(sorted(_EVENT_KEYS))})"
        )
    etype = entry.get("type")
    if etype not in EVENT_TYPES:
        raise ScenarioError(
            f"{where}.type: expected one of {', '.join(EVENT_TYPES)}, got {shown_repr(etype)}"
        )
    if "at" not in entry:
        raise ScenarioError(f"{where}.at: required (when the event happens)")
    at = parse_duration(entry["at"], f"{where}.at")
    if etype in _OBJECT_EVENT_KEYS:
        return _object_event(entry, etype, at, where)
    stray = sorted(_OBJECT_FIELDS & {str(k) for k in entry})
    if stray:
        raise ScenarioError(f"{where}.{stray[0]}: only for {PATCH_OBJECT} and {APPLY_OBJECT}")
    duration = None
    if entry.get("duration") is not None:
        duration = parse_duration(entry["duration"], f"{where}.duration")
    node = _opt_str(entry, "node", where)
    nodepool = _opt_str(entry, "nodePool", where)
    zone = _opt_str(entry, "zone", where)
    capacity_type = _opt_str(entry, "capacityType", where)
    instance_type = _opt_str(entry, "instanceType", where)
    count = _int(entry.get("count", 1), f"{where}.count", minimum=1)
    mode = entry.get("mode", "NotReady")
    if etype == KARPENTER_RESTART:
        extra = sorted(str(k) for k in entry if k not in ("at", "type"))
        if extra:
            raise ScenarioError(f"{where}.{extra[0]}: not used by {etype}")
    elif etype == OFFERING_OUTAGE:
        for key in ("node", "nodePool", "count", "mode"):
            if key in entry:
                raise ScenarioError(f"{where}.{key}: not used by {etype} (it hits offerings)")
    else:
        for key in ("zone", "capacityType", "instanceType", "duration"):
            if key in entry:
                raise ScenarioError(f"{where}.{key}: not used by {etype} (it hits nodes)")
        if node is not None and "count" in entry:
            raise ScenarioError(f"{where}.count: not used with node (that names one node)")
    if etype == NODE_FAILURE:
        if mode not in NODE_FAILURE_MODES:
            raise ScenarioError(
                f"{where}.mode: expected one of {', '.join(NODE_FAILURE_MODES)}, got {shown_repr(mode)}"
            )
    elif "mode" in entry:
        raise ScenarioError(f"{where}.mode: only for {NODE_FAILURE}")
    return ScenarioEvent(
        at=at,
        type=etype,
        node=node,
        nodepool=nodepool,
        count=count,
        zone=zone,
        capacity_type=capacity_type,
        instance_type=instance_type,
        duration=duration,
        mode=str(mode),
    )


def _object_event(entry: Mapping[str, Any], etype: str, at: float, where: str) -> ScenarioEvent:
    """A ``PatchObject`` (merge patch on a named object) or ``ApplyObject`` (create or
    replace a whole manifest). Only the shape is checked here: whether the object exists
    is a question for the run (a patch may target something an earlier event applies)."""
    allowed = _OBJECT_EVENT_KEYS[etype]
    extra = sorted(str(k) for k in entry if k not in allowed)
    if extra:
        raise ScenarioError(
            f"{where}.{extra[0]}: not used by {etype} (it takes {', '.join(sorted(allowed))})"
        )
    if etype == APPLY_OBJECT:
        if "manifest" not in entry:
            raise ScenarioError(f"{where}.manifest: required (the object to create or replace)")
        manifest = _apply_manifest(entry["manifest"], f"{where}.manifest")
        meta = manifest["metadata"]
        return ScenarioEvent(
            at=at,
            type=etype,
            kind=str(manifest["kind"]),
            api_version=str(manifest["apiVersion"]),
            name=str(meta["name"]),
            namespace=meta.get("namespace"),
            manifest=manifest,
        )
    for key in ("kind", "name", "patch"):
        if key not in entry:
            raise ScenarioError(f"{where}.{key}: required by {etype}")
    kind = _object_name(entry["kind"], f"{where}.kind")
    name = _object_name(entry["name"], f"{where}.name")
    api_version = _opt_str(entry, "apiVersion", where)
    namespace = _opt_str(entry, "namespace", where)
    patch = entry["patch"]
    if not isinstance(patch, Mapping) or not patch:
        raise ScenarioError(
            f"{where}.patch: expected a non-empty mapping (a JSON merge patch), got {_type(patch)}"
        )
    for key in ("apiVersion", "kind"):
        if key in patch:
            raise ScenarioError(f"{where}.patch.{key}: a patch cannot change what the object is")
    meta = patch.get("metadata")
    if meta is not None and not isinstance(meta, Mapping):
        raise ScenarioError(f"{where}.patch.metadata: expected a mapping, got {_type(meta)}")
    for key in ("name", "namespace"):
        if isinstance(meta, Mapping) and key in meta:
            raise ScenarioError(
                f"{where}.patch.metadata.{key}: a patch cannot rename or move the object"
            )
    return ScenarioEvent(
        at=at,
        type=etype,
        kind=kind,
        api_version=api_version,
        name=name,
        namespace=namespace,
        patch=copy.deepcopy(dict(patch)),
    )


def _object_name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ScenarioError(f"{where}: expected a non-empty string, got {_type(value)}")
    return value


def _apply_manifest(value: Any, where: str) -> dict[str, Any]:
    """A whole object to apply. NodePools, NodeOverlays and the other kinds the CRDs
    validate are checked now, as ``nodePools`` are: the API server would refuse an invalid
    one anyway, and a mistake is better found before the run than 20 minutes into it."""
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{where}: expected a Kubernetes object, got {_type(value)}")
    manifest = copy.deepcopy(dict(value))
    for key in ("apiVersion", "kind"):
        if not isinstance(manifest.get(key), str) or not manifest[key]:
            raise ScenarioError(f"{where}.{key}: required")
    meta = manifest.get("metadata")
    if not isinstance(meta, dict):
        raise ScenarioError(f"{where}.metadata.name: required")
    _object_name(meta.get("name"), f"{where}.metadata.name")
    if meta.get("namespace") is not None:
        _object_name(meta["namespace"], f"{where}.metadata.namespace")
    _check_manifest(manifest, f"{where} ({meta['name']})")
    return manifest


def scenario_to_json(scenario: Scenario) -> str:
    """A compact JSON dump of the parsed scenario (for debugging and reports)."""
    return json.dumps(
        {
            "name": scenario.name,
            "until": scenario.default_until(),
            "nodePools": [p["metadata"]["name"] for p in scenario.nodepools],
            "workloads": [w.key for w in scenario.workloads],
            "events": [{"at": e.at, "type": e.type} for e in scenario.events],
        },
        sort_keys=True,
    )
