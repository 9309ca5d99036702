"""What the scheduler integration added to the allocator: the pool index (one scan of the
slices for a whole pass), allocations pinned to a node by ``matchFields``, the error naming
the request the search could not satisfy, and instance types searched once per group."""

from __future__ import annotations

import random

from dra_builders import (
    CLASSES,
    GPU_DRIVER,
    api_slice,
    claim,
    device,
    exact,
    nodeclaim,
    template,
    zone_reqs,
)

from karpenter_core.apis.resource import NodeSelector
from karpenter_core.scheduling.dynamicresources import (
    AllocationError,
    AllocationResult,
    Allocator,
    gather_pools,
)
from karpenter_core.scheduling.dynamicresources.allocator import allocated_nodes
from karpenter_core.scheduling.dynamicresources.pool import PoolIndex
from karpenter_core.scheduling.requirements import Requirements


def _random_slices(rng: random.Random) -> list:  # type: ignore[type-arg]
    slices = []
    for i in range(rng.randint(0, 12)):
        kind = rng.choice(["all", "zone", "node", "none"])
        kwargs: dict = {}  # type: ignore[type-arg]
        if kind == "all":
            kwargs["all_nodes"] = True
        elif kind == "zone":
            kwargs["zone"] = [rng.choice(["z1", "z2"])]
        elif kind == "node":
            kwargs["node_name"] = rng.choice(["n1", "n2"])
        pool = rng.choice(["p1", "p2", "p3"])
        devices = [f"d{rng.randint(0, 4)}" for _ in range(rng.randint(0, 3))]
        slices.append(
            api_slice(
                f"s{i}",
                pool=pool,
                devices=sorted(set(devices)) if rng.random() < 0.8 else devices,
                generation=rng.randint(1, 2),
                count=rng.randint(1, 3),
                **kwargs,
            )
        )
    return slices


def _shape(pools: list) -> list:  # type: ignore[type-arg]
    return [
        (
            p.key,
            [s.metadata.name for s in p.slices],
            [d.id for d in p.devices],
            p.incomplete,
            p.invalid,
        )
        for p in pools
    ]


def test_the_pool_index_gathers_what_gather_pools_gathers() -> None:
    rng = random.Random(7)
    for _ in range(300):
        slices = _random_slices(rng)
        index = PoolIndex(slices)
        for reqs in (Requirements(), zone_reqs("z1"), zone_reqs("z2")):
            for node in ("", "n1", "n2"):
                assert _shape(index.gather(reqs, node)) == _shape(gather_pools(slices, reqs, node))


def test_the_pool_index_hands_out_the_same_devices_every_time() -> None:
    s = api_slice("s", devices=["a", "b"], all_nodes=True)
    index = PoolIndex([s])
    first = index.gather(Requirements())[0].devices
    again = index.gather(Requirements())[0].devices
    assert all(x is y for x, y in zip(first, again, strict=True))


def _pinned(*terms: list[str] | None) -> NodeSelector:
    out = []
    for names in terms:
        if names is None:
            out.append({"matchExpressions": [{"key": "k", "operator": "Exists"}]})
        else:
            out.append(
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": names}]}
            )
    return NodeSelector.from_dict({"nodeSelectorTerms": out})


def test_allocated_nodes_reads_kube_schedulers_match_fields() -> None:
    assert allocated_nodes(None) is None
    assert allocated_nodes(_pinned(["a"])) == {"a"}
    assert allocated_nodes(_pinned(["a"], ["b"])) == {"a", "b"}
    assert allocated_nodes(_pinned(["a"], None)) is None, "a term that does not pin"


def test_an_allocation_pinned_to_a_node_fits_only_that_node() -> None:
    allocation = {
        "devices": {"results": []},
        "nodeSelector": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]}]}
            ]
        },
    }
    c = claim("c", exact("r"), status={"allocation": allocation, "reservedFor": []})
    a = Allocator(device_classes=CLASSES)
    assert isinstance(
        a.allocate(nodeclaim("it", id="node-a", node_name="a"), [c]), AllocationResult
    )
    err = a.allocate(nodeclaim("it", id="node-b", node_name="b"), [c])
    assert isinstance(err, AllocationError) and "allocated on node a" in str(err)
    err = a.allocate(nodeclaim("it"), [c])
    assert isinstance(err, AllocationError) and "new NodeClaim cannot be" in str(err)


def test_the_failure_names_the_request_that_could_not_be_met() -> None:
    a = Allocator(device_classes=CLASSES)
    c = claim("c", exact("first", "gpu", 1), exact("second", "gpu", 3))
    nc = nodeclaim(
        "small",
        "big",
        templates={
            "small": [template(GPU_DRIVER, "p", "g0", "g1")],
            "big": [template(GPU_DRIVER, "p", "g0", "g1", "g2")],
        },
    )
    err = a.allocate(nc, [c])
    assert isinstance(err, AllocationError)
    assert (err.claim, err.request) == ("c", "second")
    assert "needs 3 device(s), at most 2" in str(err)


def test_instance_types_without_templates_share_one_search() -> None:
    a = Allocator([api_slice("s", devices=["g0"], all_nodes=True)], device_classes=CLASSES)
    names = [f"it-{i}" for i in range(50)]
    result = a.allocate(nodeclaim(*names), [claim("c", exact("r"))])
    assert isinstance(result, AllocationResult)
    assert result.instance_types == tuple(names)
    assert result.allocation is not None
    assert set(result.allocation.devices_by_instance_type) == set(names)


def _catalogue(rng: random.Random) -> dict[str, list]:  # type: ignore[type-arg]
    """Instance types, some alike (same devices in pools of their own), some bare."""
    shapes = [
        [("gpu-0", "a"), ("gpu-1", "a")],
        [("gpu-0", "b"), ("gpu-1", "b"), ("gpu-2", "b"), ("gpu-3", "b")],
        [("gpu-0", "a")],
    ]
    out: dict[str, list] = {}  # type: ignore[type-arg]
    for i in range(rng.randint(3, 12)):
        if rng.random() < 0.3:
            continue  # no templates
        shape = rng.choice(shapes)
        devices = [device(n, {"model": m}) for n, m in shape]
        out[f"it-{i}"] = [template(GPU_DRIVER, f"it-{i}-pool", *devices)]
    return out


def _summary(result: object) -> object:
    if isinstance(result, AllocationError):
        return ("error", result.claim, result.request)
    assert isinstance(result, AllocationResult)
    alloc = result.allocation
    devices = (
        {it: sorted(map(str, ids)) for it, ids in alloc.devices_by_instance_type.items()}
        if alloc is not None
        else None
    )
    return (result.instance_types, str(result.requirements), devices)


def test_searching_alike_instance_types_once_changes_no_answer() -> None:
    """The shortcuts (one search per group of alike instance types, the bare ones left out
    at once) give what searching every instance type gives, through commits and releases."""

    rng = random.Random(11)
    for _ in range(150):
        templates = _catalogue(rng)
        names = [f"it-{i}" for i in range(14)]
        rng.shuffle(names)
        slices = []
        if rng.random() < 0.5:
            slices.append(
                api_slice("s", devices=["c0", "c1"], all_nodes=rng.random() < 0.5, zone=["z1"])
            )
        allocators = [
            Allocator(slices, device_classes=CLASSES),
            Allocator(slices, device_classes=CLASSES, reference=True),
        ]
        for step in range(4):
            model = rng.choice(["a", "b"])
            count = rng.randint(1, 3)
            c = claim(
                f"c{step}",
                exact("r", "gpu", count, f'device.attributes["{GPU_DRIVER}"].model == "{model}"'),
            )
            nc_id = rng.choice(["nc-1", "nc-2"])
            nc = nodeclaim(
                *names,
                id=nc_id,
                templates={k: v for k, v in templates.items() if k in names},
                requirements=zone_reqs("z1", "z2"),
            )
            results = [a.allocate(nc, [c]) for a in allocators]
            assert _summary(results[0]) == _summary(results[1])
            if isinstance(results[0], AllocationResult) and rng.random() < 0.7:
                for r in results:
                    assert isinstance(r, AllocationResult)
                    if r.allocation is not None:
                        r.allocation.commit()
                dropped = rng.sample(
                    list(results[0].instance_types), k=len(results[0].instance_types) // 2
                )
                for a in allocators:
                    a.release_instance_types(nc_id, dropped)
                names = [n for n in names if n not in dropped or rng.random() < 0.2]
