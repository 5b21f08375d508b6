"""The probes (RT006, RT007): they import and run the user's code, so they run
only when asked for (`--dataset`, `--step`), on rank 0, after the per-rank
checks have been gathered."""
