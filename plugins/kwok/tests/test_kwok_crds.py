"""The KWOKNodeClass CRD: package data of karpenter-kwok, the one source of the manifest.

The Helm chart carries a copy (``files/``, rendered when the chart selects KWOK); it must
be the same bytes, or ``helm install`` and ``karpenter crds | kubectl apply -f -`` would
install different schemas.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from karpenter_kwok import plugin
from karpenter_kwok.labels import KWOK_NODE_CLASS

from karpenter_core.plugins import cloud_provider_crds, node_classes_without_crd

CRD_FILE = "karpenter.kwok.sh_kwoknodeclasses.yaml"
CHART_COPY = Path(__file__).resolve().parents[3] / "charts" / "karpenter-core" / "files" / CRD_FILE


def test_the_provider_ships_its_crd_as_package_data() -> None:
    [spec] = plugin.karpenter_cloud_providers()
    assert [f.name for f in spec.crds] == [CRD_FILE]
    assert spec.crds[0].read_bytes() == (files("karpenter_kwok") / "crds" / CRD_FILE).read_bytes()


def test_the_charts_copy_is_identical_to_the_package_data() -> None:
    shipped = (files("karpenter_kwok") / "crds" / CRD_FILE).read_bytes()
    # When this fails, copy plugins/kwok/karpenter_kwok/crds/<file> over the chart's file.
    assert CHART_COPY.read_bytes() == shipped


def test_the_crd_is_valid_and_serves_the_nodeclass_the_provider_declares() -> None:
    [spec] = plugin.karpenter_cloud_providers()
    [crd] = cloud_provider_crds(spec)  # raises on anything that is not one valid CRD
    assert crd.name == "kwoknodeclasses.karpenter.kwok.sh"
    assert crd.manifest["spec"]["names"]["kind"] == KWOK_NODE_CLASS.kind
    assert node_classes_without_crd(spec, [crd]) == []
