"""Every validation rule of spec apis-and-cloudprovider.md §2-§5, one row each.

Each row is a minimal object that breaks exactly one rule (or a near miss that must pass);
the rows follow the spec's tables in order, so a rule missing from ``validate`` shows up as
a failing row named for it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from karpenter_core.apis.validation import validate

Mutate = Callable[[dict[str, Any]], Any]

NODE_CLASS_REF = {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"}
ARCH = {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
NP: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "np"},
    "spec": {
        "template": {
            "metadata": {},
            "spec": {"nodeClassRef": NODE_CLASS_REF, "requirements": [ARCH]},
        }
    },
}
NC: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodeClaim",
    "metadata": {"name": "nc"},
    "spec": {"nodeClassRef": {"group": "g", "kind": "k", "name": "n"}, "requirements": []},
}
OV: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1alpha1",
    "kind": "NodeOverlay",
    "metadata": {"name": "o"},
    "spec": {"requirements": []},
}
CB: dict[str, Any] = {
    "apiVersion": "autoscaling.x-k8s.io/v1beta1",
    "kind": "CapacityBuffer",
    "metadata": {"name": "b"},
    "spec": {"podTemplateRef": {"name": "t"}, "replicas": 1},
}


def _with_spec(base: dict[str, Any], mutate: Mutate) -> dict[str, Any]:
    obj = copy.deepcopy(base)
    mutate(obj["spec"])
    return obj


def np(mutate: Mutate) -> dict[str, Any]:
    return _with_spec(NP, mutate)


def nc(mutate: Mutate) -> dict[str, Any]:
    return _with_spec(NC, mutate)


def ov(mutate: Mutate) -> dict[str, Any]:
    return _with_spec(OV, mutate)


def cb(mutate: Mutate) -> dict[str, Any]:
    return _with_spec(CB, mutate)


def req(r: dict[str, Any]) -> dict[str, Any]:
    return np(lambda s: s["template"]["spec"].__setitem__("requirements", [r]))


def lab(key: str, value: str = "x") -> dict[str, Any]:
    return np(lambda s: s["template"]["metadata"].__setitem__("labels", {key: value}))


def tset(field: str, value: Any) -> dict[str, Any]:
    return np(lambda s: s["template"]["spec"].__setitem__(field, value))


def sset(field: str, value: Any) -> dict[str, Any]:
    return np(lambda s: s.__setitem__(field, value))


def dset(disruption: dict[str, Any]) -> dict[str, Any]:
    return np(lambda s: s.__setitem__("disruption", disruption))


CASES: dict[str, tuple[dict[str, Any], bool]] = {
    "np valid": (NP, False),
    "label value >63": (lab("a", "x" * 64), True),
    "label value pattern": (lab("a", "-bad"), True),
    ">100 labels": (
        np(
            lambda s: s["template"]["metadata"].__setitem__(
                "labels", {f"k{i}": "v" for i in range(101)}
            )
        ),
        True,
    ),
    "label karpenter.sh domain": (lab("karpenter.sh/foo"), True),
    "label sub.karpenter.sh domain": (lab("x.karpenter.sh/foo"), True),
    "label capacity-type ok": (lab("karpenter.sh/capacity-type", "spot"), False),
    "label nodepool": (lab("karpenter.sh/nodepool"), True),
    "label hostname": (lab("kubernetes.io/hostname"), True),
    "taint no key": (tset("taints", [{"effect": "NoSchedule"}]), True),
    "taint bad key": (tset("taints", [{"key": "-a-", "effect": "NoSchedule"}]), True),
    "taint bad value": (
        tset("taints", [{"key": "a", "value": "-x-", "effect": "NoSchedule"}]),
        True,
    ),
    "taint bad effect": (tset("taints", [{"key": "a", "effect": "Nope"}]), True),
    "taint dup across lists": (
        np(
            lambda s: (
                s["template"]["spec"].__setitem__("taints", [{"key": "a", "effect": "NoSchedule"}]),
                s["template"]["spec"].__setitem__(
                    "startupTaints", [{"key": "a", "effect": "NoSchedule"}]
                ),
            )
        ),
        True,
    ),
    "no requirements": (np(lambda s: s["template"]["spec"].pop("requirements")), True),
    ">100 reqs": (
        tset("requirements", [{"key": f"k{i}", "operator": "Exists"} for i in range(101)]),
        True,
    ),
    "nodeClassRef missing": (np(lambda s: s["template"]["spec"].pop("nodeClassRef")), True),
    "nodeClassRef empty name": (
        tset("nodeClassRef", {"group": "g", "kind": "k", "name": ""}),
        True,
    ),
    "nodeClassRef group slash": (
        tset("nodeClassRef", {"group": "a/b", "kind": "k", "name": "n"}),
        True,
    ),
    "tgp bad": (tset("terminationGracePeriod", "Never"), True),
    "tgp ok": (tset("terminationGracePeriod", "1h30m"), False),
    "expireAfter bad": (tset("expireAfter", "1d"), True),
    "expireAfter Never": (tset("expireAfter", "Never"), False),
    "consolidateAfter bad": (dset({"consolidateAfter": "x"}), True),
    "policy bad": (dset({"consolidationPolicy": "Always"}), True),
    "policy Balanced": (dset({"consolidationPolicy": "Balanced"}), False),
    ">50 budgets": (dset({"budgets": [{"nodes": "1"}] * 51}), True),
    "schedule w/o duration": (dset({"budgets": [{"nodes": "1", "schedule": "@daily"}]}), True),
    "duration w/o schedule": (dset({"budgets": [{"nodes": "1", "duration": "1h"}]}), True),
    "budget nodes missing is defaulted": (dset({"budgets": [{}]}), False),
    "budget nodes 101%": (dset({"budgets": [{"nodes": "101%"}]}), True),
    "budget reasons bad": (dset({"budgets": [{"nodes": "1", "reasons": ["Expired"]}]}), True),
    "budget reasons dup (set)": (
        dset({"budgets": [{"nodes": "1", "reasons": ["Empty", "Empty"]}]}),
        True,
    ),
    "budget reasons >50": (dset({"budgets": [{"nodes": "1", "reasons": ["Empty"] * 51}]}), True),
    "budget schedule 5 fields": (
        dset({"budgets": [{"nodes": "1", "schedule": "0 9 * * 1-5", "duration": "8h"}]}),
        False,
    ),
    "budget schedule 6 fields": (
        dset({"budgets": [{"nodes": "1", "schedule": "0 0 9 * * 1", "duration": "8h"}]}),
        True,
    ),
    "budget duration 1h30m": (
        dset({"budgets": [{"nodes": "1", "schedule": "@daily", "duration": "1h30m"}]}),
        False,
    ),
    "budget duration 30s": (
        dset({"budgets": [{"nodes": "1", "schedule": "@daily", "duration": "30s"}]}),
        True,
    ),
    "limits nodes ok": (sset("limits", {"nodes": "10", "cpu": "100"}), False),
    "weight 0": (sset("weight", 0), True),
    "weight 101": (sset("weight", 101), True),
    "replicas -1": (sset("replicas", -1), True),
    "replicas with cpu limit": (
        np(lambda s: (s.__setitem__("replicas", 2), s.__setitem__("limits", {"cpu": "1"}))),
        True,
    ),
    "replicas with nodes limit": (
        np(lambda s: (s.__setitem__("replicas", 2), s.__setitem__("limits", {"nodes": "3"}))),
        False,
    ),
    "replicas with weight": (
        np(lambda s: (s.__setitem__("replicas", 2), s.__setitem__("weight", 3))),
        True,
    ),
    "req key >316": (req({"key": "a" * 317, "operator": "Exists"}), True),
    "req key not qualified": (req({"key": "a b", "operator": "Exists"}), True),
    "req key karpenter.sh": (req({"key": "karpenter.sh/foo", "operator": "Exists"}), True),
    "req key nodepool (np)": (
        req({"key": "karpenter.sh/nodepool", "operator": "In", "values": ["a"]}),
        True,
    ),
    "req key hostname": (
        req({"key": "kubernetes.io/hostname", "operator": "In", "values": ["a"]}),
        True,
    ),
    "req capacity-type ok": (
        req({"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}),
        False,
    ),
    "req op bad": (req({"key": "a", "operator": "in", "values": ["x"]}), True),
    "req value >63": (req({"key": "a", "operator": "In", "values": ["x" * 64]}), True),
    "req value pattern": (req({"key": "a", "operator": "In", "values": ["a b"]}), True),
    "minValues 0": (req({"key": "a", "operator": "In", "values": ["x"], "minValues": 0}), True),
    "minValues 51": (req({"key": "a", "operator": "Exists", "minValues": 51}), True),
    "In no values": (req({"key": "a", "operator": "In", "values": []}), True),
    "Gt 2 values": (req({"key": "a", "operator": "Gt", "values": ["1", "2"]}), True),
    "Gt negative": (req({"key": "a", "operator": "Gt", "values": ["-1"]}), True),
    "Gte non-int": (req({"key": "a", "operator": "Gte", "values": ["x"]}), True),
    "Lte ok": (req({"key": "a", "operator": "Lte", "values": ["5"]}), False),
    "Gt int64 overflow": (
        req({"key": "a", "operator": "Gt", "values": ["99999999999999999999999"]}),
        True,
    ),
    "In minValues > values": (
        req({"key": "a", "operator": "In", "values": ["x"], "minValues": 2}),
        True,
    ),
    "restricted label (runtime)": (
        req({"key": "karpenter.sh/registered", "operator": "Exists"}),
        True,
    ),
    "well-known no known value": (
        req({"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["cheap"]}),
        True,
    ),
    "well-known mix known/unknown ok": (
        req({"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "cheap"]}),
        False,
    ),
    "nc valid": (NC, False),
    "nc nodepool req ok": (
        nc(
            lambda s: s.__setitem__(
                "requirements",
                [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["a"]}],
            )
        ),
        False,
    ),
    "nc hostname req": (
        nc(
            lambda s: s.__setitem__(
                "requirements",
                [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["a"]}],
            )
        ),
        True,
    ),
    "nc no requirements": (nc(lambda s: s.pop("requirements")), True),
    "nc no nodeClassRef": (nc(lambda s: s.pop("nodeClassRef")), True),
    "ov valid": (OV, False),
    "ov no requirements": (ov(lambda s: s.pop("requirements")), True),
    "ov minValues": (
        ov(
            lambda s: s.__setitem__(
                "requirements", [{"key": "a", "operator": "In", "values": ["x"], "minValues": 1}]
            )
        ),
        True,
    ),
    "ov NotIn no values": (
        ov(
            lambda s: s.__setitem__(
                "requirements", [{"key": "a", "operator": "NotIn", "values": []}]
            )
        ),
        True,
    ),
    "ov nodepool key ok": (
        ov(
            lambda s: s.__setitem__(
                "requirements",
                [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["a"]}],
            )
        ),
        False,
    ),
    "ov hostname key": (
        ov(
            lambda s: s.__setitem__(
                "requirements",
                [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["a"]}],
            )
        ),
        True,
    ),
    "ov price bad": (ov(lambda s: s.__setitem__("price", "-1")), True),
    "ov price and adj": (
        ov(lambda s: (s.__setitem__("price", "1"), s.__setitem__("priceAdjustment", "+1"))),
        True,
    ),
    "ov adj -101%": (ov(lambda s: s.__setitem__("priceAdjustment", "-101%")), True),
    "ov adj -100% ok": (ov(lambda s: s.__setitem__("priceAdjustment", "-100%")), False),
    "ov capacity cpu": (ov(lambda s: s.__setitem__("capacity", {"cpu": "1"})), True),
    "ov capacity ext ok": (
        ov(lambda s: s.__setitem__("capacity", {"example.com/gpu": "1"})),
        False,
    ),
    "ov weight 0": (ov(lambda s: s.__setitem__("weight", 0)), True),
    "ov weight 10001": (ov(lambda s: s.__setitem__("weight", 10001)), True),
    "ov weight 10000 ok": (ov(lambda s: s.__setitem__("weight", 10000)), False),
    "cb valid": (CB, False),
    "cb template w/o replicas/limits": (cb(lambda s: s.pop("replicas")), True),
    "cb template and scalable": (
        cb(
            lambda s: s.__setitem__(
                "scalableRef", {"apiGroup": "apps", "kind": "Deployment", "name": "d"}
            )
        ),
        True,
    ),
    "cb scalable kind bad": (
        cb(
            lambda s: (
                s.pop("podTemplateRef"),
                s.__setitem__("scalableRef", {"apiGroup": "apps", "kind": "Job", "name": "d"}),
            )
        ),
        True,
    ),
    "cb replicas -1": (cb(lambda s: s.__setitem__("replicas", -1)), True),
    "cb percentage -1": (
        cb(
            lambda s: (
                s.pop("podTemplateRef"),
                s.__setitem__(
                    "scalableRef", {"apiGroup": "apps", "kind": "Deployment", "name": "d"}
                ),
                s.__setitem__("percentage", -1),
            )
        ),
        True,
    ),
}


@pytest.mark.parametrize(("obj", "rejected"), list(CASES.values()), ids=list(CASES))
def test_spec_rule(obj: dict[str, Any], rejected: bool) -> None:
    errors = validate(obj)
    assert bool(errors) is rejected, [str(e) for e in errors]
