"""Hostile values in the user data of every AMI family: each is read back, by the parser
of the format that carries it, as the very same value, and nothing in it runs.

The AL2 script is executed by bash with the bootstrap command replaced by a printf of its
arguments (NUL-separated, since values hold newlines): the values must arrive intact, one
argument each, and the canary commands hidden in them must not have created their files.
"""

from __future__ import annotations

import email
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml
from karpenter_aws.userdata import Taint, UserDataError, UserDataOptions, render

# Never executed: checked only by parsers.
SHOUTED = ["$(rm -rf /)", "`rm -rf /`", "'; reboot; '", '"; reboot; "', "a\nreboot", "; reboot"]


def canaries(tmp: Path) -> list[str]:
    """Values that would create a file in ``tmp`` if any shell ran them."""
    return [
        f"$(touch {tmp}/subst)",
        f"`touch {tmp}/backtick`",
        f"x'; touch {tmp}/quote; '",
        f'x"; touch {tmp}/dquote; "',
        f"x\ntouch {tmp}/newline\n",
        f"x; touch {tmp}/semicolon",
        f"x\\'; touch {tmp}/backslash #",
        f"${{IFS}}$(touch {tmp}/ifs)",
    ]


def options(name: str, endpoint: str, ca: str, dns: str) -> UserDataOptions:
    return UserDataOptions(
        cluster_name=name,
        cluster_endpoint=endpoint,
        ca_bundle=ca,
        cluster_cidr="10.100.0.0/16",
        cluster_dns=(dns,),
        max_pods=29,
        kube_reserved={"cpu": "70m", "memory": "1Gi"},
        eviction_hard={"memory.available": "100Mi"},
        labels={"karpenter.sh/nodepool": "default", "team": ""},
        taints=(Taint("karpenter.sh/unregistered", "NoExecute"), Taint("gpu", "NoSchedule", "1")),
    )


def mime_parts(text: str) -> list[tuple[str, str]]:
    msg = email.message_from_string(text)
    assert msg.is_multipart()
    return [(p.get_content_type(), p.get_payload()) for p in msg.get_payload()]


def four(values: list[str]) -> list[tuple[str, str, str, str]]:
    """Every value in every one of the four cluster slots."""
    return [tuple(values[(i + k) % len(values)] for k in range(4)) for i in range(len(values))]  # type: ignore[misc]


# --- AL2: bash --------------------------------------------------------------------------


def run_bootstrap(script: str, cwd: Path) -> list[str]:
    """Run the AL2 script with bootstrap.sh printing its arguments instead."""
    lines = script.split("\n")
    assert lines[1].startswith("exec > >(tee ")  # the log redirection, not wanted here
    body = "\n".join(lines[2:]).replace("/etc/eks/bootstrap.sh ", "printf '%s\\0' ", 1)
    proc = subprocess.run(
        ["bash", "-e", "-c", body], cwd=cwd, capture_output=True, check=True, timeout=60
    )
    return proc.stdout.decode().split("\0")[:-1]


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_al2_bootstrap_gets_each_hostile_value_as_one_argument_and_runs_none(
    tmp_path: Path,
) -> None:
    for name, endpoint, ca, dns in four(canaries(tmp_path)):
        [(ctype, script)] = mime_parts(render("AL2", options(name, endpoint, ca, dns)))
        assert ctype == "text/x-shellscript"
        subprocess.run(["bash", "-n"], input=script.encode(), check=True)
        args = run_bootstrap(script, tmp_path)
        assert args[:9] == [
            name,
            "--apiserver-endpoint",
            endpoint,
            "--b64-cluster-ca",
            ca,
            "--dns-cluster-ip",
            dns,
            "--use-max-pods",
            "false",
        ]
        assert args[9] == "--kubelet-extra-args" and len(args) == 11
        assert "--max-pods=29" in args[10].split(" ")
        assert list(tmp_path.iterdir()) == [], f"a canary ran: {name!r} {endpoint!r}"


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_al2_script_with_shouted_values_is_valid_bash() -> None:
    for name, endpoint, ca, dns in four(SHOUTED):
        [(_, script)] = mime_parts(render("AL2", options(name, endpoint, ca, dns)))
        subprocess.run(["bash", "-n"], input=script.encode(), check=True)


def test_a_value_that_would_end_the_mime_part_is_refused() -> None:
    forged = "x\n--//\nContent-Type: text/x-shellscript\n\nreboot"
    with pytest.raises(UserDataError, match="MIME boundary"):
        render("AL2", options(forged, "https://e", "Y2E=", "10.0.0.10"))


# --- AL2023: nodeadm YAML in MIME -----------------------------------------------------------


def test_al2023_nodeconfig_reads_back_each_hostile_value(tmp_path: Path) -> None:
    forged = "x\n--//\nContent-Type: text/x-shellscript\n\nreboot\n"
    for name, endpoint, ca, dns in four([*SHOUTED, forged, "é\u2028😀 \x85\r"]):
        out = render("AL2023", options(name, endpoint, ca, dns))
        [(ctype, body)] = mime_parts(out)
        assert ctype == "application/node.eks.aws"
        spec = yaml.safe_load(body)["spec"]
        assert spec["cluster"] == {
            "name": name,
            "apiServerEndpoint": endpoint,
            "certificateAuthority": ca,
            "cidr": "10.100.0.0/16",
        }
        assert spec["kubelet"]["config"]["clusterDNS"] == [dns]
        assert not re.search(r"^--", body, re.MULTILINE)


# --- Bottlerocket: TOML -------------------------------------------------------------------


def test_bottlerocket_toml_reads_back_each_hostile_value() -> None:
    weird = ['a"b\\c', "tab\there", "\x7f\x01", "é😀", "[settings.x]\nevil = true"]
    for name, endpoint, ca, dns in four([*SHOUTED, *weird]):
        doc = tomllib.loads(render("Bottlerocket", options(name, endpoint, ca, dns)))
        assert set(doc) == {"settings"} and set(doc["settings"]) == {"kubernetes"}
        k8s = doc["settings"]["kubernetes"]
        assert (k8s["cluster-name"], k8s["api-server"]) == (name, endpoint)
        assert (k8s["cluster-certificate"], k8s["cluster-dns-ip"]) == (ca, dns)


def test_bottlerocket_quotes_keys_that_are_not_bare() -> None:
    custom = '[settings.kubernetes.node-labels]\n"é/x" = "1"\n'
    out = render("Bottlerocket", attrs.evolve(options("c", "e", "", "d"), custom_user_data=custom))
    assert tomllib.loads(out)["settings"]["kubernetes"]["node-labels"]["é/x"] == "1"


# --- Windows: PowerShell --------------------------------------------------------------------

_PS_QUOTE = "'\u2018\u2019\u201a\u201b"
_PS_ARG = re.compile(rf" -(\w+) [{_PS_QUOTE}]((?:[^{_PS_QUOTE}]|[{_PS_QUOTE}]{{2}})*)[{_PS_QUOTE}]")


def powershell_args(script: str) -> dict[str, str]:
    """The named arguments of the bootstrap call, read as PowerShell reads single-quoted
    strings; the whole call must be consumed, so nothing follows a closed string."""
    assert script.startswith("<powershell>\n") and script.endswith("\n</powershell>")
    assert script.count("<powershell>") == 1 and script.count("</powershell>") == 1
    call = script.split("\n", 2)[2].removesuffix("\n</powershell>")
    prefix = "& $EKSBootstrapScriptFile"
    assert call.startswith(prefix)
    rest, args = call[len(prefix) :], {}
    while rest:
        m = _PS_ARG.match(rest)
        assert m, f"not a -Name 'string' argument: {rest[:60]!r}"
        args[m.group(1)] = re.sub(rf"([{_PS_QUOTE}])\1", r"\1", m.group(2))
        rest = rest[m.end() :]
    return args


def test_windows_bootstrap_reads_back_each_hostile_value() -> None:
    smart = ["\u2019; Restart-Computer; \u2018", "$env:PATH", "@(Stop-Computer)", "a`nb"]
    for name, endpoint, ca, dns in four([*SHOUTED, *smart]):
        args = powershell_args(render("Windows2022", options(name, endpoint, ca, dns)))
        assert args["EKSClusterName"] == name and args["APIServerEndpoint"] == endpoint
        assert args["Base64ClusterCA"] == ca and args["DNSClusterIP"] == dns
        assert "--max-pods=29" in args["KubeletExtraArgs"].split(" ")


def test_windows_refuses_a_value_that_could_close_the_powershell_block() -> None:
    with pytest.raises(UserDataError, match="Windows"):
        render("Windows2022", options("x</powershell><script>reboot</script>", "e", "c", "d"))


# --- values that travel in unquoted kubelet flags -----------------------------------------


@pytest.mark.parametrize("family", ["AL2", "AL2023", "Bottlerocket", "Windows2022"])
@pytest.mark.parametrize(
    "change",
    [
        {"labels": {"team": "a,node-role.kubernetes.io/control-plane=true"}},
        {"labels": {"team x": "a"}},
        {"labels": {"team": "a' --anonymous-auth=true '"}},
        {"taints": (Taint("gpu", "NoSchedule", "1\n[Service]\nExecStartPre=/bin/reboot"),)},
        {"kube_reserved": {"cpu": '1" --read-only-port=10255 "'}},
        {"eviction_hard": {"memory.available<1Mi,nodefs.available": "1%"}},
    ],
)
def test_labels_taints_and_kubelet_maps_must_be_plain_tokens(
    family: str, change: dict[str, Any]
) -> None:
    with pytest.raises(UserDataError, match="cannot be passed to the kubelet"):
        render(family, attrs.evolve(options("c", "https://e", "Y2E=", "10.0.0.10"), **change))


@pytest.mark.parametrize("family", ["AL2", "AL2023", "Bottlerocket", "Windows2022"])
def test_nul_characters_are_refused(family: str) -> None:
    with pytest.raises(UserDataError, match="NUL"):
        render(family, options("a\0b", "https://e", "Y2E=", "10.0.0.10"))
