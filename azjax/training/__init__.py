"""Training: the compiled steps, the one host loop (a single run is a population of one),
evaluation, gating, populations and population-based training."""
