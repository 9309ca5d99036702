"""User data that joins a new EC2 instance to the cluster, per AMI family.

Each family bootstraps differently, as upstream's ``amifamily/bootstrap`` package does:

- **AL2023**: a MIME multi-part archive whose last part is a nodeadm ``NodeConfig``
  (``application/node.eks.aws``) carrying the cluster's name, endpoint, CA and service
  CIDR and the kubelet configuration (max pods, reserved resources, eviction thresholds,
  cluster DNS, the taints to register with) plus ``--node-labels``. The EC2NodeClass's own
  ``userData`` comes first: a MIME archive is split into its parts, anything else becomes
  one part (a NodeConfig when it parses as a YAML mapping, else a shell script), so nodeadm
  merges the user's NodeConfig under Karpenter's.
- **AL2**: a MIME archive whose last part runs ``/etc/eks/bootstrap.sh`` with the same
  settings as flags (``--kubelet-extra-args``).
- **Bottlerocket**: TOML. The user's TOML is parsed and Karpenter's
  ``settings.kubernetes`` keys are written over it.
- **Windows2019/2022/2025**: a ``<powershell>`` script running the user's lines, then
  ``Start-EKSBootstrap.ps1`` with the same kubelet flags as AL2.
- **Custom**: the EC2NodeClass's ``userData`` exactly as written; nothing is added, the
  AMI's owner bootstraps it.

Any other family raises :class:`UserDataError`, which the launch reports as a
``CreateError``.

Every value is written in the quoting of the format that carries it, so a cluster name,
endpoint, CA or DNS address holding quotes, ``$(...)``, backticks, ``;`` or newlines
arrives as that one value and runs nothing: single-quoted words for bash (AL2), YAML
double-quoted scalars where a value needs escapes (AL2023), TOML basic strings
(Bottlerocket), PowerShell single-quoted strings with every quote character doubled
(Windows). Labels, taints and the kubelet's reserved and eviction maps also travel inside
kubelet flags (``--node-labels=k=v,...``) that have no quoting at all, so their keys and
values must be plain tokens, as Kubernetes requires of labels anyway. What cannot be
carried safely raises :class:`UserDataError`: a NUL, a lone surrogate, a line that would
end the MIME part early, a ``>`` that could close the ``<powershell>`` block.

Everything is pure: the same options always give the same text, which matters because
the launch template name is a hash of it.
"""

from __future__ import annotations

import email
import email.policy
import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

import yaml
from attrs import field, frozen

from karpenter_aws.network import IP_FAMILY_IPV6, ip_family

__all__ = [
    "BOUNDARY",
    "NODECONFIG_CONTENT_TYPE",
    "SHELL_CONTENT_TYPE",
    "Taint",
    "UserDataError",
    "UserDataOptions",
    "render",
]

BOUNDARY = "//"
NODECONFIG_CONTENT_TYPE = "application/node.eks.aws"
SHELL_CONTENT_TYPE = 'text/x-shellscript; charset="us-ascii"'
DO_NOT_SYNC_TAINTS_LABEL = "karpenter.sh/do-not-sync-taints"


class UserDataError(ValueError):
    """The user data cannot be rendered (unsupported family, malformed custom user data)."""


@frozen
class Taint:
    """A taint the kubelet registers the node with (``key=value:effect``)."""

    key: str
    effect: str
    value: str = ""

    def to_flag(self) -> str:
        return (
            f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"
        )

    def to_dict(self) -> dict[str, str]:
        out = {"effect": self.effect, "key": self.key}
        if self.value:
            out["value"] = self.value
        return out


def _str_map(value: Mapping[str, str] | None) -> Mapping[str, str]:
    return dict(sorted((value or {}).items()))


@frozen
class UserDataOptions:
    """What every family's bootstrap needs to know.

    ``ca_bundle`` is base64 as EKS returns it; ``cluster_cidr`` the service CIDR (AL2023's
    nodeadm needs it); ``max_pods`` is always set, because Karpenter computed the pods
    capacity it scheduled against and the kubelet must agree.
    """

    cluster_name: str
    cluster_endpoint: str
    ca_bundle: str = ""
    cluster_cidr: str = ""
    cluster_dns: tuple[str, ...] = ()
    max_pods: int | None = None
    pods_per_core: int | None = None
    kube_reserved: Mapping[str, str] = field(factory=dict, converter=_str_map)
    system_reserved: Mapping[str, str] = field(factory=dict, converter=_str_map)
    eviction_hard: Mapping[str, str] = field(factory=dict, converter=_str_map)
    labels: Mapping[str, str] = field(factory=dict, converter=_str_map)
    taints: tuple[Taint, ...] = ()
    custom_user_data: str | None = None
    instance_store_policy: str | None = None


def render(family: str, options: UserDataOptions) -> str:
    """The user data (plain text, not base64) for an instance of ``family``; raises
    :class:`UserDataError` for a value that cannot be carried safely (module docstring)."""
    if family != "Custom":
        _check(options)
    if family == "AL2023":
        return _al2023(options)
    if family == "AL2":
        return _al2(options)
    if family == "Bottlerocket":
        return _bottlerocket(options)
    if family == "Custom":
        return options.custom_user_data or ""
    if family.startswith("Windows"):
        return _windows(options)
    raise UserDataError(f"user data for AMI family {family!r} is not supported by karpenter-aws")


# --- what values may hold ---------------------------------------------------------------

# A kubelet flag such as --node-labels=k=v,k=v or --eviction-hard=k<v has no quoting, and
# AL2 and Windows pass it on through a systemd unit or a service command line: its keys
# and values may only be plain tokens.
_KUBELET_TOKEN = re.compile(r"[A-Za-z0-9._/%+-]*")


def _check_text(what: str, value: str) -> None:
    if "\0" in value:
        raise UserDataError(f"{what} {value!r} contains a NUL character")
    if any("\ud800" <= ch <= "\udfff" for ch in value):
        raise UserDataError(f"{what} {value!r} is not valid Unicode (a lone surrogate)")


def _check_token(what: str, value: str) -> None:
    if not _KUBELET_TOKEN.fullmatch(value):
        raise UserDataError(
            f"{what} {value!r} cannot be passed to the kubelet: only letters, digits "
            "and . _ / % + - are allowed"
        )


def _check(o: UserDataOptions) -> None:
    for what, value in (
        ("cluster name", o.cluster_name),
        ("cluster endpoint", o.cluster_endpoint),
        ("cluster CA bundle", o.ca_bundle),
        ("cluster CIDR", o.cluster_cidr),
        *(("cluster DNS address", dns) for dns in o.cluster_dns),
    ):
        _check_text(what, value)
    for name, values in (
        ("label", o.labels),
        ("kubeReserved", o.kube_reserved),
        ("systemReserved", o.system_reserved),
        ("evictionHard", o.eviction_hard),
    ):
        for key, value in values.items():
            _check_token(f"{name} key", key)
            _check_token(f"{name} {key!r} value", value)
    for t in o.taints:
        for what, value in (("key", t.key), ("value", t.value), ("effect", t.effect)):
            _check_token(f"taint {what}", value)
    for what, number in (("maxPods", o.max_pods), ("podsPerCore", o.pods_per_core)):
        if number is not None and (isinstance(number, bool) or not isinstance(number, int)):
            raise UserDataError(f"{what} {number!r} is not an integer")


def _sh(value: str) -> str:
    """``value`` as one bash word: single-quoted, each ``'`` written ``'"'"'``."""
    return "'" + value.replace("'", "'\"'\"'") + "'"


# PowerShell ends a single-quoted string at any of these, and reads each doubled as one.
_PS_QUOTES = frozenset("'\u2018\u2019\u201a\u201b")


def _ps(what: str, value: str) -> str:
    """``value`` as one PowerShell single-quoted string (nothing in it is expanded)."""
    if ">" in value:  # EC2Launch finds </powershell> and <script> tags anywhere in the text
        raise UserDataError(f"{what} {value!r} cannot go into Windows user data (it has '>')")
    return "'" + "".join(ch * 2 if ch in _PS_QUOTES else ch for ch in value) + "'"


def _with_do_not_sync(labels: Mapping[str, str]) -> dict[str, str]:
    out = dict(labels)
    out[DO_NOT_SYNC_TAINTS_LABEL] = "true"
    return dict(sorted(out.items()))


def _node_labels_flag(labels: Mapping[str, str]) -> str:
    if not labels:
        return ""
    joined = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    return f"--node-labels={json.dumps(joined)}"


# --- MIME -------------------------------------------------------------------------------


def _is_mime(text: str) -> bool:
    head = text.lstrip()
    return head.startswith("MIME-Version:") or head.startswith("Content-Type:")


def _mime_parts(text: str) -> list[tuple[str, str]]:
    """(content type, body) of each part of a MIME multi-part archive."""
    msg = email.message_from_string(text, policy=email.policy.compat32)
    if not msg.is_multipart():
        raise UserDataError("custom user data has MIME headers but is not a multi-part archive")
    parts: list[tuple[str, str]] = []
    for part in msg.get_payload():
        if not isinstance(part, email.message.Message):
            continue
        payload = part.get_payload(decode=True)
        body = payload.decode() if isinstance(payload, bytes) else str(part.get_payload())
        parts.append((str(part.get("Content-Type") or SHELL_CONTENT_TYPE), body))
    return parts


def _archive(parts: Sequence[tuple[str, str]]) -> str:
    out = ["MIME-Version: 1.0", f'Content-Type: multipart/mixed; boundary="{BOUNDARY}"', ""]
    for content_type, body in parts:
        if any(line.startswith(f"--{BOUNDARY}") for line in body.splitlines()):
            raise UserDataError(
                f"user data has a line starting with the MIME boundary --{BOUNDARY}, which "
                "would end its part early"
            )
        out += [f"--{BOUNDARY}", f"Content-Type: {content_type}", "", body.rstrip("\n"), ""]
    out.append(f"--{BOUNDARY}--")
    return "\n".join(out) + "\n"


def _custom_parts(custom: str | None, *, nodeconfig_yaml: bool) -> list[tuple[str, str]]:
    if not custom:
        return []
    if _is_mime(custom):
        return _mime_parts(custom)
    if nodeconfig_yaml:
        try:
            parsed = yaml.safe_load(custom)
        except yaml.YAMLError:
            parsed = None
        if isinstance(parsed, dict):
            return [(NODECONFIG_CONTENT_TYPE, custom)]
    return [(SHELL_CONTENT_TYPE, custom)]


# --- AL2023 -----------------------------------------------------------------------------


class _NodeConfigDumper(yaml.SafeDumper):
    """Writes a string with anything but printable ASCII double-quoted, so its line breaks
    are escapes and never start a line of the MIME part (PyYAML's single-quoted style
    would break the line)."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = '"' if re.search(r"[^\x20-\x7e]", value) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_NodeConfigDumper.add_representer(str, _represent_str)


def _al2023(o: UserDataOptions) -> str:
    cluster: dict[str, Any] = {"apiServerEndpoint": o.cluster_endpoint, "name": o.cluster_name}
    if o.ca_bundle:
        cluster["certificateAuthority"] = o.ca_bundle
    if o.cluster_cidr:
        cluster["cidr"] = o.cluster_cidr
    kubelet: dict[str, Any] = {}
    if o.cluster_dns:
        kubelet["clusterDNS"] = list(o.cluster_dns)
    if o.max_pods is not None:
        kubelet["maxPods"] = o.max_pods
    if o.pods_per_core is not None:
        kubelet["podsPerCore"] = o.pods_per_core
    if o.kube_reserved:
        kubelet["kubeReserved"] = dict(o.kube_reserved)
    if o.system_reserved:
        kubelet["systemReserved"] = dict(o.system_reserved)
    if o.eviction_hard:
        kubelet["evictionHard"] = dict(o.eviction_hard)
    kubelet["registerWithTaints"] = [t.to_dict() for t in o.taints]
    spec: dict[str, Any] = {"cluster": cluster, "kubelet": {"config": kubelet}}
    flag = _node_labels_flag(_with_do_not_sync(o.labels))
    if flag:
        spec["kubelet"]["flags"] = [flag]
    if o.instance_store_policy == "RAID0":
        spec["instance"] = {"localStorage": {"strategy": "RAID0"}}
    config = {"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig", "spec": spec}
    dumped = yaml.dump(config, Dumper=_NodeConfigDumper, sort_keys=True, width=1 << 30)
    body = "# Karpenter Generated NodeConfig\n" + dumped
    parts = _custom_parts(o.custom_user_data, nodeconfig_yaml=True)
    return _archive([*parts, (NODECONFIG_CONTENT_TYPE, body)])


# --- AL2 --------------------------------------------------------------------------------


def _join_args(name: str, values: Mapping[str, str], sep: str) -> str:
    if not values:
        return ""
    return f"{name}={json.dumps(','.join(f'{k}{sep}{v}' for k, v in values.items()))}"


def _kubelet_extra_args(o: UserDataOptions) -> list[str]:
    """The kubelet flags AL2's bootstrap.sh and Windows' Start-EKSBootstrap.ps1 pass on."""
    args = [
        _node_labels_flag(_with_do_not_sync(o.labels)),
        f"--register-with-taints={json.dumps(','.join(t.to_flag() for t in o.taints))}",
    ]
    if o.max_pods is not None:
        args.append(f"--max-pods={o.max_pods}")
    if o.pods_per_core is not None:
        args.append(f"--pods-per-core={o.pods_per_core}")
    args += [
        _join_args("--system-reserved", o.system_reserved, "="),
        _join_args("--kube-reserved", o.kube_reserved, "="),
        _join_args("--eviction-hard", o.eviction_hard, "<"),
    ]
    return [a for a in args if a]


def _al2(o: UserDataOptions) -> str:
    lines = [
        "#!/bin/bash -xe",
        "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1",
    ]
    cmd = f"/etc/eks/bootstrap.sh {_sh(o.cluster_name)} --apiserver-endpoint "
    cmd += _sh(o.cluster_endpoint)
    if o.ca_bundle:
        cmd += f" --b64-cluster-ca {_sh(o.ca_bundle)}"
    if ip_family(o.cluster_dns) == IP_FAMILY_IPV6:
        cmd += " \\\n--ip-family ipv6"
    if o.cluster_dns:
        cmd += f" \\\n--dns-cluster-ip {_sh(o.cluster_dns[0])}"
    if o.max_pods is not None:
        cmd += " \\\n--use-max-pods false"
    cmd += f" \\\n--kubelet-extra-args {_sh(' '.join(_kubelet_extra_args(o)))}"
    if o.instance_store_policy == "RAID0":
        cmd += " \\\n--local-disks raid0"
    lines.append(cmd)
    parts = _custom_parts(o.custom_user_data, nodeconfig_yaml=False)
    return _archive([*parts, (SHELL_CONTENT_TYPE, "\n".join(lines))])


# --- Windows ----------------------------------------------------------------------------

_WINDOWS_BOOTSTRAP = (
    '[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1"'
)


def _windows(o: UserDataOptions) -> str:
    lines = ["<powershell>"]
    if o.custom_user_data:
        lines.append(o.custom_user_data.rstrip("\n"))
    lines.append(_WINDOWS_BOOTSTRAP)
    cmd = (
        f"& $EKSBootstrapScriptFile -EKSClusterName {_ps('cluster name', o.cluster_name)} "
        f"-APIServerEndpoint {_ps('cluster endpoint', o.cluster_endpoint)}"
    )
    if o.ca_bundle:
        cmd += f" -Base64ClusterCA {_ps('cluster CA bundle', o.ca_bundle)}"
    cmd += f" -KubeletExtraArgs {_ps('kubelet flags', ' '.join(_kubelet_extra_args(o)))}"
    if o.cluster_dns:
        cmd += f" -DNSClusterIP {_ps('cluster DNS address', o.cluster_dns[0])}"
    lines += [cmd, "</powershell>"]
    return "\n".join(lines)


# --- Bottlerocket -----------------------------------------------------------------------


def _bottlerocket(o: UserDataOptions) -> str:
    try:
        doc: dict[str, Any] = tomllib.loads(o.custom_user_data or "")
    except tomllib.TOMLDecodeError as e:
        raise UserDataError(f"custom user data is not valid Bottlerocket TOML: {e}") from None
    settings = doc.setdefault("settings", {})
    k8s = settings.setdefault("kubernetes", {})
    if not isinstance(k8s, dict):
        raise UserDataError("custom user data: settings.kubernetes must be a table")
    k8s["cluster-name"] = o.cluster_name
    k8s["api-server"] = o.cluster_endpoint
    if o.ca_bundle:
        k8s["cluster-certificate"] = o.ca_bundle
    if o.cluster_dns:
        k8s["cluster-dns-ip"] = o.cluster_dns[0]
    if o.max_pods is not None:
        k8s["max-pods"] = o.max_pods
    if o.kube_reserved:
        k8s["kube-reserved"] = dict(o.kube_reserved)
    if o.system_reserved:
        k8s["system-reserved"] = dict(o.system_reserved)
    if o.eviction_hard:
        k8s["eviction-hard"] = dict(o.eviction_hard)
    k8s["node-labels"] = {**dict(k8s.get("node-labels") or {}), **_with_do_not_sync(o.labels)}
    taints: dict[str, list[str]] = {}
    for t in o.taints:
        taints.setdefault(t.key, []).append(f"{t.value}:{t.effect}")
    if taints:
        k8s["node-taints"] = taints
    return _toml(doc)


_TOML_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def _toml_string(s: str) -> str:
    """A TOML basic string, in ASCII: controls and anything past ``~`` are escaped."""
    out = []
    for ch in s:
        if ch in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[ch])
        elif " " <= ch <= "~":
            out.append(ch)
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(f"\\U{ord(ch):08X}")
    return '"' + "".join(out) + '"'


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return str(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return _toml_string(str(v))


def _toml_key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else _toml_string(k)


def _toml(doc: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> str:
    """A minimal TOML writer for the tables/strings/ints/lists Bottlerocket settings use."""
    scalars = [(k, v) for k, v in doc.items() if not isinstance(v, Mapping)]
    tables = [(k, v) for k, v in doc.items() if isinstance(v, Mapping)]
    out = ""
    if prefix and scalars:
        out += "[" + ".".join(_toml_key(p) for p in prefix) + "]\n"
    for k, v in scalars:
        out += f"{_toml_key(k)} = {_toml_value(v)}\n"
    if scalars:
        out += "\n"
    for k, v in tables:
        out += _toml(v, (*prefix, k))
    return out
