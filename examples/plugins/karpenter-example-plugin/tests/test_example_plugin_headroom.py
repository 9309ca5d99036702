"""The headroom scorer: which type it prefers, and what ``karpenter schedule`` launches
with it installed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from example_plugin_support import annotated_nodepool
from karpenter_example_plugin.headroom import score_headroom
from karpenter_example_plugin.policy import CPU_HEADROOM_ANNOTATION, PolicyError

from karpenter_core.cli import main
from karpenter_core.plugin_api import InstanceType, NodePool, Requirements, ScoringRequest
from karpenter_core.testing import builders as b
from karpenter_core.testing import fakecatalog


def _pool(annotations: dict[str, str]) -> NodePool:
    return NodePool.from_dict(
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "p", "annotations": annotations},
        }
    )


def _request(
    annotations: dict[str, str], cpu_millis: int, types: list[InstanceType]
) -> ScoringRequest:
    return ScoringRequest(
        nodepool=_pool(annotations),
        instance_types=tuple(types),
        prices=tuple(0.0 for _ in types),
        requirements=Requirements(),
        requests={"cpu": cpu_millis},
    )


# allocatable CPU: 1.9, 3.9 and 7.9 cores (the kit's types reserve 100m)
TYPES = [fakecatalog.instance_type(f"it-{n}", cpu=n) for n in (2, 4, 8)]


def _ranked(scores: list[float]) -> list[str]:
    return [TYPES[i].name for i in sorted(range(len(scores)), key=scores.__getitem__)]


def test_the_snuggest_type_with_enough_headroom_comes_first() -> None:
    # 1.5 cores: it-2 leaves 21% free (>= the default 20), it-4 62%, it-8 81%
    assert _ranked(score_headroom(_request({}, 1500, TYPES))) == ["it-2", "it-4", "it-8"]
    # asking for 50% free rules it-2 out to the end
    wide = score_headroom(_request({CPU_HEADROOM_ANNOTATION: "50"}, 1500, TYPES))
    assert _ranked(wide) == ["it-4", "it-8", "it-2"]


@pytest.mark.parametrize("value", ["lots", "100", "-1"])
def test_an_unreadable_headroom_is_an_error_naming_the_annotation(value: str) -> None:
    with pytest.raises(PolicyError, match=CPU_HEADROOM_ANNOTATION):
        score_headroom(_request({CPU_HEADROOM_ANNOTATION: value}, 1000, TYPES))


ON_DEMAND_LINUX_AMD64 = [
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
]


def _launched(tmp_path: Path, annotations: dict[str, str]) -> tuple[str, str]:
    docs = [
        annotated_nodepool(annotations, name="general", requirements=ON_DEMAND_LINUX_AMD64),
        b.pod("web", cpu="3", memory="1Gi"),
    ]
    path = tmp_path / "in.yaml"
    path.write_text("\n---\n".join(json.dumps(d) for d in docs))
    result = CliRunner().invoke(
        main,
        ["schedule", "-f", str(path), "-o", "json", "-q"],
        env={"KARPENTER_PLUGINS": "kwok,example"},
    )
    assert result.exit_code == 0, result.output
    [claim] = json.loads(result.stdout)["nodeClaims"]
    return str(claim["instanceTypes"][0]), result.stderr


def test_karpenter_schedule_launches_a_roomier_type_with_the_plugin(
    installed: None, tmp_path: Path
) -> None:
    # 3 cores on kwok: c-4x (3.9 allocatable) is cheapest but leaves 23% free
    assert _launched(tmp_path, {})[0] == "c-4x-amd64-linux"
    annotations = {"karpenter.sh/instance-type-scorer": "headroom", CPU_HEADROOM_ANNOTATION: "50"}
    assert _launched(tmp_path, annotations)[0] == "c-8x-amd64-linux"


def test_a_bad_annotation_launches_by_price_with_a_warning(installed: None, tmp_path: Path) -> None:
    annotations = {"karpenter.sh/instance-type-scorer": "headroom", CPU_HEADROOM_ANNOTATION: "lots"}
    launched, stderr = _launched(tmp_path, annotations)
    assert launched == "c-4x-amd64-linux"
    assert "instance-type scorer 'headroom' failed (PolicyError" in stderr
