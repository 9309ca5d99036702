"""Scheduling cases for the differential test of the simulated kube-scheduler
(``test_contract_kubescheduler.py``): nodes, namespaces and an ordered list of pods, the same
for the real kube-scheduler and the simulated one.

Cases come from a seeded :class:`random.Random` (the same seed always gives the same case),
plus a few written by hand for rules a random draw reaches only rarely. A generated case
has 3-6 nodes with zones, tiers, integer-ish ``gen`` labels, taints, cordons and small
allocatable amounts (so pods run out of room), and 5-10 pods drawn from two or three
templates (so replicas of one app meet their own spread and anti-affinity rules), each
template mixing resources (containers, init containers, sidecars, pod-level requests, an
extended resource), host ports, ``nodeSelector``, required node affinity (every operator,
``matchFields``), tolerations, required pod affinity and anti-affinity (own namespace,
listed namespaces, ``namespaceSelector``, ``matchLabelKeys``), topology spread
(``maxSkew``, ``minDomains``, both inclusion policies, ``matchLabelKeys``, ``ScheduleAnyway``
alongside) and scheduling gates (lifted a few pods later). Between pods, a node may
change (a zone or tier label, taints, a cordon) and an earlier pod may be deleted, at once
or gracefully (a bound pod then stays, terminating: no kubelet ends it).

Every pod has the same priority: preemption, which the simulation does not model, can then
never pick a victim (see the test's module docstring).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
DONGLE = "example.com/dongle"
GATE = "example.com/hold"
ZONES = ("z1", "z2", "z3")
APPS = ("web", "db", "cache")

# At most one taint per (key, effect): the API server refuses duplicates.
_TAINT_CHOICES: tuple[tuple[dict[str, str], ...], ...] = (
    (
        {"key": "dedicated", "value": "infra", "effect": "NoSchedule"},
        {"key": "dedicated", "value": "batch", "effect": "NoSchedule"},
    ),
    ({"key": "spot", "value": "true", "effect": "NoExecute"},),
    ({"key": "gpu", "effect": "NoSchedule"},),
    ({"key": "maint", "effect": "PreferNoSchedule"},),
)

_TOLERATIONS: tuple[dict[str, str], ...] = (
    {"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"},
    {"key": "dedicated", "operator": "Exists"},
    {"key": "dedicated", "operator": "Equal", "value": "batch"},
    {"key": "spot", "operator": "Equal", "value": "true", "effect": "NoExecute"},
    {"key": "spot", "operator": "Exists", "effect": "NoSchedule"},  # wrong effect
    {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"},
    {"operator": "Exists"},  # tolerates everything
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)


@dataclass(frozen=True)
class PodStep:
    """Create this pod and let both schedulers settle it."""

    pod: dict[str, Any]

    @property
    def key(self) -> tuple[str, str]:
        meta = self.pod["metadata"]
        return meta["namespace"], meta["name"]


@dataclass(frozen=True)
class UngateStep:
    """Remove the scheduling gates of an earlier pod and let both schedulers settle it."""

    namespace: str
    name: str


@dataclass(frozen=True)
class NodeStep:
    """Change a node (a merge patch: labels, taints, cordon) mid-case."""

    name: str
    patch: dict[str, Any]


@dataclass(frozen=True)
class DeleteStep:
    """Delete an earlier pod: with a grace period a bound pod stays, terminating (no
    kubelet ends it); with 0 it goes at once."""

    namespace: str
    name: str
    grace: int


Step = PodStep | UngateStep | NodeStep | DeleteStep


@dataclass(frozen=True)
class Case:
    name: str
    namespaces: tuple[dict[str, Any], ...]
    nodes: tuple[dict[str, Any], ...]
    steps: tuple[Step, ...]


# --------------------------------------------------------------------------- builders


def namespace(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def node(
    name: str,
    labels: dict[str, str] | None = None,
    *,
    cpu: str = "2",
    memory: str = "4Gi",
    pods: str = "110",
    extra: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
) -> dict[str, Any]:
    """A Ready node (no kubelet backs it: the status is written as a kubelet would)."""
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    spec: dict[str, Any] = {"taints": list(taints or [])}
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME: name, **(labels or {})}},
        "spec": spec,
        "status": {
            "capacity": dict(allocatable),
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def pod(
    name: str,
    ns: str,
    labels: dict[str, str] | None = None,
    *,
    cpu: str | None = "100m",
    memory: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    container: dict[str, Any] = {"name": "c", "image": "registry.k8s.io/pause:3.10"}
    if requests:
        container["resources"] = {"requests": requests}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": dict(labels or {})},
        "spec": {"containers": [container], "terminationGracePeriodSeconds": 0, **spec},
    }


def required_node_affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
        }
    }


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


# --------------------------------------------------------------------------- generation


def _node_for(rng: random.Random, name: str) -> dict[str, Any]:
    labels: dict[str, str] = {}
    if rng.random() < 0.9:
        labels[ZONE] = rng.choice(ZONES)
    if rng.random() < 0.7:
        labels["tier"] = rng.choice("abc")
    draw = rng.random()
    if draw < 0.6:
        labels["gen"] = str(rng.randint(1, 6))
    elif draw < 0.72:
        labels["gen"] = rng.choice(["x1", "04"])  # not an integer; a leading zero
    if rng.random() < 0.4:
        labels["disk"] = "ssd"
    taints = [rng.choice(choices) for choices in _TAINT_CHOICES if rng.random() < 0.09]
    extra = {}
    if rng.random() < 0.3:
        extra[DONGLE] = rng.choice(["1", "2"])
    if rng.random() < 0.7:
        extra["ephemeral-storage"] = rng.choice(["1Gi", "10Gi"])
    return node(
        name,
        labels,
        cpu=rng.choice(["1", "2", "2", "4"]),
        memory=rng.choice(["1Gi", "2Gi", "4Gi"]),
        pods=rng.choice(["2", "3", "110", "110"]),
        extra=extra,
        taints=taints,
        unschedulable=rng.random() < 0.05,
    )


def _expression(rng: random.Random) -> dict[str, Any]:
    key = rng.choice(["tier", "gen", "disk", ZONE])
    operator = rng.choice(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])
    if operator in ("Exists", "DoesNotExist"):
        return expr(key, operator)
    if operator in ("Gt", "Lt"):
        return expr("gen", operator, str(rng.randint(0, 6)))
    pool = {"tier": "abc", "gen": "123456", "disk": ["ssd", "hdd"], ZONE: ZONES}[key]
    return expr(key, operator, *sorted(set(rng.sample(list(pool), rng.randint(1, 2)))))


def _node_affinity(rng: random.Random, node_names: list[str]) -> dict[str, Any]:
    terms = []
    for _ in range(rng.choice([1, 1, 2])):
        term: dict[str, Any] = {}
        if rng.random() < 0.85:
            term["matchExpressions"] = [_expression(rng) for _ in range(rng.choice([1, 1, 2]))]
        if rng.random() < 0.15 or not term:
            term["matchFields"] = [
                {
                    "key": "metadata.name",
                    "operator": rng.choice(["In", "In", "NotIn"]),
                    "values": [rng.choice(node_names)],
                }
            ]
        terms.append(term)
    return required_node_affinity(*terms)


def _selector(rng: random.Random, app: str) -> dict[str, Any]:
    if rng.random() < 0.75:
        return {"matchLabels": {"app": app}}
    return {"matchExpressions": [{"key": "app", "operator": "In", "values": [app]}]}


def _namespaces_of_term(rng: random.Random, namespaces: list[str]) -> dict[str, Any]:
    draw = rng.random()
    if draw < 0.5:
        return {}
    if draw < 0.62:
        return {"namespaces": [rng.choice(namespaces)]}
    if draw < 0.7:
        return {"namespaces": list(namespaces)}
    if draw < 0.8:
        return {"namespaceSelector": {"matchLabels": {"team": "b"}}}
    if draw < 0.9:
        return {"namespaceSelector": {}}
    return {"namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "Exists"}]}}


def _pod_term(rng: random.Random, app: str, namespaces: list[str]) -> dict[str, Any]:
    term: dict[str, Any] = {
        "topologyKey": rng.choice([HOSTNAME, HOSTNAME, ZONE]),
        "labelSelector": _selector(rng, app),
        **_namespaces_of_term(rng, namespaces),
    }
    if rng.random() < 0.15:
        term["matchLabelKeys"] = ["ver"]
    return term


def _spread(rng: random.Random, app: str) -> dict[str, Any]:
    hard = rng.random() < 0.85
    constraint: dict[str, Any] = {
        "maxSkew": rng.choice([1, 1, 2]),
        "topologyKey": rng.choice([ZONE, ZONE, HOSTNAME]),
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
        "labelSelector": {} if rng.random() < 0.05 else _selector(rng, app),
    }
    if hard and rng.random() < 0.25:
        constraint["minDomains"] = rng.randint(2, 4)
    if rng.random() < 0.3:
        constraint["nodeAffinityPolicy"] = rng.choice(["Honor", "Ignore"])
    if rng.random() < 0.3:
        constraint["nodeTaintsPolicy"] = rng.choice(["Honor", "Ignore"])
    if rng.random() < 0.15:
        constraint["matchLabelKeys"] = ["ver"]
    return constraint


def _requests(rng: random.Random) -> dict[str, str]:
    out = {}
    cpu = rng.choice([None, "100m", "500m", "1", "1", "1500m"])
    if cpu:
        out["cpu"] = cpu
    memory = rng.choice([None, None, "256Mi", "1Gi", "3Gi"])
    if memory:
        out["memory"] = memory
    if rng.random() < 0.1:
        out[DONGLE] = "1"
    if rng.random() < 0.05:
        out["ephemeral-storage"] = "2Gi"
    return out


def _template(
    rng: random.Random, app: str, apps: list[str], namespaces: list[str], node_names: list[str]
) -> dict[str, Any]:
    """What the replicas of one app share: namespace, labels and the scheduling spec."""
    requests = _requests(rng)
    container: dict[str, Any] = {"name": "c", "image": "registry.k8s.io/pause:3.10"}
    if requests:
        resources: dict[str, Any] = {"requests": requests}
        if DONGLE in requests:  # an extended resource needs its limit equal to its request
            resources["limits"] = {DONGLE: requests[DONGLE]}
        container["resources"] = resources
    if rng.random() < 0.1:
        port: dict[str, Any] = {"containerPort": 8080, "hostPort": 8080}
        port["protocol"] = rng.choice(["TCP", "TCP", "UDP"])
        if rng.random() < 0.3:
            port["hostIP"] = rng.choice(["127.0.0.1", "0.0.0.0"])
        container["ports"] = [port]
    spec: dict[str, Any] = {"containers": [container], "terminationGracePeriodSeconds": 0}
    draw = rng.random()
    if draw < 0.1:  # an init container asking for more than the app
        spec["initContainers"] = [
            {
                "name": "init",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": rng.choice(["1", "1500m", "2"])}},
            }
        ]
    elif draw < 0.15:  # a sidecar: its requests add to the app's
        spec["initContainers"] = [
            {
                "name": "sidecar",
                "image": "registry.k8s.io/pause:3.10",
                "restartPolicy": "Always",
                "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}},
            }
        ]
    elif draw < 0.2:  # pod-level requests replace the containers' cpu and memory
        spec["resources"] = {"requests": {"cpu": rng.choice(["1500m", "2"])}}
    if rng.random() < 0.15:
        selector = {}
        for key, values in (("tier", "abc"), ("disk", ["ssd"]), (ZONE, ZONES)):
            if rng.random() < 0.5:
                selector[key] = rng.choice(list(values))
        if selector:
            spec["nodeSelector"] = selector
    if rng.random() < 0.25:
        spec["affinity"] = _node_affinity(rng, node_names)
    if rng.random() < 0.35:
        spec["tolerations"] = rng.sample(list(_TOLERATIONS), rng.choice([1, 1, 2]))
    affinity = spec.setdefault("affinity", {})
    if rng.random() < 0.4:
        terms = [_pod_term(rng, rng.choice([app, app, *apps]), namespaces)]
        if rng.random() < 0.15:
            terms.append(_pod_term(rng, rng.choice(APPS), namespaces))
        affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": terms}
    if rng.random() < 0.2:
        terms = [_pod_term(rng, rng.choice(apps), namespaces)]
        if rng.random() < 0.15:
            terms.append(_pod_term(rng, rng.choice(APPS), namespaces))
        affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": terms}
    if not affinity:
        del spec["affinity"]
    if rng.random() < 0.55:
        spread = [_spread(rng, app)]
        if rng.random() < 0.2:
            second = _spread(rng, app)
            if second["topologyKey"] != spread[0]["topologyKey"]:
                spread.append(second)
        spec["topologySpreadConstraints"] = spread
    return {
        "namespace": namespaces[0] if rng.random() < 0.8 else namespaces[1],
        "app": app,
        "spec": spec,
        "gated": rng.random() < 0.1,
    }


def generated_case(seed: int, prefix: str) -> Case:
    """The case of ``seed``; ``prefix`` makes node and namespace names unique on a shared
    cluster (it changes names only)."""
    rng = random.Random(seed)
    namespaces = [f"{prefix}-a", f"{prefix}-b"]
    ns_objects = (
        namespace(namespaces[0], {"team": "a", "env": "prod"}),
        namespace(namespaces[1], {"team": "b"}),
    )
    node_names = [f"{prefix}-n{i}" for i in range(rng.randint(3, 6))]
    nodes = tuple(_node_for(rng, name) for name in node_names)
    apps = rng.sample(APPS, rng.choice([2, 3]))
    templates = [_template(rng, app, apps, namespaces, node_names) for app in apps]
    steps: list[Step] = []
    gated: list[tuple[int, UngateStep]] = []
    created: list[tuple[str, str]] = []
    for i in range(rng.randint(5, 10)):
        template = rng.choice(templates)
        labels = {"app": template["app"]}
        if rng.random() < 0.7:
            labels["ver"] = rng.choice(["v1", "v2"])
        spec = _copy(template["spec"])
        name = f"p{i}"
        if template["gated"] and rng.random() < 0.7:
            spec["schedulingGates"] = [{"name": GATE}]
            gated.append((i + rng.randint(1, 3), UngateStep(template["namespace"], name)))
        manifest = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": template["namespace"], "labels": labels},
            "spec": spec,
        }
        steps.append(PodStep(manifest))
        created.append((template["namespace"], name))
        for at, ungate in list(gated):
            if at <= i:
                steps.append(ungate)
                gated.remove((at, ungate))
        if rng.random() < 0.12:
            steps.append(_node_change(rng, rng.choice(nodes)))
        if rng.random() < 0.1:
            ns, victim = rng.choice(created)
            steps.append(DeleteStep(ns, victim, rng.choice([0, 30])))
    steps.extend(ungate for _, ungate in gated)
    return Case(f"seed-{seed}", ns_objects, nodes, tuple(steps))


def _node_change(rng: random.Random, manifest: dict[str, Any]) -> NodeStep:
    """One change to a node as it was created (a later change may undo an earlier one,
    which is fine: each is applied to both clusters alike)."""
    kind = rng.choice(["zone", "tier", "taint", "untaint", "cordon", "uncordon"])
    patch: dict[str, Any]
    if kind == "zone":
        patch = {"metadata": {"labels": {ZONE: rng.choice([*ZONES, None])}}}
    elif kind == "tier":
        patch = {"metadata": {"labels": {"tier": rng.choice(["a", "b", "c", None])}}}
    elif kind == "taint":
        taints = [rng.choice(choices) for choices in _TAINT_CHOICES[:3] if rng.random() < 0.5]
        patch = {"spec": {"taints": taints or [_TAINT_CHOICES[2][0]]}}
    elif kind == "untaint":
        patch = {"spec": {"taints": None}}
    else:
        patch = {"spec": {"unschedulable": kind == "cordon" or None}}
    return NodeStep(manifest["metadata"]["name"], patch)


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


# --------------------------------------------------------------------------- by hand


def focused_cases(prefix: str) -> list[Case]:
    """Rules a random draw reaches rarely, one case each."""
    cases: list[Case] = []

    def names(case: str) -> tuple[str, str, tuple[dict[str, Any], ...], list[str]]:
        """Namespaces and node names of one case: each case has its own."""
        p = f"{prefix}{case}"
        a, b = f"{p}-a", f"{p}-b"
        ns = (namespace(a, {"team": "a", "env": "prod"}), namespace(b, {"team": "b"}))
        return a, b, ns, [f"{p}-n{i}" for i in range(4)]

    a, b, ns, n = names("k")

    # nodeSelector and an affinity expression on the same key; two expressions on one key
    nodes: tuple[dict[str, Any], ...] = (
        node(n[0], {"tier": "a", ZONE: "z1"}),
        node(n[1], {"tier": "b", ZONE: "z1"}),
        node(n[2], {ZONE: "z2"}),
        node(n[3], {"tier": "c", "gen": "3"}),
    )
    cases.append(
        Case(
            "same-key",
            ns,
            nodes,
            (
                PodStep(
                    pod(
                        "selector-vs-in",
                        a,
                        nodeSelector={"tier": "a"},
                        affinity=required_node_affinity(
                            {"matchExpressions": [expr("tier", "In", "b")]}
                        ),
                    )
                ),
                PodStep(
                    pod(
                        "exists-and-notin",
                        a,
                        affinity=required_node_affinity(
                            {
                                "matchExpressions": [
                                    expr("tier", "Exists"),
                                    expr("tier", "NotIn", "a", "b"),
                                ]
                            }
                        ),
                    )
                ),
                PodStep(
                    pod(
                        "in-and-in",
                        a,
                        affinity=required_node_affinity(
                            {
                                "matchExpressions": [
                                    expr("tier", "In", "a", "b"),
                                    expr("tier", "In", "b", "c"),
                                ]
                            }
                        ),
                    )
                ),
                PodStep(
                    pod(
                        "gt-and-lt",
                        a,
                        affinity=required_node_affinity(
                            {"matchExpressions": [expr("gen", "Gt", "2"), expr("gen", "Lt", "3")]},
                            {"matchExpressions": [expr(ZONE, "DoesNotExist")]},
                        ),
                    )
                ),
            ),
        )
    )

    # matchFields: a node named outright, a conflict, NotIn
    a, b, ns, n = names("f")
    nodes = tuple(node(name, {ZONE: "z1"}) for name in n[:3])

    def name_is(value: str, op: str = "In") -> dict[str, Any]:
        return {"key": "metadata.name", "operator": op, "values": [value]}

    cases.append(
        Case(
            "match-fields",
            ns,
            nodes,
            (
                PodStep(
                    pod(
                        "named",
                        a,
                        affinity=required_node_affinity({"matchFields": [name_is(n[1])]}),
                    )
                ),
                PodStep(
                    pod(
                        "named-and-labelled",
                        a,
                        nodeSelector={"tier": "a"},
                        affinity=required_node_affinity({"matchFields": [name_is(n[1])]}),
                    )
                ),
                PodStep(
                    pod(
                        "conflict",
                        a,
                        affinity=required_node_affinity(
                            {"matchFields": [name_is(n[0]), name_is(n[1])]}
                        ),
                    )
                ),
                PodStep(
                    pod(
                        "two-terms",
                        a,
                        nodeSelector={"tier": "a"},
                        affinity=required_node_affinity(
                            {"matchFields": [name_is(n[0])]},
                            {"matchFields": [name_is(n[2])]},
                        ),
                    )
                ),
                PodStep(
                    pod(
                        "not-named",
                        a,
                        nodeSelector={"tier": "a"},
                        affinity=required_node_affinity({"matchFields": [name_is(n[0], "NotIn")]}),
                    )
                ),
                PodStep(
                    pod(
                        "named-or-any",
                        a,
                        nodeSelector={"tier": "a"},
                        affinity=required_node_affinity(
                            {"matchFields": [name_is(n[0])]},
                            {"matchExpressions": [expr(ZONE, "Exists")]},
                        ),
                    )
                ),
            ),
        )
    )

    # topology spread: minDomains, the inclusion policies, a node without the key
    a, b, ns, n = names("s")
    nodes = (
        node(n[0], {ZONE: "z1", "tier": "a"}),
        node(n[1], {ZONE: "z2", "tier": "b"}, taints=[{"key": "gpu", "effect": "NoSchedule"}]),
        node(n[2], {ZONE: "z3", "tier": "b"}),
        node(n[3], {"tier": "a"}),
    )

    def spread(name: str, **constraint: Any) -> PodStep:
        tsc = {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
            **constraint,
        }
        return PodStep(
            pod(
                name,
                a,
                {"app": "web"},
                nodeSelector={"tier": "a"},
                tolerations=[{"key": "gpu", "operator": "Exists"}],
                topologySpreadConstraints=[tsc],
            )
        )

    cases.append(
        Case(
            "spread-policies",
            ns,
            nodes,
            (
                spread("honor-1"),
                spread("honor-2"),
                spread("min-domains", minDomains=3),
                spread("ignore-affinity", nodeAffinityPolicy="Ignore"),
                spread("ignore-affinity-2", nodeAffinityPolicy="Ignore"),
                spread("honor-taints", nodeAffinityPolicy="Ignore", nodeTaintsPolicy="Honor"),
            ),
        )
    )

    # pod affinity: the first of a self-selecting group, namespaces by selector
    a, b, ns, n = names("a")
    nodes = (
        node(n[0], {ZONE: "z1"}),
        node(n[1], {ZONE: "z2"}),
        node(n[2], {ZONE: "z2"}, cpu="1"),
    )

    def with_affinity(name: str, ns_: str, app: str, **term: Any) -> PodStep:
        return PodStep(
            pod(
                name,
                ns_,
                {"app": app},
                cpu="600m",
                affinity={
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"topologyKey": ZONE, **term}
                        ]
                    },
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "topologyKey": HOSTNAME,
                                "labelSelector": {"matchLabels": {"app": app}},
                                "namespaceSelector": {},
                            }
                        ]
                    },
                },
            )
        )

    db = {"labelSelector": {"matchLabels": {"app": "db"}}}
    cases.append(
        Case(
            "pod-affinity-namespaces",
            ns,
            nodes,
            (
                with_affinity("web-before-db", a, "web", **db),
                with_affinity("db-1", b, "db", **db),
                with_affinity("web-other-ns", a, "web", **db),
                with_affinity("web-by-selector", a, "web2", namespaceSelector={}, **db),
                with_affinity("db-2", b, "db", namespaces=[b], **db),
                with_affinity("db-3", b, "db", namespaces=[b], **db),
                with_affinity(
                    "web-team-b", a, "web3", namespaceSelector={"matchLabels": {"team": "b"}}, **db
                ),
            ),
        )
    )
    # existing pods' anti-affinity: a pod without rules of its own kept out of a zone
    a, b, ns, n = names("x")
    nodes = (node(n[0], {ZONE: "z1"}), node(n[1], {ZONE: "z1"}), node(n[2], {ZONE: "z2"}))

    def keeps_out(app: str, **scope: Any) -> dict[str, Any]:
        return {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "topologyKey": ZONE,
                        "labelSelector": {"matchLabels": {"app": app}},
                        **scope,
                    }
                ]
            }
        }

    cases.append(
        Case(
            "existing-anti-affinity",
            ns,
            nodes,
            (
                PodStep(
                    pod(
                        "guard",
                        a,
                        {"app": "db"},
                        nodeSelector={ZONE: "z1"},
                        affinity=keeps_out("web"),
                    )
                ),
                PodStep(pod("web-1", a, {"app": "web"})),
                PodStep(pod("web-2", a, {"app": "web"}, affinity=keeps_out("web"))),
                PodStep(pod("web-other-ns", b, {"app": "web"}, nodeSelector={ZONE: "z1"})),
                PodStep(
                    pod(
                        "guard-by-selector",
                        b,
                        {"app": "db"},
                        nodeSelector={ZONE: "z2"},
                        affinity=keeps_out(
                            "cache", namespaceSelector={"matchLabels": {"team": "a"}}
                        ),
                    )
                ),
                PodStep(pod("cache-a", a, {"app": "cache"})),
                PodStep(pod("cache-b", b, {"app": "cache"})),
            ),
        )
    )
    return cases
