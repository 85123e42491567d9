"""The graph's nodes: one module per node."""
