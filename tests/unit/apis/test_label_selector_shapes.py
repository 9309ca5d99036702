"""A label selector of the wrong shape selects nothing instead of raising."""

from __future__ import annotations

from typing import Any

import pytest

from karpenter_core.apis.objects import label_selector_matches


@pytest.mark.parametrize(
    "selector",
    [
        "app=web",
        {"matchLabels": True},
        {"matchLabels": ["app"]},
        {"matchExpressions": 5},
        {"matchExpressions": ["app In web"]},
    ],
)
def test_malformed_selector_matches_nothing(selector: Any) -> None:
    assert label_selector_matches(selector, {"app": "web"}) is False


def test_well_formed_selector_still_matches() -> None:
    selector = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}],
    }
    assert label_selector_matches(selector, {"app": "web", "tier": "front"}) is True
