"""The KWOK provider adopting a cluster's existing Nodes and NodeClaims (a simulation
starting from a snapshot): provider ids become KWOK's, unknown types are counted."""

from __future__ import annotations

from typing import Any

from karpenter_kwok.provider import KwokCloudProvider

from karpenter_core.cloudprovider.protocol import AdoptsInstances


def _node(name: str, provider_id: str = "", itype: str = "c-4x-amd64-linux") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"node.kubernetes.io/instance-type": itype}},
        "spec": {"providerID": provider_id} if provider_id else {},
    }


def _claim(
    name: str, node: str, provider_id: str, itype: str = "c-4x-amd64-linux"
) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": name, "labels": {"node.kubernetes.io/instance-type": itype}},
        "status": {"providerID": provider_id, "nodeName": node},
    }


def test_kwok_adopts_instances() -> None:
    assert isinstance(KwokCloudProvider.from_settings({}), AdoptsInstances)


def test_a_foreign_instance_becomes_a_kwok_one_in_node_and_nodeclaim() -> None:
    provider = KwokCloudProvider.from_settings({})
    nodes = [_node("n1", "aws:///us-west-2a/i-1"), _node("system", "aws:///us-west-2a/i-9")]
    claims = [_claim("c1", "n1", "aws:///us-west-2a/i-1")]
    adoption = provider.adopt_instances(nodes, claims)
    n1, system = adoption.nodes
    assert n1["spec"]["providerID"] == "kwok://n1"
    assert adoption.nodeclaims[0]["status"]["providerID"] == "kwok://n1"
    # a node no NodeClaim owns is not Karpenter's: its id stays, but its pods still run
    assert system["spec"]["providerID"] == "aws:///us-west-2a/i-9"
    for n in adoption.nodes:
        assert n["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    assert adoption.unknown_instance_types == {}
    assert nodes[0]["spec"]["providerID"] == "aws:///us-west-2a/i-1"  # inputs untouched


def test_kwok_instances_keep_their_ids_and_unknown_types_are_counted() -> None:
    provider = KwokCloudProvider.from_settings({})
    nodes = [_node("kwok-a", "kwok://kwok-a"), _node("n2", "gce://p/z/n2", "m5.large")]
    claims = [
        _claim("a", "kwok-a", "kwok://kwok-a"),
        _claim("b", "n2", "gce://p/z/n2", "m5.large"),
        _claim("c", "", ""),  # not launched yet: nothing to adopt
    ]
    adoption = provider.adopt_instances(nodes, claims)
    assert [n["spec"]["providerID"] for n in adoption.nodes] == ["kwok://kwok-a", "kwok://n2"]
    assert [c["status"]["providerID"] for c in adoption.nodeclaims] == [
        "kwok://kwok-a",
        "kwok://n2",
        "",
    ]
    assert adoption.unknown_instance_types == {"m5.large": 1}
