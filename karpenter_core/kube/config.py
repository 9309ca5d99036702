"""Where the API server is and how to authenticate: kubeconfig or in-cluster.

The official ``kubernetes`` client does the loading (TLS, tokens, client certificates, exec
plugins, token refresh); this module only decides which source applies — like client-go:
an explicit kubeconfig path, else ``$KUBECONFIG``, else in-cluster when running in a pod,
else ``~/.kube/config`` — and turns every failure into one :class:`KubeConfigError` line
naming the source, so ``karpenter serve`` can report it without a traceback.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from attrs import frozen

__all__ = ["KubeConfigError", "LoadedConfig", "load_config", "load_in_cluster"]

IN_CLUSTER_ENV = "KUBERNETES_SERVICE_HOST"
SERVICE_ACCOUNT_TOKEN = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")


class KubeConfigError(RuntimeError):
    """No usable API-server configuration; the message names the source and the problem."""


@frozen
class LoadedConfig:
    """A ``kubernetes.client.Configuration`` and where it came from (for logs and errors)."""

    configuration: Any
    source: str


def _in_cluster_available() -> bool:
    return bool(os.environ.get(IN_CLUSTER_ENV)) and SERVICE_ACCOUNT_TOKEN.is_file()


def load_config(kubeconfig: str | None = None, context: str | None = None) -> LoadedConfig:
    """Load a client configuration (see the module docstring for the order of sources)."""
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config

    configuration = k8s_client.Configuration()
    path = kubeconfig or os.environ.get("KUBECONFIG") or None
    if path is None and _in_cluster_available():
        return load_in_cluster()
    if path is None:
        default = Path.home() / ".kube" / "config"
        if not default.is_file():
            raise KubeConfigError(
                "no Kubernetes configuration: pass --kubeconfig, set KUBECONFIG, or run "
                "inside a cluster (KUBERNETES_SERVICE_HOST and a service-account token)"
            )
        path = str(default)
    # KUBECONFIG may list several files; the official loader merges them.
    first = path.split(os.pathsep)[0]
    if not Path(first).is_file():
        raise KubeConfigError(f"kubeconfig {first}: no such file")
    # Untyped in some client releases: call through Any so mypy --strict holds for all.
    load_kube_config: Any = k8s_config.load_kube_config
    try:
        load_kube_config(config_file=path, context=context, client_configuration=configuration)
    except k8s_config.ConfigException as e:
        raise KubeConfigError(f"kubeconfig {path}: {e}") from None
    except (OSError, ValueError, TypeError, KeyError) as e:
        raise KubeConfigError(f"kubeconfig {path}: cannot be read: {e}") from None
    where = f"kubeconfig {path}" + (f" (context {context})" if context else "")
    return LoadedConfig(configuration, where)


def load_in_cluster() -> LoadedConfig:
    """The pod's service account (the official loader re-reads the token as it rotates)."""
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config

    configuration = k8s_client.Configuration()
    loader: Any = k8s_config.load_incluster_config
    try:
        loader(client_configuration=configuration)
    except k8s_config.ConfigException as e:
        raise KubeConfigError(f"in-cluster configuration: {e}") from None
    return LoadedConfig(configuration, "in-cluster service account")
