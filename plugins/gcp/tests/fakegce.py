"""A fake Compute Engine and GKE API over plain HTTP, for testing the official clients.

``google-cloud-compute`` and ``google-cloud-container`` are exercised for real (their REST
transports, JSON (de)serialisation, pagers, retries): only the server is fake. Clients reach
it with anonymous credentials and ``api_endpoint=http://127.0.0.1:<port>``, which is what
:class:`karpenter_gcp.clients.GCPClients` builds when the endpoint variables of :meth:`env`
are set, so a ``karpenter serve`` subprocess needs nothing but the environment.

Modelled calls (what Karpenter's launch path uses):

- instances: insert (an operation, the instance and its disks appear at once with status
  ``PROVISIONING``, ``RUNNING`` when the operation is done), get, delete (an operation; the
  instance and its auto-delete disks go), ``aggregated/instances`` with ``filter`` and
  ``pageToken`` paging (:attr:`FakeGCE.page_size` entries a page); answers omit the
  insert-only ``initializeParams`` of disks, as GCE does; setLabels (guarded by
  ``labelFingerprint``);
- disks: get (``sourceImage`` of a disk made from an image) and delete (an operation;
  ``resourceInUseByAnotherResource`` while attached);
- zone operations: get and wait, walking ``PENDING`` → ``RUNNING`` → ``DONE`` one step per
  poll (deterministic, no clock), a failed operation reporting ``error.errors`` as GCE does;
- region instance templates (list) and machine types (get), seeded by tests;
- GKE: get cluster, list / get / create node pools, the location's server config
  (seed :attr:`FakeGCE.server_configs` by location).

Faults: the next insert in a zone failing with a GCE error code synchronously (HTTP error,
nothing created) or in its operation (the instance is created, then the operation ends
with the error and the instance stays ``TERMINATED``, as GCE leaves it), any route failing
once (429, 500, 403 quota...). Other helpers add routes with :meth:`FakeGCE.route`
(e.g. ``fakegce_catalog.py``).

Usage::

    gce = FakeGCE().start()
    os.environ.update(gce.env())
    ...
    gce.instances[("us-central1-a", "karpenter-default-abcde")]["machineType"]
    gce.stop()
"""

from __future__ import annotations

import copy
import datetime as dt
import itertools
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from attrs import define

from karpenter_core.testing.fakecloud import FakeCloudServer, FakeRequest, Handler, Response

__all__ = [
    "CLUSTER",
    "LOCATION",
    "PROJECT",
    "REGION",
    "ZONES",
    "FakeGCE",
    "FakeRequest",
    "Handler",
    "Response",
    "gce_error",
]

# Conventional values for tests (import them from here, not from conftest).
PROJECT = "test-project"
REGION = "us-central1"
ZONES = ("us-central1-a", "us-central1-b", "us-central1-f")
LOCATION = REGION
CLUSTER = "test-cluster"

_C = r"/compute/v1/projects/(?P<project>[^/]+)"
_ZONE = _C + r"/zones/(?P<zone>[^/]+)"
_INSTANCE = _ZONE + r"/instances/(?P<name>[^/]+)"
_OPERATION = _ZONE + r"/operations/(?P<op>[^/]+)"
_GKE_CLUSTER = (
    r"/v1/projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/clusters/(?P<cluster>[^/:]+)"
)

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ALREADY_EXISTS",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def gce_error(status: int, reason: str, message: str) -> Response:
    """A Google API error answer: ``{"error": {"code", "message", "status", "errors":
    [{"reason", "message", "domain"}]}}`` (Compute puts its codes in ``errors[].reason``)."""
    return (
        status,
        {},
        {
            "error": {
                "code": status,
                "message": message,
                "status": _STATUS_NAMES.get(status, "UNKNOWN"),
                "errors": [{"reason": reason, "message": message, "domain": "global"}],
            }
        },
    )


@define
class _InsertFault:
    code: str
    message: str
    zone: str | None
    asynchronous: bool
    status: int


@define
class _Operation:
    """A zone operation: ``steps`` holds the statuses still to report; ``error`` the
    ``error.errors`` entries of a failed one; ``on_done`` runs when DONE is first seen."""

    body: dict[str, Any]
    steps: list[str]
    error: list[dict[str, str]] | None = None
    on_done: Callable[[], None] | None = None


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def _last(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[-1]


class FakeGCE(FakeCloudServer):
    """The fake server and its inventory (see the module docstring).

    ``instances`` and ``disks`` are keyed by (zone, name) and hold the resource as Compute
    returns it; ``instance_templates`` by (region, name); ``clusters`` by (location, name);
    ``node_pools`` by (location, cluster, pool). Tests read and seed them; access is
    guarded by :attr:`lock`. The server, routes, request recording and faults are the
    kit's :class:`~karpenter_core.testing.fakecloud.FakeCloudServer`.
    """

    server_name = "fake-gce"
    display_name = "fake GCE"
    unquote_match = True

    def __init__(self, *, page_size: int = 500, operation_polls: int = 2) -> None:
        super().__init__()
        self.page_size = page_size
        self.operation_polls = operation_polls
        self.instances: dict[tuple[str, str], dict[str, Any]] = {}
        self.disks: dict[tuple[str, str], dict[str, Any]] = {}
        self.instance_templates: dict[tuple[str, str], dict[str, Any]] = {}
        self.machine_types: dict[tuple[str, str], dict[str, Any]] = {}
        self.clusters: dict[tuple[str, str], dict[str, Any]] = {}
        self.node_pools: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.server_configs: dict[str, dict[str, Any]] = {}
        self.operations: dict[str, _Operation] = {}
        self._insert_faults: list[_InsertFault] = []
        self._ids = itertools.count(1000)

    def builtin_routes(self) -> Sequence[tuple[str, str, Handler]]:
        return [
            ("GET", _C + r"/aggregated/instances", self._aggregated_instances),
            ("POST", _ZONE + r"/instances", self._insert),
            ("GET", _INSTANCE, self._get_instance),
            ("DELETE", _INSTANCE, self._delete_instance),
            ("POST", _INSTANCE + r"/setLabels", self._set_labels),
            ("GET", _ZONE + r"/disks/(?P<name>[^/]+)", self._get_disk),
            ("DELETE", _ZONE + r"/disks/(?P<name>[^/]+)", self._delete_disk),
            ("GET", _OPERATION, self._get_operation),
            ("POST", _OPERATION + r"/wait", self._get_operation),
            ("GET", _C + r"/regions/(?P<region>[^/]+)/instanceTemplates", self._list_templates),
            ("GET", _ZONE + r"/machineTypes/(?P<name>[^/]+)", self._get_machine_type),
            (
                "GET",
                r"/v1/projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/serverConfig",
                self._server_config,
            ),
            ("GET", _GKE_CLUSTER, self._get_cluster),
            ("GET", _GKE_CLUSTER + r"/nodePools", self._list_pools),
            ("POST", _GKE_CLUSTER + r"/nodePools", self._create_pool),
            ("GET", _GKE_CLUSTER + r"/nodePools/(?P<pool>[^/]+)", self._get_pool),
        ]

    # ------------------------------------------------------------------ the kit's hooks

    def error(self, status: int, code: str, message: str) -> Response:
        return gce_error(status, code, message)

    def no_route(self, request: FakeRequest) -> Response:
        return gce_error(404, "notFound", f"fake GCE has no route {request.method} {request.path}")

    def handler_error(self, exc: Exception) -> Response:
        """A ``ValueError`` (a filter the fake does not understand) is a 400."""
        if isinstance(exc, ValueError):
            return gce_error(400, "invalid", str(exc))
        return gce_error(500, "fakeHandlerError", repr(exc))

    def env(self) -> dict[str, str]:
        """Environment variables pointing :class:`GCPClients` (in-process or in a
        ``karpenter serve`` subprocess) at this server with anonymous credentials, and the
        price table at it too, so no test ever reaches the Internet (without the catalogue
        routes the fake answers 404 and the bundled prices stay)."""
        return {
            "GCP_COMPUTE_ENDPOINT": self.url,
            "GCP_CONTAINER_ENDPOINT": self.url,
            "GCP_PRICING_CSV_ENDPOINT": self.url + "/pricing/machine-types-regions.csv",
        }

    # ------------------------------------------------------------------ extension API

    def reset(self) -> None:
        """Forget inventory, requests, operations and faults (added routes stay)."""
        with self.lock:
            super().reset()
            for store in (
                self.instances,
                self.disks,
                self.instance_templates,
                self.machine_types,
                self.clusters,
                self.node_pools,
                self.server_configs,
                self.operations,
            ):
                store.clear()
            self._insert_faults.clear()
            self.page_size = 500
            self.operation_polls = 2

    def fail_next(  # type: ignore[override]  # GCE calls its error code a reason
        self,
        method: str,
        path_regex: str,
        *,
        status: int = 500,
        reason: str = "backendError",
        message: str = "injected failure",
        times: int = 1,
    ) -> None:
        """Answer the next ``times`` matching requests with an error (before any route
        runs, so nothing is created)."""
        super().fail_next(
            method, path_regex, status=status, code=reason, message=message, times=times
        )

    def throttle_next(self, method: str, path_regex: str) -> None:  # type: ignore[override]
        """Answer the next matching request ``429 rateLimitExceeded``."""
        super().throttle_next(
            method, path_regex, retry_after=None, code="rateLimitExceeded", message="slow down"
        )

    def fail_next_insert(
        self,
        code: str,
        message: str = "",
        *,
        zone: str | None = None,
        asynchronous: bool = False,
        status: int = 503,
    ) -> None:
        """Fail the next instance insert in ``zone`` (None = any) with GCE error ``code``
        (e.g. ``ZONE_RESOURCE_POOL_EXHAUSTED``, ``QUOTA_EXCEEDED``): synchronously as an
        HTTP ``status`` error naming it in ``errors[].reason`` (nothing created), or in
        the zone operation (the instance and its disks exist, ``TERMINATED``)."""
        with self.lock:
            self._insert_faults.append(
                _InsertFault(code, message or f"{code}: injected", zone, asynchronous, status)
            )

    def inserted_bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies of every instance insert received, in order."""
        return [r.json for r in self.requests_to("POST", _ZONE + r"/instances")]

    # ------------------------------------------------------------------ seeding helpers

    def add_cluster(self, cluster: Mapping[str, Any], location: str = LOCATION) -> None:
        """Seed a GKE cluster (``name`` required) and its ``nodePools``."""
        with self.lock:
            body = copy.deepcopy(dict(cluster))
            for pool in body.get("nodePools") or []:
                self.node_pools[(location, body["name"], pool["name"])] = pool
            self.clusters[(location, body["name"])] = body

    def add_instance_template(self, template: Mapping[str, Any], region: str = REGION) -> None:
        """Seed a regional instance template (``name`` required)."""
        with self.lock:
            self.instance_templates[(region, template["name"])] = copy.deepcopy(dict(template))

    def add_instance(self, zone: str, instance: Mapping[str, Any]) -> None:
        """Seed an instance made elsewhere (``name`` required; zone and link filled in)."""
        with self.lock:
            body = copy.deepcopy(dict(instance))
            body.setdefault("id", str(next(self._ids)))
            body.setdefault("status", "RUNNING")
            body.setdefault("creationTimestamp", _now())
            body["zone"] = self._zone_link(PROJECT, zone)
            body.setdefault("selfLink", f"{body['zone']}/instances/{body['name']}")
            self.instances[(zone, body["name"])] = body

    # ------------------------------------------------------------------ compute

    def _zone_link(self, project: str, zone: str) -> str:
        return f"{self.url}/compute/v1/projects/{project}/zones/{zone}"

    def _new_operation(
        self,
        project: str,
        zone: str,
        kind: str,
        target: str,
        *,
        error: list[dict[str, str]] | None = None,
        on_done: Callable[[], None] | None = None,
    ) -> dict[str, Any]:
        name = f"operation-{next(self._ids)}"
        body = {
            "kind": "compute#operation",
            "id": str(next(self._ids)),
            "name": name,
            "zone": self._zone_link(project, zone),
            "operationType": kind,
            "targetLink": target,
            "status": "PENDING",
            "progress": 0,
            "insertTime": _now(),
            "selfLink": f"{self._zone_link(project, zone)}/operations/{name}",
        }
        steps = ["RUNNING"] * max(self.operation_polls - 1, 0) + ["DONE"]
        self.operations[name] = _Operation(body, steps, error, on_done)
        return copy.deepcopy(body)

    def _get_operation(self, req: FakeRequest) -> Response:
        """Each get (or wait) advances the operation by one status."""
        on_done: Callable[[], None] | None = None
        with self.lock:
            op = self.operations.get(req.match["op"])
            if op is None:
                return gce_error(404, "notFound", f"operation {req.match['op']} not found")
            if op.steps:
                op.body["status"] = op.steps.pop(0)
                if op.body["status"] == "DONE":
                    op.body["progress"] = 100
                    op.body["endTime"] = _now()
                    if op.error:
                        op.body["error"] = {"errors": op.error}
                        op.body["httpErrorStatusCode"] = 503
                        op.body["httpErrorMessage"] = "SERVICE UNAVAILABLE"
                    on_done, op.on_done = op.on_done, None
            body = copy.deepcopy(op.body)
        if on_done is not None:
            with self.lock:
                on_done()
        return 200, {}, body

    def _insert_fault_for(self, zone: str) -> _InsertFault | None:
        for fault in self._insert_faults:
            if fault.zone is None or fault.zone == zone:
                self._insert_faults.remove(fault)
                return fault
        return None

    def _insert(self, req: FakeRequest) -> Response:
        project, zone = req.match["project"], req.match["zone"]
        body = req.json or {}
        name = body.get("name")
        if not name:
            return gce_error(400, "required", "Required field 'resource.name' not specified")
        with self.lock:
            if (zone, name) in self.instances:
                return gce_error(
                    409,
                    "alreadyExists",
                    f"The resource 'projects/{project}/zones/{zone}/instances/{name}' already exists",
                )
            fault = self._insert_fault_for(zone)
            if fault is not None and not fault.asynchronous:
                return gce_error(fault.status, fault.code, fault.message)
            link = f"{self._zone_link(project, zone)}/instances/{name}"
            instance = copy.deepcopy(body)
            instance.update(
                {
                    "kind": "compute#instance",
                    "id": str(next(self._ids)),
                    "zone": self._zone_link(project, zone),
                    "status": "PROVISIONING",
                    "creationTimestamp": _now(),
                    "selfLink": link,
                    "labelFingerprint": "fp",
                }
            )
            for i, disk in enumerate(instance.get("disks") or []):
                disk_name = disk.get("deviceName") or (name if i == 0 else f"{name}-{i}")
                disk_link = f"{self._zone_link(project, zone)}/disks/{disk_name}"
                disk["source"] = disk_link
                disk.setdefault("index", i)
                self.disks[(zone, disk_name)] = {
                    "name": disk_name,
                    "zone": self._zone_link(project, zone),
                    "selfLink": disk_link,
                    "users": [link],
                    "autoDelete": bool(disk.get("autoDelete")),
                    "sizeGb": str((disk.get("initializeParams") or {}).get("diskSizeGb", "")),
                    "type": (disk.get("initializeParams") or {}).get("diskType", ""),
                    "sourceImage": (disk.get("initializeParams") or {}).get("sourceImage", ""),
                }
            self.instances[(zone, name)] = instance
            error = None
            if fault is not None:
                error = [{"code": fault.code, "message": fault.message}]

            def done() -> None:
                current = self.instances.get((zone, name))
                if current is not None:
                    current["status"] = "TERMINATED" if error else "RUNNING"

            op = self._new_operation(project, zone, "insert", link, error=error, on_done=done)
        return 200, {}, op

    def _get_instance(self, req: FakeRequest) -> Response:
        zone, name = req.match["zone"], req.match["name"]
        with self.lock:
            instance = self.instances.get((zone, name))
            if instance is None:
                return gce_error(
                    404,
                    "notFound",
                    f"The resource 'projects/{req.match['project']}/zones/{zone}/instances/{name}' was not found",
                )
            return 200, {}, _as_returned(instance)

    def _set_labels(self, req: FakeRequest) -> Response:
        """Replace the labels when ``labelFingerprint`` is current (412 otherwise, as GCE
        guards concurrent label updates); a new fingerprint each time."""
        project, zone, name = req.match["project"], req.match["zone"], req.match["name"]
        body = req.json or {}
        with self.lock:
            instance = self.instances.get((zone, name))
            if instance is None:
                return gce_error(404, "notFound", f"instance {name} was not found")
            if body.get("labelFingerprint") != instance.get("labelFingerprint"):
                return gce_error(
                    412,
                    "conditionNotMet",
                    "Labels fingerprint either invalid or resource labels have changed",
                )
            instance["labels"] = dict(body.get("labels") or {})
            instance["labelFingerprint"] = f"fp{next(self._ids)}"
            op = self._new_operation(project, zone, "setLabels", instance["selfLink"])
        return 200, {}, op

    def _get_disk(self, req: FakeRequest) -> Response:
        with self.lock:
            disk = self.disks.get((req.match["zone"], req.match["name"]))
            if disk is None:
                return gce_error(404, "notFound", f"disk {req.match['name']} was not found")
            return 200, {}, copy.deepcopy(disk)

    def _delete_disk(self, req: FakeRequest) -> Response:
        """A disk still attached to an instance cannot be deleted (``resourceInUseByAnotherResource``)."""
        project, zone, name = req.match["project"], req.match["zone"], req.match["name"]
        with self.lock:
            disk = self.disks.get((zone, name))
            if disk is None:
                return gce_error(404, "notFound", f"disk {name} was not found")
            if disk.get("users"):
                return gce_error(
                    400,
                    "resourceInUseByAnotherResource",
                    f"The disk resource '{name}' is already being used by '{disk['users'][0]}'",
                )

            def gone() -> None:
                self.disks.pop((zone, name), None)

            op = self._new_operation(project, zone, "delete", disk["selfLink"], on_done=gone)
        return 200, {}, op

    def _delete_instance(self, req: FakeRequest) -> Response:
        project, zone, name = req.match["project"], req.match["zone"], req.match["name"]
        with self.lock:
            instance = self.instances.get((zone, name))
            if instance is None:
                return gce_error(
                    404,
                    "notFound",
                    f"The resource 'projects/{project}/zones/{zone}/instances/{name}' was not found",
                )
            instance["status"] = "STOPPING"

            def gone() -> None:
                removed = self.instances.pop((zone, name), None)
                for disk in (removed or {}).get("disks") or []:
                    key = (zone, _last(str(disk.get("source", ""))))
                    if disk.get("autoDelete"):
                        self.disks.pop(key, None)
                    elif key in self.disks:
                        self.disks[key]["users"] = []

            op = self._new_operation(project, zone, "delete", instance["selfLink"], on_done=gone)
        return 200, {}, op

    def _aggregated_instances(self, req: FakeRequest) -> Response:
        matches = _compile_filter(req.query.get("filter", ""))
        with self.lock:
            rows = [
                (zone, copy.deepcopy(inst))
                for (zone, _), inst in sorted(self.instances.items())
                if matches(inst)
            ]
            size = int(req.query.get("maxResults") or self.page_size)
        size = max(1, min(size, self.page_size))
        start = int(req.query.get("pageToken") or 0)
        page = rows[start : start + size]
        items: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for zone, inst in page:
            items.setdefault(f"zones/{zone}", {"instances": []})["instances"].append(
                _as_returned(inst)
            )
        body: dict[str, Any] = {"kind": "compute#instanceAggregatedList", "items": items}
        if start + size < len(rows):
            body["nextPageToken"] = str(start + size)
        return 200, {}, body

    def _list_templates(self, req: FakeRequest) -> Response:
        region = req.match["region"]
        with self.lock:
            items = [
                copy.deepcopy(t)
                for (r, _), t in sorted(self.instance_templates.items())
                if r == region
            ]
        return 200, {}, {"kind": "compute#instanceTemplateList", "items": items}

    def _get_machine_type(self, req: FakeRequest) -> Response:
        with self.lock:
            mt = self.machine_types.get((req.match["zone"], req.match["name"]))
            if mt is None:
                return gce_error(404, "notFound", f"machine type {req.match['name']} not found")
            return 200, {}, copy.deepcopy(mt)

    # ------------------------------------------------------------------ GKE

    def _server_config(self, req: FakeRequest) -> Response:
        with self.lock:
            config = self.server_configs.get(req.match["location"])
            if config is None:
                return gce_error(404, "notFound", f"no server config for {req.match['location']}")
            return 200, {}, copy.deepcopy(config)

    def _get_cluster(self, req: FakeRequest) -> Response:
        with self.lock:
            cluster = self.clusters.get((req.match["location"], req.match["cluster"]))
            if cluster is None:
                return gce_error(404, "notFound", f"cluster {req.match['cluster']} not found")
            body = copy.deepcopy(cluster)
            loc, name = req.match["location"], req.match["cluster"]
            body["nodePools"] = [
                copy.deepcopy(p)
                for (lo, c, _), p in sorted(self.node_pools.items())
                if (lo, c) == (loc, name)
            ]
            return 200, {}, body

    def _list_pools(self, req: FakeRequest) -> Response:
        loc, name = req.match["location"], req.match["cluster"]
        with self.lock:
            if (loc, name) not in self.clusters:
                return gce_error(404, "notFound", f"cluster {name} not found")
            pools = [
                copy.deepcopy(p)
                for (lo, c, _), p in sorted(self.node_pools.items())
                if (lo, c) == (loc, name)
            ]
        return 200, {}, {"nodePools": pools}

    def _get_pool(self, req: FakeRequest) -> Response:
        key = (req.match["location"], req.match["cluster"], req.match["pool"])
        with self.lock:
            pool = self.node_pools.get(key)
            if pool is None:
                return gce_error(404, "notFound", f"node pool {key[2]} not found")
            return 200, {}, copy.deepcopy(pool)

    def _create_pool(self, req: FakeRequest) -> Response:
        loc, name = req.match["location"], req.match["cluster"]
        pool = dict((req.json or {}).get("nodePool") or {})
        with self.lock:
            if (loc, name) not in self.clusters:
                return gce_error(404, "notFound", f"cluster {name} not found")
            if (loc, name, pool.get("name", "")) in self.node_pools:
                return gce_error(409, "alreadyExists", f"node pool {pool.get('name')} exists")
            pool["status"] = "RUNNING"
            self.node_pools[(loc, name, pool["name"])] = pool
        return (
            200,
            {},
            {
                "name": f"operation-{next(self._ids)}",
                "status": "RUNNING",
                "operationType": "CREATE_NODE_POOL",
            },
        )


def _as_returned(instance: Mapping[str, Any]) -> dict[str, Any]:
    """An instance as GCE answers it: attached disks name their disk (``source``) but no
    longer carry the insert-only ``initializeParams`` (the image is on the disk)."""
    out = copy.deepcopy(dict(instance))
    for disk in out.get("disks") or []:
        disk.pop("initializeParams", None)
    return out


_TERM = re.compile(r"""^(?P<field>[\w.\-]+)\s*(?:(?P<op>=|!=|eq|ne|:)\s*(?P<value>"[^"]*"|\S+))$""")


def _field(resource: Mapping[str, Any], path: str) -> Any:
    value: Any = resource
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _compile_filter(text: str) -> Callable[[Mapping[str, Any]], bool]:
    """A tiny evaluator for the Compute ``filter`` forms Karpenter sends: terms joined by
    ``AND`` (optionally each or all in parentheses), each ``field = "v"``, ``field != v``,
    ``field eq v`` (regex, full match), ``field ne v``, ``field:*`` (present) or
    ``field:v``; fields are dotted paths such as ``labels.goog-k8s-cluster-name``.
    Anything else is a 400 at the caller (raised here as ``ValueError``)."""
    text = text.strip()
    if not text:
        return lambda r: True
    terms = [t.strip().strip("()").strip() for t in re.split(r"\)?\s+AND\s+\(?", text.strip("()"))]
    checks: list[Callable[[Mapping[str, Any]], bool]] = []
    for term in terms:
        m = _TERM.match(term)
        if m is None:
            raise ValueError(f"unsupported filter term {term!r}")
        path, op, raw = m["field"], m["op"], m["value"]
        value = raw[1:-1] if raw.startswith('"') else raw

        def check(r: Mapping[str, Any], path: str = path, op: str = op, value: str = value) -> bool:
            got = _field(r, path)
            if op == ":":
                return got is not None if value == "*" else str(got) == value
            if op == "=":
                return got is not None and str(got) == value
            if op == "!=":
                return got is None or str(got) != value
            if op == "eq":
                return got is not None and re.fullmatch(value, str(got)) is not None
            return got is None or re.fullmatch(value, str(got)) is None

        checks.append(check)
    return lambda r: all(c(r) for c in checks)
