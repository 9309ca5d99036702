"""EC2 calls of a NodeClaim burst on the AWS provider, with and without batching.

``N`` NodeClaims (default 200) are launched, looked up afresh (as drift and tagging do)
and terminated, each on its own thread of a pool of ``--workers`` threads (default 20,
the core's NodeClaim lifecycle concurrency; 200 shows a burst whose every call is in
flight at once). The provider talks to moto's EC2 server through a real boto3 client
whose ``before-call`` event counts the calls it sends. Batching uses the real windows
and the wall clock, so how many calls a burst shares depends on how closely the calls
arrive: the figures are medians over ``--runs`` runs (default 3). moto's server is not
safe under ~200 concurrent unbatched launches into one subnet (it answers some with
HTTP 500); ``--batched-only`` measures just the batched side there (unbatched, every
launch, lookup and termination is one call whatever the concurrency).

    python bench/aws_batching.py [--nodes 200] [--workers 20] [--runs 3] [--batched-only]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import threading
import time
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from karpenter_aws.clients import AWSClients
from karpenter_aws.instance import AMI, InstanceProvider, LaunchRequest, launch_tags
from karpenter_aws.launchtemplate import TemplateInputs
from karpenter_aws.userdata import UserDataOptions
from moto.server import ThreadedMotoServer

from karpenter_core.apis import labels as wk
from karpenter_core.cloudprovider.types import InstanceType, Offering
from karpenter_core.cloudprovider.unavailable import UnavailableOfferings
from karpenter_core.runtime.clock import VirtualClock
from karpenter_core.scheduling.requirements import IN, Requirement, Requirements

REGION = "us-west-2"
CLUSTER = "bench"
ZONES = ("us-west-2a", "us-west-2b")
OPS = ("CreateFleet", "DescribeInstances", "TerminateInstances")


def _reqs(**values: list[str]) -> Requirements:
    keys = {"type": wk.LABEL_INSTANCE_TYPE, "zone": wk.LABEL_TOPOLOGY_ZONE,
            "ct": wk.CAPACITY_TYPE_LABEL_KEY, "arch": wk.LABEL_ARCH}  # fmt: skip
    return Requirements(*(Requirement.new(keys[k], IN, v) for k, v in values.items()))


def _type(name: str, price: float) -> InstanceType:
    return InstanceType(
        name=name,
        requirements=_reqs(type=[name], arch=["amd64"], zone=list(ZONES), ct=["on-demand"]),
        offerings=[Offering(_reqs(zone=[z], ct=["on-demand"]), price) for z in ZONES],
        capacity={"cpu": 2000, "memory": 8 * 1024**3 * 1000, "pods": 29000},
    )


def _launch(ec2: Any) -> LaunchRequest:
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = {
        z: ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZone=z)["Subnet"][
            "SubnetId"
        ]
        for i, z in enumerate(ZONES)
    }
    sg = ec2.create_security_group(GroupName="n", Description="n", VpcId=vpc)["GroupId"]
    ami = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    tags = launch_tags(CLUSTER, "default", {}, "default")
    return LaunchRequest(
        nodeclaim_name="",
        requirements=_reqs(ct=["on-demand"]),
        instance_types=[_type("m5.large", 0.096), _type("c5.large", 0.085)],
        subnets=subnets,
        amis=(AMI(ami, _reqs(arch=["amd64"])),),
        template=TemplateInputs(
            family="AL2023",
            instance_profile="nodes",
            security_group_ids=(sg,),
            user_data=UserDataOptions(
                cluster_name=CLUSTER, cluster_endpoint="https://k8s", cluster_cidr="10.1.0.0/16"
            ),
            tags=tags,
        ),
        tags=tags,
    )


def run(endpoint: str, nodes: int, workers: int, batched: bool) -> dict[str, float]:
    urllib.request.urlopen(
        urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"), timeout=10
    ).close()
    clients = AWSClients.create(REGION, endpoint_url=endpoint)
    counts: Counter[str] = Counter()
    lock = threading.Lock()

    def count(model: Any, **_: Any) -> None:
        with lock:
            counts[model.name] += 1

    request = _launch(clients.ec2)
    clients.ec2.meta.events.register("before-call.ec2", count)
    provider = InstanceProvider(
        clients.ec2, CLUSTER, UnavailableOfferings(VirtualClock()), batch=batched
    )
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        ids = [i.id for i in pool.map(lambda _: provider.create(request), range(nodes))]
        list(pool.map(lambda i: provider.get(i, skip_cache=True), ids))
        list(pool.map(provider.delete, ids))
    elapsed = time.perf_counter() - start
    provider.calls.close()  # type: ignore[attr-defined]
    return {**{op: float(counts[op]) for op in OPS}, "seconds": elapsed}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=200)
    ap.add_argument("--workers", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--batched-only", action="store_true")
    args = ap.parse_args()
    for k, v in {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x",
                 "AWS_EC2_METADATA_DISABLED": "true"}.items():  # fmt: skip
        os.environ.setdefault(k, v)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        result: dict[str, dict[str, float]] = {}
        for batched in (True,) if args.batched_only else (False, True):
            runs = [run(f"http://127.0.0.1:{port}", args.nodes, args.workers, batched)
                    for _ in range(args.runs)]  # fmt: skip
            result["batched" if batched else "unbatched"] = {
                k: statistics.median(r[k] for r in runs) for k in (*OPS, "seconds")
            }
    finally:
        server.stop()
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
        return 0
    print(f"{args.nodes} NodeClaims, {args.workers} threads, median of {args.runs} runs")
    print(f"{'':12}" + "".join(f"{op:>20}" for op in (*OPS, "seconds")))
    for mode, figures in result.items():
        print(f"{mode:12}" + "".join(f"{figures[k]:>20.6g}" for k in (*OPS, "seconds")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
