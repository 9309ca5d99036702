"""karpenter-core cloud provider plugin: azure."""
