"""Approves the kubelet client certificate requests of the GCE instances Karpenter launched,
so they can join the cluster (upstream ``pkg/controllers/csr``).

Why it is needed: a GCE instance launched outside a GKE node pool bootstraps its kubelet
with a bootstrap credential, and the kubelet then asks for its own client certificate with a
CertificateSigningRequest for the ``kubernetes.io/kube-apiserver-client-kubelet`` signer.
GKE's own approver only approves the requests of instances in its node pools, so without
this controller a Karpenter node never registers.

What upstream approves: any CSR not already Approved or Denied whose signer is one of the
two kubelet signers and whose usages are exactly ``digital signature``, ``key
encipherment``, ``client auth`` (in that order). It checks neither the requester, nor the
request's subject, nor that the node is one Karpenter launched; it denies nothing and
writes ``Approved`` with reason ``KarpenterAutoApprover``. Serving CSRs carry ``server
auth``, so in practice upstream approves kubelet client requests only.

What this controller approves — the same requests, with the checks Kubernetes' own
kubelet-client validation applies (so we never approve something the signer would refuse
to sign or that names a node Karpenter does not own):

* ``spec.signerName`` is ``kubernetes.io/kube-apiserver-client-kubelet``; the serving
  signer is ignored (as upstream in practice, see above);
* the usages, as a set, are ``{digital signature, key encipherment, client auth}`` or
  ``{digital signature, client auth}`` (what a kubelet with an ECDSA key asks for);
  nothing else;
* ``spec.request`` is a PEM certificate request (base64 in the API object) with a valid
  self-signature, subject organisation exactly ``system:nodes``, one common name
  ``system:node:<name>`` with a non-empty name, and no subject alternative names;
* a requester who is a node (``system:node:*``) asks for itself only (a renewal);
* ``<name>`` is a Karpenter NodeClaim's node: the NodeClaim's ``status.nodeName``, the
  instance name of its ``gce://`` provider id, or ``karpenter-<nodeclaim>`` (the instance
  name the GCP provider gives every launch, known before the provider id is written).

Anything else is ignored, never denied: a denial is final, and another approver (GKE's,
an administrator) may own the request. A request that only lacks its NodeClaim is looked
at again every 30 seconds (upstream relists everything every 30 seconds), since the
NodeClaim may simply not have been read yet, for up to 15 minutes after its creation. Hostile or malformed input never raises.

The approval is written through the ``approval`` subresource (the only way a real API
server accepts an ``Approved`` condition) as a merge patch carrying the resourceVersion
read, so a request approved or denied meanwhile is not approved twice.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from attrs import frozen
from cryptography import x509
from cryptography.x509.oid import NameOID

from karpenter_core.plugin_api import (
    Clock,
    Conflict,
    ControllerContext,
    ControllerSpec,
    KubeClient,
    NotFound,
    ObjectKey,
    Reconciler,
    ResourceType,
    Result,
    Watch,
    format_time,
    register_resource,
)
from karpenter_gcp.instance import instance_name, parse_provider_id
from karpenter_gcp.provider import NAME

__all__ = [
    "APPROVAL_MESSAGE",
    "APPROVAL_REASON",
    "CONTROLLER_NAME",
    "CONTROLLER_SPEC",
    "CSR_RESOURCE",
    "KUBELET_CLIENT_SIGNER",
    "KUBELET_SERVING_SIGNER",
    "REQUEUE",
    "RETRY_WINDOW",
    "WATCHES",
    "CSRApprovalReconciler",
    "Decision",
    "InvalidRequest",
    "csr_approval_reconciler",
    "decide",
    "is_approved_or_denied",
    "matches_nodeclaim",
    "node_name_of_request",
]

log = logging.getLogger("karpenter.gcp.csr")

CONTROLLER_NAME = "gcp.csr.approval"
KUBELET_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
KUBELET_SERVING_SIGNER = "kubernetes.io/kubelet-serving"
APPROVAL_REASON = "KarpenterAutoApprover"
APPROVAL_MESSAGE = "Automatically approved by Karpenter CSR controller"
"""The reason and message of the ``Approved`` condition, as upstream writes them (users and
audits look for them)."""
REQUEUE = 30.0
"""How soon a well-formed request whose node has no NodeClaim yet is looked at again."""
RETRY_WINDOW = 900.0
"""How long after its creation such a request keeps being looked at: a Karpenter instance's
NodeClaim exists before the instance does, so a longer wait means the node is not
Karpenter's (a GKE node pool's, whose approver handles it) and polling it is only load."""
APPROVAL_SUBRESOURCE = "approval"

NODE_USER_PREFIX = "system:node:"
NODES_GROUP = "system:nodes"
_USAGES_RSA = frozenset({"digital signature", "key encipherment", "client auth"})
_USAGES_NO_RSA = frozenset({"digital signature", "client auth"})
_NODECLAIMS = ("karpenter.sh/v1", "NodeClaim")

CSR_RESOURCE: ResourceType = register_resource(
    ResourceType(
        group="certificates.k8s.io",
        version="v1",
        kind="CertificateSigningRequest",
        plural="certificatesigningrequests",
        namespaced=False,
        status_subresource=True,
        field_selectors=("spec.signerName",),
    )
)
"""CertificateSigningRequests as the kube clients know them (cluster-scoped; status and
approval subresources on a real server)."""


class InvalidRequest(ValueError):
    """``spec.request`` is not a kubelet client certificate request (one line why)."""


@frozen
class Decision:
    """Whether to approve one CSR, the node it names (``""`` when unknown) and why (for the
    log). ``retry``: the request is well formed and may be approved once its NodeClaim is
    seen."""

    approve: bool
    node_name: str
    why: str
    retry: bool = False


# ---------------------------------------------------------------------------- inspection


def is_approved_or_denied(csr: Mapping[str, Any]) -> bool:
    """Whether a CSR already carries an ``Approved`` or ``Denied`` condition (whatever its
    status): such a request is decided and never touched again."""
    status = csr.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    if not isinstance(conditions, list):
        return False
    return any(
        isinstance(c, Mapping) and c.get("type") in ("Approved", "Denied") for c in conditions
    )


def _decode_request(request: Any) -> bytes:
    """The PEM bytes of ``spec.request`` (base64 in JSON; raw PEM accepted too, as a client
    holding the decoded object would give it)."""
    if isinstance(request, bytes):
        raw = request
    elif isinstance(request, str):
        if "-----BEGIN" in request:
            return request.encode("utf-8", "replace")
        try:
            raw = base64.b64decode(request, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidRequest("spec.request is not base64") from None
    else:
        raise InvalidRequest("spec.request is missing or not a string")
    if not raw:
        raise InvalidRequest("spec.request is empty")
    return raw


def node_name_of_request(request: Any) -> str:
    """The node name a kubelet client certificate request is for (``<name>`` of the common
    name ``system:node:<name>``), after checking it as Kubernetes' kubelet-client validation
    does: a valid self-signed PEM request, organisation exactly ``system:nodes``, one common
    name with the node prefix, no subject alternative names. :class:`InvalidRequest`
    otherwise — never another exception, whatever the input."""
    pem = _decode_request(request)
    try:
        req = x509.load_pem_x509_csr(pem)
    except Exception:  # any malformed input: cryptography raises several types
        raise InvalidRequest("spec.request is not a PEM certificate request") from None
    try:
        if not req.is_signature_valid:
            raise InvalidRequest("the request's signature does not verify")
        orgs = [str(a.value) for a in req.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
        cns = [str(a.value) for a in req.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
        try:
            san = req.extensions.get_extension_for_class(x509.SubjectAlternativeName)
        except x509.ExtensionNotFound:
            san = None
    except InvalidRequest:
        raise
    except Exception:  # malformed subject or extensions
        raise InvalidRequest("the request's subject or extensions cannot be read") from None
    if orgs != [NODES_GROUP]:
        raise InvalidRequest(f"subject organisation is {orgs!r}, not [{NODES_GROUP!r}]")
    if len(cns) != 1 or not cns[0].startswith(NODE_USER_PREFIX):
        raise InvalidRequest(f"subject common name is {cns!r}, not one {NODE_USER_PREFIX}<name>")
    name = cns[0].removeprefix(NODE_USER_PREFIX)
    if not name:
        raise InvalidRequest("subject common name names no node")
    if san is not None and len(san.value) > 0:
        raise InvalidRequest("a kubelet client request carries no subject alternative names")
    return name


def matches_nodeclaim(node_name: str, nodeclaim: Mapping[str, Any]) -> bool:
    """Whether ``node_name`` is this NodeClaim's node: its ``status.nodeName``, the instance
    of its ``gce://`` provider id, or the instance name the GCP provider gives its launch
    (``karpenter-<nodeclaim>``), which the kubelet uses as its node name."""
    meta = nodeclaim.get("metadata")
    status = nodeclaim.get("status")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    status = status if isinstance(status, Mapping) else {}
    if isinstance(name, str) and name and node_name == instance_name(name):
        return True
    if status.get("nodeName") == node_name:
        return True
    pid = status.get("providerID")
    if isinstance(pid, str) and pid:
        try:
            return parse_provider_id(pid)[2] == node_name
        except ValueError:
            return False
    return False


def decide(csr: Mapping[str, Any], nodeclaims: Iterable[Mapping[str, Any]]) -> Decision:
    """Whether to approve ``csr`` given the cluster's NodeClaims (see the module docstring
    for the rules). Pure: reads nothing else and never raises on a malformed object."""
    if is_approved_or_denied(csr):
        return Decision(False, "", "already approved or denied")
    spec = csr.get("spec")
    if not isinstance(spec, Mapping):
        return Decision(False, "", "no spec")
    signer = spec.get("signerName")
    if signer != KUBELET_CLIENT_SIGNER:
        return Decision(False, "", f"signer {signer!r} is not {KUBELET_CLIENT_SIGNER}")
    usages = spec.get("usages")
    if not isinstance(usages, list) or not all(isinstance(u, str) for u in usages):
        return Decision(False, "", "usages are not a list of strings")
    if frozenset(usages) not in (_USAGES_RSA, _USAGES_NO_RSA):
        return Decision(False, "", f"usages {usages!r} are not a kubelet client's")
    try:
        node = node_name_of_request(spec.get("request"))
    except InvalidRequest as e:
        return Decision(False, "", str(e))
    username = spec.get("username")
    if (
        isinstance(username, str)
        and username.startswith(NODE_USER_PREFIX)
        and username != NODE_USER_PREFIX + node
    ):
        return Decision(False, node, f"node {username!r} asks for another node's certificate")
    for nc in nodeclaims:
        if isinstance(nc, Mapping) and matches_nodeclaim(node, nc):
            return Decision(True, node, f"node {node!r} is a Karpenter NodeClaim's")
    return Decision(False, node, f"no NodeClaim has node {node!r}", retry=True)


def _pending(event_type: str, obj: dict[str, Any]) -> bool:
    """Only undecided kubelet client requests are worth a reconcile."""
    spec = obj.get("spec")
    signer = spec.get("signerName") if isinstance(spec, Mapping) else None
    return (
        event_type != "DELETED"
        and signer == KUBELET_CLIENT_SIGNER
        and not (is_approved_or_denied(obj))
    )


WATCHES = (Watch(CSR_RESOURCE, predicate=_pending),)


# ---------------------------------------------------------------------------- controller


class CSRApprovalReconciler:
    """Approves one CSR at a time when :func:`decide` says so (see the module docstring)."""

    def __init__(
        self,
        kube: KubeClient,
        clock: Clock,
        *,
        approval_subresource: str = APPROVAL_SUBRESOURCE,
    ) -> None:
        """``approval_subresource``: where the ``Approved`` condition is written; a real API
        server accepts it only at ``approval`` (its ``status`` drops condition changes)."""
        self.kube = kube
        self.clock = clock
        self.approval_subresource = approval_subresource

    def reconcile(self, key: ObjectKey) -> Result:
        try:
            csr = self.kube.get(CSR_RESOURCE, key.name)
        except NotFound:
            return Result()
        if not _pending("MODIFIED", csr):
            return Result()
        nodeclaims = self.kube.list(_NODECLAIMS).items
        decision = decide(csr, nodeclaims)
        if not decision.approve:
            log.debug("gcp: not approving CSR %s: %s", key.name, decision.why)
            return Result.after(REQUEUE) if decision.retry and self._young(csr) else Result()
        return self._approve(csr, decision)

    def _young(self, csr: Mapping[str, Any]) -> bool:
        """Whether ``csr`` was created less than :data:`RETRY_WINDOW` ago (an unreadable
        creation time counts as young: the retry is cheap, a missed approval is not)."""
        meta = csr.get("metadata")
        created = meta.get("creationTimestamp") if isinstance(meta, Mapping) else None
        try:
            when = datetime.fromisoformat(str(created))
        except ValueError:
            return True
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return (self.clock.now() - when).total_seconds() < RETRY_WINDOW

    def _approve(self, csr: Mapping[str, Any], decision: Decision) -> Result:
        meta = csr.get("metadata") or {}
        name = str(meta.get("name") or "")
        status = csr.get("status")
        conditions = status.get("conditions") if isinstance(status, Mapping) else None
        kept = (
            [c for c in conditions if isinstance(c, Mapping)]
            if isinstance(conditions, list)
            else []
        )
        now = format_time(self.clock.now())
        approved = {
            "type": "Approved",
            "status": "True",
            "reason": APPROVAL_REASON,
            "message": APPROVAL_MESSAGE,
            "lastUpdateTime": now,
            "lastTransitionTime": now,
        }
        patch = {
            "metadata": {"resourceVersion": meta.get("resourceVersion")},
            "status": {"conditions": [*kept, approved]},
        }
        try:
            self.kube.patch(CSR_RESOURCE, name, patch, subresource=self.approval_subresource)
        except Conflict:
            return Result(requeue=True)
        except NotFound as e:
            log.info("gcp: could not approve CSR %s: %s", name, e)
            return Result()
        log.info(
            "gcp: approved CSR %s for node %s (requested by %s)",
            name,
            decision.node_name,
            (csr.get("spec") or {}).get("username", ""),
        )
        return Result()


def csr_approval_reconciler(ctx: ControllerContext) -> Reconciler:
    """The ``gcp.csr.approval`` controller's factory."""
    return CSRApprovalReconciler(ctx.kube, ctx.clock)


CONTROLLER_SPEC = ControllerSpec(
    CONTROLLER_NAME, csr_approval_reconciler, watches=WATCHES, cloud_provider=NAME
)
"""What ``karpenter_gcp.controllers`` registers for this controller."""
