"""karpenter-core: Kubernetes Karpenter as a Python, plugin-based node autoscaler toolkit."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("karpenter-core")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
