"""The simulated kube-scheduler's passes on their own: incremental passes decide exactly as the
reference pass does, and an unknown scoring strategy is refused."""

from __future__ import annotations

import contextlib
import random
from typing import Any

import pytest

from karpenter_core.apis.objects import Node, Pod
from karpenter_core.kube.client import ApiError
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.runtime.reconciler import Result
from karpenter_core.scheduling.podaffinity import POD_ANTI_AFFINITY, required_terms
from karpenter_core.sim.apiserver import InMemoryApiServer
from karpenter_core.sim.kubescheduler import (
    GATED_MESSAGE,
    KubeScheduler,
    KubeSchedulerOptions,
    _NodeState,
    _NodeStatic,
    _PassState,
    _PodClass,
)


def test_unknown_scoring_is_refused() -> None:
    with pytest.raises(ValueError, match="scoring must be LeastAllocated or MostAllocated"):
        KubeSchedulerOptions(scoring="Random")


# --------------------------------------------------------------------------------------
# Differential test: the incremental scheduler decides exactly as the straightforward one.


class _ReferenceScheduler(KubeScheduler):
    """kube-scheduler the slow, obvious way: list everything on every pass, parse every
    object, try every pending pod on every node with no caching or grouping."""

    def _search_open(self, ctx: Any, cls: Any, state: Any, start: int) -> Any:
        # no passing over the nodes a class already failed on in this pass
        return self._search(ctx, cls, state, start, None)

    def _search_ranked(self, ctx: Any, cls: Any, state: Any, start: int) -> Any:
        # no kept scores: every node filtered and scored in turn
        return self._search(ctx, cls, state, start, None)

    def reconcile(self, key: object = None) -> Result:
        nodes = sorted(
            (_NodeState(_NodeStatic("", Node.from_dict(o))) for o in self.kube.list("nodes")),
            key=lambda n: n.name,
        )
        by_name = {n.name: n for n in nodes}
        pending: list[Pod] = []
        holders = []
        for obj in self.kube.list("pods"):
            pod = Pod.from_dict(obj)
            if pod.node_name:
                node = by_name.get(pod.node_name)
                if node is not None and not pod.is_terminal():
                    node.add(pod)
                    if pod.has_required_pod_anti_affinity():
                        terms = required_terms(
                            pod.affinity, POD_ANTI_AFFINITY, pod.namespace, pod.labels
                        )
                        holders.append((terms, node.labels))
            elif self._serves(pod) and pod.is_active():
                pending.append(pod)
        pending.sort(key=lambda p: (-p.priority, p.creation_timestamp, p.key))
        namespaces = {
            o["metadata"]["name"]: o["metadata"].get("labels") or {}
            for o in self.kube.list("namespaces")
        }
        state = _PassState(nodes, holders, namespaces)
        for pod in pending:
            if pod.scheduling_gates:
                self._mark(pod, "SchedulingGated", GATED_MESSAGE)
                continue
            # A fresh class per pod: nothing is remembered between pods or passes.
            self._schedule_one(pod, _PodClass(pod), state)
        return Result()


_ZONES = ("z1", "z2", "z3")


def _random_node(rng: random.Random, name: str) -> dict[str, Any]:
    taints = []
    if rng.random() < 0.2:
        taints.append({"key": "karpenter.sh/unregistered", "effect": "NoExecute"})
    if rng.random() < 0.15:
        taints.append({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"})
    cpu = rng.choice(["2", "4", "8"])
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/zone": rng.choice(_ZONES),
                "tier": rng.choice(["a", "b"]),
            },
        },
        "spec": {"taints": taints, "unschedulable": rng.random() < 0.1},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": rng.choice(["3", "110"])},
            "conditions": [{"type": "Ready", "status": "True" if rng.random() < 0.9 else "False"}],
        },
    }


def _random_template(rng: random.Random, app: str) -> dict[str, Any]:
    """A pod template: replicas of it share everything the scheduler reads."""
    container: dict[str, Any] = {
        "name": "c",
        "image": "i",
        "resources": {"requests": {"cpu": rng.choice(["500m", "1", "1500m", "3"])}},
    }
    spec: dict[str, Any] = {"containers": [container], "priority": rng.choice([0, 0, 10])}
    if rng.random() < 0.15:
        container["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    if rng.random() < 0.2:
        spec["nodeSelector"] = {"tier": rng.choice(["a", "b"])}
    if rng.random() < 0.2:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    if rng.random() < 0.1:
        spec["schedulingGates"] = [{"name": "example.com/wait"}]
    selector = {"matchLabels": {"app": app}}
    kind = rng.random()
    if kind < 0.2:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": selector,
            }
        ]
    elif kind < 0.35:
        spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}
                ]
            }
        }
    elif kind < 0.5:
        spec["affinity"] = {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": selector, "topologyKey": "topology.kubernetes.io/zone"}
                ]
            }
        }
    return spec


class _Twin:
    """The same cluster twice: one scheduled by the incremental scheduler, one by the
    reference; every change is applied to both."""

    def __init__(self, options: KubeSchedulerOptions | None = None) -> None:
        self.sides: list[tuple[VirtualClock, InMemoryApiServer, KubeScheduler]] = []
        for cls in (KubeScheduler, _ReferenceScheduler):
            clock = VirtualClock()
            kube = InMemoryApiServer(clock, seed=7)
            self.sides.append((clock, kube, cls(kube, clock, options)))

    def apply(self, change: Any) -> None:
        for _, kube, _ in self.sides:
            with contextlib.suppress(ApiError):
                change(kube)

    def advance(self) -> None:
        for clock, _, _ in self.sides:
            clock.advance(1)

    def run(self) -> None:
        for _, _, scheduler in self.sides:
            scheduler.reconcile()

    def decisions(self, side: int) -> dict[str, Any]:
        kube = self.sides[side][1]
        return {
            p["metadata"]["name"]: (
                p["spec"].get("nodeName"),
                [
                    c
                    for c in p.get("status", {}).get("conditions", [])
                    if c["type"] == "PodScheduled"
                ],
                p["metadata"]["resourceVersion"],
            )
            for p in kube.list("pods")
        }


@pytest.mark.parametrize(
    ("seed", "burst"),
    [(seed, 6) for seed in range(40)] + [(seed, 40) for seed in range(12)] + [(279, 6)],
)
def test_incremental_passes_decide_exactly_as_the_reference(seed: int, burst: int) -> None:
    # bursts of 40 pods leave long queues of marked pods behind failed classes: the pass
    # must jump over them, come back to them after a binding, and still decide the same
    rng = random.Random(seed)
    twin = _Twin()
    nodes: list[str] = []
    pods: list[str] = []
    # Two variants per app: pods of different classes that select each other, so one
    # class's bindings can open nodes to another's spread or affinity.
    templates = {
        (f"app{i}", v): _random_template(rng, f"app{i}") for i in range(3) for v in range(2)
    }
    for step in range(12):
        for _ in range(rng.randint(0, 2)):
            name = f"n{len(nodes)}"
            nodes.append(name)
            node = _random_node(rng, name)
            twin.apply(lambda kube, node=node: kube.create(node))
        for _ in range(rng.randint(0, burst)):
            app, variant = rng.choice(sorted(templates))
            name = f"{app}-{variant}-{len(pods)}"
            pods.append(name)
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
                "spec": templates[app, variant],
            }
            twin.apply(lambda kube, pod=pod: kube.create(pod))
        roll = rng.random()
        if roll < 0.2 and pods:
            victim = rng.choice(pods)
            twin.apply(
                lambda kube, v=victim: kube.delete("pods", v, "default", grace_period_seconds=0)
            )
        elif roll < 0.4 and nodes:
            target = rng.choice(nodes)
            twin.apply(lambda kube, t=target: kube.patch("nodes", t, {"spec": {"taints": []}}))
        elif roll < 0.5 and nodes:
            target = rng.choice(nodes)
            twin.apply(lambda kube, t=target: kube.delete("nodes", t))
        elif roll < 0.6 and pods:
            # lifting a pod's gates moves it from the gated queue to its class's
            ungated = rng.choice(pods)
            twin.apply(
                lambda kube, u=ungated: kube.patch(
                    "pods", u, {"spec": {"schedulingGates": None}}, "default"
                )
            )
        twin.advance()
        twin.run()
        if step % 3 == 0:
            twin.run()  # a pass with nothing new must change nothing either
        assert twin.decisions(0) == twin.decisions(1), f"diverged at step {step}"
    bound = sum(1 for v in twin.decisions(0).values() if v[0])
    assert bound > 0  # the clusters were not trivially empty


def test_a_new_pod_binding_first_lets_a_waiting_affinity_pod_in_within_the_same_pass() -> None:
    """A pod waits for a pod of app x in its zone; a new pod of app x with a higher
    priority arrives. Queue order puts the new pod first: it binds, and the waiting pod
    then fits in the same pass (the reference pass), not one pass later."""
    twin = _Twin()
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "n1",
            "labels": {"kubernetes.io/hostname": "n1", "topology.kubernetes.io/zone": "z1"},
        },
        "status": {
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }

    def pod(name: str, app: str, priority: int, affinity: bool) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}],
            "priority": priority,
        }
        if affinity:
            term = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": _ZONE_KEY}
            spec["affinity"] = {
                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            }
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
            "spec": spec,
        }

    twin.apply(lambda kube: kube.create(node))
    twin.apply(lambda kube: kube.create(pod("waiting", "y", 0, affinity=True)))
    twin.run()
    twin.run()  # the pass that reads back its own condition write: nothing new after it
    assert twin.decisions(0)["waiting"][0] is None
    twin.advance()
    twin.apply(lambda kube: kube.create(pod("x-new", "x", 10, affinity=False)))
    twin.run()
    decided = twin.decisions(0)
    assert decided == twin.decisions(1)
    assert (decided["x-new"][0], decided["waiting"][0]) == ("n1", "n1")


_ZONE_KEY = "topology.kubernetes.io/zone"


def test_a_class_that_fits_nowhere_gets_messages_as_the_nodes_fill_within_a_pass() -> None:
    """Pods of a class that fits nowhere, between pods of another class that bind: each
    gets the message of the nodes as they stand when it is tried. The scheduler keeps a
    class's per-node reasons for the pass and filters again only the nodes bound to since;
    the reference filters every node for every pod."""
    twin = _Twin()
    for name in ("n1", "n2"):
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {
                "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        twin.apply(lambda kube, node=node: kube.create(node))

    def pod(name: str, cpu: str, memory: str) -> dict[str, Any]:
        requests = {"cpu": cpu, "memory": memory}
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": name[0]}},
            "spec": {
                "containers": [{"name": "c", "image": "i", "resources": {"requests": requests}}]
            },
        }

    # queue order is creation order: big pods (3 CPU, 2Gi: never fit) between small ones
    # (500m, 1500Mi) that fill the nodes' memory two by two
    for name in ("big0", "s0", "s1", "big1", "s2", "s3", "big2"):
        twin.apply(
            lambda kube, name=name: kube.create(
                pod(name, "3", "2Gi") if name.startswith("big") else pod(name, "500m", "1500Mi")
            )
        )
        twin.advance()
    twin.run()
    decided = twin.decisions(0)
    assert decided == twin.decisions(1)
    messages = [decided[f"big{i}"][1][0]["message"] for i in range(3)]
    assert messages == [
        "0/2 nodes are available: 2 Insufficient cpu.",
        "0/2 nodes are available: 2 Insufficient cpu.",
        "0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient memory.",
    ]
    assert sorted(decided[f"s{i}"][0] for i in range(4)) == ["n1", "n1", "n2", "n2"]


@pytest.mark.parametrize(
    ("seed", "scoring"), [(0, "LeastAllocated"), (1, "MostAllocated"), (2, "LeastAllocated")]
)
def test_a_search_cut_short_by_numFeasibleNodesToFind_decides_as_the_reference(
    seed: int, scoring: str
) -> None:
    # 160 nodes: each pod's search stops after 100 feasible ones and the next starts where
    # it stopped; most nodes fill up, so later pods of a class pass over the nodes it
    # already failed on, and must stop, score and rotate exactly as a full search would
    rng = random.Random(seed)
    twin = _Twin(KubeSchedulerOptions(scoring=scoring))
    names = [f"n{i:03}" for i in range(160)]
    for name in names:
        node = _random_node(rng, name)
        node["status"]["allocatable"]["pods"] = "110"
        if rng.random() < 0.85:  # mostly open nodes, so searches find 100 feasible ones
            node["spec"] = {"taints": [], "unschedulable": False}
            node["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
        twin.apply(lambda kube, node=node: kube.create(node))
    templates = [_random_template(rng, f"app{i}") for i in range(4)]
    pods = 0
    for step in range(6):
        for _ in range(rng.randint(40, 90)):
            app = rng.randrange(len(templates))
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"p{pods}",
                    "namespace": "default",
                    "labels": {"app": f"app{app}"},
                },
                "spec": templates[app],
            }
            pods += 1
            twin.apply(lambda kube, pod=pod: kube.create(pod))
        if step % 2:
            victim = rng.choice(names)
            twin.apply(lambda kube, v=victim: kube.delete("nodes", v))
        twin.advance()
        twin.run()
        assert twin.decisions(0) == twin.decisions(1), f"diverged at step {step}"
    bound = sum(1 for v in twin.decisions(0).values() if v[0])
    assert bound > 100  # more pods than one search's worth of nodes were placed


def _ready_node(name: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def test_a_node_full_for_a_class_is_not_filtered_again_while_it_stands() -> None:
    """A class keeps the positions of its open nodes while no node comes or goes; a node
    its own filters refused drops out of them and is not filtered again for that class,
    pass after pass, until it changes (here: a pod leaves it)."""
    clock = VirtualClock()
    kube = InMemoryApiServer(clock, seed=7)
    filtered: list[str] = []

    class Counting(KubeScheduler):
        def _local_failure(self, ctx: Any, cls: Any, node: Any) -> Any:
            filtered.append(node.name)
            return super()._local_failure(ctx, cls, node)

    scheduler = Counting(kube, clock)
    for name, cpu in (("big", "64"), ("full", "1")):
        kube.create(_ready_node(name, cpu))

    def pod(name: str, node: str | None = None) -> dict[str, Any]:
        # anti-affinity to pods nothing has: the class's fit is not the node's alone, so
        # it searches its open nodes (_search_open), not kept scores
        spec: dict[str, Any] = {
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}],
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {"app": "none"}},
                            "topologyKey": "kubernetes.io/hostname",
                        }
                    ]
                }
            },
        }
        if node:
            spec["nodeName"] = node
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "a"}},
            "spec": spec,
        }

    kube.create(pod("holder", "full"))
    for i in range(6):  # a pass per new pod, each binding it to "big"
        kube.create(pod(f"p{i}"))
        clock.advance(1)
        scheduler.reconcile()
    assert [p["spec"].get("nodeName") for p in kube.list("pods")].count("big") == 6
    assert filtered.count("full") == 1  # refused once, then passed over
    kube.delete("pods", "holder", "default")
    kube.create(pod("p6"))
    clock.advance(1)
    scheduler.reconcile()
    assert filtered.count("full") == 2  # it changed: filtered again (and taken: fresh)
    assert kube.get("pods", "p6", "default")["spec"]["nodeName"] in ("big", "full")


def test_a_class_scores_only_the_changed_nodes_when_its_pods_come_back() -> None:
    """A class's node scores are kept by class key: when its pods are all placed the class
    is dropped, and when another of its pods comes (a node drained), only the nodes
    changed since are scored again, not every node."""
    clock = VirtualClock()
    kube = InMemoryApiServer(clock, seed=7)
    ranked: list[str] = []

    class Counting(KubeScheduler):
        def _rank(self, ctx: Any, cls: Any, node: Any) -> Any:
            ranked.append(node.name)
            return super()._rank(ctx, cls, node)

    scheduler = Counting(kube, clock)
    for i in range(8):
        kube.create(_ready_node(f"n{i}", "8"))

    def pod(name: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "a"}},
            "spec": {
                "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]
            },
        }

    kube.create(pod("p0"))
    clock.advance(1)
    scheduler.reconcile()
    assert len(ranked) == 8  # the first search scores every node
    first = kube.get("pods", "p0", "default")["spec"]["nodeName"]
    kube.create({**pod("other"), "metadata": {"name": "other", "namespace": "default"}})
    clock.advance(1)
    scheduler.reconcile()  # another class's pass: class "a" has no pending pod, dropped
    ranked.clear()
    kube.create(pod("p1"))
    clock.advance(1)
    scheduler.reconcile()
    # only what changed since: the node p0 went to, and the one "other" went to
    other = kube.get("pods", "other", "default")["spec"]["nodeName"]
    assert sorted(ranked) == sorted({first, other})
    assert kube.get("pods", "p1", "default")["spec"]["nodeName"]
