"""The KWOK DRA driver: fake devices on KWOK nodes (upstream's ``dra-kwok-driver``).

A real DRA driver runs on each node and publishes the node's devices as ResourceSlices; a
KWOK node has no devices and no driver, so this module plays the driver for it (issue 11):

* **configuration** -- the KWOK provider setting ``dra-config`` (environment variable
  ``KWOK_DRA_CONFIG`` under ``karpenter serve``): DRAConfig documents as upstream's CRD
  spells them, inline YAML/JSON or the path of a file holding them (:func:`load_config`).
  Each names a ``driver`` and its ``pools``; a pool selects nodes with
  ``nodeSelectorTerms`` and lists the ``resourceSlices`` (each a list of ``devices``, in
  ``resource.k8s.io/v1`` shape) a matching node publishes;
* **prediction** -- ``karpenter_dra_drivers`` registers one driver per configured driver
  name; its ``describe_devices(instance_type, nodepool)`` (:func:`describe`) says which
  devices a node of that type would publish, so Karpenter's scheduler can launch a node for
  a pod's ResourceClaims before the node exists;
* **publishing** -- the ``kwok.dra.resourceslices`` controller (:class:`ResourceSlices`)
  writes the ResourceSlices of each KWOK node once it is Ready, owned by the Node (the
  garbage collector deletes them with it), and deletes those no longer wanted.

Publishing follows upstream's driver: KWOK nodes are those annotated
``kwok.x-k8s.io/node``; for each driver the pools whose terms match the node's labels
contribute their slices, named ``<driver with dots and slashes as dashes>-<node>-<pool>``
(``-<index>`` when a pool has several), in one pool named ``<driver>/<node>``, pinned to the
node (``spec.nodeName``) and labelled ``test.karpenter.sh/{managed-by,node,pool,driver}``.
Where it departs from upstream, deliberately: it reacts to node events rather than polling
every 30 s; a node publishes once Ready (its driver's kubelet plugin would run from then
on), before Karpenter initializes it (initialization waits for the slices of the drivers a
NodeClaim's pods need); the pool's ``resourceSliceCount`` counts the slices of every
matching pool of the driver and every slice of the pool moves to a new generation when any
changes (upstream counts per pool and bumps per slice, which leaves the pool incomplete
when two pools match a node or one slice changes).

Prediction is conservative: a pool's terms are tested against the labels every node of the
instance type in the NodePool is sure to carry (the type's and the NodePool's single-valued
requirements, the NodePool's template labels, ``karpenter.sh/nodepool``); an expression on
a label such a node may or may not carry (zone, capacity type, hostname, a multi-valued
requirement) fails its term, so Karpenter never counts on devices a node might not get.
A pool selecting on those labels still publishes on the nodes it matches.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attrs import field, frozen

from karpenter_core.plugin_api import (
    IN,
    AlreadyExists,
    ControllerSpec,
    Device,
    DRADriverSpec,
    ManifestError,
    NotFound,
    ObjectKey,
    Result,
    Watch,
    is_true,
    parse_yaml,
    read_text,
    term_matches,
)
from karpenter_core.plugin_api import labels as wk
from karpenter_kwok.labels import KWOK_LABEL_KEY

if TYPE_CHECKING:
    from karpenter_core.plugin_api import ControllerContext, InstanceType, KubeClient, NodePool

__all__ = [
    "CONFIG_ENV",
    "CONFIG_SETTING",
    "CONTROLLER_NAME",
    "DRAConfig",
    "DRAConfigError",
    "DriverConfig",
    "PoolConfig",
    "ResourceSlices",
    "active_config",
    "controller_specs",
    "describe",
    "driver_specs",
    "load_config",
    "parse_config",
    "set_active_config",
    "slice_name",
    "slices_for_node",
]

log = logging.getLogger("karpenter.kwok.dra")

CONFIG_SETTING = "dra-config"
CONFIG_ENV = "KWOK_DRA_CONFIG"
CONTROLLER_NAME = "kwok.dra.resourceslices"

LABEL_DOMAIN = "test.karpenter.sh"
MANAGED_BY_LABEL = f"{LABEL_DOMAIN}/managed-by"
MANAGED_BY = "dra-kwok-driver"
NODE_LABEL = f"{LABEL_DOMAIN}/node"
POOL_LABEL = f"{LABEL_DOMAIN}/pool"
DRIVER_LABEL = f"{LABEL_DOMAIN}/driver"
RESOURCE_API_VERSION = "resource.k8s.io/v1"
RESOURCE_SLICES = "resourceslices"


class DRAConfigError(ValueError):
    """A DRA configuration that cannot be used; the message names the field."""


# ------------------------------------------------------------------ configuration


@frozen
class PoolConfig:
    """Devices for the nodes a pool selects: ``node_selector_terms`` (ORed, as a
    NodeSelector's) and one device list per ResourceSlice."""

    name: str
    node_selector_terms: tuple[Mapping[str, Any], ...]
    resource_slices: tuple[tuple[Mapping[str, Any], ...], ...]


@frozen
class DriverConfig:
    """One simulated driver and its pools (every DRAConfig naming it, merged)."""

    driver: str
    pools: tuple[PoolConfig, ...] = ()


@frozen
class DRAConfig:
    """The KWOK DRA driver's configuration: the drivers, in the order first named."""

    drivers: tuple[DriverConfig, ...] = ()
    source: str = field(default="", eq=False)

    def __bool__(self) -> bool:
        return bool(self.drivers)


def _dns_label(value: str) -> bool:
    return (
        0 < len(value) <= 63
        and value[0].isalnum()
        and value[-1].isalnum()
        and all(c.isdigit() or (c.isalpha() and c.islower()) or c == "-" for c in value)
    )


def _dns_subdomain(value: str) -> bool:
    return 0 < len(value) <= 253 and all(_dns_label(part) for part in value.split("."))


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise DRAConfigError(f"{path}: expected a non-empty list")
    return value


def _pool(raw: Any, path: str) -> PoolConfig:
    if not isinstance(raw, Mapping):
        raise DRAConfigError(f"{path}: expected a mapping")
    unknown = sorted(set(raw) - {"name", "nodeSelectorTerms", "resourceSlices"})
    if unknown:
        raise DRAConfigError(
            f"{path}: unknown field {unknown[0]!r} (known: name, nodeSelectorTerms, resourceSlices)"
        )
    name = raw.get("name")
    if not isinstance(name, str) or not _dns_label(name):
        raise DRAConfigError(f"{path}.name: expected a DNS label (a-z, 0-9, '-'), got {name!r}")
    terms = _list(raw.get("nodeSelectorTerms"), f"{path}.nodeSelectorTerms")
    for i, term in enumerate(terms):
        if not isinstance(term, Mapping) or not (
            term.get("matchExpressions") or term.get("matchFields")
        ):
            raise DRAConfigError(
                f"{path}.nodeSelectorTerms[{i}]: expected matchExpressions or matchFields"
            )
    slices: list[tuple[Mapping[str, Any], ...]] = []
    names: set[str] = set()
    for i, s in enumerate(_list(raw.get("resourceSlices"), f"{path}.resourceSlices")):
        where = f"{path}.resourceSlices[{i}]"
        if not isinstance(s, Mapping):
            raise DRAConfigError(f"{where}: expected a mapping with devices")
        devices = _list(s.get("devices"), f"{where}.devices")
        for j, d in enumerate(devices):
            try:
                device = Device.from_dict(d, path=f"{where}.devices[{j}]")
            except ValueError as e:
                raise DRAConfigError(str(e)) from None
            if not device.name:
                raise DRAConfigError(f"{where}.devices[{j}].name: required")
            if device.name in names:
                raise DRAConfigError(
                    f"{where}.devices[{j}].name: duplicate device {device.name!r} in pool {name}"
                )
            names.add(device.name)
        slices.append(tuple(dict(d) for d in devices))
    return PoolConfig(name, tuple(dict(t) for t in terms), tuple(slices))


def _spec_of(doc: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(doc, Mapping):
        raise DRAConfigError(f"{path}: expected a DRAConfig (a mapping)")
    if "spec" in doc:
        kind = doc.get("kind")
        if kind is not None and kind != "DRAConfig":
            raise DRAConfigError(f"{path}.kind: expected DRAConfig, got {kind!r}")
        spec = doc["spec"]
        if not isinstance(spec, Mapping):
            raise DRAConfigError(f"{path}.spec: expected a mapping")
        return spec
    return doc


def parse_config(docs: Iterable[Any], source: str = "dra-config") -> DRAConfig:
    """DRAConfig documents (whole objects as upstream's CRD, or just their ``spec``:
    ``{driver, pools}``; a document may also be a list of them) as a :class:`DRAConfig`.
    Pools of several documents naming one driver are merged; pool names are unique per
    driver. Raises :class:`DRAConfigError` naming the source and field."""
    flat: list[tuple[str, Any]] = []
    for i, doc in enumerate(docs):
        if isinstance(doc, list):
            flat.extend((f"{source}[{i}][{j}]", d) for j, d in enumerate(doc))
        elif doc is not None:
            flat.append((f"{source}[{i}]", doc))
    pools: dict[str, list[PoolConfig]] = {}
    for path, doc in flat:
        spec = _spec_of(doc, path)
        where = f"{path}.spec" if "spec" in doc else path
        driver = spec.get("driver")
        if not isinstance(driver, str) or not _dns_subdomain(driver):
            raise DRAConfigError(f"{where}.driver: expected a DNS subdomain, got {driver!r}")
        for i, raw in enumerate(_list(spec.get("pools"), f"{where}.pools")):
            pool = _pool(raw, f"{where}.pools[{i}]")
            known = pools.setdefault(driver, [])
            if any(p.name == pool.name for p in known):
                raise DRAConfigError(
                    f"{where}.pools[{i}].name: pool {pool.name!r} of driver {driver} is "
                    "defined twice"
                )
            known.append(pool)
    return DRAConfig(tuple(DriverConfig(d, tuple(p)) for d, p in pools.items()), source)


def load_config(value: str | None, source: str = CONFIG_SETTING) -> DRAConfig:
    """The ``dra-config`` setting: inline YAML/JSON (one or more DRAConfig documents, or a
    list), or, when the value is a single word, the path of a file holding them. Empty: no
    drivers."""
    text = (value or "").strip()
    if not text:
        return DRAConfig()
    try:
        docs = parse_yaml(text, source)
    except ManifestError as e:
        raise DRAConfigError(str(e)) from None
    if len(docs) == 1 and isinstance(docs[0], str):
        path = docs[0]
        try:
            docs = parse_yaml(read_text(path), path)
        except (ManifestError, OSError) as e:
            raise DRAConfigError(f"{source}: {e}") from None
        source = Path(path).name
    return parse_config(docs, source)


# The configuration the hook describes: the one the KWOK provider was last built with in
# this process (serve, simulate and the test kit build the provider before they collect
# the plugins' contributions), else the environment's.
_active: DRAConfig | None = None


def set_active_config(config: DRAConfig | None) -> None:
    """Make ``config`` the one :func:`driver_specs` describes (the provider's factory
    calls this with its settings' configuration; None goes back to the environment)."""
    global _active
    _active = config


def active_config() -> DRAConfig:
    """The configuration in effect (see :func:`set_active_config`)."""
    if _active is not None:
        return _active
    try:
        return load_config(os.environ.get(CONFIG_ENV), CONFIG_ENV)
    except DRAConfigError as e:
        log.error("kwok: ignoring %s: %s", CONFIG_ENV, e)
        return DRAConfig()


# ------------------------------------------------------------------ prediction


def _certain_labels(
    instance_type: InstanceType, nodepool: NodePool | None
) -> tuple[dict[str, str], set[str]]:
    """The labels every node of the type in the NodePool carries, and the keys whose
    value is not known before launch."""
    labels: dict[str, str] = {}
    uncertain: set[str] = {wk.LABEL_HOSTNAME}
    requirements = [
        (r.key, r.operator(), tuple(r.values)) for r in instance_type.requirements.values()
    ]
    for offering in instance_type.offerings:
        uncertain.update(offering.requirements.keys())
    if nodepool is not None:
        template = nodepool.spec.template
        requirements += [(r.key, r.operator, tuple(r.values)) for r in template.spec.requirements]
        labels.update(template.labels)
        labels[wk.NODEPOOL_LABEL_KEY] = nodepool.name
    for key, operator, values in requirements:
        if operator == IN and len(values) == 1:
            labels[key] = values[0]
            uncertain.discard(key)
        elif key not in labels:
            uncertain.add(key)
    uncertain -= labels.keys()
    return labels, uncertain


def _surely_matches(
    term: Mapping[str, Any], labels: Mapping[str, str], uncertain: set[str]
) -> bool:
    if term.get("matchFields"):
        return False  # the node's name is not known before launch
    if any(
        isinstance(e, Mapping) and e.get("key") in uncertain
        for e in term.get("matchExpressions") or ()
    ):
        return False
    return term_matches(term, labels)


def pool_name(driver: str, node_name: str) -> str:
    """The pool a node's slices of ``driver`` form (upstream: ``<driver>/<node>``)."""
    return f"{driver}/{node_name}"


def describe(
    driver: DriverConfig, instance_type: InstanceType, nodepool: NodePool | None
) -> list[dict[str, Any]]:
    """The ResourceSlice specs a node of ``instance_type`` in ``nodepool`` would publish
    for ``driver`` (the ``describe_devices`` of the driver's :class:`DRADriverSpec`): one
    node-local pool with the devices of every pool sure to match it; none when no pool is."""
    labels, uncertain = _certain_labels(instance_type, nodepool)
    devices: list[dict[str, Any]] = []
    for pool in driver.pools:
        if any(_surely_matches(t, labels, uncertain) for t in pool.node_selector_terms):
            devices.extend(dict(d) for s in pool.resource_slices for d in s)
    if not devices:
        return []
    return [
        {
            "driver": driver.driver,
            "pool": {"name": pool_name(driver.driver, instance_type.name)},
            "devices": devices,
        }
    ]


def driver_specs(config: DRAConfig | None = None) -> list[DRADriverSpec]:
    """One :class:`DRADriverSpec` per configured driver (``config``: the active one)."""
    config = active_config() if config is None else config
    out = []
    for driver in config.drivers:

        def describe_devices(
            instance_type: InstanceType, nodepool: NodePool, _driver: DriverConfig = driver
        ) -> list[dict[str, Any]]:
            return describe(_driver, instance_type, nodepool)

        out.append(DRADriverSpec(name=driver.driver, describe_devices=describe_devices))
    return out


# ------------------------------------------------------------------ publishing


def _sanitized(driver: str) -> str:
    return driver.replace(".", "-").replace("/", "-")


def slice_name(driver: str, node_name: str, pool: str, index: int | None = None) -> str:
    """Upstream's slice name: ``<driver-sanitized>-<node>-<pool>[-<index>]``."""
    base = f"{_sanitized(driver)}-{node_name}-{pool}"
    return base if index is None else f"{base}-{index}"


def _is_kwok_node(node: Mapping[str, Any]) -> bool:
    meta = node.get("metadata") or {}
    return KWOK_LABEL_KEY in (meta.get("annotations") or {})


def slices_for_node(config: DRAConfig, node: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ResourceSlices a KWOK node publishes (generation 0; see the module docstring)."""
    meta = node.get("metadata") or {}
    node_name = str(meta.get("name") or "")
    labels = meta.get("labels") or {}
    out: list[dict[str, Any]] = []
    for driver in config.drivers:
        matched = [
            p
            for p in driver.pools
            if any(term_matches(t, labels, node_name) for t in p.node_selector_terms)
        ]
        count = sum(len(p.resource_slices) for p in matched)
        for pool in matched:
            several = len(pool.resource_slices) > 1
            for i, devices in enumerate(pool.resource_slices):
                out.append(
                    {
                        "apiVersion": RESOURCE_API_VERSION,
                        "kind": "ResourceSlice",
                        "metadata": {
                            "name": slice_name(
                                driver.driver, node_name, pool.name, i if several else None
                            ),
                            "labels": {
                                MANAGED_BY_LABEL: MANAGED_BY,
                                NODE_LABEL: node_name,
                                POOL_LABEL: pool.name,
                                DRIVER_LABEL: driver.driver,
                            },
                            "ownerReferences": [
                                {
                                    "apiVersion": "v1",
                                    "kind": "Node",
                                    "name": node_name,
                                    "uid": str(meta.get("uid") or ""),
                                }
                            ],
                        },
                        "spec": {
                            "driver": driver.driver,
                            "nodeName": node_name,
                            "pool": {
                                "name": pool_name(driver.driver, node_name),
                                "generation": 0,
                                "resourceSliceCount": count,
                            },
                            "devices": [dict(d) for d in devices],
                        },
                    }
                )
    return out


def _pool_state(s: Mapping[str, Any]) -> tuple[Any, ...]:
    """What decides whether a published slice is current: everything but the generation."""
    spec = s.get("spec") or {}
    pool = spec.get("pool") or {}
    return (
        spec.get("nodeName"),
        pool.get("name"),
        pool.get("resourceSliceCount"),
        spec.get("devices") or [],
        (s.get("metadata") or {}).get("labels") or {},
    )


class ResourceSlices:
    """The ``kwok.dra.resourceslices`` controller: a KWOK node's slices, per node event.

    A Ready, not deleting KWOK node gets exactly :func:`slices_for_node`: missing slices
    are created, and when any slice of a driver differs or goes, every slice of that
    driver's pool is written at the next generation. Slices of a node that is gone, not a
    KWOK node, or no longer matched are deleted (those of a node being deleted stay until
    the garbage collector takes them with it)."""

    def __init__(self, kube: KubeClient, config: DRAConfig) -> None:
        self.kube = kube
        self.config = config

    def reconcile(self, key: ObjectKey) -> Result:
        node_name = key.name
        try:
            node: Mapping[str, Any] | None = self.kube.get("nodes", node_name)
        except NotFound:
            node = None
        published = self.kube.list(
            RESOURCE_SLICES,
            label_selector=f"{MANAGED_BY_LABEL}={MANAGED_BY},{NODE_LABEL}={node_name}",
        ).items
        if node is not None and (node.get("metadata") or {}).get("deletionTimestamp"):
            return Result()
        wanted: list[dict[str, Any]] = []
        if node is not None and _is_kwok_node(node) and is_true(node, "Ready"):
            wanted = slices_for_node(self.config, node)
        self._apply(wanted, published)
        return Result()

    def _apply(
        self, wanted: Sequence[dict[str, Any]], published: Sequence[Mapping[str, Any]]
    ) -> None:
        have = {str((s.get("metadata") or {}).get("name")): s for s in published}
        by_driver: dict[str, list[dict[str, Any]]] = {}
        for s in wanted:
            by_driver.setdefault(s["spec"]["driver"], []).append(s)
        keep: set[str] = set()
        for driver, slices in by_driver.items():
            names = {s["metadata"]["name"] for s in slices}
            keep |= names
            mine = [s for s in published if (s.get("spec") or {}).get("driver") == driver]
            current = all(
                s["metadata"]["name"] in have
                and _pool_state(have[s["metadata"]["name"]]) == _pool_state(s)
                for s in slices
            ) and all(str((s.get("metadata") or {}).get("name")) in names for s in mine)
            if current:
                continue
            generation = 1 + max(
                (
                    int(((s.get("spec") or {}).get("pool") or {}).get("generation") or 0)
                    for s in mine
                ),
                default=-1,
            )
            for s in slices:
                s["spec"]["pool"]["generation"] = generation
                self._write(s, have.get(s["metadata"]["name"]))
        for name in sorted(set(have) - keep):
            with contextlib.suppress(NotFound):
                self.kube.delete(RESOURCE_SLICES, name)

    def _write(self, desired: dict[str, Any], existing: Mapping[str, Any] | None) -> None:
        name = desired["metadata"]["name"]
        if existing is None:
            try:
                self.kube.create(desired)
                log.info("kwok: published resourceslice %s", name)
                return
            except AlreadyExists:
                existing = self.kube.get(RESOURCE_SLICES, name)
        update = dict(desired)
        update["metadata"] = {
            **desired["metadata"],
            "resourceVersion": (existing.get("metadata") or {}).get("resourceVersion"),
        }
        self.kube.update(update)
        log.info("kwok: updated resourceslice %s", name)


def _node_key(event_type: str, obj: dict[str, Any]) -> Iterable[ObjectKey]:
    return (ObjectKey("", str((obj.get("metadata") or {}).get("name") or "")),)


def _slice_node_key(event_type: str, obj: dict[str, Any]) -> Iterable[ObjectKey]:
    node = ((obj.get("metadata") or {}).get("labels") or {}).get(NODE_LABEL)
    return (ObjectKey("", str(node)),) if node else ()


def _controller(ctx: ControllerContext) -> ResourceSlices | None:
    config = getattr(ctx.base_cloud_provider, "dra_config", None)
    if not isinstance(config, DRAConfig) or not config:
        return None  # no drivers configured: nothing to publish
    return ResourceSlices(ctx.kube, config)


def controller_specs() -> list[ControllerSpec]:
    """The publishing controller, for the KWOK provider only."""
    return [
        ControllerSpec(
            CONTROLLER_NAME,
            _controller,
            watches=(
                Watch("nodes", mapper=_node_key),
                Watch(
                    RESOURCE_SLICES,
                    mapper=_slice_node_key,
                    label_selector=f"{MANAGED_BY_LABEL}={MANAGED_BY}",
                ),
            ),
            cloud_provider="kwok",
        )
    ]
