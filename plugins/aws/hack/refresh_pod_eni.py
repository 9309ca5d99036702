"""Refresh ``karpenter_aws/pod_eni.json``: branch ENIs per trunking-capable instance type.

The VPC resource controller gives each trunking-capable node a ``vpc.amazonaws.com/pod-eni``
capacity (security groups for pods) equal to its type's branch-interface limit. EC2's
``DescribeInstanceTypes`` does not report that limit; AWS publishes it only as the
generated VPC limits table that aws/karpenter-provider-aws and
aws/amazon-vpc-resource-controller-k8s carry. This script reads the facts (type name,
trunking flag, branch count) out of that table and writes them as JSON:

    python plugins/aws/hack/refresh_pod_eni.py PATH/TO/zz_generated.vpclimits.go

``PATH`` is a checkout of aws/karpenter-provider-aws
(``pkg/providers/instancetype/zz_generated.vpclimits.go``).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "karpenter_aws" / "pod_eni.json"
_ENTRY = re.compile(r'^\t"(?P<name>[a-z0-9.-]+)": \{$')
_FIELD = re.compile(r"^\t\t(?P<key>IsTrunkingCompatible|BranchInterface):\s+(?P<value>\S+),$")


def parse(text: str) -> dict[str, int]:
    """Type -> branch interfaces, for the types the table marks trunking compatible."""
    out: dict[str, int] = {}
    name = ""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        entry = _ENTRY.match(line)
        if entry:
            name, fields = entry["name"], {}
            continue
        match = _FIELD.match(line)
        if name and match:
            fields[match["key"]] = match["value"]
            if len(fields) == 2:
                branches = int(fields["BranchInterface"])
                if fields["IsTrunkingCompatible"] == "true" and branches > 0:
                    out[name] = branches
                name = ""
    return dict(sorted(out.items()))


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    limits = parse(Path(argv[1]).read_text())
    if not limits:
        print(f"{argv[1]}: no trunking-compatible instance types found", file=sys.stderr)
        return 1
    OUT.write_text(json.dumps(limits, indent=0, sort_keys=True) + "\n")
    print(f"wrote {len(limits)} instance types to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
