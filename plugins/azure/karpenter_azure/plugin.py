"""Entry point module registered under the `karpenter` entry-point group (placeholder)."""
