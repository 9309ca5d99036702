"""The Helm chart carries a copy of the AKSNodeClass CRD (``files/``, rendered when the
chart selects azure); it must be byte-identical to the package data ``karpenter crds``
prints, so both install paths give users the same schema."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

CRD_FILE = "karpenter.azure.com_aksnodeclasses.yaml"
CHART_COPY = Path(__file__).resolve().parents[3] / "charts" / "karpenter-core" / "files" / CRD_FILE


def test_the_charts_copy_is_identical_to_the_package_data() -> None:
    shipped = (files("karpenter_azure") / "crds" / CRD_FILE).read_bytes()
    # When this fails, copy plugins/azure/karpenter_azure/crds/<file> over the chart's file.
    assert CHART_COPY.read_bytes() == shipped
