"""A fake Azure Resource Manager over real HTTPS, for testing the official SDKs end to end.

The Azure SDKs are exercised for real (their serializers, LRO pollers, retry policy,
managed-identity credential): only the server is fake. It models what Karpenter's launch
path calls:

- the App Service managed-identity token endpoint (``IDENTITY_ENDPOINT``), which
  ``DefaultAzureCredential`` uses when ``IDENTITY_ENDPOINT``/``IDENTITY_HEADER`` are set;
  every ARM call must then carry its bearer token;
- network interfaces and virtual machines (PUT/GET/DELETE, PATCH of tags) and VM
  extensions (PUT/GET/PATCH), each PUT/DELETE a long-running operation: ``201``/``202``
  with ``Azure-AsyncOperation`` (and ``Location`` on ``202``) and ``Retry-After: 0``; the
  first :attr:`FakeARM.lro_polls` status polls answer ``InProgress`` and the next one the
  outcome, so polling is exercised deterministically and without waiting
  (:attr:`FakeARM.retry_after_ms` makes the fake ask for a real, short wait instead);
- Resource Graph ``POST /providers/Microsoft.ResourceGraph/resources`` with a tiny
  evaluator for ``Resources | where ...`` queries (``==``, ``=~``, ``tags has_cs``,
  ``not(...)``), paged with ``$skipToken``;
- faults: the next VM create in a (size, zone) failing with an ARM error code synchronously
  or in its LRO, any route failing (429 with ``Retry-After``, 500...), token failures.

Deleting a VM removes the NIC and extensions it owns when the VM asked for it
(``deleteOption: Delete``), and a NIC still used by a VM cannot be deleted (``NicInUse``),
as in Azure. Other test helpers add routes with :meth:`FakeARM.route`.

Usage::

    arm = FakeARM().start()
    os.environ.update(arm.env())   # or pass arm.env() to a subprocess
    ...
    arm.vms["aks-default-abcde"]["properties"]["hardwareProfile"]["vmSize"]
    arm.stop()
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import itertools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from attrs import define

from karpenter_core.testing.fakecloud import FakeCloudServer, FakeRequest, Handler, Response

__all__ = [
    "LOCATION",
    "RESOURCE_GROUP",
    "SUBSCRIPTION",
    "FakeARM",
    "FakeRequest",
    "Handler",
    "Response",
    "arm_error",
]

# Conventional values for tests (tests import them from here: importing ``conftest`` as a
# module is ambiguous when several test directories have one).
SUBSCRIPTION = "12345678-1234-1234-1234-123456789abc"
RESOURCE_GROUP = "MC_rg_cluster_westus2"
LOCATION = "westus2"

IDENTITY_HEADER = "fake-arm-identity-header"
ACCESS_TOKEN = "fake-arm-access-token"

_RG = r"/subscriptions/(?P<sub>[^/]+)/resourceGroups/(?P<rg>[^/]+)"
_VM = _RG + r"/providers/Microsoft\.Compute/virtualMachines/(?P<name>[^/]+)"
_NIC = _RG + r"/providers/Microsoft\.Network/networkInterfaces/(?P<name>[^/]+)"
_EXT = _VM + r"/extensions/(?P<ext>[^/]+)"


def arm_error(status: int, code: str, message: str) -> Response:
    """An ARM error answer, in the ``{"error": {"code", "message"}}`` shape."""
    return status, {}, {"error": {"code": code, "message": message}}


@define
class _VMFault:
    code: str
    message: str
    sku: str | None
    zone: str | None
    asynchronous: bool
    status: int


@define
class _Operation:
    """An LRO: ``polls_left`` InProgress answers, then the outcome; ``on_done`` runs once
    when the outcome is first reported (the resource changes state then)."""

    polls_left: int
    error: tuple[str, str] | None
    on_done: Callable[[], None] | None
    done: bool = False


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")


class FakeARM(FakeCloudServer):
    """The fake server and its inventory (see the module docstring).

    Inventory dicts are keyed by resource name (one resource group is all a test needs)
    and hold the resource as ARM returns it; tests may read them, and may seed them to
    model resources created elsewhere. Access is guarded by :attr:`lock`. The server,
    routes, request recording and :meth:`fail_next`/:meth:`throttle_next` are the kit's
    :class:`~karpenter_core.testing.fakecloud.FakeCloudServer`.
    """

    server_name = "fake-arm"
    display_name = "fake ARM"

    def __init__(self, *, lro_polls: int = 1, graph_page_size: int = 1000) -> None:
        super().__init__(tls=True)
        self.lro_polls = lro_polls
        self.graph_page_size = graph_page_size
        self.retry_after_ms: int | None = None
        self.vms: dict[str, dict[str, Any]] = {}
        self.nics: dict[str, dict[str, Any]] = {}
        self.extensions: dict[tuple[str, str], dict[str, Any]] = {}
        self.token_requests = 0
        self._vm_faults: list[_VMFault] = []
        self._ext_faults: list[tuple[str, str, bool]] = []
        self._token_failures = 0
        self._token_status = 500
        self._ops: dict[str, _Operation] = {}
        self._op_ids = itertools.count(1)

    def builtin_routes(self) -> Sequence[tuple[str, str, Handler]]:
        return [
            ("GET", r"/msi/token", self._token),
            ("GET", r"/fakearm/operations/(?P<op>[^/]+)", self._operation),
            ("GET", r"/fakearm/operations/(?P<op>[^/]+)/result", self._operation_result),
            ("POST", r"/providers/Microsoft\.ResourceGraph/resources", self._graph),
            ("PATCH", _EXT, self._patch_extension),
            ("PATCH", _VM, self._patch_vm),
            ("PATCH", _NIC, self._patch_nic),
            ("PUT", _EXT, self._put_extension),
            ("GET", _EXT, self._get_extension),
            ("PUT", _VM, self._put_vm),
            ("GET", _VM, self._get_vm),
            ("DELETE", _VM, self._delete_vm),
            ("PUT", _NIC, self._put_nic),
            ("GET", _NIC, self._get_nic),
            ("DELETE", _NIC, self._delete_nic),
        ]

    # ------------------------------------------------------------------ the kit's hooks

    def error(self, status: int, code: str, message: str) -> Response:
        return arm_error(status, code, message)

    def authorize(self, request: FakeRequest, handler: Handler) -> Response | None:
        """Every route but the token endpoint needs the fake's bearer token (routes added
        with :meth:`route` too)."""
        if handler != self._token and not self._authorized(request):
            return arm_error(401, "InvalidAuthenticationToken", "missing or bad token")
        return None

    def handler_error(self, exc: Exception) -> Response:
        return arm_error(500, "FakeARMHandlerError", repr(exc))

    def response_headers(self, request: FakeRequest) -> Mapping[str, str]:
        return {"x-ms-request-id": f"fake-{id(request):x}"}

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> FakeARM:
        """Start serving HTTPS on an ephemeral 127.0.0.1 port; returns self."""
        super().start()
        (self.directory / "environment.json").write_text(
            json.dumps(
                {
                    "name": "AzurePublicCloud",
                    "resourceManagerEndpoint": self.url + "/",
                    "activeDirectoryEndpoint": self.url + "/",
                    "tokenAudience": "https://management.azure.com/",
                }
            ),
            encoding="utf-8",
        )
        return self

    @property
    def environment_file(self) -> str:
        """The cloud-environment JSON naming this server as the ARM endpoint."""
        return str(self.directory / "environment.json")

    def env(self) -> dict[str, str]:
        """Environment variables that make the SDKs (in-process or a subprocess) trust
        this server, get managed-identity tokens from it and use it as ARM."""
        return {
            "REQUESTS_CA_BUNDLE": self.ca_file,
            "SSL_CERT_FILE": self.ca_file,
            "IDENTITY_ENDPOINT": self.url + "/msi/token",
            "IDENTITY_HEADER": IDENTITY_HEADER,
            "AZURE_ENVIRONMENT_FILEPATH": self.environment_file,
            # the retail prices API too, so no test reaches the Internet (without the
            # catalogue routes the fake answers and the bundled prices stay)
            "AZURE_RETAIL_PRICES_ENDPOINT": self.url + "/api/retail/prices",
        }

    # ------------------------------------------------------------------ extension API

    def reset(self) -> None:
        """Forget inventory, recorded requests, pending faults and tuning (routes added
        with :meth:`route` stay): a fresh ARM for the next test."""
        with self.lock:
            super().reset()
            self.vms.clear()
            self.nics.clear()
            self.extensions.clear()
            self._vm_faults.clear()
            self._ext_faults.clear()
            self._token_failures = 0
            self._token_status = 500
            self.token_requests = 0
            self.lro_polls = 1
            self.graph_page_size = 1000
            self.retry_after_ms = None

    def fail_next_vm_create(
        self,
        code: str,
        message: str = "",
        *,
        sku: str | None = None,
        zone: str | None = None,
        asynchronous: bool = False,
        status: int = 409,
    ) -> None:
        """Fail the next VM create matching ``sku`` (vmSize) and ``zone`` (ARM zone "1"
        or a label "westus2-1"; "" = no zone; None = any) with ARM error ``code``:
        synchronously (``status``, nothing created) or in its LRO (the VM is left in
        provisioning state Failed, as Azure does)."""
        with self.lock:
            self._vm_faults.append(_VMFault(code, message or code, sku, zone, asynchronous, status))

    def fail_next_extension(
        self, code: str, message: str = "", *, asynchronous: bool = True
    ) -> None:
        """Fail the next VM extension create (in its LRO by default)."""
        with self.lock:
            self._ext_faults.append((code, message or code, asynchronous))

    def fail_tokens(self, times: int = 1, *, status: int = 500) -> None:
        """Answer the next ``times`` token requests with ``status`` (the credential
        retries 5xx with backoff, not 4xx)."""
        with self.lock:
            self._token_failures += times
            self._token_status = status

    # ------------------------------------------------------------------ dispatch

    @staticmethod
    def _authorized(request: FakeRequest) -> bool:
        auth = {k.lower(): v for k, v in request.headers.items()}.get("authorization", "")
        return auth == f"Bearer {ACCESS_TOKEN}"

    # ------------------------------------------------------------------ LROs

    def _begin(
        self,
        status: int,
        body: Any,
        *,
        error: tuple[str, str] | None = None,
        on_done: Callable[[], None] | None = None,
        polls: int | None = None,
    ) -> Response:
        op_id = f"op-{next(self._op_ids)}"
        self._ops[op_id] = _Operation(self.lro_polls if polls is None else polls, error, on_done)
        operation = f"{self.url}/fakearm/operations/{op_id}"
        headers = {
            "Azure-AsyncOperation": f"{operation}?api-version=2024-01-01",
            **self._retry_headers(),
        }
        if status == 202:
            headers["Location"] = f"{operation}/result?api-version=2024-01-01"
        return status, headers, body

    def _retry_headers(self) -> dict[str, str]:
        """``Retry-After: 0`` (the SDK then waits its ``polling_interval``), or
        ``retry-after-ms`` when :attr:`retry_after_ms` is set (the SDK waits that)."""
        if self.retry_after_ms is not None:
            return {"retry-after-ms": str(self.retry_after_ms)}
        return {"Retry-After": "0"}

    def _advance(self, op_id: str) -> tuple[str, _Operation] | None:
        """One poll of an operation: its status after this poll."""
        op = self._ops.get(op_id)
        if op is None:
            return None
        if op.polls_left > 0:
            op.polls_left -= 1
            return "InProgress", op
        if not op.done:
            op.done = True
            if op.on_done is not None:
                op.on_done()
        return ("Failed" if op.error is not None else "Succeeded"), op

    def _operation(self, req: FakeRequest) -> Response:
        with self.lock:
            step = self._advance(req.match["op"])
        if step is None:
            return arm_error(404, "OperationNotFound", req.match["op"])
        status, op = step
        if status == "InProgress":
            return 200, self._retry_headers(), {"status": status}
        if op.error is not None:
            code, message = op.error
            return 200, {}, {"status": status, "error": {"code": code, "message": message}}
        return 200, {}, {"status": status}

    def _operation_result(self, req: FakeRequest) -> Response:
        """The ``Location`` poll: 202 while running, then 204 or the ARM error."""
        with self.lock:
            step = self._advance(req.match["op"])
        if step is None:
            return arm_error(404, "OperationNotFound", req.match["op"])
        status, op = step
        if status == "InProgress":
            return 202, self._retry_headers(), None
        if op.error is not None:
            return arm_error(409, *op.error)
        return 204, {}, None

    # ------------------------------------------------------------------ token

    def _token(self, req: FakeRequest) -> Response:
        with self.lock:
            self.token_requests += 1
            if self._token_failures > 0:
                self._token_failures -= 1
                return (
                    self._token_status,
                    {},
                    {"error": "invalid_request", "error_description": "injected failure"},
                )
        header = {k.lower(): v for k, v in req.headers.items()}.get("x-identity-header")
        if header != IDENTITY_HEADER:
            return 401, {}, {"error": "unauthorized", "error_description": "bad identity header"}
        expires = int(dt.datetime.now(dt.UTC).timestamp()) + 3600
        return (
            200,
            {},
            {
                "access_token": ACCESS_TOKEN,
                "expires_on": str(expires),
                "resource": req.query.get("resource", ""),
                "token_type": "Bearer",
            },
        )

    # ------------------------------------------------------------------ NICs

    def _nic_id(self, m: Mapping[str, str]) -> str:
        return (
            f"/subscriptions/{m['sub']}/resourceGroups/{m['rg']}"
            f"/providers/Microsoft.Network/networkInterfaces/{m['name']}"
        )

    def _put_nic(self, req: FakeRequest) -> Response:
        body = req.json or {}
        m = req.match
        with self.lock:
            existing = m["name"] in self.nics
            props = copy.deepcopy(body.get("properties") or {})
            props["provisioningState"] = "Succeeded"
            for i, ipc in enumerate(props.get("ipConfigurations") or []):
                ipc.setdefault("properties", {})
                ipc["properties"]["privateIPAddress"] = f"10.224.0.{(len(self.nics) + 4) % 250}"
                ipc["id"] = f"{self._nic_id(m)}/ipConfigurations/{ipc.get('name') or i}"
            nic = {
                "id": self._nic_id(m),
                "name": m["name"],
                "type": "Microsoft.Network/networkInterfaces",
                "location": body.get("location", ""),
                "resourceGroup": m["rg"],
                "subscriptionId": m["sub"],
                "tags": dict(body.get("tags") or {}),
                "properties": props,
            }
            self.nics[m["name"]] = nic
            answer = copy.deepcopy(nic)
        return self._begin(200 if existing else 201, answer, polls=0)

    def _get_nic(self, req: FakeRequest) -> Response:
        with self.lock:
            nic = self.nics.get(req.match["name"])
            if nic is None:
                return arm_error(
                    404, "NotFound", f"network interface {req.match['name']} not found"
                )
            return 200, {}, copy.deepcopy(nic)

    def _delete_nic(self, req: FakeRequest) -> Response:
        name = req.match["name"]
        with self.lock:
            if name not in self.nics:
                return 204, {}, None
            nic_id = self.nics[name]["id"].lower()
            for vm in self.vms.values():
                for ref in vm["properties"].get("networkProfile", {}).get("networkInterfaces", []):
                    if str(ref.get("id", "")).lower() == nic_id:
                        return arm_error(
                            400,
                            "NicInUse",
                            f"Network Interface {nic_id} is used by existing resource {vm['id']}",
                        )

            def gone() -> None:
                self.nics.pop(name, None)

        return self._begin(202, None, on_done=gone, polls=0)

    # ------------------------------------------------------------------ VMs

    def _vm_fault_for(self, body: Mapping[str, Any]) -> _VMFault | None:
        size = ((body.get("properties") or {}).get("hardwareProfile") or {}).get("vmSize")
        zones = body.get("zones") or []
        arm_zone = str(zones[0]) if zones else ""
        for fault in self._vm_faults:
            if fault.sku is not None and fault.sku != size:
                continue
            if fault.zone is not None:
                wanted = fault.zone.rsplit("-", 1)[-1] if fault.zone else ""
                if wanted != arm_zone:
                    continue
            self._vm_faults.remove(fault)
            return fault
        return None

    def _put_vm(self, req: FakeRequest) -> Response:
        body = req.json or {}
        m = req.match
        name = m["name"]
        with self.lock:
            if name in self.vms:
                # An update: merge tags, keep the rest (enough for idempotent re-PUTs).
                vm = self.vms[name]
                vm["tags"] = dict(body.get("tags") or vm.get("tags") or {})
                return self._begin(200, copy.deepcopy(vm), polls=0)
            fault = self._vm_fault_for(body)
            if fault is not None and not fault.asynchronous:
                return arm_error(fault.status, fault.code, fault.message)
            nic_refs = (
                (body.get("properties") or {})
                .get("networkProfile", {})
                .get("networkInterfaces", [])
            )
            for ref in nic_refs:
                nic_name = str(ref.get("id", "")).rsplit("/", 1)[-1]
                if nic_name not in self.nics:
                    return arm_error(
                        400, "InvalidResourceReference", f"Resource {ref.get('id')} not found"
                    )
            props = copy.deepcopy(body.get("properties") or {})
            props["provisioningState"] = "Creating"
            props["timeCreated"] = _now()
            props["vmId"] = f"00000000-0000-0000-0000-{next(self._op_ids):012d}"
            vm = {
                "id": (
                    f"/subscriptions/{m['sub']}/resourceGroups/{m['rg']}"
                    f"/providers/Microsoft.Compute/virtualMachines/{name}"
                ),
                "name": name,
                "type": "Microsoft.Compute/virtualMachines",
                "location": body.get("location", ""),
                "resourceGroup": m["rg"],
                "subscriptionId": m["sub"],
                "tags": dict(body.get("tags") or {}),
                "properties": props,
            }
            for key in ("zones", "identity"):
                if body.get(key):
                    vm[key] = copy.deepcopy(body[key])
            self.vms[name] = vm
            for ref in nic_refs:
                # ARM records the attachment on the NIC
                nic_props = self.nics[str(ref.get("id", "")).rsplit("/", 1)[-1]]["properties"]
                nic_props["virtualMachine"] = {"id": vm["id"]}
            error = (fault.code, fault.message) if fault is not None else None

            def finished() -> None:
                if name in self.vms:
                    self.vms[name]["properties"]["provisioningState"] = (
                        "Failed" if error else "Succeeded"
                    )

            answer = copy.deepcopy(vm)
        return self._begin(201, answer, error=error, on_done=finished)

    def _get_vm(self, req: FakeRequest) -> Response:
        with self.lock:
            vm = self.vms.get(req.match["name"])
            if vm is None:
                return arm_error(
                    404,
                    "ResourceNotFound",
                    f"The Resource 'Microsoft.Compute/virtualMachines/{req.match['name']}' "
                    f"under resource group '{req.match['rg']}' was not found.",
                )
            return 200, {}, copy.deepcopy(vm)

    def _delete_vm(self, req: FakeRequest) -> Response:
        name = req.match["name"]
        with self.lock:
            vm = self.vms.get(name)
            if vm is None:
                return 204, {}, None
            vm["properties"]["provisioningState"] = "Deleting"

            def gone() -> None:
                removed = self.vms.pop(name, None)
                if removed is None:
                    return
                for key in [k for k in self.extensions if k[0] == name]:
                    del self.extensions[key]
                refs = removed["properties"].get("networkProfile", {}).get("networkInterfaces", [])
                for ref in refs:
                    nic_name = str(ref.get("id", "")).rsplit("/", 1)[-1]
                    if (ref.get("properties") or {}).get("deleteOption") == "Delete":
                        self.nics.pop(nic_name, None)
                    elif nic_name in self.nics:
                        self.nics[nic_name]["properties"].pop("virtualMachine", None)

        return self._begin(202, None, on_done=gone)

    # ------------------------------------------------------------------ extensions

    def _put_extension(self, req: FakeRequest) -> Response:
        body = req.json or {}
        m = req.match
        key = (m["name"], m["ext"])
        with self.lock:
            if m["name"] not in self.vms:
                return arm_error(404, "ParentResourceNotFound", f"VM {m['name']} not found")
            fault = self._ext_faults.pop(0) if self._ext_faults else None
            if fault is not None and not fault[2]:
                return arm_error(409, fault[0], fault[1])
            ext = {
                "id": f"{self.vms[m['name']]['id']}/extensions/{m['ext']}",
                "name": m["ext"],
                "type": "Microsoft.Compute/virtualMachines/extensions",
                "location": body.get("location", ""),
                "tags": dict(body.get("tags") or {}),
                "properties": {
                    **copy.deepcopy(body.get("properties") or {}),
                    "provisioningState": "Creating",
                },
            }
            self.extensions[key] = ext
            error = (fault[0], fault[1]) if fault is not None else None

            def finished() -> None:
                if key in self.extensions:
                    self.extensions[key]["properties"]["provisioningState"] = (
                        "Failed" if error else "Succeeded"
                    )

            answer = copy.deepcopy(ext)
        return self._begin(201, answer, error=error, on_done=finished)

    def _get_extension(self, req: FakeRequest) -> Response:
        with self.lock:
            ext = self.extensions.get((req.match["name"], req.match["ext"]))
            if ext is None:
                return arm_error(404, "NotFound", f"extension {req.match['ext']} not found")
            return 200, {}, copy.deepcopy(ext)

    # ------------------------------------------------------------------ tag updates

    def _patch_tags(
        self, resource: dict[str, Any] | None, req: FakeRequest
    ) -> dict[str, Any] | None:
        """Apply a PATCH's ``tags`` (ARM replaces the whole tag set); None when missing."""
        if resource is None:
            return None
        body = req.json or {}
        if "tags" in body:
            resource["tags"] = dict(body.get("tags") or {})
        return copy.deepcopy(resource)

    def _patch_nic(self, req: FakeRequest) -> Response:
        with self.lock:
            nic = self._patch_tags(self.nics.get(req.match["name"]), req)
        if nic is None:
            return arm_error(404, "NotFound", f"network interface {req.match['name']} not found")
        return 200, {}, nic

    def _patch_vm(self, req: FakeRequest) -> Response:
        with self.lock:
            vm = self._patch_tags(self.vms.get(req.match["name"]), req)
            if vm is None:
                return arm_error(404, "ResourceNotFound", f"VM {req.match['name']} not found")
            return self._begin(200, vm)

    def _patch_extension(self, req: FakeRequest) -> Response:
        key = (req.match["name"], req.match["ext"])
        with self.lock:
            ext = self._patch_tags(self.extensions.get(key), req)
            if ext is None:
                return arm_error(404, "NotFound", f"extension {req.match['ext']} not found")
            return self._begin(200, ext)

    # ------------------------------------------------------------------ Resource Graph

    def _graph(self, req: FakeRequest) -> Response:
        body = req.json or {}
        try:
            predicate = _compile_query(str(body.get("query") or ""))
        except ValueError as e:
            return arm_error(400, "BadRequest", f"fake Resource Graph: {e}")
        subs = {s.lower() for s in body.get("subscriptions") or []}
        options = body.get("options") or {}
        with self.lock:
            rows = [
                _graph_row(r)
                for r in itertools.chain(self.vms.values(), self.nics.values())
                if (not subs or r["subscriptionId"].lower() in subs)
            ]
        rows = [r for r in rows if predicate(r)]
        rows.sort(key=lambda r: r["id"].lower())
        start = 0
        token = options.get("$skipToken")
        if token:
            try:
                start = int(base64.b64decode(token).decode())
            except ValueError:
                return arm_error(400, "BadRequest", "bad $skipToken")
        top = int(options.get("$top") or self.graph_page_size)
        page = rows[start : start + min(top, self.graph_page_size)]
        answer: dict[str, Any] = {
            "totalRecords": len(rows),
            "count": len(page),
            "resultTruncated": "false",
            "data": page,
            "facets": [],
        }
        if start + len(page) < len(rows):
            answer["$skipToken"] = base64.b64encode(str(start + len(page)).encode()).decode()
        return 200, {}, answer


def _graph_row(resource: Mapping[str, Any]) -> dict[str, Any]:
    """A resource as Resource Graph returns it: lower-case type and resource group."""
    row = copy.deepcopy(dict(resource))
    row["type"] = str(resource["type"]).lower()
    row["resourceGroup"] = str(resource["resourceGroup"]).lower()
    row.setdefault("tags", {})
    return row


_CLAUSE_EQ = re.compile(r"(?P<field>\w+)\s*(?P<op>==|=~)\s*'(?P<value>(?:[^'\\]|\\.)*)'")
_CLAUSE_HAS = re.compile(r"(?P<neg>not\s*\(\s*)?tags\s+has_cs\s+'(?P<value>(?:[^'\\]|\\.)*)'\s*\)?")


def _unquote(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def _compile_query(query: str) -> Callable[[Mapping[str, Any]], bool]:
    """A predicate for ``Resources | where ... | where ...``; ``ValueError`` for anything
    this tiny evaluator does not understand (so a query change is noticed)."""
    parts = [p.strip() for p in query.split("|")]
    if not parts or parts[0].lower() != "resources":
        raise ValueError(f"query must start with Resources: {query!r}")
    checks: list[Callable[[Mapping[str, Any]], bool]] = []
    for part in parts[1:]:
        if not part.startswith("where "):
            raise ValueError(f"unsupported operator {part!r}")
        clause = part[len("where ") :].strip()
        if m := _CLAUSE_EQ.fullmatch(clause):
            fld, op, value = m["field"], m["op"], _unquote(m["value"])
            if op == "==":
                checks.append(lambda r, f=fld, v=value: str(r.get(f, "")) == v)
            else:
                checks.append(lambda r, f=fld, v=value: str(r.get(f, "")).lower() == v.lower())
        elif m := _CLAUSE_HAS.fullmatch(clause):
            value, negate = _unquote(m["value"]), bool(m["neg"])

            def has(r: Mapping[str, Any], v: str = value, neg: bool = negate) -> bool:
                tags = r.get("tags") or {}
                found = any(v in k or v in str(val) for k, val in tags.items())
                return found != neg

            checks.append(has)
        else:
            raise ValueError(f"unsupported where clause {clause!r}")
    return lambda r: all(c(r) for c in checks)
