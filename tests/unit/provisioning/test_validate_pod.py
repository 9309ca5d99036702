"""Pre-scheduling pod validation (upstream Provisioner.Validate)."""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.apis.objects import Pod
from karpenter_core.provisioning import KARPENTER_MANAGED_LABEL_DOES_NOT_EXIST, validate_pod
from karpenter_core.state.snapshot import ClusterSnapshot


def pod(**spec: Any) -> Pod:
    """A bare Pod with exactly ``spec``: not the kit's builder, whose defaults would be
    part of what these validation tests read."""
    spec.setdefault("containers", [{"name": "c"}])
    return Pod.from_dict({"metadata": {"name": "p"}, "spec": spec})


def required(*exprs: dict[str, Any], fields: bool = False) -> dict[str, Any]:
    term: dict[str, Any] = {"matchExpressions": list(exprs)}
    if fields:
        term["matchFields"] = [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


def test_plain_pod_is_valid() -> None:
    assert (
        validate_pod(
            pod(nodeSelector={"topology.kubernetes.io/zone": "z1", "team": "a"}), ClusterSnapshot()
        )
        is None
    )


def test_pod_refusing_karpenter_nodes_gets_the_special_message() -> None:
    p = pod(affinity=required({"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"}))
    assert validate_pod(p, ClusterSnapshot()) == KARPENTER_MANAGED_LABEL_DOES_NOT_EXIST


@pytest.mark.parametrize(
    ("p", "fragment"),
    [
        pytest.param(
            pod(nodeSelector={"kubernetes.io/hostname": "n1"}),
            "kubernetes.io/hostname",
            id="restricted-selector",
        ),
        pytest.param(
            pod(
                affinity=required({"key": "karpenter.sh/custom", "operator": "In", "values": ["x"]})
            ),
            "karpenter.sh/custom",
            id="restricted-domain-in-affinity",
        ),
        pytest.param(
            pod(affinity=required(fields=True)), "matchFields is not supported", id="match-fields"
        ),
        pytest.param(
            pod(affinity=required({"key": "zone", "operator": "Near", "values": ["x"]})),
            "Near",
            id="bad-operator",
        ),
        pytest.param(
            pod(volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "missing"}}]),
            "PersistentVolumeClaim default/missing not found",
            id="missing-pvc",
        ),
    ],
)
def test_invalid_pods_are_rejected_with_a_reason(p: Pod, fragment: str) -> None:
    err = validate_pod(p, ClusterSnapshot())
    assert err is not None and fragment in err
