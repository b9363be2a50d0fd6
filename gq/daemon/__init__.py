"""The per-host daemon: the only writer of the store, the only starter of jobs."""
