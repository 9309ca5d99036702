"""The Helm chart carries a copy of the GCENodeClass CRD (``files/``, rendered when the
chart selects gcp); it must be byte-identical to the package data ``karpenter crds``
prints, so both install paths give users the same schema."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

import yaml

CRD_FILE = "karpenter.k8s.gcp_gcenodeclasses.yaml"
CHART = Path(__file__).resolve().parents[3] / "charts" / "karpenter-core"
CHART_COPY = CHART / "files" / CRD_FILE


def test_the_charts_copy_is_identical_to_the_package_data() -> None:
    shipped = (files("karpenter_gcp") / "crds" / CRD_FILE).read_bytes()
    # When this fails, copy plugins/gcp/karpenter_gcp/crds/<file> over the chart's file.
    assert CHART_COPY.read_bytes() == shipped


def test_the_chart_selects_the_copy_for_the_gcp_provider() -> None:
    """The nodeclass-crd template renders ``files/<nodeClassCRDs[cloudProvider.name]>``."""
    values = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    assert values["cloudProvider"]["nodeClassCRDs"]["gcp"] == CRD_FILE
    template = (CHART / "templates" / "nodeclass-crd.yaml").read_text(encoding="utf-8")
    assert "index .Values.cloudProvider.nodeClassCRDs .Values.cloudProvider.name" in template
