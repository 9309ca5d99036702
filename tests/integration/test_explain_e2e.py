"""``karpenter explain`` over a live kube-apiserver: with neither -f nor --from it reads the
cluster as ``karpenter snapshot`` does and answers from what it read."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from click.testing import CliRunner

import controlplane
from karpenter_core.cli import main as cli_main
from karpenter_core.kube.adapter import KubernetesClient

pytestmark = pytest.mark.controlplane


def test_explain_pod_reads_the_live_cluster(
    control_plane: controlplane.ControlPlane,
    kube: KubernetesClient,
    namespace: str,
    unique: Callable[[str], str],
) -> None:
    pool = unique("pool")
    kube.create(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": pool},
            "spec": {
                "template": {
                    "spec": {
                        "nodeClassRef": {
                            "group": "karpenter.kwok.sh",
                            "kind": "KWOKNodeClass",
                            "name": "default",
                        },
                        "requirements": [],
                        "taints": [{"key": "team", "value": "x", "effect": "NoSchedule"}],
                    }
                }
            },
        }
    )
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "waiting", "namespace": namespace},
            "spec": {"containers": [{"name": "c", "image": "registry.example/app:1"}]},
        }
    )
    result = CliRunner().invoke(
        cli_main,
        [
            "explain",
            "pod",
            f"{namespace}/waiting",
            "--kubeconfig",
            str(control_plane.kubeconfig),
            "-o",
            "json",
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["pod"] == f"{namespace}/waiting"
    ours = next(v for v in doc["nodePools"] if v["nodePool"] == pool)
    assert ours["reason"]["code"] == "taints"
    assert "team=x:NoSchedule" in ours["reason"]["message"]
    missing = CliRunner().invoke(
        cli_main,
        ["explain", "pod", f"{namespace}/nope", "--kubeconfig", str(control_plane.kubeconfig)],
    )
    assert missing.exit_code == 1
    assert f"pod {namespace}/nope is not in the input" in missing.stderr
