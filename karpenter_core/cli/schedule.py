"""``karpenter schedule``: what would Karpenter do for the pending pods in these manifests?

Reads Kubernetes YAML the way ``kubectl apply -f`` does (files, directories, multi-document
files, ``List`` objects), builds a :class:`~karpenter_core.state.ClusterSnapshot`, expands
workloads into the pods their controllers would create, runs the real scheduler once and
prints the decision. The ``-o json`` shape is a public interface, documented in
``docs/schedule.md``::

    {"nodeClaims": [{"nodePool", "instanceTypes", "requirements", "pods"}],
     "existingNodes": [{"name", "pods"}],
     "podErrors": {"namespace/name": "reason"},
     "invalidNodePools": {"name": "file: NodePool name: field path: problem"}}

Exit status 0 whenever the input is valid, even if some pods cannot schedule (they are in
``podErrors``); 1 for bad input, with one line naming the file, the object and the field;
4 when it scheduled but left out invalid NodePools (one line each on stderr, and in
``invalidNodePools``), as Karpenter provisions from the valid NodePools only.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import click
from attrs import field, frozen

from karpenter_core.apis.limits import elide, shown
from karpenter_core.apis.objects import (
    Controller,
    ObjectError,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
    object_ref,
    parse_core_object,
)
from karpenter_core.apis.shapes import describe, manifest_errors
from karpenter_core.apis.workloads import (
    WORKLOAD_KINDS,
    WorkloadError,
    ephemeral_claims,
    expand_workloads,
)
from karpenter_core.cli.exits import EXIT_INVALID_NODEPOOLS, BadInput, echo_problem
from karpenter_core.cli.output import JSON, WIDE, YAML, dump, output_option, table_lines
from karpenter_core.cli.progress import Progress, progress
from karpenter_core.runtime.options import (
    IGNORE_DRA_REQUESTS_ENV,
    IGNORE_DRA_REQUESTS_FLAG,
    IGNORE_DRA_REQUESTS_HELP,
)
from karpenter_core.state.snapshot import ClusterSnapshot

if TYPE_CHECKING:  # imported lazily at run time: the solver is only loaded when scheduling
    from karpenter_core.apis.v1 import NodePool
    from karpenter_core.apis.v1alpha1 import NodeOverlay
    from karpenter_core.cloudprovider.overlay import BoundOverlay
    from karpenter_core.cloudprovider.types import InstanceType
    from karpenter_core.plugins import KarpenterPluginManager
    from karpenter_core.provisioning.scheduler import DRAInputs, SchedulerOptions

__all__ = [
    "InputError",
    "ScheduleInput",
    "command",
    "effective_instance_types",
    "load_instance_types",
    "plugin_overlays",
    "read_input",
    "read_objects",
    "render_table",
    "schedule_input",
]

DEFAULT_CLOUD_PROVIDER = "kwok"
KWOK_INSTANCE_TYPES_SETTING = "instance-types-file-path"
NO_NODEPOOLS_ERROR = "no dynamic nodepools found"
PHASES = ("reading manifests", "loading instance types", "scheduling {pods} pending pod(s)")
"""What the progress bar says (on a terminal) while each step runs."""


class InputError(Exception):
    """Bad input: the message is one line naming file, object and field."""


def _tuple(items: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(items)


@frozen
class ScheduleInput:
    """Everything read from the manifests, parsed once."""

    snapshot: ClusterSnapshot
    nodepools: tuple[NodePool, ...] = field(converter=_tuple)
    nodeoverlays: tuple[NodeOverlay, ...] = field(default=(), converter=_tuple)
    ignored_kinds: Mapping[str, int] = field(factory=dict)
    sources: Mapping[str, str] = field(factory=dict)
    """Object identity (``NodePool default``) -> the file it was read from."""
    dra_objects: Mapping[str, tuple[Any, ...]] = field(factory=dict)
    """DeviceClasses, ResourceClaims, ResourceClaimTemplates and ResourceSlices by kind."""
    unread: tuple[Mapping[str, Any], ...] = field(default=(), converter=_tuple)
    """Objects of kinds the scheduler does not read (NodeClasses among them), last
    occurrence of each identity: the cloud provider may resolve NodePools' NodeClasses
    against them (:func:`load_instance_types`)."""
    invalid_nodepools: Mapping[str, str] = field(factory=dict)
    """NodePools left out because they failed validation: name -> ``<file>: NodePool <name>:
    <field path>: <message>``. Karpenter does not provision from a NodePool whose
    validation failed (its ``ValidationSucceeded`` condition is false) and goes on with the
    others; so does ``schedule``."""

    def dra_inputs(self) -> DRAInputs:
        """What the scheduler simulates pods' ResourceClaims against."""
        from karpenter_core.provisioning.scheduler import DRAInputs

        objs = self.dra_objects
        return DRAInputs.of(
            objs.get("DeviceClass", ()),
            objs.get("ResourceClaim", ()),
            objs.get("ResourceClaimTemplate", ()),
            objs.get("ResourceSlice", ()),
        )


# --- reading manifests -----------------------------------------------------------------------


_CORE_KINDS: dict[str, str] = {
    "Pod": "v1",
    "Node": "v1",
    "PersistentVolumeClaim": "v1",
    "PersistentVolume": "v1",
    "DaemonSet": "apps/v1",
    "PodDisruptionBudget": "policy/v1",
    "StorageClass": "storage.k8s.io/v1",
    "CSINode": "storage.k8s.io/v1",
    "NodePool": "karpenter.sh/v1",
    "NodeClaim": "karpenter.sh/v1",
    "NodeOverlay": "karpenter.sh/v1alpha1",
    "Namespace": "v1",
    "Service": "v1",
    "ReplicationController": "v1",
    "DeviceClass": "resource.k8s.io/v1",
    "ResourceClaim": "resource.k8s.io/v1",
    "ResourceClaimTemplate": "resource.k8s.io/v1",
    "ResourceSlice": "resource.k8s.io/v1",
}
_DRA_KINDS = ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice")
_WORKLOAD_VERSIONS = {kind: version for version, kind in WORKLOAD_KINDS}
_CRD_KINDS = ("NodePool", "NodeClaim", "NodeOverlay")


def _identity(obj: Mapping[str, Any]) -> str:
    kind = str(obj.get("kind") or "object")
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    name = elide(str(meta.get("name") or "<unnamed>"))
    namespaced = kind not in (
        "Namespace",
        "Node",
        "PersistentVolume",
        "StorageClass",
        "CSINode",
        "NodePool",
        "NodeClaim",
        "NodeOverlay",
        "DeviceClass",
        "ResourceSlice",
    )
    namespace = elide(str(meta.get("namespace") or "default")) if namespaced else ""
    return object_ref(elide(kind), namespace, name)


def _where(source: str, obj: Mapping[str, Any]) -> str:
    return f"{source}: {_identity(obj)}"


def _load(paths: Sequence[str]) -> list[Any]:
    try:
        from karpenter_core.apis.manifests import ManifestError, load_manifests
    except ImportError as e:  # pragma: no cover - the loader ships with karpenter-core
        raise InputError(f"manifest loader unavailable: {e}") from None
    try:
        loaded = list(load_manifests(paths))
    except ManifestError as e:
        raise InputError(str(e)) from None
    if not loaded:
        # Like kubectl's "no objects passed to apply": an empty file or a directory without
        # manifests is almost always the wrong path, not a cluster with nothing in it.
        raise InputError("no objects found in " + ", ".join(paths))
    return loaded


def _karpenter_object(kind: str, obj: Mapping[str, Any], where: str) -> Any:
    """The parsed object; :class:`InputError` naming the first problem (the validation
    ``karpenter validate`` applies, and how many more it found) when it is invalid."""
    from karpenter_core.apis import v1, v1alpha1
    from karpenter_core.apis.validation import validate

    errs = validate(v1.apply_defaults(obj))
    if errs:
        more = f" (and {len(errs) - 1} more)" if len(errs) > 1 else ""
        raise InputError(f"{where}: {errs[0]}{more}")
    model: Any = {
        "NodePool": v1.NodePool,
        "NodeClaim": v1.NodeClaim,
        "NodeOverlay": v1alpha1.NodeOverlay,
    }[kind]
    try:
        return model.from_dict(obj, defaults=True)
    except ValueError as e:
        raise InputError(f"{where}: {e}") from None


def _dra_object(kind: str, obj: Mapping[str, Any], where: str) -> Any:
    from karpenter_core.apis import resource

    model: Any = {
        "DeviceClass": resource.DeviceClass,
        "ResourceClaim": resource.ResourceClaim,
        "ResourceClaimTemplate": resource.ResourceClaimTemplate,
        "ResourceSlice": resource.ResourceSlice,
    }[kind]
    try:
        return model.from_dict(obj)
    except ValueError as e:
        raise InputError(f"{where}: {e}") from None


def read_input(paths: Sequence[str]) -> ScheduleInput:
    """Read, validate and parse manifests; raises :class:`InputError` on bad input.

    A later object with the same kind, namespace and name replaces an earlier one (as
    repeated ``kubectl apply`` would). Kinds the scheduler does not read are counted in
    ``ignored_kinds``.
    """
    return read_objects(_load(paths))


def read_objects(loaded: Sequence[Any]) -> ScheduleInput:
    """:func:`read_input` of objects already loaded: ``LoadedObject``s (their ``source``
    names where each came from in messages), e.g. a snapshot's items."""
    latest: dict[str, tuple[str, Mapping[str, Any]]] = {}
    ignored: dict[str, int] = {}
    unread: dict[str, Mapping[str, Any]] = {}
    for item in loaded:
        obj = item.obj
        if not isinstance(obj, Mapping):
            raise InputError(
                f"{item.source}: object {item.index + 1}: expected a Kubernetes object"
            )
        kind = obj.get("kind")
        api_version = obj.get("apiVersion")
        if not isinstance(kind, str) or not kind:
            raise InputError(f"{item.source}: object {item.index + 1}: kind: required")
        expected = _CORE_KINDS.get(kind) or _WORKLOAD_VERSIONS.get(kind)
        if expected is None:
            ignored[kind] = ignored.get(kind, 0) + 1
            unread[_identity(obj)] = obj
            continue
        if api_version != expected:
            raise InputError(
                f"{_where(item.source, obj)}: apiVersion: unsupported version "
                f"{shown(api_version)} for {kind}; use {expected}"
            )
        if kind not in _CRD_KINDS:  # those are checked against their CRDs below
            problems = manifest_errors(obj)
            if problems:
                raise InputError(f"{_where(item.source, obj)}: {problems[0]}")
        latest[_identity(obj)] = (item.source, obj)

    parsed: dict[str, list[Any]] = {}
    workloads: list[tuple[str, Mapping[str, Any]]] = []
    invalid_nodepools: dict[str, str] = {}
    for source, obj in latest.values():
        kind = str(obj["kind"])
        where = _where(source, obj)
        if kind in _WORKLOAD_VERSIONS:
            workloads.append((source, obj))
            continue
        if kind == "NodePool":
            try:
                parsed.setdefault(kind, []).append(_karpenter_object(kind, obj, where))
            except InputError as e:
                invalid_nodepools[_identity(obj).removeprefix("NodePool ")] = str(e)
            continue
        if kind in _CRD_KINDS:
            parsed.setdefault(kind, []).append(_karpenter_object(kind, obj, where))
            continue
        if kind in _DRA_KINDS:
            parsed.setdefault(kind, []).append(_dra_object(kind, obj, where))
            continue
        try:
            parsed.setdefault(kind, []).append(parse_core_object(kind, obj))
        except ObjectError as e:
            raise InputError(f"{where}: {e}") from None

    storage_classes: list[StorageClass] = parsed.get("StorageClass", [])
    defaults = [s for s in storage_classes if s.is_default]
    default_sc = defaults[-1].name if defaults else None
    pvcs: list[PersistentVolumeClaim] = [
        # DefaultStorageClass admission: an unset class gets the cluster default.
        attrs.evolve(p, storage_class_name=default_sc)
        if p.storage_class_name is None and default_sc
        else p
        for p in parsed.get("PersistentVolumeClaim", [])
    ]
    pods: list[Pod] = parsed.get("Pod", [])
    sources = {ident: source for ident, (source, _) in latest.items()}
    objs = [o for _, o in workloads]
    try:
        expansions = expand_workloads(objs, pods, pvcs, default_sc)
    except WorkloadError as e:
        source, obj = workloads[e.index]
        raise InputError(f"{_where(source, obj)}: {e}") from None
    controllers: list[Controller] = list(parsed.get("ReplicationController", []))
    claims = {p.key for p in pvcs}

    def add_ephemeral_claims(pod: Pod, where: str, prefix: str) -> None:
        # The ephemeral-volume controller creates these before the pod is scheduled.
        try:
            new = ephemeral_claims(pod, claims, default_sc)
        except ObjectError as e:
            raise InputError(f"{where}: {prefix}{e}") from None
        pvcs.extend(new)
        claims.update(p.key for p in new)

    for pod in pods:
        if pod.is_pending():
            source = sources.get(object_ref("Pod", pod.namespace, pod.name), "<input>")
            add_ephemeral_claims(pod, f"{source}: {object_ref('Pod', pod.namespace, pod.name)}", "")
    for index, exp in expansions:
        source, obj = workloads[index]
        for pod in exp.pods:
            add_ephemeral_claims(pod, _where(source, obj), "spec.template.")
        pods.extend(exp.pods)
        pvcs.extend(exp.pvcs)
        controllers.extend(exp.controllers)

    snapshot = ClusterSnapshot(
        nodes=parsed.get("Node", []),
        nodeclaims=parsed.get("NodeClaim", []),
        pods=pods,
        daemonsets=parsed.get("DaemonSet", []),
        pdbs=parsed.get("PodDisruptionBudget", []),
        pvcs=pvcs,
        pvs=parsed.get("PersistentVolume", []),
        storage_classes=storage_classes,
        csinodes=parsed.get("CSINode", []),
        namespaces=parsed.get("Namespace", []),
        services=parsed.get("Service", []),
        controllers=controllers,
    )
    return ScheduleInput(
        snapshot=snapshot,
        nodepools=parsed.get("NodePool", []),
        nodeoverlays=parsed.get("NodeOverlay", []),
        ignored_kinds=ignored,
        sources=sources,
        dra_objects={kind: tuple(parsed.get(kind, ())) for kind in _DRA_KINDS},
        unread=tuple(unread.values()),
        invalid_nodepools=invalid_nodepools,
    )


# --- instance types ----------------------------------------------------------------------------


def load_instance_types(
    nodepools: Sequence[NodePool],
    cloud_provider: str | None = None,
    instance_types_file: str | None = None,
    pm: KarpenterPluginManager | None = None,
    region: str | None = None,
    node_classes: Sequence[Mapping[str, Any]] = (),
) -> dict[str, list[Any]]:
    """Instance types per NodePool name, from the provider plugin (default kwok) or from a
    file in the KWOK instance-types JSON format (read by the kwok provider); ``pm`` is the
    plugin manager to find it in (default: the installed plugins); ``region`` fills the
    provider's ``region`` setting; ``node_classes`` are the input's NodeClass manifests,
    which the provider resolves each NodePool's ``nodeClassRef`` against."""
    from click import ClickException

    from karpenter_core.cli.instance_types import region_settings
    from karpenter_core.plugins import PluginError, get_cloud_provider, get_plugin_manager

    name = cloud_provider or DEFAULT_CLOUD_PROVIDER
    try:
        settings = region_settings(pm or get_plugin_manager(), name, region)
    except ClickException as e:
        raise InputError(e.message) from None
    if instance_types_file is not None:
        if cloud_provider not in (None, DEFAULT_CLOUD_PROVIDER):
            raise InputError("--instance-types and --cloud-provider cannot be used together")
        settings[KWOK_INSTANCE_TYPES_SETTING] = instance_types_file
    try:
        provider = get_cloud_provider(name, settings, pm, node_classes=node_classes)
        return {np.name: list(provider.get_instance_types(np)) for np in nodepools}
    except (PluginError, ValueError, OSError) as e:
        raise InputError(str(e)) from None


def node_class_manifests(
    inp: ScheduleInput, pm: KarpenterPluginManager, cloud_provider: str | None
) -> tuple[list[Mapping[str, Any]], list[str]]:
    """The input's manifests of the provider's NodeClass kinds (by group and kind), and a
    note for each NodePool naming one of those kinds that the input does not hold (the
    provider then lists its default view). An unknown provider gives nothing here: loading
    it reports that."""
    from karpenter_core.plugins import PluginError, cloud_providers

    try:
        spec = cloud_providers(pm).get(cloud_provider or DEFAULT_CLOUD_PROVIDER)
    except PluginError:
        spec = None
    if spec is None:
        return [], []
    kinds = {(k.group, k.kind): k for k in spec.node_classes}
    manifests = [
        m
        for m in inp.unread
        if (str(m.get("apiVersion") or "").partition("/")[0], m.get("kind")) in kinds
    ]
    given = {(m.get("kind"), (m.get("metadata") or {}).get("name")) for m in manifests}
    notes = []
    for np in inp.nodepools:
        ref = np.spec.template.spec.node_class_ref
        if (
            ref is None
            or (ref.group, ref.kind) not in kinds
            or kinds[(ref.group, ref.kind)].implicit
        ):
            continue
        if (ref.kind, ref.name) not in given:
            notes.append(
                f"note: NodePool {np.name}: {ref.kind} {ref.name!r} is not in the input; "
                f"listing {spec.name}'s default view of instance types for it"
            )
    return manifests, notes


def input_instance_types(
    inp: ScheduleInput,
    pm: KarpenterPluginManager,
    cloud_provider: str | None,
    instance_types_file: str | None,
    region: str | None,
) -> tuple[dict[str, list[InstanceType]], list[Mapping[str, Any]], list[str]]:
    """Each NodePool's instance types for ``inp``: the provider's catalogue resolved
    against the input's NodeClasses, then the plugins' overlays and the input's
    NodeOverlays; with the NodeClass manifests read and the notes about missing ones."""
    node_classes, notes = node_class_manifests(inp, pm, cloud_provider)
    types = effective_instance_types(
        inp,
        load_instance_types(
            inp.nodepools,
            cloud_provider,
            instance_types_file,
            pm,
            region=region,
            node_classes=node_classes,
        ),
        plugin_overlays(pm),
    )
    return types, node_classes, notes


def plugin_overlays(pm: KarpenterPluginManager) -> list[BoundOverlay]:
    """The installed plugins' instance-type overlays that work without a running operator
    (those registered with ``apply``), in the order the operator applies them. The
    built-in NodeOverlay overlay binds to the operator; here the input's NodeOverlay
    objects play its part (:func:`effective_instance_types`)."""
    from karpenter_core.cloudprovider.overlay import bind_overlays
    from karpenter_core.plugins import PluginError, instance_type_overlays

    try:
        return bind_overlays(instance_type_overlays(pm), None)
    except PluginError as e:
        raise InputError(str(e)) from None


# --- NodeOverlays ------------------------------------------------------------------------------


def apply_node_overlays(
    overlays: Sequence[NodeOverlay],
    nodepools: Sequence[NodePool],
    instance_types: Mapping[str, Sequence[InstanceType]],
) -> dict[str, list[InstanceType]]:
    """Apply NodeOverlays as the NodeOverlay controller does (spec apis §4): the same pure
    :func:`~karpenter_core.controllers.nodeoverlay.store.evaluate` over the input's pools,
    then the resulting store applied to each pool's instance types. An overlay whose
    requirements or capacity cannot be read is left out, as the controller leaves out a
    runtime-invalid one."""
    from karpenter_core.controllers.nodeoverlay.store import (
        InstanceTypeStore,
        NodePoolInstanceTypes,
        Overlay,
        evaluate,
    )

    usable: list[Overlay] = []
    for overlay in overlays:
        try:
            usable.append(Overlay.from_model(overlay))
        except ValueError:
            continue
    none: Sequence[InstanceType] = ()
    pools = [
        NodePoolInstanceTypes(
            np.name, dict(np.spec.template.labels), instance_types.get(np.name, none)
        )
        for np in nodepools
    ]
    store = InstanceTypeStore()
    store.update(evaluate(usable, pools).snapshot)
    return {pool.name: store.apply_all(pool.name, pool.instance_types) for pool in pools}


# --- scheduling --------------------------------------------------------------------------------


def _eligible_nodepools(nodepools: Sequence[NodePool]) -> list[NodePool]:
    """Dynamic NodePools that are not deleting and not reported NotReady (manifests usually
    carry no status; those count as ready)."""
    out = []
    for np in nodepools:
        if np.is_static or np.metadata.deletion_timestamp:
            continue
        ready = np.condition("Ready")
        if ready is not None and not ready.is_true:
            continue
        out.append(np)
    return out


def effective_instance_types(
    inp: ScheduleInput,
    instance_types: Mapping[str, Sequence[Any]],
    overlays: Sequence[BoundOverlay] = (),
) -> dict[str, list[Any]]:
    """The provider's instance types per NodePool with ``overlays`` (the plugins', see
    :func:`plugin_overlays`) and the input's NodeOverlays applied, in the operator's order:
    plugin overlays lighter than the NodeOverlay one, the NodeOverlays, then heavier
    plugin overlays."""
    from karpenter_core.builtins import NODEOVERLAY_OVERLAY
    from karpenter_core.hookspecs import WEIGHT_NODEOVERLAY

    nodeoverlay_at = (WEIGHT_NODEOVERLAY, NODEOVERLAY_OVERLAY)
    out = _apply_plugin_overlays(
        [o for o in overlays if o.order < nodeoverlay_at], inp, instance_types
    )
    if inp.nodeoverlays:
        out = apply_node_overlays(inp.nodeoverlays, _eligible_nodepools(inp.nodepools), out)
    return _apply_plugin_overlays([o for o in overlays if o.order > nodeoverlay_at], inp, out)


def _apply_plugin_overlays(
    overlays: Sequence[BoundOverlay],
    inp: ScheduleInput,
    instance_types: Mapping[str, Sequence[Any]],
) -> dict[str, list[Any]]:
    from karpenter_core.cloudprovider.errors import UnevaluatedNodePoolError
    from karpenter_core.cloudprovider.overlay import apply_overlays

    out = {k: list(v) for k, v in instance_types.items()}
    if not overlays:
        return out
    for np in inp.nodepools:
        if np.name in out:
            try:
                out[np.name] = apply_overlays(overlays, np, out[np.name])
            except UnevaluatedNodePoolError:
                out[np.name] = []  # what the operator does this pass: the pool offers nothing
    return out


def with_device_templates(
    inp: ScheduleInput,
    instance_types: Mapping[str, Sequence[Any]],
    pm: KarpenterPluginManager,
) -> dict[str, list[Any]]:
    """The instance types with the template devices the installed DRA drivers describe for
    each NodePool (as the provisioner adds them while DRA requests are simulated)."""
    from karpenter_core.cloudprovider.dynamicresources import DeviceTemplates
    from karpenter_core.plugins import PluginError, dra_drivers

    try:
        drivers = list(dra_drivers(pm).values())
    except PluginError as e:
        raise InputError(str(e)) from None
    out = {k: list(v) for k, v in instance_types.items()}
    if not drivers:
        return out
    templates = DeviceTemplates(drivers)
    for np in inp.nodepools:
        if np.name in out:
            out[np.name] = templates.attach(np, out[np.name])
    return out


def _nodepool_error(inp: ScheduleInput, error: ValueError) -> InputError:
    """A scheduler ``ValueError`` about a NodePool, as bad input naming its file."""
    message = str(error)
    for np in inp.nodepools:
        if f"'{np.name}'" in message or f'"{np.name}"' in message:
            ident = object_ref("NodePool", "", np.name)
            return InputError(f"{inp.sources.get(ident, '<input>')}: {ident}: {message}")
    return InputError(f"NodePools: {message}")


def read_scheduler_config(path: str) -> SchedulerOptions:
    """Scheduler options carrying the ``--scheduler-config`` file's default spreads (the
    file is read and parsed by the manifest loader, with its limits)."""
    from karpenter_core.apis.manifests import ManifestError, parse_yaml, read_text
    from karpenter_core.provisioning.scheduler import SchedulerOptions

    try:
        text = read_text(path)
    except ManifestError as e:
        reason = str(e).removeprefix(f"{path}: ")
        raise InputError(f"{path}: cannot read scheduler config: {reason}") from None
    try:
        docs = parse_yaml(text, f"{path}: scheduler config")
    except ManifestError as e:
        raise InputError(str(e)) from None
    if len(docs) > 1:
        raise InputError(f"{path}: scheduler config: expected one YAML document, found {len(docs)}")
    if docs and not isinstance(docs[0], Mapping):
        # (a string would be read as YAML text again, past the loader's limits)
        raise InputError(f"{path}: scheduler config: expected a mapping, got {describe(docs[0])}")
    try:
        return SchedulerOptions(scheduler_config=docs[0] if docs else None)
    except ValueError as e:
        raise InputError(f"{path}: {e}") from None


def read_ignore_dra_requests(flag: str | None, environ: Mapping[str, str]) -> bool:
    """``--ignore-dra-requests``, else ``IGNORE_DRA_REQUESTS``, else true, as ``serve``
    reads it; a value other than true/false is bad input naming the flag."""
    from karpenter_core.runtime.options import OptionsError, ignore_dra_requests

    try:
        return ignore_dra_requests(environ, flag)
    except OptionsError as e:
        raise InputError(str(e)) from None


def with_dra_setting(options: SchedulerOptions | None, ignore_dra: bool) -> SchedulerOptions:
    """``options`` (default: upstream's) with ``IGNORE_DRA_REQUESTS`` applied."""
    from karpenter_core.provisioning.scheduler import DEFAULT_OPTIONS

    return attrs.evolve(options or DEFAULT_OPTIONS, ignore_dra_requests=ignore_dra)


SCORER_ENV = "INSTANCE_TYPE_SCORER"


def with_scoring(
    options: SchedulerOptions,
    flag: str | None,
    pm: KarpenterPluginManager,
    note: Callable[[str], None],
) -> SchedulerOptions:
    """``options`` with the instance-type scorers of ``pm``'s plugins, the default one
    from ``--instance-type-scorer``, else ``INSTANCE_TYPE_SCORER``, else price; an unknown
    name is bad input. ``note`` hears the problems the operator would publish as NodePool
    events (an unknown annotation, a failing scorer)."""
    from karpenter_core.plugins import PluginError, instance_type_scorers
    from karpenter_core.scoring import DEFAULT_SCORER, Scoring, UnknownScorerError

    name = flag if flag is not None else os.environ.get(SCORER_ENV, DEFAULT_SCORER)
    try:
        scoring = Scoring(
            instance_type_scorers(pm),
            name.strip(),
            lambda np, _reason, msg: note(f"NodePool {np.name}: {msg}"),
        )
    except (PluginError, UnknownScorerError) as e:
        raise InputError(f"instance-type-scorer: {e}") from None
    return attrs.evolve(options, scoring=scoring)


def schedule_input(
    inp: ScheduleInput,
    instance_types: Mapping[str, Sequence[Any]],
    options: SchedulerOptions | None = None,
) -> dict[str, Any]:
    """Run the scheduler over the input's pending pods; returns the ``-o json`` document.

    ``instance_types`` (per NodePool) are used as given: apply NodeOverlays first with
    :func:`effective_instance_types`. ``options`` are the scheduler options (default:
    upstream's defaults). A NodePool the scheduler cannot read raises :class:`InputError`."""
    from karpenter_core.provisioning import validate_pod
    from karpenter_core.provisioning.scheduler import DEFAULT_OPTIONS, schedule
    from karpenter_core.provisioning.scheduler.volumetopology import (
        VolumeTopology,
        VolumeTopologyError,
    )

    snapshot = inp.snapshot
    ignored: dict[str, str] = {}
    pods: list[Pod] = []
    volumes = VolumeTopology(snapshot)
    for pod in snapshot.pending_pods():
        err = validate_pod(pod, snapshot)
        if err is None and pod.pvc_names:
            try:
                volumes.get_requirements(pod)
            except VolumeTopologyError as e:
                err = f"failed getting volume topology requirements, {e}"
        if err is not None:
            ignored[pod.key] = f"ignoring pod, {err}"
        else:
            pods.append(pod)
    nodepools = _eligible_nodepools(inp.nodepools)
    its = {np.name: list(instance_types.get(np.name, ())) for np in nodepools}
    if pods and not nodepools and not snapshot.nodes and not snapshot.nodeclaims:
        result: dict[str, Any] = {
            "nodeClaims": [],
            "existingNodes": [],
            "podErrors": {p.key: NO_NODEPOOLS_ERROR for p in pods},
        }
    elif pods:
        try:
            results = schedule(
                snapshot, pods, nodepools, its, options or DEFAULT_OPTIONS, dra=inp.dra_inputs()
            )
        except ValueError as e:
            raise _nodepool_error(inp, e) from None
        result = results.to_json_dict()
    else:
        result = {"nodeClaims": [], "existingNodes": [], "podErrors": {}}
    errors = dict(result.get("podErrors") or {})
    errors.update(ignored)
    result["podErrors"] = {k: errors[k] for k in sorted(errors)}
    result["invalidNodePools"] = {
        k: inp.invalid_nodepools[k] for k in sorted(inp.invalid_nodepools)
    }
    return result


# --- output -------------------------------------------------------------------------------------


def _cheapest(
    nodeclaim: Mapping[str, Any], instance_types: Mapping[str, Sequence[Any]]
) -> tuple[str, float | None]:
    from karpenter_core.scheduling.requirements import Requirements

    names = nodeclaim.get("instanceTypes") or []
    if not names:
        return "-", None
    by_name = {it.name: it for it in instance_types.get(nodeclaim.get("nodePool", ""), ())}
    it = by_name.get(names[0])
    if it is None:
        return names[0], None
    reqs = Requirements.from_node_selector_requirements(nodeclaim.get("requirements") or ())
    offering = it.offerings.available().compatible(reqs).cheapest()
    return names[0], (offering.price if offering is not None else None)


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    return table_lines(headers, [list(r) for r in rows], gap="   ")


def _requirement_values(nodeclaim: Mapping[str, Any], key: str) -> str:
    """The values a NodeClaim's requirement on ``key`` allows, or ``any`` when it does not
    narrow them (any value the NodePool and instance types allow)."""
    for req in nodeclaim.get("requirements") or ():
        if req.get("key") == key and req.get("operator") == "In":
            return ",".join(str(v) for v in req.get("values") or ()) or "-"
    return "any"


def render_table(
    result: Mapping[str, Any], instance_types: Mapping[str, Sequence[Any]], wide: bool = False
) -> str:
    """The human view: a row per new NodeClaim (pool, cheapest type, its price, pod count;
    ``wide`` adds the zones and capacity types it may launch in), existing nodes that
    receive pods, then every unschedulable pod with its reason."""
    from karpenter_core.apis import labels

    lines: list[str] = []
    claims = result.get("nodeClaims") or []
    if claims:
        rows = []
        for nc in claims:
            name, price = _cheapest(nc, instance_types)
            row = [
                str(nc.get("nodePool", "")),
                name,
                f"${price:.4f}/h" if price is not None else "-",
            ]
            if wide:
                row += [
                    _requirement_values(nc, labels.LABEL_TOPOLOGY_ZONE),
                    _requirement_values(nc, labels.CAPACITY_TYPE_LABEL_KEY),
                ]
            rows.append([*row, str(len(nc.get("pods") or ()))])
        headers = ["NODEPOOL", "INSTANCE TYPE", "PRICE"]
        headers += ["ZONE", "CAPACITY TYPE"] if wide else []
        lines += _table([*headers, "PODS"], rows)
    else:
        lines.append("No new NodeClaims.")
    existing = result.get("existingNodes") or []
    if existing:
        lines.append("")
        lines += _table(
            ["EXISTING NODE", "PODS"], [[n["name"], str(len(n["pods"]))] for n in existing]
        )
    errors = result.get("podErrors") or {}
    if errors:
        lines.append("")
        lines += _table(["UNSCHEDULABLE POD", "REASON"], [[k, v] for k, v in errors.items()])
    return "\n".join(lines)


def _plugin_manager() -> KarpenterPluginManager:
    from karpenter_core.plugins import PluginError, get_plugin_manager

    try:
        return get_plugin_manager()
    except PluginError as e:
        raise InputError(str(e)) from None


@click.command(name="schedule", short_help="Show what Karpenter would launch for pending pods.")
@click.option(
    "-f",
    "--filename",
    "filenames",
    multiple=True,
    required=True,
    metavar="FILE_OR_DIR",
    help="Manifest file or directory (repeatable; '-' reads stdin), as kubectl apply -f.",
)
@click.option(
    "--cloud-provider",
    default=None,
    metavar="NAME",
    help=f"Provider plugin whose instance types to use (default {DEFAULT_CLOUD_PROVIDER}).",
)
@click.option(
    "--instance-types",
    "instance_types_file",
    default=None,
    metavar="FILE",
    help="Instance types from a file in the KWOK instance-types JSON format.",
)
@click.option(
    "--region",
    default=None,
    metavar="REGION",
    help="Region of the provider's catalogue (aws, azure, gcp; their bundled snapshot when "
    "there are no credentials).",
)
@click.option(
    "--scheduler-config",
    "scheduler_config",
    default=None,
    metavar="FILE",
    help="kube-scheduler style config whose podTopologySpread.defaultConstraints apply to "
    "pods without spread constraints (as Karpenter's --scheduler-config).",
)
@click.option(
    IGNORE_DRA_REQUESTS_FLAG,
    "ignore_dra_requests",
    default=None,
    metavar="true|false",
    help=f"{IGNORE_DRA_REQUESTS_HELP} [env {IGNORE_DRA_REQUESTS_ENV}; default true]",
)
@click.option(
    "--instance-type-scorer",
    "instance_type_scorer",
    default=None,
    metavar="NAME",
    help="Which instance-type scorer orders each NodeClaim's types: price, least-waste, "
    "priority or a plugin's; a NodePool's karpenter.sh/instance-type-scorer annotation "
    f"overrides it [env {SCORER_ENV}; default price]",
)
@output_option(wide=True)
@click.option(
    "-q",
    "--quiet",
    is_flag=True,
    help="No progress bar (it is drawn on stderr only when stderr is a terminal).",
)
def command(
    filenames: tuple[str, ...],
    cloud_provider: str | None,
    instance_types_file: str | None,
    region: str | None,
    scheduler_config: str | None,
    ignore_dra_requests: str | None,
    instance_type_scorer: str | None,
    output: str,
    quiet: bool,
) -> None:
    """Show what Karpenter would launch for the pending pods in these manifests.

    Reads NodePools, NodeOverlays, Pods, Nodes, NodeClaims, DaemonSets,
    PodDisruptionBudgets, PVCs, PVs, StorageClasses and CSINodes; Deployments,
    ReplicaSets, StatefulSets and Jobs become the pods their controllers would create.
    With --ignore-dra-requests=false, pods' ResourceClaims are simulated against the
    DeviceClasses, ResourceClaims, ResourceClaimTemplates and ResourceSlices given and the
    devices the installed DRA drivers describe for each instance type.
    Pods without spec.nodeName are scheduled. Exit status is 0 even when some pods
    cannot be scheduled (see podErrors), 1 for bad input, 4 when invalid NodePools were
    left out (named on stderr) and the others scheduled.
    """
    if instance_types_file is not None and cloud_provider is not None:
        raise click.UsageError("use either --cloud-provider or --instance-types, not both")
    bar: Progress[str] = progress(len(PHASES), "schedule", str, quiet=quiet)
    try:
        with bar:
            bar.advance(0, PHASES[0], force=True)
            ignore_dra = read_ignore_dra_requests(ignore_dra_requests, os.environ)
            options = read_scheduler_config(scheduler_config) if scheduler_config else None
            options = with_dra_setting(options, ignore_dra)
            inp = read_input(filenames)
            bar.advance(1, PHASES[1], force=True)
            pm = _plugin_manager()
            scorer_notes: list[str] = []
            options = with_scoring(options, instance_type_scorer, pm, scorer_notes.append)
            instance_types, node_classes, nodeclass_notes = input_instance_types(
                inp, pm, cloud_provider, instance_types_file, region
            )
            if not ignore_dra:
                instance_types = with_device_templates(inp, instance_types, pm)
            pending = len(inp.snapshot.pending_pods())
            bar.advance(2, PHASES[2].format(pods=pending), force=True)
            result = schedule_input(inp, instance_types, options)
            bar.advance(3, "done", force=True)
    except InputError as e:
        raise BadInput(str(e)) from None
    for note in dict.fromkeys(scorer_notes):
        click.echo(f"warning: {note}", err=True)
    read_kinds = {str(m.get("kind")) for m in node_classes}
    unread = {k: n for k, n in inp.ignored_kinds.items() if k not in read_kinds}
    if unread:
        kinds = ", ".join(f"{k} ({n})" for k, n in sorted(unread.items()))
        click.echo(f"note: ignored objects of kinds the scheduler does not read: {kinds}", err=True)
    for note in nodeclass_notes:
        click.echo(note, err=True)
    dra_pods = [p.key for p in inp.snapshot.pending_pods() if p.has_dra_requirements]
    if ignore_dra and dra_pods:
        click.echo(
            f"note: {len(dra_pods)} pod(s) use ResourceClaims, not simulated while "
            f"{IGNORE_DRA_REQUESTS_ENV} is true (upstream's default): pass "
            f"{IGNORE_DRA_REQUESTS_FLAG}=false to simulate them",
            err=True,
        )
    if output in (JSON, YAML):
        click.echo(dump(result, output), nl=False)
    else:
        click.echo(render_table(result, instance_types, wide=output == WIDE))
    sys.stdout.flush()
    if inp.invalid_nodepools:
        for name in sorted(inp.invalid_nodepools):
            echo_problem(
                f"Error: {inp.invalid_nodepools[name]} (NodePool ignored, as Karpenter ignores "
                "an invalid NodePool; the others were scheduled)",
                err=True,
            )
        sys.exit(EXIT_INVALID_NODEPOOLS)
