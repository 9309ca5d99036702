"""The GCP kubelet CSR approval controller (upstream ``pkg/controllers/csr``) on the in-memory
API server: which requests it approves (kubelet client requests of Karpenter-launched nodes),
which it leaves alone (other signers and usages, wrong subjects, unknown or other nodes,
decided requests, hostile ``spec.request`` values), and the condition it writes through the
``approval`` subresource.

The in-memory server has no ``approval`` subresource; :class:`ApprovalServer` adds one here
the way a real API server behaves (only ``status.conditions`` may change there)."""

from __future__ import annotations

import base64
from typing import Any, cast

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID
from karpenter_gcp.csr import (
    APPROVAL_MESSAGE,
    APPROVAL_REASON,
    CONTROLLER_NAME,
    CONTROLLER_SPEC,
    CSR_RESOURCE,
    KUBELET_CLIENT_SIGNER,
    KUBELET_SERVING_SIGNER,
    REQUEUE,
    RETRY_WINDOW,
    WATCHES,
    CSRApprovalReconciler,
    InvalidRequest,
    decide,
    matches_nodeclaim,
    node_name_of_request,
)

from karpenter_core.plugin_api import ApiError, format_time
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.context import ControllerContext
from karpenter_core.runtime.events import EventRecorder
from karpenter_core.runtime.reconciler import ObjectKey, Result
from karpenter_core.sim.apiserver import InMemoryApiServer

NODECLAIMS = ("karpenter.sh/v1", "NodeClaim")
CLIENT_USAGES = ["digital signature", "key encipherment", "client auth"]
BOOTSTRAP_USER = "kubelet-bootstrap"
_EC_KEY = ec.generate_private_key(ec.SECP256R1())


class ApprovalServer(InMemoryApiServer):
    """The in-memory server with the CSR ``approval`` subresource a real server has: a merge
    patch there may change ``status.conditions`` (and carry the resourceVersion) only.
    ``before_approval`` runs once before the next approval write (to race it). With
    ``approval=False`` it is the plain in-memory server (no such subresource)."""

    def __init__(self, clock: VirtualClock, *, approval: bool = True) -> None:
        super().__init__(clock)
        self.approval = approval
        self.approval_writes = 0
        self.before_approval: Any = None

    def patch(self, resource: Any, name: str, patch: Any, *args: Any, **kw: Any) -> Any:
        if kw.get("subresource") != "approval" or not self.approval:
            return super().patch(resource, name, patch, *args, **kw)
        if set(patch) - {"metadata", "status"} or set(patch.get("status", {})) - {"conditions"}:
            raise ApiError("approval writes conditions only", code=422)
        if set(patch.get("metadata", {})) - {"resourceVersion"}:
            raise ApiError("approval writes conditions only", code=422)
        hook, self.before_approval = self.before_approval, None
        if hook is not None:
            hook()
        self.approval_writes += 1
        return super().patch(resource, name, patch, *args, **{**kw, "subresource": "status"})


def request_pem(
    cn: str | None = "system:node:karpenter-nc-1",
    orgs: tuple[str, ...] = ("system:nodes",),
    *,
    dns: tuple[str, ...] = (),
    key: Any = None,
) -> bytes:
    """A signed PEM certificate request with this subject (and DNS names, if any)."""
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    if cn is not None:
        attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(attrs))
    if dns:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName(d) for d in dns]), critical=False
        )
    return builder.sign(key or _EC_KEY, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def csr_object(
    name: str = "csr-1",
    *,
    request: Any = None,
    signer: str = KUBELET_CLIENT_SIGNER,
    usages: Any = None,
    username: str = BOOTSTRAP_USER,
) -> dict[str, Any]:
    return {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": b64(request_pem()) if request is None else request,
            "signerName": signer,
            "usages": list(CLIENT_USAGES) if usages is None else usages,
            "username": username,
            "groups": ["system:bootstrappers", "system:authenticated"],
        },
    }


def nodeclaim(name: str = "nc-1", **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": name},
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.gcp", "kind": "GCENodeClass", "name": "d"}
        },
        "status": status,
    }


class Env:
    def __init__(self, *, approval: bool = True) -> None:
        self.clock = VirtualClock()
        self.server = ApprovalServer(self.clock, approval=approval)
        self.reconciler = CSRApprovalReconciler(self.server, self.clock)

    def add_nodeclaim(self, name: str = "nc-1", **status: Any) -> None:
        self.server.create(nodeclaim(name))
        if status:
            self.server.patch(NODECLAIMS, name, {"status": status}, subresource="status")

    def add_csr(self, name: str = "csr-1", *, conditions: Any = None, **kw: Any) -> dict[str, Any]:
        created = self.server.create(csr_object(name, **kw))
        if conditions is not None:
            created = self.server.patch(
                CSR_RESOURCE, name, {"status": {"conditions": conditions}}, subresource="status"
            )
        return created

    def reconcile(self, name: str = "csr-1") -> Result:
        return self.reconciler.reconcile(ObjectKey("", name))

    def conditions(self, name: str = "csr-1") -> list[dict[str, Any]]:
        return list(
            (self.server.get(CSR_RESOURCE, name).get("status") or {}).get("conditions") or []
        )


def test_approves_a_kubelet_client_request_for_a_karpenter_nodeclaims_instance() -> None:
    env = Env()
    env.add_nodeclaim("nc-1")
    env.add_csr()
    assert env.reconcile() == Result()
    assert env.conditions() == [
        {
            "type": "Approved",
            "status": "True",
            "reason": APPROVAL_REASON,
            "message": APPROVAL_MESSAGE,
            "lastUpdateTime": format_time(env.clock.now()),
            "lastTransitionTime": format_time(env.clock.now()),
        }
    ]
    assert env.server.approval_writes == 1


def test_upstream_reason_and_message() -> None:
    assert APPROVAL_REASON == "KarpenterAutoApprover"
    assert APPROVAL_MESSAGE == "Automatically approved by Karpenter CSR controller"


@pytest.mark.parametrize(
    "claim, status",
    [
        ("other-claim", {"providerID": "gce://proj/us-central1-a/karpenter-nc-1"}),
        ("other-claim", {"nodeName": "karpenter-nc-1"}),
    ],
)
def test_node_name_matched_through_provider_id_or_node_name(
    claim: str, status: dict[str, str]
) -> None:
    env = Env()
    env.add_nodeclaim(claim, **status)
    env.add_csr()
    env.reconcile()
    assert [c["type"] for c in env.conditions()] == ["Approved"]


@pytest.mark.parametrize(
    "usages",
    [
        ["digital signature", "client auth"],
        ["client auth", "key encipherment", "digital signature"],
    ],
)
def test_kubelet_client_usage_sets_are_approved_in_any_order(usages: list[str]) -> None:
    env = Env()
    env.add_nodeclaim()
    env.add_csr(usages=usages)
    env.reconcile()
    assert [c["type"] for c in env.conditions()] == ["Approved"]


def test_rsa_keyed_request_is_approved() -> None:
    env = Env()
    env.add_nodeclaim()
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    env.add_csr(request=b64(request_pem(key=key)))
    env.reconcile()
    assert [c["type"] for c in env.conditions()] == ["Approved"]


@pytest.mark.parametrize(
    "signer",
    [
        KUBELET_SERVING_SIGNER,
        "kubernetes.io/kube-apiserver-client",
        "kubernetes.io/legacy-unknown",
        "example.com/kube-apiserver-client-kubelet",
    ],
)
def test_other_signers_are_left_alone(signer: str) -> None:
    env = Env()
    env.add_nodeclaim()
    env.add_csr(signer=signer)
    assert env.reconcile() == Result()
    assert env.conditions() == []
    assert env.server.approval_writes == 0


def test_serving_request_for_a_karpenter_node_is_left_alone() -> None:
    env = Env()
    env.add_nodeclaim()
    env.add_csr(
        signer=KUBELET_SERVING_SIGNER,
        usages=["digital signature", "key encipherment", "server auth"],
        request=b64(request_pem(dns=("karpenter-nc-1",))),
        username="system:node:karpenter-nc-1",
    )
    assert env.reconcile() == Result()
    assert env.conditions() == []


@pytest.mark.parametrize(
    "usages",
    [
        ["digital signature", "key encipherment", "server auth"],
        ["digital signature", "key encipherment", "client auth", "server auth"],
        ["client auth"],
        [],
        "client auth",
        [1, 2],
    ],
)
def test_other_usages_are_left_alone(usages: Any) -> None:
    env = Env()
    env.add_nodeclaim()
    env.add_csr(usages=usages)
    assert env.reconcile() == Result()
    assert env.conditions() == []


@pytest.mark.parametrize(
    "pem",
    [
        request_pem(cn="karpenter-nc-1"),
        request_pem(cn="system:node:"),
        request_pem(cn=None),
        request_pem(orgs=()),
        request_pem(orgs=("system:masters",)),
        request_pem(orgs=("system:nodes", "system:masters")),
        request_pem(dns=("karpenter-nc-1",)),
    ],
    ids=["cn-no-prefix", "cn-empty-node", "no-cn", "no-org", "wrong-org", "extra-org", "san"],
)
def test_wrong_subjects_are_left_alone(pem: bytes) -> None:
    env = Env()
    env.add_nodeclaim()
    env.add_csr(request=b64(pem))
    assert env.reconcile() == Result()
    assert env.conditions() == []


def test_unknown_node_waits_for_its_nodeclaim_then_is_approved() -> None:
    env = Env()
    env.add_nodeclaim("someone-else", providerID="gce://p/z/karpenter-someone-else")
    env.add_csr()
    assert env.reconcile() == Result.after(REQUEUE)
    assert env.conditions() == []
    env.add_nodeclaim("nc-1")
    assert env.reconcile() == Result()
    assert [c["type"] for c in env.conditions()] == ["Approved"]


def test_unknown_node_stops_being_polled_after_the_retry_window() -> None:
    env = Env()
    env.add_csr()
    env.clock.advance(RETRY_WINDOW - 1)
    assert env.reconcile() == Result.after(REQUEUE)
    env.clock.advance(1)
    assert env.reconcile() == Result()
    assert env.conditions() == []


def test_a_node_asking_for_another_nodes_certificate_is_left_alone() -> None:
    env = Env()
    env.add_nodeclaim("nc-1")
    env.add_nodeclaim("nc-2")
    env.add_csr(username="system:node:karpenter-nc-2")
    assert env.reconcile() == Result()
    assert env.conditions() == []


def test_a_node_renewing_its_own_certificate_is_approved() -> None:
    env = Env()
    env.add_nodeclaim("nc-1", nodeName="karpenter-nc-1")
    env.add_csr(username="system:node:karpenter-nc-1")
    env.reconcile()
    assert [c["type"] for c in env.conditions()] == ["Approved"]


@pytest.mark.parametrize("decided", ["Approved", "Denied"])
def test_decided_requests_are_not_touched(decided: str) -> None:
    env = Env()
    env.add_nodeclaim()
    condition = {"type": decided, "status": "True", "reason": "Admin", "message": "by hand"}
    before = env.add_csr(conditions=[condition])
    assert env.reconcile() == Result()
    after = env.server.get(CSR_RESOURCE, "csr-1")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert env.conditions() == [condition]
    assert env.server.approval_writes == 0


def test_other_conditions_are_kept_beside_the_approval() -> None:
    env = Env()
    env.add_nodeclaim()
    other = {"type": "Example", "status": "True", "reason": "R", "message": "m"}
    env.add_csr(conditions=[other])
    env.reconcile()
    assert [c["type"] for c in env.conditions()] == ["Example", "Approved"]


def _bad_signature() -> str:
    der = bytearray(x509.load_pem_x509_csr(request_pem()).public_bytes(serialization.Encoding.DER))
    der[-1] ^= 0x01
    body = base64.encodebytes(bytes(der)).decode()
    pem = f"-----BEGIN CERTIFICATE REQUEST-----\n{body}-----END CERTIFICATE REQUEST-----\n"
    return b64(pem.encode())


HOSTILE: list[Any] = [
    "not base64 at all!",
    b64(b"definitely not PEM"),
    b64(b"-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"),
    b64(request_pem()[:100]),
    "",
    12345,
    {"pem": "x"},
    ["a"],
    _bad_signature(),
]


@pytest.mark.parametrize("request_value", HOSTILE)
def test_hostile_requests_are_left_alone_without_raising(request_value: Any) -> None:
    env = Env()
    env.add_nodeclaim()
    env.add_csr(request=request_value)
    assert env.reconcile() == Result()
    assert env.conditions() == []


@pytest.mark.parametrize("request_value", HOSTILE)
def test_node_name_of_request_raises_only_invalid_request(request_value: Any) -> None:
    with pytest.raises(InvalidRequest):
        node_name_of_request(request_value)


def test_node_name_of_request_reads_the_common_name() -> None:
    assert node_name_of_request(b64(request_pem(cn="system:node:abc"))) == "abc"
    assert node_name_of_request(request_pem(cn="system:node:def").decode()) == "def"


@pytest.mark.parametrize(
    "csr",
    [
        {},
        {"spec": None},
        {"spec": "x"},
        {"spec": {"signerName": KUBELET_CLIENT_SIGNER}},
        {"status": {"conditions": "x"}, "spec": {"signerName": KUBELET_CLIENT_SIGNER}},
        {"status": {"conditions": [None, 3]}, "spec": {"signerName": KUBELET_CLIENT_SIGNER}},
    ],
)
def test_decide_never_raises_on_malformed_objects(csr: dict[str, Any]) -> None:
    assert decide(csr, [nodeclaim()]).approve is False


def test_decide_skips_malformed_nodeclaims() -> None:
    csr = csr_object()
    claims: list[Any] = [None, {"metadata": None, "status": "x"}, {"status": {"providerID": 7}}]
    assert decide(csr, claims).approve is False
    assert decide(csr, [*claims, nodeclaim("nc-1")]).approve is True


def test_matches_nodeclaim_ignores_a_foreign_provider_id() -> None:
    claim = nodeclaim("x", providerID="aws:///us-east-1a/karpenter-nc-1")
    assert not matches_nodeclaim("karpenter-nc-1", claim)
    assert matches_nodeclaim("karpenter-x", claim)


def test_conflicting_write_is_retried_and_then_approved() -> None:
    env = Env()
    env.add_nodeclaim()
    env.add_csr()
    server = env.server
    server.before_approval = lambda: server.patch(
        CSR_RESOURCE, "csr-1", {"metadata": {"labels": {"touched": "yes"}}}
    )
    assert env.reconcile() == Result(requeue=True)
    assert env.conditions() == []
    assert env.reconcile() == Result()
    assert [c["type"] for c in env.conditions()] == ["Approved"]


def test_a_request_decided_before_the_write_is_not_approved_twice() -> None:
    env = Env()
    env.add_nodeclaim()
    env.add_csr()
    server = env.server
    denied = {"type": "Denied", "status": "True", "reason": "Admin", "message": "no"}
    server.before_approval = lambda: server.patch(
        CSR_RESOURCE, "csr-1", {"status": {"conditions": [denied]}}, subresource="status"
    )
    assert env.reconcile() == Result(requeue=True)
    assert env.reconcile() == Result()
    assert env.conditions() == [denied]


def test_deleted_request_is_nothing_to_do() -> None:
    assert Env().reconcile("gone") == Result()


def test_the_plain_in_memory_server_approves_through_its_approval_subresource() -> None:
    env = Env(approval=False)  # the core's InMemoryApiServer, no test double
    env.add_nodeclaim()
    env.add_csr()
    assert env.reconcile() == Result()
    assert [(c["type"], c["status"]) for c in env.conditions()] == [("Approved", "True")]


def test_watch_predicate_passes_only_undecided_kubelet_client_requests() -> None:
    (watch,) = WATCHES
    predicate = watch.predicate
    assert predicate is not None
    assert watch.resource == CSR_RESOURCE
    pending = csr_object()
    approved = {**pending, "status": {"conditions": [{"type": "Approved", "status": "True"}]}}
    assert predicate("ADDED", pending)
    assert predicate("MODIFIED", pending)
    assert not predicate("DELETED", pending)
    assert not predicate("MODIFIED", approved)
    assert not predicate("ADDED", csr_object(signer=KUBELET_SERVING_SIGNER))


def test_controller_spec_builds_the_reconciler_from_the_context() -> None:
    assert CONTROLLER_SPEC.name == CONTROLLER_NAME
    assert CONTROLLER_SPEC.cloud_provider == "gcp"
    assert CONTROLLER_SPEC.watches == WATCHES
    assert not CONTROLLER_SPEC.singleton
    clock = VirtualClock()
    server = ApprovalServer(clock)
    ctx = ControllerContext(
        kube=server, clock=clock, cloud_provider=cast(Any, None), recorder=EventRecorder(clock)
    )
    reconciler = CONTROLLER_SPEC.factory(ctx)
    assert isinstance(reconciler, CSRApprovalReconciler)
    server.create(nodeclaim())
    server.create(csr_object())
    assert reconciler.reconcile(ObjectKey("", "csr-1")) == Result()
    conditions = server.get(CSR_RESOURCE, "csr-1")["status"]["conditions"]
    assert [c["type"] for c in conditions] == ["Approved"]
