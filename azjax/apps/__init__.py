"""The applications on top: the command line, the GTP and UCI engines, the web board,
sweeps, ablations and benchmarks."""
