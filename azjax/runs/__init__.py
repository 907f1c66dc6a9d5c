"""A run's directory: checkpoints, metrics, trackers, the processes that share a run, and
reading runs back (tables and plots)."""
