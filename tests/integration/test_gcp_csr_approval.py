"""gcp.csr.approval on the real API server: a kubelet client CSR for a node Karpenter
launched is approved through the ``approval`` subresource (a PATCH the real server must
accept), and the server's certificate controller would then sign it; a CSR for a node no
NodeClaim owns stays pending."""

from __future__ import annotations

import base64
import contextlib
import functools
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from serve_harness import wait_for

from karpenter_core.cli import main as cli_main
from karpenter_core.kube.adapter import KubernetesClient
from karpenter_core.kube.client import AlreadyExists, ApiError
from karpenter_core.runtime.clock import WallClock
from karpenter_core.runtime.reconciler import ObjectKey

pytestmark = [pytest.mark.controlplane]

karpenter_gcp = pytest.importorskip("karpenter_gcp")

from karpenter_gcp.csr import CSR_RESOURCE, KUBELET_CLIENT_SIGNER, CSRApprovalReconciler  # noqa: E402

NODECLAIMS = ("karpenter.sh/v1", "NodeClaim")


def _established(kube: KubernetesClient, name: str) -> bool:
    crd = kube.get("customresourcedefinitions", name)
    return any(
        c.get("type") == "Established" and c.get("status") == "True"
        for c in (crd.get("status") or {}).get("conditions") or []
    )


@pytest.fixture
def crds(kube: KubernetesClient) -> KubernetesClient:
    result = CliRunner().invoke(cli_main, ["crds", "--cloud-provider", "gcp"])
    assert result.exit_code == 0, result.output
    for crd in (d for d in yaml.safe_load_all(result.stdout) if d):
        with contextlib.suppress(AlreadyExists):
            kube.create(crd)
        name = crd["metadata"]["name"]
        wait_for(functools.partial(_established, kube, name), f"the CRD {name}")
    return kube


def _request(node: str) -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
            x509.NameAttribute(NameOID.COMMON_NAME, f"system:node:{node}"),
        ]
    )
    csr = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256())
    return base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode()


def _csr(name: str, node: str) -> dict[str, Any]:
    return {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": _request(node),
            "signerName": KUBELET_CLIENT_SIGNER,
            "usages": ["digital signature", "client auth"],
        },
    }


@pytest.fixture
def names(unique: Any, crds: KubernetesClient) -> Iterator[tuple[str, str, str]]:
    claim, csr, stray = unique("nc"), unique("csr"), unique("csr")
    yield claim, csr, stray
    for resource, name in ((NODECLAIMS, claim), (CSR_RESOURCE, csr), (CSR_RESOURCE, stray)):
        with contextlib.suppress(ApiError):
            crds.delete(resource, name)


def _conditions(kube: KubernetesClient, name: str) -> list[tuple[str, str]]:
    obj = kube.get(CSR_RESOURCE, name)
    return [(c["type"], c["status"]) for c in (obj.get("status") or {}).get("conditions") or []]


def test_a_karpenter_nodes_kubelet_csr_is_approved_on_the_real_server(
    crds: KubernetesClient, names: tuple[str, str, str]
) -> None:
    kube = crds
    claim, csr, stray = names
    kube.create(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {"name": claim},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.gcp", "kind": "GCENodeClass", "name": "d"},
                "requirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
                ],
            },
        }
    )
    kube.create(_csr(csr, f"karpenter-{claim}"))
    kube.create(_csr(stray, "someone-else"))
    reconciler = CSRApprovalReconciler(kube, WallClock())
    reconciler.reconcile(ObjectKey("", csr))
    reconciler.reconcile(ObjectKey("", stray))
    assert _conditions(kube, csr) == [("Approved", "True")]
    assert _conditions(kube, stray) == []
