"""CreateFleet, DescribeInstances and TerminateInstances for one instance each, batched.

The instance provider asks for one instance at a time; :class:`EC2Batcher` turns the
concurrent asks into few EC2 calls with :class:`~karpenter_aws.batcher.Batcher`, with
upstream's windows and merging rules:

=====================  ======  ========  =========  ========================================
call                   idle    max wait  max items  merged when
=====================  ======  ========  =========  ========================================
CreateFleet            35 ms   1 s       1000       the whole request but the target
                                                    capacity is the same (same templates,
                                                    overrides, prices, tags, capacity type)
DescribeInstances      100 ms  1 s       500        the filters are the same
TerminateInstances     100 ms  1 s       500        always
=====================  ======  ========  =========  ========================================

Each merged call is answered per item:

- **CreateFleet** asks for as many instances as items and hands one instance id to each
  item in turn; items left without one (a partial fill) get the fleet's ``Errors``,
  which the provider turns into insufficient capacity or a launch error as it would for
  a single launch (an answer with neither instance nor error is insufficient capacity,
  where upstream invents a "too few instances" launch error). Every item sees the
  fleet's errors, so each marks the offerings that ran out.
- **DescribeInstances** asks for every id at once; ids the answer lacks (eventual
  consistency, a terminated instance the state filter hides, or a failed call because
  one id is unknown) are asked for again one by one, and their own answer or error goes
  to their items.
- **TerminateInstances** terminates every id at once; ids not reported shutting down or
  terminated (a failed call, termination protection) are terminated again one by one.

:class:`DirectEC2` makes the same calls unbatched (one EC2 call per item); it is what
the provider used before batching and what the call-count test compares against.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from botocore.exceptions import (  # type: ignore[import-untyped]
    BotoCoreError,
    ClientError,
)

from karpenter_aws.batcher import Batcher, BatchOptions, one_bucket, request_hash

__all__ = [
    "CREATE_FLEET",
    "DESCRIBE_INSTANCES",
    "TERMINATE_INSTANCES",
    "DirectEC2",
    "EC2Batcher",
    "EC2Calls",
    "create_fleet_batch",
    "describe_instances_batch",
    "fleet_hash",
    "terminate_instances_batch",
]

log = logging.getLogger("karpenter.aws.batcher")

CREATE_FLEET = BatchOptions("create_fleet", idle=0.035, max_wait=1.0, max_items=1000)
DESCRIBE_INSTANCES = BatchOptions("describe_instances", idle=0.1, max_wait=1.0, max_items=500)
TERMINATE_INSTANCES = BatchOptions("terminate_instances", idle=0.1, max_wait=1.0, max_items=500)
TERMINATING_STATES = frozenset({"shutting-down", "terminated"})
FALLBACK_WORKERS = 10
"""Concurrent one-by-one retries of a merged call's leftovers."""

Answer = dict[str, Any] | BaseException


class EC2Calls(Protocol):
    """The per-instance EC2 calls the instance provider makes."""

    def create_fleet(self, request: Mapping[str, Any]) -> dict[str, Any]: ...

    def describe_instances(
        self, instance_id: str, filters: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]: ...

    def terminate_instances(self, instance_id: str) -> dict[str, Any]: ...


def _target(request: Mapping[str, Any]) -> int:
    return int((request.get("TargetCapacitySpecification") or {}).get("TotalTargetCapacity", 1))


def fleet_hash(request: Mapping[str, Any]) -> str:
    """The bucket of a CreateFleet request: everything but its target capacity."""
    spec = dict(request.get("TargetCapacitySpecification") or {})
    spec.pop("TotalTargetCapacity", None)
    return request_hash({**request, "TargetCapacitySpecification": spec})


def _filters_hash(request: Mapping[str, Any]) -> str:
    return request_hash(request.get("Filters") or [])


def _one_by_one(ids: Sequence[str], call: Callable[[str], dict[str, Any]]) -> dict[str, Answer]:
    """``call`` for each id, concurrently: its answer or the error it raised."""

    def one(instance_id: str) -> Answer:
        try:
            return call(instance_id)
        except (ClientError, BotoCoreError) as e:
            failed: BaseException = e
            return failed

    if len(ids) <= 1:
        return {i: one(i) for i in ids}
    with ThreadPoolExecutor(max_workers=min(len(ids), FALLBACK_WORKERS)) as pool:
        return dict(zip(ids, pool.map(one, ids), strict=True))


def _id(request: Mapping[str, Any]) -> str:
    return str(request["InstanceIds"][0])


def create_fleet_batch(ec2: Any) -> Callable[[list[dict[str, Any]]], list[Answer]]:
    """The executor of merged CreateFleet requests (see the module docstring)."""

    def run(requests: list[dict[str, Any]]) -> list[Answer]:
        merged = copy.deepcopy(requests[0])
        merged["TargetCapacitySpecification"]["TotalTargetCapacity"] = len(requests)
        out = ec2.create_fleet(**merged)  # raising fails every request of the call
        fleet_id = out.get("FleetId")
        errors = list(out.get("Errors") or [])
        results: list[Answer] = []
        for fi in out.get("Instances") or []:
            for instance_id in fi.get("InstanceIds") or []:
                if len(results) == len(requests):
                    log.error("CreateFleet %s gave more instances than asked; %s is not used",
                              fleet_id, instance_id)  # fmt: skip
                    continue
                one = {k: v for k, v in fi.items() if k != "InstanceIds"}
                one["InstanceIds"] = [instance_id]
                results.append({"FleetId": fleet_id, "Errors": errors, "Instances": [one]})
        results.extend(
            {"FleetId": fleet_id, "Errors": errors, "Instances": []}
            for _ in range(len(requests) - len(results))
        )
        return results

    return run


def describe_instances_batch(ec2: Any) -> Callable[[list[dict[str, Any]]], list[Answer]]:
    """The executor of merged one-instance DescribeInstances requests."""

    def run(requests: list[dict[str, Any]]) -> list[Answer]:
        ids = list(dict.fromkeys(_id(r) for r in requests))
        filters = list(requests[0].get("Filters") or [])
        answers: dict[str, Answer] = {}
        try:
            pages = ec2.get_paginator("describe_instances").paginate(
                InstanceIds=ids, Filters=filters
            )
            for page in pages:
                for r in page.get("Reservations") or []:
                    reservation = {k: v for k, v in r.items() if k != "Instances"}
                    for inst in r.get("Instances") or []:
                        answers[str(inst.get("InstanceId"))] = {
                            "Reservations": [{**reservation, "Instances": [inst]}]
                        }
        except (ClientError, BotoCoreError) as e:
            log.debug("describing %d instances at once failed, asking one by one: %s", len(ids), e)
        missing = [i for i in ids if i not in answers]
        answers.update(
            _one_by_one(missing, lambda i: ec2.describe_instances(InstanceIds=[i], Filters=filters))
        )
        return [answers[_id(r)] for r in requests]

    return run


def terminate_instances_batch(ec2: Any) -> Callable[[list[dict[str, Any]]], list[Answer]]:
    """The executor of merged one-instance TerminateInstances requests."""

    def run(requests: list[dict[str, Any]]) -> list[Answer]:
        ids = list(dict.fromkeys(_id(r) for r in requests))
        answers: dict[str, Answer] = {}
        try:
            out = ec2.terminate_instances(InstanceIds=ids)
        except (ClientError, BotoCoreError) as e:
            log.info("terminating %d instances at once failed, one by one: %s", len(ids), e)
            out = {}
        for change in out.get("TerminatingInstances") or []:
            if (change.get("CurrentState") or {}).get("Name") in TERMINATING_STATES:
                answers[str(change.get("InstanceId"))] = {"TerminatingInstances": [change]}
        missing = [i for i in ids if i not in answers]
        answers.update(_one_by_one(missing, lambda i: ec2.terminate_instances(InstanceIds=[i])))
        return [answers[_id(r)] for r in requests]

    return run


def _one_instance(what: str, request: Mapping[str, Any]) -> None:
    if _target(request) != 1:
        raise ValueError(f"{what} batches single-instance requests, got {_target(request)}")


class EC2Batcher:
    """The batched calls of one EC2 client (see the module docstring).

    ``threaded=False`` builds batchers that only send when :meth:`flush_due` (or
    :meth:`flush`) is called, with ``monotonic`` as their clock: for deterministic tests.
    """

    def __init__(
        self,
        ec2: Any,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        threaded: bool = True,
    ) -> None:
        def batcher(
            options: BatchOptions,
            executor: Callable[[list[dict[str, Any]]], list[Answer]],
            hasher: Callable[[dict[str, Any]], str],
        ) -> Batcher[dict[str, Any], dict[str, Any]]:
            return Batcher(options, executor, hasher, monotonic=monotonic, threaded=threaded)

        self.fleets = batcher(CREATE_FLEET, create_fleet_batch(ec2), fleet_hash)
        self.describes = batcher(DESCRIBE_INSTANCES, describe_instances_batch(ec2), _filters_hash)
        self.terminates = batcher(TERMINATE_INSTANCES, terminate_instances_batch(ec2), one_bucket)

    @property
    def batchers(self) -> tuple[Batcher[dict[str, Any], dict[str, Any]], ...]:
        return (self.fleets, self.describes, self.terminates)

    def create_fleet(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """CreateFleet for one instance, merged with its window's like requests."""
        _one_instance("CreateFleet", request)
        return self.fleets.call(copy.deepcopy(dict(request)))

    def describe_instances(
        self, instance_id: str, filters: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        """DescribeInstances of one instance, merged with its window's like requests."""
        return self.describes.call({"InstanceIds": [instance_id], "Filters": list(filters)})

    def terminate_instances(self, instance_id: str) -> dict[str, Any]:
        """TerminateInstances of one instance, merged with its window's."""
        return self.terminates.call({"InstanceIds": [instance_id]})

    def flush_due(self) -> bool:
        """Send every batcher's window that is due; whether any was."""
        return any([b.flush_due() for b in self.batchers])

    def close(self) -> None:
        """Send what is queued and stop the batchers' threads."""
        for b in self.batchers:
            b.close()


class DirectEC2:
    """The same calls, one EC2 call each (no batching)."""

    def __init__(self, ec2: Any) -> None:
        self._ec2 = ec2

    def create_fleet(self, request: Mapping[str, Any]) -> dict[str, Any]:
        _one_instance("CreateFleet", request)
        return dict(self._ec2.create_fleet(**request))

    def describe_instances(
        self, instance_id: str, filters: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any]:
        return dict(self._ec2.describe_instances(InstanceIds=[instance_id], Filters=list(filters)))

    def terminate_instances(self, instance_id: str) -> dict[str, Any]:
        return dict(self._ec2.terminate_instances(InstanceIds=[instance_id]))

    def close(self) -> None:
        """Nothing to stop."""
