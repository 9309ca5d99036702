"""The AKSNodeClass drift hash: upstream's ``aksnodeclass_hash_test.go`` behaviours
(which fields change the hash, tags do not, equal specs hash equally) on our algorithm."""

from __future__ import annotations

from typing import Any

import pytest
from karpenter_azure.drift import (
    HASH_ANNOTATION,
    HASH_VERSION,
    HASH_VERSION_ANNOTATION,
    NODECLASS_DRIFT,
    hash_annotations,
    nodeclass_hash,
    static_drift,
)
from karpenter_azure.nodeclass import AKSNodeClass

BASE: dict[str, Any] = {
    "vnetSubnetID": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/a",
    "osDiskSizeGB": 30,
    "imageFamily": "Ubuntu2204",
    "tags": {"keyTag-1": "valueTag-1", "keyTag-2": "valueTag-2"},
}


def nc(spec: dict[str, Any]) -> AKSNodeClass:
    return AKSNodeClass(name="x", generation=1, spec=spec, annotations={})


def h(spec: dict[str, Any]) -> str:
    return nodeclass_hash(AKSNodeClass.from_dict({"spec": spec}))


def zone(name: str, **kw: Any) -> dict[str, Any]:
    return {"zone": name, **kw}


@pytest.mark.parametrize(
    "change",
    [
        {"vnetSubnetID": BASE["vnetSubnetID"].replace("subnets/a", "subnets/b")},
        {"osDiskSizeGB": 40},
        {"imageFamily": "AzureLinux"},
        {"kubelet": {"cpuManagerPolicy": "none"}},
        {"maxPods": 200},
        {"localDNS": {"mode": "Required"}},
        {"localDNS": {"vnetDNSOverrides": [zone("example.com", queryLogging="Log")]}},
        {"localDNS": {"kubeDNSOverrides": [zone("example.com", protocol="ForceTCP")]}},
        {"localDNS": {"vnetDNSOverrides": [zone("example.com", cacheDuration="2h0m0s")]}},
        {"localDNS": {"vnetDNSOverrides": [zone("example.com", serveStaleDuration="1h0m0s")]}},
        {"artifactStreaming": {"enabled": True}},
        {"security": {"encryptionAtHost": True}},
        {"fipsMode": "Disabled"},
    ],
)
def test_the_hash_changes_when_static_fields_are_updated(change: dict[str, Any]) -> None:
    """upstream: "should change hash when static fields are updated" (the model is built
    without validation here, as upstream's table builds partial structs)."""
    assert nodeclass_hash(nc({**BASE, **change})) != nodeclass_hash(nc(BASE))


def test_tags_do_not_change_the_hash() -> None:
    """upstream: "should not change hash when tags are re-ordered" / "...are changed"."""
    base = nodeclass_hash(nc(BASE))
    reordered = {**BASE, "tags": {"keyTag-2": "valueTag-2", "keyTag-1": "valueTag-1"}}
    assert nodeclass_hash(nc(reordered)) == base
    assert nodeclass_hash(nc({**BASE, "tags": {"other": "x"}})) == base


def test_equal_specs_hash_equally_and_zero_values_and_order_do_not_count() -> None:
    """upstream: "should expect two AKSNodeClasses with the same spec to have the same
    hash"; hashstructure's IgnoreZeroValue and SlicesAsSets."""
    assert nodeclass_hash(nc(dict(BASE))) == nodeclass_hash(nc(dict(BASE)))
    assert nodeclass_hash(nc({**BASE, "localDNS": {"mode": ""}})) == nodeclass_hash(nc(BASE))
    a = {"localDNS": {"vnetDNSOverrides": [zone("a.com"), zone("b.com")]}}
    b = {"localDNS": {"vnetDNSOverrides": [zone("b.com"), zone("a.com")]}}
    assert nodeclass_hash(nc({**BASE, **a})) == nodeclass_hash(nc({**BASE, **b}))


def test_spelling_out_a_default_does_not_drift() -> None:
    assert h({}) == h({"imageFamily": "Ubuntu", "osDiskSizeGB": 128})
    assert h({}) != h({"osDiskSizeGB": 129})


def test_hash_annotations_and_static_drift() -> None:
    """upstream's NodeClassDrift: compared only for the same hash version."""
    current = AKSNodeClass.from_dict({"spec": {"maxPods": 30}})
    ann = hash_annotations(current)
    assert ann == {HASH_ANNOTATION: nodeclass_hash(current), HASH_VERSION_ANNOTATION: HASH_VERSION}
    assert static_drift(ann, current) == ""
    old = AKSNodeClass.from_dict({"spec": {"maxPods": 40}})
    assert static_drift(hash_annotations(old), current) == NODECLASS_DRIFT
    assert static_drift({**hash_annotations(old), HASH_VERSION_ANNOTATION: "v3"}, current) == ""
    assert static_drift({}, current) == ""
