"""Differential test of `karpenter validate`'s NodeClass checks (karpenter_core.apis.crds.openapi)
against a real kube-apiserver: every manifest of the recorded case files is created on the real
control plane with its CRD installed (strict field validation, as `kubectl apply` sends), and
the API server's field errors must be the recorded ones, which are what our validator prints
(the unit tests check that side offline: plugins/aws/tests/test_nodeclass_validate.py and
tests/unit/apis/crds/test_crd_openapi.py). A valid manifest must also be stored with the
recorded defaults.
"""

from __future__ import annotations

import copy
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import controlplane
from karpenter_core.apis.crds.openapi import CRDSchema

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SUITES = {
    "ec2nodeclass": (
        ROOT / "plugins/aws/karpenter_aws/crds/karpenter.k8s.aws_ec2nodeclasses.yaml",
        ROOT / "plugins/aws/tests/data/ec2nodeclass_cases.yaml",
    ),
    "widget": (
        ROOT / "tests/unit/apis/crds/data/widget_crd.yaml",
        ROOT / "tests/unit/apis/crds/data/widget_cases.yaml",
    ),
}


def _request(
    cp: controlplane.ControlPlane, method: str, path: str, body: Any = None
) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(
        cp.server + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {cp.token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, context=cp._ssl_context(), timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        text = e.read()
        try:
            return e.code, json.loads(text)
        except ValueError:
            return e.code, {"message": text.decode(errors="replace")}


def _api_server_errors(status: int, body: dict[str, Any]) -> list[str]:
    if status < 300:
        return []
    message = str(body.get("message", ""))
    if status == 400 and "strict decoding error: " in message:
        fields = message.split("strict decoding error: ", 1)[1].split(", ")
        return sorted(f"strict decoding error: {f.strip()}" for f in fields)
    causes = (body.get("details") or {}).get("causes") or []
    assert causes, f"HTTP {status} without causes: {message}"
    return sorted(f"{c.get('field')}: {c.get('message')}" for c in causes)


@pytest.mark.parametrize("suite", list(SUITES))
def test_api_server_and_validate_agree(
    control_plane: controlplane.ControlPlane, unique: Callable[[str], str], suite: str
) -> None:
    crd_file, cases_file = SUITES[suite]
    crd = yaml.safe_load(crd_file.read_text())
    cases = yaml.safe_load(cases_file.read_text())
    group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
    version = next(v["name"] for v in crd["spec"]["versions"] if v["storage"])
    collection = f"/apis/{group}/{version}/{crd['spec']['names']['plural']}"
    crd_path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}"

    status, body = _request(
        control_plane, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd
    )
    installed = status == 201
    assert status in (201, 409), body
    try:
        deadline = time.monotonic() + 60
        while _request(control_plane, "GET", collection)[0] != 200:
            assert time.monotonic() < deadline, "the CRD was not served within 60s"
            time.sleep(0.2)
        ours = CRDSchema(crd)
        mismatches = []
        for name, case in cases["cases"].items():
            spec = copy.deepcopy(cases["base"])
            for key, value in case["spec"].items():
                if value is None:
                    spec.pop(key, None)
                else:
                    spec[key] = value
            obj = {
                "apiVersion": f"{group}/{version}",
                "kind": kind,
                "metadata": {"name": unique(name)[:63]},
                "spec": spec,
            }
            status, body = _request(
                control_plane, "POST", collection + "?fieldValidation=Strict", obj
            )
            # A 5xx is the server failing, not a validation answer.
            assert status < 500, body
            theirs = _api_server_errors(status, body)
            mine = sorted(str(e) for e in ours.validate(obj))
            if theirs != case["errors"] or mine != theirs:
                mismatches.append((name, theirs, mine, case["errors"]))
            if status == 201:
                if "created_spec" in case and body["spec"] != case["created_spec"]:
                    mismatches.append((name, body["spec"], "defaults", case["created_spec"]))
                _request(control_plane, "DELETE", f"{collection}/{obj['metadata']['name']}")
        assert mismatches == []
        assert ours.problems == []
    finally:
        # The test CRD goes; the EC2NodeClass CRD stays (other tests of this process install
        # the same one, and would race a deletion still in progress).
        if installed and suite == "widget":
            _request(control_plane, "DELETE", crd_path)
