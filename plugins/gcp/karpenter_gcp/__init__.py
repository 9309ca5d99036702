"""karpenter-core cloud provider plugin: gcp."""
