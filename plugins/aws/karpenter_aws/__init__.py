"""karpenter-core cloud provider plugin: aws."""
