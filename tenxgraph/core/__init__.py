"""The core of tenxgraph: state, models and the graph runtime."""
