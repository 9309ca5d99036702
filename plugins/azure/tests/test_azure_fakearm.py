"""The fake ARM server itself, and AzureClients' configuration from the environment.

The fake must behave like ARM where the SDKs depend on it (tokens, LROs, paging, errors),
and its env() must be all a subprocess needs: ``karpenter serve`` is tested that way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import requests
from fakearm import ACCESS_TOKEN, RESOURCE_GROUP, SUBSCRIPTION, FakeARM, FakeRequest, Response
from karpenter_azure.clients import (
    PUBLIC_RESOURCE_MANAGER_ENDPOINT,
    AzureClients,
    load_environment,
    resource_manager_endpoint,
)

NIC_PATH = (
    f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{RESOURCE_GROUP}"
    "/providers/Microsoft.Network/networkInterfaces/{name}"
)


def _nic(location: str = "westus2", tags: dict[str, str] | None = None) -> dict[str, object]:
    return {
        "location": location,
        "tags": tags or {},
        "properties": {
            "ipConfigurations": [
                {"name": "ip", "properties": {"primary": True, "subnet": {"id": "/s"}}}
            ]
        },
    }


# ---------------------------------------------------------------------------- clients


def test_public_cloud_is_the_default_endpoint() -> None:
    assert resource_manager_endpoint({}) == PUBLIC_RESOURCE_MANAGER_ENDPOINT
    env = load_environment({})
    assert env.name == "AzurePublicCloud"
    assert env.credential_scope == "https://management.azure.com/.default"


def test_arm_cloud_names_a_known_cloud() -> None:
    env = load_environment({"ARM_CLOUD": "AzureChinaCloud"})
    assert env.resource_manager_endpoint == "https://management.chinacloudapi.cn"
    with pytest.raises(ValueError, match="ARM_CLOUD=Mars: unknown cloud name"):
        load_environment({"ARM_CLOUD": "Mars"})


def test_environment_file_sets_endpoint_audience_and_name(tmp_path: Path) -> None:
    f = tmp_path / "env.json"
    f.write_text(
        json.dumps(
            {
                "name": "AzureStackCloud",
                "resourceManagerEndpoint": "https://arm.example.test/",
                "tokenAudience": "https://audience.example.test/",
            }
        )
    )
    env = load_environment({"AZURE_ENVIRONMENT_FILEPATH": str(f), "ARM_CLOUD": "Mars"})
    assert env.resource_manager_endpoint == "https://arm.example.test"
    assert env.credential_scope == "https://audience.example.test/.default"
    assert env.name == "AzureStackCloud"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read the environment file"),
        ("{not json", "not valid JSON"),
        ("[1]", "expected a JSON object"),
        ('{"name": "x"}', "resourceManagerEndpoint is required"),
        ('{"resourceManagerEndpoint": "arm.local"}', "is not a URL"),
    ],
)
def test_a_bad_environment_file_is_one_clear_line(
    tmp_path: Path, content: str | None, message: str
) -> None:
    f = tmp_path / "env.json"
    if content is not None:
        f.write_text(content)
    with pytest.raises(ValueError, match=message) as info:
        load_environment({"AZURE_ENVIRONMENT_FILEPATH": str(f)})
    assert "\n" not in str(info.value)
    assert "AZURE_ENVIRONMENT_FILEPATH=" in str(info.value)


def test_a_relative_environment_file_is_refused() -> None:
    with pytest.raises(ValueError, match="must be absolute"):
        load_environment({"AZURE_ENVIRONMENT_FILEPATH": "env.json"})


def test_clients_need_a_subscription(arm_env: FakeARM) -> None:
    with pytest.raises(ValueError, match="AZURE_SUBSCRIPTION_ID"):
        AzureClients.create("")


def test_clients_from_env_alone_reach_the_fake(
    arm_env: FakeARM, azure_clients: AzureClients
) -> None:
    assert azure_clients.environment.resource_manager_endpoint == arm_env.url
    nic = azure_clients.network.network_interfaces.begin_create_or_update(
        RESOURCE_GROUP, "n1", _nic(), polling_interval=0
    ).result()
    assert nic.name == "n1"
    assert arm_env.token_requests >= 1
    # every ARM call carried the managed identity's token
    arm_calls = [r for r in arm_env.requests if r.path.startswith("/subscriptions/")]
    assert arm_calls
    assert all(r.headers.get("Authorization") == f"Bearer {ACCESS_TOKEN}" for r in arm_calls)


def test_explicit_endpoint_overrides_the_environment(arm_env: FakeARM) -> None:
    clients = AzureClients.create(SUBSCRIPTION, resource_manager_endpoint=arm_env.url + "/")
    assert clients.environment.resource_manager_endpoint == arm_env.url
    with pytest.raises(Exception) as info:
        clients.compute.virtual_machines.get(RESOURCE_GROUP, "missing")
    assert getattr(info.value, "status_code", None) == 404


# ---------------------------------------------------------------------------- the fake


def test_arm_routes_require_the_token(arm: FakeARM) -> None:
    r = requests.get(arm.url + NIC_PATH.format(name="x"), verify=arm.ca_file, timeout=10)
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "InvalidAuthenticationToken"


def test_token_endpoint_checks_the_identity_header_and_can_fail(arm: FakeARM) -> None:
    url = arm.env()["IDENTITY_ENDPOINT"]
    bad = requests.get(url, headers={"X-IDENTITY-HEADER": "wrong"}, verify=arm.ca_file, timeout=10)
    assert bad.status_code == 401
    header = {"X-IDENTITY-HEADER": arm.env()["IDENTITY_HEADER"]}
    ok = requests.get(url, headers=header, verify=arm.ca_file, timeout=10)
    assert ok.json()["access_token"] == ACCESS_TOKEN
    arm.fail_tokens(1, status=503)
    assert requests.get(url, headers=header, verify=arm.ca_file, timeout=10).status_code == 503
    assert requests.get(url, headers=header, verify=arm.ca_file, timeout=10).status_code == 200


def _auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {ACCESS_TOKEN}"}


def test_put_is_an_lro_first_in_progress_then_succeeded(arm: FakeARM) -> None:
    arm.lro_polls = 2
    body = {"location": "westus2", "properties": {"hardwareProfile": {"vmSize": "S"}}}
    path = NIC_PATH.replace(
        "Microsoft.Network/networkInterfaces", "Microsoft.Compute/virtualMachines"
    )
    r = requests.put(
        arm.url + path.format(name="vm"), json=body, headers=_auth(), verify=arm.ca_file, timeout=10
    )
    assert r.status_code == 201
    assert r.headers["Retry-After"] == "0"
    op = r.headers["Azure-AsyncOperation"]
    states = [
        requests.get(op, headers=_auth(), verify=arm.ca_file, timeout=10).json()["status"]
        for _ in range(4)
    ]
    assert states == ["InProgress", "InProgress", "Succeeded", "Succeeded"]
    assert arm.vms["vm"]["properties"]["provisioningState"] == "Succeeded"


def test_delete_is_a_202_lro_with_a_location_to_poll(
    arm_env: FakeARM, azure_clients: AzureClients
) -> None:
    azure_clients.network.network_interfaces.begin_create_or_update(
        RESOURCE_GROUP, "n", _nic(), polling_interval=0
    ).result()
    arm_env.lro_polls = 1
    path = NIC_PATH.replace(
        "Microsoft.Network/networkInterfaces", "Microsoft.Compute/virtualMachines"
    )
    vm = {"location": "westus2", "properties": {"hardwareProfile": {"vmSize": "S"}}}
    azure_clients.compute.virtual_machines.begin_create_or_update(
        RESOURCE_GROUP, "v", vm, polling_interval=0
    ).result()
    r = requests.delete(
        arm_env.url + path.format(name="v"), headers=_auth(), verify=arm_env.ca_file, timeout=10
    )
    assert r.status_code == 202
    assert arm_env.vms["v"]["properties"]["provisioningState"] == "Deleting"
    location = r.headers["Location"]
    first = requests.get(location, headers=_auth(), verify=arm_env.ca_file, timeout=10)
    assert first.status_code == 202
    assert "v" in arm_env.vms
    done = requests.get(location, headers=_auth(), verify=arm_env.ca_file, timeout=10)
    assert done.status_code == 204
    assert "v" not in arm_env.vms


def test_a_nic_used_by_a_vm_cannot_be_deleted(
    arm_env: FakeARM, azure_clients: AzureClients
) -> None:
    nic = azure_clients.network.network_interfaces.begin_create_or_update(
        RESOURCE_GROUP, "n", _nic(), polling_interval=0
    ).result()
    vm = {
        "location": "westus2",
        "properties": {
            "hardwareProfile": {"vmSize": "S"},
            "networkProfile": {
                "networkInterfaces": [{"id": nic.id, "properties": {"deleteOption": "Delete"}}]
            },
        },
    }
    azure_clients.compute.virtual_machines.begin_create_or_update(
        RESOURCE_GROUP, "v", vm, polling_interval=0
    ).result()
    with pytest.raises(Exception) as info:
        azure_clients.network.network_interfaces.begin_delete(
            RESOURCE_GROUP, "n", polling_interval=0
        ).result()
    assert info.value.error.code == "NicInUse"  # type: ignore[attr-defined]
    # deleting the VM takes the NIC with it (deleteOption: Delete)
    azure_clients.compute.virtual_machines.begin_delete(
        RESOURCE_GROUP, "v", polling_interval=0
    ).result()
    assert not arm_env.vms and not arm_env.nics


def test_a_vm_referencing_a_missing_nic_is_refused(
    arm_env: FakeARM, azure_clients: AzureClients
) -> None:
    vm = {
        "location": "westus2",
        "properties": {
            "hardwareProfile": {"vmSize": "S"},
            "networkProfile": {"networkInterfaces": [{"id": NIC_PATH.format(name="gone")}]},
        },
    }
    with pytest.raises(Exception) as info:
        azure_clients.compute.virtual_machines.begin_create_or_update(
            RESOURCE_GROUP, "v", vm, polling_interval=0
        ).result()
    assert info.value.error.code == "InvalidResourceReference"  # type: ignore[attr-defined]
    assert not arm_env.vms


def test_vm_faults_match_only_their_size_and_zone(arm: FakeARM) -> None:
    arm.fail_next_vm_create("ZonalAllocationFailed", sku="A", zone="westus2-2")
    path = NIC_PATH.replace(
        "Microsoft.Network/networkInterfaces", "Microsoft.Compute/virtualMachines"
    )

    def put(name: str, size: str, zones: list[str]) -> int:
        body = {
            "location": "westus2",
            "zones": zones,
            "properties": {"hardwareProfile": {"vmSize": size}},
        }
        r = requests.put(
            arm.url + path.format(name=name),
            json=body,
            headers=_auth(),
            verify=arm.ca_file,
            timeout=10,
        )
        return r.status_code

    assert put("a", "B", ["2"]) == 201
    assert put("b", "A", ["1"]) == 201
    assert put("c", "A", ["2"]) == 409
    assert put("d", "A", ["2"]) == 201  # once only


def test_resource_graph_pages_and_filters(arm: FakeARM) -> None:
    arm.graph_page_size = 2
    for i in range(5):
        arm.nics[f"n{i}"] = {
            "id": NIC_PATH.format(name=f"n{i}"),
            "name": f"n{i}",
            "type": "Microsoft.Network/networkInterfaces",
            "resourceGroup": RESOURCE_GROUP,
            "subscriptionId": SUBSCRIPTION,
            "tags": {"karpenter.sh_nodepool": "p"} if i % 2 == 0 else {"x": "y"},
            "properties": {},
        }
    query = (
        "Resources | where type == 'microsoft.network/networkinterfaces'"
        f" | where resourceGroup == '{RESOURCE_GROUP.lower()}'"
        " | where tags has_cs 'karpenter.sh_nodepool'"
    )
    names: list[str] = []
    token = None
    pages = 0
    while True:
        options = {"resultFormat": "objectArray", **({"$skipToken": token} if token else {})}
        r = requests.post(
            arm.url + "/providers/Microsoft.ResourceGraph/resources",
            json={"subscriptions": [SUBSCRIPTION], "query": query, "options": options},
            headers=_auth(),
            verify=arm.ca_file,
            timeout=10,
        ).json()
        pages += 1
        assert r["totalRecords"] == 3
        names += [d["name"] for d in r["data"]]
        assert all(d["resourceGroup"] == RESOURCE_GROUP.lower() for d in r["data"])
        token = r.get("$skipToken")
        if not token:
            break
    assert sorted(names) == ["n0", "n2", "n4"]
    assert pages == 2


def test_resource_graph_refuses_queries_it_cannot_evaluate(arm: FakeARM) -> None:
    r = requests.post(
        arm.url + "/providers/Microsoft.ResourceGraph/resources",
        json={"subscriptions": [SUBSCRIPTION], "query": "Resources | project name"},
        headers=_auth(),
        verify=arm.ca_file,
        timeout=10,
    )
    assert r.status_code == 400
    assert "unsupported operator" in r.json()["error"]["message"]


def test_added_routes_serve_before_builtins_with_named_groups(arm: FakeARM) -> None:
    seen: list[FakeRequest] = []

    def skus(req: FakeRequest) -> Response:
        seen.append(req)
        return 200, {"X-Test": "1"}, {"value": [{"name": req.match["sub"]}]}

    remove = arm.route(
        "GET", r"/subscriptions/(?P<sub>[^/]+)/providers/Microsoft\.Compute/skus", skus
    )
    try:
        r = requests.get(
            arm.url + f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Compute/skus",
            params={"api-version": "2021-07-01", "$filter": "location eq 'westus2'"},
            headers=_auth(),
            verify=arm.ca_file,
            timeout=10,
        )
        assert r.status_code == 200 and r.headers["X-Test"] == "1"
        assert r.json() == {"value": [{"name": SUBSCRIPTION}]}
        assert seen[0].query["$filter"] == "location eq 'westus2'"
        # unauthenticated requests do not reach added routes either
        r = requests.get(
            arm.url + f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Compute/skus",
            verify=arm.ca_file,
            timeout=10,
        )
        assert r.status_code == 401 and len(seen) == 1
    finally:
        remove()
    r = requests.get(
        arm.url + f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Compute/skus",
        headers=_auth(),
        verify=arm.ca_file,
        timeout=10,
    )
    assert r.status_code == 404 and len(seen) == 1


def test_unknown_routes_are_404_with_an_arm_error(arm: FakeARM) -> None:
    r = requests.get(arm.url + "/nowhere", headers=_auth(), verify=arm.ca_file, timeout=10)
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "NoRouteFound"


def test_a_subprocess_needs_only_env(arm: FakeARM) -> None:
    """What ``karpenter serve`` relies on: the fake's env() alone makes DefaultAzureCredential
    and AzureClients work in another process."""
    arm.vms["aks-p-1"] = {
        "id": NIC_PATH.format(name="aks-p-1").replace(
            "Microsoft.Network/networkInterfaces", "Microsoft.Compute/virtualMachines"
        ),
        "name": "aks-p-1",
        "type": "Microsoft.Compute/virtualMachines",
        "location": "westus2",
        "resourceGroup": RESOURCE_GROUP,
        "subscriptionId": SUBSCRIPTION,
        "tags": {"karpenter.sh_nodepool": "p"},
        "zones": ["2"],
        "properties": {"hardwareProfile": {"vmSize": "Standard_D2s_v3"}, "priority": "Spot"},
    }
    script = textwrap.dedent(
        f"""
        from karpenter_azure.clients import AzureClients
        from karpenter_azure.instance import VMProvider
        from karpenter_core.plugin_api import UnavailableOfferings, VirtualClock
        clients = AzureClients.create({SUBSCRIPTION!r})
        vms = VMProvider(clients, {RESOURCE_GROUP!r}, "westus2",
                         UnavailableOfferings(VirtualClock()), poll_interval=0)
        for vm in vms.list():
            print(vm.name, vm.zone, vm.capacity_type, vm.provider_id)
        """
    )
    keep = {
        k: v for k, v in os.environ.items() if not k.startswith(("AZURE_", "IDENTITY_", "MSI_"))
    }
    out = subprocess.run(
        [sys.executable, "-c", script],
        env={**keep, **arm.env()},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    name, zone, capacity_type, pid = out.stdout.split()
    assert (name, zone, capacity_type) == ("aks-p-1", "westus2-2", "spot")
    assert pid.startswith("azure:///subscriptions/") and RESOURCE_GROUP.lower() in pid
